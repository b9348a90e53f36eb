"""Spark batch: windowagg.spark.window_agg (the engine per key) against Spark's own operators.

Every comparison is interleaved (A, B, A, B, ... after one untimed run of each), each job
forced with the ``noop`` sink, medians reported with the ratio Spark / windowagg (above 1:
windowagg faster) and the load average before and after. Targets from issue 12:

====================================================  ======================================
comparison                                            target (Spark time / windowagg time)
====================================================  ======================================
hopping 10 min / 10 s, N events, 100 keys,            >= 10x ``F.window``
max/sum/count/mean
same, exact ``p99`` (+ count)                         >= 20x ``F.window`` + ``percentile_approx``
hopping as above on the README's call: the input      >= 7x ``F.window`` (issue 28)
``spark.createDataFrame(pandas_df).cache()``
per-event ``(t - 10 min, t]`` max/sum/count, 10 keys,  >= 3x ``Window.rangeBetween`` (segment
10^4 events per window                                tree on)
per-event user Python monoid ("first value above      >= 1x ``first(when(v > 60, v),
60"), same data                                       ignorenulls)`` over ``rangeBetween``
                                                      (segment tree on)
per-event ``(t - 1 h, t]`` max/sum/count, N events    no target: the cost per key against
over N/10 keys                                        ``rangeBetween`` (segment tree on)
====================================================  ======================================

Run: ``python -m benchmarks spark_batch [--quick] [--repeats R] [--events N]``.

Results are checked in the same run: hopping max/count exact and sum/mean to 1e-9, p99
exact (the share of windows where ``percentile_approx`` agrees is printed), per-event
max/count exact against ``rangeBetween`` (both include every event at ``t``), the monoid's
answers against Spark's ``first``.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd

from benchmarks.harness import median

SIZE, SLIDE = "10 minutes", "10 seconds"
AGGS = ["max(value)", "sum(value)", "count", "mean(value)"]


def load() -> str:
    with open("/proc/loadavg") as fh:
        return " ".join(fh.read().split()[:3])


def noop(df: Any) -> None:
    df.write.format("noop").mode("overwrite").save()


def interleaved(
    name: str,
    spark_label: str,
    spark_fn: Callable[[], Any],
    ours_label: str,
    ours_fn: Callable[[], Any],
    repeats: int,
    rows: list[list[Any]],
    floor_fn: Callable[[], Any] | None = None,
) -> dict[str, Any]:
    """Time Spark's job and ours alternately; medians, ratio, load before and after.

    *floor_fn*, when given, is timed in the same rounds: the Spark-side floor of our job
    (the same shuffle and columns into ``mapInArrow``, a function that reads every batch
    and returns one count).
    """
    before = load()
    ts: list[float] = []
    to: list[float] = []
    tf: list[float] = []
    jobs: list[tuple[Callable[[], Any], list[float]]] = [(spark_fn, ts), (ours_fn, to)]
    if floor_fn is not None:
        jobs.append((floor_fn, tf))
    for fn, _ in jobs:
        fn()  # untimed: Python workers, JIT, caches
    for _ in range(repeats):
        for fn, out in jobs:
            t0 = time.perf_counter()
            fn()
            out.append(time.perf_counter() - t0)
    after = load()
    ms, mo = median(ts), median(to)
    floor = (
        f"; floor (repartition + mapInArrow, no work) median {median(tf):.2f} s "
        f"{[round(x, 2) for x in tf]}, Spark / floor {ms / median(tf):.2f}x"
        if tf
        else ""
    )
    print(
        f"  {name}: {spark_label} median {ms:.2f} s {[round(x, 2) for x in ts]}; "
        f"{ours_label} median {mo:.2f} s {[round(x, 2) for x in to]}; ratio {ms / mo:.2f}x"
        f"{floor}; load {before} -> {after}",
        flush=True,
    )
    rows.append([f"{name}: {spark_label}", ms, len(ts)])
    rows.append([f"{name}: {ours_label}", mo, len(to)])
    res = {
        "spark_s": ms,
        "windowagg_s": mo,
        "ratio": ms / mo,
        "spark_samples": ts,
        "windowagg_samples": to,
        "load_before": before,
        "load_after": after,
    }
    if tf:
        rows.append([f"{name}: floor, repartition + mapInArrow", median(tf), len(tf)])
        res.update(floor_s=median(tf), floor_samples=tf, spark_over_floor=ms / median(tf))
    return res


def floor_job(df: Any, keys: list[str], time_col: str, aggs: list[str], **kw: Any) -> Any:
    """Spark's part of ``window_agg`` alone: the same prepared columns (row id included),
    the same hash shuffle by key into ``mapInArrow``, with a Python function that reads
    every batch of its partition and returns one count. No windowagg design built on this
    operator can be faster than this job."""
    from windowagg.pandas import parse
    from windowagg.spark.batch import prepare

    prepared = prepare(df, keys, time_col, parse(aggs), row_index=True, null_flags=False)
    return prepared.repartition(*keys).mapInArrow(count_rows, "n bigint")


def count_rows(batches: Any) -> Any:
    """A ``mapInArrow`` function that reads every batch and returns their row count."""
    import pyarrow as pa

    n = 0
    for b in batches:
        n += b.num_rows
    yield pa.record_batch({"n": pa.array([n], pa.int64())})


def per_event_data(n: int, keys: int = 10, per_window: int = 10_000, seed: int = 7) -> Any:
    """*n* events over *keys* keys, ``per_window`` events per 10 minutes per key, +-5 s jitter."""
    rng = np.random.default_rng(seed)
    per_key = n // keys
    step = 600_000_000 // per_window  # microseconds between a key's events
    base = np.tile(np.arange(per_key, dtype=np.int64) * step, keys)
    t = base + rng.integers(-5_000_000, 5_000_001, len(base)) + 1_700_000_000_000_000
    return pd.DataFrame(
        {
            "key": np.repeat(np.arange(keys, dtype=np.int32), per_key),
            "event_time": pd.to_datetime(t, unit="us"),
            "value": rng.gamma(2.0, 10.0, len(t)).round(3),
        }
    )


def per_event_frame(spark: Any, n: int) -> Any:
    """:func:`per_event_data` as a cached DataFrame of 2 partitions."""
    pe = spark.createDataFrame(per_event_data(n)).repartition(2).cache()
    pe.count()
    return pe


def range_window(size_us: int = 600_000_000) -> Any:
    """Spark's per-event frame ``(t - size, t]`` per key (``rangeBetween`` on microseconds;
    10 minutes by default)."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    wr = Window.partitionBy("key").orderBy(F.unix_micros("event_time"))
    return wr.rangeBetween(-(size_us - 1), 0)


def range_between_job(pe: Any, size_us: int = 600_000_000) -> Any:
    """Spark's per-event max/sum/count over *pe* in :func:`range_window` (the caller turns
    the segment tree on)."""
    from pyspark.sql import functions as F

    wr = range_window(size_us)
    return pe.select(
        "key",
        "event_time",
        F.max("value").over(wr).alias("max_value"),
        F.sum("value").over(wr).alias("sum_value"),
        F.count("*").over(wr).alias("count"),
    )


def many_keys(spark: Any, n: int, repeats: int, rows: list[list[Any]]) -> dict[str, Any]:
    """Per-event ``(t - 1 h, t]`` max/sum/count over n/10 keys (~10 events each), against
    ``rangeBetween`` (the caller turns the segment tree on): the cost per key."""
    from windowagg.spark import window_agg

    keys = n // 10
    print(f"batch, per-event (t - 1 h, t], {n:,} events over {keys:,} keys")
    rng = np.random.default_rng(1)
    pdf = pd.DataFrame(
        {
            "key": rng.integers(0, keys, n).astype(np.int64),
            "event_time": pd.to_datetime(
                1_700_000_000_000_000 + rng.integers(0, 86_400_000_000, n), unit="us"
            ),
            "value": rng.gamma(2.0, 10.0, n).round(3),
        }
    )
    df = spark.createDataFrame(pdf).repartition(2).cache()
    df.count()
    sj = range_between_job(df, 3_600_000_000)
    oj = window_agg(df, "key", "event_time", ["max(value)", "sum(value)", "count"], size="1 hour")
    res = interleaved(
        "many keys",
        "Spark rangeBetween (segment tree)",
        lambda: noop(sj),
        "windowagg per event",
        lambda: noop(oj.output),
        repeats,
        rows,
    )
    a = sj.toPandas().sort_values(["key", "event_time", "max_value", "count"], kind="stable")
    b = oj.results.toPandas().sort_values(["key", "window_end", "max_value", "count"])
    res["identical_max_count"] = bool(
        len(a) == len(b)
        and (a["max_value"].to_numpy() == b["max_value"].to_numpy()).all()
        and (a["count"].to_numpy() == b["count"].to_numpy()).all()
    )
    print(f"  max/count identical to rangeBetween: {res['identical_max_count']}")
    df.unpersist()
    return res


def batch_suite(
    spark: Any, df: Any, repeats: int, quick: bool, rows: list[list[Any]]
) -> dict[str, Any]:
    """The four comparisons above; *df* is the cached hopping input (100 keys)."""
    from pyspark.sql import functions as F

    from windowagg.spark import window_agg

    out: dict[str, Any] = {}
    n_pe = 100_000 if quick else 300_000
    print(f"batch, per-event (t - 10 min, t], 10 keys, 10^4 events per window, {n_pe:,} events")
    pe = per_event_frame(spark, n_pe)
    spark.conf.set("spark.sql.window.segmentTree.enabled", "true")
    wr = range_window()
    spe = range_between_job(pe)
    ope = window_agg(pe, "key", "event_time", ["max(value)", "sum(value)", "count"], size=SIZE)
    out["per_event"] = interleaved(
        "per-event",
        "Spark rangeBetween (segment tree)",
        lambda: noop(spe),
        "windowagg per event",
        lambda: noop(ope.output),
        repeats,
        rows,
        floor_fn=lambda: noop(
            floor_job(pe, ["key"], "event_time", ["max(value)", "sum(value)", "count"])
        ),
    )
    a = spe.toPandas().sort_values(["key", "event_time", "max_value"], kind="stable")
    b = ope.results.toPandas().sort_values(["key", "window_end", "max_value"], kind="stable")
    out["per_event"]["identical_max_count"] = bool(
        len(a) == len(b)
        and (a["max_value"].to_numpy() == b["max_value"].to_numpy()).all()
        and (a["count"].to_numpy() == b["count"].to_numpy()).all()
    )
    per_window = float(b["count"].median())
    out["per_event"]["median_events_per_window"] = per_window
    print(
        f"  max/count identical to rangeBetween: {out['per_event']['identical_max_count']}; "
        f"median {per_window:,.0f} events per window"
    )

    print("batch, per-event user Python monoid 'first value above 60' (same data)")

    class FirstAbove:
        """The first value above 60 in event-time order (None if none): not commutative."""

        identity = None

        def lift(self, x: float) -> float | None:
            return x if x > 60 else None

        def combine(self, a: float | None, b: float | None) -> float | None:
            return a if a is not None else b

        def lower(self, a: float | None) -> float | None:
            return a

    sfa = pe.select(
        "key",
        "event_time",
        F.first(F.when(F.col("value") > 60, F.col("value")), ignorenulls=True)
        .over(wr)
        .alias("first_above"),
    )
    ofa = window_agg(
        pe, "key", "event_time", [("first_above", FirstAbove(), "value", "double")], size=SIZE
    )
    out["user_monoid"] = interleaved(
        "user monoid",
        "Spark first(when(v > 60), ignorenulls) over rangeBetween (segment tree)",
        lambda: noop(sfa),
        "windowagg per event, Python monoid",
        lambda: noop(ofa.output),
        repeats,
        rows,
    )
    # Spark's first over a RANGE frame takes the frame's rows in its sort order (time; ties
    # in no set order): compare where no tie can change the answer, i.e. by the multiset
    a = sfa.toPandas()["first_above"].fillna(-1.0).to_numpy()
    b = ofa.results.toPandas()["first_above"].fillna(-1.0).to_numpy()
    out["user_monoid"]["same_answers_as_multiset"] = bool(
        len(a) == len(b) and (np.sort(a) == np.sort(b)).all()
    )
    print(f"  same answers (as a multiset): {out['user_monoid']['same_answers_as_multiset']}")
    pe.unpersist()
    out["many_keys"] = many_keys(spark, 200_000 if quick else 1_000_000, repeats, rows)
    spark.conf.set("spark.sql.window.segmentTree.enabled", "false")
    n = df.count()
    print(f"batch, hopping 10 min / 10 s, {n:,} events, 100 keys: max, sum, count, mean")

    def spark_window() -> Any:
        return (
            df.groupBy("key", F.window("event_time", SIZE, SLIDE))
            .agg(
                F.max("value").alias("max_value"),
                F.sum("value").alias("sum_value"),
                F.count("*").alias("count"),
                F.avg("value").alias("mean_value"),
            )
            .select(
                "key",
                F.col("window.start").alias("window_start"),
                "max_value",
                "sum_value",
                "count",
                "mean_value",
            )
        )

    ours = window_agg(df, "key", "event_time", AGGS, size=SIZE, slide=SLIDE)
    out["hopping"] = interleaved(
        "hopping",
        "Spark F.window",
        lambda: noop(spark_window()),
        "windowagg.spark.window_agg",
        lambda: noop(ours.output),
        repeats,
        rows,
        floor_fn=lambda: noop(floor_job(df, ["key"], "event_time", AGGS)),
    )
    a = spark_window().toPandas().sort_values(["key", "window_start"]).reset_index(drop=True)
    b = ours.results.toPandas().sort_values(["key", "window_start"]).reset_index(drop=True)
    out["hopping"]["identical"] = bool(
        len(a) == len(b)
        and (a["window_start"].to_numpy() == b["window_start"].to_numpy()).all()
        and (a["max_value"].to_numpy() == b["max_value"].to_numpy()).all()
        and (a["count"].to_numpy() == b["count"].to_numpy()).all()
        and np.allclose(a["sum_value"], b["sum_value"], rtol=1e-9, atol=0)
        and np.allclose(a["mean_value"], b["mean_value"], rtol=1e-9, atol=0)
    )
    out["hopping"]["windows"] = len(a)
    print(f"  identical to F.window: {out['hopping']['identical']}; {len(a):,} windows")

    print("batch, hopping 10 min / 10 s: exact p99 against percentile_approx")
    sp99 = (
        df.groupBy("key", F.window("event_time", SIZE, SLIDE))
        .agg(F.percentile_approx("value", 0.99).alias("p99_value"), F.count("*").alias("count"))
        .select("key", F.col("window.start").alias("window_start"), "p99_value", "count")
    )
    o99 = window_agg(df, "key", "event_time", ["p99(value)", "count"], size=SIZE, slide=SLIDE)
    out["p99"] = interleaved(
        "p99",
        "Spark F.window + percentile_approx",
        lambda: noop(sp99),
        "windowagg exact p99",
        lambda: noop(o99.output),
        1 if quick else max(1, repeats - 1),
        rows,
    )
    a = sp99.toPandas().sort_values(["key", "window_start"]).reset_index(drop=True)
    b = o99.results.toPandas().sort_values(["key", "window_start"]).reset_index(drop=True)
    out["p99"]["share_equal_to_percentile_approx"] = float(
        (a["p99_value"].to_numpy() == b["p99_value"].to_numpy()).mean()
    )
    print(
        f"  p99 equal to percentile_approx in {out['p99']['share_equal_to_percentile_approx']:.4%}"
    )

    out["load_end"] = load()
    out["cpu_count"] = os.cpu_count()
    return out


def readme_call(
    spark: Any, pdf: pd.DataFrame, repeats: int, rows: list[list[Any]]
) -> dict[str, Any]:
    """Hopping 10 min / 10 s max/sum/count/mean as the README calls it: the input made by
    ``spark.createDataFrame(pdf).cache()`` (with the session's Arrow local-relation
    threshold: above it, one partition per Arrow batch), ``window_agg`` called and its
    output forced in each timed run, against ``F.window`` on the same frame."""
    from pyspark.sql import functions as F

    from windowagg.spark import window_agg

    df = spark.createDataFrame(pdf).cache()
    n = df.count()
    parts = df.rdd.getNumPartitions()
    plan = df._jdf.queryExecution().analyzed().getClass().getSimpleName()
    print(
        f"batch, the README's call: createDataFrame(pandas).cache(), {n:,} events, {parts} "
        f"partitions ({plan})"
    )

    def spark_window() -> Any:
        return df.groupBy("key", F.window("event_time", SIZE, SLIDE)).agg(
            F.max("value"), F.sum("value"), F.count("*"), F.avg("value")
        )

    def ours() -> Any:
        return window_agg(df, "key", "event_time", AGGS, size=SIZE, slide=SLIDE).output

    res = interleaved(
        "README's call",
        "Spark F.window",
        lambda: noop(spark_window()),
        "windowagg.spark.window_agg",
        lambda: noop(ours()),
        repeats,
        rows,
    )
    res.update(partitions=parts, plan=plan)
    df.unpersist()
    return res


def batch_ratios(batch: dict[str, Any]) -> list[list[Any]]:
    """The ratio rows (Spark / windowagg, target) of the comparisons *batch* holds (a
    :func:`batch_suite` result, and/or ``readme_call``)."""
    rows = [
        ("hopping", "hopping max/sum/count/mean: F.window / windowagg", ">= 10x"),
        ("p99", "hopping p99: F.window+percentile_approx / windowagg", ">= 20x"),
        (
            "readme_call",
            "hopping, README's call (createDataFrame(pandas).cache()): F.window / windowagg",
            ">= 7x",
        ),
        ("per_event", "per-event 10^4/window: rangeBetween / windowagg", ">= 3x"),
        ("user_monoid", "per-event user monoid: first over rangeBetween / windowagg", ">= 1x"),
        ("many_keys", "per-event, ~10 events per key: rangeBetween / windowagg", "-"),
    ]
    return [[label, batch[k]["ratio"], target] for k, label, target in rows if k in batch]


def main(argv: list[str]) -> int:
    """``python -m benchmarks spark_batch [--quick] [--repeats R] [--events N]``: the batch
    comparisons alone (``python -m benchmarks spark`` runs them before the streaming runs)."""
    import argparse
    import shutil
    import sys
    import tempfile
    from pathlib import Path

    from benchmarks.harness import print_table, save_results
    from benchmarks.spark_data import bench_session, generate, hopping_frame

    ap = argparse.ArgumentParser(prog="python -m benchmarks spark_batch")
    ap.add_argument("--quick", action="store_true", help="200k events, 1 repeat")
    ap.add_argument("--repeats", type=int, default=None)
    ap.add_argument("--events", type=int, default=None)
    ap.add_argument(
        "--only-readme-call", action="store_true", help="the README's call against F.window only"
    )
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
    if args.only_readme_call:
        batch = {"readme_call": readme_call(spark, pdf, repeats, rows)}
    else:
        batch = batch_suite(spark, df, repeats, args.quick, rows)
        batch["readme_call"] = readme_call(spark, pdf, repeats, rows)
    results.update(batch)
    results["table"] = print_table(
        f"Spark batch, {n:,} events, local[2] (median seconds; shared VM)",
        ["job", "seconds", "runs"],
        rows,
    )
    results["ratios"] = print_table(
        "Ratios measured in the same run (Spark / windowagg)",
        ["comparison", "ratio", "target"],
        batch_ratios(batch),
    )
    save_results("spark_batch" + ("_quick" if args.quick else ""), results)
    shutil.rmtree(work, ignore_errors=True)
    spark.stop()
    return 0
