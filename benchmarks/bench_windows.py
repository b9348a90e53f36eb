"""Window adapters: events/s of a 10 min / 10 s sliding window over out-of-order events.

Run: ``.venv/bin/python -m benchmarks windows`` (10^6 events, a few minutes) or
``... windows --quick`` (10^5 events). Options: ``--events N``, ``--repeats R``.

One key, timestamps in milliseconds, 10 events per second, each event up to 3 s out of
order (uniform jitter), ``max_out_of_orderness = 3 s`` so nothing is late; windows of
600 000 ms sliding every 10 000 ms (60 windows per event). Monoids Sum and Max.

Variants, all in the same run (medians of repeats; the machine is shared with other
jobs, so absolute numbers are noisy: compare ratios measured in the same run):

* ``SlidingWindows`` over the windows engine (since issue 27: its pane layout, a
  ``KeyStream`` per window), one ``insert`` per event and bursts of 1000 events through
  ``insert_many``;
* per-event windows (``slide=None``, emitted at the watermark: the engine's event log), on
  a prefix of at most 10^5 events;
* pandas baselines (batch, not streaming: they see all data at once): sort by time, then
  ``resample("10s")`` + ``rolling(60)`` (the same sliding windows, pane-based), and a
  per-event time-based ``rolling("600s")`` (the per-event windows).

Every streaming variant's window sums are checked against the pandas resample result.
Then: the per-key state round trip (``to_bytes`` / ``from_bytes``: bytes and µs, what the
Spark layer pays per key and micro-batch), and a sweep of events/s against the window
length (events per window) (the plot). Before/after the switch, interleaved:
``benchmarks/results/windows-2026-11-28.md``.
"""

from __future__ import annotations

import argparse
import random
from collections.abc import Callable
from typing import Any

from benchmarks.harness import measure, median, plot_lines, print_table, save_results
from windowagg.monoids import Max, Sum
from windowagg.windows import SlidingWindows, WindowResult

SIZE = 600_000
SLIDE = 10_000
JITTER = 3_000
BURST = 1_000


def make_events(n: int, seed: int = 1) -> list[tuple[int, float]]:
    """``n`` events at 10/s (100 ms apart), each up to JITTER ms out of order."""
    rng = random.Random(seed)
    return [(i * 100 - rng.randint(0, JITTER), rng.random()) for i in range(n)]


def run_stream(events: list[tuple[int, float]], monoid: Any, burst: int) -> list[WindowResult]:
    """SlidingWindows over the engine (pane layout): one insert per event, or bursts."""
    w = SlidingWindows(monoid, SIZE, SLIDE, max_out_of_orderness=JITTER)
    out: list[WindowResult] = []
    if burst > 1:
        for i in range(0, len(events), burst):
            out.extend(w.insert_many(events[i : i + burst]))
    else:
        insert = w.insert  # bound method cached: this loop is what we time
        extend = out.extend
        for t, v in events:
            extend(insert(t, v))
    out.extend(w.close())
    return out


def run_per_event(events: list[tuple[int, float]], monoid: Any) -> int:
    w = SlidingWindows(monoid, SIZE, None, max_out_of_orderness=JITTER)
    n = 0
    insert = w.insert
    for t, v in events:
        n += len(insert(t, v))
    return n


def pandas_resample(events: list[tuple[int, float]], how: str) -> Any:
    import pandas as pd

    s = pd.Series(
        [v for _, v in events],
        index=pd.to_datetime([t for t, _ in events], unit="ms"),
    ).sort_index()
    panes = s.resample(f"{SLIDE}ms").agg(how)
    return panes.rolling(SIZE // SLIDE, min_periods=1).agg(how)


def pandas_rolling(events: list[tuple[int, float]], how: str) -> Any:
    import pandas as pd

    s = pd.Series(
        [v for _, v in events],
        index=pd.to_datetime([t for t, _ in events], unit="ms"),
    ).sort_index()
    return s.rolling(f"{SIZE}ms").agg(how)


def check_against_pandas(res: list[WindowResult], ref: Any, how: str, label: str) -> None:
    """Every emitted window equals pandas' value for the window ending at the same pane."""
    import pandas as pd

    got = {r.end: r.value for r in res}
    start = ref.index[0]
    for ts, val in ref.items():
        if val != val:  # NaN: empty window in pandas
            continue
        end_ms = int((ts - pd.Timestamp(0)) / pd.Timedelta(milliseconds=1)) + SLIDE
        if end_ms not in got:
            if ts - start < pd.Timedelta(milliseconds=SIZE):
                continue
            raise AssertionError(f"{label}: window ending {end_ms} missing")
        g = got[end_ms]
        if abs(g - val) > 1e-6 * max(1.0, abs(val)):
            raise AssertionError(f"{label}: window ending {end_ms}: {g} != pandas {val}")


def state_round_trip(events: list[tuple[int, float]], repeats: int) -> list[dict[str, Any]]:
    """Per-key state cost for the Spark layer: to_bytes, from_bytes, size, mid-stream."""
    import timeit

    rows: list[list[Any]] = []
    out: list[dict[str, Any]] = []
    part = events[: min(len(events), 20_000)]
    for label in ("engine, pane layout",):
        w = SlidingWindows(Sum(), SIZE, SLIDE, max_out_of_orderness=JITTER)
        w.insert_many(part)
        data = w.to_bytes()
        n_rep = 20
        dump_us = 1e6 * min(timeit.repeat(w.to_bytes, number=n_rep, repeat=repeats)) / n_rep
        load_us = (
            1e6
            * min(
                timeit.repeat(
                    lambda d=data: SlidingWindows.from_bytes(
                        d, Sum(), SIZE, SLIDE, max_out_of_orderness=JITTER
                    ),
                    number=n_rep,
                    repeat=repeats,
                )
            )
            / n_rep
        )
        rows.append([label, len(w), len(data), dump_us, load_us])
        out.append(
            {
                "variant": label,
                "entries": len(w),
                "bytes": len(data),
                "to_bytes_us": dump_us,
                "from_bytes_us": load_us,
            }
        )
    print_table(
        "Per-key state round trip (window 10 min of 10 events/s, Sum), best of repeats",
        ["variant", "entries", "bytes", "to_bytes µs", "from_bytes µs"],
        rows,
    )
    return out


def count_and_policy(events: list[tuple[int, float]], repeats: int) -> list[dict[str, Any]]:
    """CountWindows (last 6000 events, one window every 100; the engine's event log) and
    PolicyWindows (a 10 min time policy in event time; FiBA vs Recalc), one insert per event."""
    from windowagg.monoids import Composite
    from windowagg.windows import CountWindows, PolicyWindows

    def count_run() -> None:
        # every event within the jitter of the newest: allowed (no late rejects)
        w = CountWindows(Sum(), SIZE // 100, 100, max_out_of_orderness=JITTER)
        insert = w.insert
        for t, v in events:
            insert(t, v)

    def policy_run(aggregator: str, evs: list[tuple[int, float]] = events) -> None:
        w = PolicyWindows(
            Composite(Max(), Sum()),
            lambda total, prefix: total[0] - prefix[0] >= SIZE,
            lift=lambda tv: tv,
            aggregator=aggregator,
        )
        insert = w.insert
        for t, v in evs:
            insert(t, (t, v))

    rows: list[list[Any]] = []
    out: list[dict[str, Any]] = []
    few = events[:5_000]  # Recalc recomputes the whole window per policy check: O(n)
    for label, n_ev, fn in (
        ("CountWindows(n=6000, every=100), engine", len(events), count_run),
        ("PolicyWindows(time 10 min), FiBA", len(events), lambda: policy_run("fiba")),
        ("PolicyWindows(time 10 min), Recalc", len(few), lambda: policy_run("recalc", few)),
    ):
        secs = median(measure(fn, repeats))
        rows.append([label, n_ev, n_ev / secs])
        out.append({"variant": label, "events": n_ev, "events_per_s": n_ev / secs})
    print_table(
        "Count and policy windows over the same out-of-order events (Sum)",
        ["variant", "events", "events/s"],
        rows,
    )
    return out


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks windows")
    ap.add_argument("--quick", action="store_true", help="10^5 events, 3 repeats")
    ap.add_argument("--events", type=int, default=None)
    ap.add_argument("--repeats", type=int, default=None)
    args = ap.parse_args(argv)
    n = args.events or (100_000 if args.quick else 1_000_000)
    repeats = args.repeats or 3
    small = min(n, 100_000)
    events = make_events(n)
    prefix = events[:small]
    print(
        f"windows benchmark: {n:,} events (prefix {small:,} for the O(n)-per-slide and "
        f"per-event variants), window {SIZE} ms / slide {SLIDE} ms, jitter <= {JITTER} ms, "
        f"median of {repeats}. Shared machine: absolute numbers are noisy; compare ratios."
    )

    rows: list[list[Any]] = []
    results: dict[str, Any] = {"events": n, "prefix": small, "repeats": repeats, "rows": []}
    for mname, monoid, how in (("Sum", Sum(), "sum"), ("Max", Max(), "max")):
        ref_full = pandas_resample(events, how)
        cases: list[tuple[str, int, Callable[[], Any], Any]] = [
            (
                "engine (panes), one insert per event",
                n,
                lambda m=monoid: run_stream(events, m, 1),
                ref_full,
            ),
            (
                "engine (panes), bursts of 1000",
                n,
                lambda m=monoid: run_stream(events, m, BURST),
                ref_full,
            ),
            (
                "per-event windows (slide=None), at the watermark",
                small,
                lambda m=monoid: run_per_event(prefix, m),
                None,
            ),
            (
                "pandas resample(10s)+rolling(60), batch",
                n,
                lambda h=how: pandas_resample(events, h),
                None,
            ),
            (
                "pandas rolling('600s') per event, batch",
                n,
                lambda h=how: pandas_rolling(events, h),
                None,
            ),
        ]
        base = None
        for label, count, fn, ref in cases:
            if ref is not None:
                check_against_pandas(fn(), ref, how, f"{mname} {label}")
            secs = median(measure(fn, repeats))
            rate = count / secs
            if base is None:
                base = rate
            rows.append([mname, label, count, secs, rate, rate / base])
            results["rows"].append(
                {
                    "monoid": mname,
                    "variant": label,
                    "events": count,
                    "seconds": secs,
                    "events_per_s": rate,
                }
            )
            print(f"  {mname:4} {label:44} {rate:>12,.0f} events/s", flush=True)
    print_table(
        f"Sliding window 10 min / 10 s, {n:,} out-of-order events, one key",
        ["monoid", "variant", "events", "median s", "events/s", "vs the first row"],
        rows,
    )
    results["state"] = state_round_trip(events, repeats)
    results["count_policy"] = count_and_policy(prefix, repeats)
    save_results("windows_quick" if args.quick else "windows", results)

    # the plot: events/s against the window length (events per window), slide fixed at
    # 10 s: one range query per slide is O(log n) with FiBA and O(n) with Recalc
    k_ev = 20_000 if args.quick else 50_000
    lengths_s = [60, 600, 3000] if args.quick else [60, 600, 6000]
    sweep_events = events[:k_ev]
    series: dict[str, tuple[list[float], list[float]]] = {}
    sweep_rows: list[list[Any]] = []
    for label in ("engine (panes)",):
        xs: list[float] = []
        ys: list[float] = []
        for length in lengths_s:
            size_ms = length * 1000

            def run(size_ms: int = size_ms) -> None:
                w = SlidingWindows(Sum(), size_ms, SLIDE, max_out_of_orderness=JITTER)
                insert = w.insert
                for t, v in sweep_events:
                    insert(t, v)
                w.close()

            secs = median(measure(run, 1))
            xs.append(length * 10)  # events per window at 10 events/s
            ys.append(k_ev / secs)
            sweep_rows.append([label, length * 10, k_ev / secs])
        series[label] = (xs, ys)
    print_table(
        f"Events/s against window length (Sum, slide 10 s, {k_ev:,} events, one run each)",
        ["variant", "events per window", "events/s"],
        sweep_rows,
    )
    results["sweep"] = sweep_rows
    save_results("windows_quick" if args.quick else "windows", results)
    path = plot_lines(
        "windows_quick" if args.quick else "windows",
        "Sliding window, slide 10 s (Sum), out-of-order by <= 3 s",
        "events per window",
        "events / s",
        series,
        logx=True,
        logy=True,
    )
    print(f"plot: {path}")
    return 0
