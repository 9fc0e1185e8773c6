"""The spec of the cheap-first baseline (``polydom.learners`` entry point)."""

from __future__ import annotations

from typing import Any

from polydom.blobs.learner_specs import LearnerSpec

__all__ = ["SPECS"]


def cheap_first(seed: int = 0, **params: Any) -> Any:
    """A cheap-first prototype (deterministic: nothing to seed)."""
    from learners.budgeted.cheap_first import CheapFirstClassifier

    return CheapFirstClassifier(**params)


SPECS = (LearnerSpec(
    "cheap-first", "learners.budgeted.cheap_first.spec:cheap_first", kind="budgeted",
    model_classes=("learners.budgeted.cheap_first.classifier:CheapFirstClassifier",)),)
