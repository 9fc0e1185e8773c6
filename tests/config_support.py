"""Build configs (TOML text) shared by the CLI and learner tests: the breast-cancer data in
three bundles of ten columns (``mean``, ``error``, ``worst``) costing 1, 5 and 20, with the
``[[budgeted]]`` sections and settings each test adds."""

from __future__ import annotations

import json

#: The three bundles of the breast-cancer columns, one ``name = [columns]`` row each: the
#: ``[features]`` table of a config, and the sensors of a budgeted learner that takes
#: feature groups (the DAG's ``feature_groups``).
BUNDLE_ROWS = """mean = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]
error = [10, 11, 12, 13, 14, 15, 16, 17, 18, 19]
worst = [20, 21, 22, 23, 24, 25, 26, 27, 28, 29]
"""

#: The bundles' costs, the ``[costs]`` table.
BUNDLE_COSTS = """mean = "1"
error = "5"
worst = "20"
"""


def breast_cancer_config(
    store: str, budgeted: str = "", learner: str = "tree", atoms: bool = True, **settings: object
) -> str:
    """A build config over the breast-cancer bundles: data, the lattice's ``learner``, the
    ``store`` file, the columns as atoms (``atoms``), 2-fold cross-validation, further
    top-level ``settings`` (JSON-encoded values: ``seed=3``, ``executor="processes:2"``),
    the bundles and their costs, then ``budgeted`` (the text of its ``[[budgeted]]``
    sections, as is).
    """
    top = ['data = "breast_cancer"', f'learner = "{learner}"', f'store = "{store}"']
    if atoms:
        top.append('atoms = "columns"')
    top.append("cv = 2")
    top += [f"{key} = {json.dumps(value)}" for key, value in settings.items()]
    return ("\n".join(top) + "\n\n[features]\n" + BUNDLE_ROWS + "\n[costs]\n" + BUNDLE_COSTS
            + ("\n" + budgeted if budgeted else ""))
