"""SlidingWindowCount's two backends in lockstep: the same state, answers and bytes after
every step of random streams (out of order, bursty, late, weighted, batched, merged in random
trees), state written by one read by the other, layout-2 and layout-1 bytes read and written
again canonically, bad bytes refused alike, and calls that raise change nothing. Skipped
without the compiled core."""

from __future__ import annotations

import json
import random
import struct
import zlib
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from windowagg import codec, native_available
from windowagg.errors import ArgumentError, ArgumentTypeError, CodecError, TimestampError
from windowagg.sketches import SlidingWindowCount, SlidingWindowQDigest

pytestmark = pytest.mark.skipif(not native_available(), reason="the compiled core is not built")

LEGACY = json.loads(
    (Path(__file__).parents[1] / "codec" / "fixtures" / "legacy_v1.json").read_text()
)


def pair(params: dict[str, Any]) -> tuple[SlidingWindowCount, SlidingWindowCount]:
    return (
        SlidingWindowCount(**params, backend="native"),
        SlidingWindowCount(**params, backend="python"),
    )


def decays() -> list[Any]:
    return [lambda a: 1.0, lambda a: 0.5 ** (a / 7.0), lambda a: 1.0 / (1.0 + a) ** 1.5]


def same(a: SlidingWindowCount, b: SlidingWindowCount, rng: random.Random) -> None:
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
    for _ in range(6):
        w = rng.randint(1, top)
        t = tmax + rng.choice([0, 0, 1, rng.randint(0, 50)])
        assert a.count_bounds(w, t) == b.count_bounds(w, t)
        assert a.count(w) == b.count(w)
    for g in decays():
        h = rng.randint(1, top)
        assert a.decayed_count_bounds(g, None, h) == b.decayed_count_bounds(g, None, h)


@st.composite
def params(draw: Any) -> dict[str, Any]:
    LT = draw(st.sampled_from([4, 8, 12, 20]))
    return {
        "eps": draw(st.sampled_from([0.1, 0.3, 0.6])),
        "time_bits": LT,
        "max_window": draw(st.one_of(st.none(), st.integers(1, 1 << LT))),
        "capacity_factor": draw(st.sampled_from([0.05, 0.2, 1.0, 3.0])),
    }


@st.composite
def steps(draw: Any, LT: int) -> list[tuple[str, Any]]:
    """Single updates (in order, reversed, random, bursts at one time, very late), batches
    as numpy arrays and lists, with and without weights."""
    rng = random.Random(draw(st.integers(0, 2**32)))
    tb = 1 << LT
    out: list[tuple[str, Any]] = []
    clock = rng.randrange(tb)
    for _ in range(draw(st.integers(1, 12))):
        kind = rng.choice(["one", "burst", "late", "batch", "list", "rev"])
        if kind == "one":
            clock = min(tb - 1, clock + rng.randint(0, 3))
            out.append(("one", (clock, rng.choice([1, 1, 2, 7, 2**40]))))
        elif kind == "burst":
            out.append(("batch", (np.full(rng.randint(1, 60), clock, np.int64), None)))
        elif kind == "late":
            out.append(("one", (rng.randrange(max(1, clock // 4 + 1)), 1)))
        elif kind == "rev":
            hi = rng.randrange(tb)
            ts = np.arange(hi, max(-1, hi - rng.randint(1, 200)), -1, dtype=np.int64)
            out.append(("batch", (ts, None)))
        else:
            m = rng.randint(0, 150)
            ts = [min(tb - 1, max(0, clock + int(rng.gauss(0, tb / 20)))) for _ in range(m)]
            ws = None if rng.random() < 0.5 else [rng.randint(1, 5) for _ in range(m)]
            if kind == "batch":
                out.append(
                    ("batch", (np.array(ts, np.int64), None if ws is None else np.array(ws)))
                )
            else:
                out.append(("list", (ts, ws)))
    return out


def apply(s: SlidingWindowCount, step: tuple[str, Any]) -> None:
    kind, (ts, ws) = step
    if kind == "one":
        s.update(ts, ws)
    else:
        s.update_many(ts, ws)


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_lockstep_same_state_answers_and_bytes_after_every_step(data: Any) -> None:
    p = data.draw(params())
    a, b = pair(p)
    rng = random.Random(0)
    for step in data.draw(steps(p["time_bits"])):
        apply(a, step)
        apply(b, step)
        same(a, b, rng)
    # bytes cross backends both ways, and a read state goes on in lockstep
    raw = b.to_bytes()
    a2 = SlidingWindowCount.from_bytes(raw, backend="native")
    b2 = SlidingWindowCount.from_bytes(a.to_bytes(), backend="python")
    assert codec.loads(raw).to_bytes() == raw
    for step in data.draw(steps(p["time_bits"])):
        apply(a2, step)
        apply(b2, step)
    same(a2, b2, rng)


@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_merged_in_random_trees(data: Any) -> None:
    """Partials built from random streams merged in a random tree, mixed backends: the same
    state as the Python-only tree."""
    p = data.draw(params())
    k = data.draw(st.integers(2, 6))
    parts = []
    for _ in range(k):
        a, b = pair(p)
        for step in data.draw(steps(p["time_bits"])):
            apply(a, step)
            apply(b, step)
        parts.append((a, b))
    rng = random.Random(data.draw(st.integers(0, 2**32)))
    while len(parts) > 1:
        i, j = rng.sample(range(len(parts)), 2)
        (ai, bi), (aj, bj) = parts[i], parts[j]
        ai.merge(aj if rng.random() < 0.5 else bj)  # a python partial into a native one too
        bi.merge(bj if rng.random() < 0.5 else aj)
        same(ai, bi, rng)
        parts.pop(j)


def test_a_call_that_raises_changes_nothing_on_both_backends() -> None:
    a, b = pair({"eps": 0.2, "time_bits": 10, "capacity_factor": 0.2})
    for t in range(0, 1000, 3):
        a.update(t)
        b.update(t)
    before = b._fields()
    bad_calls: list[tuple[Any, type[Exception]]] = [
        (lambda s: s.update(1 << 10), TimestampError),
        (lambda s: s.update(-1), TimestampError),
        (lambda s: s.update(1.5), TimestampError),
        (lambda s: s.update(3, 0), ArgumentError),
        (lambda s: s.update(3, 2**53 + 1), ArgumentError),
        (lambda s: s.update(3, 2.5), ArgumentTypeError),
        (lambda s: s.update_many([1, 2, 1 << 10]), TimestampError),
        (lambda s: s.update_many(np.array([1, 2, 1 << 10])), TimestampError),
        (lambda s: s.update_many(np.array([1, 2]), np.array([1, 0])), ArgumentError),
        (lambda s: s.update_many([1, 2], [1]), ArgumentError),
        (lambda s: s.update_many(np.array([1, 2]), np.array([1])), ArgumentError),
        (lambda s: s.update_many([5] * 3000, [2**53] * 3000), ArgumentError),
        (lambda s: s.merge(SlidingWindowCount(0.3, 10)), ArgumentError),
        (lambda s: s.merge(s), ArgumentError),
        (lambda s: s.count_bounds(0), ArgumentError),
        (lambda s: s.count_bounds(5, 3), ArgumentError),
    ]
    for call, err in bad_calls:
        msgs = []
        for s in (a, b):
            with pytest.raises(err) as info:
                call(s)
            msgs.append(str(info.value))
        assert msgs[0] == msgs[1]  # the same error on both backends
        assert a._fields() == b._fields() == before


def test_the_total_weight_is_a_u64_on_both_backends() -> None:
    a, b = pair({"eps": 0.5, "time_bits": 8})
    for _ in range(2047):
        a.update(1, 2**53)
        b.update(1, 2**53)
    for s in (a, b):
        s.update(2, 2**53 - 1)  # exactly 2**64 - 1
        with pytest.raises(ArgumentError, match="2\\*\\*64"):
            s.update(2)
    assert a.to_bytes() == b.to_bytes()
    big = SlidingWindowCount(0.5, 8, backend="python")
    big.update(1)
    for s in (a, b):
        with pytest.raises(ArgumentError, match="2\\*\\*64"):
            s.merge(big)
    assert a._fields() == b._fields()


def _layout2_shuffled(s: SlidingWindowCount, rng: random.Random) -> bytes:
    """The state as layout-2 bytes, in a random order (as the reference wrote them before
    layout 3: dict-insertion and heap order)."""
    plain = list(s._to_codec())
    assert plain[0] == 3
    plain[0] = 2
    nb = plain[11]
    k = nb
    order = list(range(k))
    rng.shuffle(order)
    cols = [struct.unpack(f">{k}Q", plain[i]) for i in (12, 13, 14)]
    for i, col in zip((12, 13, 14), cols, strict=True):
        plain[i] = struct.pack(f">{k}Q", *[col[o] for o in order])
    pos = 16
    for _ in range(plain[15]):
        depths, offs, cnts = plain[pos + 2], plain[pos + 3], plain[pos + 4]
        m = len(depths)
        order = list(range(m))
        rng.shuffle(order)
        o = struct.unpack(f">{m}Q", offs)
        c = struct.unpack(f">{m}d", cnts)
        plain[pos + 2] = bytes(depths[i] for i in order)
        plain[pos + 3] = struct.pack(f">{m}Q", *[o[i] for i in order])
        plain[pos + 4] = struct.pack(f">{m}d", *[c[i] for i in order])
        pos += 5
    tag = b"windowagg.SlidingWindowCount"
    head = b"WAGC\x02X" + bytes([len(tag)]) + tag + codec.dumps(tuple(plain))[5:-4]
    return head + zlib.crc32(head).to_bytes(4, "big")


@settings(max_examples=30, deadline=None)
@given(data=st.data())
def test_layout_2_bytes_in_any_order_still_load_and_write_canonically(data: Any) -> None:
    p = data.draw(params())
    a, b = pair(p)
    for step in data.draw(steps(p["time_bits"])):
        apply(a, step)
        apply(b, step)
    canonical = b.to_bytes()
    old = _layout2_shuffled(b, random.Random(data.draw(st.integers(0, 2**32))))
    for backend in ("native", "python"):
        s = SlidingWindowCount.from_bytes(old, backend=backend)
        assert s.to_bytes() == canonical
        assert s._fields() == b._fields()


def test_layout_3_out_of_order_is_refused_on_both_backends() -> None:
    s = SlidingWindowCount(0.3, 10, backend="python")
    s.update_many([5, 1, 9, 3, 700, 2, 2, 8])
    plain = list(s._to_codec())
    k = plain[11]
    ts = list(struct.unpack(f">{k}Q", plain[12]))
    ts[0], ts[1] = ts[1], ts[0]
    assert ts != sorted(ts)
    plain[12] = struct.pack(f">{k}Q", *ts)
    tag = b"windowagg.SlidingWindowCount"
    head = b"WAGC\x02X" + bytes([len(tag)]) + tag + codec.dumps(tuple(plain))[5:-4]
    data = head + zlib.crc32(head).to_bytes(4, "big")
    for backend in ("native", "python"):
        with pytest.raises(CodecError, match="order"):
            SlidingWindowCount.from_bytes(data, backend=backend)


def test_layout_1_bytes_load_on_both_backends_and_write_layout_3() -> None:
    raw = bytes.fromhex(LEGACY["sketches"]["SlidingWindowCount"])
    a = SlidingWindowCount.from_bytes(raw, backend="native")
    b = SlidingWindowCount.from_bytes(raw, backend="python")
    assert a.to_bytes() == b.to_bytes()
    assert a._to_codec()[0] == 3
    assert a.count_bounds(5) == b.count_bounds(5)


@settings(max_examples=150, deadline=None)
@given(data=st.data())
def test_mutated_bytes_same_outcome_on_both_backends(data: Any) -> None:
    s = SlidingWindowCount(0.3, 8, capacity_factor=0.2, backend="python")
    s.update_many(list(range(0, 256, 2)) + list(range(255, 0, -7)))
    raw = bytearray(s.to_bytes())
    for _ in range(data.draw(st.integers(1, 4))):
        i = data.draw(st.integers(5, len(raw) - 5))
        raw[i] = data.draw(st.integers(0, 255))
    body = bytes(raw[:-4])
    fixed = body + zlib.crc32(body).to_bytes(4, "big")  # past the checksum
    outcomes = []
    for backend in ("native", "python"):
        try:
            outcomes.append(SlidingWindowCount.from_bytes(fixed, backend=backend).to_bytes())
        except CodecError:
            outcomes.append(None)
    assert outcomes[0] == outcomes[1]


@pytest.mark.parametrize("backend", ["python", "native"])
@pytest.mark.parametrize(
    "kw",
    [
        {"eps": 1e-304},  # kappa = ceil(c LT / eps) ~ 1e305: past the compiled core's u64
        {"eps": 5e-324, "capacity_factor": 1e300},  # c LT / eps is inf
        {"eps": 0.01, "capacity_factor": float("inf")},  # was a bare OverflowError
    ],
)
def test_a_buffer_past_2_62_items_is_refused_on_both_backends(backend: str, kw: Any) -> None:
    """kappa (the exact buffer's capacity) must fit the compiled core's u64: a tiny eps or
    a huge capacity_factor is an ArgumentError naming the parameters, on both backends
    (the native one raised nanobind's TypeError, the Python one accepted it)."""
    if backend == "native" and not native_available():
        pytest.skip("no compiled core")
    for make in (
        lambda: SlidingWindowCount(time_bits=8, backend=backend, **kw),
        lambda: SlidingWindowQDigest(1000, time_bits=8, backend=backend, **kw),
    ):
        with pytest.raises(ArgumentError, match=r"past 2\*\*62 items of buffer"):
            make()


@pytest.mark.parametrize("backend", ["python", "native"])
def test_bytes_whose_buffer_is_past_2_62_items_are_a_codec_error(backend: str) -> None:
    """The same parameters read from bytes (eps rewritten to 1e-304, the checksum fixed:
    what the mutation test above once drew) are a CodecError on both backends."""
    if backend == "native" and not native_available():
        pytest.skip("no compiled core")
    count = SlidingWindowCount(0.3, 8, capacity_factor=0.2, backend="python")
    count.update_many([1, 5, 9])
    values = SlidingWindowQDigest(1000, 0.3, 8, capacity_factor=0.2, backend="python")
    values.update_many([3, 4, 5], [1, 5, 9])
    for s in (count, values):
        raw = s.to_bytes()
        eps = struct.pack(">d", 0.3)
        assert raw.count(eps) == 1
        body = raw[:-4].replace(eps, struct.pack(">d", 1e-304))
        bad = body + zlib.crc32(body).to_bytes(4, "big")
        with pytest.raises(CodecError, match="past 2\\*\\*62"):
            type(s).from_bytes(bad, backend=backend)
