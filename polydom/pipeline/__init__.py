"""The pipeline: the only part of polydom that imports lattice, learners and storage.

``build_index`` explores the lattice, adds budgeted learners' candidates, indexes and
optionally persists them; ``open_index`` loads a stored index; ``store_timings`` keeps served
timings and ``recalibrate`` refits the curves from them and publishes a re-swept build.
"""

from polydom.pipeline.build import build_index
from polydom.pipeline.open import list_builds, open_index
from polydom.pipeline.recalibrate import (
    RecalibrationReport,
    publish_index,
    recalibrate,
    store_timings,
)

__all__ = ["RecalibrationReport", "build_index", "list_builds", "open_index", "publish_index",
           "recalibrate", "store_timings"]
