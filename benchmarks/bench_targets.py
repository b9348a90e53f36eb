"""The issues' headline throughput figures, measured side by side in one short run.

``python -m benchmarks targets [--quick]``: window 10^6 (quick: 10^5), Sum, one round =
evict the oldest + insert one + query, as in the papers. Every structure is measured in the
same process, interleaved over ``repeats`` runs, next to a *null* window (three empty
methods: the interpreter's floor for the driver loop), so that the ratios are meaningful
on a shared machine even when the absolute figures move. The per-area suites (fifo, ooo,
mta) have the full sweeps; this one answers "where are we against the targets" in a minute.
"""

from __future__ import annotations

import argparse
import time
from collections import deque
from collections.abc import Callable
from typing import Any

from benchmarks.harness import median, print_table, save_results, time_once
from windowagg.fifo import AMTA, DABA, DABALite, TwoStacks, TwoStacksLite
from windowagg.monoids import Sum
from windowagg.ooo import FiBA

# issue figures, in rounds/s (None: no absolute target, see the ratio column)
TARGETS: dict[str, float | None] = {
    "DABA storage floor (deque traffic only)": 3.4e6,
    "DABA": 3.4e6,
    "TwoStacksLite": 3.4e6,
    "FiBA (default min_arity 8)": 1.0e6,
    "FiBA(min_arity=32)": 1.0e6,
}


class _Null:
    """Three empty methods: what the driver loop costs with no aggregation at all."""

    def insert(self, v: Any) -> None:
        pass

    def evict(self) -> None:
        pass

    def query(self) -> Any:
        return None


class _DABAStorageFloor:
    """DABA's average deque traffic per round at window 10^6, with no logic and no combine.

    Counted on ``DABA(Sum())`` (a counting deque subclass, 10^4 steady-state rounds):
    per round 4 ``popleft``, 2 ``pop``, 5 ``append``, 1 ``appendleft`` and 4 end reads
    (``d[0]``/``d[-1]``). A DABA round cannot cost less than this in CPython; if this row is
    below the target, so is any faithful DABA on deques.
    """

    __slots__ = ("a", "b", "c", "d", "e", "f")

    def __init__(self) -> None:
        self.a, self.b, self.c = deque(range(64)), deque(range(64)), deque(range(64))
        self.d, self.e, self.f = deque(range(64)), deque(range(64)), deque(range(64))

    def insert(self, v: Any) -> None:
        self.a.append(v)
        self.b.append(v)
        d = self.d
        d.append(d[-1])
        e = self.e
        e.appendleft(e.pop())
        c = self.c
        f = self.f
        f.append(c[0])
        c.popleft()
        f.append(f.pop())

    def evict(self) -> None:
        self.a.popleft()
        self.b.popleft()
        self.c.append(self.d.popleft())

    def query(self) -> Any:
        return self.a[0] + self.b[-1]


class _SumSubclass(Sum):
    """``Sum`` under another type: takes the generic (non-inlined) path everywhere."""

    __slots__ = ()


def _fifo_runner(factory: Callable[[], Any], n: int, rounds: int) -> Callable[[], None]:
    w = factory()
    for i in range(n):
        w.insert(i)
    ins, ev, q = w.insert, w.evict, w.query  # bound methods cached: the loop is the measurement

    def run() -> None:
        for i in range(rounds):
            ev()
            ins(i)
            q()

    return run


def _fiba_runner(
    min_arity: int | None, n: int, rounds: int, monoid: Sum | None = None
) -> Callable[[], None]:
    m = Sum() if monoid is None else monoid
    w = FiBA.from_sorted_partials(m, [(i, i % 101 + 1) for i in range(n)], min_arity=min_arity)
    ins, ev, q, old = w.insert, w.evict, w.query, w.oldest
    clock = [n]

    def run() -> None:
        t0 = clock[0]
        for t in range(t0, t0 + rounds):
            ev(old())
            ins(t, t % 101 + 1)
            q()
        clock[0] = t0 + rounds

    return run


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks targets")
    ap.add_argument("--quick", action="store_true", help="window 10^5, fewer rounds")
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args(argv)
    n = 10**5 if args.quick else 10**6
    # rounds = n: each run spans one full turnover of the window, so amortized work such as
    # a Two-Stacks flip of n entries is counted at its steady-state rate
    rounds = n

    runners: dict[str, Callable[[], None]] = {
        "null (3 empty methods)": _fifo_runner(_Null, 0, rounds),
        "DABA storage floor (deque traffic only)": _fifo_runner(_DABAStorageFloor, 0, rounds),
        "DABA": _fifo_runner(lambda: DABA(Sum()), n, rounds),
        "DABALite": _fifo_runner(lambda: DABALite(Sum()), n, rounds),
        "TwoStacks": _fifo_runner(lambda: TwoStacks(Sum()), n, rounds),
        "TwoStacksLite": _fifo_runner(lambda: TwoStacksLite(Sum()), n, rounds),
        "TwoStacksLite (generic path)": _fifo_runner(
            lambda: TwoStacksLite(_SumSubclass()), n, rounds
        ),
        "AMTA": _fifo_runner(lambda: AMTA(Sum()), n, rounds),
        "FiBA (default min_arity 8)": _fiba_runner(None, n, rounds),
        "FiBA(min_arity=32)": _fiba_runner(32, n, rounds),
        # FiBA has no Sum-specific path; a subclass only loses operator.add as its combine
        "FiBA (Sum subclass, default min_arity 8)": _fiba_runner(None, n, rounds, _SumSubclass()),
    }
    rates: dict[str, list[float]] = {k: [] for k in runners}
    for _ in range(args.repeats):  # interleaved: every structure sees the same load drift
        for name, run in runners.items():
            rates[name].append(rounds / time_once(run))
    med = {k: median(v) for k, v in rates.items()}
    null = med["null (3 empty methods)"]
    rows = []
    for name, r in med.items():
        target = TARGETS.get(name)
        rows.append(
            (
                name,
                r / 1e6,
                f"{null / r:.1f}" if r else "-",
                f"{target / 1e6:.1f}" if target else "-",
                f"{r / target:.2f}" if target else "-",
            )
        )
    table = print_table(
        f"Rounds/s (evict+insert+query), Sum, window {n:,}, median of {args.repeats} "
        f"interleaved runs of {rounds:,} rounds ({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())})",
        ["structure", "M rounds/s", "x null round cost", "target M/s", "share of target"],
        rows,
    )
    ratio = med["AMTA"] / med["DABA"]
    print(f"AMTA / DABA = {ratio:.2f} (issue 4 target >= 0.5)")
    save_results(
        "targets_quick" if args.quick else "targets",
        {
            "n": n,
            "rounds": rounds,
            "rates": rates,
            "median": med,
            "amta_over_daba": ratio,
            "table": table,
        },
    )
    return 0
