"""ExpDecaySpaceSaving on both backends in lockstep: the whole state (counters in order, the
heap's entries, the sequence number), the codec bytes and every answer equal
after every step, on random, out-of-order and bursty streams with ties, landmark moves,
array updates and merges in random trees (mixed backends); the move to Python at a key the
compiled twin does not hold; CodecError on the same bad bytes on both."""

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
    ArgumentTypeError,
    CodecError,
    TimestampError,
    WeightOverflowError,
)
from windowagg.sketches import ExpDecaySpaceSaving

pytestmark = pytest.mark.skipif(not native_available(), reason="compiled core not built")

Step = tuple[str, Any]


def pair(k: int, lam: float) -> tuple[ExpDecaySpaceSaving, ExpDecaySpaceSaving]:
    return (
        ExpDecaySpaceSaving(lam=lam, k=k, backend="native"),
        ExpDecaySpaceSaving(lam=lam, k=k, backend="python"),
    )


@st.composite
def streams(draw: st.DrawFn) -> tuple[int, float, str, list[Step]]:
    k = draw(st.integers(1, 12))
    lam = draw(st.sampled_from([1e-3, 0.05, 0.7, 5.0]))  # 5.0: landmark moves every 60 units
    kind = draw(st.sampled_from(["int", "str", "mixed"]))
    rng = random.Random(draw(st.integers(0, 2**32)))
    pool: list[Any] = [*range(-3, 3 * k + 3), 2**63 - 1, -(2**63)]
    if kind == "str":
        pool = [f"k{i}" for i in range(3 * k + 3)] + ["", "é€😀"]
    elif kind == "mixed":
        pool = pool + [f"k{i}" for i in range(k)] + [b"b", b"", "b"]
    hot = [rng.choice(pool) for _ in range(2)]

    def key() -> Any:
        return rng.choice(hot) if rng.random() < 0.3 else rng.choice(pool)

    clock = [0.0]

    def when() -> float:
        r = rng.random()
        if r < 0.6:
            clock[0] += rng.choice([0.0, 0.0, 1.0, 0.5, 7.0, 40.0])  # ties and bursts
            return clock[0]
        if r < 0.9:
            return clock[0] - rng.choice([1.0, 3.0, 100.0, 1e4])  # late, some very late
        return float(rng.randrange(-50, 50))

    def weight() -> float:
        return rng.choice([1.0, 1.0, 1.0, 2.0, 0.5, 3.25, 1e-3])

    steps: list[Step] = []
    for _ in range(draw(st.integers(1, 30))):
        op = draw(st.sampled_from(["one", "burst", "batch", "wbatch"]))
        if op == "one":
            steps.append(("one", (key(), when(), weight())))
        elif op == "burst":
            steps.append(("burst", (key(), when(), rng.randrange(1, 30))))
        else:
            b = rng.randrange(0, 60)
            keys = [key() for _ in range(b)]
            ts = [when() for _ in range(b)]
            ws = [weight() for _ in range(b)] if op == "wbatch" else None
            steps.append((op, (keys, ts, ws)))
    return k, lam, kind, steps


def apply(s: ExpDecaySpaceSaving, step: Step) -> None:
    op, arg = step
    if op == "one":
        s.update(*arg)
    elif op == "burst":
        x, t, m = arg
        for _ in range(m):
            s.update(x, t)
    else:
        keys, ts, ws = arg
        if keys and all(type(x) is int for x in keys):
            s.update_many(np.array(keys, dtype=np.int64), np.array(ts), ws)
        else:
            s.update_many(keys, ts, ws)


def probes(steps: list[Step]) -> list[Any]:
    out: list[Any] = [0, 1, -1, "k0", b"b", "absent", 10**30, 1.0, (1, 2)]
    for op, arg in steps[:6]:
        out.append(arg[0] if op in ("one", "burst") else (arg[0][0] if arg[0] else 0))
    return out


def answer(f: Any, *args: Any) -> Any:
    """f(*args), or the exception's type and text (far before the landmark, exp overflows
    on both backends: math.exp's OverflowError)."""
    try:
        return f(*args)
    except OverflowError as e:
        return type(e), str(e)


def same(a: ExpDecaySpaceSaving, b: ExpDecaySpaceSaving, keys: list[Any]) -> None:
    assert a._state() == b._state()
    assert a.to_bytes() == b.to_bytes()
    assert a.size == b.size and a.max_timestamp == b.max_timestamp
    tm = b.max_timestamp
    for t in (None, 0.0, -5.0, (tm or 0.0) + 3.5):
        assert answer(a.decayed_count, t) == answer(b.decayed_count, t)
        for phi in (0.0, 0.1, 0.5):
            assert answer(a.heavy_hitters, phi, t) == answer(b.heavy_hitters, phi, t)
        for x in keys:
            assert answer(a.estimate, x, t) == answer(b.estimate, x, t)
            assert answer(a.frequency_bounds, x, t) == answer(b.frequency_bounds, x, t)


@settings(max_examples=80, deadline=None)
@given(s=streams())
def test_lockstep_state_bytes_and_answers_after_every_step(
    s: tuple[int, float, str, list[Step]],
) -> None:
    k, lam, _, steps = s
    a, b = pair(k, lam)
    keys = probes(steps)
    for step in steps:
        apply(a, step)
        apply(b, step)
        same(a, b, keys)
        a._check()
        b._check()
    assert a.backend == "native"
    # the bytes cross backends both ways, and the two go on in lockstep
    a2 = ExpDecaySpaceSaving.from_bytes(b.to_bytes(), backend="native")
    b2 = ExpDecaySpaceSaving.from_bytes(a.to_bytes(), backend="python")
    assert a2.backend == "native" and b2.backend == "python"
    same(a2, b2, keys)
    for step in steps[:4]:
        apply(a2, step)
        apply(b2, step)
    same(a2, b2, keys)


@settings(max_examples=40, deadline=None)
@given(
    s=streams(),
    parts=st.integers(2, 7),
    seed=st.integers(0, 2**32),
    mixed=st.booleans(),
)
def test_random_merge_trees(
    s: tuple[int, float, str, list[Step]], parts: int, seed: int, mixed: bool
) -> None:
    k, lam, _, steps = s
    rng = random.Random(seed)
    nat = [ExpDecaySpaceSaving(lam=lam, k=k, backend="native") for _ in range(parts)]
    py = [ExpDecaySpaceSaving(lam=lam, k=k, backend="python") for _ in range(parts)]
    for step in steps:
        i = rng.randrange(parts)
        apply(nat[i], step)
        apply(py[i], step)
    while len(nat) > 1:
        i, j = rng.sample(range(len(nat)), 2)
        if rng.random() < 0.15:
            j = i  # a summary merged into itself
        # mixed: the native side sometimes merges a Python operand, and the reverse
        on = py[j].copy() if mixed and rng.random() < 0.5 else nat[j]
        op = nat[j].copy() if mixed and rng.random() < 0.5 else py[j]
        nat[i].merge(on)
        py[i].merge(op)
        same(nat[i], py[i], probes(steps))
        if i != j:
            del nat[j], py[j]
    same(nat[0], py[0], probes(steps))
    nat[0]._check()


@settings(max_examples=30, deadline=None)
@given(
    s=streams(), at=st.integers(0, 30), bad=st.sampled_from([1.5, True, (1, 2), 2**64, "\ud800"])
)
def test_a_key_the_twin_does_not_hold_moves_auto_to_python(
    s: tuple[int, float, str, list[Step]], at: int, bad: Any
) -> None:
    k, lam, _, steps = s
    auto = ExpDecaySpaceSaving(lam=lam, k=k, backend="auto")
    strict = ExpDecaySpaceSaving(lam=lam, k=k, backend="native")
    ref = ExpDecaySpaceSaving(lam=lam, k=k, backend="python")
    at = min(at, len(steps))
    for step in steps[:at]:
        apply(auto, step)
        apply(strict, step)
        apply(ref, step)
    before = strict._state()
    with pytest.raises(ArgumentTypeError, match="holds int keys in int64"):
        strict.update(bad, 1.0)
    with pytest.raises(ArgumentTypeError, match="holds int keys in int64"):
        strict.update_many([0, bad], [1.0, 2.0])
    assert strict._state() == before and strict.backend == "native"
    auto.update(bad, 1.0)
    ref.update(bad, 1.0)
    assert auto.backend == "python"
    assert auto._state() == ref._state()
    for step in steps[at:]:
        apply(auto, step)
        apply(ref, step)
    assert auto._state() == ref._state()
    assert auto.heavy_hitters(0.0) == ref.heavy_hitters(0.0)


def test_queries_of_other_key_types_answer_as_the_dict_does() -> None:
    a, b = pair(4, 0.1)
    for s in (a, b):
        s.update(1, 0.0, 2.0)
        s.update("x", 1.0)
    for x in (1.0, True, np.int64(1), 1 + 0j, (1,), 2**70):
        assert a.estimate(x) == b.estimate(x)
        assert a.frequency_bounds(x) == b.frequency_bounds(x)
    with pytest.raises(TypeError):
        a.estimate([1])
    with pytest.raises(TypeError):
        b.estimate([1])
    assert a.backend == "native"  # queries never move it


@pytest.mark.parametrize("backend", ["native", "python"])
def test_raising_calls_change_nothing(backend: str) -> None:
    s = ExpDecaySpaceSaving(lam=0.1, k=3, backend=backend)
    s.update_many(np.arange(10), np.arange(10.0))
    before = s._state()
    with pytest.raises(TimestampError):
        s.update(1, math.nan)
    with pytest.raises(ArgumentError):
        s.update(1, 1.0, -1.0)
    with pytest.raises(TypeError):
        s.update([1], 1.0)
    with pytest.raises(TimestampError):
        s.update_many([1, 2], [1.0, math.inf])
    with pytest.raises(ArgumentError):
        s.update_many([1, 2], [1.0, 2.0], [1.0, 0.0])
    with pytest.raises(ArgumentError):
        s.update_many([1, 2], [1.0])
    with pytest.raises(TypeError):
        s.update_many([1, [2]], [1.0, 2.0])
    with pytest.raises(ArgumentError):
        s.merge(ExpDecaySpaceSaving(lam=0.2, k=3, backend=backend))
    with pytest.raises(ArgumentError):
        s.heavy_hitters(1.5)
    assert s._state() == before
    assert s.backend == backend


def _mutations(data: bytes, rng: random.Random) -> list[bytes]:
    out = [data[:cut] for cut in range(0, len(data), max(1, len(data) // 40))]
    for _ in range(60):
        b = bytearray(data)
        for _ in range(rng.randrange(1, 4)):
            b[rng.randrange(len(b))] = rng.randrange(256)
        out.append(bytes(b))
    return out


@pytest.mark.parametrize("seed", range(4))
def test_bad_bytes_fail_alike_on_both_backends(seed: int) -> None:
    rng = random.Random(seed)
    s = ExpDecaySpaceSaving(lam=0.05, k=5, backend="python")
    for i in range(60):
        s.update(rng.choice([1, 2, 3, "a", "bb", b"c", -7, 11, 12, 13]), float(i % 17))
    data = s.to_bytes()
    for bad in _mutations(data, rng):
        outcome = []
        for backend in ("native", "python"):
            try:
                got = ExpDecaySpaceSaving.from_bytes(bad, backend=backend)
            except CodecError:
                outcome.append(None)
            else:
                outcome.append(got._state())
        # the Python reader decides validity for both; a valid one is the same state
        assert outcome[0] == outcome[1]


def test_native_load_refuses_bad_fields() -> None:
    from windowagg._native import _core

    load = _core.ExpDecaySpaceSaving.load
    ok = [(1, 2.0, 0.5), ("a", 1.5, 0.5)]
    load(2, 0.1, 1, 0.0, 1.0, 0.5, 4.0, ok)
    bad: list[tuple[Any, ...]] = [
        (0, 0.1, 1, 0.0, 1.0, 0.5, 4.0, ok),  # k
        (2, -0.1, 1, 0.0, 1.0, 0.5, 4.0, ok),  # lam
        (2, math.inf, 1, 0.0, 1.0, 0.5, 4.0, ok),
        (2, 0.1, 2, 0.0, 1.0, 0.5, 4.0, ok),  # has
        (1, 0.1, 1, 0.0, 1.0, 0.5, 4.0, ok),  # more keys than k
        (2, 0.1, 1, 0.0, 1.0, -0.5, 4.0, ok),  # floor
        (2, 0.1, 1, 0.0, 1.0, 0.5, 1.0, ok),  # sum of counts > n
        (2, 0.1, 1, 0.0, 1.0, 0.5, 4.0, [(1, 2.0, 0.5), (1, 1.5, 0.5)]),  # duplicate
        (2, 0.1, 1, 0.0, 1.0, 0.5, 4.0, [(1, 2.0, 3.0)]),  # over > c
        (2, 0.1, 1, 0.0, 1.0, 0.5, 4.0, [(1, 0.1, 0.0)]),  # c below the floor
        (2, 0.1, 1, 0.0, 1.0, 0.5, 4.0, [(1.5, 2.0, 0.5)]),  # a float key
        (2, 0.1, 1, 0.0, 1.0, 0.5, 4.0, [(1, 2, 0.5)]),  # an int count
        (2, 0.1, 1, 0.0, 1.0, 0.5, 4.0, [(1, 2.0)]),
        (2, 0.1, 1, 0.0, 1.0, 0.5, 4.0, ((1, 2.0, 0.5),)),
        (2, 0.1, 1, 0.0, 1.0, math.nan, 4.0, ok),
        (2, 0.1, 1, 0.0, 1.0, 0.5, math.nan, ok),
    ]
    for args in bad:
        with pytest.raises(CodecError):
            load(*args)


def test_float_keys_in_bytes_stay_python_unless_native_is_asked_for() -> None:
    s = ExpDecaySpaceSaving(lam=0.1, k=3, backend="python")
    s.update(1.5, 0.0)
    s.update(2, 1.0)
    data = s.to_bytes()
    assert ExpDecaySpaceSaving.from_bytes(data, backend="auto").backend == "python"
    with pytest.raises(ArgumentTypeError, match=r"1\.5"):
        ExpDecaySpaceSaving.from_bytes(data, backend="native")


@pytest.mark.parametrize("lam", [1e-4, 0.02])
def test_long_zipf_stream_with_ties_same_state(lam: float) -> None:
    """Many evictions (slots freed and reused, the index's deletions) and exact ties: integer
    times and unit weights, so many counters are equal when the minimum is replaced."""
    rng = np.random.default_rng(39)
    n = 60_000
    keys = rng.zipf(1.3, n).astype(np.int64)
    times = np.floor(np.arange(n) / 7.0) + rng.integers(-30, 1, n)  # bursts, late items
    a, b = pair(40, lam)
    for lo in range(0, n, 15_000):
        a.update_many(keys[lo : lo + 15_000], times[lo : lo + 15_000])
        b.update_many(keys[lo : lo + 15_000], times[lo : lo + 15_000])
        assert a._state() == b._state()
    strs = [f"s{x}" for x in keys[:20_000].tolist()]
    a.update_many(strs, times[:20_000] + 9000.0)
    b.update_many(strs, times[:20_000] + 9000.0)
    same(a, b, [1, 2, 3, "s1", "s2"])
    a._check()


def test_times_and_weights_the_reference_converts_are_converted_alike() -> None:
    a, b = pair(3, 0.1)
    for s in (a, b):
        s.update(1, "2.5")  # float("2.5"), as the reference's check converts it
        s.update(2, True, True)  # bools are 1.0, both as time and as weight
        s.update(3, np.float64(4.0), np.int64(2))
    assert a._state() == b._state() and a.backend == "native"
    for s in (a, b):
        s.update(4, 2**60 + 1)  # an int past 2**53: the reference keeps it as its max time
    assert a.to_bytes() == b.to_bytes()  # both write float(t)
    assert a.max_timestamp == float(b.max_timestamp or 0)  # the twin holds float(t)
    for s in (a, b):
        with pytest.raises(TimestampError, match="finite number"):
            s.update(1, "soon")
        with pytest.raises(ArgumentError, match="positive finite"):
            s.update(1, 1.0, -2)


@pytest.mark.parametrize("backend", ["native", "python"])
def test_a_query_far_before_the_events_is_refused_by_name(backend: str) -> None:
    """A query time far before the landmark weighs every event by exp(lam (landmark - t)):
    past float64 that was a bare OverflowError (math.exp's; the twin mirrored it). Now a
    WeightOverflowError (an ArgumentError and an OverflowError) naming the structure and
    the time and saying which time to ask, the same text on both backends; the summary is
    unchanged and answers at a time nearer the events."""
    s = ExpDecaySpaceSaving(lam=1.0, k=3, backend=backend)
    s.update_many(["a", "b", "a"], [1000.0, 1001.0, 1002.0])
    before = s._state()
    queries = [
        lambda: s.decayed_count(-1e6),
        lambda: s.estimate("a", -1e6),
        lambda: s.estimate("zz", -(10**6)),  # an unmonitored key: the floor's estimate
        lambda: s.frequency_bounds("a", -1e6),
        lambda: s.heavy_hitters(0.1, -1e6),
    ]
    for q in queries:
        with pytest.raises(WeightOverflowError) as info:
            q()
        assert isinstance(info.value, ArgumentError) and isinstance(info.value, OverflowError)
        msg = str(info.value)
        assert msg.startswith("ExpDecaySpaceSaving: at query time t=-1000000.0 "), msg
        assert "t=1002.0 (the largest timestamp seen" in msg, msg
    assert s._state() == before
    # where exp does not overflow but the total does (the product), the same error
    big = ExpDecaySpaceSaving(lam=1.0, k=3, backend=backend)
    big.update("a", 0.0, 1e300)
    with pytest.raises(WeightOverflowError, match=r"at query time t=-30\.0 "):
        big.decayed_count(-30.0)
    assert big.decayed_count(-1.0) == pytest.approx(1e300 * math.e)
    assert s.decayed_count(1002.0) == pytest.approx(1 + math.exp(-1) + math.exp(-2))
    with pytest.raises(TimestampError):  # an int past float64 is a bad time, not a bare error
        s.decayed_count(10**400)
    with pytest.raises(TimestampError):
        s.update("a", 10**400)
    with pytest.raises(ArgumentError):  # likewise a weight
        s.update("a", 1.0, 10**400)
    assert s._state() == before


def test_the_far_query_error_reads_the_same_on_both_backends() -> None:
    a, b = pair(3, 0.5)
    for s in (a, b):
        s.update_many([1, 2, 1], [7.0, 8.0, 9.0], [1.0, 2.0, 3.0])
    texts = []
    for s in (a, b):
        with pytest.raises(WeightOverflowError) as info:
            s.heavy_hitters(0.0, -5000)
        texts.append(str(info.value))
    assert texts[0] == texts[1]
