"""The streaming operator's packed output: one row of arrays per key and micro-batch.

Python hands the windows of a key's micro-batch to the JVM as one row holding them as
arrays (:func:`packed_schema`, built by :func:`pack`), plus one row per reject; the JVM
explodes it into the documented output rows (:func:`unpack`): Spark's pandas-to-Arrow
conversion then costs per key, not per window (docs/spark.md, "Packed output").
"""

from __future__ import annotations

import datetime as dt
import functools
from collections.abc import Sequence
from typing import Any

from windowagg.spark._deps import require_pyspark

require_pyspark("windowagg.spark.packed")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from pyspark.sql import DataFrame  # noqa: E402
from pyspark.sql import functions as F  # noqa: E402
from pyspark.sql import types as T  # noqa: E402

from windowagg.aggs import Agg  # noqa: E402
from windowagg.rejects import REJECT_COLUMNS, window_bound  # noqa: E402
from windowagg.spark.batch import _type  # noqa: E402

__all__ = ["pack", "packed_schema", "unpack"]


#: The packed layout's own array columns: window starts, window ends (before the
#: aggregations' arrays) and revisions (after them); the reject columns close each row.
_WS, _WE, _REV = "_ws", "_we", "_rev"


@functools.lru_cache(maxsize=64)
def _packed_names(keys: tuple[str, ...], aliases: tuple[str, ...]) -> pd.Index:
    """The :func:`packed_schema` column names in order, as one (immutable) pandas Index."""
    return pd.Index([*keys, _WS, _WE, *aliases, _REV, *REJECT_COLUMNS])


def packed_schema(key_fields: Sequence[T.StructField], aggs: Sequence[Agg]) -> T.StructType:
    """What the Python side of the streaming operator returns: one row per key and
    micro-batch holding all its windows as arrays, plus one row per reject.

    Fields: the keys; ``_ws``/``_we`` (``array<bigint>``: window start/end, microseconds
    since the epoch, UTC); one ``array<type>`` per aggregation alias; ``_rev``
    (``array<bigint>``: each window's revision); ``reason``, ``event_time``, ``row`` (set
    on reject rows only, whose arrays are null). :func:`unpack` turns it into the
    :func:`~windowagg.spark.batch.output_schema` rows plus ``revision``.
    """
    longs = T.ArrayType(T.LongType(), False)
    types = [f.dataType for f in key_fields] + [longs, longs]
    types += [T.ArrayType(_type(a.dtype), True) for a in aggs]
    types += [longs, T.StringType(), T.TimestampType(), T.StringType()]  # _rev, the rejects'
    names = _packed_names(tuple(f.name for f in key_fields), tuple(a.alias for a in aggs))
    return T.StructType([T.StructField(n, t, True) for n, t in zip(names, types, strict=True)])


def _col(name: str) -> Any:
    return F.col("`" + name.replace("`", "``") + "`")


def unpack(packed: DataFrame, keys: Sequence[str], aggs: Sequence[Agg]) -> DataFrame:
    """The :func:`packed_schema` rows as :func:`~windowagg.spark.batch.output_schema` rows,
    with ``revision`` (int) after the aggregations (null on reject rows).

    One ``explode_outer(arrays_zip(...))`` in the JVM: a window row per array element,
    and each reject row once (its arrays are null). O(rows), no Python.
    """
    zipped = F.arrays_zip(_col(_WS), _col(_WE), *[_col(a.alias) for a in aggs], _col(_REV))
    rows = packed.select(
        *[_col(k) for k in keys],
        *[_col(c) for c in REJECT_COLUMNS],
        F.explode_outer(zipped).alias("_z"),
    )
    is_window = F.col("reason").isNull()
    z = F.col("_z")
    return rows.select(
        F.when(is_window, F.lit("window")).otherwise(F.lit("reject")).alias("kind"),
        *[_col(k) for k in keys],
        F.timestamp_micros(z.getField(_WS)).alias("window_start"),
        F.timestamp_micros(z.getField(_WE)).alias("window_end"),
        *[z.getField(a.alias).alias(a.alias) for a in aggs],
        z.getField(_REV).cast("int").alias("revision"),
        *[_col(c) for c in REJECT_COLUMNS],
    )


def _array_values(agg: Agg, col: list[Any] | np.ndarray) -> list[Any]:
    if agg.dtype == "double":  # as the batch frames: a missing double is NaN
        if isinstance(col, list):
            col = [np.nan if v is None else v for v in col]
        out: list[Any] = np.asarray(col, dtype=np.float64).tolist()
        return out
    if agg.dtype == "bigint":
        ints: list[Any] = np.asarray(col, dtype=np.int64).tolist()
        return ints
    return [list(v) if isinstance(v, tuple) else v for v in col]


def pack(
    keys: Sequence[str],
    key_values: Sequence[Any],
    aggs: Sequence[Agg],
    cols: dict[str, list[Any] | np.ndarray],
    rejects: pd.DataFrame,
) -> pd.DataFrame | None:
    """One key's micro-batch output in the :func:`packed_schema` layout (None if empty).

    The windows go out as one row of arrays: Spark's pandas-to-Arrow conversion and
    ``applyInPandasWithState``'s per-row padding then cost per key, not per window.
    O(windows + rejects).
    """
    n = len(cols["end"])
    m = len(rejects)
    if n == 0 and m == 0:
        return None
    if m == 0:
        return _one_row(keys, key_values, aggs, cols, n)
    lead = 1 if n else 0
    columns: list[Any] = [[kv] * lead + [None] * m for kv in key_values]  # in _packed_names order
    starts = window_bound(cols["start"]).tolist()  # years 0001-9999
    ends = window_bound(cols["end"]).tolist()
    columns += [[starts] * lead + [None] * m, [ends] * lead + [None] * m]
    columns += [([_array_values(a, cols[a.alias])] if lead else []) + [None] * m for a in aggs]
    rev = cols.get("revision")
    revs = np.zeros(n, np.int64) if rev is None else np.asarray(rev, dtype=np.int64)
    columns.append([revs.tolist()] * lead + [None] * m)
    reason, event_time, row = REJECT_COLUMNS
    columns.append([None] * lead + rejects[reason].tolist())
    ev = np.full(lead + m, np.datetime64("NaT", "us"))
    if m:
        ev[lead:] = rejects[event_time].dt.tz_convert("UTC").dt.tz_localize(None).to_numpy()
    columns.append(pd.Series(ev).dt.tz_localize("UTC"))
    columns.append([None] * lead + rejects[row].tolist())
    names = _packed_names(tuple(keys), tuple(a.alias for a in aggs))
    return pd.DataFrame(dict(zip(names, columns, strict=True)))


def _one_row(
    keys: Sequence[str],
    key_values: Sequence[Any],
    aggs: Sequence[Agg],
    cols: dict[str, list[Any] | np.ndarray],
    n: int,
) -> pd.DataFrame:
    """:func:`pack` without rejects: the key's windows as one row of one object block.

    A frame from one 2-D object array is one pandas block, built ~4x faster than the
    column-per-dtype dict (~0.35 vs ~1.6 ms per key; measured in-process, 2026-11-26);
    PySpark converts each column to its Arrow type from the objects (the null
    ``event_time`` included). O(windows).
    """
    cells: list[Any] = list(key_values)
    cells.append(window_bound(cols["start"]).tolist())  # years 0001-9999
    cells.append(window_bound(cols["end"]).tolist())
    cells += [_array_values(a, cols[a.alias]) for a in aggs]
    rev = cols.get("revision")
    cells.append([0] * n if rev is None else np.asarray(rev, dtype=np.int64).tolist())
    cells += [None, None, None]  # reason, event_time, row: set on reject rows only
    row = np.empty((1, len(cells)), dtype=object)
    for i, c in enumerate(cells):  # one by one: numpy would broadcast the lists
        row[0, i] = c
    names = _packed_names(tuple(keys), tuple(a.alias for a in aggs))
    if any(isinstance(v, _DATETIME_LIKE) for v in key_values):  # pandas infers its dtype
        return pd.DataFrame(row, columns=names, copy=False)
    # No cell pandas would infer as datetimes: keep the block as it is, with a ready Index
    # (~15 instead of ~90 us per key, measured in-process, 2026-11-27)
    return pd.DataFrame(row, columns=names, dtype=object, copy=False)


_DATETIME_LIKE = (dt.date, dt.timedelta, np.datetime64, np.timedelta64)
