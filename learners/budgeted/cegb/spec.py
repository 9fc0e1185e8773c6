"""The specs of CEGB and GreedyMiser (``polydom.learners`` entry points); LightGBM loads
with a factory's first call."""

from __future__ import annotations

from typing import Any

from polydom.blobs.learner_specs import LearnerSpec

__all__ = ["SPECS"]


def cegb(seed: int = 0, **params: Any) -> Any:
    """A CEGB prototype."""
    from learners.budgeted.cegb.classifier import CEGBClassifier

    return CEGBClassifier(random_state=seed, **params)


def greedymiser(seed: int = 0, **params: Any) -> Any:
    """A GreedyMiser prototype."""
    from learners.budgeted.cegb.classifier import GreedyMiserClassifier

    return GreedyMiserClassifier(random_state=seed, **params)


SPECS = (
    LearnerSpec("cegb", "learners.budgeted.cegb.spec:cegb", kind="budgeted",
                model_classes=("learners.budgeted.cegb.classifier:CEGBClassifier",)),
    LearnerSpec("greedymiser", "learners.budgeted.cegb.spec:greedymiser", kind="budgeted",
                model_classes=("learners.budgeted.cegb.classifier:GreedyMiserClassifier",)),
)
