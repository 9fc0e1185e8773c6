"""The pipeline: the only part of polydom that imports lattice, learners and storage.

``build_index`` explores the lattice, adds budgeted learners' candidates, indexes and
optionally persists them; ``open_index`` loads a stored index; ``store_timings`` keeps served
timings and ``recalibrate`` refits the curves from them and publishes a re-swept build.
Names load on first use: opening an index imports the store's reader, never a learner.
"""

from polydom.lazy_exports import lazy_exports

__getattr__ = lazy_exports(__name__, {
    "RecalibrationReport": "polydom.pipeline.recalibrate",
    "build_index": "polydom.pipeline.build",
    "list_builds": "polydom.pipeline.open",
    "open_index": "polydom.pipeline.open",
    "publish_index": "polydom.pipeline.recalibrate",
    "store_timings": "polydom.pipeline.recalibrate",
})

# (``recalibrate`` is the name of its module here: ``polydom.recalibrate`` is the function)
__all__ = ["RecalibrationReport", "build_index", "list_builds", "open_index", "publish_index",
           "store_timings"]
