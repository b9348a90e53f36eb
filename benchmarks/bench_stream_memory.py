"""``windowagg.stream``'s memory per key once the keys' windows have closed.

A service keyed by something short-lived (a session, an order, a device that reports for
an hour) meets many keys, each for a while. ``--keys`` keys (default 20,000), each with
``--events`` events (default 20) over its first ``--span`` minutes (default 5), the keys
arriving in ``--batches`` micro-batches (each key in one); hopping 1 hour / 1 minute, sum,
count and max, allowed lateness 1 minute; then one ``advance`` 2 hours past the last event.
For a stream that keeps every key's state (``_park = False``, the behaviour before
expired keys left the process) and for the default: the bytes ``tracemalloc`` traces once
the output is dropped (per key), the keys held live and parked, and the CPU seconds of the
feeds and the advance (medians of ``--repeats``, the two interleaved). Both streams' output
frames are checked equal.

Run: ``python -m benchmarks stream_memory [--keys N] [--events N] [--repeats N]``.
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import time
import tracemalloc
from typing import Any

import numpy as np
import pandas as pd

import windowagg

MIN = 60_000_000  # microseconds


def _batches(keys: int, events: int, span: int, batches: int) -> list[pd.DataFrame]:
    """Each key's events over its first *span* minutes; key i starts at minute i // 100."""
    rng = np.random.default_rng(7)
    k = np.repeat(np.arange(keys), events)
    t = (k // 100) * MIN + rng.integers(0, span * MIN, len(k))
    v = rng.normal(10, 3, len(k))
    out = []
    for part in np.array_split(np.arange(keys), batches):
        rows = np.isin(k, part)
        df = pd.DataFrame({"k": k[rows], "t": t[rows], "v": v[rows]})
        out.append(df.sort_values("t", kind="stable").reset_index(drop=True))
    return out


def _run(parts: list[pd.DataFrame], park: bool, traced: bool) -> dict[str, Any]:
    gc.collect()
    if traced:
        tracemalloc.start()
    c0 = time.process_time()
    s = windowagg.stream(
        "k", "t", ["sum(v)", "count", "max(v)"], size="1h", slide="1min",
        allowed_lateness="1min", time_unit="us",
    )  # fmt: skip
    s._park = park
    frames = [s.feed(p).results for p in parts]
    last = max(int(p["t"].max()) for p in parts)
    frames.append(s.advance(last + 120 * MIN).results)
    cpu = time.process_time() - c0
    rows = sum(len(f) for f in frames)
    digest = pd.util.hash_pandas_object(pd.concat(frames, ignore_index=True)).sum()
    del frames
    gc.collect()
    held = tracemalloc.get_traced_memory()[0] if traced else 0
    if traced:
        tracemalloc.stop()
    return {
        "cpu": cpu,
        "bytes": held,
        "live": len(s._live),
        "parked": len(s._parked),
        "rows": rows,
        "digest": int(digest),
        "keys": len(s),
    }


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks stream_memory")
    ap.add_argument("--keys", type=int, default=20_000)
    ap.add_argument("--events", type=int, default=20)
    ap.add_argument("--span", type=int, default=5, help="minutes of each key's events")
    ap.add_argument("--batches", type=int, default=20)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args(argv)
    parts = _batches(args.keys, args.events, args.span, args.batches)
    print(f"load before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    mem = {park: _run(parts, park, traced=True) for park in (False, True)}
    if mem[False]["digest"] != mem[True]["digest"] or mem[False]["rows"] != mem[True]["rows"]:
        print("the two streams' outputs differ")
        return 1
    cpu: dict[bool, list[float]] = {False: [], True: []}
    for r in range(args.repeats):
        for park in (False, True) if r % 2 == 0 else (True, False):
            cpu[park].append(_run(parts, park, traced=False)["cpu"])
    print(f"load after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    n = mem[True]["keys"]
    print(
        f"\n{n:,} keys x {args.events} events, hopping 1 h / 1 min (sum, count, max), "
        f"{args.batches} micro-batches + one advance; {mem[True]['rows']:,} output rows, "
        "equal for both"
    )
    print("| keys' state | bytes per key (traced) | live | parked | CPU s (median) |")
    print("| --- | --- | --- | --- | --- |")
    for park, name in ((False, "every key kept"), (True, "expired keys parked")):
        m = mem[park]
        print(
            f"| {name} | {m['bytes'] / n:,.0f} | {m['live']:,} | {m['parked']:,} | "
            f"{statistics.median(cpu[park]):.2f} |"
        )
    ratio = statistics.median(cpu[True]) / statistics.median(cpu[False])
    print(f"\nparked / kept: bytes {mem[True]['bytes'] / mem[False]['bytes']:.3f}, CPU {ratio:.2f}")
    return 0
