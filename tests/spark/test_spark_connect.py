"""The README's batch call and docs/spark.md's streaming call through Spark Connect.

``windowagg.spark.session(remote="local[2]")`` starts a local Spark Connect server
(PySpark's ``SparkSession.builder.remote("local[2]")``), whose Python workers must import
windowagg: ``session`` points them at this interpreter. The server lives in the process
that starts it and would take over a classic SparkContext already running there, so the
calls run in a subprocess of their own (with ``PYSPARK_PYTHON`` unset, as a user's shell
has it): the test session's shared SparkSession (``tests/spark/conftest.py``) is never
touched. The answers are compared with ``windowagg.pandas.window_agg`` here.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

pytest.importorskip("pyspark")

ROWS = [
    ("JFK", "2013-01-01T05:40:00", 2.0),
    ("JFK", "2013-01-01T06:05:00", -4.0),
    ("LGA", "2013-01-01T05:57:00", None),
    ("LGA", "2013-01-01T06:10:00", 11.0),
]
BATCH_AGGS = ["max(dep_delay)", "mean(dep_delay)", "p95(dep_delay)", "count"]
STREAM_AGGS = ["max(value)", "p95(value)", "count"]

SCRIPT = r"""
import datetime as dt, json, sys
from windowagg.spark import session, split, stream_window_agg, window_agg

base = sys.argv[1]
spark = session(remote="local[2]", driver_memory="1g")
out = {"session": type(spark).__module__ + "." + type(spark).__name__}

# the README's batch call
df = spark.createDataFrame(
    [("JFK", "2013-01-01T05:40:00", 2.0), ("JFK", "2013-01-01T06:05:00", -4.0),
     ("LGA", "2013-01-01T05:57:00", None), ("LGA", "2013-01-01T06:10:00", 11.0)],
    "origin string, dep_ts string, dep_delay double")
res = window_agg(df, keys="origin", time="dep_ts", size="3 hours", slide="10 minutes",
                 aggs=["max(dep_delay)", "mean(dep_delay)", "p95(dep_delay)", "count"])
out["batch"] = res.results.toPandas().to_json(orient="records", date_unit="us")
out["batch_rejects"] = res.rejects.toPandas()["reason"].tolist()

# docs/spark.md's streaming call (two files: two micro-batches)
schema = "key int, event_time timestamp, value double"
for part in range(2):
    spark.createDataFrame(
        [(k, dt.datetime(2024, 3, 1, 0, m), float(m * (k + 1)))
         for k in (1, 2) for m in range(part * 30, part * 30 + 30, 3)], schema
    ).write.mode("append").parquet(f"{base}/in")
sdf = spark.readStream.schema(schema).option("maxFilesPerTrigger", 1).parquet(f"{base}/in")
stream = stream_window_agg(sdf, "key", "event_time", ["max(value)", "p95(value)", "count"],
                           size="10 minutes", slide="5 minutes",
                           max_out_of_orderness="1 minute", allowed_lateness="30 seconds")
q = (stream.writeStream.format("parquet").outputMode("append")
     .option("path", f"{base}/out").option("checkpointLocation", f"{base}/ckpt")
     .trigger(availableNow=True).start())
q.awaitTermination()
assert q.exception() is None, q.exception()
results, rejects = split(spark.read.parquet(f"{base}/out"))
out["stream"] = results.toPandas().to_json(orient="records", date_unit="us")
out["stream_rejects"] = rejects.count()
print("RESULT " + json.dumps(out), flush=True)
spark.stop()
"""


def _frame(records: str, columns: list[str]) -> pd.DataFrame:
    got = pd.DataFrame(json.loads(records))
    for c in ("window_start", "window_end"):
        got[c] = pd.to_datetime(got[c], unit="us")
    return got[columns].sort_values(columns[:3]).reset_index(drop=True)


def _expected(df: pd.DataFrame, key: str, time: str, aggs: list[str], **kw: object) -> pd.DataFrame:
    from windowagg.pandas import window_agg

    res = window_agg(df, key, time, aggs, **kw).results
    for c in ("window_start", "window_end"):
        res[c] = pd.to_datetime(res[c], utc=True).dt.tz_localize(None).astype("datetime64[ns]")
    return res


@pytest.mark.spark
@pytest.mark.timeout(900)
def test_readme_batch_and_streaming_calls_through_spark_connect(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("PYSPARK_PYTHON", "SPARK_REMOTE")}
    proc = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(tmp_path)],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=840,
    )
    lines = [x for x in proc.stdout.splitlines() if x.startswith("RESULT ")]
    assert proc.returncode == 0 and lines, proc.stdout[-3000:] + proc.stderr[-5000:]
    got = json.loads(lines[-1][len("RESULT ") :])
    assert got["session"] == "pyspark.sql.connect.session.SparkSession"

    cols = ["origin", "window_start", "window_end", "max_dep_delay", "mean_dep_delay"]
    cols += ["p95_dep_delay", "count"]
    pdf = pd.DataFrame(ROWS, columns=["origin", "dep_ts", "dep_delay"])
    want = _expected(pdf, "origin", "dep_ts", BATCH_AGGS, size="3 hours", slide="10 minutes")
    batch = _frame(got["batch"], cols)
    assert len(batch) == len(want) > 0
    pd.testing.assert_frame_equal(
        batch, want[cols].sort_values(cols[:3]).reset_index(drop=True), check_dtype=False
    )
    assert got["batch_rejects"] == ["null value in 'dep_delay'"]

    events = pd.DataFrame(
        [
            (k, pd.Timestamp(2024, 3, 1, 0, m), float(m * (k + 1)))
            for part in range(2)
            for k in (1, 2)
            for m in range(part * 30, part * 30 + 30, 3)
        ],
        columns=["key", "event_time", "value"],
    )
    cols = ["key", "window_start", "window_end", "max_value", "p95_value", "count"]
    stream = _frame(got["stream"], [*cols, "revision"])
    assert (stream["revision"] == 0).all() and got["stream_rejects"] == 0
    want = _expected(events, "key", "event_time", STREAM_AGGS, size="10 minutes", slide="5 minutes")
    # the stream emits the windows its watermark closed: the batch's, but for the last ones
    want = want[want["window_end"] <= stream["window_end"].max()]
    assert len(stream) == len(want) > 0
    pd.testing.assert_frame_equal(
        stream[cols], want[cols].sort_values(cols[:3]).reset_index(drop=True), check_dtype=False
    )


def test_session_refuses_master_and_remote_together() -> None:
    # no JVM starts: the arguments are checked first
    from windowagg.errors import ArgumentError
    from windowagg.spark import session

    with pytest.raises(ArgumentError, match=r"master='local\[4\]' or remote='local\[2\]'"):
        session("local[4]", remote="local[2]")


def test_connect_client_missing_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    from windowagg.errors import MissingExtraError
    from windowagg.spark import session

    monkeypatch.setitem(sys.modules, "zstandard", None)  # import zstandard now fails
    with pytest.raises(MissingExtraError, match=r"'zstandard': pip install 'windowagg\[connect\]'"):
        session(remote="local[2]")
