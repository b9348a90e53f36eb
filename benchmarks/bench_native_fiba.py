"""Native FiBA figures (issue 11): ``python -m benchmarks native_fiba [--quick] [--repeats R]
[--cases single,slide,matmul,range,memory]``.

Every figure interleaves the native and the pure-Python FiBA run for run and reports
medians; the load average is printed beside them (the machine is shared).

* single Python calls, w = 10^6, min_arity 4, Sum and Max: rounds of evict + insert +
  query (calls/s = 3 x rounds/s);
* ``slide`` (numpy buffers) over the same window: events/s, at d = 0, 10^3 and 10^5
  (the paper's generator: every insert lands d entries before the youngest), over a tree
  packed by ``bulk_insert``; at d = 0 also in the steady state (after one untimed
  ``slide`` of as many events);
* a Python 2x2-matrix monoid (MatMul2x2, generic path) through native vs pure Python;
* ``range_query_many`` over a 10^5-entry FiBA with Composite(Max(), Sum());
* memory: node bytes per entry at 10^6 (Sum), built by ``bulk_insert`` and by sliding,
  and the RSS growth of the process.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

import numpy as np

from benchmarks.harness import machine, median, print_table, save_results, time_once
from windowagg.monoids import Composite, MatMul2x2, Max, Sum
from windowagg.ooo import FiBA

MU = 4


def _rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _filled(m: Any, backend: Any, w: int, mu: int = MU) -> Any:
    f = FiBA(m, min_arity=mu, backend=backend)
    f.bulk_insert(np.arange(w, dtype=np.int64), np.ones(w))
    return f


def single_calls(m: Any, backend: Any, w: int, rounds: int) -> float:
    f = _filled(m, backend, w)
    ev, ins, q = f.evict, f.insert, f.query

    def run() -> None:
        for i in range(w, w + rounds):  # local names: three Python calls per round
            ev(i - w)
            ins(i, 1.0)
            q()

    return rounds / time_once(run)


def slide_rate(m: Any, backend: Any, w: int, rounds: int, d: int, warm: bool = False) -> float:
    """Events/s of one ``slide`` of *rounds* events over a fresh tree packed by
    ``bulk_insert``; *warm*: over the same tree after one untimed ``slide`` of *rounds*
    events, when its nodes have the fill that appends and evictions leave (a running
    stream's steady state: the packed tree's first slide splits more nodes than it frees)."""
    f = FiBA(m, min_arity=MU, backend=backend)
    big = 10**12
    base = np.arange(w - d, dtype=np.int64)
    f.bulk_insert(np.concatenate([base, big + np.arange(d, dtype=np.int64)]), np.ones(w))
    vals = np.ones(rounds)
    out = np.empty(rounds)

    def steps(start: int) -> tuple[Any, Any]:
        """Each step lands d before the youngest and evicts the oldest."""
        times = np.arange(w - d + start, w - d + start + rounds, dtype=np.int64)
        return times, np.arange(start, start + rounds, dtype=np.int64)

    if warm:
        times, upto = steps(0)
        f.slide(times, vals, evict_upto=upto, out=out)
    times, upto = steps(rounds if warm else 0)
    return rounds / time_once(lambda: f.slide(times, vals, evict_upto=upto, out=out))


def matmul_rate(backend: Any, w: int, rounds: int) -> float:
    f = FiBA(MatMul2x2(), min_arity=MU, backend=backend)
    f.bulk_insert([(t, (1, t % 3, 0, 1)) for t in range(w)])
    ev, ins, q = f.evict, f.insert, f.query

    def run() -> None:
        for i in range(w, w + rounds):
            ev(i - w)
            ins(i, (1, 0, i % 3, 1))
            q()

    return rounds / time_once(run)


def range_rate(backend: Any, n: int, queries: int) -> float:
    f = FiBA(Composite(Max(), Sum(), fan_out=True), min_arity=MU, backend=backend)
    rng = np.random.default_rng(0)
    f.bulk_insert(np.arange(n, dtype=np.int64), rng.random(n))
    lo = rng.integers(0, n, queries)
    hi = lo + rng.integers(0, 1000, queries)
    return queries / time_once(lambda: f.range_query_many(lo, hi))


def memory(n: int, mu: int) -> dict[str, float]:
    before = _rss()
    f: Any = _filled(Sum(), "native", n, mu)
    bulk = f._node_bytes / n
    grown = (_rss() - before) / n
    g: Any = FiBA(Sum(), min_arity=mu, backend="native")
    g.slide(np.arange(n, dtype=np.int64), np.ones(n))
    slid = g._node_bytes / n
    return {"bulk_node_B": bulk, "bulk_rss_B": grown, "slide_node_B": slid}


GROUPS = ("single", "slide", "matmul", "range", "memory")


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks native_fiba")
    ap.add_argument("--quick", action="store_true", help="w = 10^5, results not saved")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument(
        "--cases",
        default=",".join(GROUPS),
        help=f"comma-separated figure groups to run, of {', '.join(GROUPS)} (default: all)",
    )
    args = ap.parse_args(argv)
    quick, reps = args.quick, args.repeats
    chosen = set(args.cases.split(","))
    if not chosen <= set(GROUPS):
        ap.error(
            f"unknown --cases {sorted(chosen - set(GROUPS))}; choose among {', '.join(GROUPS)}"
        )
    w = 10**5 if quick else 10**6
    print(f"load average {os.getloadavg()}; w={w}, min_arity={MU}, medians of {reps}")
    res: dict[str, Any] = {"machine": machine(), "w": w, "load_start": os.getloadavg()}
    rows = []

    def pair(fn: Any, n_native: Any, n_python: Any) -> tuple[float, float]:
        """Interleaved runs (native, python, native, ...): both medians."""
        nat, py = [], []
        for _ in range(reps):
            nat.append(fn("native", n_native))
            if n_python:
                py.append(fn("python", n_python))
        return median(nat), (median(py) if py else float("nan"))

    for name, m in (("Sum", Sum()), ("Max", Max())):
        if "single" in chosen:
            nat, py = pair(lambda b, r, m=m: single_calls(m, b, w, r), 200_000, 20_000)
            rows.append([f"{name} single calls (rounds/s)", nat, py, 3 * nat])
        if "slide" in chosen:
            s0 = median([slide_rate(m, "native", w, 10**6, 0) for _ in range(reps)])
            rows.append([f"{name} slide d=0 (events/s)", s0, "", ""])
            steady = median([slide_rate(m, "native", w, 10**6, 0, True) for _ in range(reps)])
            rows.append([f"{name} slide d=0, steady (events/s)", steady, "", ""])
            for d in (10**3, 10**5):
                sd = median([slide_rate(m, "native", w, 10**6 // 4, d) for _ in range(reps)])
                rows.append([f"{name} slide d={d} (events/s)", sd, "", sd / s0])
    if "matmul" in chosen:
        mm_n, mm_p = pair(lambda b, r: matmul_rate(b, 10**4, r), 20_000, 20_000)
        rows.append(["MatMul2x2 single calls (rounds/s)", mm_n, mm_p, mm_n / mm_p])
    if "range" in chosen:
        rq, rq_p = pair(lambda b, q: range_rate(b, 10**5, q), 10**5, 10**4)
        rows.append(["range_query_many Composite(Max,Sum) (queries/s)", rq, rq_p, rq / rq_p])
    res["rows"] = rows
    mem = (
        {f"mu={mu}": memory(10**6 if not quick else 10**5, mu) for mu in (4, 32)}
        if "memory" in chosen
        else {}
    )
    res["memory"] = mem
    res["load_end"] = os.getloadavg()
    print_table("native FiBA", ["figure", "native", "python", "ratio (or calls/s)"], rows)
    for k, v in mem.items():
        print(f"memory {k}: " + ", ".join(f"{a}={b:.1f}" for a, b in v.items()))
    print(f"load average at the end {os.getloadavg()}")
    if not quick and chosen == set(GROUPS):  # a partial run does not replace the saved figures
        save_results("native_fiba", res)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
