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

``--mode day`` measures the issue-28 case on the ``transformWithStateInPandas`` operator:
one key, hopping 1 day / 1 min, max, sum, count, ``--events`` over 2 days of event time in
files of ``--batch`` events (one per micro-batch), a few late events (allowed lateness 1
min). Contenders: ``windowagg-tws`` (the state counted: a ``WindowAggProcessor`` whose
``ValueState``/``MapState`` count the bytes each micro-batch reads and writes, 8 bytes per
map key) and ``noop-tws`` (a processor that reads the rows and stores nothing: Spark's
floor for the operator). Printed: ``triggerExecution`` medians of the first and the last
quarter of the micro-batches and their ratio, and per micro-batch the state bytes read +
written against the input bytes (20 per row: int key, timestamp, double).

``--mode history`` measures issue 37's whole-history case on ``stream_window_agg`` (the
``transformWithStateInPandas`` operator): ``--events`` (default 1M here) of 100 keys over 2
days of event time (each up to 30 s late), in files of ``--batch`` events (one per
micro-batch: 100), ``ewm_mean(value, half_life=1 hour)`` with no size, allowed lateness 1
min. Printed per micro-batch: ``triggerExecution`` and the state operator's
``numRowsTotal`` and ``memoryUsedBytes`` (``lastProgress.stateOperators``); then the first
and the last quarter's median ``triggerExecution`` and their ratio (target <= 1.2), and the
rows and memory over the last half (target: flat) with the memory's growth per micro-batch.
``memoryUsedBytes`` is RocksDB's (Spark's ``RocksDB.metrics``, per state store instance:
one per shuffle partition): table readers + memtables + the instance's own LRU block cache
of ``spark.sql.streaming.stateStore.rocksdb.blockCacheSizeMB`` (default 8) MB, which fills
with the blocks of the SST files each commit writes and compaction rewrites; ``--conf
spark.sql.streaming.stateStore.rocksdb.blockCacheSizeMB=1`` shows the plateau within a
short run.

Printed per contender: the medians over the warm micro-batches (the first micro-batch of
each query, which pays planning and worker start, is left out) of Spark's progress
``durationMs`` (``triggerExecution``, ``addBatch``, ``queryPlanning``) and of the state
operator's ``allUpdatesTimeMs`` and ``commitTimeMs``.

Run: ``python -m benchmarks.probe_spark_stream [--events N] [--batch B] [--repeats R]
[--mode over --density D | --mode day | --mode history] [--conf KEY=VALUE ...]``.
"""

from __future__ import annotations

import argparse
import os
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
    file_stream,
    noop_tws_query,
    over_query,
    to_noop,
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
    from windowagg.spark.packed import _one_row
    from windowagg.spark.streaming import APWS_STATE_SCHEMA, packed_schema, unpack

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


MINUTE_US, DAY_US = 60_000_000, 86_400_000_000


def write_day_files(folder: Path, n: int, per_file: int, seed: int = 13) -> None:
    """One key, *n* events over 2 days in files of *per_file* (mtimes increasing); one
    event in 50 is up to 50 s behind (inside the allowed lateness)."""
    rng = np.random.default_rng(seed)
    folder.mkdir(parents=True)
    files = -(-n // per_file)
    span = 2 * DAY_US // files
    base = time.time() - 10_000
    t0 = pd.Timestamp("2026-11-01", tz="UTC").value // 1000
    for i in range(files):
        us = np.sort(rng.integers(i * span, (i + 1) * span, per_file))
        us[::50] -= rng.integers(0, 50_000_000, len(us[::50]))
        pdf = pd.DataFrame(
            {
                "key": np.zeros(per_file, np.int32),
                "event_time": pd.to_datetime(t0 + us, unit="us", utc=True),
                "value": rng.normal(size=per_file),
            }
        )
        f = folder / f"part-{i:05d}.parquet"
        pdf.to_parquet(f, index=False, coerce_timestamps="us")
        os.utime(f, (base + i, base + i))


def day_query(spark: Any, src: Path, who: str, tally: Path) -> Any:
    """The ``--mode day`` contenders on the TWS operator (see the module docstring)."""
    from pyspark.sql import types as T

    from windowagg.spark.streaming import WindowAggProcessor, packed_schema, unpack
    from windowagg.windows.engine import Shape

    sdf = file_stream(spark, src)
    if who == "noop-tws":
        return noop_tws_query(sdf)

    from windowagg.aggs import parse_aggs

    aggs = parse_aggs(DAY_AGGS)
    path = str(tally)

    class Counted:
        """A ValueState / MapState counting the bytes through it (socket payload)."""

        def __init__(self, state: Any, t: list[int]) -> None:
            self.s, self.t = state, t

        def get(self) -> Any:
            v = self.s.get()
            self.t[0] += 0 if v is None else len(v[0])
            return v

        def update(self, v: Any) -> None:
            self.t[1] += len(v[0])
            self.s.update(v)

        def getValue(self, k: Any) -> Any:
            v = self.s.getValue(k)
            self.t[0] += 8 + (0 if v is None else len(v[0]))
            return v

        def containsKey(self, k: Any) -> bool:
            self.t[0] += 8
            return bool(self.s.containsKey(k))

        def updateValue(self, k: Any, v: Any) -> None:
            self.t[1] += 8 + len(v[0])
            self.s.updateValue(k, v)

        def removeKey(self, k: Any) -> None:
            self.t[1] += 8
            self.s.removeKey(k)

        def iterator(self) -> Any:
            for k, v in self.s.iterator():
                self.t[0] += 8 + len(v[0])
                yield k, v

        def keys(self) -> Any:
            scan = self.s.keys()  # MapState.keys(): an iterator of key tuples
            for k in scan:
                self.t[0] += 8
                yield k

        def clear(self) -> None:
            self.s.clear()

    class CountedProcessor(WindowAggProcessor):
        def init(self, handle: Any) -> None:
            super().init(handle)
            self.t = [0, 0]
            self._meta, self._pieces = Counted(self._meta, self.t), Counted(self._pieces, self.t)

        def handleInputRows(self, key: Any, rows: Any, timerValues: Any) -> Any:
            chunks = list(rows)
            self.t[0] = self.t[1] = 0
            out = list(super().handleInputRows(key, iter(chunks), timerValues))
            with open(path, "a") as f:
                f.write(f"{sum(len(c) for c in chunks)},{self.t[0]},{self.t[1]}\n")
            return iter(out)

    proc = CountedProcessor(
        ["key"], "event_time", aggs, Shape(size=DAY_US, slide=MINUTE_US), "s",
        columns=sdf.columns, max_out_of_orderness=MINUTE_US, allowed_lateness=MINUTE_US,
    )  # fmt: skip
    schema = packed_schema([T.StructField("key", T.IntegerType(), True)], aggs)
    packed = sdf.groupBy("key").transformWithStateInPandas(proc, schema, "Append", "None")
    return unpack(packed, ["key"], aggs)


DAY_AGGS = ["max(value)", "sum(value)", "count"]


def run_day(spark: Any, src: Path, ck: Path, who: str, tally: Path) -> dict[str, Any]:
    """One ``--mode day`` query; ``triggerExecution`` per micro-batch (s), in order."""
    seconds, q = to_noop(lambda: day_query(spark, src, who, tally), ck)
    prog = [p for p in q.recentProgress if p["numInputRows"] > 0]
    return {
        "seconds": seconds,
        "trigger": [p["durationMs"].get("triggerExecution", 0) / 1000 for p in prog],
    }


def main_day(spark: Any, work: Path, args: Any) -> None:
    src = work / "in"
    write_day_files(src, args.events, args.batch)
    who = ["windowagg-tws", "noop-tws"]
    for w in who:  # untimed warm-up (worker start, imports)
        run_day(spark, src, work / f"ck-warm-{w}", w, work / "tally-warm")
    got: dict[str, list[dict[str, Any]]] = {w: [] for w in who}
    tallies = []
    for r in range(args.repeats):  # interleaved
        for w in who:
            tally = work / f"tally-{w}-{r}"
            got[w].append(run_day(spark, src, work / f"ck-{w}-{r}", w, tally))
            if w == "windowagg-tws":
                tallies.append(np.loadtxt(tally, delimiter=",", ndmin=2))
            print(f"  run {r}: {w} {got[w][-1]['seconds']:.1f} s", flush=True)
    batches = -(-args.events // args.batch)
    print(f"\none key, hopping 1 day / 1 min, {args.events:,} events over 2 days in {batches} "
          f"micro-batches of {args.batch:,}; {args.repeats} interleaved repeats")  # fmt: skip
    print(
        f"{'contender':14} {'first q. s':>10} {'last q. s':>10} {'last/first':>10} {'query s':>8}"
    )
    for w in who:
        firsts, lasts = [], []
        for x in got[w]:
            tr = x["trigger"][1:]  # the first pays planning and worker start
            k = max(1, len(tr) // 4)
            firsts.append(float(np.median(tr[:k])))
            lasts.append(float(np.median(tr[-k:])))
        f, la = float(np.median(firsts)), float(np.median(lasts))
        q = float(np.median([x["seconds"] for x in got[w]]))
        print(f"{w:14} {f:10.3f} {la:10.3f} {la / f:10.2f} {q:8.1f}")
    t = np.concatenate(tallies)
    t = t[t[:, 0] > 0]
    inp = 20 * t[:, 0]
    ratio = (t[:, 1] + t[:, 2]) / inp
    k = max(1, len(t) // (4 * len(tallies)))
    print(
        f"state bytes per micro-batch (windowagg-tws, {len(t)} calls): read median "
        f"{np.median(t[:, 1]):,.0f}, written median {np.median(t[:, 2]):,.0f}, input median "
        f"{np.median(inp):,.0f}; (read + written) / input: median {np.median(ratio):.3f}, "
        f"max {ratio.max():.3f}; read, first quarter {np.median(t[:k, 1]):,.0f} vs last "
        f"{np.median(t[-k:, 1]):,.0f}"
    )


HISTORY_AGGS = ["ewm_mean(value, half_life=1 hour)"]


def write_history_files(folder: Path, n: int, per_file: int, seed: int = 37) -> int:
    """*n* events of 100 keys over 2 days, in arrival order (each up to 30 s late), as
    files of *per_file* (mtimes increasing); returns the number of files."""
    rng = np.random.default_rng(seed)
    folder.mkdir(parents=True)
    t = np.sort(rng.integers(0, 2 * DAY_US, n))
    order = np.argsort(t + rng.integers(0, 30_000_000, n), kind="stable")
    t0 = pd.Timestamp("2026-11-01", tz="UTC").value // 1000
    pdf = pd.DataFrame(
        {
            "key": rng.integers(0, 100, n).astype(np.int32)[order],
            "event_time": pd.to_datetime(t0 + t[order], unit="us", utc=True),
            "value": rng.normal(size=n),
        }
    )
    base = time.time() - 10_000
    files = 0
    for i, lo in enumerate(range(0, n, per_file)):
        f = folder / f"part-{i:05d}.parquet"
        pdf.iloc[lo : lo + per_file].to_parquet(f, index=False, coerce_timestamps="us")
        os.utime(f, (base + i, base + i))
        files += 1
    return files


def main_history(spark: Any, work: Path, args: Any) -> None:
    """``--mode history`` (see the module docstring)."""
    from windowagg.spark import stream_window_agg

    src = work / "in"
    files = write_history_files(src, args.events, args.batch)
    spark.conf.set("spark.sql.streaming.numRecentProgressUpdates", str(files + 10))

    def build() -> Any:
        return stream_window_agg(
            file_stream(spark, src), "key", "event_time", HISTORY_AGGS,
            allowed_lateness="1 minute",
        )  # fmt: skip

    seconds, q = to_noop(build, work / "ck")
    prog = [p for p in q.recentProgress if p["numInputRows"] > 0]
    trig = [p["durationMs"].get("triggerExecution", 0) / 1000 for p in prog]
    ops = [p["stateOperators"][0] if p["stateOperators"] else {} for p in prog]
    rows = [int(o.get("numRowsTotal", 0)) for o in ops]
    mem = [int(o.get("memoryUsedBytes", 0)) for o in ops]
    print(f"\n100 keys, whole history, {HISTORY_AGGS[0]}, {args.events:,} events in "
          f"{len(prog)} micro-batches of {args.batch:,}; query {seconds:.1f} s")  # fmt: skip
    print(f"{'batch':>5} {'trigger s':>9} {'numRowsTotal':>12} {'memoryUsedBytes':>15}")
    for i, (a, b, c) in enumerate(zip(trig, rows, mem, strict=True)):
        print(f"{i:5d} {a:9.3f} {b:12,d} {c:15,d}")
    tr = trig[1:]  # the first pays planning and worker start
    k = max(1, len(tr) // 4)
    f, la = float(np.median(tr[:k])), float(np.median(tr[-k:]))
    half = len(prog) // 2
    print(f"triggerExecution: first quarter {f:.3f} s, last quarter {la:.3f} s, "
          f"last/first {la / f:.2f}")  # fmt: skip
    for i in (half, len(ops) - 1):  # what the store says its memory is (RocksDB's own)
        print(f"micro-batch {i} state store custom metrics: {ops[i].get('customMetrics', {})}")
    print(f"numRowsTotal over the last half: min {min(rows[half:]):,} max "
          f"{max(rows[half:]):,}; memoryUsedBytes over the last half: min "
          f"{min(mem[half:]):,} max {max(mem[half:]):,} (first half max {max(mem[:half]):,})")  # fmt: skip
    q3 = 3 * len(mem) // 4
    for lo, hi in ((0, half), (half, q3), (q3, len(mem) - 1)):  # a plateau: growth -> 0
        print(f"memoryUsedBytes growth per micro-batch, micro-batches {lo}..{hi}: "
              f"{(mem[hi] - mem[lo]) / max(1, hi - lo):,.0f} B")  # fmt: skip


def query(spark: Any, src: Path, who: str, args: Any = None) -> Any:
    from pyspark.sql import functions as F
    from pyspark.sql import types as T
    from pyspark.sql.streaming.state import GroupState, GroupStateTimeout

    sdf = file_stream(spark, src)
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
    seconds, q = to_noop(lambda: query(spark, src, who, args), ck)
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
    ap.add_argument("--mode", choices=["hop", "over", "day", "history"], default="hop")
    ap.add_argument("--density", type=int, default=100, help="over: events per window")
    ap.add_argument("--state-bytes", type=int, default=3_500, help="echo-apws: per key")
    ap.add_argument(
        "--conf", action="append", default=[], metavar="KEY=VALUE",
        help="a Spark setting for the session (repeatable), e.g. "
        "spark.sql.streaming.stateStore.rocksdb.blockCacheSizeMB=1",
    )  # fmt: skip
    args = ap.parse_args(argv)
    conf = dict(c.split("=", 1) for c in args.conf)
    from windowagg.spark import session

    print("loadavg before:", Path("/proc/loadavg").read_text().strip())
    spark = session("local[2]", "probe-spark-stream", driver_memory="3g", conf=conf)
    print("session settings:", conf or "defaults")
    print("spark.sql.shuffle.partitions =", spark.conf.get("spark.sql.shuffle.partitions"))
    work = Path(tempfile.mkdtemp(prefix="windowagg-probe-stream-"))
    if args.mode in ("day", "history"):
        try:
            (main_day if args.mode == "day" else main_history)(spark, work, args)
        finally:
            spark.stop()
            shutil.rmtree(work, ignore_errors=True)
            print("loadavg after:", Path("/proc/loadavg").read_text().strip())
        return 0
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
