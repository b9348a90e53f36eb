"""windowagg.spark streaming on a real local SparkSession: availableNow results equal the
batch results (both stateful APIs), and a query stopped mid-run and restarted from its
checkpoint emits every window exactly once."""

from __future__ import annotations

import os
import time

import numpy as np
import pandas as pd
import pytest

pytestmark = pytest.mark.spark

pyspark = pytest.importorskip("pyspark")

AGGS = ["max(value)", "sum(value)", "count", "p95(value)"]
OOO = 60  # seconds of max out-of-orderness; the jitter below stays well inside it


def write_stream_input(folder, n=8000, files=12, keys=3, seed=9):
    """Files of events in arrival order (mtime increasing), event times jittered +-20 s."""
    rng = np.random.default_rng(seed)
    t = np.sort(rng.integers(0, 4 * 3600, n)) + rng.integers(-20, 20, n)
    pdf = pd.DataFrame(
        {
            "key": pd.array(rng.integers(0, keys, n), dtype="Int32"),
            "t": pd.to_datetime(t * 1_000_000, unit="us", utc=True),
            "value": rng.gamma(2.0, 10.0, n).round(2),
        }
    )
    pdf.loc[5, "key"] = pd.NA  # a null key: must come out as a reject
    os.makedirs(folder, exist_ok=True)
    for i, part in enumerate(np.array_split(np.arange(n), files)):
        p = os.path.join(folder, f"part-{i:03d}.parquet")
        pdf.iloc[part].to_parquet(
            p, index=False, coerce_timestamps="us", allow_truncated_timestamps=True
        )
        os.utime(p, (1_000_000 + i, 1_000_000 + i))
    return pdf


def closed_batch_windows(spark, folder, pdf):
    """Batch windows that the per-key watermark (max t - OOO) has closed by the end."""
    from windowagg.spark import window_agg

    res = window_agg(
        spark.read.parquet(folder), "key", "t", AGGS, size="10 minutes", slide="1 minute"
    )
    b = res.results.toPandas()
    wm = pdf.dropna(subset=["key"]).groupby("key")["t"].max().dt.tz_localize(None) - pd.Timedelta(
        seconds=OOO
    )
    b = b[b["window_end"] <= b["key"].map(wm)]
    return b.sort_values(["key", "window_start"]).reset_index(drop=True)


def start_query(spark, folder, sink, ckpt, api, trigger):
    from windowagg.spark import stream_window_agg

    sdf = (
        spark.readStream.schema("key int, t timestamp, value double")
        .option("maxFilesPerTrigger", 2)
        .parquet(folder)
    )
    out = stream_window_agg(
        sdf,
        "key",
        "t",
        AGGS,
        size="10 minutes",
        slide="1 minute",
        max_out_of_orderness=f"{OOO} seconds",
        api=api,
    )
    w = out.writeStream.format("parquet").outputMode("append")
    w = w.option("path", sink).option("checkpointLocation", ckpt)
    return w.trigger(**trigger).start()


def read_sink(spark, sink):
    from windowagg.spark import split

    res, rej = split(spark.read.parquet(sink))
    res = res.toPandas().sort_values(["key", "window_start"]).reset_index(drop=True)
    res["key"] = res["key"].astype("int32")
    return res, rej.toPandas()


def assert_same(stream, batch):
    cols = ["key", "window_start", "window_end", "max_value", "count", "p95_value"]
    assert len(stream) == len(batch) > 500
    pd.testing.assert_frame_equal(stream[cols], batch[cols], check_dtype=False)
    np.testing.assert_allclose(stream["sum_value"], batch["sum_value"], rtol=1e-12)


@pytest.mark.parametrize("api", ["transformWithStateInPandas", "applyInPandasWithState"])
def test_available_now_stream_equals_batch(spark, tmp_path, api):
    folder = str(tmp_path / "in")
    pdf = write_stream_input(folder)
    q = start_query(
        spark, folder, str(tmp_path / "out"), str(tmp_path / "ck"), api, {"availableNow": True}
    )
    q.awaitTermination()
    assert q.exception() is None
    stream, rejects = read_sink(spark, str(tmp_path / "out"))
    assert_same(stream, closed_batch_windows(spark, folder, pdf))
    assert rejects["reason"].tolist() == ["null key key"]


def test_stopped_and_restarted_query_emits_each_window_exactly_once(spark, tmp_path):
    folder = str(tmp_path / "in")
    pdf = write_stream_input(folder, seed=21)
    sink, ckpt = str(tmp_path / "out"), str(tmp_path / "ck")
    q = start_query(
        spark, folder, sink, ckpt, "transformWithStateInPandas", {"processingTime": "1 second"}
    )
    deadline = time.time() + 240
    while time.time() < deadline:  # let a few micro-batches commit, then stop mid-run
        done = [p for p in q.recentProgress if p["numInputRows"] > 0]
        if len(done) >= 2:
            break
        q.awaitTermination(0.5)
    q.stop()
    committed = len([p for p in q.recentProgress if p["numInputRows"] > 0])
    assert 2 <= committed < 6, "the first run should have stopped before the end of the input"
    q2 = start_query(
        spark, folder, sink, ckpt, "transformWithStateInPandas", {"availableNow": True}
    )
    q2.awaitTermination()
    assert q2.exception() is None
    assert sum(p["numInputRows"] for p in q2.recentProgress) > 0  # the restart did real work
    stream, rejects = read_sink(spark, sink)
    assert not stream.duplicated(["key", "window_start"]).any()
    assert_same(stream, closed_batch_windows(spark, folder, pdf))
    assert len(rejects) == 1


def test_packed_output_unpacks_to_the_combined_rows(spark):
    """The streaming operator's packed rows (arrays per key, one row per reject) unpack
    in the JVM to exactly the windows and rejects of ``KeyRunner.feed``, late events and
    bad values included."""
    from pyspark.sql import types as T

    from windowagg.spark.batch import make_spec
    from windowagg.spark.frames import KeyRunner
    from windowagg.spark.spec import parse_aggs
    from windowagg.spark.streaming import _Step, packed_schema, unpack

    aggs = parse_aggs(["max(value)", "sum(value)", "count"])
    spec = make_spec("10 seconds", None, None, 1, 0, "2 seconds", 0)
    t = pd.to_datetime(
        np.array([100, 103, 101, 90, 104, 104, 80, 106], dtype=np.int64) * 1_000_000,
        unit="us",
        utc=True,
    )
    pdf = pd.DataFrame(
        {"key": np.int32(7), "t": t, "value": [1.0, 2.0, np.nan, 4.0, 5.0, 6.0, 7.0, 8.0]}
    )
    step = _Step(["key"], "t", aggs, spec, "s")
    packed, _ = step((7,), iter([pdf]), None)
    key_field = T.StructField("key", T.IntegerType(), True)
    got = unpack(
        spark.createDataFrame(packed[0], schema=packed_schema([key_field], aggs)), ["key"], aggs
    ).toPandas()
    results, rejects = KeyRunner(["key"], "t", aggs, spec).feed(pdf)
    win = got[got["kind"] == "window"].reset_index(drop=True)
    rej = got[got["kind"] == "reject"].reset_index(drop=True)
    assert len(win) == len(results) == 5 and len(rej) == len(rejects) == 3
    assert win["key"].tolist() == [7] * 5 and rej["key"].isna().all()
    end = results["window_end"].dt.tz_localize(None)
    assert (win["window_end"] == end).all()
    assert (win["window_start"] == end - pd.Timedelta(seconds=10)).all()
    for c in ("max_value", "sum_value", "count"):
        assert win[c].tolist() == results[c].tolist()
    assert win["reason"].isna().all() and rej["window_end"].isna().all()
    assert rej["reason"].tolist() == rejects["reason"].tolist()
    assert rej["row"].tolist() == rejects["row"].tolist()
    ev = rejects["event_time"].dt.tz_localize(None)
    assert (rej["event_time"] == ev).all()
