"""The pane layout's tree: pane partials folded in, the nodes above them refreshed, read back, and dropped with their dead panes (a base of :class:`~.panes.PaneStream`).

=================  ==========================================================================
component          :class:`PaneTree`, split from :mod:`.panes`: the base of
                   :class:`~.pane_windows.PaneWindows` and :class:`~.panes.PaneStream`,
                   whose slots, configuration and bytes it uses (see its fact card)
state              node ``(l, i)`` (piece key :func:`~.pane_folds.node_key`) holds, per
                   aggregation, the partial of the non-empty panes ``i*2**l ..
                   (i+1)*2**l - 1``, for ``l = 0 .. top``; stored while a pane under it
                   is; a split node where a user monoid's combine raised (the windows
                   that need it ask its children)
update             a micro-batch's events folded per touched pane (commutative plans:
                   ``old ⊗ new``; otherwise the open pane's events kept and refolded),
                   then the touched panes' ancestors refreshed level by level, one
                   ``get_many`` per level and side, the numeric kinds' combines inlined
reads              a range's stored panes, and the partials of a range's cover, left to
                   right
drop               the stored nodes over dead panes only: down from the top nodes through
                   stored nodes, or, when the cache is the whole state, level by level
ordering           out-of-order within the lateness bound
operator needs     monoids; a commutative one folds a micro-batch into a pane's partial
                   and keeps no event
time               O(m + q log W) combines and O(q log W) pieces per micro-batch of m
                   events touching q panes; O(log W) look-ups per cover; O(dead nodes)
                   per drop
space              O(window / slide) nodes, as :mod:`.panes`
paper              panes: Li et al., SIGMOD Record 2005; the tree kept in a key-value
                   store as the MTA paper's
=================  ==========================================================================

Examples
--------
>>> import numpy as np
>>> from windowagg.aggs import parse_aggs
>>> from windowagg.windows.engine.panes import PaneStream
>>> from windowagg.windows.engine.shapes import Shape
>>> s = PaneStream(parse_aggs(["sum(v)"]), Shape(size=4, slide=2), allowed_lateness=20)
>>> _ = s.feed(np.array([0, 1, 2, 5]), {"v": np.array([1.0, 2.0, 3.0, 4.0])})
>>> s._present_panes(0, 3), s._parts_at(0, 2), s._parts_at(1, 2)  # panes of width 2
([0, 1, 2], [(6.0,)], [(3.0,), (4.0,)])
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Iterable
from typing import Any

import numpy as np

from windowagg.errors import AggregationError, CodecError
from windowagg.windows.engine.covers import cover
from windowagg.windows.engine.layout import Layout
from windowagg.windows.engine.pane_folds import _LEVEL_BITS, _SPLIT, _fold, node_key
from windowagg.windows.engine.pieces import Pieces
from windowagg.windows.engine.records import Events, concat_events, sorted_events, take_events
from windowagg.windows.engine.shapes import Shape
from windowagg.windows.engine.state import Plan, Reused, aggregation_message
from windowagg.windows.engine.values import Values

__all__ = ["PaneTree"]


class PaneTree(Layout):
    """The tree of pane partials of :class:`~.panes.PaneStream` (see the module docstring).

    Holds the slots the tree reads and writes; :class:`~.panes.PaneStream` sets them at
    construction (its ``_FIXED`` names those a step never changes).
    """

    __slots__ = (
        "_cols",
        "_combines",
        "_g",
        "_inline",
        "_lazy",
        "_make",
        "_monoids",
        "_nodes",
        "_open",
        "_plan",
        "_raw",
        "_shape",
        "_span",
        "_stale",
        "_top",
        "_values",
    )

    _cols: list[str]
    _plan: Plan
    _shape: Shape
    _make: Reused
    _monoids: list[Any]
    _combines: tuple[Any, ...]
    _inline: Any
    _raw: bool
    _g: int
    _top: int
    _nodes: Pieces
    _values: Values | None
    _open: list[int]
    _span: tuple[int, int] | None
    _lazy: bool
    _stale: list[int]

    # ------------------------------------------------------------------ panes
    def _pane_of(self, t: np.ndarray) -> np.ndarray:
        out: np.ndarray = (t - self._shape.start_time) // self._g
        return out

    def _fold_events(self, pane: int, ev: Events) -> tuple[Any, ...]:
        """Every aggregation's partial of *ev* (sorted, non-empty), in order. O(n)."""
        lo, hi = np.zeros(1, np.int64), np.full(1, len(ev.t), np.int64)
        out = []
        for i, (g, m) in enumerate(zip(self._plan.groups, self._monoids, strict=True)):
            col = ev.values[g.column] if g.column is not None else np.zeros(len(ev.t))
            out.append(self._guarded(_fold, pane, m, col, lo, hi, self._make, i=i)[0])
        return tuple(out)

    def _update(self, new: Events, panes: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> None:
        """Fold the new events (sorted by time, then arrival) into their panes and the
        panes' ancestors. O(m + q log W) combines, O(q log W) pieces read and put."""
        touched: list[int] = panes[lo].tolist()
        if not touched:
            return
        if self._values is not None:
            self._values.add(touched, lo, hi, new.values)
        nodes = self._nodes
        if self._raw:
            for j, p in enumerate(touched):
                part = take_events(new, slice(int(lo[j]), int(hi[j])))
                old = nodes.get(node_key(0, p))
                if old is not None and old[0] != "e":
                    raise CodecError(f"pane {p} is frozen but received events: corrupted state")
                ev = (
                    part
                    if old is None
                    else sorted_events(concat_events([old[2], part], self._cols))
                )
                nodes.put(node_key(0, p), ("e", self._fold_events(p, ev), ev))
            self._open = sorted(set(self._open).union(touched))
        else:
            folded = []
            for i, (g, m) in enumerate(zip(self._plan.groups, self._monoids, strict=True)):
                col = new.values[g.column] if g.column is not None else np.zeros(len(new.t))
                folded.append(self._guarded(_fold, touched[0], m, col, lo, hi, self._make, i=i))
            self._put_folded(touched, folded)
        self._ancestors(touched)

    def _put_folded(self, touched: list[int], folded: list[list[Any]]) -> None:
        """Combine each touched pane's new partials (``folded[aggregation][j]``) into its
        stored ones (commutative plans: ``old ⊗ new``). O(q) combines and pieces."""
        nodes = self._nodes
        olds = nodes.get_many([p << _LEVEL_BITS for p in touched])  # node_key(0, p)
        put: list[tuple[int, Any]] = []
        rows = zip(*folded, strict=True) if folded else [()] * len(touched)  # () : quantiles only
        combine = self._inline if self._inline is not None else self._combine_each
        for p, old, new in zip(touched, olds, rows, strict=True):
            vals = new
            if old is not None:  # old ⊗ new: the monoid is commutative
                try:
                    vals = combine(old[1], new)
                    put.append((p << _LEVEL_BITS, ("p", vals, None)))
                    continue
                except Exception:  # the monoids' own, each: say which raised, in which pane
                    pass
                vals = tuple(
                    [
                        self._guarded(m.combine, p, o, v, i=i)
                        for i, (m, o, v) in enumerate(zip(self._monoids, old[1], new, strict=True))
                    ]
                )
            put.append((p << _LEVEL_BITS, ("p", vals, None)))
        nodes.put_many(put)

    def _ancestors(self, touched: list[int]) -> None:
        """The nodes above the touched panes (ascending) refreshed (:meth:`_refresh`), and
        the span widened. A lazy plan (in memory, without deltas) notes the panes as stale
        instead: refreshed when the nodes are read (:meth:`_build`) or before the dead panes
        go (:meth:`_settle_stale`). O(q log W) combines; lazy: O(stale panes)."""
        if self._lazy and self._nodes.in_memory:
            stale = self._stale
            self._stale = list(touched) if not stale else sorted(set(stale).union(touched))
        else:
            self._refresh(touched)
        span = self._span
        lo_p, hi_p = touched[0], touched[-1]
        self._span = (lo_p, hi_p) if span is None else (min(span[0], lo_p), max(span[1], hi_p))

    def _refresh(self, touched: list[int]) -> None:
        """Refresh the nodes above the touched panes (ascending), level by level: one
        ``get_many`` per level and side, the combine inlined for numeric plans (the
        monoids' own where it raises; a split node where they raise too). O(q log W)
        combines."""
        nodes = self._nodes
        get_many, put_many, delete_many = nodes.get_many, nodes.put_many, nodes.delete_many
        if not nodes.in_memory:  # the siblings the walk reads, decoded in one call
            get_many(self._siblings(touched))
        inline, each = self._inline, self._combine_each
        split = (_SPLIT, None, None)
        bits = _LEVEL_BITS
        parents = touched
        for level in range(1, self._top + 1):
            parents = list(dict.fromkeys([p >> 1 for p in parents]))  # ascending: no sort
            below = level - 1
            right_of = (1 << bits) | below
            # children 2i and 2i + 1 of level - 1: node_key(below, 2i) = i << (bits + 1) | below
            lefts = get_many([(i << (bits + 1)) | below for i in parents])
            rights = get_many([(i << (bits + 1)) | right_of for i in parents])
            put: list[tuple[int, Any]] = []
            gone: list[int] = []
            for i, left, right in zip(parents, lefts, rights, strict=True):
                key = (i << bits) | level
                if left is None or right is None:
                    one = left if right is None else right
                    if one is None:
                        gone.append(key)
                    elif one[0] == _SPLIT:
                        put.append((key, split))
                    else:
                        put.append((key, ("p", one[1], None)))
                    continue
                if left[0] == _SPLIT or right[0] == _SPLIT:
                    put.append((key, split))
                    continue
                try:
                    vals = (
                        inline(left[1], right[1]) if inline is not None else each(left[1], right[1])
                    )
                except Exception:  # the inlined combine refused: the monoids' own, as before
                    try:
                        vals = each(left[1], right[1])
                    except Exception:  # a user monoid: the windows that need it say so
                        put.append((key, split))
                        continue
                put.append((key, ("p", vals, None)))
            put_many(put)
            delete_many(gone)

    def _stale_in(self, a: int, b: int) -> list[int]:
        """The stale panes in ``a..b`` (stored panes whose nodes are not built yet),
        ascending. O(log stale + those panes)."""
        stale = self._stale
        return stale[bisect_left(stale, a) : bisect_right(stale, b)] if stale else []

    def _build(self, lo: int | None = None, hi: int | None = None) -> None:
        """Refresh the nodes above the stale panes in ``lo .. hi`` (default: all of them;
        a range of whole top nodes, so that each node is refreshed after all its stale
        children): the nodes then hold what refreshing them at every micro-batch would
        have left. O(those panes log W) combines."""
        stale = self._stale
        if not stale:
            return
        a = 0 if lo is None else bisect_left(stale, lo)
        b = len(stale) if hi is None else bisect_right(stale, hi)
        if a < b:  # the span holds them already: only the nodes are refreshed
            self._stale = stale[:a] + stale[b:]
            self._refresh(stale[a:b])

    def _settle_stale(self, last_dead: int, every: bool) -> None:
        """Before the panes up to *last_dead* go (:meth:`_drop_range`; *every*: all of
        them): the stale panes under the top node holding both dead and live panes are
        refreshed (its nodes stay, holding their dead panes as the eager refresh left
        them), those under wholly dead top nodes forgotten (their nodes go unbuilt).
        O(stale panes log W)."""
        stale = self._stale
        if not stale:
            return
        top = self._top
        if every:
            self._stale = []
        else:
            live = (last_dead + 1) >> top  # the first top node holding a live pane
            self._stale = stale[bisect_left(stale, live << top) :]
            if (last_dead + 1) & ((1 << top) - 1):  # it holds dead panes too
                self._build(live << top, ((live + 1) << top) - 1)

    def _siblings(self, touched: list[int]) -> list[int]:
        """The keys of the nodes :meth:`_refresh` reads and does not write first: at
        each level below the top, the children of the next level's refreshed nodes that
        are not refreshed themselves (the touched panes' siblings, then their parents'...).
        Read ahead in one :meth:`~.pieces.Pieces.get_many` (one decode of the misses
        instead of one per level): the same keys, each read once. O(q log W)."""
        keys: list[int] = []
        below = set(touched)
        for level in range(1, self._top + 1):
            parents = {p >> 1 for p in below}
            keys += [
                (c << _LEVEL_BITS) | (level - 1)
                for i in sorted(parents)
                for c in (2 * i, 2 * i + 1)
                if c not in below
            ]
            below = parents
        return keys

    def _combine_each(self, x: tuple[Any, ...], y: tuple[Any, ...]) -> tuple[Any, ...]:
        """Every aggregation's ``combine`` of the partials *x* and *y*. O(aggregations)."""
        return tuple([c(a, b) for c, a, b in zip(self._combines, x, y, strict=True)])

    def _combine_fast(self, x: tuple[Any, ...], y: tuple[Any, ...]) -> tuple[Any, ...]:
        """:meth:`_combine_each` for a plan of numeric kinds: their combines inlined
        (:func:`_inline_combine`); where one raises (a partial that is None: no value, or
        values that do not compare), the monoids' own. O(aggregations)."""
        try:
            out: tuple[Any, ...] = self._inline(x, y)
        except Exception:
            return self._combine_each(x, y)
        return out

    def _guarded(self, fn: Any, pane: int, *args: Any, i: int) -> Any:
        """``fn(*args)``; a monoid's exception becomes an ``AggregationError`` naming the
        aggregation *i* and pane *pane*."""
        try:
            return fn(*args)
        except Exception as e:
            g = self._plan.groups[i]
            st = self._shape.start_time + pane * self._g
            where = f" in the pane [{st}, {st + self._g})"
            reason = f"{type(e).__name__}: {e}"
            raise AggregationError(
                aggregation_message(g.alias, g.monoid, reason, where), alias=g.alias, reason=reason
            ) from e

    # ------------------------------------------------------------------ tree reads
    def _stored_panes(self, lo: int, hi: int) -> list[int]:
        """The stored panes in ``lo..hi``, ascending: a scan of the stored pieces, O(stored)
        (reads them all from a store). Only for spans too sparse to walk (see
        :meth:`_windows_with_panes`)."""
        mask = (1 << _LEVEL_BITS) - 1
        return [
            k >> _LEVEL_BITS
            for k in self._nodes.stored()
            if k & mask == 0 and lo <= k >> _LEVEL_BITS <= hi
        ]

    def _collect(self, level: int, i: int, out: list[tuple[Any, ...]]) -> None:
        rec = self._nodes.get(node_key(level, i))
        if rec is None:
            return
        if rec[0] == _SPLIT:
            self._collect(level - 1, 2 * i, out)
            self._collect(level - 1, 2 * i + 1, out)
        else:
            out.append(rec[1])

    def _present_panes(self, a: int, b: int) -> list[int]:
        """The stored panes in ``a..b``, ascending: down from the range's cover through
        stored nodes only (a node is stored while a pane under it is). O((stored panes in
        range + 1) log W) look-ups, whatever the range's width."""
        contains = self._nodes.contains
        out: list[int] = []
        stack = list(reversed(cover(a, b, self._top)))
        while stack:
            level, i = stack.pop()
            if not contains((i << _LEVEL_BITS) | level):
                continue
            if not level:
                out.append(i)
            else:
                stack.extend(((level - 1, 2 * i + 1), (level - 1, 2 * i)))
        more = self._stale_in(a, b)  # stored panes the walk may miss (nodes not built yet)
        return sorted(set(out).union(more)) if more else out

    def _parts_at(self, a: int, width: int) -> list[tuple[Any, ...]]:
        """The partials of the nodes over the panes ``a .. a + width - 1``, in order
        (empty: no pane). O(log W)."""
        self._build()
        out: list[tuple[Any, ...]] = []
        for level, i in cover(a, a + width - 1, self._top):
            self._collect(level, i, out)
        return out

    # ------------------------------------------------------------------ dead panes
    def _drop_range(self, span: tuple[int, int], last_dead: int, every: bool) -> None:
        """:meth:`_drop` when the cache is the whole state: the same nodes, found level by
        level as the stored ones among the nodes over the span's dead panes only (all of
        them if *every*), one pass over the cache per level instead of a walk down
        through the stored nodes. O(dead panes) look-ups."""
        stored_among = self._nodes.stored_among
        gone: list[int] = []
        lo = span[0]
        hi = span[1] if every else last_dead
        for level in range(self._top + 1):
            last = hi >> level if every else ((hi + 1) >> level) - 1
            first = lo >> level
            if last < first:
                break
            gone.extend(
                stored_among(list(range((first << _LEVEL_BITS) | level,
                                        ((last + 1) << _LEVEL_BITS) | level, 1 << _LEVEL_BITS)))
            )  # fmt: skip
        self._nodes.delete_many(gone)
        if self._values is not None:  # the dead panes' values go with them
            self._values.drop([k >> _LEVEL_BITS for k in gone if not k & ((1 << _LEVEL_BITS) - 1)])

    def _drop(self, tops: Iterable[int], last_dead: int, every: bool) -> None:
        """Delete the stored nodes under the top nodes *tops* whose panes are all <=
        *last_dead* (*every*: all of them), level by level. A node that also covers live
        panes stays (no window query uses it whole any more: a window never holds a dead
        pane); the walk goes down only through stored nodes (a node is stored while a pane
        under it is). O(nodes visited) look-ups."""
        contains = self._nodes.contains
        gone: list[int] = []
        level, frontier = self._top, list(tops)
        while frontier:
            here = [i for i in frontier if contains((i << _LEVEL_BITS) | level)]
            whole = here if every else [i for i in here if ((i + 1) << level) - 1 <= last_dead]
            gone.extend((i << _LEVEL_BITS) | level for i in whole)
            if not level:
                break
            down = here if every else [i for i in here if (i << level) <= last_dead]
            frontier = [c for i in down for c in (2 * i, 2 * i + 1)]
            level -= 1
        self._nodes.delete_many(gone)
        if self._values is not None:  # the dead panes' values go with them
            self._values.drop([k >> _LEVEL_BITS for k in gone if not k & ((1 << _LEVEL_BITS) - 1)])
