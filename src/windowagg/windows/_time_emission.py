"""The emission half of the time windows: the watermark, closing windows, ``close``.

A mixin of :class:`windowagg.windows.sliding._TimeWindows` (the engine behind
``SlidingWindows`` and ``SharedWindows``), kept apart so each module holds one concern;
the attributes it reads are set by ``_TimeWindows.__init__`` (listed below for type
checkers). Costs: docs/windows.md (the operations table).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Generic

from windowagg._time import check_timestamp
from windowagg.errors import TimestampError
from windowagg.monoids.base import Monoid, Out
from windowagg.windows._common import WindowResult


class _Emission(Generic[Out]):
    """Watermark moves and window emission of ``_TimeWindows``."""

    _m: Monoid[Any, Any, Out]
    _agg: Any
    _sizes: tuple[Any, ...]
    _S: Any
    _slide: Any
    _L: Any
    _panes: bool
    _A: Any
    _B: dict[Any, Any]
    _E0: Any
    _ref: Any
    _wm: Any
    _bound: Any
    _j_open: Any
    _next_end: Any
    _open_start: Any
    _closed: bool
    _ttype: type | None
    _counts: dict[str, int]
    _pred: Callable[[Any], Any]
    _succ: Callable[[Any], Any]

    if TYPE_CHECKING:  # provided by _TimeWindows

        def _end(self, j: int) -> Any: ...
        def _first_end_after(self, x: Any) -> int: ...
        def _init_time(self, t: Any) -> None: ...
        def _flush(self) -> None: ...

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
        >>> from windowagg.windows import SlidingWindows
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
        >>> from windowagg.windows import SlidingWindows
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
                c, p = agg.range_query(lo_s, hi)
                if c:
                    out.append(WindowResult(end_t - s, end_t, lower(p), c))
                    n_emitted += 1
            j += 1
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
        >>> from windowagg.windows import SlidingWindows
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
