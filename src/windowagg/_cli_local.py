"""``windowagg run --engine local``: the same windows in-process, without Spark.

Reads the input through pyarrow into pandas the way the Spark engine's reader does (a
header row; column types inferred; in CSV and JSON a line that cannot be read becomes a row
whose only non-null column is ``_corrupt_record``, so it comes out as a ``malformed record``
reject at its own position, as Spark's PERMISSIVE mode makes it), runs
:func:`windowagg.pandas.window_agg` and writes the same ``results.parquet`` /
``rejects.parquet`` (same columns; ``row_index`` is the row's position in the input). For
files that fit in memory. No field-size limit: a field is as long as the file allows.

=============  ==============================================================================
CSV / TSV      ``pyarrow.csv`` (quoted fields may hold newlines); a row with more or fewer
               fields than the header is malformed (``_corrupt_record`` = its raw text, found
               by pyarrow's ``invalid_row_handler``); an empty field is null; a column whose
               non-null fields are all integers is ``Int64``, all numbers: ``Float64``
               (``NaN`` / ``inf`` text included, kept apart from nulls), else text; the
               ``--time`` column is read as UTC timestamps when every non-null field is an
               ISO 8601 time (as Spark's ``inferSchema``), else as text (each unreadable
               time is then a reject with its reason). Bytes that are not UTF-8 read as
               U+FFFD, as Spark reads them
JSON lines     ``pyarrow.json``; a file it refuses (a line that is not a JSON object, a
               column of mixed types) is read line by line: a line that is not a JSON
               object is malformed
Parquet        ``pyarrow.parquet``; integer and float columns nullable (``Int64`` /
               ``Float64``: a null stays a null, as on Spark)
=============  ==============================================================================

Complexity: O(file size) in pyarrow's C++ readers and compute functions; Python work per
malformed row only.
"""

from __future__ import annotations

import contextlib
import json
import shutil
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from windowagg._cli_checks import FORMATS, csv_header
from windowagg.errors import WindowaggError
from windowagg.rejects import CORRUPT_COLUMN

if TYPE_CHECKING:
    from windowagg.call import WindowCall

__all__ = ["read_local", "run_local"]

#: The first block size of pyarrow's readers; a row longer than a block is read again with
#: blocks 8 times larger (up to pyarrow's limit of 2 GiB).
_BLOCK = 1 << 22
_MAX_BLOCK = 2**31 - 1
#: Text Spark's ``inferSchema`` reads as an integer (Python's ``int`` also takes ``1_000``
#: and spaces; pyarrow's cast also takes ``0x10``: neither is an integer here)
_INTEGER = r"^[+-]?[0-9]+$"
#: Nullable pandas types for pyarrow's numbers (a null stays apart from a NaN value)
_NULLABLE: dict[Any, Any] = {
    pa.int8(): pd.Int64Dtype(),
    pa.int16(): pd.Int64Dtype(),
    pa.int32(): pd.Int64Dtype(),
    pa.int64(): pd.Int64Dtype(),
    pa.uint8(): pd.Int64Dtype(),
    pa.uint16(): pd.Int64Dtype(),
    pa.uint32(): pd.Int64Dtype(),
    pa.float32(): pd.Float64Dtype(),
    pa.float64(): pd.Float64Dtype(),
}


def _files(path: str) -> list[Path]:
    p = Path(path)
    if p.is_file():
        return [p]
    return sorted(f for f in p.rglob("*") if f.is_file() and not f.name.startswith(("_", ".")))


def _with_bigger_blocks(read: Callable[[int], Any]) -> Any:
    """``read(block_size)``, again with blocks 8x larger while a row straddles two blocks
    (pyarrow's readers need a whole row in one block): no limit on a field's length."""
    block = _BLOCK
    while True:
        try:
            return read(block)
        except pa.ArrowInvalid as e:
            if "straddl" not in str(e) or block >= _MAX_BLOCK:
                raise
            block = min(block * 8, _MAX_BLOCK)


def _csv_table(
    data: bytes, sep: str, width: int, skip: int
) -> tuple[pa.Table, list[tuple[int, str]]]:
    """One CSV file's bytes as string columns ``f0..f{width-1}`` (its header skipped:
    *skip* physical lines) and its malformed rows as (position among the file's rows, raw
    text). Quoted fields may hold newlines (pyarrow's slower parser only runs when the
    file has a quote at all).

    pyarrow's ``invalid_row_handler`` gets each row with another number of fields; its
    ``number`` counts the skipped lines and then the non-empty rows, so a row's position
    is ``number - skip - 1``. Row numbers are only known single-threaded: a file with a
    malformed row is read again that way.
    """
    import pyarrow.csv as pacsv

    names = [f"f{i}" for i in range(width)]
    bad: list[tuple[int | None, str]] = []

    def on_bad(row: Any) -> str:
        bad.append((row.number, row.text))
        return "skip"

    quoted = b'"' in data

    def read(block: int, threads: bool) -> pa.Table:
        bad.clear()
        return pacsv.read_csv(
            pa.BufferReader(data),
            read_options=pacsv.ReadOptions(
                column_names=names, skip_rows=skip, block_size=block, use_threads=threads
            ),
            parse_options=pacsv.ParseOptions(
                delimiter=sep, newlines_in_values=quoted, invalid_row_handler=on_bad
            ),
            convert_options=pacsv.ConvertOptions(
                column_types=dict.fromkeys(names, pa.string()),
                null_values=[""],
                strings_can_be_null=True,
                quoted_strings_can_be_null=True,
            ),
        )

    table = _with_bigger_blocks(lambda b: read(b, True))
    if bad:  # numbered rows: read again on one thread
        table = _with_bigger_blocks(lambda b: read(b, False))
    out: list[tuple[int, str]] = []
    for number, text in bad:
        if number is None:  # pragma: no cover - pyarrow numbers rows on one thread
            raise WindowaggError("pyarrow did not number a malformed CSV row; please report it")
        out.append((number - skip - 1, text))
    return table, out


def _place_malformed(table: pa.Table, bad: list[tuple[int, str]]) -> tuple[pa.Table, pa.Array]:
    """*table*'s rows with a null row at each malformed row's position, and the
    ``_corrupt_record`` column (the raw text there, null elsewhere). O(n)."""
    n = table.num_rows + len(bad)
    if not bad:
        return table, pa.nulls(n, pa.string())
    pos = np.array([p for p, _ in bad], dtype=np.int64)
    if len(pos) and (pos[0] < 0 or pos[-1] >= n or (np.diff(pos) <= 0).any()):
        raise WindowaggError(  # pragma: no cover - pyarrow's row numbers, checked
            f"the CSV reader lost track of malformed rows (positions {pos[:5].tolist()} of "
            f"{n}); please report it with the file's first lines"
        )
    good = np.ones(n, dtype=bool)
    good[pos] = False
    take = np.zeros(n, dtype=np.int64)
    take[good] = np.arange(table.num_rows)
    table = table.take(pa.array(take, mask=~good))
    texts = np.full(n, None, dtype=object)
    texts[pos] = [t for _, t in bad]
    return table, pa.array(texts, type=pa.string())


def _typed(col: pa.ChunkedArray) -> pa.ChunkedArray:
    """A string column as Spark's ``inferSchema`` types it: integers (int64), else numbers
    (float64; ``NaN`` / ``inf`` text included), else text. O(n) in pyarrow; a text column
    is told by its first values, without a cast of the whole column."""
    head = col.slice(0, 1_000).drop_null()
    if _all_integers(head):
        present = col.drop_null() if col.null_count else col
        try:
            ints = pc.cast(col, pa.int64())
        except pa.ArrowInvalid:
            ints = None
        # pyarrow's cast takes 0x10 (not an integer here) and refuses +3 (one here)
        if ints is None or pc.any(pc.match_substring(present, "x", ignore_case=True)).as_py():
            ints = None
            if _all_integers(present):
                with contextlib.suppress(pa.ArrowInvalid):  # beyond int64: a float
                    ints = pc.cast(pc.replace_substring_regex(col, r"^\+", ""), pa.int64())
        if ints is not None:
            return ints
    try:
        pc.cast(head, pa.float64())
        return pc.cast(col, pa.float64())
    except pa.ArrowInvalid:
        return col


def _all_integers(text: Any) -> bool:
    """Whether every value of a string array (nulls dropped) is an integer (``_INTEGER``)."""
    return pc.all(pc.match_substring_regex(text, _INTEGER)).as_py() is not False


def _timestamps(col: pa.ChunkedArray) -> pa.ChunkedArray | None:
    """A text column as UTC microsecond timestamps if every non-null field is an ISO 8601
    time (with a zone, or naive read as UTC; years 0001-9999), else None. O(n)."""
    for typ in (pa.timestamp("us", tz="UTC"), pa.timestamp("us")):
        try:
            ts = pc.cast(col, typ)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            continue
        return ts.cast(pa.int64()).cast(pa.timestamp("us", tz="UTC"))
    return None


def _to_pandas(table: pa.Table) -> pd.DataFrame:
    """Numbers as nullable ``Int64`` / ``Float64``, text as Python strings (None for a
    null, as the rest of windowagg reads text). O(n)."""
    return table.to_pandas(types_mapper=_NULLABLE.get)


def _read_csv(files: list[Path], sep: str, times: Sequence[str]) -> pd.DataFrame:
    header: list[str] | None = None
    tables: list[pa.Table] = []
    corrupt: list[pa.Array] = []
    for f in files:
        found = csv_header(f, sep)
        if found is None:
            continue
        names, skip = found
        if header is None:
            header = names  # later files: their first record is their header, skipped
        data = f.read_bytes()
        try:
            table, bad = _csv_table(data, sep, len(header), skip)
        except pa.ArrowInvalid as e:
            if "UTF8" not in str(e) and "UTF-8" not in str(e):
                raise
            data = data.decode("utf-8", errors="replace").encode()
            table, bad = _csv_table(data, sep, len(header), skip)
        table, texts = _place_malformed(table, bad)
        tables.append(table)
        corrupt.append(texts)
    if header is None:
        return pd.DataFrame()
    whole = pa.concat_tables(tables) if tables else None
    columns: dict[str, Any] = {}
    for j, name in enumerate(header):
        col = whole.column(j) if whole is not None else pa.chunked_array([], pa.string())
        typed = _typed(col)
        if typed.type == pa.string() and name in times:
            typed = _timestamps(col) or col
        columns[name] = typed
    if any(c.null_count < len(c) for c in corrupt):
        columns[CORRUPT_COLUMN] = pa.chunked_array(corrupt, type=pa.string())
    return _to_pandas(pa.table(columns))


def _read_json_lines(files: list[Path]) -> pd.DataFrame:
    """The line-by-line reader, for files pyarrow refuses: a line that is not a JSON
    object is a malformed row (its text in ``_corrupt_record``)."""
    records: list[dict[str, Any]] = []
    for f in files:
        with open(f, encoding="utf-8", errors="replace") as fh:
            for line in fh:
                if not line.strip():
                    continue
                try:
                    rec = json.loads(line)
                except ValueError:
                    rec = None
                if isinstance(rec, dict):
                    records.append(rec)
                else:
                    records.append({CORRUPT_COLUMN: line.rstrip("\n")})
    names = list(dict.fromkeys(k for r in records for k in r))
    data = {}
    for n in names:
        cells = [r.get(n) for r in records]
        if all(c is None or (isinstance(c, int) and not isinstance(c, bool)) for c in cells):
            data[n] = pd.array(cells, dtype="Int64")
        else:
            data[n] = pd.Series(cells, dtype=object)
    return pd.DataFrame(data)


def _read_json(files: list[Path]) -> pd.DataFrame:
    import pyarrow.json as pajson

    def read(f: Path) -> pa.Table:
        def in_blocks(block: int) -> pa.Table:
            return pajson.read_json(f, read_options=pajson.ReadOptions(block_size=block))

        return _with_bigger_blocks(in_blocks)

    try:
        tables = [read(f) for f in files]
        whole = pa.concat_tables(tables, promote_options="permissive")
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        return _read_json_lines(files)
    return _to_pandas(whole)


def read_local(path: str, kind: str, times: Sequence[str] = ()) -> pd.DataFrame:
    """INPUT (a file or a folder of files) as one pandas frame, rows in file order.

    *times*: columns to read as timestamps when every value is an ISO 8601 time (CSV).
    O(n).
    """
    files = _files(path)
    fam = FORMATS[kind]
    if fam == "parquet":
        import pyarrow.parquet as pq

        tables = [pq.read_table(f) for f in files]
        return _to_pandas(pa.concat_tables(tables, promote_options="permissive"))
    if fam == "csv":
        return _read_csv(files, "\t" if kind == "tsv" else ",", times)
    return _read_json(files)


def run_local(
    path: str, kind: str, call: WindowCall, out: Path, *, threads: int | None = None
) -> tuple[int, pd.DataFrame, pd.DataFrame]:
    """Read, window (the call ``windowagg run`` read once; the keys on *threads* threads),
    write ``results.parquet`` / ``rejects.parquet``; (rows, results, rejects)."""
    from windowagg.pandas import run_call

    pdf = read_local(path, kind, times=[call.time])
    res = run_call(pdf, call, row_columns="*", threads=threads)
    results, rejects = res.results, res.rejects
    for name in ("results.parquet", "rejects.parquet"):  # a folder from a Spark run
        if (out / name).is_dir():
            shutil.rmtree(out / name)
    results.to_parquet(out / "results.parquet", index=False)
    rejects.to_parquet(out / "rejects.parquet", index=False)
    return len(pdf), results, rejects
