"""Where a streaming micro-batch's time goes: windowagg vs Spark's floor for the operator.

Same data and session as :mod:`benchmarks.bench_spark_stream` (100 keys, hopping
10 min / 10 s, files of ``--batch`` events, one per micro-batch, local[2], the session's
shuffle partitions for every contender). Contenders, interleaved, ``--repeats`` times:

* ``windowagg``: ``stream_window_agg(..., api="applyInPandasWithState")``;
* ``noop-apws``: the same ``groupBy("key").applyInPandasWithState`` operator with a
  function that reads each key's rows and returns nothing, stores no state: Spark's own
  cost for this operator (shuffle, Arrow -> pandas per key, state store commit, planning);
* ``spark``: ``F.window`` + ``withWatermark`` (append).

``--mode over`` probes the per-event bench instead (:func:`benchmarks.bench_spark_stream.
write_over_files`, ``--density`` events per window, one key per ``10 * density`` events):
``windowagg`` (per-event windows, ``emit="watermark"``), ``noop-apws`` as above, and
``echo-apws``: the same operator storing a state value of ``--state-bytes`` per key and
returning the packed row windowagg returns (one window per row read, through the same
``unpack``), with no windows computed: Spark's cost for the input, state and output
windowagg has, the floor under any engine on this operator.

Printed per contender: the medians over the warm micro-batches (the first micro-batch of
each query, which pays planning and worker start, is left out) of Spark's progress
``durationMs`` (``triggerExecution``, ``addBatch``, ``queryPlanning``) and of the state
operator's ``allUpdatesTimeMs`` and ``commitTimeMs``.

Run: ``python -m benchmarks.probe_spark_stream [--events N] [--batch B] [--repeats R]
[--mode over --density D]``.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from benchmarks.bench_spark_stream import (
    AGGS,
    OVER_AGGS,
    SIZE,
    SLIDE,
    over_query,
    write_files,
    write_over_files,
)

FIELDS = ["triggerExecution", "addBatch", "queryPlanning"]
STATE = ["allUpdatesTimeMs", "commitTimeMs"]


def echo(sdf: Any, state_bytes: int) -> Any:
    """``echo-apws``: windowagg's operator, state size and output, without its windows."""
    from pyspark.sql import types as T
    from pyspark.sql.streaming.state import GroupState, GroupStateTimeout

    from windowagg.aggs import parse_aggs
    from windowagg.spark.streaming import APWS_STATE_SCHEMA, _one_row, packed_schema, unpack

    aggs = parse_aggs(OVER_AGGS)
    blob = bytes(state_bytes)

    def fn(
        key: tuple[Any, ...], pdfs: Iterator[pd.DataFrame], state: GroupState
    ) -> Iterator[pd.DataFrame]:
        n = sum(len(p) for p in pdfs)
        state.update((blob,))
        if n:
            ends = np.arange(n, dtype=np.int64)
            cols: dict[str, Any] = {"start": ends, "end": ends, "revision": None}
            cols.update({a.alias: np.ones(n) for a in aggs})
            yield _one_row(["key"], list(key), aggs, cols, n)

    schema = packed_schema([T.StructField("key", T.IntegerType(), True)], aggs)
    packed = sdf.groupBy("key").applyInPandasWithState(
        fn, schema, APWS_STATE_SCHEMA, "append", GroupStateTimeout.NoTimeout
    )
    return unpack(packed, ["key"], aggs)


def query(spark: Any, src: Path, who: str, args: Any = None) -> Any:
    from pyspark.sql import functions as F
    from pyspark.sql import types as T
    from pyspark.sql.streaming.state import GroupState, GroupStateTimeout

    sdf = (
        spark.readStream.schema("key int, event_time timestamp, value double")
        .option("maxFilesPerTrigger", 1)
        .parquet(str(src))
    )
    over = args is not None and args.mode == "over"
    if who == "echo-apws":
        return echo(sdf, args.state_bytes)
    if who == "windowagg" and over:
        return over_query(spark, src, args.density, "applyInPandasWithState")
    if who == "spark":
        return (
            sdf.withWatermark("event_time", "30 seconds")
            .groupBy("key", F.window("event_time", SIZE, SLIDE))
            .agg(F.max("value"), F.sum("value"), F.count("*"), F.avg("value"))
        )
    if who == "noop-apws":

        def noop(
            key: tuple[Any, ...], pdfs: Iterator[pd.DataFrame], state: GroupState
        ) -> Iterator[pd.DataFrame]:
            for _ in pdfs:  # read the rows, as windowagg does
                pass
            return iter([])

        schema = T.StructType([T.StructField("key", T.IntegerType())])
        state = T.StructType([T.StructField("s", T.BinaryType())])
        return sdf.groupBy("key").applyInPandasWithState(
            noop, schema, state, "append", GroupStateTimeout.NoTimeout
        )
    from windowagg.spark.streaming import stream_window_agg

    return stream_window_agg(
        sdf, "key", "event_time", AGGS, size=SIZE, slide=SLIDE,
        max_out_of_orderness="30 seconds", api="applyInPandasWithState",
    )  # fmt: skip


def run(spark: Any, src: Path, ck: Path, who: str, args: Any = None) -> dict[str, Any]:
    t0 = time.perf_counter()
    q = (
        query(spark, src, who, args)
        .writeStream.format("noop")
        .outputMode("append")
        .option("checkpointLocation", str(ck))
        .trigger(availableNow=True)
        .start()
    )
    q.awaitTermination()
    seconds = time.perf_counter() - t0
    prog = [p for p in q.recentProgress if p["numInputRows"] > 0][1:]  # warm batches
    rows: dict[str, list[float]] = {k: [] for k in FIELDS + STATE + ["shuffle"]}
    for p in prog:
        for k in FIELDS:
            rows[k].append(p["durationMs"].get(k, 0) / 1000)
        ops = p["stateOperators"]
        for k in STATE:
            rows[k].append(sum(o.get(k, 0) for o in ops) / 1000)
        rows["shuffle"].append(float(ops[0].get("numShufflePartitions", 0)) if ops else 0.0)
    return {"seconds": seconds, **rows}


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--events", type=int, default=60_000)
    ap.add_argument("--batch", type=int, default=10_000)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--mode", choices=["hop", "over"], default="hop")
    ap.add_argument("--density", type=int, default=100, help="over: events per window")
    ap.add_argument("--state-bytes", type=int, default=3_500, help="echo-apws: per key")
    args = ap.parse_args(argv)
    from windowagg.spark import session

    print("loadavg before:", Path("/proc/loadavg").read_text().strip())
    spark = session("local[2]", "probe-spark-stream", driver_memory="3g")
    print("spark.sql.shuffle.partitions =", spark.conf.get("spark.sql.shuffle.partitions"))
    work = Path(tempfile.mkdtemp(prefix="windowagg-probe-stream-"))
    over = args.mode == "over"
    who = ["windowagg", "noop-apws", "echo-apws"] if over else ["windowagg", "noop-apws", "spark"]
    try:
        src = work / "in"
        if over:
            keys = write_over_files(src, args.events, args.batch, args.density)
        else:
            keys = 100
            write_files(src, args.events, args.batch)
        for w in who:  # untimed warm-up (worker start, imports)
            run(spark, src, work / f"ck-warm-{w}", w, args)
        got: dict[str, list[dict[str, Any]]] = {w: [] for w in who}
        for r in range(args.repeats):  # interleaved
            for w in who:
                got[w].append(run(spark, src, work / f"ck-{w}-{r}", w, args))
                print(f"  run {r}: {w} {got[w][-1]['seconds']:.2f} s", flush=True)
        print(f"\nmedian seconds per warm micro-batch of {args.batch:,} events, {keys} keys, "
              f"{args.repeats} interleaved repeats")  # fmt: skip
        head = " ".join(f"{k:>17}" for k in FIELDS + STATE)
        print(f"{'contender':10} {head} {'query s':>8} {'partitions':>10}")
        for w in who:
            med = {
                k: float(np.median([v for x in got[w] for v in x[k]]))
                for k in FIELDS + STATE + ["shuffle"]
            }
            q = float(np.median([x["seconds"] for x in got[w]]))
            cells = " ".join(f"{med[k]:17.3f}" for k in FIELDS + STATE)
            print(f"{w:10} {cells} {q:8.1f} {med['shuffle']:10.0f}")
    finally:
        spark.stop()
        shutil.rmtree(work, ignore_errors=True)
        print("loadavg after:", Path("/proc/loadavg").read_text().strip())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
