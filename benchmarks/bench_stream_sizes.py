"""Several sizes in one stream (issue 37 step 5): ``sizes[1h,1d]/1min`` against ``1d/1min``.

One key, ``KeyStream``, 1M events over 2 days in arrival order (``stream_state``'s
``_events``: each up to 30 s late), 100 micro-batches, allowed lateness 1 min, deltas
applied to a dict (the store). Cases, interleaved over ``--reps`` rounds, each in this
process after an untimed warm-up:

- ``sizes[1h,1d]/1min``: hopping, slide 1 min, sizes 1 h and 1 day; max, sum (the issue's);
- ``1d/1min``: hopping 1 day / 1 min alone; max, sum, count (the issue's reference).

Per case: the layout, CPU ms per micro-batch (``process_time``: on a shared machine wall
time is mostly waiting), median over the first and the last quarter, and the bytes the
store holds after the run (metadata + pieces + 8 bytes per key). Targets: last quarter <=
1.5x the first; the sizes case's state <= 2x the ``1d/1min`` case's.

``python -m benchmarks stream_sizes [--quick] [--reps N] [--out FILE]``
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.bench_stream_state import DAY, MIN, _events

CASES: dict[str, dict[str, Any]] = {
    "sizes[1h,1d]/1min": {"sizes": (60 * MIN, DAY), "aggs": ["max(v)", "sum(v)"]},
    "1d/1min": {"sizes": (), "aggs": ["max(v)", "sum(v)", "count"]},
}


def run(name: str, n: int) -> dict[str, Any]:
    """One case on *n* events: layout, CPU ms per micro-batch by quarter, bytes held."""
    from windowagg.pandas import parse
    from windowagg.windows.engine import KeyStream, Shape

    case = CASES[name]
    shape = Shape(size=DAY, slide=MIN, sizes=case["sizes"])
    aggs = parse(case["aggs"])
    t, v = _events(n, 2 * DAY)
    s = KeyStream(aggs, shape, allowed_lateness=MIN)
    store: dict[int, bytes] = {}
    meta = b""
    ms = []
    for part in np.array_split(np.arange(len(t)), 100):
        c0 = time.process_time()
        _, d = s.feed(t[part], {"v": v[part]})
        ms.append((time.process_time() - c0) * 1e3)
        d.apply(store)
        meta = d.meta
    q = len(ms) // 4
    return {
        "layout": s.layout,
        "ms_first_quarter": float(np.median(ms[:q])),
        "ms_last_quarter": float(np.median(ms[-q:])),
        "held_bytes": len(meta) + sum(len(x) + 8 for x in store.values()),
    }


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks stream_sizes")
    ap.add_argument("--quick", action="store_true", help="100k events instead of 1M")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--out", default=None, help="write the medians as JSON here")
    args = ap.parse_args(argv)
    n = 100_000 if args.quick else 1_000_000
    for name in CASES:  # untimed warm-up: first-use imports (PYTHONDONTWRITEBYTECODE)
        run(name, 2_000)
    load = os.getloadavg()
    runs: dict[str, list[dict[str, Any]]] = {}
    for _ in range(args.reps):
        for name in CASES:  # interleaved
            runs.setdefault(name, []).append(run(name, n))
    report: dict[str, Any] = {"loadavg_start": load, "loadavg_end": os.getloadavg(), "cases": {}}
    for name, rs in runs.items():
        med = {k: float(np.median([r[k] for r in rs])) for k in rs[0] if k != "layout"}
        med["layout"] = rs[0]["layout"]
        med["last_over_first"] = med["ms_last_quarter"] / med["ms_first_quarter"]
        report["cases"][name] = med
        print(
            f"{name:18s} {med['layout']:6s} CPU ms/batch {med['ms_first_quarter']:6.2f} -> "
            f"{med['ms_last_quarter']:6.2f} ({med['last_over_first']:4.2f}x)  held "
            f"{med['held_bytes'] / 1e3:8.1f} kB"
        )
    cases = report["cases"]
    ratio = cases["sizes[1h,1d]/1min"]["held_bytes"] / cases["1d/1min"]["held_bytes"]
    report["sizes_state_over_1d"] = ratio
    print(f"state sizes[1h,1d] / 1d alone: {ratio:.2f}x  (reps {args.reps}, {n:,d} events)")
    print(f"loadavg {load} -> {os.getloadavg()}")
    if args.out:
        Path(args.out).write_text(json.dumps(report, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
