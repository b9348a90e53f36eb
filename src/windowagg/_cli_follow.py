"""``windowagg follow FOLDER``: :func:`windowagg.stream` over the files arriving in a folder.

=================  ==========================================================================
input              the files of FOLDER (not its subfolders) in (modification time, name)
                   order: CSV, TSV, JSON lines or Parquet by suffix (or ``--format``), read
                   as ``run --engine local`` reads them; names starting with ``.`` or ``_``
                   are skipped (write a file under such a name, then rename it in)
micro-batches      one per file, through one :func:`windowagg.stream` whose state is a SQLite
                   file (``--state``); the checkpoint token is the file's ``(mtime_ns,
                   name)``: per file, feed with ``commit=False``, write
                   ``OUT/results-<name>.parquet`` and ``OUT/rejects-<name>.parquet`` (<name>: the file's
                   stem for Parquet, else its name)
                   (each written to a temporary name and renamed), then commit. A restart
                   resumes after the last committed file: a file whose commit was lost is
                   fed again from the same state and its files are overwritten with the
                   same output, so every window and reject is written once
polling            after the files present, FOLDER is listed every ``--poll`` seconds; a new
                   file must have a later (mtime, name) than the last one processed (a
                   file moved in with an older modification time is never read)
end of input       ``--idle SECONDS`` without a new file ends the input: every window left
                   and count windows' last events (rejects) go to ``OUT/results-_end.parquet``
                   / ``OUT/rejects-_end.parquet`` and the state is closed (a later ``follow``
                   on it refuses to start); without ``--idle``, ``follow`` polls until
                   stopped
stop               SIGINT or SIGTERM: the file being processed is finished (written and
                   committed), then ``follow`` exits 0; a restart goes on from there
bad input          rows as ``run``: rejects with reasons; a file that cannot be read, or
                   lacks a column the call reads, is one reject (``row``: ``{"file": name}``,
                   ``row_index`` -1) and is not read again
=================  ==========================================================================
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
from rich.table import Table

from windowagg._cli_checks import FORMATS, one_line, read_call, window_options
from windowagg._cli_common import _reason_class, _rejects_table, console

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["follow"]

#: The checkpoint token of a stream that ``--idle`` closed
END = "end"
#: The output files' name part for what the end of input emits (no input file has it:
#: names starting with ``_`` are skipped)
END_NAME = "_end"


def _pending(folder: Path, fmt: str | None, after: tuple[int, str] | None) -> list[Path]:
    """The files of *folder* to read, in (mtime_ns, name) order, after the token *after*.
    O(files log files)."""
    out = []
    for f in folder.iterdir():
        if not f.is_file() or f.name.startswith((".", "_")):
            continue
        kind = (fmt or f.suffix.lstrip(".")).lower()
        if kind not in FORMATS:
            continue
        out.append((f.stat().st_mtime_ns, f.name, f))
    out.sort(key=lambda x: (x[0], x[1]))
    return [f for m, n, f in out if after is None or (m, n) > after]


def _name(f: Path) -> str:
    """The part of the output files' names that stands for input file *f*: its stem for a
    Parquet file (``b0.parquet``: ``results-b0.parquet``), else its name (``b0.csv``:
    ``results-b0.csv.parquet``), so that no two input files share outputs. O(1)."""
    return f.stem if f.suffix.lower() in (".parquet", ".pq") else f.name


def _write(frame: pd.DataFrame, path: Path) -> None:
    """*frame* to *path* as Parquet, atomically (a temporary name, then a rename)."""
    tmp = path.with_name(f".{path.name}.tmp")
    frame.to_parquet(tmp, index=False)
    os.replace(tmp, path)


def _unreadable(name: str, why: str) -> pd.DataFrame:
    """The reject of a file that cannot be fed: one row, the file's name as its row."""
    import pandas as pd

    return pd.DataFrame(
        {
            "reason": [f"unreadable file: {why}"],
            "event_time": pd.Series([pd.NaT], dtype="datetime64[us, UTC]"),
            "row": [json.dumps({"file": name})],
            "row_index": pd.Series([-1], dtype="int64"),
        }
    )


class _Stop:
    """SIGINT / SIGTERM set it; the loop finishes its file and returns."""

    def __init__(self) -> None:
        self.event = threading.Event()
        self.signal: str | None = None

    def __call__(self, signum: int, frame: Any) -> None:
        self.signal = signal.Signals(signum).name
        self.event.set()


@contextlib.contextmanager
def _stopping() -> Iterator[_Stop]:
    """A :class:`_Stop` as the SIGINT and SIGTERM handler while the block runs."""
    stop = _Stop()
    old = {s: signal.signal(s, stop) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield stop
    finally:
        for s, h in old.items():
            signal.signal(s, h)


def _count(counts: dict[str, int], reasons: Any) -> None:
    """Add *reasons* to the rejects summary, by class. O(len(reasons))."""
    for r in reasons:
        cls = _reason_class(str(r))
        counts[cls] = counts.get(cls, 0) + 1


@click.command()
@click.argument("folder", type=click.Path(exists=True, file_okay=False))
@click.option("--format", "fmt", default=None, help="csv, json or parquet (default: by suffix).")
@window_options
@click.option(
    "--max-out-of-orderness",
    default=None,
    help="How far behind its key's newest event an event may come (e.g. '30 s'; default 0).",
)
@click.option(
    "--allowed-lateness",
    default=None,
    help="How far behind the watermark an event still revises its windows (default 0).",
)
@click.option(
    "--state",
    "state",
    required=True,
    type=click.Path(dir_okay=False),
    help="The stream's SQLite state file (created if absent; a restart resumes from it).",
)
@click.option("--out", "out_dir", required=True, type=click.Path(file_okay=False))
@click.option(
    "--poll",
    type=click.FloatRange(min=0.01),
    default=1.0,
    show_default=True,
    help="Seconds between listings of FOLDER.",
)
@click.option(
    "--idle",
    type=click.FloatRange(min=0),
    default=None,
    help="End the input after this many seconds without a new file: emit every window left "
    "and close the state (default: poll until SIGINT/SIGTERM).",
)
@click.option("--verbose", "-v", is_flag=True, help="Full tracebacks on errors.")
def follow(
    folder: str,
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
    max_out_of_orderness: str | None,
    allowed_lateness: str | None,
    state: str,
    out_dir: str,
    poll: float,
    idle: float | None,
    verbose: bool,
) -> None:
    """Follow FOLDER: each new file is a micro-batch of windowagg.stream, exactly once.

    Processes the files present in (modification time, name) order, then polls for new
    ones; writes OUT/results-<name>.parquet (with a revision column: a window again when a
    late event changes it) and OUT/rejects-<name>.parquet per file, and commits the state
    to --state after each. Stops on SIGINT/SIGTERM after the current file, or with --idle
    after that many seconds without a new file (then every window left goes to
    OUT/results-_end.parquet and the stream is closed).
    """
    from windowagg.call import check_names
    from windowagg.streaming import Stream

    lateness = {"max_out_of_orderness": max_out_of_orderness, "allowed_lateness": allowed_lateness}
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
        lateness=lateness,
    )
    try:
        check_names(call, ("revision",))
    except ValueError as e:
        raise click.BadParameter(str(e), param_hint="--agg / --key") from e
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    try:
        s = Stream(call, store=state, namespace="windowagg.follow", row_columns="*")
    except Exception as e:
        if verbose:
            raise
        raise click.ClickException(f"--state {state}: {one_line(e)}") from e
    try:
        _loop(s, Path(folder), fmt, out, poll, idle, verbose)
    finally:
        if s._store is not None:  # the stream opened the SQLite file: release it
            s._store.store.close()


def _loop(
    s: Any, folder: Path, fmt: str | None, out: Path, poll: float, idle: float | None, verbose: bool
) -> None:
    import pandas as pd

    from windowagg._cli_local import read_local
    from windowagg.errors import ArgumentError, WindowaggError

    token = s.checkpoint_token
    if token == END:
        raise click.ClickException(
            "the stream in --state ended (--idle closed it): give another --state to start over"
        )
    done = None if token is None else (int(token[0]), str(token[1]))
    counts: dict[str, int] = {}
    n_files = n_rows = n_windows = 0
    with _stopping() as stop:
        last_new = time.monotonic()
        while not stop.event.is_set():
            files = _pending(folder, fmt, done)
            if not files:
                if idle is not None and time.monotonic() - last_new >= idle:
                    got = s.advance(float("inf"), token=END, commit=False)
                    _write(got.results, out / f"results-{END_NAME}.parquet")
                    _write(got.rejects, out / f"rejects-{END_NAME}.parquet")
                    s.commit()
                    n_windows += len(got.results)
                    _count(counts, got.rejects["reason"])
                    console.print(
                        f"no new file for {idle:g} s: the input ended; {len(got.results):,} "
                        f"windows and {len(got.rejects):,} rejects left, the state is closed"
                    )
                    break
                stop.event.wait(poll)
                continue
            last_new = time.monotonic()
            for f in files:
                st = f.stat()
                tok = (st.st_mtime_ns, f.name)
                kind = (fmt or f.suffix.lstrip(".")).lower()
                why = None
                try:  # a file that cannot be read (pyarrow's errors, the reader's own)
                    frame = read_local(str(f), kind, times=[s._call.time])
                except (OSError, ValueError, WindowaggError) as e:
                    why = e
                else:
                    try:  # not the call's micro-batch: a column missing or repeated
                        got = s.feed(frame, token=tok, commit=False)
                        results, rejects, n = got.results, got.rejects, len(frame)
                    except ArgumentError as e:  # the stream's and store's errors stop follow
                        why = e
                if why is not None:
                    if verbose:
                        console.print(f"{f.name}: {why!r}")
                    empty = pd.DataFrame({c: [] for c in s._needed})
                    results = s.feed(empty, token=tok, commit=False).results  # the token
                    rejects, n = _unreadable(f.name, one_line(why)), 0
                _write(results, out / f"results-{_name(f)}.parquet")
                _write(rejects, out / f"rejects-{_name(f)}.parquet")
                s.commit()
                done = tok
                n_files, n_rows, n_windows = n_files + 1, n_rows + n, n_windows + len(results)
                _count(counts, rejects["reason"])
                console.print(
                    f"{f.name}: {n:,} rows, {len(results):,} windows, {len(rejects):,} rejects"
                )
                if stop.event.is_set():
                    break
        if stop.signal is not None:
            console.print(f"{stop.signal}: stopped after the last committed file")
    t = Table(title=f"windowagg follow: {folder}")
    for c in ("files", "rows", "windows", "rejects"):
        t.add_column(c, justify="right")
    t.add_row(f"{n_files:,}", f"{n_rows:,}", f"{n_windows:,}", f"{sum(counts.values()):,}")
    console.print(t)
    console.print(_rejects_table(sorted(counts.items(), key=lambda kv: -kv[1])))
