"""Codec and monoid micro-benchmarks: ``python -m benchmarks codec [--quick]``.

- The state codec (``windowagg.codec``) against pickle and json on the same data: 10^5
  ``(int, float)`` tuples (the shape of per-key window state), encode and decode, medians.
- The cost of one ``combine`` per built-in monoid (the inner-loop cost every aggregator pays).
- A pane's partials' records (``codec.dumps_numbers`` / ``loads_numbers``, the pieces the
  streaming layouts write and read most): 124 rows of (max, sum, count), per call, on the
  compiled core and in Python, interleaved.

Process CPU time (``time.process_time``) is used, which is less disturbed than wall time by
other work on a shared machine; ratios against pickle are measured in the same run.
"""

from __future__ import annotations

import argparse
import json
import pickle
import random
import time
from collections.abc import Callable
from typing import Any

from benchmarks.harness import median, print_table, save_results
from windowagg import codec, native_available
from windowagg.monoids import (
    ArgMax,
    BloomFilter,
    Composite,
    Count,
    GeometricMean,
    Max,
    MaxCount,
    Mean,
    Min,
    Sum,
    Variance,
)


def cpu_median(fn: Callable[[], Any], repeats: int) -> float:
    xs = []
    for _ in range(repeats):
        t = time.process_time()
        fn()
        xs.append(time.process_time() - t)
    return median(xs)


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks codec")
    ap.add_argument("--quick", action="store_true", help="fewer repeats and calls")
    args = ap.parse_args(argv)
    repeats = 3 if args.quick else 7
    calls = 20_000 if args.quick else 100_000

    data = [(i, i * 0.5) for i in range(100_000)]
    codecs: list[tuple[str, Callable[[Any], bytes], Callable[[bytes], Any]]] = [
        ("windowagg.codec", codec.dumps, codec.loads),
        ("pickle", pickle.dumps, pickle.loads),
        ("json (C)", lambda o: json.dumps(o).encode(), json.loads),
    ]
    timings: dict[str, tuple[int, float, float]] = {}
    for name, dumps, loads in codecs:
        blob = dumps(data)
        enc = cpu_median(lambda d=dumps: d(data), repeats)
        dec = cpu_median(lambda ld=loads, b=blob: ld(b), repeats)
        timings[name] = (len(blob), enc, dec)
    pe, pd = timings["pickle"][1], timings["pickle"][2]
    rows = [
        (name, n, enc * 1e3, dec * 1e3, f"{enc / pe:.1f}x", f"{dec / pd:.1f}x")
        for name, (n, enc, dec) in timings.items()
    ]
    t1 = print_table(
        f"Codec: 10^5 (int, float) tuples, CPU ms, median of {repeats}",
        ["codec", "bytes", "encode ms", "decode ms", "encode / pickle", "decode / pickle"],
        rows,
    )

    cases: list[tuple[str, Any, Any, Any]] = [
        ("Sum", Sum(), 1, 2),
        ("Mean", Mean(), 1, 2),
        ("Variance", Variance(), 1.0, 2.0),
        ("GeometricMean", GeometricMean(), 1.0, 2.0),
        ("MaxCount", MaxCount(), 1, 1),
        ("ArgMax", ArgMax(), (1, "a"), (2, "b")),
        ("BloomFilter(2^14, 4)", BloomFilter(), "a", "b"),
        ("Composite(Sum, Max)", Composite(Sum(), Max()), (1, 2), (3, 4)),
        (
            "Composite(Sum, Max, Mean, Count)",
            Composite(Sum(), Max(), Mean(), Count()),
            (1, 2, 3, 4),
            (5, 6, 7, 8),
        ),
        (
            "Composite(5 components)",
            Composite(Sum(), Max(), Mean(), Count(), Min()),
            (1, 2, 3, 4, 5),
            (5, 6, 7, 8, 9),
        ),
    ]
    crow = []
    for name, m, x, y in cases:
        a, b = m.lift(x), m.lift(y)
        combine = m.combine  # bound method cached: we time combine, not attribute lookup

        def loop(c: Any = combine, a: Any = a, b: Any = b) -> None:
            for _ in range(calls):
                c(a, b)

        crow.append((name, cpu_median(loop, repeats) / calls * 1e9))
    t2 = print_table(
        f"One combine call, ns (CPU, median of {repeats} x {calls:,})",
        ["monoid", "ns / combine"],
        crow,
    )
    rng = random.Random(37)
    panes = [(rng.random(), rng.random() * 100, rng.randint(1, 50)) for _ in range(124)]
    records = codec.dumps_numbers("p", panes, backend="python")
    assert codec.dumps_numbers("p", panes) == records  # the same bytes on either side
    times: dict[tuple[str, str], list[float]] = {}
    n = max(calls // 100, 100)
    for _ in range(repeats):  # the sides interleaved
        for side in ("python", "native" if native_available() else "python"):
            for verb, call in (
                ("dumps_numbers", lambda b=side: codec.dumps_numbers("p", panes, backend=b)),
                ("loads_numbers", lambda b=side: codec.loads_numbers("p", records, backend=b)),
            ):
                t = time.process_time()
                for _ in range(n):
                    call()
                times.setdefault((verb, side), []).append((time.process_time() - t) / n)
    prow = []
    for verb in ("dumps_numbers", "loads_numbers"):
        py = median(times[(verb, "python")])
        nat = median(times.get((verb, "native"), [float("nan")]))
        prow.append((verb, py * 1e6, nat * 1e6, f"{py / nat:.1f}x"))
    t3 = print_table(
        f"124 pane records (max, sum, count), us per call (CPU, median of {repeats} x {n:,})",
        ["verb", "python us", "native us", "python / native"],
        prow,
    )
    save_results(
        "codec",
        {
            "codec": {
                k: {"bytes": v[0], "encode_s": v[1], "decode_s": v[2]} for k, v in timings.items()
            },
            "combine_ns": dict(crow),
            "pane_records_us": {r[0]: {"python": r[1], "native": r[2]} for r in prow},
            "tables": [t1, t2, t3],
        },
    )
    return 0
