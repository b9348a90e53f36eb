"""Spark batch == windowagg.pandas, for every window shape, on the same data with bad rows.

Both run the same per-key function (``windowagg.pandas.frame_windows`` -> the engine):
results (exact quantiles included) and rejects (reason, event time, original row, row
identity) must be identical, value for value; and every input row is aggregated or
rejected. One small frame, one Spark job per shape.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd
import pytest

from windowagg.monoids import Sum

pytestmark = pytest.mark.spark

pyspark = pytest.importorskip("pyspark")


class NoThirteens(Sum):
    """A user monoid: a sum that refuses values ending in 13 (rejects ``bad_value``)."""

    name = "no_thirteens"

    def lift(self, x: Any) -> Any:
        if int(x) % 100 == 13:
            raise ValueError(f"unlucky value {x}")
        return x


AGGS: list[Any] = [
    "max(v)",
    "min(v)",
    "sum(v)",
    "mean(v)",
    "count",
    "p95(v)",
    "median(v)",
    "approx_p90(v)",
    ("s", NoThirteens(), "v"),
]

SHAPES: dict[str, dict[str, Any]] = {
    "tumbling": {"size": "1 minute", "slide": "1 minute"},
    "hopping": {"size": "5 minutes", "slide": "1 minute", "start_time": 7},
    "per_event": {"size": "90 seconds"},
    "count": {"rows": 7, "every": 1},
    "session": {"gap": "8 seconds"},
}


def _data(n: int = 1_500, seed: int = 3) -> pd.DataFrame:
    """Out-of-order events of 3 keys with duplicate times, and bad rows of every kind."""
    rng = np.random.default_rng(seed)
    secs = np.sort(rng.integers(0, 3_600, n)) + rng.integers(-60, 60, n)
    secs[::9] = secs[1::9][: len(secs[::9])]  # duplicate timestamps
    t0 = pd.Timestamp("2024-03-01")
    times: list[Any] = [(t0 + pd.Timedelta(seconds=int(s))).isoformat() for s in secs]
    keys: list[Any] = rng.choice(["a", "b", "c"], n).tolist()
    v: list[Any] = rng.integers(0, 300, n).astype(float).tolist()
    for i in range(5, n, 97):
        keys[i] = None  # null key
    for i in range(11, n, 131):
        times[i] = None  # null timestamp
    for i in range(17, n, 151):
        times[i] = "not-a-time"
    for i in range(23, n, 89):
        v[i] = None  # null value
    for i in range(29, n, 113):
        v[i] = math.inf if i % 2 else -math.inf
    return pd.DataFrame(
        {
            "k": pd.Series(keys, dtype=object),
            "t": pd.Series(times, dtype=object),
            "v": pd.array(v, dtype="Float64"),
            "id": np.arange(n, dtype=np.int64),
        }
    )


@pytest.fixture(scope="module")
def data(spark: Any) -> tuple[pd.DataFrame, Any]:
    pdf = _data()
    rows = [
        (k, t, None if v is pd.NA else float(v), int(i))
        for k, t, v, i in zip(pdf["k"], pdf["t"], pdf["v"], pdf["id"], strict=True)
    ]
    df = spark.createDataFrame(rows, "k string, t string, v double, id long").repartition(3)
    return pdf, df


def _by_key(res: pd.DataFrame) -> pd.DataFrame:
    # within a key both keep the engine's order (window end; ties in input order)
    return res.sort_values("k", kind="stable").reset_index(drop=True)


@pytest.mark.parametrize("shape", list(SHAPES))
def test_spark_batch_equals_pandas_for_every_shape(data: Any, shape: str) -> None:
    from windowagg.pandas import window_agg as local
    from windowagg.spark import window_agg

    pdf, df = data
    kw = SHAPES[shape]
    want = local(pdf, "k", "t", AGGS, **kw)
    out = window_agg(df, "k", "t", AGGS, row_index="id", **kw)
    # one Spark job: the combined output, split on the driver
    both = out.output.toPandas()
    got_res = both[both["kind"] == "window"].drop(
        columns=["kind", "reason", "event_time", "row", "row_index"]
    )
    got_rej = both[both["kind"] == "reject"][["reason", "event_time", "row", "row_index"]]

    w = _by_key(want.results)
    g = _by_key(got_res)
    assert len(w) == len(g) > 50
    for c in ["window_start", "window_end"]:
        assert (g[c].to_numpy() == w[c].dt.tz_localize(None).to_numpy()).all(), c
    assert g["k"].tolist() == w["k"].tolist()
    for a in ["max_v", "min_v", "sum_v", "mean_v", "count", "p95_v", "median_v"]:
        assert g[a].tolist() == w[a].tolist(), a  # identical values, not approximately
    assert g["approx_p90_v"].tolist() == w["approx_p90_v"].tolist()
    assert g["s"].tolist() == w["s"].tolist()

    got_rej = got_rej.sort_values("row_index").reset_index(drop=True)
    assert got_rej["row_index"].tolist() == want.rejects["row_index"].tolist()
    assert got_rej["reason"].tolist() == want.rejects["reason"].tolist()
    assert got_rej["row"].tolist() == want.rejects["row"].tolist()
    ev_want = want.rejects["event_time"].dt.tz_localize(None)
    assert got_rej["event_time"].isna().tolist() == ev_want.isna().tolist()
    known = ev_want.notna().to_numpy()
    assert (got_rej["event_time"].to_numpy()[known] == ev_want.to_numpy()[known]).all()
    reasons = {r.split(":")[0].split(" '")[0] for r in got_rej["reason"]}
    assert {"null key k", "null timestamp", "unparsable timestamp", "bad_value"} <= reasons
    assert "null value in 'v'" in set(got_rej["reason"])

    # every input row is aggregated or rejected (row identities: each rejected once)
    assert got_rej["row_index"].is_unique
    admitted = len(pdf) - len(got_rej)
    if shape in ("tumbling", "session"):  # each admitted row in exactly one window
        assert int(g["count"].sum()) == admitted
    elif shape in ("per_event", "count"):  # one window per admitted row
        assert len(g) == admitted


def test_several_sizes_in_one_call_equal_pandas(data: Any) -> None:
    """``size=[...]`` in Spark batch: the columns ``<alias>_<size>`` and their values of
    ``windowagg.pandas`` (empty 1-minute windows inside 5-minute ones included), the same
    rejects."""
    from windowagg.pandas import window_agg as local
    from windowagg.spark import window_agg

    pdf, df = data
    kw = {"size": ["1 minute", "5 minutes"], "slide": "1 minute", "start_time": 7}
    want = local(pdf, "k", "t", AGGS, **kw)
    both = window_agg(df, "k", "t", AGGS, row_index="id", **kw).output.toPandas()
    got_res = both[both["kind"] == "window"]
    names = [c for c in want.results.columns if c not in ("k", "window_start", "window_end")]
    assert names[:4] == ["max_v_1m", "max_v_5m", "min_v_1m", "min_v_5m"] and len(names) == 18
    w, g = _by_key(want.results), _by_key(got_res)
    assert len(w) == len(g) > 50
    assert (g["window_end"].to_numpy() == w["window_end"].dt.tz_localize(None).to_numpy()).all()
    assert int((w["count_1m"] == 0).sum()) > 0  # some 1-minute windows hold no event
    for c in names:  # identical values, NaN where a window holds no event
        assert g[c].astype(object).where(g[c].notna(), None).tolist() == (
            w[c].astype(object).where(w[c].notna(), None).tolist()
        ), c
    got_rej = both[both["kind"] == "reject"].sort_values("row_index")
    assert got_rej["row_index"].tolist() == want.rejects["row_index"].tolist()
    assert got_rej["reason"].tolist() == want.rejects["reason"].tolist()


def test_default_row_index_is_the_input_order(spark: Any) -> None:
    """Without ``row_index``, Spark's monotonically increasing id identifies the rows: in a
    one-partition frame it is the row's position, as in windowagg.pandas."""
    from windowagg.pandas import window_agg as local
    from windowagg.spark import window_agg

    pdf = _data(300, seed=8)
    rows = [(k, t, None if v is pd.NA else float(v)) for k, t, v in pdf[["k", "t", "v"]].values]
    df = spark.createDataFrame(rows, "k string, t string, v double").coalesce(1)
    got = window_agg(df, "k", "t", ["count"], rows=3).rejects.toPandas()
    want = local(pdf.drop(columns="id"), "k", "t", ["count"], rows=3).rejects
    got = got.sort_values("row_index").reset_index(drop=True)
    assert got["row_index"].tolist() == want["row_index"].tolist()
    assert got["row"].tolist() == want["row"].tolist()


@pytest.mark.parametrize("keys", [["k", "k2"], []])
def test_many_keys_in_a_partition_and_no_key(spark: Any, keys: list[str]) -> None:
    """Clean rows of 300 keys (two key columns) share each partition: the workers group them
    (no Spark sort), equal to windowagg.pandas; with no key column, one group of all rows."""
    from windowagg.pandas import window_agg as local
    from windowagg.spark import window_agg

    rng = np.random.default_rng(11)
    n = 3_000
    pdf = pd.DataFrame(
        {
            "k": rng.choice(["x", "y", "z"], n),
            "k2": rng.integers(0, 100, n),
            "t": pd.Timestamp("2024-03-01") + pd.to_timedelta(rng.integers(0, 3_600, n), "s"),
            "v": rng.integers(0, 300, n).astype(float),
        }
    )
    df = spark.createDataFrame(pdf).repartition(4)
    aggs = ["max(v)", "sum(v)", "count", "p95(v)"]
    for kw in ({"size": "90 seconds"}, {"size": "5 minutes", "slide": "1 minute"}):
        want = local(pdf, keys, "t", aggs, **kw).results
        got = window_agg(df, keys, "t", aggs, **kw).results.toPandas()
        order = [*keys, "window_end", "window_start", "max_v", "sum_v"]
        w = want.sort_values(order).reset_index(drop=True)
        g = got.sort_values(order).reset_index(drop=True)
        assert len(g) == len(w) > 50
        assert (g["window_end"].to_numpy() == w["window_end"].dt.tz_localize(None).to_numpy()).all()
        for c in [*keys, "max_v", "sum_v", "count", "p95_v"]:
            assert g[c].tolist() == w[c].tolist(), c
