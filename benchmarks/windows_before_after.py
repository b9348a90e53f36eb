"""The object API before and after a change: the `windows` workloads, two trees, interleaved.

Run: ``python -m benchmarks.windows_before_after BEFORE_PY AFTER_PY [--repeats R]``, where
each ``*_PY`` is a Python command that imports the tree to measure (e.g. a venv's python run
in that checkout, or a wrapper setting PYTHONPATH). Each workload runs in a fresh process,
before and after alternately, R times; the table gives medians of CPU-time events/s (what
the machine's other jobs disturb least) and of wall-clock events/s, their ratios, the
windows each emitted and the load average. Workloads (those of ``python -m benchmarks
windows``): 10 events/s, each up to 3 s out of order, ``max_out_of_orderness`` 3 s;
``SlidingWindows`` 10 min / 10 s (Sum, Max) one ``insert`` per event, and ``insert_many``
bursts of 1000; per-event windows of 10 min; ``CountWindows(Sum, 6000, every=100)``;
``SessionWindows(Sum, gap=50 ms)`` (a session closes every few events); ``SharedWindows(Sum,
[1 min, 10 min], 10 s)``.

Used for ``benchmarks/results/windows-2026-11-28.md``.
"""

from __future__ import annotations

import argparse
import os
import random
import shlex
import statistics
import subprocess
import sys
import time
from typing import Any

WORKLOADS = {
    "sum1": 20_000,
    "max1": 20_000,
    "burst": 20_000,
    "perevent": 3_000,
    "count": 3_000,
    "session": 3_000,
    "shared": 20_000,
}


def events(n: int, seed: int = 1) -> list[tuple[int, float]]:
    rng = random.Random(seed)
    return [(i * 100 - rng.randint(0, 3000), rng.random()) for i in range(n)]


def run_one(name: str, n: int) -> str:
    """One workload in this process: ``"wall <ev/s> cpu <ev/s> windows <emitted>"``."""
    from windowagg.monoids import Max, Sum
    from windowagg.windows import CountWindows, SessionWindows, SharedWindows, SlidingWindows

    ev = events(n)
    out = 0
    t0, c0 = time.perf_counter(), time.process_time()
    w: Any
    if name in ("sum1", "max1", "burst"):
        w = SlidingWindows(
            Max() if name == "max1" else Sum(), 600_000, 10_000, max_out_of_orderness=3000
        )
        if name == "burst":
            for i in range(0, n, 1000):
                out += len(w.insert_many(ev[i : i + 1000]))
        else:
            insert = w.insert  # bound method cached: this loop is what we time
            for t, v in ev:
                out += len(insert(t, v))
        out += len(w.close())
    elif name == "shared":
        w = SharedWindows(Sum(), [60_000, 600_000], 10_000, max_out_of_orderness=3000)
        insert = w.insert
        for t, v in ev:
            out += len(insert(t, v))
        out += len(w.close())
    else:
        if name == "perevent":
            w = SlidingWindows(Sum(), 600_000, None, max_out_of_orderness=3000)
        elif name == "session":
            w = SessionWindows(Sum(), 50, max_out_of_orderness=3000)
        else:
            w = CountWindows(Sum(), 6000, 100, max_out_of_orderness=3000)
        insert = w.insert
        for t, v in ev:
            out += len(insert(t, v))
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    return f"wall {n / wall:.0f} cpu {n / cpu:.0f} windows {out}"


def measure(python: str, name: str) -> tuple[float, float, int]:
    cmd = [*shlex.split(python), "-m", "benchmarks.windows_before_after", "--one", name]
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    got = subprocess.run(cmd, capture_output=True, text=True, timeout=900, cwd=here, check=True)
    f = got.stdout.split()
    return float(f[3]), float(f[1]), int(f[5])


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.windows_before_after")
    ap.add_argument("before", nargs="?")
    ap.add_argument("after", nargs="?")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--one", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.one:
        print(run_one(args.one, WORKLOADS[args.one]))
        return 0
    print(
        "| workload | events | before CPU ev/s | after CPU ev/s | after/before | "
        "before wall | after wall | after/before | windows before/after | load |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for name, n in WORKLOADS.items():
        res: dict[str, list[tuple[float, float, int]]] = {"b": [], "a": []}
        loads = []
        for _ in range(args.repeats):
            res["b"].append(measure(args.before, name))
            res["a"].append(measure(args.after, name))
            loads.append(os.getloadavg()[0])
        cpu = {k: statistics.median(x[0] for x in v) for k, v in res.items()}
        wall = {k: statistics.median(x[1] for x in v) for k, v in res.items()}
        print(
            f"| {name} | {n:,} | {cpu['b']:,.0f} | {cpu['a']:,.0f} | {cpu['a'] / cpu['b']:.2f} "
            f"| {wall['b']:,.0f} | {wall['a']:,.0f} | {wall['a'] / wall['b']:.2f} "
            f"| {res['b'][0][2]} / {res['a'][0][2]} | {min(loads):.1f}-{max(loads):.1f} |",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
