"""What the ``windowagg`` commands share (:mod:`windowagg.cli`, :mod:`windowagg._cli_demo`):
the console, a quiet SparkSession, the rejects table and its reason classes, and the times,
figures and numbers the plots are drawn from."""

from __future__ import annotations

import contextlib
import os
import re
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

__all__ = [
    "_figure",
    "_floats",
    "_jvm_stderr",
    "_reason_class",
    "_rejects_table",
    "_spark",
    "_utc_times",
    "console",
]

console = Console()


@contextlib.contextmanager
def _jvm_stderr(log: Path | None) -> Iterator[None]:
    """While Spark's JVM starts, point file descriptor 2 at *log* (None: leave it alone).

    The JVM (and the Python workers it spawns) inherit the descriptor for their whole
    life: Spark's start-up lines, WARN logs and worker chatter go to the file, not into
    the console and its progress bar. The CLI's own stderr is restored right after.
    """
    if log is None:
        yield
        return
    sys.stderr.flush()
    saved = os.dup(2)
    fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        os.dup2(fd, 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(fd)


def _spark(
    master: str,
    shuffle_partitions: int | None = None,
    *,
    log: Path | None = None,
    conf: dict[str, str] | None = None,
) -> Any:
    """A SparkSession; Spark logs at ERROR, into *log* unless ``--verbose`` (log=None)."""
    from windowagg.spark._session import session

    conf = {**({"spark.log.level": "ERROR"} if log is not None else {}), **(conf or {})}
    if log is not None:
        os.environ.setdefault("PYTHONWARNINGS", "ignore")  # the Python workers' warnings
        warnings.filterwarnings("ignore", module="pyspark")
    with console.status(f"starting Spark ({master})"), _jvm_stderr(log):
        s = session(master, "windowagg-cli", shuffle_partitions=shuffle_partitions, conf=conf)
        if log is not None:
            s.sparkContext.setLogLevel("ERROR")
    return s


def _rejects_table(counts: list[tuple[str, int]], title: str = "Rejects") -> Table:
    t = Table(title=title)
    t.add_column("reason")
    t.add_column("rows", justify="right")
    total = 0
    for reason, n in counts:
        t.add_row(reason, f"{n:,}")
        total += n
    t.add_row("[bold]total[/bold]", f"[bold]{total:,}[/bold]")
    return t


def _reason_class(reason: str) -> str:
    """Group reasons for the summary: 'not a number in 'x': 'abc'' -> "not a number in 'x'".

    A class never carries the rejected value (a value may be a field of any length); it is
    at most 100 characters.

    >>> _reason_class("bad_value: non-finite value in 'v': inf")
    "bad_value: non-finite value in 'v'"
    >>> _reason_class("bad_value: ValueError: unlucky 13"), _reason_class("late: 2013-01-01T00:00:00Z < x")
    ('bad_value: ValueError', 'late')
    >>> _reason_class("mixed-type timestamp: number 5 in a column of text")
    'mixed-type timestamp: number'
    >>> _reason_class("unparsable timestamp '" + "x" * 200_000 + "'")
    'unparsable timestamp'
    """
    if reason.startswith("bad_value: "):
        rest = reason[len("bad_value: ") :]
        if rest.startswith("non-finite"):
            cls = "bad_value: " + rest.rsplit(": ", 1)[0]
        else:
            cls = "bad_value: " + rest.split(": ")[0]
    elif reason.startswith("mixed-type timestamp"):
        m = re.match(r"mixed-type timestamp: \S+", reason)
        cls = m.group(0) if m else "mixed-type timestamp"
    elif reason.startswith("unparsable timestamp"):
        cls = "unparsable timestamp"
    else:
        cls = reason.split(": ")[0]
    return cls if len(cls) <= 100 else cls[:99] + "\u2026"


def _utc_times(times: Any) -> Any:
    """A pandas datetime Series or DatetimeIndex as a numpy ``datetime64`` array in UTC
    (naive): matplotlib converts such an array to date numbers in one vectorised step,
    where tz-aware values go through one ``Timestamp`` object each. O(n)."""
    import pandas as pd

    idx = pd.DatetimeIndex(times)
    if idx.tz is not None:
        idx = idx.tz_convert("UTC").tz_localize(None)
    return idx.to_numpy()


def _figure(size: tuple[float, float]) -> Any:
    """A matplotlib Figure drawn by Agg, without pyplot (no global figure manager to import
    or to close)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=size)
    FigureCanvasAgg(fig)
    return fig


def _floats(s: Any) -> Any:
    """A numeric pandas column as float64 (nulls NaN, where matplotlib breaks the line)."""
    import numpy as np

    return s.to_numpy(dtype=np.float64, na_value=np.nan)
