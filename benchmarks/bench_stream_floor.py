"""The floor under one state object per key (issue 37, short windows and many keys).

``stream_state --many-keys`` feeds micro-batches of 10k events of 100 keys to one
``KeyStream`` per key: 100 keys x 100 micro-batches = 10,000 Python steps for 1M events,
against one vectorised :func:`windowagg.pandas.window_agg` call. This measures what any
per-key layout pays before it aggregates anything, on the same input (``_keyed``: events
over 2 days, each up to 30 s late), interleaved over ``--reps`` rounds, CPU seconds:

- ``driver``: the micro-batch split by key and one dictionary look-up per key and
  micro-batch (the benchmark's own loop, no call);
- ``admit``: the driver plus each key's admission (:func:`~windowagg.windows.engine.records.
  admit_key` with the key's :class:`~windowagg.windows.engine.clock.WatermarkClock`: the
  lateness test every layout runs first), no window;
- ``events`` / ``panes``: the event log (``EventLog``) and ``KeyStream`` (the pane layout),
  1 h / 1 min, max / sum / count, allowed lateness 1 min, deltas encoded;
- ``batch``: one ``window_agg`` call on the same events.

Prints the medians, each per-key contender's ratio to the batch call and the load average.

``python -m benchmarks stream_floor [--quick] [--reps N] [--out FILE]``
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

from benchmarks.bench_stream_state import DAY, MIN, _keyed

CONTENDERS = ("driver", "admit", "events", "panes", "batch")


def _per_key(what: str, key: np.ndarray, t: np.ndarray, v: np.ndarray, batch: int) -> int:
    from windowagg.pandas import parse
    from windowagg.windows.engine import KeyStream, Shape
    from windowagg.windows.engine.clock import WatermarkClock
    from windowagg.windows.engine.records import admit_key
    from windowagg.windows.engine.state import plan
    from windowagg.windows.engine.stream import EventLog

    aggs = parse(["max(v)", "sum(v)", "count"])
    shape = Shape(size=60 * MIN, slide=MIN)
    p = plan(aggs)
    state: dict[int, Any] = {}
    n = 0
    for lo in range(0, len(t), batch):
        kb, tb, vb = key[lo : lo + batch], t[lo : lo + batch], v[lo : lo + batch]
        order = np.argsort(kb, kind="stable")  # each key's events in arrival order
        ks, starts = np.unique(kb[order], return_index=True)
        for k, a, b in zip(
            ks.tolist(), starts.tolist(), [*starts[1:].tolist(), len(kb)], strict=True
        ):
            s = state.get(k)
            idx = order[a:b]
            if what == "driver":
                if s is None:
                    state[k] = True
                n += len(tb[idx]) + len(vb[idx])
                continue
            if s is None:
                if what == "admit":
                    s = state[k] = WatermarkClock(0, MIN)
                elif what == "events":
                    s = state[k] = EventLog(aggs, shape, allowed_lateness=MIN)
                else:
                    s = state[k] = KeyStream(aggs, shape, allowed_lateness=MIN)
            if what == "admit":
                got = admit_key(p, s, "arrival", tb[idx], {"v": vb[idx]}, shape)
                n += len(got.order)
            else:
                out, _ = s.feed(tb[idx], {"v": vb[idx]})
                n += len(out.columns["end"])
    return n


def worker(what: str, n: int) -> float:
    """CPU seconds of one contender on *n* events."""
    key, t, v = _keyed(n, 100, 2 * DAY)
    if what == "batch":
        import pandas as pd

        from windowagg.pandas import window_agg

        df = pd.DataFrame({"k": key, "t": t, "v": v})
        c0 = time.process_time()
        window_agg(
            df, "k", "t", ["max(v)", "sum(v)", "count"], size=f"{60 * MIN} us",
            slide=f"{MIN} us", time_unit="us",
        )  # fmt: skip
        return time.process_time() - c0
    c0 = time.process_time()
    _per_key(what, key, t, v, 10_000)
    return time.process_time() - c0


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks stream_floor")
    ap.add_argument("--quick", action="store_true", help="200k events only")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--out", default=None, help="write the medians as JSON here")
    args = ap.parse_args(argv)
    sizes = [200_000] if args.quick else [200_000, 1_000_000]
    for what in CONTENDERS:  # untimed warm-up: first imports (PYTHONDONTWRITEBYTECODE)
        worker(what, 20_000)
    load = os.getloadavg()
    runs: dict[tuple[int, str], list[float]] = {}
    for _ in range(args.reps):
        for n in sizes:
            for what in CONTENDERS:  # interleaved
                runs.setdefault((n, what), []).append(worker(what, n))
    report: dict[str, Any] = {"loadavg_start": load, "loadavg_end": os.getloadavg(), "cases": {}}
    for n in sizes:
        med = {w: float(np.median(runs[(n, w)])) for w in CONTENDERS}
        report["cases"][str(n)] = {"median_cpu_seconds": med, "reps": args.reps}
        print(f"{n:>9,d} events, median CPU s: " + "  ".join(f"{w} {med[w]:.3f}" for w in med))
        print(
            f"{'':18s}x the batch call: "
            + "  ".join(f"{w} {med[w] / med['batch']:.1f}x" for w in CONTENDERS[:-1])
        )
    print(f"loadavg {load} -> {os.getloadavg()}")
    if args.out:
        Path(args.out).write_text(json.dumps(report, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
