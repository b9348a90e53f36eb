"""When a front end that holds a key's arrivals back must feed them: the engine's schedule.

=================  ==========================================================================
for whom           a front end that micro-batches one key's arrivals itself (the object API:
                   :mod:`windowagg.windows.adapter`): it holds events while feeding them
                   could emit nothing, and asks this object, never its own arithmetic,
                   whether an arrival is late, when a window can close and when to feed
clock              :class:`Schedule` is the key's :class:`~.clock.WatermarkClock` ahead of
                   its :class:`~.stream.KeyStream` s by the held arrivals: the watermark and
                   lateness bound the next micro-batch is judged against (``bound``; the
                   streams' own clocks judge the events again when fed)
due                the earliest watermark at which feeding can emit a window: the smallest
                   :meth:`~.shapes.Shape.first_end` of the held arrivals (every shape's:
                   several sizes each have one), and what the streams have pending
                   (:meth:`~.stream.KeyStream.deadline`; on a grid of window ends the next
                   end after the watermark, :meth:`~.shapes.Shape.next_end`, O(1) where
                   the pane layout's deadline reads its panes); count windows: nothing is
                   due from held events that cannot complete a window
                   (:meth:`~.shapes.Shape.completes`) while none is pending
feed now           :meth:`Schedule.hold` says so for an arrival behind the watermark (late,
                   or it may revise an emitted window), with ``emit="arrival"`` (each
                   event's window at once), and when the watermark reaches ``due``; so a
                   front end that feeds then emits, per arrival, exactly what a stream fed
                   every arrival as its own micro-batch emits
                   (``tests/windows/test_schedule.py``)
time               :meth:`~Schedule.hold` O(1) (O(shapes)); :meth:`~Schedule.fed` O(shapes)
                   on a grid, else the streams' ``deadline`` (O(stored))
state              the clock's newest time, ``due``, the held and admitted counts
=================  ==========================================================================

Examples
--------
>>> s = Schedule([Shape(size=10, slide=5)], max_out_of_orderness=2)
>>> s.hold(3), s.due             # the first window holding 3 ends at 5; watermark 1
(False, 5)
>>> s.hold(7), s.watermark       # watermark 5 reaches 5: feed the held events
(True, 5)
>>> s.fed(admitted=2); s.due     # (no streams here) the next grid end after watermark 5
10.0
>>> s.hold(2), s.late(1)         # behind the watermark: feed; 1 is below the bound 5
(True, 5)
>>> c = Schedule([Shape(rows=3, every=2)])
>>> c.hold(4), c.due, c.hold(5), c.due   # the second completes a window, watermark 5: feed
(False, inf, True, 5)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from windowagg.windows.engine.clock import WatermarkClock
from windowagg.windows.engine.shapes import Shape

__all__ = ["Schedule"]

_INF = math.inf


class Schedule(WatermarkClock):
    """One key's feeding schedule over its streams (see the module docstring).

    Parameters
    ----------
    shapes
        The window shape of each stream (several: one stream per size, fed alike).
    streams
        The key's :class:`~.stream.KeyStream` s, one per shape (their ``deadline`` after a
        feed); none before the first feed is fine.
    max_out_of_orderness, allowed_lateness
        The streams' clock configuration.
    emit
        The streams' emission (``"arrival"``: every arrival is fed at once).
    admitted
        Events the streams admitted before (a restored key: positions of count windows).
    """

    __slots__ = ("_each", "_grid", "_held", "_on_grid", "_shapes", "_stored", "_streams",
                 "_was", "due")  # fmt: skip

    def __init__(
        self,
        shapes: Sequence[Shape],
        streams: Sequence[Any] = (),
        *,
        max_out_of_orderness: int = 0,
        allowed_lateness: int = 0,
        emit: str = "watermark",
        admitted: int = 0,
    ) -> None:
        super().__init__(max_out_of_orderness, allowed_lateness)
        self._shapes = tuple(shapes)
        self._streams = list(streams)
        self._each = emit == "arrival"
        s = self._shapes[0]
        # one hopping size: its first end by O(1) arithmetic in hold (first_end's, inline)
        self._grid = (
            (s.start_time, s.size, s.slide)
            if len(self._shapes) == 1 and s.grid and not s.sizes
            and s.size is not None and s.slide is not None
            else None
        )  # fmt: skip
        self.due: float = _INF
        """The earliest watermark at which feeding the held arrivals can emit."""
        self._on_grid = False  # due is the next grid end after the watermark (fed)
        self._held = 0
        self._stored = int(admitted)
        self._was: tuple[int | None, float] = (None, _INF)  # before the last hold

    @property
    def newest(self) -> int | None:
        """The newest time the clock admitted, held events included (None before any).
        O(1)."""
        return self._max_t

    # ------------------------------------------------------------------ the questions
    def hold(self, x: int) -> bool:
        """Hold an arrival at *x* (one the clock admits: the caller refused what it
        refuses); whether the caller must feed what it holds now. O(1) (O(shapes)).
        :meth:`unhold` takes it back."""
        mx = self._max_t
        self._was = (mx, self.due)
        self._held += 1
        if mx is None or x > mx:
            self._max_t = mx = x
            behind = False
        else:
            behind = x < mx - self._ooo
        # on the grid, due is the next end after the watermark: no window of an event at or
        # past the watermark ends before it (one behind it feeds anyway)
        if not self._on_grid or behind:
            grid = self._grid
            if grid is not None:  # Hopping.first_end of one size, inline
                st, size, slide = grid
                end: float = st + size - ((st - x + size - 1) // slide) * slide
            else:
                end = self.first_end(x)
            if end < self.due:
                self.due = end
        return behind or self._each or mx - self._ooo >= self.due

    def hold_many(self, xs: Sequence[int]) -> bool:
        """:meth:`hold` of each of *xs* in turn (a burst), the same state after; whether any
        asked for a feed. O(len(xs)) (O(len(xs) shapes)). Not undone by :meth:`unhold`."""
        grid = self._grid
        if grid is None or self._each:
            feed = False
            for x in xs:
                if self.hold(x):
                    feed = True
            return feed
        # one hopping size: hold's steps inline (hot loop: locals)
        st, size, slide = grid
        mx, due, ooo, on_grid = self._max_t, self.due, self._ooo, self._on_grid
        feed = False
        for x in xs:
            behind = False
            if mx is None or x > mx:
                mx = x
            elif x < mx - ooo:
                behind = feed = True
            if not on_grid or behind:
                end = st + size - ((st - x + size - 1) // slide) * slide
                if end < due:
                    due = end
            if mx - ooo >= due:
                feed = True
        self._max_t, self.due = mx, due
        self._held += len(xs)
        return feed

    def unhold(self) -> None:
        """Take back the last :meth:`hold` (the feed it asked for raised). O(1)."""
        self._max_t, self.due = self._was
        self._held -= 1

    def first_end(self, x: int) -> float:
        """The earliest watermark at which a held arrival at *x* can make a window close:
        the smallest :meth:`~.shapes.Shape.first_end` over the shapes; count windows:
        never, while no window is pending and the held events complete none. O(shapes)."""
        shapes = self._shapes
        s = shapes[0]
        if s.positional and self.due == _INF and not s.completes(self._stored, self._held):
            # every complete window emitted (else due is the oldest pending one's end,
            # which an event that shifts positions can make earlier)
            return _INF
        if len(shapes) == 1:
            return s.first_end(x)
        # every size's: a larger one's first window can end first
        return min(h.first_end(x) for h in shapes)

    def late(self, x: int) -> int | None:
        """The lateness bound *x* is below (a late arrival), else None. O(1)."""
        b = self.bound
        return b if b is not None and x < b else None

    # ------------------------------------------------------------------ after the streams
    def fed(self, admitted: int) -> None:
        """The held arrivals were fed (*admitted* of them admitted) and nothing is held; due
        is what the streams have pending. O(shapes) on a grid, else O(stored)."""
        self._held = 0
        self._stored += admitted
        self.due = self._deadline()

    def advance(self, watermark: int) -> bool:
        """Raise the watermark to *watermark* (the streams must advance too); False, and no
        change, when it is not ahead of the watermark. O(1)."""
        wm = self.watermark
        if wm is not None and watermark <= wm:
            return False
        self._max_t = watermark + self._ooo
        return True

    def restart(self, streams: Sequence[Any], newest: int | None, admitted: int) -> None:
        """Restored streams (their clocks' newest time, the events they admitted). O(fed)."""
        self._streams = list(streams)
        self._max_t = newest
        self._held = 0
        self._stored = int(admitted)
        self.due = self._deadline()

    def _deadline(self) -> float:
        """The earliest watermark at which the streams can emit (a lower bound)."""
        s = self._shapes[0]
        if s.grid and self._max_t is not None and not self._each:
            # the next grid end after the watermark: O(1), where a stream's deadline()
            # assigns every stored pane (an extra micro-batch at an empty end is harmless)
            wm = self._max_t - self._ooo
            ends = [e for e in (h.next_end(wm) for h in self._shapes) if e is not None]
            self._on_grid = True
            return float(min(ends))
        self._on_grid = False
        d = [st.deadline() for st in self._streams]
        return min((float(x) for x in d if x is not None), default=_INF)

    # ------------------------------------------------------------------ undo
    def saved(self) -> tuple[Any, ...]:
        """What a call may change (for :meth:`put_back`). O(1)."""
        return (self._max_t, self.due, self._on_grid, self._held, self._stored)

    def put_back(self, saved: tuple[Any, ...]) -> None:
        """The state :meth:`saved` returned. O(1)."""
        self._max_t, self.due, self._on_grid, self._held, self._stored = saved
