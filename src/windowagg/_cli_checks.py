"""The ``windowagg run`` arguments and input, checked before Spark starts (one-line errors).

Spark's start-up alone takes 10-40 s: a misspelled column, a missing or empty file, or a
bad duration is reported by click in one line before it (``BadParameter`` naming the
option). Needs the ``cli`` extra (click); pyarrow only to read a Parquet footer.
"""

from __future__ import annotations

import contextlib
import csv
import difflib
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from windowagg.aggs import column_aggregations_help, parse, to_micros

if TYPE_CHECKING:
    from windowagg.call import WindowCall

__all__ = [
    "FORMATS",
    "check_columns",
    "csv_header",
    "input_columns",
    "input_kind",
    "one_line",
    "read_call",
    "threads_option",
    "window_args",
    "window_options",
]

_F = TypeVar("_F", bound=Callable[..., Any])


def window_options(f: _F) -> _F:
    """The options that say which windows to compute, shared by ``run`` and ``follow``:
    ``--key``, ``--time``, ``--agg``, ``--size``, ``--slide``, ``--rows``, ``--every``,
    ``--gap``, ``--time-unit`` (the keywords ``keys``, ``time_col``, ``aggs``, ``size``,
    ``slide``, ``rows``, ``every``, ``gap``, ``time_unit``: :func:`read_call`'s). O(1)."""
    options = [
        click.option(
            "--key", "keys", multiple=True, required=True, help="Key column (repeatable)."
        ),
        click.option("--time", "time_col", required=True, help="Event-time column."),
        click.option(
            "--agg",
            "aggs",
            multiple=True,
            required=True,
            help="Aggregation of a column, repeatable: 'max(v)', 'p99(v)', 'count', "
            f"'mean(v) as m'. One of: {column_aggregations_help()}. Decayed: "
            "'ewm_mean(v, half_life=1h)', 'decayed_sum(v, half_life=1h)', "
            "'decayed_count(half_life=1h)', 'decayed_sum(v, decay=poly(2))', "
            "'decayed_p99(v, half_life=1h)', 'top_k(v, 5, half_life=1d)' (JSON text) (alone, "
            "with no window: each key's whole history).",
        ),
        click.option(
            "--size",
            multiple=True,
            help="Window length, e.g. '10 minutes'; repeat it for several sizes in one pass "
            "(--size 5min --size 1h: columns max_v_5m, max_v_1h).",
        ),
        click.option(
            "--slide", default=None, help="Window hop, e.g. '10 seconds' (none: per event)."
        ),
        click.option(
            "--rows",
            type=click.IntRange(min=1),
            default=None,
            help="Count window: the last N events.",
        ),
        click.option(
            "--every",
            type=click.IntRange(min=1),
            default=1,
            show_default=True,
            help="With --rows: emit every N.",
        ),
        click.option(
            "--gap",
            default=None,
            help="Session windows: a new session after a gap over e.g. '5 min'.",
        ),
        click.option(
            "--time-unit",
            type=click.Choice(["s", "ms", "us"]),
            default="s",
            show_default=True,
            help="Unit of numeric times.",
        ),
    ]
    for option in reversed(options):  # click lists them in this order
        f = option(f)
    return f


def threads_option(f: _F) -> _F:
    """``--threads N``: the threads the in-process engine computes the keys on (the
    keyword ``threads``; default: the cores this process may use, ``1``: one thread; the
    output is the same for every N). O(1)."""
    return click.option(
        "--threads",
        type=click.IntRange(min=1),
        default=None,
        help="In-process engine: threads to compute the keys on (default: the cores this "
        "process may use; 1: one thread). The output is the same for every value.",
    )(f)


FORMATS = {"csv": "csv", "tsv": "csv", "txt": "csv", "json": "json", "jsonl": "json"}
FORMATS |= {"ndjson": "json", "parquet": "parquet", "pq": "parquet"}


def one_line(e: BaseException) -> str:
    """An exception as one line for the console (``--verbose`` shows the traceback).

    A class named just ``Error`` is named with its module, so that click's ``Error:``
    prefix is not doubled:

    >>> import csv
    >>> one_line(csv.Error("bad quote")), one_line(ValueError("first line" + chr(10) + "more"))
    ('csv.Error: bad quote', 'ValueError: first line')
    """
    text = str(e).strip().splitlines()
    first = text[0] if text else ""
    name = type(e).__name__
    if name == "Error":
        name = f"{type(e).__module__.lstrip('_').split('.')[0]}.Error"
    return f"{name}: {first}" if first else name


def csv_header(path: Path, sep: str) -> tuple[list[str], int] | None:
    """The first non-empty record of a CSV file (names stripped) and the number of
    physical lines up to and including it; None for a file without one. O(header).

    No field-size limit (the csv module's default is 131,072 characters). A UTF-8 BOM is
    not part of the first name.
    """
    limit = csv.field_size_limit()
    csv.field_size_limit(min(sys.maxsize, 2**31 - 1))
    try:
        with open(path, newline="", encoding="utf-8-sig", errors="replace") as fh:
            reader = csv.reader(fh, delimiter=sep)
            for record in reader:
                if record:
                    return [h.strip() for h in record], reader.line_num
        return None
    finally:
        csv.field_size_limit(limit)


def input_kind(path: str, fmt: str | None) -> str:
    """The input format from ``--format`` or INPUT's suffix (no suffix: Parquet). O(1).

    >>> input_kind("data.CSV", None), input_kind("events/", None), input_kind("x", "jsonl")
    ('csv', 'parquet', 'jsonl')
    """
    kind = (fmt or Path(path.rstrip("/")).suffix.lstrip(".") or "parquet").lower()
    if kind not in FORMATS:
        raise click.BadParameter(
            f"unknown input format {kind!r}; use csv, json or parquet (or --format)",
            param_hint="INPUT" if fmt is None else "--format",
        )
    return kind


def input_columns(path: str, kind: str) -> list[str] | None:
    """The input's column names, read without Spark (None: cannot tell, let Spark read).

    Raises BadParameter for a missing or empty local input. O(header) for CSV, O(footer)
    for Parquet, the first 1,000 lines for JSON.
    """
    if "://" in path or any(c in path for c in "*?[{"):
        return None  # a remote or glob path: Spark resolves it
    p = Path(path)
    if not p.exists():
        raise click.BadParameter(f"{path}: no such file or folder", param_hint="INPUT")
    files = (
        [p]
        if p.is_file()
        else sorted(f for f in p.rglob("*") if f.is_file() and not f.name.startswith(("_", ".")))
    )
    if not files or all(f.stat().st_size == 0 for f in files):
        raise click.BadParameter(f"{path} is empty: nothing to aggregate", param_hint="INPUT")
    first = next(f for f in files if f.stat().st_size > 0)
    fam = FORMATS[kind]
    try:
        if fam == "parquet":
            import pyarrow.parquet as pq

            return list(pq.read_schema(first).names)
        if fam == "csv":
            found = csv_header(first, "\t" if kind == "tsv" else ",")
            return found[0] if found is not None else []
        names: dict[str, None] = {}
        with open(first) as fh:
            for i, line in enumerate(fh):
                if i >= 1_000:
                    break
                with contextlib.suppress(ValueError):
                    rec = json.loads(line)
                    if isinstance(rec, dict):
                        names.update(dict.fromkeys(rec))
        return list(names) or None
    except Exception as e:  # unreadable: say so in one line, before Spark starts
        raise click.BadParameter(f"cannot read {first}: {one_line(e)}", param_hint="INPUT") from e


def check_columns(columns: list[str], path: str, call: WindowCall) -> None:
    """BadParameter naming the option, the missing column and the closest existing one."""
    wanted = [(k, "--key") for k in call.keys] + [(call.time, "--time")]
    wanted += [(a.column, "--agg") for a in call.aggs if a.column is not None]
    for col, option in wanted:
        if col not in columns:
            close = difflib.get_close_matches(col, columns, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise click.BadParameter(
                f"column {col!r} is not in {path} (columns: {', '.join(columns)}){hint}",
                param_hint=option,
            )


def read_call(
    keys: Sequence[str],
    time_col: str,
    aggs: Sequence[str],
    *,
    size: Sequence[str],
    slide: str | None,
    rows: int | None,
    every: int,
    gap: str | None,
    time_unit: str,
    lateness: dict[str, str | None] | None = None,
) -> WindowCall:
    """``run``'s options read once into the :class:`~windowagg.call.WindowCall` that both
    engines are handed (:func:`windowagg.pandas.run_call`,
    :func:`windowagg.spark.batch.run_call`), or click's one-line error naming the option.
    *size* holds the values of a repeated ``--size``; *lateness*: ``max_out_of_orderness``
    and ``allowed_lateness`` as given (``follow``). O(len(aggs)).

    >>> w = dict(slide="10 min", rows=None, every=1, gap=None, time_unit="s")
    >>> c = read_call(["k"], "t", ["max(v)", "count"], size=["1h"], **w)
    >>> [a.alias for a in c.outputs], c.shape.size, c.shape.slide
    (['max_v', 'count'], 3600000000, 600000000)
    >>> read_call(["k"], "t", ["max(v)"], size=[], **{**w, "slide": None})
    Traceback (most recent call last):
    ...
    click.exceptions.UsageError: give one window: --size (with --slide, or per event), --rows or --gap (decayed aggregations alone may give none: each key's whole history)
    """
    from windowagg.call import SPARK_COLUMNS, check_names, parse_call, shape_of

    try:
        agg_list = parse(list(aggs))
    except (ValueError, TypeError) as e:
        raise click.BadParameter(str(e), param_hint="--agg") from e
    decayed = all(getattr(a.monoid, "needs_time", False) for a in agg_list)
    args = window_args(size, slide, rows, every, gap, history=decayed)
    if args["size"] is not None:  # what needs the sizes and the slide together: their grid
        try:  # the options as given, so that the message names them so
            shape_of(list(size) if len(size) > 1 else size[0], slide, None, 1, None, 0)
        except ValueError as e:
            raise click.BadParameter(str(e), param_hint="--size") from e
    try:  # the names: both engines write the same files, so Spark's names are refused
        call = parse_call(
            list(keys), time_col, agg_list, time_unit=time_unit, **args, **(lateness or {})
        )
        check_names(call, SPARK_COLUMNS)
    except ValueError as e:
        raise click.BadParameter(str(e), param_hint="--agg / --key") from e
    return call


def window_args(
    size: str | Sequence[str] | None,
    slide: str | None,
    rows: int | None,
    every: int,
    gap: str | None = None,
    history: bool = False,
) -> dict[str, Any]:
    """The window options as ``window_agg`` keywords (durations as ``"N us"``), or click's
    one-line error naming the option. *size* may be the values of a repeated ``--size``
    (two or more: a list of sizes, computed in one pass). *history*: the aggregations are
    all decayed, so no window is also a call (each key's whole history, docs/decay.md)."""
    if size is not None and not isinstance(size, str):
        sizes = list(size)
        if len(sizes) > 1:
            if rows is not None or gap is not None:
                raise click.UsageError(
                    "give one window: --size (with --slide, or per event), --rows or --gap"
                )
            one = [window_args(s, slide, None, every)["size"] for s in sizes]
            return {**window_args(sizes[0], slide, None, every), "size": one}
        size = sizes[0] if sizes else None
    given = sum(x is not None for x in (size, rows, gap))
    if given != 1 and not (given == 0 and history and slide is None):
        raise click.UsageError(
            "give one window: --size (with --slide, or per event), --rows or --gap (decayed "
            "aggregations alone may give none: each key's whole history)"
        )
    if slide is not None and size is None:
        raise click.BadParameter("--slide needs --size (a time window)", param_hint="--slide")
    if every != 1 and rows is None:
        raise click.BadParameter(
            f"--every {every} counts events between count windows and needs --rows; time "
            "windows hop by --slide",
            param_hint="--every",
        )
    us: dict[str, int | None] = {}
    for option, text in (("--size", size), ("--slide", slide), ("--gap", gap)):
        if text is None:
            us[option] = None
            continue
        try:
            v = to_micros(text)
        except ValueError as e:
            if text.strip().startswith("-"):
                raise click.BadParameter(
                    f"{text!r}: a duration must be positive, e.g. '10 minutes'",
                    param_hint=option,
                ) from e
            raise click.BadParameter(str(e), param_hint=option) from e
        if v <= 0:
            raise click.BadParameter(
                f"{text!r}: a duration must be positive, e.g. '10 minutes'", param_hint=option
            )
        us[option] = v

    def dur(v: int | None) -> str | None:
        return None if v is None else f"{v} us"

    return {
        "size": dur(us["--size"]),
        "slide": dur(us["--slide"]),
        "rows": rows,
        "every": every,
        "gap": dur(us["--gap"]),
    }
