"""The event log: one key's streaming windows over its retained events, for the shapes and
aggregations no incremental layout takes (:func:`~.stream._layout_of`).

=================  ==========================================================================
takes              count windows; per-event and session windows with an exact quantile, a
                   polynomial decay or a FIFO ``factory`` of the caller's; ``emit="arrival"``
                   of those; several sizes of those (every size's columns per row of the
                   largest size, :func:`~.sizes.evaluate_sizes`); :class:`~.sessions.OpenSessions`
                   builds on it
state              the retained events as arrays (int64 event time, int64 arrival sequence
                   number = row id, float64 value columns, carried columns), sorted by
                   (time, arrival), stored as *chunks*: one per micro-batch (its admitted
                   events); the metadata also holds the next chunk key, how many events
                   compaction dropped and the emitted sessions
per micro-batch    merge into the retained events, assignment (:func:`~.assign.assign`) and
                   the aggregators (:func:`~.state.evaluate`) for exactly the windows to
                   emit (closed by the watermark, or revised by a late-but-accepted event)
compaction         events that no window still to be emitted or revised can hold
                   (per-event: ``t <= bound - size``; sessions: sessions ending before the
                   bound; count windows: before the first window a later event can shift)
                   are dropped when they are at least half of the stored events, so each
                   event is rewritten O(1) times amortized
deltas             the new chunk, or at compaction every chunk replaced by one
time               per micro-batch of m rows over r retained events: O(m log m + r) numpy
                   (sort, merge, assignment) + the aggregators over the emitted windows
                   (O(1) amortized per event and window; O(log w) per quantile)
space              O(r): the events a window still to be emitted or revised can hold
=================  ==========================================================================

Split from :mod:`.stream` (:class:`~.stream.KeyStream` holds one of these when no other
layout fits; see its module docstring for admission, emission, revisions and the bytes).

Examples
--------
>>> import numpy as np
>>> from windowagg.aggs import parse_aggs
>>> log = EventLog(parse_aggs(["p50(v)"]), Shape(size=10), allowed_lateness=5)
>>> out, delta = log.feed(np.array([1, 4, 12]), {"v": np.array([3.0, 1.0, 2.0])})
>>> out.columns["end"].tolist(), out.columns["p50_v"].tolist()
([1, 4, 12], [3.0, 1.0, 1.0])
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from windowagg import codec
from windowagg.errors import ArgumentError, CodecError
from windowagg.windows.engine.assign import Windows, assign
from windowagg.windows.engine.clock import WatermarkClock
from windowagg.windows.engine.core import count_tail_reason
from windowagg.windows.engine.emit import columns
from windowagg.windows.engine.layout import Layout
from windowagg.windows.engine.records import (
    NO_DELTA,
    STATE_VERSION,
    Delta,
    Events,
    StepResult,
    Tail,
    admit_key,
    agg_signature,
    as_column,
    check_config,
    concat_events,
    decode_events,
    empty_events,
    encode_events,
    sorted_events,
    take_events,
)
from windowagg.windows.engine.shapes import Shape
from windowagg.windows.engine.sizes import evaluate_sizes, sized_aggs
from windowagg.windows.engine.state import (
    Factory,
    Plan,
    Reused,
    Unlowered,
    _default_factory,
    evaluate,
    plan,
)

__all__ = ["EventLog"]

_Events = Events
_empty = empty_events
_concat = concat_events
_take = take_events
_sorted = sorted_events
encode_chunk = encode_events
decode_chunk = decode_events


_NONE = np.zeros(0, dtype=np.int64)


def _interleave(old: np.ndarray, new: np.ndarray, was: np.ndarray, at: np.ndarray) -> np.ndarray:
    """*old* at the positions *was* marks and *new* at *at*, in one new array. O(n)."""
    kind = object if object in (old.dtype, new.dtype) else old.dtype
    out = np.empty(len(was), dtype=kind)
    out[was] = old
    out[at] = new
    return out


def _carried(v: Any) -> np.ndarray:
    """A carried column as stored: float64 numbers, else objects (text too). O(m)."""
    a = np.asarray(v)
    return a if a.dtype == object else a.astype(object if a.dtype.kind in "USO" else np.float64)


def _no_bytes(events: Events) -> bytes:
    """What :class:`EventLog` writes for a chunk when no store takes it (``deltas=False``)."""
    return b""


class EventLog(Layout):
    """One key's streaming windows over its retained events (see the module docstring).

    Parameters
    ----------
    aggs
        ``Agg``-like objects (alias, monoid, column, kind, dtype), as :func:`~.state.plan`.
    shape
        The windows (hopping, per-event, count or session).
    max_out_of_orderness, allowed_lateness
        The key's :class:`~.clock.WatermarkClock`.
    emit
        ``"watermark"`` (default) or ``"arrival"`` (per-event windows of monoid
        aggregations only; see the module docstring).
    judge
        Lateness: ``"arrival"`` (default) judges each event against the watermark before
        it, in arrival order (as :func:`windowagg.pandas.window_agg` with lateness);
        ``"batch"`` judges every event of a micro-batch against the watermark before the
        micro-batch (as Spark judges rows: the order of rows inside a micro-batch is not
        defined there).
    factory
        ``monoid -> FIFO aggregator`` for the engine (default ``fifo.TwoStacksLite``).
    deltas
        ``False`` when no store takes the :class:`Delta` (an in-process stream, such as
        the object API's): ``feed`` and ``advance`` then return an empty one and encode
        nothing. :meth:`meta_bytes` and :meth:`pieces` are the state either way.
    carry
        Names of columns each event carries without aggregating them (any values the
        codec writes: the caller's row identity), stored with the event and returned by
        :meth:`tail`; ``feed`` takes them among its values, each an array or a callable
        ``get(positions) -> values`` asked only for the batch's events that :meth:`tail`
        may still return (the others hold None: a row's identity is built for a few
        events, not for all). Only the event log keeps events: with the pane layout they
        are ignored.
    """

    __slots__ = (
        "_aggs",
        "_carry",
        "_clock",
        "_cols",
        "_context",
        "_deltas",
        "_dropped",
        "_emit",
        "_emitted_wm",
        "_events",
        "_factory",
        "_judge",
        "_lateness",
        "_made",
        "_next",
        "_ooo",
        "_pieces",
        "_plan",
        "_revs",
        "_seq",
        "_sessions",
        "_shape",
        "_stored",
        "_wcache",
    )

    def __init__(
        self,
        aggs: Sequence[Any],
        shape: Shape,
        *,
        max_out_of_orderness: int = 0,
        allowed_lateness: int = 0,
        emit: str = "watermark",
        judge: str = "arrival",
        factory: Factory | None = None,
        planned: Plan | None = None,
        deltas: bool = True,
        context: tuple[tuple[str, Any], ...] = (),
        carry: Sequence[str] = (),
    ) -> None:
        if emit not in ("watermark", "arrival"):
            raise ArgumentError(f"emit must be 'watermark' or 'arrival', got {emit!r}")
        if judge not in ("arrival", "batch"):
            raise ArgumentError(f"judge must be 'arrival' or 'batch', got {judge!r}")
        self._context = tuple(context)  # the caller's parameters, in config()
        self._deltas = deltas  # False: no store takes the deltas, nothing is encoded
        refusal = shape.stream_refusal()
        if refusal is not None:
            raise ArgumentError(refusal)
        self._judge = judge
        self._plan = planned if planned is not None else plan(aggs)
        if emit == "arrival" and (not shape.per_event or self._plan.quantiles):
            raise ArgumentError(
                "emit='arrival' answers per-event windows (size without slide) of monoid "
                f"aggregations as of each event's arrival; got a {shape.kind} window"
                + (" with exact quantiles" if self._plan.quantiles else "")
                + ": use emit='watermark'"
            )
        self._aggs = list(aggs)
        self._shape = shape
        self._emit = emit
        self._factory = factory
        # the default aggregators made once per stream (evaluate asks only query_slices)
        self._made = (
            Reused(_default_factory)
            if factory is None and not any(g.timed for g in self._plan.groups)
            else factory
        )
        self._ooo = int(max_out_of_orderness)
        self._lateness = int(allowed_lateness)
        self._clock = WatermarkClock(self._ooo, self._lateness)
        self._cols = list(dict.fromkeys(a.column for a in aggs if a.column is not None))
        self._carry = tuple(carry)  # columns stored with the events, never aggregated
        clash = [c for c in self._carry if c in self._cols]
        if clash or len(set(self._carry)) != len(self._carry):
            raise ArgumentError(
                f"carry={list(self._carry)} repeats a name or an aggregated column "
                f"({clash or self._carry}); give the carried columns names of their own"
            )
        self._stored = [*self._cols, *self._carry]  # every column of the stored events
        self._events = _empty(self._stored)  # every stored event, sorted by (t, seq)
        self._wcache: tuple[Events, Windows] | None = None  # _windows() of these events
        self._pieces: list[int] = []  # the keys of the stored chunks
        self._next = 0  # the key of the next chunk
        self._seq = 0  # the next arrival sequence number
        self._dropped = 0  # events compaction removed (all older than every stored one)
        self._emitted_wm: int | None = None
        # windows emitted more than once and still revisable: id -> (end, revision)
        self._revs: dict[int, tuple[int, int]] = {}
        # sessions emitted and still revisable: (start, end, revision), by start
        self._sessions: list[tuple[int, int, int]] = []

    # ------------------------------------------------------------------ properties
    def __len__(self) -> int:
        """Events stored (including dead ones awaiting compaction). O(1)."""
        return len(self._events.t)

    # ------------------------------------------------------------------ state bytes
    def config(self) -> tuple[Any, ...]:
        """What a stored state must have been written for (checked by :meth:`restore`)."""
        s = self._shape
        return (
            ("layout", "events"), ("size", s.size), ("slide", s.slide), ("rows", s.rows),
            ("every", s.every), ("gap", s.gap), ("start_time", s.start_time),
            ("sizes", tuple(s.sizes)), ("max_out_of_orderness", self._ooo),
            ("allowed_lateness", self._lateness), ("emit", self._emit),
            ("judge", self._judge), ("columns", tuple(self._cols)),
            ("aggregations", agg_signature(self._aggs)), *self._context,
            *((("carry", self._carry),) if self._carry else ()),
        )  # fmt: skip

    def meta_bytes(self) -> bytes:
        """The metadata record (codec bytes): configuration, clock, emission, revisions.

        O(revisable windows + stored chunks).
        """
        clock_max = None if self._clock.watermark is None else self._clock.watermark + self._ooo
        return codec.dumps(
            (
                STATE_VERSION,
                self.config(),
                clock_max,
                self._emitted_wm,
                self._seq,
                self._dropped,
                self._next,
                [(k, e, r) for k, (e, r) in self._revs.items()],
                list(self._sessions),
            )
        )

    def pieces(self) -> dict[int, bytes]:
        """The stored events as one chunk (what a compaction writes), by its key. O(n)."""
        if not len(self._events.t):
            return {}
        return {self._next - 1 if self._pieces else self._next: encode_chunk(self._events)}

    @classmethod
    def restore(
        cls, meta: Any, pieces: Mapping[int, bytes], aggs: Sequence[Any], shape: Shape, **kw: Any
    ) -> EventLog:
        """A key's stream from its decoded metadata tuple and its chunks. O(n log n)."""
        s = cls(aggs, shape, **kw)
        if isinstance(meta, tuple) and len(meta) >= 2:  # first: another layout's says so
            check_config(meta[1], s.config())
        if not (isinstance(meta, tuple) and len(meta) == 9):
            raise CodecError("not a windowagg event-log state: clear the query's checkpoint")
        _, _config, clock_max, emitted_wm, seq, dropped, nxt, revs, sessions = meta
        if clock_max is not None:
            s._clock.observe(np.array([clock_max], dtype=np.int64))
        s._emitted_wm = emitted_wm
        s._seq = int(seq)
        s._dropped = int(dropped)
        s._next = int(nxt)
        s._revs = {int(k): (int(e), int(r)) for k, e, r in revs}
        s._sessions = [(int(a), int(b), int(r)) for a, b, r in sessions]
        s._pieces = sorted(int(k) for k in pieces)
        parts = [decode_chunk(bytes(pieces[k]), s._stored) for k in s._pieces]
        s._events = _sorted(_concat(parts, s._stored))
        return s

    # ------------------------------------------------------------------ the verbs
    def tail(self) -> Tail:
        """The events that wait for later events and are rejects when the input ends:
        count windows' last events, which complete no window (fewer than ``every``, the
        batch front ends' ``in no window: ...`` with their reason); none for any other
        shape (time settles every event). Changes nothing. O(every)."""
        s = self._shape
        n = len(self._events.t)
        if not s.positional or not n:  # time settles every event of the other shapes
            return Tail(_take(self._events, slice(0, 0)), [])
        total = self._dropped + n
        full = total // s.every * s.every  # the events up to the last complete window
        # compaction keeps them (rows >= every: the dead end before the last rows - 1)
        first = max(full - self._dropped, 0)
        return Tail(
            _take(self._events, slice(first, None)),
            [count_tail_reason(total - full, s.every)] * (n - first),
        )

    def _on_demand(self, get: Any, t: np.ndarray, order: np.ndarray) -> np.ndarray:
        """A carried column given as ``get(positions) -> values``, for the admitted events
        *order* (batch positions, by (time, arrival); *t* their times): asked only for the
        events :meth:`tail` may still return, None for the others. Count windows: an event
        older than the bound after admission keeps its position for good (every later
        event is placed after it), and the tail only moves forward, so it is in a final tail
        only if it is in the tail now: of the batch's events, among its last ``every - 1``.
        Other shapes have no tail. O(k) + ``get``."""
        out = np.full(len(t), None, dtype=object)
        s, b = self._shape, self._clock.bound
        if not s.positional or not len(t):
            return out
        need = np.arange(len(t)) >= len(t) - (s.every - 1)
        if b is not None:
            need |= t >= b
        if need.any():
            out[need] = list(get(order[need]))
        return out

    def _step(self, t: np.ndarray, values: Mapping[str, np.ndarray]) -> tuple[StepResult, Delta]:
        t = np.asarray(t, dtype=np.int64)
        vals = {c: as_column(values[c]) for c in self._cols}
        a = admit_key(self._plan, self._clock, self._judge, t, vals, self._shape)
        kept = {c: v[a.order] for c, v in vals.items()}
        for c in self._carry:  # carried along, never admitted or aggregated
            got = values.get(c)
            if got is None and len(t):
                raise ArgumentError(
                    f"feed: the stream carries the column {c!r} with every event; give it "
                    "among the values"
                )
            if callable(got):  # on demand: only for the events tail() may still return
                kept[c] = self._on_demand(got, t[a.order], a.order)
            else:
                kept[c] = np.empty(0, object) if got is None else _carried(got)[a.order]
        new = _Events(t[a.order], self._seq + a.order.astype(np.int64), kept)
        self._seq += len(t)
        cols: dict[str, Any] | None = None
        if self._emit == "arrival":
            cols, ids = self._arrival(new, a.order)
        old = self._events
        old_n, k = len(old.t), len(new.t)
        is_new = np.zeros(old_n + k, dtype=bool)
        if k and (not old_n or new.t[0] >= old.t[-1]):  # in order: an append
            self._events = _concat([old, new], self._stored)
            is_new[old_n:] = True
        elif k:  # each new event after the stored ones of its time (ties: arrival order)
            at = np.searchsorted(old.t, new.t, "right") + np.arange(k)
            is_new[at] = True
            was = ~is_new
            self._events = _Events(
                _interleave(old.t, new.t, was, at),
                _interleave(old.seq, new.seq, was, at),
                {c: _interleave(old.values[c], new.values[c], was, at) for c in self._stored},
            )
        if cols is None and self._per_event_search():
            cols, ids = self._close_per_event(is_new)
        elif cols is None:
            cols, ids = self._close(is_new, old.t)
        put: dict[int, bytes] = {}
        delete: tuple[int, ...] = ()
        enc = encode_chunk if self._deltas else _no_bytes
        if len(new.t):
            put[self._next] = enc(new)
            self._pieces.append(self._next)
            self._next += 1
        if self._compact():  # one chunk of the live events replaces every stored chunk
            delete = tuple(k for k in self._pieces if k not in put)
            put = {}
            self._pieces = []
            if len(self._events.t):
                put[self._next] = enc(self._events)
                self._pieces = [self._next]
                self._next += 1
        if not self._deltas:
            return StepResult(cols, a.refused, a.reasons, ids), NO_DELTA
        delta = Delta(self.meta_bytes(), put, delete)
        return StepResult(cols, a.refused, a.reasons, ids), delta

    # ------------------------------------------------------------------ emission
    def _windows(self) -> Windows:
        """The windows over the stored events (kept until the events change: the step's
        emission and :meth:`deadline` share them). O(n) numpy."""
        got = self._wcache
        if got is not None and got[0] is self._events:
            return got[1]
        w = self._shape.stored_windows(self._events.t, self._dropped)
        self._wcache = (self._events, w)
        return w

    def _close(
        self, is_new: np.ndarray, old_sorted: np.ndarray
    ) -> tuple[dict[str, Any], np.ndarray]:
        """The windows to emit after a merge (``is_new`` marks the batch's events among the
        stored ones; *old_sorted*: the stored times before it)."""
        wm = self._clock.watermark
        w = self._windows()
        emitted = self._emitted_wm
        r = len(w.end)
        if wm is None or not r:
            return self._columns(w, np.zeros(r, dtype=bool), np.zeros(0, np.int64), w.start)
        holds_new = self._shape.holds_new(w, is_new)
        closed = w.end <= wm
        fresh = closed if emitted is None else closed & (w.end > emitted)
        emit = fresh | (closed & holds_new)
        rev = np.zeros(r, dtype=np.int64)
        ids = self._shape.window_ids(w, self._events.seq)
        if self._shape.merges:
            self._session_revisions(w, emit, rev)
        elif emitted is not None:
            before = self._shape.emitted_before(w, is_new, old_sorted, emitted, self._dropped)
            again = np.flatnonzero(emit & ~fresh & before)
            for j in again.tolist():
                key = int(ids[j])
                prev = self._revs.get(key, (0, 0))[1]
                rev[j] = prev + 1
                self._revs[key] = (int(w.end[j]), prev + 1)
        if wm is not None:
            self._emitted_wm = wm if emitted is None else max(emitted, wm)
        return self._columns(w, emit, rev[emit], ids)

    def _per_event_search(self) -> bool:
        """Per-event windows found by searches (not the whole history): :meth:`_step` and
        :meth:`deadline` then look only at the windows they emit. O(1)."""
        s = self._shape
        return s.trails and not s.sizes

    def _close_per_event(self, is_new: np.ndarray) -> tuple[dict[str, Any], np.ndarray]:
        """:meth:`_close` for per-event windows, over the windows it emits only: those
        ending in ``(emitted, watermark]`` (window i ends at ``t[i]``) and the emitted ones
        holding a new event (ends in ``[x, x + size)``). The same windows, revisions and
        order. O(k log n + emitted windows)."""
        wm = self._clock.watermark
        t = self._events.t
        emitted = self._emitted_wm
        size = self._shape.size
        assert size is not None
        if wm is None or not len(t):
            return self._columns(assign(self._shape, t[:0]), np.zeros(0, bool), _NONE, _NONE)
        a = 0 if emitted is None else int(np.searchsorted(t, emitted, "right"))
        b = int(np.searchsorted(t, wm, "right"))  # windows 0..b-1 are closed
        parts = [np.arange(a, max(a, b), dtype=np.int64)]
        new = np.flatnonzero(is_new)
        if emitted is not None and len(new) and a:
            x = t[new]
            lo = np.searchsorted(t[:a], x, "left")
            hi = np.searchsorted(t[:a], np.minimum(x + (size - 1), wm), "right")
            parts += [np.arange(i, j, dtype=np.int64) for i, j in zip(lo, hi, strict=True) if j > i]
        c = np.unique(np.concatenate(parts)) if len(parts) > 1 else parts[0]
        end = t[c]
        w = Windows(
            start=end - size,
            end=end,
            lo=np.searchsorted(t, end - size, "right").astype(np.int64),
            hi=np.searchsorted(t, end, "right").astype(np.int64),
            keys=t,
            key_lo=end - (size - 1),
            key_hi=end,
        )
        ids = self._events.seq[c]
        rev = np.zeros(len(c), dtype=np.int64)
        # emitted before: an old event's window at or before the last emission's watermark
        for j in np.flatnonzero((c < a) & ~is_new[c]).tolist():
            key = int(ids[j])
            prev = self._revs.get(key, (0, 0))[1]
            rev[j] = prev + 1
            self._revs[key] = (int(end[j]), prev + 1)
        self._emitted_wm = wm if emitted is None else max(emitted, wm)
        return self._columns(w, np.ones(len(c), dtype=bool), rev, ids)

    def _session_revisions(self, w: Windows, emit: np.ndarray, rev: np.ndarray) -> None:
        """A session emitted supersedes the emitted sessions it contains (revision + 1)."""
        stored = self._sessions
        starts = np.asarray([s[0] for s in stored], dtype=np.int64)
        keep = np.ones(len(stored), dtype=bool)
        added: list[tuple[int, int, int]] = []
        for j in np.flatnonzero(emit).tolist():
            a, b = int(w.start[j]), int(w.end[j])
            inside = np.flatnonzero((starts >= a) & (starts < b) & keep)
            if len(inside):
                rev[j] = 1 + max(stored[i][2] for i in inside.tolist())
                keep[inside] = False
            added.append((a, b, int(rev[j])))
        merged = [s for s, k in zip(stored, keep.tolist(), strict=True) if k] + added
        self._sessions = sorted(merged)

    def _columns(
        self, w: Windows, emit: np.ndarray, rev: np.ndarray, ids: np.ndarray
    ) -> tuple[dict[str, Any], np.ndarray]:
        idx = np.flatnonzero(emit)
        sub = Windows(
            w.start[idx], w.end[idx], w.lo[idx], w.hi[idx], w.keys, w.key_lo[idx], w.key_hi[idx]
        )
        ev = self._events
        if self._shape.sizes:  # every size over the largest's windows, as in batch
            rows = np.array([len(idx)], dtype=np.int64)  # one key: its windows, its events
            bounds = np.array([0, len(ev.t)], dtype=np.int64)
            results = evaluate_sizes(
                self._plan, sub, rows, ev.t, bounds, ev.values, self._shape, self._aggs,
                self._factory,
            )  # fmt: skip
            out = columns(sub, results, sized_aggs(self._aggs, self._shape.sizes))
        else:
            results = evaluate(self._plan, sub, ev.values, self._made, ev.t)
            out = columns(sub, results, self._aggs)
        out["revision"] = np.asarray(rev, dtype=np.int64)
        return out, np.asarray(ids, dtype=np.int64)[idx]

    def _arrival(self, new: _Events, order: np.ndarray) -> tuple[dict[str, Any], np.ndarray]:
        """Per-event windows as of each admitted event's arrival (``emit="arrival"``)."""
        from windowagg.ooo import FiBA

        size = self._shape.size
        assert size is not None
        arrival = np.argsort(order, kind="stable")  # the batch's events in arrival order
        nt = new.t[arrival].tolist()
        m = len(nt)
        old = self._events
        lo = np.searchsorted(old.t, int(new.t.min()) - size, "right") if m else len(old.t)
        out: dict[str, Any] = {}
        for g in self._plan.groups:
            agg = FiBA(Unlowered(g.monoid) if g.timed else g.monoid)
            col_old = old.values[g.column] if g.column is not None else np.zeros(len(old.t))
            col_new = new.values[g.column][arrival] if g.column is not None else np.zeros(m)
            for ti, v in zip(old.t[lo:].tolist(), col_old[lo:].tolist(), strict=True):
                agg.insert(ti, (ti, v) if g.timed else v)
            res = []
            for ti, v in zip(nt, col_new.tolist(), strict=True):
                agg.insert(ti, (ti, v) if g.timed else v)
                got = agg.range_query(ti - size + 1, ti)
                res.append(g.monoid.as_of(got, ti) if g.timed else got)  # decayed: as of ti
            out[g.alias] = res
        ends = np.asarray(nt, dtype=np.int64)
        e = np.zeros(m, dtype=np.int64)
        w = Windows(ends - size, ends, e, e, e, e, e)
        cols = columns(w, out, self._aggs)
        cols["revision"] = np.zeros(m, dtype=np.int64)
        return cols, new.seq[arrival]

    # ------------------------------------------------------------------ compaction
    def _dead(self) -> int:
        """How many of the stored (sorted) events no future emission can hold. O(log n)."""
        b = self._clock.bound
        t = self._events.t
        if b is None or not len(t):
            return 0
        return self._shape.dead(t, b, self._dropped)

    def _compact(self) -> bool:
        """Drop the dead prefix when it is at least half the stored events; prune the
        revisions no later event can change. Returns whether the events were rewritten."""
        b = self._clock.bound
        if b is not None:
            revisable = self._shape.revisable
            self._revs = {k: v for k, v in self._revs.items() if revisable(v[0], b)}
            if self._shape.merges and self._sessions:
                self._sessions = self._live_sessions(b)
        dead = self._dead()
        n = len(self._events.t)
        if not dead or 2 * dead < n:
            return False
        self._events = _take(self._events, slice(dead, None))
        self._dropped += dead
        return True

    def _live_sessions(self, b: int) -> list[tuple[int, int, int]]:
        """Emitted sessions still inside a session a later event can change."""
        w = assign(self._shape, self._events.t)
        live = w.end >= b
        ls, le = w.start[live], w.end[live]
        out = []
        for a, e, r in self._sessions:
            i = int(np.searchsorted(ls, a, "right")) - 1
            if i >= 0 and a < le[i]:
                out.append((a, e, r))
        return out

    # ------------------------------------------------------------------ timers
    def deadline(self) -> int | None:
        """When the key's watermark next matters (an event-time timer), or None when no
        watermark will: the end of the oldest window not emitted yet; else the watermark at
        which every stored event is dead (nothing left to emit or revise). Count windows
        have no such watermark (their last events wait for later events, not for time):
        None once every complete window is emitted, and :meth:`expired` says whether the
        state can go. O(n)."""
        t = self._events.t
        if not len(t):
            return None
        wm = self._clock.watermark
        s = self._shape
        if self._per_event_search():  # window i ends at t[i]: the first t past wm
            i = 0 if wm is None else int(np.searchsorted(t, wm, "right"))
            if i < len(t) and self._emit == "watermark":
                return int(t[i])
        else:
            w = self._windows()
            pending = w.end[w.end > wm] if wm is not None else w.end
            if len(pending) and self._emit == "watermark":
                return int(pending.min())
        at = s.deadline(int(t.max()), self._lateness)  # None: count windows wait for events
        return None if at is None or (wm is not None and at <= wm) else at

    def expired(self) -> bool:
        """Whether the state can go: nothing it holds can be emitted or revised any more
        once the watermark reaches :meth:`deadline` (None: already). A count-window key's
        state never goes once it has admitted an event: its position count places every
        later event, and its last events wait for the later ones that complete their
        windows (compaction keeps it to the events a later window or late event can still
        reach). O(n)."""
        if self._shape.positional:
            return not len(self._events.t) and not self._dropped
        return self.deadline() is None

    def _check(self) -> None:
        """Invariants (O(n)): events sorted by (time, arrival), unique sequence numbers."""
        e = self._events
        order = np.lexsort((e.seq, e.t))
        if not np.array_equal(order, np.arange(len(e.t))):
            raise AssertionError("EventLog: stored events are not sorted by (time, arrival)")
        if len(np.unique(e.seq)) != len(e.seq):
            raise AssertionError("EventLog: two stored events share a sequence number")
