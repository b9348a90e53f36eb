"""The watermark clock: event-time progress of one key, and which arrivals are late.

=================  ==========================================================================
watermark          ``max(event time seen) - max_out_of_orderness`` (None before the first
                   event), never decreasing
late               an arrival with ``t < watermark - allowed_lateness``, the watermark being
                   the one *before* that arrival (the arrival itself cannot make itself late)
time               O(m) numpy per batch of m arrivals (a running maximum)
state              one integer (the largest event time seen)
=================  ==========================================================================

A batch call (``windowagg.pandas.window_agg``) without ``max_out_of_orderness`` and
``allowed_lateness`` uses no clock: every valid event is on time. With either given, the
rows are judged in input (arrival) order, per key, as a stream would judge them.

Examples
--------
>>> import numpy as np
>>> c = WatermarkClock(max_out_of_orderness=5, allowed_lateness=2)
>>> c.observe(np.array([10, 4, 2, 20, 12, 13])).tolist()
[False, False, True, False, True, False]
>>> c.watermark, c.bound
(15, 13)
"""

from __future__ import annotations

import numpy as np

__all__ = ["WatermarkClock"]


#: The smallest int64: the bound before the first event (nothing is late yet).
_MIN = int(np.iinfo(np.int64).min)


class WatermarkClock:
    """Per-key event-time clock (integer times). See the module docstring.

    Parameters
    ----------
    max_out_of_orderness
        How far behind the newest event an event may arrive and still count as on time.
    allowed_lateness
        Extra slack below the watermark before an event is late.
    """

    __slots__ = ("_allowed", "_max_t", "_ooo")

    def __init__(self, max_out_of_orderness: int = 0, allowed_lateness: int = 0) -> None:
        if max_out_of_orderness < 0 or allowed_lateness < 0:
            raise ValueError(
                "max_out_of_orderness and allowed_lateness cannot be negative, got "
                f"{max_out_of_orderness} and {allowed_lateness}"
            )
        self._ooo = int(max_out_of_orderness)
        self._allowed = int(allowed_lateness)
        self._max_t: int | None = None

    def __copy__(self) -> WatermarkClock:
        """A copy (the undo of a step that raised keeps one): three ints. O(1)."""
        c = WatermarkClock.__new__(WatermarkClock)
        c._ooo, c._allowed, c._max_t = self._ooo, self._allowed, self._max_t
        return c

    @property
    def watermark(self) -> int | None:
        """The newest event time minus ``max_out_of_orderness`` (None before any). O(1)."""
        return None if self._max_t is None else self._max_t - self._ooo

    @property
    def bound(self) -> int | None:
        """Events older than this are late: ``watermark - allowed_lateness``. O(1)."""
        wm = self.watermark
        return None if wm is None else wm - self._allowed

    def bounds(self, t: np.ndarray) -> np.ndarray:
        """The lateness bound each arrival of *t* is judged against (no state change). O(m).

        The first arrival ever is judged against ``INT64_MIN`` (nothing is late yet).
        """
        t = np.asarray(t, dtype=np.int64)
        if not len(t):
            return np.empty(0, dtype=np.int64)
        seen = np.maximum.accumulate(t)
        before = np.empty_like(seen)
        before[1:] = seen[:-1]
        before[0] = self._max_t if self._max_t is not None else _MIN
        if self._max_t is not None:
            np.maximum(before, self._max_t, out=before)
        lag = self._ooo + self._allowed
        out: np.ndarray = np.where(before < _MIN + lag, _MIN, before - lag)
        return out

    def observe_list(self, t: list[int], skip: dict[int, str]) -> dict[int, int]:
        """:meth:`observe` over a list, for a few arrivals (no numpy call): the positions
        not in *skip* are judged in order; returns ``{late position: its bound}``. O(m)."""
        mx = self._max_t
        lag = self._ooo + self._allowed
        late: dict[int, int] = {}
        for i, x in enumerate(t):
            if i in skip:
                continue
            if mx is None or x > mx:
                mx = x
            elif x < mx - lag:
                late[i] = mx - lag
        self._max_t = mx
        return late

    def advance_to(self, t: int) -> None:
        """Move the clock's newest time to *t* if newer (no judging). O(1)."""
        if self._max_t is None or t > self._max_t:
            self._max_t = t

    def observe(self, t: np.ndarray, bounds: np.ndarray | None = None) -> np.ndarray:
        """Judge the arrivals *t* (in arrival order): a boolean *late* mask; advance. O(m).

        Late arrivals do not move the clock (they are older than the newest event anyway).
        *bounds*: :meth:`bounds` of *t*, when the caller has them already.
        """
        t = np.asarray(t, dtype=np.int64)
        late: np.ndarray = t < (self.bounds(t) if bounds is None else bounds)
        if len(t):
            top = int(t.max())
            self._max_t = top if self._max_t is None else max(self._max_t, top)
        return late
