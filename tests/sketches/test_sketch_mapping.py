"""Value mappers: monotone, stated discretisation error, vectorized == scalar."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from windowagg.sketches import FloatOrderMapper, QDigest, ValueMapper

finite = st.floats(allow_nan=False, allow_infinity=False, width=64)


@given(
    st.lists(st.floats(-100, 600, allow_nan=False), min_size=2, max_size=50),
    st.sampled_from([0.1, 0.5, 1.0, 7.0]),
)
def test_value_mapper_monotone_with_half_resolution_error(vs, res):
    m = ValueMapper(-100.0, 600.0, res)
    keys = [m.to_key(v) for v in vs]
    for v, k in zip(vs, keys, strict=True):
        assert 0 <= k < m.universe
        assert abs(m.to_value(k) - v) <= res / 2 + 1e-9 or k == m.universe - 1
    pairs = sorted(zip(vs, keys, strict=True))
    assert [k for _, k in pairs] == sorted(keys)
    assert list(m.to_keys(np.array(vs))) == keys


def test_value_mapper_range_and_clip():
    m = ValueMapper(0.0, 10.0, 1.0)
    with pytest.raises(ValueError):
        m.to_key(11.0)
    with pytest.raises(ValueError):
        m.to_key(math.nan)
    with pytest.raises(ValueError):
        m.to_keys([1.0, 20.0])
    c = ValueMapper(0.0, 10.0, 1.0, clip=True)
    assert c.to_key(-5.0) == 0 and c.to_key(50.0) == c.universe - 1
    with pytest.raises(ValueError):
        ValueMapper(1.0, 1.0, 0.1)
    with pytest.raises(ValueError):
        ValueMapper(0.0, 1.0, 0.0)


@given(
    st.lists(
        finite | st.sampled_from([math.inf, -math.inf, -0.0, 0.0, 5e-324]), min_size=1, max_size=60
    )
)
def test_float_order_mapper_is_exact_and_order_preserving(vs):
    f = FloatOrderMapper()
    keys = [f.to_key(v) for v in vs]
    for v, k in zip(vs, keys, strict=True):
        assert 0 <= k < 2**64
        assert f.to_value(k) == v
    order_v = sorted(range(len(vs)), key=lambda i: vs[i])
    ks = [keys[i] for i in order_v]
    assert ks == sorted(ks)
    assert [int(k) for k in f.to_keys(np.array(vs))] == keys
    with pytest.raises(ValueError):
        f.to_key(math.nan)


def test_quantiles_of_real_values_through_the_float_mapper():
    f = FloatOrderMapper()
    rng = np.random.default_rng(1)
    vals = rng.normal(0, 1000, 5000)
    d = QDigest(f.universe, 0.02)
    d.update_many(f.to_keys(vals))
    s = np.sort(vals)
    for phi in (0.05, 0.5, 0.95):
        q = f.to_value(d.quantile(phi))
        assert np.searchsorted(s, q, "left") <= (phi + 0.02) * len(s)
        assert np.searchsorted(s, q, "right") >= phi * len(s)
