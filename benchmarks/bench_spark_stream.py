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

Per-event mode (``--mode over``): per-event windows ``(t - size, t]`` of max, sum, count,
complete by event time (``stream_window_agg(..., size=..., emit="watermark")``, every window
emitted when the key's watermark passes its event) against Flink SQL ``OVER (PARTITION BY k
ORDER BY rt RANGE BETWEEN INTERVAL size PRECEDING AND CURRENT ROW)`` (``--flink`` needed;
Spark has no streaming per-event window). For each density D in ``--densities`` (events per
window): ``max(1, N // (10 D))`` keys, one event per key per second on average, a window of
D seconds, event times jittered +-2 s on a 3 ms grid (so no two events of a key are exactly
D seconds apart: Flink's ``RANGE`` includes ``t - size``, windowagg's window excludes it),
watermark delay 5 s for both. Same events for both (parquet micro-batches of ``--batch``
events / one CSV). Before the timed runs, one untimed run of each into a collecting sink
checks the answers on a sample (events whose ``ts`` in microseconds is a multiple of 97):
count and max equal, sum within 1e-9 relative, over the events both emitted (windowagg does
not emit the last ~5 s of each key: its watermark never passes them). Reported per density:
median seconds, events/s, ``Flink time / this``; once per run, Flink's fixed cost per job
(the same query over 3 events).

Other hopping shapes (issue 28's case: ``--size "1 hour" --slide "1 minute" --p95``): max,
sum, count and p95 (windowagg exact, Spark ``percentile_approx`` at its default accuracy;
Flink SQL has no percentile in ``HOP``, so its query keeps ``AVG``), ``--contenders`` in the
interleaving order, among them ``noop-tws``: a ``transformWithStateInPandas`` operator that
reads each key's rows and keeps nothing (Spark's floor for windowagg's operator, on the same
input), ``--fixed-batches 0`` to skip the 100-event runs.

Run: ``python -m benchmarks.bench_spark_stream [--events N] [--batch B] [--repeats R]
[--mode hop|over] [--densities 100,1000,10000] [--flink PYTHON] [--size S --slide S]
[--p95] [--contenders transformWithStateInPandas,noop-tws,spark] [--fixed-batches 0]``.
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
from collections.abc import Callable
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


def noop_tws_query(sdf: Any) -> Any:
    """Spark's floor for the TWS operator: a ``transformWithStateInPandas`` that reads its
    rows, keeps no state and emits nothing (also ``probe_spark_stream --mode day``)."""
    from pyspark.sql import types as T
    from pyspark.sql.streaming.stateful_processor import StatefulProcessor

    class Noop(StatefulProcessor):
        def init(self, handle: Any) -> None:
            pass

        def handleInputRows(self, key: Any, rows: Any, timerValues: Any) -> Any:
            for _ in rows:  # read the rows, as windowagg does
                pass
            return iter([])

        def close(self) -> None:
            pass

    schema = T.StructType([T.StructField("key", T.IntegerType())])
    return sdf.groupBy("key").transformWithStateInPandas(Noop(), schema, "Append", "None")


def file_stream(spark: Any, src: Path) -> Any:
    """The input of every streaming query here and in ``probe_spark_stream``: *src*'s
    Parquet files (key, event_time, value), one file per micro-batch in mtime order."""
    return (
        spark.readStream.schema("key int, event_time timestamp, value double")
        .option("maxFilesPerTrigger", 1)
        .parquet(str(src))
    )


def to_noop(build: Callable[[], Any], ck: Path) -> tuple[float, Any]:
    """``build()`` (a streaming DataFrame) run into Spark's ``noop`` sink with
    ``availableNow`` until its input is read: (seconds, the build included; the query)."""
    t0 = time.perf_counter()
    q = (
        build()
        .writeStream.format("noop")
        .outputMode("append")
        .option("checkpointLocation", str(ck))
        .trigger(availableNow=True)
        .start()
    )
    q.awaitTermination()
    return time.perf_counter() - t0, q


def run(
    spark: Any,
    src: Path,
    ck: Path,
    who: str,
    size: str = SIZE,
    slide: str = SLIDE,
    p95: bool = False,
) -> dict[str, Any]:
    """One timed ``availableNow`` query into ``noop``: max, sum, count and mean, or with
    *p95* max, sum, count and the 95th percentile (exact for windowagg, Spark's
    ``percentile_approx`` at its default accuracy)."""
    from pyspark.sql import functions as F

    sdf = file_stream(spark, src)
    if who == "noop-tws":  # Spark's floor for the TWS operator (benchmarks.probe_spark_stream)
        out = noop_tws_query(sdf)
    elif who == "spark":
        last = F.percentile_approx("value", 0.95) if p95 else F.avg("value")
        out = (
            sdf.withWatermark("event_time", "30 seconds")
            .groupBy("key", F.window("event_time", size, slide))
            .agg(F.max("value"), F.sum("value"), F.count("*"), last)
        )
    else:
        from windowagg.spark.streaming import stream_window_agg

        aggs = [*AGGS[:3], "p95(value)"] if p95 else AGGS
        out = stream_window_agg(
            sdf, "key", "event_time", aggs, size=size, slide=slide,
            max_out_of_orderness="30 seconds", api=who,
        )  # fmt: skip
    seconds, q = to_noop(lambda: out, ck)
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


def run_flink(
    python: str, csv: Path, state: str, size_s: int = 600, slide_s: int = 10
) -> dict[str, Any]:
    """One Flink SQL HOP job over *csv* (``benchmarks/flink_sql.py`` in PyFlink's venv)."""
    script = Path(__file__).with_name("flink_sql.py")
    cmd = [python, str(script), "--csv", str(csv), "--query", "hop", "--state", state,
           "--delay-s", "30", "--size-s", str(size_s), "--slide-s", str(slide_s),
           "--repeats", "1"]  # fmt: skip
    done = subprocess.run(cmd, check=True, capture_output=True, text=True)
    lines = [json.loads(x) for x in done.stdout.splitlines() if x.startswith("{")]
    return {"seconds": float(lines[-1]["seconds"]), "median_batch_s": float("nan")}


OVER_AGGS = ["max(value)", "sum(value)", "count"]
OVER_DELAY_S = 5
SAMPLE_MOD = 97


def write_over_files(folder: Path, n: int, per_file: int, density: int, seed: int = 11) -> int:
    """*n* events for a per-event density of *density* events per *density*-second window:
    ``max(1, n // (10 density))`` keys at ~1 event/s each, times on a 3 ms grid, arrival
    order, parquet files of *per_file* events. Returns the number of keys."""
    rng = np.random.default_rng(seed)
    keys = max(1, n // (10 * density))
    folder.mkdir(parents=True)
    arrival = np.sort(rng.uniform(0, n / keys, n))  # seconds: ~1 event per key per second
    ms = 3 * np.round((arrival + rng.uniform(-2, 2, n)) * 1000 / 3).astype(np.int64)
    pdf = pd.DataFrame(
        {
            "key": rng.integers(0, keys, n).astype("int32"),
            "event_time": pd.to_datetime(
                ms * 1000 + pd.Timestamp("2024-01-01").value // 1000, unit="us", utc=True
            ),
            "value": rng.gamma(2.0, 10.0, n),
        }
    )
    for i, lo in enumerate(range(0, n, per_file)):
        p = folder / f"part-{i:05d}.parquet"
        pdf.iloc[lo : lo + per_file].to_parquet(p, index=False, coerce_timestamps="us")
        os.utime(p, (1_000_000 + i, 1_000_000 + i))
    return keys


def over_query(spark: Any, src: Path, density: int, api: str) -> Any:
    from windowagg.spark.streaming import stream_window_agg

    return stream_window_agg(
        file_stream(spark, src), "key", "event_time", OVER_AGGS, size=f"{density} seconds",
        max_out_of_orderness=f"{OVER_DELAY_S} seconds", api=api, emit="watermark",
    )  # fmt: skip


def run_over(spark: Any, src: Path, ck: Path, density: int, api: str) -> dict[str, Any]:
    """One timed ``availableNow`` run of windowagg's per-event query into ``noop``."""
    seconds, _ = to_noop(lambda: over_query(spark, src, density, api), ck)
    return {"seconds": seconds}


def over_sample(spark: Any, src: Path, ck: Path, density: int, api: str) -> pd.DataFrame:
    """windowagg's per-event answers (untimed; also a warm-up) and its reject count."""
    out = over_query(spark, src, density, api)
    name = f"over_check_{density}_{api[:4]}"
    q = (
        out.writeStream.format("memory")
        .queryName(name)
        .outputMode("append")
        .option("checkpointLocation", str(ck))
        .trigger(availableNow=True)
        .start()
    )
    q.awaitTermination()
    everything = spark.table(name).toPandas()
    got = everything[everything["kind"] == "window"]
    rejects = len(everything) - len(got)
    end = pd.to_datetime(got["window_end"])  # naive in the session's time zone (UTC)
    end = end.dt.tz_convert(None) if end.dt.tz is not None else end
    ts = end.astype("datetime64[us]").astype("int64")
    return pd.DataFrame(
        {
            "k": got["key"].astype(str),
            "ts": ts,
            "mx": got["max_value"],
            "sm": got["sum_value"],
            "n": got["count"].astype("int64"),
            "rejects": rejects,
        }
    )


def flink_over(
    python: str, csv: Path, state: str, density: int, sample: bool = False
) -> dict[str, Any]:
    """One Flink SQL ``OVER ... RANGE`` job over *csv* (and, if *sample*, its sampled rows)."""
    script = Path(__file__).with_name("flink_sql.py")
    cmd = [python, str(script), "--csv", str(csv), "--query", "over", "--state", state,
           "--delay-s", str(OVER_DELAY_S), "--size-s", str(density), "--repeats", "1"]  # fmt: skip
    if sample:
        cmd += ["--sample-mod", str(SAMPLE_MOD)]
    done = subprocess.run(cmd, check=True, capture_output=True, text=True)
    lines = [json.loads(x) for x in done.stdout.splitlines() if x.startswith("{")]
    rows = [x["sample"] for x in lines if "sample" in x]
    timed = [x for x in lines if "seconds" in x]
    return {
        "seconds": float(timed[-1]["seconds"]),
        "sample": pd.DataFrame(rows, columns=["k", "ts", "mx", "sm", "n"]),
    }


def check_over(wa: pd.DataFrame, fl: pd.DataFrame) -> str:
    """Compare the sampled per-event answers; raise if any differ. Returns a summary."""
    w = wa[wa["ts"] % SAMPLE_MOD == 0].drop_duplicates(["k", "ts"])
    f = fl.drop_duplicates(["k", "ts"])
    both = w.merge(f, on=["k", "ts"], suffixes=("_wa", "_fl"))
    only_wa = len(w) - len(both)
    bad = (both["n_wa"] != both["n_fl"]) | (both["mx_wa"] != both["mx_fl"])
    bad |= ~np.isclose(both["sm_wa"], both["sm_fl"], rtol=1e-9, atol=0)
    if bad.any() or only_wa or len(both) == 0:
        raise SystemExit(
            f"per-event answers differ: {int(bad.sum())} of {len(both)} sampled events, "
            f"{only_wa} emitted by windowagg only:\n{both[bad].head()}"
        )
    rejects = int(wa["rejects"].iloc[0]) if len(wa) else 0
    return (
        f"checked {len(both)} sampled events equal (count, max, sum), {len(f) - len(both)} "
        f"in Flink's tail only, windowagg rejects {rejects}; median count per window "
        f"{float(np.median(w['n'])):,.0f}"
    )


def main_over(spark: Any, work: Path, args: Any) -> None:
    apis = args.apis.split(",")
    states = args.flink_states.split(",")
    if "hashmap" not in states:
        raise SystemExit("--flink-states must include hashmap (the ratios are to it)")
    tiny = work / "tiny.csv"  # Flink's fixed cost per job: the same query over 3 events
    tiny.write_text("0,1704067200003000,1.0\n0,1704067201005000,2.0\n1,1704067200006000,3.0\n")
    floor = flink_over(args.flink, tiny, "hashmap", 100)["seconds"]
    print(f"Flink SQL OVER job over 3 events (its fixed cost per job): {floor:.1f} s")
    for density in [int(x) for x in args.densities.split(",")]:
        src = work / f"over-{density}"
        keys = write_over_files(src, args.events, args.batch, density)
        csv = work / f"over-{density}.csv"
        write_csv(src, csv)
        fl = flink_over(args.flink, csv, "hashmap", density, sample=True)
        for api in apis:  # untimed: the answers, and a warm-up
            wa = over_sample(spark, src, work / f"ck-check-{density}-{api}", density, api)
            print(f"density {density} {api}: {check_over(wa, fl['sample'])}", flush=True)
        got: dict[str, list[float]] = {w: [] for w in apis + states}
        for r in range(args.repeats):  # interleaved
            for api in apis:
                ck = work / f"ck-over-{density}-{api}-{r}"
                got[api].append(run_over(spark, src, ck, density, api)["seconds"])
                print(f"  run {r}: {api} {got[api][-1]:.1f} s", flush=True)
            for st in states:
                got[st].append(flink_over(args.flink, csv, st, density)["seconds"])
                print(f"  run {r}: flink-{st} {got[st][-1]:.1f} s", flush=True)
        med = {w: float(np.median(v)) for w, v in got.items()}
        print(
            f"\n{args.events:,} events, {keys} keys, per-event windows of {density} s "
            f"(~{density} events each), micro-batches of {args.batch:,} events, medians of "
            f"{args.repeats}; loadavg {Path('/proc/loadavg').read_text().strip()}"
        )
        print(f"{'contender':34} {'seconds':>8} {'events/s':>10} {'Flink hashmap/this':>19}")
        for w in apis + states:
            name = w if w in apis else f"flink-{w}"
            print(
                f"{name:34} {med[w]:8.1f} {args.events / med[w]:10,.0f} "
                f"{med['hashmap'] / med[w]:19.2f}"
            )


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--events", type=int, default=200_000)
    ap.add_argument("--batch", type=int, default=10_000)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--fixed-batches", type=int, default=20, help="0: no fixed-cost runs")
    ap.add_argument(
        "--warmup-batches",
        type=int,
        default=10,
        help="hop: micro-batches of --batch events each contender runs untimed first (the "
        "JVM's and the Python workers' warm-up: a long-running query's steady state)",
    )
    ap.add_argument("--size", default=SIZE, help="hop: window size")
    ap.add_argument("--slide", default=SLIDE, help="hop: slide")
    ap.add_argument("--p95", action="store_true", help="hop: p95 instead of mean")
    ap.add_argument(
        "--contenders",
        default="transformWithStateInPandas,applyInPandasWithState,spark",
        help="hop: windowagg's operators, noop-tws (a TWS operator that reads the rows and "
        "keeps nothing: Spark's floor) and spark, in the interleaving order",
    )
    ap.add_argument("--flink", default=None, help="PyFlink's python: add Flink SQL")
    ap.add_argument("--mode", choices=["hop", "over"], default="hop")
    ap.add_argument("--densities", default="100,1000,10000", help="over: events per window")
    ap.add_argument(
        "--apis", default="applyInPandasWithState,transformWithStateInPandas", help="over mode"
    )
    ap.add_argument(
        "--flink-states", default="hashmap,rocksdb", help="over mode: Flink state backends"
    )
    args = ap.parse_args(argv)
    if args.mode == "over" and not args.flink:
        ap.error("--mode over compares with Flink SQL OVER: give --flink PYTHON")
    from windowagg.spark import session

    print("loadavg before:", Path("/proc/loadavg").read_text().strip())
    spark = session("local[2]", "bench-spark-stream", driver_memory="3g")
    work = Path(tempfile.mkdtemp(prefix="windowagg-bench-stream-"))
    try:
        if args.mode == "over":
            main_over(spark, work, args)
            return 0
        src = work / "in"
        files = write_files(src, args.events, args.batch)
        small = work / "small"  # the fixed-cost runs' input (only they read it)
        if args.fixed_batches:
            write_files(small, KEYS * args.fixed_batches, KEYS, seed=8)
        who = args.contenders.split(",")
        if "spark" not in who:
            ap.error("--contenders must include spark (the ratios are to it)")
        flink = ["flink-hashmap", "flink-rocksdb"] if args.flink else []
        if args.flink:
            write_csv(src, work / "events.csv")
        size_s, slide_s = (int(pd.Timedelta(x).total_seconds()) for x in (args.size, args.slide))
        shape = {"size": args.size, "slide": args.slide, "p95": args.p95}
        warm = work / "warm"
        write_files(warm, max(1, args.warmup_batches) * args.batch, args.batch, seed=9)
        for w in who:  # untimed warm-up (worker start, imports, planning, the JIT)
            run(spark, warm, work / f"ck-warm-{w}", w, **shape)
        got: dict[str, list[dict[str, Any]]] = {w: [] for w in who + flink}
        fixed: dict[str, list[dict[str, Any]]] = {w: [] for w in who}
        for r in range(args.repeats):  # interleaved
            for w in who:
                got[w].append(run(spark, src, work / f"ck-{w}-{r}", w, **shape))
                if args.fixed_batches:
                    fixed[w].append(run(spark, small, work / f"ck-small-{w}-{r}", w, **shape))
                print(f"  run {r}: {w} {got[w][-1]['seconds']:.1f} s "
                      f"(load {os.getloadavg()[0]:.1f})", flush=True)  # fmt: skip
            for w in flink:
                got[w].append(
                    run_flink(args.flink, work / "events.csv", w.split("-")[1], size_s, slide_s)
                )
                print(f"  run {r}: {w} {got[w][-1]['seconds']:.1f} s "
                      f"(load {os.getloadavg()[0]:.1f})", flush=True)  # fmt: skip
        last = "p95 (windowagg exact, Spark percentile_approx)" if args.p95 else "mean"
        print(
            f"\n{args.events:,} events, {KEYS} keys, hopping {args.size}/{args.slide}, max, "
            f"sum, count, {last}; {files} micro-batches of {args.batch:,} events, medians of "
            f"{args.repeats}"
        )
        med = {w: float(np.median([x["seconds"] for x in got[w]])) for w in who + flink}
        per = {w: float(np.median([x["median_batch_s"] for x in got[w]])) for w in who}
        fix = {
            w: float(np.median([x["median_batch_s"] for x in fixed[w]])) if fixed[w] else np.nan
            for w in who
        }
        print(f"{'contender':32} {'seconds':>8} {'events/s':>10} {'Spark/this':>10} "
              f"{'s per batch':>11} {'s per 100-event batch':>22}")  # fmt: skip
        for w in who + flink:
            print(
                f"{w:32} {med[w]:8.1f} {args.events / med[w]:10,.0f} "
                f"{med['spark'] / med[w]:10.2f} {per.get(w, float('nan')):11.3f} "
                f"{fix.get(w, float('nan')):22.3f}"
            )
    finally:
        spark.stop()
        shutil.rmtree(work, ignore_errors=True)
        print("loadavg after:", Path("/proc/loadavg").read_text().strip())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
