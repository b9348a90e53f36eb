"""WaveletMatrix on both backends against a sorted-slice oracle, against
``OrderStatistics.kth_slices`` (the slide it stands in for in the engine), and its errors:
the same class and message from the Python reference and the native twin, raised before
anything is computed."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from windowagg._backend import native_available
from windowagg.errors import (
    ArgumentError,
    ArgumentTypeError,
    EmptyWindowError,
    ValueOrderError,
)
from windowagg.order_statistics import OrderStatistics
from windowagg.wavelet_matrix import PyWaveletMatrix, WaveletMatrix
from windowagg.windows.engine.ranks import range_select, slide_select

BACKENDS = [
    "python",
    pytest.param(
        "native",
        marks=pytest.mark.skipif(not native_available(), reason="compiled core not built"),
    ),
]

#: ints far beyond 2**53 (float64 would merge neighbours) and small ones with many ties
INTS = st.one_of(st.integers(-(2**63), 2**63 - 1), st.integers(-3, 3))
#: floats with ties, signed zeros and infinities (no NaN: refused)
FLOATS = st.one_of(
    st.sampled_from([0.0, -0.0, 1.5, -2.0, float("inf"), float("-inf")]),
    st.floats(allow_nan=False, width=64),
)


@st.composite
def sequences(draw: st.DrawFn) -> tuple[np.ndarray, list[tuple[int, int, int]]]:
    """Values (int64 or float64) and windows (lo, hi, rank) in any order, some of one
    element, some of every value."""
    elems = draw(st.sampled_from([INTS, FLOATS]))
    vals = draw(st.lists(elems, min_size=1, max_size=60))
    dtype = np.int64 if isinstance(vals[0], int) else np.float64
    values = np.array(vals, dtype=dtype)
    n = len(values)
    queries = []
    for _ in range(draw(st.integers(1, 12))):
        a = draw(st.integers(0, n - 1))
        b = draw(st.one_of(st.just(a + 1), st.just(n), st.integers(a + 1, n)))
        queries.append((a, b, draw(st.integers(0, b - a - 1))))
    return values, queries


def _oracle(values: np.ndarray, queries: list[tuple[int, int, int]]) -> list[Any]:
    return [sorted(values[a:b].tolist())[k] for a, b, k in queries]


@pytest.mark.parametrize("backend", BACKENDS)
@given(sequences())
def test_kth_equals_the_sorted_slice(
    backend: str, case: tuple[np.ndarray, list[tuple[int, int, int]]]
) -> None:
    values, queries = case
    w = WaveletMatrix(values, backend=backend)
    w._check()
    assert w.backend == backend and len(w) == len(values)
    want = _oracle(values, queries)
    lo, hi, ks = (np.array(c, dtype=np.int64) for c in zip(*queries, strict=True))
    got = w.kth_slices(lo, hi, ks)
    assert got.dtype == values.dtype
    assert got.tolist() == want  # == : -0.0 and 0.0 are one value, as in OrderStatistics
    assert [w.kth(a, b, k) for a, b, k in queries] == want
    # a row of ranks per window: the same answers, one column per rank
    rows = w.kth_slices(lo, hi, np.stack([ks, np.zeros_like(ks)], axis=1))
    assert rows[:, 0].tolist() == want
    assert rows[:, 1].tolist() == [min(values[a:b].tolist()) for a, b, _ in queries]


@pytest.mark.parametrize("backend", BACKENDS)
@given(sequences())
def test_the_engine_range_select_equals_its_slide(
    backend: str, case: tuple[np.ndarray, list[tuple[int, int, int]]]
) -> None:
    """What the engine relies on: over non-decreasing windows, range_select over a
    WaveletMatrix answers what slide_select's OrderStatistics.kth_slices does (float64
    columns, nearest ranks of p50, p90, p99.9)."""
    values, queries = case
    col = values.astype(np.float64)
    lo = np.sort(np.array([a for a, _, _ in queries], dtype=np.int64))
    hi = np.maximum(np.sort(np.array([b for _, b, _ in queries], dtype=np.int64)), lo + 1)
    fractions = [(1, 2), (9, 10), (999, 1000)]
    slid = slide_select(col, lo, hi, fractions, lambda: OrderStatistics(backend=backend))
    got = range_select(WaveletMatrix(col, backend=backend), lo, hi, fractions)
    for a, b in zip(slid, got, strict=True):
        assert b.dtype == np.float64
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("backend", BACKENDS)
def test_small_and_edge_sequences(backend: str) -> None:
    one = WaveletMatrix([7.5], backend=backend)
    assert one.kth(0, 1, 0) == 7.5 and one.kth_slices([0, 0], [1, 1], [0, 0]).tolist() == [7.5] * 2
    same = WaveletMatrix([3, 3, 3, 3], backend=backend)
    assert same.kth_slices([0, 1, 3], [4, 3, 4], [3, 1, 0]).tolist() == [3, 3, 3]
    empty = WaveletMatrix(np.empty(0), backend=backend)
    assert len(empty) == 0 and empty.kth_slices([], [], []).tolist() == []
    with pytest.raises(EmptyWindowError, match="window 0 holds 0 values and has no rank 0"):
        empty.kth(0, 0, 0)
    big = WaveletMatrix([2**63 - 1, -(2**63), 2**53 + 1, 2**53], backend=backend)
    assert big.kth_slices([0, 2], [4, 4], [3, 0]).tolist() == [2**63 - 1, 2**53]
    small = WaveletMatrix(np.array([3, 1, 2], dtype=np.uint8), backend=backend)
    assert small.kth(0, 3, 2) == 3 and isinstance(small.kth(0, 3, 2), int)


@pytest.mark.parametrize("backend", BACKENDS)
def test_refused_values_say_what_to_do(backend: str) -> None:
    with pytest.raises(ValueOrderError, match="NaN at position 2"):
        WaveletMatrix([1.0, 2.0, float("nan")], backend=backend)
    with pytest.raises(ArgumentTypeError, match=r"OrderStatistics\.kth_slices"):
        WaveletMatrix([1, 2**64], backend=backend)
    with pytest.raises(ArgumentTypeError, match="int64 or float64 values, got bool"):
        WaveletMatrix([True, False], backend=backend)
    with pytest.raises(ArgumentError, match=r"1-D sequence of values, got shape \(2, 1\)"):
        WaveletMatrix([[1.0], [2.0]], backend=backend)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize(
    ("call", "error", "words"),
    [
        (lambda w: w.kth(2, 1, 0), ArgumentError, "window 0 is [2, 1) over 3 codes"),
        (lambda w: w.kth(0, 4, 0), ArgumentError, "window 0 is [0, 4) over 3 codes"),
        (lambda w: w.kth(-1, 2, 0), ArgumentError, "window 0 is [-1, 2)"),
        (lambda w: w.kth(0, 2, 2), EmptyWindowError, "window 0 holds 2 values and has no rank 2"),
        (lambda w: w.kth(0, 2, -1), EmptyWindowError, "has no rank -1"),
        (lambda w: w.kth(0, 2**70, 0), ArgumentError, "beyond int64"),
        (lambda w: w.kth(0.0, 2, 0), ArgumentTypeError, "integer lo"),
        (
            lambda w: w.kth_slices([0, 1], [3, 2], [0, 1]),
            EmptyWindowError,
            "window 1 holds 1 values and has no rank 1",
        ),
        (lambda w: w.kth_slices([0], [3, 3], [0]), ArgumentError, "1 lo, 2 hi and 1 rows"),
        (lambda w: w.kth_slices([0.5], [3], [0]), ArgumentTypeError, "lo as integers"),
        (lambda w: w.kth_slices([0], [3], [[[0]]]), ArgumentError, "ranks of shape"),
        (lambda w: w.kth_slices("ab", [3], [0]), ArgumentTypeError, "lo as integers"),
    ],
)
def test_bad_queries_raise_before_anything_runs(
    backend: str, call: Any, error: type[Exception], words: str
) -> None:
    w = WaveletMatrix([3.0, 1.0, 2.0], backend=backend)
    with pytest.raises(error, match=_literal(words)):
        call(w)


def _literal(words: str) -> str:
    import re

    return re.escape(words)


def _impls(codes: np.ndarray, sigma: int) -> list[Any]:
    impls: list[Any] = [PyWaveletMatrix(codes, sigma)]
    if native_available():
        from windowagg._native import _core

        impls.append(_core.WaveletMatrix(codes, sigma))
    return impls


I64 = np.int64


@pytest.mark.parametrize(
    ("args", "error", "words"),
    [
        ((np.array([0]), np.array([3]), np.array([3]), np.empty(1, I64)), EmptyWindowError, "no rank 3"),
        ((np.array([0]), np.array([3]), np.array([0]), np.empty(2, I64)), ArgumentError, "out holds 2 items for 1"),
        ((np.array([0]), np.array([3]), np.array([0]), np.empty(1)), ArgumentTypeError, "needs out as"),
        ((np.zeros(2, I64), np.full(2, 3), np.zeros(2, I64), np.empty(4, I64)[::2]), ArgumentTypeError, "needs out as"),
        ((np.array([0]), np.array([3]), np.array([0.0]), np.empty(1, I64)), ArgumentTypeError, "needs ranks as"),
        (([0], np.array([3]), np.array([0]), np.empty(1, I64)), ArgumentTypeError, "needs lo as"),
        ((np.array([0]), np.array([3, 3]), np.array([0]), np.empty(1, I64)), ArgumentError, "1 lo, 2 hi"),
        ((np.array([2]), np.array([1]), np.array([0]), np.empty(1, I64)), ArgumentError, "window 0 is [2, 1)"),
        ((np.array([0]), np.array([4]), np.array([0]), np.empty(1, I64)), ArgumentError, "window 0 is [0, 4)"),
        ((np.array([0, 0]), np.array([3, 3]), np.zeros((2, 2), I64), np.empty(3, I64)), ArgumentError, "out holds 3 items for 4"),
    ],
)  # fmt: skip
def test_both_twins_refuse_bad_arrays_alike(args: tuple[Any, ...], error: type, words: str) -> None:
    """The implementations (codes in, codes out) check every argument before writing:
    the same error class and message from each; *out* is left untouched."""
    for impl in _impls(np.array([2, 0, 1], dtype=I64), 3):
        out = args[3]
        before = out.copy() if isinstance(out, np.ndarray) else None
        with pytest.raises(error, match=_literal(words)):
            impl.kth_slices(*args)
        if before is not None and before.dtype == out.dtype:
            np.testing.assert_array_equal(out, before)


@pytest.mark.parametrize(
    ("codes", "sigma", "error", "words"),
    [
        (np.array([0, 5], dtype=I64), 5, ArgumentError, "code 1 is 5; every code must lie in [0, sigma) = [0, 5)"),
        (np.array([0, -1], dtype=I64), 5, ArgumentError, "code 1 is -1"),
        (np.array([0.0]), 5, ArgumentTypeError, "needs codes as a C-contiguous 1-D int64 array"),
        (np.arange(6, dtype=I64)[::2], 6, ArgumentTypeError, "needs codes as"),
        (np.zeros((2, 2), dtype=I64), 6, ArgumentTypeError, "needs codes as"),
        (np.arange(3, dtype=I64), -1, ArgumentError, "sigma must be >= 0, got -1"),
        (np.array([0], dtype=I64), 0, ArgumentError, "code 0 is 0"),
    ],
)  # fmt: skip
def test_both_twins_refuse_bad_codes_alike(
    codes: np.ndarray, sigma: int, error: type, words: str
) -> None:
    makers: list[Any] = [PyWaveletMatrix]
    if native_available():
        from windowagg._native import _core

        makers.append(_core.WaveletMatrix)
    for make in makers:
        with pytest.raises(error, match=_literal(words)):
            make(codes, sigma)


@given(st.lists(st.integers(0, 2**40), min_size=0, max_size=200), st.data())
def test_codes_twins_agree_over_any_alphabet(codes: list[int], data: st.DataObject) -> None:
    """Codes over alphabets of 1 to 2**41 symbols (0 to 41 levels; native 32- and 64-bit
    scratch) and lengths around the 64-bit blocks: both twins answer the sorted slice."""
    c = np.array(codes, dtype=I64)
    sigma = int(c.max()) + 1 if len(c) else 0
    sigma = data.draw(st.sampled_from([sigma, sigma + 1, 2**41]))
    if len(c) == 0:
        for impl in _impls(c, sigma):
            impl._check()
            assert len(impl) == 0
        return
    a = np.array(data.draw(st.lists(st.integers(0, len(c) - 1), min_size=1, max_size=10)))
    b = np.array([data.draw(st.integers(x + 1, len(c))) for x in a.tolist()])
    k = np.array([data.draw(st.integers(0, y - x - 1)) for x, y in zip(a, b, strict=True)])
    want = [
        sorted(codes[x:y])[z] for x, y, z in zip(a.tolist(), b.tolist(), k.tolist(), strict=True)
    ]
    for impl in _impls(c, sigma):
        impl._check()
        assert impl.levels == ((sigma - 1).bit_length() if sigma > 1 else 0)
        out = np.empty(len(a), dtype=I64)
        impl.kth_slices(a.astype(I64), b.astype(I64), k.astype(I64), out)
        assert out.tolist() == want
        assert impl.kth(int(a[0]), int(b[0]), int(k[0])) == want[0]
