"""Streaming hopping windows: windowagg (the batch engine + deltas state) vs Spark ``F.window``.

Data: N events over 100 keys (key int, event_time timestamp_ntz, value ~ Gamma(2, 10)),
one event per key every ~10 s on average, event times jittered +-20 s, written in arrival
order as files of ``--batch`` events (one micro-batch each: ``maxFilesPerTrigger=1``).
Window 10 minutes sliding every 10 seconds; max, sum, count, mean. Both contenders run
``availableNow`` into the ``noop`` sink, interleaved (windowagg, Spark, windowagg, Spark...)
on the same session (local[2]); reported: median seconds per query, events/s, the ratio.

* windowagg: ``stream_window_agg(..., max_out_of_orderness="30 seconds")`` with
  ``transformWithStateInPandas`` (state as deltas) and ``applyInPandasWithState``.
* Spark: ``withWatermark("event_time", "30 seconds").groupBy(key, F.window(...)).agg(...)``
  in append mode (each window emitted once the watermark passes its end, as windowagg's
  ``revision`` 0; Spark drops late rows silently).
* Flink SQL (``--flink PYTHON``: PyFlink's interpreter, see ``benchmarks/flink_sql.py``):
  ``HOP`` over the same events as one headerless CSV (``k,ts_micros,v``, arrival order),
  watermark ``ts - 30 s``, in-memory (``hashmap``) and RocksDB state; one bounded job over
  all events (no micro-batches), timed from submission to completion (JVM start excluded),
  interleaved with the Spark contenders.
* Fixed cost per micro-batch at 100 keys: the same query over files of one event per key
  (100 events per micro-batch); median of Spark's ``triggerExecution`` per micro-batch.

Run: ``python -m benchmarks.bench_spark_stream [--events N] [--batch B] [--repeats R]``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

SIZE, SLIDE = "10 minutes", "10 seconds"
KEYS = 100
AGGS = ["max(value)", "sum(value)", "count", "mean(value)"]


def write_files(folder: Path, n: int, per_file: int, seed: int = 7) -> int:
    """*n* events in arrival order as parquet files of *per_file* events (mtimes increase)."""
    rng = np.random.default_rng(seed)
    folder.mkdir(parents=True)
    arrival = np.sort(rng.uniform(0, n * 10 / KEYS, n))  # seconds: ~1 event/key/10 s
    t = np.round(arrival + rng.uniform(-20, 20, n), 3)
    pdf = pd.DataFrame(
        {
            "key": rng.integers(0, KEYS, n).astype("int32"),
            "event_time": pd.to_datetime(
                (t * 1e6).astype("int64") + pd.Timestamp("2024-01-01").value // 1000,
                unit="us",
                utc=True,
            ),
            "value": rng.gamma(2.0, 10.0, n),
        }
    )
    files = 0
    for i, lo in enumerate(range(0, n, per_file)):
        p = folder / f"part-{i:05d}.parquet"
        pdf.iloc[lo : lo + per_file].to_parquet(p, index=False, coerce_timestamps="us")
        os.utime(p, (1_000_000 + i, 1_000_000 + i))
        files += 1
    return files


def run(spark: Any, src: Path, ck: Path, who: str) -> dict[str, Any]:
    from pyspark.sql import functions as F

    sdf = (
        spark.readStream.schema("key int, event_time timestamp, value double")
        .option("maxFilesPerTrigger", 1)
        .parquet(str(src))
    )
    if who == "spark":
        out = (
            sdf.withWatermark("event_time", "30 seconds")
            .groupBy("key", F.window("event_time", SIZE, SLIDE))
            .agg(F.max("value"), F.sum("value"), F.count("*"), F.avg("value"))
        )
    else:
        from windowagg.spark.streaming import stream_window_agg

        out = stream_window_agg(
            sdf, "key", "event_time", AGGS, size=SIZE, slide=SLIDE,
            max_out_of_orderness="30 seconds", api=who,
        )  # fmt: skip
    t0 = time.perf_counter()
    q = (
        out.writeStream.format("noop")
        .outputMode("append")
        .option("checkpointLocation", str(ck))
        .trigger(availableNow=True)
        .start()
    )
    q.awaitTermination()
    seconds = time.perf_counter() - t0
    prog = [p for p in q.recentProgress if p["numInputRows"] > 0]
    per_batch = [p["durationMs"]["triggerExecution"] / 1000 for p in prog]
    events = sum(p["numInputRows"] for p in prog)
    return {
        "seconds": seconds,
        "events": events,
        "micro_batches": len(prog),
        "median_batch_s": float(np.median(per_batch)) if per_batch else None,
    }


def write_csv(folder: Path, out: Path) -> None:
    """The events of *folder* (arrival order) as Flink's headerless CSV ``k,ts_micros,v``."""
    pdf = pd.concat([pd.read_parquet(p) for p in sorted(folder.glob("*.parquet"))])
    micros = pdf["event_time"].astype("datetime64[us, UTC]").astype("int64")
    pd.DataFrame({"k": pdf["key"], "ts": micros, "v": pdf["value"]}).to_csv(
        out, header=False, index=False
    )


def run_flink(python: str, csv: Path, state: str) -> dict[str, Any]:
    """One Flink SQL HOP job over *csv* (``benchmarks/flink_sql.py`` in PyFlink's venv)."""
    script = Path(__file__).with_name("flink_sql.py")
    cmd = [python, str(script), "--csv", str(csv), "--query", "hop", "--state", state,
           "--delay-s", "30", "--size-s", "600", "--slide-s", "10", "--repeats", "1"]  # fmt: skip
    done = subprocess.run(cmd, check=True, capture_output=True, text=True)
    lines = [json.loads(x) for x in done.stdout.splitlines() if x.startswith("{")]
    return {"seconds": float(lines[-1]["seconds"]), "median_batch_s": float("nan")}


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--events", type=int, default=200_000)
    ap.add_argument("--batch", type=int, default=10_000)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--fixed-batches", type=int, default=20)
    ap.add_argument("--flink", default=None, help="PyFlink's python: add Flink SQL HOP")
    args = ap.parse_args(argv)
    from windowagg.spark import session

    print("loadavg before:", Path("/proc/loadavg").read_text().strip())
    spark = session("local[2]", "bench-spark-stream", driver_memory="3g")
    work = Path(tempfile.mkdtemp(prefix="windowagg-bench-stream-"))
    try:
        src = work / "in"
        files = write_files(src, args.events, args.batch)
        small = work / "small"
        write_files(small, KEYS * args.fixed_batches, KEYS, seed=8)
        who = ["transformWithStateInPandas", "applyInPandasWithState", "spark"]
        flink = ["flink-hashmap", "flink-rocksdb"] if args.flink else []
        if args.flink:
            write_csv(src, work / "events.csv")
        run(spark, small, work / "ck-warm", "transformWithStateInPandas")  # untimed warm-up
        run(spark, small, work / "ck-warm2", "spark")
        got: dict[str, list[dict[str, Any]]] = {w: [] for w in who + flink}
        fixed: dict[str, list[dict[str, Any]]] = {w: [] for w in who}
        for r in range(args.repeats):  # interleaved
            for w in who:
                got[w].append(run(spark, src, work / f"ck-{w}-{r}", w))
                fixed[w].append(run(spark, small, work / f"ck-small-{w}-{r}", w))
            for w in flink:
                got[w].append(run_flink(args.flink, work / "events.csv", w.split("-")[1]))
        print(
            f"\n{args.events:,} events, {KEYS} keys, hopping {SIZE}/{SLIDE}, "
            f"{files} micro-batches of {args.batch:,} events, medians of {args.repeats}"
        )
        med = {w: float(np.median([x["seconds"] for x in got[w]])) for w in who + flink}
        fix = {w: float(np.median([x["median_batch_s"] for x in fixed[w]])) for w in who}
        print(f"{'contender':32} {'seconds':>8} {'events/s':>10} {'Spark/this':>10} "
              f"{'s per 100-event batch':>22}")  # fmt: skip
        for w in who + flink:
            print(
                f"{w:32} {med[w]:8.1f} {args.events / med[w]:10,.0f} "
                f"{med['spark'] / med[w]:10.2f} {fix.get(w, float('nan')):22.3f}"
            )
    finally:
        spark.stop()
        shutil.rmtree(work, ignore_errors=True)
        print("loadavg after:", Path("/proc/loadavg").read_text().strip())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
