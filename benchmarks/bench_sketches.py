"""Time-decayed sketches: the 2007 paper's section 6 experiments at Python scale.

Run: ``.venv/bin/python -m benchmarks sketches`` (about 6-8 minutes on the shared machine)
or ``... sketches --quick`` (about 1-2 minutes). Options: ``--items N`` overrides the
stream length of the throughput runs, ``--repeats R``.

Data (synthetic stand-ins for the paper's two traces, which are not redistributable):

* ``flow``: NetFlow-like records sorted by *end* time and keyed by *start* time
  (start = end - duration, durations heavy-tailed), so timestamps are moderately out of
  order; values = octet counts (log-normal, 32-bit universe).
* ``loop``: the World Cup set-up: four "days" concatenated using only the time of day,
  so timestamps loop four times (heavy disorder); values = response bytes.

Timestamps are integers below 2**20 (the paper's W = 2**20 sliding-window maximum).

1. Throughput, per item and batched, for every summary, against the paper's C figures
   (exponential ~1M/s, value division ~250k/s, sliding window ~100k/s) and against
   Apache DataSketches KLL (C++ with Python bindings, undecayed) in the same run. Two rates:
   wall clock (median of repeats) and process CPU time (best of repeats) -- other
   helpers share the 2 cores, so wall clock undercounts by up to ~3x right now.
2. Space (stored nodes) vs eps for every summary (the paper's Fig. 6a), PNG plot.
3. Space vs the decay parameter: value division vs alpha, exponential vs lambda (Fig. 5).
4. Accuracy and space side by side with KLL on the same (undecayed) data: largest
   normalized rank error over 99 quantiles vs serialized bytes, PNG plot.
5. Observed error of the decayed summaries against exact answers, as a fraction of eps.
6. QDigestMonoid.combine cost (what FiBA pays per combine) vs partial size.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from benchmarks.harness import median, plot_lines, print_table, save_results
from windowagg.sketches import (
    ExpDecayQDigest,
    ExpDecaySpaceSaving,
    PolynomialDecay,
    QDigest,
    QDigestMonoid,
    SlidingWindowCount,
    SlidingWindowQDigest,
    ValueDivision,
    ValueMapper,
)

U = 2**32
LT = 20
W = 2**20
LAM = 1e-5  # exponential decay rate per time unit: exp(-LAM * 2**20) ~ 3e-5 over the range
SUFFIX = [""]  # "_quick" in --quick runs, so a quick run never overwrites the full plots
PAPER = {"exponential": 1_000_000, "value division": 250_000, "sliding window": 100_000}


# ------------------------------------------------------------------------------ data
def make_data(kind: str, n: int, seed: int = 7) -> tuple[np.ndarray, np.ndarray]:
    """(values in [0, 2**32), integer timestamps in [0, 2**20)) in arrival order."""
    rng = np.random.default_rng(seed)
    vals = np.minimum(rng.lognormal(7.0, 2.0, n), U - 1).astype(np.int64)
    if kind == "flow":
        end = np.sort(rng.uniform(0, W - 1, n))
        dur = np.minimum(rng.pareto(1.5, n) * 20.0, 50_000.0)
        ts = np.clip(end - dur, 0, W - 1).astype(np.int64)
    elif kind == "loop":
        days = 4
        per_day = W  # one "day" spans the whole time range
        pos = np.sort(rng.uniform(0, days * per_day, n))
        ts = (pos % per_day).astype(np.int64)
        ts = np.clip(ts + rng.integers(-100, 101, n), 0, W - 1)
    else:
        raise ValueError(kind)
    return vals, ts


# ------------------------------------------------------------------------- timing
def rates(run: Callable[[], Any], n: int, repeats: int) -> tuple[float, float]:
    """(median wall items/s, best CPU items/s) of *repeats* runs of run() over n items."""
    walls, cpus = [], []
    for _ in range(repeats):
        w0, c0 = time.perf_counter(), time.process_time()
        run()
        walls.append(time.perf_counter() - w0)
        cpus.append(time.process_time() - c0)
    return n / median(walls), n / max(min(cpus), 1e-9)


def feeders(vals: np.ndarray, ts: np.ndarray, eps: float) -> dict[str, Callable[[], Any]]:
    xl, tl = vals.tolist(), ts.tolist()
    g = PolynomialDecay(2.0)

    def qd() -> Any:
        d = QDigest(U, eps)
        u = d.update  # bound method cached: the loop is the measured hot path
        for x in xl:
            u(x)
        return d

    def qd_batch() -> Any:
        d = QDigest(U, eps)
        for i in range(0, len(vals), 50_000):
            d.update_many(vals[i : i + 50_000])
        return d

    def exp() -> Any:
        d = ExpDecayQDigest(U, eps, LAM)
        u = d.update
        for x, t in zip(xl, tl, strict=True):
            u(x, t)
        return d

    def exp_batch() -> Any:
        d = ExpDecayQDigest(U, eps, LAM)
        for i in range(0, len(vals), 50_000):
            d.update_many(vals[i : i + 50_000], ts[i : i + 50_000])
        return d

    def ss() -> Any:
        d = ExpDecaySpaceSaving(eps, LAM)
        u = d.update
        for x, t in zip(xl, tl, strict=True):
            u(x, t)
        return d

    def vd() -> Any:
        d = ValueDivision(U, g, eps / 2, eps / 2)
        u = d.update
        for x, t in zip(xl, tl, strict=True):
            u(x, t)
        return d

    def swc() -> Any:
        d = SlidingWindowCount(eps, LT, max_window=W)
        u = d.update
        for t in tl:
            u(t)
        return d

    def swq() -> Any:
        d = SlidingWindowQDigest(U, eps, LT, max_window=W)
        u = d.update
        for x, t in zip(xl, tl, strict=True):
            u(x, t)
        return d

    def swc_batch() -> Any:
        d = SlidingWindowCount(eps, LT, max_window=W)
        for i in range(0, len(ts), 50_000):
            d.update_many(ts[i : i + 50_000])
        return d

    def swq_batch() -> Any:
        d = SlidingWindowQDigest(U, eps, LT, max_window=W)
        for i in range(0, len(ts), 50_000):
            d.update_many(vals[i : i + 50_000], ts[i : i + 50_000])
        return d

    return {
        "QDigest (no decay)": qd,
        "QDigest.update_many": qd_batch,
        "ExpDecayQDigest": exp,
        "ExpDecayQDigest.update_many": exp_batch,
        "ExpDecaySpaceSaving": ss,
        "ValueDivision (poly a=2)": vd,
        "SlidingWindowCount": swc,
        "SlidingWindowQDigest": swq,
        "SlidingWindowCount.update_many": swc_batch,
        "SlidingWindowQDigest.update_many": swq_batch,
    }


def kll_feeders(vals: np.ndarray, k: int = 200) -> dict[str, Callable[[], Any]]:
    import datasketches as ds

    fl = vals.astype(np.float64)
    fll = fl.tolist()

    def kll() -> Any:
        s = ds.kll_doubles_sketch(k)
        u = s.update
        for v in fll:
            u(v)
        return s

    def kll_batch() -> Any:
        s = ds.kll_doubles_sketch(k)
        s.update(fl)
        return s

    return {"KLL k=200 (C++)": kll, "KLL k=200 batch (C++)": kll_batch}


TARGET_OF = {
    "ExpDecayQDigest": "exponential",
    "ExpDecayQDigest.update_many": "exponential",
    "ExpDecaySpaceSaving": "exponential",
    "ValueDivision (poly a=2)": "value division",
    "SlidingWindowCount": "sliding window",
    "SlidingWindowQDigest": "sliding window",
    "SlidingWindowCount.update_many": "sliding window",
    "SlidingWindowQDigest.update_many": "sliding window",
}


def throughput(n: int, repeats: int, eps: float) -> tuple[str, dict[str, Any]]:
    md = ""
    out: dict[str, Any] = {}
    for kind in ("flow", "loop"):
        vals, ts = make_data(kind, n)
        rows = []
        fs = feeders(vals, ts, eps) | kll_feeders(vals)
        for name, fn in fs.items():
            reps = repeats if "Sliding" not in name and "Value" not in name else max(1, repeats - 1)
            wall, cpu = rates(fn, n, reps)
            tgt = TARGET_OF.get(name)
            ratio = f"{cpu / PAPER[tgt]:.2f}x of {PAPER[tgt] // 1000}k" if tgt else ""
            rows.append([name, wall, cpu, ratio])
            out[f"{kind}/{name}"] = {"wall_per_s": wall, "cpu_per_s": cpu}
        md += "\n" if md else ""
        md += print_table(
            f"Throughput, {kind} data, n = {n:,}, eps = {eps} (items/s)",
            ["summary", "wall-clock median", "CPU-time best", "CPU vs paper C"],
            rows,
        )
    return md, out


# --------------------------------------------------------------------------- space
def space_vs_eps(n: int, quick: bool) -> tuple[str, dict[str, Any]]:
    vals, ts = make_data("flow", n)
    eps_grid = [0.2, 0.1, 0.05, 0.02, 0.01] if not quick else [0.2, 0.1, 0.05]
    g = PolynomialDecay(2.0)
    series: dict[str, tuple[list[float], list[float]]] = {}
    rows = []
    for eps in eps_grid:
        q = QDigest(U, eps)
        q.update_many(vals)
        q.compress()
        e = ExpDecayQDigest(U, eps, LAM)
        e.update_many(vals, ts)
        e.compress()
        v = ValueDivision(U, g, eps / 2, eps / 2)
        for x, t in zip(vals.tolist(), ts.tolist(), strict=True):
            v.update(x, t)
        v.compress()
        c = SlidingWindowCount(eps, LT, max_window=W)
        c.update_many(ts)
        sizes = {
            "QDigest (no decay)": q.size,
            "exponential": e.size,
            "value division a=2": v.size,
            "SW count": c.size,
        }
        if eps >= 0.05:
            s = SlidingWindowQDigest(U, eps, LT, max_window=W)
            s.update_many(vals, ts)
            sizes["SW quantiles"] = s.size
        for k, val in sizes.items():
            xs, ys = series.setdefault(k, ([], []))
            xs.append(eps)
            ys.append(val)
        rows.append([eps, *[sizes.get(k, "-") for k in series], n])
    md = print_table(
        f"Space (stored nodes) vs eps, flow data, n = {n:,}",
        ["eps", *series.keys(), "input items"],
        rows,
    )
    plot_lines(
        "sketches_space_vs_eps" + SUFFIX[0],
        f"Space vs eps (flow data, n={n:,})",
        "eps",
        "stored nodes",
        series,
        logx=True,
        logy=True,
    )
    return md, {"space_vs_eps": {k: list(zip(*v, strict=True)) for k, v in series.items()}}


def space_vs_decay(n: int) -> tuple[str, dict[str, Any]]:
    vals, ts = make_data("flow", n)
    xl, tl = vals.tolist(), ts.tolist()
    rows = []
    alphas = [0.5, 1.0, 2.0, 3.0, 4.0]
    vd_sizes, vd_summ = [], []
    for a in alphas:
        v = ValueDivision(U, PolynomialDecay(a), 0.05, 0.05)
        for x, t in zip(xl, tl, strict=True):
            v.update(x, t)
        v.compress()
        vd_sizes.append(v.size)
        vd_summ.append(v.num_summaries)
        rows.append([f"value division alpha={a}", v.num_summaries, v.size])
    lams = [1e-7, 1e-6, 1e-5, 1e-4, 1e-3]
    ex_sizes = []
    for lam in lams:
        e = ExpDecayQDigest(U, 0.1, lam)
        e.update_many(vals, ts)
        e.compress()
        ex_sizes.append(e.size)
        rows.append([f"exponential lambda={lam}", 1, e.size])
    q = QDigest(U, 0.1)
    q.update_many(vals)
    q.compress()
    rows.append(["QDigest (no decay)", 1, q.size])
    md = print_table(
        f"Space vs decay parameter, eps = 0.1, flow data, n = {n:,}",
        ["summary", "summaries", "stored nodes"],
        rows,
    )
    plot_lines(
        "sketches_space_vs_alpha" + SUFFIX[0],
        "Value division: space vs polynomial exponent (eps=0.1)",
        "alpha",
        "stored nodes",
        {"value division": (alphas, vd_sizes)},
        logx=False,
    )
    plot_lines(
        "sketches_space_vs_lambda" + SUFFIX[0],
        "Exponential decay: space vs lambda (eps=0.1)",
        "lambda",
        "stored nodes",
        {"exponential": (lams, ex_sizes), "no decay": (lams, [q.size] * len(lams))},
        logx=True,
    )
    return md, {"vd_alpha": list(zip(alphas, vd_sizes, strict=True)), "exp_lambda": ex_sizes}


# ------------------------------------------------------------------------ vs KLL
def max_rank_error(sorted_vals: np.ndarray, qs: list[float]) -> float:
    n = len(sorted_vals)
    phis = np.linspace(0.01, 0.99, 99)
    err = 0.0
    for phi, q in zip(phis, qs, strict=True):
        lt = np.searchsorted(sorted_vals, q, "left") / n
        le = np.searchsorted(sorted_vals, q, "right") / n
        # distance from phi to the interval of ranks q occupies
        err = max(err, max(0.0, lt - phi, phi - le))
    return float(err)


def versus_kll(n: int, repeats: int) -> tuple[str, dict[str, Any]]:
    import datasketches as ds

    vals, _ = make_data("flow", n)
    s = np.sort(vals)
    phis = list(np.linspace(0.01, 0.99, 99))
    rows = []
    series: dict[str, tuple[list[float], list[float]]] = {"QDigest": ([], []), "KLL": ([], [])}
    for eps in (0.1, 0.05, 0.02, 0.01, 0.005):
        d = QDigest(U, eps)
        w0 = time.perf_counter()
        d.update_many(vals)
        d.compress()
        t_b = time.perf_counter() - w0
        err = max_rank_error(s, [d.quantile(float(p)) for p in phis])
        b = len(d.to_bytes())
        rows.append([f"QDigest eps={eps}", d.size, b, err, eps, n / t_b])
        series["QDigest"][0].append(b)
        series["QDigest"][1].append(err)
    for k in (50, 100, 200, 400, 800):
        sk = ds.kll_doubles_sketch(k)
        w0 = time.perf_counter()
        sk.update(vals.astype(np.float64))
        t_b = time.perf_counter() - w0
        err = max_rank_error(s, [sk.get_quantile(float(p)) for p in phis])
        b = len(sk.serialize())
        bound = sk.normalized_rank_error(False)
        rows.append([f"KLL k={k}", sk.num_retained, b, err, f"{bound:.3g} (99% prob.)", n / t_b])
        series["KLL"][0].append(b)
        series["KLL"][1].append(err)
    md = print_table(
        f"Accuracy and space vs Apache DataSketches KLL, flow values, n = {n:,} (undecayed)",
        ["summary", "nodes / retained", "bytes", "max rank error", "stated bound", "batch items/s"],
        rows,
    )
    plot_lines(
        "sketches_vs_kll" + SUFFIX[0],
        f"Max normalized rank error vs size (n={n:,})",
        "serialized bytes",
        "max rank error (99 quantiles)",
        series,
        logx=True,
        logy=True,
    )
    return md, {"vs_kll": rows}


# ----------------------------------------------------------------- decayed accuracy
def decayed_accuracy(n: int) -> tuple[str, dict[str, Any]]:
    vals, ts = make_data("loop", n, seed=3)
    eps = 0.05
    t = int(ts.max())
    rows = []
    phis = [0.05, 0.25, 0.5, 0.75, 0.95]

    def worst(weights: np.ndarray, answers: list[int]) -> float:
        order = np.argsort(vals, kind="stable")
        sv, sw = vals[order], weights[order]
        cum = np.concatenate([[0.0], np.cumsum(sw)])
        D = cum[-1]
        err = 0.0
        for phi, q in zip(phis, answers, strict=True):
            lt = cum[np.searchsorted(sv, q, "left")] / D
            le = cum[np.searchsorted(sv, q, "right")] / D
            err = max(err, max(0.0, lt - phi, phi - le))
        return err

    lam = 1e-5
    e = ExpDecayQDigest(U, eps, lam)
    e.update_many(vals, ts)
    w_exp = np.exp(-lam * (t - ts))
    rows.append(["ExpDecayQDigest lam=1e-5", eps, worst(w_exp, [e.quantile(p) for p in phis])])
    g = PolynomialDecay(1.0)
    v = ValueDivision(U, g, eps / 2, eps / 2)
    for x, tt in zip(vals.tolist(), ts.tolist(), strict=True):
        v.update(x, tt)
    w_poly = (1.0 + (t - ts)) ** -1.0
    rows.append(["ValueDivision alpha=1", eps, worst(w_poly, [v.quantile(p) for p in phis])])
    sw = SlidingWindowQDigest(U, eps, LT)
    sw.update_many(vals, ts)
    for win in (30_000, 100_000, 300_000, 1_000_000):
        w_win = ((t - ts) < win).astype(float)
        ans = [sw.quantile(p, win) for p in phis]
        rows.append([f"SlidingWindowQDigest w={win}", eps, worst(w_win, ans)])
    ans = [sw.decayed_quantile(p, g) for p in phis]
    rows.append(["SlidingWindowQDigest any decay (alpha=1)", eps, worst(w_poly, ans)])
    for r in rows:
        r.append(r[2] / r[1])
    md = print_table(
        f"Observed quantile error vs exact decayed answers, loop data, n = {n:,}",
        ["summary", "eps", "max rank error / D", "fraction of eps"],
        rows,
    )
    return md, {"decayed_accuracy": rows}


# -------------------------------------------------------------------- monoid cost
def combine_cost() -> tuple[str, dict[str, Any]]:
    rng = np.random.default_rng(5)
    mapper = ValueMapper(-100.0, 1500.0, 1.0, clip=True)
    rows = []
    for eps in (0.05, 0.01):
        m = QDigestMonoid(eps=eps, mapper=mapper)
        for size in (10, 100, 1000, 100_000):
            a = QDigest(mapper.universe, eps)
            b = QDigest(mapper.universe, eps)
            a.update_many(mapper.to_keys(rng.lognormal(2.0, 1.2, size) - 5))
            b.update_many(mapper.to_keys(rng.lognormal(2.0, 1.2, size) - 5))
            reps = 2000 if size <= 1000 else 200
            w0 = time.perf_counter()
            for _ in range(reps):
                m.combine(a, b)
            us = (time.perf_counter() - w0) / reps * 1e6
            rows.append([eps, size, a.size, b.size, us])
    md = print_table(
        "QDigestMonoid.combine (delays in minutes, ValueMapper(-100, 1500, 1.0, clip=True))",
        ["eps", "items per operand", "nodes a", "nodes b", "us per combine"],
        rows,
    )
    return md, {"combine": rows}


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks sketches")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--items", type=int, default=None)
    ap.add_argument("--repeats", type=int, default=None)
    args = ap.parse_args(argv)
    SUFFIX[0] = "_quick" if args.quick else ""
    n = args.items or (30_000 if args.quick else 200_000)
    repeats = args.repeats or (2 if args.quick else 3)
    t0 = time.perf_counter()
    results: dict[str, Any] = {"items": n, "repeats": repeats, "quick": args.quick}
    md = ""
    for part in (
        lambda: throughput(n, repeats, 0.1),
        lambda: space_vs_eps(n // 2 if not args.quick else n, args.quick),
        lambda: space_vs_decay(n // 2 if not args.quick else n),
        lambda: versus_kll(4 * n if not args.quick else n, repeats),
        lambda: decayed_accuracy(n // 2 if not args.quick else n),
        combine_cost,
    ):
        text, data = part()
        md += text + "\n"
        results.update(data)
    results["seconds"] = time.perf_counter() - t0
    results["markdown"] = md
    save_results("sketches_quick" if args.quick else "sketches", results)
    print(f"total {results['seconds']:.0f} s", flush=True)
    return 0
