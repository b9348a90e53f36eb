"""In-order (FIFO) aggregators: the DABA paper's experiments at Python scale.

Run: ``.venv/bin/python -m benchmarks fifo`` (about 8 minutes) or ``... fifo --quick``
(about 2 minutes). Options: ``--only DABA,TwoStacksLite`` limits the classes,
``--max-n 100000`` caps the window size.

1. Throughput vs window size (the paper's Fig. 13, bottom): ramp up to n, then time
   rounds of ``evict(); insert(x); query()``; rounds per second, median of repeats. One
   window per class is grown through the sizes, so ramping costs only the largest n.
   Monoids: Sum, Max, GeometricMean, BloomFilter (2^14 bits) from windowagg.monoids.
2. Latency per operation (the paper's Table 2 / Fig. 13, top): every evict, insert and
   query timed on its own with ``time.perf_counter_ns``; percentiles p50 .. p99.99 and
   max at n = 10^3 and 10^6 (Sum), garbage collector left on (the real behaviour).
3. Combine counts per operation (``monoids.Counting``), the deterministic measure:
   worst case and mean for insert / evict / query at n = 10^3 and 10^6.

Baselines in the same run: ``fifo.Recalc`` at small n (it is O(n) per query),
``ooo.FiBA`` in FIFO mode when it exists (imported lazily, skipped with a note), and a
"null" window whose three methods do nothing: the CPython floor for one round of three
method calls, against which the ops/s targets are judged. The machine is shared with
other jobs: absolute numbers are noisy; compare ratios measured in the same run.
"""

from __future__ import annotations

import argparse
import gc
import importlib
import math
import time
from collections.abc import Callable
from typing import Any

from benchmarks.harness import (
    PLOTS,
    RESULTS,
    measure,
    median,
    percentiles,
    print_table,
    save_results,
)
from windowagg import fifo
from windowagg.monoids import Counting, Max, Sum

PS = (50, 99, 99.9, 99.99, 100)

CLASSES = [
    "DABA",
    "DABAChunked",
    "DABALite",
    "TwoStacks",
    "TwoStacksLite",
    "SubtractOnEvict",
    "FOA",
    "IOA",
    "FlatFIT",
    "FlatFAT",
]


# --------------------------------------------------------------------------- monoids
def _monoids() -> dict[str, tuple[Any, Callable[[int], Any], str]]:
    """name -> (monoid, value generator, provenance)."""
    out: dict[str, tuple[Any, Callable[[int], Any], str]] = {
        "Sum": (Sum(), lambda i: i & 0xFFFF, "windowagg.monoids.Sum"),
        "Max": (Max(), lambda i: (i * 7919) & 0xFFFF, "windowagg.monoids.Max"),
    }
    mon = importlib.import_module("windowagg.monoids")
    if hasattr(mon, "GeometricMean"):
        out["GeoMean"] = (
            mon.GeometricMean(),
            lambda i: 1.0 + (i % 97),
            "windowagg.monoids.GeometricMean",
        )
    else:
        out["GeoMean"] = (_LocalGeoMean(), lambda i: 1.0 + (i % 97), "local (benchmark file)")
    if hasattr(mon, "BloomFilter"):
        out["Bloom"] = (
            mon.BloomFilter(bits=1 << 14, hashes=4),
            lambda i: i,
            "windowagg.monoids.BloomFilter(2^14 bits, 4 hashes)",
        )
    else:
        out["Bloom"] = (_LocalBloom(), lambda i: i, "local (benchmark file)")
    return out


class _LocalGeoMean:
    """Fallback geometric mean: partial (sum_log, count), identity (0.0, 0)."""

    identity = (0.0, 0)

    def lift(self, x: float) -> tuple[float, int]:
        return (math.log(x), 1)

    def combine(self, a: tuple[float, int], b: tuple[float, int]) -> tuple[float, int]:
        return (a[0] + b[0], a[1] + b[1])

    def lower(self, a: tuple[float, int]) -> float | None:
        return math.exp(a[0] / a[1]) if a[1] else None


class _LocalBloom:
    """Fallback Bloom filter: a 2^14-bit Python int bitset, combine = |."""

    identity = 0

    def lift(self, x: int) -> int:
        h = hash(("bloom", x))
        bits = 0
        for k in range(4):
            bits |= 1 << ((h >> (14 * k)) & 0x3FFF)
        return bits

    def combine(self, a: int, b: int) -> int:
        return a | b

    def lower(self, a: int) -> int:
        return a


class _Null:
    """Three methods that do nothing: the interpreter's floor for one round."""

    __slots__ = ()

    def insert(self, v: Any) -> None:
        pass

    def evict(self) -> None:
        pass

    def query(self) -> Any:
        return None


def _fiba_cls() -> Any:
    try:
        mod = importlib.import_module("windowagg.ooo")
    except ImportError:
        return None
    return getattr(mod, "FiBA", None)


# --------------------------------------------------------------------------- plots
def plot_lines(
    name: str,
    title: str,
    xlabel: str,
    ylabel: str,
    series: dict[str, tuple[list[float], list[float]]],
    *,
    logx: bool = True,
    logy: bool = False,
    xticks: list[str] | None = None,
) -> None:
    """Like ``harness.plot_lines`` but with a distinct colour and marker per series (more
    than ten series here) and optional tick labels."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    PLOTS.mkdir(parents=True, exist_ok=True)
    cmap = plt.get_cmap("tab20")
    markers = "osD^v<>pP*Xhd"
    fig, ax = plt.subplots(figsize=(8, 5))
    for i, (label, (xs, ys)) in enumerate(series.items()):
        style = "--" if label in ("Null", "Recalc", "FiBA") else "-"
        ax.plot(
            list(xs),
            list(ys),
            style,
            marker=markers[i % len(markers)],
            color=cmap(i % 20),
            label=label,
        )
    if logx:
        ax.set_xscale("log")
    if logy:
        ax.set_yscale("log")
    if xticks:
        ax.set_xticks(range(1, len(xticks) + 1), xticks)
    ax.set_title(title)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    fig.savefig(PLOTS / f"{name}.png", dpi=110)
    plt.close(fig)


def replot(data: dict[str, Any]) -> None:
    """Write every PNG of this suite from a results dict (also ``--replot``); a quick run
    writes ``fifo_quick_*`` so that it never overwrites the full run's plots."""
    prefix = "fifo_quick" if data.get("quick") else "fifo"
    for mname, res in data["throughput"].items():
        table = res["rounds_per_s"]
        plot_lines(
            f"{prefix}_throughput_{mname.lower()}",
            f"FIFO throughput, {mname} (evict+insert+query rounds; shared machine)",
            "window size n",
            "rounds per second",
            {k: ([int(x) for x in v], list(v.values())) for k, v in table.items() if v},
            logx=True,
            logy=True,
        )
    for clock in ("wall", "cpu"):
        for n, by in data.get(f"latency_ns_{clock}", {}).items():
            plot_lines(
                f"{prefix}_latency_{clock}_n{n}",
                f"FIFO per-operation latency ({clock} clock), Sum, n={int(n):,}",
                "percentile",
                "ns",
                {
                    k: ([1, 2, 3, 4, 5], [v["p50"], v["p99"], v["p99.9"], v["p99.99"], v["max"]])
                    for k, v in by.items()
                },
                logx=False,
                logy=True,
                xticks=["p50", "p99", "p99.9", "p99.99", "max"],
            )


# --------------------------------------------------------------------------- drivers
def _rounds_fifo(w: Any, xs: list[Any]) -> Callable[[], None]:
    ev, ins, q = w.evict, w.insert, w.query  # cached bound methods, as a user would

    def run() -> None:
        for x in xs:
            ev()
            ins(x)
            q()

    return run


class _FibaFifo:
    """FiBA driven in FIFO mode: timestamps 0, 1, 2, ...; evict(t) of the oldest."""

    def __init__(self, cls: Any, monoid: Any) -> None:
        self.w = cls(monoid)
        self.t = 0
        self.f = 0

    def insert(self, v: Any) -> None:
        self.w.insert(self.t, v)
        self.t += 1

    def evict(self) -> None:
        self.w.evict(self.f)
        self.f += 1

    def query(self) -> Any:
        return self.w.query()

    def __len__(self) -> int:
        return self.t - self.f


def _rounds_fiba(fw: _FibaFifo, xs: list[Any]) -> Callable[[], None]:
    w = fw.w
    ev, ins, q = w.evict, w.insert, w.query

    def run() -> None:  # timestamps advanced inline: no adapter layer in the timed loop
        t, f = fw.t, fw.f
        for x in xs:
            ev(f)
            f += 1
            ins(t, x)
            t += 1
            q()
        fw.t, fw.f = t, f

    return run


def _make(name: str, monoid: Any) -> Any:
    if name == "FiBA":
        cls = _fiba_cls()
        return _FibaFifo(cls, monoid)
    if name == "Null":
        return _Null()
    return getattr(fifo, name)(monoid)


def _ramp(w: Any, target: int, gen: Callable[[int], Any]) -> None:
    ins = w.insert
    for i in range(len(w) if not isinstance(w, _Null) else 0, target):
        ins(gen(i))


# --------------------------------------------------------------------------- 1. throughput
def throughput(
    names: list[str],
    sizes: list[int],
    monoids: dict[str, Any],
    rounds: int,
    repeats: int,
    caps: dict[str, int],
    recalc_max: int,
    round_cap: int,
) -> tuple[dict[str, Any], list[str]]:
    results: dict[str, Any] = {}
    md: list[str] = []
    for mname, (monoid, gen, prov) in monoids.items():
        cap = caps.get(mname, sizes[-1])
        msizes = [n for n in sizes if n <= cap]
        xs = [gen(i) for i in range(rounds)]
        table: dict[str, dict[int, float]] = {}
        for name in [*names, "Recalc", "Null"]:
            if name == "SubtractOnEvict" and not getattr(monoid, "invertible", False):
                continue
            w = _make(name, monoid)
            row: dict[int, float] = {}
            for n in msizes:
                if name == "Recalc" and n > recalc_max:
                    break
                if name != "Null":
                    _ramp(w, n, gen)
                # at least n rounds (capped by round_cap) so that an amortized class pays
                # for its flips inside the timed rounds; Recalc gets fewer (O(n) each)
                r = max(rounds, min(n, round_cap))
                if name == "Recalc":
                    r = max(50, min(rounds, 20 * rounds // max(n, 1)))
                if name == "Null":  # tiny per round: many rounds, so the floor is stable
                    r = 200_000
                if len(xs) < r:
                    xs = [gen(i) for i in range(r)]
                run = _rounds_fiba(w, xs[:r]) if name == "FiBA" else _rounds_fifo(w, xs[:r])
                secs = measure(run, repeats=repeats if r <= 200_000 else 1)
                row[n] = r / median(secs)
            table[name] = row
            del w
            gc.collect()
        results[mname] = {"provenance": prov, "rounds_per_s": table}
        headers = ["class", *[f"n={n:,}" for n in msizes]]
        rows = [
            [name, *[(row[n] / 1e3) if n in row else "-" for n in msizes]]
            for name, row in table.items()
        ]
        md.append(
            print_table(
                f"Throughput, {mname} ({prov}): thousand rounds/s (evict+insert+query)",
                headers,
                rows,
            )
        )
    return results, md


# --------------------------------------------------------------------------- 2. latency
def _latency_trial(w: Any, rounds: int, out: list[int], ns: Callable[[], int]) -> None:
    """Time each evict, insert and query of *rounds* rounds into *out* (ns, clock *ns*)."""
    if isinstance(w, _FibaFifo):
        fw = w.w
        fev, fins, fq = fw.evict, fw.insert, fw.query
        t, f = w.t, w.f
        for r in range(rounds):
            t0 = ns()
            fev(f)
            t1 = ns()
            fins(t, r)
            t2 = ns()
            fq()
            t3 = ns()
            f += 1
            t += 1
            out += (t1 - t0, t2 - t1, t3 - t2)
        w.t, w.f = t, f
        return
    ev, ins, q = w.evict, w.insert, w.query
    for r in range(rounds):
        t0 = ns()
        ev()
        t1 = ns()
        ins(r & 0xFFFF)
        t2 = ns()
        q()
        t3 = ns()
        out += (t1 - t0, t2 - t1, t3 - t2)


def latency(
    names: list[str], sizes: list[int], rounds: int, trials: int, clock: str = "wall"
) -> tuple[dict[str, Any], list[str]]:
    """Per-operation wall time (ns). For each class, one window per size; *trials* short
    trials alternate between the sizes, each trial's percentiles are computed, and the
    median over trials is reported (max: over all samples). This damps bursts of noise
    from the other jobs on the machine. GC stays on: it is part of real latency.

    ``clock="wall"`` uses ``time.perf_counter_ns`` (what a caller waits, including time
    the OS gives to other processes); ``clock="cpu"`` uses ``time.thread_time_ns`` (CPU
    time of this thread: preemption by other jobs is not counted; about 300 ns of timer
    overhead per sample, see the Null row)."""
    ns = time.perf_counter_ns if clock == "wall" else time.thread_time_ns
    out: dict[str, Any] = {n: {} for n in sizes}
    per = max(1, rounds // trials)
    for name in [*names, "Null"]:
        ws = {}
        for n in sizes:
            w = _make(name, Sum())
            if name != "Null":
                _ramp(w, n, lambda i: i & 0xFFFF)
            ws[n] = w
        stats: dict[int, list[dict[str, float]]] = {n: [] for n in sizes}
        worst = dict.fromkeys(sizes, 0)
        for _ in range(trials):
            for n in sizes:
                samples: list[int] = []
                _latency_trial(ws[n], per, samples, ns)
                stats[n].append(percentiles(samples, PS))
                worst[n] = max(worst[n], max(samples))
        for n in sizes:
            pcs = {k: median([t[k] for t in stats[n]]) for k in ("p50", "p99", "p99.9", "p99.99")}
            out[n][name] = {**pcs, "max": float(worst[n])}
        del ws
        gc.collect()
    md = []
    for n in sizes:
        rows = [
            [name, *[v[k] for k in ("p50", "p99", "p99.9", "p99.99", "max")]]
            for name, v in out[n].items()
        ]
        md.append(
            print_table(
                f"Latency per operation (ns, {clock} clock), Sum, n={n:,}: median over "
                f"{trials} trials of {per:,} rounds x 3 ops (max: over all), GC on",
                ["class", "p50", "p99", "p99.9", "p99.99", "max"],
                rows,
            )
        )
    return out, md


# --------------------------------------------------------------------------- targets
def targets(names: list[str], n: int, rounds: int, trials: int) -> tuple[dict[str, Any], str]:
    """Sum at window n: *trials* interleaved runs of *rounds* rounds per class (at least n,
    so TwoStacks pays one full flip per run); median and best, and the null floor."""
    ws = {}
    for name in [*names, "Null"]:
        w = _make(name, Sum())
        if name != "Null":
            _ramp(w, n, lambda i: i & 0xFFFF)
        ws[name] = w
    xs = [i & 0xFFFF for i in range(rounds)]
    runs: dict[str, list[float]] = {k: [] for k in ws}
    for _ in range(trials):
        for name, w in ws.items():
            runs[name] += measure(_rounds_fifo(w, xs), repeats=1)
    del ws
    gc.collect()
    floor = rounds / median(runs["Null"])
    res: dict[str, Any] = {"n": n, "rounds": rounds, "trials": trials, "null": floor}
    rows = []
    for name in names:
        med = rounds / median(runs[name])
        best = rounds / min(runs[name])
        res[name] = {"median": med, "best": best}
        rows.append([name, med / 1e6, best / 1e6, 3.4, med / 3.4e6, floor / med])
    rows.append(
        ["Null (3 empty methods)", floor / 1e6, rounds / min(runs["Null"]) / 1e6, "-", "-", 1.0]
    )
    md = print_table(
        f"Targets, Sum, n={n:,}: million rounds/s (evict+insert+query), {trials} interleaved "
        f"runs of {rounds:,} rounds; issue's target 3.4",
        ["class", "median", "best", "target", "median / target", "x null floor"],
        rows,
    )
    return res, md


# --------------------------------------------------------------------------- 3. combines
def combine_counts(names: list[str], sizes: list[int]) -> tuple[dict[str, Any], list[str]]:
    """Ramp to n with a query after each insert, then 2n rounds (a full flip cycle)."""
    out: dict[str, Any] = {}
    md: list[str] = []
    for n in sizes:
        rows = []
        out[n] = {}
        rounds = 2 * n
        for name in names:
            if name == "FiBA":
                continue
            m = Counting(Sum())
            w = getattr(fifo, name)(m)
            worst = {"insert": 0, "evict": 0, "query": 0}
            total = {"insert": 0, "evict": 0, "query": 0}
            ins, ev, q = w.insert, w.evict, w.query
            for i in range(n):
                c0 = m.combines
                ins(i)
                worst["insert"] = max(worst["insert"], m.combines - c0)
                c0 = m.combines
                q()
                worst["query"] = max(worst["query"], m.combines - c0)
            for r in range(rounds):
                c0 = m.combines
                ev()
                c1 = m.combines
                ins(r)
                c2 = m.combines
                q()
                c3 = m.combines
                for op, d in (("evict", c1 - c0), ("insert", c2 - c1), ("query", c3 - c2)):
                    if d > worst[op]:
                        worst[op] = d
                    total[op] += d
            mean = {k: total[k] / rounds for k in total}
            out[n][name] = {"worst": worst, "mean_steady": mean}
            rows.append(
                [
                    name,
                    worst["insert"],
                    worst["evict"],
                    worst["query"],
                    mean["insert"],
                    mean["evict"],
                    mean["query"],
                ]
            )
            del w
            gc.collect()
        md.append(
            print_table(
                f"Combines per operation, Sum, n={n:,} (worst over the ramp and {rounds:,} "
                "evict/insert/query rounds; mean over the rounds)",
                [
                    "class",
                    "worst insert",
                    "worst evict",
                    "worst query",
                    "mean insert",
                    "mean evict",
                    "mean query",
                ],
                rows,
            )
        )
    return out, md


# --------------------------------------------------------------------------- main
def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks fifo")
    ap.add_argument("--quick", action="store_true", help="short run (about 2 minutes)")
    ap.add_argument("--only", default="", help="comma-separated class names")
    ap.add_argument("--max-n", type=int, default=0, help="cap on the window size")
    ap.add_argument("--replot", action="store_true", help="redraw PNGs from results/fifo.json")
    args = ap.parse_args(argv)
    if args.replot:
        import json

        replot(json.loads((RESULTS / "fifo.json").read_text()))
        return 0

    only = [x for x in args.only.split(",") if x]
    names = [c for c in CLASSES if not only or c in only]
    fiba_note = ""
    if _fiba_cls() is not None:
        if not only or "FiBA" in only:
            names.append("FiBA")
    else:
        fiba_note = "windowagg.ooo.FiBA not found: FiBA (FIFO mode) skipped"
        print(f"note: {fiba_note}", flush=True)

    if args.quick:
        sizes = [1, 100, 10_000, 1_000_000]
        caps = {"Sum": 1_000_000, "Max": 10_000, "GeoMean": 10_000, "Bloom": 1_000}
        t_rounds, t_repeats, round_cap = 4_000, 1, 20_000
        lat_sizes, lat_rounds, lat_trials = [1_000, 1_000_000], 30_000, 3
        lat_names = [n for n in names if n in ("DABA", "DABALite", "TwoStacks", "TwoStacksLite")]
        tgt_n, tgt_rounds, tgt_trials = 1_000_000, 300_000, 2
        cnt_sizes = [1_000]
        recalc_max = 100
        print(
            "note: --quick times fewer rounds than n at large n, so TwoStacks(Lite) may "
            "skip their O(n) flip in the sweep; the targets table always includes one",
            flush=True,
        )
    else:
        sizes = [1, 10, 100, 1_000, 10_000, 100_000, 1_000_000]
        caps = {"Sum": 1_000_000, "Max": 100_000, "GeoMean": 100_000, "Bloom": 10_000}
        t_rounds, t_repeats, round_cap = 20_000, 3, 200_000
        lat_sizes, lat_rounds, lat_trials = [1_000, 1_000_000], 150_000, 5
        lat_names = [n for n in names if n not in ("FlatFAT", "SubtractOnEvict")]
        tgt_n, tgt_rounds, tgt_trials = 1_000_000, 1_000_000, 3
        cnt_sizes = [1_000, 100_000]
        recalc_max = 1_000
    if args.max_n:
        sizes = [n for n in sizes if n <= args.max_n]
        lat_sizes = [n for n in lat_sizes if n <= args.max_n]
        cnt_sizes = [n for n in cnt_sizes if n <= args.max_n]
        tgt_n = min(tgt_n, args.max_n)
        tgt_rounds = max(tgt_n, min(tgt_rounds, 100_000))
    monoids = _monoids()

    t0 = time.perf_counter()
    thr, md1 = throughput(names, sizes, monoids, t_rounds, t_repeats, caps, recalc_max, round_cap)
    t1 = time.perf_counter()
    tgt_names = [n for n in ("DABA", "DABALite", "TwoStacksLite", "TwoStacks") if n in names]
    tgt, md0 = targets(tgt_names, tgt_n, tgt_rounds, tgt_trials) if tgt_names else ({}, "")
    t2 = time.perf_counter()
    lat, md2 = latency(lat_names, lat_sizes, lat_rounds, lat_trials, "wall")
    cpu_names = [
        n for n in ("DABA", "DABALite", "DABAChunked", "TwoStacks", "TwoStacksLite") if n in names
    ]
    lat_cpu, md2c = latency(cpu_names, lat_sizes, lat_rounds, lat_trials, "cpu")
    t3 = time.perf_counter()
    cnt, md3 = combine_counts([n for n in lat_names if n != "FiBA"], cnt_sizes)
    t4 = time.perf_counter()

    md4 = ""
    if len(lat_sizes) >= 2:
        lo, hi = lat_sizes[0], lat_sizes[-1]
        for clock, table, tnames in (("cpu", lat_cpu, cpu_names), ("wall", lat, lat_names)):
            tail_rows = [
                [
                    name,
                    table[lo][name]["p99.99"],
                    table[hi][name]["p99.99"],
                    table[hi][name]["p99.99"] / table[lo][name]["p99.99"],
                    table[lo][name]["max"],
                    table[hi][name]["max"],
                ]
                for name in [*tnames, "Null"]
            ]
            md4 += print_table(
                f"Tail ratio ({clock} clock): p99.99 at n={hi:,} over n={lo:,} "
                "(issue's target for DABA: <= 2)",
                [
                    "class",
                    f"p99.99 n={lo:,}",
                    f"p99.99 n={hi:,}",
                    "ratio",
                    f"max n={lo:,}",
                    f"max n={hi:,}",
                ],
                tail_rows,
            )
    results = {
        "quick": args.quick,
        "fiba_note": fiba_note,
        "throughput": thr,
        "targets": tgt,
        "latency_ns_wall": {str(k): v for k, v in lat.items()},
        "latency_ns_cpu": {str(k): v for k, v in lat_cpu.items()},
        "combines": {str(k): v for k, v in cnt.items()},
        "seconds": {
            "throughput": t1 - t0,
            "targets": t2 - t1,
            "latency": t3 - t2,
            "combines": t4 - t3,
        },
        "markdown": "\n".join([md0, md4, *md1, *md2, *md2c, *md3]),
    }
    save_results("fifo_quick" if args.quick else "fifo", results)
    replot(results)
    print(
        f"done: throughput {t1 - t0:.0f}s, targets {t2 - t1:.0f}s, latency {t3 - t2:.0f}s, "
        f"combines {t4 - t3:.0f}s"
    )
    return 0
