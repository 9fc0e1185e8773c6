"""A store of schema version 1 (before atoms, bundles and needs) is read, never written.

``data/schema_v1.db`` was written by the schema-1 code: a synthetic lattice over features
a, b, c (costs "1", "n", "2 + 0.5*n"), alpha 1, domain [0, 100].
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import polydom
import polydom.errors
import storage

FIXTURE = Path(__file__).parent / "data" / "schema_v1.db"


@pytest.fixture
def v1_url(tmp_path):
    path = tmp_path / "v1.db"
    shutil.copyfile(FIXTURE, path)
    return path


def test_a_schema_1_store_opens_with_features_as_atoms_needed_with_probability_1(v1_url):
    index = polydom.open_index(v1_url)
    assert index.info["schema_version"] == 1
    assert list(index.costs) == ["a", "b", "c"] and not index.cost_model.bundles
    assert index.costs["c"] == polydom.CostCurve([2.0, 0.5])
    for cand in index.candidates:
        assert cand.needs == dict.fromkeys(sorted(cand.features), 1.0)
        assert cand.cost == index.cost_model.cost(cand.features)
    assert index.lookup(50.0, 10.0).key == ("a",)
    assert index.lookup(0.5, 100.0).key == ("a", "b", "c")


def test_reading_a_schema_1_store_writes_nothing(v1_url):
    before = v1_url.read_bytes()
    polydom.open_index(v1_url)
    polydom.list_builds(v1_url)
    with storage.IndexStore(v1_url, create=False) as st:
        st.skyline_rows()
    assert v1_url.read_bytes() == before


def test_writing_to_a_schema_1_store_is_refused_naming_the_fix(v1_url):
    with storage.IndexStore(v1_url) as st:
        with pytest.raises(storage.SchemaVersionError, match="build into a new database"):
            st.begin_build({"alpha": 1.0}, {"a": "1"})


def test_one_se_on_a_schema_1_store_is_refused_naming_its_version(v1_url):
    index = polydom.open_index(v1_url)
    with pytest.raises(polydom.errors.RuleUnavailableError,
                       match="schema version 1, which keeps no standard errors"):
        index.lookup(50.0, 10.0, rule="one_se")
    assert index.lookup(50.0, 10.0).key == ("a",)
