"""Streaming state per key (issue 28): ``KeyStream`` before and after the pane layout.

One key, events over 2 days in arrival order (each event up to 30 s late, so some arrive
out of order), 100 micro-batches, hopping windows with max, sum and count, allowed lateness
1 minute. Per case and code version, in a subprocess each (the old code is ``git archive``
of ``--old-ref`` with this process's compiled core; every subprocess loads that core and
refuses to run without it unless ``WINDOWAGG_BACKEND=python``), interleaved over ``--reps``
rounds:

- ms per micro-batch, median over the first and the last quarter of the micro-batches;
- bytes written per micro-batch (the ``Delta``: metadata + pieces put + keys deleted; the
  old code: metadata + the new chunk, or the whole rewrite at compaction) against the
  micro-batch's input bytes (int64 time + float64 value = 16 bytes per event);
- bytes a store holds for the key after the micro-batch, and bytes a micro-batch reads
  from it as under ``transformWithStateInPandas`` (code with pieces read on demand: each
  micro-batch restores from the store and counts its look-ups; older code: everything
  held);
- ``--rates``: the same window at 1x, 10x and 100x the event rate over 2 hours of events
  (state must not follow the rate: O(window / slide)).

``--many-keys`` (issue 37, short windows and many keys): 200k and 1M events of 100 keys over
2 days (each up to 30 s late), hopping 1 h / 1 min, max / sum / count, allowed lateness 1 min,
micro-batches of 10k events in arrival order, each split by key and fed to one stream per key
(the split is timed too). Per case, interleaved over ``--reps`` rounds, each in a fresh
subprocess: ``panes`` (``KeyStream``, the pane layout) of this checkout and of ``--old-ref``
(unless ``--no-old``), ``events`` (the event log, :class:`~.stream.EventLog` built directly)
and ``batch`` (one :func:`windowagg.pandas.window_agg` call on the same events). Prints the
medians (s), the ratios panes / events and stream / batch, and the load average.

``--cases [A,B,...]`` (issue 37, the issue's figures; no value: every case): one key,
1M events over 2 days (``--quick``: 100k; each up to 30 s late) in 100 micro-batches,
allowed lateness 1 min, through ``KeyStream.feed`` with deltas applied to a dict (as a
store would), after an untimed warm-up on 200 events. Per case, in a subprocess each,
interleaved over ``--reps`` rounds: ``KeyStream.layout``, the median ms per micro-batch of
the first and the last quarter and their ratio (target <= 1.5; wall, and CPU beside it),
the state after the run (``meta_bytes`` + every piece; targets: whole-history exponential
decay <= 100 kB, several sizes <= 2x the ``1d/1min`` case) and the load average. A case
that runs past ``--budget`` seconds stops after its current micro-batch and reports how
many it ran and the trend (the median ms of its last 3 micro-batches over its first 3).

``python -m benchmarks stream_state [--quick] [--reps N] [--old-ref REF] [--out FILE]``
``python -m benchmarks stream_state --many-keys [--p95] [--no-deltas] [--quick] [--reps N] [--old-ref REF] [--out FILE]``
(``--p95``: max, sum, count and exact p95, which the pane layout answers with its
:class:`~windowagg.windows.engine.values.Values` component; ``--no-deltas``: both layouts
built with ``deltas=False``, as ``windowagg.stream`` keeps them in process without a store)
``python -m benchmarks stream_state --cases [A,B,...] [--quick] [--reps N] [--budget S] [--out FILE]``
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
MIN = 60_000_000  # microseconds
DAY = 24 * 60 * MIN


def _events(n: int, span: int, seed: int = 28) -> tuple[np.ndarray, np.ndarray]:
    """*n* event times over *span* us in arrival order (each up to 30 s late), values."""
    rng = np.random.default_rng(seed)
    t = np.sort(rng.integers(0, span, n))
    arrival = t + rng.integers(0, 30_000_000, n)
    order = np.argsort(arrival, kind="stable")
    return t[order].astype(np.int64), rng.random(n)


def _written(d: Any) -> int:
    if hasattr(d, "nbytes"):
        return int(d.nbytes)
    rewrite = d.rewrite or []
    return len(d.meta) + len(d.chunk or b"") + sum(len(c) for c in rewrite)


def worker(case: dict[str, Any]) -> dict[str, Any]:
    """Run one case with the windowagg on ``sys.path``; returns its measurements."""
    from windowagg.pandas import parse
    from windowagg.windows.engine import KeyStream, Shape

    t, v = _events(case["n"], case["span"])
    shape = Shape(size=case["size"], slide=case["slide"])
    aggs = parse(["max(v)", "sum(v)", "count"])
    s = KeyStream(aggs, shape, allowed_lateness=MIN)
    store: dict[Any, bytes] = {}
    chunks: list[bytes] = []
    ms, written, held, inputs, read = [], [], [], [], []
    lazy = hasattr(getattr(s, "_state", None), "reads")  # pieces read on demand (TWS-like)
    for part in np.array_split(np.arange(len(t)), case["batches"]):
        tb, vb = t[part], v[part]
        t0 = time.perf_counter()
        _, d = s.feed(tb, {"v": vb})
        ms.append((time.perf_counter() - t0) * 1e3)
        written.append(_written(d))
        inputs.append(16 * len(tb))
        if lazy:  # as transformWithStateInPandas: what this micro-batch read from the store
            read.append(len(d.meta) + s._state.reads[1])
        if hasattr(d, "apply"):
            d.apply(store)
            held.append(len(d.meta) + sum(len(x) + 8 for x in store.values()))
            if lazy:  # the next micro-batch starts from the store, as on Spark
                s = KeyStream.restore(d.meta, store, aggs, shape, allowed_lateness=MIN)
        else:
            chunks = (
                list(d.rewrite) if d.rewrite is not None else chunks + [d.chunk] * bool(d.chunk)
            )
            held.append(len(d.meta) + sum(len(x) for x in chunks))
        if not lazy:  # every piece is read back each micro-batch
            read.append(held[-1])
    q = len(ms) // 4
    return {
        "ms_first_quarter": float(np.median(ms[:q])),
        "ms_last_quarter": float(np.median(ms[-q:])),
        "written_over_input_last_quarter": float(np.median(np.divide(written, inputs)[-q:])),
        "written_bytes_last_quarter": float(np.median(written[-q:])),
        "input_bytes_per_batch": float(np.median(inputs)),
        "read_bytes_last_quarter": float(np.median(read[-q:])),
        "read_written_over_input_last_quarter": float(
            np.median(np.divide(np.add(read, written), inputs)[-q:])
        ),
        "held_bytes_last": int(held[-1]),
        "held_bytes_max": int(max(held)),
        "layout": getattr(s, "layout", "events"),
    }


#: ``--cases``: name -> shape (``size``/``slide``/``sizes``/``rows``/``every``/``gap``, us;
#: ``history``: no size, each key's whole history) and aggregation strings.
CASES: dict[str, dict[str, Any]] = {
    "1d/1min": {"shape": {"size": DAY, "slide": MIN}, "aggs": ["max(v)", "sum(v)", "count"]},
    "1d/1min+p95": {
        "shape": {"size": DAY, "slide": MIN},
        "aggs": ["max(v)", "sum(v)", "count", "p95(v)"],
    },
    "sizes[1h,1d]/1min": {
        "shape": {"size": DAY, "slide": MIN, "sizes": [60 * MIN, DAY]},
        "aggs": ["max(v)", "sum(v)"],
    },
    "per-event 1d": {"shape": {"size": DAY}, "aggs": ["max(v)", "sum(v)"]},
    "history ewm_mean": {"shape": {"history": True}, "aggs": ["ewm_mean(v, half_life=1h)"]},
    "history decayed_sum": {
        "shape": {"history": True},
        "aggs": ["decayed_sum(v, half_life=1h)"],
    },
    "history decayed_p95": {
        "shape": {"history": True},
        "aggs": ["decayed_p95(v, half_life=1h)"],
    },
    "session 5min": {"shape": {"gap": 5 * MIN}, "aggs": ["max(v)", "sum(v)"]},
    "count rows=1000 every=100": {
        "shape": {"rows": 1000, "every": 100},
        "aggs": ["max(v)", "sum(v)"],
    },
}


def _shape(spec: dict[str, Any]) -> Any:
    from windowagg.windows.engine import Shape
    from windowagg.windows.engine.assign import HISTORY

    spec = dict(spec)
    if spec.pop("history", False):
        return Shape(size=HISTORY)  # what window_agg runs for decayed aggregations alone
    spec["sizes"] = tuple(spec.get("sizes", ()))
    return Shape(**spec)


def case_worker(case: dict[str, Any]) -> dict[str, Any]:
    """``--cases``: one case on one key; ms per micro-batch, state bytes, load."""
    from windowagg.pandas import parse
    from windowagg.windows.engine import KeyStream

    shape, aggs = _shape(case["shape"]), parse(case["aggs"])
    t, v = _events(case["n"], 2 * DAY)
    warm = KeyStream(aggs, shape, allowed_lateness=MIN)  # untimed: first-use imports
    for part in np.array_split(np.arange(200), 4):
        warm.feed(t[part], {"v": v[part]})
    warm.advance(2**62)
    load = os.getloadavg()
    s = KeyStream(aggs, shape, allowed_lateness=MIN)
    store: dict[int, bytes] = {}
    ms: list[float] = []
    cpu: list[float] = []  # CPU ms beside wall ms: the machine is shared
    parts = np.array_split(np.arange(len(t)), case["batches"])
    began = time.perf_counter()
    for part in parts:
        t0, c0 = time.perf_counter(), time.process_time()
        _, d = s.feed(t[part], {"v": v[part]})
        ms.append((time.perf_counter() - t0) * 1e3)
        cpu.append((time.process_time() - c0) * 1e3)
        d.apply(store)
        if time.perf_counter() - began > case["budget"]:
            break
    q = max(len(ms) // 4, 1)
    k = min(3, len(ms))
    return {
        "layout": s.layout,
        "batches_run": len(ms),
        "batches": len(parts),
        "events_run": int(sum(len(p) for p in parts[: len(ms)])),
        "seconds": time.perf_counter() - began,
        "ms_first_quarter": float(np.median(ms[:q])),
        "ms_last_quarter": float(np.median(ms[-q:])),
        "cpu_ms_first_quarter": float(np.median(cpu[:q])),
        "cpu_ms_last_quarter": float(np.median(cpu[-q:])),
        "trend_last3_over_first3": float(np.median(ms[-k:]) / np.median(ms[:k])),
        "ms": ms,
        "meta_bytes": len(s.meta_bytes()),
        "piece_bytes": int(sum(len(x) for x in store.values())),
        "pieces": len(store),
        "loadavg_start": load,
        "loadavg_end": os.getloadavg(),
    }


def _run_cases(args: argparse.Namespace) -> int:
    # a comma inside brackets belongs to the case ("sizes[1h,1d]/1min")
    given = re.split(r",(?![^\[]*\])", args.cases)
    names = list(CASES) if args.cases == "all" else [c.strip() for c in given]
    unknown = [c for c in names if c not in CASES]
    if unknown:
        print(f"unknown cases {unknown}; choose from {', '.join(CASES)}", file=sys.stderr)
        return 2
    n = 100_000 if args.quick else 1_000_000
    src = str(ROOT / "src")
    load = os.getloadavg()
    runs: dict[str, list[dict[str, Any]]] = {}
    for _ in range(args.reps):
        for name in names:  # interleaved: every case once per round
            case = dict(CASES[name], n=n, batches=100, budget=args.budget)
            try:  # a single micro-batch past the budget is stopped from outside
                got = _run(src, case, "case_worker", timeout=2 * args.budget + 120)
            except subprocess.TimeoutExpired:
                got = {"timed_out": True, "budget": args.budget}
            runs.setdefault(name, []).append(got)
    report: dict[str, Any] = {
        "events": n, "batches": 100, "loadavg_start": load, "loadavg_end": os.getloadavg(),
        "budget_seconds": args.budget, "cases": {},
    }  # fmt: skip
    ref = None
    for name in names:
        rs = [r for r in runs[name] if not r.get("timed_out")]
        if not rs:
            print(f"{name:27s} one micro-batch ran past {2 * args.budget + 120} s: stopped")
            report["cases"][name] = {"timed_out": True}
            continue
        keys = (
            "ms_first_quarter", "ms_last_quarter", "cpu_ms_first_quarter", "cpu_ms_last_quarter",
            "trend_last3_over_first3", "seconds",
        )  # fmt: skip
        med: dict[str, Any] = {k: float(np.median([r[k] for r in rs])) for k in keys}
        last = rs[-1]
        for k in ("layout", "batches_run", "batches", "events_run", "meta_bytes",
                  "piece_bytes", "pieces", "loadavg_start", "loadavg_end"):  # fmt: skip
            med[k] = last[k]
        med["state_bytes"] = last["meta_bytes"] + last["piece_bytes"]
        med["ratio"] = med["ms_last_quarter"] / med["ms_first_quarter"]
        med["cpu_ratio"] = med["cpu_ms_last_quarter"] / med["cpu_ms_first_quarter"]
        med["reps"] = len(rs)
        med["ms_per_batch_last_rep"] = [round(x, 3) for x in last["ms"]]
        report["cases"][name] = med
        if name == "1d/1min":
            ref = med["state_bytes"]
        done = med["batches_run"] == med["batches"]
        note = (
            ""
            if done
            else f"  STOPPED at the budget after {med['batches_run']}/{med['batches']} "
            f"micro-batches ({med['events_run']:,d} events), last 3 / first 3 "
            f"{med['trend_last3_over_first3']:.2f}x"
        )
        print(
            f"{name:27s} {med['layout']:6s} ms/batch {med['ms_first_quarter']:9.2f} -> "
            f"{med['ms_last_quarter']:9.2f} ({med['ratio']:5.2f}x; CPU "
            f"{med['cpu_ms_first_quarter']:.2f} -> {med['cpu_ms_last_quarter']:.2f}, "
            f"{med['cpu_ratio']:5.2f}x)  state "
            f"{med['state_bytes'] / 1e3:10.1f} kB ({med['pieces']} pieces)  "
            f"load {med['loadavg_start'][0]:.1f}->{med['loadavg_end'][0]:.1f}{note}"
        )
    if ref is not None and "sizes[1h,1d]/1min" in report["cases"]:
        got = report["cases"]["sizes[1h,1d]/1min"]
        if "state_bytes" in got:
            print(f"sizes state / 1d/1min state: {got['state_bytes'] / ref:.2f}x (target <= 2)")
    print(f"loadavg {load} -> {os.getloadavg()}")
    if args.out:
        Path(args.out).write_text(json.dumps(report, indent=1) + "\n")
    return 0


def _keyed(n: int, keys: int, span: int, seed: int = 37) -> tuple[np.ndarray, ...]:
    """*n* events of *keys* keys over *span* us in arrival order (each up to 30 s late):
    key, time, value."""
    rng = np.random.default_rng(seed)
    t = np.sort(rng.integers(0, span, n))
    arrival = t + rng.integers(0, 30_000_000, n)
    order = np.argsort(arrival, kind="stable")
    key = rng.integers(0, keys, n)
    return key[order].astype(np.int64), t[order].astype(np.int64), rng.random(n)


def many_keys_worker(case: dict[str, Any]) -> dict[str, Any]:
    """``--many-keys``: one layout (``panes``, ``events``, ``batch``) on one input; seconds."""
    from windowagg.pandas import parse

    key, t, v = _keyed(case["n"], case["keys"], case["span"])
    size, slide = case["size"], case["slide"]
    names = case.get("aggs", ["max(v)", "sum(v)", "count"])
    aggs = parse(names)
    if case["layout"] == "batch":
        import pandas as pd

        from windowagg.pandas import window_agg

        df = pd.DataFrame({"k": key, "t": t, "v": v})
        t0, c0 = time.perf_counter(), time.process_time()
        res = window_agg(
            df,
            "k",
            "t",
            names,
            size=f"{size} us",
            slide=f"{slide} us",
            time_unit="us",
        )
        secs, cpu = time.perf_counter() - t0, time.process_time() - c0
        return {"seconds": secs, "cpu_seconds": cpu, "rows": len(res.results)}
    from windowagg.windows.engine import KeyStream, Shape
    from windowagg.windows.engine.stream import EventLog

    shape = Shape(size=size, slide=slide)
    make = KeyStream if case["layout"] == "panes" else EventLog
    warm = make(aggs, shape, allowed_lateness=MIN)  # untimed: the modules' first-use imports
    for part in np.array_split(np.arange(200), 4):
        warm.feed(t[part], {"v": v[part]})
    warm.advance(2**62)
    streams: dict[int, Any] = {}
    rows = 0
    t0, c0 = time.perf_counter(), time.process_time()
    for lo in range(0, len(t), case["batch"]):
        kb, tb, vb = (
            key[lo : lo + case["batch"]],
            t[lo : lo + case["batch"]],
            v[lo : lo + case["batch"]],
        )
        order = np.argsort(kb, kind="stable")  # each key's events in arrival order
        ks, starts = np.unique(kb[order], return_index=True)
        for k, a, b in zip(
            ks.tolist(), starts.tolist(), [*starts[1:].tolist(), len(kb)], strict=True
        ):
            s = streams.get(k)
            if s is None:
                s = streams[k] = make(aggs, shape, allowed_lateness=MIN, **case.get("kw", {}))
            idx = order[a:b]
            out, _ = s.feed(tb[idx], {"v": vb[idx]})
            rows += len(out.columns["end"])
    for s in streams.values():  # the end of the input: every window closes
        out, _ = s.advance(2**62)
        rows += len(out.columns["end"])
    secs, cpu = time.perf_counter() - t0, time.process_time() - c0
    layouts = {getattr(s, "layout", "events") for s in streams.values()}
    return {"seconds": secs, "cpu_seconds": cpu, "rows": rows, "layout": ",".join(sorted(layouts))}


def _many_keys(args: argparse.Namespace) -> int:
    sizes = [200_000] if args.quick else [200_000, 1_000_000]
    base: dict[str, Any] = {
        "keys": 100,
        "span": 2 * DAY,
        "size": 60 * MIN,
        "slide": MIN,
        "batch": 10_000,
    }
    if args.p95:
        base["aggs"] = ["max(v)", "sum(v)", "count", "p95(v)"]
    if args.no_deltas:  # what windowagg.stream runs in process: no store, nothing encoded
        base["kw"] = {"deltas": False}
    runs_of: list[tuple[str, str, str]] = [("panes", "new", str(ROOT / "src"))]
    if not args.no_old:
        runs_of.append(("panes", "old", _old_tree(args.old_ref)))
    runs_of += [("events", "new", str(ROOT / "src")), ("batch", "new", str(ROOT / "src"))]
    load = os.getloadavg()
    runs: dict[tuple[int, str, str], list[dict[str, Any]]] = {}
    for _ in range(args.reps):
        for n in sizes:
            for layout, ver, src in runs_of:  # interleaved: every layout back to back
                case = dict(base, n=n, layout=layout)
                runs.setdefault((n, layout, ver), []).append(_run(src, case, "many_keys_worker"))
    report: dict[str, Any] = {"loadavg_start": load, "loadavg_end": os.getloadavg(), "cases": {}}
    for n in sizes:
        med: dict[str, float] = {}
        cpu: dict[str, float] = {}
        rows: dict[str, int] = {}
        for layout, ver, _ in runs_of:
            got = runs[(n, layout, ver)]
            name = f"{layout} {ver}"
            med[name] = float(np.median([r["seconds"] for r in got]))
            cpu[name] = float(np.median([r["cpu_seconds"] for r in got]))
            rows[name] = got[0]["rows"]
        report["cases"][str(n)] = {
            "median_seconds": med, "median_cpu_seconds": cpu, "rows": rows, "reps": args.reps,
        }  # fmt: skip
        print(f"{n:>9,d} events, median s (CPU s): " + "  ".join(
            f"{k} {med[k]:.2f} ({cpu[k]:.2f})" for k in med))  # fmt: skip
        ev, ba = med["events new"], med["batch new"]
        cev, cba = cpu["events new"], cpu["batch new"]
        for k in med:
            if k.startswith("panes"):
                print(
                    f"{'':18s}{k}: {med[k] / ev:5.2f}x the event log ({cpu[k] / cev:5.2f}x CPU), "
                    f"{med[k] / ba:6.1f}x the batch call ({cpu[k] / cba:6.1f}x CPU)"
                )
        print(f"{'':18s}events new: {ev / ba:6.1f}x the batch call ({cev / cba:6.1f}x CPU)")
    print(f"loadavg {load} -> {os.getloadavg()}")
    if args.out:
        Path(args.out).write_text(json.dumps(report, indent=1) + "\n")
    return 0


def _cases(quick: bool, rates: bool) -> dict[str, dict[str, Any]]:
    n = 100_000 if quick else 1_000_000
    out = {
        "1d/1min": {"n": n, "span": 2 * DAY, "size": DAY, "slide": MIN, "batches": 100},
        "1h/1min": {"n": n, "span": 2 * DAY, "size": 60 * MIN, "slide": MIN, "batches": 100},
    }
    if rates:  # the 1x rate of the cases above (1M events / 2 days) over 2 hours
        base = n // 24
        for r in (1, 10, 100):
            out[f"1h/1min rate x{r}"] = {
                "n": base * r, "span": 2 * 60 * MIN, "size": 60 * MIN, "slide": MIN,
                "batches": 100,
            }  # fmt: skip
    return out


def _core_file() -> Path | None:
    """The compiled core this process loads (an editable install keeps it in
    site-packages, ``scripts/build_native.sh`` in ``src``), or None if it is not built."""
    from windowagg._backend import native_core

    core = native_core()
    got = getattr(core, "__file__", None)
    return Path(got) if got else None


def _old_tree(ref: str) -> str:
    """``ref``'s ``src`` in a temporary folder, with this process's compiled core."""
    tmp = tempfile.mkdtemp(prefix="windowagg-old-")
    arch = subprocess.run(
        ["git", "-C", str(ROOT), "archive", ref, "src"], check=True, capture_output=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", tmp], input=arch, check=True)
    so = _core_file()
    if so is not None:
        shutil.copy(so, Path(tmp) / "src" / "windowagg" / "_native" / so.name)
    return str(Path(tmp) / "src")


#: Run in each subprocess (argv: case, src, core folder or ""): windowagg from *src* only
#: (an editable install's import hook would load the checkout it was installed from), the
#: compiled core from where this process found it (an editable install keeps it outside
#: ``src``: without this, every layout ran the pure-Python backend), and a refusal to run
#: on the Python fallback unless ``WINDOWAGG_BACKEND=python`` asks for it.
_PRELUDE = (
    "import json, sys; "
    "sys.meta_path[:] = [f for f in sys.meta_path "
    "if not type(f).__module__.startswith('_editable')]; "
    "import windowagg, windowagg._native as nat; "
    "assert windowagg.__file__.startswith(sys.argv[2]), windowagg.__file__; "
    "sys.argv[3] and nat.__path__.append(sys.argv[3]); "
    "from windowagg._backend import default_backend, native_core; "
    "default_backend() == 'python' or native_core() is not None or sys.exit("
    "'stream_state: the compiled core did not load in the subprocess (build it: bash "
    "scripts/setup.sh or scripts/build_native.sh), or set WINDOWAGG_BACKEND=python'); "
)


def _run(
    src: str, case: dict[str, Any], fn: str = "worker", timeout: float | None = None
) -> dict[str, Any]:
    env = dict(os.environ, PYTHONPATH=f"{src}{os.pathsep}{ROOT}")
    so = _core_file()
    code = (
        _PRELUDE + f"from benchmarks.bench_stream_state import {fn} as worker; "
        "print(json.dumps(worker(json.loads(sys.argv[1]))))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, json.dumps(case), src, str(so.parent) if so else ""],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    if out.returncode:  # the subprocess's own words, not only its exit status
        raise RuntimeError(f"stream_state: {fn} on {case} failed:\n{out.stderr.strip()}")
    res: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return res


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks stream_state")
    ap.add_argument("--quick", action="store_true", help="100k events instead of 1M")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--old-ref", default="38cf56e", help="git ref of the event-log code")
    ap.add_argument("--no-old", action="store_true", help="measure this checkout only")
    ap.add_argument("--rates", action="store_true", help="also 1x/10x/100x the event rate")
    ap.add_argument("--out", default=None, help="write the medians as JSON here")
    ap.add_argument("--many-keys", action="store_true", help="100 keys, 1 h / 1 min (issue 37)")
    ap.add_argument("--p95", action="store_true", help="--many-keys: max, sum, count and p95")
    ap.add_argument(
        "--no-deltas",
        action="store_true",
        help="--many-keys: streams without deltas (windowagg.stream in process, no store)",
    )
    ap.add_argument(
        "--cases",
        nargs="?",
        const="all",
        default=None,
        help="the issue's figures, one key (comma list; no value: all): " + "; ".join(CASES),
    )
    ap.add_argument("--budget", type=float, default=300.0, help="seconds per case (--cases)")
    args = ap.parse_args(argv)
    from windowagg._backend import default_backend

    python = default_backend() == "python"  # the variable as every subprocess reads it
    so = _core_file()
    print(f"backend in every subprocess: {'python' if python else 'native'}"
          + ("" if python or so is None else f" ({so.name})"))  # fmt: skip
    if args.cases is not None:
        return _run_cases(args)
    if args.many_keys:
        return _many_keys(args)
    cases = _cases(args.quick, args.rates)
    versions = {"new": str(ROOT / "src")}
    if not args.no_old:
        versions["old"] = _old_tree(args.old_ref)
    runs: dict[tuple[str, str], list[dict[str, Any]]] = {}
    load = os.getloadavg()
    for _ in range(args.reps):
        for name, case in cases.items():
            for ver, src in versions.items():  # interleaved: old and new back to back
                runs.setdefault((name, ver), []).append(_run(src, case))
    report: dict[str, Any] = {"loadavg_start": load, "loadavg_end": os.getloadavg(), "cases": {}}
    for (name, ver), rs in runs.items():
        med = {k: float(np.median([r[k] for r in rs])) for k in rs[0] if k != "layout"}
        med["layout"] = rs[0]["layout"]
        report["cases"].setdefault(name, {})[ver] = med
        ratio = med["ms_last_quarter"] / med["ms_first_quarter"]
        print(
            f"{name:22s} {ver:3s} {med['layout']:6s} ms/batch {med['ms_first_quarter']:7.2f} -> "
            f"{med['ms_last_quarter']:7.2f} ({ratio:4.2f}x)  written/input "
            f"{med['written_over_input_last_quarter']:6.3f}  read "
            f"{med['read_bytes_last_quarter'] / 1e3:8.1f} kB  (read+written)/input "
            f"{med['read_written_over_input_last_quarter']:6.3f}  held "
            f"{med['held_bytes_last'] / 1e3:9.1f} kB"
        )
    print(f"loadavg {load} -> {os.getloadavg()}")
    if args.out:
        Path(args.out).write_text(json.dumps(report, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
