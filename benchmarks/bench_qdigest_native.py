"""The compiled QDigest against Apache DataSketches KLL: update rate per item on the same
float64 values, single-threaded, with both error bounds checked on the same run.

Run: ``.venv/bin/python -m benchmarks qdigest_native`` (10M values, 3 interleaved repeats,
about a minute) or ``... --items 1000000 --repeats 5``. Options: ``--eps``, ``--k``,
``--chunk`` (keys per ``update_many`` call).

Contenders, each fed the same array of log-normal float64 values:

* ``KLL k=200``: ``datasketches.kll_doubles_sketch(k).update(values)``, one call (C++).
* ``QDigest native``: ``QDigest(2**64, eps, backend="native")``; per chunk of values, the
  keys of ``FloatOrderMapper`` (exact: no discretisation, universe 2**64, L = 64) and one
  ``update_many`` (the mapping is timed too).
* ``QDigest native, keys given``: the same ``update_many`` calls on keys mapped beforehand.

Both rates are reported: wall clock (median) and process CPU time (median); the machine is
shared, so CPU time is the steadier one. The load average is printed before and after.

Bounds checked on the sketches of the last repeat, against the sorted values:

* KLL: ``normalized_rank_error(False)`` (one quantile, 99% confidence) against the largest
  observed normalized rank error of 101 quantiles.
* QDigest (deterministic, the paper's): quantile(phi) = q has W(< q) <= (phi + eps) n and
  W(<= q) >= phi n for each phi; rank(x) within eps n / 2 of the true rank at the same points.
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from benchmarks.harness import median, print_table, save_results
from windowagg.sketches import FloatOrderMapper, QDigest


def _timed(fn: Callable[[], Any]) -> tuple[float, float, Any]:
    w0, c0 = time.perf_counter(), time.process_time()
    out = fn()
    return time.perf_counter() - w0, time.process_time() - c0, out


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks qdigest_native")
    ap.add_argument("--items", type=int, default=10_000_000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--eps", type=float, default=0.02)
    ap.add_argument("--k", type=int, default=200)
    ap.add_argument("--chunk", type=int, default=1 << 14)
    ap.add_argument("--quick", action="store_true", help="1M values")
    a = ap.parse_args(argv)
    import datasketches as ds

    n = 1_000_000 if a.quick else a.items
    vals = np.random.default_rng(39).lognormal(0.0, 2.0, n)
    m = FloatOrderMapper()
    keys = m.to_keys(vals)
    chunk = a.chunk

    def kll() -> Any:
        s = ds.kll_doubles_sketch(a.k)
        s.update(vals)
        return s

    def qd() -> Any:
        d = QDigest(m.universe, a.eps, backend="native")
        up, to_keys = d.update_many, m.to_keys  # cached: one lookup per chunk, not per call
        for i in range(0, n, chunk):
            up(to_keys(vals[i : i + chunk]))
        return d

    def qd_keys() -> Any:
        d = QDigest(m.universe, a.eps, backend="native")
        up = d.update_many
        for i in range(0, n, chunk):
            up(keys[i : i + chunk])
        return d

    contenders = {
        f"KLL k={a.k} (C++)": kll,
        "QDigest native": qd,
        "QDigest native, keys given": qd_keys,
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
    kll_name = next(iter(contenders))
    kw, kc = median(times[kll_name][0]), median(times[kll_name][1])
    rows = []
    out: dict[str, Any] = {"items": n, "eps": a.eps, "k": a.k, "chunk": chunk}
    for name in contenders:
        w, c = median(times[name][0]), median(times[name][1])
        rows.append(
            [name, f"{n / w / 1e6:.2f}", f"{n / c / 1e6:.2f}", f"{kw / w:.3f}x", f"{kc / c:.3f}x"]
        )
        out[name] = {"wall_s": times[name][0], "cpu_s": times[name][1]}
    md = print_table(
        f"Update rate, {n:,} log-normal float64 values, single-threaded, medians of "
        f"{a.repeats} interleaved runs (M items/s)",
        ["contender", "wall", "CPU", "vs KLL (wall)", "vs KLL (CPU)"],
        rows,
    )

    # ---- bounds on the same run
    srt = np.sort(vals)
    phis = [0.001] + [i / 100 for i in range(1, 100)] + [0.999]
    s, d = last[kll_name], last["QDigest native"]
    kll_bound = s.normalized_rank_error(False)
    kll_err = 0.0
    for p in phis:
        q = s.get_quantile(p)
        kll_err = max(kll_err, abs(np.searchsorted(srt, q, side="right") / n - p))
    eps = a.eps
    q_keys = d.quantiles(phis)
    qd_ok, qd_q_err, qd_r_err = True, 0.0, 0.0
    for p, qk in zip(phis, q_keys, strict=True):
        v = m.to_value(qk)
        below = np.searchsorted(srt, v, side="left")  # W(< q)
        upto = np.searchsorted(srt, v, side="right")  # W(<= q)
        qd_ok &= bool(below <= (p + eps) * n and upto >= p * n)
        qd_q_err = max(qd_q_err, abs(upto / n - p))
        x = srt[min(n - 1, int(p * n))]
        r = np.searchsorted(srt, x, side="right")
        est = d.rank(m.to_key(float(x)))
        qd_ok &= bool(abs(est - r) <= eps * n / 2 * (1 + 1e-9))
        qd_r_err = max(qd_r_err, abs(est - r) / n)
    rows2 = [
        [
            kll_name,
            f"{kll_err:.5f}",
            f"{kll_bound:.5f} (99% conf.)",
            "yes" if kll_err <= kll_bound else "NO",
            len(s.serialize()),
        ],
        [
            f"QDigest eps={eps}",
            f"{qd_q_err:.5f} (rank of q) / {qd_r_err:.5f} (rank(x))",
            f"quantile {eps}, rank {eps / 2} (always)",
            "yes" if qd_ok else "NO",
            len(d.to_bytes()),
        ],
    ]
    md += print_table(
        "Error bounds checked on the same run (normalized rank error over 101 quantiles)",
        ["sketch", "largest observed", "bound", "held?", "bytes"],
        rows2,
    )
    md += f"\nload average before {load0[0]:.1f} / {load0[1]:.1f}, after {load1[0]:.1f} / {load1[1]:.1f}\n"
    print(md.splitlines()[-1])
    out.update(
        kll_err=kll_err,
        kll_bound=kll_bound,
        qd_bounds_held=qd_ok,
        qd_quantile_err=qd_q_err,
        qd_rank_err=qd_r_err,
        load_before=load0,
        load_after=load1,
        table=md,
    )
    save_results("qdigest_native" + ("_quick" if a.quick else ""), out)
    return 0 if qd_ok and kll_err <= kll_bound else 1


if __name__ == "__main__":
    import sys

    raise SystemExit(main(sys.argv[1:]))
