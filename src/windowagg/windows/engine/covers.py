"""Covers of pane ranges in a segment tree over pane numbers, and their combine.

=================  ==========================================================================
tree               node ``(l, i)`` holds the partial of the panes ``i*2**l .. (i+1)*2**l - 1``
                   for levels ``l = 0 .. top``; its piece key is ``(i << 6) | l``
                   (:data:`LEVEL_BITS`), as the pane layout (:mod:`.panes`) stores it
cover              the nodes that tile a pane range ``a..b``, left to right: at most two per
                   level below the top, and what is left at the top level (<= 2 nodes when
                   ``b - a < 2**top``): the classic segment-tree decomposition, read from a
                   table of every residue mod ``2**top`` (:func:`cover_table`) or walked
                   level by level with numpy (:func:`covers_levels`)
ordering           the tree's order is the panes': a cover's nodes are combined left to right,
                   so non-commutative monoids are answered in time order
operator needs     a monoid's ``combine`` and ``lower`` (:func:`fold_covers`); numeric kinds
                   go through the slice verbs in :mod:`.panes`
time               :func:`cover` O(top); :func:`covers` O(n top) numpy for n ranges of one
                   width; :func:`fold_covers` O(sum of the covers) combines
space              the table: O(2**top top) per (width, top), cached for 16 shapes
paper              panes: Li et al., SIGMOD Record 2005; a tree of partials in a key-value
                   store: the MTA paper (Tangwongsan et al.)
=================  ==========================================================================
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from functools import lru_cache
from typing import Any

import numpy as np

from windowagg.errors import AggregationError
from windowagg.windows.engine.state import aggregation_message

__all__ = [
    "LEVEL_BITS",
    "TABLE_TOP",
    "cover",
    "cover_table",
    "covers",
    "covers_levels",
    "fold_covers",
]

#: Low bits of a piece key that hold the node's level: the key of node ``(level, i)`` (the
#: panes ``i * 2**level .. (i + 1) * 2**level - 1``) is ``i * 64 + level``.
LEVEL_BITS = 6


def cover(a: int, b: int, top: int) -> list[tuple[int, int]]:
    """The nodes (level <= *top*) that tile the panes ``a..b``, left to right: at most
    two per level. O(top).

    >>> cover(3, 9, 2)
    [(0, 3), (2, 1), (1, 4)]
    """
    left: list[tuple[int, int]] = []
    right: list[tuple[int, int]] = []
    level = 0
    while a <= b:
        if level == top:
            left.extend((level, i) for i in range(a, b + 1))
            break
        if a & 1:
            left.append((level, a))
            a += 1
        if not b & 1:
            right.append((level, b))
            b -= 1
        a >>= 1
        b >>= 1
        level += 1
    return left + right[::-1]


#: Up to ``2**top`` of this many, :func:`covers` reads the covers from a table of every
#: residue (:func:`cover_table`); above, it walks the levels with numpy.
TABLE_TOP = 12


@lru_cache(maxsize=16)
def cover_table(width: int, top: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The cover of the panes ``r .. r + width - 1`` for every ``r < 2**top``: levels and
    indexes (rows padded), and lengths. The cover of ``a = c * 2**top + r`` is row r with
    ``c << (top - level)`` added to each index. O(2**top top), once per window shape."""
    rows = [cover(r, r + width - 1, top) for r in range(1 << top)]
    longest = max(len(c) for c in rows)
    lev = np.zeros((len(rows), longest), np.int64)
    idx = np.zeros((len(rows), longest), np.int64)
    for r, cov in enumerate(rows):
        lev[r, : len(cov)] = [lv for lv, _ in cov]
        idx[r, : len(cov)] = [i for _, i in cov]
    return lev, idx, np.asarray([len(c) for c in rows], np.int64)


def covers(a: np.ndarray, width: int, top: int) -> tuple[np.ndarray, np.ndarray]:
    """:func:`cover` of every pane range ``a[j] .. a[j] + width - 1`` at once: the piece
    keys (:func:`~.panes.node_key`) of all the covers, window by window and left to right in each,
    and how many each window has. O(n top) numpy.

    >>> keys, n = covers(np.array([3, 0]), 7, 3)  # panes 3..9 and 0..6
    >>> [(int(k) % 64, int(k) // 64) for k in keys], n.tolist()
    ([(0, 3), (2, 1), (1, 4), (2, 0), (1, 2), (0, 6)], [3, 3])
    >>> [covers(np.array([-5, 3, 70]), 7, t)[0].tolist() == covers_levels(
    ...     np.array([-5, 3, 70]), 7, t)[0].tolist() for t in (3, 4)]
    [True, True]
    """
    a = np.asarray(a, dtype=np.int64)
    if top > TABLE_TOP:
        return covers_levels(a, width, top)
    lev_t, idx_t, len_t = cover_table(width, top)
    res, c = a & ((1 << top) - 1), a >> top
    lens = len_t[res]
    win = np.repeat(np.arange(len(a), dtype=np.int64), lens)
    j = np.arange(int(lens.sum()), dtype=np.int64) - np.repeat(np.cumsum(lens) - lens, lens)
    rw = res[win]
    level = lev_t[rw, j]
    idx = idx_t[rw, j] + (c[win] << (top - level))
    return (idx << LEVEL_BITS) | level, lens


def covers_levels(a: np.ndarray, width: int, top: int) -> tuple[np.ndarray, np.ndarray]:
    """:func:`covers` by walking the levels (any *top*): two candidate nodes per level
    and window, ordered by one sort. O(n top) numpy."""
    b = np.asarray(a, dtype=np.int64) + (width - 1)
    a = np.asarray(a, dtype=np.int64).copy()
    a = np.asarray(a, dtype=np.int64).copy()
    b = np.asarray(b, dtype=np.int64).copy()
    idx = np.arange(len(a), dtype=np.int64)
    keys: list[np.ndarray] = []
    win: list[np.ndarray] = []
    slot: list[np.ndarray] = []
    for level in range(top):
        live = a <= b
        left = live & (a & 1 == 1)
        keys.append((a[left] << LEVEL_BITS) | level)
        win.append(idx[left])
        slot.append(np.full(int(left.sum()), level, np.int64))
        a = a + left
        right = live & (b & 1 == 0)
        keys.append((b[right] << LEVEL_BITS) | level)
        win.append(idx[right])
        slot.append(np.full(int(right.sum()), 2 * top + 2 - level, np.int64))
        b = b - right
        a = np.where(live, a >> 1, a)
        b = np.where(live, b >> 1, b)
        stop = ~live
        b[stop] = a[stop] - 1  # stays empty
    for j in range(2):  # at the top level: what is left, at most two nodes
        at = a + j <= b
        keys.append(((a[at] + j) << LEVEL_BITS) | top)
        win.append(idx[at])
        slot.append(np.full(int(at.sum()), top + j, np.int64))
    if ((a + 2) <= b).any():
        raise AssertionError("a window spans more than two top nodes")
    k, w, sl = np.concatenate(keys), np.concatenate(win), np.concatenate(slot)
    order = np.lexsort((sl, w))
    return k[order], np.bincount(w, minlength=len(a)).astype(np.int64)


def fold_covers(
    alias: str, m: Any, covers: Iterable[Sequence[Any]], start: np.ndarray, end: np.ndarray
) -> list[Any]:
    """``lower`` of each window's cover partials combined left to right, by the monoid's
    own combine and lower (the path of any monoid without a slice verb); a raising call
    becomes the :class:`AggregationError` naming the window. O(sum of the covers)."""
    comb, lower = m.combine, m.lower  # bound methods: a few calls per window
    res: list[Any] = []
    try:
        for cover in covers:
            acc = cover[0]
            for x in cover[1:]:
                acc = comb(acc, x)
            res.append(lower(acc))
    except Exception as exc:  # a user monoid's combine / lower: name the window
        w = len(res)
        where = f" in the window (window_start {int(start[w])}, window_end {int(end[w])})"
        reason = f"{type(exc).__name__}: {exc}"
        raise AggregationError(
            aggregation_message(alias, m, reason, where), alias=alias, window=w, reason=reason
        ) from exc
    return res
