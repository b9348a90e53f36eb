"""Spark suite: windowagg.spark against Spark's own sliding windows, on local[2].

Data (as in guides/spark-and-peers.md §2.2): N out-of-order events over 100 keys
(key int, event_time timestamp, value ~ Gamma(2, 10)), spread over 24 h with +-30 s jitter,
seed 42 (N = 1,000,000; 200,000 with --quick). Window 10 minutes sliding every 10 seconds.

Batch (DataFrame cached; interleaved, medians, ratios and load average): see
``benchmarks/bench_spark_batch.py`` (hopping vs ``F.window``, exact p99 vs
``percentile_approx``, per-event vs ``rangeBetween``, a user monoid vs Spark's ``first``).

Streaming (``--stream-events``, default all N events, in arrival order): per-event
out-of-order windows ``(t - 10 min, t]`` of max/sum/count over 100 keys, ``availableNow``,
``noop`` sink, local[2] with the session's shuffle partitions (one per core). Micro-batch
sizes: the whole input (one file), N/10 and N/50 events (``maxFilesPerTrigger=1`` over 10 /
50 files); ``applyInPandasWithState`` (the default) and ``transformWithStateInPandas``;
hopping windows once. One untimed query first (JIT, Python workers). Reported: events/s
end to end (query start, i.e. before the first read, to the last commit, first
micro-batch included), events/s after the first micro-batch, and Spark's ``durationMs`` of
the largest micro-batch with the state operator's ``allUpdatesTimeMs``/``commitTimeMs``.

Run: ``.venv/bin/python -m benchmarks spark [--quick] [--repeats R]
[--stream-only] [--stream-events N]``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from benchmarks.bench_spark_batch import batch_ratios, batch_suite
from benchmarks.harness import print_table, save_results
from benchmarks.spark_data import bench_session, generate, hopping_frame

SIZE, SLIDE = "10 minutes", "10 seconds"
APWS = "applyInPandasWithState"
TWS = "transformWithStateInPandas"


def noop(df: Any) -> None:
    df.write.format("noop").mode("overwrite").save()


STREAM_AGGS = ["max(value)", "sum(value)", "count"]


def stream_run(spark: Any, src: Path, ck: Path, per_trigger: int, **kw: Any) -> dict[str, Any]:
    """One availableNow query over the files in *src*; events/s and Spark's progress."""
    from windowagg.spark.streaming import stream_window_agg

    sdf = (
        spark.readStream.schema("key int, event_time timestamp_ntz, value double")
        .option("maxFilesPerTrigger", per_trigger)
        .parquet(str(src))
    )
    out = stream_window_agg(
        sdf, "key", "event_time", STREAM_AGGS, max_out_of_orderness="60 seconds", **kw
    )
    t1 = time.perf_counter()
    q = (
        out.writeStream.format("noop")
        .outputMode("append")
        .option("checkpointLocation", str(ck))
        .trigger(availableNow=True)
        .start()
    )
    q.awaitTermination()
    total = time.perf_counter() - t1  # query start (first read) to the last commit
    prog = [p for p in q.recentProgress if p["numInputRows"] > 0]
    rows_in = sum(p["numInputRows"] for p in prog)
    later = prog[1:]
    later_s = sum(p["durationMs"]["triggerExecution"] for p in later) / 1000
    later_rows = sum(p["numInputRows"] for p in later)
    big = max(prog, key=lambda p: p["numInputRows"]) if prog else None
    ops = big.get("stateOperators", []) if big else []
    return {
        "events": rows_in,
        "micro_batches": len(prog),
        "seconds": total,
        "events_per_s": rows_in / total,
        "events_per_s_after_first_batch": later_rows / later_s if later_s else None,
        "first_batch_s": prog[0]["durationMs"]["triggerExecution"] / 1000 if prog else None,
        "largest_batch_ms": dict(big["durationMs"]) if big else None,
        "largest_batch_state_ms": (
            {k: ops[0].get(k) for k in ("allUpdatesTimeMs", "commitTimeMs", "numRowsTotal")}
            if ops
            else None
        ),
    }


def stream_suite(
    spark: Any, pdf: pd.DataFrame, work: Path, ns: int, quick: bool, rows: list[list[Any]]
) -> dict[str, Any]:
    """Per-event out-of-order windows over *ns* events in arrival order, several micro-batch
    sizes, both stateful APIs; hopping windows once. ``noop`` sink, availableNow."""
    print(f"streaming: {ns:,} events, per-event windows (t - 10 min, t], 100 keys")
    sources: dict[int, Path] = {}

    def source(files: int) -> Path:
        if files not in sources:
            src = work / f"stream-{files}"
            src.mkdir()
            # arrival order = generation order (event times jittered +-30 s)
            for i, part_idx in enumerate(np.array_split(np.arange(ns), files)):
                p = src / f"part-{i:03d}.parquet"
                pdf.iloc[part_idx].to_parquet(p, index=False, coerce_timestamps="us")
                os.utime(p, (1_000_000 + i, 1_000_000 + i))
            sources[files] = src
        return sources[files]

    per_event = {"size": SIZE}
    runs: list[tuple[str, int, dict[str, Any]]] = [
        (f"{APWS}, whole input in one micro-batch", 1, {**per_event, "api": APWS}),
        (f"{APWS}, {ns // 5:,} events per micro-batch", 5, {**per_event, "api": APWS}),
        (f"{APWS}, {ns // 10:,} events per micro-batch", 10, {**per_event, "api": APWS}),
        (f"{APWS}, {ns // 50:,} events per micro-batch", 50, {**per_event, "api": APWS}),
        (f"{TWS}, whole input in one micro-batch", 1, {**per_event, "api": TWS}),
        (f"{TWS}, {ns // 10:,} events per micro-batch", 10, {**per_event, "api": TWS}),
        (
            f"{APWS}, hopping 10 min / 10 s, {ns // 10:,} per micro-batch",
            10,
            {"size": SIZE, "slide": SLIDE, "api": APWS},
        ),
    ]
    if quick:
        runs = [runs[0], runs[2], runs[4]]
    # one untimed query first: JIT of the stateful operator's code paths, Python workers
    stream_run(spark, source(10), work / "ck-warm", 1, **per_event, api=APWS)
    stats: dict[str, Any] = {}
    for i, (label, files, kw) in enumerate(runs):
        st = stream_run(spark, source(files), work / f"ck-{i}", 1, **kw)
        stats[label] = st
        after = st["events_per_s_after_first_batch"]
        print(
            f"  {label}: {st['events']:,} events, {st['micro_batches']} micro-batches, "
            f"{st['seconds']:.1f} s = {st['events_per_s']:,.0f} ev/s end to end"
            + (f"; after the first micro-batch {after:,.0f} ev/s" if after else "")
            + f"; largest micro-batch {st['largest_batch_ms']}, state {st['largest_batch_state_ms']}",
            flush=True,
        )
        rows.append([f"streaming {label} (events/s end to end)", st["events_per_s"], 1])
    return stats


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks spark")
    ap.add_argument("--quick", action="store_true", help="200k events, 1 repeat")
    ap.add_argument("--repeats", type=int, default=None)
    ap.add_argument("--events", type=int, default=None)
    ap.add_argument(
        "--stream-events", type=int, default=1_000_000, help="events for the streaming runs"
    )
    ap.add_argument("--stream-only", action="store_true", help="only the streaming runs")
    args = ap.parse_args(argv)
    n = args.events or (200_000 if args.quick else 1_000_000)
    repeats = args.repeats or (1 if args.quick else 3)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)

    t0 = time.perf_counter()
    spark = bench_session("windowagg-bench")
    print(f"Spark session: {time.perf_counter() - t0:.1f} s; {n:,} events, repeats {repeats}")
    work = Path(tempfile.mkdtemp(prefix="wa-bench-spark-"))
    pdf = generate(n)
    df = hopping_frame(spark, pdf, work)
    results: dict[str, Any] = {"events": n, "repeats": repeats, "note": "shared 2-core VM, noisy"}
    rows: list[list[Any]] = []
    if args.stream_only:
        results["streaming"] = stream_suite(
            spark, pdf, work, min(n, args.stream_events), args.quick, rows
        )
        results["table"] = print_table(
            f"Spark streaming, {min(n, args.stream_events):,} events, 100 keys, local[2]",
            ["job", "events/s end to end", "runs"],
            rows,
        )
        save_results("spark_stream" + ("_quick" if args.quick else ""), results)
        shutil.rmtree(work, ignore_errors=True)
        spark.stop()
        return 0

    # ---------------------------------------------------------------- batch (interleaved)
    batch = batch_suite(spark, df, repeats, args.quick, rows)
    results.update(batch)
    ratio_rows = batch_ratios(batch)
    # ---------------------------------------------------------------- streaming
    stream_stats = stream_suite(spark, pdf, work, min(n, args.stream_events), args.quick, rows)
    results["streaming"] = stream_stats

    table = print_table(
        f"Spark suite, {n:,} events, 100 keys, local[2] (median seconds; noisy shared VM)",
        ["job", "seconds (or events/s)", "runs"],
        rows,
    )
    results["table"] = table
    for label, st in stream_stats.items():
        ratio_rows.append(
            [f"streaming {label}: events/s end to end", st["events_per_s"], ">= 100k/s"]
        )
    results["ratios"] = print_table(
        "Ratios measured in the same run", ["comparison", "value", "target"], ratio_rows
    )
    save_results("spark" + ("_quick" if args.quick else ""), results)
    shutil.rmtree(work, ignore_errors=True)
    spark.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
