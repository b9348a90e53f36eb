"""The slice verbs natively and in Python: ``OrderStatistics.kth_slices`` /
``quantile_slices`` against a sorted-slice oracle, and the FIFO ``query_slices`` where the
native path deoptimises part-way (an int beyond int64, a str into Max).

Both verbs slide one scratch structure over windows ``values[lo[i]:hi[i]]`` with
non-decreasing bounds and leave the object they are called on unchanged.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from windowagg.errors import ArgumentError, EmptyWindowError, ValueOrderError
from windowagg.fifo import AMTA, DABA, DABALite, TwoStacksLite
from windowagg.monoids import Max, Sum
from windowagg.order_statistics import OrderStatistics, nearest_rank

BACKENDS = ["python", "native"]


@st.composite
def windows(draw: st.DrawFn, n: int, nonempty: bool = True) -> tuple[list[int], list[int]]:
    """Non-decreasing bounds over n values (overlapping, disjoint and repeated windows)."""
    if n == 0:
        return [], []
    r = draw(st.integers(0, 20))
    his = sorted(draw(st.lists(st.integers(1 if nonempty else 0, n), min_size=r, max_size=r)))
    los: list[int] = []
    for h in his:
        top = h - 1 if nonempty else h
        floor = los[-1] if los else 0
        los.append(draw(st.integers(floor, top)) if floor <= top else top)
    return los, his


@pytest.mark.parametrize("backend", BACKENDS)
@given(
    xs=st.lists(st.one_of(st.integers(-5, 5), st.floats(-5, 5, allow_nan=False)), max_size=40),
    m=st.integers(1, 3),
    data=st.data(),
)
def test_kth_slices_is_the_kth_of_each_sorted_slice(
    backend: str, xs: list[Any], m: int, data: Any
) -> None:
    lo, hi = data.draw(windows(len(xs)))
    ranks = [
        [data.draw(st.integers(0, b - a - 1)) for _ in range(m)]
        for a, b in zip(lo, hi, strict=True)
    ]
    s = OrderStatistics(backend=backend)
    s.bulk_insert([3, 1])  # its own content: neither read nor changed
    want = [
        [sorted(xs[a:b])[k] for k in row]
        for (a, b), row in zip(zip(lo, hi, strict=True), ranks, strict=True)
    ]
    assert s.kth_slices(xs, lo, hi, ranks) == want
    assert s.kth_slices(xs, lo, hi, [row[0] for row in ranks]) == [w[0] for w in want]
    out = np.empty((len(lo), m))
    ranks_a = np.array(ranks, dtype=np.int64).reshape(len(lo), m)
    v, lo_a, hi_a = np.array(xs, dtype=np.float64), np.array(lo, np.int64), np.array(hi, np.int64)
    got = s.kth_slices(v, lo_a, hi_a, ranks_a, out)
    assert got is out and out.tolist() == [[float(x) for x in w] for w in want]
    assert list(s) == [1, 3]


@pytest.mark.parametrize("backend", BACKENDS)
@given(
    xs=st.lists(st.integers(-50, 50), max_size=40),
    qs=st.lists(st.sampled_from([0.0, 0.07, 0.5, 0.95, 0.99, 1.0]), min_size=1, max_size=3),
    data=st.data(),
)
def test_quantile_slices_is_quantile_of_each_slice(
    backend: str, xs: list[int], qs: list[float], data: Any
) -> None:
    lo, hi = data.draw(windows(len(xs)))
    s = OrderStatistics(backend=backend)
    want = [
        [sorted(xs[a:b])[nearest_rank(q, b - a)] for q in qs] for a, b in zip(lo, hi, strict=True)
    ]
    assert s.quantile_slices(xs, lo, hi, qs) == want
    assert s.quantile_slices(xs, lo, hi, qs[0]) == [w[0] for w in want]


def test_the_backends_agree_and_match_duckdb_rule_on_p7() -> None:
    xs = np.arange(1.0, 101.0)
    for backend in BACKENDS:
        s = OrderStatistics(backend=backend)
        # 0-based rank 6 is DuckDB's quantile_disc(x, 0.07) over 1..100: exact ranks
        assert s.kth_slices(xs, np.array([0]), np.array([100]), np.array([6])) == [7.0]
        # quantile_slices keeps quantile()'s float64 rule: ceil(0.07 * 100) = 8
        assert s.quantile_slices(xs, [0], [100], 0.07) == [8.0]


@pytest.mark.parametrize("backend", BACKENDS)
def test_slice_verbs_refuse_bad_input_and_change_nothing(backend: str) -> None:
    s = OrderStatistics(backend=backend)
    s.insert(4)
    with pytest.raises(EmptyWindowError, match="window 1 holds 1 values and has no rank 1"):
        s.kth_slices([1, 2, 3], [0, 1], [2, 2], [1, 1])
    with pytest.raises(EmptyWindowError, match="window 0 \\(\\[1, 1\\)\\) holds no value"):
        s.quantile_slices([1, 2], [1], [1], 0.5)
    with pytest.raises(ArgumentError, match="non-decreasing"):
        s.kth_slices([1, 2, 3], [1, 0], [2, 3], [0, 0])
    with pytest.raises(ArgumentError, match="give every window the same number"):
        s.kth_slices([1, 2, 3], [0, 0], [2, 3], [[0, 1], [0]])
    with pytest.raises(ValueOrderError, match="nan"):
        s.kth_slices(np.array([1.0, math.nan]), [0], [2], [0])
    with pytest.raises(ValueOrderError, match="nan"):
        s.quantile_slices([1.0, float("nan")], [0], [2], 0.5)
    assert list(s) == [4]
    # Python objects (natively: the generic keys) and equal values of two types
    assert s.kth_slices(["b", "a", "c"], [0, 1], [2, 3], [0, 1]) == ["a", "c"]
    assert s.kth_slices([1, 1.0, 2], [0, 1], [2, 3], [1, 0]) == [1, 1.0]


@pytest.mark.parametrize("cls", [TwoStacksLite, DABALite, DABA, AMTA])
def test_query_slices_deoptimises_part_way_and_answers_as_python(cls: Any) -> None:
    big = 2**62
    xs = [big, big, 1, 2, big, 3]
    lo, hi = [0, 0, 1, 2, 2], [1, 2, 3, 5, 6]
    w = cls(Sum(), backend="native")
    w.insert(1)
    assert not w._generic
    want = [sum(xs[a:b]) for a, b in zip(lo, hi, strict=True)]
    assert w.query_slices(xs, lo, hi) == want  # 2**63 does not fit int64
    assert cls(Sum(), backend="python").query_slices(xs, lo, hi) == want
    assert (len(w), w.query()) == (1, 1)
    m = cls(Max(), backend="native")
    assert m.query_slices([1, "a", "b"], [0, 1], [1, 3]) == [1, "b"]
