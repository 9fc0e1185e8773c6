"""Names a package re-exports but imports on first use (PEP 562 module ``__getattr__``).

Every package face of the distribution (``polydom``, ``polydom.curves``, ``learners``,
``learners.budgeted`` and its rooms, ``storage``) declares its lazy names in one table and
gets its ``__getattr__`` from :func:`lazy_exports`, so that importing a package stays light
(``import polydom`` loads no numpy; opening a store loads no learner; the budgeted packages
work without LightGBM) and the heavy module loads when one of its names is first looked up.
Floor 0: the standard library only.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from importlib import import_module
from typing import Any

__all__ = ["lazy_exports"]


def lazy_exports(package: str, table: Mapping[str, str]) -> Callable[[str], Any]:
    """A module-level ``__getattr__`` for ``package`` that resolves ``name`` as
    ``getattr(import_module(table[name]), name)``, or as the submodule itself when
    ``table[name]`` is ``f"{package}.{name}"`` (a subpackage on the face); the value is then
    kept in the package's namespace, so each name is looked up once.

    A lazy name must not be the name of a submodule that defines something else under it:
    the submodule's first import would bind the package's attribute to the module.  A face
    imports such a name eagerly (``tests/test_layout.py`` checks every face).

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
        loaded = import_module(module)
        value = loaded if module == f"{package}.{name}" else getattr(loaded, name)
        namespace = sys.modules.get(package)
        if namespace is not None:
            setattr(namespace, name, value)
        return value

    return __getattr__
