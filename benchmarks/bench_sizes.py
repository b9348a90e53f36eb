"""Sizes suite: several window sizes in one ``window_agg`` call, against the largest size
alone, three separate calls, DuckDB and polars computing the same three sizes.

Workload (issue 30): 1M events over one day, 100 keys (``bench_engine.hopping_data``),
windows of 5 min, 1 h and 1 day sliding every 5 min, max, sum and exact p99 of ``v``.

Contenders, run in the same process, interleaved (the order rotates every repetition),
medians of ``--repeats``; the load average is printed before and after:

- ``windowagg 3 sizes``: ``window_agg(df, "k", "t", aggs, size=[300, 3600, 86400],
  slide=300)`` (one call; columns ``max_v_5m`` ... ``p99_v_1d``);
- ``windowagg 1 d alone``: the same call with ``size=86400`` (the target: the three sizes
  in at most 1.5x its time);
- ``windowagg 3 calls``: one call per size (what sharing saves);
- ``duckdb``: the fairest formulation found for hopping windows of three sizes with an
  exact quantile: one row per window end of the largest size (each key's grid of 5 min
  ends, as a row at ``end - 1 us`` with a null ``v``) unioned with the events, three
  window frames ``PARTITION BY k ORDER BY t RANGE BETWEEN size - 1 PRECEDING AND CURRENT
  ROW`` (``[end - size, end)`` at the grid rows; aggregates skip the null ``v``),
  ``quantile_disc(v, 0.99)`` for p99, ``QUALIFY`` keeping the grid rows that hold an
  event. (Expanding every event into its windows, as ``bench_engine``'s hopping suite
  does, makes 288 rows per event for the 1 day windows: 288M rows.)
- ``polars``: one sort, then one ``group_by_dynamic(every=5m, period=size,
  group_by="k")`` per size (max, sum, ``quantile(0.99, "higher")``); timed only (polars
  omits the windows that start before a key's first event; the three frames are not
  joined, which favours polars).

windowagg's answers are checked against DuckDB's: every window end, max and p99 exactly,
sum to 1e-9 relative where the window holds events (DuckDB's sum of none is NULL,
windowagg's 0).

DuckDB and polars run on ``--threads`` threads (default 1: windowagg is one thread).

Run: ``.venv/bin/python -m benchmarks sizes [--quick] [--repeats R] [--threads T]
[--ours-only]`` (``--ours-only``: windowagg's three contenders alone, for many repetitions).
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd

from benchmarks.bench_engine import _load, hopping_data, interleave
from benchmarks.harness import print_table, save_results

US = 1_000_000
SLIDE = 300  # seconds
SIZES = [300, 3600, 86400]  # 5 min, 1 h, 1 day
LABELS = ["5m", "1h", "1d"]
AGGS = ["max(v)", "sum(v)", "p99(v)"]


def _wa(df: pd.DataFrame, size: Any) -> pd.DataFrame:
    from windowagg.pandas import window_agg

    out = window_agg(df, "k", "t", AGGS, size=size, slide=SLIDE, time_unit="us")
    assert not len(out.rejects)
    res: pd.DataFrame = out.results
    return res


def _wa_calls(df: pd.DataFrame) -> list[pd.DataFrame]:
    return [_wa(df, s) for s in SIZES]


def _duck_sql() -> str:
    s, big = SLIDE * US, SIZES[-1] * US
    frames = ", ".join(
        f"w{lab} AS (PARTITION BY k ORDER BY t RANGE BETWEEN {size * US - 1} PRECEDING "
        "AND CURRENT ROW)"
        for size, lab in zip(SIZES, LABELS, strict=True)
    )
    cols = ", ".join(
        f"max(v) OVER w{lab} AS max_{lab}, sum(v) OVER w{lab} AS sum_{lab}, "
        f"quantile_disc(v, 0.99) OVER w{lab} AS p99_{lab}"
        for lab in LABELS
    )
    return (
        "WITH grid AS ("
        f"  SELECT k, unnest(generate_series(min(t) // {s} * {s} + {s}, "
        f"    max(t) // {s} * {s} + {big}, {s})) - 1 AS t FROM df GROUP BY k), "
        "rows AS (SELECT k, t, v, false AS g FROM df "
        "  UNION ALL SELECT k, t, NULL::DOUBLE AS v, true AS g FROM grid) "
        f"SELECT k, t + 1 AS window_end, {cols}, count(v) OVER w1d AS n_1d FROM rows "
        f"WINDOW {frames} QUALIFY g AND n_1d > 0 ORDER BY k, window_end"
    )


def _duck(con: Any, sql: str) -> pd.DataFrame:
    res: pd.DataFrame = con.execute(sql).df()
    return res


def _polars(pl: Any, pdf: Any) -> list[Any]:
    srt = pdf.sort("t")
    return [
        srt.group_by_dynamic("t", every=f"{SLIDE * US}i", period=f"{size * US}i", group_by="k").agg(
            pl.col("v").max().alias("mx"),
            pl.col("v").sum().alias("sm"),
            pl.col("v").quantile(0.99, interpolation="higher").alias("p99"),
        )
        for size in SIZES
    ]


def _check(wa: pd.DataFrame, dk: pd.DataFrame) -> None:
    """windowagg's three sizes == DuckDB's: window ends, max and p99 exactly, sum."""
    assert len(wa) == len(dk), f"{len(wa)} rows vs DuckDB's {len(dk)}"
    end = wa["window_end"].astype("datetime64[us, UTC]").astype("int64").to_numpy()
    assert np.array_equal(wa["k"].to_numpy(), dk["k"].to_numpy())
    assert np.array_equal(end, dk["window_end"].to_numpy())
    for lab in LABELS:
        for ours, theirs in (("max_v", "max"), ("p99_v", "p99")):
            a = wa[f"{ours}_{lab}"].to_numpy(dtype=np.float64)
            b = dk[f"{theirs}_{lab}"].to_numpy(dtype=np.float64)
            np.testing.assert_array_equal(a, b, err_msg=f"{ours}_{lab}")
        a = wa[f"sum_v_{lab}"].to_numpy(dtype=np.float64)
        b = dk[f"sum_{lab}"].to_numpy(dtype=np.float64)
        held = ~np.isnan(b)
        assert np.all(a[~held] == 0.0)
        np.testing.assert_allclose(a[held], b[held], rtol=1e-9)


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks sizes")
    ap.add_argument("--quick", action="store_true", help="100k events, 10 keys")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--threads", type=int, default=1, help="DuckDB and polars threads")
    ap.add_argument(
        "--ours-only",
        action="store_true",
        help="windowagg's three contenders only (no DuckDB, polars, nor the check against "
        "DuckDB): many repetitions in little time, for the ratio on a loaded machine",
    )
    args = ap.parse_args(argv)
    os.environ.setdefault("POLARS_MAX_THREADS", str(args.threads))

    import duckdb

    try:
        import polars as pl
    except ImportError:  # pragma: no cover - polars is in the bench extra
        pl = None
    n, keys = (100_000, 10) if args.quick else (1_000_000, 100)
    df = hopping_data(n, keys)
    con = duckdb.connect()
    con.execute(f"SET threads TO {args.threads}")
    con.execute("SET enable_progress_bar = false")
    con.register("df", df)
    pdf = pl.from_pandas(df) if pl is not None else None
    sql = _duck_sql()
    # warm-up, untimed: imports, first queries
    tiny = hopping_data(5_000, 3)
    _wa(tiny, SIZES)
    print(f"load average before: {_load()}", flush=True)
    started = time.strftime("%H:%M:%S", time.gmtime())
    contenders: dict[str, Callable[[], Any]] = {
        "windowagg 3 sizes": lambda: _wa(df, SIZES),
        "windowagg 1 d alone": lambda: _wa(df, SIZES[-1]),
        "windowagg 3 calls": lambda: _wa_calls(df),
        "duckdb": lambda: _duck(con, sql),
    }
    if pl is not None:
        contenders["polars"] = lambda: _polars(pl, pdf)
    if args.ours_only:
        contenders = {k: f for k, f in contenders.items() if k.startswith("windowagg")}
    med, ans = interleave(contenders, args.repeats)
    if args.ours_only:
        ours, alone = med["windowagg 3 sizes"], med["windowagg 1 d alone"]
        print(
            f"3 sizes {ours:.3f} s, 1 d alone {alone:.3f} s, 3 calls "
            f"{med['windowagg 3 calls']:.3f} s (medians of {args.repeats}): 3 sizes / 1 d "
            f"alone {ours / alone:.2f}x (target <= 1.5); load average after: {_load()} "
            f"(started {started} UTC)",
            flush=True,
        )
        return 0
    _check(ans["windowagg 3 sizes"], ans["duckdb"])
    alone = ans["windowagg 1 d alone"]
    both = ans["windowagg 3 sizes"]
    assert np.array_equal(alone["max_v"].to_numpy(), both["max_v_1d"].to_numpy())
    load_after = _load()
    ours = med["windowagg 3 sizes"]
    rows = [
        [name, secs, secs / ours, n / secs]
        for name, secs in sorted(med.items(), key=lambda kv: kv[1])
    ]
    print_table(
        f"3 sizes (5 min, 1 h, 1 day; slide 5 min; max, sum, p99), {n:,} events, {keys} keys",
        ["contender", "median s", "time / windowagg 3 sizes", "events/s"],
        rows,
    )
    print(
        f"3 sizes / 1 d alone: {ours / med['windowagg 1 d alone']:.2f}x (target <= 1.5); "
        f"DuckDB / 3 sizes: {med['duckdb'] / ours:.2f}x (target >= 3); "
        + (f"polars / 3 sizes: {med['polars'] / ours:.2f}x (target >= 1.5)" if pl else ""),
        flush=True,
    )
    print(f"load average after: {load_after} (started {started} UTC)", flush=True)
    if not args.quick:
        save_results(
            "sizes",
            {
                "started_utc": started,
                "repeats": args.repeats,
                "medians_s": med,
                "load_after": load_after,
            },
        )
    return 0
