"""The compiled ExpDecaySpaceSaving against Apache DataSketches' frequent items sketch: update
rate per item on the same Zipf keys, single-threaded, with both sketches' error bounds
checked on the same run.

Run: ``.venv/bin/python -m benchmarks spacesaving_native`` (10M items, 3 interleaved repeats,
a few minutes) or ``... --quick`` (1M). Options: ``--zipf`` (exponent), ``--lg-max-k``
(DataSketches' map size; its capacity 0.75 * 2**lg is also our k), ``--chunk`` (items per
``update_many`` call), ``--half-life`` (in items).

Contenders, each fed the same int64 keys (``numpy.random.default_rng(39).zipf``):

* ``DataSketches frequent_items``: ``datasketches.frequent_items_sketch(lg_max_k)``, one
  ``update(key)`` call per item (its Python API has no array update), keys as Python ints.
  No decay: it counts.
* ``ExpDecaySpaceSaving native, update_many``: ``ExpDecaySpaceSaving(k=0.75 * 2**lg_max_k,
  lam, backend="native")``; per chunk, one ``update_many(keys, times)``: each item decayed by
  its own timestamp (one ``exp`` per item), times slightly out of order (each item up to
  1,000 units late).
* ``ExpDecaySpaceSaving native, update per item`` on the first 1M items only (one Python
  call per item, as DataSketches is called): its rate, not its total, is comparable.

Both rates are reported: wall clock (median) and process CPU time (median); the machine is
shared, so CPU time is the steadier one. The load average is printed before and after.

Bounds checked on the sketches of the last repeat, against exact counts (numpy):

* DataSketches: for every distinct key, ``get_lower_bound <= count <= get_upper_bound`` and
  ``upper - lower <= get_apriori_error(lg_max_k, N)`` (its deterministic guarantee).
* ExpDecaySpaceSaving (Cormode, Korn, Tirthapura 2007, Theorem 4): for every distinct key,
  with f its exact decayed count at the last time and D the decayed total,
  ``lo <= f <= hi`` and ``hi - lo <= D / k`` (``frequency_bounds``); ``heavy_hitters(phi)``
  reports every key with ``f >= phi D`` and none with ``f < (phi - 1/k) D``.
"""

from __future__ import annotations

import argparse
import math
import os
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from benchmarks.harness import median, print_table, save_results
from windowagg.sketches import ExpDecaySpaceSaving


def _timed(fn: Callable[[], Any]) -> tuple[float, float, Any]:
    w0, c0 = time.perf_counter(), time.process_time()
    out = fn()
    return time.perf_counter() - w0, time.process_time() - c0, out


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks spacesaving_native")
    ap.add_argument("--items", type=int, default=10_000_000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--zipf", type=float, default=1.2)
    ap.add_argument("--lg-max-k", type=int, default=10)
    ap.add_argument("--chunk", type=int, default=1 << 16)
    ap.add_argument("--half-life", type=float, default=1e6)
    ap.add_argument("--quick", action="store_true", help="1M items")
    a = ap.parse_args(argv)
    import datasketches as ds

    n = 1_000_000 if a.quick else a.items
    rng = np.random.default_rng(39)
    keys = rng.zipf(a.zipf, n).astype(np.int64)
    times = np.arange(n, dtype=np.float64) - rng.integers(0, 1000, n)  # slightly out of order
    key_list = keys.tolist()  # DataSketches is called with Python ints, one at a time
    lam = math.log(2.0) / a.half_life
    k = int(0.75 * (1 << a.lg_max_k))
    chunk = a.chunk
    per_call = min(n, 1_000_000)

    def fi() -> Any:
        s = ds.frequent_items_sketch(a.lg_max_k)
        up = s.update  # bound once: one call per item
        for x in key_list:
            up(x)
        return s

    def ss_many() -> Any:
        s = ExpDecaySpaceSaving(k=k, lam=lam, backend="native")
        up = s.update_many  # bound once: one call per chunk
        for i in range(0, n, chunk):
            up(keys[i : i + chunk], times[i : i + chunk])
        return s

    tl = times[:per_call].tolist()

    def ss_one() -> Any:
        s = ExpDecaySpaceSaving(k=k, lam=lam, backend="native")
        up = s.update  # bound once: one call per item
        for x, t in zip(key_list[:per_call], tl, strict=True):
            up(x, t)
        return s

    contenders: dict[str, tuple[Callable[[], Any], int]] = {
        "DataSketches frequent_items (C++), update per item": (fi, n),
        "ExpDecaySpaceSaving native, update_many": (ss_many, n),
        f"ExpDecaySpaceSaving native, update per item (first {per_call:,})": (ss_one, per_call),
    }
    load0 = os.getloadavg()
    times_: dict[str, tuple[list[float], list[float]]] = {c: ([], []) for c in contenders}
    last: dict[str, Any] = {}
    for _ in range(a.repeats):  # interleaved
        for name, (fn, _items) in contenders.items():
            w, c, out = _timed(fn)
            times_[name][0].append(w)
            times_[name][1].append(c)
            last[name] = out
    load1 = os.getloadavg()
    names = list(contenders)
    ref = names[0]
    rw, rc = median(times_[ref][0]) / n, median(times_[ref][1]) / n  # seconds per item
    rows = []
    out: dict[str, Any] = {
        "items": n,
        "zipf": a.zipf,
        "lg_max_k": a.lg_max_k,
        "k": k,
        "half_life": a.half_life,
        "chunk": chunk,
    }
    for name, (_fn, items) in contenders.items():
        w, c = median(times_[name][0]) / items, median(times_[name][1]) / items
        rows.append(
            [name, f"{1 / w / 1e6:.2f}", f"{1 / c / 1e6:.2f}", f"{rw / w:.2f}x", f"{rc / c:.2f}x"]
        )
        out[name] = {"items": items, "wall_s": times_[name][0], "cpu_s": times_[name][1]}
    md = print_table(
        f"Update rate, {n:,} Zipf({a.zipf}) int64 keys, single-threaded, medians of "
        f"{a.repeats} interleaved runs (M items/s)",
        ["contender", "wall", "CPU", "vs DataSketches (wall)", "vs DataSketches (CPU)"],
        rows,
    )

    # ---- bounds on the same run
    uniq, inv = np.unique(keys, return_inverse=True)
    counts = np.bincount(inv, minlength=uniq.size).astype(np.float64)
    s_fi = last[ref]
    N = float(n)
    apriori = float(ds.frequent_items_sketch.get_apriori_error(a.lg_max_k, n))
    fi_ok, fi_worst = True, 0.0
    for x, c in zip(uniq.tolist(), counts.tolist(), strict=True):
        lo, hi = s_fi.get_lower_bound(x), s_fi.get_upper_bound(x)
        fi_ok &= lo <= c <= hi and hi - lo <= apriori
        fi_worst = max(fi_worst, (hi - lo) / N)

    s_ss = last[names[1]]
    T = float(times.max())
    dec = np.exp(-lam * (T - times))
    f = np.bincount(inv, weights=dec, minlength=uniq.size)
    D = float(dec.sum())
    tol = 1e-9 * D
    ss_ok, ss_worst = True, 0.0
    fb = s_ss.frequency_bounds
    for x, fx in zip(uniq.tolist(), f.tolist(), strict=True):
        lo, hi = fb(x)
        ss_ok &= lo - tol <= fx <= hi + tol and hi - lo <= D / k + tol
        ss_worst = max(ss_worst, (hi - lo) / D)
    phi = 0.01
    hh = {x for x, _ in s_ss.heavy_hitters(phi)}
    must = set(uniq[f >= phi * D].tolist())
    never = set(uniq[f < (phi - 1.0 / k) * D].tolist())
    hh_ok = must <= hh and not (hh & never)
    ss_ok &= hh_ok
    rows2 = [
        [
            f"DataSketches frequent_items lg_max_k={a.lg_max_k} (no decay)",
            f"{fi_worst:.5f}",
            f"{apriori / N:.5f} (apriori, always)",
            "yes" if fi_ok else "NO",
            s_fi.get_serialized_size_bytes(ds.PyLongsSerDe()),
        ],
        [
            f"ExpDecaySpaceSaving k={k}, half-life {a.half_life:g}",
            f"{ss_worst:.5f}",
            f"{1 / k:.5f} (1/k, always); heavy_hitters({phi}) exact set "
            + ("held" if hh_ok else "BROKEN"),
            "yes" if ss_ok else "NO",
            len(s_ss.to_bytes()),
        ],
    ]
    md += print_table(
        f"Error bounds checked on the same run, every one of the {uniq.size:,} distinct keys "
        "(largest (upper - lower) / total)",
        ["sketch", "largest observed", "bound", "held?", "bytes"],
        rows2,
    )
    md += f"\nload average before {load0[0]:.1f} / {load0[1]:.1f}, after {load1[0]:.1f} / {load1[1]:.1f}\n"
    print(md.splitlines()[-1])
    out.update(
        fi_bounds_held=fi_ok,
        fi_worst=fi_worst,
        fi_apriori=apriori / N,
        ss_bounds_held=ss_ok,
        ss_worst=ss_worst,
        load_before=load0,
        load_after=load1,
        table=md,
    )
    save_results("spacesaving_native" + ("_quick" if a.quick else ""), out)
    return 0 if ss_ok and fi_ok else 1


if __name__ == "__main__":
    import sys

    raise SystemExit(main(sys.argv[1:]))
