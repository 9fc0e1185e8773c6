"""Safe parsing of cost expressions: text -> syntax tree (never evaluated) -> coefficients."""

from __future__ import annotations

import ast
import math

import sympy

__all__ = ["MAX_PARSE_EXPONENT", "MAX_PARSE_LENGTH", "N", "parse_coefficients", "sympy_number"]

MAX_PARSE_EXPONENT = 32
MAX_PARSE_LENGTH = 10_000
#: The size symbol of every cost expression.
N = sympy.Symbol("n")
_N = N


def parse_coefficients(text: str) -> list[float]:
    """Coefficients (lowest degree first) of the polynomial in ``n`` written in ``text``.

    Accepted: numbers, the symbol ``n``, ``+ - * / **`` (the exponent a non-negative
    integer literal at most 32) and parentheses.  The expression is walked as a Python
    syntax tree (never evaluated), turned into a sympy expression, expanded, and must be a
    polynomial in ``n`` (division only by constants).

    Runtime complexity: O(len(text)) plus sympy's expansion.

    >>> parse_coefficients("(n + 1)**2")
    [1.0, 2.0, 1.0]

    Raises
    ------
    ValueError
        Naming the offending part: unknown symbols, function calls, attribute access,
        non-integer or negative exponents, ``n`` in a denominator, malformed text.
    """

    if not isinstance(text, str):
        raise ValueError(f"cost expression must be a string, got {type(text).__name__}")
    if len(text) > MAX_PARSE_LENGTH:
        raise ValueError(f"cost expression is longer than {MAX_PARSE_LENGTH} characters")
    if not text.strip():
        raise ValueError("cost expression is empty")
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError as exc:
        hint = " (use ** for powers)" if "^" in text else ""
        raise ValueError(f"malformed cost expression {text!r}{hint}: {exc.msg}") from None
    expr = _ast_to_sympy(tree.body, text)
    expr = sympy.expand(expr)
    if expr.free_symbols - {_N}:
        raise ValueError(f"cost expression {text!r} has symbols other than n")
    if not expr.is_polynomial(_N):
        raise ValueError(f"cost expression {text!r} is not a polynomial in n")
    coeffs = sympy.Poly(expr, _N).all_coeffs()[::-1] if expr.has(_N) else [expr]
    values = [float(c) for c in coeffs]
    if not all(math.isfinite(v) for v in values):
        raise ValueError(f"cost expression {text!r} has non-finite coefficients")
    return values


def sympy_number(value: float) -> sympy.Expr:
    if value.is_integer() and abs(value) < 2**53:
        return sympy.Integer(int(value))
    return sympy.Float(repr(value))  # shortest text that round-trips, its own precision


_ALLOWED_BINOPS = (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.Pow)


def _ast_to_sympy(node: ast.AST, text: str) -> sympy.Expr:
    """Translate the whitelisted syntax tree into sympy, never evaluating Python code."""
    if isinstance(node, ast.Constant):
        value = node.value
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ValueError(f"cost expression {text!r}: {value!r} is not a number")
        if not math.isfinite(value):
            raise ValueError(f"cost expression {text!r}: {value!r} is not finite")
        return sympy.Integer(value) if isinstance(value, int) else sympy.Float(value, 17)
    if isinstance(node, ast.Name):
        if node.id != "n":
            raise ValueError(
                f"cost expression {text!r}: unknown symbol {node.id!r} (only n is allowed)"
            )
        return _N
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.UAdd, ast.USub)):
        inner = _ast_to_sympy(node.operand, text)
        return -inner if isinstance(node.op, ast.USub) else inner
    if isinstance(node, ast.BinOp) and isinstance(node.op, _ALLOWED_BINOPS):
        left = _ast_to_sympy(node.left, text)
        if isinstance(node.op, ast.Pow):
            exp = node.right
            if not (isinstance(exp, ast.Constant) and type(exp.value) is int):
                raise ValueError(
                    f"cost expression {text!r}: exponents must be non-negative integer literals"
                )
            if not 0 <= exp.value <= MAX_PARSE_EXPONENT:
                raise ValueError(
                    f"cost expression {text!r}: exponent {exp.value} outside "
                    f"[0, {MAX_PARSE_EXPONENT}]"
                )
            return left ** sympy.Integer(exp.value)
        right = _ast_to_sympy(node.right, text)
        if isinstance(node.op, ast.Add):
            return left + right
        if isinstance(node.op, ast.Sub):
            return left - right
        if isinstance(node.op, ast.Mult):
            return left * right
        if right.has(_N):
            raise ValueError(f"cost expression {text!r}: n in a denominator is not a polynomial")
        if right == 0:
            raise ValueError(f"cost expression {text!r}: division by zero")
        return left / right
    what = type(node).__name__
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitXor):
        what = "^ (use ** for powers)"
    elif isinstance(node, ast.Call):
        what = "function call"
    elif isinstance(node, ast.Attribute):
        what = "attribute access"
    raise ValueError(
        f"cost expression {text!r}: {what} is not allowed "
        "(only numbers, n, + - * / **, parentheses)"
    )
