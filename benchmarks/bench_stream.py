"""In-process streaming (issue 38): ``windowagg.stream`` against Bytewax and a hand-rolled loop.

The same events for every contender: ``--events`` (1M) out-of-order events (each arrives up
to 30 s after its time) of 100 keys over 2 days, in arrival order, cut into micro-batches of
``--batch`` (10k) rows; 1 h windows every 1 min of max / sum / count (``--p95``: exact p95,
max and count), watermark 30 s behind each key's newest event (no event is late). Each
contender runs in a subprocess of its own, interleaved over ``--repeats`` rounds, each after an untimed warm-up of 100 events through a
throwaway instance (first-use imports):

- ``memory``: ``windowagg.stream(...)`` with the state in process, pandas micro-batches in
  and out;
- ``sqlite``: the same with ``store=`` a SQLite file, one commit per micro-batch (token =
  its number);
- ``handrolled``: a ``dict`` of one ``windows.engine.KeyStream`` per key, each micro-batch
  grouped by ``argsort`` + ``split``, fed per key, a pandas frame built from the results'
  columns (the loop issue 38 describes; the call's own overhead is ``memory`` over it);
- ``bytewax``: Bytewax 0.21 ``windowing.fold_window`` with a ``SlidingWindower`` and an
  ``EventClock`` (30 s wait, system time frozen so that only event time moves the
  watermark; no recovery), in the interpreter given by ``--bytewax-python`` (a venv of its
  own: Bytewax is no dependency of windowagg's), fed in micro-batches of ``--batch`` items
  (``TestingSource(batch_size=...)``: one item per step, its default, visits every key's open
  windows per item, 7x slower at 20k events with the same answers).

Printed: medians of total seconds (wall and CPU time of the contender's process), the ratios Bytewax / memory, Bytewax / sqlite and memory /
handrolled, the per-micro-batch time of the last quarter over the first (``memory`` and
``sqlite``), and the load average before and after. Every contender's final answers are
checked equal (window count, and per window the values, to 1e-9 relative).

``python -m benchmarks.bench_stream [--events N] [--repeats R] [--p95]
[--bytewax-python PATH] [--contenders memory,sqlite,handrolled,bytewax] [--out FILE]``
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
SEC = 1_000_000
HOUR, MIN = 3600 * SEC, 60 * SEC


def make_events(n: int, keys: int, path: Path, seed: int = 38) -> None:
    """*n* events over 2 days of *keys* keys in arrival order (up to 30 s late), to *path*."""
    rng = np.random.default_rng(seed)
    t = np.sort(rng.integers(0, 2 * 24 * HOUR, n)).astype(np.int64)
    arrival = t + rng.integers(0, 30 * SEC, n)
    order = np.argsort(arrival, kind="stable")
    np.savez(
        path,
        t=t[order],
        k=rng.integers(0, keys, n)[order].astype(np.int64),
        v=rng.integers(0, 1000, n)[order].astype(np.float64),
    )


def _aggs(p95: bool) -> list[str]:
    return ["p95(v)", "max(v)", "count"] if p95 else ["max(v)", "sum(v)", "count"]


def _answers(keys: Any, start: Any, cols: dict[str, Any]) -> dict[str, Any]:
    order = np.lexsort((np.asarray(start), np.asarray(keys)))
    out = {"k": np.asarray(keys)[order].tolist(), "start": np.asarray(start)[order].tolist()}
    for c, v in cols.items():
        out[c] = np.asarray(v, dtype=np.float64)[order].tolist()
    return out


def _warm_up(mode: str, small: Any, aggs: list[str], tmp: str) -> None:
    """One small micro-batch through a throwaway instance of the contender, untimed: what it
    imports on first use (``windowagg.stream`` is loaded lazily; where
    PYTHONDONTWRITEBYTECODE is set, as on the machines these runs were made on, every
    import is compiled from source in every process) is start-up, not streaming."""
    import windowagg

    if mode == "handrolled":
        from windowagg.aggs import parse_aggs
        from windowagg.windows.engine import KeyStream, Shape

        st = KeyStream(parse_aggs(aggs), Shape(size=HOUR, slide=MIN), deltas=False)
        st.feed(np.sort(small["t"].to_numpy().astype(np.int64)), {"v": small["v"].to_numpy()})
        st.advance(2**62)
        return
    store = os.path.join(tmp, f"warm-{os.getpid()}.db") if mode == "sqlite" else None
    s = windowagg.stream("k", "t", aggs, size="1 hour", slide="1 minute", store=store)
    s.feed(small, token=0)
    s.close()


def run_windowagg(data: Path, batch: int, p95: bool, mode: str, tmp: str) -> dict[str, Any]:
    """``memory``, ``sqlite`` or ``handrolled`` on the events of *data*."""
    import pandas as pd

    import windowagg

    z = np.load(data)
    df = pd.DataFrame({"k": z["k"], "t": z["t"].view("datetime64[us]"), "v": z["v"]})
    n = len(df)
    aggs = _aggs(p95)
    per: list[float] = []
    outs: list[Any] = []
    _warm_up(mode, df.iloc[:100], aggs, tmp)
    t0, c0 = time.perf_counter(), time.process_time()
    if mode == "handrolled":
        from windowagg.aggs import parse_aggs
        from windowagg.windows.engine import KeyStream, Shape

        parsed = parse_aggs(aggs)
        shape = Shape(size=HOUR, slide=MIN)
        states: dict[int, Any] = {}
        kk, tt, vv = z["k"], z["t"], z["v"]

        def frame(parts: list[tuple[int, Any]]) -> Any:
            cols = [c for _, c in parts]
            return pd.DataFrame(
                {
                    "k": np.repeat([k for k, _ in parts], [len(c["end"]) for c in cols]),
                    "window_start": pd.to_datetime(
                        np.concatenate([c["start"] for c in cols]), unit="us", utc=True
                    ),
                    **{
                        a.alias: np.concatenate([np.asarray(c[a.alias]) for c in cols])
                        for a in parsed
                    },
                }
            )

        for i in range(0, n, batch):
            b0 = time.perf_counter()
            k, t, v = kk[i : i + batch], tt[i : i + batch], vv[i : i + batch]
            order = np.argsort(k, kind="stable")
            cuts = np.flatnonzero(np.diff(k[order])) + 1
            parts = []
            for idx in np.split(order, cuts):
                key = int(k[idx[0]])
                st = states.get(key)
                if st is None:
                    st = states[key] = KeyStream(
                        parsed, shape, max_out_of_orderness=30 * SEC, deltas=False
                    )
                res, _ = st.feed(t[idx], {"v": v[idx]})
                parts.append((key, res.columns))
            outs.append(frame(parts))
            per.append(time.perf_counter() - b0)
        outs.append(frame([(key, st.advance(2**62)[0].columns) for key, st in states.items()]))
    else:
        store = os.path.join(tmp, f"state-{os.getpid()}.db") if mode == "sqlite" else None
        s = windowagg.stream(
            "k",
            "t",
            aggs,
            size="1 hour",
            slide="1 minute",
            max_out_of_orderness="30 s",
            store=store,
        )
        for j, i in enumerate(range(0, n, batch)):
            b0 = time.perf_counter()
            outs.append(s.feed(df.iloc[i : i + batch], token=j).results)
            per.append(time.perf_counter() - b0)
        outs.append(s.close().results)
    total, cpu = time.perf_counter() - t0, time.process_time() - c0
    res = pd.concat(outs, ignore_index=True)
    start = (
        res["window_start"]
        .dt.tz_localize(None)
        .to_numpy()
        .astype("datetime64[us]")
        .astype(np.int64)
    )
    cols = {a: res[a].to_numpy() for a in res.columns if a not in ("k", "window_start")}
    cols = {a: v for a, v in cols.items() if a in ("max_v", "sum_v", "count", "p95_v")}
    return {
        "total": total,
        "cpu": cpu,
        "per_batch": per,
        "answers": _answers(res["k"], start, cols),
    }


BYTEWAX = r"""
import json, math, sys, time
from datetime import datetime, timedelta, timezone
import numpy as np
import bytewax.operators as op
from bytewax.dataflow import Dataflow
from bytewax.operators.windowing import EventClock, SlidingWindower, fold_window
from bytewax.testing import TestingSink, TestingSource, run_main

data, p95, out, batch = sys.argv[1], sys.argv[2] == "1", sys.argv[3], int(sys.argv[4])
z = np.load(data)
EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
items = [
    (str(k), (EPOCH + timedelta(microseconds=t), v))
    for k, t, v in zip(z["k"].tolist(), z["t"].tolist(), z["v"].tolist())
]
flow = Dataflow("windows")
# micro-batches of --batch items, as every other contender gets: with batch_size=1 (the
# default) each item is its own step and every key's open windows are visited per item
up = op.input("in", flow, TestingSource(items, batch_size=batch))
clock = EventClock(lambda x: x[0], wait_for_system_duration=timedelta(seconds=30),
                   now_getter=lambda: EPOCH)  # only event time moves the watermark
windower = SlidingWindower(length=timedelta(hours=1), offset=timedelta(minutes=1),
                           align_to=EPOCH)
if p95:
    def builder(): return []
    def folder(acc, x): acc.append(x[1]); return acc
    def merger(a, b): return a + b
else:
    def builder(): return [-math.inf, 0.0, 0]
    def folder(acc, x):
        v = x[1]
        if v > acc[0]: acc[0] = v
        acc[1] += v; acc[2] += 1
        return acc
    def merger(a, b): return [max(a[0], b[0]), a[1] + b[1], a[2] + b[2]]
w = fold_window("fold", up, clock, windower, builder, folder, merger)
got, meta = [], []
op.output("down", w.down, TestingSink(got))
op.output("meta", w.meta, TestingSink(meta))
t0, c0 = time.perf_counter(), time.process_time()
run_main(flow)
total, cpu = time.perf_counter() - t0, time.process_time() - c0
opens = {(k, wid): m.open_time for k, (wid, m) in meta}
keys, starts, cols = [], [], {}
for k, (wid, acc) in got:
    keys.append(int(k))
    starts.append((opens[(k, wid)] - EPOCH) // timedelta(microseconds=1))
    if p95:
        s = sorted(acc)
        vals = {"p95_v": s[math.ceil(0.95 * len(s)) - 1], "max_v": s[-1], "count": len(s)}
    else:
        vals = {"max_v": acc[0], "sum_v": acc[1], "count": acc[2]}
    for c, v in vals.items():
        cols.setdefault(c, []).append(v)
json.dump({"total": total, "cpu": cpu, "keys": keys, "starts": starts, "cols": cols}, open(out, "w"))
"""


def run_bytewax(python: str, data: Path, p95: bool, tmp: str, batch: int) -> dict[str, Any]:
    script = Path(tmp) / "bytewax_flow.py"
    script.write_text(BYTEWAX)
    out = Path(tmp) / "bytewax_out.json"
    subprocess.run(
        [python, str(script), str(data), "1" if p95 else "0", str(out), str(batch)], check=True
    )
    got = json.loads(out.read_text())
    return {
        "total": got["total"],
        "cpu": got["cpu"],
        "per_batch": [],
        "answers": _answers(got["keys"], got["starts"], got["cols"]),
    }


def _child(args: argparse.Namespace) -> None:
    res = run_windowagg(Path(args.data), args.batch, args.p95, args.child, args.tmp)
    Path(args.result).write_text(json.dumps(res))


def _same(a: dict[str, Any], b: dict[str, Any]) -> bool:
    if a["k"] != b["k"] or a["start"] != b["start"]:
        return False
    cols = set(a) & set(b) - {"k", "start"}
    return all(np.allclose(a[c], b[c], rtol=1e-9, atol=0) for c in cols)


def _quarters(per: list[float]) -> float:
    q = max(1, len(per) // 4)
    return float(np.median(per[-q:]) / np.median(per[:q]))


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.bench_stream")
    p.add_argument("--events", type=int, default=1_000_000)
    p.add_argument("--keys", type=int, default=100)
    p.add_argument("--batch", type=int, default=10_000)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--p95", action="store_true")
    p.add_argument("--bytewax-python", default=None)
    p.add_argument("--contenders", default="memory,sqlite,handrolled,bytewax")
    p.add_argument("--out", default=None)
    p.add_argument("--quick", action="store_true", help="100k events, one round")
    p.add_argument("--child", default=None, help=argparse.SUPPRESS)
    p.add_argument("--data", default=None, help=argparse.SUPPRESS)
    p.add_argument("--tmp", default=None, help=argparse.SUPPRESS)
    p.add_argument("--result", default=None, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        _child(args)
        return 0
    if args.quick:
        args.events, args.repeats = 100_000, 1
    contenders = args.contenders.split(",")
    if "bytewax" in contenders and not args.bytewax_python:
        contenders.remove("bytewax")
        print("no --bytewax-python: Bytewax left out")
    load0 = os.getloadavg()
    times: dict[str, list[float]] = {c: [] for c in contenders}
    cpus: dict[str, list[float]] = {c: [] for c in contenders}
    flat: dict[str, list[float]] = {c: [] for c in contenders}
    answers: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "events.npz"
        make_events(args.events, args.keys, data)
        for r in range(args.repeats):
            for c in contenders if r % 2 == 0 else contenders[::-1]:
                if c == "bytewax":
                    res = run_bytewax(args.bytewax_python, data, args.p95, tmp, args.batch)
                else:
                    result = Path(tmp) / "result.json"
                    cmd = [sys.executable, "-m", "benchmarks.bench_stream", "--child", c]
                    cmd += ["--data", str(data), "--tmp", tmp, "--result", str(result)]
                    cmd += ["--batch", str(args.batch)] + (["--p95"] if args.p95 else [])
                    subprocess.run(cmd, check=True, cwd=ROOT)
                    res = json.loads(result.read_text())
                times[c].append(res["total"])
                cpus[c].append(res["cpu"])
                if res["per_batch"]:
                    flat[c].append(_quarters(res["per_batch"]))
                answers.setdefault(c, res["answers"])
                print(
                    f"round {r + 1} {c}: {res['total']:.2f} s ({res['cpu']:.2f} s CPU)", flush=True
                )
    load1 = os.getloadavg()
    med = {c: float(np.median(v)) for c, v in times.items()}
    med_cpu = {c: float(np.median(v)) for c, v in cpus.items()}
    ref = answers[contenders[0]]
    same = {c: _same(ref, a) for c, a in answers.items()}
    summary: dict[str, Any] = {
        "events": args.events,
        "keys": args.keys,
        "batch": args.batch,
        "aggs": _aggs(args.p95),
        "repeats": args.repeats,
        "median_s": med,
        "runs_s": times,
        "median_cpu_s": med_cpu,
        "runs_cpu_s": cpus,
        "last_quarter_over_first": {c: v for c, v in flat.items() if v},
        "answers_equal": same,
        "windows": len(ref["k"]),
        "load_before": load0,
        "load_after": load1,
        "date_utc": time.strftime("%Y-%m-%d %H:%M", time.gmtime()),
    }
    ratios = {}
    for what, m in (("wall", med), ("cpu", med_cpu)):
        if "bytewax" in m:
            for c in ("memory", "sqlite"):
                if c in m:
                    ratios[f"{what} bytewax/{c}"] = m["bytewax"] / m[c]
        if "memory" in m and "handrolled" in m:
            ratios[f"{what} memory/handrolled"] = m["memory"] / m["handrolled"]
    summary["ratios"] = ratios
    shown = ("median_s", "median_cpu_s", "ratios", "answers_equal")
    print(json.dumps({k: summary[k] for k in shown}, indent=1))
    print("last quarter / first:", summary["last_quarter_over_first"])
    print(f"load average before {load0}, after {load1}")
    if args.out:
        Path(args.out).write_text(json.dumps(summary, indent=1) + "\n")
    return 0 if all(same.values()) else 1


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
