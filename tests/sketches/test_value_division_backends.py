"""ValueDivision's two backends in lockstep: the same intervals, bytes and answers after every
step of random streams (out of order, bursty, weighted, batched by ``update_many``, queried at
random times), merged in random trees (mixed backends too), state written by one read by the
other, calls that raise change nothing, bad bytes are CodecError on both; ``update_many``
keeps the bounds of Theorem 6. Skipped without the compiled core."""

from __future__ import annotations

import math
import random
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sketches.sketch_oracle import decayed, quantile_ok, total, weight_le
from windowagg import native_available
from windowagg.errors import (
    ArgumentError,
    CodecError,
    EmptyWindowError,
    TimestampError,
    WindowaggError,
)
from windowagg.sketches import ExponentialDecay, PolynomialDecay, ValueDivision
from windowagg.sketches._value_division_parts import _BatchPlan

pytestmark = pytest.mark.skipif(not native_available(), reason="the compiled core is not built")

PHIS = [0.0, 0.01, 0.1, 0.5, 0.9, 0.99, 1.0]


def _curved(age: float) -> float:
    """A user's smooth decay (no closed-form band): the generic path."""
    return float((1.0 + age) ** -1.5)


DECAYS: dict[str, Any] = {
    "poly1": PolynomialDecay(1.0),
    "poly2": PolynomialDecay(2.0),
    "exp": ExponentialDecay(0.05),
    "callable": _curved,
}


def pair(universe: int, g: Any, theta: float, beta: float) -> tuple[ValueDivision, ValueDivision]:
    return (
        ValueDivision(universe, g, theta, beta, backend="native"),
        ValueDivision(universe, g, theta, beta, backend="python"),
    )


def same(a: ValueDivision, b: ValueDivision, probes: list[int], extra: float) -> None:
    """Identical state and answers (native a, python b), at t_now and a later time."""
    assert a.backend == "native" and b.backend == "python"
    assert a.to_bytes() == b.to_bytes()
    assert (a.num_summaries, a.size, a.t_now) == (b.num_summaries, b.size, b.t_now)
    assert [(s.start, s.end, s.tmin, s.tmax) for s in a._S] == [
        (s.start, s.end, s.tmin, s.tmax) for s in b._S
    ]
    if b.t_now is None:
        for d in (a, b):
            with pytest.raises(EmptyWindowError):
                d.quantile(0.5)
        return
    for t in (None, b.t_now + extra):
        assert a.decayed_count(t) == b.decayed_count(t)
        assert a.effective_theta(t) == b.effective_theta(t)
        da, db = a.digest(t), b.digest(t)
        assert da.backend == "native" and db.backend == "python"
        assert da.to_bytes() == db.to_bytes()
        for x in probes:
            assert a.rank(x, t) == b.rank(x, t)
        assert a.heavy_hitters(0.1, t) == b.heavy_hitters(0.1, t)
        if not db.is_empty():
            assert a.quantiles(PHIS, t) == b.quantiles(PHIS, t) == [b.quantile(p, t) for p in PHIS]


@st.composite
def streams(draw: Any) -> tuple[int, str, float, float, list[tuple[str, Any]]]:
    """(universe, decay name, theta, beta, steps): single updates, bursts of one key at one
    time, batches with and without weights (in order, shuffled, late), merge passes and
    compress calls; times out of order, with jumps and very late items."""
    universe = draw(st.sampled_from([2, 256, 2**20, 2**64]))
    name = draw(st.sampled_from(sorted(DECAYS)))
    theta = draw(st.sampled_from([0.02, 0.1, 0.5]))
    beta = draw(st.sampled_from([0.05, 0.2]))
    rng = random.Random(draw(st.integers(0, 2**32)))
    hot = [rng.randrange(universe) for _ in range(3)]
    clock = [rng.uniform(0, 1e3)]

    def key() -> int:
        r = rng.random()
        if r < 0.3:
            return rng.choice(hot)
        if r < 0.4:
            return rng.choice([0, universe - 1])
        return rng.randrange(universe)

    def when() -> float:
        r = rng.random()
        if r < 0.05:
            clock[0] += rng.uniform(100, 5000)  # a jump
        elif r < 0.15:
            return clock[0] - rng.uniform(500, 5000)  # very late
        elif r < 0.45:
            return clock[0] - rng.uniform(0, 50)  # out of order
        else:
            clock[0] += rng.choice([0.0, 0.25, 1.0, 7.0])
        return clock[0] if rng.random() < 0.7 else float(int(clock[0]))

    steps: list[tuple[str, Any]] = []
    for _ in range(draw(st.integers(1, 20))):
        kind = draw(st.sampled_from(["one", "burst", "batch", "wbatch", "pass", "compress"]))
        if kind == "one":
            steps.append(("one", (key(), when(), rng.choice([1.0, 0.5, 3.25, 1e-3, 7]))))
        elif kind == "burst":
            steps.append(("burst", (key(), when(), rng.randrange(1, 30))))
        elif kind in ("batch", "wbatch"):
            b = rng.randrange(0, 150)
            keys = [key() for _ in range(b)]
            ts = [when() for _ in range(b)]
            if rng.random() < 0.5:
                ts.sort()
            ws = [rng.choice([0.1, 1.0, 2.5, 1e6]) for _ in range(b)] if kind == "wbatch" else None
            steps.append((kind, (keys, ts, ws)))
        else:
            steps.append((kind, None))
    return universe, name, theta, beta, steps


def apply(d: ValueDivision, step: tuple[str, Any]) -> None:
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
    elif kind == "pass":
        d.merge_pass()
    else:
        d.compress()


def probes_of(universe: int, steps: list[tuple[str, Any]]) -> list[int]:
    keys = {0, universe - 1, universe // 2}
    for kind, arg in steps:
        if kind in ("one", "burst"):
            keys.add(arg[0])
        elif kind in ("batch", "wbatch"):
            keys.update(arg[0][:2])
    return sorted(keys)


@settings(max_examples=50, deadline=None)
@given(s=streams(), extra=st.sampled_from([0.0, 0.5, 30.0, 1e4]))
def test_lockstep_same_bytes_and_answers_after_every_step(
    s: tuple[int, str, float, float, list[tuple[str, Any]]], extra: float
) -> None:
    universe, name, theta, beta, steps = s
    a, b = pair(universe, DECAYS[name], theta, beta)
    probes = probes_of(universe, steps)
    for step in steps:
        apply(a, step)
        apply(b, step)
        a._check()
        b._check()
        same(a, b, probes, extra)
    # a state written by one backend is read by the other, and goes on alike
    a2 = ValueDivision.from_bytes(b.to_bytes(), DECAYS[name], backend="native")
    b2 = ValueDivision.from_bytes(a.to_bytes(), DECAYS[name], backend="python")
    same(a2, b2, probes, extra)
    for step in steps[:3]:
        apply(a2, step)
        apply(b2, step)
    same(a2, b2, probes, extra)


@settings(max_examples=30, deadline=None)
@given(s=streams(), seed=st.integers(0, 2**16), mixed=st.booleans())
def test_merged_in_random_trees(
    s: tuple[int, str, float, float, list[tuple[str, Any]]], seed: int, mixed: bool
) -> None:
    """Each step fills its own summary; they merge in a random tree, the same tree on both
    backends (with *mixed*, every merge takes the other backend's operand)."""
    universe, name, theta, beta, steps = s
    g = DECAYS[name]
    parts = []
    for step in steps:
        a, b = pair(universe, g, theta, beta)
        apply(a, step)
        apply(b, step)
        parts.append((a, b))
    rng = random.Random(seed)
    probes = probes_of(universe, steps)
    while len(parts) > 1:
        x = parts.pop(rng.randrange(len(parts)))
        y = parts[rng.randrange(len(parts))]
        before = (x[0].to_bytes(), x[1].to_bytes())
        y[0].merge(x[1 if mixed else 0])
        y[1].merge(x[0 if mixed else 1])
        assert (x[0].to_bytes(), x[1].to_bytes()) == before  # the operand is unchanged
        y[0]._check()
        y[1]._check()
        same(y[0], y[1], probes, 10.0)


def _check_bounds(
    vd: ValueDivision,
    stream: list[tuple[int, float, float]],
    g: Any,
    t: float,
    theta: float,
    beta: float,
) -> None:
    items = [(x, v) for x, v in decayed(stream, g, t) if v > 0]
    D = total(items)
    tol = 1e-9 * D
    assert D - tol <= vd.decayed_count(t) <= (1 + theta) * D + tol
    assert vd.effective_theta(t) <= theta * (1 + 1e-9) + 1e-12
    for x in (0, 5, 9, 64, 127):
        assert abs(vd.rank(x, t) - weight_le(items, x)) <= (theta + beta / 2) * D + tol
    for phi in (0.05, 0.5, 0.95):
        ok, msg = quantile_ok(items, vd.quantile(phi, t), phi, theta + beta)
        assert ok, msg


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 2**32),
    name=st.sampled_from(sorted(DECAYS)),
    theta=st.sampled_from([0.02, 0.1]),
    beta=st.sampled_from([0.02, 0.1]),
    batches=st.integers(1, 8),
    span=st.sampled_from([20, 1000, 100_000]),
)
def test_update_many_keeps_the_bounds(
    seed: int, name: str, theta: float, beta: float, batches: int, span: int
) -> None:
    """Batches of out-of-order items (a hot key, bursts, late items) placed by update_many
    answer within Theorem 6's bounds at t_now and later, on both backends."""
    rng = random.Random(seed)
    g = DECAYS[name]
    stream: list[tuple[int, float, float]] = []
    a, b = pair(128, g, theta, beta)
    for _ in range(batches):
        n = rng.randrange(1, 300)
        batch = [
            (
                rng.choice([5, 9]) if rng.random() < 0.3 else rng.randrange(128),
                float(rng.randrange(span)),
                rng.choice([1.0, 2.0]),
            )
            for _ in range(n)
        ]
        stream += batch
        for d in (a, b):
            d.update_many(
                np.array([x for x, _, _ in batch]),
                np.array([t for _, t, _ in batch]),
                np.array([w for _, _, w in batch]),
            )
            d._check()
    assert a.to_bytes() == b.to_bytes()
    tmax = max(t for _, t, _ in stream)
    for t in (tmax, tmax + 100):
        _check_bounds(a, stream, g, t, theta, beta)
        _check_bounds(b, stream, g, t, theta, beta)


def test_update_many_places_runs_of_one_band() -> None:
    """Into a fresh summary a sorted batch opens one interval per age band (not one per
    item), every interval inside one band; a second batch's items inside an interval join
    it, those in a gap extend a neighbour or open intervals."""
    g = PolynomialDecay(1.0)
    for backend in ("native", "python"):
        vd = ValueDivision(1000, g, 0.1, 0.05, backend=backend)
        ts = np.arange(0.0, 1000.0)
        vd.update_many(np.arange(1000) % 1000, ts)
        bands = {vd._band(999.0 - t) for t in ts.tolist()}
        assert vd.num_summaries == len(bands)
        vd._check()
        m = vd.num_summaries
        vd.update_many([3, 4, 5], [10.0, 500.0, 999.0])  # all inside intervals
        assert vd.num_summaries == m and vd.decayed_count() > 0
        vd.update_many([7, 8], [1500.0, 1500.5])  # young: a new interval at the end
        assert vd.t_now == 1500.5
        vd._check()


@pytest.mark.parametrize(
    "call",
    [
        lambda d: d.update(-1, 5.0),
        lambda d: d.update(3, float("nan")),
        lambda d: d.update(3, 10**400),
        lambda d: d.update(3, 5.0, -1.0),
        lambda d: d.update(3, 5.0, 10**400),
        lambda d: d.update(3, "noon"),
        lambda d: d.update(3, 2000.0, 1.7e308),  # the total would pass 2**1023
        lambda d: d.update_many([1, 2], [5.0, float("inf")]),
        lambda d: d.update_many([1, 2000], [5.0, 6.0]),
        lambda d: d.update_many([1, 2], [5.0, 6.0], [1.0, -2.0]),
        lambda d: d.update_many([1, 2], [5.0]),
        lambda d: d.update_many([1, 2], ["a", "b"]),
        lambda d: d.update_many([1.5, 2], [5.0, 6.0]),
        lambda d: d.update_many([1, 2], [3000.0, 3001.0], [1e308, 1e308]),
        lambda d: d.merge(ValueDivision(1000, PolynomialDecay(1.0), 0.2, 0.1)),
        lambda d: d.merge(ValueDivision(1000, PolynomialDecay(2.0), 0.1, 0.1)),
        lambda d: d.quantiles([0.5, 1.5]),
        lambda d: d.quantile(0.5, t=10.0),  # before t_now
    ],
)
def test_a_call_that_raises_changes_nothing_on_both_backends(call: Any) -> None:
    a, b = pair(1000, PolynomialDecay(1.0), 0.1, 0.1)
    for d in (a, b):
        d.update_many(np.arange(0, 1000, 7), np.arange(0, 1000, 7) * 1.0)
        d.update(5, 1.0, 2.5)
    before = a.to_bytes()
    assert b.to_bytes() == before
    errors = []
    for d in (a, b):
        with pytest.raises(WindowaggError) as e:
            call(d)
        errors.append((type(e.value), str(e.value)))
        assert d.to_bytes() == before
        d._check()
    assert errors[0] == errors[1]


def test_a_raising_decay_changes_nothing() -> None:
    """A user's decay that raises on some age: update and update_many compute every band
    before they change anything."""

    def fussy(age: float) -> float:
        if age > 5000:
            raise ValueError("fussy decay: too old")
        return float((1.0 + age) ** -1.0)

    for backend in ("native", "python"):
        vd = ValueDivision(100, fussy, 0.1, 0.1, backend=backend)
        vd.update_many(np.arange(50), np.arange(50.0))
        before = vd.to_bytes()
        with pytest.raises(ValueError, match="fussy"):
            vd.update(1, 10_000.0)  # the new t_now makes the old items' ages > 5000
        with pytest.raises(ValueError, match="fussy"):
            vd.update_many([1, 2], [60.0, 10_000.0])
        assert vd.to_bytes() == before
        assert vd.t_now == 49.0


def test_a_decay_raising_in_the_merge_pass_changes_nothing() -> None:
    """The merge pass an update or a batch sets off runs the user's decay on every
    interval: it raised there after the item had gone in (a summary changed by a call that
    raised). Its bands are now planned before anything changes: the call raises, the bytes
    are as before, and the same call without the fault answers as if it never failed."""
    calls: dict[str, Any] = {"n": 0, "limit": None}

    def counting(age: float) -> float:
        calls["n"] += 1
        if calls["limit"] is not None and calls["n"] > calls["limit"]:
            raise ValueError("fussy decay: raised in the merge pass")
        return float((1.0 + age) ** -1.0)

    for backend in ("native", "python"):
        vd = ValueDivision(100, counting, 0.1, 0.1, backend=backend)
        twin = ValueDivision(100, PolynomialDecay(1.0), 0.1, 0.1, backend=backend)
        raised = 0
        for i in range(120):
            before = vd.to_bytes()
            calls.update(n=0, limit=3)  # an update's own bands take at most 3 calls
            try:
                vd.update(i % 100, float(i))
            except ValueError:
                raised += 1
                calls["limit"] = None  # (_check runs the decay too)
                assert vd.to_bytes() == before
                vd._check()
                vd.update(i % 100, float(i))
            calls["limit"] = None
            twin.update(i % 100, float(i))
            vd._check()
        assert raised >= 3
        # the batch verb: its plan's decay calls counted on a plan that changes nothing
        # a batch of items one age band apart: ~47 new intervals, past the pass's threshold
        ts = np.array([5000.0 - 1.2**j for j in range(46)] + [5000.0])
        keys = np.arange(47, dtype=np.int64)
        calls.update(n=0, limit=None)
        _BatchPlan(vd, keys, ts, None)
        before = vd.to_bytes()
        calls.update(n=0, limit=calls["n"])
        with pytest.raises(ValueError, match="merge pass"):
            vd.update_many(keys, ts)
        assert vd.to_bytes() == before
        calls["limit"] = None
        vd.update_many(keys, ts)
        twin.update_many(keys, ts)
        vd._check()
        for phi in (0.1, 0.5, 0.9):
            assert vd.quantile(phi) == twin.quantile(phi)


def test_overflow_guard_and_merge_of_backends() -> None:
    """Weights near float64's top: the guard refuses before anything changes, on both; a
    python summary merges into a native one (and back) with the same bytes."""
    a, b = pair(64, PolynomialDecay(1.0), 0.1, 0.1)
    for d in (a, b):
        d.update(1, 0.0, 4e307)
        d.update(2, 1.0, 4e307)
    for d in (a, b):
        with pytest.raises(ArgumentError, match="2\\*\\*1023"):
            d.update(3, 2.0, 4e307)
    c, e = pair(64, PolynomialDecay(1.0), 0.1, 0.1)
    for d in (c, e):
        d.update_many([5, 6, 7], [0.5, 3.0, 9.0])
    a.merge(e)  # python into native
    b.merge(c)  # native into python
    assert a.to_bytes() == b.to_bytes()
    assert a.backend == "native" and all(
        (s._q[3] if isinstance(s._q, tuple) else s._q.backend == "native") for s in a._S
    )
    a._check()
    b._check()


def test_bad_bytes_are_codec_errors_on_both_backends() -> None:
    g = PolynomialDecay(1.0)
    d = ValueDivision(1000, g, 0.1, 0.1, backend="python")
    d.update_many(np.arange(0, 1000, 3), np.arange(0, 1000, 3) / 10.0)
    d.update(7, 200.0, 3.0)
    good = d.to_bytes()
    rng = random.Random(6)
    for _ in range(300):
        bad = bytearray(good)
        for _ in range(rng.randrange(1, 4)):
            bad[rng.randrange(len(bad))] = rng.randrange(256)
        if rng.random() < 0.1:
            bad = bad[: rng.randrange(len(bad))]
        outcomes = []
        for backend in ("native", "python"):
            try:
                r = ValueDivision.from_bytes(bytes(bad), g, backend=backend)
            except CodecError:
                outcomes.append(None)
            else:
                assert r.backend == backend
                r._check()
                outcomes.append(r.to_bytes())
        assert outcomes[0] == outcomes[1]
    for backend in ("native", "python"):
        with pytest.raises(CodecError):
            ValueDivision.from_bytes(good, PolynomialDecay(2.0), backend=backend)
        with pytest.raises(CodecError):
            ValueDivision.from_bytes("not bytes", g, backend=backend)  # type: ignore[arg-type]


def test_bad_time_types_in_update_many() -> None:
    for backend in ("native", "python"):
        vd = ValueDivision(10, PolynomialDecay(1.0), 0.1, 0.1, backend=backend)
        with pytest.raises(TimestampError):
            vd.update_many([1], [float("nan")])
        with pytest.raises(TimestampError):
            vd.update_many([1], [10**400])
        vd.update_many([], [])
        assert vd.t_now is None and math.isclose(vd._n, 0.0)


def test_users_hold_the_native_summaries(each_backend: str) -> None:
    """decayed_pNN under polynomial decay (its per-window summaries) and the whole-history
    layout's decoder build ValueDivisions on the default backend: the compiled core when it
    is built (``each_backend`` is ``$WINDOWAGG_BACKEND`` of this twin)."""
    from windowagg.sketches.decayed_aggs import DecayedQuantile
    from windowagg.windows.engine.history import _decode_summary, _encode_summary

    m = DecayedQuantile(0.5, alpha=2.0)
    s = m._new()
    assert isinstance(s, ValueDivision) and s.backend == each_backend
    m._add(s, 5, 1.5)
    back = _decode_summary(m, _encode_summary(m, s))
    assert isinstance(back, ValueDivision) and back.backend == each_backend
    assert back.to_bytes() == s.to_bytes()
