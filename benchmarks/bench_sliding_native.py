"""The compiled SlidingWindowCount / SlidingWindowQDigest against their Python reference:
update rate per item on the same out-of-order stream, single-threaded, with the same state
(bytes) and the papers' bounds checked on the same run.

Run: ``.venv/bin/python -m benchmarks sliding_native`` (the count, 1M items, 3 interleaved
repeats) or ``... --kind qdigest --items 300000``. Options: ``--eps``, ``--time-bits``,
``--chunk`` (items per ``update_many`` call), ``--disorder`` (how far back an item may
arrive, in ticks), ``--universe`` (the q-digest's keys: a Zipf(1.2) draw, capped).

Stream: item i has timestamp i + (a uniform draw in [-disorder, 0]), so items arrive up to
*disorder* ticks late, in any order inside that band; weight 1 each.

Contenders, each fed the same int64 array:

* ``python update``: ``SlidingWindowCount(..., backend="python").update(t)`` per item
  (``SlidingWindowQDigest(...).update(x, t)`` with ``--kind qdigest``).
* ``python update_many``: the reference's batch verb, per chunk (a list of ints).
* ``native update``: the compiled twin, one ``update(t)`` call per item.
* ``native update_many``: the compiled twin, one ``update_many`` call per chunk (int64
  arrays; the batch runs without the GIL).

Both rates are reported: wall clock (median) and process CPU time (median); the machine is
shared, so CPU time is the steadier one. The load average is printed before and after.

Checked on the last repeat: the native and Python summaries fed item by item hold the same
state (same bytes), as do the two batch ones; and for windows of 10 sizes, the certified
bounds hold (lo <= D_w <= hi) and |count(w) - D_w| <= eps * D_w (Theorem 1) against the
exact count from the sorted timestamps; with ``--kind qdigest``, the median of the latest
10% of the stream: W(< q) <= (1/2 + eps) D_w and W(<= q) >= (1/2 - eps) D_w (Theorem 2).
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from benchmarks.harness import median, print_table, save_results
from windowagg.sketches import SlidingWindowCount, SlidingWindowQDigest


def _timed(fn: Callable[[], Any]) -> tuple[float, float, Any]:
    w0, c0 = time.perf_counter(), time.process_time()
    out = fn()
    return time.perf_counter() - w0, time.process_time() - c0, out


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks sliding_native")
    ap.add_argument("--items", type=int, default=1_000_000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--eps", type=float, default=0.01)
    ap.add_argument("--time-bits", type=int, default=32)
    ap.add_argument("--chunk", type=int, default=1 << 14)
    ap.add_argument("--disorder", type=int, default=10_000)
    ap.add_argument("--kind", choices=["count", "qdigest"], default="count")
    ap.add_argument("--universe", type=int, default=1 << 16)
    ap.add_argument("--quick", action="store_true", help="100k items")
    a = ap.parse_args(argv)
    qd = a.kind == "qdigest"

    n = 100_000 if a.quick else a.items
    rng = np.random.default_rng(39)
    ts = np.arange(n, dtype=np.int64) - rng.integers(0, a.disorder + 1, n)
    ts = np.clip(ts, 0, None).astype(np.int64)
    ts_list = ts.tolist()
    xs = np.minimum(rng.zipf(1.2, n) - 1, a.universe - 1).astype(np.int64)
    xs_list = xs.tolist()
    chunk = a.chunk

    def make(backend: str) -> Any:
        if qd:
            return SlidingWindowQDigest(a.universe, a.eps, a.time_bits, backend=backend)  # type: ignore[arg-type]
        return SlidingWindowCount(a.eps, a.time_bits, backend=backend)  # type: ignore[arg-type]

    def one_by_one(backend: str) -> Callable[[], Any]:
        def run() -> Any:
            s = make(backend)
            up = s.update  # cached: one lookup, not one per item
            if qd:
                for x, t in zip(xs_list, ts_list, strict=True):
                    up(x, t)
            else:
                for t in ts_list:
                    up(t)
            return s

        return run

    def batched(backend: str) -> Callable[[], Any]:
        def run() -> Any:
            s = make(backend)
            up = s.update_many
            nat = backend == "native"
            for i in range(0, n, chunk):
                tc = ts[i : i + chunk] if nat else ts_list[i : i + chunk]
                if qd:
                    up(xs[i : i + chunk] if nat else xs_list[i : i + chunk], tc)
                else:
                    up(tc)
            return s

        return run

    contenders = {
        "python update": one_by_one("python"),
        "python update_many": batched("python"),
        "native update": one_by_one("native"),
        "native update_many": batched("native"),
    }
    load0 = os.getloadavg()
    times: dict[str, tuple[list[float], list[float]]] = {c: ([], []) for c in contenders}
    last: dict[str, Any] = {}
    for _ in range(a.repeats):  # interleaved
        for name, fn in contenders.items():
            w, c, out = _timed(fn)
            times[name][0].append(w)
            times[name][1].append(c)
            last[name] = out
    load1 = os.getloadavg()
    out: dict[str, Any] = {
        "kind": a.kind,
        "universe": a.universe if qd else None,
        "items": n,
        "eps": a.eps,
        "time_bits": a.time_bits,
        "chunk": chunk,
        "disorder": a.disorder,
    }
    rows = []
    ref = {"update": "python update", "update_many": "python update_many"}
    for name in contenders:
        w, c = median(times[name][0]), median(times[name][1])
        base = ref[name.split(" ", 1)[1]]
        bw, bc = median(times[base][0]), median(times[base][1])
        rows.append(
            [name, f"{n / w / 1e6:.3f}", f"{n / c / 1e6:.3f}", f"{bw / w:.1f}x", f"{bc / c:.1f}x"]
        )
        out[name] = {"wall_s": times[name][0], "cpu_s": times[name][1]}
    md = print_table(
        f"{'SlidingWindowQDigest' if qd else 'SlidingWindowCount'} update rate, {n:,} items "
        f"up to {a.disorder:,} ticks late{f', U={a.universe:,}' if qd else ''}, "
        f"eps={a.eps}, time_bits={a.time_bits}, medians of {a.repeats} interleaved runs "
        "(M items/s)",
        ["contender", "wall", "CPU", "vs python, same verb (wall)", "vs python (CPU)"],
        rows,
    )

    # ---- same state and Theorem 1 on the same run
    same_one = last["native update"].to_bytes() == last["python update"].to_bytes()
    same_many = last["native update_many"].to_bytes() == last["python update_many"].to_bytes()
    srt = np.sort(ts)
    tmax = int(srt[-1])
    s = last["native update_many"]
    held, worst = True, 0.0
    for w in np.unique(np.geomspace(1, n, 10).astype(int)).tolist():
        d = n - int(np.searchsorted(srt, tmax - w, side="right"))  # timestamps in (t - w, t]
        lo, hi = s.count_bounds(w)
        est = s.count(w)
        held &= lo <= d <= hi and abs(est - d) <= a.eps * d + 1e-9
        worst = max(worst, abs(est - d) / max(d, 1))
    q_held = True
    if qd:  # Theorem 2 on the latest 10%: the window's median against the exact one
        w = max(1, n // 10)
        inside = np.sort(xs[ts > tmax - w])
        d = inside.size
        q = s.quantile(0.5, w)
        below = int(np.searchsorted(inside, q, side="left"))
        upto = int(np.searchsorted(inside, q, side="right"))
        q_held = below <= (0.5 + a.eps) * d and upto >= (0.5 - a.eps) * d
        held &= q_held
    md += print_table(
        "Checked on the same run",
        ["check", "result"],
        [
            ["native == python state (update), bytes", "yes" if same_one else "NO"],
            ["native == python state (update_many), bytes", "yes" if same_many else "NO"],
            [
                f"certified bounds and |count - D_w| <= eps D_w, 10 windows (worst {worst:.5f})",
                "yes" if held else "NO",
            ],
            *(
                [["window median (latest 10%) within (1/2 +- eps) D_w", "yes" if q_held else "NO"]]
                if qd
                else []
            ),
            ["state bytes", len(s.to_bytes())],
        ],
    )
    md += f"\nload average before {load0[0]:.1f} / {load0[1]:.1f}, after {load1[0]:.1f} / {load1[1]:.1f}\n"
    print(md.splitlines()[-1])
    out.update(
        same_state_update=same_one,
        same_state_update_many=same_many,
        bounds_held=held,
        worst_rel_err=worst,
        load_before=load0,
        load_after=load1,
        table=md,
    )
    save_results(f"sliding_native_{a.kind}" + ("_quick" if a.quick else ""), out)
    return 0 if same_one and same_many and held else 1


if __name__ == "__main__":
    import sys

    raise SystemExit(main(sys.argv[1:]))
