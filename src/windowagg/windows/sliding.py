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
per-event mode     ``slide=None``: one ``range_query`` per event over ``(t - size, t]``
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

from windowagg.errors import (
    ArgumentError,
    ArgumentTypeError,
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
    Rejected,
    WindowResult,
    check_bad_value_policy,
    check_duration,
    check_late_policy,
    duration_gcd,
    floordiv,
    late_error,
    make_aggregator,
    pred,
    pred_for,
    resolve_origin,
    succ,
    succ_for,
    zero_like,
)
from windowagg.windows._time_admission import _Admission
from windowagg.windows._time_emission import _Emission
from windowagg.windows._time_state import _State

__all__ = ["SlidingWindows"]

PENDING_LIMIT = 4096  # flush the pending buffer beyond this many distinct keys


def _first(item: tuple[Any, Any]) -> Any:
    return item[0]


class _TimeWindows(_Emission[Out], _State, _Admission, Generic[In, P, Out]):
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
        w: SlidingWindows[In, P, Out] = cls._from_bytes(
            data, monoid, aggregator, lambda sizes: sizes[0]
        )
        return w

    def __repr__(self) -> str:
        return (
            f"SlidingWindows({self._m!r}, size={self._S!r}, slide={self._slide!r}, "
            f"watermark={self._wm!r}, n={len(self)})"
        )


# LateEventError is re-raised through here; keep the import used for type checkers.
_ = LateEventError
