"""A build records its learner's short name; its description stays the training identity.

``builds.learner`` (``build_summary.learner``, ``builds list``, ``inspect``) holds the
learner's registry name (``learner_name``, else its class name): one line.  The learner's
``describe()`` text stays in the build's params, so which stored trainings a build reuses
is decided as before: a changed hyperparameter trains again, an identical learner does not.
"""

from __future__ import annotations

import pytest
import sqlalchemy as sa

import learners
import polydom
import storage
from polydom.app.cli import main
from tests.test_storage.test_uncertainty_storage import COSTS, small_learner


class _Named(learners.SyntheticLearner):
    learner_name = "mine"


def _accuracy(features: frozenset) -> float:
    return 0.5 + 0.1 * len(features)


def test_a_build_records_the_registry_name_and_keeps_the_description(tmp_path, capsys):
    url = f"sqlite:///{tmp_path / 's.db'}"
    learner = learners.SyntheticLearner(_accuracy)
    polydom.build_index(COSTS, learner, store=url, n_max=100.0)
    [build] = polydom.list_builds(url)
    assert build.learner == "synthetic"
    assert build.params["learner"] == learner.describe() != build.learner
    engine = sa.create_engine(url)
    with engine.connect() as conn:
        assert conn.exec_driver_sql("SELECT learner FROM build_summary").scalar() == "synthetic"
    engine.dispose()
    assert main(["builds", "list", url, "--json"]) == 0
    assert '"learner": "synthetic"' in capsys.readouterr().out


def test_the_short_name_is_the_learner_s_name_and_one_line(tmp_path):
    url = f"sqlite:///{tmp_path / 'n.db'}"
    polydom.build_index(COSTS, _Named(_accuracy), store=url, n_max=100.0)
    assert [b.learner for b in polydom.list_builds(url)] == ["mine"]
    with storage.IndexStore(url) as st:
        with pytest.raises(ValueError, match="learner must be a short one-line name"):
            st.begin_build({"alpha": 1.0}, {"a": "1"}, learner="two\nlines")


def test_reuse_of_stored_trainings_follows_the_description_not_the_name(tmp_path):
    url = f"sqlite:///{tmp_path / 'r.db'}"
    polydom.build_index(COSTS, small_learner(), store=url, n_max=100.0)
    same = small_learner()
    again = polydom.build_index(COSTS, same, store=url, n_max=100.0, alpha=1.5)
    assert getattr(same, "calls_", 0) == 0 and again.info["cache_hits"] == again.info[
        "expansions"]
    changed = small_learner(C=0.05)
    other = polydom.build_index(COSTS, changed, store=url, n_max=100.0, alpha=1.5)
    assert changed.calls_ == other.info["expansions"] and other.info["cache_hits"] == 0
    builds = polydom.list_builds(url)
    assert len({b.learner for b in builds}) == 1  # one short name: not what decides reuse
    assert len({b.params["learner"] for b in builds}) == 2
