"""Streaming sliding windows on Spark Structured Streaming, per key, with windowagg state.

=================  ==========================================================================
Spark operator     ``groupBy(keys).transformWithStateInPandas(WindowAggProcessor)`` (default
                   where the state store is RocksDB; needs ``protobuf``; ``EventTime``
                   mode, for the keys' timers or only the output's flush timer:
                   :mod:`.tws_outbox`) or ``groupBy(keys).applyInPandasWithState(...)``
                   (the fallback for any other state store; its whole state per key is
                   one value, rewritten every micro-batch)
engine             the batch engine's per-key streaming state,
                   :class:`windowagg.windows.engine.KeyStream`: admission with the key's
                   watermark clock, assignment, the aggregators, emission
per key state      TWS: one ``MapState`` (``bigint`` key -> ``binary``, :mod:`.tws_state`):
                   a head row (metadata: clock, emission, revisions; and pieces kept
                   inline) and *pieces*: for hopping windows of monoids one per node of a
                   tree of pane partials (``windows.engine.panes``), read one by one
                   (``getValue``) only where the micro-batch's events and emitted windows
                   need them; else one per chunk of events (the event log), all read in
                   one scan and, while small, kept inline in the head (one ``updateValue``
                   per micro-batch). A micro-batch writes only what it changed
                   (:class:`~windowagg.windows.engine.stream.Delta`).
                   APWS
                   (the fallback for stores without TWS): the metadata and every piece in
                   one ``binary`` value, rewritten each micro-batch. ``windowagg.codec``
                   bytes, never pickle
null keys          grouped under a typed default and a mask column (``NULL_KEYS_COLUMN``):
                   their groups are rejects (``null key <col>``), with no state
per micro-batch    validate rows (bad ones -> rejects), admit (late ones -> rejects, by
                   position), emit the windows the key's watermark closed (``revision`` 0)
                   and the emitted ones a late-but-accepted event changed (``revision`` + 1)
lateness           per key: watermark = key's max event time - max_out_of_orderness; an
                   event older than watermark - allowed_lateness is a reject with reason
                   ``late: ...`` (never dropped silently); judged per micro-batch against
                   the bound before it, as Spark judges rows against its watermark
output             append mode: each window at its first closing and again at each
                   revision (state and output commit together per micro-batch through
                   Spark's checkpoint); Python returns one row of arrays per key and
                   micro-batch (``packed_schema``), the JVM explodes it (``unpack``)
=================  ==========================================================================

By default Spark's own watermark is not followed (the TWS operator declares one on a null
column, which never moves, for its flush timer): no ``withWatermark`` is needed, and Spark
never drops a row before windowagg has seen it (Spark's stateful operators drop rows older
than the watermark silently). The cost: a key that stops receiving events keeps its last
open windows in state until its next event (as Spark's append mode keeps unclosed windows).
``event_time_timers=True`` removes that cost: Spark's global watermark, declared on a copy
of the time column that the stateful operator never sees (so Spark drops nothing), drives
one event-time timer per key that closes its windows and finally drops its state (see
:func:`stream_window_agg`).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from windowagg import codec
from windowagg.errors import CodecError
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

from windowagg.aggs import Agg  # noqa: E402
from windowagg.call import SPARK_COLUMNS, check_names, parse_call  # noqa: E402
from windowagg.errors import AggregationError, ArgumentError  # noqa: E402
from windowagg.rejects import (  # noqa: E402
    _all_good,
    _empty_rejects,
    _rows_json,
    _stored_columns,
    check_time_unit,
    iso_micros,
    readable_reason,
    utc_micros,
    validate,
)
from windowagg.spark.batch import prepare  # noqa: E402
from windowagg.spark.packed import pack, packed_schema, unpack  # noqa: E402
from windowagg.spark.tws_outbox import Outbox  # noqa: E402
from windowagg.spark.tws_state import KeyRows, MapStateView  # noqa: E402
from windowagg.windows.engine import KeyStream, Shape, plan  # noqa: E402
from windowagg.windows.engine.sizes import sized_aggs  # noqa: E402
from windowagg.windows.engine.state import aggregation_message  # noqa: E402
from windowagg.windows.engine.stream import Delta  # noqa: E402

__all__ = [
    "APWS_STATE_SCHEMA",
    "META_SCHEMA",
    "NULL_KEYS_COLUMN",
    "PIECE_KEY_SCHEMA",
    "PIECE_SCHEMA",
    "MapStateView",
    "WindowAggProcessor",
    "pack",
    "packed_schema",
    "stream_window_agg",
    "unpack",
]

#: transformWithStateInPandas, per key: the metadata record (codec bytes) of layout 1 (read
#: only; layout 2 keeps it in the MapState's head row, :mod:`windowagg.spark.tws_state`)
META_SCHEMA = T.StructType([T.StructField("meta", T.BinaryType(), False)])
#: ... and a MapState of pieces: the piece's key (a pane number or a chunk number) ...
PIECE_KEY_SCHEMA = T.StructType([T.StructField("piece", T.LongType(), False)])
#: ... to its codec bytes (a pane's partials, or a chunk of events)
PIECE_SCHEMA = T.StructType([T.StructField("bytes", T.BinaryType(), False)])
#: applyInPandasWithState keeps one state value per key: ``codec.dumps((meta, {key: piece}))``
#: (PySpark 4.3 cannot store an ``array<binary>`` state field: ``KeyError: 'elementType'``)
APWS_STATE_SCHEMA = T.StructType([T.StructField("state", T.BinaryType(), False)])


#: The grouping column :func:`stream_window_agg` adds beside the keys: bit *i* set when
#: key *i* is null (the key column then holds a typed default, :func:`_without_null_keys`).
#: Its ``_wa_`` prefix keeps it out of the rejects' ``row``.
NULL_KEYS_COLUMN = "_wa_null_keys"


def _null_mask(key: tuple[Any, ...]) -> int:
    """Bit *i* set when ``key[i]`` is null (None or NaN, as pandas hands a null over)."""
    return sum(1 << i for i, k in enumerate(key) if k is None or (isinstance(k, float) and k != k))


def _one_burst(pdfs: Iterator[pd.DataFrame]) -> pd.DataFrame | None:
    """A key's rows of one micro-batch as one frame (None when there are none).

    One burst per key and micro-batch (Spark may hand a key's rows over in chunks, in no
    defined order): every row is judged late or not against the key's bound before the
    micro-batch, as Spark judges rows against the previous micro-batch's watermark.
    """
    chunks = [p for p in pdfs if len(p)]
    if not chunks:
        return None
    return chunks[0] if len(chunks) == 1 else pd.concat(chunks, ignore_index=True)


def _refused_rows(
    pdf: pd.DataFrame,
    micros: np.ndarray,
    fed: np.ndarray,
    rows: np.ndarray,
    reasons: Sequence[str],
) -> pd.DataFrame:
    """Reject rows for the events at positions *fed* of those fed (times *micros*), the
    rows of *pdf* at positions *rows* (identity, not value). O(len)."""
    order = np.argsort(rows, kind="stable")
    rows, why, fed = rows[order], [reasons[i] for i in order.tolist()], fed[order]
    mask = np.zeros(len(pdf), dtype=bool)
    mask[rows] = True
    by_pos = dict(zip(np.flatnonzero(mask).tolist(), _rows_json(pdf, mask), strict=True))
    return pd.DataFrame(
        {
            "reason": [readable_reason(r) for r in why],
            "event_time": utc_micros(micros[fed]),
            "row": [by_pos[int(r)] for r in rows.tolist()],
        }
    )


class _Step:
    """One key, one micro-batch: stored state + rows -> packed output + the state's delta.

    The windows come from :class:`windowagg.windows.engine.KeyStream` (the batch engine,
    with the key's clock, revisions and its state in pieces); Spark only stores its bytes.
    """

    def __init__(
        self,
        keys: Sequence[str],
        time: str,
        aggs: Sequence[Agg],
        shape: Shape,
        time_unit: str,
        *,
        max_out_of_orderness: int = 0,
        allowed_lateness: int = 0,
        emit: str = "watermark",
        event_time_timers: bool = False,
    ) -> None:
        self.keys = list(keys)
        self.time = time
        self.aggs = list(aggs)
        #: the output columns: the aggregations, or each one per size (``max_v_5m``, ...)
        self.outputs = sized_aggs(self.aggs, shape.sizes) if shape.sizes else self.aggs
        self.shape = shape
        self.time_unit = time_unit
        self.columns = list(dict.fromkeys(a.column for a in aggs if a.column is not None))
        self.options: dict[str, Any] = {
            "max_out_of_orderness": int(max_out_of_orderness),
            "allowed_lateness": int(allowed_lateness),
            "emit": emit,
            "judge": "batch",  # Spark does not order the rows inside a micro-batch
            "planned": plan(self.aggs),
            # the query's own parameters that change answers, checked with the engine's
            # at every restore: a restart that changes one is refused (CodecError)
            "context": (
                ("time", time),
                ("time_unit", time_unit),
                ("event_time_timers", bool(event_time_timers)),
            ),
        }
        probe = KeyStream(self.aggs, shape, **self.options)
        #: ``"panes"``, ``"history"``, ``"sessions"``, ``"trailing"`` or ``"events"``
        #: (:attr:`KeyStream.layout`): what the state holds
        self.layout = probe.layout
        #: whether a micro-batch reads only the pieces it touches (:attr:`KeyStream.on_demand`:
        #: the pane tree of monoids, the history fold), one ``getValue`` each; else the
        #: key's rows are read in one scan (the event log and the layouts built on it, the
        #: pane layout with exact quantiles, which re-reads its window's values anyway)
        self.on_demand = probe.on_demand

    def stream(self, meta: bytes | None, pieces: Mapping[int, bytes]) -> KeyStream:
        """The key's state from its stored bytes (None: a new key). The pane layout reads
        its pieces from *pieces* on demand; the event log reads them all."""
        return KeyStream.restore(meta, pieces, self.aggs, self.shape, **self.options)

    def __call__(
        self,
        key: tuple[Any, ...],
        pdfs: Iterator[pd.DataFrame],
        meta: bytes | None,
        pieces: Mapping[int, bytes] | None = None,
    ) -> tuple[list[pd.DataFrame], list[Delta]]:
        """Feed the key's rows; returns the packed output and the deltas to store.

        *key* is the grouping key: the keys' values, or (from :func:`stream_window_agg`)
        the keys' values and the null mask (:meth:`split_key`). A null key's rows are
        rejects and touch no state (:meth:`null_key_rejects`).
        """
        mask = self.split_key(key)[1]
        if mask:
            return self.null_key_rejects(mask, pdfs), []
        batch = _one_burst(pdfs)
        if batch is None:
            return [], []
        return self.feed(self.stream(meta, {} if pieces is None else pieces), batch)

    def split_key(self, key: tuple[Any, ...]) -> tuple[tuple[Any, ...], int]:
        """The keys' values and the null mask (bit *i*: key *i* is null) of a grouping key:
        the keys and :data:`NULL_KEYS_COLUMN` (:func:`stream_window_agg`), or the keys
        alone (a :class:`WindowAggProcessor` used directly: nulls as pandas hands them
        over). A NaN key (not null to Spark) counts as null, as validation rejects it.
        O(keys)."""
        if len(key) == len(self.keys) + 1:
            values = tuple(key[:-1])
            return values, int(key[-1]) | _null_mask(values)
        return tuple(key), _null_mask(key)

    def null_key_rejects(self, mask: int, pdfs: Iterator[pd.DataFrame]) -> list[pd.DataFrame]:
        """The rows of a group whose keys under *mask* are null, as rejects (``null key
        <col>``, the first null key), packed; no state. The masked key columns get their
        null back (the JVM grouped them under a typed default), so the rejects' ``row``
        shows them null. O(rows)."""
        batch = _one_burst(pdfs)
        if batch is None:
            return []
        for i, k in enumerate(self.keys):
            if mask >> i & 1:
                batch[k] = None
        _, _, _, rejects = validate(
            batch, self.keys, self.time, self.columns, time_unit=self.time_unit
        )
        packed = pack(self.keys, [None] * len(self.keys), self.outputs, _no_windows(), rejects)
        return [packed] if packed is not None else []

    def feed(self, ks: KeyStream, batch: pd.DataFrame) -> tuple[list[pd.DataFrame], list[Delta]]:
        """Validate *batch* (bad rows -> rejects) and feed the good rows to *ks*."""
        idx: np.ndarray | None = None  # the good rows' positions (None: every row)
        clean = _all_good(batch, self.keys, self.time, self.columns, self.time_unit)
        if clean is not None:  # validate's answer without its rejects frame (~0.1 ms)
            (micros, values), rejects = clean, _NO_REJECTS
        else:
            good, micros, values, rejects = validate(
                batch, self.keys, self.time, self.columns, time_unit=self.time_unit
            )
            idx = np.flatnonzero(good)
            micros, values = micros[idx], {c: v[idx] for c, v in values.items()}
        stored = _stored_columns(batch, self.keys)  # the first row's keys, no Series boxed
        key_values = (
            [batch[k].iloc[0] for k in self.keys] if stored is None else [a[0] for a in stored]
        )
        cols = _no_windows()
        deltas: list[Delta] = []
        if len(micros):
            try:
                res, delta = ks.feed(micros, values)
            except AggregationError as e:
                raise _named(e, tuple(key_values), self.outputs) from e.__cause__
            cols, deltas = res.columns, [delta]
            if len(res.refused):
                rows = res.refused if idx is None else idx[res.refused]
                late = _refused_rows(batch, micros, res.refused, rows, res.reasons)
                rejects = pd.concat([rejects, late], ignore_index=True) if len(rejects) else late
        packed = pack(self.keys, key_values, self.outputs, cols, rejects)
        return ([packed] if packed is not None else []), deltas

    def timed(
        self,
        key: tuple[Any, ...],
        pdfs: Iterator[pd.DataFrame],
        meta: bytes | None,
        pieces: Mapping[int, bytes],
        wm: int,
    ) -> tuple[list[pd.DataFrame], list[Delta] | None, int | None]:
        """One key under Spark's global event-time watermark *wm* (us; <= 0: none yet).

        The key's watermark first moves up to *wm* (a key that lags or has gone quiet
        closes its windows), then the rows, if any, are fed as by ``__call__``. Returns
        the output frames, the deltas to store (None: drop the state) and the event-time
        timer to set (epoch ms; None: no timer). The state is dropped only when nothing in
        it can be emitted or revised any more (:meth:`KeyStream.expired`) and the global
        watermark has reached the key's own: a fresh state then judges every later event
        exactly as the old one. A count-window key keeps its state (its last events wait
        for the later events that complete their windows) with a timer only while a
        complete window waits for the watermark. *key* has no null (the caller hands a null
        key's rows to :meth:`null_key_rejects`).
        """
        ks = self.stream(meta, pieces)
        out: list[pd.DataFrame] = []
        deltas: list[Delta] = []
        if wm > 0:  # a new key starts at the global watermark too
            res, delta = ks.advance(wm)
            deltas.append(delta)
            values = list(self.split_key(key)[0])
            closed = pack(self.keys, values, self.outputs, res.columns, _empty_rejects())
            if closed is not None:
                out.append(closed)
        batch = _one_burst(pdfs)
        if batch is not None:
            fed, more = self.feed(ks, batch)
            out += fed
            deltas += more
        deadline = ks.deadline()
        own = ks.watermark
        if deadline is None:
            if not ks.expired():  # count windows: the state waits for the key's later events
                return out, deltas, None
            if own is None or own <= wm:
                return out, None, None
            deadline = own  # wait until the global watermark has caught up with the key's
        return out, deltas, -(-deadline // 1000)


def _named(e: AggregationError, key: tuple[Any, ...], aggs: Sequence[Agg]) -> AggregationError:
    """*e* (from the key's engine) with the key's values and the window in ISO times."""
    m = re.search(r" in the window \(window_start (-?\d+), window_end (-?\d+)\)", str(e))
    if e.alias is None or m is None:
        return e
    monoid = next(a.monoid for a in aggs if a.alias == e.alias)
    start, end = iso_micros(int(m.group(1))), iso_micros(int(m.group(2)))
    where = f" in the window (window_start {start}, window_end {end}) of key {key!r}"
    return AggregationError(
        aggregation_message(e.alias, monoid, e.reason or "", where),
        alias=e.alias,
        window=e.window,
        key=key,
        reason=e.reason,
    )


def _no_windows() -> dict[str, Any]:
    return {"start": np.empty(0, np.int64), "end": np.empty(0, np.int64), "revision": None}


#: The rejects of a batch without any (read only: :func:`pack` only counts them)
_NO_REJECTS = _empty_rejects()


class WindowAggProcessor(StatefulProcessor):
    """A ``StatefulProcessor`` keeping each key's windows state as deltas.

    Per key: a ``MapState`` ``pieces`` (:data:`PIECE_KEY_SCHEMA` -> :data:`PIECE_SCHEMA`)
    holding a head row (the clock, the emission bookkeeping, the revisions, and pieces
    kept inline) and the pieces: one per node of a tree of pane partials (hopping windows
    of monoids) or per chunk of events (every other shape), laid out by
    :class:`~windowagg.spark.tws_state.KeyRows` to cost few state-server round trips (the
    event log: one scan and one ``updateValue`` per micro-batch in the common case). The
    ``ValueState`` ``meta`` (:data:`META_SCHEMA`) is only read: layout 1 kept the metadata
    there (rewritten as layout 2 at the key's next write). A micro-batch writes only what
    its :class:`~windowagg.windows.engine.stream.Delta` names (put or removed).

    :func:`stream_window_agg` groups by the keys and :data:`NULL_KEYS_COLUMN` (a null key
    under a typed default): a group with a null key is a group of rejects, and reads,
    writes and times nothing (its rows leave through the task's ``Outbox`` like any key's).
    Grouped by the keys alone, a null key (None or NaN) is recognised as such.

    *spec* is a :class:`windowagg.windows.engine.Shape` (lateness and ``emit`` as keywords,
    in microseconds). Use it through :func:`stream_window_agg`, or directly with
    ``unpack(groupBy(keys).transformWithStateInPandas(WindowAggProcessor(...),
    outputStructType=packed_schema(...), outputMode="Append", timeMode="None"), keys,
    aggs)``: it returns :func:`packed_schema` rows (one per key and micro-batch).
    """

    def __init__(
        self,
        keys: Sequence[str],
        time: str,
        aggs: Sequence[Agg],
        spec: Shape,
        time_unit: str = "s",
        event_time_timers: bool = False,
        columns: Sequence[str] | None = None,
        *,
        max_out_of_orderness: int = 0,
        allowed_lateness: int = 0,
        emit: str = "watermark",
    ) -> None:
        self._step = _Step(
            keys,
            time,
            aggs,
            spec,
            time_unit,
            max_out_of_orderness=max_out_of_orderness,
            allowed_lateness=allowed_lateness,
            emit=emit,
            event_time_timers=event_time_timers,
        )
        self._timers = event_time_timers
        #: one Index for every chunk (a list made a new Index, and its table, per chunk)
        self._columns = pd.Index(list(columns)) if columns is not None else None
        self._meta: Any = None
        self._pieces: Any = None
        self._handle: Any = None
        self._outbox: Outbox | None = None

    def init(self, handle: StatefulProcessorHandle) -> None:
        self._handle = handle
        self._outbox = Outbox(handle)
        self._meta = handle.getValueState("meta", META_SCHEMA)
        self._pieces = handle.getMapState("pieces", PIECE_KEY_SCHEMA, PIECE_SCHEMA)

    def _load(self) -> KeyRows:
        """The key's rows (:class:`~windowagg.spark.tws_state.KeyRows`): for a layout read
        on demand (:attr:`_Step.on_demand`) one ``getValue`` of the head, and a view that
        reads a piece when the engine asks for it; for the others one scan of every row."""
        return KeyRows(self._pieces, self._meta, scan=not self._step.on_demand)

    def handleInputRows(
        self, key: tuple[Any, ...], rows: Iterator[pd.DataFrame], timerValues: Any
    ) -> Iterator[pd.DataFrame]:
        rows = self._named(rows)
        wm_ms = int(timerValues.getCurrentWatermarkInMs())  # -1 in timeMode "None"
        assert self._outbox is not None
        mask = self._step.split_key(key)[1]
        if mask:  # a null key: its rows are rejects; no state read or written, no timer
            yield from self._outbox.add(key, self._step.null_key_rejects(mask, rows), wm_ms)
            return
        state = self._load()
        if self._timers:
            out, deltas, timer = self._step.timed(key, rows, state.meta, state.pieces, wm_ms * 1000)
            # one timer per key: drop the old one first (a stale timer would fire too)
            for old in list(self._handle.listTimers()):
                self._handle.deleteTimer(old)
            self._store(state, deltas, timer)
        else:
            out, deltas = self._step(key, rows, state.meta, state.pieces)
            state.store(deltas)
        yield from self._outbox.add(key, out, wm_ms)

    def _named(self, rows: Iterator[pd.DataFrame]) -> Iterator[pd.DataFrame]:
        """The input chunks under their real column names.

        PySpark's TWS worker rebuilds each chunk from ``itertuples`` rows, whose namedtuples
        rename every field that is not a plain identifier or starts with ``_`` to its
        position (``_wa_row`` became ``_3``, and the rejects' ``row`` then nested the JSON
        under ``"_3"``); the columns keep their order, so the names are put back by
        position, as one shared Index (whose hash table then serves every chunk's column
        lookups). O(1) per chunk.
        """
        cols = self._columns
        for pdf in rows:
            if cols is not None and len(pdf.columns) == len(cols):
                pdf.columns = cols
            yield pdf

    def _store(self, state: KeyRows, deltas: list[Delta] | None, timer: int | None) -> None:
        if deltas is None:
            state.clear()
        else:
            state.store(deltas)
        if timer is not None:
            self._handle.registerTimer(timer)

    def handleExpiredTimer(
        self, key: tuple[Any, ...], timerValues: Any, expiredTimerInfo: Any
    ) -> Iterator[pd.DataFrame]:
        # Spark fires the expired timers after every key's rows: the waiting output first
        assert self._outbox is not None
        yield from self._outbox.flush()
        expiry = int(expiredTimerInfo.getExpiryTimeInMs())
        if self._outbox.fired(key, expiry) or not self._timers or self._step.split_key(key)[1]:
            return  # the flush timer: no deadline of the key's own (a null key has none)
        # Spark's global watermark passed this key's deadline: close what it closes, even
        # if the key has had no rows since (the expired timer is already gone)
        state = self._load()
        if state.meta is None:
            return
        wm = int(timerValues.getCurrentWatermarkInMs()) * 1000
        out, deltas, timer = self._step.timed(key, iter([]), state.meta, state.pieces, wm)
        self._store(state, deltas, timer)
        yield from out

    def close(self) -> None:
        if self._outbox is not None:
            self._outbox.close()


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
        unit = check_time_unit(time_unit)
        ts = F.timestamp_micros((col * F.lit(unit)).cast("long"))
    elif isinstance(tt, T.StringType):
        ts = F.to_timestamp(col)
    else:
        raise ArgumentError(
            f"event_time_timers: time column {time!r} is of type {tt.simpleString()}; give a "
            "timestamp, a numeric time (with time_unit) or an ISO string column"
        )
    return (
        df.withColumn(_WATERMARK_COLUMN, ts)
        .withWatermark(_WATERMARK_COLUMN, f"{int(delay_us)} microseconds")
        .drop(_WATERMARK_COLUMN)
    )


def _with_constant_watermark(df: DataFrame) -> DataFrame:
    """*df* under an event-time watermark that never moves (computed on a null column,
    dropped again at once): the ``transformWithStateInPandas`` operator runs in Spark's
    ``EventTime`` mode for its output's flush timer (:mod:`windowagg.spark.tws_outbox`),
    which fires at a watermark of 0 in every task; a watermark that never advances makes
    Spark schedule no extra micro-batch for it, and filters no row."""
    return (
        df.withColumn(_WATERMARK_COLUMN, F.lit(None).cast(T.TimestampType()))
        .withWatermark(_WATERMARK_COLUMN, "0 seconds")
        .drop(_WATERMARK_COLUMN)
    )


def _key_default(dtype: T.DataType) -> Any:
    """A non-null value of key type *dtype* for a null key to be grouped under (its
    :data:`NULL_KEYS_COLUMN` bit tells it apart), or None for a type pandas hands over
    unchanged with nulls (arrays, structs: their nulls stay)."""
    if isinstance(dtype, T.NumericType):
        return F.lit(0).cast(dtype)
    if isinstance(dtype, T.BooleanType):
        return F.lit(False)
    if isinstance(dtype, T.StringType | T.BinaryType):
        return F.lit("").cast(dtype)
    if isinstance(dtype, T.DateType | T.TimestampType | T.TimestampNTZType):
        return F.lit("1970-01-01").cast(dtype)
    return None


def _without_null_keys(df: DataFrame, keys: Sequence[str]) -> DataFrame:
    """*df* with :data:`NULL_KEYS_COLUMN` (``int``, bit *i* set when ``keys[i]`` is null)
    and each key's null replaced by a typed default (:func:`_key_default`): Spark hands
    the keys to Python with their own types, and a null key's rows form groups of their
    own (mask non-zero), which the operator turns into rejects. No data movement."""
    if len(keys) > 31:
        raise ArgumentError(
            f"stream_window_agg: {len(keys)} key columns, more than the 31 its null-key mask "
            "holds: combine some keys into one column first (e.g. F.concat_ws or F.struct)"
        )
    fields = {f.name: f.dataType for f in df.schema.fields}
    mask: Any = F.lit(0)
    cols: dict[str, Any] = {}
    for i, k in enumerate(keys):
        mask = mask + F.when(F.col(k).isNull(), F.lit(1 << i)).otherwise(F.lit(0))
        default = _key_default(fields[k])
        if default is not None:
            cols[k] = F.coalesce(F.col(k), default)
    cols[NULL_KEYS_COLUMN] = mask.cast(T.IntegerType())
    return df.withColumns(cols)


def _default_api(sdf: DataFrame, event_time_timers: bool) -> str:
    """``transformWithStateInPandas`` (state in pieces) where the session's state store is
    RocksDB or timers are asked for; else the fallback ``applyInPandasWithState`` (one
    whole-state value per key, any state store)."""
    provider = sdf.sparkSession.conf.get("spark.sql.streaming.stateStore.providerClass", "")
    if event_time_timers or "RocksDB" in str(provider):
        return "transformWithStateInPandas"
    return "applyInPandasWithState"


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
    gap: Any = None,
    start_time: Any = 0,
    max_out_of_orderness: Any = None,
    allowed_lateness: Any = None,
    time_unit: str = "s",
    row_columns: Sequence[str] | str | None = None,
    api: str | None = None,
    event_time_timers: bool = False,
    emit: str = "watermark",
) -> DataFrame:
    """Sliding-window aggregation per key over a streaming DataFrame (append mode).

    Parameters are those of :func:`windowagg.spark.window_agg`, plus ``gap`` (session
    windows), the lateness settings (see the module docstring), ``emit`` and ``api``:
    ``"applyInPandasWithState"`` or ``"transformWithStateInPandas"`` (needs
    ``spark.sql.streaming.stateStore.providerClass`` = RocksDB, which
    :func:`windowagg.spark.session` sets; it stores the state in pieces and reads and
    writes only those a micro-batch touches); ``None`` (default) picks
    ``"transformWithStateInPandas"`` when the session's state store is RocksDB (or
    ``event_time_timers`` is set), else the fallback ``"applyInPandasWithState"``, which
    reads and rewrites each key's whole state as one value every micro-batch.

    ``emit="watermark"`` (default): every window is emitted when the key's watermark
    passes its end (a per-event window ``(t - size, t]`` when it passes ``t``), so it is
    complete by event time; a late-but-accepted event emits the windows it changes again
    with ``revision`` + 1 (a merged session supersedes the sessions it contains). The last
    revision of each window equals the batch answer. ``emit="arrival"`` (per-event windows
    only): each event's window at once, as of its arrival (the events of its range that
    arrived before it), never revised; it differs from the batch answer on out-of-order
    input.

    ``event_time_timers=True`` (every window shape, ``transformWithStateInPandas`` only;
    count windows: a complete window waits for the watermark, the key's state stays for
    the later events that complete its last windows) also follows Spark's *global* event-time watermark (the largest event time seen
    in any key minus ``max_out_of_orderness``) and keeps one event-time timer per key at
    the key's next deadline (the end of its oldest window not emitted yet; else when
    nothing stored can change any more): a key that goes quiet still emits its windows
    and releases its state once the stream's event time has moved past them. A key's
    watermark is then the larger of its own and the global one, so an event of a lagging
    key older than the global watermark minus ``allowed_lateness`` is a reject (``late:
    ...``). The watermark is computed on a copy of the time column that the stateful
    operator never sees, so Spark itself drops no row. Not with
    ``applyInPandasWithState``: its event-time timeouts need the watermarked column in its
    input, and Spark would then drop late rows silently before windowagg sees them.

    Returns
    -------
    DataFrame
        The streaming combined output (``kind`` = ``"window"`` / ``"reject"``, keys,
        ``window_start``, ``window_end``, aggregations, ``revision``, ``reason``,
        ``event_time``, ``row``); write it with ``outputMode("append")`` and a checkpoint
        location, and split it with :func:`windowagg.spark.split`.

    Complexity: per key and micro-batch of m events. Hopping windows of monoids (pane
    partials): O(m log m) numpy, one fold per event, O(log w) tree nodes per touched pane
    and emitted window (w panes per window); the state read and written is those nodes and
    a small metadata record, whatever the window holds. Every other shape or exact
    quantiles (the event log), over r stored events: O(m log m + r) numpy plus the
    engine's aggregators over the emitted windows; the state written is the batch's events
    and the metadata (plus, amortized, O(1) rewrites per event), the state read all of it.
    ``transformWithStateInPandas`` reads the panes' pieces one by one and the event log
    in one scan, and writes the event log's small pieces inline in one head row
    (:mod:`windowagg.spark.tws_state`); ``applyInPandasWithState`` reads and rewrites the
    whole state as one value.
    """
    wc = parse_call(
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
    check_names(wc, SPARK_COLUMNS)  # the combined output's names, ignoring case
    key_list, agg_list, shape = wc.keys, wc.aggs, wc.shape
    ooo_us, lateness_us = wc.lateness or (0, 0)  # a stream always has a watermark
    step = _Step(
        key_list,
        time,
        agg_list,
        shape,
        time_unit,
        max_out_of_orderness=ooo_us,
        allowed_lateness=lateness_us,
        emit=emit,
    )
    step.stream(None, {})  # checks the options now (emit, lateness), not on a worker
    if api is None:
        api = _default_api(sdf, event_time_timers)
    if event_time_timers and api != "transformWithStateInPandas":
        raise ArgumentError(
            "event_time_timers needs api='transformWithStateInPandas': applyInPandasWithState's "
            "event-time timeouts need the watermarked column in the operator's input, where "
            "Spark drops late rows silently before windowagg can route them to the rejects"
        )
    prepared = prepare(sdf, key_list, time, agg_list, row_columns=row_columns)
    if event_time_timers:
        prepared = _with_global_watermark(prepared, time, time_unit, ooo_us)
    elif api == "transformWithStateInPandas":
        prepared = _with_constant_watermark(prepared)
    key_fields = [f for f in prepared.schema.fields if f.name in key_list]
    key_fields.sort(key=lambda f: key_list.index(f.name))
    schema = packed_schema(key_fields, wc.outputs)
    # Rows with a null key go through the stateful operator too, as rejects: the key
    # columns are grouped under a typed default and a null mask (NULL_KEYS_COLUMN), so no
    # key column holds a null (a null in an Arrow batch turns an integer key into a float
    # on the Python side, and the operator would then read and write that key's state under
    # the float: the state would be lost; tested in tests/spark/test_spark_streaming.py),
    # and one scan of the source feeds one operator (a second, stateless branch for the
    # null keys cost a scan and Python workers every micro-batch).
    keyed = _without_null_keys(prepared, key_list)
    grouped = keyed.groupBy(*key_list, NULL_KEYS_COLUMN)
    if api == "transformWithStateInPandas":
        stateful = grouped.transformWithStateInPandas(
            statefulProcessor=WindowAggProcessor(
                key_list,
                time,
                agg_list,
                shape,
                time_unit,
                event_time_timers=event_time_timers,
                columns=keyed.columns,
                max_out_of_orderness=ooo_us,
                allowed_lateness=lateness_us,
                emit=emit,
            ),
            outputStructType=schema,
            outputMode="Append",
            timeMode="EventTime",  # the keys' timers, or only the output's flush timer
        )
    elif api == "applyInPandasWithState":

        def fn(
            key: tuple[Any, ...], pdfs: Iterator[pd.DataFrame], state: GroupState
        ) -> Iterator[pd.DataFrame]:
            meta, pieces = None, {}
            if state.exists:
                with codec.decoding("a windowagg applyInPandasWithState state"):
                    meta, pieces = codec.loads(bytes(state.get[0]))
                if not isinstance(pieces, dict):
                    raise CodecError(
                        "not a windowagg applyInPandasWithState state of this version: "
                        "clear the query's checkpoint"
                    )
            out, deltas = step(key, pdfs, meta, pieces)
            if deltas:  # the fallback: one state value, metadata and every piece rewritten
                for d in deltas:
                    d.apply(pieces)
                state.update((codec.dumps((deltas[-1].meta, pieces)),))
            yield from out

        stateful = grouped.applyInPandasWithState(
            fn,
            outputStructType=schema,
            stateStructType=APWS_STATE_SCHEMA,
            outputMode="append",
            timeoutConf=GroupStateTimeout.NoTimeout,
        )
    else:
        raise ArgumentError(
            f"api must be 'transformWithStateInPandas' or 'applyInPandasWithState', got {api!r}"
        )
    return unpack(stateful, key_list, wc.outputs)
