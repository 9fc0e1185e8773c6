"""LazyPayload: a candidate's model that is built on first use, not when an index opens.

Opening a stored index needs its candidates, costs and skylines; decoding every model blob
then (a DAG candidate holds ~90 scikit-learn sub-models) made opening cost seconds for
models a process may never use.  A reader attaches a :class:`LazyPayload` instead: a
callable that checks and decodes the blob (storage's ``load_model``: digest first, then our
structural checks, then the decoder) runs once, on the first :attr:`Hit.model
<polydom.index.built.Hit.model>`, :meth:`Index.predict` or attribute access, under a lock
(two threads never decode the same blob twice).  A load that fails raises its error at
every use (nothing half-built is kept).

:func:`resolve_payload` gives the model of any payload (a plain one is returned as is).
Attribute access is forwarded (``payload.predict(X)`` works on a lazy payload too), and
pickling a lazy payload pickles its loaded model.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

__all__ = ["LazyPayload", "resolve_payload"]


class LazyPayload:
    """A model built by ``load()`` on first use; ``what`` names it in its repr.

    Invariant: ``load`` runs to completion at most once; its result is kept.

    >>> calls = []
    >>> p = LazyPayload(lambda: calls.append(1) or "model", "model of candidate 'a'")
    >>> p.loaded, resolve_payload(p), resolve_payload(p), len(calls), p.loaded
    (False, 'model', 'model', 1, True)
    """

    __slots__ = ("_load", "_lock", "_model", "what")

    _UNSET = object()

    def __init__(self, load: Callable[[], Any], what: str) -> None:
        self._load = load
        self._lock = threading.Lock()
        self._model: Any = LazyPayload._UNSET
        self.what = what

    @property
    def loaded(self) -> bool:
        """Whether the model was built already.  O(1)."""
        return self._model is not LazyPayload._UNSET

    def get(self) -> Any:
        """The model, built now if it was not (its loader's errors propagate, every time).

        Runtime complexity: the loader's on the first call, O(1) after.
        """
        model = self._model
        if model is LazyPayload._UNSET:
            with self._lock:
                model = self._model
                if model is LazyPayload._UNSET:
                    model = self._model = self._load()
                    self._load = None
        return model

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or name in LazyPayload.__slots__:
            raise AttributeError(name)
        return getattr(self.get(), name)

    def __reduce__(self) -> tuple:
        return _loaded, (self.get(),)

    def __repr__(self) -> str:
        state = "loaded" if self.loaded else "not loaded yet"
        return f"<LazyPayload {self.what} ({state})>"


def _loaded(model: Any) -> Any:
    return model


def resolve_payload(payload: Any) -> Any:
    """The model of ``payload``: built now for a :class:`LazyPayload`, else itself.  O(1)
    plus a first load."""
    return payload.get() if isinstance(payload, LazyPayload) else payload
