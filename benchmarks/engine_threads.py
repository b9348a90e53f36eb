"""The engine suite's scaling section (``python -m benchmarks engine --only threads``).

``windowagg.pandas.window_agg`` with ``threads=1`` and ``threads=2`` against polars with its
default threads (every core), on issue 40's five workloads and the suite's many-keys one:

1. hopping 10 min / 10 s, max/sum/count/mean, 1M events, 100 keys (``hopping_data``);
2. the same with exact p99;
3. hopping 1 h / 10 s, max/sum/count/mean;
4. 1 h / 10 s with exact p99;
5. ``ewm_mean(v, half_life=1h)`` per event over each key's whole history, 1M events, 100
   keys in time order (``bench_decay.data``); polars ``ewm_mean_by("t", half_life="1h")
   .over("k")`` (timed only: polars' ``ewm_mean_by`` is another estimator);
6. per-event ``(t - 1 h, t]`` max/sum/count over 100,000 keys (``bench_many_keys``' data);
7. the machine's own scaling, no windowagg (:func:`machine_kernels`): numpy kernels that
   release the GIL (a sort and a cumulative sum of 2M float64 each) on two halves, one
   after the other or on two threads: what two threads give any GIL-free work here (the
   floor of the ``1 / 2 threads`` ratio).

Contenders interleaved (rotating order), medians of ``repeats``; the load average is
printed per row. windowagg's two outputs are compared (equal, bit for bit) once per row;
polars' answers are timed only (its hopping windows omit those starting before a key's
first event). Ratios: ``1 thread / 2 threads`` (the scaling) and ``polars / 2 threads``
(above 1: windowagg is faster).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import pandas as pd

from benchmarks.bench_engine import polars_hopping

US = 1_000_000


def _load() -> str:
    a, b, c = os.getloadavg()
    return f"{a:.2f} {b:.2f} {c:.2f}"


def workloads(pl: Any, quick: bool) -> list[tuple[str, Callable[[int], Any], Callable[[], Any]]]:
    """``(label, windowagg(threads), polars())`` per row."""
    from benchmarks.bench_decay import data as decay_data
    from benchmarks.bench_engine import hopping_data
    from windowagg.pandas import window_agg

    n = 100_000 if quick else 1_000_000
    hop = hopping_data(n, 10 if quick else 100)
    hop_pl = pl.from_pandas(hop)
    ewm = decay_data(n, 10 if quick else 100)
    ewm_pl = pl.from_pandas(ewm).with_columns(pl.from_epoch("t", time_unit="us"))
    many = hopping_data(n, 10_000 if quick else 100_000)
    many_pl = pl.from_pandas(many)
    base = ["max(v)", "sum(v)", "count", "mean(v)"]

    def hopping(size_s: int, aggs: list[str]) -> Callable[[int], Any]:
        return lambda th: window_agg(
            hop, "k", "t", aggs, size=size_s, slide=10, time_unit="us", threads=th
        )

    def polars_many() -> Any:
        size = f"{3600 * US}i"
        return many_pl.sort("t").select(
            pl.col("k"),
            pl.col("t"),
            pl.col("v").rolling_max_by("t", window_size=size, closed="right").over("k"),
            pl.col("v").rolling_sum_by("t", window_size=size, closed="right").alias("s").over("k"),
        )

    ev = f"{n // 1000}k ev" if quick else f"{n // 1_000_000}M ev"
    return [
        (
            f"hopping 10 min / 10 s, max/sum/count/mean ({ev})",
            hopping(600, base),
            lambda: polars_hopping(pl, hop_pl, False, size_us=600 * US, slide_us=10 * US),
        ),
        (
            "same + exact p99",
            hopping(600, [*base, "p99(v)"]),
            lambda: polars_hopping(pl, hop_pl, True, size_us=600 * US, slide_us=10 * US),
        ),
        (
            "hopping 1 h / 10 s",
            hopping(3600, base),
            lambda: polars_hopping(pl, hop_pl, False, size_us=3600 * US, slide_us=10 * US),
        ),
        (
            "1 h / 10 s + exact p99",
            hopping(3600, [*base, "p99(v)"]),
            lambda: polars_hopping(pl, hop_pl, True, size_us=3600 * US, slide_us=10 * US),
        ),
        (
            "ewm_mean(v, half_life=1h) per event, whole history",
            lambda th: window_agg(
                ewm, "k", "t", ["ewm_mean(v, half_life=1h)"], time_unit="us", threads=th
            ),
            lambda: ewm_pl.select(pl.col("v").ewm_mean_by("t", half_life="1h").over("k")),
        ),
        (
            f"per-event 1 h max/sum/count, {many['k'].nunique():,} keys",
            lambda th: window_agg(
                many, "k", "t", ["max(v)", "sum(v)", "count"], size=3600, time_unit="us", threads=th
            ),
            polars_many,
        ),
    ]


def machine_kernels(quick: bool) -> tuple[Callable[[], Any], Callable[[], Any]]:
    """Two halves of GIL-free numpy work (``np.sort`` and ``np.cumsum`` of 2M float64 each;
    200k with *quick*): ``(one after the other, on two threads)``."""
    from concurrent.futures import ThreadPoolExecutor

    import numpy as np

    n = 200_000 if quick else 2_000_000
    rng = np.random.default_rng(40)
    halves = [rng.random(n), rng.random(n)]
    pool = ThreadPoolExecutor(2)

    def work(a: Any) -> float:
        return float(np.sort(a)[-1] + np.cumsum(a)[-1])

    return (lambda: [work(a) for a in halves]), (lambda: list(pool.map(work, halves)))


def bench_threads(pl: Any, repeats: int, quick: bool) -> list[list[Any]]:
    """One row per workload: windowagg's seconds on 1 and 2 threads, polars' seconds, the
    ratios, the load average after the row."""
    from benchmarks.bench_engine import interleave

    rows = []
    for label, ours, theirs in workloads(pl, quick):
        contenders: dict[str, Callable[[], Any]] = {
            "1 thread": lambda f=ours: f(1),
            "2 threads": lambda f=ours: f(2),
            "polars": theirs,
        }
        med, ans = interleave(contenders, repeats)
        one, two = ans["1 thread"], ans["2 threads"]
        pd.testing.assert_frame_equal(one.results, two.results, check_exact=True)
        pd.testing.assert_frame_equal(one.rejects, two.rejects, check_exact=True)
        a, b, p = med["1 thread"], med["2 threads"], med["polars"]
        rows.append([label, f"{a:.3f}", f"{b:.3f}", f"{a / b:.2f}", f"{p:.3f}", f"{p / b:.2f}"])
        rows[-1].append(_load())
        print(f"  {label}: {med} (load {_load()})", flush=True)
    serial, threaded = machine_kernels(quick)
    med, ans = interleave({"1 thread": serial, "2 threads": threaded}, repeats)
    assert ans["1 thread"] == ans["2 threads"]
    a, b = med["1 thread"], med["2 threads"]
    label = "the machine: numpy sort + cumsum of two halves (no windowagg)"
    rows.append([label, f"{a:.3f}", f"{b:.3f}", f"{a / b:.2f}", "-", "-", _load()])
    print(f"  {label}: {med} (load {_load()})", flush=True)
    return rows


HEADERS = [
    "workload",
    "1 thread s",
    "2 threads s",
    "1 / 2 threads",
    "polars s",
    "polars / 2 threads",
    "load after",
]
