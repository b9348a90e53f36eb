"""ValueDivision on the compiled core against the Python reference: update rate per item
(``update_many`` per chunk, and ``update`` per item) and the query's cost, the same items on
both backends, single-threaded; the two backends' bytes compared and Theorem 6's quantile
bound checked on the same run.

Run: ``.venv/bin/python -m benchmarks value_division`` (200k items, 3 interleaved repeats) or
``... --quick`` (50k). Options: ``--items``, ``--chunk`` (items per ``update_many`` call),
``--theta`` (value division's theta = beta, the q-digests' eps; ``decayed_pNN`` with
``decay=poly(alpha)`` uses eps/2 = 0.005), ``--alpha`` (polynomial decay exponent),
``--per-item`` (how many items the per-item ``update`` contenders add).

The items: values ``lognormal(0, 1)`` (``numpy.random.default_rng(39)``) mapped to keys by
``FloatOrderMapper`` (U = 2**64, L = 64, as ``decayed_pNN`` keys them), times ``0 .. n-1``
with each item up to 50 units late (out of order), unit weights, ``PolynomialDecay(alpha)``.

Contenders, each run on both backends (``backend="native"``: every interval holds the
compiled ``QDigest``; ``"python"``: the reference's dict digests; the interval logic is the
same Python on both):

* ``update_many`` per ``--chunk`` items;
* ``update`` per item (one Python call each) on the first ``--per-item`` items;
* ``quantile(0.99)`` after the last ``update_many`` (the digest of every interval scaled by
  its decay, then one quantile), 5 calls per repeat;
* the user's path: ``decayed_p99(v, decay=poly(alpha))`` per event over one key's whole
  history (``DecayedQuantile(0.99, alpha=alpha).slices``: an update and a query per event)
  on the first ``--per-event`` events (times in microseconds, ``unit`` 1 s), with
  ``$WINDOWAGG_BACKEND`` set to the backend (the library builds its summaries on the
  default backend).

Reported: process CPU time (medians; the machine is shared, CPU time is the steadier figure)
as M items/s and ms per query, and native / python ratios measured in the same run; the load
average before and after.

Checked on the last repeat: the two backends' ``to_bytes()`` are equal (update_many and
update), and at the last time T the answer q of ``quantile(phi)`` for phi in (0.01, 0.5,
0.99) satisfies Theorem 6 against the exact decayed weights: W(< q) <= (phi + theta + beta)
D and W(<= q) >= (phi - beta) D (D the exact decayed total).
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from benchmarks.harness import median, print_table, save_results
from windowagg.sketches import PolynomialDecay, ValueDivision
from windowagg.sketches.mapping import FloatOrderMapper


def _cpu(fn: Callable[[], Any]) -> tuple[float, Any]:
    c0 = time.process_time()
    out = fn()
    return time.process_time() - c0, out


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks value_division")
    ap.add_argument("--items", type=int, default=200_000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--chunk", type=int, default=10_000)
    ap.add_argument("--theta", type=float, default=0.005)
    ap.add_argument("--alpha", type=float, default=2.0)
    ap.add_argument("--per-item", type=int, default=50_000)
    ap.add_argument("--per-event", type=int, default=2_000)
    ap.add_argument("--quick", action="store_true", help="50k items")
    a = ap.parse_args(argv)
    n = 50_000 if a.quick else a.items
    per_item = min(n, a.per_item)
    rng = np.random.default_rng(39)
    mapper = FloatOrderMapper()
    values = rng.lognormal(0.0, 1.0, n)
    keys = np.array([mapper.to_key(v) for v in values.tolist()], dtype=np.uint64)
    times = np.arange(n, dtype=np.float64) - rng.integers(0, 51, n)
    key_list, time_list = keys[:per_item].tolist(), times[:per_item].tolist()
    g = PolynomialDecay(a.alpha)
    theta = beta = a.theta
    chunk = a.chunk

    def many(backend: str) -> Callable[[], ValueDivision]:
        def run() -> ValueDivision:
            vd = ValueDivision(mapper.universe, g, theta, beta, backend=backend)  # type: ignore[arg-type]
            up = vd.update_many  # bound once: one call per chunk
            for i in range(0, n, chunk):
                up(keys[i : i + chunk], times[i : i + chunk])
            return vd

        return run

    def one(backend: str) -> Callable[[], ValueDivision]:
        def run() -> ValueDivision:
            vd = ValueDivision(mapper.universe, g, theta, beta, backend=backend)  # type: ignore[arg-type]
            up = vd.update  # bound once: one call per item
            for x, t in zip(key_list, time_list, strict=True):
                up(x, t)
            return vd

        return run

    from windowagg._backend import ENV_VAR
    from windowagg.sketches.decayed_aggs import DecayedQuantile

    ne = min(n, a.per_event)
    ev_t = np.sort(times[:ne] * 1e6).astype(np.int64)  # microseconds, sorted (one key)
    ev_v, ev_lo, ev_hi = values[:ne], np.zeros(ne, dtype=np.int64), np.arange(1, ne + 1)

    def user(backend: str) -> Callable[[], Any]:
        def run() -> Any:
            old = os.environ.get(ENV_VAR)
            os.environ[ENV_VAR] = backend
            try:
                m = DecayedQuantile(0.99, alpha=a.alpha, unit=1_000_000)
                return m.slices(ev_t, ev_v, ev_lo, ev_hi, ev_t)
            finally:
                if old is None:
                    del os.environ[ENV_VAR]
                else:
                    os.environ[ENV_VAR] = old

        return run

    backends = ("native", "python")
    cpu: dict[str, list[float]] = {}
    last: dict[str, Any] = {}
    load0 = os.getloadavg()
    for _ in range(a.repeats):  # interleaved: every contender once per repeat
        for b in backends:
            c, vd = _cpu(many(b))
            cpu.setdefault(f"update_many {b}", []).append(c)
            last[f"many {b}"] = vd
            c, _ = _cpu(lambda vd=vd: [vd.quantile(0.99) for _ in range(5)])
            cpu.setdefault(f"quantile {b}", []).append(c / 5)
            c, vd1 = _cpu(one(b))
            cpu.setdefault(f"update {b}", []).append(c)
            last[f"one {b}"] = vd1
            c, answers = _cpu(user(b))
            cpu.setdefault(f"per-event {b}", []).append(c)
            last[f"user {b}"] = answers
    load1 = os.getloadavg()

    def rate(name: str, items: int) -> float:
        return items / median(cpu[name]) / 1e6

    rows = []
    for what, items in (("update_many", n), ("update", per_item)):
        nat, py = rate(f"{what} native", items), rate(f"{what} python", items)
        rows.append([f"{what} (M items/s, CPU)", f"{nat:.3f}", f"{py:.3f}", f"{nat / py:.2f}x"])
    qn, qp = median(cpu["quantile native"]) * 1e3, median(cpu["quantile python"]) * 1e3
    rows.append(["quantile(0.99) (ms per call, CPU)", f"{qn:.2f}", f"{qp:.2f}", f"{qp / qn:.2f}x"])
    un, upy = median(cpu["per-event native"]), median(cpu["per-event python"])
    rows.append(
        [
            f"decayed_p99 poly per event, {ne:,} events (s, CPU)",
            f"{un:.2f}",
            f"{upy:.2f}",
            f"{upy / un:.2f}x",
        ]
    )
    vd = last["many native"]
    md = print_table(
        f"ValueDivision native vs python, {n:,} items (update per item: the first "
        f"{per_item:,}), PolynomialDecay({a.alpha}), theta = beta = {theta}, chunk {chunk:,}; "
        f"medians of {a.repeats} interleaved runs; {vd.num_summaries} intervals, "
        f"{vd.size:,} nodes after update_many",
        ["contender", "native", "python", "native speed-up"],
        rows,
    )

    # ---- the same bytes on both backends, and Theorem 6's quantile bound on the same run
    same_many = last["many native"].to_bytes() == last["many python"].to_bytes()
    same_one = last["one native"].to_bytes() == last["one python"].to_bytes()
    same_user = bool(np.array_equal(last["user native"], last["user python"]))
    T = float(vd.t_now)
    w = (1.0 + (T - times)) ** -a.alpha  # each item decayed to T exactly
    order = np.argsort(keys, kind="stable")
    sk, sw = keys[order], w[order]
    cum = np.cumsum(sw)
    D = float(cum[-1])
    worst = []
    ok = True
    for phi in (0.01, 0.5, 0.99):
        q = vd.quantile(phi)
        below = float(cum[np.searchsorted(sk, q, side="left") - 1]) if q > sk[0] else 0.0
        at_most = float(cum[np.searchsorted(sk, q, side="right") - 1])
        ok &= below <= (phi + theta + beta) * D * (1 + 1e-9)
        ok &= at_most >= (phi - beta) * D * (1 - 1e-9)
        worst.append(max(below / D - phi, phi - at_most / D, 0.0))
    checks = (
        f"bytes equal on both backends: update_many {same_many}, update {same_one}; "
        f"per-event answers equal: {same_user}; "
        f"quantile bound (Theorem 6: W(<q) <= (phi+theta+beta)D, W(<=q) >= (phi-beta)D) for "
        f"phi in (0.01, 0.5, 0.99): {'held' if ok else 'BROKEN'}, largest excess over phi "
        f"{max(worst):.5f} vs theta + beta = {theta + beta}"
    )
    print(checks)
    print(f"load average before {load0[0]:.1f}, after {load1[0]:.1f}")
    save_results(
        "value_division",
        {
            "items": n,
            "per_item": per_item,
            "chunk": chunk,
            "theta": theta,
            "alpha": a.alpha,
            "cpu_s": cpu,
            "summaries": vd.num_summaries,
            "nodes": vd.size,
            "bytes_equal": [same_many, same_one],
            "per_event_answers_equal": same_user,
            "bound_held": ok,
            "load": [load0[0], load1[0]],
            "table": md,
        },
    )
    return 0 if (ok and same_many and same_one and same_user) else 1


if __name__ == "__main__":
    import sys

    raise SystemExit(main(sys.argv[1:]))
