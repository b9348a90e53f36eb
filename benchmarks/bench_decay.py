"""Decay suite: ``ewm_mean`` per key through ``windowagg.pandas.window_agg`` against polars
``ewm_mean_by(...).over(key)`` and pandas ``groupby().ewm(halflife=, times=).mean()``.

1M events (``--n``), 100 keys (``--keys``), strictly increasing times about 30 s apart
(distinct: pandas' positional ties would differ from ours, docs/decay.md), values normal;
half-life 1 hour. No ``size``: one answer per event over its key's history.

1. in-order input: windowagg (pandas frame in, int64 microseconds) vs polars (its own frame,
   ``ewm_mean_by("t", half_life="1h").over("k")``) vs pandas; windowagg's answers must equal
   pandas' (adjust=True) to 1e-9 of ``max(|answer|, mean |v|)`` (pandas' own recursion
   carries ~1e-10 absolute error over 10^4 events of a key; both are also checked against
   exact ``math.fsum`` sums on a sample). (polars' ``ewm_mean_by`` is the adjust=False
   recurrence: its answers differ at each key's start, so they are timed only.)
2. shuffled input: windowagg on the shuffled frame vs polars ``sort("t")`` then the same
   ``ewm_mean_by`` (a peer must sort first); windowagg's answers must equal case 1's.

Contenders run interleaved in one process (the order rotates every repetition), medians of
``--repeats``; ratio = peer / windowagg (above 1: windowagg is faster). ``uptime``'s load
is printed before and after each case. Then where windowagg's time goes (cProfile of one
call, top functions by own time).

``--floor`` adds to case 1 what any pandas-in, pandas-out ``window_agg`` over the same
kernel must do (factorize the key, one stable sort by its code, gather t and v, the native
``decay_slices``, the results frame with UTC times): the floor under windowagg's call.

Run: ``.venv/bin/python -m benchmarks decay [--n N] [--keys K] [--repeats R] [--no-pandas]
[--floor]``.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
from typing import Any

import numpy as np
import pandas as pd

from benchmarks.bench_engine import interleave
from benchmarks.harness import print_table, save_results

US = 1_000_000
AGG = "ewm_mean(v, half_life=1h)"


def _load() -> str:
    a, b, c = os.getloadavg()
    return f"{a:.2f} {b:.2f} {c:.2f}"


def data(n: int, keys: int, seed: int = 30) -> pd.DataFrame:
    """n events of *keys* keys in time order, distinct int64 microsecond times."""
    rng = np.random.default_rng(seed)
    t = 1_700_000_000 * US + np.cumsum(rng.integers(1, 60 * US, n))
    return pd.DataFrame(
        {"k": rng.integers(0, keys, n).astype(np.int64), "t": t, "v": rng.normal(20, 8, n)}
    )


def ours(df: pd.DataFrame) -> pd.DataFrame:
    from windowagg.pandas import window_agg

    out = window_agg(df, "k", "t", [AGG], time_unit="us")
    assert not len(out.rejects)
    res: pd.DataFrame = out.results
    return res


def pandas_ewm(df: pd.DataFrame) -> np.ndarray:
    """pandas' answers in (key, time) order."""
    s = df.assign(ts=pd.to_datetime(df["t"], unit="us")).sort_values(["k", "t"])
    got = s.set_index("ts").groupby("k")["v"]
    res = got.apply(lambda x: x.ewm(halflife=pd.Timedelta("1h"), times=x.index).mean())
    out: np.ndarray = res.to_numpy()
    return out


def exact_errors(df: pd.DataFrame, got: np.ndarray, want: np.ndarray) -> tuple[float, float]:
    """Largest absolute error of windowagg's and pandas' answers for every 25th event of
    key 7, against the exact decayed mean (``math.fsum`` of the weighted values)."""
    import math

    mask = (df.sort_values(["k", "t"])["k"] == 7).to_numpy()
    key = df[df["k"] == 7].sort_values("t")
    ts, vs = key["t"].tolist(), key["v"].tolist()
    ours_k, theirs_k = got[mask], want[mask]
    h = 3600.0 * US
    worst = [0.0, 0.0]
    for j in range(0, len(ts), 25):
        ws = [2.0 ** (-(ts[j] - ts[i]) / h) for i in range(j + 1)]
        exact = math.fsum(w * v for w, v in zip(ws, vs, strict=False)) / math.fsum(ws)
        worst[0] = max(worst[0], abs(float(ours_k[j]) - exact))
        worst[1] = max(worst[1], abs(float(theirs_k[j]) - exact))
    return worst[0], worst[1]


def polars_frame(df: pd.DataFrame) -> Any:
    import polars as pl

    return pl.from_pandas(df).with_columns(pl.from_epoch("t", time_unit="us"))


def polars_ewm(pdf: Any, sort: bool) -> Any:
    import polars as pl

    if sort:
        pdf = pdf.sort("t")
    return pdf.select(pl.col("v").ewm_mean_by("t", half_life="1h").over("k"))


def floor(df: pd.DataFrame) -> pd.DataFrame:
    """The floor of windowagg's call (see the module docstring): its answers, none of its
    checks (no validation, no rejects, integer keys, the native core built)."""
    import windowagg._native._core as core

    codes, uniq = pd.factorize(df["k"].to_numpy(), sort=False)
    order = np.argsort(codes.astype(np.int16), kind="stable")
    t, v = df["t"].to_numpy()[order], df["v"].to_numpy()[order]
    counts = np.bincount(codes)
    starts = np.concatenate([[0], np.cumsum(counts)])
    lo = np.repeat(starts[:-1], counts)
    hi = np.arange(1, len(t) + 1, dtype=np.int64)
    s, w = np.empty(len(t)), np.empty(len(t))
    core.decay_slices(t, v, lo, hi, t, 3600.0 * US, s, w)

    def utc(us: np.ndarray) -> pd.DatetimeIndex:
        return pd.DatetimeIndex((us * 1000).view("datetime64[ns]")).tz_localize("UTC")

    return pd.DataFrame(
        {"k": np.repeat(uniq, counts), "window_start": utc(t[lo]), "window_end": utc(t),
         "ewm_mean_v": s / w}
    )  # fmt: skip


def profile(df: pd.DataFrame, top: int = 12) -> str:
    pr = cProfile.Profile()
    pr.enable()
    ours(df)
    pr.disable()
    buf = io.StringIO()
    pstats.Stats(pr, stream=buf).sort_stats("tottime").print_stats(top)
    return buf.getvalue()


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks decay")
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--keys", type=int, default=100)
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--no-pandas", action="store_true", help="time pandas' ewm once only")
    ap.add_argument("--quick", action="store_true", help="100k events, 3 repeats")
    ap.add_argument("--floor", action="store_true", help="time the floor under windowagg's call")
    args = ap.parse_args(argv)
    n, repeats = (100_000, 3) if args.quick else (args.n, args.repeats)
    df = data(n, args.keys)
    shuffled = df.sample(frac=1.0, random_state=1).reset_index(drop=True)
    pl_df, pl_shuffled = polars_frame(df), polars_frame(shuffled)
    ours(df.head(1000))  # imports, the native core
    results: dict[str, Any] = {"n": n, "keys": args.keys, "repeats": repeats}
    rows = []

    print(f"load before (1/5/15 min): {_load()}")
    want = pandas_ewm(df)
    contenders = {
        "windowagg": lambda: ours(df),
        "polars ewm_mean_by.over": lambda: polars_ewm(pl_df, sort=False),
    }
    if not args.no_pandas:
        contenders["pandas groupby.ewm"] = lambda: pandas_ewm(df)
    if args.floor:
        contenders["floor: factorize, sort, gather, kernel, frame"] = lambda: floor(df)
    med, ans = interleave(contenders, repeats)
    got = ans["windowagg"]["ewm_mean_v"].to_numpy()
    # relative to max(|answer|, mean |v|): an answer near 0 has no relative accuracy
    scale = np.maximum(np.abs(want), float(np.abs(df["v"]).mean()))
    rel = float(np.max(np.abs(got - want) / scale))
    assert rel <= 1e-9, rel
    exact = exact_errors(df, got, want)
    load_in = _load()
    print(f"load after: {load_in}")
    for name, s in med.items():
        rows.append(["in order", name, f"{s:.3f}", f"{s / med['windowagg']:.2f}", load_in])
    results["in_order"] = {"seconds": med, "max_scaled_diff_vs_pandas": rel, "load": load_in}

    print(f"load before (1/5/15 min): {_load()}")
    med2, ans2 = interleave(
        {
            "windowagg": lambda: ours(shuffled),
            "polars sort + ewm_mean_by.over": lambda: polars_ewm(pl_shuffled, sort=True),
        },
        repeats,
    )
    got2 = ans2["windowagg"]["ewm_mean_v"].to_numpy()
    assert np.array_equal(got2, got), "shuffled input must give the in-order answers"
    load_sh = _load()
    print(f"load after: {load_sh}")
    for name, s in med2.items():
        rows.append(["shuffled", name, f"{s:.3f}", f"{s / med2['windowagg']:.2f}", load_sh])
    results["shuffled"] = {"seconds": med2, "load": load_sh}

    print_table(
        f"ewm_mean per key, {n:,} events, {args.keys} keys, half-life 1 h "
        f"(medians of {repeats}; ratio = time / windowagg's)",
        ["input", "contender", "seconds", "ratio", "load 1/5/15"],
        rows,
    )
    print(
        f"windowagg vs pandas ewm (adjust=True): max |difference| / max(|answer|, mean |v|) "
        f"{rel:.3g}; against exact sums (math.fsum, every 25th event of key 7): windowagg "
        f"{exact[0]:.3g}, pandas {exact[1]:.3g} (absolute)"
    )
    results["exact_abs_error"] = {"windowagg": exact[0], "pandas": exact[1]}
    prof = profile(df)
    print(prof)
    results["profile"] = prof
    save_results("decay", results)
    return 0
