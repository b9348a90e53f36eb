"""SlidingWindows: time-based sliding, tumbling and hopping windows over any out-of-order aggregator.

=================  ==========================================================================
ordering           out-of-order (event time, watermark = max seen - max_out_of_orderness)
operator needs     monoid (associative, identity); not commutative, no inverse
windows            ``[start, end)``, ``start = origin + k*slide``, ``end = start + size``
                   (Spark's ``F.window``); tumbling when slide == size, gaps when slide > size
insert             one aggregator ``insert`` (O(log d) amortized with FiBA, d = out-of-order
                   distance) + O(1); emission: per closed non-empty window one ``bulk_evict``
                   and one ``range_query`` (O(log n) each with FiBA), empty stretches skipped
                   in O(1) via ``oldest()``
insert_many        sort O(m log m) + one ``bulk_insert`` (O(m log(d/m)) with FiBA) + emission
per-event mode     ``slide=None``: one ``range_query`` per event over ``(t - size, t]``;
                   ``accept_many``: the checks and one ``bulk_insert``, windows left to
                   the caller (``windowagg.spark`` computes them with numpy)
batched queries    ``set_range_evaluator``: one emission's range queries in one call
panes              with a commutative monoid, timestamps are coarsened to panes of width
                   gcd(size, slide) (exact results; state shrinks to one entry per pane)
space              O(entries in the open windows) (distinct timestamps, or panes)
paper              FiBA: Tangwongsan, Hirzel, Schneider, VLDB 2019 (§2 coarsening, §4 range
                   queries) and bulk FiBA (2021); windows as in Spark Structured Streaming
=================  ==========================================================================

The adapter is generic: it wraps *any* out-of-order aggregator (``ooo.FiBA``,
``ooo.Recalc`` or a factory) that stores ``(key, (count, partial))`` entries, and adds the
window policy, the watermark, lateness, rejects and emission. See ``docs/windows.md`` for
the precise semantics.

Examples
--------
A 10-unit window sliding every 5, watermark = max event time seen:

>>> from windowagg.monoids import Sum
>>> w = SlidingWindows(Sum(), 10, 5, aggregator="recalc")
>>> w.insert(6, 10), w.insert(7, 20)
([], [])
>>> w.insert(12, 5)          # watermark 12 closes [0, 10)
[WindowResult(start=0, end=10, value=30, count=2)]
>>> w.insert(3, 1)           # 3 < watermark 12 with no allowed lateness: dropped, counted
[]
>>> w.late_count, w.close()
(1, [WindowResult(start=5, end=15, value=35, count=3), WindowResult(start=10, end=20, value=5, count=1)])
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from datetime import timedelta
from typing import Any, Generic

from windowagg import codec
from windowagg._time import check_timestamp
from windowagg.errors import (
    ArgumentError,
    ArgumentTypeError,
    InvariantError,
    LateEventError,
    TimestampError,
    WindowaggError,
)
from windowagg.monoids.base import In, Monoid, Out, P
from windowagg.windows._common import (
    BAD_TIMESTAMP,
    BAD_VALUE,
    LATE,
    AggregatorSpec,
    Counted,
    LoadedState,
    Rejected,
    WindowResult,
    bad_value_error,
    bad_value_reason,
    check_bad_value_policy,
    check_duration,
    check_late_policy,
    check_value,
    dump_state,
    duration_gcd,
    floordiv,
    late_error,
    load_state,
    make_aggregator,
    pred,
    pred_for,
    resolve_origin,
    succ,
    succ_for,
    zero_like,
)

__all__ = ["SlidingWindows"]

#: ``(entries, ranges) -> [(count, lowered value)]``: see ``set_range_evaluator``.
RangeEvaluator = Callable[[list[tuple[Any, Any]], list[tuple[Any, Any]]], list[tuple[int, Any]]]

PENDING_LIMIT = 4096  # flush the pending buffer beyond this many distinct keys


def _first(item: tuple[Any, Any]) -> Any:
    return item[0]


def _float_in_int_stream(t: float) -> TimestampError:
    return TimestampError(
        f"float timestamp {t!r} in a window of int timestamps; use one timestamp type per "
        "window (or panes=True, where any mix of numbers works)"
    )


class _TimeWindows(Generic[In, P, Out]):
    """The engine behind :class:`SlidingWindows` and :class:`~windowagg.windows.SharedWindows`.

    It handles several window sizes over one aggregator: all windows share the grid of
    ends ``E0 + j*slide`` (``E0 = origin + max(size)``), and window ``(s, j)`` is
    ``[E0 + j*slide - s, E0 + j*slide)``. With one size this is exactly Spark's
    start-aligned grid ``start = origin + k*slide``.
    """

    _kind = "time"

    def __init__(
        self,
        monoid: Monoid[In, P, Out],
        sizes: tuple[Any, ...],
        slide: Any,
        *,
        origin: Any,
        max_out_of_orderness: Any,
        allowed_lateness: Any,
        late: str,
        aggregator: AggregatorSpec,
        panes: bool | None,
        bad_value: str = "side",
    ) -> None:
        for s in sizes:
            check_duration(s, "size")
        if slide is not None:
            check_duration(slide, "slide")
        zero = zero_like(sizes[0])
        if max_out_of_orderness == 0:
            max_out_of_orderness = zero
        if allowed_lateness == 0:
            allowed_lateness = zero
        check_duration(max_out_of_orderness, "max_out_of_orderness", allow_zero=True)
        check_duration(allowed_lateness, "allowed_lateness", allow_zero=True)
        check_late_policy(late)
        check_bad_value_policy(bad_value)
        durations = {
            "size": sizes[0],
            "slide": slide,
            "max_out_of_orderness": max_out_of_orderness,
            "allowed_lateness": allowed_lateness,
            **{f"sizes[{i}]": x for i, x in enumerate(sizes)},
        }
        kinds = {k: isinstance(x, timedelta) for k, x in durations.items() if x is not None}
        if len(set(kinds.values())) > 1:
            raise ArgumentTypeError(
                "durations must all be timedeltas (datetime timestamps) or all numbers; got "
                + ", ".join(f"{k}={durations[k]!r}" for k in kinds)
            )
        self._m = monoid
        self._cm = Counted(monoid)
        self._spec = aggregator
        self._agg: Any = make_aggregator(aggregator, self._cm)
        self._sizes: tuple[Any, ...] = tuple(sorted(sizes))  # ascending: emission order
        self._S = self._sizes[-1]
        self._slide = slide
        self._origin = origin
        self._ooo = max_out_of_orderness
        self._L = allowed_lateness
        self._late = late
        self._bad = bad_value
        commutative = getattr(monoid, "commutative", False) is True
        if panes is None:
            panes = commutative and slide is not None
        if panes and slide is None:
            raise ArgumentError("panes need a slide: per-event windows end at every event time")
        self._panes = bool(panes)
        self._gaps = slide is not None and slide > self._S
        if self._panes:
            self._g: Any = duration_gcd([*self._sizes, slide])
            self._A = round(slide / self._g)
            self._B = {s: round(s / self._g) for s in self._sizes}
        else:
            self._g = None
            self._A = 0
            self._B = {}
        # event-time state
        self._E0: Any = None  # end-grid origin, resolved from the first timestamp
        self._ref: Any = None  # first accepted timestamp (type reference)
        self._max: Any = None  # largest event time accepted
        self._wm: Any = None  # watermark
        self._bound: Any = None  # events with t < bound are late
        self._j_open: Any = None  # index of the oldest window not yet closed
        self._next_end: Any = None  # its end: emission happens when watermark >= it
        self._witness: Any = None
        self._has_witness = False
        self._closed = False
        self._combine = monoid.combine
        self._lift_v = monoid.lift
        self._ttype: type | None = None  # type of the first timestamp (None: not yet/closed)
        self._n_accepted = 0  # counters["accepted"], kept as an attribute for the hot path
        self._int_only = False  # int timestamps without panes: refuse float timestamps
        self._open_start: Any = None  # start of the oldest open window (largest size)
        self._int_grid = False  # pane index by exact floor division (int / datetime times)
        # largest timestamp below / smallest above a boundary, in the timestamps' own type
        self._pred: Callable[[Any], Any] = pred
        self._succ: Callable[[Any], Any] = succ
        # accepted events not yet in the aggregator: key -> (count, partial), arrival order
        self._pending: dict[Any, tuple[int, Any]] = {}
        self._range_evaluator: RangeEvaluator | None = None
        self.rejected: list[Rejected] = []
        self._counts: dict[str, int] = {
            "accepted": 0,
            BAD_TIMESTAMP: 0,
            BAD_VALUE: 0,
            LATE: 0,
            "late_accepted": 0,
            "unassigned": 0,
            "emitted": 0,
        }

    # ------------------------------------------------------------------ read-only facts

    @property
    def counters(self) -> dict[str, int]:
        """Events per outcome: accepted, bad_timestamp, bad_value, late, late_accepted,
        unassigned, and windows emitted. O(1).

        >>> from windowagg.monoids import Sum
        >>> w = SlidingWindows(Sum(), 10, 10, aggregator="recalc")
        >>> _ = w.insert_many([(1, 1), (None, 1), (25, 1), (3, 1)]); w.counters
        {'accepted': 3, 'bad_timestamp': 1, 'bad_value': 0, 'late': 0, 'late_accepted': 0, 'unassigned': 0, 'emitted': 1}
        """
        self._counts["accepted"] = self._n_accepted
        return self._counts

    @property
    def watermark(self) -> Any:
        """The current watermark (None before the first event). O(1).

        >>> from windowagg.monoids import Sum
        >>> w = SlidingWindows(Sum(), 10, 5, max_out_of_orderness=3, aggregator="recalc")
        >>> w.watermark, w.insert(20, 1), w.watermark
        (None, [], 17)
        """
        return self._wm

    @property
    def late_count(self) -> int:
        """Events refused as late (dropped, raised or side-output). O(1).

        >>> from windowagg.monoids import Sum
        >>> w = SlidingWindows(Sum(), 10, 5, aggregator="recalc")
        >>> _ = w.insert_many([(20, 1), (2, 1)]); _ = w.insert(3, 1); w.late_count
        1
        """
        return self._counts[LATE]

    @property
    def lateness_bound(self) -> Any:
        """Events with ``t < lateness_bound`` are late (None before the first event). O(1).

        ``max(watermark - allowed_lateness, start of the oldest window not yet emitted)``.

        >>> from windowagg.monoids import Sum
        >>> w = SlidingWindows(Sum(), 10, 5, allowed_lateness=100, aggregator="recalc")
        >>> _ = w.insert(22, 1); w.lateness_bound      # [15, 25) is the oldest open window
        15
        """
        return self._bound

    @property
    def aggregator(self) -> Any:
        """The wrapped out-of-order aggregator (entries ``(key, (count, partial))``).

        Reading it first hands pending events to the aggregator (one ``bulk_insert``).

        >>> from windowagg.monoids import Sum
        >>> w = SlidingWindows(Sum(), 10, 5, aggregator="recalc", panes=False)
        >>> _ = w.insert_many([(3, 1), (3, 2), (4, 5)]); list(w.aggregator)
        [(3, (2, 3)), (4, (1, 5))]
        """
        self._flush()
        return self._agg

    @property
    def panes(self) -> Any:
        """The pane width when timestamps are coarsened, else None.

        >>> from windowagg.monoids import Concat, Sum
        >>> SlidingWindows(Sum(), 600, 15).panes, SlidingWindows(Concat(), 600, 15).panes
        (15, None)
        """
        return self._g

    def __len__(self) -> int:
        """Stored entries: distinct timestamps (or panes) of the open windows.

        O(1), after handing pending events to the aggregator (one ``bulk_insert``).
        """
        self._flush()
        return len(self._agg)

    # ------------------------------------------------------------------ time arithmetic

    def _end(self, j: int) -> Any:
        return self._E0 + j * self._slide

    def _first_end_after(self, x: Any) -> int:
        """Smallest j with ``end(j) > x`` (exact for ints/timedeltas; fixed up for floats)."""
        j = floordiv(x - self._E0, self._slide) + 1
        end = self._end
        while end(j - 1) > x:
            j -= 1
        while end(j) <= x:
            j += 1
        return j

    def _key(self, t: Any) -> Any:
        if self._panes:
            g = self._g
            c = floordiv(t - self._E0, g)
            E0 = self._E0
            while E0 + c * g > t:
                c -= 1
            while E0 + (c + 1) * g <= t:
                c += 1
            return c
        return t

    def _init_time(self, t: Any) -> None:
        """Resolve the grid (first timestamp or watermark) and the timestamp type (first event).

        Raises TimestampError, changing nothing, if *t* does not work with the durations.
        """
        e0_before = self._E0
        try:
            if self._E0 is None:
                origin = resolve_origin(self._origin, t)
                self._E0 = origin if self._slide is None else origin + self._S
            if self._slide is None:
                succ_fn = succ_for(t)
                succ_fn(t - self._S)
                pred_fn = self._pred
            else:
                self._first_end_after(t)
                pred_fn = self._pred if self._panes else pred_for(t)
                pred_fn(self._end(0))
                succ_fn = self._succ
            self._key(t)
            int_grid = bool(
                self._panes
                and not isinstance(t - self._E0, float)
                and not isinstance(self._g, float)
            )
        except TimestampError:
            self._E0 = e0_before
            raise
        except (TypeError, ValueError, OverflowError) as e:
            self._E0 = e0_before
            raise TimestampError(
                f"timestamp {t!r} ({type(t).__name__}) does not work with size/slide/origin "
                f"of type {type(self._S).__name__}: {e}"
            ) from e
        self._pred = pred_fn
        self._succ = succ_fn
        self._int_grid = int_grid
        # exact int keys: window ends map to end - 1, which a float key could fall behind
        self._int_only = not self._panes and isinstance(t, int)
        self._ref = t
        # the fast path is only sound where equal types are always comparable (not for
        # datetimes: naive and aware ones share a type)
        self._ttype = type(t) if type(t) in (int, float) and not self._closed else None

    def _admit_time(self, t: Any, v: Any) -> bool:
        """The slow path of the timestamp check (a new type, NaN, or the first event). O(1).

        Validates *t*, fixes the stream's time type on the first event, and refuses floats
        in an exact-int stream; a bad timestamp is routed to ``rejected`` and False returned.
        The hot loops call it only when ``type(t)`` differs from the stream's type or t is NaN.
        """
        try:
            check_timestamp(t, self._ref)
            if self._ref is None:
                self._init_time(t)
            elif self._int_only and isinstance(t, float):
                raise _float_in_int_stream(t)
        except TimestampError as e:
            self._reject(t, v, BAD_TIMESTAMP, str(e))
            return False
        return True

    def _reject(self, t: Any, v: Any, code: str, detail: str) -> None:
        self._counts[code] += 1
        self.rejected.append(Rejected(t, v, f"{code}: {detail}"))

    def _bad_value(self, t: Any, v: Any, e: BaseException) -> None:
        """A value the monoid refused with *e*: counted, then per the ``bad_value`` policy."""
        self._counts[BAD_VALUE] += 1
        if self._bad == "side":
            self.rejected.append(Rejected(t, v, bad_value_reason(e)))
        elif self._bad == "raise":  # only if the up-front check missed it (see _precheck_values)
            raise bad_value_error(type(self).__name__, t, v, e) from e

    def _precheck_values(self, items: list[tuple[Any, Any]], *, sequential: bool) -> None:
        """``bad_value="raise"``: raise MonoidInputError if a value that would be aggregated
        is refused by the monoid (``lift`` + one ``combine``); change nothing. O(m) lifts.

        Events with a bad timestamp, late events and events in a gap are skipped (their
        own outcome comes first, as in the ingestion loops); *sequential* simulates the
        watermark event by event (per-event mode), else the burst's bound is fixed.
        """
        bound, mx, ref = self._bound, self._max, self._ref
        witness = self._witness if self._has_witness else self._m.identity
        for t, v in items:
            try:
                check_timestamp(t, ref)
                if ref is None:
                    ref = t
                if bound is not None and t < bound:
                    continue
                if self._gaps and self._E0 is not None and self._in_gap(t):
                    continue
            except (TimestampError, TypeError):
                continue
            try:
                check_value(self._m, witness, v)
            except Exception as e:
                raise bad_value_error(type(self).__name__, t, v, e) from e
            if sequential and (mx is None or t > mx):
                mx = t
                b = t - self._ooo - self._L
                if bound is None or b > bound:
                    bound = b

    def _lift(self, v: Any) -> Any:
        """``lift(v)``, checked by one ``combine`` with an earlier partial; raises on bad values."""
        p = self._m.lift(v)
        self._validate(p)
        return p

    def _late_event(self, t: Any, v: Any) -> None:
        self._counts[LATE] += 1
        if self._late == "side":
            self.rejected.append(Rejected(t, v, f"{LATE}: {t!r} < lateness bound {self._bound!r}"))

    def _in_gap(self, t: Any) -> bool:
        j = self._first_end_after(t)
        return bool(self._end(j) - self._S > t)

    # ------------------------------------------------------------------ ingestion

    def insert(self, t: Any, v: In) -> list[WindowResult[Out]]:
        """Add one event; return the windows its watermark advance closed.

        Bad timestamps and values the monoid rejects go to :attr:`rejected` (never raise);
        late events follow the ``late`` policy. With a slide, accepted events are first
        combined into a small pending buffer keyed like the aggregator (one entry per
        timestamp or pane, combined in arrival order) that is handed to the aggregator
        with one ``bulk_insert`` before any window is emitted or state is read: O(1) per
        event, plus O(p log p) per flush of p pending keys (O(log d) amortized per key with
        FiBA). Per emitted window: one ``bulk_evict`` and one ``range_query``. With
        ``slide=None``: one aggregator ``insert`` and one ``range_query`` per event.

        Examples
        --------
        >>> from windowagg.monoids import Sum
        >>> w = SlidingWindows(Sum(), 4, 4, aggregator="recalc")
        >>> w.insert(1, 2), w.insert(None, 3), w.insert(5, 1)
        ([], [], [WindowResult(start=0, end=4, value=2, count=1)])
        >>> w.rejected[0].reason
        'bad_timestamp: timestamp is None; every entry needs a timestamp'
        """
        out: list[WindowResult] = []
        if self._bad == "raise" and not self._closed:
            self._precheck_values([(t, v)], sequential=True)
        # fast path: same type as the first timestamp and not NaN needs no further checks
        if type(t) is not self._ttype or t != t:
            if self._closed:
                raise WindowaggError("window is closed; create a new one (or restore from bytes)")
            if not self._admit_time(t, v):
                return out
        bound = self._bound
        if bound is not None and t < bound:
            if self._late == "raise":
                raise late_error(t, bound)
            self._late_event(t, v)
            return out
        if self._gaps and self._in_gap(t):
            self._counts["unassigned"] += 1
            return out
        if self._slide is None:
            try:
                p = self._lift(v)
            except Exception as e:  # the monoid rejected the value: keep it, say why
                self._bad_value(t, v, e)
                return out
            self._agg.insert(t, (1, p))
        else:
            if not self._panes:
                key = t
            elif self._int_grid:
                key = (t - self._E0) // self._g
            else:
                key = self._key(t)
            pend = self._pending
            old = pend.get(key)
            try:
                p = self._lift_v(v)
                if old is None:
                    self._validate(p)
                    pend[key] = (1, p)
                else:
                    pend[key] = (old[0] + 1, self._combine(old[1], p))
            except Exception as e:  # the monoid rejected the value: keep it, say why
                self._bad_value(t, v, e)
                return out
            if len(pend) > PENDING_LIMIT:
                self._flush()
        self._n_accepted += 1
        mx = self._max
        if mx is None or t > mx:
            self._max = t
            wm = t - self._ooo
            if self._wm is None or wm > self._wm:
                nxt = self._next_end
                if nxt is not None and wm < nxt:  # no window closes: only the bound moves
                    self._wm = wm
                    lb = wm - self._L
                    o = self._open_start
                    self._bound = o if o > lb else lb
                else:
                    self._advance(wm, out)
        elif self._wm is not None and t < self._wm:
            self._counts["late_accepted"] += 1
        if self._slide is None:
            self._emit_event(t, out)
        return out

    def _validate(self, p: Any) -> None:
        """One ``combine`` of a new partial with an earlier one: raises on values the monoid rejects."""
        if self._has_witness:
            self._combine(self._witness, p)
        else:
            self._combine(self._m.identity, p)
            self._witness = p
            self._has_witness = True

    def _flush(self) -> None:
        """Hand the pending entries to the aggregator: one sort and one ``bulk_insert``."""
        pend = self._pending
        if pend:
            bulk = sorted(pend.items(), key=_first)
            pend.clear()
            self._agg.bulk_insert(bulk)

    def insert_many(self, pairs: Iterable[tuple[Any, In]]) -> list[WindowResult[Out]]:
        """Add a burst (one micro-batch): classify, combine per key, one ``bulk_insert``, emit.

        The whole burst is judged against the lateness bound *before* it (as Spark judges
        a micro-batch against the previous watermark); the watermark then advances to
        ``max(t) - max_out_of_orderness``. Equal timestamps keep arrival order. With
        ``late="raise"`` a late event raises before anything changes. O(m) to classify and
        combine, O(p log p) to sort the p distinct keys, one ``bulk_insert``, then
        emission as in :meth:`insert`. With ``slide=None`` the burst is processed event
        by event (each event is an emission point).

        Examples
        --------
        >>> from windowagg.monoids import Concat
        >>> w = SlidingWindows(Concat(), 10, 10, aggregator="recalc")
        >>> w.insert_many([(3, "c"), (1, "a"), (3, "d"), (12, "z")])
        [WindowResult(start=0, end=10, value=('a', 'c', 'd'), count=3)]
        """
        if self._closed:
            raise WindowaggError("window is closed; create a new one (or restore from bytes)")
        items = list(pairs)
        if self._slide is None:
            if self._late == "raise":
                self._precheck_late(items, sequential=True)
            if self._bad == "raise":
                self._precheck_values(items, sequential=True)
            out: list[WindowResult] = []
            for t, v in items:
                out.extend(self.insert(t, v))
            return out
        bound = self._bound
        if self._late == "raise" and bound is not None:
            self._precheck_late(items)
        if self._bad == "raise":
            self._precheck_values(items, sequential=False)
        late: list[tuple[Any, Any]] = []
        unassigned = 0
        n_acc = 0
        n_late_acc = 0
        mx: Any = None
        wm0 = self._wm
        pend = self._pending
        # bound methods and flags cached in locals: this loop runs once per event
        combine = self._combine
        lift = self._lift_v
        get = pend.get
        gaps = self._gaps
        panes = self._panes
        for t, v in items:
            # fast path as in insert(): only a new type or NaN takes the slow check
            if (type(t) is not self._ttype or t != t) and not self._admit_time(t, v):
                continue
            if bound is not None and t < bound:
                late.append((t, v))
                continue
            if gaps and self._in_gap(t):
                unassigned += 1
                continue
            if not panes:
                key = t
            elif self._int_grid:
                key = (t - self._E0) // self._g
            else:
                key = self._key(t)
            old = get(key)
            try:
                p = lift(v)
                if old is None:
                    self._validate(p)
                    pend[key] = (1, p)
                else:
                    pend[key] = (old[0] + 1, combine(old[1], p))
            except Exception as e:
                self._bad_value(t, v, e)
                continue
            n_acc += 1
            if wm0 is not None and t < wm0:
                n_late_acc += 1
            if mx is None or t > mx:
                mx = t
        for t, v in late:
            self._late_event(t, v)
        self._counts["unassigned"] += unassigned
        self._n_accepted += n_acc
        self._counts["late_accepted"] += n_late_acc
        out = []
        self._flush()
        if mx is not None and (self._max is None or mx > self._max):
            self._max = mx
            wm = mx - self._ooo
            if wm0 is None or wm > wm0:
                self._advance(wm, out)
        return out

    def set_range_evaluator(self, evaluate: RangeEvaluator | None) -> None:
        """Answer the range queries of one emission together, with *evaluate* (None: FiBA).

        ``evaluate(entries, ranges)`` gets the stored ``(key, (count, partial))`` entries in
        key order (as iterated before the emission) and the inclusive key ranges
        ``(lo, hi)`` of the windows to emit, oldest first, and returns one
        ``(count, lower(partial))`` per range: what ``range_query`` + ``lower`` would give.
        ``windowagg.spark`` uses it to compute the windows of sum/count/max/min/mean with
        numpy. Everything else (lateness, eviction, counters, state) is unchanged. Not part
        of the state: set it again after :meth:`from_bytes`. O(1).

        Examples
        --------
        >>> from windowagg.monoids import Sum
        >>> def brute(entries, ranges):
        ...     out = []
        ...     for lo, hi in ranges:
        ...         inside = [cp for k, cp in entries if lo <= k <= hi]
        ...         out.append((sum(c for c, _ in inside), sum(p for _, p in inside)))
        ...     return out
        >>> w = SlidingWindows(Sum(), 10, 5, aggregator="recalc")
        >>> w.set_range_evaluator(brute)
        >>> w.insert_many([(1, 1), (6, 2), (12, 4), (31, 8)])
        [WindowResult(start=-5, end=5, value=1, count=1), WindowResult(start=0, end=10, value=3, count=2), WindowResult(start=5, end=15, value=6, count=2), WindowResult(start=10, end=20, value=4, count=1)]
        """
        self._range_evaluator = evaluate

    def accept_many(
        self, pairs: Iterable[tuple[Any, Any]], *, trusted_values: bool = False
    ) -> list[int]:
        """Per-event mode: ingest a burst exactly as :meth:`insert_many`, but emit nothing.

        For callers that compute the per-event windows themselves (the vectorised path of
        ``windowagg.spark``): read the stored entries first (:attr:`aggregator`), then call
        this. Each event is judged as :meth:`insert` would judge it at its turn (timestamp,
        lateness against the bound as of its arrival, value); the accepted ones go to the
        aggregator in one ``bulk_insert`` (equal timestamps combined in arrival order) and
        are counted as emitted. Returns the positions in *pairs* of the accepted events, in
        arrival order. Entries that no future event can see are evicted as in
        :meth:`insert`. O(m) checks + one ``bulk_insert`` (O(m log m) worst case).

        With ``trusted_values=True`` the caller guarantees that ``monoid.lift(v)`` succeeds
        for every value of the burst (e.g. finite floats into built-in numeric monoids,
        checked before): timestamps and lateness are judged as above, but values are lifted
        only for the events still stored after the burst's eviction, and not checked by a
        ``combine``. The stored entries, counters and rejects are the same; a large burst
        then costs O(m) comparisons plus the lifts and ``bulk_insert`` of its tail only.

        Examples
        --------
        >>> from windowagg.monoids import Sum
        >>> w = SlidingWindows(Sum(), 10, aggregator="recalc", late="side")
        >>> w.accept_many([(5, 1), (None, 2), (20, 3), (9, 4), (20, 5)])
        [0, 2, 4]
        >>> list(w.aggregator), w.counters["emitted"], w.rejected[1].reason
        ([(5, (1, 1)), (20, (2, 8))], 3, 'late: 9 < lateness bound 20')
        >>> w2 = SlidingWindows(Sum(), 10, aggregator="recalc", late="side")
        >>> w2.accept_many([(5, 1), (None, 2), (20, 3), (9, 4), (20, 5)], trusted_values=True)
        [0, 2, 4]
        >>> list(w2.aggregator) == list(w.aggregator), w2.counters == w.counters
        (True, True)
        """
        if self._slide is not None:
            raise ArgumentError("accept_many is for per-event windows (slide=None)")
        if self._closed:
            raise WindowaggError("window is closed; create a new one (or restore from bytes)")
        items = list(pairs)
        if self._late == "raise":
            self._precheck_late(items, sequential=True)
        if self._bad == "raise" and not trusted_values:
            self._precheck_values(items, sequential=True)
        accepted: list[int] = []
        bulk: list[tuple[Any, tuple[int, Any]]] = []
        n_late_acc = 0
        ooo = self._ooo
        L = self._L
        lift = self._lift  # bound method cached in a local: this loop runs once per event
        for i, (t, v) in enumerate(items):
            # fast path as in insert(): only a new type or NaN takes the slow check
            if (type(t) is not self._ttype or t != t) and not self._admit_time(t, v):
                continue
            bound = self._bound
            if bound is not None and t < bound:
                if self._late == "raise":
                    raise late_error(t, bound)
                self._late_event(t, v)
                continue
            if not trusted_values:  # trusted: lifted after the loop, only what is kept
                try:
                    p = lift(v)
                except Exception as e:  # the monoid rejected the value: keep it, say why
                    self._bad_value(t, v, e)
                    continue
                bulk.append((t, (1, p)))
            accepted.append(i)
            mx = self._max
            if mx is None or t > mx:
                self._max = t
                wm = t - ooo
                if self._wm is None or wm > self._wm:
                    self._wm = wm
                    self._bound = wm - L
            elif self._wm is not None and t < self._wm:
                n_late_acc += 1
        self._n_accepted += len(accepted)
        self._counts["late_accepted"] += n_late_acc
        self._counts["emitted"] += len(accepted) * len(self._sizes)
        if trusted_values:
            if accepted:
                self._store_trusted(items, accepted)
            return accepted
        if bulk:
            self._agg.bulk_insert(bulk)
        if self._bound is not None:
            S = self._S
            o = self._agg.oldest()
            if o is not None and o <= self._bound - S - S:  # as in _advance
                self._agg.bulk_evict(self._bound - S)
        return accepted

    def _store_trusted(self, items: list[tuple[Any, Any]], accepted: list[int]) -> None:
        """The storing half of ``accept_many(trusted_values=True)``: decide the eviction
        that ends the burst first, then lift and insert only the accepted events after its
        cut (the others would be evicted at once). Same entries as the checked path.
        """
        m = self._m
        if not self._has_witness:  # as _validate: the first accepted value is the witness
            self._witness = m.lift(items[accepted[0]][1])
            self._has_witness = True
        cut = None
        if self._bound is not None:
            S = self._S
            o = self._agg.oldest()
            first = min(items[i][0] for i in accepted)
            if o is None or first < o:
                o = first
            if o <= self._bound - S - S:  # as in _advance: the burst ends with this eviction
                cut = self._bound - S
        lift = m.lift  # bound method cached in a local: runs once per stored event
        if cut is None:
            bulk = [(items[i][0], (1, lift(items[i][1]))) for i in accepted]
        else:
            bulk = [(items[i][0], (1, lift(items[i][1]))) for i in accepted if items[i][0] > cut]
        if bulk:
            self._agg.bulk_insert(bulk)
        if cut is not None:
            o = self._agg.oldest()
            if o is not None and o <= cut:
                self._agg.bulk_evict(cut)

    def _precheck_late(self, items: list[tuple[Any, Any]], *, sequential: bool = False) -> None:
        """Raise LateEventError if any event of *items* would be late; change nothing.

        With *sequential*, the watermark is simulated event by event (per-event mode).
        """
        bound = self._bound
        mx = self._max
        ref = self._ref
        for t, _ in items:
            try:
                check_timestamp(t, ref)
                if ref is None:
                    ref = t
                is_late = bound is not None and t < bound
                if sequential and not is_late and (mx is None or t > mx):
                    mx = t
                    b = t - self._ooo - self._L
                    if bound is None or b > bound:
                        bound = b
            except (TimestampError, TypeError):
                continue
            if is_late:
                raise late_error(t, bound)

    def advance_watermark(self, wm: Any) -> list[WindowResult[Out]]:
        """Move the watermark forward to *wm* (no-op if not ahead); return closed windows.

        Use it on a punctuation or when a source is idle. A bad *wm* (None, NaN, ±inf,
        another type than the events', or a value the window's arithmetic cannot handle,
        such as ``10**400`` on a float window) raises TimestampError and changes nothing;
        to emit every window at the end of a stream call :meth:`close`. O(1) plus the
        emission cost of :meth:`insert`.

        Examples
        --------
        >>> from windowagg.monoids import Sum
        >>> w = SlidingWindows(Sum(), 10, 10, max_out_of_orderness=100, aggregator="recalc")
        >>> w.insert(3, 1), w.advance_watermark(10)
        ([], [WindowResult(start=0, end=10, value=1, count=1)])
        """
        check_timestamp(wm, self._ref, where="watermark")
        if isinstance(wm, float) and wm - wm != 0.0:  # ±inf (NaN is refused above)
            raise TimestampError(
                f"watermark {wm!r} is not finite; call close() to emit every window"
            )
        if self._E0 is None:
            self._init_time(wm)  # validates wm against the durations, changing nothing
            self._ref = None  # a watermark is not an event: the type reference stays open
        else:  # the same arithmetic as _advance, before anything changes
            try:
                lb = wm - self._L
                if self._slide is None:
                    lb - self._S - self._S  # evaluated for its errors only
                else:
                    self._end(self._first_end_after(wm))
            except (ArithmeticError, TypeError, ValueError) as e:
                raise TimestampError(
                    f"watermark {wm!r} ({type(wm).__name__}) does not work with this "
                    f"window's times and durations: {e}"
                ) from e
        out: list[WindowResult] = []
        if self._wm is None or wm > self._wm:
            self._advance(wm, out)
        return out

    def next_deadline(self) -> Any:
        """The watermark at which :meth:`advance_watermark` next has work, or None.

        With a slide: the end of the first window that holds a stored event (a window
        closes when the watermark reaches its end). Per event: the time at which every
        stored event is dead (``youngest + size + allowed_lateness``). None when no stored
        event is live: then a later watermark can emit nothing from this object, and a
        caller holding many keys (an event-time timer per key in Spark) may drop it and
        start afresh at the current watermark. O(1) after handing pending events to the
        aggregator.

        Examples
        --------
        >>> from windowagg.monoids import Sum
        >>> w = SlidingWindows(Sum(), 10, 5, aggregator="recalc")
        >>> w.next_deadline(), w.insert(7, 1), w.next_deadline()
        (None, [], 10)
        >>> w.advance_watermark(10), w.next_deadline()
        ([WindowResult(start=0, end=10, value=1, count=1)], 15)
        >>> w.advance_watermark(15)[0].end, w.next_deadline()
        (15, None)
        """
        self._flush()
        agg = self._agg
        k0 = agg.oldest()
        if k0 is None or self._closed:
            return None
        if self._slide is None:
            youngest = agg.youngest()
            if self._bound is not None and youngest <= self._bound - self._S:
                return None  # all dead, waiting for a batched eviction
            return youngest + self._S + self._L
        j = k0 // self._A + 1 if self._panes else self._first_end_after(k0)
        if self._j_open is not None and self._j_open > j:
            j = self._j_open
        return self._end(j)

    # ------------------------------------------------------------------ emission

    def _advance(self, wm: Any, out: list[WindowResult]) -> None:
        """Set the watermark to *wm* (> the old one); emit every window it closes."""
        self._wm = wm
        if self._slide is None:
            self._bound = wm - self._L
            S = self._S
            o = self._agg.oldest()
            # entries <= bound - S are dead; evict them in batches (once they reach back
            # another S), so eviction costs one bulk_evict per S time units, not per event
            if o is not None and o <= self._bound - S - S:
                self._agg.bulk_evict(self._bound - S)
            return
        lb = wm - self._L
        nxt = self._next_end
        if nxt is not None and wm < nxt:  # no window closes: only the bound may move
            open_start = self._open_start
            self._bound = open_start if open_start > lb else lb
            return
        j_new = self._first_end_after(wm)  # windows j < j_new are closed now
        self._flush()
        self._emit_until(j_new, out)
        self._j_open = j_new
        self._next_end = self._end(j_new)
        open_start = self._open_start = self._next_end - self._S
        self._bound = open_start if open_start > lb else lb

    def _emit_until(self, j_stop: int | None, out: list[WindowResult]) -> None:
        """Emit every non-empty window j < j_stop (all when None) not emitted yet.

        Per emitted window: ``oldest`` O(1), at most one ``bulk_evict`` and one
        ``range_query`` per size. Empty stretches are skipped by jumping to the first window
        that contains the oldest stored entry, so no window is scanned twice.
        """
        agg = self._agg
        lower = self._m.lower
        sizes = self._sizes
        S = self._S
        panes = self._panes
        A = self._A
        B = self._B
        j = self._j_open
        n_emitted = 0
        evaluate = self._range_evaluator
        snapshot = list(agg) if evaluate is not None else None
        requests: list[tuple[Any, Any, Any, Any]] = []  # deferred (lo, hi, start, end)
        while True:
            k0 = agg.oldest()
            if k0 is None:
                break
            # the first window whose end lies after the oldest entry
            jc = k0 // A + 1 if panes else self._first_end_after(k0)
            if j is None or jc > j:
                j = jc
            if j_stop is not None and j >= j_stop:
                break
            if panes:
                lo = j * A - B[S]
                hi = j * A - 1
            else:
                end = self._end(j)
                lo = end - S
                hi = self._pred(end)
            if k0 < lo:  # entries before this window's start belong to closed windows only
                agg.bulk_evict(lo - 1 if panes else self._pred(lo))
                k0 = agg.oldest()
                if k0 is None or k0 > hi:
                    continue
            end_t = self._end(j)
            for s in sizes:
                if s == S:
                    lo_s = lo
                elif panes:
                    lo_s = j * A - B[s]
                else:
                    lo_s = end_t - s
                if snapshot is not None:  # evictions below never touch the snapshot
                    requests.append((lo_s, hi, end_t - s, end_t))
                    continue
                c, p = agg.range_query(lo_s, hi)
                if c:
                    out.append(WindowResult(end_t - s, end_t, lower(p), c))
                    n_emitted += 1
            j += 1
        if requests:
            assert evaluate is not None and snapshot is not None
            found = evaluate(snapshot, [(lo_r, hi_r) for lo_r, hi_r, _, _ in requests])
            for (_, _, start, end_r), (c, v) in zip(requests, found, strict=True):
                if c:
                    out.append(WindowResult(start, end_r, v, c))
                    n_emitted += 1
        self._counts["emitted"] += n_emitted
        if j_stop is not None:
            # entries older than the oldest open window's start are dead
            lo_open = j_stop * A - B[S] if panes else self._end(j_stop) - S
            k0 = agg.oldest()
            if k0 is not None and k0 < lo_open:
                agg.bulk_evict(lo_open - 1 if panes else self._pred(lo_open))

    def _emit_event(self, t: Any, out: list[WindowResult]) -> None:
        agg = self._agg
        lower = self._m.lower
        for s in self._sizes:
            start = t - s
            c, p = agg.range_query(self._succ(start), t)
            out.append(WindowResult(start, t, lower(p), c))
        self._counts["emitted"] += len(self._sizes)

    def close(self) -> list[WindowResult[Out]]:
        """End of stream: emit every remaining non-empty window, oldest first; then refuse input.

        O(emitted windows) aggregator operations, as for :meth:`insert`.

        Examples
        --------
        >>> from windowagg.monoids import Sum
        >>> w = SlidingWindows(Sum(), 10, 5, aggregator="recalc")
        >>> w.insert(7, 1); w.close()
        []
        [WindowResult(start=0, end=10, value=1, count=1), WindowResult(start=5, end=15, value=1, count=1)]
        """
        out: list[WindowResult] = []
        if not self._closed and self._slide is not None and self._E0 is not None:
            self._flush()
            self._emit_until(None, out)
        self._closed = True
        self._ttype = None  # no fast path: insert must see the closed flag
        return out

    # ------------------------------------------------------------------ state

    _CONFIG_KEYS = (
        "sizes",
        "slide",
        "origin",
        "max_out_of_orderness",
        "allowed_lateness",
        "late",
        "panes",
        "bad_value",
    )
    _N_DYN = 10

    def _config(self) -> tuple[Any, ...]:
        return (
            list(self._sizes),
            self._slide,
            self._origin,
            self._ooo,
            self._L,
            self._late,
            self._panes,
            self._bad,
        )

    def to_bytes(self) -> bytes:
        """The window's full state as versioned codec bytes (no pickle). O(n).

        Holds the configuration, watermark, counters, side output and the stored
        ``(key, count, partial)`` entries in key order (format: ``docs/windows.md`` §9);
        the monoid is not stored (pass it to :meth:`from_bytes`), only its name, which is
        checked on restore. Rejected records whose timestamp or value the codec cannot
        encode are stored with their ``repr`` instead (and say so in the reason).

        >>> from windowagg.monoids import Sum
        >>> w = SlidingWindows(Sum(), 10, 5, aggregator="recalc"); _ = w.insert(3, 4)
        >>> data = w.to_bytes(); data[:4], len(data) < 200      # about 130 bytes
        (b'WAGC', True)
        """
        self._flush()
        dyn = (
            self._E0,
            self._ref,
            self._max,
            self._wm,
            self._bound,
            self._j_open,
            self._next_end,
            self._has_witness,
            self._witness,
            self._closed,
        )
        return dump_state(
            type(self).__name__,
            self._m,
            self._spec,
            self._config(),
            dyn,
            self.counters,
            self.rejected,
            self._agg,
        )

    @classmethod
    def _load_state(cls, data: bytes, monoid: Monoid[Any, Any, Any]) -> dict[str, Any]:
        n_counters = 7
        st = load_state(
            data,
            cls.__name__,
            monoid,
            len(cls._CONFIG_KEYS),
            cls._N_DYN,
            n_counters,
            config_defaults=("side",),  # bad_value: state written before the policy existed
        )
        return {"config": dict(zip(cls._CONFIG_KEYS, st.config, strict=True)), "loaded": st}

    def _restore(self, state: dict[str, Any]) -> None:
        st: LoadedState = state["loaded"]
        (
            self._E0,
            self._ref,
            self._max,
            self._wm,
            self._bound,
            self._j_open,
            self._next_end,
            self._has_witness,
            self._witness,
            self._closed,
        ) = st.dyn
        if self._ref is not None:
            ref, self._ref = self._ref, None
            self._init_time(ref)
        elif self._E0 is not None:
            self._init_time(self._E0)
            self._ref = None
        if self._next_end is not None:
            self._open_start = self._next_end - self._S
        self._counts.update(zip(self._counts, st.counters, strict=True))
        self._n_accepted = self._counts["accepted"]
        self.rejected = st.rejected
        self._agg = restore_aggregator(self._spec, self._cm, self._agg, st.pairs)

    def _check(self) -> None:
        """O(n): aggregator invariants, counts positive, nothing stored before the open windows."""
        self._flush()
        self._agg._check()
        for k, (c, _) in self._agg:
            if not (isinstance(c, int) and c > 0):
                raise InvariantError(f"windows: entry at {k!r} has count {c!r}")
        if self._slide is not None and self._j_open is not None:
            o = self._agg.oldest()
            lo = (
                self._j_open * self._A - self._B[self._S]
                if self._panes
                else self._end(self._j_open) - self._S
            )
            if o is not None and o < lo:
                raise InvariantError(
                    f"windows: entry at {o!r} is older than the oldest open window start {lo!r}"
                )
        if self._next_end is not None and self._open_start != self._next_end - self._S:
            raise InvariantError("windows: cached start of the oldest open window is stale")
        if self._wm is not None and self._max is not None and self._wm < self._max - self._ooo:
            raise InvariantError("windows: watermark is behind max event time - out-of-orderness")


def restore_aggregator(spec: AggregatorSpec, cm: Counted, empty: Any, pairs: list[Any]) -> Any:
    """Rebuild an aggregator from sorted ``(key, partial)`` pairs.

    Uses ``type(empty).from_sorted_partials(cm, pairs)`` (O(n), FiBA) when the class has it;
    otherwise one ``bulk_insert`` of the partials into *empty*, which works because
    :class:`Counted`'s ``lift`` is the identity on stored partials.
    """
    build = getattr(type(empty), "from_sorted_partials", None)
    if build is not None:
        return build(cm, pairs)
    empty.bulk_insert(pairs)
    return empty


class SlidingWindows(_TimeWindows[In, P, Out]):
    """Time windows ``[origin + k*slide, origin + k*slide + size)`` over any aggregator.

    Parameters
    ----------
    monoid : Monoid
        Any windowagg monoid (``monoids.Composite`` for several aggregates at once).
    size : int, float or datetime.timedelta
        Window length in timestamp units.
    slide : same type as size, optional
        Distance between window starts: ``slide == size`` is tumbling, ``slide > size``
        hopping with gaps (events in a gap are counted in ``counters["unassigned"]``).
        ``None`` emits one result per accepted event for ``(t - size, t]``.
    origin : int, float, timedelta or datetime
        Alignment of window starts (Spark's ``startTime``); with datetime timestamps an
        int 0 / timedelta is an offset from the Unix epoch.
    max_out_of_orderness : duration
        ``watermark = max event time seen - max_out_of_orderness``.
    allowed_lateness : duration
        An event is late when ``t < watermark - allowed_lateness`` or when every window
        containing it has already been emitted.
    late : {"drop", "raise", "side"}
        Late events are counted and dropped, raise :class:`~windowagg.errors.LateEventError`
        (nothing changes), or are appended to :attr:`rejected`.
    aggregator : "fiba", "recalc" or callable
        The out-of-order aggregator to wrap (a factory gets the counted monoid).
    panes : bool, optional
        Coarsen timestamps to panes of width ``gcd(size, slide)``. Default: on for
        commutative monoids (exact), off otherwise (within a pane, non-commutative
        monoids would see arrival order instead of event-time order).
    bad_value : {"side", "raise", "drop"}
        Values the monoid refuses (its ``lift``, or one ``combine`` with an earlier
        partial, raised; e.g. NaN into a built-in numeric monoid): appended to
        :attr:`rejected` as ``bad_value: <error>`` (default), raise
        :class:`~windowagg.errors.MonoidInputError` before the call changes anything, or
        are only counted. Independent of ``late``; counted in ``counters["bad_value"]``.

    Examples
    --------
    Tumbling windows with a watermark lagging 5 units and 5 more of allowed lateness:

    >>> from windowagg.monoids import Concat
    >>> w = SlidingWindows(Concat(), 10, 10, max_out_of_orderness=5, allowed_lateness=5,
    ...                    late="side", aggregator="recalc")
    >>> w.insert(4, "a"), w.insert(12, "c"), w.insert(3, "z")
    ([], [], [])
    >>> w.insert(16, "d")                      # watermark 11 closes [0, 10)
    [WindowResult(start=0, end=10, value=('z', 'a'), count=2)]
    >>> w.insert(7, "x"); w.rejected           # [0, 10) is final: 7 is late
    []
    [Rejected(t=7, value='x', reason='late: 7 < lateness bound 10')]
    >>> w2 = SlidingWindows.from_bytes(w.to_bytes(), Concat(), aggregator="recalc")
    >>> w2.close() == w.close()
    True
    """

    def __init__(
        self,
        monoid: Monoid[In, P, Out],
        size: Any,
        slide: Any = None,
        *,
        origin: Any = 0,
        max_out_of_orderness: Any = 0,
        allowed_lateness: Any = 0,
        late: str = "drop",
        aggregator: AggregatorSpec = "fiba",
        panes: bool | None = None,
        bad_value: str = "side",
    ) -> None:
        super().__init__(
            monoid,
            (size,),
            slide,
            origin=origin,
            max_out_of_orderness=max_out_of_orderness,
            allowed_lateness=allowed_lateness,
            late=late,
            aggregator=aggregator,
            panes=panes,
            bad_value=bad_value,
        )

    @property
    def size(self) -> Any:
        """The window length.

        >>> from windowagg.monoids import Sum
        >>> SlidingWindows(Sum(), 10, 5).size
        10
        """
        return self._S

    @property
    def slide(self) -> Any:
        """The slide (None for per-event emission).

        >>> from windowagg.monoids import Sum
        >>> SlidingWindows(Sum(), 10, 5).slide, SlidingWindows(Sum(), 10).slide
        (5, None)
        """
        return self._slide

    @classmethod
    def from_bytes(
        cls,
        data: bytes,
        monoid: Monoid[In, P, Out],
        *,
        aggregator: AggregatorSpec = "fiba",
    ) -> SlidingWindows[In, P, Out]:
        """Rebuild a window from :meth:`to_bytes` output; O(n) with FiBA's sorted build.

        Raises CodecError for data of another kind, version or monoid.

        >>> from windowagg.monoids import Max, Sum
        >>> w = SlidingWindows(Sum(), 10, 5); _ = w.insert_many([(1, 2), (7, 3)])
        >>> w2 = SlidingWindows.from_bytes(w.to_bytes(), Sum())
        >>> w2.insert(30, 0) == w.insert(30, 0)
        True
        >>> SlidingWindows.from_bytes(w.to_bytes(), Max())
        Traceback (most recent call last):
        ...
        windowagg.errors.CodecError: SlidingWindows.from_bytes: the state was written with monoid 'sum', not 'max'
        """
        with codec.decoding(f"{cls.__name__}.from_bytes"):
            state = cls._load_state(data, monoid)
            cfg = state["config"]
            w = cls(
                monoid,
                cfg["sizes"][0],
                cfg["slide"],
                origin=cfg["origin"],
                max_out_of_orderness=cfg["max_out_of_orderness"],
                allowed_lateness=cfg["allowed_lateness"],
                late=cfg["late"],
                aggregator=aggregator,
                panes=cfg["panes"],
                bad_value=cfg["bad_value"],
            )
            w._restore(state)
            return w

    def __repr__(self) -> str:
        return (
            f"SlidingWindows({self._m!r}, size={self._S!r}, slide={self._slide!r}, "
            f"watermark={self._wm!r}, n={len(self)})"
        )


# LateEventError is re-raised through here; keep the import used for type checkers.
_ = LateEventError
