"""Text forms kept in columns round-trip exactly: keys, cost expressions, feature masks."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

import polydom
from polydom.curves.names import candidate_name
from storage.codec import (
    cost_expression,
    decode_key,
    encode_key,
    feature_mask,
    mask_features,
)
from tests.strategies import examples

atoms = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=False),
    st.text(max_size=8),
)
keys = st.recursive(
    atoms,
    lambda inner: st.one_of(
        st.tuples(inner, inner), st.frozensets(inner, max_size=3)
    ),
    max_leaves=6,
)


@settings(max_examples=examples(300), deadline=None)
@given(keys)
def test_candidate_keys_round_trip_with_their_types(key):
    back = decode_key(encode_key(key))
    assert back == key and type(back) is type(key)
    assert encode_key(back) == encode_key(key)
    assert isinstance(candidate_name(key), str)


@settings(max_examples=examples(300), deadline=None)
@given(st.lists(st.floats(min_value=-1e30, max_value=1e30, allow_nan=False,
                          allow_subnormal=False), min_size=1, max_size=5))
def test_cost_expression_parses_back_to_the_same_coefficients(coefs):
    curve = polydom.CostCurve(coefs)
    assert polydom.CostCurve.parse(cost_expression(curve)) == curve


@settings(max_examples=examples(100), deadline=None)
@given(st.lists(st.text(min_size=1, max_size=4), min_size=1, max_size=70, unique=True),
       st.data())
def test_feature_masks_name_the_same_sets(order, data):
    names = frozenset(data.draw(st.lists(st.sampled_from(order), max_size=len(order))))
    mask = feature_mask(names, order)
    assert mask_features(mask, order) == names
    assert feature_mask(names | {"not-a-feature-" * 3}, order) is None
