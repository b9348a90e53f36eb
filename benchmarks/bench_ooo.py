"""Out-of-order aggregators: FiBA vs the classic augmented B-tree (the FiBA papers' experiments).

Run ``.venv/bin/python -m benchmarks ooo`` (about 6-8 minutes) or add ``--quick`` (under 2
minutes, smaller windows). ``--only distance,fifo,...`` runs some sections.

Sections (one round = evict oldest + insert + query, as in the papers):

- ``distance``: throughput vs out-of-order distance d (every insert lands exactly d entries
  before the youngest, the papers' adversarial generator), window 10^6 (quick: 10^5) for
  Sum and GeometricMean, 2^14 for BloomFilter (a 2^14-bit partial per entry and per node
  would need gigabytes at 10^6), min_arity 2/4/8/16 (8 is the default), plus BTree.
  FiBA has no Sum-specific path (only ``operator.add`` as Sum's combine), so Sum shows
  what any cheap monoid gets;
- ``fifo``: d = 0 throughput vs window size, FiBA (min_arity 2..16) vs BTree;
- ``latency``: per-round latency percentiles at d = 0 and d = 10^3;
- ``bulk``: bulk_evict / bulk_insert vs loops of single operations, by bulk size m;
- ``memory``: bytes per window entry (tracemalloc), Sum, 10^6 entries (quick: 10^5).

The machine is shared with other jobs: wall-clock figures are noisy, ratios measured in
the same run are the figures to compare. Results go to ``benchmarks/results/ooo.json``
and plots to ``benchmarks/plots/ooo_*.png``.
"""

from __future__ import annotations

import argparse
import gc
import time
import tracemalloc
from collections.abc import Callable
from typing import Any

from benchmarks.harness import median, percentiles, plot_lines, print_table, save_results
from windowagg.monoids import Sum
from windowagg.ooo import BTree, FiBA

try:  # added by the monoids helper; local stand-ins with the same definitions otherwise
    from windowagg.monoids import BloomFilter, GeometricMean

    LOCAL_MONOIDS = False
except ImportError:  # pragma: no cover - depends on the checkout
    import math

    LOCAL_MONOIDS = True

    class GeometricMean:  # type: ignore[no-redef]
        identity = (0.0, 0)

        def lift(self, x: float) -> tuple[float, int]:
            return (math.log(x), 1)

        def combine(self, a: tuple[float, int], b: tuple[float, int]) -> tuple[float, int]:
            return (a[0] + b[0], a[1] + b[1])

        def lower(self, a: tuple[float, int]) -> float | None:
            return math.exp(a[0] / a[1]) if a[1] else None

    class BloomFilter:  # type: ignore[no-redef]
        identity = 0

        def lift(self, x: Any) -> int:
            h = hash(("bloom", x))
            return sum(1 << ((h >> (14 * i)) & 0x3FFF) for i in range(4))

        def combine(self, a: int, b: int) -> int:
            return a | b

        def lower(self, a: int) -> int:
            return a


_SUFFIX = {False: "", True: "_quick"}  # --quick never overwrites the full run's plots
BIG = 10**12  # the high block of the distance generator lives far above the low block


def _value(t: int) -> int:
    return 1 + t % 101  # the authors' driver: value 1 + (i mod 101) for timestamp i


_PAIRS: dict[tuple[type, int], tuple[list[Any], list[Any]]] = {}


def _window(cls: type, monoid: Any, n: int, d: int, mu: int) -> Any:
    """n entries: times [0, n-d) and the d youngest [BIG, BIG+d); built in O(n)."""
    key = (type(monoid), n)  # one configuration per monoid class in this suite
    if key not in _PAIRS:  # the lifted entries are shared by every (μ, d) of a monoid
        parts = [monoid.lift(_value(t)) for t in range(101)]
        _PAIRS.clear()
        _PAIRS[key] = (
            [(t, parts[t % 101]) for t in range(n)],
            [(BIG + t, parts[t % 101]) for t in range(min(n // 2, 10**5) + 1)],
        )
    low, high = _PAIRS[key]
    return cls.from_sorted_partials(monoid, low[: n - d] + high[:d], min_arity=mu)


def _rounds(w: Any, n: int, d: int, count: int, start: int) -> float:
    """Seconds for *count* rounds (evict oldest, insert at distance d, query), GC paused."""
    ev, ins, q = w.evict, w.insert, w.query
    old = start
    nxt = n - d + start
    gc.collect()
    gc.disable()
    try:
        t0 = time.perf_counter()
        for _ in range(count):
            ev(old)
            ins(nxt, _value(nxt))
            q()
            old += 1
            nxt += 1
        return time.perf_counter() - t0
    finally:
        gc.enable()


def _throughput(w: Any, n: int, d: int, count: int, repeats: int) -> float:
    """Rounds per second: the median over short timed blocks, after a warm-up.

    ``repeats * count`` rounds are timed in blocks of at most 1,000 rounds; the median
    block is robust to the scheduler preempting this process on a shared machine (a
    preemption costs milliseconds, the length of a whole block), while each block still
    spans many rebalancing cycles of the tree.
    """
    pos = 0
    _rounds(w, n, d, count // 2, pos)  # warm-up into the steady state
    pos += count // 2
    block = min(1000, count)
    secs = []
    for _ in range(max(3, repeats * count // block)):
        secs.append(_rounds(w, n, d, block, pos))
        pos += block
    assert len(w) == n, "the window size must not drift during a run"
    return block / median(secs)


# ---------------------------------------------------------------------------- sections
def bench_distance(quick: bool, out: dict[str, Any]) -> list[str]:
    n_big = 10**5 if quick else 10**6
    n_bloom = 2**12 if quick else 2**14
    rounds = 2000 if quick else 8000
    all_mus = (2, 4, 8, 16)
    cases: list[tuple[str, Any, int, int, tuple[int, ...]]] = [
        ("sum", Sum(), n_big, rounds, all_mus),
        ("geomean", GeometricMean(), n_big, rounds, all_mus),
        ("bloom", BloomFilter(), n_bloom, rounds // 4, all_mus),
    ]
    tables = []
    res: dict[str, Any] = {}
    for name, monoid, n, count, mus in cases:
        ds = [0] + [
            d for d in ((100, 10**3, 10**4) if quick else (100, 10**3, 10**5)) if d <= n // 2
        ]
        series: dict[str, tuple[list[float], list[float]]] = {}
        rows = []
        for mu in mus:
            ys = []
            for d in ds:
                w = _window(FiBA, monoid, n, d, mu)
                ys.append(_throughput(w, n, d, count, 3))
                del w
            base = ys[0]
            for d, y in zip(ds, ys, strict=True):
                rows.append([f"FiBA μ={mu}", d, y, y / base])
            series[f"FiBA min_arity={mu}"] = ([max(d, 1) for d in ds], ys)
            res[f"{name}/fiba{mu}"] = dict(zip(map(str, ds), ys, strict=True))
        # the classic B-tree at two distances (its cost does not depend on d)
        bys = []
        bds = [0, 10**3] if n >= 2 * 10**3 else [0]
        for d in bds:
            w = _window(BTree, monoid, n, d, 4)
            bys.append(_throughput(w, n, d, max(count // 4, 200), 3))
            del w
        for d, y in zip(bds, bys, strict=True):
            rows.append(["BTree μ=4", d, y, y / bys[0]])
        series["BTree min_arity=4"] = ([max(d, 1) for d in bds], bys)
        res[f"{name}/btree4"] = dict(zip(map(str, bds), bys, strict=True))
        tables.append(
            print_table(
                f"Throughput vs out-of-order distance d — {name}, window {n:,} "
                "(rounds/s, median of 1,000-round blocks; ratio vs d = 0 of the same row group)",
                ["structure", "d", "rounds/s", "vs d=0"],
                rows,
            )
        )
        plot_lines(
            f"ooo_distance_{name}{_SUFFIX[quick]}",
            f"Out-of-order distance, {name}, window {n:,} (d=0 plotted at 1)",
            "out-of-order distance d",
            "rounds per second (evict+insert+query)",
            series,
            logx=True,
            logy=True,
        )
    out["distance"] = res
    return tables


def bench_fifo(quick: bool, out: dict[str, Any]) -> list[str]:
    sizes = [10**3, 10**4, 10**5] + ([] if quick else [10**6])
    count = 5000 if quick else 20000
    rows = []
    series: dict[str, tuple[list[float], list[float]]] = {}
    res: dict[str, Any] = {}
    for label, cls, mu in [
        ("FiBA μ=2", FiBA, 2),
        ("FiBA μ=4", FiBA, 4),
        ("FiBA μ=8", FiBA, 8),
        ("FiBA μ=16", FiBA, 16),
        ("FiBA μ=32", FiBA, 32),
        ("BTree μ=4", BTree, 4),
        ("BTree μ=8", BTree, 8),
    ]:
        ys = []
        for n in sizes:
            w = _window(cls, Sum(), n, 0, mu)
            ys.append(_throughput(w, n, 0, count if cls is FiBA else count // 2, 3))
            del w
        series[label] = (sizes, ys)
        res[label] = dict(zip(map(str, sizes), ys, strict=True))
    fiba_best = {n: max(res[k][str(n)] for k in res if k.startswith("FiBA")) for n in sizes}
    btree_best = {n: max(res[k][str(n)] for k in res if k.startswith("BTree")) for n in sizes}
    for label, per in res.items():
        rows.append([label, *[per[str(n)] for n in sizes]])
    rows.append(["best FiBA / best BTree", *[fiba_best[n] / btree_best[n] for n in sizes]])

    # Calibration: the same loop calling three empty methods (the interpreter's floor
    # for one round on this machine, at this moment).
    class _Null:
        def evict(self, t: int) -> None:
            pass

        def insert(self, t: int, v: int) -> None:
            pass

        def query(self) -> int:
            return 0

        def __len__(self) -> int:
            return sizes[-1]

    null = _throughput(_Null(), sizes[-1], 0, count, 3)
    rows.append(["(floor: 3 empty method calls)", *[null for _ in sizes]])
    res["floor"] = null
    out["fifo"] = res
    table = print_table(
        "FIFO (d = 0) throughput vs window size, Sum (rounds/s, median of 1,000-round blocks)",
        ["structure", *[f"n={n:,}" for n in sizes]],
        rows,
    )
    plot_lines(
        f"ooo_fifo{_SUFFIX[quick]}",
        "FIFO (d = 0), Sum: rounds/s vs window size",
        "window size n",
        "rounds per second (evict+insert+query)",
        series,
        logx=True,
        logy=True,
    )
    return [table]


def bench_latency(quick: bool, out: dict[str, Any]) -> list[str]:
    n = 10**5 if quick else 10**6
    count = 5000 if quick else 20000
    rows = []
    res: dict[str, Any] = {}
    ps = (50, 99, 99.9, 99.99, 100)
    for label, cls, mu in [
        ("FiBA μ=8", FiBA, 8),
        ("FiBA μ=2", FiBA, 2),
        ("BTree μ=4", BTree, 4),
    ]:
        for d in (0, 10**3):
            w = _window(cls, Sum(), n, d, mu)
            ev, ins, q = w.evict, w.insert, w.query
            clock = time.perf_counter_ns
            samples = []
            old, nxt = 0, n - d
            for _ in range(count // 4):  # warm-up
                ev(old)
                ins(nxt, 1)
                q()
                old += 1
                nxt += 1
            gc.collect()
            gc.disable()
            try:
                for _ in range(count):
                    t0 = clock()
                    ev(old)
                    ins(nxt, 1)
                    q()
                    samples.append(clock() - t0)
                    old += 1
                    nxt += 1
            finally:
                gc.enable()
            pct = percentiles([s / 1000 for s in samples], ps)
            rows.append([label, d, *pct.values()])
            res[f"{label}/d={d}"] = pct
            del w
    out["latency"] = res
    return [
        print_table(
            f"Per-round latency (µs; evict+insert+query), Sum, window {n:,}, {count:,} rounds",
            ["structure", "d", "p50", "p99", "p99.9", "p99.99", "max"],
            rows,
        )
    ]


def bench_bulk(quick: bool, out: dict[str, Any]) -> list[str]:
    n = 10**5 if quick else 10**6
    ms = [16, 1024] if quick else [16, 256, 4096]
    reps = 5 if quick else 9
    mu = 8  # FiBA's default
    rows = []
    res: dict[str, Any] = {}
    ev_series: dict[str, tuple[list[float], list[float]]] = {
        "bulk_evict": ([], []),
        "loop": ([], []),
    }
    for m_ in ms:
        # bulk_evict of the m oldest vs m single oldest-evictions
        w = _window(FiBA, Sum(), n, 0, mu)
        bulk_t, loop_t = [], []
        cut = -1
        for _ in range(reps):
            cut += m_
            t0 = time.perf_counter()
            w.bulk_evict(cut)
            bulk_t.append(time.perf_counter() - t0)
            ev = w.evict
            t0 = time.perf_counter()
            for t in range(cut + 1, cut + 1 + m_):
                ev(t)
            loop_t.append(time.perf_counter() - t0)
            cut += m_
        be, le = median(bulk_t), median(loop_t)
        rows.append(["evict oldest m", m_, be * 1e6, le * 1e6, le / be])
        ev_series["bulk_evict"][0].append(m_)
        ev_series["bulk_evict"][1].append(be * 1e6)
        ev_series["loop"][0].append(m_)
        ev_series["loop"][1].append(le * 1e6)
        res[f"evict/m={m_}"] = {"bulk_us": be * 1e6, "loop_us": le * 1e6}
        # bulk_insert of m sorted entries, appended (d = 0) and interleaved (d = m)
        for mode in ("append", "interleave"):
            bulk_t, loop_t = [], []
            w2 = _window(FiBA, Sum(), n // 10, 0, mu)
            for _rep in range(reps):
                for use_bulk in (True, False):
                    y = w2.youngest()
                    if mode == "append":
                        items = [(y + 1 + i, 1) for i in range(m_)]
                    else:  # between the m youngest entries: distance ~m
                        lo = y - m_
                        items = [(lo + i + 0.5, 1) for i in range(m_)]
                    t0 = time.perf_counter()
                    if use_bulk:
                        w2.bulk_insert(items)
                    else:
                        ins = w2.insert
                        for t, v in items:
                            ins(t, v)
                    (bulk_t if use_bulk else loop_t).append(time.perf_counter() - t0)
            b, lp = median(bulk_t), median(loop_t)
            rows.append([f"insert m ({mode})", m_, b * 1e6, lp * 1e6, lp / b])
            res[f"insert-{mode}/m={m_}"] = {"bulk_us": b * 1e6, "loop_us": lp * 1e6}
        del w, w2
    out["bulk"] = res
    plot_lines(
        f"ooo_bulk_evict{_SUFFIX[quick]}",
        f"FiBA μ={mu}: evicting the m oldest of {n:,}",
        "m (entries evicted)",
        "µs per call (median)",
        ev_series,
        logx=True,
        logy=True,
    )
    return [
        print_table(
            f"Bulk operations vs loops of single operations, FiBA μ={mu}, Sum, window {n:,} "
            "(µs per bulk, median)",
            ["operation", "m", "bulk µs", "loop µs", "loop / bulk"],
            rows,
        )
    ]


def _traced_bytes(build: Callable[[], Any]) -> tuple[int, Any]:
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        obj = build()
        gc.collect()
        after = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    return after - before, obj


def bench_memory(quick: bool, out: dict[str, Any]) -> list[str]:
    n = 10**5 if quick else 10**6
    rows = []
    res: dict[str, Any] = {}
    ts_bytes = 32  # a non-cached int timestamp costs 28 bytes, 32 with allocator rounding

    n_app = n // 5  # tracemalloc slows a million single inserts to minutes; the
    # occupancy left by appends, hence bytes per entry, does not depend on n

    def appended(cls: type, mu: int) -> Callable[[], Any]:
        def build() -> Any:
            w = cls(Sum(), min_arity=mu)
            ins = w.insert
            for t in range(10**6, 10**6 + n_app):  # timestamps allocated here, counted
                ins(t, _value(t))
            return w

        return build

    def restored(cls: type, mu: int) -> Callable[[], Any]:
        pairs = [(t, _value(t)) for t in range(10**6, 10**6 + n)]  # allocated untraced

        def build() -> Any:
            return cls.from_sorted_partials(Sum(), pairs, min_arity=mu)

        return build

    configs = [("FiBA", FiBA, mu) for mu in (2, 4, 8, 16, 32)] + [("BTree", BTree, 8)]
    for label, cls, mu in configs:
        for how, maker in (("appends", appended), ("from_sorted_partials", restored)):
            if how == "appends" and mu not in (8, 32):
                continue  # tracemalloc makes single inserts slow: the default μ and 32 only
            b, w = _traced_bytes(maker(cls, mu))
            size = n_app if how == "appends" else n
            assert len(w) == size
            per = b / size
            if how == "from_sorted_partials":
                per += ts_bytes  # its timestamps were allocated before tracing started
            rows.append([f"{label} μ={mu}", f"{how} ({size:,})", per])
            res[f"{label}{mu}/{how}"] = per
            del w
    out["memory"] = res
    return [
        print_table(
            "Memory per window entry (bytes, tracemalloc), Sum, including the int "
            "timestamp objects",
            ["structure", "built by", "bytes / entry"],
            rows,
        )
    ]


SECTIONS: dict[str, Callable[[bool, dict[str, Any]], list[str]]] = {
    "fifo": bench_fifo,
    "distance": bench_distance,
    "latency": bench_latency,
    "bulk": bench_bulk,
    "memory": bench_memory,
}


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks ooo", description=__doc__)
    ap.add_argument("--quick", action="store_true", help="smaller windows, fewer rounds")
    ap.add_argument("--only", default="", help="comma-separated sections: " + ",".join(SECTIONS))
    args = ap.parse_args(argv)
    chosen = [s for s in args.only.split(",") if s] or list(SECTIONS)
    for s in chosen:
        if s not in SECTIONS:
            ap.error(f"unknown section {s!r}")
    out: dict[str, Any] = {"quick": args.quick, "local_monoids": LOCAL_MONOIDS}
    tables: list[str] = []
    t_start = time.perf_counter()
    for s in chosen:
        t0 = time.perf_counter()
        tables += SECTIONS[s](args.quick, out)
        print(f"[{s}: {time.perf_counter() - t0:.0f} s]", flush=True)
    out["tables"] = tables
    name = "ooo_quick" if args.quick else "ooo"
    path = save_results(name, out)
    print(f"results: {path}  (total {time.perf_counter() - t_start:.0f} s)")
    return 0
