"""Batch sliding windows on Spark: per key, windowagg's aggregators over pandas batches.

=================  ==========================================================================
Spark operator     ``groupBy(keys).applyInArrow(f, schema)`` (one shuffle by key; Arrow in
                   and out: the output is built from numpy, cheaper than a pandas frame)
per key           :func:`windowagg.spark.frames.window_frame`: the vectorised pane path
                   (:mod:`windowagg.spark.panes`) for sum/count/max/min/mean with a slide,
                   else ``windowagg.windows`` over a ``Composite`` monoid (any monoid,
                   q-digest quantiles, per-event and count windows)
cost               O(n log n) per key + O(panes) (vectorised) — independent of size/slide,
                   unlike ``F.window`` whose ``Expand`` copies each row size/slide times
driver             plans only; no data is collected, no driver-local file is read
=================  ==========================================================================

Examples
--------
>>> from windowagg.spark import window_agg            # doctest: +SKIP
>>> out = window_agg(df, "key", "event_time", ["max(value)", "p99(value)", "count"],
...                  size="10 minutes", slide="10 seconds")           # doctest: +SKIP
>>> out.results.show(); out.rejects.show()            # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

from windowagg.spark._deps import require_pyspark
from windowagg.spark.spec import Agg, WindowSpec, parse_aggs, to_micros

require_pyspark("windowagg.spark")

import pandas as pd  # noqa: E402
import pyarrow as pa  # noqa: E402
from pyspark.sql import Column, DataFrame  # noqa: E402
from pyspark.sql import functions as F  # noqa: E402
from pyspark.sql import types as T  # noqa: E402
from pyspark.sql.pandas.types import to_arrow_schema  # noqa: E402

from windowagg.spark import frames  # noqa: E402
from windowagg.spark.rejects import _empty_rejects, null_flag  # noqa: E402

__all__ = [
    "WindowAgg",
    "clean_groups",
    "make_spec",
    "output_schema",
    "prepare",
    "split",
    "window_agg",
]


class WindowAgg(NamedTuple):
    """The three views of one windowed aggregation.

    ``output`` holds every row (``kind`` = ``"window"`` or ``"reject"``); ``results`` and
    ``rejects`` are filters of it. Persist ``output`` if you consume both views, or write
    ``output`` once (it is one job) and split when reading.
    """

    output: DataFrame
    results: DataFrame
    rejects: DataFrame


def make_spec(
    size: Any = None,
    slide: Any = None,
    rows: int | None = None,
    every: int = 1,
    start_time: Any = 0,
    max_out_of_orderness: Any = 0,
    allowed_lateness: Any = 0,
) -> WindowSpec:
    """A :class:`WindowSpec` from durations given as text, seconds or timedeltas. O(1)."""
    return WindowSpec(
        size=None if size is None else to_micros(size),
        slide=None if slide is None else to_micros(slide),
        rows=rows,
        every=every,
        start_time=to_micros(start_time),
        max_out_of_orderness=to_micros(max_out_of_orderness),
        allowed_lateness=to_micros(allowed_lateness),
    )


_DDL = {
    "double": T.DoubleType(),
    "bigint": T.LongType(),
    "long": T.LongType(),
    "int": T.IntegerType(),
    "string": T.StringType(),
    "boolean": T.BooleanType(),
    "timestamp": T.TimestampType(),
}


def _type(ddl: str) -> T.DataType:
    if ddl in _DDL:
        return _DDL[ddl]
    parsed: T.DataType = T._parse_datatype_string(ddl)
    return parsed


def output_schema(key_fields: Sequence[T.StructField], aggs: Sequence[Agg]) -> T.StructType:
    """Schema of the combined output: ``kind``, keys, window bounds, aggregations, reject info."""
    fields = [T.StructField("kind", T.StringType(), False)]
    fields += [T.StructField(f.name, f.dataType, True) for f in key_fields]
    fields += [
        T.StructField("window_start", T.TimestampType(), True),
        T.StructField("window_end", T.TimestampType(), True),
    ]
    fields += [T.StructField(a.alias, _type(a.dtype), True) for a in aggs]
    fields += [
        T.StructField("reason", T.StringType(), True),
        T.StructField("event_time", T.TimestampType(), True),
        T.StructField("row", T.StringType(), True),
    ]
    return T.StructType(fields)


def prepare(
    df: DataFrame,
    keys: Sequence[str],
    time: str,
    aggs: Sequence[Agg],
    *,
    row_columns: Sequence[str] | str | None = None,
) -> DataFrame:
    """Select and cast what the pandas function needs (Spark-side, no data movement).

    Timestamps without time zone become ``timestamp`` (session time zone), numeric value
    columns become ``double``; text stays text and is validated row by row in pandas.
    ``row_columns`` (``"*"`` or names) adds the original row as JSON for the rejects.
    """
    fields = {f.name: f.dataType for f in df.schema.fields}
    for c in [*keys, time, *frames.value_columns(aggs)]:
        if c not in fields:
            raise ValueError(f"column {c!r} is not in the DataFrame (columns: {list(fields)})")
    cols: list[Column] = [F.col(k) for k in keys]
    tt = fields[time]
    if isinstance(tt, T.TimestampNTZType | T.DateType):
        cols.append(F.col(time).cast("timestamp").alias(time))
    else:
        cols.append(F.col(time))
    for c in frames.value_columns(aggs):
        if c in keys or c == time:
            continue
        if isinstance(fields[c], T.NumericType | T.BooleanType):
            cols.append(F.col(c).cast("double").alias(c))
            # pandas sees a null double as NaN: the flag keeps "null" apart from NaN
            cols.append(F.col(c).isNull().alias(null_flag(c)))
        else:
            cols.append(F.col(c).cast("string").alias(c))
    if frames.CORRUPT_COLUMN in fields:
        cols.append(F.col(frames.CORRUPT_COLUMN))
    if row_columns:
        names = list(fields) if row_columns == "*" else list(row_columns)
        names = [n for n in names if n != frames.ROW_COLUMN]
        cols.append(
            F.to_json(F.struct(*[F.col(n) for n in names]), _ROW_JSON).alias(frames.ROW_COLUMN)
        )
    return df.select(*cols)


#: ``to_json`` options of the rejects' ``row``: timestamps in UTC with their full
#: (microsecond) precision, as ISO 8601 (Spark's default keeps milliseconds only).
_ROW_JSON = {
    "timestampFormat": "yyyy-MM-dd'T'HH:mm:ss.SSSSSSXXX",
    "timestampNTZFormat": "yyyy-MM-dd'T'HH:mm:ss.SSSSSS",
    "timeZone": "UTC",
    "ignoreNullFields": "false",
}


def _micros(s: pd.Series) -> Any:
    import numpy as np

    if s.dt.tz is not None:
        s = s.dt.tz_convert("UTC").dt.tz_localize(None)
    return s.astype("datetime64[us]").to_numpy().view(np.int64)


def arrow_output(
    groups: Sequence[tuple[tuple[Any, ...], dict[str, Any]]],
    rejects: pd.DataFrame,
    keys: Sequence[str],
    aggs: Sequence[Agg],
    schema: pa.Schema,
) -> pa.Table:
    """The combined output as an Arrow table of *schema* (the :func:`output_schema` in Arrow).

    *groups* is :func:`windowagg.spark.frames.window_groups` output. Built column by column
    from numpy (times stay int64 microseconds, null columns are ``pa.nulls``, the ``kind``
    strings a ``take`` of two values), which is several times cheaper for Spark to ingest
    than a pandas frame with object columns. O(rows).
    """
    import numpy as np

    sizes = [len(cols["end"]) for _, cols in groups]
    n, m = sum(sizes), len(rejects)
    by_name = {f.name: f.type for f in schema}
    ts = pa.timestamp("us", tz="UTC")

    def stack(first: pa.Array, second: pa.Array) -> pa.Array:
        return pa.concat_arrays([first, second]) if m and n else (first if n else second)

    def cat(name: str) -> Any:
        parts = [np.asarray(cols[name]) for _, cols in groups]
        return np.concatenate(parts) if parts else np.empty(0)

    arrays: dict[str, pa.Array] = {}
    if "kind" in by_name:
        kinds = np.concatenate([np.zeros(n, dtype=np.int32), np.ones(m, dtype=np.int32)])
        arrays["kind"] = pa.array(["window", "reject"]).take(pa.array(kinds))
    for j, k in enumerate(keys):
        values = [kv[j] for kv, _ in groups]
        typ = by_name[k]
        col = pa.array(values, type=typ).take(
            pa.array(np.repeat(np.arange(len(groups), dtype=np.int32), sizes))
        )
        arrays[k] = stack(col, pa.nulls(m, typ))
    for c, src in (("window_start", "start"), ("window_end", "end")):
        col = pa.array(cat(src).astype(np.int64), type=pa.int64()).cast(ts)
        arrays[c] = stack(col, pa.nulls(m, ts))
    for a in aggs:
        typ = by_name[a.alias]
        if typ in (pa.float64(), pa.int64()):
            vals = cat(a.alias)
            if vals.dtype == object:
                vals = np.array([np.nan if v is None else v for v in vals], dtype=np.float64)
            col = pa.array(vals.astype(typ.to_pandas_dtype()), type=typ, from_pandas=True)
        else:
            py = [v for _, cols in groups for v in cols[a.alias]]
            col = pa.array(
                [None if v is None else (list(v) if isinstance(v, tuple) else v) for v in py],
                type=typ,
            )
        arrays[a.alias] = stack(col, pa.nulls(m, typ))
    arrays["reason"] = stack(
        pa.nulls(n, pa.string()), pa.array(rejects["reason"].tolist(), type=pa.string())
    )
    ev = rejects["event_time"]
    ev_us = pa.array(
        _micros(ev.fillna(pd.Timestamp(0, tz="UTC"))) if m else np.empty(0, np.int64),
        type=pa.int64(),
        mask=ev.isna().to_numpy() if m else None,
    )
    arrays["event_time"] = stack(pa.nulls(n, ts), ev_us.cast(ts))
    arrays["row"] = stack(pa.nulls(n, pa.string()), pa.array(rejects["row"].tolist(), pa.string()))
    return pa.Table.from_arrays([arrays[f.name] for f in schema], schema=schema)


def clean_groups(
    table: pa.Table,
    keys: Sequence[str],
    time: str,
    aggs: Sequence[Agg],
    spec: WindowSpec,
    *,
    vectorized: bool = True,
) -> tuple[list[tuple[tuple[Any, ...], dict[str, Any]]], pd.DataFrame] | None:
    """:func:`windowagg.spark.frames.window_groups` straight from Arrow, for clean input.

    Applies when *table* holds one key (as ``applyInArrow`` hands them over), a timestamp
    event time and finite float64 values without nulls, and no corrupt records, and no
    monoid refuses a value: then nothing is a reject, and the pandas conversion and row
    validation are skipped. Returns None otherwise (the caller takes the pandas path,
    which finds the rejects).
    O(n) checks, then :func:`~windowagg.spark.frames.window_key`.
    """
    import numpy as np
    import pyarrow.compute as pc

    n = table.num_rows
    if n == 0 or frames.CORRUPT_COLUMN in table.column_names:
        return None
    tcol = table.column(time)
    if not pa.types.is_timestamp(tcol.type) or tcol.type.unit != "us" or tcol.null_count:
        return None
    kvals: list[Any] = []
    for k in keys:
        col = table.column(k)
        if col.null_count or pa.types.is_floating(col.type):
            return None
        first = col[0]
        if not pc.all(pc.equal(col, first)).as_py():
            return None
        kvals.append(first.as_py())
    values: dict[str, np.ndarray] = {}
    for c in frames.value_columns(aggs):
        col = table.column(c)
        if col.type != pa.float64() or col.null_count or not pc.all(pc.is_finite(col)).as_py():
            return None
        values[c] = col.to_numpy()
    micros = tcol.cast(pa.int64()).to_numpy()  # microseconds since the epoch, UTC
    refused: list[tuple[int, str]] = []
    cols = frames.window_key(micros, values, aggs, spec, vectorized=vectorized, refused=refused)
    if refused:  # a user monoid refused values: the pandas path makes their reject rows
        return None
    return [(tuple(kvals), cols)], _empty_rejects()


def split(output: DataFrame) -> tuple[DataFrame, DataFrame]:
    """``(results, rejects)`` views of a combined output (batch or streaming)."""
    results = output.where(F.col("kind") == "window").drop("kind", "reason", "event_time", "row")
    rejects = output.where(F.col("kind") == "reject").select("reason", "event_time", "row")
    return results, rejects


def window_agg(
    df: DataFrame,
    keys: str | Sequence[str],
    time: str,
    aggs: Sequence[str | Agg | tuple[Any, ...]],
    *,
    size: Any = None,
    slide: Any = None,
    rows: int | None = None,
    every: int = 1,
    start_time: Any = 0,
    time_unit: str = "s",
    row_columns: Sequence[str] | str | None = None,
    vectorized: bool = True,
) -> WindowAgg:
    """Sliding-window aggregation per key, computed by windowagg inside Spark (batch).

    Parameters
    ----------
    df
        Any DataFrame (not streaming; see :func:`windowagg.spark.stream_window_agg`).
    keys
        Grouping column(s); rows with a null key are rejected, not grouped.
    time
        Event-time column: timestamp, timestamp_ntz, date, ISO 8601 text, or numbers in
        ``time_unit`` since the epoch.
    aggs
        ``["max(v)", "mean(v)", "p99(v)", "count"]``, :class:`~windowagg.spark.spec.Agg`
        objects, or ``(alias, monoid, column[, ddl_type])`` tuples for user monoids.
    size, slide
        Window length and hop (``"10 minutes"``, seconds, or timedelta): windows
        ``[start, start + size)`` with ``start = start_time + k * slide``, as ``F.window``.
        ``slide=None`` gives one result per event over ``(t - size, t]``.
    rows, every
        Count windows instead: the last ``rows`` events in event-time order, one result
        every ``every`` events.
    row_columns
        ``"*"`` (or column names) to carry the original row into the rejects as JSON; by
        default the rejects show the columns the aggregation reads.
    vectorized
        Allow the vectorised pane path (results are the same; see ``docs/spark.md``).

    Returns
    -------
    WindowAgg
        ``output`` (everything, with ``kind``), ``results`` (keys, ``window_start``,
        ``window_end``, one column per aggregation) and ``rejects`` (``reason``,
        ``event_time``, ``row``).

    Complexity: one shuffle by key; per key O(n log n) + O(panes) (vectorised path) or
    O(n log n + windows · log n) combines (generic path).
    """
    key_list = [keys] if isinstance(keys, str) else list(keys)
    agg_list = parse_aggs(aggs)
    spec = make_spec(size, slide, rows, every, start_time)
    prepared = prepare(df, key_list, time, agg_list, row_columns=row_columns)
    key_fields = [f for f in prepared.schema.fields if f.name in key_list]
    key_fields.sort(key=lambda f: key_list.index(f.name))
    schema = output_schema(key_fields, agg_list)
    # the Python side sends everything but ``kind``; the JVM adds it from ``reason`` (a
    # constant string per row is cheaper to make in Spark than to ship through Arrow)
    inner = T.StructType([f for f in schema.fields if f.name != "kind"])
    arrow_schema = to_arrow_schema(inner, timezone="UTC")

    def per_key(table: pa.Table) -> pa.Table:
        fast = clean_groups(table, key_list, time, agg_list, spec, vectorized=vectorized)
        if fast is not None:
            groups, rejects = fast
        else:
            pdf = table.to_pandas()
            groups, rejects = frames.window_groups(
                pdf, key_list, time, agg_list, spec, time_unit=time_unit, vectorized=vectorized
            )
        return arrow_output(groups, rejects, key_list, agg_list, arrow_schema)

    raw = prepared.groupBy(*key_list).applyInArrow(per_key, schema=inner)
    kind = F.when(F.col("reason").isNull(), F.lit("window")).otherwise(F.lit("reject"))
    output = raw.select(kind.alias("kind"), *[F.col(f.name) for f in inner.fields])
    results, rejects = split(output)
    return WindowAgg(output, results, rejects)
