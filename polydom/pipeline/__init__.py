"""The pipeline: the only part of polydom that imports lattice, learners and storage.

``build_index`` explores the lattice, adds budgeted learners' candidates, indexes and
optionally persists them; ``open_index`` loads a stored index.
"""

from polydom.pipeline.build import build_index
from polydom.pipeline.open import list_builds, open_index

__all__ = ["build_index", "list_builds", "open_index"]
