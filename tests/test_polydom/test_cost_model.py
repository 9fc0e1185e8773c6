"""CostModel: atoms paid once, bundles, columns, needs; bad input named."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import polydom
from polydom import CostCurve, CostModel


def image_model() -> CostModel:
    return CostModel(
        {"edges": "2*n", "hog": "n", "lbp": "3"},
        bundles={"shape": ["edges", "hog"], "texture": ["edges", "lbp"]},
        columns={"edges": [0, 1], "hog": [2], "lbp": [4, 3]},
    )


def test_a_set_pays_a_shared_atom_once():
    cm = image_model()
    assert cm.cost(["shape", "texture"]) == CostCurve([3.0, 3.0])
    assert cm.cost(["shape"]) + cm.cost(["texture"]) == CostCurve([3.0, 5.0])


def test_features_are_the_bundles_when_there_are_bundles_else_the_atoms():
    assert image_model().features == ("shape", "texture")
    assert CostModel({"a": "1", "b": "n"}).features == ("a", "b")


def test_a_plain_mapping_coerces_to_atoms_only():
    cm = CostModel.coerce({"a": "1", "b": [0.0, 2.0]})
    assert cm.atoms == {"a": CostCurve([1.0]), "b": CostCurve([0.0, 2.0])}
    assert cm.bundles == {} and CostModel.coerce(cm) is cm


def test_columns_of_is_the_sorted_union_of_the_atoms_columns():
    cm = image_model()
    assert cm.columns_of(["texture"]) == [0, 1, 3, 4]
    assert cm.columns_of(["shape", "lbp"]) == [0, 1, 2, 3, 4]


def test_expected_cost_weights_each_atom_by_its_probability():
    cm = image_model()
    assert cm.expected_cost({"edges": 0.5, "lbp": 1.0}) == CostCurve([3.0, 1.0])


def test_needs_from_usage_takes_the_union_of_atoms_per_row():
    cm = image_model()
    usage = np.array([[True, True], [True, False], [False, False], [False, True]])
    assert cm.needs_from_usage(usage, ["shape", "texture"]) == {
        "edges": 0.75, "hog": 0.5, "lbp": 0.5}


@pytest.mark.parametrize(
    "args, match",
    [
        (({"a": "1"}, {"b": ["zz"]}), "bundle 'b' names unknown atom.*'zz'"),
        (({"a": "1"}, {"b": []}), "bundle 'b' is empty"),
        (({"a": "1"}, {"a": ["a"]}), "bundle 'a' has the name of an atom"),
        (({"a": "1", "b": "1"}, None, {"a": [0, 1], "b": [1]}), "column 1 is claimed by two"),
        (({"a": "1"}, None, {"q": [0]}), "'q', which is not an atom"),
        (({"a": "1"}, None, {"a": [-1]}), "integers >= 0"),
        (({"": "1"},), "atom names must be a non-empty string"),
        (({"a": "1"}, {"": ["a"]}), "bundle names must be a non-empty string"),
        (({"a": "n + sin(n)"},), "cost curve of atom 'a'"),
        (("a",), "atoms must be a mapping"),
    ],
)
def test_bad_cost_models_raise_naming_the_thing(args, match):
    with pytest.raises(ValueError, match=match):
        CostModel(*args)


def test_unknown_names_and_bad_needs_are_named():
    cm = image_model()
    with pytest.raises(ValueError, match="unknown feature 'zz'"):
        cm.cost(["zz"])
    with pytest.raises(ValueError, match="'zz', which is not an atom"):
        cm.expected_cost({"zz": 1.0})
    with pytest.raises(ValueError, match="probability of needing 'hog'"):
        cm.expected_cost({"hog": 1.5})
    with pytest.raises(ValueError, match="atom 'a' has no columns"):
        CostModel({"a": "1"}).columns_of(["a"])
    with pytest.raises(ValueError, match="atom 'a' = .* is negative"):
        CostModel({"a": "1 - n"}).check_nonnegative(0.0, 10.0)


@st.composite
def models(draw):
    k = draw(st.integers(1, 6))
    atoms = {f"a{j}": CostCurve(draw(st.lists(st.integers(0, 9).map(float), min_size=1,
                                              max_size=3))) for j in range(k)}
    bundles = {f"b{i}": draw(st.frozensets(st.sampled_from(sorted(atoms)), min_size=1))
               for i in range(draw(st.integers(0, 5)))}
    return CostModel(atoms, bundles=bundles or None)


@given(models(), st.data())
def test_cost_is_monotone_and_pays_each_atom_once(cm, data):
    names = list(cm.features)
    small = data.draw(st.frozensets(st.sampled_from(names)))
    big = small | data.draw(st.frozensets(st.sampled_from(names)))
    union = cm.atoms_of(big)
    assert cm.cost(big) == CostCurve.total([cm.atoms[a] for a in union] or [CostCurve([0.0])])
    assert cm.cost(small).le(cm.cost(big))
    assert cm.expected_cost(dict.fromkeys(union, 1.0)) == cm.cost(big)


def test_cost_model_is_exported_from_the_core():
    assert polydom.CostModel is CostModel
