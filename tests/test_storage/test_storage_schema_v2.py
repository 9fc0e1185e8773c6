"""A store of schema version 2 (before standard errors and fold scores) is read, never written.

``data/schema_v2.db`` was written by the schema-2 code (``data/make_schema_v2.py`` says
how): bundles ``ab``, ``bc`` over atoms a, b, c, a logistic regression on 3 folds, one extra
candidate "tree-c" with its own model, domain [0, 100].
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

import lattice.expansion
import polydom
import polydom.errors
import storage
from polydom.app.cli import main
from tests.index_oracle import full_scan

FIXTURE = Path(__file__).parent / "data" / "schema_v2.db"


@pytest.fixture
def v2_path(tmp_path):
    path = tmp_path / "v2.db"
    shutil.copyfile(FIXTURE, path)
    return path


def test_a_schema_2_store_opens_and_answers_best_as_a_full_scan(v2_path):
    index = polydom.open_index(v2_path)
    assert index.info["schema_version"] == 2 and index.info["sealed"]
    assert sorted(map(str, index.cost_model.bundles)) == ["ab", "bc"]
    by_key = {c.key: c for c in index.candidates}
    assert by_key["tree-c"].learner == "tree" and by_key[("ab", "bc")].learner == "lattice"
    for cand in index.candidates:  # version 2 kept no uncertainty
        assert cand.accuracy_se == 0.0 and cand.fold_scores == ()
    for size in np.linspace(0.0, 100.0, 21):
        for budget in [0.0, 1.5, 3.0, 10.0, 30.0, 60.0, 200.0]:
            got = index.lookup(size, budget)
            want = full_scan(index.candidates, size, budget)
            assert (got and got.key) == (want and want.key)
    hit = index.lookup(50.0, 1000.0)
    assert hit.key == ("ab", "bc") and hit.model.predict(np.zeros((2, 3))).shape == (2,)


def test_one_se_on_a_schema_2_store_is_refused_naming_the_store_and_the_rule(v2_path):
    index = polydom.open_index(v2_path)
    for ask in (lambda: index.lookup(50.0, 100.0, rule="one_se"),
                lambda: index.lookup_many(np.array([50.0]), np.array([100.0]), rule="one_se"),
                lambda: index.predict(np.zeros((1, 3)), 50.0, 100.0, rule="one_se"),
                lambda: index.explain(50.0, 100.0, rule="one_se")):
        with pytest.raises(polydom.errors.RuleUnavailableError) as err:
            ask()
        message = str(err.value)
        assert "'one_se'" in message and str(v2_path) in message
        assert "schema version 2" in message and "\n" not in message
    assert index.lookup(50.0, 100.0).key == ("ab", "bc")  # "best" still answers


def test_a_schema_2_store_keeps_its_learner_description_and_lists_its_build(v2_path):
    [build] = polydom.list_builds(v2_path)
    assert build.status == "complete" and build.learner.startswith("SklearnLearner(")
    assert build.params["learner"] == build.learner
    with storage.IndexStore(v2_path, read_only=True) as st:
        rows = st.skyline_rows()
        cache = st.expansion_cache(build.build_id)
        expansions = [cache[fs] for fs in cache]
    assert rows and "accuracy_se" not in rows[0]  # the view of version 2, as it was made
    assert len(expansions) >= 3
    assert all(e.accuracy_se == 0.0 and e.fold_scores == () for e in expansions)
    assert any(e.predictions is not None for e in expansions)


def test_reading_a_schema_2_store_writes_nothing(v2_path, capsys):
    before = v2_path.read_bytes()
    polydom.open_index(v2_path).lookup(10.0, 10.0)
    polydom.list_builds(v2_path)
    assert main(["inspect", str(v2_path)]) == 0
    out = capsys.readouterr().out
    assert "standard errors: not stored (a store of schema version 2)" in out
    assert v2_path.read_bytes() == before


def test_the_cli_says_a_schema_2_store_has_no_standard_errors(v2_path, capsys):
    url = str(v2_path)
    assert main(["lookup", url, "--size", "50", "--budget", "100", "--rule", "one_se"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("polydom lookup: error: rule 'one_se' needs each candidate's "
                          "standard error") and url in err and "\n" not in err
    assert main(["lookup", url, "--size", "50", "--budget", "100", "--json"]) == 0
    answer = json.loads(capsys.readouterr().out)
    assert answer["model"]["name"] == "ab+bc" and answer["model"]["accuracy_se"] is None
    assert main(["inspect", url, "--json"]) == 0
    entries = json.loads(capsys.readouterr().out)["skyline"]
    assert entries and all(e["accuracy_se"] is None for e in entries)


def test_writing_to_a_schema_2_store_is_refused_naming_the_fix(v2_path):
    with storage.IndexStore(v2_path) as st:
        with pytest.raises(storage.SchemaVersionError, match="build into a new database"):
            st.begin_build({"alpha": 1.0}, {"a": "1"})
        [build] = st.list_builds()
        with pytest.raises(storage.SchemaVersionError, match="schema version 2"):
            st.expansion_cache(build.build_id)[frozenset({"ab"})] = lattice.Expansion(
                frozenset({"ab"}), 0.5)
