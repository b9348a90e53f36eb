"""The native q-digest's entry points fuzzed: its decoder (``_core.QDigest.load`` and
``QDigest.from_bytes(..., backend="native")``) with random and mutated bytes, its array verb
with buffers of every wrong kind; and the lockstep tests of tests/sketches, so that the
sanitizer build (scripts/test_native_sanitized.sh runs tests/native) runs them too."""

from __future__ import annotations

import struct
from typing import Any

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from sketches.test_qdigest_backends import (  # noqa: F401  (collected here as well)
    test_a_call_that_raises_changes_nothing_on_both_backends,
    test_large_compresses_same_nodes,
    test_lockstep_same_bytes_and_answers_after_every_step,
    test_merged_in_random_trees,
)
from windowagg._native import _core
from windowagg.errors import ArgumentError, ArgumentTypeError, CodecError
from windowagg.sketches import QDigest


def _valid(universe: int = 1000, eps: float = 0.1) -> QDigest:
    d = QDigest(universe, eps, backend="native")
    d.update_many(np.arange(0, min(universe, 5000), 3, dtype=np.int64))
    d.update(universe - 1, 2.5)
    return d


@settings(max_examples=200, deadline=None)
@given(
    umax=st.integers(0, 2**64 - 1),
    eps=st.floats(),
    n=st.floats(),
    depths=st.binary(max_size=24),
    offsets=st.binary(max_size=200),
    counts=st.binary(max_size=200),
)
@example(umax=999, eps=0.1, n=1.0, depths=b"\x0a", offsets=b"\0" * 8, counts=struct.pack(">d", 1.0))
@example(umax=2**64 - 1, eps=0.5, n=0.0, depths=b"\x40", offsets=b"\xff" * 8, counts=b"\0" * 8)
@example(umax=1, eps=0.5, n=0.0, depths=b"\x02", offsets=b"\0" * 8, counts=b"\0" * 8)
def test_load_fuzz_raises_only_codec_errors(
    umax: int, eps: float, n: float, depths: bytes, offsets: bytes, counts: bytes
) -> None:
    try:
        q = _core.QDigest.load(umax, eps, n, depths, offsets, counts)
    except CodecError:
        return
    q._check()
    assert q.body() == (depths, offsets, counts) or len(depths) > 1  # canonical order
    q.update(0)
    q.compress()
    q._check()


@settings(max_examples=200, deadline=None)
@given(data=st.binary(max_size=96))
def test_from_bytes_fuzz_raises_only_codec_errors(data: bytes) -> None:
    for blob in (data, b"WAGC\x01" + data, b"WASK\x01\x01" + data):
        try:
            d = QDigest.from_bytes(blob, backend="native")
        except CodecError:
            continue
        d._check()


@settings(max_examples=150, deadline=None)
@given(
    flips=st.lists(st.tuples(st.integers(0, 10**6), st.integers(0, 255)), min_size=1, max_size=4)
)
def test_mutated_bytes_decode_alike_or_are_codec_errors(flips: list[tuple[int, int]]) -> None:
    good = bytearray(_valid(2**20, 0.05).to_bytes())
    for pos, byte in flips:
        good[pos % len(good)] = byte
    got = []
    for backend in ("native", "python"):
        try:
            d = QDigest.from_bytes(bytes(good), backend=backend)
        except CodecError:
            got.append(None)
        else:
            d._check()
            got.append(d.to_bytes())
    assert got[0] == got[1]


BAD_BUFFERS: list[Any] = [
    b"12345678",
    bytearray(16),
    np.zeros((2, 2), dtype=np.int64),
    np.arange(10, dtype=np.int64)[::2],
    np.arange(4, dtype=np.int32),
    np.arange(4, dtype=np.float64),
    [1, 2, 3],
    None,
    3,
    "abc",
]


@pytest.mark.parametrize("bad", BAD_BUFFERS, ids=lambda b: type(b).__name__)
def test_core_update_many_refuses_bad_buffers_and_changes_nothing(bad: Any) -> None:
    d = _valid()
    q = d._nat
    before = q.body()
    with pytest.raises((ArgumentTypeError, TypeError)):
        q.update_many(bad)
    with pytest.raises((ArgumentTypeError, TypeError, ArgumentError)):  # a float64 of zeros
        q.update_many(np.arange(4, dtype=np.int64), bad if bad is not None else b"")
    assert q.body() == before
    q._check()


def test_core_checks_its_own_arguments() -> None:
    q = _valid()._nat
    before = q.body()
    for call in (
        lambda: q.update(1000),
        lambda: q.update(1, float("inf")),
        lambda: q.update(1, 0.0),
        lambda: q.update_many(np.array([5, 1000], dtype=np.uint64)),
        lambda: q.update_many(np.array([-5, 3], dtype=np.int64)),
        lambda: q.update_many(np.array([5, 3], dtype=np.int64), np.array([1.0, -0.0])),
        lambda: q.update_many(np.array([5, 3], dtype=np.int64), np.array([1.0])),
        lambda: q.merge(_core.QDigest(999, 0.2)),
        lambda: q.quantile(2.0),
        lambda: q.quantiles([0.5, float("nan")]),
    ):
        with pytest.raises(ArgumentError):
            call()
        assert q.body() == before
    for umax, eps in ((0, 0.5), (5, 0.0), (5, 1.0), (5, float("nan"))):
        with pytest.raises(ArgumentError):
            _core.QDigest(umax, eps)
    q._check()
