"""One key's streaming state over the windows engine: pane partials or an event log, the clock,
revisions.

=================  ==========================================================================
layouts            chosen by the shape and the aggregations, never by a size
                   (:attr:`KeyStream.layout`):
                   ``"panes"`` (:mod:`.panes`): hopping and tumbling windows, one size
                   or several (``Shape.sizes``: the largest size's tree answers every
                   size), whose aggregations are all monoids: a tree of pane partials
                   (pane = ``gcd(size, slide)``), O(window / slide) per key whatever the
                   event rate; ``"sessions"`` (:mod:`.sessions`): session windows of
                   monoids, the first session that can still change folded below the
                   lateness bound over the event log's newer events, O(1 + rate x
                   lateness); ``"trailing"`` (:mod:`.trailing`): per-event windows of
                   monoids, one ``ooo.FiBA`` per aggregation answering range queries;
                   ``"events"`` (:class:`~.event_log.EventLog`): count windows, the
                   per-event and session windows the others do not take (exact
                   quantiles, polynomial decay, a ``factory``) (several sizes: every
                   size's columns per row of the largest size,
                   :func:`~.sizes.evaluate_sizes`): the key's retained events
event log          :mod:`.event_log` (:class:`EventLog`): the retained events, their
                   chunks, compaction and cost
metadata           one small record: the configuration, the clock's newest event time, the
                   watermark of the last emission, the next sequence number, the
                   revisions of windows emitted more than once (event log: also the next
                   chunk key, how many events compaction dropped, emitted sessions)
per micro-batch    admission (:func:`~.records.admit_key` with the key's
                   :class:`~.clock.WatermarkClock`: late and non-finite events, and times
                   in no hopping window (``size < slide``), refused by position, with a
                   reason), then the layout's update, and the windows to
                   emit: those the watermark closed in this batch (``revision`` 0) and the
                   closed ones a late-but-accepted event changed (``revision`` + 1). Event
                   log: merge into the retained events, assignment (:func:`~.assign.assign`)
                   and the aggregators (:func:`~.state.evaluate`) for exactly those windows
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
deltas             :class:`~.records.Delta` per micro-batch: the metadata, the pieces to put
                   and the pieces to delete, by integer key (panes: the panes touched or
                   frozen, and the panes evicted; event log: the new chunk, or at
                   compaction every chunk replaced by one)
bytes              the versioned ``windowagg.codec`` (numpy buffers as ``bytes``), never
                   pickle; a state written for another configuration raises ``CodecError``
time               per layout: :mod:`.panes`, :mod:`.sessions`, :mod:`.trailing`,
                   :mod:`.history`, :mod:`.event_log`
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
from typing import Any

import numpy as np

from windowagg import codec
from windowagg.errors import ArgumentError, CodecError
from windowagg.windows.engine.event_log import EventLog
from windowagg.windows.engine.history import HistoryFold
from windowagg.windows.engine.history import fits as history_fits
from windowagg.windows.engine.panes import PaneStream, fits
from windowagg.windows.engine.records import STATE_VERSION, Delta, StepResult, Tail, empty_events
from windowagg.windows.engine.shapes import Shape
from windowagg.windows.engine.state import Factory, Plan, plan
from windowagg.windows.engine.trailing import TrailingFiBA
from windowagg.windows.engine.trailing import fits as trailing_fits

__all__ = ["STATE_VERSION", "Delta", "EventLog", "KeyStream", "StepResult", "Tail"]


def _check_options(shape: Shape, emit: str, judge: str) -> None:
    """:class:`KeyStream`'s own checks of its options (``ArgumentError``). O(1)."""
    if emit not in ("watermark", "arrival"):
        raise ArgumentError(f"emit must be 'watermark' or 'arrival', got {emit!r}")
    if judge not in ("arrival", "batch"):
        raise ArgumentError(f"judge must be 'arrival' or 'batch', got {judge!r}")
    if shape.sizes and emit != "watermark":
        raise ArgumentError(
            f"several sizes ({shape.sizes}) are emitted when the watermark closes their "
            "shared window end; use emit='watermark', or one query per size with "
            f"emit={emit!r}"
        )


def _layout_of(
    aggs: Sequence[Any],
    shape: Shape,
    p: Plan,
    emit: str,
    factory: Factory | None,
    carry: Sequence[str],
) -> type[PaneStream | TrailingFiBA | EventLog | HistoryFold]:
    """The layout class :class:`KeyStream` holds for these windows and aggregations (its
    constructor makes one, :meth:`KeyStream.restore` has that class restore one). O(aggs)."""
    from windowagg.windows.engine import sessions  # it builds on EventLog

    if fits(shape, p, emit):
        return PaneStream
    if not carry and history_fits(shape, p, aggs):  # whole history: P + revisable
        return HistoryFold
    if not carry and trailing_fits(shape, p, emit, factory):  # per-event: FiBAs
        return TrailingFiBA
    return sessions.OpenSessions if sessions.fits(shape, p) else EventLog


class KeyStream:
    """One key's streaming windows over the engine: it holds the state layout its shape and
    aggregations call for and forwards to it (see the module docstring).

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
    context
        The caller's own parameters that change answers, as ``(name, value)`` pairs
        (Spark: the time unit of numeric times, the event-time timers): stored in the
        configuration with the engine's, and :meth:`restore` refuses a state written
        with other values (``CodecError`` naming each).
    carry
        Columns the event log stores with each event without aggregating them (the
        caller's row identity: :meth:`tail` returns them); see :class:`EventLog`.
    """

    __slots__ = ("_state",)

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
        _check_options(shape, emit, judge)
        p = planned if planned is not None else plan(aggs)
        lateness = {"max_out_of_orderness": max_out_of_orderness,
                    "allowed_lateness": allowed_lateness}  # fmt: skip
        kind = _layout_of(aggs, shape, p, emit, factory, carry)
        self._state: PaneStream | TrailingFiBA | EventLog | HistoryFold
        if kind is PaneStream:
            self._state = PaneStream(
                aggs, shape, judge=judge, factory=factory, planned=p, deltas=deltas,
                context=context, **lateness,
            )  # fmt: skip
        elif kind is HistoryFold:
            self._state = HistoryFold(
                aggs, shape, emit=emit, judge=judge, factory=factory, planned=p,
                deltas=deltas, context=context, **lateness,
            )  # fmt: skip
        elif kind is TrailingFiBA:
            self._state = TrailingFiBA(
                aggs, shape, emit=emit, judge=judge, planned=p, deltas=deltas,
                context=context, **lateness,
            )  # fmt: skip
        else:
            assert issubclass(kind, EventLog)  # or the sessions built on it
            self._state = kind(
                aggs,
                shape,
                emit=emit,
                judge=judge,
                factory=factory,
                planned=p,
                deltas=deltas,
                context=context,
                carry=carry,
                **lateness,
            )

    @property
    def layout(self) -> str:
        """``"panes"`` (hopping windows of monoids: :mod:`.panes`), ``"sessions"``
        (session windows of monoids: :mod:`.sessions`), ``"history"`` (the whole history
        of decayed aggregations: :mod:`.history`), ``"trailing"`` (per-event windows
        of monoids: :mod:`.trailing`) or ``"events"`` (the event log: every other shape,
        exact quantiles). O(1)."""
        if isinstance(self._state, PaneStream):
            return "panes"
        return str(getattr(self._state, "name", "events"))

    @property
    def on_demand(self) -> bool:
        """Whether a micro-batch reads only the stored pieces it touches, one look-up each
        (the pane tree of monoids: O(log W) nodes per emitted window; the history fold),
        rather than, in effect, all of them: the event log and the layouts built on it
        read every piece, and the pane layout with exact quantiles refills its cursor from
        the window's value pieces at every restore (O(window values), the bulk of its
        state). A store that pays a round trip per look-up (Spark's ``MapState``) reads the
        latter in one scan. O(1)."""
        s = self._state
        if isinstance(s, PaneStream):
            return not s._plan.quantiles
        return getattr(s, "reads", None) == "on_demand"

    @property
    def watermark(self) -> int | None:
        """The key's watermark (None before its first event). O(1)."""
        return self._state.watermark

    @property
    def bound(self) -> int | None:
        """Events older than this are late (``watermark - allowed_lateness``). O(1)."""
        return self._state.bound

    def __len__(self) -> int:
        """Entries stored: events (event log), or panes and open panes' events. O(1)."""
        return len(self._state)

    def meta_bytes(self) -> bytes:
        """The metadata record (codec bytes). O(revisable windows)."""
        return self._state.meta_bytes()

    def pieces(self) -> dict[int, bytes]:
        """Every stored piece by key: an equivalent of what a store holds. O(state)."""
        return self._state.pieces()

    def store_rows(self, keys: np.ndarray) -> np.ndarray:
        """The key-value store row of each piece key (the layout's grouping). O(len(keys))."""
        return self._state.store_rows(keys)

    @classmethod
    def restore(
        cls,
        meta: bytes | None,
        pieces: Mapping[int, bytes],
        aggs: Sequence[Any],
        shape: Shape,
        **kwargs: Any,
    ) -> KeyStream:
        """A key's stream from its stored metadata and pieces (None: a new key).

        O(stored pieces): the event log also sorts its events (O(n log n)).
        """
        if meta is None:
            return cls(aggs, shape, **kwargs)
        # the layout the constructor would make, without making it: its restore does
        emit = kwargs.get("emit", "watermark")
        _check_options(shape, emit, kwargs.get("judge", "arrival"))
        p = kwargs.get("planned")
        if p is None:
            p = plan(aggs)
        kind = _layout_of(aggs, shape, p, emit, kwargs.get("factory"), kwargs.get("carry", ()))
        with codec.decoding("a windowagg stream state"):
            rec = codec.loads(meta)
        if not (isinstance(rec, tuple) and len(rec) >= 2 and rec[0] == STATE_VERSION):
            raise CodecError(
                f"not a windowagg stream state of version {STATE_VERSION}: clear the query's "
                "checkpoint or run the windowagg version that wrote it"
            )
        log = issubclass(kind, EventLog)  # the event log, or a layout built on it
        emits = log or issubclass(kind, TrailingFiBA | HistoryFold)  # they take emit=
        kw = {k: v for k, v in kwargs.items()
              if (k != "emit" or emits) and (k != "carry" or log)}  # fmt: skip
        kw["planned"] = p
        s = cls.__new__(cls)
        s._state = kind.restore(rec, pieces, aggs, shape, **kw)
        return s

    def feed(self, t: np.ndarray, values: Mapping[str, np.ndarray]) -> tuple[StepResult, Delta]:
        """Admit one micro-batch (arrival order) and emit what it closed or revised.

        Returns the windows and refused positions, and the :class:`Delta` to store. The
        event log: O(m log m + n) numpy + the aggregators over the emitted windows; the
        panes: O(m log m + (q + r) log P + P) (:mod:`.panes`). A micro-batch that raises
        (a user monoid's ``combine`` or ``lower``) changes nothing: a later one answers as
        if it had never come.
        """
        return self._state.feed(t, values)

    def advance(self, watermark: int) -> tuple[StepResult, Delta]:
        """Raise the key's watermark to *watermark* (e.g. Spark's global one) and emit
        what that closes. No-op below the key's own watermark."""
        return self._state.advance(watermark)

    def tail(self) -> Tail:
        """The events that complete no window yet and are rejects when the input ends
        (count windows' last events, fewer than ``every``, with the batch front ends'
        reason; no other shape has any), in (time, arrival) order with their carried
        columns. The object API's and :func:`windowagg.stream`'s close report them. Changes
        nothing. O(every).

        >>> from windowagg.aggs import parse_aggs
        >>> s = KeyStream(parse_aggs(["sum(v)"]), Shape(rows=3, every=2), carry=["row"])
        >>> _ = s.feed(np.array([1, 2, 3, 4, 5]), {"v": np.ones(5), "row": list("abcde")})
        >>> tail = s.tail()
        >>> tail.events.t.tolist(), tail.events.values["row"].tolist(), tail.reasons[0][:40]
        ([5], ['e'], "in no window: one of its key's last 1 ev")
        """
        if isinstance(self._state, EventLog):
            return self._state.tail()
        return Tail(empty_events([]), [])

    def deadline(self) -> int | None:
        """When the key's watermark next matters (an event-time timer), or None when no
        watermark will: the end of the oldest window not emitted yet; else the watermark at
        which nothing stored can be emitted or revised any more (count windows: None, their
        last events wait for later events; :meth:`expired` says whether the state can go).
        O(stored)."""
        return self._state.deadline()

    def expired(self) -> bool:
        """Whether the key's state can go once the watermark passes :meth:`deadline`
        (None: it can go now): nothing stored can be emitted or revised any more. Count
        windows: never once an event was admitted (see :meth:`EventLog.expired`).
        O(stored)."""
        return self._state.expired()

    def _check(self) -> None:
        """The layout's invariants (O(stored))."""
        self._state._check()
