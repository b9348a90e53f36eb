"""Engine suite: ``windowagg.pandas.window_agg`` against DuckDB and polars, in-process.

Contenders run on the same data in the same process, interleaved (the order rotates every
repetition), medians of ``--repeats``; the load average is printed before and after.
Ratio = the peer's time / windowagg's time (above 1: windowagg is faster).

1. per-event ``(t - W, t]`` max+sum, one key, events 10 ms apart on average and out of
   order by up to 5 s; W chosen for 10^2 .. 10^5 events per window.
   DuckDB: ``max/sum OVER (ORDER BY t RANGE BETWEEN W-1 PRECEDING AND CURRENT ROW)``
   on integer microseconds (the same ``(t - W, t]``); polars: ``rolling_max_by`` /
   ``rolling_sum_by`` (``closed="right"``). Answers compared with DuckDB's (max exactly, sum
   to 1e-9 relative).
2. per-event exact p95 at 10^2 .. 10^4 events per window: DuckDB ``quantile_disc(v, 0.95)``
   over the same RANGE frame; answers must be identical.
3. hopping 10 min / 10 s over 24 h, 100 keys (1M events; 100k and 10 keys with
   ``--quick``), max/sum/count/mean, then the same with exact p99. DuckDB: each event
   expanded to its windows (``unnest(generate_series(...))``) then ``GROUP BY``, p99 as
   ``quantile_disc``; polars: ``sort`` + ``group_by_dynamic(every=10s, period=10m)`` (p99
   with ``interpolation="higher"``; polars omits the windows that start before a key's
   first event, so it is timed only). windowagg's window count, max/count and p99 are
   compared with DuckDB's.

4. many small keys: per-event ``(t - 1 h, t]`` max/sum/count, 1M events over 100,000 keys
   (~10 events per key and window; 100k over 10,000 with ``--quick``), out of order by up
   to 30 s. DuckDB: the RANGE frame ``PARTITION BY k``; polars: ``rolling_*_by(...)
   .over("k")``. Max and count compared with DuckDB's.

windowagg, DuckDB and polars run on ``--threads`` threads (default 1; windowagg's
``threads=``). ``--only threads``: windowagg on 1 and 2 threads against polars on its
default threads, issue 40's workloads (:mod:`benchmarks.engine_threads`).

Run: ``.venv/bin/python -m benchmarks engine [--quick] [--repeats R] [--only NAME]
[--threads T]``.
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd

from benchmarks.harness import median, print_table, save_results

US = 1_000_000
GAP_US = 10_000  # mean spacing of per-event events (10 ms)
JITTER_US = 5 * US
WA_THREADS = [1]  # windowagg's threads= (main sets it from --threads)


def _load() -> str:
    a, b, c = os.getloadavg()
    return f"{a:.2f} {b:.2f} {c:.2f}"


def per_event_data(n: int, seed: int = 7) -> pd.DataFrame:
    """n events of one key, GAP_US apart on average, shuffled by up to JITTER_US."""
    rng = np.random.default_rng(seed)
    base = np.arange(n, dtype=np.int64) * GAP_US + 1_700_000_000 * US
    t = base + rng.integers(0, JITTER_US, n)
    # arrival order: by the undisturbed time, so event times are out of order by < 5 s
    return pd.DataFrame({"k": np.zeros(n, dtype=np.int64), "t": t, "v": rng.gamma(2.0, 10.0, n)})


def hopping_data(n: int, keys: int, seed: int = 42) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    day = 24 * 3600 * US
    base = np.linspace(0, day, n, endpoint=False).astype(np.int64)
    t = base + rng.integers(-30 * US, 30 * US + 1, n) + 1_700_000_000 * US // day * day
    return pd.DataFrame(
        {"k": rng.integers(0, keys, n).astype(np.int64), "t": t, "v": rng.gamma(2.0, 10.0, n)}
    )


def _timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def interleave(
    contenders: dict[str, Callable[[], Any]], repeats: int
) -> tuple[dict[str, float], dict[str, Any]]:
    """Median seconds per contender, run in rotating order; the last answer of each."""
    names = list(contenders)
    times: dict[str, list[float]] = {n: [] for n in names}
    answers: dict[str, Any] = {}
    for r in range(repeats):
        order = names[r % len(names) :] + names[: r % len(names)]
        for name in order:
            s, out = _timed(contenders[name])
            times[name].append(s)
            answers[name] = out
    return {n: median(v) for n, v in times.items()}, answers


# ------------------------------------------------------------------ per-event windows


def _wa_per_event(df: pd.DataFrame, w_us: int, aggs: list[str]) -> pd.DataFrame:
    from windowagg.pandas import window_agg

    out = window_agg(df, "k", "t", aggs, size=w_us / US, time_unit="us", threads=WA_THREADS[0])
    assert not len(out.rejects)
    res: pd.DataFrame = out.results
    return res


def _duck_per_event(con: Any, w_us: int, select: str) -> pd.DataFrame:
    q = (
        f"SELECT t, {select} FROM df WINDOW w AS (ORDER BY t RANGE BETWEEN {w_us - 1} "
        "PRECEDING AND CURRENT ROW)"
    )
    res: pd.DataFrame = con.execute(q).df()
    return res


def _polars_per_event(pl: Any, pdf: Any, w_us: int) -> Any:
    return pdf.select(
        pl.col("t"),
        pl.col("v").rolling_max_by("t", window_size=f"{w_us}i", closed="right").alias("mx"),
        pl.col("v").rolling_sum_by("t", window_size=f"{w_us}i", closed="right").alias("sm"),
    )


def _ratios(label: str, n: int, med: dict[str, float]) -> list[Any]:
    """A table row: label, windowagg's events/s and seconds, DuckDB's and polars' ratios."""
    wa = med["windowagg"]
    return [label, n / wa, wa, med["duckdb"] / wa, med.get("polars", float("nan")) / wa]


def _by_time(t: np.ndarray, *cols: np.ndarray) -> list[np.ndarray]:
    order = np.lexsort((cols[0], t))
    return [t[order], *[c[order] for c in cols]]


def bench_per_event(con: Any, pl: Any, densities: list[int], n: int, repeats: int) -> list[Any]:
    rows = []
    df = per_event_data(n)
    con.register("df", df[["t", "v"]])
    pdf = pl.from_pandas(df[["t", "v"]]) if pl is not None else None
    for d in densities:
        w_us = d * GAP_US
        contenders: dict[str, Callable[[], Any]] = {
            "windowagg": lambda w=w_us: _wa_per_event(df, w, ["max(v)", "sum(v)"]),
            "duckdb": lambda w=w_us: _duck_per_event(con, w, "max(v) OVER w, sum(v) OVER w"),
        }
        if pl is not None:
            contenders["polars"] = lambda w=w_us: _polars_per_event(pl, pdf, w)
        med, ans = interleave(contenders, repeats)
        wa, dk = ans["windowagg"], ans["duckdb"]
        t_wa = wa["window_end"].astype("datetime64[us, UTC]").astype("int64").to_numpy()
        a = _by_time(t_wa, wa["max_v"].to_numpy(), wa["sum_v"].to_numpy())
        b = _by_time(dk["t"].to_numpy(), dk.iloc[:, 1].to_numpy(), dk.iloc[:, 2].to_numpy())
        assert np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1]), "max differs"
        np.testing.assert_allclose(a[2], b[2], rtol=1e-9)
        row = _ratios(f"max+sum, ~{d:,}/window", n, med)
        rows.append(row)
        print(f"  per-event {d}: {med} (load {_load()})", flush=True)
    return rows


def bench_p95(con: Any, densities: list[int], n: int, repeats: int) -> list[Any]:
    rows = []
    df = per_event_data(n, seed=11)
    con.register("df", df[["t", "v"]])
    for d in densities:
        w_us = d * GAP_US
        med, ans = interleave(
            {
                "windowagg": lambda w=w_us: _wa_per_event(df, w, ["p95(v)"]),
                "duckdb": lambda w=w_us: _duck_per_event(con, w, "quantile_disc(v, 0.95) OVER w"),
            },
            repeats,
        )
        wa, dk = ans["windowagg"], ans["duckdb"]
        t_wa = wa["window_end"].astype("datetime64[us, UTC]").astype("int64").to_numpy()
        a = _by_time(t_wa, wa["p95_v"].to_numpy())
        b = _by_time(dk["t"].to_numpy(), dk.iloc[:, 1].to_numpy())
        identical = bool(np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1]))
        assert identical, "p95 differs from DuckDB's quantile_disc"
        rows.append(
            [
                f"exact p95, ~{d:,}/window",
                n / med["windowagg"],
                med["windowagg"],
                med["duckdb"] / med["windowagg"],
                identical,
            ]
        )
        print(f"  p95 {d}: {med} (load {_load()})", flush=True)
    return rows


# ------------------------------------------------------------------ hopping windows

SIZE_US, SLIDE_US = 600 * US, 10 * US


def _wa_hopping(df: pd.DataFrame, aggs: list[str]) -> pd.DataFrame:
    from windowagg.pandas import window_agg

    out = window_agg(df, "k", "t", aggs, size=600, slide=10, time_unit="us", threads=WA_THREADS[0])
    res: pd.DataFrame = out.results
    return res


def _duck_hopping(con: Any, select: str) -> pd.DataFrame:
    w, s = SIZE_US // SLIDE_US, SLIDE_US
    q = (
        f"SELECT k, j * {s} AS start, {select} FROM ("
        f"SELECT k, v, unnest(generate_series(t // {s} - {w - 1}, t // {s})) AS j FROM df) "
        "GROUP BY k, j ORDER BY k, j"
    )
    res: pd.DataFrame = con.execute(q).df()
    return res


def polars_hopping(
    pl: Any, pdf: Any, quantile: bool, size_us: int = SIZE_US, slide_us: int = SLIDE_US
) -> Any:
    """polars' ``group_by_dynamic`` hopping windows (microsecond integer times) of max, sum,
    count, mean (and p99, nearest rank): the peer of the hopping rows here and in
    :mod:`benchmarks.engine_threads`."""
    aggs = [
        pl.col("v").max().alias("mx"),
        pl.col("v").sum().alias("sm"),
        pl.len().alias("n"),
        pl.col("v").mean().alias("mean"),
    ]
    if quantile:
        aggs.append(pl.col("v").quantile(0.99, interpolation="higher").alias("p99"))
    return (
        pdf.sort("t")
        .group_by_dynamic("t", every=f"{slide_us}i", period=f"{size_us}i", group_by="k")
        .agg(aggs)
    )


def bench_hopping(con: Any, pl: Any, n: int, keys: int, repeats: int) -> list[Any]:
    rows = []
    df = hopping_data(n, keys)
    con.register("df", df)
    pdf = pl.from_pandas(df) if pl is not None else None
    base = ["max(v)", "sum(v)", "count", "mean(v)"]
    duck_base = "max(v) AS mx, sum(v) AS sm, count(*) AS n, avg(v) AS mean"
    for label, aggs, duck, quantile in (
        ("max/sum/count/mean", base, duck_base, False),
        (
            "... and exact p99",
            [*base, "p99(v)"],
            duck_base + ", quantile_disc(v, 0.99) AS p99",
            True,
        ),
    ):
        contenders: dict[str, Callable[[], Any]] = {
            "windowagg": lambda a=aggs: _wa_hopping(df, a),
            "duckdb": lambda d=duck: _duck_hopping(con, d),
        }
        if pl is not None:
            contenders["polars"] = lambda q=quantile: polars_hopping(pl, pdf, q)
        med, ans = interleave(contenders, repeats)
        wa, dk = ans["windowagg"], ans["duckdb"]
        assert len(wa) == len(dk), f"{len(wa)} windows vs DuckDB's {len(dk)}"
        assert np.array_equal(wa["count"].to_numpy(), dk["n"].to_numpy())
        assert np.array_equal(wa["max_v"].to_numpy(), dk["mx"].to_numpy())
        if quantile:
            assert np.array_equal(wa["p99_v"].to_numpy(), dk["p99"].to_numpy())
        row = _ratios(f"hopping {label}, {n:,} ev, {keys} keys", n, med)
        rows.append(row)
        print(f"  hopping {label}: {med} (load {_load()})", flush=True)
    return rows


def bench_many_keys(con: Any, pl: Any, n: int, keys: int, repeats: int) -> list[Any]:
    df = hopping_data(n, keys)
    con.register("df", df)
    pdf = pl.from_pandas(df) if pl is not None else None
    w_us = 3600 * US
    frame = f"PARTITION BY k ORDER BY t RANGE BETWEEN {w_us - 1} PRECEDING AND CURRENT ROW"
    contenders: dict[str, Callable[[], Any]] = {
        "windowagg": lambda: _wa_per_event(df, w_us, ["max(v)", "sum(v)", "count"]),
        "duckdb": lambda: con.execute(
            f"SELECT k, t, max(v) OVER w AS mx, sum(v) OVER w AS sm, count(*) OVER w AS n "
            f"FROM df WINDOW w AS ({frame})"
        ).df(),
    }
    if pl is not None:
        size = f"{w_us}i"
        contenders["polars"] = lambda: pdf.sort("t").select(
            pl.col("k"),
            pl.col("t"),
            pl.col("v").rolling_max_by("t", window_size=size, closed="right").over("k").alias("mx"),
            pl.col("v").rolling_sum_by("t", window_size=size, closed="right").over("k").alias("sm"),
        )
    med, ans = interleave(contenders, repeats)
    wa, dk = ans["windowagg"], ans["duckdb"].sort_values(["k", "t"], kind="stable")
    t_wa = wa["window_end"].astype("datetime64[us, UTC]").astype("int64").to_numpy()
    order = np.lexsort((wa["max_v"].to_numpy(), t_wa, wa["k"].to_numpy()))
    d_order = np.lexsort((dk["mx"].to_numpy(), dk["t"].to_numpy(), dk["k"].to_numpy()))
    assert np.array_equal(wa["max_v"].to_numpy()[order], dk["mx"].to_numpy()[d_order])
    assert np.array_equal(wa["count"].to_numpy()[order], dk["n"].to_numpy()[d_order])
    row = _ratios(f"per-event 1 h max/sum/count, {n:,} ev, {keys:,} keys", n, med)
    print(f"  many keys: {med} (load {_load()})", flush=True)
    return [row]


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks engine")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument(
        "--only", choices=["per_event", "p95", "hopping", "many_keys", "threads"], default=None
    )
    ap.add_argument("--threads", type=int, default=1, help="windowagg, DuckDB and polars threads")
    args = ap.parse_args(argv)
    if args.only == "threads":  # polars on its default threads: every core
        return _threads_only(args.repeats, args.quick)
    os.environ.setdefault("POLARS_MAX_THREADS", str(args.threads))
    WA_THREADS[0] = args.threads

    import duckdb

    try:
        import polars as pl
    except ImportError:  # pragma: no cover - polars is in the bench extra
        pl = None
    con = duckdb.connect()
    con.execute(f"SET threads TO {args.threads}")
    con.execute("SET enable_progress_bar = false")
    # warm-up, untimed: imports, first queries
    tiny = per_event_data(2_000)
    con.register("df", tiny[["t", "v"]])
    _wa_per_event(tiny, 100 * GAP_US, ["max(v)", "sum(v)", "p95(v)"])
    _duck_per_event(con, 100 * GAP_US, "max(v) OVER w, quantile_disc(v, 0.95) OVER w")
    if pl is not None:
        _polars_per_event(pl, pl.from_pandas(tiny[["t", "v"]]), 100 * GAP_US)
    print(f"load average before: {_load()}", flush=True)
    started = time.strftime("%H:%M:%S", time.gmtime())
    q = args.quick
    tables: dict[str, Any] = {}
    headers = ["workload", "windowagg ev/s", "windowagg s", "DuckDB ratio", "polars ratio"]
    if args.only in (None, "per_event"):
        dens = [100, 1_000, 10_000] if q else [100, 1_000, 10_000, 100_000]
        rows = bench_per_event(con, pl, dens, 20_000 if q else 300_000, args.repeats)
        tables["per_event"] = rows
        print_table("per-event (t - W, t] max+sum, 1 key, out of order <= 5 s", headers, rows)
    if args.only in (None, "p95"):
        dens = [100, 1_000] if q else [100, 1_000, 10_000]
        rows = bench_p95(con, dens, 10_000 if q else 50_000, args.repeats)
        tables["p95"] = rows
        print_table(
            "per-event exact p95, 1 key",
            ["workload", "windowagg ev/s", "windowagg s", "DuckDB ratio", "identical"],
            rows,
        )
    if args.only in (None, "hopping"):
        rows = bench_hopping(con, pl, 100_000 if q else 1_000_000, 10 if q else 100, args.repeats)
        tables["hopping"] = rows
        print_table("hopping 10 min / 10 s", headers, rows)
    if args.only in (None, "many_keys"):
        n, keys = (100_000, 10_000) if q else (1_000_000, 100_000)
        rows = bench_many_keys(con, pl, n, keys, args.repeats)
        tables["many_keys"] = rows
        print_table("many small keys", headers, rows)
    print(f"load average after: {_load()} (started {started} UTC)", flush=True)
    if not q:
        save_results("engine", {"started_utc": started, "repeats": args.repeats, **tables})
    return 0


def _threads_only(repeats: int, quick: bool) -> int:
    """``--only threads``: :func:`benchmarks.engine_threads.bench_threads`, printed and
    saved (``results/engine_threads.json``)."""
    import polars as pl

    from benchmarks.engine_threads import HEADERS, bench_threads

    print(f"load average before: {_load()}; polars threads: {pl.thread_pool_size()}", flush=True)
    started = time.strftime("%H:%M:%S", time.gmtime())
    rows = bench_threads(pl, repeats, quick)
    print_table("windowagg on 1 and 2 threads, polars on its default threads", HEADERS, rows)
    print(f"load average after: {_load()} (started {started} UTC)", flush=True)
    if not quick:
        save_results("engine_threads", {"started_utc": started, "repeats": repeats, "rows": rows})
    return 0
