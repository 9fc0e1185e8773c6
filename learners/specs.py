"""The specs of the lattice's black-box learners (``polydom.learners`` entry points).

Each factory makes a scikit-learn estimator (LightGBM's for ``"lightgbm"``, with its blob
codec) that :class:`learners.SklearnLearner` trains on each feature set; ``"synthetic"``
scores feature sets with a given accuracy function (no model).  Factories import their
library when called: this module imports none.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from polydom.blobs.learner_specs import LearnerSpec
from polydom.errors import InvalidArgumentError

__all__ = ["SPECS"]


def logistic(seed: int = 0) -> Any:
    """Standardised logistic regression."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    return make_pipeline(StandardScaler(), LogisticRegression(max_iter=2000))


def sgd_hinge_l1(seed: int = 0) -> Any:
    """Standardised linear SVM by SGD with an L1 penalty."""
    from sklearn.linear_model import SGDClassifier
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    return make_pipeline(StandardScaler(), SGDClassifier(loss="hinge", penalty="l1",
                                                         random_state=seed))


def lightgbm(seed: int = 0) -> Any:
    """LightGBM's classifier, 50 trees."""
    from lightgbm import LGBMClassifier

    return LGBMClassifier(n_estimators=50, random_state=seed, verbose=-1, n_jobs=1)


def tree(seed: int = 0) -> Any:
    """A decision tree of depth 5."""
    from sklearn.tree import DecisionTreeClassifier

    return DecisionTreeClassifier(max_depth=5, random_state=seed)


def synthetic(seed: int = 0, accuracy: Callable[[frozenset], float] | None = None) -> Any:
    """A learner that scores each feature set with ``accuracy`` (no model)."""
    from learners.synthetic import SyntheticLearner

    if accuracy is None:
        raise InvalidArgumentError(
            "the synthetic learner needs accuracy=callable(frozenset) -> float")
    return SyntheticLearner(accuracy)


SPECS = (
    LearnerSpec("logistic", "learners.specs:logistic"),
    LearnerSpec("sgd-hinge-l1", "learners.specs:sgd_hinge_l1"),
    LearnerSpec("lightgbm", "learners.specs:lightgbm",
                codecs={"lightgbm": "learners.codecs.lightgbm_codec"}),
    LearnerSpec("tree", "learners.specs:tree"),
    LearnerSpec("synthetic", "learners.specs:synthetic"),
)
