"""The batch engine on several threads (issue 40) gives exactly what one thread gives.

``window_agg(..., threads=k)`` cuts the keys into runs of balanced event counts and computes
them on a pool (:mod:`windowagg.windows.engine.parallel`): results and rejects must be equal,
row for row, value for value (bit for bit: ``check_exact``) and dtype for dtype, to
``threads=1`` over every window shape and every aggregation family (built-in monoids,
exact and approximate quantiles, decayed aggregations, user monoids including the
non-commutative ``Concat``), on random many-key inputs with bad rows, and the errors raised
must be the same. The thread counts are given explicitly: nothing here depends on the
machine's cores.
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from windowagg.aggs import parse_aggs
from windowagg.errors import AggregationError, ArgumentError
from windowagg.monoids import Concat
from windowagg.pandas import window_agg
from windowagg.windows.engine import Shape, window_groups
from windowagg.windows.engine.parallel import check_threads, default_threads, key_runs


class Tally:
    """A user monoid (Python code, run under the GIL): (count, sum of squares) of the
    values, lowered to the count times 1000 plus the sum of squares."""

    commutative = True
    identity = (0, 0.0)

    def lift(self, x: Any) -> tuple[int, float]:
        return (1, float(x) * float(x))

    def combine(self, a: tuple[int, float], b: tuple[int, float]) -> tuple[int, float]:
        return (a[0] + b[0], a[1] + b[1])

    def lower(self, a: tuple[int, float]) -> float:
        return a[0] * 1000.0 + a[1]


FAMILIES = {
    "monoids": ["sum(v)", "count", "max(v)", "min(v)", "mean(v)", "stddev(v)"],
    "quantiles": ["p50(v)", "p99(v)", "median(v)", "approx_p90(v)", "count"],
    "decayed": [
        "ewm_mean(v, half_life=7)",
        "decayed_sum(v, half_life=7)",
        "decayed_count(half_life=7)",
        "decayed_sum(v, decay=poly(1.5)) as poly_sum",
    ],
    "decayed summaries": ["decayed_p50(v, half_life=7)", "top_k(v, 3, half_life=7)", "count"],
    "user": [("seq", Concat(), "v", "string"), ("tally", Tally(), "v", "double"), "sum(v)"],
}

SHAPES = st.one_of(
    st.builds(
        lambda size, slide, start: {"size": size, "slide": slide, "start_time": start},
        st.integers(1, 15),
        st.integers(1, 15),
        st.integers(-5, 5),
    ),
    st.builds(lambda size: {"size": size, "slide": size}, st.integers(1, 15)),  # tumbling
    st.builds(lambda size: {"size": size}, st.integers(1, 20)),  # per event
    st.builds(lambda r, e: {"rows": r, "every": e}, st.integers(1, 6), st.integers(1, 4)),
    st.builds(lambda g: {"gap": g}, st.integers(1, 8)),
    st.builds(  # several sizes over one slide
        lambda s, m: {"size": [s, s * m], "slide": s}, st.integers(1, 6), st.integers(2, 4)
    ),
    st.builds(lambda a, b: {"size": [a, a + b]}, st.integers(1, 8), st.integers(1, 8)),
)

VALUES = st.one_of(
    st.floats(-50, 50, allow_nan=False).map(lambda x: round(x, 3)),
    st.sampled_from([float("nan"), float("inf"), float("-inf"), None, 0.1, 1e16]),
)


@st.composite
def frames(draw: Any) -> pd.DataFrame:
    """Up to 80 rows over up to 12 keys (some null), times with nulls, bad values."""
    n = draw(st.integers(0, 80))
    nkeys = draw(st.integers(1, 12))
    keys = draw(
        st.lists(
            st.one_of(st.integers(0, nkeys - 1).map(lambda k: f"k{k}"), st.just(None)),
            min_size=n,
            max_size=n,
        )
    )
    ts = draw(st.lists(st.one_of(st.integers(0, 60), st.just(None)), min_size=n, max_size=n))
    vs = draw(st.lists(VALUES, min_size=n, max_size=n))
    return pd.DataFrame(
        {
            "k": pd.Series(keys, dtype=object),
            "t": pd.Series(ts, dtype=object),
            "v": pd.Series(vs, dtype=object),
        }
    )


def _same(a: Any, b: Any) -> None:
    pd.testing.assert_frame_equal(a.results, b.results, check_exact=True)
    pd.testing.assert_frame_equal(a.rejects, b.rejects, check_exact=True)


def _outcome(df: pd.DataFrame, aggs: list[Any], shape: dict[str, Any], threads: int) -> Any:
    try:
        return window_agg(df, "k", "t", aggs, threads=threads, **shape)
    except (AggregationError, ArgumentError) as e:
        return e


@given(frames(), SHAPES, st.sampled_from(sorted(FAMILIES)), st.sampled_from([2, 3]))
def test_threads_give_the_output_of_one_thread(
    df: pd.DataFrame, shape: dict[str, Any], family: str, threads: int
) -> None:
    aggs = FAMILIES[family]
    one = _outcome(df, aggs, shape, 1)
    many = _outcome(df, aggs, shape, threads)
    if isinstance(one, Exception):
        assert type(many) is type(one) and str(many) == str(one)
        return
    _same(one, many)


@given(frames(), st.sampled_from([2, 3, 5]))
def test_decayed_whole_history_on_threads(df: pd.DataFrame, threads: int) -> None:
    aggs = FAMILIES["decayed"]
    _same(
        window_agg(df, "k", "t", aggs, threads=1), window_agg(df, "k", "t", aggs, threads=threads)
    )


@given(frames(), st.integers(1, 8), st.integers(0, 10))
def test_lateness_judged_per_key_on_threads(df: pd.DataFrame, threads: int, ooo: int) -> None:
    kw = {"size": 10, "slide": 5, "max_out_of_orderness": ooo, "allowed_lateness": 2}
    aggs = ["max(v)", "count", "p50(v)"]
    _same(
        window_agg(df, "k", "t", aggs, threads=1, **kw),
        window_agg(df, "k", "t", aggs, threads=threads, **kw),
    )


def test_many_keys_split_into_runs_give_every_key_its_windows() -> None:
    """A frame large enough that every thread gets a run: 200 keys, 20,000 events, floats
    whose sums round differently in any other order."""
    rng = np.random.default_rng(5)
    n = 20_000
    df = pd.DataFrame(
        {
            "k": rng.integers(0, 200, n),
            "t": rng.integers(0, 5_000, n),
            "v": rng.normal(0, 1e6, n) + 0.1,
        }
    )
    aggs = ["sum(v)", "mean(v)", "max(v)", "count", "p99(v)", "ewm_mean(v, half_life=30)"]
    for shape in ({"size": 300, "slide": 10}, {"size": 60}, {"gap": 3}, {"rows": 7, "every": 2}):
        want = window_agg(df, "k", "t", aggs, threads=1, **shape)
        for threads in (2, 3, 8):
            _same(want, window_agg(df, "k", "t", aggs, threads=threads, **shape))


class Fails:
    """A user monoid whose combine raises once a window holds a value above 40."""

    identity = 0.0

    def lift(self, x: Any) -> float:
        return float(x)

    def combine(self, a: float, b: float) -> float:
        if max(a, b) > 40:
            raise ValueError(f"too big: {max(a, b)}")
        return max(a, b)

    def lower(self, a: float) -> float:
        return a


def test_an_error_is_the_one_of_one_thread() -> None:
    """Several keys fail, in several runs and aggregations: the error raised names the
    key and window one thread names (the first failing aggregation's first window)."""
    n = 4_000
    rng = np.random.default_rng(1)
    df = pd.DataFrame(
        {"k": rng.integers(0, 50, n), "t": rng.integers(0, 1_000, n), "v": rng.uniform(0, 41, n)}
    )
    aggs = ["count", ("first_fail", Fails(), "v", "double"), ("again", Fails(), "v", "double")]
    errors = []
    for threads in (1, 2, 4):
        with pytest.raises(AggregationError) as got:
            window_agg(df, "k", "t", aggs, size=50, slide=25, threads=threads)
        errors.append((str(got.value), got.value.key, got.value.window, got.value.alias))
    assert errors[0][3] == "first_fail"
    assert errors[1:] == [errors[0], errors[0]]


@pytest.mark.parametrize("bad", [0, -1, 2.5, True, "2", float("nan")])
def test_bad_threads_are_refused_naming_the_value(bad: Any) -> None:
    df = pd.DataFrame({"k": ["a"], "t": [1], "v": [1.0]})
    with pytest.raises(ArgumentError, match=f"threads={bad!r}"):
        window_agg(df, "k", "t", ["count"], size=10, threads=bad)
    with pytest.raises(ArgumentError, match=f"threads={bad!r}"):
        window_groups(
            np.array([1]), {}, np.array([0, 1]), parse_aggs(["count"]), Shape(size=10), threads=bad
        )


def test_threads_none_is_the_cores_and_numpy_ints_are_taken() -> None:
    assert check_threads(None) == default_threads() >= 1
    assert check_threads(np.int64(3)) == 3


@given(
    st.lists(st.integers(0, 30), min_size=0, max_size=40),
    st.integers(1, 9),
)
def test_key_runs_cut_between_keys_in_order(counts: list[int], parts: int) -> None:
    starts = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    runs = key_runs(starts, parts)
    keys = len(counts)
    assert runs[0] == 0 and runs[-1] == keys
    assert all(a < b for a, b in itertools.pairwise(runs)) or runs == [0, 0]
    assert len(runs) - 1 <= max(parts, 1)
    n = int(starts[-1])
    for g in runs[1:-1]:  # a cut is the first key boundary at or past a share i * n / parts
        assert any(starts[g - 1] < i * n // parts <= starts[g] for i in range(1, parts))
    for g0, g1 in itertools.pairwise(runs):  # balanced: a share, plus at most one key
        assert starts[g1] - starts[g0] <= n // parts + 1 + max(counts, default=0)


def test_window_groups_runs_offset_refused_positions() -> None:
    """window_groups directly: refused positions (non-finite values) are positions in the
    caller's arrays, ascending, from every run."""
    rng = np.random.default_rng(3)
    counts = rng.integers(0, 40, 30)
    starts = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    n = int(starts[-1])
    t = rng.integers(0, 100, n)
    v = rng.normal(size=n)
    v[rng.integers(0, n, 25)] = np.nan
    aggs = parse_aggs(["sum(v)", "count", "p50(v)"])
    one = window_groups(t, {"v": v}, starts, aggs, Shape(size=10, slide=5))
    for threads in (2, 3, 7):
        got = window_groups(t, {"v": v}, starts, aggs, Shape(size=10, slide=5), threads=threads)
        assert got.refused.tolist() == one.refused.tolist() and got.reasons == one.reasons
        assert got.sizes.tolist() == one.sizes.tolist()
        for c in one.columns:
            np.testing.assert_array_equal(got.columns[c], one.columns[c])
    assert sorted(one.refused.tolist()) == one.refused.tolist() and len(one.refused)
