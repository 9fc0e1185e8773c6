"""polydom: the most accurate model whose feature cost fits a budget at a given item size.

``import polydom`` loads nothing but this face and its lazy-export helper: every public name
is imported on first use (PEP 562).  The core (the cost model :mod:`polydom.curves`, the
index :mod:`polydom.index`) loads numpy, and sympy only when cost text is first parsed; the
featurizer (:mod:`polydom.serving`) and the pipeline (``build_index``, ``open_index``, which
import :mod:`lattice`, :mod:`learners` and :mod:`storage`) load on first use of one of their
names.  The face names what a user imports; everything else (adherence, cascades, plans,
telemetry, calibration, ...) is imported from its module.
"""

from polydom.lazy_exports import lazy_exports

# name -> module that defines it; the subpackages are reachable as attributes too
__getattr__ = lazy_exports(__name__, {
    "Candidate": "polydom.curves.candidate",
    "CandidateArrays": "polydom.curves.candidate_arrays",
    "CostCurve": "polydom.curves.cost_curve",
    "CostModel": "polydom.curves.cost_model",
    "Featurizer": "polydom.serving.featurizer",
    "Hit": "polydom.index.built",
    "Index": "polydom.index.built",
    "IndexAll": "polydom.index.polydom_index",
    "NaiveLookup": "polydom.index.naive",
    "PolyDomIndex": "polydom.index.polydom_index",
    "PolydomError": "polydom.errors",
    "build_index": "polydom.pipeline.build",
    "list_builds": "polydom.pipeline.open",
    "open_index": "polydom.pipeline.open",
    "recalibrate": "polydom.pipeline.recalibrate",
    "store_timings": "polydom.pipeline.recalibrate",
    **{sub: f"polydom.{sub}" for sub in ("app", "blobs", "curves", "errors", "index",
                                         "pipeline", "serving")},
})


def __dir__() -> list[str]:
    return sorted(__all__)


__all__ = [
    "Candidate",
    "CandidateArrays",
    "CostCurve",
    "CostModel",
    "Featurizer",
    "Hit",
    "Index",
    "IndexAll",
    "NaiveLookup",
    "PolyDomIndex",
    "PolydomError",
    "build_index",
    "list_builds",
    "open_index",
    "recalibrate",
    "store_timings",
]
