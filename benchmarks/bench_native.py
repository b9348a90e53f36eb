"""The compiled core's figures (issue 11): native against Python, interleaved, medians.

``python -m benchmarks native [--quick] [--repeats R]``

- FIFO, window w = 10^6, TwoStacksLite and DABALite, Sum and Max: one op = evict + insert +
  query. *single calls*: three Python calls per op (target >= 8M ops/s native); *slide*:
  ``slide(values, out=buffer)`` over a float64 array (target >= 50M events/s native).
- OrderStatistics with 10^5 values: one op = insert + evict + median (target >= 2M ops/s),
  as single calls and through ``slide``: *slide* with ``evict`` as a list of one-value
  float64 arrays (one per step, the form the first figures used), *slide1d* with ``evict``
  as one float64 array of one value per step.

Native and Python runs alternate (native, python, native, ...) so that the load of this
shared machine hits both alike; the table shows medians over the repeats and the load
average before and after. Results: ``benchmarks/results/native[_quick].json``.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable
from typing import Any

import numpy as np

from benchmarks.harness import RESULTS, median, time_once
from windowagg import OrderStatistics, native_available
from windowagg.fifo import DABALite, TwoStacksLite
from windowagg.monoids import Max, Sum


def _fifo_single(cls: Any, monoid: Any, backend: str, w: int, rounds: int) -> Callable[[], None]:
    win = cls(monoid, backend=backend)
    win.bulk_insert(np.arange(w, dtype=np.float64))
    xs = np.random.default_rng(1).random(rounds).tolist()

    def run() -> None:
        ev, ins, q = win.evict, win.insert, win.query  # bound methods cached: hot loop
        for x in xs:
            ev()
            ins(x)
            q()

    return run


def _fifo_slide(cls: Any, monoid: Any, backend: str, w: int, rounds: int) -> Callable[[], None]:
    win = cls(monoid, backend=backend)
    win.bulk_insert(np.arange(w, dtype=np.float64))
    xs = np.random.default_rng(2).random(rounds)
    out = np.empty(rounds)

    def run() -> None:
        win.slide(xs, 1, out)

    return run


def _os_single(backend: str, n: int, rounds: int) -> Callable[[], None]:
    s = OrderStatistics(backend=backend)
    rng = np.random.default_rng(3)
    base = rng.random(n)
    s.bulk_insert(base)
    xs = rng.random(rounds).tolist()
    gone = np.concatenate([base, xs])[:rounds].tolist()

    def run() -> None:
        ins, ev, q = s.insert, s.evict, s.quantile  # bound methods cached: hot loop
        for x, y in zip(xs, gone, strict=True):
            ins(x)
            ev(y)
            q(0.5)

    return run


def _os_slide(backend: str, n: int, rounds: int) -> Callable[[], None]:
    s = OrderStatistics(backend=backend)
    rng = np.random.default_rng(4)
    base = rng.random(n)
    s.bulk_insert(base)
    xs = rng.random(rounds)
    allv = np.concatenate([base, xs])
    gone = [allv[i : i + 1] for i in range(rounds)]
    out = np.empty(rounds)

    def run() -> None:
        s.slide(xs, gone, 0.5, out)

    return run


def _os_slide_flat(backend: str, n: int, rounds: int) -> Callable[[], None]:
    """As _os_slide with the evictions as one float64 array, one value per step."""
    s = OrderStatistics(backend=backend)
    rng = np.random.default_rng(4)
    base = rng.random(n)
    s.bulk_insert(base)
    xs = rng.random(rounds)
    gone = np.concatenate([base, xs])[:rounds]
    out = np.empty(rounds)

    def run() -> None:
        s.slide(xs, gone, 0.5, out)

    return run


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks native")
    ap.add_argument("--quick", action="store_true", help="small sizes, for a smoke run")
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args(argv)
    if not native_available():
        print("the compiled core is not built: bash scripts/build_native.sh")
        return 1
    w = 10_000 if args.quick else 1_000_000
    n_os = 10_000 if args.quick else 100_000
    single_rounds = 20_000 if args.quick else 300_000
    slide_rounds = 100_000 if args.quick else 3_000_000
    os_rounds = 20_000 if args.quick else 200_000
    load_before = os.getloadavg()
    # (label, mode, ops per run, runner factory, fresh runner per repeat?)
    cases: list[tuple[str, str, int, Callable[[str], Callable[[], None]], bool]] = []
    for cls in (TwoStacksLite, DABALite):
        for m in (Sum(), Max()):
            label = f"{cls.__name__} {m!r}"
            cases.append(
                (
                    label,
                    "single",
                    single_rounds,
                    lambda b, c=cls, mm=m: _fifo_single(c, mm, b, w, single_rounds),
                    False,
                )
            )
            cases.append(
                (
                    label,
                    "slide",
                    slide_rounds,
                    lambda b, c=cls, mm=m: _fifo_slide(c, mm, b, w, slide_rounds),
                    False,
                )
            )
    cases.append(
        ("OrderStatistics", "single", os_rounds, lambda b: _os_single(b, n_os, os_rounds), True)
    )
    cases.append(
        ("OrderStatistics", "slide", os_rounds, lambda b: _os_slide(b, n_os, os_rounds), True)
    )
    cases.append(
        (
            "OrderStatistics",
            "slide1d",
            os_rounds,
            lambda b: _os_slide_flat(b, n_os, os_rounds),
            True,
        )
    )
    rows = []
    for label, mode, rounds, factory, fresh in cases:
        runs = {"native": factory("native"), "python": factory("python")}
        times: dict[str, list[float]] = {"native": [], "python": []}
        for _ in range(args.repeats):
            for backend in ("native", "python"):  # interleaved
                if fresh:  # the run consumed its input: rebuild it (untimed)
                    runs[backend] = factory(backend)
                times[backend].append(time_once(runs[backend]))
        nat, py = rounds / median(times["native"]), rounds / median(times["python"])
        rows.append(
            {
                "case": label,
                "mode": mode,
                "native_ops_s": nat,
                "python_ops_s": py,
                "speedup": nat / py,
            }
        )
        print(
            f"{label:30s} {mode:7s} native {nat / 1e6:8.2f} M/s   python {py / 1e6:7.2f} M/s"
            f"   x{nat / py:6.1f}",
            flush=True,
        )
    load_after = os.getloadavg()
    print(f"load average before {load_before}, after {load_after} (2 cores, shared machine)")
    import json

    RESULTS.mkdir(exist_ok=True)
    out = RESULTS / ("native_quick.json" if args.quick else "native.json")
    out.write_text(
        json.dumps(
            {
                "window": w,
                "os_size": n_os,
                "rows": rows,
                "loadavg_before": load_before,
                "loadavg_after": load_after,
            },
            indent=2,
        )
        + "\n"
    )
    print(f"wrote {out}")
    return 0
