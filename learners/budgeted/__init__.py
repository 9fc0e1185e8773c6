"""Budgeted learners: the cost contract and the methods that trade accuracy for feature cost.

One room (sub-package) per method: :mod:`.cegb` (CEGB, GreedyMiser), :mod:`.cstc` (CSTC,
CSCC), :mod:`.dag` (the DAG of sensor sets), :mod:`.adapt` (ADAPT); the pieces they share
sit here: :mod:`.contract` (the cost contract: the checked protocol, the parameters' one check and
JSON form), :mod:`.sweep` (the one sweep of every budgeted learner into index candidates),
:mod:`.on_demand` (computing features as a model asks for them), :mod:`.tree_paths` (tree
ensembles as flat arrays) and :mod:`.sklearn_blobs` (scikit-learn sub-models without pickle).
Every name loads on first use, so that ``import learners.budgeted`` (or a light module of it,
such as :mod:`.former_names`) stays light and works without LightGBM.
"""

from polydom.lazy_exports import lazy_exports

# the face lists the rooms; the estimators and the shared pieces are named by `learners`
# (its one list) or imported from their modules
__getattr__ = lazy_exports(__name__, {
    room: f"{__name__}.{room}" for room in ("adapt", "cegb", "cheap_first", "cstc", "dag")})

__all__ = ["adapt", "cegb", "cheap_first", "cstc", "dag"]
