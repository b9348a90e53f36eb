"""The shared benchmark harness: repeat, take medians, print a table, save JSON and plots.

Every suite (``benchmarks/bench_*.py``) exposes ``main(argv) -> int`` and uses these helpers,
so all results look alike: medians over ``repeats`` runs (these machines are shared and
noisy), ratios against the baseline measured in the same run, a table on stdout, a JSON file
in ``benchmarks/results/`` and PNG plots in ``benchmarks/plots/``.
"""

from __future__ import annotations

import gc
import json
import platform
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent
RESULTS = ROOT / "results"
PLOTS = ROOT / "plots"


def time_once(fn: Callable[[], Any]) -> float:
    """Wall-clock seconds of one call of *fn*, with the garbage collector paused."""
    gc.collect()
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        t0 = time.perf_counter()
        fn()
        return time.perf_counter() - t0
    finally:
        if was_enabled:
            gc.enable()


def measure(
    fn: Callable[[], Any], repeats: int = 5, setup: Callable[[], Any] | None = None
) -> list[float]:
    """Seconds of *repeats* calls of *fn* (``setup`` runs untimed before each)."""
    out = []
    for _ in range(repeats):
        if setup is not None:
            setup()
        out.append(time_once(fn))
    return out


def median(xs: Sequence[float]) -> float:
    return float(statistics.median(xs))


def percentiles(samples: Sequence[float], ps: Sequence[float]) -> dict[str, float]:
    """Nearest-rank percentiles of *samples* (e.g. ps = (50, 99, 99.9, 99.99, 100))."""
    s = sorted(samples)
    n = len(s)
    out: dict[str, float] = {}
    for p in ps:
        k = min(n - 1, max(0, round(p / 100.0 * n + 0.5) - 1))
        out["max" if p == 100 else f"p{p:g}"] = s[k]
    return out


def print_table(title: str, headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """Print and return a Markdown table (pasteable into docs/performance.md)."""

    def fmt(x: Any) -> str:
        if isinstance(x, float):
            if x == 0:
                return "0"
            if abs(x) >= 1000:
                return f"{x:,.0f}"
            if abs(x) >= 1:
                return f"{x:.2f}"
            return f"{x:.3g}"
        return str(x)

    lines = [f"### {title}", "", "| " + " | ".join(headers) + " |"]
    lines.append("|" + "|".join("---" for _ in headers) + "|")
    for r in rows:
        lines.append("| " + " | ".join(fmt(x) for x in r) + " |")
    text = "\n".join(lines) + "\n"
    print(text, flush=True)
    return text


def machine() -> dict[str, Any]:
    return {
        "python": sys.version.split()[0],
        "implementation": platform.python_implementation(),
        "machine": platform.machine(),
        "processor": platform.processor(),
        "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }


def save_results(name: str, data: dict[str, Any]) -> Path:
    """Write ``benchmarks/results/NAME.json`` with the machine description added."""
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"{name}.json"
    payload = {"machine": machine(), **data}
    path.write_text(json.dumps(payload, indent=2, default=str) + "\n")
    return path


def plot_lines(
    name: str,
    title: str,
    xlabel: str,
    ylabel: str,
    series: dict[str, tuple[Sequence[float], Sequence[float]]],
    *,
    logx: bool = True,
    logy: bool = False,
) -> Path:
    """Write ``benchmarks/plots/NAME.png``: one line per series ``label -> (xs, ys)``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    PLOTS.mkdir(parents=True, exist_ok=True)
    fig, ax = plt.subplots(figsize=(7, 4.5))
    # tab20 and a marker cycle keep up to 20 series (the FIFO family has 12) distinguishable
    colors = plt.get_cmap("tab20").colors
    markers = "os^vD<>pP*Xh"
    for i, (label, (xs, ys)) in enumerate(series.items()):
        ax.plot(
            list(xs),
            list(ys),
            marker=markers[i % len(markers)],
            color=colors[i % len(colors)],
            label=label,
        )
    if logx:
        ax.set_xscale("log")
    if logy:
        ax.set_yscale("log")
    ax.set_title(title)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    path = PLOTS / f"{name}.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
