"""``windowagg run --engine local``: the same windows in-process, without Spark.

Reads the input into pandas the way the Spark engine's reader does (a header row; column
types inferred; in CSV and JSON a line that cannot be read becomes a row whose only
non-null column is ``_corrupt_record``, so it comes out as a ``malformed record`` reject,
as Spark's PERMISSIVE mode makes it), runs :func:`windowagg.pandas.window_agg` and writes
the same ``results.parquet`` / ``rejects.parquet`` (same columns; ``row_index`` is the row's
position in the input). For files that fit in memory.

=============  ==============================================================================
CSV / TSV      ``csv`` module; a row with more or fewer fields than the header is malformed;
               an empty field is null; a column whose non-null fields are all integers is
               ``Int64``, all numbers: floats (``NaN`` / ``inf`` text included), else text
JSON lines     one object per line; a line that is not a JSON object is malformed
Parquet        ``pandas.read_parquet``
=============  ==============================================================================
"""

from __future__ import annotations

import csv
import json
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from windowagg._cli_checks import FORMATS
from windowagg.spark.rejects import CORRUPT_COLUMN

__all__ = ["read_local", "run_local"]


def _files(path: str) -> list[Path]:
    p = Path(path)
    if p.is_file():
        return [p]
    return sorted(f for f in p.rglob("*") if f.is_file() and not f.name.startswith(("_", ".")))


def _column(cells: list[str | None]) -> Any:
    """Spark's ``inferSchema`` in small: integers, else numbers, else text (None = null)."""
    present = [c for c in cells if c is not None]
    try:
        ints = [int(c) for c in present]
    except ValueError:
        pass
    else:
        it = iter(ints)
        return pd.array([None if c is None else next(it) for c in cells], dtype="Int64")
    try:
        floats = [float(c) for c in present]
    except ValueError:
        return pd.Series(cells, dtype=object)
    it2 = iter(floats)
    # python floats and None in an object column: a null stays apart from a NaN cell
    return pd.Series([None if c is None else next(it2) for c in cells], dtype=object)


def _read_csv(files: list[Path], sep: str) -> pd.DataFrame:
    header: list[str] | None = None
    rows: list[list[str | None]] = []
    corrupt: list[str | None] = []
    for f in files:
        with open(f, newline="", encoding="utf-8-sig") as fh:
            reader = csv.reader(fh, delimiter=sep)
            first = next(reader, None)
            if first is None:
                continue
            if header is None:
                header = [h.strip() for h in first]
            for fields in reader:
                if not fields:
                    continue
                if len(fields) != len(header):
                    rows.append([None] * len(header))
                    corrupt.append(sep.join(fields))
                else:
                    rows.append([x if x != "" else None for x in fields])
                    corrupt.append(None)
    if header is None:
        return pd.DataFrame()
    data = {h: _column([r[j] for r in rows]) for j, h in enumerate(header)}
    out = pd.DataFrame(data)
    if any(c is not None for c in corrupt):
        out[CORRUPT_COLUMN] = pd.Series(corrupt, dtype=object)
    return out


def _read_json(files: list[Path]) -> pd.DataFrame:
    records: list[dict[str, Any]] = []
    for f in files:
        with open(f, encoding="utf-8") as fh:
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


def read_local(path: str, kind: str) -> pd.DataFrame:
    """INPUT (a file or a folder of files) as one pandas frame, rows in file order. O(n)."""
    files = _files(path)
    fam = FORMATS[kind]
    if fam == "parquet":
        return pd.concat([pd.read_parquet(f) for f in files], ignore_index=True)
    if fam == "csv":
        return _read_csv(files, "\t" if kind == "tsv" else ",")
    return _read_json(files)


def run_local(
    path: str,
    kind: str,
    keys: Sequence[str],
    time_col: str,
    aggs: Sequence[Any],
    window: dict[str, Any],
    time_unit: str,
    out: Path,
) -> tuple[int, pd.DataFrame, pd.DataFrame]:
    """Read, window, write ``results.parquet`` / ``rejects.parquet``; (rows, results, rejects)."""
    from windowagg.pandas import window_agg

    pdf = read_local(path, kind)
    res = window_agg(
        pdf, list(keys), time_col, list(aggs), time_unit=time_unit, row_columns="*", **window
    )
    results, rejects = res.results, res.rejects
    for name in ("results.parquet", "rejects.parquet"):  # a folder from a Spark run
        if (out / name).is_dir():
            shutil.rmtree(out / name)
    results.to_parquet(out / "results.parquet", index=False)
    rejects.to_parquet(out / "rejects.parquet", index=False)
    return len(pdf), results, rejects
