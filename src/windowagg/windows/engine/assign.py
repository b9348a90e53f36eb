"""Window assignment: which events every window of a shape holds, for one key's sorted events
or for many keys' at once (the kernels each shape's class in :mod:`.shapes` calls).

=================  ==========================================================================
input              one key's admitted event times, sorted (ties keep input order); or many
                   keys' laid end to end, each key's sorted (:func:`assign_groups`)
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
time               O(n + windows) numpy index arithmetic (no aggregate is computed here),
                   the same number of numpy calls for one key as for 100,000
many keys          window bounds never cross a key: each key's times are searched as
                   ``offset(key) + t``, one ``searchsorted`` for all keys (the offsets
                   leave a gap of the window's reach between keys; a per-key search
                   instead if they would pass int64)
=================  ==========================================================================

Only windows holding at least one event exist (as with ``F.window``). Every shape's windows
come out ordered by key, then by their end, and both ``lo`` and ``hi`` are non-decreasing: a
window sequence the aggregators can also *slide* through, across keys.

Examples
--------
>>> import numpy as np
>>> from windowagg.windows.engine.shapes import Shape
>>> w = assign(Shape(size=20, slide=10), np.array([0, 5, 12, 31]))
>>> w.start.tolist(), w.end.tolist(), w.lo.tolist(), w.hi.tolist()
([-10, 0, 10, 20, 30], [10, 20, 30, 40, 50], [0, 0, 2, 3, 3], [2, 3, 3, 4, 4])
>>> s = assign(Shape(gap=5), np.array([1, 3, 9, 14, 30]))
>>> s.start.tolist(), s.end.tolist(), s.lo.tolist(), s.hi.tolist()
([1, 9, 30], [8, 19, 35], [0, 2, 4], [2, 4, 5])

Two keys, events ``[0, 5]`` and ``[3]`` laid end to end (``starts`` = where each begins):

>>> g, sizes = assign_groups(Shape(size=10), np.array([0, 5, 3]), np.array([0, 2, 3]))
>>> g.lo.tolist(), g.hi.tolist(), sizes.tolist()
([0, 0, 2], [1, 2, 3], [2, 1])
"""

from __future__ import annotations

from math import gcd
from typing import NamedTuple, Protocol

import numpy as np

__all__ = ["HISTORY", "Assignable", "Windows", "assign", "assign_groups", "key_shifts"]


class Windows(NamedTuple):
    """The windows of one key, or of many keys laid end to end (int64 arrays, one entry per
    window unless said otherwise; ``keys``, ``key_lo`` and ``key_hi`` are each key's own)."""

    start: np.ndarray
    """Output ``window_start``."""
    end: np.ndarray
    """Output ``window_end``."""
    lo: np.ndarray
    """First sorted event in the window."""
    hi: np.ndarray
    """One past the last sorted event in the window."""
    keys: np.ndarray
    """Aggregator key of every sorted event (non-decreasing within a key; one per event)."""
    key_lo: np.ndarray
    """Inclusive lower key bound of the window."""
    key_hi: np.ndarray
    """Inclusive upper key bound of the window."""


class Assignable(Protocol):
    """What :func:`assign` and :func:`assign_groups` ask of a shape: a
    :class:`~.shapes.Shape`, whose classes call this module's kernels."""

    def assign(self, t: np.ndarray) -> Windows: ...

    def assign_groups(self, t: np.ndarray, starts: np.ndarray) -> tuple[Windows, np.ndarray]: ...


def assign(shape: Assignable, t: np.ndarray) -> Windows:
    """The windows of *shape* over one key's sorted int64 times *t* (:meth:`.Shape.assign`).
    O(n + windows)."""
    return shape.assign(t)


def assign_groups(
    shape: Assignable, t: np.ndarray, starts: np.ndarray
) -> tuple[Windows, np.ndarray]:
    """The windows of *shape* over many keys' times at once, and how many each key has.

    *t* holds the keys' int64 times end to end, key ``g``'s sorted in
    ``t[starts[g]:starts[g + 1]]`` (``starts`` non-decreasing, from 0 to ``len(t)``; a key
    may have none). Returns the windows ordered by key, then end (``lo``/``hi`` index *t*),
    and the number of windows of every key (:meth:`.Shape.assign_groups`). O(n + windows +
    keys) in a fixed number of numpy calls.
    """
    t = np.asarray(t, dtype=np.int64)
    return shape.assign_groups(t, np.asarray(starts, dtype=np.int64))


def key_shifts(lo: np.ndarray, hi: np.ndarray) -> np.ndarray | None:
    """Per key, the shift that moves its inclusive int64 range ``[lo, hi]`` just past the
    previous key's, so that ``value + shift`` orders every key's values by key, then value
    (a key with nothing to place has ``hi = lo - 1``); None when the ranges laid end to end
    would pass 2**62 (int64 arithmetic on the shifted values could overflow). O(keys).

    >>> key_shifts(np.array([10, 0, 5]), np.array([12, -1, 5])).tolist()
    [-10, 3, -2]
    """
    if float(np.sum(hi.astype(np.float64) - lo + 1.0)) >= _SHIFT_LIMIT:
        return None
    width = hi - lo + 1
    shift: np.ndarray = np.cumsum(width) - width - lo
    return shift


#: Largest total of the keys' ranges :func:`key_shifts` lays end to end in int64.
_SHIFT_LIMIT = float(2**62)


def _search(
    v: np.ndarray,
    starts: np.ndarray,
    counts: np.ndarray,
    q: np.ndarray,
    qcounts: np.ndarray,
    reach: int,
    side: str,
) -> np.ndarray:
    """``searchsorted`` of every query in its own key's sorted values: index into *v*.

    Key g's values are ``v[starts[g]:starts[g + 1]]`` and its queries the next
    ``qcounts[g]`` of *q*, each within *reach* of the key's values. Each key's values and
    queries are shifted to a range of their own (:func:`key_shifts`), so one search
    answers all keys; if those ranges would not fit in int64, one search per key.
    """
    if not len(v):  # no events, hence no windows
        return np.zeros(len(q), dtype=np.int64)
    has = counts > 0
    first = np.where(has, v[np.minimum(starts[:-1], len(v) - 1)] - reach, 0)
    last = np.where(has, v[np.maximum(starts[1:] - 1, 0)] + reach, -1)
    shift = key_shifts(first, last)
    if shift is not None:
        codes = v + np.repeat(shift, counts)
        found: np.ndarray = np.searchsorted(codes, q + np.repeat(shift, qcounts), side)  # type: ignore[call-overload]
        return found.astype(np.int64)
    out = np.empty(len(q), dtype=np.int64)
    qstarts = np.concatenate([[0], np.cumsum(qcounts)])
    for g in np.flatnonzero(qcounts).tolist():
        a, b = int(starts[g]), int(starts[g + 1])
        c, d = int(qstarts[g]), int(qstarts[g + 1])
        out[c:d] = a + np.searchsorted(v[a:b], q[c:d], side)  # type: ignore[call-overload]
    return out


def _firsts(starts: np.ndarray, counts: np.ndarray, n: int) -> np.ndarray:
    """True at the first position of every key with events (length *n*)."""
    mark = np.zeros(n, dtype=bool)
    mark[starts[:-1][counts > 0]] = True
    return mark


def _hopping(
    t: np.ndarray, starts: np.ndarray, counts: np.ndarray, size: int, slide: int, start_time: int
) -> tuple[Windows, np.ndarray]:
    g = gcd(size, slide)
    w, s = size // g, slide // g  # a window is w panes; windows start s panes apart
    panes = (t - start_time) // g
    n, keys = len(t), len(counts)
    head = _firsts(starts, counts, n)
    # panes of sorted times are sorted within a key: their distinct values (per key)
    # without np.unique's sort
    new = head.copy()
    if n > 1:
        new[1:] |= panes[1:] != panes[:-1]
    at = np.flatnonzero(new)
    distinct = panes[at]
    opens = head[at]  # the first distinct pane of each key with events
    # pane p lies in windows k with k*s <= p < k*s + w
    k_first = -((w - 1 - distinct) // s)  # ceil((p - w + 1) / s)
    k_last = distinct // s
    if len(distinct):
        # drop the windows an earlier pane of the same key already produced (both bounds
        # are sorted within a key)
        prev = np.concatenate([[0], k_last[:-1]])
        k_first = np.where(opens, k_first, np.maximum(k_first, prev + 1))
    per = np.maximum(k_last - k_first + 1, 0)
    total = int(per.sum())
    offsets = np.cumsum(per) - per
    ks = np.repeat(k_first - offsets, per) + np.arange(total, dtype=np.int64)
    key_lo = ks * s
    key_hi = key_lo + (w - 1)
    start = start_time + ks * slide
    sizes = np.zeros(keys, dtype=np.int64)
    if len(distinct):
        sizes[counts > 0] = np.add.reduceat(per, np.flatnonzero(opens))
    reach = w + s
    return (
        Windows(
            start=start,
            end=start + size,
            lo=_search(panes, starts, counts, key_lo, sizes, reach, "left"),
            hi=_search(panes, starts, counts, key_hi, sizes, reach, "right"),
            keys=panes,
            key_lo=key_lo,
            key_hi=key_hi,
        ),
        sizes,
    )


#: A per-event ``size`` this long (the span of event times every front end takes, years
#: 0001-9999 in microseconds: ``windowagg.aggs.MAX_DURATION``) or longer means each key's
#: whole history: an event's window holds every event of its key up to its time (ties
#: included), from ``start`` = the key's first event time (decayed aggregations with no
#: ``size``: ``windowagg.call``); :class:`~.shapes.WholeHistory`.
HISTORY = 315_537_897_599_999_999


def _per_event(t: np.ndarray, starts: np.ndarray, counts: np.ndarray, size: int) -> Windows:
    if size >= HISTORY:
        return _history(t, starts, counts)
    return Windows(
        start=t - size,
        end=t.copy(),
        lo=_search(t, starts, counts, t - size, counts, size, "right"),
        hi=_search(t, starts, counts, t, counts, size, "right"),
        keys=t,
        key_lo=t - (size - 1),
        key_hi=t.copy(),
    )


def _history(t: np.ndarray, starts: np.ndarray, counts: np.ndarray) -> Windows:
    """Per event, every event of its key up to its time: ``lo`` the key's first, ``hi`` one
    past the last event of its time (the end of its run of equal times; no search). O(n)."""
    n = len(t)
    lo = np.repeat(starts[:-1], counts)
    hi = np.arange(1, n + 1, dtype=np.int64)  # one past each event: right where times differ
    if n > 1:
        tied = t[1:] == t[:-1]  # event i is not the last of its run of equal times ...
        ends = starts[1:][counts > 0] - 1
        tied[ends[ends < n - 1]] = False  # ... unless it is its key's last
        if tied.any():  # its run's end: the next stop at or after it (a reverse minimum)
            hi[:-1][tied] = n
            np.minimum.accumulate(hi[::-1], out=hi[::-1])
    has = counts > 0
    first = np.repeat(t[starts[:-1][has]], counts[has])  # each key's first time
    end = t.copy()  # read-only from here: one array for two fields each
    return Windows(start=first, end=end, lo=lo, hi=hi, keys=t, key_lo=first, key_hi=end)


def _count(
    t: np.ndarray, starts: np.ndarray, counts: np.ndarray, rows: int, every: int
) -> tuple[Windows, np.ndarray]:
    sizes = counts // every
    total = int(sizes.sum())
    base = np.repeat(starts[:-1], sizes)  # each window's key's first position
    j = np.arange(total, dtype=np.int64) - np.repeat(np.cumsum(sizes) - sizes, sizes)
    last = base + (j + 1) * every - 1
    first = np.maximum(last - (rows - 1), base)
    position = np.arange(len(t), dtype=np.int64) - np.repeat(starts[:-1], counts)
    return (
        Windows(
            start=t[first],
            end=t[last],
            lo=first,
            hi=last + 1,
            keys=position,
            key_lo=first - base,
            key_hi=last - base,
        ),
        sizes,
    )


def _session(
    t: np.ndarray, starts: np.ndarray, counts: np.ndarray, gap: int
) -> tuple[Windows, np.ndarray]:
    n = len(t)
    # an event at most `gap` after the previous one of its key extends its session
    # (windows [t, t + gap) that touch merge, as Flink's session windows)
    head = _firsts(starts, counts, n)
    if n > 1:
        head[1:] |= np.diff(t) > gap
    first = np.flatnonzero(head).astype(np.int64)
    last = np.concatenate([first[1:] - 1, [n - 1]]).astype(np.int64) if n else first
    key_of = np.repeat(np.arange(len(counts), dtype=np.int64), counts)
    sizes = np.bincount(key_of[first], minlength=len(counts)).astype(np.int64)
    return (
        Windows(
            start=t[first],
            end=t[last] + gap,
            lo=first,
            hi=last + 1,
            keys=t,
            key_lo=t[first],
            key_hi=t[last],
        ),
        sizes,
    )
