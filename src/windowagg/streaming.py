"""``window_agg`` over micro-batches, in-process: many keys, state in a key-value store.

:func:`stream` takes the arguments of :func:`windowagg.pandas.window_agg` and returns a
:class:`Stream`; each :meth:`Stream.feed` of a pandas or polars DataFrame or a pyarrow
Table (any keys, any order) returns the windows that micro-batch closed or revised and its
rejects, as a :class:`~windowagg.pandas.WindowAgg` of the input's kind.

=================  ==========================================================================
engine             one :class:`windowagg.windows.engine.KeyStream` per key (the engine of
                   ``window_agg``, ``stream_window_agg`` on Spark and the object API):
                   pane partials for hopping windows of monoids, else the key's event log
lateness           per key, as ``window_agg`` with lateness: the key's watermark = its
                   newest event time - ``max_out_of_orderness``; an event older than the
                   watermark - ``allowed_lateness`` (judged in input order, against the
                   watermark before it) is a reject ``late: ...``. A stream always judges:
                   the defaults are 0 (an event older than its key's newest is late)
output             ``results``: keys, ``window_start``, ``window_end``, one column per
                   aggregation (per size), ``revision``; a window when its key's watermark
                   passes its end (``revision`` 0), again (``revision`` + 1) when a
                   late-but-accepted event changes it (a merged session supersedes those it
                   contains): the columns, revisions and reasons of
                   ``windowagg.spark.stream_window_agg``; the last revision of every window
                   equals ``window_agg`` on the concatenated input. ``rejects``: ``reason``,
                   ``event_time``, ``row`` (JSON), ``row_index`` (the row's position in the
                   micro-batch); every row is aggregated or rejected (count windows'
                   last events, which complete no window: at :meth:`Stream.close`)
idle keys          :meth:`Stream.advance` raises every key's watermark (the keys not in the
                   micro-batches too) and emits what that closes; :meth:`Stream.close` emits
                   everything left. A key whose state expired (nothing in it can be emitted
                   or revised any more: ``KeyStream.expired``) leaves the process; its clock
                   (one integer) stays, and a fresh state on it takes the key's next event
state              in process (``store=None``), or the keys' state deltas in a
                   ``windowagg.storage`` store (``store=`` a SQLite file path, a URL
                   ``sqlite:///...`` / ``redis://...`` / ``memory://``, or a store object):
                   each micro-batch (or :meth:`Stream.commit` after several) writes every
                   key's changed pieces and the caller's checkpoint token in **one atomic
                   commit** (:mod:`windowagg._stream_store`); ``stream(..., store=)`` on a
                   store that holds a stream resumes at its last commit, and
                   :attr:`Stream.checkpoint_token` says where to re-read the source from.
                   The keys' state also stays in process between micro-batches: a key not
                   in a micro-batch costs nothing, and the store is read only for keys a
                   resumed stream meets for the first time (their pieces on demand)
atomic             a call that raises (a bad aggregation, a store outage) changes nothing:
                   every key's state and the store are as before it
time               per micro-batch of m rows over its k keys: O(m log m) validation and
                   grouping, then each key's ``KeyStream.feed`` (panes: O(m log m + (q + r)
                   log w); event log: O(m log m + retained events) + the emitted windows),
                   plus one commit of the changed pieces
=================  ==========================================================================

Examples
--------
>>> import pandas as pd
>>> import windowagg
>>> s = windowagg.stream("k", "t", ["sum(v)", "count"], size=10, slide=10,
...                      allowed_lateness=10)
>>> out = s.feed(pd.DataFrame({"k": ["a", "b", "a"], "t": [1, 3, 12], "v": [1.0, 2.0, 3.0]}))
>>> out.results[["k", "sum_v", "count", "revision"]].values.tolist()
[['a', 1.0, 1, 0]]
>>> out = s.feed(pd.DataFrame({"k": ["a", "a"], "t": [5, -30], "v": [4.0, 9.0]}))
>>> out.results[["k", "sum_v", "count", "revision"]].values.tolist()  # a late event: again
[['a', 5.0, 2, 1]]
>>> out.rejects[["reason", "row_index"]].values.tolist()
[['late: 1969-12-31T23:59:30Z < lateness bound 1970-01-01T00:00:02Z', 1]]
>>> s.close().results[["k", "sum_v", "revision"]].values.tolist()  # b, and a's last window
[['a', 3.0, 0], ['b', 2.0, 0]]
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from windowagg._stream_store import Pending, StreamStore
from windowagg.aggs import Agg
from windowagg.call import RESULT_COLUMNS, WindowCall, check_names, parse_call
from windowagg.errors import ArgumentError, ArgumentTypeError, StateError
from windowagg.pandas import (
    FrameWindows,
    WindowAgg,
    _check_unique,
    _from_pandas,
    _rejects,
    _results,
    _to_pandas,
    group_rows,
)
from windowagg.rejects import (
    CORRUPT_COLUMN,
    RowsJson,
    parse_times,
    readable_reason,
    utc_micros,
    validate,
    value_columns,
)
from windowagg.storage import KVStore, SQLiteStore, open_store
from windowagg.windows.engine import KeyStream, plan
from windowagg.windows.engine.records import StepResult, Tail, agg_signature, atomic

__all__ = ["Stream", "stream"]

#: A watermark past every event time windowagg reads (years 0001-9999 in microseconds)
END_OF_TIME = 2**62
#: The columns a count-window key's events carry in its state: each row's JSON (the
#: rejects' ``row``) and its position in its micro-batch (``row_index``), for the events
#: that complete no window and are rejects at :meth:`Stream.close`
CARRY = ("\x00row", "\x00row_index")


def stream(
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
    store: KVStore | str | Path | None = None,
    namespace: str = "windowagg.stream",
    factory: Any = None,
) -> Stream:
    """A streaming ``window_agg`` over micro-batches (see the module docstring).

    Parameters
    ----------
    keys, time, aggs, size, slide, rows, every, gap, start_time, time_unit, row_columns
        As :func:`windowagg.pandas.window_agg` (several sizes and decayed aggregations
        included).
    max_out_of_orderness, allowed_lateness
        The keys' watermarks (default 0 each; see the module docstring).
    store
        None (default): the state lives in process only. A path: a SQLite file (created if
        absent). A URL (``sqlite:///path.db``, ``redis://host:port/db``, ``memory://``) or a
        :class:`windowagg.storage.KVStore`: the state is committed there per micro-batch,
        and a stream already in *namespace* resumes from its last commit.
    namespace
        The stream's namespace in the store (one store can hold several streams).
    factory
        ``monoid -> FIFO aggregator`` for the engine (default ``fifo.TwoStacksLite``).

    Raises
    ------
    ArgumentError
        A bad argument, before any data is read (as ``window_agg``).
    CodecError
        The namespace holds a stream of another configuration (keys, time, aggregations,
        window shape, lateness).

    Complexity: O(len(aggs)); with a store holding a stream, O(keys) to read its key
    directory (no key's state is read before the key is needed).
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
    check_names(call, (*RESULT_COLUMNS, "revision"))  # the results' own columns too
    return Stream(call, store=store, namespace=namespace, row_columns=row_columns, factory=factory)


def _config(call: WindowCall, lateness: tuple[int, int]) -> tuple[Any, ...]:
    """What a store's stream must have been written for (plain values). Count windows:
    also that their events carry their rows (:data:`CARRY`). O(aggs)."""
    s = call.shape
    aggs = agg_signature(call.aggs)  # parameters, never an object's address
    shape = (s.size, s.slide, s.rows, s.every, s.gap, s.start_time, tuple(s.sizes))
    out = ("stream", tuple(call.keys), call.time, call.time_unit, aggs, shape, lateness)
    return (*out, ("rows carried", True)) if s.positional else out


def _older(call: WindowCall, config: tuple[Any, ...]) -> tuple[tuple[Any, ...], str] | None:
    """The configuration a windowagg before count windows' carried rows wrote for this
    call, and why such a store is refused (None: the call's configuration never changed)."""
    if not call.shape.positional:
        return None
    return config[:-1], (
        "was written by a windowagg whose count-window state kept no rows, so the events "
        "that complete no window could never be reported at close"
    )


def _advance_step(
    ks: KeyStream, wm: int, tails: dict[int, Tail], at: int
) -> tuple[StepResult, Any]:
    """``ks.advance(wm)`` without its own all-or-nothing context (the caller holds one
    over every key: :meth:`Stream._step`). When *wm* ends the input (``END_OF_TIME``, the
    first time for this key), the key's :meth:`~KeyStream.tail` goes to ``tails[at]``."""
    state: Any = ks._state
    before = state._clock.watermark
    state._clock.observe(np.array([wm + state._ooo], dtype=np.int64))
    out = state._step(np.empty(0, np.int64), {c: np.empty(0) for c in state._cols})
    if wm >= END_OF_TIME and before is not None and before < END_OF_TIME:
        tail = ks.tail()
        if len(tail.events.t):
            tails[at] = tail
    return out  # type: ignore[no-any-return]


def _plain(v: Any) -> Any:
    """A key value as a plain Python value (dictionary key and codec value). O(1)."""
    if isinstance(v, np.datetime64):
        return pd.Timestamp(v).to_pydatetime()
    if isinstance(v, np.generic):
        return v.item()
    if isinstance(v, pd.Timestamp):
        return v.to_pydatetime()
    return v


def _micros(watermark: Any, time_unit: str) -> int:
    """A watermark given as the time column's values are (a timestamp, ISO text, or a
    number in *time_unit*) in microseconds. O(1)."""
    if isinstance(watermark, np.generic):
        watermark = watermark.item()
    if isinstance(watermark, float) and watermark == float("inf"):
        return END_OF_TIME
    micros, why = parse_times(pd.Series([watermark]), time_unit)
    if why.iloc[0] is not None:
        raise ArgumentError(
            f"advance: watermark {watermark!r}: {why.iloc[0]}; give a time as the time column "
            f"holds them (a timestamp, ISO 8601 text, or a number in time_unit={time_unit!r})"
        )
    return int(micros[0])


def _concat_columns(parts: list[dict[str, Any]], names: Sequence[str]) -> dict[str, Any]:
    """The engine's columns of several keys end to end. O(windows)."""
    out: dict[str, Any] = {}
    for name in names:
        cols = [p[name] for p in parts]
        if cols and all(isinstance(c, np.ndarray) for c in cols):
            out[name] = np.concatenate(cols) if len(cols) > 1 else cols[0]
        else:
            merged: list[Any] = []
            for c in cols:
                merged.extend(c.tolist() if isinstance(c, np.ndarray) else c)
            out[name] = merged
    return out


class Stream:
    """A streaming ``window_agg`` (made by :func:`stream`; see the module docstring)."""

    #: keys whose state expired leave the process (tests set it False to compare)
    _park = True

    def __init__(
        self,
        call: WindowCall,
        *,
        store: KVStore | str | Path | None = None,
        namespace: str = "windowagg.stream",
        row_columns: Sequence[str] | str | None = None,
        factory: Any = None,
    ) -> None:
        self._call = call
        self._lateness = call.lateness or (0, 0)  # a stream always has a watermark
        self._row_columns = row_columns
        self._values = value_columns(call.aggs)
        self._needed = list(dict.fromkeys([*call.keys, call.time, *self._values]))
        self._names = ["start", "end", *[a.alias for a in call.outputs], "revision"]
        self._options: dict[str, Any] = {
            "max_out_of_orderness": self._lateness[0],
            "allowed_lateness": self._lateness[1],
            "judge": "arrival",  # in input order, as window_agg judges lateness
            "factory": factory,
            "planned": plan(call.aggs),
            "deltas": store is not None,
        }
        self._carry = call.shape.positional  # rows kept for the tail's rejects
        if self._carry:
            self._options["carry"] = CARRY
        # refuses a shape no stream takes; its layout groups the pieces into store rows
        template = KeyStream(call.aggs, call.shape, **self._options)
        self._owned = isinstance(store, str | Path)
        kv: KVStore | None
        if isinstance(store, Path) or (isinstance(store, str) and "://" not in store):
            kv = SQLiteStore(store)
        elif isinstance(store, str):
            kv = open_store(store)
        else:
            kv = store
        self._store: StreamStore | None = None
        if kv is not None:
            try:
                config = _config(call, self._lateness)
                self._store = StreamStore(
                    kv, namespace, config, older=_older(call, config), rows_of=template.store_rows
                )
            except BaseException:
                if self._owned:
                    kv.close()
                raise
        #: the keys' live state, by key values
        self._live: dict[tuple[Any, ...], KeyStream] = {}
        #: the keys whose state expired (nothing in it can be emitted or revised any more):
        #: only their clock's newest time (None: no event admitted) stays in process
        self._parked: dict[tuple[Any, ...], int | None] = {}
        #: key values -> key id (the store's directory and the keys new since)
        self._ids: dict[tuple[Any, ...], int] = dict(self._store.keys) if self._store else {}
        self._pending = Pending()
        self._pending_token: Any = None
        self._batches = self._store.batches if self._store else 0
        self._key_dtypes: dict[str, Any] = {}
        self._kind = "pandas"  # the last micro-batch's kind: advance's output kind
        self._closed = False

    # ------------------------------------------------------------------ facts
    @property
    def checkpoint_token(self) -> Any:
        """The token of the last committed micro-batch (None: none): re-read the source
        from the position after it when a stream resumes. O(1)."""
        return None if self._store is None else self._store.token

    @property
    def batches(self) -> int:
        """Micro-batches and advances fed (committed ones after a resume, plus those since).
        O(1)."""
        return self._batches

    def __len__(self) -> int:
        """The number of keys seen (in the store's directory, or since the start). O(1)."""
        return len(self._ids)

    def __repr__(self) -> str:
        where = "in process" if self._store is None else repr(self._store.store)
        return f"Stream(keys={len(self)}, batches={self._batches}, state {where})"

    # ------------------------------------------------------------------ the verbs
    def feed(self, frame: Any, token: Any = None, *, commit: bool = True) -> WindowAgg:
        """Feed one micro-batch: every key in it; returns what it closed or revised.

        Parameters
        ----------
        frame
            A pandas or polars DataFrame or a pyarrow Table with the key, time and value
            columns (any other columns are kept for the rejects' ``row``).
        token
            The caller's source position of this micro-batch (an int, text, or a tuple of
            them, e.g. a Kafka offset): committed with the state, read back as
            :attr:`checkpoint_token` after a restart.
        commit
            With a store: commit now (default), or keep the changes for :meth:`commit`
            (write the output to its sink first, then commit: exactly once with a sink
            that overwrites by token).

        Returns
        -------
        WindowAgg
            ``results`` by key, then in emission order; ``rejects`` by ``row_index``.

        Raises ``ArgumentError`` for a missing or repeated column; an aggregation's
        ``AggregationError`` or the store's ``StorageError`` as they come. A call that
        raises changes nothing. Complexity: see the module docstring.
        """
        self._check_open("feed")
        if not isinstance(frame, pd.DataFrame) and type(frame).__module__.split(".")[0] not in (
            "polars",
            "pyarrow",
        ):
            raise ArgumentTypeError(
                f"feed takes a pandas or polars DataFrame or a pyarrow Table; got "
                f"{type(frame).__name__}: convert the micro-batch to one of them first"
            )
        pdf, kind = _to_pandas(frame)
        call = self._call
        missing = [c for c in self._needed if c not in pdf.columns]
        if missing:
            raise ArgumentError(
                f"feed: column {missing[0]!r} is not in the micro-batch (columns: "
                f"{list(pdf.columns)}); the stream reads {self._needed}: give every "
                "micro-batch these columns"
            )
        rc = self._row_columns
        row_cols = (
            self._needed if rc is None else [str(c) for c in pdf.columns] if rc == "*" else list(rc)
        )
        _check_unique(pdf, [*self._needed, *row_cols])
        extra = [CORRUPT_COLUMN] if CORRUPT_COLUMN in pdf.columns else []
        sub = pdf[list(dict.fromkeys([*self._needed, *extra]))]
        if not (
            isinstance(sub.index, pd.RangeIndex) and sub.index.start == 0 and sub.index.step == 1
        ):
            sub = sub.reset_index(drop=True)
        good, micros, values, bad = validate(
            sub, call.keys, call.time, self._values, time_unit=call.time_unit, rows=False
        )
        groups = group_rows(sub, call.keys, np.flatnonzero(good))
        firsts = groups.rows[groups.starts[:-1]]
        work = []
        for g, key in enumerate(groups.keys):
            rows = groups.rows[groups.starts[g] : groups.starts[g + 1]]
            work.append((tuple(_plain(v) for v in key), rows))
        carried: Any = None
        if self._carry:  # count windows: the rows' identity goes into their keys' state
            # (the JSON only for the rows the engine asks for: those its tail may return)
            carried = RowsJson(pdf[row_cols].reset_index(drop=True))
            values = {**values, CARRY[1]: np.arange(len(sub), dtype=np.float64)}

        def run(ks: KeyStream, r: np.ndarray) -> tuple[StepResult, Any]:
            vals = {c: values[c][r] for c in values}
            if carried is not None:
                vals[CARRY[0]] = lambda at: carried(r[at])
            return ks._state._step(micros[r], vals)

        steps = self._step(
            [(key, lambda ks, r=rows: run(ks, r)) for key, rows in work], token, commit
        )
        for k in call.keys:
            self._key_dtypes.setdefault(k, sub[k].dtype)
        self._kind = kind
        refused = [rows[res.refused] for (_, rows), res in zip(work, steps, strict=True)]
        reasons = [readable_reason(r) for res in steps for r in res.reasons]
        bad_rows = np.flatnonzero(~good)
        late = np.concatenate([bad_rows, *refused]).astype(np.int64)
        why = [*bad["reason"].tolist(), *reasons]
        bad_ev = (
            bad["event_time"].dt.tz_localize(None).to_numpy(dtype="datetime64[us]").astype(np.int64)
            if len(bad_rows)
            else np.empty(0, np.int64)
        )
        ev = np.concatenate([bad_ev, *[micros[r] for r in refused]]).astype(np.int64)
        ev_null = np.concatenate(
            [bad["event_time"].isna().to_numpy(), np.zeros(len(late) - len(bad_rows), bool)]
        )
        order = np.argsort(late, kind="stable")
        fw = FrameWindows(
            [],
            firsts.tolist(),
            _concat_columns([r.columns for r in steps], self._names) if steps else self._empty(),
            np.asarray([len(r.columns["end"]) for r in steps], dtype=np.int64),
            late[order],
            [why[i] for i in order.tolist()],
            ev[order],
            ev_null[order].astype(bool),
        )
        return self._output(sub, pdf, fw, row_cols, kind)

    def advance(self, watermark: Any, token: Any = None, *, commit: bool = True) -> WindowAgg:
        """Raise every key's watermark to *watermark* (a time as the time column holds them)
        and return the windows that closes, as :meth:`feed` does (keys not in any recent
        micro-batch too: their windows close without a new event of theirs). No key's
        watermark goes down. *token* (None: the last one) and *commit* as :meth:`feed`.
        O(keys) + the emitted windows; with a store, the keys not in process are read
        (their heads, and the pieces their windows need)."""
        self._check_open("advance")
        return self._advance(_micros(watermark, self._call.time_unit), token, commit)

    def close(self) -> WindowAgg:
        """Emit every window left (the watermark past every time), commit, and release a
        store the stream opened itself (from a path or URL). The stream takes no more
        micro-batches. Count windows: each key's last events, which complete no window,
        are rejects now (``in no window: ...``, as ``window_agg`` gives them), with their
        rows and their ``row_index`` in their micro-batch, once (a stream resumed after a
        committed close, or advanced to ``inf`` before, reports none again). O(keys) + the
        emitted windows."""
        self._check_open("close")
        out = self._advance(END_OF_TIME, None, True)
        self._closed = True
        if self._store is not None and self._owned:
            self._store.store.close()
        return out

    def commit(self) -> None:
        """Commit the changes of the micro-batches fed with ``commit=False`` (one atomic
        commit, with the last token given). Nothing pending: nothing written. A commit
        that raises keeps them pending. O(changes)."""
        if self._store is None or not self._pending:
            return
        self._store.commit(self._pending, self._pending_token)
        self._pending = Pending()

    # ------------------------------------------------------------------ internals
    def _check_open(self, verb: str) -> None:
        if self._closed:
            raise StateError(
                f"{verb}: this stream is closed; open it again with windowagg.stream(..., "
                "store=...) to go on from its store, or start a new one"
            )

    def _empty(self) -> dict[str, Any]:
        out: dict[str, Any] = {n: np.zeros(0, np.int64) for n in ("start", "end", "revision")}
        for a in self._call.outputs:
            out[a.alias] = (
                np.zeros(0, np.int64 if a.dtype == "bigint" else np.float64)
                if a.dtype in ("bigint", "double")
                else []
            )
        return out

    def _key_stream(self, key: tuple[Any, ...]) -> KeyStream:
        """*key*'s state: live, else from the store (its head; pieces on demand), else new."""
        ks = self._live.get(key)
        if ks is not None:
            return ks
        call = self._call
        if key in self._parked:  # a fresh state on the key's clock judges as the old one
            ks = KeyStream(call.aggs, call.shape, **self._options)
            newest = self._parked[key]
            if newest is not None:
                ks._state._clock.advance_to(newest)
            return ks
        kid = self._ids.get(key)
        if self._store is not None and kid is not None and key in self._store.keys:
            st = self._store
            return KeyStream.restore(
                st.head(kid), st.pieces(kid), call.aggs, call.shape, **self._options
            )
        return KeyStream(call.aggs, call.shape, **self._options)

    def _step(
        self, work: list[tuple[tuple[Any, ...], Any]], token: Any, commit: bool
    ) -> list[StepResult]:
        """Run *work* (key, step on its state) for every key all or nothing, record the
        deltas and commit them (*commit*). Returns each key's result."""
        results: list[StepResult] = []
        batch = Pending()
        new_ids: dict[tuple[Any, ...], int] = {}
        touched: list[tuple[tuple[Any, ...], KeyStream]] = []
        next_id = len(self._ids)
        with _gc_paused(), contextlib.ExitStack() as undo:
            for key, run in work:
                ks = self._key_stream(key)
                # one all-or-nothing context per key, kept open until every key and the
                # commit are done: a later key's error puts this one back too
                undo.enter_context(atomic(ks._state))
                res, delta = run(ks)
                results.append(res)
                touched.append((key, ks))
                if self._store is not None and delta.meta:
                    kid = self._ids.get(key)
                    if kid is None:
                        kid = new_ids.get(key)
                    if kid is None:
                        kid = new_ids[key] = next_id
                        next_id += 1
                        batch.new_key(key, kid)
                    batch.key_delta(kid, delta.meta, delta.put, delta.delete)
            if self._store is not None:
                merged = self._pending.merged(batch)
                if token is None:  # the last token given stays the checkpoint
                    token = self._pending_token if self._pending else self._store.token
                if commit:
                    self._store.commit(merged, token)
                    self._pending = Pending()
                else:
                    self._pending = merged
                self._pending_token = token
        # leaving the ExitStack without an error keeps every key's changes
        for key, ks in touched:
            if self._park and self._can_park(ks):
                self._live.pop(key, None)
                self._parked[key] = ks._state._clock._max_t
            else:
                self._live[key] = ks
                self._parked.pop(key, None)
            if key not in self._ids:
                self._ids[key] = new_ids.get(key, len(self._ids))
        self._batches += 1
        return results

    def _can_park(self, ks: KeyStream) -> bool:
        """Whether *ks* can leave the process now, its clock kept: nothing in it can be
        emitted or revised any more (:meth:`KeyStream.expired`, as Spark drops a key's
        state), and, with a store, it holds no piece (the store then holds its head only,
        which a fresh state on the same clock replaces). O(the key's state)."""
        if ks.deadline() is not None or not ks.expired():
            return False
        return self._store is None or not ks.pieces()

    def _advance(self, wm: int, token: Any, commit: bool) -> WindowAgg:
        keys = list(self._ids)
        # in process, a parked key emits nothing and stays parked: only its clock moves
        # (after every other key's step, so that a step that raises leaves it too)
        parked = self._store is None and bool(self._parked)
        if parked:
            keys = [k for k in keys if k not in self._parked]
        with contextlib.suppress(TypeError):  # keys that do not compare: first-seen order
            keys.sort()
        tails: dict[int, Tail] = {}
        steps = self._step(
            [(k, lambda ks, i=i: _advance_step(ks, wm, tails, i)) for i, k in enumerate(keys)],
            token,
            commit,
        )
        if parked:
            newest = wm + self._lateness[0]
            for key, old in self._parked.items():
                if old is None or old < newest:
                    self._parked[key] = newest
        out = [(k, r) for k, r in zip(keys, steps, strict=True) if len(r.columns["end"])]
        call = self._call
        sub = pd.DataFrame({k: [key[i] for key, _ in out] for i, k in enumerate(call.keys)})
        for k, dtype in self._key_dtypes.items():
            with contextlib.suppress(TypeError, ValueError):
                sub[k] = sub[k].astype(dtype)
        e = np.empty(0, np.int64)
        fw = FrameWindows(
            [],
            list(range(len(out))),
            _concat_columns([r.columns for _, r in out], self._names) if out else self._empty(),
            np.asarray([len(r.columns["end"]) for _, r in out], dtype=np.int64),
            e,
            [],
            e,
            np.empty(0, bool),
        )
        return self._output(sub, pd.DataFrame(), fw, [], self._kind, _tail_rejects(tails))

    def _output(
        self,
        sub: pd.DataFrame,
        pdf: pd.DataFrame,
        fw: FrameWindows,
        row_cols: list[str],
        kind: str,
        rejects: pd.DataFrame | None = None,
    ) -> WindowAgg:
        call = self._call
        results = _results(sub, call.keys, call.outputs, fw)
        results["revision"] = np.asarray(fw.columns["revision"], dtype=np.int64)
        if rejects is None:
            rejects = _rejects(pdf, fw, row_cols)
        return WindowAgg(_from_pandas(results, kind), _from_pandas(rejects, kind))


@contextlib.contextmanager
def _gc_paused() -> Iterator[None]:
    """Pause Python's cyclic garbage collector for one micro-batch's step, and restore it.

    A micro-batch keeps every key's undo journal open until its commit (all keys or
    none), so the pane nodes it replaces stay alive until the end of the step: tens of
    thousands of containers per micro-batch, which made the collector run ~16 times per
    micro-batch and, every few micro-batches, a full pass over all the keys' state: 1.1 s
    of a 3.6 s run of 1M events (``benchmarks.bench_stream``), against 0.01 s for the
    same engine fed key by key. Paused, the step's garbage is collected after it (the
    objects are freed by reference counting as usual; only cycle detection waits). A
    caller that turned the collector off keeps it off."""
    enabled = gc.isenabled()
    if enabled:
        gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _tail_rejects(tails: dict[int, Tail]) -> pd.DataFrame | None:
    """The rejects frame of the keys' tails (by key, each in time order): their reasons,
    times, and the rows and row indexes they carried; None: no tail. O(tail events)."""
    if not tails:
        return None
    parts = [tails[i] for i in sorted(tails)]
    t = np.concatenate([p.events.t for p in parts])
    return pd.DataFrame(
        {
            "reason": np.asarray(
                [readable_reason(r) for p in parts for r in p.reasons], dtype=object
            ),
            "event_time": utc_micros(t),
            "row": np.asarray(
                [x for p in parts for x in p.events.values[CARRY[0]].tolist()], dtype=object
            ),
            "row_index": np.concatenate([p.events.values[CARRY[1]] for p in parts]).astype(
                np.int64
            ),
        }
    )
