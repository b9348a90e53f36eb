"""One key's session windows over the open sessions: state bounded by what can still change.

=================  ==========================================================================
shape              session windows (``gap``): a run of a key's events each at most ``gap``
                   after the one before; window ``[first, last + gap)``
operator needs     monoids (any, not necessarily commutative: partials are combined in
                   (time, arrival) order), and decayed ones with a constant-size partial
                   (exponential decay: ``ewm_mean``, ``decayed_sum``, ``decayed_count``,
                   answered as of the session's end); exact quantiles, decayed summaries
                   and polynomial decay keep the event log (:class:`~.stream.EventLog`)
ordering           out of order within the allowed lateness: an event at ``x >= bound``
                   (``bound = watermark - allowed_lateness``) may extend a session, start one,
                   or bridge two into one that supersedes the emitted ones (their revision +
                   1), as the event log does
state              the *head*: the first session that can still change, folded below the
                   bound: ``(start, last, n, partials)``, each aggregation's partial
                   (``lift`` and ``combine``, never lowered) of its ``n`` events older than
                   the bound, in (time, arrival) order; plus the retained events (those at
                   or after the bound when the head was last folded, and the ones admitted
                   since), as the event log keeps them. Why one head is enough: a late
                   event lands at ``x >= bound``, after every folded event, so a session's
                   events below the bound are a prefix of it, and only the first session
                   that can still change (``last + gap >= bound``) can have any (the next
                   one starts more than ``gap`` after it, hence after the bound). Sessions
                   that ended before the bound were emitted for good and are dropped
answer             a session holding the head: ``lower(partials ⊗ fold(its retained
                   events))``; any other: the event log's (:func:`~.state.evaluate`)
pieces             the retained events as chunks (one per micro-batch, one after a fold),
                   the head under its own key (written when a fold changes it); both keys
                   from the chunk counter, the head's in the metadata record
fold               when the events no window still to emit or revise holds (sessions
                   ending before the bound) and the head's events below the bound are at
                   least half the retained events (the event log's rule): each event is
                   folded and rewritten O(1) times amortized
time               per micro-batch of m admitted events: O(m log m + L) numpy over the L
                   retained events (at most twice the events at or after the bound) + the
                   aggregators over the emitted sessions' retained events + one combine per
                   aggregation for the head; whatever the history (a session open for days
                   included)
space              O(1 + L) per key: the head's partials (one per aggregation) and the
                   retained events; never the open session's history
paper              the event log's session assignment (Flink's merging windows) over a
                   partial aggregate per session, as Li et al.'s panes freeze a pane's
                   partial once no event can reach it
=================  ==========================================================================

Examples
--------
>>> from windowagg.aggs import parse_aggs
>>> s = OpenSessions(parse_aggs(["sum(v)", "count"]), Shape(gap=10), allowed_lateness=5)
>>> out, d = s.feed(np.array([1, 5, 40, 47]), {"v": np.array([1.0, 2.0, 3.0, 4.0])})
>>> out.columns["start"].tolist(), out.columns["sum_v"].tolist()  # [1, 15) closed at 47
([1], [3.0])
>>> s._head  # [40, 57) has 40 below the bound 42: folded
(40, 40, 1, (3.0, 1))
>>> out, d = s.feed(np.array([44, 90]), {"v": np.array([5.0, 6.0])})
>>> out.columns["start"].tolist(), out.columns["sum_v"].tolist(), out.columns["count"].tolist()
([40], [12.0], [3])
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from windowagg import codec
from windowagg.errors import AggregationError, CodecError
from windowagg.monoids.base import declared_kind
from windowagg.windows.engine.assign import Windows, assign
from windowagg.windows.engine.emit import columns
from windowagg.windows.engine.records import (
    NO_DELTA,
    Delta,
    Events,
    StepResult,
    check_config,
    take_events,
)
from windowagg.windows.engine.shapes import Shape
from windowagg.windows.engine.state import Group, Plan, aggregation_message, group_input
from windowagg.windows.engine.stream import EventLog

__all__ = ["OpenSessions", "fits"]

#: A head: (first event time, last folded event time, folded events, one partial per
#: aggregation).
Head = tuple[int, int, int, tuple[Any, ...]]


#: The ``partial`` declarations of timed monoids folded into the head: a partial of a
#: few numbers whatever it holds (exponential decay); summaries and event lists
#: (polynomial decay) stay on the event log.
_FOLDED_TIMED = frozenset({"constant"})


def fits(shape: Shape, p: Plan) -> bool:
    """Whether *shape* and the planned aggregations take this layout: session windows of
    monoids, decayed ones only where the monoid declares a constant-size partial
    (``partial = "constant"``: exponential decay); no exact quantile. O(aggregations)."""
    return (
        shape.merges
        and not p.quantiles
        and all(
            not g.timed or getattr(g.monoid, "partial", None) in _FOLDED_TIMED for g in p.groups
        )
    )


def fold_into(m: Any, acc: Any, col: np.ndarray, a: int, b: int) -> Any:
    """``acc ⊗ lift(col[a]) ⊗ ... ⊗ lift(col[b - 1])`` left to right (*acc* None: no
    partial yet). Sums are added one at a time from *acc* (as the slice verb adds a
    session's values from the identity), maxima, minima and counts by numpy and one
    ``combine``; any other monoid by its ``lift`` and ``combine``. O(b - a).

    >>> from windowagg.monoids import Sum
    >>> fold_into(Sum(), 1.0, np.array([2.0, 3.0, 4.0]), 1, 3)
    8.0
    """
    if b <= a:
        return acc
    kind = declared_kind(m)
    if col.dtype != object and kind in ("sum", "max", "min", "count"):
        part = col[a:b]
        if kind == "sum":  # one at a time, as a session's batch answer adds them
            seed = 0.0 if acc is None else acc
            return float(np.add.accumulate(np.concatenate(([seed], part)))[-1])
        got: Any = b - a if kind == "count" else float(part.max() if kind == "max" else part.min())
        return got if acc is None else m.combine(acc, got)
    lift, comb = m.lift, m.combine  # bound methods: hot loop
    vals = col[a:b].tolist()
    if acc is None:
        acc = lift(vals[0])
        vals = vals[1:]
    for v in vals:
        acc = comb(acc, lift(v))
    return acc


def _fold_group(g: Group, acc: Any, ev: Events, a: int, b: int) -> Any:
    """*acc* ⊗ group *g*'s events ``[a, b)`` (a timed monoid lifts ``(t, v)`` pairs).
    O(b - a)."""
    if g.timed:
        col = {g.column: ev.values[g.column][a:b]} if g.column is not None else {}
        pairs = group_input(g, ev.t[a:b], col)
        return fold_into(g.monoid, acc, pairs, 0, b - a)
    n = len(ev.t)
    col_all = ev.values[g.column] if g.column is not None else np.zeros(n)
    return fold_into(g.monoid, acc, col_all, a, b)


def _prepend(head: Any, rest: Any) -> Any:
    """Column *head* (one window) before column *rest*, of *rest*'s type. O(len)."""
    if isinstance(rest, np.ndarray):
        if not len(rest):
            return head
        if rest.dtype == object:
            one = np.empty(1, dtype=object)
            one[0] = head[0]
            return np.concatenate([one, rest])
        return np.concatenate([np.asarray(head, dtype=rest.dtype), rest])
    return [*head, *rest]


class OpenSessions(EventLog):
    """One key's session windows of monoids with the sessions below the lateness bound
    folded (see the module docstring). The parameters are :class:`~.stream.EventLog`'s."""

    __slots__ = ("_head", "_head_key")

    #: :attr:`~.stream.KeyStream.layout` and the configuration's layout tag.
    name = "sessions"

    def __init__(self, aggs: Sequence[Any], shape: Shape, **kw: Any) -> None:
        super().__init__(aggs, shape, **kw)
        self._head: Head | None = None
        self._head_key: int | None = None  # the head's piece key (from the chunk counter)

    def __len__(self) -> int:
        """Entries stored: retained events, and the head. O(1)."""
        return len(self._events.t) + (self._head is not None)

    # ------------------------------------------------------------------ state bytes
    def config(self) -> tuple[Any, ...]:
        """What a stored state must have been written for (checked by :meth:`restore`)."""
        return (("layout", self.name), *super().config()[1:])

    def meta_bytes(self) -> bytes:
        """The event log's metadata record and the head's piece key. O(revisable sessions)."""
        rec = codec.loads(super().meta_bytes())
        return codec.dumps((*rec, self._head_key))

    def _head_bytes(self) -> bytes:
        assert self._head is not None
        return codec.dumps(("session", *self._head))

    def pieces(self) -> dict[int, bytes]:
        """The retained events as one chunk, and the head. O(retained events)."""
        out = super().pieces()
        if self._head is not None:
            assert self._head_key is not None
            out[self._head_key] = self._head_bytes()
        return out

    @classmethod
    def restore(
        cls, meta: Any, pieces: Mapping[int, bytes], aggs: Sequence[Any], shape: Shape, **kw: Any
    ) -> OpenSessions:
        """A key's stream from its decoded metadata tuple, its chunks and its head.
        O(retained events × log)."""
        if isinstance(meta, tuple) and len(meta) >= 2:  # first: another layout's says so
            check_config(meta[1], cls(aggs, shape, **kw).config())
        if not (isinstance(meta, tuple) and len(meta) == 10):
            raise CodecError("not a windowagg session state: clear the query's checkpoint")
        hk = meta[9]
        chunks = {k: pieces[k] for k in pieces if k != hk}
        s = super().restore(meta[:9], chunks, aggs, shape, **kw)
        assert isinstance(s, OpenSessions)
        if hk is not None:
            if hk not in pieces:
                raise CodecError(f"session state: its head piece {hk} is missing: corrupted")
            with codec.decoding("a windowagg session head"):
                rec = codec.loads(bytes(pieces[hk]))
            n = len(s._plan.groups)
            if not (
                isinstance(rec, tuple) and len(rec) == 5 and rec[0] == "session"
                and isinstance(rec[4], tuple) and len(rec[4]) == n
            ):  # fmt: skip
                raise CodecError(f"piece {hk}: not a windowagg session head: corrupted state")
            s._head = (int(rec[1]), int(rec[2]), int(rec[3]), rec[4])
            s._head_key = int(hk)
        return s

    # ------------------------------------------------------------------ the step
    def _step(self, t: np.ndarray, values: Mapping[str, np.ndarray]) -> tuple[StepResult, Delta]:
        """The event log's step (merge, sessions, emission, fold); the head's piece is put
        when the fold changed it, and its old piece deleted. O(m log m + L)."""
        old_head, old_key = self._head, self._head_key
        res, delta = super()._step(t, values)
        if self._head is old_head or delta is NO_DELTA:
            return res, delta
        put, delete = dict(delta.put), delta.delete
        if self._head is not None:
            assert self._head_key is not None
            put[self._head_key] = self._head_bytes()
        if old_key is not None:
            delete = (*delete, old_key)
        return res, Delta(delta.meta, put, delete)

    def _windows(self) -> Windows:
        """The sessions: the head's first (joined with the retained events' first session
        when that starts at most ``gap`` after the head's last folded event; else alone,
        ``lo == hi == 0``), then the retained events' own. O(L) numpy."""
        got = self._wcache
        if got is not None and got[0] is self._events:
            return got[1]
        t = self._events.t
        w = assign(self._shape, t)
        h = self._head
        if h is not None:
            gap = self._shape.gap
            assert gap is not None
            if len(t) and int(t[0]) - h[1] <= gap:  # the first session holds the head
                w.start[0] = w.key_lo[0] = h[0]
            else:
                one = np.zeros(1, dtype=np.int64)
                w = Windows(
                    np.concatenate([[h[0]], w.start]),
                    np.concatenate([[h[1] + gap], w.end]),
                    np.concatenate([one, w.lo]),
                    np.concatenate([one, w.hi]),
                    w.keys,
                    np.concatenate([[h[0]], w.key_lo]),
                    np.concatenate([[h[1]], w.key_hi]),
                )
        self._wcache = (self._events, w)
        return w

    def _columns(
        self, w: Windows, emit: np.ndarray, rev: np.ndarray, ids: np.ndarray
    ) -> tuple[dict[str, Any], np.ndarray]:
        """The event log's columns; the head's session, when emitted, from its partials
        and its retained events."""
        if self._head is None or not emit[:1].any():
            return super()._columns(w, emit, rev, ids)
        rest = emit.copy()
        rest[0] = False
        out, rest_ids = super()._columns(w, rest, rev[1:], ids)
        one = Windows(w.start[:1], w.end[:1], w.lo[:1], w.hi[:1], w.keys, w.key_lo[:1],
                      w.key_hi[:1])  # fmt: skip
        head = columns(one, self._head_answers(int(w.lo[0]), int(w.hi[0]), one), self._aggs)
        head["revision"] = np.asarray(rev[:1], dtype=np.int64)
        cols = {k: _prepend(v, out[k]) for k, v in head.items()}
        return cols, np.concatenate([np.asarray(ids[:1], dtype=np.int64), rest_ids])

    def _head_answers(self, lo: int, hi: int, one: Windows) -> dict[str, list[Any]]:
        """Each aggregation of the head's session: its partial ⊗ its retained events
        ``[lo, hi)``, lowered. O(hi - lo)."""
        assert self._head is not None
        ev = self._events
        end = int(one.end[0])
        out: dict[str, list[Any]] = {}
        for g, acc in zip(self._plan.groups, self._head[3], strict=True):
            try:
                got = _fold_group(g, acc, ev, lo, hi)
                # a decayed partial is answered as of the session's end, as the batch's
                out[g.alias] = [g.monoid.as_of(got, end) if g.timed else g.monoid.lower(got)]
            except Exception as e:  # a user monoid's combine or lower: name the session
                reason = f"{type(e).__name__}: {e}"
                where = (
                    f" in the window (window_start {int(one.start[0])}, window_end "
                    f"{int(one.end[0])})"
                )
                raise AggregationError(
                    aggregation_message(g.alias, g.monoid, reason, where),
                    alias=g.alias,
                    reason=reason,
                ) from e
        return out

    # ------------------------------------------------------------------ the fold
    def _compact(self) -> bool:
        """Drop the sessions that ended before the bound and fold the first live session's
        events below it into the head, when those are at least half the retained events
        (or the head's session ended); prune the emitted sessions no event can change.
        Returns whether the retained events were rewritten. O(L) + O(folded) combines."""
        b = self._clock.bound
        if b is None:
            return False
        w = self._windows()
        t = self._events.t
        n = len(t)
        live = np.flatnonzero(w.end >= b)
        if self._sessions:
            self._sessions = self._live(w, live)
        j = int(live[0]) if len(live) else len(w.end)
        holds_head = self._head is not None and j == 0
        if j < len(w.end):
            lo = int(w.lo[j])
            k = max(lo, min(int(np.searchsorted(t, b, "left")), int(w.hi[j])))
        else:
            lo = k = n
        head_gone = self._head is not None and not holds_head
        if not head_gone and (not k or 2 * k < n):
            return False
        if k > lo:  # the live session's events below the bound: into the head
            base = self._head if holds_head else None
            ev = self._events
            parts = []
            for i, g in enumerate(self._plan.groups):
                acc = base[3][i] if base is not None else None
                try:
                    parts.append(_fold_group(g, acc, ev, lo, k))
                except Exception as e:  # a user monoid's combine: as at emission
                    reason = f"{type(e).__name__}: {e}"
                    raise AggregationError(
                        aggregation_message(g.alias, g.monoid, reason, ""),
                        alias=g.alias,
                        reason=reason,
                    ) from e
            start = base[0] if base is not None else int(t[lo])
            folded = (base[2] if base is not None else 0) + (k - lo)
            self._head = (start, int(t[k - 1]), folded, tuple(parts))
        elif not holds_head:
            self._head = None
        if self._head is not None and (k > lo or head_gone):
            self._head_key = self._next  # a new piece: the fold changed the head
            self._next += 1
        elif self._head is None:
            self._head_key = None
        self._events = take_events(self._events, slice(k, None))
        self._dropped += k
        return bool(k)

    def _live(self, w: Windows, live: np.ndarray) -> list[tuple[int, int, int]]:
        """Emitted sessions still inside a session a later event can change."""
        ls, le = w.start[live], w.end[live]
        out = []
        for a, e, r in self._sessions:
            i = int(np.searchsorted(ls, a, "right")) - 1
            if i >= 0 and a < le[i]:
                out.append((a, e, r))
        return out

    # ------------------------------------------------------------------ timers
    def deadline(self) -> int | None:
        """The end of the oldest session not emitted yet (its last event + gap); else the
        watermark at which no stored session can change (the newest event + gap +
        allowed lateness + 1); None when that has passed. O(L)."""
        t = self._events.t
        if not len(t) and self._head is None:
            return None
        wm = self._clock.watermark
        w = self._windows()
        pending = w.end[w.end > wm] if wm is not None else w.end
        if len(pending):
            return int(pending.min())
        gap = self._shape.gap
        assert gap is not None
        top = int(t.max()) if len(t) else int(w.key_hi[0])  # else the head's last event
        at = top + gap + self._lateness + 1
        return None if wm is not None and at <= wm else at

    def _check(self) -> None:
        """The event log's invariants, and the head's: its last folded event before every
        retained one, one partial per aggregation. O(L)."""
        super()._check()
        h = self._head
        if h is None:
            if self._head_key is not None:
                raise AssertionError("OpenSessions: a head key without a head")
            return
        t = self._events.t
        if len(t) and not h[1] < int(t[0]):
            raise AssertionError(f"OpenSessions: head folded up to {h[1]}, retained from {t[0]}")
        if not (h[0] <= h[1] and h[2] >= 1 and len(h[3]) == len(self._plan.groups)):
            raise AssertionError(f"OpenSessions: bad head {h!r}")
        if self._head_key is None or self._head_key in self._pieces:
            raise AssertionError("OpenSessions: the head's piece key is missing or a chunk's")
