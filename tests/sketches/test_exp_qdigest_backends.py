"""ExpDecayQDigest's two backends in lockstep: the same bytes and answers after every step of
random streams (out of order, bursty, weighted, batched, crossing the landmark horizon,
underflowing), merged in random trees (mixed backends too), state written by one read by the
other, calls that raise change nothing, bad bytes are CodecError on both. Skipped without the
compiled core."""

from __future__ import annotations

import math
import random
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from windowagg import native_available
from windowagg.errors import (
    ArgumentError,
    CodecError,
    EmptyWindowError,
    TimestampError,
    WeightOverflowError,
)
from windowagg.sketches import ExpDecayQDigest, QDigest

pytestmark = pytest.mark.skipif(not native_available(), reason="the compiled core is not built")

PHIS = [0.0, 0.01, 0.1, 0.25, 0.5, 0.75, 0.9, 0.99, 1.0]


def pair(universe: int, eps: float, lam: float) -> tuple[ExpDecayQDigest, ExpDecayQDigest]:
    return (
        ExpDecayQDigest(universe, eps, lam, backend="native"),
        ExpDecayQDigest(universe, eps, lam, backend="python"),
    )


def same(a: ExpDecayQDigest, b: ExpDecayQDigest, probes: list[int]) -> None:
    """Identical state and answers (native a, python b)."""
    assert a.backend == "native" and b.backend == "python"
    assert a.to_bytes() == b.to_bytes()
    assert a == b and b == a
    assert (a.landmark, a.max_timestamp, a.size) == (b.landmark, b.max_timestamp, b.size)
    tmax = b.max_timestamp
    times = [None] if tmax is None else [None, tmax, tmax + 0.5, tmax + 40.0]
    for t in times:
        assert a.decayed_count(t) == b.decayed_count(t)
        for x in probes:
            assert a.rank_bounds(x, t) == b.rank_bounds(x, t)
            assert a.range_count(0, x, t) == b.range_count(0, x, t)
        assert a.digest(t).to_bytes() == b.digest(t).to_bytes()
        if not b._q.is_empty():
            for phi in (0.01, 0.1, 0.5):
                assert a.heavy_hitters(phi, t) == b.heavy_hitters(phi, t)
    if b._q.is_empty():
        for d in (a, b):
            with pytest.raises(EmptyWindowError):
                d.quantile(0.5)
        return
    assert a.quantiles(PHIS) == b.quantiles(PHIS) == [b.quantile(p) for p in PHIS]


@st.composite
def streams(draw: Any) -> tuple[int, float, float, list[tuple[str, Any]]]:
    """(universe, eps, lam, steps): single updates, bursts of one key at one time, batches
    with and without weights, compress calls; times out of order, with jumps past the
    landmark horizon (300/lam) and items far older than the landmark (underflow)."""
    universe = draw(st.sampled_from([2, 1000, 2**20, 2**64]))
    eps = draw(st.sampled_from([0.05, 0.1, 0.3]))
    lam = draw(st.sampled_from([0.01, 0.5, 3.0]))
    rng = random.Random(draw(st.integers(0, 2**32)))
    hot = [rng.randrange(universe) for _ in range(3)]
    horizon = 300.0 / lam
    clock = [rng.uniform(-1e3, 1e3)]

    def key() -> int:
        r = rng.random()
        if r < 0.3:
            return rng.choice(hot)
        if r < 0.4:
            return rng.choice([0, universe - 1])
        return rng.randrange(universe)

    def when() -> float:
        r = rng.random()
        if r < 0.1:
            clock[0] += horizon * rng.uniform(0.5, 3.0)  # a jump: the landmark moves
        elif r < 0.2:
            return clock[0] - horizon * rng.uniform(1.0, 4.0)  # very late: may underflow
        elif r < 0.5:
            return clock[0] - rng.uniform(0, 50)  # out of order
        else:
            clock[0] += rng.choice([0.0, 0.25, 1.0, 7.0])
        return clock[0] if rng.random() < 0.7 else float(int(clock[0]))

    steps: list[tuple[str, Any]] = []
    for _ in range(draw(st.integers(1, 25))):
        kind = draw(st.sampled_from(["one", "burst", "batch", "wbatch", "compress"]))
        if kind == "one":
            steps.append(("one", (key(), when(), rng.choice([1.0, 0.5, 3.25, 1e-3, 7]))))
        elif kind == "burst":
            steps.append(("burst", (key(), when(), rng.randrange(1, 40))))
        elif kind in ("batch", "wbatch"):
            b = rng.randrange(0, 120)
            keys = [key() for _ in range(b)]
            ts = [when() for _ in range(b)]
            ws = [rng.choice([0.1, 1.0, 2.5, 1e6]) for _ in range(b)] if kind == "wbatch" else None
            steps.append((kind, (keys, ts, ws)))
        else:
            steps.append(("compress", None))
    return universe, eps, lam, steps


def apply(d: ExpDecayQDigest, step: tuple[str, Any]) -> None:
    kind, arg = step
    if kind == "one":
        d.update(*arg)
    elif kind == "burst":
        for _ in range(arg[2]):
            d.update(arg[0], arg[1])
    elif kind in ("batch", "wbatch"):
        keys, ts, ws = arg
        big = max(keys, default=0) >= 2**63
        a = np.array(keys, dtype=np.uint64 if big else np.int64)
        d.update_many(a, np.array(ts, dtype=float), None if ws is None else np.array(ws))
    else:
        d.compress()


def probes_of(universe: int, steps: list[tuple[str, Any]]) -> list[int]:
    keys = {0, universe - 1, universe // 2, -1, universe}
    for kind, arg in steps:
        if kind in ("one", "burst"):
            keys.add(arg[0])
        elif kind in ("batch", "wbatch"):
            keys.update(arg[0][:2])
    return sorted(keys)


@settings(max_examples=60, deadline=None)
@given(s=streams())
def test_lockstep_same_bytes_and_answers_after_every_step(
    s: tuple[int, float, float, list[tuple[str, Any]]],
) -> None:
    universe, eps, lam, steps = s
    a, b = pair(universe, eps, lam)
    probes = probes_of(universe, steps)
    for step in steps:
        apply(a, step)
        apply(b, step)
        same(a, b, probes)
        a._check()
        b._check()
    # the bytes cross backends both ways, and the summaries keep going in lockstep
    a2 = ExpDecayQDigest.from_bytes(b.to_bytes(), backend="native")
    b2 = ExpDecayQDigest.from_bytes(a.to_bytes(), backend="python")
    same(a2, b2, probes)
    for step in steps[:3]:
        apply(a2, step)
        apply(b2, step)
    same(a2, b2, probes)


@settings(max_examples=40, deadline=None)
@given(
    s=streams(),
    seed=st.integers(0, 2**16),
    mixed=st.booleans(),
    many=st.booleans(),
)
def test_merged_in_random_trees(
    s: tuple[int, float, float, list[tuple[str, Any]]], seed: int, mixed: bool, many: bool
) -> None:
    """Each step fills its own summary; they merge in a random tree, the same tree on both
    backends (with *mixed*, every merge takes the other backend's operand; with *many*,
    groups merge by merge_many)."""
    universe, eps, lam, steps = s
    parts = []
    for step in steps:
        a, b = pair(universe, eps, lam)
        apply(a, step)
        apply(b, step)
        parts.append((a, b))
    rng = random.Random(seed)
    while len(parts) > 1:
        k = min(len(parts) - 1, rng.randrange(1, 4) if many else 1)
        group = [parts.pop(rng.randrange(len(parts))) for _ in range(k)]
        y = parts[rng.randrange(len(parts))]
        if many:
            y[0].merge_many([g[1 if mixed else 0] for g in group])
            y[1].merge_many([g[0 if mixed else 1] for g in group])
        else:
            for g in group:
                y[0].merge(g[1 if mixed else 0])
                y[1].merge(g[0 if mixed else 1])
        if rng.random() < 0.2:
            y[0].merge(y[0])
            y[1].merge(y[1])
        same(y[0], y[1], probes_of(universe, steps))
    a, b = parts[0]
    same(a, b, probes_of(universe, steps))
    a._check()


@settings(max_examples=40, deadline=None)
@given(
    values=st.lists(
        st.floats(min_value=0.0, max_value=1e300, allow_nan=False, allow_infinity=False)
        | st.sampled_from([1e-300, 5e-324, 1.0, 1e16, 3.0, 2**53 + 1.0]),
        min_size=1,
        max_size=80,
    ),
    f=st.sampled_from([1.0, 0.5, 1e-3, 1e-300, 0.7, 1.0 / 3.0, 0.0]),
)
def test_landmark_sum_is_math_fsum(values: list[float], f: float) -> None:
    """The native landmark move sets n to the correctly rounded sum, math.fsum's, of the
    scaled counts (here counts of wildly different sizes, cancellation-free but rounding
    at every addition)."""
    a, b = QDigest(2**64, 0.5, backend="native"), QDigest(2**64, 0.5, backend="python")
    for i, v in enumerate(values):
        if v > 0:
            for d in (a, b):
                d.update(i * 7919, v)
    assert a._rescaled_total(f) == b._rescaled_total(f)
    assert a._rescaled_total(f) == math.fsum(v * f for v in b._items().values() if v * f > 0)
    a._rescale(f)
    b._rescale(f)
    assert a.to_bytes() == b.to_bytes()
    a._check()


@pytest.mark.parametrize(
    "call",
    [
        lambda d: d.update(-1, 5.0),
        lambda d: d.update(3, float("nan")),
        lambda d: d.update(3, 5.0, -1.0),
        lambda d: d.update(3, "noon"),
        lambda d: d.update(3, 60.0, 1e308),  # weight * exp(lam * age) is not a float64
        lambda d: d.update_many([1, 2], [5.0, float("inf")]),
        lambda d: d.update_many([1, 2000], [5.0, 6.0]),
        lambda d: d.update_many([1, 2], [5.0, 6.0], [1.0, -2.0]),
        lambda d: d.update_many(
            [1, 2], [1e9, 1e9 - 1.0], [1.5e308, 1.5e308]
        ),  # moves, then overflows
        lambda d: d.update_many([1, 2], [60.0, 61.0], [1e307, 1e307]),
        lambda d: d.merge(ExpDecayQDigest(1000, 0.1, 0.2)),
        lambda d: d.merge_many([ExpDecayQDigest(1000, 0.1, 0.5), QDigest(1000, 0.1)]),
        lambda d: d.quantiles([0.5, 1.5]),
    ],
)
def test_a_call_that_raises_changes_nothing_on_both_backends(call: Any) -> None:
    a, b = pair(1000, 0.1, 0.5)
    for d in (a, b):
        d.update_many(np.arange(0, 1000, 7), np.arange(0, 1000, 7) / 20.0)
        d.update(5, 1.0, 2.5)
    before = a.to_bytes()
    assert b.to_bytes() == before
    errors = []
    for d in (a, b):
        with pytest.raises((ArgumentError, TimestampError, TypeError)) as e:
            call(d)
        errors.append((type(e.value), str(e.value)))
        assert d.to_bytes() == before
        d._check()
    assert errors[0] == errors[1]


def test_an_int_past_float64_is_a_bad_time_or_weight_on_both_backends() -> None:
    """An int time or weight past float64 passed the finite-number guard (any int is below
    inf) and failed later as a bare OverflowError; it is a TimestampError / ArgumentError
    now, the same on both backends, and nothing changes."""
    a, b = pair(1000, 0.1, 0.5)
    for d in (a, b):
        d.update(5, 1.0)
        before = d.to_bytes()
        with pytest.raises(TimestampError, match="finite"):
            d.update(3, 10**400)
        with pytest.raises(ArgumentError, match="finite"):
            d.update(3, 2.0, 10**400)
        with pytest.raises(TimestampError):
            d.decayed_count(-(10**400))
        assert d.to_bytes() == before


def test_a_query_far_before_the_events_is_refused_by_name() -> None:
    """A query time far before the landmark weighs every item by exp(lam (landmark - t)):
    past float64 that was a bare OverflowError (math.exp's). Now a WeightOverflowError (an
    ArgumentError and an OverflowError) naming the structure and the time and saying which
    time to ask, the same text on both backends, as ExpDecaySpaceSaving's; nothing changes
    and a time nearer the events answers."""
    texts: list[list[str]] = []
    for d in pair(1024, 0.01, 1.0):
        d.update_many(list(range(100)), [1000.0 + i for i in range(100)])
        before = d.to_bytes()
        queries = [
            lambda d=d: d.decayed_count(-5000.0),
            lambda d=d: d.rank(5, -5000.0),
            lambda d=d: d.rank_bounds(5, -5000.0),
            lambda d=d: d.range_count(1, 5, -5000.0),
            lambda d=d: d.heavy_hitters(0.1, -5000.0),
            lambda d=d: d.digest(-5000.0),
        ]
        texts.append([])
        for q in queries:
            with pytest.raises(WeightOverflowError) as info:
                q()
            assert isinstance(info.value, ArgumentError) and isinstance(info.value, OverflowError)
            msg = str(info.value)
            assert msg.startswith("ExpDecayQDigest: at query time t=-5000.0 "), msg
            assert "t=1099.0 (the largest timestamp seen" in msg, msg
            texts[-1].append(msg)
        assert d.to_bytes() == before
        assert d.decayed_count(1099.0) == pytest.approx(sum(math.exp(-i) for i in range(100)))
        # exp itself fits but the decayed total does not (the product): the same error
        big = ExpDecayQDigest(16, 0.1, 1.0, backend=d.backend)
        big.update(3, 0.0, 1e300)
        with pytest.raises(WeightOverflowError, match=r"at query time t=-30\.0 "):
            big.decayed_count(-30.0)
        assert big.decayed_count(-1.0) == pytest.approx(1e300 * math.e)
    assert texts[0] == texts[1]


def test_merge_many_that_raises_midway_changes_nothing() -> None:
    """merge_many checks every operand first; an overflow found while folding restores the
    state held before the call."""
    for backend in ("native", "python"):
        d = ExpDecayQDigest(1000, 0.1, 0.5, backend=backend)
        d.update(3, 0.0, 1.0)
        ok = ExpDecayQDigest(1000, 0.1, 0.5, backend=backend)
        ok.update(4, 0.0, 2.0)
        huge = ExpDecayQDigest(1000, 0.1, 0.5, backend=backend)
        huge.update(5, 0.0, 1e308)
        before = d.to_bytes()
        with pytest.raises(ArgumentError, match="overflow"):
            d.merge_many([ok, huge, huge])
        assert d.to_bytes() == before


def test_bad_bytes_are_codec_errors_on_both_backends() -> None:
    d = ExpDecayQDigest(1000, 0.1, 0.05, backend="python")
    d.update_many(np.arange(0, 1000, 3), np.arange(0, 1000, 3) / 10.0)
    good = d.to_bytes()
    rng = random.Random(5)
    for _ in range(300):
        bad = bytearray(good)
        for _ in range(rng.randrange(1, 4)):
            bad[rng.randrange(len(bad))] = rng.randrange(256)
        if rng.random() < 0.1:
            bad = bad[: rng.randrange(len(bad))]
        outcomes = []
        for backend in ("native", "python"):
            try:
                r = ExpDecayQDigest.from_bytes(bytes(bad), backend=backend)
            except CodecError:
                outcomes.append(None)
            else:
                assert r.backend == backend
                r._check()
                outcomes.append(r.to_bytes())
        assert outcomes[0] == outcomes[1]


@pytest.mark.parametrize("eps", [0.01, 0.1])
def test_spark_quantiles_batches_same_bytes(eps: float) -> None:
    """decayed_summary's quantiles path: 10k-row batches of float-order keys with decayed
    weights (times over 30 days out of order, 1-day half-life), many batches held back by
    the native digest between compresses: the same bytes as the Python reference."""
    from windowagg.sketches import FloatOrderMapper

    rng = np.random.default_rng(7)
    day = 86_400_000_000
    a, b = pair(2**64, eps, math.log(2.0) / day)
    for _ in range(24):
        keys = FloatOrderMapper().to_keys(rng.normal(10.0, 5.0, 10_000))
        ts = (rng.integers(0, 30 * 86400, 10_000) * 1_000_000).astype(np.float64)
        for d in (a, b):
            d.update_many(keys, ts)
    a._check()
    same(a, b, [0, 2**63, 2**64 - 1])
