"""The specs of CSTC and CSCC (``polydom.learners`` entry points)."""

from __future__ import annotations

from typing import Any

from polydom.blobs.learner_specs import LearnerSpec

__all__ = ["SPECS"]


def cstc(seed: int = 0, **params: Any) -> Any:
    """A CSTC prototype."""
    from learners.budgeted.cstc import CSTCClassifier

    return CSTCClassifier(random_state=seed, **params)


def cscc(seed: int = 0, **params: Any) -> Any:
    """A CSCC prototype."""
    from learners.budgeted.cstc import CSCCClassifier

    return CSCCClassifier(random_state=seed, **params)


SPECS = (
    LearnerSpec("cstc", "learners.budgeted.cstc.spec:cstc", kind="budgeted",
                model_classes=("learners.budgeted.cstc.tree:CSTCClassifier",
                               "learners.budgeted.cstc.tree:CSTCRegressor")),
    LearnerSpec("cscc", "learners.budgeted.cstc.spec:cscc", kind="budgeted",
                model_classes=("learners.budgeted.cstc.cascade:CSCCClassifier",)),
)
