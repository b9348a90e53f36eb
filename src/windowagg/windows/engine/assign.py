"""Window assignment: which events every window of a shape holds, for one key's sorted events.

=================  ==========================================================================
input              one key's admitted event times, sorted (ties keep input order)
shapes             hopping/tumbling ``size`` + ``slide`` (``[start, start + size)``,
                   ``start = start_time + k * slide``, as Spark's ``F.window``); per-event
                   ``(t - size, t]`` (``slide=None``); count windows (the last ``rows``
                   events, one window every ``every`` events); sessions (``gap``)
output             per window: its output bounds and the slice ``[lo, hi)`` of sorted events
                   it holds (what the in-order aggregators slide over), and the inclusive
                   key range ``[key_lo, key_hi]`` an out-of-order aggregator keyed by
                   :attr:`Windows.keys` answers it with (for state that keeps receiving
                   late events, as streaming will)
keys               hopping: the pane ``(t - start_time) // gcd(size, slide)`` (equal keys
                   combine in ``ooo.FiBA``: pane pre-aggregation by the aggregator
                   itself); per-event and sessions: the time; count windows: the position
time               O(n + windows) numpy index arithmetic (no aggregate is computed here)
=================  ==========================================================================

Only windows holding at least one event exist (as with ``F.window``). Every shape's windows
come out ordered by their end, and both ``lo`` and ``hi`` are non-decreasing: a window
sequence the aggregators can also *slide* through.

Examples
--------
>>> import numpy as np
>>> w = assign(Shape(size=20, slide=10), np.array([0, 5, 12, 31]))
>>> w.start.tolist(), w.end.tolist(), w.lo.tolist(), w.hi.tolist()
([-10, 0, 10, 20, 30], [10, 20, 30, 40, 50], [0, 0, 2, 3, 3], [2, 3, 3, 4, 4])
>>> s = assign(Shape(gap=5), np.array([1, 3, 9, 14, 30]))
>>> s.start.tolist(), s.end.tolist(), s.lo.tolist(), s.hi.tolist()
([1, 9, 30], [8, 19, 35], [0, 2, 4], [2, 4, 5])
"""

from __future__ import annotations

from dataclasses import dataclass
from math import gcd
from typing import NamedTuple

import numpy as np

__all__ = ["Shape", "Windows", "assign"]


@dataclass(frozen=True)
class Shape:
    """One window shape (all times in the caller's integer unit, e.g. microseconds).

    Exactly one of ``size`` (time windows; ``slide=None`` for per-event windows), ``rows``
    (count windows, with ``every``) or ``gap`` (session windows).

    >>> Shape(size=10).kind, Shape(size=10, slide=5).kind, Shape(rows=3).kind
    ('per_event', 'hopping', 'count')
    >>> Shape(size=10, gap=3)
    Traceback (most recent call last):
    ...
    ValueError: give exactly one window shape: size (with slide), rows (with every) or gap; got size=10, rows=None, gap=3
    """

    size: int | None = None
    slide: int | None = None
    rows: int | None = None
    every: int = 1
    gap: int | None = None
    start_time: int = 0

    def __post_init__(self) -> None:
        given = [x is not None for x in (self.size, self.rows, self.gap)]
        if sum(given) != 1:
            raise ValueError(
                "give exactly one window shape: size (with slide), rows (with every) or gap; "
                f"got size={self.size}, rows={self.rows}, gap={self.gap}"
            )
        if self.size is not None and self.size <= 0:
            raise ValueError(f"window size must be positive, got {self.size}")
        if self.slide is not None and (self.size is None or self.slide <= 0):
            raise ValueError(
                f"slide needs a time window (size) and must be positive, got {self.slide}"
            )
        if self.rows is not None and (self.rows <= 0 or self.every <= 0):
            raise ValueError(
                f"rows and every must be positive, got rows={self.rows}, every={self.every}"
            )
        if self.gap is not None and self.gap <= 0:
            raise ValueError(f"session gap must be positive, got {self.gap}")

    @property
    def kind(self) -> str:
        """``"hopping"``, ``"per_event"``, ``"count"`` or ``"session"``. O(1)."""
        if self.gap is not None:
            return "session"
        if self.rows is not None:
            return "count"
        return "per_event" if self.slide is None else "hopping"


class Windows(NamedTuple):
    """The windows of one key (int64 arrays, one entry per window unless said otherwise)."""

    start: np.ndarray
    """Output ``window_start``."""
    end: np.ndarray
    """Output ``window_end``."""
    lo: np.ndarray
    """First sorted event in the window."""
    hi: np.ndarray
    """One past the last sorted event in the window."""
    keys: np.ndarray
    """Aggregator key of every sorted event (non-decreasing; one entry per event)."""
    key_lo: np.ndarray
    """Inclusive lower key bound of the window."""
    key_hi: np.ndarray
    """Inclusive upper key bound of the window."""


def assign(shape: Shape, t: np.ndarray) -> Windows:
    """The windows of *shape* over the sorted int64 times *t*. O(n + windows)."""
    t = np.asarray(t, dtype=np.int64)
    kind = shape.kind
    if kind == "hopping":
        assert shape.size is not None and shape.slide is not None
        return _hopping(t, shape.size, shape.slide, shape.start_time)
    if kind == "per_event":
        assert shape.size is not None
        return _per_event(t, shape.size)
    if kind == "count":
        assert shape.rows is not None
        return _count(t, shape.rows, shape.every)
    assert shape.gap is not None
    return _session(t, shape.gap)


def _hopping(t: np.ndarray, size: int, slide: int, start_time: int) -> Windows:
    g = gcd(size, slide)
    w, s = size // g, slide // g  # a window is w panes; windows start s panes apart
    panes = (t - start_time) // g
    # panes of sorted times are sorted: their distinct values without np.unique's sort
    distinct = panes[np.flatnonzero(np.diff(panes, prepend=panes[:1] - 1))] if len(t) else panes
    # pane p lies in windows k with k*s <= p < k*s + w
    k_first = -((w - 1 - distinct) // s)  # ceil((p - w + 1) / s)
    k_last = distinct // s
    if len(distinct):
        # drop the windows an earlier pane already produced (both bounds are sorted)
        prev = np.concatenate([[k_first[0] - 1], k_last[:-1]])
        k_first = np.maximum(k_first, prev + 1)
    counts = np.maximum(k_last - k_first + 1, 0)
    total = int(counts.sum())
    offsets = np.cumsum(counts) - counts
    ks = np.repeat(k_first - offsets, counts) + np.arange(total, dtype=np.int64)
    key_lo = ks * s
    key_hi = key_lo + (w - 1)
    start = start_time + ks * slide
    return Windows(
        start=start,
        end=start + size,
        lo=np.searchsorted(panes, key_lo, "left").astype(np.int64),
        hi=np.searchsorted(panes, key_hi, "right").astype(np.int64),
        keys=panes,
        key_lo=key_lo,
        key_hi=key_hi,
    )


def _per_event(t: np.ndarray, size: int) -> Windows:
    return Windows(
        start=t - size,
        end=t.copy(),
        lo=np.searchsorted(t, t - size, "right").astype(np.int64),
        hi=np.searchsorted(t, t, "right").astype(np.int64),
        keys=t,
        key_lo=t - (size - 1),
        key_hi=t.copy(),
    )


def _count(t: np.ndarray, rows: int, every: int) -> Windows:
    n = len(t)
    last = np.arange(every - 1, n, every, dtype=np.int64)
    first = np.maximum(last - (rows - 1), 0)
    return Windows(
        start=t[first],
        end=t[last],
        lo=first,
        hi=last + 1,
        keys=np.arange(n, dtype=np.int64),
        key_lo=first,
        key_hi=last,
    )


def _session(t: np.ndarray, gap: int) -> Windows:
    n = len(t)
    if n == 0:
        e = np.empty(0, dtype=np.int64)
        return Windows(e, e, e, e, t, e, e)
    # an event at most `gap` after the previous one extends its session (windows
    # [t, t + gap) that touch merge, as Flink's session windows)
    breaks = np.flatnonzero(np.diff(t) > gap) + 1
    first = np.concatenate([[0], breaks]).astype(np.int64)
    last = np.concatenate([breaks - 1, [n - 1]]).astype(np.int64)
    return Windows(
        start=t[first],
        end=t[last] + gap,
        lo=first,
        hi=last + 1,
        keys=t,
        key_lo=t[first],
        key_hi=t[last],
    )
