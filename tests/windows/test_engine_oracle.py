"""The windows engine (through windowagg.pandas.window_agg) against a brute-force reference.

Every window shape, small random frames: out-of-order rows, duplicate timestamps, several
keys, null keys, NaN/inf values; every input row is aggregated or rejected, by identity.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st
from tests.windows.engine_oracle import (
    AGGS,
    COLUMNS,
    SHAPES,
    count_gaps,
    hopping_gaps,
    late_rows,
    reference,
    valid_rows,
)

from windowagg.pandas import window_agg

VALUES = st.one_of(
    st.integers(-20, 20).map(float),
    st.sampled_from([0.5, -1.25, float("nan"), float("inf"), float("-inf")]),
)


@st.composite
def frames(draw: Any) -> pd.DataFrame:
    n = draw(st.integers(0, 25))
    keys = draw(st.lists(st.sampled_from(["a", "b", "", None]), min_size=n, max_size=n))
    ts = draw(st.lists(st.integers(0, 40), min_size=n, max_size=n))
    vs = draw(st.lists(VALUES, min_size=n, max_size=n))
    return pd.DataFrame({"k": pd.Series(keys, dtype=object), "t": ts, "v": vs})


def _seconds(s: pd.Series) -> list[int]:
    return (
        (s.astype("int64") // 1_000_000_000).tolist()
        if s.dt.unit == "ns"
        else (s.astype("datetime64[us, UTC]").astype("int64") // 1_000_000).tolist()
    )


def check(df: pd.DataFrame, shape: dict[str, Any], out: Any, kept: list[int]) -> None:
    """*out* against the reference over the rows admission *kept* (valid, not late, in a
    hopping window); of those, the rows no count window holds are rejects too."""
    ref = reference(df, shape, kept)  # count windows: positions among every kept row
    gaps = count_gaps(df, shape, kept)
    admitted = [i for i in kept if i not in gaps]
    res = out.results
    assert list(res.columns) == ["k", "window_start", "window_end", *COLUMNS]
    assert len(res) == len(ref), (res, ref)
    assert res["k"].tolist() == ref["k"].tolist()
    assert _seconds(res["window_start"]) == ref["start"].tolist()
    assert _seconds(res["window_end"]) == ref["end"].tolist()
    for c in COLUMNS:
        if c in ("sum_v", "mean_v"):
            np.testing.assert_allclose(
                res[c].to_numpy(), ref[c].to_numpy(float), rtol=1e-9, atol=1e-9
            )
        else:
            assert res[c].tolist() == ref[c].tolist(), c
    # identity: every row is admitted or rejected, never both, found by position
    rejected = out.rejects["row_index"].tolist()
    assert rejected == sorted(set(range(len(df))) - set(admitted))
    assert len(rejected) + len(admitted) == len(df)
    kind = (
        "session"
        if "gap" in shape
        else "count"
        if "rows" in shape
        else ("per_event" if shape.get("slide") is None else "hopping")
    )
    if kind in ("per_event",) or (kind == "count" and shape["every"] == 1):
        assert len(res) == len(admitted)
    if kind == "session" or (kind == "hopping" and shape["size"] <= shape["slide"]):
        assert int(res["count"].sum()) == len(admitted)


@given(frames(), SHAPES)
def test_every_shape_matches_the_reference(df: pd.DataFrame, shape: dict[str, Any]) -> None:
    out = window_agg(df, "k", "t", AGGS, **shape)
    valid = valid_rows(df)
    gaps = hopping_gaps(df, shape, valid)
    check(df, shape, out, [i for i in valid if i not in gaps])
    for i, reason in zip(out.rejects["row_index"], out.rejects["reason"], strict=True):
        assert reason.startswith(("null key", "null value", "bad_value: non-finite value")) == (
            i not in valid
        ), reason
        assert reason.startswith("in no window: ") == (i in valid), reason
        assert (
            f'"t": {df["t"].iloc[i]}' in out.rejects["row"][out.rejects["row_index"] == i].iloc[0]
        )


@given(frames(), SHAPES, st.integers(0, 10), st.integers(0, 5))
def test_lateness_is_judged_in_input_order_per_key(
    df: pd.DataFrame, shape: dict[str, Any], ooo: int, allowed: int
) -> None:
    out = window_agg(
        df, "k", "t", AGGS, max_out_of_orderness=ooo, allowed_lateness=allowed, **shape
    )
    valid = valid_rows(df)
    gaps = hopping_gaps(df, shape, valid)  # refused before the clock sees them
    valid = [i for i in valid if i not in gaps]
    late = late_rows(df, valid, ooo, allowed)
    check(df, shape, out, [i for i in valid if i not in late])
    late_rej = out.rejects[out.rejects["reason"].str.startswith("late")]["row_index"].tolist()
    assert late_rej == sorted(late)


@given(frames(), SHAPES)
def test_polars_and_arrow_give_the_same_answers(df: pd.DataFrame, shape: dict[str, Any]) -> None:
    import pyarrow as pa

    want = window_agg(df, "k", "t", AGGS, **shape)
    table = pa.Table.from_pandas(df, preserve_index=False)
    got = window_agg(table, "k", "t", AGGS, **shape)
    assert isinstance(got.results, pa.Table) and isinstance(got.rejects, pa.Table)
    pd.testing.assert_frame_equal(got.results.to_pandas(), want.results, check_dtype=False)
    assert got.rejects.column("row_index").to_pylist() == want.rejects["row_index"].tolist()
    pl = pytest.importorskip("polars")
    got_pl = window_agg(pl.from_pandas(df), "k", "t", AGGS, **shape)
    assert isinstance(got_pl.results, pl.DataFrame)
    assert got_pl.results["count"].to_list() == want.results["count"].tolist()
    assert got_pl.results["p95_v"].to_list() == want.results["p95_v"].tolist()
    assert got_pl.rejects["row_index"].to_list() == want.rejects["row_index"].tolist()


def test_no_keys_is_one_group() -> None:
    df = pd.DataFrame({"t": [3, 1, 2], "v": [1.0, 5.0, 2.0]})
    out = window_agg(df, [], "t", ["max(v)", "p50(v)"], size=10)
    assert out.results["max_v"].tolist() == [5.0, 5.0, 5.0]
    assert out.results["p50_v"].tolist() == [5.0, 2.0, 2.0]


def test_a_late_event_that_bridges_two_sessions_merges_them() -> None:
    df = pd.DataFrame({"k": ["a"] * 3, "t": [0, 10, 5], "v": [1.0, 2.0, 3.0]})
    out = window_agg(df, "k", "t", ["count", "sum(v)"], gap=5)
    assert out.results["count"].tolist() == [3]
    assert _seconds(out.results["window_end"]) == [15]
    out = window_agg(df.iloc[:2], "k", "t", ["count"], gap=5)
    assert out.results["count"].tolist() == [1, 1]


@given(frames(), SHAPES)
def test_a_non_commutative_user_monoid_sees_each_window_in_time_order(
    df: pd.DataFrame, shape: dict[str, Any]
) -> None:
    from windowagg.monoids import Concat

    out = window_agg(df, "k", "t", [("seq", Concat(), "v", "string"), "count"], **shape)
    admitted = valid_rows(df)
    ref = reference(df, shape, admitted)
    assert out.results["count"].tolist() == ref["count"].tolist()
    by_key: dict[Any, list[tuple[int, int, float]]] = {}
    for i in admitted:
        by_key.setdefault(df["k"].iloc[i], []).append((int(df["t"].iloc[i]), i, df["v"].iloc[i]))
    starts = _seconds(out.results["window_start"])
    ends = _seconds(out.results["window_end"])
    for k, s, e, seq, n in zip(
        out.results["k"], starts, ends, out.results["seq"], out.results["count"], strict=True
    ):
        ev = sorted(by_key[k])
        if "rows" in shape or "gap" in shape:
            # the window's events are a run of ev with these first/last times
            runs = [
                tuple(x[2] for x in ev[a : a + n])
                for a in range(len(ev) - n + 1)
                if ev[a][0] == s and ev[a + n - 1][0] == (e - shape.get("gap", 0))
            ]
            assert tuple(seq) in runs
        elif shape.get("slide") is None:
            assert tuple(seq) == tuple(x[2] for x in ev if s < x[0] <= e)
        else:
            assert tuple(seq) == tuple(x[2] for x in ev if s <= x[0] < e)


def test_timestamp_columns_text_and_arrow_timestamps_give_the_same_windows() -> None:
    import pyarrow as pa

    ts = pd.to_datetime(["2024-01-01 00:00:05", "2024-01-01 00:00:01", "2024-01-01 00:00:12"])
    df = pd.DataFrame({"k": ["a", "a", "a"], "t": ts, "v": [1.0, 4.0, 2.0]})
    want = window_agg(df, "k", "t", ["max(v)", "count"], size="10 seconds", slide="10 seconds")
    assert want.results["max_v"].tolist() == [4.0, 2.0]
    assert want.results["window_end"].dt.strftime("%H:%M:%S").tolist() == ["00:00:10", "00:00:20"]
    text = df.assign(t=df["t"].dt.strftime("%Y-%m-%dT%H:%M:%S"))
    utc = df.assign(t=df["t"].dt.tz_localize("UTC"))
    for other in (text, utc):
        got = window_agg(other, "k", "t", ["max(v)", "count"], size=10, slide=10)
        pd.testing.assert_frame_equal(got.results, want.results)
    table = pa.Table.from_pandas(utc, preserve_index=False)
    got_arrow = window_agg(table, "k", "t", ["max(v)", "count"], size=10, slide=10)
    assert got_arrow.results.column("max_v").to_pylist() == [4.0, 2.0]


def test_input_rows_are_aggregated_or_rejected_for_each_shape() -> None:
    df = pd.DataFrame(
        {
            "k": ["a", None, "a", "b", "a", "b"],
            "t": [1, 2, "x", 4, 30, 31],
            "v": [1.0, 2.0, 3.0, float("inf"), float("nan"), 6.0],
        }
    )
    df["t"] = df["t"].astype(object)
    for shape in ({"size": 5, "slide": 5}, {"size": 5}, {"rows": 1}, {"gap": 3}):
        out = window_agg(df, "k", "t", ["count", "max(v)"], **shape)
        assert int(out.results["count"].sum()) + len(out.rejects) == len(df)
        assert out.rejects["row_index"].tolist() == [1, 2, 3, 4]
        assert [r.split(" ")[0] for r in out.rejects["reason"]] == [
            "null",
            "mixed-type",
            "bad_value:",  # inf
            "bad_value:",  # NaN in a float64 column: one rule for NaN and inf (docs/spark.md)
        ]


def test_count_alone_reads_no_value_column() -> None:
    df = pd.DataFrame({"k": ["a", "a"], "t": [1, 2], "v": [float("nan"), float("inf")]})
    out = window_agg(df, "k", "t", ["count"], size=5, slide=5)
    assert out.results["count"].tolist() == [2] and len(out.rejects) == 0


class _NoVerbs:
    """A FIFO aggregator without array verbs: the engine's one-call-at-a-time fallbacks."""

    def __init__(self, monoid: Any) -> None:
        from windowagg.fifo import TwoStacksLite

        self._w = TwoStacksLite(monoid, backend="python")
        self.insert = self._w.insert
        self.bulk_evict = self._w.bulk_evict
        self.query = self._w.query


@given(frames(), SHAPES)
def test_every_backend_and_aggregator_gives_the_same_windows(
    df: pd.DataFrame, shape: dict[str, Any]
) -> None:
    from windowagg.fifo import DABA, DABALite, TwoStacksLite

    want = window_agg(df, "k", "t", AGGS, **shape)
    factories: list[Any] = [
        lambda m: TwoStacksLite(m, backend="python"),
        lambda m: DABA(m, backend="python"),
        DABALite,
        _NoVerbs,
    ]
    for factory in factories:
        got = window_agg(df, "k", "t", AGGS, factory=factory, **shape)
        pd.testing.assert_frame_equal(got.results, want.results, check_exact=False, rtol=1e-12)


def test_approx_quantile_is_the_q_digest_within_its_rank_bound() -> None:
    rng = np.random.default_rng(3)
    n = 400
    df = pd.DataFrame({"k": ["a"] * n, "t": rng.integers(0, 200, n), "v": rng.normal(0, 1, n)})
    out = window_agg(df, "k", "t", ["approx_p90(v)", "p90(v)", "count"], size=50, slide=25)
    res = out.results
    starts = _seconds(res["window_start"])
    for s, approx, exact, cnt in zip(
        starts, res["approx_p90_v"], res["p90_v"], res["count"], strict=True
    ):
        vals = np.sort(df["v"][(df["t"] >= s) & (df["t"] < s + 50)].to_numpy())
        assert len(vals) == cnt and exact == vals[max(1, -(-90 * cnt // 100)) - 1]
        rank = int(np.searchsorted(vals, approx, "right"))
        assert abs(rank - 0.9 * cnt) <= 0.01 * cnt + 2


@given(
    st.lists(
        st.tuples(
            st.sampled_from(["b", "a", "c"]), st.sampled_from([2, 1, 10]), st.integers(0, 30)
        ),
        max_size=30,
    )
)
def test_several_key_columns_group_as_pandas_groupby(rows: list[tuple[str, int, int]]) -> None:
    df = pd.DataFrame(rows, columns=["k1", "k2", "t"]).assign(v=1.0)
    out = window_agg(df, ["k1", "k2"], "t", ["count"], size=100, slide=100)
    want = df.groupby(["k1", "k2"], sort=True).size()
    got = out.results.groupby(["k1", "k2"], sort=False)["count"].sum()
    assert list(got.index) == list(want.index)
    assert got.tolist() == want.tolist()
    keys = list(zip(out.results["k1"], out.results["k2"], strict=True))
    assert keys == sorted(keys)


def test_bad_calls_say_what_to_do() -> None:
    df = pd.DataFrame({"k": ["a"], "t": [1], "v": [1.0]})
    with pytest.raises(ValueError, match="column 'w' is not in the DataFrame"):
        window_agg(df, "k", "t", ["max(w)"], size=5)
    with pytest.raises(ValueError, match="exactly one window shape"):
        window_agg(df, "k", "t", ["max(v)"], size=5, gap=3)
    with pytest.raises(TypeError, match="pandas or polars DataFrame or a pyarrow Table"):
        window_agg(df.to_dict(), "k", "t", ["max(v)"], size=5)
    with pytest.raises(ValueError, match="needs a column"):
        window_agg(df, "k", "t", ["median(*)"], size=5)
