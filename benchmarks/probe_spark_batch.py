"""How low can a Spark batch job behind a Python operator go? Floors under the two batch
targets of issue 12 that ``bench_spark_batch`` does not meet.

Same session and data as :mod:`benchmarks.bench_spark_batch` (local[2], the session's
shuffle partitions, Arrow batches of 10,000 rows): per-event ``(t - 10 min, t]``
max/sum/count over 10 keys at 10^4 events per window, and hopping 10 min / 10 s
max/sum/count/mean over 100 keys. Contenders, interleaved ``--repeats`` times after one
untimed run of each, every job forced with the ``noop`` sink:

* the Spark operator of the target (``rangeBetween`` with the segment tree; ``F.window``);
* ``windowagg``: ``windowagg.spark.window_agg``;
* ``groupBy + applyInArrow``: the prepared columns through the shuffle, sort and per-key
  grouping of ``groupBy(key).applyInArrow`` (windowagg's operator until 2026-11-27), a
  function that returns no row;
* ``repartition + mapInArrow``: :func:`benchmarks.bench_spark_batch.floor_job`, windowagg's
  operator: the prepared columns hash-partitioned by key (a shuffle without the sort) into
  ``mapInArrow`` reading every batch and returning one count;
* ``mapInArrow, no shuffle``: the prepared columns into ``mapInArrow`` as they are
  partitioned, no exchange at all: the cost of moving the rows through Python once, under
  any design that reads them in a Python worker;
* ``... + output rows`` (hopping only): ``repartition + mapInArrow`` returning as many rows
  as windowagg does (one per key and non-empty window, counted from each key's first and
  last event), in windowagg's output schema, filled by numpy without computing a window:
  the floor of this operator for a job that has to hand its windows to the JVM.

Printed: medians, and the target operator's time over each contender's (the best ratio a
design on that data path could reach). Run:
``python -m benchmarks.probe_spark_batch [--events N] [--repeats R] [--only hopping]
[--readme-frame]`` (``--readme-frame``: the hopping job over the README's input,
``spark.createDataFrame(pandas_df).cache()``, instead of a Parquet file).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks.bench_spark_batch import (
    AGGS,
    SIZE,
    SLIDE,
    count_rows,
    floor_job,
    load,
    noop,
    per_event_frame,
    range_between_job,
)
from benchmarks.harness import median
from benchmarks.spark_data import bench_session, generate, hopping_frame

PE_AGGS = ["max(value)", "sum(value)", "count"]


def _map_jobs(df: Any, aggs: list[str]) -> dict[str, Callable[[], None]]:
    import pyarrow as pa

    from windowagg.pandas import parse
    from windowagg.spark.batch import prepare

    prepared = prepare(df, ["key"], "event_time", parse(aggs), row_index=True, null_flags=False)

    def nothing(table: pa.Table) -> pa.Table:
        return pa.table({"n": pa.array([], pa.int64())})

    return {
        "groupBy + applyInArrow": lambda: noop(
            prepared.groupBy("key").applyInArrow(nothing, schema="n bigint")
        ),
        "repartition + mapInArrow": lambda: noop(floor_job(df, ["key"], "event_time", aggs)),
        "mapInArrow, no shuffle": lambda: noop(prepared.mapInArrow(count_rows, "n bigint")),
    }


def _output_floor(df: Any, aggs: list[str], size_us: int, slide_us: int) -> Any:
    """``repartition(key) + mapInArrow`` returning windowagg's number of output rows in its
    schema, without computing a window (the hopping data are dense: every window between a
    key's first and last event holds an event)."""
    import numpy as np
    import pyarrow as pa

    from windowagg.pandas import parse
    from windowagg.spark.batch import prepare, worker_schema

    agg_list = parse(aggs)
    prepared = prepare(df, ["key"], "event_time", agg_list, row_index=True, null_flags=False)
    inner, schema = worker_schema(prepared, ["key"], agg_list)

    def rows(batches: Any) -> Any:
        table = pa.Table.from_batches([b for b in batches if b.num_rows])
        if not table.num_rows:
            return
        keys = table.column("key").to_numpy()
        t = table.column("event_time").cast(pa.int64()).to_numpy()
        order = np.lexsort((t, keys))
        ks, t = keys[order], t[order]
        first = np.flatnonzero(np.r_[True, ks[1:] != ks[:-1]])
        last = np.r_[first[1:], len(ks)] - 1
        lo = (t[first] - size_us) // slide_us + 1
        hi = t[last] // slide_us
        counts = hi - lo + 1
        n = int(counts.sum())
        starts = (
            np.repeat(lo - np.r_[0, np.cumsum(counts)[:-1]], counts) + np.arange(n)
        ) * slide_us
        cols: dict[str, Any] = {}
        for f in schema:
            if f.name == "key":
                cols[f.name] = pa.array(np.repeat(ks[first], counts), f.type)
            elif f.name == "window_start":
                cols[f.name] = pa.array(starts, pa.int64()).cast(f.type)
            elif f.name == "window_end":
                cols[f.name] = pa.array(starts + size_us, pa.int64()).cast(f.type)
            elif f.name in {a.alias for a in agg_list}:
                cols[f.name] = pa.array(np.arange(n).astype(f.type.to_pandas_dtype()), f.type)
            else:
                cols[f.name] = pa.nulls(n, f.type)
        yield from pa.Table.from_arrays([cols[f.name] for f in schema], schema=schema).to_batches()

    return prepared.repartition("key").mapInArrow(rows, schema=inner)


def _run(title: str, target: str, jobs: dict[str, Callable[[], None]], repeats: int) -> None:
    print(title)
    for fn in jobs.values():  # untimed: plans, worker start
        fn()
    times: dict[str, list[float]] = {k: [] for k in jobs}
    before = load()
    for _ in range(repeats):
        for k, fn in jobs.items():
            t0 = time.perf_counter()
            fn()
            times[k].append(time.perf_counter() - t0)
    after = load()
    base = median(times[target])
    for k, v in times.items():
        print(
            f"  {k:28s} {median(v):6.3f} s   {target} / this {base / median(v):5.2f}x   "
            f"{[round(x, 2) for x in v]}"
        )
    print(f"  load {before} -> {after}")


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.probe_spark_batch")
    ap.add_argument("--events", type=int, default=1_000_000, help="hopping events")
    ap.add_argument("--per-event-events", type=int, default=300_000)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--only", choices=["per-event", "hopping"], help="one of the two jobs")
    ap.add_argument(
        "--readme-frame",
        action="store_true",
        help="hopping over the README's input (createDataFrame(pandas).cache()) instead of Parquet",
    )
    args = ap.parse_args(argv)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    spark = bench_session("windowagg-probe-batch")
    if args.only != "hopping":
        _per_event(spark, args)
    if args.only != "per-event":
        _hopping(spark, args)
    spark.stop()
    return 0


def _per_event(spark: Any, args: argparse.Namespace) -> None:
    from windowagg.spark import window_agg

    pe = per_event_frame(spark, args.per_event_events)
    spark.conf.set("spark.sql.window.segmentTree.enabled", "true")
    spe = range_between_job(pe)
    ope = window_agg(pe, "key", "event_time", PE_AGGS, size=SIZE)
    jobs = {"rangeBetween": lambda: noop(spe), "windowagg": lambda: noop(ope.output)}
    jobs.update(_map_jobs(pe, PE_AGGS))
    _run(
        f"per-event, 10 keys, 10^4 events per window, {args.per_event_events:,} events",
        "rangeBetween",
        jobs,
        args.repeats,
    )
    spark.conf.set("spark.sql.window.segmentTree.enabled", "false")
    pe.unpersist()


def _hopping(spark: Any, args: argparse.Namespace) -> None:
    from pyspark.sql import functions as F

    from windowagg.spark import window_agg

    if args.readme_frame:  # the README's call: one partition per Arrow batch of the pandas frame
        df = spark.createDataFrame(generate(args.events)).cache()
        df.count()
    else:
        df = hopping_frame(
            spark, generate(args.events), Path(tempfile.mkdtemp(prefix="wa-probe-batch-"))
        )
    sw = df.groupBy("key", F.window("event_time", SIZE, SLIDE)).agg(
        F.max("value"), F.sum("value"), F.count("*"), F.avg("value")
    )
    ours = window_agg(df, "key", "event_time", AGGS, size=SIZE, slide=SLIDE)
    jobs = {"F.window": lambda: noop(sw), "windowagg": lambda: noop(ours.output)}
    jobs.update(_map_jobs(df, AGGS))
    size_us, slide_us = 600_000_000, 10_000_000
    jobs["repartition + mapInArrow + output rows"] = lambda: noop(
        _output_floor(df, AGGS, size_us, slide_us)
    )
    floor_rows = _output_floor(df, AGGS, size_us, slide_us).count()
    print(f"  output rows: windowagg {ours.results.count():,}, output floor {floor_rows:,}")
    _run(f"hopping 10 min / 10 s, 100 keys, {args.events:,} events", "F.window", jobs, args.repeats)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
