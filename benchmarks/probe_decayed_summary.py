"""Where does ``windowagg.spark.decayed_summary(kind="quantiles")`` spend its Python worker's
CPU? The per-partition function without Spark: the Arrow batches Spark hands ``mapInArrow``
(``--partitions`` partitions of ``--rows / --partitions`` rows, batches of 10,000 rows:
Spark's ``spark.sql.execution.arrow.maxRecordsPerBatch``; columns ``t`` timestamp[us, UTC]
over 30 days in whole seconds and ``v`` normal(10, 5), as ``bench_decayed_summary
--spark-rows`` makes them) through the same function
(:func:`windowagg.decayed_summary.summarize`, 1-day half-life, eps 0.01), then the
driver's :func:`~windowagg.decayed_summary.merge_parts`.

The CPU of each partition's ``summarize`` is split by timing the calls it makes (wrapped
for the probe, the function itself unchanged):

* ``keys``: ``FloatOrderMapper.to_keys`` (values to q-digest keys);
* ``weights``: ``ExpDecayQDigest.update_many`` less the digest's own update (validation,
  landmark, ``w exp(lam (t - landmark))``, the total);
* ``digest``: ``QDigest._add_checked`` (the held digest's ``update_many``: native or Python);
* ``output``: ``ExpDecayQDigest.to_bytes``;
* ``arrow``: the rest of ``summarize`` (null masks, casts, Arrow to numpy, filters);

and the driver's ``merge`` (``merge_parts``: P summaries from their bytes, merged, answered).
``--repeats`` rounds; medians of each phase (CPU seconds, all partitions), the load after
each round, and a hash of the merged summary's bytes (equal across code versions when the
digest is unchanged). ``--backend`` picks the held digest (``native`` by default).

Run: ``python -m benchmarks.probe_decayed_summary [--rows N] [--partitions P] [--repeats R]
[--backend native|python]``.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import statistics
import time
from collections.abc import Callable, Iterator
from typing import Any

BATCH = 10_000
DAY = 86_400_000_000


def batches(n: int, partitions: int, seed: int = 1) -> list[list[Any]]:
    """*partitions* lists of Arrow record batches (10,000 rows each) of *n* rows in all."""
    import numpy as np
    import pyarrow as pa

    rng = np.random.default_rng(seed)
    schema = pa.schema([("t", pa.timestamp("us", tz="UTC")), ("v", pa.float64())])
    out = []
    per = n // partitions
    for _ in range(partitions):
        t = rng.integers(0, 30 * 86400, per) * 1_000_000
        v = rng.normal(10.0, 5.0, per)
        part = []
        for lo in range(0, per, BATCH):
            tt = pa.array(t[lo : lo + BATCH], pa.timestamp("us", tz="UTC"))
            part.append(pa.record_batch([tt, pa.array(v[lo : lo + BATCH])], schema=schema))
        out.append(part)
    return out


class _Clock:
    """CPU seconds spent inside wrapped callables, by phase (nested calls subtracted from
    their caller's phase)."""

    def __init__(self) -> None:
        self.cpu: dict[str, float] = {}
        self._stack: list[list[float]] = []

    def wrap(self, phase: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def timed(*a: Any, **kw: Any) -> Any:
            self._stack.append([0.0])
            c0 = time.thread_time()
            try:
                return fn(*a, **kw)
            finally:
                spent = time.thread_time() - c0
                inner = self._stack.pop()[0]
                self.cpu[phase] = self.cpu.get(phase, 0.0) + spent - inner
                if self._stack:
                    self._stack[-1][0] += spent

        return timed


def run_once(parts: list[list[Any]], backend: str) -> tuple[dict[str, float], str]:
    """One pass over every partition and the merge: CPU seconds by phase, and the hash of
    the merged summary's bytes."""
    from windowagg import decayed_summary as ds
    from windowagg.sketches import exp_qdigest, qdigest
    from windowagg.sketches.mapping import FloatOrderMapper

    spec = ds.SummarySpec("quantiles", DAY, quantiles=(0.5, 0.9, 0.99), eps=0.01)
    clock = _Clock()
    saved: list[tuple[Any, str, Any]] = []

    def patch(owner: Any, name: str, phase: str) -> None:
        fn = owner.__dict__[name]
        saved.append((owner, name, fn))
        setattr(owner, name, clock.wrap(phase, fn))

    os.environ["WINDOWAGG_BACKEND"] = backend
    patch(FloatOrderMapper, "to_keys", "keys")
    patch(exp_qdigest.ExpDecayQDigest, "update_many", "weights")
    patch(qdigest.QDigest, "_add_checked", "digest")
    patch(exp_qdigest.ExpDecayQDigest, "to_bytes", "output")
    try:
        results = []
        total = 0.0
        for part in parts:
            it: Iterator[Any] = iter(part)
            c0 = time.thread_time()
            results.append(clock.wrap("arrow", ds.summarize)(it, "t", "v", spec))
            total += time.thread_time() - c0
        c0 = time.thread_time()
        merged = ds.merge_parts(spec, results)
        cpu = dict(clock.cpu)
        cpu["merge"] = time.thread_time() - c0
        cpu["per-partition total"] = total
    finally:
        for owner, name, fn in saved:
            setattr(owner, name, fn)
    digest = hashlib.sha256(merged.summary.to_bytes()).hexdigest()[:16]
    return cpu, digest


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.probe_decayed_summary")
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--partitions", type=int, default=8)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--backend", default="native", choices=["native", "python"])
    args = ap.parse_args(argv)
    parts = batches(args.rows, args.partitions)
    rounds: list[dict[str, float]] = []
    loads = []
    hashes = set()
    for _ in range(args.repeats):
        cpu, h = run_once(parts, args.backend)
        rounds.append(cpu)
        hashes.add(h)
        loads.append(os.getloadavg()[0])
    phases = ["arrow", "keys", "weights", "digest", "output", "per-partition total", "merge"]
    print(
        f"summarize, {args.rows:,} rows in {args.partitions} partitions of {BATCH:,}-row "
        f"batches, backend {args.backend}; CPU seconds, medians of {args.repeats}"
    )
    for p in phases:
        print(f"- {p}: {statistics.median(r.get(p, 0.0) for r in rounds):.3f} s")
    print(f"merged summary bytes sha256[:16]: {', '.join(sorted(hashes))}")
    print("load (1 min) after each round: " + ", ".join(f"{x:.1f}" for x in loads))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
