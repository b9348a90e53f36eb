"""Value division for smooth decay (Theorem 6), merges, Lemma 1, bytes."""

from __future__ import annotations

import math
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sketches.sketch_oracle import decayed, hh_ok, orders, quantile_ok, total, weight_le
from windowagg.errors import CodecError, EmptyWindowError
from windowagg.sketches import ExponentialDecay, PolynomialDecay, ValueDivision, is_smooth


@st.composite
def stamped(draw, max_size=600, universe=128):
    n = draw(st.integers(1, max_size))
    rng = random.Random(draw(st.integers(0, 2**32)))
    span = draw(st.sampled_from([20, 1000, 100_000]))
    stream = []
    for _ in range(n):
        x = rng.choice([5, 9]) if rng.random() < 0.3 else rng.randrange(universe)
        stream.append((x, rng.randrange(span), rng.choice([1.0, 2.0])))
    alpha = draw(st.sampled_from([0.5, 1.0, 2.0]))
    theta = draw(st.sampled_from([0.02, 0.1]))
    beta = draw(st.sampled_from([0.02, 0.1]))
    return stream, alpha, theta, beta, draw(st.integers(0, 2**32))


def check(vd: ValueDivision, stream, g, t, theta, beta):
    items = [(x, v) for x, v in decayed(stream, g, t) if v > 0]
    D = total(items)
    tol = 1e-9 * D
    assert D - tol <= vd.decayed_count(t) <= (1 + theta) * D + tol
    assert vd.effective_theta(t) <= theta + 1e-12
    for x in (0, 5, 9, 64, 127):
        assert abs(vd.rank(x, t) - weight_le(items, x)) <= (theta + beta / 2) * D + tol
    for phi in (0.05, 0.5, 0.95):
        q = vd.quantile(phi, t)
        ok, msg = quantile_ok(items, q, phi, theta + beta)
        assert ok, msg
    phi = max(0.2, 2 * beta)
    ok, msg = hh_ok(
        items, [k for k, _ in vd.heavy_hitters(phi, t)], phi - theta - beta, phi + theta
    )
    assert ok, msg


@given(stamped())
def test_polynomial_decay_bounds_over_orders(case):
    stream, alpha, theta, beta, seed = case
    rng = random.Random(seed)
    g = PolynomialDecay(alpha)
    idx = orders(len(stream), [s[1] for s in stream], rng)
    tmax = max(s[1] for s in stream)
    for name in ("sorted", "reversed", "random", "bursty", "one_late"):
        vd = ValueDivision(128, g, theta, beta)
        for j, i in enumerate(idx[name]):
            x, ts, w = stream[i]
            vd.update(x, ts, w)
            if j % 50 == 0:
                vd._check()
        vd._check()
        vd.merge_pass()
        vd._check()
        for t in (tmax, tmax + 100):
            check(vd, stream, g, t, theta, beta)


@given(stamped(max_size=500), st.integers(2, 5))
@settings(max_examples=20)
def test_merge_of_partitions(case, k):
    stream, alpha, theta, beta, seed = case
    rng = random.Random(seed)
    g = PolynomialDecay(alpha)
    parts = [ValueDivision(128, g, theta, beta) for _ in range(k)]
    for x, ts, w in stream:
        parts[rng.randrange(k)].update(x, ts, w)
    a = parts[0]
    for b in parts[1:]:
        snap = b.to_bytes()
        a.merge(b)
        assert b.to_bytes() == snap
        a._check()
    tmax = max(s[1] for s in stream)
    check(a, stream, g, tmax, theta, beta)


def test_space_is_logarithmic_in_age():
    g = PolynomialDecay(1.0)
    vd = ValueDivision(1024, g, 0.1, 0.05)
    rng = random.Random(0)
    for t in range(100_000):
        vd.update(rng.randrange(1024), t - rng.randrange(50))
    vd.merge_pass()
    # about 2 * ln(1/g(t)) / ln(1 + theta) summaries (Theorem 6)
    bound = 2 * g.neg_log(100_000) / math.log1p(0.1) + 2
    assert vd.num_summaries <= bound, (vd.num_summaries, bound)


def test_decay_domination_lemma_1():
    g = PolynomialDecay(1.0)
    g2 = PolynomialDecay(2.0)
    theta = 0.05
    vd = ValueDivision(64, g, theta, 0.02)
    rng = random.Random(3)
    stream = []
    for t in range(3000):
        x = rng.randrange(64)
        vd.update(x, t)
        stream.append((x, t, 1.0))
    eff = vd.effective_theta(decay=g2)
    assert eff <= 2 * theta + theta**2 + 1e-12
    d = vd.digest(decay=g2)
    items = decayed(stream, g2, 2999)
    D = total(items)
    assert D <= d.total_weight <= (1 + eff) * D * (1 + 1e-9)


def test_exponential_decay_through_value_division_and_smoothness_check():
    assert is_smooth(PolynomialDecay(2.0), range(0, 500))
    assert is_smooth(ExponentialDecay(0.1), range(0, 500))
    assert not is_smooth(lambda a: math.exp(-0.01 * a * a), range(0, 100))
    vd = ValueDivision(32, ExponentialDecay(0.05), 0.05, 0.05)
    stream = [(t % 32, t, 1.0) for t in range(500)]
    for x, t, w in reversed(stream):
        vd.update(x, t, w)
    check(vd, stream, ExponentialDecay(0.05), 499, 0.05, 0.05)


def test_errors_and_bytes():
    g = PolynomialDecay(1.0)
    vd = ValueDivision(100, g, 0.1, 0.1)
    with pytest.raises(EmptyWindowError):
        vd.quantile(0.5)
    for t in range(300):
        vd.update(t % 100, t)
    snap = vd.to_bytes()
    with pytest.raises(ValueError):
        vd.update(100, 5)
    with pytest.raises(ValueError):
        vd.update(100, 10_000)  # a bad key with a new latest time must not move t_now
    with pytest.raises(ValueError):
        vd.update(1, 10_000, -1.0)
    with pytest.raises((TypeError, ValueError)):
        vd.update(1, math.nan)
    assert vd.to_bytes() == snap
    with pytest.raises(ValueError):
        vd.quantile(0.5, t=10)
    e = ValueDivision.from_bytes(snap, g)
    assert e.quantile(0.5) == vd.quantile(0.5)
    with pytest.raises(CodecError):
        ValueDivision.from_bytes(snap, PolynomialDecay(2.0))
    for cut in range(0, len(snap), max(1, len(snap) // 60)):
        with pytest.raises(CodecError):
            ValueDivision.from_bytes(snap[:cut], g)
    with pytest.raises(ValueError):
        vd.merge(ValueDivision(100, g, 0.2, 0.1))


def test_worked_example_of_the_paper_with_value_division():
    g = PolynomialDecay(1.0)
    vd = ValueDivision(2, g, 0.01, 0.01)
    for x, t in ((1, 2), (0, 3), (1, 1)):
        vd.update(x, t)
    assert [k for k, _ in vd.heavy_hitters(0.5, t=3)] == [0]
    assert [k for k, _ in vd.heavy_hitters(0.5, t=4)] == [1]


def test_generic_smooth_decay_callable():
    """A plain callable takes the generic band path (-ln g computed from g)."""

    def g(a: float) -> float:
        return (1.0 + a) ** -1.5

    theta, beta = 0.05, 0.05
    vd = ValueDivision(64, g, theta, beta)
    rng = random.Random(4)
    stream = [(rng.randrange(64), rng.randrange(3000), 1.0) for _ in range(2000)]
    for x, t, w in stream:
        vd.update(x, t, w)
    vd._check()
    check(vd, stream, g, max(s[1] for s in stream), theta, beta)
