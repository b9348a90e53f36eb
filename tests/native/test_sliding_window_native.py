"""The native SlidingWindowCount's and SlidingWindowQDigest's entry points fuzzed: their
decoders (``_core.SlidingWindow*.load`` and ``from_bytes(..., backend="native")``) with random
and mutated fields and bytes, the array verbs with buffers of every wrong kind; and the
lockstep tests of tests/sketches, so that the sanitizer build (scripts/test_native_sanitized.sh
runs tests/native) runs them too."""

from __future__ import annotations

import struct
import threading
from typing import Any

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from sketches import test_sliding_qdigest_backends as qd
from sketches.test_sliding_window_backends import (  # noqa: F401  (collected here as well)
    test_a_call_that_raises_changes_nothing_on_both_backends,
    test_layout_2_bytes_in_any_order_still_load_and_write_canonically,
    test_lockstep_same_state_answers_and_bytes_after_every_step,
    test_merged_in_random_trees,
    test_mutated_bytes_same_outcome_on_both_backends,
)
from windowagg._native import _core
from windowagg.errors import ArgumentError, ArgumentTypeError, CodecError, TimestampError
from windowagg.sketches import SlidingWindowCount, SlidingWindowQDigest

test_qdigest_lockstep = qd.test_lockstep_same_state_answers_and_bytes_after_every_step
test_qdigest_merged_in_random_trees = qd.test_merged_in_random_trees
test_qdigest_raising_calls = qd.test_a_call_that_raises_changes_nothing_on_both_backends
test_qdigest_mutated_bytes = qd.test_mutated_bytes_same_outcome_on_both_backends


def _valid() -> SlidingWindowCount:
    s = SlidingWindowCount(0.2, 10, capacity_factor=0.3, backend="native")
    s.update_many(np.arange(1023, 0, -5, dtype=np.int64))
    s.update(1000, 3)
    return s


def _be(vals: list[int]) -> bytes:
    return struct.pack(f">{len(vals)}Q", *vals)


levels_st = st.lists(
    st.tuples(
        st.integers(-3, 2**10),
        st.booleans(),
        st.binary(max_size=12),
        st.binary(max_size=100),
        st.binary(max_size=100),
    ),
    max_size=3,
)


@settings(max_examples=300, deadline=None)
@given(
    eps=st.sampled_from([0.2, 0.0, 1.0, float("nan"), 1e-300]),
    lt=st.integers(-1, 64),
    w=st.integers(0, 2**11),
    kappa=st.integers(0, 40),
    merged=st.booleans(),
    tau0=st.integers(-3, 2**11),
    tmax=st.integers(-3, 2**11),
    n=st.integers(0, 2**64 - 1),
    top_n=st.integers(0, 2**64 - 1),
    ts=st.binary(max_size=48),
    xs=st.binary(max_size=48),
    ws=st.binary(max_size=48),
    levels=levels_st,
)
@example(
    eps=0.2, lt=10, w=0, kappa=2, merged=False, tau0=-1, tmax=5, n=1, top_n=0,
    ts=_be([5]), xs=_be([0]), ws=_be([1]), levels=[],
)  # fmt: skip
@example(
    eps=0.2, lt=10, w=0, kappa=2, merged=False, tau0=3, tmax=5, n=2**64 - 1, top_n=2**64 - 1,
    ts=_be([5, 6]), xs=_be([0, 0]), ws=_be([2**53, 2**53]), levels=[],
)  # fmt: skip
@example(
    eps=0.2, lt=10, w=0, kappa=2, merged=False, tau0=-1, tmax=5, n=1, top_n=1,
    ts=b"", xs=b"", ws=b"", levels=[(-1, True, b"\x0a", _be([5]), struct.pack(">d", 1.0))],
)  # fmt: skip
def test_load_fuzz_raises_only_codec_errors(
    eps: float,
    lt: int,
    w: int,
    kappa: int,
    merged: bool,
    tau0: int,
    tmax: int,
    n: int,
    top_n: int,
    ts: bytes,
    xs: bytes,
    ws: bytes,
    levels: list[Any],
) -> None:
    try:
        s = _core.SlidingWindowCount.load(
            eps, lt, w, 3.0, kappa, 0, merged, tau0, tmax, n, top_n, ts, xs, ws, levels
        )
    except CodecError:
        return
    s._check()
    f = s.fields()
    assert f[5:8] == (ts, xs, ws)  # layout 3 is canonical: loaded as given
    if n < 2**63:
        s.update(0)
        s.update_many(np.arange(min(1 << lt, 50), dtype=np.int64))
        s._check()
        s.count_bounds(-1)


@settings(max_examples=200, deadline=None)
@given(data=st.binary(max_size=120))
def test_from_bytes_fuzz_raises_only_codec_errors(data: bytes) -> None:
    for blob in (data, b"WAGC\x02" + data, b"WASK\x01\x04" + data):
        try:
            s = SlidingWindowCount.from_bytes(blob, backend="native")
        except CodecError:
            continue
        s._check()


def test_update_many_refuses_wrong_buffers_and_changes_nothing() -> None:
    s = _valid()
    before = s._fields()
    nat = s._nat
    for bad, err in [
        (np.arange(4, dtype=np.float64), ArgumentTypeError),
        (np.arange(4, dtype=np.int32), ArgumentTypeError),
        (np.arange(8, dtype=np.int64).reshape(2, 4), ArgumentTypeError),
        (np.arange(8, dtype=np.int64)[::2], ArgumentTypeError),
        ([1, 2, 3], ArgumentTypeError),
        (np.array([1, 2, 1 << 10], dtype=np.int64), Exception),
        (np.array([-1], dtype=np.int64), Exception),
    ]:
        with pytest.raises(err):
            nat.update_many(bad, None)
    with pytest.raises(ArgumentError):
        nat.update_many(np.arange(3, dtype=np.int64), np.array([1, 0, 1], dtype=np.int64))
    with pytest.raises(ArgumentError):
        nat.update_many(np.arange(3, dtype=np.int64), np.array([1], dtype=np.int64))
    assert s._fields() == before
    s._check()


def test_update_many_lets_other_threads_read() -> None:
    """The batch runs without the GIL; a reader on another thread waits for it, then reads a
    whole state (the CallGuard), never a half-built one."""
    s = SlidingWindowCount(0.05, 30, backend="native")
    ts = np.random.default_rng(1).integers(0, 2**30, 400_000, dtype=np.int64)
    seen: list[int] = []

    def read() -> None:
        for _ in range(50):
            seen.append(s.total_weight)

    th = threading.Thread(target=read)
    th.start()
    s.update_many(ts)
    th.join()
    assert set(seen) <= {0, 400_000}
    s._check()


vdigest_st = st.tuples(st.binary(max_size=6), st.binary(max_size=50), st.binary(max_size=50))
qlevels_st = st.lists(
    st.tuples(
        st.integers(-3, 2**10),
        st.booleans(),
        st.binary(max_size=6),
        st.binary(max_size=50),
        st.binary(max_size=50),
        st.lists(vdigest_st, max_size=6),
    ),
    max_size=3,
)


@settings(max_examples=300, deadline=None)
@given(
    universe=st.sampled_from([0, 1, 2, 100, 2**62, 2**62 + 1]),
    lt=st.integers(-1, 64),
    kappa=st.integers(0, 40),
    tau0=st.integers(-3, 2**11),
    tmax=st.integers(-3, 2**11),
    n=st.integers(0, 2**64 - 1),
    top_n=st.integers(0, 2**64 - 1),
    ts=st.binary(max_size=32),
    xs=st.binary(max_size=32),
    ws=st.binary(max_size=32),
    levels=qlevels_st,
)
@example(
    universe=100, lt=10, kappa=2, tau0=-1, tmax=5, n=1, top_n=1, ts=b"", xs=b"", ws=b"",
    levels=[(-1, True, b"\x0a", _be([5]), struct.pack(">d", 1.0),
             [(b"\x07", _be([42]), struct.pack(">d", 1.0))])],
)  # fmt: skip
@example(
    universe=100, lt=10, kappa=2, tau0=-1, tmax=5, n=1, top_n=1, ts=b"", xs=b"", ws=b"",
    levels=[(-1, True, b"\x0a", _be([5]), struct.pack(">d", 1.0),
             [(b"\x07", _be([127]), struct.pack(">d", 1.0))])],
)  # fmt: skip
def test_qdigest_load_fuzz_raises_only_codec_errors(
    universe: int,
    lt: int,
    kappa: int,
    tau0: int,
    tmax: int,
    n: int,
    top_n: int,
    ts: bytes,
    xs: bytes,
    ws: bytes,
    levels: list[Any],
) -> None:
    try:
        s = _core.SlidingWindowQDigest.load(
            0.2, lt, 0, 3.0, kappa, universe, False, tau0, tmax, n, top_n, ts, xs, ws, levels
        )
    except CodecError:
        return
    s._check()
    assert s.fields()[5:8] == (ts, xs, ws)
    if n < 2**63:
        s.update(0, 0)
        s.update_many(
            np.zeros(50, dtype=np.int64),
            np.arange(min(1 << lt, 50), dtype=np.int64)[:50]
            if (1 << lt) >= 50
            else np.zeros(50, dtype=np.int64),
        )
        s._check()


@settings(max_examples=200, deadline=None)
@given(data=st.binary(max_size=120))
def test_qdigest_from_bytes_fuzz_raises_only_codec_errors(data: bytes) -> None:
    for blob in (data, b"WAGC\x02" + data, b"WASK\x01\x05" + data):
        try:
            s = SlidingWindowQDigest.from_bytes(blob, backend="native")
        except CodecError:
            continue
        s._check()


def test_qdigest_update_many_refuses_wrong_buffers_and_changes_nothing() -> None:
    s = SlidingWindowQDigest(100, 0.2, 10, capacity_factor=0.3, backend="native")
    s.update_many(np.arange(1000, dtype=np.int64) % 100, np.arange(1000, dtype=np.int64))
    before = s._fields()
    nat = s._nat
    good = np.arange(4, dtype=np.int64)
    for xs, ts in [
        (good.astype(np.float64), good),
        (good, good.astype(np.int32)),
        ([1, 2, 3, 4], good),
        (np.array([1, 2, 3, 100], dtype=np.int64), good),
        (good, np.array([1, 2, 3, 1 << 10], dtype=np.int64)),
        (good[:3], good),
    ]:
        with pytest.raises((ArgumentError, ArgumentTypeError, TimestampError)):
            nat.update_many(xs, ts, None)
    assert s._fields() == before
    s._check()
