"""Decayed aggregations give the same answers from every front end: ``windowagg.pandas``,
Spark batch and Spark streaming (final revisions), on one small out-of-order frame with
duplicate times; the whole history (no size) and hopping windows. One Spark test."""

from __future__ import annotations

import os

import numpy as np
import pandas as pd
import pytest

pytestmark = pytest.mark.spark

pyspark = pytest.importorskip("pyspark")

AGGS = [
    "ewm_mean(v, half_life=10 min)",
    "decayed_sum(v, half_life=1h) as s1h",
    "decayed_count(half_life=30 min)",
    "decayed_sum(v, decay=poly(2), unit=1 min) as poly",
]
OUT = ["ewm_mean_v", "s1h", "decayed_count", "poly"]


def frame() -> pd.DataFrame:
    rng = np.random.default_rng(30)
    n = 300
    secs = np.sort(rng.integers(0, 6 * 3600, n)) + rng.integers(-300, 300, n)  # out of order
    secs[10:14] = secs[10]  # duplicate times
    return pd.DataFrame(
        {
            "k": rng.integers(0, 3, n).astype("int32"),
            "t": pd.to_datetime(secs * 1_000_000, unit="us", utc=True),
            "v": rng.normal(20.0, 8.0, n).round(3),
        }
    )


def ordered(res: pd.DataFrame) -> pd.DataFrame:
    res = res.copy()
    for c in ("window_start", "window_end"):
        res[c] = pd.to_datetime(res[c], utc=True).dt.tz_localize(None).astype("datetime64[us]")
    res["k"] = res["k"].astype("int32")
    cols = ["k", "window_start", "window_end", *OUT]
    return res[cols].sort_values(cols[:3], kind="stable").reset_index(drop=True)


def test_pandas_spark_batch_and_streaming_agree(spark, tmp_path):
    from windowagg.pandas import window_agg as local
    from windowagg.spark import split, stream_window_agg
    from windowagg.spark import window_agg as batch

    pdf = frame()
    sdf = spark.createDataFrame(pdf)
    hopping = {"size": "1 hour", "slide": "20 minutes"}
    for shape in ({}, hopping):
        want = ordered(local(pdf, "k", "t", AGGS, **shape).results)
        got = ordered(batch(sdf, "k", "t", AGGS, **shape).results.toPandas())
        assert len(want) == (len(pdf) if not shape else len(got)) and len(got) > 50
        pd.testing.assert_frame_equal(got[want.columns[:3]], want[want.columns[:3]])
        np.testing.assert_allclose(got[OUT], want[OUT], rtol=1e-12)
    # streaming: parquet files in arrival order, the last revision of every window
    folder = str(tmp_path / "in")
    os.makedirs(folder)
    for i, part in enumerate(np.array_split(np.arange(len(pdf)), 4)):
        p = os.path.join(folder, f"part-{i:03d}.parquet")
        pdf.iloc[part].to_parquet(p, index=False, coerce_timestamps="us")
        os.utime(p, (1_000_000 + i, 1_000_000 + i))
    stream = stream_window_agg(
        spark.readStream.schema("k int, t timestamp, v double")
        .option("maxFilesPerTrigger", 1)
        .parquet(folder),
        "k",
        "t",
        AGGS,
        max_out_of_orderness="1 hour",
        **hopping,
    )
    sink = str(tmp_path / "out")
    q = (
        stream.writeStream.format("parquet")
        .outputMode("append")
        .option("path", sink)
        .option("checkpointLocation", str(tmp_path / "ck"))
        .trigger(availableNow=True)
        .start()
    )
    q.awaitTermination()
    assert q.exception() is None
    res, rejects = split(spark.read.parquet(sink))
    assert rejects.count() == 0
    s = (
        res.toPandas()
        .sort_values("revision")
        .drop_duplicates(["k", "window_start", "window_end"], keep="last")
    )
    s = ordered(s)
    want = ordered(local(pdf, "k", "t", AGGS, **hopping).results)
    # the stream emits the windows its per-key watermark closed: all but each key's last
    want = want.merge(s[["k", "window_start", "window_end"]], how="inner")
    assert len(s) == len(want) > 40
    pd.testing.assert_frame_equal(s[want.columns[:3]], want[want.columns[:3]])
    np.testing.assert_allclose(s[OUT], want[OUT], rtol=1e-12)
