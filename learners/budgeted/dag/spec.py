"""The spec of the DAG of sensor sets (``polydom.learners`` entry point)."""

from __future__ import annotations

from typing import Any

from polydom.blobs.learner_specs import LearnerSpec

__all__ = ["SPECS"]


def dag(seed: int = 0, **params: Any) -> Any:
    """A DAG prototype."""
    from learners.budgeted.dag import DAGClassifier

    return DAGClassifier(random_state=seed, **params)


SPECS = (LearnerSpec("dag", "learners.budgeted.dag.spec:dag", kind="budgeted",
                     model_classes=("learners.budgeted.dag.classifier:DAGClassifier",)),)
