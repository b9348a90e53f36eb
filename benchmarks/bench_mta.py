"""Monoid Tree Aggregators: the MTA paper's experiments at Python scale.

Run: ``.venv/bin/python -m benchmarks mta`` (about 6-8 minutes) or ``... mta --quick``
(about 2 minutes). ``--no-redis`` skips the Redis variants.

1. Throughput vs window size (MTA Exp. 1 / Fig. 6): ramp up to n, then time rounds of
   ``insert(x); evict(); query()`` (a constant-size window); rounds per second, median of
   repeats. Variants: in-memory LogMTA / AMTA, store-backed LogMTA / AMTA on SQLite (a file
   in a temp dir) and on Redis (a ``redis-server`` started on a free loopback port, the
   paper's "KVS" variants; buffer 512, caches 512 refilled below 256, pages of 64 pairs),
   ``fifo.DABA`` (the paper's strongest competitor) and ``fifo.Recalc`` (small n only).
2. Latency per round (insert + evict + query) at n = 2^12: p50, p99, p99.9, max.
   The target ratios are measured separately in *paired* runs: A and B timed back to back,
   alternately, several times; the median of the per-pair ratios is reported.
3. Bulk eviction (MTA Exp. 2 / Fig. 7): from a window of n = 131072 (in memory; 2^15 for
   the store variants in --quick), time one ``bulk_evict(k)`` for k = 1 ... 10^5; the
   window is topped up again (untimed) between measurements. DABA and Recalc evict one by
   one (O(k)). Also the combine count of each bulk eviction (deterministic).

Monoid: Sum (the cheapest operator, so the structures' own overhead shows). The machine
is shared with other jobs: absolute numbers are noisy; compare ratios from the same run.
"""

from __future__ import annotations

import argparse
import atexit
import gc
import shutil
import socket
import subprocess
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks.harness import median, percentiles, plot_lines, print_table, save_results
from windowagg.fifo.amta import AMTA
from windowagg.fifo.log_mta import LogMTA
from windowagg.fifo.recalc import Recalc
from windowagg.monoids import Counting, Sum
from windowagg.storage import RedisStore, SQLiteStore

try:  # the FIFO helper's DABA; the benchmark notes its absence instead of failing
    from windowagg.fifo.daba import DABA
except ImportError:  # pragma: no cover
    DABA = None  # type: ignore[assignment,misc]

_TMP = Path(tempfile.mkdtemp(prefix="windowagg-bench-mta-"))
atexit.register(shutil.rmtree, _TMP, True)


def start_redis() -> str | None:
    """Start a throwaway redis-server; return its URL, or None if not installed."""
    exe = shutil.which("redis-server")
    if exe is None:
        return None
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    d = tempfile.mkdtemp(prefix="windowagg-bench-redis-")
    proc = subprocess.Popen(
        [exe, "--port", str(port), "--bind", "127.0.0.1", "--dir", d, "--save", "",
         "--appendonly", "no"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip

    def stop() -> None:
        proc.terminate()
        proc.wait(timeout=5)
        shutil.rmtree(d, ignore_errors=True)

    atexit.register(stop)
    for _ in range(200):
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.1):
                return f"redis://127.0.0.1:{port}/0"
        except OSError:
            time.sleep(0.05)
    return None


def variants(redis_url: str | None) -> dict[str, Callable[[Any], Any]]:
    """name -> factory(monoid)."""

    def sqlite_store() -> SQLiteStore:
        return SQLiteStore(_TMP / f"{uuid.uuid4().hex}.db")

    out: dict[str, Callable[[Any], Any]] = {
        "LogMTA (mem)": lambda m: LogMTA(m),
        "AMTA (mem)": lambda m: AMTA(m),
        "LogMTA (SQLite)": lambda m: LogMTA(m, store=sqlite_store(), namespace="b"),
        "AMTA (SQLite)": lambda m: AMTA(m, store=sqlite_store(), namespace="b"),
    }
    if redis_url is not None:
        out["LogMTA (Redis)"] = lambda m: LogMTA(
            m, store=RedisStore(redis_url), namespace=uuid.uuid4().hex
        )
        out["AMTA (Redis)"] = lambda m: AMTA(
            m, store=RedisStore(redis_url), namespace=uuid.uuid4().hex
        )
    if DABA is not None:
        out["DABA"] = lambda m: DABA(m)
    out["Recalc"] = lambda m: Recalc(m)
    return out


def _cleanup(w: Any) -> None:
    store = getattr(w, "store", None)
    if store is not None:
        ns = getattr(w, "_namespace", None)
        if ns is not None:
            store.drop_namespace(ns)
        store.close()


def throughput(
    factory: Callable[[Any], Any], sizes: list[int], rounds: int, repeats: int
) -> list[float]:
    """Rounds/s at each size; one window grown through the sizes."""
    w = factory(Sum())
    out = []
    have = 0
    try:
        for n in sizes:
            ins = w.insert
            for i in range(have, n):
                ins(i)
            have = n
            ev, q = w.evict, w.query
            runs = []
            for _ in range(repeats):
                gc.collect()
                t0 = time.perf_counter()
                for i in range(rounds):
                    ins(i)
                    ev()
                    q()
                runs.append(rounds / (time.perf_counter() - t0))
            out.append(median(runs))
    finally:
        _cleanup(w)
    return out


def paired_ratio(
    fac_a: Callable[[Any], Any], fac_b: Callable[[Any], Any], n: int, rounds: int, pairs: int
) -> tuple[float, float, float]:
    """Median over *pairs* alternating measurements of rounds/s of A over B at size n
    (A and B timed back to back, so machine load affects both alike); also the medians."""
    wa, wb = fac_a(Sum()), fac_b(Sum())
    try:
        for w in (wa, wb):
            for i in range(n):
                w.insert(i)
        ratios, ra, rb = [], [], []
        for _ in range(pairs):
            got = []
            for w in (wa, wb):
                ins, ev, q = w.insert, w.evict, w.query
                gc.collect()
                t0 = time.perf_counter()
                for i in range(rounds):
                    ins(i)
                    ev()
                    q()
                got.append(rounds / (time.perf_counter() - t0))
            ratios.append(got[0] / got[1])
            ra.append(got[0])
            rb.append(got[1])
        return median(ratios), median(ra), median(rb)
    finally:
        _cleanup(wa)
        _cleanup(wb)


def latency(factory: Callable[[Any], Any], n: int, rounds: int) -> dict[str, float]:
    w = factory(Sum())
    try:
        for i in range(n):
            w.insert(i)
        ins, ev, q = w.insert, w.evict, w.query
        clock = time.perf_counter_ns
        samples = []
        for i in range(rounds):
            t0 = clock()
            ins(i)
            ev()
            q()
            samples.append((clock() - t0) / 1000.0)
        return percentiles(samples, (50, 99, 99.9, 100))
    finally:
        _cleanup(w)


def bulk(
    factory: Callable[[Any], Any], n: int, ks: list[int], repeats: int
) -> tuple[list[float], list[int]]:
    """Median ms of one bulk_evict(k) from a window of n, and its combine count."""
    m = Counting(Sum())
    w = factory(m)
    times: list[float] = []
    combines: list[int] = []
    nxt = 0
    try:
        for _ in range(n):
            w.insert(nxt)
            nxt += 1
        for k in ks:
            runs = []
            c = 0
            for _ in range(repeats):
                gc.collect()
                gc.disable()
                m.reset()
                t0 = time.perf_counter()
                w.bulk_evict(k)
                runs.append((time.perf_counter() - t0) * 1000.0)
                c = m.combines
                gc.enable()
                for _ in range(k):  # top up again, untimed
                    w.insert(nxt)
                    nxt += 1
            times.append(median(runs))
            combines.append(c)
    finally:
        _cleanup(w)
    return times, combines


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks mta")
    ap.add_argument("--quick", action="store_true", help="short run (about 2 minutes)")
    ap.add_argument("--no-redis", action="store_true", help="skip the Redis variants")
    args = ap.parse_args(argv)

    notes = ["Sum monoid; shared 2-core machine: absolute numbers are noisy, ratios are not"]
    redis_url = None if args.no_redis else start_redis()
    if redis_url is None:
        notes.append("Redis variants skipped (no redis-server or --no-redis)")
    if DABA is None:
        notes.append("windowagg.fifo.daba.DABA not importable: DABA column skipped")
    facs = variants(redis_url)

    if args.quick:
        sizes = [16, 256, 4096, 65536]
        rounds, repeats = 5_000, 3
        lat_rounds = 5_000
        n_mem, n_store = 131_072, 32_768
        ks_mem = [1, 16, 256, 4096, 100_000]
        ks_store = [1, 16, 256, 4096, 30_000]
        b_repeats = 3
        recalc_max = 256
        pair_rounds, pairs = 5_000, 5
    else:
        sizes = [16, 256, 4096, 65536, 262144]
        rounds, repeats = 20_000, 5
        lat_rounds = 30_000
        n_mem, n_store = 131_072, 131_072
        ks_mem = [1, 16, 256, 4096, 65536, 100_000]
        ks_store = ks_mem
        b_repeats = 5
        recalc_max = 4096
        pair_rounds, pairs = 20_000, 9
    for ks in (ks_mem, ks_store):
        assert max(ks) < min(n_mem, n_store) or ks is ks_mem

    # 1. throughput vs window size
    thr: dict[str, list[float]] = {}
    for name, fac in facs.items():
        sz = [s for s in sizes if name != "Recalc" or s <= recalc_max]
        t0 = time.perf_counter()
        thr[name] = throughput(fac, sz, rounds if name != "Recalc" else 500, repeats)
        print(f"  throughput {name}: {time.perf_counter() - t0:.1f}s", flush=True)
    rows = []
    for i, n in enumerate(sizes):
        rows.append([n] + [thr[k][i] if i < len(thr[k]) else "-" for k in facs])
    t1 = print_table(
        "Throughput, rounds/s (insert + evict + query), median of repeats",
        ["n", *facs],
        rows,
    )
    suffix = "_quick" if args.quick else ""
    plot_lines(
        "mta_throughput" + suffix,
        "MTA throughput vs window size (Sum)",
        "window size n",
        "rounds / s",
        {k: (sizes[: len(v)], v) for k, v in thr.items()},
        logy=True,
    )

    # the target ratios, measured in alternating pairs (same load on both sides)
    ratio_rows = []
    pair_sizes = [256, 4096, 65536]
    ratios: dict[str, list[float]] = {}
    for label, a, b in (
        ("AMTA (mem) / DABA", "AMTA (mem)", "DABA"),
        ("AMTA (Redis) / AMTA (mem)", "AMTA (Redis)", "AMTA (mem)"),
        ("AMTA (SQLite) / AMTA (mem)", "AMTA (SQLite)", "AMTA (mem)"),
        ("LogMTA (mem) / AMTA (mem)", "LogMTA (mem)", "AMTA (mem)"),
    ):
        if a not in facs or b not in facs:
            continue
        ratios[label] = []
        for n in pair_sizes:
            r, ra, rb = paired_ratio(facs[a], facs[b], n, pair_rounds, pairs)
            ratios[label].append(r)
            ratio_rows.append([label, n, r, ra, rb])
    t2 = print_table(
        "Paired ratios (targets: AMTA mem / DABA >= 0.5, AMTA Redis / AMTA mem >= 0.2); "
        "median of alternating runs",
        ["ratio", "n", "median ratio", "A rounds/s", "B rounds/s"],
        ratio_rows,
    )

    # 2. latency per round at n = 4096
    lat_rows = []
    lat: dict[str, dict[str, float]] = {}
    for name, fac in facs.items():
        if name == "Recalc":
            continue
        lat[name] = latency(fac, 4096, lat_rounds)
        p = lat[name]
        lat_rows.append([name, p["p50"], p["p99"], p["p99.9"], p["max"]])
    t3 = print_table(
        "Latency per round at n = 4096, microseconds",
        ["variant", "p50", "p99", "p99.9", "max"],
        lat_rows,
    )

    # 3. bulk eviction latency vs evicted count
    bulk_ms: dict[str, list[float]] = {}
    bulk_c: dict[str, list[int]] = {}
    for name, fac in facs.items():
        if name == "Recalc":
            continue
        store_backed = "SQLite" in name or "Redis" in name
        n, ks = (n_store, ks_store) if store_backed else (n_mem, ks_mem)
        t0 = time.perf_counter()
        bulk_ms[name], bulk_c[name] = bulk(fac, n, ks, b_repeats)
        print(f"  bulk {name}: {time.perf_counter() - t0:.1f}s", flush=True)
    b_rows = []
    for name in bulk_ms:
        store_backed = "SQLite" in name or "Redis" in name
        n, ks = (n_store, ks_store) if store_backed else (n_mem, ks_mem)
        for k, ms, c in zip(ks, bulk_ms[name], bulk_c[name], strict=True):
            b_rows.append([name, n, k, ms, c])
    t4 = print_table(
        "Bulk eviction: one bulk_evict(k) from a window of n, median ms and combines",
        ["variant", "n", "k", "ms", "combines"],
        b_rows,
    )
    plot_lines(
        "mta_bulk_evict" + suffix,
        "bulk_evict(k) latency (Sum)",
        "evicted k",
        "ms",
        {
            name: ((ks_store if ("SQLite" in name or "Redis" in name) else ks_mem), v)
            for name, v in bulk_ms.items()
        },
        logy=True,
    )
    for note in notes:
        print(f"note: {note}")
    path = save_results(
        "mta" + ("_quick" if args.quick else ""),
        {
            "notes": notes,
            "sizes": sizes,
            "throughput": thr,
            "latency_us": lat,
            "bulk_ms": bulk_ms,
            "bulk_combines": bulk_c,
            "paired_ratios": {"sizes": pair_sizes, **ratios},
            "tables": [t1, t2, t3, t4],
        },
    )
    print(f"results: {path}")
    return 0
