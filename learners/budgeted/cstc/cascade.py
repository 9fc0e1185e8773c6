"""CSCC: the cost-sensitive cascade of classifiers (Xu et al., JMLR 2014, section 4).

A chain of linear classifiers over phi(x).  At stage ``k`` an input *exits* when
``phi(x) @ beta^k <= theta^k`` and gets that stage's prediction; otherwise it moves on; the
last stage predicts every input that reaches it.  Meant for strongly imbalanced data: most
inputs of the majority ("irrelevant") class leave early on cheap features.  Two changes from
CSTC (paper Eq. 19): each stage's loss is weighted by the probability of *exiting* through it
(exits are irreversible), and rows may carry class weights.  Paths are nested, so a row's
cost never decreases with the stage it exits at.

Training, storage, usage accounting and the optional deviations are those of
:mod:`learners.budgeted.cstc.tree` (the same engine in ``mode="cascade"``); a stage can be pruned
from the end of the chain on the validation split.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from learners.budgeted.cstc.engine import TreeStructure
from learners.budgeted.cstc.tree import CostTreeBase, OneVsRestOutputs, check_number

__all__ = ["CSCCClassifier"]


class CSCCClassifier(OneVsRestOutputs, CostTreeBase):
    """Cost-sensitive cascade of classifiers as a budgeted learner.

    Parameters
    ----------
    n_stages : int, default 4
        Stages of the cascade before pruning.
    class_weight : None, "balanced" or mapping, default None
        The paper's optional ``w_y`` (values not given there; "balanced" = n / (2 n_y)).
    Other parameters : as :class:`learners.CSTCClassifier` (``depth`` is replaced by
        ``n_stages``).  Binary labels: ``classes_[1]`` is the positive class, the one a stage
        does not exit; multiclass: one cascade per class (one-vs-rest).

    Attributes
    ----------
    As :class:`learners.CSTCClassifier`; ``trees_[o][0]`` is the chain ``0, 1, 3, 7, ...``
    (heap indices) of the stages kept.

    Notes
    -----
    Fit: O(sweeps * stages * irls_iters * (L-BFGS evaluations) * rows * T) per output.
    """

    _mode = "cascade"

    def __init__(self, feature_costs: Sequence[float] | Mapping[str, float] | None = None,
                 tradeoff: float = 1.0, feature_groups: Mapping[str, Sequence[int]] | None = None,
                 n_stages: int = 4, rho: float = 1e-3, feature_map: str = "identity",
                 n_trees: int = 100, tree_depth: int = 4, tree_learning_rate: float = 0.1,
                 tree_cost: float = 0.0, tree_cost_tradeoff: float = 0.0,
                 structure: str = "prune",
                 validation_fraction: float | None = 0.2, max_sweeps: int = 5,
                 irls_iters: int = 50, tol: float = 1e-4, routing_temperature: float = 1.0,
                 support_threshold: float = 0.0, finetune: bool = True,
                 finetune_routing: str = "soft", class_weight: Any = None,
                 fit_intercept: bool = True, random_state: int | None = None) -> None:
        self.feature_costs = feature_costs
        self.tradeoff = tradeoff
        self.feature_groups = feature_groups
        self.n_stages = n_stages
        self.rho = rho
        self.feature_map = feature_map
        self.n_trees = n_trees
        self.tree_depth = tree_depth
        self.tree_learning_rate = tree_learning_rate
        self.tree_cost = tree_cost
        self.tree_cost_tradeoff = tree_cost_tradeoff
        self.structure = structure
        self.validation_fraction = validation_fraction
        self.max_sweeps = max_sweeps
        self.irls_iters = irls_iters
        self.tol = tol
        self.routing_temperature = routing_temperature
        self.support_threshold = support_threshold
        self.finetune = finetune
        self.finetune_routing = finetune_routing
        self.class_weight = class_weight
        self.fit_intercept = fit_intercept
        self.random_state = random_state

    def _structure(self) -> TreeStructure:
        check_number("n_stages", self.n_stages, 1)
        return TreeStructure.cascade(int(self.n_stages))
