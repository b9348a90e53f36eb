"""One key's whole-history decayed aggregations in bounded state: a frozen partial and the
events a late event can still revise.

Fact card
---------
=================  ==========================================================================
windows            whole history (a decayed aggregation with no size: per-event windows as
                   long as every time's span, :data:`~.assign.HISTORY`): the window of event
                   e holds every event of the key at or before e's time (ties included),
                   from the key's first event time
idea               every window still to emit or revise ends at or after the lateness bound
                   b, so every event older than b is in all of them: those events are ONE
                   partial P (forward decay: Cormode, Shkapenyuk, Srivastava, Xu 2009; the
                   decayed summaries: Cormode, Korn, Tirthapura 2007, sections 4.1, 4.3).
                   The window of e is answered as ``P ⊗ fold(retained events <= e)``, as of
                   e's time
which aggregations every one a timed monoid (``needs_time``) that declares ``partial``:
                   ``"constant"`` (``ExpDecayed``: ``ewm_mean``, ``decayed_sum``,
                   ``decayed_count``; P = (landmark, S, W)) or ``"summary"``
                   (``decayed_pNN``, ``top_k``: P is the mergeable summary, compacted as it
                   grows). ``"events"`` (polynomial ``decayed_sum``/``ewm_mean``/
                   ``decayed_count``) and timed monoids that declare nothing keep every
                   event: :func:`fits` refuses them over the whole history
                   (``ArgumentError`` naming the alternatives)
keeps              metadata: the clock, the emitted watermark, revisions, the key's first
                   and newest event times, the chunk keys, and each exponential
                   aggregation's P (three numbers); piece :data:`FROZEN_KEY`: the
                   summaries' P (codec bytes), rewritten when the bound passes events;
                   chunks ``(n << 6) | 62``: the events with t >= the lateness bound (int64
                   time, int64 arrival number, float64 values)
per micro-batch    admission, merge into the retained events (O(m log m + L)), the windows
                   to emit (fresh: ends in (emitted, watermark]; revised: emitted ends >=
                   the oldest new event), answered per aggregation by one seeded verb
                   (:func:`~windowagg.sketches.forward_decay.exp_slices_from`: one native
                   ``decay_slices`` call plus numpy; ``slices_from`` of a summary: one copy
                   of P extended event by event), then the events below the new bound folded
                   into P (O(folded)) and their chunks deleted; the new events and the live
                   events of a chunk that held dead ones go into one new chunk
state              O(1 + L): metadata ~ 300 B + 24 B x each of the L retained events (one
                   more value column: + 8 B), + one summary per summary aggregation; any
                   history length
emit="arrival"     each event's window as of its arrival (P and the retained events that
                   arrived before it), never revised
paper              Cormode, Shkapenyuk, Srivastava, Xu, "Forward decay" (ICDE 2009);
                   Cormode, Korn, Tirthapura, "Exponentially decayed aggregates on data
                   streams" (ICDE 2008)
=================  ==========================================================================

Examples
--------
>>> import numpy as np
>>> from windowagg.aggs import parse_aggs
>>> from windowagg.windows.engine.assign import HISTORY
>>> s = HistoryFold(parse_aggs(["decayed_sum(v, half_life=10us)"]), Shape(size=HISTORY),
...                 allowed_lateness=5)
>>> out, _ = s.feed(np.array([0, 10, 30]), {"v": np.array([4.0, 1.0, 2.0])})
>>> out.columns["end"].tolist(), out.columns["decayed_sum_v"].tolist()
([0, 10, 30], [4.0, 3.0, 2.75])
>>> len(s), s.frozen[0]   # 0 and 10 are below the bound 25: one partial
(1, (10, 3.0, 1.5))
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import numpy as np

from windowagg import codec
from windowagg.errors import ArgumentError, CodecError
from windowagg.windows.engine.assign import Windows
from windowagg.windows.engine.clock import WatermarkClock
from windowagg.windows.engine.emit import columns
from windowagg.windows.engine.layout import Layout
from windowagg.windows.engine.records import (
    NO_DELTA,
    STATE_VERSION,
    Delta,
    Events,
    StepResult,
    admit_key,
    agg_signature,
    as_column,
    check_config,
    concat_events,
    decode_events,
    describe_monoid,
    empty_events,
    encode_events,
    take_events,
)
from windowagg.windows.engine.shapes import Shape
from windowagg.windows.engine.state import Factory, Plan, Unlowered, plan

__all__ = ["CHUNK_TAG", "FROZEN_KEY", "HistoryFold", "chunk_key", "fits"]

#: The tag of an event chunk's piece key: ``(n << 6) | CHUNK_TAG``.
CHUNK_TAG = 62
#: The piece holding the summaries' frozen partials: ``(0 << 6) | 61``.
FROZEN_KEY = 61
#: Declared ``partial`` values whose whole history is one bounded partial.
_BOUNDED = ("constant", "summary")


def chunk_key(n: int) -> int:
    """The piece key of the *n*-th event chunk. O(1).

    >>> chunk_key(0), chunk_key(3)
    (62, 254)
    """
    return (n << 6) | CHUNK_TAG


def whole_history(shape: Shape) -> bool:
    """Whether *shape* is each key's whole history (per-event windows at least
    :data:`~.assign.HISTORY` long). O(1)."""
    return shape.whole_history and not shape.sizes


def fits(shape: Shape, p: Plan, aggs: Sequence[Any]) -> bool:
    """Whether *shape* and the planned aggregations take :class:`HistoryFold`: the whole
    history, every aggregation a timed monoid declaring a bounded ``partial``, no exact
    quantile. Raises ``ArgumentError`` for the whole history of a timed aggregation whose
    partial is its events (polynomial decay, or a timed monoid declaring no ``partial``):
    a stream of it would keep every event of the key forever. O(aggregations)."""
    if not whole_history(shape):
        return False
    by_alias = {getattr(a, "alias", None): a for a in aggs}
    for g in p.groups:
        if g.timed and getattr(g.monoid, "partial", None) not in _BOUNDED:
            raise ArgumentError(_refusal(by_alias.get(g.alias), g.monoid))
    return bool(p.groups) and not p.quantiles and all(g.timed for g in p.groups)


def _refusal(a: Any, m: Any) -> str:
    """The refusal of a whole-history stream of aggregation *a* (monoid *m*)."""
    name = f"{getattr(a, 'alias', '?')} ({describe_monoid(m)})"
    declared = getattr(m, "partial", None)
    if declared is None:
        return (
            f"{name} with no size keeps every event of the key in a stream: its timed monoid "
            "declares no partial= ('constant' or 'summary' when its partial has a bounded "
            "size); declare one, or give size=... (a window bounds the events kept)"
        )
    return (
        f"{name} with no size keeps every event of the key in a stream (polynomial decay's "
        "partial is its events); give size=..., or half_life=... (exponential decay: three "
        "numbers per key), or decayed_pNN(..., decay=poly(...)) (a bounded summary); batch "
        "window_agg takes it as it is"
    )


def _encode_summary(m: Any, s: Any) -> Any:
    """A frozen summary as codec-plain bytes (value division stores its decay apart)."""
    from windowagg.sketches.value_division import ValueDivision

    if s is None:
        return None
    if isinstance(s, ValueDivision):
        return s.to_bytes()
    return codec.dumps(s)


def _decode_summary(m: Any, data: Any) -> Any:
    from windowagg.sketches.value_division import ValueDivision

    if data is None:
        return None
    if not isinstance(data, bytes):
        raise CodecError("a whole-history summary piece that is not bytes: the state is corrupted")
    decay = getattr(m, "_decay", None)
    if decay is not None:
        return ValueDivision.from_bytes(data, decay)
    with codec.decoding("a whole-history summary"):
        return codec.loads(data)


class HistoryFold(Layout):
    """One key's whole-history decayed aggregations: P and the revisable events (see the
    module docstring). Parameters as :class:`~.stream.EventLog`."""

    name: ClassVar[str] = "history"
    #: Spark reads this layout's pieces one by one (``MapStateView``): the metadata names
    #: the few chunks and the summary piece it needs.
    reads: ClassVar[str] = "on_demand"

    __slots__ = (
        "_aggs",
        "_chunk",
        "_clock",
        "_cols",
        "_context",
        "_deltas",
        "_emit",
        "_emitted_wm",
        "_events",
        "_first",
        "_frozen",
        "_judge",
        "_lateness",
        "_newest",
        "_next",
        "_ooo",
        "_plan",
        "_revs",
        "_seq",
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
        deltas: bool = True,
        context: tuple[tuple[str, Any], ...] = (),
    ) -> None:
        if emit not in ("watermark", "arrival"):
            raise ArgumentError(f"emit must be 'watermark' or 'arrival', got {emit!r}")
        if judge not in ("arrival", "batch"):
            raise ArgumentError(f"judge must be 'arrival' or 'batch', got {judge!r}")
        self._plan = planned if planned is not None else plan(aggs)
        if not fits(shape, self._plan, aggs):
            raise ArgumentError(
                "HistoryFold keeps the whole history (no size) of decayed aggregations "
                f"declaring a bounded partial; got {shape.kind} windows of "
                f"{[describe_monoid(g.monoid) for g in self._plan.groups]}"
            )
        self._context = tuple(context)
        self._deltas = deltas
        self._judge = judge
        self._emit = emit
        self._aggs = list(aggs)
        self._shape = shape
        self._ooo = int(max_out_of_orderness)
        self._lateness = int(allowed_lateness)
        self._clock = WatermarkClock(self._ooo, self._lateness)
        self._cols = list(dict.fromkeys(a.column for a in aggs if a.column is not None))
        self._events = empty_events(self._cols)  # the retained events, sorted (t, seq)
        self._chunk = np.empty(0, dtype=np.int64)  # each retained event's chunk key
        self._next = 0  # the number of the next chunk
        self._seq = 0
        self._emitted_wm: int | None = None
        self._revs: dict[int, tuple[int, int]] = {}  # id -> (end, revision), revised ones
        self._first: int | None = None  # the key's first event time (every window's start)
        self._newest: int | None = None
        # per aggregation its frozen partial P (None: nothing folded yet)
        self._frozen: tuple[Any, ...] = tuple(None for _ in self._plan.groups)

    # ------------------------------------------------------------------ properties
    @property
    def frozen(self) -> tuple[Any, ...]:
        """Each aggregation's partial of the events below the bound (None: none). O(1)."""
        return self._frozen

    def __len__(self) -> int:
        """The events retained (those a late event can still revise). O(1)."""
        return len(self._events.t)

    # ------------------------------------------------------------------ state bytes
    def config(self) -> tuple[Any, ...]:
        """What a stored state must have been written for (checked by :meth:`restore`)."""
        s = self._shape
        return (
            ("layout", "history"), ("size", s.size), ("slide", s.slide), ("rows", s.rows),
            ("every", s.every), ("gap", s.gap), ("start_time", s.start_time),
            ("sizes", tuple(s.sizes)), ("max_out_of_orderness", self._ooo),
            ("allowed_lateness", self._lateness), ("emit", self._emit),
            ("judge", self._judge), ("columns", tuple(self._cols)),
            ("aggregations", agg_signature(self._aggs)), *self._context,
        )  # fmt: skip

    def _exp_frozen(self) -> list[Any]:
        """The metadata's partials: the exponential aggregations' (three numbers each)."""
        return [
            p if getattr(g.monoid, "partial", None) == "constant" else None
            for g, p in zip(self._plan.groups, self._frozen, strict=True)
        ]

    def _summaries(self) -> list[int]:
        """The positions of the summary aggregations."""
        return [
            i
            for i, g in enumerate(self._plan.groups)
            if getattr(g.monoid, "partial", None) == "summary"
        ]

    def meta_bytes(self) -> bytes:
        """The metadata record (codec bytes). O(revisable windows + chunks)."""
        clock_max = None if self._clock.watermark is None else self._clock.watermark + self._ooo
        return codec.dumps(
            (
                STATE_VERSION,
                self.config(),
                clock_max,
                self._emitted_wm,
                self._seq,
                self._next,
                [(k, e, r) for k, (e, r) in self._revs.items()],
                self._first,
                self._newest,
                np.unique(self._chunk).tolist(),
                self._exp_frozen(),
            )
        )

    def _frozen_piece(self) -> bytes | None:
        """The summaries' frozen partials as one piece (None: no summary aggregation)."""
        idx = self._summaries()
        if not idx:
            return None
        groups = self._plan.groups
        return codec.dumps([_encode_summary(groups[i].monoid, self._frozen[i]) for i in idx])

    def pieces(self) -> dict[int, bytes]:
        """Every stored piece by key: the chunks and the summaries' piece. O(state)."""
        out: dict[int, bytes] = {}
        for k in np.unique(self._chunk).tolist():
            out[k] = encode_events(take_events(self._events, self._chunk == k))
        frozen = self._frozen_piece()
        if frozen is not None and any(self._frozen[i] is not None for i in self._summaries()):
            out[FROZEN_KEY] = frozen
        return out

    @classmethod
    def restore(
        cls, meta: Any, pieces: Mapping[int, bytes], aggs: Sequence[Any], shape: Shape, **kw: Any
    ) -> HistoryFold:
        """A key's stream from its decoded metadata tuple and its pieces: reads the chunks
        the metadata names and the summaries' piece, nothing else. O(state)."""
        s = cls(aggs, shape, **kw)
        if isinstance(meta, tuple) and len(meta) >= 2:
            check_config(meta[1], s.config())
        if not (isinstance(meta, tuple) and len(meta) == 11):
            raise CodecError("not a windowagg whole-history state: clear the query's checkpoint")
        (_, _config, clock_max, emitted_wm, seq, nxt, revs, first, newest, chunks, exp) = meta
        if clock_max is not None:
            s._clock.observe(np.array([clock_max], dtype=np.int64))
        s._emitted_wm = emitted_wm
        s._seq = int(seq)
        s._next = int(nxt)
        s._revs = {int(k): (int(e), int(r)) for k, e, r in revs}
        s._first = None if first is None else int(first)
        s._newest = None if newest is None else int(newest)
        groups = s._plan.groups
        if not (isinstance(exp, list) and len(exp) == len(groups)):
            raise CodecError("a whole-history state of other aggregations: clear the checkpoint")
        frozen: list[Any] = [
            None if p is None else (int(p[0]), float(p[1]), float(p[2])) for p in exp
        ]
        idx = s._summaries()
        if idx:
            data = pieces.get(FROZEN_KEY)
            if data is not None:
                with codec.decoding("a windowagg whole-history summary piece"):
                    got = codec.loads(bytes(data))
                if not (isinstance(got, list) and len(got) == len(idx)):
                    raise CodecError("a whole-history summary piece of other aggregations")
                for i, b in zip(idx, got, strict=True):
                    frozen[i] = _decode_summary(groups[i].monoid, b)
        s._frozen = tuple(frozen)
        parts: list[Events] = []
        keys: list[np.ndarray] = []
        for k in chunks:
            data = pieces.get(int(k))
            if data is None:
                raise CodecError(f"whole-history chunk {k} is missing: the state is corrupted")
            e = decode_events(bytes(data), s._cols)
            parts.append(e)
            keys.append(np.full(len(e.t), int(k), dtype=np.int64))
        ev = concat_events(parts, s._cols)
        order = np.lexsort((ev.seq, ev.t))
        s._events = take_events(ev, order)
        s._chunk = np.concatenate(keys)[order] if keys else np.empty(0, dtype=np.int64)
        return s

    # ------------------------------------------------------------------ the verbs
    def _step(self, t: np.ndarray, values: Mapping[str, np.ndarray]) -> tuple[StepResult, Delta]:
        t = np.asarray(t, dtype=np.int64)
        vals = {c: as_column(values[c]) for c in self._cols}
        a = admit_key(self._plan, self._clock, self._judge, t, vals, self._shape)
        new = Events(
            t[a.order],
            self._seq + a.order.astype(np.int64),
            {c: v[a.order] for c, v in vals.items()},
        )
        self._seq += len(t)
        k = len(new.t)
        if k:
            lo, hi = int(new.t[0]), int(new.t[-1])
            self._first = lo if self._first is None else min(self._first, lo)
            self._newest = hi if self._newest is None else max(self._newest, hi)
        cols: dict[str, Any] | None = None
        ids = np.empty(0, dtype=np.int64)
        if self._emit == "arrival":
            cols, ids = self._arrival(new, a.order)
        key = chunk_key(self._next)
        self._merge(new, key)
        if cols is None:
            cols, ids = self._close(new)
        put, delete = self._fold(key)
        if not self._deltas:
            return StepResult(cols, a.refused, a.reasons, ids), NO_DELTA
        return StepResult(cols, a.refused, a.reasons, ids), Delta(self.meta_bytes(), put, delete)

    def _merge(self, new: Events, key: int) -> None:
        """The new events among the retained ones, each after the retained ones of its time
        (ties: arrival order), in new arrays. O(m log(L) + L)."""
        old = self._events
        if not len(new.t):
            return
        at = np.searchsorted(old.t, new.t, "right") + np.arange(len(new.t))
        is_new = np.zeros(len(old.t) + len(new.t), dtype=bool)
        is_new[at] = True
        was = ~is_new

        def mix(a: np.ndarray, b: np.ndarray) -> np.ndarray:
            kind = object if object in (a.dtype, b.dtype) else a.dtype
            out = np.empty(len(is_new), dtype=kind)
            out[was] = a
            out[at] = b
            return out

        self._events = Events(
            mix(old.t, new.t),
            mix(old.seq, new.seq),
            {c: mix(old.values[c], new.values[c]) for c in self._cols},
        )
        self._chunk = mix(self._chunk, np.full(len(new.t), key, dtype=np.int64))

    # ------------------------------------------------------------------ emission
    def _close(self, new: Events) -> tuple[dict[str, Any], np.ndarray]:
        """The windows the watermark closed since the last emission (revision 0) and the
        emitted ones a new event joined (revision + 1), in (time, arrival) order."""
        wm = self._clock.watermark
        ev = self._events
        t = ev.t
        if wm is None or not len(t):
            return self._columns(np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64))
        emitted = self._emitted_wm
        a = 0 if emitted is None else int(np.searchsorted(t, emitted, "right"))
        b = int(np.searchsorted(t, wm, "right"))  # the windows of events 0..b-1 are closed
        start = a
        if len(new.t):  # an emitted window ending at or after a new event holds it
            start = min(a, int(np.searchsorted(t, int(new.t[0]), "left")))
        c = np.arange(start, max(start, b), dtype=np.int64)
        rev = np.zeros(len(c), dtype=np.int64)
        if emitted is not None and start < a:
            ids = ev.seq[c]
            fresh = set(new.seq.tolist())
            for j in range(a - start):  # emitted before: revised (a new event's is new)
                sid = int(ids[j])
                if sid in fresh:
                    continue
                prev = self._revs.get(sid, (0, 0))[1]
                rev[j] = prev + 1
                self._revs[sid] = (int(t[c[j]]), prev + 1)
        self._emitted_wm = wm if emitted is None else max(emitted, wm)
        return self._columns(c, rev)

    def _columns(self, c: np.ndarray, rev: np.ndarray) -> tuple[dict[str, Any], np.ndarray]:
        """The answers of the windows of retained events *c* (sorted positions)."""
        ev = self._events
        t = ev.t
        end = t[c]
        hi = np.searchsorted(t, end, "right").astype(np.int64)
        results: dict[str, Any] = {}
        for g, p in zip(self._plan.groups, self._frozen, strict=True):
            col = ev.values[g.column] if g.column is not None else np.zeros(len(t))
            results[g.alias] = self._answers(g, p, t, col, hi, end)
        first = self._first if self._first is not None else 0
        e0 = np.zeros(len(c), dtype=np.int64)
        w = Windows(np.full(len(c), first, dtype=np.int64), end, e0, hi, t, e0, end)
        out = columns(w, results, self._aggs)
        out["revision"] = np.asarray(rev, dtype=np.int64)
        return out, np.asarray(ev.seq[c], dtype=np.int64)

    @staticmethod
    def _answers(
        g: Any, p: Any, t: np.ndarray, v: np.ndarray, hi: np.ndarray, end: np.ndarray
    ) -> np.ndarray:
        """``P ⊗ (t, v)[0:hi[j]]`` as of ``end[j]`` for aggregation *g*: its seeded verb."""
        from windowagg.sketches.forward_decay import exp_slices_from

        m = g.monoid
        if getattr(m, "partial", None) == "constant":
            return exp_slices_from(m, p, t, v, hi, end)
        out: np.ndarray = m.slices_from(p, t, v, hi, end)
        return out

    def _arrival(self, new: Events, order: np.ndarray) -> tuple[dict[str, Any], np.ndarray]:
        """Each admitted event's window as of its arrival (``emit="arrival"``): P and the
        retained events that arrived before it, up to its time. O((L + m) log(L + m))."""
        from windowagg.ooo import FiBA

        arrival = np.argsort(order, kind="stable")
        nt = new.t[arrival].tolist()
        m = len(nt)
        old = self._events
        out: dict[str, Any] = {}
        lowest = min(old.t[:1].tolist() + nt, default=0)  # at or below every time held
        for g, p in zip(self._plan.groups, self._frozen, strict=True):
            agg = FiBA(Unlowered(g.monoid))
            col_old = old.values[g.column] if g.column is not None else np.zeros(len(old.t))
            col_new = new.values[g.column][arrival] if g.column is not None else np.zeros(m)
            for ti, v in zip(old.t.tolist(), col_old.tolist(), strict=True):
                agg.insert(ti, (ti, v))
            res = []
            for ti, v in zip(nt, col_new.tolist(), strict=True):
                agg.insert(ti, (ti, v))
                got = g.monoid.combine(p, agg.range_query(lowest, ti))
                res.append(g.monoid.as_of(got, ti))
            out[g.alias] = res
        ends = np.asarray(nt, dtype=np.int64)
        e0 = np.zeros(m, dtype=np.int64)
        first = self._first if self._first is not None else 0
        w = Windows(np.full(m, first, dtype=np.int64), ends, e0, e0, e0, e0, e0)
        cols = columns(w, out, self._aggs)
        cols["revision"] = np.zeros(m, dtype=np.int64)
        return cols, new.seq[arrival]

    # ------------------------------------------------------------------ the fold
    def _fold(self, key: int) -> tuple[dict[int, bytes], tuple[int, ...]]:
        """Fold the retained events below the bound into each P; store the new events and
        the live events of every chunk that held a folded one as one chunk *key*, delete
        those chunks; prune the revisions no event can change. Returns the piece changes."""
        b = self._clock.bound
        put: dict[int, bytes] = {}
        if b is not None:
            self._revs = {k: v for k, v in self._revs.items() if v[0] >= b}
        ev = self._events
        n = 0 if b is None else int(np.searchsorted(ev.t, b, "left"))
        dead_keys = np.unique(self._chunk[:n])
        if n:
            frozen = list(self._frozen)
            dead = take_events(ev, slice(0, n))
            for i, g in enumerate(self._plan.groups):
                col = dead.values[g.column] if g.column is not None else np.zeros(n)
                frozen[i] = self._fold_one(g.monoid, frozen[i], dead.t, col)
            self._frozen = tuple(frozen)
            self._events = take_events(ev, slice(n, None))
            self._chunk = self._chunk[n:]
            piece = self._frozen_piece()
            if piece is not None and self._deltas:
                put[FROZEN_KEY] = piece
        rewrite = np.isin(self._chunk, np.append(dead_keys, key))
        if rewrite.any():
            self._chunk = np.where(rewrite, key, self._chunk)
            self._next += 1
            if self._deltas:
                put[key] = encode_events(take_events(self._events, rewrite))
        delete = tuple(int(k) for k in dead_keys.tolist() if k != key)
        return put, delete

    @staticmethod
    def _fold_one(m: Any, p: Any, t: np.ndarray, v: np.ndarray) -> Any:
        """*p* with the events ``(t, v)`` (all at or after its newest) folded in, new."""
        from windowagg.sketches.forward_decay import exp_fold

        if getattr(m, "partial", None) == "constant":
            return exp_fold(m, p, t, v)
        return m.fold(p, t, v)

    # ------------------------------------------------------------------ timers
    def deadline(self) -> int | None:
        """The time of the oldest retained event whose window is not emitted (the next
        emission); else, while the key holds anything, the watermark at which nothing held
        could change (``newest + size + lateness``: past year 9999, so a key's history is
        never dropped); None for a key that never admitted an event. O(log L)."""
        if self._newest is None:
            return None
        wm = self._clock.watermark
        t = self._events.t
        if self._emit == "watermark" and len(t):
            i = 0 if wm is None else int(np.searchsorted(t, wm, "right"))
            if i < len(t):
                return int(t[i])
        size = self._shape.size
        assert size is not None
        at = self._newest + size + self._lateness
        return None if wm is not None and at <= wm else at

    def expired(self) -> bool:
        """Whether the state can go (see :meth:`deadline`). O(log L)."""
        return self.deadline() is None

    def _check(self) -> None:
        """Invariants (O(L)): retained events sorted by (time, arrival), unique arrival
        numbers, none below the bound, one chunk key each."""
        e = self._events
        order = np.lexsort((e.seq, e.t))
        if not np.array_equal(order, np.arange(len(e.t))):
            raise AssertionError("HistoryFold: retained events are not sorted by (time, arrival)")
        if len(np.unique(e.seq)) != len(e.seq):
            raise AssertionError("HistoryFold: two retained events share a sequence number")
        b = self._clock.bound
        if b is not None and len(e.t) and int(e.t[0]) < b:
            raise AssertionError(f"HistoryFold: an event at {int(e.t[0])} below the bound {b}")
        if len(self._chunk) != len(e.t):
            raise AssertionError("HistoryFold: chunk keys out of step with the events")
