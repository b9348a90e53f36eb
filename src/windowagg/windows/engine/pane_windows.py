"""The pane layout's windows: which windows a micro-batch closes or revises, and their answers from the pane tree (a base of :class:`~.panes.PaneStream`).

=================  ==========================================================================
component          :class:`PaneWindows`, split from :mod:`.panes`: on
                   :class:`~.pane_tree.PaneTree`, the base of :class:`~.panes.PaneStream`
windows            window ``k`` (start ``start_time + k*slide``) is the panes ``k*s ..
                   k*s + w - 1``; emitted when the watermark passes its end (revision 0)
                   and again (revision + 1) when a late-but-accepted event lands in one of
                   its panes; a window holding no stored pane is not emitted
answers            the same answers by three paths: up to :data:`_FEW` windows walk their
                   covers in plain Python; more take their covers with numpy
                   (:func:`~.covers.covers`) and one slice verb per numeric aggregation
                   (the others: their combine and lower); numeric kinds whose windows span
                   at most ``2 top`` panes each are answered from the panes
                   (:meth:`PaneWindows._dense`); exact quantiles from
                   :class:`~.values.Values`
several sizes      size z's window ending where row k's does is the panes ``k*s + w - w_z
                   .. k*s + w - 1`` of the same tree; a row whose size-z window holds no
                   pane gets the aggregation's empty answer (:func:`~.sizes.evaluate_sizes`)
ordering           out-of-order within the lateness bound (late events revise)
operator needs     monoids (combine, lower); the numeric kinds known by their declared kind
time               O(r log W) look-ups and combines for r windows (z sizes: O(z r log W));
                   a span too wide to walk enumerates the stored panes instead (O(stored))
space              O(r log W) per micro-batch; kept: the revisions of the emitted windows
paper              panes: Li et al., SIGMOD Record 2005
=================  ==========================================================================

Examples
--------
>>> import numpy as np
>>> from windowagg.aggs import parse_aggs
>>> from windowagg.windows.engine.panes import PaneStream
>>> from windowagg.windows.engine.shapes import Shape
>>> s = PaneStream(parse_aggs(["max(v)"]), Shape(size=4, slide=2), allowed_lateness=20)
>>> out, _ = s.feed(np.array([0, 2, 5]), {"v": np.array([1.0, 3.0, 2.0])})
>>> out.columns["end"].tolist(), out.columns["max_v"].tolist()  # windows -1 and 0 closed
([2, 4], [1.0, 3.0])
>>> s._first(2), s._end(1), s._closed_upto(5)  # pane 2's first window, window 1's end
(1, 6, 0)
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence
from typing import Any

import numpy as np

from windowagg.errors import AggregationError
from windowagg.monoids.base import declared_kind
from windowagg.windows.engine.assign import Windows
from windowagg.windows.engine.clock import WatermarkClock
from windowagg.windows.engine.covers import cover, covers, fold_covers
from windowagg.windows.engine.emit import columns
from windowagg.windows.engine.pane_folds import _LEVEL_BITS, _MERGE, _SPLIT, _WALK, node_key
from windowagg.windows.engine.pane_tree import PaneTree
from windowagg.windows.engine.sizes import at_row, empty_answer, size_label, sized_aggs, spread
from windowagg.windows.engine.state import query_slices

__all__ = ["PaneWindows"]

#: Up to this many windows to emit, a micro-batch walks their covers in plain Python
#: (:meth:`PaneStream._close_walk`); more take numpy and the slice verbs.
_FEW = 48


class PaneWindows(PaneTree):
    """The windows of :class:`~.panes.PaneStream` over its pane tree (see the module
    docstring). Holds the slots the windows read and write besides the tree's;
    :class:`~.panes.PaneStream` sets them at construction."""

    __slots__ = ("_aggs", "_clock", "_emitted_wm", "_merges", "_revs", "_s", "_sizes", "_w")

    _clock: WatermarkClock
    _aggs: list[Any]
    _s: int
    _w: int
    _sizes: tuple[tuple[int, int], ...]
    _merges: tuple[tuple[Any, tuple[Any, type]], ...]
    _emitted_wm: int | None
    _revs: dict[int, tuple[int, int]]

    # ------------------------------------------------------------------ windows
    def _first(self, p: int) -> int:
        """The first window (number k: panes ``k*s .. k*s + w - 1``) holding pane *p*."""
        return -(-(p - self._w + 1) // self._s)

    def _end(self, k: int) -> int:
        s = self._shape
        assert s.size is not None and s.slide is not None
        return s.start_time + k * s.slide + s.size

    def _closed_upto(self, wm: int) -> int:
        """The last window whose end is <= *wm*."""
        s = self._shape
        assert s.size is not None and s.slide is not None
        return (wm - s.start_time - s.size) // s.slide

    def _windows_with_panes(self, first: int, last: int) -> list[int]:
        """Window numbers ``first..last`` that may hold a stored pane, ascending: every one
        when there are at most :data:`_WALK` of them (O(last - first), no read), else those
        holding a stored pane (a scan, O(stored)). Events far apart in time (years between
        two events of a key) thus never cost one step per empty window."""
        if last < first:
            return []
        if last - first < _WALK:
            return list(range(first, last + 1))
        ks: set[int] = set()
        span = self._span
        assert span is not None
        for p in self._stored_panes(span[0], span[1]):
            ks.update(range(max(first, self._first(p)), min(last, p // self._s) + 1))
        return sorted(ks)

    def _parts(self, k: int) -> list[tuple[Any, ...]]:
        """The partials of window *k*'s nodes, in order (empty: no pane). O(log W)."""
        return self._parts_at(k * self._s, self._w)

    def _covered(self, k: int) -> bool:
        """Whether window *k* holds a stored pane. O(log W) look-ups."""
        if self._stale_in(k * self._s, k * self._s + self._w - 1):  # nodes not built yet
            return True
        nodes = self._nodes
        return any(
            nodes.contains(node_key(level, i))
            for level, i in cover(k * self._s, k * self._s + self._w - 1, self._top)
        )

    def _revisable(self, touched: list[int]) -> list[int]:
        """The windows already emitted that hold a touched pane, ascending. O(q + those
        windows): the touched panes' window ranges merged in order."""
        emitted = self._emitted_wm
        if emitted is None or not touched:
            return []
        last = self._closed_upto(emitted)
        first, step = self._first, self._s
        ks: list[int] = []
        nxt = first(touched[0])
        # a pane past the last emitted window's panes is in no emitted window
        touched = touched[: bisect_right(touched, last * step + self._w - 1)]
        for p in touched:  # ascending: each pane's windows start and end no earlier
            a, b = max(first(p), nxt), min(p // step, last)
            if a <= b:
                ks.extend(range(a, b + 1))
                nxt = b + 1
        return ks

    def _close(self, again: list[int], held: list[bool]) -> tuple[dict[str, Any], np.ndarray]:
        """The windows to emit: closed ones not emitted yet (revision 0) and emitted ones
        holding a touched pane (revision + 1, or 0 if they held no pane before). Their
        covers are found with numpy (:func:`~.covers.covers`) and answered by one slice verb per
        aggregation (:meth:`_answers`). O(r log W) look-ups."""
        wm = self._clock.watermark
        span = self._span
        if wm is None or span is None:
            if self._sizes:
                return self._sized_columns(np.empty(0, np.int64), [])
            return self._columns([], [], [])
        emitted = self._emitted_wm
        last = min(self._closed_upto(wm), span[1] // self._s)
        first = self._first(span[0])
        if emitted is not None:
            first = max(first, self._closed_upto(emitted) + 1)
        listed = self._windows_with_panes(first, last)
        if again:
            listed = sorted(set(listed).union(again))
        if listed and not self._sizes and self._dense_pays(listed):
            dense = self._dense(listed)
            if dense is not None:
                out_k, results = dense
                rev = self._revised(out_k, again, held)
                self._emitted_wm = wm if emitted is None else max(emitted, wm)
                return self._dense_columns(out_k, results, rev)
        if len(listed) <= _FEW:
            return self._close_walk(listed, again, held)
        ks = np.asarray(listed, dtype=np.int64)
        got = self._gathered(ks * self._s, self._w)
        if got is None:  # a user monoid's error path
            return self._close_walk(ks.tolist(), again, held)
        nodes, flat, n = got
        emit = n > 0  # a window without events is not emitted
        hi = np.cumsum(n)[emit]
        lo = hi - n[emit]
        out_k = ks[emit]
        rev = self._revised(out_k, again, held)
        self._emitted_wm = wm if emitted is None else max(emitted, wm)
        bounds = np.append(lo, hi[-1:]).astype(np.int64)
        if self._sizes:
            return self._sized_columns(out_k, rev, (nodes, flat, lo, hi))
        return self._answers(out_k, nodes, flat, bounds, rev)

    def _revised(self, out_k: np.ndarray, again: list[int], held: list[bool]) -> np.ndarray:
        """The revision of every window *out_k* emitted now: 0, or for an emitted window
        *again* that held a pane before, its last revision + 1 (noted). O(r + again)."""
        rev = np.zeros(len(out_k), dtype=np.int64)
        if not again:
            return rev
        was = dict(zip(again, held, strict=True))
        pos = {k: j for j, k in enumerate(out_k.tolist())}
        for k in again:
            j = pos.get(k)
            if j is None or not was[k]:
                continue
            end = self._end(k)
            start = end - (self._shape.size or 0)
            r = self._revs.get(start, (0, 0))[1] + 1
            self._revs[start] = (end, r)
            rev[j] = r
        return rev

    def _dense_pays(self, ks: list[int]) -> bool:
        """Whether windows *ks* (ascending) are answered from their panes (:meth:`_dense`)
        rather than from their covers: every aggregation a numeric kind (:data:`_MERGE`),
        and the panes they span at most ``2 top`` per window (a cover's nodes at most), so
        a micro-batch still reads O(r log W) pieces. Where the panes are sparse it may read
        a little more than the covers, whose upper nodes span the empty panes and are
        shared by consecutive windows (up to 1.5x in the tests); it saves the Python step
        per window and node. The choice depends on the windows alone, never on where the
        pieces are. O(1)."""
        if not self._merges:
            return False
        span = (ks[-1] - ks[0]) * self._s + self._w
        return span <= 2 * self._top * len(ks)

    def _dense(self, ks: list[int]) -> tuple[np.ndarray, dict[str, Any]] | None:
        """The windows *ks* (ascending) that hold a stored pane, and every aggregation's
        answer for them, from the stored panes they span: one look-up per pane, then one
        slice verb per aggregation over the panes' partials (the sliding folds of the
        batch engine, :func:`~.state.query_slices`) instead of a cover per window. The
        numeric kinds only (:data:`_MERGE`: max, min and count are exact in any order; a
        sum is added in pane order); None when no pane is stored there or a partial is not
        of the kind's type (the covers' path answers). O(panes spanned + r) look-ups and
        numpy."""
        s, w = self._s, self._w
        a0, b0 = ks[0] * s, ks[-1] * s + w  # the panes spanned, b0 exclusive
        recs = self._nodes.get_many(
            list(range(a0 << _LEVEL_BITS, b0 << _LEVEL_BITS, 1 << _LEVEL_BITS))
        )
        at = [j for j, r in enumerate(recs) if r is not None]
        if not at:
            return None
        k_arr = np.asarray(ks, dtype=np.int64)
        panes = np.asarray(at, dtype=np.int64) + a0
        lo = np.searchsorted(panes, k_arr * s)
        hi = np.searchsorted(panes, k_arr * s + w)
        emit = hi > lo  # a window without events is not emitted
        out_k = k_arr[emit]
        lo, hi = lo[emit], hi[emit]
        results: dict[str, Any] = {}
        by_agg = list(zip(*[recs[j][1] for j in at], strict=True))
        for (grp, merge), col in zip(self._merges, by_agg, strict=True):
            if set(map(type, col)) != {merge[1]}:
                return None
            got = query_slices(
                self._make(merge[0]), np.asarray(col, np.float64), lo, hi, np.float64
            )
            results[grp.alias] = got.astype(np.int64) if merge[1] is int else got
        if self._values is not None:
            results.update(self._values.answers(out_k.tolist()))
        return out_k, results

    def _dense_columns(
        self, ks: np.ndarray, results: dict[str, Any], rev: np.ndarray
    ) -> tuple[dict[str, Any], np.ndarray]:
        """The output columns of windows *ks* with their *results* and revisions. O(r)."""
        size, slide = self._shape.size, self._shape.slide
        assert size is not None and slide is not None
        end = self._shape.start_time + ks * slide + size
        start = end - size
        z = np.zeros(len(start), dtype=np.int64)
        out = columns(Windows(start, end, z, z, z, z, z), results, self._aggs)
        out["revision"] = rev
        return out, np.asarray(start, dtype=np.int64)

    def _gathered(
        self, a: np.ndarray, width: int
    ) -> tuple[list[tuple[Any, ...]], np.ndarray, np.ndarray] | None:
        """The stored nodes of the covers of the pane ranges ``a[j] .. a[j] + width - 1``:
        their partials (one look-up per distinct node), each window's nodes as indexes
        into them (window by window, left to right), and how many nodes each window has
        (0: no stored pane). None when a split node is among them (a user monoid's error
        path: the walk asks its children). O(n log W) numpy and look-ups."""
        self._build()
        keys, counts = covers(a, width, self._top)
        get = self._nodes.get
        uniq, inv = np.unique(keys, return_inverse=True)
        recs = [get(k) for k in uniq.tolist()]  # one look-up per node, as the walk's
        if any(r is not None and r[0] == _SPLIT for r in recs):
            return None
        present = np.fromiter((r is not None for r in recs), dtype=bool, count=len(recs))
        keep = present[inv]
        nodes = [r[1] for r in recs if r is not None]  # the partials of the stored nodes
        slot = np.cumsum(present) - 1  # a stored node's row in *nodes*
        win = np.repeat(np.arange(len(a)), counts)[keep]
        return nodes, slot[inv[keep]], np.bincount(win, minlength=len(a))

    def _close_walk(
        self, ks: list[int], again: list[int], held: list[bool]
    ) -> tuple[dict[str, Any], np.ndarray]:
        """:meth:`_close` window by window in plain Python: for a few windows (numpy's
        fixed cost per call is most of their cost), and for a split node (a user monoid's
        combine raised below it, so the windows that need it ask its children).
        O(r log W) look-ups."""
        wm = self._clock.watermark
        assert wm is not None
        emitted = self._emitted_wm
        was = dict(zip(again, held, strict=True))
        out_k: list[int] = []
        parts: list[list[tuple[Any, ...]]] = []
        rev: list[int] = []
        for k in ks:
            got = self._parts(k)
            if not got:
                continue  # a window without events is not emitted
            r = 0
            if was.get(k):
                start = self._end(k) - (self._shape.size or 0)
                r = self._revs.get(start, (0, 0))[1] + 1
                self._revs[start] = (self._end(k), r)
            out_k.append(k)
            parts.append(got)
            rev.append(r)
        self._emitted_wm = wm if emitted is None else max(emitted, wm)
        if self._sizes:
            return self._sized_columns(np.asarray(out_k, dtype=np.int64), rev, walked=parts)
        return self._columns(out_k, parts, rev)

    def _columns(
        self, ks: list[int], parts: list[list[tuple[Any, ...]]], rev: list[int]
    ) -> tuple[dict[str, Any], np.ndarray]:
        size = self._shape.size
        assert size is not None
        end = np.asarray([self._end(k) for k in ks], dtype=np.int64)
        start = end - size
        results: dict[str, Any] = {}
        for j, (grp, m) in enumerate(zip(self._plan.groups, self._monoids, strict=True)):
            cov = ([x[j] for x in nodes] for nodes in parts)
            results[grp.alias] = fold_covers(grp.alias, m, cov, start, end)
        if self._values is not None:
            results.update(self._values.answers(ks))
        z = np.zeros(len(start), dtype=np.int64)
        out = columns(Windows(start, end, z, z, z, z, z), results, self._aggs)
        out["revision"] = np.asarray(rev, dtype=np.int64)
        return out, np.asarray(start, dtype=np.int64)

    def _answers(
        self,
        ks: np.ndarray,
        nodes: list[tuple[Any, ...]],
        flat: np.ndarray,
        bounds: np.ndarray,
        rev: np.ndarray,
    ) -> tuple[dict[str, Any], np.ndarray]:
        """The columns of windows *ks*: window j's value is ``lower`` of its nodes'
        partials combined left to right, the nodes ``nodes[flat[i]]`` for i in
        ``bounds[j] .. bounds[j + 1] - 1``; numeric kinds over float partials by one slice
        verb per aggregation (:data:`_MERGE`), any other monoid by its combine and lower.
        O(sum of the covers)."""
        size, slide = self._shape.size, self._shape.slide
        assert size is not None and slide is not None
        end = self._shape.start_time + ks * slide + size
        start = end - size
        results = self._results(nodes, flat, bounds[:-1], bounds[1:], start, end)
        if self._values is not None:
            results.update(self._values.answers(ks.tolist()))
        z = np.zeros(len(start), dtype=np.int64)
        out = columns(Windows(start, end, z, z, z, z, z), results, self._aggs)
        out["revision"] = np.asarray(rev, dtype=np.int64)
        return out, np.asarray(start, dtype=np.int64)

    def _results(
        self,
        nodes: list[tuple[Any, ...]],
        flat: np.ndarray,
        lo: np.ndarray,
        hi: np.ndarray,
        start: np.ndarray,
        end: np.ndarray,
    ) -> dict[str, Any]:
        """Every aggregation's answer for windows j (``start[j]``, ``end[j]``: for error
        messages) whose nodes are ``nodes[flat[i]]`` for i in ``lo[j] .. hi[j] - 1``.
        O(sum of the covers)."""
        by_agg = list(zip(*nodes, strict=True)) if nodes else [()] * len(self._monoids)
        results: dict[str, Any] = {}
        for j, (grp, m) in enumerate(zip(self._plan.groups, self._monoids, strict=True)):
            merge = _MERGE.get(declared_kind(m) or "")
            if merge is not None and len(lo) and set(map(type, by_agg[j])) == {merge[1]}:
                col = np.asarray(by_agg[j], dtype=np.float64)[flat]
                got = query_slices(self._make(merge[0]), col, lo, hi, np.float64)
                results[grp.alias] = got.astype(np.int64) if merge[1] is int else got
                continue
            mine = by_agg[j]
            vals = [mine[i] for i in flat.tolist()]
            cov = (vals[a:b] for a, b in zip(lo.tolist(), hi.tolist(), strict=True))
            results[grp.alias] = fold_covers(grp.alias, m, cov, start, end)
        return results

    # ------------------------------------------------------------------ several sizes
    def _sized_columns(
        self,
        ks: np.ndarray,
        rev: Sequence[int] | np.ndarray,
        largest: tuple[list[tuple[Any, ...]], np.ndarray, np.ndarray, np.ndarray] | None = None,
        walked: list[list[tuple[Any, ...]]] | None = None,
    ) -> tuple[dict[str, Any], np.ndarray]:
        """The rows of windows *ks* (the largest size's) with every size's columns, as the
        event log's (:func:`~.sizes.evaluate_sizes`): size z's window ends where the row's
        does, the panes ``k*s + w - w_z .. k*s + w - 1`` of the same tree, answered from
        their covers; a row whose window of size z holds no pane gets the aggregation's
        empty answer. *largest* (or *walked*): the largest size's nodes, indexes and
        bounds (or each row's node partials), already read by :meth:`_close` (or
        :meth:`_close_walk`). O(sizes · r log W)."""
        shape = self._shape
        assert shape.size is not None and shape.slide is not None
        end = shape.start_time + ks * shape.slide + shape.size
        got: dict[str, Any] = {}
        for z, wz in self._sizes:
            if largest is not None and z == shape.size:  # every row holds a pane of it
                rows = np.arange(len(ks), dtype=np.int64)
                res = self._sized_results(z, rows, end, self._results, *largest, end - z, end)
            else:
                rows, res = self._size_answers(ks, end, z, wz, walked if z == shape.size else None)
            if self._values is not None:  # this size's cursor over the rows holding a pane
                starts = ks[rows] * self._s + (self._w - wz)
                res = {**res, **self._values.answers_at(starts.tolist(), wz)}
            whole = len(rows) == len(ks)
            for alias, col in res.items():
                empty = empty_answer(alias, self._aggs)
                got[f"{alias}_{size_label(z)}"] = (
                    col if whole else spread(col, rows, len(ks), empty)
                )
        outputs = sized_aggs(self._aggs, shape.sizes)
        results = {b.alias: got[b.alias] for b in outputs}
        zero = np.zeros(len(ks), dtype=np.int64)
        out = columns(
            Windows(end - shape.size, end, zero, zero, zero, zero, zero), results, outputs
        )
        out["revision"] = np.asarray(rev, dtype=np.int64)
        return out, np.asarray(end - shape.size, dtype=np.int64)

    def _size_answers(
        self,
        ks: np.ndarray,
        end: np.ndarray,
        z: int,
        wz: int,
        walked: list[list[tuple[Any, ...]]] | None = None,
    ) -> tuple[np.ndarray, dict[str, Any]]:
        """The rows among *ks* whose window of size *z* (*wz* panes) holds a stored pane,
        and every aggregation's answer for them: numpy covers and slice verbs for many
        windows (:meth:`_gathered`), the walk for a few or past a split node (*walked*:
        its node partials per row, already read). O(r log W)."""
        a = ks * self._s + (self._w - wz)
        got = self._gathered(a, wz) if len(ks) > _FEW and walked is None else None
        if got is not None:
            nodes, flat, n = got
            rows = np.flatnonzero(n > 0)
            hi = np.cumsum(n)[rows]
            lo = hi - n[rows]
            e = end[rows]
            return rows, self._sized_results(
                z, rows, end, self._results, nodes, flat, lo, hi, e - z, e
            )
        parts = walked if walked is not None else [self._parts_at(x, wz) for x in a.tolist()]
        rows = np.asarray([j for j, p in enumerate(parts) if p], dtype=np.int64)

        def walk() -> dict[str, Any]:
            e = end[rows]  # rows: bound once, before walk is called
            out: dict[str, Any] = {}
            for j, (grp, m) in enumerate(zip(self._plan.groups, self._monoids, strict=True)):
                cov = ([x[j] for x in parts[r]] for r in rows.tolist())
                out[grp.alias] = fold_covers(grp.alias, m, cov, e - z, e)
            return out

        return rows, self._sized_results(z, rows, end, walk)

    def _sized_results(
        self, z: int, rows: np.ndarray, end: np.ndarray, answer: Any, *args: Any
    ) -> dict[str, Any]:
        """``answer(*args)``; an :class:`AggregationError` of one of its windows is named by
        the size's column and the window's row among the emitted ones, as the event
        log's (:func:`~.sizes.at_row`). O(1) besides."""
        try:
            out: dict[str, Any] = answer(*args)
        except AggregationError as e:
            e_rows = end[rows]
            zero = np.zeros(len(rows), dtype=np.int64)
            ws = Windows(e_rows - z, e_rows, zero, zero, zero, zero, zero)
            raise at_row(e, z, rows, ws, self._aggs) from e.__cause__
        return out
