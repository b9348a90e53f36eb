"""One key's streaming state over the windows engine: an append log of events, the clock, revisions.

=================  ==========================================================================
state              the key's retained events as arrays (int64 event time, int64 arrival
                   sequence number = row id, float64 value columns), sorted by (time,
                   arrival), kept as *chunks*: one chunk per micro-batch (its admitted
                   events), plus a small metadata record (the clock's newest event time, the
                   watermark of the last emission, the next sequence number, how many
                   events compaction dropped, the revisions of windows emitted more than
                   once)
per micro-batch    admission (:func:`~.admission.admit` with the key's
                   :class:`~.clock.WatermarkClock`: late and non-finite events, and times
                   in no hopping window (``size < slide``), refused by position, with a
                   reason), merge into the retained events, assignment
                   (:func:`~.assign.assign`) and the aggregators (:func:`~.state.evaluate`)
                   for exactly the windows to emit: those the watermark closed in this
                   batch (``revision`` 0) and the closed ones a late-but-accepted event
                   changed (``revision`` + 1)
emission           ``emit="watermark"`` (default): a window when the key's watermark passes
                   its end (per-event windows ``(t - size, t]``: when it passes ``t``), so
                   the final revision of every window equals the batch answer
                   (:func:`windowagg.pandas.window_agg`); ``emit="arrival"`` (per-event
                   windows only): each event's window at once, as of its arrival (only the
                   events that arrived before it), never revised
sessions           a late event that bridges or extends sessions gives one session that
                   *supersedes* the emitted ones it contains: its revision is one more than
                   theirs; the final answer is the emitted sessions not contained in one of
                   higher revision
deltas             :class:`Delta` per micro-batch: the new chunk to append (the batch's
                   admitted events), the new metadata, and, only at compaction, the whole
                   list of chunks to rewrite
compaction         events that no window still to be emitted or revised can hold (hopping,
                   per-event: ``t <= bound - size``; sessions: sessions ending before the
                   bound; count windows: before the first window a later event can shift)
                   are dropped when they are at least half of the stored events, so each
                   event is rewritten O(1) times amortized
bytes              the versioned ``windowagg.codec`` (numpy buffers as ``bytes``), never
                   pickle; a state written for another configuration raises ``CodecError``
time               per micro-batch of m rows over r retained events: O(m log m + r) numpy
                   (sort, merge, assignment) + the aggregators over the emitted windows
                   (O(1) amortized per event and window; O(log w) per quantile)
=================  ==========================================================================

Examples
--------
>>> import numpy as np
>>> from windowagg.aggs import parse_aggs
>>> s = KeyStream(parse_aggs(["sum(v)"]), Shape(size=10, slide=10), allowed_lateness=20)
>>> out, delta = s.feed(np.array([1, 12, 25]), {"v": np.array([1.0, 2.0, 3.0])})
>>> out.columns["end"].tolist(), out.columns["sum_v"].tolist(), out.columns["revision"].tolist()
([10, 20], [1.0, 2.0], [0, 0])
>>> out, delta = s.feed(np.array([5]), {"v": np.array([4.0])})  # late, within the lateness
>>> out.columns["end"].tolist(), out.columns["sum_v"].tolist(), out.columns["revision"].tolist()
([10], [5.0], [1])
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np

from windowagg import codec
from windowagg.errors import ArgumentError, CodecError
from windowagg.windows.engine.admission import Admitted, admit
from windowagg.windows.engine.assign import Shape, Windows, assign
from windowagg.windows.engine.clock import WatermarkClock
from windowagg.windows.engine.emit import columns
from windowagg.windows.engine.state import Factory, Plan, evaluate, plan

__all__ = ["STATE_VERSION", "Delta", "KeyStream", "StepResult"]

#: Version of the chunk and metadata records (inside the codec's own version).
STATE_VERSION = 1

_I64 = np.dtype("<i8")
_F64 = np.dtype("<f8")


class StepResult(NamedTuple):
    """One micro-batch's output for one key."""

    columns: dict[str, Any]
    """``start``, ``end``, one column per aggregation alias, ``revision`` (int64)."""
    refused: np.ndarray
    """Positions (into the batch's arrays) of the events refused, ascending."""
    reasons: list[str]
    """One reason per refused position."""
    ids: np.ndarray
    """Each emitted window's identity (int64): hopping its start, per-event its event's
    arrival sequence number, count windows their ordinal, sessions their start."""


class Delta(NamedTuple):
    """What changed in the stored state: write *meta*; append *chunk*, or replace the list
    by *rewrite* when it is not None (compaction)."""

    meta: bytes
    chunk: bytes | None
    rewrite: list[bytes] | None


class _Events(NamedTuple):
    t: np.ndarray
    seq: np.ndarray
    values: dict[str, np.ndarray]


def _empty(cols: Sequence[str]) -> _Events:
    return _Events(
        np.empty(0, np.int64), np.empty(0, np.int64), {c: np.empty(0, np.float64) for c in cols}
    )


def _concat(parts: Sequence[_Events], cols: Sequence[str]) -> _Events:
    if not parts:
        return _empty(cols)
    if len(parts) == 1:
        return parts[0]
    return _Events(
        np.concatenate([p.t for p in parts]),
        np.concatenate([p.seq for p in parts]),
        {c: np.concatenate([p.values[c] for p in parts]) for c in cols},
    )


def _take(e: _Events, idx: Any) -> _Events:
    return _Events(e.t[idx], e.seq[idx], {c: v[idx] for c, v in e.values.items()})


def _sorted(e: _Events) -> _Events:
    order = np.lexsort((e.seq, e.t))
    return _take(e, order)


def encode_chunk(e: _Events) -> bytes:
    """One chunk of events as codec bytes (little-endian int64 / float64 buffers). O(n)."""
    return codec.dumps(
        (
            STATE_VERSION,
            e.t.astype(_I64).tobytes(),
            e.seq.astype(_I64).tobytes(),
            {c: v.astype(_F64).tobytes() for c, v in e.values.items()},
        )
    )


def decode_chunk(data: bytes, cols: Sequence[str]) -> _Events:
    """The inverse of :func:`encode_chunk`; ``CodecError`` for anything else. O(n)."""
    with codec.decoding("a windowagg stream chunk"):
        rec = codec.loads(data)
    if not (isinstance(rec, tuple) and len(rec) == 4 and rec[0] == STATE_VERSION):
        raise CodecError(
            f"not a windowagg stream chunk of version {STATE_VERSION}: clear the query's "
            "checkpoint or run the windowagg version that wrote it"
        )
    _, tb, sb, vals = rec
    if not isinstance(vals, dict) or set(vals) != set(cols) or len(tb) != len(sb):
        raise CodecError(
            f"stream chunk columns {sorted(vals) if isinstance(vals, dict) else vals!r} differ "
            f"from the aggregation's {sorted(cols)}: the checkpoint belongs to another query"
        )
    n = len(tb) // 8
    out = {c: np.frombuffer(vals[c], dtype=_F64).astype(np.float64) for c in cols}
    if any(len(v) != n for v in out.values()) or len(tb) % 8:
        raise CodecError("stream chunk buffers of different lengths: the state is corrupted")
    t = np.frombuffer(tb, dtype=_I64).astype(np.int64)
    return _Events(t, np.frombuffer(sb, dtype=_I64).astype(np.int64), out)


class KeyStream:
    """One key's streaming windows over the engine (see the module docstring).

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
    """

    __slots__ = (
        "_aggs",
        "_chunks",
        "_clock",
        "_cols",
        "_dropped",
        "_emit",
        "_emitted_wm",
        "_events",
        "_factory",
        "_judge",
        "_lateness",
        "_ooo",
        "_plan",
        "_revs",
        "_seq",
        "_sessions",
        "_shape",
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
    ) -> None:
        if emit not in ("watermark", "arrival"):
            raise ArgumentError(f"emit must be 'watermark' or 'arrival', got {emit!r}")
        if judge not in ("arrival", "batch"):
            raise ArgumentError(f"judge must be 'arrival' or 'batch', got {judge!r}")
        if shape.kind == "count":
            assert shape.rows is not None
            if shape.rows < shape.every:
                raise ArgumentError(
                    f"count windows of rows={shape.rows} every={shape.every} events leave "
                    "events out of every window, and a stream cannot reject them on arrival "
                    "(a later event may still shift their position); use rows >= every in "
                    "streaming, or a batch front end, which rejects them ('in no window: ...')"
                )
        self._judge = judge
        self._plan = planned if planned is not None else plan(aggs)
        if emit == "arrival" and (shape.kind != "per_event" or self._plan.quantiles):
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
        self._ooo = int(max_out_of_orderness)
        self._lateness = int(allowed_lateness)
        self._clock = WatermarkClock(self._ooo, self._lateness)
        self._cols = list(dict.fromkeys(a.column for a in aggs if a.column is not None))
        self._events = _empty(self._cols)  # every stored event, sorted by (t, seq)
        self._chunks = 0  # how many chunks the stored list holds
        self._seq = 0  # the next arrival sequence number
        self._dropped = 0  # events compaction removed (all older than every stored one)
        self._emitted_wm: int | None = None
        # windows emitted more than once and still revisable: id -> (end, revision)
        self._revs: dict[int, tuple[int, int]] = {}
        # sessions emitted and still revisable: (start, end, revision), by start
        self._sessions: list[tuple[int, int, int]] = []

    # ------------------------------------------------------------------ properties
    @property
    def watermark(self) -> int | None:
        """The key's watermark (None before its first event). O(1)."""
        return self._clock.watermark

    @property
    def bound(self) -> int | None:
        """Events older than this are late (``watermark - allowed_lateness``). O(1)."""
        return self._clock.bound

    def __len__(self) -> int:
        """Events stored (including dead ones awaiting compaction). O(1)."""
        return len(self._events.t)

    # ------------------------------------------------------------------ state bytes
    def _config(self) -> tuple[Any, ...]:
        s = self._shape
        return (
            s.size, s.slide, s.rows, s.every, s.gap, s.start_time,
            self._ooo, self._lateness, self._emit, self._judge, tuple(self._cols),
        )  # fmt: skip

    def meta_bytes(self) -> bytes:
        """The metadata record (codec bytes): configuration, clock, emission, revisions.

        O(revisable windows).
        """
        clock_max = None if self._clock.watermark is None else self._clock.watermark + self._ooo
        return codec.dumps(
            (
                STATE_VERSION,
                self._config(),
                clock_max,
                self._emitted_wm,
                self._seq,
                self._dropped,
                self._chunks,
                [(k, e, r) for k, (e, r) in self._revs.items()],
                list(self._sessions),
            )
        )

    def chunk_bytes(self) -> list[bytes]:
        """The stored events as one chunk (what a compaction writes). O(n)."""
        return [encode_chunk(self._events)] if len(self._events.t) else []

    @classmethod
    def restore(
        cls,
        meta: bytes | None,
        chunks: Sequence[bytes],
        aggs: Sequence[Any],
        shape: Shape,
        **kwargs: Any,
    ) -> KeyStream:
        """A key's stream from its stored metadata and chunks (None: a new key). O(n log n)."""
        s = cls(aggs, shape, **kwargs)
        if meta is None:
            return s
        with codec.decoding("a windowagg stream state"):
            rec = codec.loads(meta)
        if not (isinstance(rec, tuple) and len(rec) == 9 and rec[0] == STATE_VERSION):
            raise CodecError(
                f"not a windowagg stream state of version {STATE_VERSION}: clear the query's "
                "checkpoint or run the windowagg version that wrote it"
            )
        _, config, clock_max, emitted_wm, seq, dropped, _, revs, sessions = rec
        if tuple(config) != s._config():
            raise CodecError(
                f"stream state written for {tuple(config)!r}, not {s._config()!r} (size, slide, "
                "rows, every, gap, start_time, lateness, emit, judge, columns): use a new checkpoint "
                "location for a changed query"
            )
        if clock_max is not None:
            s._clock.observe(np.array([clock_max], dtype=np.int64))
        s._emitted_wm = emitted_wm
        s._seq = int(seq)
        s._dropped = int(dropped)
        s._revs = {int(k): (int(e), int(r)) for k, e, r in revs}
        s._sessions = [(int(a), int(b), int(r)) for a, b, r in sessions]
        parts = [decode_chunk(bytes(c), s._cols) for c in chunks]
        s._events = _sorted(_concat(parts, s._cols))
        s._chunks = len(parts)
        return s

    # ------------------------------------------------------------------ the verbs
    def feed(self, t: np.ndarray, values: Mapping[str, np.ndarray]) -> tuple[StepResult, Delta]:
        """Admit one micro-batch (arrival order) and emit what it closed or revised.

        Returns the windows and refused positions, and the :class:`Delta` to store.
        O(m log m + n) numpy + the aggregators over the emitted windows.
        """
        t = np.asarray(t, dtype=np.int64)
        vals = {c: np.asarray(values[c], dtype=np.float64) for c in self._cols}
        a = self._admit(t, vals)
        new = _Events(
            t[a.order],
            self._seq + a.order.astype(np.int64),
            {c: v[a.order] for c, v in vals.items()},
        )
        self._seq += len(t)
        cols: dict[str, Any] | None = None
        if self._emit == "arrival":
            cols, ids = self._arrival(new, a.order)
        old_n = len(self._events.t)
        merged = _concat([self._events, new], self._cols)
        order = np.argsort(merged.t, kind="stable")  # old first, new in (t, arrival) order
        self._events = _take(merged, order)
        is_new = order >= old_n
        if cols is None:
            cols, ids = self._close(is_new, old_n, merged.t[:old_n])
        chunk = encode_chunk(new) if len(new.t) else None
        if chunk is not None:
            self._chunks += 1
        rewrite = self._compact()
        if rewrite is not None:
            chunk = None
        return StepResult(cols, a.refused, a.reasons, ids), Delta(self.meta_bytes(), chunk, rewrite)

    def _admit(self, t: np.ndarray, vals: Mapping[str, np.ndarray]) -> Admitted:
        """Admission (the clock per ``judge``), after the values a monoid's ``lift`` refuses
        (user monoids: ``bad_value: <error type>: <message>``; they do not move the clock).
        """
        bad: list[int] = []
        why: list[str] = []
        for g in self._plan.groups:
            if g.buffer is not None or g.column is None:
                continue  # the built-ins take every finite float (non-finite: admit)
            lift = g.monoid.lift
            for i, v in enumerate(vals[g.column].tolist()):
                if v != v or v in (float("inf"), float("-inf")):
                    continue
                try:
                    lift(v)
                except Exception as e:
                    if i not in bad:
                        bad.append(i)
                        why.append(f"bad_value: {type(e).__name__}: {e}")
        if not bad:
            return (
                self._admit_batch(t, vals)
                if self._judge == "batch"
                else admit(t, vals, self._clock, shape=self._shape)
            )
        ok = np.setdiff1d(np.arange(len(t)), np.asarray(bad, dtype=np.int64))
        sub_vals = {c: v[ok] for c, v in vals.items()}
        if self._judge == "batch":
            a = self._admit_batch(t[ok], sub_vals)
        else:
            a = admit(t[ok], sub_vals, self._clock, shape=self._shape)
        refused = np.concatenate([ok[a.refused], np.asarray(bad, dtype=np.int64)])
        reasons = a.reasons + why
        order = np.argsort(refused, kind="stable")
        return Admitted(ok[a.order], refused[order], [reasons[i] for i in order.tolist()])

    def _admit_batch(self, t: np.ndarray, vals: Mapping[str, np.ndarray]) -> Admitted:
        """Admission with every event judged against the bound before the batch. O(m log m)."""
        a = admit(t, vals, shape=self._shape)  # non-finite values, times in no window
        b = self._clock.bound
        if b is None or not len(a.order):
            self._clock.observe(t[a.order])
            return a
        late = t[a.order] < b
        keep = a.order[~late]
        self._clock.observe(t[keep])
        refused = np.concatenate([a.refused, a.order[late]])
        why = a.reasons + [f"late: {int(x)} < lateness bound {b}" for x in t[a.order[late]]]
        order = np.argsort(refused, kind="stable")
        return Admitted(keep, refused[order], [why[i] for i in order.tolist()])

    def advance(self, watermark: int) -> tuple[StepResult, Delta]:
        """Raise the key's watermark to *watermark* (e.g. Spark's global one) and emit
        what that closes. No-op below the key's own watermark. O(n) + the emitted windows."""
        self._clock.observe(np.array([int(watermark) + self._ooo], dtype=np.int64))
        return self.feed(np.empty(0, np.int64), {c: np.empty(0) for c in self._cols})

    # ------------------------------------------------------------------ emission
    def _windows(self) -> Windows:
        s = self._shape
        t = self._events.t
        if s.kind == "count":
            assert s.rows is not None
            return _count(t, s.rows, s.every, self._dropped)
        return assign(s, t)

    def _close(
        self, is_new: np.ndarray, old_n: int, old_t_unsorted: np.ndarray
    ) -> tuple[dict[str, Any], np.ndarray]:
        """The windows to emit after a merge (``is_new`` marks the batch's events)."""
        wm = self._clock.watermark
        w = self._windows()
        emitted = self._emitted_wm
        r = len(w.end)
        if wm is None or not r:
            return self._columns(w, np.zeros(r, dtype=bool), np.zeros(0, np.int64), w.start)
        new_before = np.concatenate([[0], np.cumsum(is_new)])
        holds_new = new_before[w.hi] > new_before[w.lo]
        kind = self._shape.kind
        if kind == "count":
            first_new = int(np.argmax(is_new)) if is_new.any() else len(is_new)
            holds_new = w.hi > first_new
        closed = w.end <= wm
        fresh = closed if emitted is None else closed & (w.end > emitted)
        emit = fresh | (closed & holds_new)
        rev = np.zeros(r, dtype=np.int64)
        ids = self._ids(w)
        if kind == "session":
            self._session_revisions(w, emit, rev)
        elif emitted is not None:
            before = self._emitted_before(w, is_new, old_n, old_t_unsorted, emitted)
            again = np.flatnonzero(emit & ~fresh & before)
            for j in again.tolist():
                key = int(ids[j])
                prev = self._revs.get(key, (0, 0))[1]
                rev[j] = prev + 1
                self._revs[key] = (int(w.end[j]), prev + 1)
        if wm is not None:
            self._emitted_wm = wm if emitted is None else max(emitted, wm)
        return self._columns(w, emit, rev[emit], ids)

    def _ids(self, w: Windows) -> np.ndarray:
        kind = self._shape.kind
        if kind == "per_event":
            return self._events.seq
        if kind == "count":
            return w.key_hi
        return w.start

    def _emitted_before(
        self,
        w: Windows,
        is_new: np.ndarray,
        old_n: int,
        old_t_unsorted: np.ndarray,
        emitted: int,
    ) -> np.ndarray:
        """Per window: whether it was emitted before this batch."""
        kind = self._shape.kind
        if kind == "hopping":
            new_before = np.concatenate([[0], np.cumsum(is_new)])
            olds = (w.hi - w.lo) - (new_before[w.hi] - new_before[w.lo])
            out: np.ndarray = (olds > 0) & (w.end <= emitted)
            return out
        if kind == "per_event":
            out = ~is_new & (w.end <= emitted)
            return out
        # count windows: the ordinal; emitted if it existed with an end <= emitted then
        s = self._shape
        assert s.rows is not None
        ordinal = w.key_hi
        old_t = np.sort(old_t_unsorted, kind="stable")
        last_old = ordinal * s.every + (s.every - 1) - self._dropped
        existed = last_old < old_n
        old_end = np.where(existed, old_t[np.minimum(last_old, max(old_n - 1, 0))], 0)
        out = existed & (old_end <= emitted) if old_n else existed
        return out

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
        results = evaluate(self._plan, sub, self._events.values, self._factory)
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
            agg = FiBA(g.monoid)
            col_old = old.values[g.column] if g.column is not None else np.zeros(len(old.t))
            col_new = new.values[g.column][arrival] if g.column is not None else np.zeros(m)
            for ti, v in zip(old.t[lo:].tolist(), col_old[lo:].tolist(), strict=True):
                agg.insert(ti, v)
            res = []
            for ti, v in zip(nt, col_new.tolist(), strict=True):
                agg.insert(ti, v)
                res.append(agg.range_query(ti - size + 1, ti))
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
        s = self._shape
        kind = s.kind
        if kind in ("hopping", "per_event"):
            assert s.size is not None
            return int(np.searchsorted(t, b - s.size, "right"))
        if kind == "session":
            assert s.gap is not None
            w = assign(s, t)
            live = np.flatnonzero(w.end >= b)
            return int(w.lo[live[0]]) if len(live) else len(t)
        assert s.rows is not None
        # a later event lands at a global position >= p (the events older than the
        # bound), so every window still to be emitted or changed ends at or after p and
        # starts at or after p - rows + 1
        p = self._dropped + int(np.searchsorted(t, b, "left"))
        return int(min(max(0, p - s.rows + 1 - self._dropped), len(t)))

    def _compact(self) -> list[bytes] | None:
        """Drop the dead prefix when it is at least half the stored events; prune the
        revisions no later event can change. Returns the chunks to rewrite, or None."""
        b = self._clock.bound
        if b is not None:
            if self._shape.kind != "hopping":
                self._revs = {k: v for k, v in self._revs.items() if v[0] >= b}
            else:
                self._revs = {k: v for k, v in self._revs.items() if v[0] > b}
            if self._shape.kind == "session" and self._sessions:
                self._sessions = self._live_sessions(b)
        dead = self._dead()
        n = len(self._events.t)
        if not dead or 2 * dead < n:
            return None
        self._events = _take(self._events, slice(dead, None))
        self._dropped += dead
        rewrite = self.chunk_bytes()
        self._chunks = len(rewrite)
        return rewrite

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
        """When the key's watermark next matters (an event-time timer), or None when the
        state can go: the end of the oldest window not emitted yet; else the watermark at
        which every stored event is dead (nothing left to emit or revise). O(n)."""
        t = self._events.t
        if not len(t):
            return None
        wm = self._clock.watermark
        w = self._windows()
        pending = w.end[w.end > wm] if wm is not None else w.end
        if len(pending) and self._emit == "watermark":
            return int(pending.min())
        s = self._shape
        top = int(t.max())
        if s.kind == "session":
            assert s.gap is not None
            at = top + s.gap + self._lateness + 1
        else:
            assert s.size is not None
            at = top + s.size + self._lateness
        return None if wm is not None and at <= wm else at

    def _check(self) -> None:
        """Invariants (O(n)): events sorted by (time, arrival), unique sequence numbers."""
        e = self._events
        order = np.lexsort((e.seq, e.t))
        if not np.array_equal(order, np.arange(len(e.t))):
            raise AssertionError("KeyStream: stored events are not sorted by (time, arrival)")
        if len(np.unique(e.seq)) != len(e.seq):
            raise AssertionError("KeyStream: two stored events share a sequence number")


def _count(t: np.ndarray, rows: int, every: int, offset: int) -> Windows:
    """Count windows over the stored events, which start at global position *offset*."""
    n = len(t)
    total = offset + n
    last_g = np.arange(every - 1, total, every, dtype=np.int64)
    last_g = last_g[last_g >= offset]
    first_g = np.maximum(last_g - (rows - 1), 0)
    first = np.maximum(first_g - offset, 0)
    last = last_g - offset
    return Windows(
        start=t[first],
        end=t[last],
        lo=first,
        hi=last + 1,
        keys=np.arange(offset, total, dtype=np.int64),
        key_lo=first_g,
        key_hi=(last_g - (every - 1)) // every,  # the window's ordinal
    )
