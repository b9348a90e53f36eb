"""Exponential decay: ExpDecayQDigest (Theorem 3) and ExpDecaySpaceSaving (Theorem 4)."""

from __future__ import annotations

import math
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sketches.sketch_oracle import decayed, freq, hh_ok, orders, quantile_ok, total, weight_le
from windowagg.errors import CodecError, EmptyWindowError, TimestampError
from windowagg.sketches import ExpDecayQDigest, ExpDecaySpaceSaving, ExponentialDecay


@st.composite
def stamped(draw, max_size=250, universe=256):
    n = draw(st.integers(1, max_size))
    rng = random.Random(draw(st.integers(0, 2**32)))
    span = draw(st.sampled_from([10, 100, 5000]))
    hot = draw(st.booleans())
    stream = []
    for _ in range(n):
        x = rng.choice([3, 7]) if hot and rng.random() < 0.4 else rng.randrange(universe)
        stream.append((x, rng.randrange(span), rng.choice([1.0, 1.0, 2.5])))
    lam = draw(st.sampled_from([0.001, 0.05, 0.5]))
    eps = draw(st.sampled_from([0.05, 0.1, 0.2]))
    return stream, lam, eps, draw(st.integers(0, 2**32))


@given(stamped())
def test_exp_qdigest_bounds_over_arrival_orders(case):
    stream, lam, eps, seed = case
    rng = random.Random(seed)
    g = ExponentialDecay(lam)
    idx = orders(len(stream), [s[1] for s in stream], rng)
    t = max(s[1] for s in stream) + rng.randrange(5)
    items = decayed(stream, g, t)
    D = total(items)
    tol = 1e-7 * D
    answers = set()
    for name in ("sorted", "reversed", "random", "bursty", "one_late"):
        d = ExpDecayQDigest(256, eps, lam)
        for i in idx[name]:
            x, ts, w = stream[i]
            d.update(x, ts, w)
        d._check()
        assert math.isclose(d.decayed_count(t), D, rel_tol=1e-9)
        for x in (0, 3, 7, 100, 255):
            assert abs(d.rank(x, t) - weight_le(items, x)) <= eps * D / 2 + tol
            lo, hi = d.rank_bounds(x, t)
            assert lo - tol <= weight_le(items, x) <= hi + tol
        for phi in (0.1, 0.5, 0.95):
            ok, msg = quantile_ok(items, d.quantile(phi), phi, eps)
            assert ok, (name, msg)
        phi = max(0.3, 2 * eps)
        ok, msg = hh_ok(items, [k for k, _ in d.heavy_hitters(phi, t)], phi - eps, phi)
        assert ok, (name, msg)
        answers.add(tuple(d.quantile(p) for p in (0.1, 0.5, 0.95)))
        # time invariance: the same quantiles at any later time
        assert d.quantile(0.5) == d.digest(t + 50).quantile(0.5)


def test_long_stream_never_overflows():
    lam = 0.001
    d = ExpDecayQDigest(1024, 0.05, lam=lam)
    ss = ExpDecaySpaceSaving(0.05, lam=lam)
    rng = random.Random(2)
    stream = []
    for t in range(0, 3_000_000, 50):  # lam * span = 3000 >> 709: weights must be rescaled
        x = rng.randrange(1024) if rng.random() < 0.7 else 5
        ts = t - rng.randrange(3)
        d.update(x, ts)
        ss.update(x, ts)
        stream.append((x, ts, 1.0))
    d._check()
    ss._check()
    t = d.max_timestamp
    assert t is not None
    items = decayed(stream, ExponentialDecay(lam), t)
    D = total(items)
    assert math.isfinite(d.decayed_count()) and math.isclose(d.decayed_count(), D, rel_tol=1e-6)
    assert all(math.isfinite(v) for v in d._q._nodes.values())
    assert d.landmark is not None and d.landmark > 2_000_000
    ok, msg = hh_ok(items, [k for k, _ in ss.heavy_hitters(0.2)], 0.15, 0.2)
    assert ok, msg
    ok, msg = quantile_ok(items, d.quantile(0.5), 0.5, 0.05)
    assert ok, msg
    # a very old item just gets a negligible (possibly zero) weight
    d.update(1, 0)
    d._check()


@given(stamped(max_size=300), st.integers(1, 6))
@settings(max_examples=25)
def test_exp_qdigest_merge_of_partitions(case, k):
    stream, lam, eps, seed = case
    rng = random.Random(seed)
    parts = [ExpDecayQDigest(256, eps, lam) for _ in range(k)]
    for x, ts, w in stream:
        parts[rng.randrange(k)].update(x, ts, w)
    while len(parts) > 1:
        i, j = sorted(rng.sample(range(len(parts)), 2))
        b = parts.pop(j)
        parts[i].merge(b)
    d = parts[0]
    d._check()
    t = max(s[1] for s in stream)
    items = decayed(stream, ExponentialDecay(lam), t)
    D = total(items)
    assert math.isclose(d.decayed_count(t), D, rel_tol=1e-9)
    for phi in (0.1, 0.5, 0.9):
        ok, msg = quantile_ok(items, d.quantile(phi), phi, eps)
        assert ok, msg


def test_exp_qdigest_bytes_and_errors():
    d = ExpDecayQDigest(100, 0.1, 0.2)
    with pytest.raises(EmptyWindowError):
        d.quantile(0.5)
    assert ExpDecayQDigest.from_bytes(d.to_bytes()).decayed_count() == 0.0
    for t in range(50):
        d.update(t % 100, t)
    before = d.to_bytes()
    for bad in (math.nan, None, "x", math.inf):
        with pytest.raises(TimestampError):
            d.update(1, bad)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        d.update(100, 3)
    assert d.to_bytes() == before
    c = d.copy()
    c.update(5, 60)
    assert d.to_bytes() == before and c.to_bytes() != before
    e = ExpDecayQDigest.from_bytes(before)
    assert e.quantile(0.5) == d.quantile(0.5) and e.decayed_count(60) == d.decayed_count(60)
    for cut in range(0, len(before), 7):
        with pytest.raises(CodecError):
            ExpDecayQDigest.from_bytes(before[:cut])
    with pytest.raises(CodecError):
        ExpDecayQDigest.from_bytes(d._q.to_bytes())
    with pytest.raises(ValueError):
        d.merge(ExpDecayQDigest(100, 0.1, 0.3))


@given(stamped(max_size=400, universe=60))
def test_space_saving_bounds_over_orders(case):
    stream, lam, eps, seed = case
    rng = random.Random(seed)
    idx = orders(len(stream), [s[1] for s in stream], rng)
    t = max(s[1] for s in stream)
    items = decayed(stream, ExponentialDecay(lam), t)
    D = total(items)
    f = freq(items)
    tol = 1e-7 * D
    for name in ("sorted", "reversed", "random", "zigzag", "bitrev"):
        ss = ExpDecaySpaceSaving(eps, lam)
        for i in idx[name]:
            x, ts, w = stream[i]
            ss.update(x, ts, w)
            if rng.random() < 0.1:
                ss._check()
        ss._check()
        assert math.isclose(ss.decayed_count(t), D, rel_tol=1e-9)
        for x in range(60):
            lo, hi = ss.frequency_bounds(x, t)
            assert lo - tol <= f.get(x, 0.0) <= hi + tol
            assert hi - lo <= eps * D + tol
        phi = max(0.15, 2 * eps)
        ok, msg = hh_ok(items, [k for k, _ in ss.heavy_hitters(phi, t)], phi - eps, phi)
        assert ok, (name, msg)


@given(stamped(max_size=400, universe=40), st.integers(2, 7))
def test_space_saving_merge_tree_keeps_bounds(case, k):
    stream, lam, eps, seed = case
    rng = random.Random(seed)
    parts = [ExpDecaySpaceSaving(eps, lam) for _ in range(k)]
    for x, ts, w in stream:
        parts[rng.randrange(k)].update(x, ts, w)
    while len(parts) > 1:
        i, j = sorted(rng.sample(range(len(parts)), 2))
        b = parts.pop(j)
        snap = b.to_bytes()
        parts[i].merge(b)
        assert b.to_bytes() == snap
        parts[i]._check()
        # keep updating after a merge: invariants must survive
        x, ts, w = stream[rng.randrange(len(stream))]
        parts[i].update(x, ts, w)
        stream = [*stream, (x, ts, w)]
        parts[i]._check()
    ss = parts[0]
    t = max(s[1] for s in stream)
    items = decayed(stream, ExponentialDecay(lam), t)
    D = total(items)
    f = freq(items)
    tol = 1e-7 * D
    for x in range(40):
        lo, hi = ss.frequency_bounds(x, t)
        assert lo - tol <= f.get(x, 0.0) <= hi + tol
        assert hi - lo <= eps * D + tol
    e = ExpDecaySpaceSaving.from_bytes(ss.to_bytes())
    assert e.heavy_hitters(0.3, t) == ss.heavy_hitters(0.3, t)


def test_space_saving_string_keys_and_bad_bytes():
    ss = ExpDecaySpaceSaving(0.25, 0.1)
    for t, key in enumerate(["a", "b", "a", b"c", 7, "a", "d", "e"]):
        ss.update(key, t)
    e = ExpDecaySpaceSaving.from_bytes(ss.to_bytes())
    assert e.heavy_hitters(0.3) == ss.heavy_hitters(0.3)
    data = ss.to_bytes()
    for cut in range(len(data)):
        with pytest.raises(CodecError):
            ExpDecaySpaceSaving.from_bytes(data[:cut])
    ss.update((1, 2), 9)
    with pytest.raises(TypeError):
        ss.to_bytes()
    with pytest.raises(TypeError):
        ss.update([1], 3)
