"""SlidingWindowQDigest's two backends in lockstep: the same state, answers and bytes after
every step of random streams (out of order, bursty, late, weighted, batched, merged in random
trees), queries at random times and windows (window digests, ranks, quantiles, heavy hitters,
decayed ones), state written by one read by the other, layout-1 bytes, bad bytes refused
alike, and calls that raise change nothing. Skipped without the compiled core."""

from __future__ import annotations

import json
import random
import zlib
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from windowagg import codec, native_available
from windowagg.errors import (
    ArgumentError,
    ArgumentTypeError,
    CodecError,
    EmptyWindowError,
    TimestampError,
)
from windowagg.sketches import SlidingWindowQDigest

pytestmark = pytest.mark.skipif(not native_available(), reason="the compiled core is not built")

LEGACY = json.loads(
    (Path(__file__).parents[1] / "codec" / "fixtures" / "legacy_v1.json").read_text()
)
DECAYS = [lambda a: 1.0, lambda a: 0.5 ** (a / 7.0), lambda a: 1.0 / (1.0 + a) ** 1.5]


def pair(params: dict[str, Any]) -> tuple[SlidingWindowQDigest, SlidingWindowQDigest]:
    return (
        SlidingWindowQDigest(**params, backend="native"),
        SlidingWindowQDigest(**params, backend="python"),
    )


def _answers(s: SlidingWindowQDigest, w: int, t: int) -> list[Any]:
    d, unc = s.window_digest(w, t)
    out: list[Any] = [d.to_bytes(), unc, s.count_bounds(w, t), s.heavy_hitters(0.2, w, t)]
    for x in (0, s.universe // 3, s.universe - 1):
        out.append(s.rank_bounds(x, w, t))
    try:
        out.append([s.quantile(p, w, t) for p in (0.0, 0.5, 0.99)])
    except EmptyWindowError:
        out.append("empty")
    return out


def _decayed(s: SlidingWindowQDigest, g: Any, h: int) -> list[Any]:
    d, unc = s.decayed_digest(g, None, h)
    out: list[Any] = [d.to_bytes(), unc, s.decayed_count(g, None, h)]
    out.append(s.decayed_heavy_hitters(0.3, g, None, h))
    try:
        out.append(s.decayed_quantile(0.5, g, None, h))
    except EmptyWindowError:
        out.append("empty")
    return out


def same(a: SlidingWindowQDigest, b: SlidingWindowQDigest, rng: random.Random) -> None:
    """Identical state, answers and bytes (native a, python b)."""
    assert a.backend == "native" and b.backend == "python"
    assert a._fields() == b._fields()
    assert a.to_bytes() == b.to_bytes()
    assert (a.total_weight, a.num_levels, a.size, a.max_timestamp) == (
        b.total_weight,
        b.num_levels,
        b.size,
        b.max_timestamp,
    )
    a._check()
    b._check()
    tmax = b.max_timestamp or 0
    top = b.max_window or (1 << b.time_bits)
    for _ in range(3):
        w = rng.randint(1, top)
        t = tmax + rng.choice([0, 0, 1, rng.randint(0, 50)])
        assert _answers(a, w, t) == _answers(b, w, t)
    for g in DECAYS:
        h = rng.randint(1, top)
        assert _decayed(a, g, h) == _decayed(b, g, h)


@st.composite
def params(draw: Any) -> dict[str, Any]:
    LT = draw(st.sampled_from([4, 8, 12, 20]))
    return {
        "universe": draw(st.sampled_from([2, 3, 100, 2**16, 2**40])),
        "eps": draw(st.sampled_from([0.1, 0.3, 0.6])),
        "time_bits": LT,
        "max_window": draw(st.one_of(st.none(), st.integers(1, 1 << LT))),
        "capacity_factor": draw(st.sampled_from([0.05, 0.2, 1.0, 3.0])),
    }


@st.composite
def steps(draw: Any, LT: int, U: int) -> list[tuple[str, Any]]:
    """Single updates (in order, bursts at one time, very late), batches as numpy arrays and
    lists (reversed, random), with and without weights; hot keys and spread keys."""
    rng = random.Random(draw(st.integers(0, 2**32)))
    tb = 1 << LT
    hot = [rng.randrange(U) for _ in range(3)]

    def key() -> int:
        return rng.choice(hot) if rng.random() < 0.5 else rng.randrange(U)

    out: list[tuple[str, Any]] = []
    clock = rng.randrange(tb)
    for _ in range(draw(st.integers(1, 10))):
        kind = rng.choice(["one", "burst", "late", "batch", "list", "rev"])
        if kind == "one":
            clock = min(tb - 1, clock + rng.randint(0, 3))
            out.append(("one", (key(), clock, rng.choice([1, 1, 2, 7, 2**40]))))
        elif kind == "burst":
            m = rng.randint(1, 60)
            out.append(("batch", (np.full(m, key(), np.int64), np.full(m, clock, np.int64), None)))
        elif kind == "late":
            out.append(("one", (key(), rng.randrange(max(1, clock // 4 + 1)), 1)))
        elif kind == "rev":
            hi = rng.randrange(tb)
            ts = np.arange(hi, max(-1, hi - rng.randint(1, 150)), -1, dtype=np.int64)
            xs = np.array([key() for _ in range(ts.size)], np.int64)
            out.append(("batch", (xs, ts, None)))
        else:
            m = rng.randint(0, 120)
            ts = [min(tb - 1, max(0, clock + int(rng.gauss(0, tb / 20)))) for _ in range(m)]
            xs = [key() for _ in range(m)]
            ws = None if rng.random() < 0.5 else [rng.randint(1, 5) for _ in range(m)]
            if kind == "batch":
                out.append(
                    (
                        "batch",
                        (
                            np.array(xs, np.int64),
                            np.array(ts, np.int64),
                            None if ws is None else np.array(ws),
                        ),
                    )
                )
            else:
                out.append(("list", (xs, ts, ws)))
    return out


def apply(s: SlidingWindowQDigest, step: tuple[str, Any]) -> None:
    kind, (xs, ts, ws) = step
    if kind == "one":
        s.update(xs, ts, ws)
    else:
        s.update_many(xs, ts, ws)


@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_lockstep_same_state_answers_and_bytes_after_every_step(data: Any) -> None:
    p = data.draw(params())
    a, b = pair(p)
    rng = random.Random(0)
    for step in data.draw(steps(p["time_bits"], p["universe"])):
        apply(a, step)
        apply(b, step)
        same(a, b, rng)
    raw = b.to_bytes()
    a2 = SlidingWindowQDigest.from_bytes(raw, backend="native")
    b2 = SlidingWindowQDigest.from_bytes(a.to_bytes(), backend="python")
    assert codec.loads(raw).to_bytes() == raw
    for step in data.draw(steps(p["time_bits"], p["universe"])):
        apply(a2, step)
        apply(b2, step)
    same(a2, b2, rng)


@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_merged_in_random_trees(data: Any) -> None:
    p = data.draw(params())
    k = data.draw(st.integers(2, 5))
    parts = []
    for _ in range(k):
        a, b = pair(p)
        for step in data.draw(steps(p["time_bits"], p["universe"])):
            apply(a, step)
            apply(b, step)
        parts.append((a, b))
    rng = random.Random(data.draw(st.integers(0, 2**32)))
    while len(parts) > 1:
        i, j = rng.sample(range(len(parts)), 2)
        (ai, bi), (aj, bj) = parts[i], parts[j]
        ai.merge(aj if rng.random() < 0.5 else bj)
        bi.merge(bj if rng.random() < 0.5 else aj)
        same(ai, bi, rng)
        parts.pop(j)


def test_a_call_that_raises_changes_nothing_on_both_backends() -> None:
    a, b = pair({"universe": 100, "eps": 0.2, "time_bits": 10, "capacity_factor": 0.2})
    for t in range(0, 1000, 3):
        a.update(t % 100, t)
        b.update(t % 100, t)
    before = b._fields()
    bad_calls: list[tuple[Any, type[Exception]]] = [
        (lambda s: s.update(100, 1), ArgumentError),
        (lambda s: s.update(-1, 1), ArgumentError),
        (lambda s: s.update(1.5, 1), ArgumentTypeError),
        (lambda s: s.update(1, 1 << 10), TimestampError),
        (lambda s: s.update(1, 3, 0), ArgumentError),
        (lambda s: s.update(1, 3, 2**53 + 1), ArgumentError),
        (lambda s: s.update_many([1, 2, 100], [1, 2, 3]), ArgumentError),
        (lambda s: s.update_many(np.array([1, 2, 100]), np.array([1, 2, 3])), ArgumentError),
        (lambda s: s.update_many(np.array([1, 2]), np.array([1, 1 << 10])), TimestampError),
        (
            lambda s: s.update_many(np.array([1, 2]), np.array([1, 2]), np.array([1, 0])),
            ArgumentError,
        ),
        (lambda s: s.update_many([1, 2], [1]), ArgumentError),
        (lambda s: s.update_many(np.array([1, 2]), np.array([1])), ArgumentError),
        (lambda s: s.update_many([5] * 3000, [5] * 3000, [2**53] * 3000), ArgumentError),
        (lambda s: s.merge(SlidingWindowQDigest(100, 0.3, 10)), ArgumentError),
        (lambda s: s.merge(s), ArgumentError),
        (lambda s: s.quantile(0.5, 0), ArgumentError),
        (lambda s: s.quantile(1.5, 5), ArgumentError),
        (lambda s: s.rank(3, 5, 3), ArgumentError),
    ]
    for call, err in bad_calls:
        msgs = []
        for s in (a, b):
            with pytest.raises(err) as info:
                call(s)
            msgs.append(str(info.value))
        assert msgs[0] == msgs[1]
        assert a._fields() == b._fields() == before


def test_a_universe_past_the_twin_stays_on_the_reference() -> None:
    with pytest.raises(ArgumentError, match="2\\*\\*62"):
        SlidingWindowQDigest(2**62 + 1, 0.3, 10, backend="native")
    for universe in (2**63, 2**64):  # 2**64: every 64-bit key (its bytes were unreadable)
        s = SlidingWindowQDigest(universe, 0.3, 10, backend="auto")
        assert s.backend == "python"
        for i in range(300):
            s.update(universe - 1 - (i * 7919) % 5000, i)
        back = SlidingWindowQDigest.from_bytes(s.to_bytes(), backend="auto")
        assert back.backend == "python" and back.to_bytes() == s.to_bytes()
        for phi in (0.0, 0.5, 1.0):
            assert back.quantile(phi, 200) == s.quantile(phi, 200)
        assert back.range_count(universe - 2500, universe - 1, 100) == s.range_count(
            universe - 2500, universe - 1, 100
        )
    s._U = 2**64 + 1  # bytes whose universe field is past every 64-bit key: refused
    with pytest.raises(CodecError, match="out of range"):
        SlidingWindowQDigest.from_bytes(s.to_bytes(), backend="auto")
    ok = SlidingWindowQDigest(2**62, 0.3, 10, backend="native")
    ok.update(2**62 - 1, 5)
    ref = SlidingWindowQDigest(2**62, 0.3, 10, backend="python")
    ref.update(2**62 - 1, 5)
    assert ok.to_bytes() == ref.to_bytes()


def test_layout_1_bytes_load_on_both_backends_and_write_layout_3() -> None:
    raw = bytes.fromhex(LEGACY["sketches"]["SlidingWindowQDigest"])
    a = SlidingWindowQDigest.from_bytes(raw, backend="native")
    b = SlidingWindowQDigest.from_bytes(raw, backend="python")
    assert a.backend == "native"
    assert a.to_bytes() == b.to_bytes()
    assert a._to_codec()[0] == 3
    assert _answers(a, 5, b.max_timestamp or 0) == _answers(b, 5, b.max_timestamp or 0)


@settings(max_examples=150, deadline=None)
@given(data=st.data())
def test_mutated_bytes_same_outcome_on_both_backends(data: Any) -> None:
    s = SlidingWindowQDigest(64, 0.3, 8, capacity_factor=0.2, backend="python")
    ts = list(range(0, 256, 2)) + list(range(255, 0, -7))
    s.update_many([t % 64 for t in ts], ts)
    raw = bytearray(s.to_bytes())
    for _ in range(data.draw(st.integers(1, 4))):
        i = data.draw(st.integers(5, len(raw) - 5))
        raw[i] = data.draw(st.integers(0, 255))
    body = bytes(raw[:-4])
    fixed = body + zlib.crc32(body).to_bytes(4, "big")  # past the checksum
    outcomes = []
    for backend in ("native", "python"):
        try:
            outcomes.append(SlidingWindowQDigest.from_bytes(fixed, backend=backend).to_bytes())
        except CodecError:
            outcomes.append(None)
    assert outcomes[0] == outcomes[1]
