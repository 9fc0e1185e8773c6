"""What a client says about an item is checked against what the server measures, never learnt.

A featurizer's ``size`` function gives the size a lookup is made at; it may read what the
item says about itself (a ``"size"`` field a client sends).  Served timings teach the cost
model (``recalibrate``, and ``serve --recalibrate-on-drift``), so a client that claims size
1000 for a small item and size 0 for a large one would teach it a x1000 error.  A
:class:`MeasuredSize` holds the server's own measure of an item (a function of its content:
``len(item["signal"])``, an image's pixel count) and checks each served item's size against
it: an item whose size differs is still answered, but its timings are not recorded (not
learnt), and the mismatch is counted (``/metrics``: ``polydom_item_size_mismatches``).
The seconds are the server's own clock (the featurizer's timer) already.

Runtime complexity: O(1) per item plus the measure function.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable
from typing import Any

from polydom.errors import InvalidArgumentError

__all__ = ["SIZE_RTOL", "MeasuredSize"]

#: How far (relatively) the size the featurizer reads may lie from the measured one.
SIZE_RTOL = 1e-9


class MeasuredSize:
    """The server's measure of an item's size, checked against the size it was served at.

    Parameters
    ----------
    measure : callable
        Item -> its size, measured from its content by the server (a finite number >= 0).
    rtol : float, default SIZE_RTOL
        Relative tolerance of the comparison.

    >>> sizes = MeasuredSize(lambda item: len(item["x"]))
    >>> sizes.agrees({"size": 3, "x": [1, 2, 3]}, 3.0)
    True
    >>> sizes.agrees({"size": 1000, "x": [1]}, 1000.0)
    False
    >>> sizes.mismatches
    1
    """

    def __init__(self, measure: Callable[[Any], float], rtol: float = SIZE_RTOL) -> None:
        if not callable(measure):
            raise InvalidArgumentError(f"measure must be a callable item -> size, got {measure!r}")
        if isinstance(rtol, bool) or not isinstance(rtol, (int, float)) or not 0 <= rtol < 1:
            raise InvalidArgumentError(f"rtol must be a number in [0, 1), got {rtol!r}")
        self.measure = measure
        self.rtol = float(rtol)
        #: Items whose served size differed from the measured one (or could not be measured).
        self.mismatches = 0
        self._lock = threading.Lock()

    def agrees(self, item: Any, size: float) -> bool:
        """Whether ``item`` was served at the size the server measures for it; counts a
        mismatch (a measure that raises or is not a finite number >= 0 is one).  O(1) plus
        the measure."""
        try:
            measured = float(self.measure(item))
        except Exception:  # the item's content is not what a measure reads: not learnt
            measured = math.nan
        ok = (math.isfinite(measured) and measured >= 0
              and math.isclose(measured, float(size), rel_tol=self.rtol, abs_tol=0.0))
        if not ok:
            with self._lock:
                self.mismatches += 1
        return ok
