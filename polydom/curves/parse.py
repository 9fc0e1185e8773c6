"""Safe parsing of cost expressions: text -> syntax tree (never evaluated) -> coefficients."""

from __future__ import annotations

import ast
import math

import sympy

from polydom.curves.poly import MAX_DEGREE
from polydom.errors import InvalidArgumentError

__all__ = [
    "MAX_DEGREE",
    "MAX_PARSE_EXPONENT",
    "MAX_PARSE_LENGTH",
    "N",
    "parse_coefficients",
    "sympy_number",
]

#: Largest exponent literal (``n**32``); the degree of the whole result is bounded apart, by
#: :data:`polydom.curves.poly.MAX_DEGREE`.
MAX_PARSE_EXPONENT = MAX_DEGREE
#: Longest accepted cost text, in characters.
MAX_PARSE_LENGTH = 2_000
#: The size symbol of every cost expression.
N = sympy.Symbol("n")
_N = N


def parse_coefficients(text: str) -> list[float]:
    """Coefficients (lowest degree first) of the polynomial in ``n`` written in ``text``.

    Accepted: numbers, the symbol ``n``, ``+ - * / **`` (the exponent a non-negative
    integer literal at most 32) and parentheses.  The expression is walked as a Python
    syntax tree (never evaluated), turned into a sympy expression, expanded, and must be a
    polynomial in ``n`` (division only by constants).

    Limits: the text is at most :data:`MAX_PARSE_LENGTH` (2,000) characters, and the degree
    of the result at most :data:`MAX_DEGREE` (32).  The degree is bounded while the tree is
    walked, before sympy expands anything, so ``((n**32)**32)**32`` is refused at once
    instead of building a polynomial of degree 32768.

    Runtime complexity: O(len(text) * MAX_DEGREE) plus sympy's expansion of a polynomial of
    degree at most MAX_DEGREE.

    >>> parse_coefficients("(n + 1)**2")
    [1.0, 2.0, 1.0]

    Raises
    ------
    ValueError
        Naming the offending part: unknown symbols, function calls, attribute access,
        non-integer or negative exponents, ``n`` in a denominator, malformed text, a degree
        above :data:`MAX_DEGREE`, text longer than :data:`MAX_PARSE_LENGTH`.
    """

    if not isinstance(text, str):
        raise InvalidArgumentError(f"cost expression must be a string, got {type(text).__name__}")
    if len(text) > MAX_PARSE_LENGTH:
        raise InvalidArgumentError(
            f"cost expression {_shown(text)} is longer than {MAX_PARSE_LENGTH} characters"
        )
    if not text.strip():
        raise InvalidArgumentError("cost expression is empty")
    try:
        tree = ast.parse(text.strip(), mode="eval")
        expr, _ = _ast_to_sympy(tree.body, text)
    except SyntaxError as exc:
        hint = " (use ** for powers)" if "^" in text else ""
        raise InvalidArgumentError(
            f"malformed cost expression {_shown(text)}{hint}: {exc.msg}") from None
    except (RecursionError, MemoryError):
        raise InvalidArgumentError(f"cost expression {_shown(text)} is nested too deeply") from None
    expr = sympy.expand(expr)
    if expr.free_symbols - {_N}:
        raise InvalidArgumentError(f"cost expression {_shown(text)} has symbols other than n")
    if not expr.is_polynomial(_N):
        raise InvalidArgumentError(f"cost expression {_shown(text)} is not a polynomial in n")
    coeffs = sympy.Poly(expr, _N).all_coeffs()[::-1] if expr.has(_N) else [expr]
    try:
        values = [float(c) for c in coeffs]
    except OverflowError:  # an integer beyond the floats (a 401-digit constant)
        raise InvalidArgumentError(
            f"cost expression {_shown(text)} has a coefficient beyond the "
            "floats") from None
    if not all(math.isfinite(v) for v in values):
        raise InvalidArgumentError(f"cost expression {_shown(text)} has non-finite coefficients")
    return values


def _shown(text: str, limit: int = 60) -> str:
    """``text`` quoted for an error message, cut to ``limit`` characters."""
    return repr(text) if len(text) <= limit else repr(text[:limit]) + f"... ({len(text)} chars)"


def sympy_number(value: float) -> sympy.Expr:
    if value.is_integer() and abs(value) < 2**53:
        return sympy.Integer(int(value))
    return sympy.Float(repr(value))  # shortest text that round-trips, its own precision


_ALLOWED_BINOPS = (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.Pow)


def _ast_to_sympy(node: ast.AST, text: str) -> tuple[sympy.Expr, int]:
    """Translate the whitelisted syntax tree into sympy, never evaluating Python code.

    Returns the expression and an upper bound of its degree in ``n`` (checked against
    :data:`MAX_DEGREE` at every node, before sympy multiplies anything out).
    """
    if isinstance(node, ast.Constant):
        value = node.value
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise InvalidArgumentError(f"cost expression {_shown(text)}: {value!r} is not a number")
        if not math.isfinite(value):
            raise InvalidArgumentError(f"cost expression {_shown(text)}: {value!r} is not finite")
        number = sympy.Integer(value) if isinstance(value, int) else sympy.Float(value, 17)
        return number, 0
    if isinstance(node, ast.Name):
        if node.id != "n":
            raise InvalidArgumentError(
                f"cost expression {_shown(text)}: unknown symbol {node.id!r} "
                "(only n is allowed)"
            )
        return _N, 1
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.UAdd, ast.USub)):
        inner, degree = _ast_to_sympy(node.operand, text)
        return (-inner if isinstance(node.op, ast.USub) else inner), degree
    if isinstance(node, ast.BinOp) and isinstance(node.op, _ALLOWED_BINOPS):
        left, d_left = _ast_to_sympy(node.left, text)
        if isinstance(node.op, ast.Pow):
            exp = node.right
            if not (isinstance(exp, ast.Constant) and type(exp.value) is int):
                raise InvalidArgumentError(
                    f"cost expression {_shown(text)}: exponents must be non-negative integer "
                    "literals"
                )
            if not 0 <= exp.value <= MAX_PARSE_EXPONENT:
                raise InvalidArgumentError(
                    f"cost expression {_shown(text)}: exponent {exp.value} outside "
                    f"[0, {MAX_PARSE_EXPONENT}]"
                )
            out = left ** sympy.Integer(exp.value)
            if d_left == 0 and out.is_number and not math.isfinite(float(abs(out))):
                raise InvalidArgumentError(f"cost expression {_shown(text)}: a constant overflows")
            return out, _bounded(d_left * exp.value, text)
        right, d_right = _ast_to_sympy(node.right, text)
        if isinstance(node.op, ast.Add):
            return left + right, max(d_left, d_right)
        if isinstance(node.op, ast.Sub):
            return left - right, max(d_left, d_right)
        if isinstance(node.op, ast.Mult):
            return left * right, _bounded(d_left + d_right, text)
        if right.has(_N):
            raise InvalidArgumentError(
                f"cost expression {_shown(text)}: n in a denominator is not a polynomial"
            )
        if right == 0:
            raise InvalidArgumentError(f"cost expression {_shown(text)}: division by zero")
        return left / right, d_left
    what = type(node).__name__
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitXor):
        what = "^ (use ** for powers)"
    elif isinstance(node, ast.Call):
        what = "function call"
    elif isinstance(node, ast.Attribute):
        what = "attribute access"
    raise InvalidArgumentError(
        f"cost expression {_shown(text)}: {what} is not allowed "
        "(only numbers, n, + - * / **, parentheses)"
    )


def _bounded(degree: int, text: str) -> int:
    """``degree`` when at most :data:`MAX_DEGREE`, else a ``ValueError`` naming the limit."""
    if degree > MAX_DEGREE:
        raise InvalidArgumentError(
            f"cost expression {_shown(text)} has degree {degree} or more in n; "
            f"the limit is {MAX_DEGREE}"
        )
    return degree
