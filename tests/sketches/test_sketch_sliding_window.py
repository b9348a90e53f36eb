"""Sliding windows over out-of-order streams (Theorems 1, 2, 5; Corollary 1)."""

from __future__ import annotations

import bisect
import math
import random
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sketches.sketch_oracle import decayed, hh_ok, orders, quantile_ok, total, weight_le, window
from windowagg.errors import CodecError, EmptyWindowError, TimestampError
from windowagg.sketches import (
    ExponentialDecay,
    PolynomialDecay,
    SlidingWindowCount,
    SlidingWindowQDigest,
)

LT = 12


@st.composite
def timed(draw, max_size=1500, universe=64):
    n = draw(st.integers(1, max_size))
    rng = random.Random(draw(st.integers(0, 2**32)))
    kind = draw(st.sampled_from(["uniform", "recent", "dups"]))
    stream = []
    for _ in range(n):
        if kind == "uniform":
            t = rng.randrange(2**LT)
        elif kind == "recent":
            t = 2**LT - 1 - min(2**LT - 1, int(rng.expovariate(1 / 300)))
        else:
            t = rng.choice([5, 100, 2000, 4000, 4095])
        x = rng.choice([1, 2]) if rng.random() < 0.3 else rng.randrange(universe)
        stream.append((x, t, rng.choice([1, 1, 1, 3])))
    eps = draw(st.sampled_from([0.1, 0.2, 0.3]))
    return stream, eps, draw(st.integers(0, 2**32))


def windows_to_probe(tmax: int) -> list[int]:
    ws = {1, 2, 3, 10, 50, 100, 300, 1000, 2000, tmax, tmax + 1, tmax + 5}
    return sorted(w for w in ws if w >= 1)


@given(timed())
def test_count_certified_and_relative_error_over_orders(case):
    stream, eps, seed = case
    rng = random.Random(seed)
    idx = orders(len(stream), [s[1] for s in stream], rng)
    tmax = max(s[1] for s in stream)
    for name, order in idx.items():
        sw = SlidingWindowCount(eps, LT)
        for j, i in enumerate(order):
            _, t, w = stream[i]
            sw.update(t, w)
            if j % 97 == 0:
                sw._check()
        sw._check()
        for t in (tmax, tmax + 7):
            for w in windows_to_probe(tmax):
                true = total(window(stream, t, w))
                lo, hi = sw.count_bounds(w, t)
                assert lo <= true <= hi, (name, w, lo, true, hi)
                assert abs(sw.count(w, t) - true) <= eps * true + 1e-9, (name, w, true)


def test_count_every_window_on_a_large_adversarial_stream():
    rng = random.Random(11)
    eps = 0.1
    ts = [rng.randrange(2**14) for _ in range(20_000)]
    for name in ("reversed", "bitrev"):
        order = orders(len(ts), ts, rng)[name]
        sw = SlidingWindowCount(eps, 14)
        for i in order:
            sw.update(ts[i])
        sw._check()
        st_ = sorted(ts)
        tmax = st_[-1]
        for w in range(1, 2**14 + 2, 13):
            true = len(st_) - bisect.bisect_right(st_, tmax - w)
            lo, hi = sw.count_bounds(w)
            assert lo <= true <= hi
            assert abs(sw.count(w) - true) <= eps * true


@given(timed(max_size=1200))
@settings(max_examples=25)
def test_window_quantiles_ranks_heavy_hitters_over_orders(case):
    stream, eps, seed = case
    rng = random.Random(seed)
    idx = orders(len(stream), [s[1] for s in stream], rng)
    tmax = max(s[1] for s in stream)
    for name in ("reversed", "random", "bursty", "zigzag"):
        q = SlidingWindowQDigest(64, eps, LT)
        for i in idx[name]:
            x, t, w = stream[i]
            q.update(x, t, w)
        q._check()
        for w in windows_to_probe(tmax):
            items = [(x, float(wt)) for x, wt in window(stream, tmax, w)]
            if not items:
                with pytest.raises(EmptyWindowError):
                    q.quantile(0.5, w)
                continue
            D = total(items)
            for phi in (0.0, 0.1, 0.5, 0.9, 1.0):
                ok, msg = quantile_ok(items, q.quantile(phi, w), phi, eps)
                assert ok, (name, w, msg)
            for x in (0, 1, 2, 31, 63):
                r = weight_le(items, x)
                assert abs(q.rank(x, w) - r) <= eps * D + 1e-9, (name, w, x)
                lo, hi = q.rank_bounds(x, w)
                assert lo - 1e-9 <= r <= hi + 1e-9
            true_rc = math.fsum(wt for x, wt in items if 10 <= x <= 40)
            assert abs(q.range_count(10, 40, w) - true_rc) <= 2 * eps * D + 1e-9
            phi = max(0.25, 2 * eps)
            ok, msg = hh_ok(items, [k for k, _ in q.heavy_hitters(phi, w)], phi - eps, phi + eps)
            assert ok, (name, w, msg)


@given(timed(max_size=1500), st.integers(2, 5))
@settings(max_examples=20)
def test_merge_of_partitions_certified_and_within_k_eps(case, k):
    stream, eps, seed = case
    rng = random.Random(seed)
    parts = [SlidingWindowCount(eps, LT) for _ in range(k)]
    qparts = [SlidingWindowQDigest(64, eps, LT) for _ in range(k)]
    for x, t, w in stream:
        i = rng.randrange(k)
        parts[i].update(t, w)
        qparts[i].update(x, t, w)
    a, qa = parts[0], qparts[0]
    for b, qb in zip(parts[1:], qparts[1:], strict=True):
        snap = b.to_bytes()
        a.merge(b)
        assert b.to_bytes() == snap
        qa.merge(qb)
        a._check()
        qa._check()
    tmax = max(s[1] for s in stream)
    for w in windows_to_probe(tmax):
        items = [(x, float(wt)) for x, wt in window(stream, tmax, w)]
        true = total(items)
        lo, hi = a.count_bounds(w)
        assert lo <= true <= hi
        assert abs(a.count(w) - true) <= k * eps * true + 1e-9
        lo, hi = qa.count_bounds(w)
        assert lo <= true <= hi
        if items:
            for x in (0, 2, 40):
                rlo, rhi = qa.rank_bounds(x, w)
                assert rlo - 1e-9 <= weight_le(items, x) <= rhi + 1e-9
            ok, msg = quantile_ok(items, qa.quantile(0.5, w), 0.5, k * eps)
            assert ok, msg
    # keep updating after a merge
    for x, t, w in stream[:50]:
        qa.update(x, t, w)
    qa._check()


def test_max_window_prunes_and_rejects_longer_windows():
    sw = SlidingWindowQDigest(16, 0.2, 16, max_window=500)
    rng = random.Random(4)
    stream = [(rng.randrange(16), t) for t in range(20_000)]
    rng.shuffle(stream)
    for x, t in stream:
        sw.update(x, t)
    sw._check()
    ref = sw._python_twin()  # the state as the reference holds it (either backend)
    assert ref._levels
    for lv in ref._levels:
        assert all(ref._hi(node) > ref._tmax - 500 for node in lv.cnt)
    with pytest.raises(ValueError):
        sw.count(501)
    lo, hi = sw.count_bounds(500)
    assert lo <= 500 <= hi


def test_bad_input_changes_nothing_and_query_time_rules():
    sw = SlidingWindowQDigest(16, 0.2, 8)
    for t in range(100):
        sw.update(t % 16, t)
    snap = sw.to_bytes()
    for bad in (-1, 256, 2.5, None, math.nan, "3"):
        with pytest.raises(TimestampError):
            sw.update(1, bad)  # type: ignore[arg-type]
    for bad_x in (-1, 16, 1.5):
        with pytest.raises((TypeError, ValueError)):
            sw.update(bad_x, 3)  # type: ignore[arg-type]
    for bad_w in (0, -2, 1.5):
        with pytest.raises((TypeError, ValueError)):
            sw.update(1, 3, bad_w)  # type: ignore[arg-type]
    with pytest.raises(TimestampError):
        sw.update_many([1, 2], [3, 999])
    assert sw.to_bytes() == snap
    with pytest.raises(ValueError):
        sw.count(10, t=50)  # before the latest timestamp
    with pytest.raises(ValueError):
        sw.count(0)
    c = SlidingWindowCount(0.2, 8)
    c.update_many([1, 2, 3], [1, 2, 1])
    assert c.count(300) == 4.0


def test_round_trip_and_malformed_bytes():
    rng = random.Random(9)
    for cls in (SlidingWindowCount, SlidingWindowQDigest):
        s = cls(0.3, 10) if cls is SlidingWindowCount else cls(32, 0.3, 10)
        for _ in range(2000):
            t = rng.randrange(1024)
            if cls is SlidingWindowCount:
                s.update(t)
            else:
                s.update(rng.randrange(32), t)
        data = s.to_bytes()
        e = cls.from_bytes(data)
        assert e.to_bytes() == data
        for w in (1, 10, 100, 1000):
            assert e.count_bounds(w) == s.count_bounds(w)
        for cut in range(0, len(data), max(1, len(data) // 80)):
            with pytest.raises(CodecError):
                cls.from_bytes(data[:cut])
        with pytest.raises(CodecError):
            cls.from_bytes(data + b"x")
    with pytest.raises(CodecError):
        SlidingWindowQDigest.from_bytes(SlidingWindowCount(0.1).to_bytes())


# ------------------------------------------------------------------ Theorem 5


def test_decayed_identity_on_the_exact_oracle():
    """sum_{a<W} g(a) f_a = g(W) f(W) + sum_{w=1..W} (g(w-1) - g(w)) f(w) (guide 2.7)."""
    rng = random.Random(1)
    g = PolynomialDecay(1.5)
    t, W = 200, 150
    stream = [(0, rng.randrange(201), 1.0) for _ in range(300)]
    lhs = math.fsum(g(t - ts) for _, ts, _ in stream if t - ts < W)

    def f(w: int) -> float:
        return total(window(stream, t, w))

    rhs = g(W) * f(W) + math.fsum((g(w - 1) - g(w)) * f(w) for w in range(1, W + 1))
    assert math.isclose(lhs, rhs, rel_tol=1e-12)


@given(timed(max_size=1500), st.sampled_from(["poly1", "poly2", "exp", "window"]))
@settings(max_examples=20)
def test_any_decay_via_windows(case, which):
    stream, eps, seed = case
    g = {
        "poly1": PolynomialDecay(1.0),
        "poly2": PolynomialDecay(2.0),
        "exp": ExponentialDecay(0.01),
        "window": lambda a: 1.0 if a < 300 else 0.0,
    }[which]
    rng = random.Random(seed)
    order = orders(len(stream), [s[1] for s in stream], rng)["random"]
    q = SlidingWindowQDigest(64, eps, LT)
    c = SlidingWindowCount(eps, LT)
    for i in order:
        x, t, w = stream[i]
        q.update(x, t, w)
        c.update(t, w)
    tmax = max(s[1] for s in stream)
    for t, horizon in ((tmax, None), (tmax + 3, 700)):
        H = math.inf if horizon is None else horizon
        items = decayed([(x, ts, float(w)) for x, ts, w in stream], g, t, H)
        items = [(x, v) for x, v in items if v > 0]
        D = total(items)
        for summ in (q, c):
            lo, hi = (
                summ.decayed_count_bounds(g, t, horizon)
                if summ is c
                else (q._decayed_count_bounds(g, t, horizon))
            )
            assert lo - 1e-9 * D <= D <= hi + 1e-9 * D
            assert abs(summ.decayed_count(g, t, horizon) - D) <= eps * D + 1e-9
        if not items:
            continue
        d, unc = q.decayed_digest(g, t, horizon)
        assert d.total_weight <= D * (1 + 1e-9) + 1e-9
        assert d.total_weight + unc + 1e-9 * D >= D
        for phi in (0.1, 0.5, 0.9):
            ok, msg = quantile_ok(items, q.decayed_quantile(phi, g, t, horizon), phi, eps)
            assert ok, (which, msg)
        for x in (0, 2, 40):
            lo, hi = d.rank_bounds(x)
            assert lo - 1e-9 * D <= weight_le(items, x) <= hi + unc + 1e-9 * D
        phi = max(0.25, 2 * eps)
        hh = [k for k, _ in q.decayed_heavy_hitters(phi, g, t, horizon)]
        ok, msg = hh_ok(items, hh, phi - eps, phi + eps)
        assert ok, (which, msg)


def test_worked_example_of_the_paper():
    """Guide 1.4: <x,3>, <y,2>, <y,1>, g(a) = 1/(1+a), phi = 1/2: {x} at t=3, {y} at t=4."""
    g = PolynomialDecay(1.0)
    X, Y = 0, 1
    stream = [(X, 3), (Y, 2), (Y, 1)]
    # exact check with fractions first
    for t, expect in ((3, {X}), (4, {Y})):
        fr = {X: Fraction(0), Y: Fraction(0)}
        for x, ts in stream:
            fr[x] += Fraction(1, 1 + t - ts)
        D = sum(fr.values())
        assert {k for k, v in fr.items() if v >= D / 2} == expect
    assert (sum(Fraction(1, 1 + 3 - ts) for _, ts in stream)) == Fraction(11, 6)
    for order in (stream, stream[::-1], [stream[1], stream[0], stream[2]]):
        q = SlidingWindowQDigest(2, 0.02, 4)
        for x, ts in order:
            q.update(x, ts)
        assert [k for k, _ in q.decayed_heavy_hitters(0.5, g, t=3)] == [X]
        assert [k for k, _ in q.decayed_heavy_hitters(0.5, g, t=4)] == [Y]
        assert math.isclose(q.decayed_count(g, t=3), 11 / 6)
        assert math.isclose(q.decayed_count(g, t=4), 13 / 12)


@given(timed(max_size=2000), st.integers(1, 700))
@settings(max_examples=20)
def test_batched_updates_meet_the_same_bounds(case, batch):
    stream, eps, seed = case
    rng = random.Random(seed)
    order = orders(len(stream), [s[1] for s in stream], rng)[rng.choice(["random", "reversed"])]
    c = SlidingWindowCount(eps, LT)
    q = SlidingWindowQDigest(64, eps, LT)
    for i in range(0, len(order), batch):
        chunk = [stream[j] for j in order[i : i + batch]]
        c.update_many([t for _, t, _ in chunk], [w for _, _, w in chunk])
        q.update_many([x for x, _, _ in chunk], [t for _, t, _ in chunk], [w for _, _, w in chunk])
        c._check()
        q._check()
    tmax = max(s[1] for s in stream)
    for w in windows_to_probe(tmax):
        items = [(x, float(wt)) for x, wt in window(stream, tmax, w)]
        true = total(items)
        for s in (c, q):
            lo, hi = s.count_bounds(w)
            assert lo <= true <= hi
            assert abs(s.count(w) - true) <= eps * true + 1e-9
        if items:
            ok, msg = quantile_ok(items, q.quantile(0.5, w), 0.5, eps)
            assert ok, msg
