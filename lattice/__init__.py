"""The feature-set lattice: Poly-Dom exploration, progressive alpha, and the paper's baselines."""

from lattice.explore import explore
from lattice.progressive import progressive
from polydom.lazy_exports import lazy_exports

# `explore` and `progressive` share their modules' names: bound here, or the first import
# of the module would make `lattice.explore` the module.  Other names load on first use;
# everything else is imported from its module.
__getattr__ = lazy_exports(__name__, {
    "Expansion": "lattice.expansion",
    "Exploration": "lattice.explore",
    "Learner": "lattice.expansion",
    "Progressive": "lattice.progressive",
    "cap_bound": "lattice.anytime",
    "expand_all": "lattice.baselines",
    "greedy": "lattice.baselines",
    "greedy_acc": "lattice.baselines",
    "greedy_cost": "lattice.baselines",
    "learner_name": "lattice.expansion",
    "make_executor": "lattice.executor",
})

__all__ = [
    "Expansion",
    "Exploration",
    "Learner",
    "Progressive",
    "cap_bound",
    "expand_all",
    "explore",
    "greedy",
    "greedy_acc",
    "greedy_cost",
    "learner_name",
    "make_executor",
    "progressive",
]
