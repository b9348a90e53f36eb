"""Streaming sliding windows on Spark Structured Streaming, per key, with windowagg state.

=================  ==========================================================================
Spark operator     ``groupBy(keys).applyInPandasWithState(...)`` (default; any state store;
                   its Python input is column-wise, TWS's row by row: docs/spark.md) or
                   ``groupBy(keys).transformWithStateInPandas(WindowAggProcessor)`` (needs
                   the RocksDB state store provider and ``protobuf``)
per key state      one ``binary`` value: ``SlidingWindows.to_bytes()`` / ``CountWindows``
                   (the versioned ``windowagg.codec`` format; never pickle)
per micro-batch    validate rows (bad ones -> rejects), ``insert_many`` the good ones as one
                   burst (sorted + FiBA bulk insert), emit the windows the key's watermark
                   closed; O(m log m + m log d) + the emitted windows
lateness           per key: watermark = key's max event time - max_out_of_orderness; an
                   event older than watermark - allowed_lateness (or whose windows were all
                   emitted) is a reject with reason ``late: ...`` (never dropped silently);
                   judged per micro-batch, as Spark judges rows against its watermark
output             append mode; each window exactly once (state and output commit together
                   per micro-batch through Spark's checkpoint); Python returns one row of
                   arrays per key and micro-batch (``packed_schema``), the JVM explodes it
                   (``unpack``)
=================  ==========================================================================

By default Spark's own watermark is not used: no ``withWatermark`` is needed, and Spark
never drops a row before windowagg has seen it (Spark's stateful operators drop rows older
than the watermark silently). The cost: a key that stops receiving events keeps its last
open windows in state until its next event (as Spark's append mode keeps unclosed windows).
``event_time_timers=True`` removes that cost: Spark's global watermark, declared on a copy
of the time column that the stateful operator never sees (so Spark drops nothing), drives
one event-time timer per key that closes its windows and finally drops its state (see
:func:`stream_window_agg`).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from windowagg.spark._deps import require_pyspark

require_pyspark("windowagg.spark.streaming")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from pyspark.sql import DataFrame  # noqa: E402
from pyspark.sql import functions as F  # noqa: E402
from pyspark.sql import types as T  # noqa: E402
from pyspark.sql.streaming.state import GroupState, GroupStateTimeout  # noqa: E402
from pyspark.sql.streaming.stateful_processor import (  # noqa: E402
    StatefulProcessor,
    StatefulProcessorHandle,
)

from windowagg.spark import frames  # noqa: E402
from windowagg.spark.batch import _type, make_spec, prepare  # noqa: E402
from windowagg.spark.rejects import _empty_rejects  # noqa: E402
from windowagg.spark.spec import Agg, WindowSpec, parse_aggs  # noqa: E402

__all__ = [
    "STATE_SCHEMA",
    "WindowAggProcessor",
    "pack",
    "packed_schema",
    "stream_window_agg",
    "unpack",
]

#: The per-key state: the windows object's codec bytes.
STATE_SCHEMA = T.StructType([T.StructField("windows", T.BinaryType(), False)])


def _has_null_key(key: tuple[Any, ...]) -> bool:
    return any(k is None or (isinstance(k, float) and k != k) for k in key)


def packed_schema(key_fields: Sequence[T.StructField], aggs: Sequence[Agg]) -> T.StructType:
    """What the Python side of the streaming operator returns: one row per key and
    micro-batch holding all its windows as arrays, plus one row per reject.

    Fields: the keys; ``_ws``/``_we`` (``array<bigint>``: window start/end, microseconds
    since the epoch, UTC); one ``array<type>`` per aggregation alias; ``reason``,
    ``event_time``, ``row`` (set on reject rows only, whose arrays are null).
    :func:`unpack` turns it into the :func:`~windowagg.spark.batch.output_schema` rows.
    """
    fields = [T.StructField(f.name, f.dataType, True) for f in key_fields]
    fields += [
        T.StructField("_ws", T.ArrayType(T.LongType(), False), True),
        T.StructField("_we", T.ArrayType(T.LongType(), False), True),
    ]
    fields += [T.StructField(a.alias, T.ArrayType(_type(a.dtype), True), True) for a in aggs]
    fields += [
        T.StructField("reason", T.StringType(), True),
        T.StructField("event_time", T.TimestampType(), True),
        T.StructField("row", T.StringType(), True),
    ]
    return T.StructType(fields)


def _col(name: str) -> Any:
    return F.col("`" + name.replace("`", "``") + "`")


def unpack(packed: DataFrame, keys: Sequence[str], aggs: Sequence[Agg]) -> DataFrame:
    """The :func:`packed_schema` rows as :func:`~windowagg.spark.batch.output_schema` rows.

    One ``explode_outer(arrays_zip(...))`` in the JVM: a window row per array element,
    and each reject row once (its arrays are null). O(rows), no Python.
    """
    zipped = F.arrays_zip(_col("_ws"), _col("_we"), *[_col(a.alias) for a in aggs])
    rows = packed.select(
        *[_col(k) for k in keys],
        _col("reason"),
        _col("event_time"),
        _col("row"),
        F.explode_outer(zipped).alias("_z"),
    )
    is_window = F.col("reason").isNull()
    z = F.col("_z")
    return rows.select(
        F.when(is_window, F.lit("window")).otherwise(F.lit("reject")).alias("kind"),
        *[_col(k) for k in keys],
        F.timestamp_micros(z.getField("_ws")).alias("window_start"),
        F.timestamp_micros(z.getField("_we")).alias("window_end"),
        *[z.getField(a.alias).alias(a.alias) for a in aggs],
        _col("reason"),
        _col("event_time"),
        _col("row"),
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
    lead = 1 if n else 0
    data: dict[str, Any] = {}
    for k, kv in zip(keys, key_values, strict=True):
        data[k] = [kv] * lead + [None] * m
    starts = np.asarray(cols["start"], dtype=np.int64).tolist()
    ends = np.asarray(cols["end"], dtype=np.int64).tolist()
    data["_ws"] = [starts] * lead + [None] * m
    data["_we"] = [ends] * lead + [None] * m
    for a in aggs:
        data[a.alias] = [_array_values(a, cols[a.alias])] * lead + [None] * m
    data["reason"] = [None] * lead + rejects["reason"].tolist()
    ev = np.full(lead + m, np.datetime64("NaT", "us"))
    if m:
        ev[lead:] = rejects["event_time"].dt.tz_convert("UTC").dt.tz_localize(None).to_numpy()
    data["event_time"] = pd.Series(ev).dt.tz_localize("UTC")
    data["row"] = [None] * lead + rejects["row"].tolist()
    return pd.DataFrame(data)


def _one_burst(pdfs: Iterator[pd.DataFrame]) -> pd.DataFrame | None:
    """A key's rows of one micro-batch as one frame (None when there are none).

    One burst per key and micro-batch (Spark may hand a key's rows over in chunks):
    lateness is judged against the bound before the micro-batch, as documented.
    """
    chunks = [p for p in pdfs if len(p)]
    if not chunks:
        return None
    return chunks[0] if len(chunks) == 1 else pd.concat(chunks, ignore_index=True)


class _Step:
    """One key, one micro-batch: state bytes + rows -> packed output + new state bytes."""

    def __init__(
        self, keys: Sequence[str], time: str, aggs: Sequence[Agg], spec: WindowSpec, time_unit: str
    ) -> None:
        self.keys = list(keys)
        self.time = time
        self.aggs = list(aggs)
        self.spec = spec
        self.time_unit = time_unit

    def __call__(
        self, key: tuple[Any, ...], pdfs: Iterator[pd.DataFrame], state: bytes | None
    ) -> tuple[list[pd.DataFrame], bytes | None]:
        runner = (
            None
            if _has_null_key(key)
            else frames.KeyRunner(
                self.keys, self.time, self.aggs, self.spec, state, time_unit=self.time_unit
            )
        )
        out: list[pd.DataFrame] = []
        batch = _one_burst(pdfs)
        if batch is None:
            return out, (runner.to_bytes() if runner is not None else None)
        if runner is None:  # null key: every row is a reject, no state
            _, _, _, rejects = frames.validate(
                batch,
                self.keys,
                self.time,
                frames.value_columns(self.aggs),
                time_unit=self.time_unit,
            )
            cols = frames._results_to_columns(self.aggs, [])
            key_values: list[Any] = [None] * len(self.keys)
        else:
            cols, key_values, rejects = runner.feed_columns(batch)
        packed = pack(self.keys, key_values, self.aggs, cols, rejects)
        if packed is not None:
            out.append(packed)
        return out, (runner.to_bytes() if runner is not None else None)

    def timed(
        self, key: tuple[Any, ...], pdfs: Iterator[pd.DataFrame], state: bytes | None, wm: int
    ) -> tuple[list[pd.DataFrame], bytes | None, int | None]:
        """One key under Spark's global event-time watermark *wm* (us; <= 0: none yet).

        The key's watermark first moves up to *wm* (a key that lags or has gone quiet
        closes its windows), then the rows, if any, are fed as by ``__call__``. Returns
        the output frames, the new state (None: drop it) and the event-time timer to set
        (epoch ms; None: no timer). The state is dropped only when no stored event is live
        and the global watermark has reached the key's own: a fresh state started at the
        global watermark then judges every later event exactly as the old one would.
        """
        runner = frames.KeyRunner(
            self.keys, self.time, self.aggs, self.spec, state, time_unit=self.time_unit
        )
        out: list[pd.DataFrame] = []
        if wm > 0:
            closed = pack(self.keys, list(key), self.aggs, runner.advance(wm), _empty_rejects())
            if closed is not None:
                out.append(closed)
        batch = _one_burst(pdfs)
        if batch is not None:
            cols, key_values, rejects = runner.feed_columns(batch)
            packed = pack(self.keys, key_values, self.aggs, cols, rejects)
            if packed is not None:
                out.append(packed)
        deadline = runner.deadline()
        own = runner.watermark
        if deadline is None:
            if own is None or own <= wm:
                return out, None, None
            deadline = own  # wait until the global watermark has caught up with the key's
        return out, runner.to_bytes(), -(-deadline // 1000)


class WindowAggProcessor(StatefulProcessor):
    """A ``StatefulProcessor`` keeping one windowagg windows object per key.

    Use it through :func:`stream_window_agg`, or directly with
    ``unpack(groupBy(keys).transformWithStateInPandas(WindowAggProcessor(...),
    outputStructType=packed_schema(...), outputMode="Append", timeMode="None"), keys,
    aggs)``: it returns :func:`packed_schema` rows (one per key and micro-batch).
    """

    def __init__(
        self,
        keys: Sequence[str],
        time: str,
        aggs: Sequence[Agg],
        spec: WindowSpec,
        time_unit: str = "s",
        event_time_timers: bool = False,
        columns: Sequence[str] | None = None,
    ) -> None:
        self._step = _Step(keys, time, aggs, spec, time_unit)
        self._timers = event_time_timers
        self._columns = list(columns) if columns is not None else None
        self._state: Any = None
        self._handle: Any = None

    def init(self, handle: StatefulProcessorHandle) -> None:
        self._handle = handle
        self._state = handle.getValueState("windows", STATE_SCHEMA)

    def handleInputRows(
        self, key: tuple[Any, ...], rows: Iterator[pd.DataFrame], timerValues: Any
    ) -> Iterator[pd.DataFrame]:
        rows = self._named(rows)
        # one state-server round trip: ``get`` is None when the key has no state yet
        got = self._state.get()
        blob = bytes(got[0]) if got is not None else None
        if self._timers:
            wm = int(timerValues.getCurrentWatermarkInMs()) * 1000
            out, new_state, timer = self._step.timed(key, rows, blob, wm)
            # one timer per key: drop the old one first (a stale timer would fire too)
            for old in list(self._handle.listTimers()):
                self._handle.deleteTimer(old)
            self._store(new_state, timer)
        else:
            out, new_state = self._step(key, rows, blob)
            if new_state is not None:
                self._state.update((new_state,))
        yield from out

    def _named(self, rows: Iterator[pd.DataFrame]) -> Iterator[pd.DataFrame]:
        """The input chunks under their real column names.

        PySpark's TWS worker rebuilds each chunk from ``itertuples`` rows, whose namedtuples
        rename every field that is not a plain identifier or starts with ``_`` to its
        position (``_wa_row`` became ``_3``, and the rejects' ``row`` then nested the JSON
        under ``"_3"``); the columns keep their order, so the names are put back by
        position. O(1) per chunk.
        """
        cols = self._columns
        for pdf in rows:
            if cols is not None and len(pdf.columns) == len(cols):
                pdf.columns = cols
            yield pdf

    def _store(self, new_state: bytes | None, timer: int | None) -> None:
        if new_state is None:
            self._state.clear()
        else:
            self._state.update((new_state,))
        if timer is not None:
            self._handle.registerTimer(timer)

    def handleExpiredTimer(
        self, key: tuple[Any, ...], timerValues: Any, expiredTimerInfo: Any
    ) -> Iterator[pd.DataFrame]:
        # Spark's global watermark passed this key's deadline: close what it closes, even
        # if the key has had no rows since (the expired timer is already gone)
        got = self._state.get()
        if got is None:
            return
        wm = int(timerValues.getCurrentWatermarkInMs()) * 1000
        out, new_state, timer = self._step.timed(key, iter([]), bytes(got[0]), wm)
        self._store(new_state, timer)
        yield from out

    def close(self) -> None:
        pass


_WATERMARK_COLUMN = "__windowagg_watermark"


def _with_global_watermark(df: DataFrame, time: str, time_unit: str, delay_us: int) -> DataFrame:
    """*df* under Spark's event-time watermark, computed on a timestamp copy of *time*.

    The copy is dropped again right away: the watermark still advances (Spark tracks it
    where ``withWatermark`` stands) and reaches event-time timers, but no operator
    downstream has a watermarked column, so none filters rows as late. Unparsable times
    become null there and do not move the watermark (they are rejects downstream).
    """
    tt = df.schema[time].dataType
    col = F.col(time)
    if isinstance(tt, T.TimestampType):
        ts = col
    elif isinstance(tt, T.NumericType):
        unit = {"s": 1_000_000, "ms": 1_000, "us": 1}[time_unit]
        ts = F.timestamp_micros((col * F.lit(unit)).cast("long"))
    elif isinstance(tt, T.StringType):
        ts = F.to_timestamp(col)
    else:
        raise ValueError(f"event_time_timers: time column {time!r} of type {tt.simpleString()}")
    return (
        df.withColumn(_WATERMARK_COLUMN, ts)
        .withWatermark(_WATERMARK_COLUMN, f"{int(delay_us)} microseconds")
        .drop(_WATERMARK_COLUMN)
    )


def stream_window_agg(
    sdf: DataFrame,
    keys: str | Sequence[str],
    time: str,
    aggs: Sequence[str | Agg | tuple[Any, ...]],
    *,
    size: Any = None,
    slide: Any = None,
    rows: int | None = None,
    every: int = 1,
    start_time: Any = 0,
    max_out_of_orderness: Any = 0,
    allowed_lateness: Any = 0,
    time_unit: str = "s",
    row_columns: Sequence[str] | str | None = None,
    api: str | None = None,
    event_time_timers: bool = False,
) -> DataFrame:
    """Sliding-window aggregation per key over a streaming DataFrame (append mode).

    Parameters are those of :func:`windowagg.spark.window_agg`, plus the lateness settings
    (see the module docstring) and ``api``: ``"applyInPandasWithState"`` (the faster one
    on PySpark 4.3) or ``"transformWithStateInPandas"`` (needs
    ``spark.sql.streaming.stateStore.providerClass`` = RocksDB, which
    :func:`windowagg.spark.session` sets); ``None`` (default) picks
    ``"applyInPandasWithState"``, or ``"transformWithStateInPandas"`` when
    ``event_time_timers`` is set.

    ``event_time_timers=True`` (time windows, ``transformWithStateInPandas`` only) also
    follows Spark's *global* event-time watermark (the largest event time seen in any key
    minus ``max_out_of_orderness``) and keeps one event-time timer per key at the key's
    next deadline (the end of its oldest open window; per event, the time its last entry
    dies): a key that goes quiet still emits its windows and releases its state once the
    stream's event time has moved past them. A key's watermark is then the larger of its
    own and the global one, so an event of a lagging key older than the global watermark
    minus ``allowed_lateness`` is a reject (``late: ...``). The watermark is computed on a
    copy of the time column that the stateful operator never sees, so Spark itself drops
    no row: every late event reaches the rejects. Not with ``applyInPandasWithState``:
    its event-time timeouts need the watermarked column in its input, and Spark would
    then drop late rows silently before windowagg sees them.

    Returns
    -------
    DataFrame
        The streaming combined output (``kind`` = ``"window"`` / ``"reject"``, keys,
        ``window_start``, ``window_end``, aggregations, ``reason``, ``event_time``, ``row``);
        write it with ``outputMode("append")`` and a checkpoint location, and split it with
        :func:`windowagg.spark.split` (in ``foreachBatch`` or when reading the sink).

    Complexity: per key and micro-batch of m events, O(m log m + m log d) plus one range
    query per emitted window (FiBA), plus one state decode/encode (O(state)).
    """
    key_list = [keys] if isinstance(keys, str) else list(keys)
    agg_list = parse_aggs(aggs)
    spec = make_spec(size, slide, rows, every, start_time, max_out_of_orderness, allowed_lateness)
    if api is None:
        api = "transformWithStateInPandas" if event_time_timers else "applyInPandasWithState"
    if event_time_timers and api != "transformWithStateInPandas":
        raise ValueError(
            "event_time_timers needs api='transformWithStateInPandas': applyInPandasWithState's "
            "event-time timeouts need the watermarked column in the operator's input, where "
            "Spark drops late rows silently before windowagg can route them to the rejects"
        )
    if event_time_timers and spec.rows is not None:
        raise ValueError(
            "event_time_timers applies to time windows (size/slide); count windows (rows=) "
            "close by event counts, not by event time"
        )
    prepared = prepare(sdf, key_list, time, agg_list, row_columns=row_columns)
    if event_time_timers:
        prepared = _with_global_watermark(prepared, time, time_unit, spec.max_out_of_orderness)
    key_fields = [f for f in prepared.schema.fields if f.name in key_list]
    key_fields.sort(key=lambda f: key_list.index(f.name))
    schema = packed_schema(key_fields, agg_list)
    # Rows with a null key never reach the stateful operator: they are rejects, produced by
    # a stateless mapInPandas and unioned into the same output. (Besides, a null key in an
    # Arrow batch turns integer keys into floats on the Python side, and
    # transformWithStateInPandas then reads and writes the state under the float key: the
    # state of that key would be lost. Tested in tests/spark/test_spark_streaming.py.)
    any_null = F.lit(False)
    for k in key_list:
        any_null = any_null | F.col(k).isNull()
    keyed = prepared.where(~any_null)
    null_keyed = prepared.where(any_null)
    step = _Step(key_list, time, agg_list, spec, time_unit)

    def null_key_rejects(pdfs: Iterator[pd.DataFrame]) -> Iterator[pd.DataFrame]:
        for pdf in pdfs:
            out, _ = step(tuple([None] * len(key_list)), iter([pdf]), None)
            yield from out

    rejects = null_keyed.mapInPandas(null_key_rejects, schema=schema)
    grouped = keyed.groupBy(*key_list)
    if api == "transformWithStateInPandas":
        stateful = grouped.transformWithStateInPandas(
            statefulProcessor=WindowAggProcessor(
                key_list,
                time,
                agg_list,
                spec,
                time_unit,
                event_time_timers=event_time_timers,
                columns=keyed.columns,
            ),
            outputStructType=schema,
            outputMode="Append",
            timeMode="EventTime" if event_time_timers else "None",
        )
    elif api == "applyInPandasWithState":

        def fn(
            key: tuple[Any, ...], pdfs: Iterator[pd.DataFrame], state: GroupState
        ) -> Iterator[pd.DataFrame]:
            blob = bytes(state.get[0]) if state.exists else None
            out, new_state = step(key, pdfs, blob)
            if new_state is not None:
                state.update((new_state,))
            yield from out

        stateful = grouped.applyInPandasWithState(
            fn,
            outputStructType=schema,
            stateStructType=STATE_SCHEMA,
            outputMode="append",
            timeoutConf=GroupStateTimeout.NoTimeout,
        )
    else:
        raise ValueError(
            f"api must be 'transformWithStateInPandas' or 'applyInPandasWithState', got {api!r}"
        )
    return unpack(stateful.unionByName(rejects), key_list, agg_list)
