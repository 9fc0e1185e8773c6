"""A build's cost model is parsed and checked once and passed on as an object (issue 30
item 2): a config's cost texts are parsed once, each curve checked non-negative on the
domain once (at the config's door), and the one :class:`CostModel` object reaches the
lattice, the index and the store; on main the curves were checked again by ``build_index``
and by the lattice's ``FeatureSpace``."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

import polydom
from lattice.feature_space import FeatureSpace
from polydom.app.config_build import ConfigError, build_from_config, load_config
from polydom.curves.cost_curve import CostCurve
from polydom.curves.cost_model import CostModel
from polydom.pipeline import build as pipeline_build

ROWS = [[1, 2, 3, 0], [2, 3, 4, 1], [3, 4, 5, 0], [4, 5, 6, 1], [5, 1, 2, 0], [6, 2, 1, 1]]


@pytest.fixture
def counted(monkeypatch):
    """Count the parses of cost texts and the non-negativity checks of each curve (by
    identity), and keep every CostModel the lattice's FeatureSpace and the index get."""
    checks: Counter = Counter()
    parses: Counter = Counter()
    seen: dict[str, list] = {"space": [], "index": []}
    is_nonnegative, parse = CostCurve.is_nonnegative, CostCurve.parse.__func__

    def counting_check(self, lo=0.0, hi=float("inf")):
        checks[id(self)] += 1
        return is_nonnegative(self, lo, hi)

    def counting_parse(cls, text):
        parses[text] += 1
        return parse(cls, text)

    space_init = FeatureSpace.__init__

    def space(self, costs, n_min, n_max):
        seen["space"].append(costs)
        space_init(self, costs, n_min, n_max)

    index_init = polydom.Index.__init__

    def index(self, table, costs, columns=None, info=None):
        seen["index"].append(costs)
        index_init(self, table, costs, columns, info)

    monkeypatch.setattr(CostCurve, "is_nonnegative", counting_check)
    monkeypatch.setattr(CostCurve, "parse", classmethod(counting_parse))
    monkeypatch.setattr(FeatureSpace, "__init__", space)
    monkeypatch.setattr(polydom.Index, "__init__", index)
    return checks, parses, seen


def _config(folder: Path, **change) -> Path:
    (folder / "d.csv").write_text("\n".join(",".join(map(str, r)) for r in
                                            [["p", "q", "r", "label"], *ROWS]) + "\n")
    config = {"data": "d.csv", "target": "label", "learner": "tree", "store": "x.db", "cv": 2,
              "domain": [1, 50], "features": {"pq": ["p", "q"], "r": ["r"]},
              "costs": {"pq": "1 + 0.5*n", "r": "2*n"}, **change}
    path = folder / "cfg.json"
    path.write_text(json.dumps(config))
    return path


@pytest.mark.parametrize("atoms", ["features", "columns"])
def test_each_cost_is_parsed_once_and_checked_once_and_one_model_travels(
        tmp_path, counted, atoms):
    checks, parses, seen = counted
    index = build_from_config(load_config(_config(tmp_path, atoms=atoms)), out=lambda s: None)
    model = index.cost_model
    assert parses == Counter({"1 + 0.5*n": 1, "2*n": 1})
    atoms_checked = [checks[id(curve)] for curve in model.atoms.values()]
    assert atoms_checked == [1] * len(model.atoms)  # each atom's curve once, at the door
    assert all(m is model for m in seen["space"]), "the lattice got another model"
    assert seen["index"] and all(m is model for m in seen["index"])
    reopened = polydom.open_index(f"sqlite:///{tmp_path / 'x.db'}")
    assert reopened.cost_model == model


def test_a_negative_cost_is_still_refused_naming_the_feature_or_column(tmp_path, capsys):
    for change, name in (({"costs": {"pq": "1", "r": "5 - n"}}, "'r' (-n + 5)"),
                         ({"atoms": "columns", "costs": {"pq": "1", "r": "5 - n"}},
                          "'r' (-n + 5)"),
                         ({"atoms": "columns", "features": {"pq": ["p", "q"], "r": ["r"]},
                           "costs": {"p": "1", "q": "3 - n", "r": "1"}},
                          "'column 1' (-n + 3)"),
                         ({"costs": {"p": "2*n", "q": "3 - n", "r": "1"}},  # pq: 3 + n
                          "'column 1' (-n + 3)")):
        with pytest.raises(ConfigError) as caught:
            build_from_config(load_config(_config(tmp_path, **change)), out=lambda s: None)
        assert str(caught.value) == (f"cost of {name} is negative somewhere on the domain "
                                     "[1, 50]")
        assert not (tmp_path / "x.db").exists()


def test_a_model_remembers_the_domain_it_was_checked_on(monkeypatch):
    model = CostModel({"a": "1 + n", "b": "3"}, bundles={"ab": ["a", "b"]})
    calls = []
    is_nonnegative = CostCurve.is_nonnegative
    monkeypatch.setattr(CostCurve, "is_nonnegative",
                        lambda self, lo, hi: calls.append((lo, hi)) or is_nonnegative(self, lo, hi))
    model.check_nonnegative(0.0, 100.0)
    assert len(calls) == 2
    model.check_nonnegative(5.0, 50.0)  # inside: trusted
    model.with_columns({"a": [0], "b": [1]}).check_nonnegative(0.0, 100.0)  # same curves
    FeatureSpace(model, 0.0, 100.0)
    pipeline_build._cost_model(model, object())
    assert len(calls) == 2
    model.check_nonnegative(0.0, 200.0)  # outside: checked
    assert len(calls) == 4
    with pytest.raises(ValueError, match=r"cost curve of atom 'c' = -n \+ 5 is negative"):
        CostModel({"c": "5 - n"}).check_nonnegative(0.0, 10.0)
