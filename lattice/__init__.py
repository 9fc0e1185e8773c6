"""The feature-set lattice: Poly-Dom exploration, progressive alpha, and the paper's baselines."""

from lattice.baselines import (
    PAPER_LAMBDAS,
    GreedyResult,
    expand_all,
    greedy,
    greedy_acc,
    greedy_cost,
)
from lattice.delta import estimate_delta, monotonicity_violations
from lattice.executor import (
    Executor,
    ExecutorError,
    WorkerLostError,
    make_executor,
    map_in_order,
)
from lattice.expansion import Expansion, Learner, learner_name
from lattice.explore import Exploration, explore
from lattice.progressive import Progressive, progressive

__all__ = [
    "PAPER_LAMBDAS",
    "Expansion",
    "Executor",
    "ExecutorError",
    "Exploration",
    "GreedyResult",
    "Learner",
    "Progressive",
    "WorkerLostError",
    "estimate_delta",
    "expand_all",
    "explore",
    "greedy",
    "greedy_acc",
    "greedy_cost",
    "learner_name",
    "make_executor",
    "map_in_order",
    "monotonicity_violations",
    "progressive",
]
