"""Decayed aggregations give the same answers from every front end: ``windowagg.pandas``,
Spark batch and Spark streaming (final revisions), on one small out-of-order frame with
duplicate times; the whole history (no size) and hopping windows. One Spark test."""

from __future__ import annotations

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


def test_pandas_spark_batch_and_streaming_agree(
    spark, tmp_path, decay_frame, by_window, arrival_files, run_to_end
):
    from windowagg.pandas import window_agg as local
    from windowagg.spark import stream_window_agg
    from windowagg.spark import window_agg as batch

    pdf = decay_frame[["k", "t", "v"]]
    sdf = spark.createDataFrame(pdf)
    hopping = {"size": "1 hour", "slide": "20 minutes"}
    for shape in ({}, hopping):
        want = by_window(local(pdf, "k", "t", AGGS, **shape).results, OUT)
        got = by_window(batch(sdf, "k", "t", AGGS, **shape).results.toPandas(), OUT)
        assert len(want) == (len(pdf) if not shape else len(got)) and len(got) > 50
        pd.testing.assert_frame_equal(got[want.columns[:3]], want[want.columns[:3]])
        np.testing.assert_allclose(got[OUT], want[OUT], rtol=1e-12)
    # streaming: parquet files in arrival order, the last revision of every window
    folder = tmp_path / "in"
    arrival_files(folder, [pdf.iloc[part] for part in np.array_split(np.arange(len(pdf)), 4)])
    stream = stream_window_agg(
        spark.readStream.schema("k int, t timestamp, v double")
        .option("maxFilesPerTrigger", 1)
        .parquet(str(folder)),
        "k",
        "t",
        AGGS,
        max_out_of_orderness="1 hour",
        **hopping,
    )
    drained = run_to_end(stream, tmp_path)
    assert len(drained.rejects) == 0
    s = drained.results.sort_values("revision").drop_duplicates(
        ["k", "window_start", "window_end"], keep="last"
    )
    s = by_window(s, OUT)
    want = by_window(local(pdf, "k", "t", AGGS, **hopping).results, OUT)
    # the stream emits the windows its per-key watermark closed: all but each key's last
    want = want.merge(s[["k", "window_start", "window_end"]], how="inner")
    assert len(s) == len(want) > 40
    pd.testing.assert_frame_equal(s[want.columns[:3]], want[want.columns[:3]])
    np.testing.assert_allclose(s[OUT], want[OUT], rtol=1e-12)


def test_a_mean_long_after_its_newest_event_is_not_null(spark):
    """Issue 36: a window ending 1,440 half-lives after its newest event had a null
    ``ewm_mean`` in Spark (S and W scaled to the end underflowed: 0 / 0); it is pandas'
    ``ewm(times=)`` answer, as from ``windowagg.pandas`` (the same per-key function runs
    Spark batch and streaming)."""
    from windowagg.spark import window_agg as batch

    pdf = pd.DataFrame(
        {
            "k": ["a", "a"],
            "t": pd.to_datetime([0, 1800], unit="s", utc=True),
            "v": [3.0, 5.0],
        }
    )
    want = pdf["v"].ewm(halflife=pd.Timedelta("1min"), times=pdf["t"]).mean().iloc[-1]
    aggs = ["ewm_mean(v, half_life=1min)", "decayed_count(half_life=80s)"]
    got = batch(spark.createDataFrame(pdf), "k", "t", aggs, size="1 day", slide="1 day")
    rows = got.results.toPandas()
    assert rows["ewm_mean_v"].tolist() == [pytest.approx(want, rel=2**-50, abs=0)]
    # the count as of the end: 2^-1057.5 + 2^-1080, a subnormal, within one rounding
    assert rows["decayed_count"].tolist() == [pytest.approx(2**-1057.5, rel=2**-16, abs=0)]


def test_a_whole_history_stream_keeps_bounded_state_and_the_batch_answers(
    spark, tmp_path, decay_frame, by_window, arrival_files, run_to_end
):
    """``stream_window_agg`` with no size (issue 37's whole-history layout: one partial per
    key and aggregation plus the events a late event can still revise): the final revision
    of every emitted window equals ``windowagg.pandas``; the state holds a few rows per key
    (the statestore reader); polynomial decay with no size is refused when the query is
    built (its partial is its events)."""
    from windowagg.errors import ArgumentError
    from windowagg.pandas import window_agg as local
    from windowagg.spark import stream_window_agg

    aggs = [*AGGS[:3], "decayed_p50(v, half_life=1h) as med"]
    out = ["ewm_mean_v", "s1h", "decayed_count", "med"]
    pdf = decay_frame[["k", "t", "v"]]
    folder = tmp_path / "in"
    arrival_files(folder, [pdf.iloc[part] for part in np.array_split(np.arange(len(pdf)), 4)])
    src = (
        spark.readStream.schema("k int, t timestamp, v double")
        .option("maxFilesPerTrigger", 1)
        .parquet(str(folder))
    )
    with pytest.raises(ArgumentError, match="with no size keeps every event"):
        stream_window_agg(src, "k", "t", AGGS, max_out_of_orderness="1 hour")
    drained = run_to_end(
        stream_window_agg(src, "k", "t", aggs, max_out_of_orderness="1 hour"), tmp_path
    )
    assert len(drained.rejects) == 0
    s = drained.results.sort_values("revision", kind="stable").drop_duplicates(
        ["k", "window_start", "window_end"], keep="last"
    )
    s = by_window(s, out)
    want = by_window(local(pdf, "k", "t", aggs).results, out).drop_duplicates(
        ["k", "window_start", "window_end"]
    )
    want = want.merge(s[["k", "window_start", "window_end"]], how="inner")
    assert len(s) == len(want) > 200
    pd.testing.assert_frame_equal(s[want.columns[:3]], want[want.columns[:3]])
    np.testing.assert_allclose(s[out[:3]], want[out[:3]], rtol=1e-9)
    assert s["med"].tolist() == want["med"].tolist()
    rows = (
        spark.read.format("statestore")
        .option("stateVarName", "pieces")
        .load(drained.checkpoint)
        .toPandas()
    )
    per_key = rows["key"].map(lambda g: g["k"]).value_counts()
    assert len(per_key) == 3 and per_key.max() <= 4  # head, 1-2 chunks, the summary
