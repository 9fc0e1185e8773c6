"""Learners: the protocol the lattice calls, a scikit-learn black box, a synthetic scorer."""

from learners.base import Learner, normalize_features
from learners.sklearn_learner import SklearnLearner
from learners.synthetic import SyntheticLearner

__all__ = ["Learner", "SklearnLearner", "SyntheticLearner", "normalize_features"]
