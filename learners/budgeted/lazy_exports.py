"""Names a package re-exports but imports on first use (PEP 562 module ``__getattr__``).

The budgeted learners' rooms re-export their estimators through this so that importing a
package (``learners.budgeted``, ``learners.budgeted.cegb``, ...) stays light and works
without LightGBM; the heavy module loads when one of its names is first looked up.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from importlib import import_module
from typing import Any

__all__ = ["lazy_exports"]


def lazy_exports(package: str, table: Mapping[str, str]) -> Callable[[str], Any]:
    """A module-level ``__getattr__`` for ``package`` that resolves ``name`` as
    ``getattr(import_module(table[name]), name)``.

    Runtime complexity: O(1) per lookup after the module's first import.

    >>> getattr_ = lazy_exports("demo", {"sqrt": "math"})
    >>> getattr_("sqrt")(9.0)
    3.0
    >>> getattr_("cbrt_of_nothing")
    Traceback (most recent call last):
    ...
    AttributeError: module 'demo' has no attribute 'cbrt_of_nothing'
    """
    names = dict(table)

    def __getattr__(name: str) -> Any:
        module = names.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(import_module(module), name)

    return __getattr__
