"""Exact quantiles are an object (``ExactQuantile``), not a name: the engine computes what
the ``Agg``'s monoid slot holds, whatever its alias or kind (issue 27)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from windowagg.aggs import Agg, parse, parse_aggs
from windowagg.exact_quantile import ExactQuantile
from windowagg.monoids import Max
from windowagg.pandas import window_agg
from windowagg.sketches import QDigestMonoid
from windowagg.windows.engine import KeyStream, Shape


def _frame(seed: int = 7, n: int = 300) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "k": rng.choice(["a", "b"], n),
            "t": rng.integers(0, 200, n),  # out of order, with duplicates
            "v": rng.normal(0, 10, n).round(1),
        }
    )


def _nearest_rank(values: list[float], num: int, den: int) -> float:
    """The oracle: the ceil(q n)-th smallest (at least the 1st), by sorting."""
    s = sorted(values)
    return s[max(1, math.ceil(num * len(s) / den)) - 1]


def _seconds(col: pd.Series) -> list[int]:
    return [round(x.timestamp()) for x in col]


def test_parse_builds_exact_quantile_objects_and_approx_qdigests() -> None:
    p95, med, p999 = parse_aggs(["p95(v)", "median(v)", "p99.9(v)"])
    assert (p95.monoid, med.monoid, p999.monoid) == (
        ExactQuantile(95, 100),
        ExactQuantile(50, 100),
        ExactQuantile(999, 1000),
    )
    median, approx = parse(["median(v)", "approx_p99(v)"])
    assert median.monoid == ExactQuantile(50, 100)  # median is p50
    assert isinstance(approx.monoid, QDigestMonoid)  # the approximate one stays a monoid
    with pytest.raises(ValueError, match="strictly between 0 and 1"):
        ExactQuantile(0, 100)


def test_a_user_exact_quantile_under_any_alias_is_exact() -> None:
    """An ``Agg`` named ``slowest_5pct`` (not ``pNN``) holding ``ExactQuantile(95, 100)``
    is computed exactly: equal to a sorted-list oracle per window, and to ``p95(v)``."""
    df = _frame()
    user = Agg("slowest_5pct", ExactQuantile(95, 100), "v")
    tenth = Agg("fastest_tenth", ExactQuantile(1, 10), "v")
    res = window_agg(df, "k", "t", ["p95(v)", user, tenth], size=20, slide=5).results
    assert len(res) > 30
    assert res["slowest_5pct"].tolist() == res["p95_v"].tolist()
    starts, ends = _seconds(res["window_start"]), _seconds(res["window_end"])
    for k, lo, hi, p95, p10 in zip(
        res["k"], starts, ends, res["slowest_5pct"], res["fastest_tenth"], strict=True
    ):
        held = df[(df.k == k) & (df.t >= lo) & (df.t < hi)].v.tolist()
        assert p95 == _nearest_rank(held, 95, 100)
        assert p10 == _nearest_rank(held, 1, 10)


def test_a_user_exact_quantile_with_sizes_is_null_over_no_events() -> None:
    """Several sizes: a smaller size's window with no events answers null (not a monoid's
    ``lower(identity)``), as the parsed ``p90(v)`` does."""
    df = pd.DataFrame({"k": ["a"] * 4, "t": [0, 1, 30, 31], "v": [1.0, 2.0, 3.0, 4.0]})
    user = Agg("high", ExactQuantile(9, 10), "v")
    res = window_agg(df, "k", "t", ["p90(v)", user], size=[2, 40], slide=1).results
    assert res["high_2s"].isna().any()
    pd.testing.assert_series_equal(res["high_2s"], res["p90_v_2s"], check_names=False)
    pd.testing.assert_series_equal(res["high_40s"], res["p90_v_40s"], check_names=False)


def test_a_user_exact_quantile_in_a_stream() -> None:
    """The streaming engine (``KeyStream``'s event log) decides by the object too."""
    aggs = [Agg("slowest_5pct", ExactQuantile(95, 100), "v")]
    s = KeyStream(aggs, Shape(size=10, slide=10), allowed_lateness=20)
    t = np.array([3, 1, 8, 12, 15], dtype=np.int64)
    out, _ = s.feed(t, {"v": np.array([5.0, 9.0, 1.0, 2.0, 7.0])})
    out2, _ = s.advance(40)
    ends = out.columns["end"].tolist() + out2.columns["end"].tolist()
    vals = out.columns["slowest_5pct"].tolist() + out2.columns["slowest_5pct"].tolist()
    got = dict(zip(ends, vals, strict=True))  # the latest revision of each window
    assert got == {10: 9.0, 20: 7.0}


def test_the_kind_is_a_label_the_monoid_decides() -> None:
    """A ``kind`` of ``median`` over ``Max`` computes the max (5), not the median (2): the
    name overrides nothing."""
    a = Agg("x", Max(), "v", "double", "median")
    df = pd.DataFrame({"k": ["a"] * 3, "t": [0, 1, 2], "v": [1.0, 5.0, 2.0]})
    res = window_agg(df, "k", "t", [a], size=10, slide=10).results
    assert res["x"].tolist() == [5.0]
