"""PolydomError: the one base class of the package's own errors.

Errors about a value also subclass :class:`ValueError` (so ``except ValueError`` keeps
working); errors about state (a store of another schema, say) subclass :class:`RuntimeError`.
"""

from __future__ import annotations

__all__ = ["PolydomError", "TelemetryError"]


class PolydomError(Exception):
    """Base of every exception that polydom, lattice, learners and storage raise on purpose."""


class TelemetryError(PolydomError, ValueError):
    """A served timing that cannot be recorded (NaN, negative, unknown feature, a size
    outside the domain); raised before anything is buffered or stored."""
