"""Issue 36 items 4-6 on Spark batch (``windowagg.spark.window_agg``) and streaming
(``stream_window_agg``): a clashing output name and a bad window argument are refused with
an ``ArgumentError`` before any job runs; window bounds past the years 0001-9999 come out
as the range's edges, so ``collect()`` works (it raised ``year 0 is out of range``).

The in-process front ends, the CLI and the object API: ``tests/test_call_checks.py``.
"""

from __future__ import annotations

import datetime as dt

import numpy as np
import pandas as pd
import pytest

pytestmark = pytest.mark.spark

pyspark = pytest.importorskip("pyspark")

from windowagg.aggs import MAX_MICROS, MIN_MICROS  # noqa: E402
from windowagg.errors import ArgumentError  # noqa: E402

DATA = pd.DataFrame(
    {"k": ["a", "a", "b"], "count": [1, 2, 3], "t": ["1970-01-01T00:00:01"] * 3,
     "v": [2.0, 5.0, 1.0]}
)  # fmt: skip


def _call(spark, tmp_path, front):
    """``window_agg`` or ``stream_window_agg`` over DATA (a file stream for the latter)."""
    from windowagg.spark import stream_window_agg, window_agg

    if front == "batch":
        df = spark.createDataFrame(DATA)
        return lambda keys, aggs, **kw: window_agg(df, keys, "t", aggs, **kw)
    src = tmp_path / "in"
    src.mkdir(exist_ok=True)
    DATA.to_parquet(src / "part-0.parquet", index=False)
    sdf = spark.readStream.schema("k string, count long, t string, v double").parquet(str(src))
    return lambda keys, aggs, **kw: stream_window_agg(sdf, keys, "t", aggs, **kw)


# (keys, aggs, window, the colliding name); reason, kind: the combined output's columns,
# compared ignoring case as Spark resolves them
CLASHES = [
    ("k", ["max(v) as k"], {"size": 10}, "k"),
    ("k", ["max(v) as window_end"], {"size": 10, "slide": 5}, "window_end"),
    ("count", ["count"], {"size": 10}, "count"),
    ("k", ["mean(v) as Reason"], {"gap": 3}, "reason"),
    ("k", ["max(v) as revision"], {"size": 10}, "revision"),
    ("count_10s", ["count"], {"size": [5, 10], "slide": 5}, "count_10s"),
]
BAD_ARGS = [
    ("size", 0, {}),
    ("size", -5, {}),
    ("gap", "0s", {}),
    ("slide", "0 minutes", {"size": 10}),
    ("rows", 0, {}),
    ("rows", 2.5, {}),
    ("rows", True, {}),
    ("every", 0, {"rows": 3}),
    ("allowed_lateness", -3, {"size": 10}),
    ("size", [10, 0], {}),
]


@pytest.mark.parametrize("front", ["batch", "stream"])
def test_spark_refuses_clashing_names_and_bad_window_arguments(spark, tmp_path, front):
    """Items 4 and 5: each case an ``ArgumentError`` naming the name, or the argument and
    the value as given, raised while the call is read (no query starts)."""
    call = _call(spark, tmp_path, front)
    for keys, aggs, window, name in CLASHES:
        with pytest.raises(ArgumentError) as info:
            call(keys, aggs, **window)
        assert f"the output column {name!r} would be both" in str(info.value), info.value
    for arg, value, others in BAD_ARGS:
        with pytest.raises(ArgumentError) as info:
            call("k", ["count"], **{**others, arg: value})
        assert f"{arg}={value!r}" in str(info.value), (arg, value, str(info.value))
    assert not spark.streams.active


def _us(s: pd.Series) -> np.ndarray:
    """UTC window bounds as int64 microseconds."""
    return s.dt.tz_localize(None).to_numpy().astype("datetime64[us]").astype(np.int64)


def _edge_rows() -> pd.DataFrame:
    """Events in the first and last hours of the years 0001-9999 (two keys), ISO text."""
    epoch = dt.datetime(1970, 1, 1)
    lo = MIN_MICROS + np.array([0, 3_600_000_000, 30 * 3_600_000_000])
    hi = MAX_MICROS - np.array([20 * 3_600_000_000, 3_600_000_000, 0])
    us = np.concatenate([lo, hi])
    return pd.DataFrame(
        {
            "k": ["lo"] * 3 + ["hi"] * 3,
            "t": [(epoch + dt.timedelta(microseconds=int(x))).isoformat() for x in us],
            "v": [1.0, 2.0, 3.0, 4.0, 5.0, 6.0],
        }
    )


def _rows(df) -> list[tuple]:
    """(k, window_start, window_end, count, sum_v) of every row, naive UTC datetimes, read
    through Arrow: PySpark's ``collect()`` cannot convert any time of 0001-01-01 (CPython's
    naive ``datetime.fromtimestamp`` looks a day earlier), the range's edge included."""
    out = []
    for r in df.toArrow().to_pylist():  # raised "year 0 is out of range" before the clamp
        ws, we = (r[c].replace(tzinfo=None) for c in ("window_start", "window_end"))
        out.append((r["k"], ws, we, r["count"], r["sum_v"]))
    return sorted(out)


@pytest.mark.parametrize("front", ["batch", "stream"])
def test_spark_window_bounds_stay_in_the_years_0001_9999(spark, tmp_path, front):
    """Item 6: hopping windows reaching before 0001-01-01 and past 9999-12-31 come out as
    the range's edges, with the values of ``windowagg.pandas.window_agg`` (which clamps
    the same way); the year-9999 rows ``collect()`` (they raised "year 10000 is out of
    range")."""
    from pyspark.sql import functions as F

    from windowagg.pandas import window_agg as local
    from windowagg.spark import split, stream_window_agg, window_agg

    pdf = _edge_rows()
    window = {"size": "1 day", "slide": "6 hours"}
    aggs = ["count", "sum(v)"]
    if front == "batch":
        results = window_agg(spark.createDataFrame(pdf), "k", "t", aggs, **window).results
    else:
        src = tmp_path / "in"
        src.mkdir()
        pdf.to_parquet(src / "part-0.parquet", index=False)
        sdf = spark.readStream.schema("k string, t string, v double").parquet(str(src))
        out = stream_window_agg(sdf, "k", "t", aggs, api="applyInPandasWithState", **window)
        q = (
            out.writeStream.format("memory")
            .queryName("windowagg_edges")
            .outputMode("append")
            .option("checkpointLocation", str(tmp_path / "ck"))
            .trigger(availableNow=True)
            .start()
        )
        q.awaitTermination()
        assert q.exception() is None
        results, rejects = split(spark.table("windowagg_edges"))
        assert rejects.count() == 0
    got = _rows(results)
    expect = local(pdf, "k", "t", aggs, **window).results
    if front == "stream":  # a stream emits the windows its watermark (the last time) closed
        ends = _us(expect["window_end"])
        last = np.where(expect["k"] == "lo", MIN_MICROS + 30 * 3_600_000_000, MAX_MICROS)
        expect = expect[(ends <= last) & (ends < MAX_MICROS)]
    want = sorted(
        zip(
            expect["k"],
            [t.to_pydatetime().replace(tzinfo=None) for t in expect["window_start"]],
            [t.to_pydatetime().replace(tzinfo=None) for t in expect["window_end"]],
            expect["count"],
            expect["sum_v"],
            strict=True,
        )
    )
    assert got == want and len(want) > 3
    assert dt.datetime(1, 1, 1) in [r[1] for r in got]  # [0000-12-31T.., ..): year 1
    hi = results.filter(F.col("k") == "hi").collect()
    assert hi and all(dt.datetime(9999, 12, 30) <= r["window_end"] for r in hi)
    if front == "batch":  # the stream never closes the windows past the last event
        assert dt.datetime.max in [r[2] for r in got]  # [.., 10000-01-01T..): 9999-12-31
