"""The DAG of sensor sets (Wang, Trapeznikov & Saligrama, NIPS 2015).

:mod:`.graph` the DAG of states, :mod:`.subset_selection` the subsets it is built over,
:mod:`.subset_bank` a classifier per state, :mod:`.filter_tree` and :mod:`.graph_reduce`
the policies, :mod:`.classifier` the estimator (and its sweep hook).  They load on first use.
"""

from polydom.lazy_exports import lazy_exports

__getattr__ = lazy_exports(__name__, {
    "DAGClassifier": "learners.budgeted.dag.classifier",
    "SensorGraph": "learners.budgeted.dag.graph",
    "chain_graph": "learners.budgeted.dag.graph",
    "full_graph": "learners.budgeted.dag.graph",
    "union_graph": "learners.budgeted.dag.graph",
    "forward_prefixes": "learners.budgeted.dag.subset_selection",
    "greedy_subsets": "learners.budgeted.dag.subset_selection",
})

__all__ = [
    "DAGClassifier",
    "SensorGraph",
    "chain_graph",
    "forward_prefixes",
    "full_graph",
    "greedy_subsets",
    "union_graph",
]
