"""The spec of ADAPT (``polydom.learners`` entry point)."""

from __future__ import annotations

from typing import Any

from polydom.blobs.learner_specs import LearnerSpec, learner_specs
from polydom.errors import InvalidArgumentError

__all__ = ["SPECS"]


def adapt(seed: int = 0, high_cost: str = "logistic", **params: Any) -> Any:
    """ADAPT around the estimator of the lattice learner ``high_cost`` (unfitted: the sweep
    fits it once per split, :meth:`AdaptClassifier.sweep_shared`)."""
    from learners.budgeted.adapt import AdaptClassifier

    spec = learner_specs().get(high_cost) if isinstance(high_cost, str) else None
    if spec is None or spec.kind != "lattice" or spec.name == "synthetic":
        raise InvalidArgumentError(
            f"high_cost of learner 'adapt' must name a lattice estimator (e.g. 'logistic', "
            f"'tree'), got {high_cost!r}"
        )
    return AdaptClassifier(spec.make(seed), fit_high_cost=True, random_state=seed, **params)


SPECS = (LearnerSpec("adapt", "learners.budgeted.adapt.spec:adapt", kind="budgeted",
                     model_classes=("learners.budgeted.adapt.classifier:AdaptClassifier",)),)
