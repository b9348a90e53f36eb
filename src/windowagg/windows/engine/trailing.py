"""Per-event windows of one key on a FiBA: the ``"trailing"`` streaming layout.

=================  ==========================================================================
windows            per-event: each admitted event's window ``(t - size, t]`` (one or several
                   sizes, ``Shape.sizes``: every size's columns per row), aggregations that
                   are monoids (built-in or the caller's) or exponentially decayed
                   (``needs_time`` with ``partial = "constant"`` or ``"summary"``: each
                   window answered ``as_of`` its end). Exact quantiles and polynomial decay
                   keep the event log (:class:`~.stream.EventLog`)
in memory          per aggregation one ``ooo.FiBA`` keyed by event time (native for the
                   native kinds through the backend choice), holding every admitted event
                   with ``t > bound - size`` (events of one time are one entry, combined
                   in arrival order: the batch's order of ties); the times and arrival
                   numbers of the events with ``t >= bound`` (the windows still to emit or
                   revise); the stored chunks (below)
stored pieces      event chunks keyed ``(n << 6) | 62`` (:func:`chunk_key`): one per
                   micro-batch (its admitted events sorted by (time, arrival)); a
                   micro-batch appends to the newest chunk while it holds fewer than
                   :data:`SMALL` events (the object API's single inserts). A chunk whose
                   events are all ``<= bound - size`` is deleted, one at least half dead is
                   rewritten with its live events; the metadata is small (configuration,
                   clock, emission, the next chunk number, revisions)
per micro-batch    admission (:func:`~.records.admit_key`); per aggregation one
                   ``bulk_insert`` of the m admitted events (O(m (1 + log(d / m)))
                   amortized, d the entries held); the windows to emit (ends in
                   ``(emitted, watermark]``, and the emitted ones holding a new event: ends in
                   ``[x, x + size)``) found by searches over the ``L`` events ``>= bound``;
                   per aggregation and size one ``range_query_many`` over those r windows
                   (O(log d) each); ``bulk_evict(bound - size)`` (O(log evicted)). No merge,
                   no re-sort, no term in the retained events
emit="arrival"     each admitted event's window as of its arrival (the events that arrived
                   before it): per event, ``insert`` then ``range_query``; never revised
time               O(m log m + L + (m + r·z) log d) per micro-batch (z sizes), plus the
                   chunk bookkeeping (O(chunks)) and the chunk encoding (O(m))
space              O(rate × (size + allowed lateness + out-of-orderness) + SMALL) events:
                   a trailing window of a monoid with no inverse needs its events
restore            decode every chunk, sort by (time, arrival), one ``bulk_insert`` per
                   aggregation: O(n log n) (Spark reads every chunk of the key: the scan)
raising            a ``combine`` or ``lower`` of the caller's that raises is an
                   ``AggregationError`` and the step changes nothing
                   (:func:`~.records.atomic`): the trees are rebuilt from the restored
                   chunks before their next use. A "monoid" whose ``combine`` raises on some
                   groupings only (not associative) may then raise at other steps: the
                   tree's internal partials span several windows
paper              Tangwongsan, Hirzel, Schneider: "Out-of-Order Sliding-Window Aggregation
                   with Efficient Bulk Evictions and Insertions", VLDB 2023 (bulk FiBA);
                   range queries for per-event windows: FiBA, VLDB 2019, §window sharing
=================  ==========================================================================

Examples
--------
>>> import numpy as np
>>> from windowagg.aggs import parse_aggs
>>> s = TrailingFiBA(parse_aggs(["sum(v)"]), Shape(size=10), allowed_lateness=20)
>>> out, _ = s.feed(np.array([1, 5, 12]), {"v": np.array([1.0, 2.0, 4.0])})
>>> out.columns["end"].tolist(), out.columns["sum_v"].tolist()
([1, 5, 12], [1.0, 3.0, 6.0])
>>> out, _ = s.feed(np.array([4]), {"v": np.array([8.0])})  # late, within the lateness
>>> out.columns["end"].tolist(), out.columns["sum_v"].tolist(), out.columns["revision"].tolist()
([4, 5, 12], [9.0, 11.0, 14.0], [0, 1, 1])
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import numpy as np

from windowagg import codec
from windowagg.errors import AggregationError, ArgumentError, CodecError
from windowagg.ooo import FiBA
from windowagg.windows.engine.assign import Windows
from windowagg.windows.engine.clock import WatermarkClock
from windowagg.windows.engine.emit import columns
from windowagg.windows.engine.layout import Layout
from windowagg.windows.engine.records import (
    NO_DELTA,
    STATE_VERSION,
    Delta,
    Events,
    StepResult,
    admit_key,
    agg_signature,
    as_column,
    check_config,
    concat_events,
    decode_events,
    encode_events,
    sorted_events,
    take_events,
)
from windowagg.windows.engine.shapes import Shape
from windowagg.windows.engine.sizes import size_label, sized_aggs
from windowagg.windows.engine.state import Group, Plan, Unlowered, aggregation_message, plan

__all__ = ["SMALL", "TrailingFiBA", "chunk_key", "fits"]

#: A micro-batch appends its events to the newest chunk while that holds fewer than this
#: many (a delta then rewrites at most SMALL old events): single-event micro-batches
#: (the object API) make one chunk per SMALL events, not one per event.
SMALL = 64

#: The tag of event chunks in a piece key (the design's ``(index << 6) | tag``).
CHUNK_TAG = 62

_NONE = np.zeros(0, dtype=np.int64)


def chunk_key(n: int) -> int:
    """The piece key of chunk number *n*. O(1).

    >>> chunk_key(0), chunk_key(3)
    (62, 254)
    """
    return (n << 6) | CHUNK_TAG


def _timed_fits(monoid: Any) -> bool:
    """A decayed monoid whose partial is a constant or a bounded summary (declared
    ``partial``): each window answered ``as_of`` its end from the tree's partial. O(1)."""
    return getattr(monoid, "partial", None) in ("constant", "summary")


def fits(shape: Shape, p: Plan, emit: str = "watermark", factory: Any = None) -> bool:
    """Whether *shape* and the planned aggregations take this layout: per-event windows
    (one or several sizes, not the whole history), no exact quantiles, every timed
    aggregation declaring a constant or summary partial, and no FIFO aggregator *factory*
    of the caller's (the tree is an ``ooo.FiBA``, not one). O(aggregations)."""
    if not shape.trails or p.quantiles or factory is not None:  # every size < HISTORY
        return False
    return all(_timed_fits(g.monoid) for g in p.groups if g.timed)


class _Trees:
    """One ``ooo.FiBA`` per aggregation group. It is a journal for
    :func:`~.records.atomic`: a step that raises may have changed some trees, so a rollback
    marks them stale and the layout rebuilds them from its (restored) chunks before their
    next use. O(1) per begin / commit / rollback."""

    __slots__ = ("stale", "trees")

    def __init__(self) -> None:
        self.trees: list[Any] = []
        self.stale = True

    def begin(self) -> None:
        return None

    def commit(self) -> None:
        return None

    def rollback(self) -> None:
        self.stale = True


def _no_bytes(events: Events) -> bytes:
    """What a chunk encodes to when no store takes the deltas (``deltas=False``)."""
    return b""


class TrailingFiBA(Layout):
    """One key's per-event windows over a FiBA per aggregation (see the module docstring).

    Parameters are :class:`~.stream.EventLog`'s: *aggs*, *shape* (per-event),
    *max_out_of_orderness*, *allowed_lateness*, *emit* (``"watermark"`` or
    ``"arrival"``), *judge*, *planned*, *deltas*, *context*; *factory* must be None (a FIFO
    aggregator of the caller's keeps the event log: :func:`fits`).
    """

    #: The layout's name (:attr:`~.stream.KeyStream.layout`, the configuration's tag).
    name: ClassVar[str] = "trailing"

    __slots__ = (
        "_aggs",
        "_chunks",
        "_clock",
        "_cols",
        "_context",
        "_cut",
        "_deltas",
        "_emit",
        "_emitted_wm",
        "_judge",
        "_lateness",
        "_next",
        "_ooo",
        "_open",
        "_plan",
        "_revs",
        "_seq",
        "_shape",
        "_sizes",
        "_trees",
    )

    def __init__(
        self,
        aggs: Sequence[Any],
        shape: Shape,
        *,
        max_out_of_orderness: int = 0,
        allowed_lateness: int = 0,
        emit: str = "watermark",
        judge: str = "arrival",
        factory: Any = None,
        planned: Plan | None = None,
        deltas: bool = True,
        context: tuple[tuple[str, Any], ...] = (),
    ) -> None:
        if emit not in ("watermark", "arrival"):
            raise ArgumentError(f"emit must be 'watermark' or 'arrival', got {emit!r}")
        if judge not in ("arrival", "batch"):
            raise ArgumentError(f"judge must be 'arrival' or 'batch', got {judge!r}")
        self._plan = planned if planned is not None else plan(aggs)
        if not fits(shape, self._plan, emit, factory):
            raise ArgumentError(
                f"TrailingFiBA answers per-event windows of monoids and exponentially "
                f"decayed aggregations without a factory; got a {shape.kind} window of "
                f"{agg_signature(aggs)}: use KeyStream, which picks the layout"
            )
        if emit == "arrival" and shape.sizes:
            raise ArgumentError(
                f"several sizes ({shape.sizes}) are emitted when the watermark closes "
                "their shared window end; use emit='watermark', or one query per size "
                "with emit='arrival'"
            )
        self._context = tuple(context)
        self._deltas = deltas
        self._judge = judge
        self._aggs = list(aggs)
        self._shape = shape
        assert shape.size is not None
        self._sizes: tuple[int, ...] = tuple(shape.sizes) or (int(shape.size),)
        self._emit = emit
        self._ooo = int(max_out_of_orderness)
        self._lateness = int(allowed_lateness)
        self._clock = WatermarkClock(self._ooo, self._lateness)
        self._cols = list(dict.fromkeys(a.column for a in aggs if a.column is not None))
        # chunk number -> (events sorted by (time, arrival)); insertion order = age
        self._chunks: dict[int, Events] = {}
        self._next = 0  # the number of the next chunk
        self._seq = 0  # the next arrival sequence number
        self._emitted_wm: int | None = None
        # windows emitted more than once and still revisable: id -> (end, revision)
        self._revs: dict[int, tuple[int, int]] = {}
        # (times, arrival numbers) of the events >= bound, sorted: windows to emit / revise
        self._open: tuple[np.ndarray, np.ndarray] = (_NONE, _NONE)
        self._trees = _Trees()
        # the trees hold the stored events > this time (the last bulk_evict; None: all)
        self._cut: int | None = None

    # ------------------------------------------------------------------ properties
    def __len__(self) -> int:
        """Events stored in chunks (including dead ones not yet dropped). O(chunks)."""
        return sum(len(c.t) for c in self._chunks.values())

    def _evicted(self) -> int | None:
        """Every event at or below this time is in no window still to emit or revise, by
        the clock now (``bound - size``). O(1)."""
        b = self._clock.bound
        return None if b is None else b - self._shape.size  # type: ignore[operator]

    # ------------------------------------------------------------------ state bytes
    def config(self) -> tuple[Any, ...]:
        """What a stored state must have been written for (checked by :meth:`restore`)."""
        s = self._shape
        return (
            ("layout", "trailing"), ("size", s.size), ("slide", s.slide),
            ("sizes", tuple(s.sizes)), ("max_out_of_orderness", self._ooo),
            ("allowed_lateness", self._lateness), ("emit", self._emit),
            ("judge", self._judge), ("columns", tuple(self._cols)),
            ("aggregations", agg_signature(self._aggs)), *self._context,
        )  # fmt: skip

    def meta_bytes(self) -> bytes:
        """The metadata record (codec bytes): configuration, clock, emission, the next
        chunk number, revisions. O(revisable windows)."""
        clock_max = None if self._clock.watermark is None else self._clock.watermark + self._ooo
        return codec.dumps(
            (
                STATE_VERSION,
                self.config(),
                clock_max,
                self._emitted_wm,
                self._seq,
                self._next,
                [(k, e, r) for k, (e, r) in self._revs.items()],
            )
        )

    def pieces(self) -> dict[int, bytes]:
        """Every stored chunk by its key. O(stored events)."""
        return {chunk_key(n): encode_events(c) for n, c in self._chunks.items()}

    @classmethod
    def restore(
        cls, meta: Any, pieces: Mapping[int, bytes], aggs: Sequence[Any], shape: Shape, **kw: Any
    ) -> TrailingFiBA:
        """A key's stream from its decoded metadata tuple and its chunks. O(n log n)."""
        s = cls(aggs, shape, **kw)
        if isinstance(meta, tuple) and len(meta) >= 2:  # first: another layout's says so
            check_config(meta[1], s.config())
        if not (isinstance(meta, tuple) and len(meta) == 7):
            raise CodecError("not a windowagg trailing-window state: clear the query's checkpoint")
        _, _config, clock_max, emitted_wm, seq, nxt, revs = meta
        if clock_max is not None:
            s._clock.observe(np.array([clock_max], dtype=np.int64))
        s._emitted_wm = emitted_wm
        s._seq = int(seq)
        s._next = int(nxt)
        s._revs = {int(k): (int(e), int(r)) for k, e, r in revs}
        for k in sorted(int(k) for k in pieces):
            if k & 63 != CHUNK_TAG or not 0 <= k >> 6 < s._next:
                raise CodecError(
                    f"stream piece key {k} is not an event chunk of this trailing-window "
                    "state: clear the query's checkpoint"
                )
            s._chunks[k >> 6] = decode_events(bytes(pieces[k]), s._cols)
        s._cut = s._evicted()  # a stored state is written at the end of a step
        b = s._clock.bound
        if b is not None and s._emit == "watermark":
            live = s._live()
            keep = live.t >= b
            s._open = (live.t[keep], live.seq[keep])
        s._rebuild()
        return s

    def _live(self) -> Events:
        """The stored events the trees hold (after the last eviction), sorted by (time,
        arrival). O(n log n)."""
        ev = sorted_events(concat_events(list(self._chunks.values()), self._cols))
        cut = self._cut
        if cut is None:
            return ev
        return take_events(ev, slice(int(np.searchsorted(ev.t, cut, "right")), None))

    def _rebuild(self) -> None:
        """The trees from the stored chunks (a restore, or after a rolled-back step). O(n log n)."""
        live = self._live()
        trees = [self._tree(g) for g in self._plan.groups]
        for g, tree in zip(self._plan.groups, trees, strict=True):
            self._insert(g, tree, live)
        self._trees.trees = trees
        self._trees.stale = False

    # ------------------------------------------------------------------ aggregation
    @staticmethod
    def _tree(g: Group) -> Any:
        return FiBA(Unlowered(g.monoid) if g.timed else g.monoid)

    def _inputs(self, g: Group, ev: Events) -> Any:
        """What group *g*'s tree lifts for the events *ev*. O(len)."""
        n = len(ev.t)
        col = ev.values[g.column] if g.column is not None else np.zeros(n, dtype=np.float64)
        if g.timed:
            return list(zip(ev.t.tolist(), col.tolist(), strict=True))
        return col

    def _insert(self, g: Group, tree: Any, ev: Events) -> None:
        """``bulk_insert`` of the sorted events *ev* into group *g*'s *tree*; a raising
        combine names the aggregation. O(m (1 + log(d / m)))."""
        if not len(ev.t):
            return
        try:
            tree.bulk_insert(ev.t, self._inputs(g, ev))
        except Exception as e:
            reason = f"{type(e).__name__}: {e}"
            raise AggregationError(
                aggregation_message(g.alias, g.monoid, reason, ""), alias=g.alias, reason=reason
            ) from e

    def _answer(self, g: Group, tree: Any, end: np.ndarray, size: int) -> Any:
        """Group *g*'s answer for the windows ``(end - size, end]``: one
        ``range_query_many`` (O(log d) each), timed partials ``as_of`` each end. O(r log d)."""
        lo = end - (size - 1)
        try:
            if g.timed:
                parts = tree.range_query_many(lo, end)
                as_of = g.monoid.as_of
                got = [as_of(p, e) for p, e in zip(parts, end.tolist(), strict=True)]
                if getattr(g.monoid, "answers_text", False):
                    return np.asarray(got, dtype=object)
                return np.asarray([np.nan if a is None else a for a in got], dtype=np.float64)
            if g.buffer is not None:
                return tree.range_query_many(lo, end, np.empty(len(end), dtype=g.buffer))
            return tree.range_query_many(lo, end)
        except Exception as e:
            raise self._window_error(g, tree, lo, end, e) from e

    def _window_error(
        self, g: Group, tree: Any, lo: np.ndarray, end: np.ndarray, e: Exception
    ) -> AggregationError:
        """The error of a range query that raised: the windows are asked one at a time to
        name the first that raises (on the error path). O(r log d)."""
        window = None
        for j, (a, b) in enumerate(zip(lo.tolist(), end.tolist(), strict=True)):
            try:
                tree.range_query(a, b)
            except Exception:
                window = j
                break
        where = ""
        if window is not None:
            b = int(end[window])
            where = f" in the window (window_start {b - int(self._shape.size)}, window_end {b})"  # type: ignore[arg-type]
        reason = f"{type(e).__name__}: {e}"
        return AggregationError(
            aggregation_message(g.alias, g.monoid, reason, where),
            alias=g.alias,
            window=window,
            reason=reason,
        )

    # ------------------------------------------------------------------ the verbs
    def _step(self, t: np.ndarray, values: Mapping[str, np.ndarray]) -> tuple[StepResult, Delta]:
        if self._trees.stale:
            self._rebuild()
        t = np.asarray(t, dtype=np.int64)
        vals = {c: as_column(values[c]) for c in self._cols}
        a = admit_key(self._plan, self._clock, self._judge, t, vals, self._shape)
        new = Events(
            t[a.order],
            self._seq + a.order.astype(np.int64),
            {c: v[a.order] for c, v in vals.items()},
        )
        self._seq += len(t)
        if self._emit == "arrival":
            cols, ids = self._arrival(new, a.order)
        else:
            for g, tree in zip(self._plan.groups, self._trees.trees, strict=True):
                self._insert(g, tree, new)
            cols, ids = self._close(new)
        put, delete = self._store(new)
        if not self._deltas:
            return StepResult(cols, a.refused, a.reasons, ids), NO_DELTA
        return StepResult(cols, a.refused, a.reasons, ids), Delta(self.meta_bytes(), put, delete)

    # ------------------------------------------------------------------ emission
    def _close(self, new: Events) -> tuple[dict[str, Any], np.ndarray]:
        """The windows to emit: ends in ``(emitted, watermark]``, and the emitted windows
        holding a new event (ends in ``[x, x + size)``, revisions). O(L + m log L)."""
        ot, oseq = self._open
        n, k = len(ot), len(new.t)
        if k and (not n or new.t[0] >= ot[-1]):  # in order: an append
            at = np.arange(n, n + k)
            ot, oseq = np.concatenate([ot, new.t]), np.concatenate([oseq, new.seq])
        elif k:  # each new event after the open ones of its time (ties: arrival order)
            at = np.searchsorted(ot, new.t, "right") + np.arange(k)
            was = np.ones(n + k, dtype=bool)
            was[at] = False
            ot2, os2 = np.empty(n + k, dtype=np.int64), np.empty(n + k, dtype=np.int64)
            ot2[was], ot2[at] = ot, new.t
            os2[was], os2[at] = oseq, new.seq
            ot, oseq = ot2, os2
        self._open = (ot, oseq)
        wm = self._clock.watermark
        emitted = self._emitted_wm
        if wm is None or not len(ot):
            if wm is not None:
                self._emitted_wm = wm if emitted is None else max(emitted, wm)
            return self._columns(_NONE, _NONE, _NONE)
        a = 0 if emitted is None else int(np.searchsorted(ot, emitted, "right"))
        b = int(np.searchsorted(ot, wm, "right"))  # windows 0..b-1 are closed
        self._emitted_wm = wm if emitted is None else max(emitted, wm)
        # late-but-accepted new events (at or before the last emission) revise the
        # emitted windows holding them: ends in [x, x + size)
        x = new.t[new.t <= emitted] if emitted is not None and k and a else _NONE
        if not len(x):
            c = np.arange(a, max(a, b), dtype=np.int64)
            return self._columns(ot[c], np.zeros(len(c), dtype=np.int64), oseq[c])
        size = int(self._shape.size)  # type: ignore[arg-type]
        mark = np.zeros(len(ot) + 1, dtype=np.int64)
        mark[a] += 1
        mark[max(a, b)] -= 1
        np.add.at(mark, np.searchsorted(ot[:a], x, "left"), 1)
        np.add.at(mark, np.searchsorted(ot[:a], x + (size - 1), "right"), -1)
        c = np.flatnonzero(np.cumsum(mark[:-1]) > 0)
        ids = oseq[c]
        rev = np.zeros(len(c), dtype=np.int64)
        is_new = np.zeros(len(ot), dtype=bool)
        is_new[at] = True
        # emitted before: an old event's window at or before the last emission's watermark
        for j in np.flatnonzero((c < a) & ~is_new[c]).tolist():
            key = int(ids[j])
            prev = self._revs.get(key, (0, 0))[1]
            rev[j] = prev + 1
            self._revs[key] = (int(ot[c[j]]), prev + 1)
        return self._columns(ot[c], rev, ids)

    def _columns(
        self, end: np.ndarray, rev: np.ndarray, ids: np.ndarray
    ) -> tuple[dict[str, Any], np.ndarray]:
        """Every aggregation (and size) of the windows ending at *end*. O(r z log d)."""
        size = int(self._shape.size)  # type: ignore[arg-type]
        results: dict[str, Any] = {}
        sized = bool(self._shape.sizes)
        for g, tree in zip(self._plan.groups, self._trees.trees, strict=True):
            for s in self._sizes:
                alias = f"{g.alias}_{size_label(s)}" if sized else g.alias
                results[alias] = self._answer(g, tree, end, s)
        aggs = sized_aggs(self._aggs, self._sizes) if sized else self._aggs
        results = {a.alias: results[a.alias] for a in aggs}  # the batch's column order
        w = Windows(end - size, end, end, end, end, end, end)
        out = columns(w, results, aggs)
        out["revision"] = np.asarray(rev, dtype=np.int64)
        return out, np.asarray(ids, dtype=np.int64)

    def _arrival(self, new: Events, order: np.ndarray) -> tuple[dict[str, Any], np.ndarray]:
        """Per-event windows as of each admitted event's arrival (``emit="arrival"``):
        per event and aggregation one ``insert`` and one ``range_query``. O(m log d)."""
        size = int(self._shape.size)  # type: ignore[arg-type]
        arrival = np.argsort(order, kind="stable")  # the batch's events in arrival order
        ev = take_events(new, arrival)
        nt = ev.t.tolist()
        out: dict[str, Any] = {}
        for g, tree in zip(self._plan.groups, self._trees.trees, strict=True):
            inputs = self._inputs(g, ev)
            xs = inputs if isinstance(inputs, list) else inputs.tolist()
            insert, query = tree.insert, tree.range_query
            res = []
            try:
                for ti, x in zip(nt, xs, strict=True):
                    insert(ti, x)
                    got = query(ti - size + 1, ti)
                    res.append(g.monoid.as_of(got, ti) if g.timed else got)  # decayed: at ti
            except Exception as e:
                reason = f"{type(e).__name__}: {e}"
                raise AggregationError(
                    aggregation_message(g.alias, g.monoid, reason, ""),
                    alias=g.alias,
                    reason=reason,
                ) from e
            out[g.alias] = res
        end = ev.t
        w = Windows(end - size, end, end, end, end, end, end)
        cols = columns(w, out, self._aggs)
        cols["revision"] = np.zeros(len(nt), dtype=np.int64)
        return cols, ev.seq

    # ------------------------------------------------------------------ the chunks
    def _store(self, new: Events) -> tuple[dict[int, bytes], tuple[int, ...]]:
        """Store the micro-batch's events (a new chunk, or the newest one extended while
        it is small), evict what the bound passed from the trees, drop dead chunks and
        rewrite half-dead ones; prune the open events and the revisions. O(m + chunks)."""
        enc = encode_events if self._deltas else _no_bytes
        put: dict[int, bytes] = {}
        deleted: list[int] = []
        if len(new.t):
            last = self._next - 1
            held = self._chunks.get(last)
            if held is not None and len(held.t) < SMALL:
                both = concat_events([held, new], self._cols)
                in_order = not len(held.t) or new.t[0] >= held.t[-1]
                self._chunks[last] = both if in_order else sorted_events(both)
            else:
                last = self._next
                self._next += 1
                self._chunks[last] = new
            put[chunk_key(last)] = b""  # encoded below, after the dead events go
        cut = self._evicted()
        if cut is not None:
            for tree in self._trees.trees:
                tree.bulk_evict(cut)
            self._cut = cut
            for n, c in list(self._chunks.items()):
                if not len(c.t) or c.t[0] > cut:
                    continue
                dead = int(np.searchsorted(c.t, cut, "right"))
                if dead == len(c.t):
                    del self._chunks[n]
                    put.pop(chunk_key(n), None)
                    deleted.append(chunk_key(n))
                elif 2 * dead >= len(c.t):
                    self._chunks[n] = take_events(c, slice(dead, None))
                    put[chunk_key(n)] = b""
            b = self._clock.bound
            assert b is not None
            ot, oseq = self._open
            i = int(np.searchsorted(ot, b, "left"))
            if i:
                self._open = (ot[i:], oseq[i:])
            self._revs = {k: v for k, v in self._revs.items() if v[0] >= b}
        for key in put:
            put[key] = enc(self._chunks[key >> 6])
        return put, tuple(deleted)

    # ------------------------------------------------------------------ timers
    def deadline(self) -> int | None:
        """When the key's watermark next matters (an event-time timer), or None when no
        watermark will: the end of the oldest window not emitted yet; else the watermark at
        which every stored event is dead. O(chunks)."""
        if not self._chunks:
            return None
        wm = self._clock.watermark
        ot = self._open[0]
        if self._emit == "watermark":
            i = 0 if wm is None else int(np.searchsorted(ot, wm, "right"))
            if i < len(ot):
                return int(ot[i])
        top = max(int(c.t[-1]) for c in self._chunks.values() if len(c.t))
        at = top + int(self._shape.size) + self._lateness  # type: ignore[arg-type]
        return None if wm is not None and at <= wm else at

    def expired(self) -> bool:
        """Whether the state can go: nothing it holds can be emitted or revised any more
        once the watermark reaches :meth:`deadline` (None: already). O(chunks)."""
        return self.deadline() is None

    def _check(self) -> None:
        """Invariants (O(n log n)): chunks sorted by (time, arrival) with unique arrival
        numbers; the open events sorted and exactly the stored events ``>= bound``; every
        tree holds the distinct times of the stored events ``> bound - size``."""
        seqs = []
        for n, c in self._chunks.items():
            if not 0 <= n < self._next:
                raise AssertionError(f"TrailingFiBA: chunk {n} beyond the next {self._next}")
            if not np.array_equal(np.lexsort((c.seq, c.t)), np.arange(len(c.t))):
                raise AssertionError(f"TrailingFiBA: chunk {n} not sorted by (time, arrival)")
            seqs.append(c.seq)
        allseq = np.concatenate(seqs) if seqs else _NONE
        if len(np.unique(allseq)) != len(allseq):
            raise AssertionError("TrailingFiBA: two stored events share a sequence number")
        if self._trees.stale:
            return
        live = self._live()
        b = self._clock.bound
        if self._emit == "watermark" and b is not None:
            keep = live.t >= b
            ot, oseq = self._open
            if not (np.array_equal(ot, live.t[keep]) and np.array_equal(oseq, live.seq[keep])):
                raise AssertionError(
                    "TrailingFiBA: the open events are not the stored ones >= bound"
                )
        times = np.unique(live.t).tolist()
        for g, tree in zip(self._plan.groups, self._trees.trees, strict=True):
            if not g.timed:  # a summary partial (a new object per combine) has no ==
                tree._check()
            if [x for x, _ in tree.to_partials()] != times:
                raise AssertionError(f"TrailingFiBA: the tree of {g.alias!r} holds other times")
