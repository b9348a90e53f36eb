"""Units of the windows engine: exact ranks, the watermark clock, window assignment."""

from __future__ import annotations

import importlib
import itertools
import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from windowagg.windows.engine import Shape, WatermarkClock, assign
from windowagg.windows.engine.admission import admit, admit_groups
from windowagg.windows.engine.assign import assign_groups
from windowagg.windows.engine.ranks import nearest_rank, slide_select

# the module (the package's ``assign`` is the function)
assign_module = importlib.import_module("windowagg.windows.engine.assign")


@st.composite
def monotone_windows(draw: st.DrawFn) -> tuple[list[float], list[int], list[int]]:
    n = draw(st.integers(1, 40))
    vals = draw(st.lists(st.integers(-5, 5).map(float), min_size=n, max_size=n))
    r = draw(st.integers(1, 20))
    his = sorted(draw(st.lists(st.integers(1, n), min_size=r, max_size=r)))
    los: list[int] = []
    for h in his:
        lo = (
            draw(st.integers(los[-1] if los else 0, h - 1))
            if (not los or los[-1] <= h - 1)
            else h - 1
        )
        los.append(max(lo, los[-1] if los else 0))
    return vals, los, his


@given(monotone_windows())
def test_slide_select_is_the_nearest_rank_of_each_slice(
    case: tuple[list[float], list[int], list[int]],
) -> None:
    vals, lo, hi = case
    qs = [(1, 2), (95, 100), (999, 1000), (1, 100)]
    from windowagg.order_statistics import OrderStatistics

    for backend, checked in itertools.product(("python", "native"), (True, False)):
        if backend == "native":
            from windowagg._backend import native_available

            if not native_available():
                continue
        got = slide_select(
            np.array(vals),
            np.array(lo),
            np.array(hi),
            qs,
            factory=lambda b=backend: OrderStatistics(backend=b),
            checked=checked,  # the bounds are valid: the same answers unchecked
        )
        for j, (a, b) in enumerate(zip(lo, hi, strict=True)):
            s = sorted(vals[a:b])
            for col, (num, den) in zip(got, qs, strict=True):
                assert col[j] == s[max(1, math.ceil(num * len(s) / den)) - 1]


def test_nearest_rank_is_duckdb_quantile_disc() -> None:
    # values checked against DuckDB 2.0's quantile_disc on 1..n
    assert [nearest_rank(95, 100, n) for n in (2, 4, 7, 10, 20)] == [2, 4, 7, 10, 19]
    assert [nearest_rank(1, 2, n) for n in (2, 4, 7, 10, 20)] == [1, 2, 4, 5, 10]
    assert [nearest_rank(1, 4, n) for n in (2, 4, 7, 10, 20)] == [1, 1, 2, 3, 5]
    # exact fractions, not float64: 0.07 * 100 is 7.000000000000001 in floats, and DuckDB's
    # quantile_disc(x, 0.07) over 1..100 is 7 (and p29 of 100 is 29)
    assert nearest_rank(7, 100, 100) == 7
    assert nearest_rank(29, 100, 100) == 29


def test_slide_select_refuses_decreasing_bounds() -> None:
    with pytest.raises(ValueError, match="non-decreasing"):
        slide_select(np.array([1.0, 2.0]), np.array([1, 0]), np.array([2, 2]), [(1, 2)])


@given(st.lists(st.integers(0, 50), max_size=30), st.integers(0, 10), st.integers(0, 10))
def test_clock_matches_a_loop(ts: list[int], ooo: int, allowed: int) -> None:
    c = WatermarkClock(ooo, allowed)
    half = len(ts) // 2
    late = c.observe(np.array(ts[:half], dtype=np.int64)).tolist()
    late += c.observe(np.array(ts[half:], dtype=np.int64)).tolist()
    top = None
    want = []
    for t in ts:
        want.append(top is not None and t < top - ooo - allowed)
        if not want[-1]:
            top = t if top is None else max(top, t)
    assert late == want
    assert c.watermark == (None if top is None else top - ooo)


@given(
    st.lists(st.integers(-30, 30), max_size=25),
    st.sampled_from(
        [Shape(size=7, slide=3, start_time=2), Shape(size=5), Shape(rows=3, every=2), Shape(gap=4)]
    ),
)
def test_assigned_slices_and_key_ranges_agree(ts: list[int], shape: Shape) -> None:
    t = np.sort(np.array(ts, dtype=np.int64))
    w = assign(shape, t)
    assert np.all(np.diff(w.lo) >= 0) and np.all(np.diff(w.hi) >= 0)
    assert np.all(w.hi > w.lo)  # no empty window
    assert np.all(np.diff(w.keys) >= 0)
    for j in range(len(w.lo)):
        inside = np.flatnonzero((w.keys >= w.key_lo[j]) & (w.keys <= w.key_hi[j]))
        assert inside.tolist() == list(range(w.lo[j], w.hi[j]))
    assert np.all(np.diff(w.end) >= 0)


def test_shape_refuses_two_shapes_and_bad_sizes() -> None:
    with pytest.raises(ValueError, match="exactly one window shape"):
        Shape(rows=3, gap=2)
    with pytest.raises(ValueError, match="gap must be positive"):
        Shape(gap=0)
    with pytest.raises(ValueError, match="slide needs a time window"):
        Shape(rows=2, slide=3)


@given(monotone_windows())
def test_slide_windows_answers_every_slice_in_order(
    case: tuple[list[float], list[int], list[int]],
) -> None:
    from windowagg.fifo import TwoStacksLite
    from windowagg.monoids import Concat, Max
    from windowagg.windows.engine.state import slide_windows

    vals, lo, hi = case
    x = np.array(vals)
    lo_a, hi_a = np.array(lo, dtype=np.int64), np.array(hi, dtype=np.int64)
    seqs = slide_windows(lambda: TwoStacksLite(Concat()), x, lo_a, hi_a, None)
    assert seqs == [tuple(vals[a:b]) for a, b in zip(lo, hi, strict=True)]
    peaks = slide_windows(lambda: TwoStacksLite(Max()), x, lo_a, hi_a, np.float64)
    assert peaks.tolist() == [max(vals[a:b]) for a, b in zip(lo, hi, strict=True)]


_SHAPES = [
    Shape(size=7, slide=3, start_time=2),
    Shape(size=6, slide=6),
    Shape(size=5),
    Shape(rows=3, every=2),
    Shape(rows=1),
    Shape(gap=4),
]


@given(
    st.lists(st.lists(st.integers(-30, 30), max_size=12), max_size=6),
    st.sampled_from(_SHAPES),
    st.sampled_from([1, 10**17, 2**60]),
    st.booleans(),
)
def test_assign_groups_is_assign_per_key(
    groups: list[list[int]], shape: Shape, spread: int, per_key_search: bool
) -> None:
    """Many keys in one pass = each key alone (bounds shifted by the key's start), with keys
    that have no events, times far apart (``spread``: the shifted ranges pass 2**62 at
    2**60) and the per-key search forced."""
    parts = [np.sort(np.array(g, dtype=np.int64)) + (i - 2) * spread for i, g in enumerate(groups)]
    t = np.concatenate([np.empty(0, np.int64), *parts])
    starts = np.concatenate([[0], np.cumsum([len(p) for p in parts])]).astype(np.int64)
    limit = assign_module._SHIFT_LIMIT
    try:
        if per_key_search:
            assign_module._SHIFT_LIMIT = 0.0
        got, sizes = assign_groups(shape, t, starts)
    finally:
        assign_module._SHIFT_LIMIT = limit
    singles = [assign(shape, p) for p in parts]
    assert sizes.tolist() == [len(w.lo) for w in singles]
    for field in ("start", "end", "key_lo", "key_hi"):
        want = np.concatenate([np.empty(0, np.int64), *[getattr(w, field) for w in singles]])
        assert getattr(got, field).tolist() == want.tolist(), field
    for field in ("lo", "hi"):
        want = np.concatenate(
            [
                np.empty(0, np.int64),
                *[getattr(w, field) + s for w, s in zip(singles, starts[:-1], strict=True)],
            ]
        )
        assert getattr(got, field).tolist() == want.tolist(), field
    keys = np.concatenate([np.empty(0, np.int64), *[w.keys for w in singles]])
    assert got.keys.tolist() == keys.tolist()
    assert np.all(np.diff(got.lo) >= 0) and np.all(np.diff(got.hi) >= 0)


@given(
    st.lists(
        st.lists(
            st.tuples(st.integers(-20, 20), st.sampled_from([1.0, 2.0, math.inf])), max_size=10
        ),
        max_size=5,
    ),
    st.sampled_from([None, (0, 0), (3, 2)]),
    st.booleans(),
)
def test_admit_groups_is_admit_per_key(
    groups: list[list[tuple[int, float]]], lateness: tuple[int, int] | None, lexsort: bool
) -> None:
    """Admitting many keys at once = each key alone with a clock of its own (positions
    shifted by the key's start), with the lexicographic sort forced."""
    t = np.array([x for g in groups for x, _ in g], dtype=np.int64)
    v = np.array([y for g in groups for _, y in g], dtype=np.float64)
    starts = np.concatenate([[0], np.cumsum([len(g) for g in groups])]).astype(np.int64)
    limit = assign_module._SHIFT_LIMIT
    try:
        if lexsort:
            assign_module._SHIFT_LIMIT = 0.0
        got = admit_groups(t, {"v": v}, starts, lateness)
    finally:
        assign_module._SHIFT_LIMIT = limit
    order: list[int] = []
    refused: list[int] = []
    reasons: list[str] = []
    for a, b in zip(starts[:-1].tolist(), starts[1:].tolist(), strict=True):
        clock = WatermarkClock(*lateness) if lateness is not None else None
        one = admit(t[a:b], {"v": v[a:b]}, clock)
        order += (one.order + a).tolist()
        refused += (one.refused + a).tolist()
        reasons += one.reasons
    assert got.order.tolist() == order
    assert got.refused.tolist() == refused
    assert got.reasons == reasons
