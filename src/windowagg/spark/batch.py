"""Batch sliding windows on Spark: per partition, the windows engine over its keys' rows.

=================  ==========================================================================
Spark operator     ``repartition(keys).mapInArrow(f, schema)``: one hash shuffle by key, no
                   sort and no grouping by Spark (``groupBy(keys).applyInArrow`` sorts the
                   shuffled rows and calls Python per key: 0.45-0.6 s more on 1M rows, and
                   dominant with many small keys); Arrow in and out, the output built from
                   numpy, cheaper than a pandas frame. A partition with any row validation
                   would reject (a null key, say) takes the pandas path as a whole
per partition      its rows (every row of its keys) in row-id order, grouped by key
                   (:func:`windowagg.pandas.group_rows`), then, as ``windowagg.pandas.
                   window_agg`` in-process: validation (rejects) and
                   :func:`windowagg.windows.engine.window_groups` (admission, window
                   assignment, the aggregators, emission) over all its keys in one pass,
                   for every window shape
row identity       each input row gets an id before the shuffle (``row_index``: Spark's
                   ``monotonically_increasing_id()``, or a column you name); a key's rows
                   are processed in id order (= input order) and a rejected row is
                   reported with its id, never matched again by value
cost               one shuffle; per partition O(n log n) + O(n + windows) aggregator
                   operations (+ O(log w) per event and window for exact quantiles),
                   independent of size/slide, unlike ``F.window`` whose ``Expand`` copies
                   each row size/slide times
memory             a Python worker holds one partition's rows at a time (with
                   ``applyInArrow``: one key's); more partitions
                   (``spark.sql.shuffle.partitions``) make them smaller
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

from collections.abc import Iterator, Sequence
from typing import Any, NamedTuple

from windowagg.aggs import Agg
from windowagg.call import SPARK_COLUMNS, WindowCall, check_names, parse_call
from windowagg.errors import ArgumentError
from windowagg.spark._deps import require_pyspark

require_pyspark("windowagg.spark")

import numpy as np  # noqa: E402
import pyarrow as pa  # noqa: E402
import pyarrow.compute as pc  # noqa: E402
from pyspark.sql import Column, DataFrame  # noqa: E402
from pyspark.sql import functions as F  # noqa: E402
from pyspark.sql import types as T  # noqa: E402
from pyspark.sql.pandas.types import to_arrow_schema  # noqa: E402

from windowagg.pandas import (  # noqa: E402
    FrameWindows,
    Groups,
    frame_windows,
    group_rows,
    grouped_windows,
)
from windowagg.rejects import (  # noqa: E402
    CORRUPT_COLUMN,
    ROW_COLUMN,
    _rows_json,
    null_flag,
    value_columns,
    window_bound,
)

__all__ = [
    "ID_COLUMN",
    "WindowAgg",
    "add_null_flags",
    "arrow_output",
    "clean_arrays",
    "output_schema",
    "prepare",
    "run_call",
    "split",
    "window_agg",
    "worker_schema",
]

#: Column carrying each input row's identity (``row_index`` of the rejects) to the workers.
ID_COLUMN = "_wa_id"


class WindowAgg(NamedTuple):
    """The three views of one windowed aggregation.

    ``output`` holds every row (``kind`` = ``"window"`` or ``"reject"``); ``results`` and
    ``rejects`` are filters of it. Persist ``output`` if you consume both views, or write
    ``output`` once (it is one job) and split when reading.
    """

    output: DataFrame
    results: DataFrame
    rejects: DataFrame


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


def output_schema(
    key_fields: Sequence[T.StructField], aggs: Sequence[Agg], *, row_index: bool = False
) -> T.StructType:
    """Schema of the combined output: ``kind``, keys, window bounds, aggregations, reject info
    (``reason``, ``event_time``, ``row``, and ``row_index`` when *row_index*)."""
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
    if row_index:
        fields.append(T.StructField("row_index", T.LongType(), True))
    return T.StructType(fields)


def worker_schema(
    prepared: DataFrame, keys: Sequence[str], aggs: Sequence[Agg]
) -> tuple[T.StructType, pa.Schema]:
    """The schema of what :func:`window_agg`'s Python side returns for *prepared* (a frame
    :func:`prepare` made), as Spark and as Arrow: :func:`output_schema` (with ``row_index``)
    without ``kind``, which the JVM adds from ``reason`` (a constant string per row is
    cheaper to make in Spark than to ship through Arrow). O(columns)."""
    key_fields = [f for f in prepared.schema.fields if f.name in keys]
    key_fields.sort(key=lambda f: list(keys).index(f.name))
    schema = output_schema(key_fields, aggs, row_index=True)
    inner = T.StructType([f for f in schema.fields if f.name != "kind"])
    return inner, to_arrow_schema(inner, timezone="UTC")


def prepare(
    df: DataFrame,
    keys: Sequence[str],
    time: str,
    aggs: Sequence[Agg],
    *,
    row_columns: Sequence[str] | str | None = None,
    row_index: str | bool | None = None,
    null_flags: bool = True,
) -> DataFrame:
    """Select and cast what the per-key function needs (Spark-side, no data movement).

    Timestamps without time zone become ``timestamp`` (session time zone), numeric value
    columns become ``double``; text stays text and is validated row by row in pandas.
    ``null_flags`` adds a boolean column per numeric value column marking its nulls
    (:func:`~windowagg.rejects.null_flag`), for operators that hand pandas frames to
    Python (a null double arrives as NaN); an Arrow operator reads the nulls from the
    column's validity instead (:func:`add_null_flags`): every column shipped to Python
    costs ~0.3-0.4 s of CPU per million rows on local[2] (docs/performance/spark.md).
    ``row_columns`` (``"*"`` or names) adds the original row as JSON for the rejects.
    ``row_index`` adds :data:`ID_COLUMN`, each row's identity: ``True`` for Spark's
    ``monotonically_increasing_id()`` (increasing in input order), a column name for that
    column as ``bigint``.
    """
    fields = {f.name: f.dataType for f in df.schema.fields}
    named = [row_index] if isinstance(row_index, str) else []
    for c in [*keys, time, *value_columns(aggs), *named]:
        if c not in fields:
            raise ArgumentError(f"column {c!r} is not in the DataFrame (columns: {list(fields)})")
    cols: list[Column] = [F.col(k) for k in keys]
    tt = fields[time]
    if isinstance(tt, T.TimestampNTZType | T.DateType):
        cols.append(F.col(time).cast("timestamp").alias(time))
    else:
        cols.append(F.col(time))
    for c in value_columns(aggs):
        if c in keys or c == time:
            continue
        if isinstance(fields[c], T.NumericType | T.BooleanType):
            cols.append(F.col(c).cast("double").alias(c))
            if null_flags:  # pandas sees a null double as NaN: the flag keeps "null" apart
                cols.append(F.col(c).isNull().alias(null_flag(c)))
        else:
            cols.append(F.col(c).cast("string").alias(c))
    if CORRUPT_COLUMN in fields:
        cols.append(F.col(CORRUPT_COLUMN))
    if row_columns:
        names = list(fields) if row_columns == "*" else list(row_columns)
        names = [n for n in names if n != ROW_COLUMN]
        cols.append(F.to_json(F.struct(*[F.col(n) for n in names]), _ROW_JSON).alias(ROW_COLUMN))
    if row_index is True:
        cols.append(F.monotonically_increasing_id().alias(ID_COLUMN))
    elif isinstance(row_index, str):
        cols.append(F.col(row_index).cast("long").alias(ID_COLUMN))
    return df.select(*cols)


#: ``to_json`` options of the rejects' ``row``: timestamps in UTC with their full
#: (microsecond) precision, as ISO 8601 (Spark's default keeps milliseconds only).
_ROW_JSON = {
    "timestampFormat": "yyyy-MM-dd'T'HH:mm:ss.SSSSSSXXX",
    "timestampNTZFormat": "yyyy-MM-dd'T'HH:mm:ss.SSSSSS",
    "timeZone": "UTC",
    "ignoreNullFields": "false",
}


def arrow_output(
    fw: FrameWindows,
    rows: Sequence[str],
    ids: np.ndarray | None,
    keys: Sequence[str],
    aggs: Sequence[Agg],
    schema: pa.Schema,
) -> pa.Table:
    """The combined output of :func:`~windowagg.pandas.frame_windows` as Arrow.

    *rows* are the rejected rows' JSON and *ids* their identities (``row_index``; None when
    *schema* has no such column), both aligned with ``fw.rejected``. Built column by column
    from numpy (times stay int64 microseconds, null columns are ``pa.nulls``, the ``kind``
    strings a ``take`` of two values), several times cheaper for Spark to ingest than a
    pandas frame with object columns. O(rows).
    """
    sizes = fw.sizes
    n, m = int(sizes.sum()), len(fw.rejected)
    by_name = {f.name: f.type for f in schema}
    ts = pa.timestamp("us", tz="UTC")

    def stack(first: pa.Array, second: pa.Array) -> pa.Array:
        return pa.concat_arrays([first, second]) if m and n else (first if n else second)

    arrays: dict[str, pa.Array] = {}
    if "kind" in by_name:
        kinds = np.concatenate([np.zeros(n, dtype=np.int32), np.ones(m, dtype=np.int32)])
        arrays["kind"] = pa.array(["window", "reject"]).take(pa.array(kinds))
    for j, k in enumerate(keys):
        typ = by_name[k]
        col = pa.array([kv[j] for kv in fw.keys], type=typ).take(
            pa.array(np.repeat(np.arange(len(fw.keys), dtype=np.int32), sizes))
        )
        arrays[k] = stack(col, pa.nulls(m, typ))
    for c, src in (("window_start", "start"), ("window_end", "end")):
        col = pa.array(window_bound(fw.columns[src]), type=pa.int64()).cast(ts)
        arrays[c] = stack(col, pa.nulls(m, ts))
    for a in aggs:
        typ = by_name[a.alias]
        if typ in (pa.float64(), pa.int64()):
            vals = np.asarray(fw.columns[a.alias])
            if vals.dtype == object:
                vals = np.array([np.nan if v is None else v for v in vals], dtype=np.float64)
            col = pa.array(vals.astype(typ.to_pandas_dtype()), type=typ, from_pandas=True)
        else:
            py = list(fw.columns[a.alias])
            col = pa.array(
                [None if v is None else (list(v) if isinstance(v, tuple) else v) for v in py],
                type=typ,
            )
        arrays[a.alias] = stack(col, pa.nulls(m, typ))
    arrays["reason"] = stack(pa.nulls(n, pa.string()), pa.array(fw.reasons, type=pa.string()))
    ev = pa.array(fw.event_time, type=pa.int64(), mask=fw.event_time_null).cast(ts)
    arrays["event_time"] = stack(pa.nulls(n, ts), ev)
    arrays["row"] = stack(pa.nulls(n, pa.string()), pa.array(list(rows), type=pa.string()))
    if "row_index" in by_name:
        assert ids is not None
        arrays["row_index"] = stack(pa.nulls(n, pa.int64()), pa.array(ids, type=pa.int64()))
    return pa.Table.from_arrays([arrays[f.name] for f in schema], schema=schema)


def clean_arrays(
    table: pa.Table, keys: Sequence[str], time: str, value_columns: Sequence[str]
) -> tuple[Groups, np.ndarray, dict[str, np.ndarray]] | None:
    """``(key groups, int64 us times, float64 values)`` of an Arrow batch (any number of
    keys) that :func:`~windowagg.rejects.validate` would pass whole, else None.
    O(n log n).

    Clean: keys without nulls (and not floats, whose NaN validation rejects), a non-null
    microsecond ``timestamp`` event time, finite ``double`` values without nulls, no corrupt
    records. Then the pandas conversion of the values and the row checks are skipped: the
    same engine call (:func:`windowagg.pandas.grouped_windows`) takes the Arrow buffers.
    The groups are :func:`windowagg.pandas.group_rows` of the key columns, as
    :func:`windowagg.pandas.frame_windows` forms them.
    """
    n = table.num_rows
    if n == 0 or CORRUPT_COLUMN in table.column_names:
        return None
    tcol = table.column(time)
    if not pa.types.is_timestamp(tcol.type) or tcol.type.unit != "us" or tcol.null_count:
        return None
    for k in keys:
        col = table.column(k)
        if col.null_count or pa.types.is_floating(col.type):
            return None
    values: dict[str, np.ndarray] = {}
    for c in value_columns:
        col = table.column(c)
        if col.type != pa.float64() or col.null_count or not pc.all(pc.is_finite(col)).as_py():
            return None
        values[c] = col.to_numpy()
    micros = tcol.cast(pa.int64()).to_numpy()  # microseconds since the epoch, UTC
    groups = group_rows(table.select(list(keys)).to_pandas(), keys, np.arange(n))
    return groups, micros, values


def add_null_flags(table: pa.Table, pdf: Any, value_columns: Sequence[str]) -> None:
    """Add to *pdf* (``table.to_pandas()``) the :func:`~windowagg.rejects.null_flag`
    column of every ``double`` value column of *table*, read from the Arrow validity (the
    pandas frame holds NaN for null and for NaN alike). O(n)."""
    for c in value_columns:
        col = table.column(c)
        if col.type == pa.float64() and null_flag(c) not in pdf.columns:
            pdf[null_flag(c)] = col.is_null().to_numpy(zero_copy_only=False)


def split(output: DataFrame) -> tuple[DataFrame, DataFrame]:
    """``(results, rejects)`` views of a combined output (batch or streaming).

    The rejects keep ``row_index`` when the output has it (batch).
    """
    info = ["reason", "event_time", "row"]
    if "row_index" in output.columns:
        info.append("row_index")
    results = output.where(F.col("kind") == "window").drop("kind", *info)
    rejects = output.where(F.col("kind") == "reject").select(*info)
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
    gap: Any = None,
    start_time: Any = 0,
    time_unit: str = "s",
    max_out_of_orderness: Any = None,
    allowed_lateness: Any = None,
    row_columns: Sequence[str] | str | None = None,
    row_index: str | None = None,
) -> WindowAgg:
    """Sliding-window aggregation per key, computed by windowagg inside Spark (batch).

    The call, semantics and output of :func:`windowagg.pandas.window_agg` (the same
    function runs on each partition's keys), as Spark DataFrames.

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
        ``["max(v)", "mean(v)", "p99(v)", "median(v)", "approx_p99(v)", "count"]``
        (``pNN`` / ``median`` exact by nearest rank, ``approx_pNN`` the q-digest; see
        :func:`windowagg.pandas.parse`), :class:`~windowagg.aggs.Agg` objects, or
        ``(alias, monoid, column[, ddl_type])`` tuples for user monoids.
    size, slide
        Window length and hop (``"10 minutes"``, seconds, or timedelta): windows
        ``[start, start + size)`` with ``start = start_time + k * slide``, as ``F.window``.
        ``slide=None`` gives one window ``(t - size, t]`` per event (every event at ``t``
        included). A list of sizes (``["5 minutes", "1 hour"]``) computes them all in
        one pass: one column per aggregation and size (``max_v_5m``, ``max_v_1h``), as
        :func:`windowagg.pandas.window_agg`.
    rows, every
        Count windows instead: the last ``rows`` events in (event time, input) order, one
        result every ``every`` events.
    gap
        Session windows instead: an event at most ``gap`` after the previous one joins its
        session; ``window_end`` = last event + ``gap``.
    max_out_of_orderness, allowed_lateness
        Judge rows late in input order (``row_index`` order) per key, as
        :func:`windowagg.pandas.window_agg` does (default: nothing is late).
    row_columns
        ``"*"`` (or column names) to carry the original row into the rejects as JSON; by
        default the rejects show the columns the aggregation reads.
    row_index
        An integer column identifying the rows (unique), reported as the rejects'
        ``row_index``; by default Spark's ``monotonically_increasing_id()``, which grows in
        input order. Each key's rows are processed in this order.

    Returns
    -------
    WindowAgg
        ``output`` (everything, with ``kind``), ``results`` (keys, ``window_start``,
        ``window_end``, one column per aggregation) and ``rejects`` (``reason``,
        ``event_time``, ``row``, ``row_index``).

    Complexity: one shuffle by key; per partition O(n log n) validation and sort, then
    :func:`windowagg.windows.engine.window_groups` (O(n + windows) aggregator operations).
    """
    call = parse_call(
        keys,
        time,
        aggs,
        size=size,
        slide=slide,
        rows=rows,
        every=every,
        gap=gap,
        start_time=start_time,
        time_unit=time_unit,
        max_out_of_orderness=max_out_of_orderness,
        allowed_lateness=allowed_lateness,
    )
    return run_call(df, call, row_columns=row_columns, row_index=row_index)


def run_call(
    df: DataFrame,
    call: WindowCall,
    *,
    row_columns: Sequence[str] | str | None = None,
    row_index: str | None = None,
) -> WindowAgg:
    """:func:`window_agg` for a call already read by :func:`windowagg.call.parse_call`
    (``windowagg run`` reads its options once and hands the engine the
    :class:`~windowagg.call.WindowCall`). Complexity: as :func:`window_agg`."""
    check_names(call, SPARK_COLUMNS)  # the combined output's names, ignoring case
    key_list, agg_list, shape, lateness = call.keys, call.aggs, call.shape, call.lateness
    time, time_unit = call.time, call.time_unit
    prepared = prepare(
        df,
        key_list,
        time,
        agg_list,
        row_columns=row_columns,
        row_index=row_index if row_index is not None else True,
        null_flags=False,  # read from the Arrow validity in windows_of: one column less
    )
    inner, arrow_schema = worker_schema(prepared, key_list, call.outputs)
    values = value_columns(agg_list)
    read = list(dict.fromkeys([*key_list, time, *values]))

    def windows_of(table: pa.Table) -> pa.Table:
        """The output rows of one partition's rows (every row of its keys)."""
        ids = table.column(ID_COLUMN).to_numpy()
        if len(ids) > 1 and bool(np.any(ids[1:] < ids[:-1])):  # input order: by identity
            table = table.take(pc.sort_indices(table.column(ID_COLUMN)))
            ids = table.column(ID_COLUMN).to_numpy()
        clean = clean_arrays(table, key_list, time, values)
        pdf = None
        if clean is not None:
            groups, micros, arrays = clean
            fw = grouped_windows(groups, micros, arrays, agg_list, shape, lateness=lateness)
        else:
            pdf = table.to_pandas()
            add_null_flags(table, pdf, values)
            fw = frame_windows(
                pdf, key_list, time, agg_list, shape, time_unit=time_unit, lateness=lateness
            )
        rows_json: list[str] = []
        if len(fw.rejected):  # (clean input: only values a monoid or lateness refused)
            pdf = table.to_pandas() if pdf is None else pdf
            mask = np.zeros(len(pdf), dtype=bool)
            mask[fw.rejected] = True
            rows_json = _rows_json(pdf if ROW_COLUMN in pdf.columns else pdf[read], mask)
        return arrow_output(fw, rows_json, ids[fw.rejected], key_list, call.outputs, arrow_schema)

    def per_partition(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        chunks = [b for b in batches if b.num_rows]
        if chunks:
            yield from windows_of(pa.Table.from_batches(chunks)).to_batches()

    # a hash shuffle by key (no sort, no grouping by Spark): each partition holds every row
    # of its keys, and windows_of groups them itself
    shuffled = prepared.repartition(*key_list) if key_list else prepared.coalesce(1)
    raw = shuffled.mapInArrow(per_partition, schema=inner)
    kind = F.when(F.col("reason").isNull(), F.lit("window")).otherwise(F.lit("reject"))
    output = raw.select(kind.alias("kind"), *[F.col(f.name) for f in inner.fields])
    results, rejects = split(output)
    return WindowAgg(output, results, rejects)
