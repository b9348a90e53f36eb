"""One key's hopping/tumbling windows over pane partials: state O(window / slide), not O(events).

=================  ==========================================================================
shape              hopping and tumbling windows (``size``, ``slide``, ``start_time``) whose
                   aggregations are all monoids (no exact quantiles): :class:`KeyStream`
                   picks this layout from the shape and the aggregations, never from a size
panes              width ``g = gcd(size, slide)``, aligned to ``start_time``: pane ``p`` is
                   ``[start_time + p*g, start_time + (p+1)*g)``; window ``k`` (start
                   ``start_time + k*slide``) is the panes ``k*s .. k*s + w - 1`` (``w =
                   size/g``, ``s = slide/g``), as Li et al.'s panes (SIGMOD Record 2005)
state              per aggregation one ``ooo.FiBA`` keyed by pane holding each non-empty
                   pane's *partial* (lift and combine, never lowered); a window's value is
                   ``lower(range_query(k*s, k*s + w - 1))``. Panes whose windows can all no
                   longer change (last window's end <= the lateness bound) are evicted
commutative        every monoid ``commutative``: a micro-batch's events are folded per pane
                   and combined into the pane's partial (``old ⊗ new``); no event is kept
otherwise          a pane that can still receive events (pane end > lateness bound =
                   watermark - allowed_lateness) keeps its raw events, and its partial is
                   refolded from them in (time, arrival) order when it changes; once the
                   bound passes its end the events go and the partial is frozen: raw events
                   are O(rate x lateness), never O(rate x window)
pieces             one stored piece per pane (key: the pane number), ``("p", partials)`` or,
                   for an open pane of a non-commutative plan, ``("e", events)``; plus the
                   metadata record (configuration, clock, emission, revisions). A micro-
                   batch's :class:`~.records.Delta` puts the panes it changed and deletes
                   the panes it evicted: O(panes touched), whatever the window holds
emission           as the event log (:mod:`.stream`): a window when the key's watermark
                   passes its end (``revision`` 0), and again (``revision`` + 1) when a
                   late-but-accepted event lands in one of its panes; final answers equal
                   :func:`windowagg.pandas.window_agg`'s
time               per micro-batch of m events touching q panes and emitting r windows:
                   O(m log m) numpy + one ``lift`` and ``combine`` per event (numpy-native
                   for ``sum``/``max``/``min``/``count``) + O(q log P) FiBA updates + O(r
                   log P) range queries + O(P) numpy over the P stored panes (which
                   windows exist, which close)
space              O(window / slide + panes of the lateness) partials per key, plus, for a
                   non-commutative plan, the events of the open panes
=================  ==========================================================================

Examples
--------
>>> import numpy as np
>>> from windowagg.aggs import parse_aggs
>>> s = PaneStream(parse_aggs(["sum(v)", "count"]), Shape(size=10, slide=5), allowed_lateness=20)
>>> out, d = s.feed(np.array([1, 7, 12]), {"v": np.array([1.0, 2.0, 3.0])})
>>> out.columns["end"].tolist(), out.columns["sum_v"].tolist(), sorted(d.put)  # panes 0, 1, 2
([5, 10], [1.0, 3.0], [0, 1, 2])
>>> out, d = s.feed(np.array([3]), {"v": np.array([4.0])})  # late, within the lateness
>>> out.columns["end"].tolist(), out.columns["sum_v"].tolist(), out.columns["revision"].tolist()
([5, 10], [5.0, 7.0], [1, 1])
>>> sorted(d.put), d.delete  # only pane 0 is written again
([0], ())
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from math import gcd
from typing import Any

import numpy as np

from windowagg import codec
from windowagg.errors import AggregationError, CodecError
from windowagg.monoids.base import declared_kind
from windowagg.ooo import FiBA
from windowagg.windows.engine.assign import Shape, Windows, assign
from windowagg.windows.engine.clock import WatermarkClock
from windowagg.windows.engine.emit import columns
from windowagg.windows.engine.records import (
    STATE_VERSION,
    Delta,
    Events,
    StepResult,
    admit_key,
    check_config,
    concat_events,
    decode_events,
    encode_events,
    sorted_events,
    take_events,
)
from windowagg.windows.engine.state import (
    Factory,
    Plan,
    aggregation_message,
    plan,
    query_slices,
)

__all__ = ["PaneStream", "fits"]

#: Declared kinds (:func:`~windowagg.monoids.base.declared_kind`) whose ``lower`` is the
#: identity and whose partial of a float column is a number: a pane's partial is then the
#: answer of the numpy-native slice verb (:func:`~.state.query_slices`), one call for all
#: the panes of a micro-batch.
_NUMERIC_PARTIAL: frozenset[str] = frozenset({"sum", "max", "min", "count"})


def fits(shape: Shape, p: Plan, emit: str = "watermark") -> bool:
    """Whether *shape* and the planned aggregations take the pane layout: hopping or
    tumbling windows, every aggregation a monoid (no exact quantiles). O(1)."""
    return shape.kind == "hopping" and not p.quantiles and emit == "watermark"


class _Partials:
    """A monoid over its own partials (lift and lower the identity): what a FiBA of pane
    partials holds, so that ``insert(p, partial)`` stores ``old ⊗ partial``."""

    __slots__ = ("combine", "commutative", "identity")

    def __init__(self, m: Any) -> None:
        self.identity = m.identity
        self.combine = m.combine
        self.commutative = bool(getattr(m, "commutative", False))

    def lift(self, x: Any) -> Any:
        return x

    def lower(self, x: Any) -> Any:
        return x


def _fold(m: Any, col: np.ndarray, lo: np.ndarray, hi: np.ndarray, make: Factory) -> list[Any]:
    """The partial of ``col[lo[j]:hi[j]]`` (non-empty, in order) for every j. O(n)."""
    kind = declared_kind(m)
    if kind in _NUMERIC_PARTIAL:  # lower is the identity: the slice verb's answer
        buffer = np.int64 if kind == "count" else np.float64
        out: list[Any] = query_slices(make(m), col, lo, hi, buffer).tolist()
        return out
    lift, comb = m.lift, m.combine  # bound methods: hot loop
    vals = col.tolist()
    res = []
    for a, b in zip(lo.tolist(), hi.tolist(), strict=True):
        acc = lift(vals[a])
        for i in range(a + 1, b):
            acc = comb(acc, lift(vals[i]))
        res.append(acc)
    return res


def _runs(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Start and end (exclusive) of every run of equal values of sorted *keys*. O(n)."""
    n = len(keys)
    if not n:
        return np.empty(0, np.int64), np.empty(0, np.int64)
    head = np.ones(n, dtype=bool)
    head[1:] = keys[1:] != keys[:-1]
    lo = np.flatnonzero(head).astype(np.int64)
    return lo, np.append(lo[1:], n).astype(np.int64)


def _default_make(monoid: Any) -> Any:
    from windowagg.fifo import TwoStacksLite

    return TwoStacksLite(monoid)


class PaneStream:
    """One key's hopping/tumbling windows over pane partials (see the module docstring).

    Same verbs, output and revisions as the event log of :mod:`.stream`;
    :class:`~.stream.KeyStream` holds one of the two.
    """

    __slots__ = (
        "_aggs",
        "_clock",
        "_cols",
        "_emitted_wm",
        "_fibas",
        "_g",
        "_judge",
        "_keys",
        "_lateness",
        "_make",
        "_monoids",
        "_ooo",
        "_open",
        "_plan",
        "_raw",
        "_revs",
        "_s",
        "_seq",
        "_shape",
        "_w",
    )

    def __init__(
        self,
        aggs: Sequence[Any],
        shape: Shape,
        *,
        max_out_of_orderness: int = 0,
        allowed_lateness: int = 0,
        judge: str = "arrival",
        factory: Factory | None = None,
        planned: Plan | None = None,
    ) -> None:
        self._plan = planned if planned is not None else plan(aggs)
        if not fits(shape, self._plan):
            raise ValueError(
                f"PaneStream needs hopping windows of monoid aggregations, got a {shape.kind} "
                "window" + (" with exact quantiles" if self._plan.quantiles else "")
            )
        assert shape.size is not None and shape.slide is not None
        self._aggs = list(aggs)
        self._shape = shape
        self._judge = judge
        self._make = factory or _default_make
        self._ooo = int(max_out_of_orderness)
        self._lateness = int(allowed_lateness)
        self._clock = WatermarkClock(self._ooo, self._lateness)
        self._cols = list(dict.fromkeys(a.column for a in aggs if a.column is not None))
        self._g = gcd(shape.size, shape.slide)
        self._w = shape.size // self._g  # panes per window
        self._s = shape.slide // self._g  # panes per slide
        self._monoids = [g.monoid for g in self._plan.groups]
        self._raw = not all(bool(getattr(m, "commutative", False)) for m in self._monoids)
        self._fibas = [FiBA(_Partials(m)) for m in self._monoids]
        self._keys = np.empty(0, np.int64)  # the non-empty panes, ascending
        self._open: dict[int, Events] = {}  # non-commutative plans: events of open panes
        self._seq = 0
        self._emitted_wm: int | None = None
        self._revs: dict[int, tuple[int, int]] = {}  # window start -> (end, revision)

    # ------------------------------------------------------------------ properties
    @property
    def watermark(self) -> int | None:
        """The key's watermark (None before its first event). O(1)."""
        return self._clock.watermark

    @property
    def bound(self) -> int | None:
        """Events older than this are late (``watermark - allowed_lateness``). O(1)."""
        return self._clock.bound

    def __len__(self) -> int:
        """Panes stored plus the raw events of open panes. O(open panes)."""
        return len(self._keys) + sum(len(e.t) for e in self._open.values())

    # ------------------------------------------------------------------ bytes
    def config(self) -> tuple[Any, ...]:
        """What a stored state must have been written for (checked by :meth:`restore`)."""
        s = self._shape
        return (
            "panes", s.size, s.slide, s.start_time, self._ooo, self._lateness,
            self._judge, tuple(self._cols),
            tuple((g.alias, type(g.monoid).__name__) for g in self._plan.groups),
        )  # fmt: skip

    def meta_bytes(self) -> bytes:
        """The metadata record: configuration, clock, emission, revisions. O(revisions)."""
        clock_max = None if self._clock.watermark is None else self._clock.watermark + self._ooo
        return codec.dumps(
            (
                STATE_VERSION,
                self.config(),
                clock_max,
                self._emitted_wm,
                self._seq,
                [(k, e, r) for k, (e, r) in self._revs.items()],
            )
        )

    def piece(self, p: int) -> bytes:
        """Pane *p*'s stored piece: its raw events while open (non-commutative plans),
        else its partials. O(events of the pane) or O(aggregations)."""
        ev = self._open.get(p)
        if ev is not None:
            return codec.dumps(("e", encode_events(ev)))
        return codec.dumps(("p", tuple(f.range_query(p, p) for f in self._fibas)))

    def pieces(self) -> dict[int, bytes]:
        """Every stored piece (what a store holds for this key). O(panes)."""
        return {int(p): self.piece(int(p)) for p in self._keys.tolist()}

    @classmethod
    def restore(
        cls, meta: Any, pieces: Mapping[int, bytes], aggs: Sequence[Any], shape: Shape, **kw: Any
    ) -> PaneStream:
        """A key's state from its decoded metadata tuple and its pieces. O(P + events)."""
        s = cls(aggs, shape, **kw)
        if not (isinstance(meta, tuple) and len(meta) == 6):
            raise CodecError("not a windowagg pane state: clear the query's checkpoint")
        _, config, clock_max, emitted_wm, seq, revs = meta
        check_config(config, s.config())
        if clock_max is not None:
            s._clock.observe(np.array([clock_max], dtype=np.int64))
        s._emitted_wm = emitted_wm
        s._seq = int(seq)
        s._revs = {int(k): (int(e), int(r)) for k, e, r in revs}
        keys = sorted(int(p) for p in pieces)
        parts: list[list[tuple[int, Any]]] = [[] for _ in s._fibas]
        n = len(s._fibas)
        for p in keys:
            with codec.decoding("a windowagg pane"):
                rec = codec.loads(bytes(pieces[p]))
            if isinstance(rec, tuple) and len(rec) == 2 and rec[0] == "e":
                ev = decode_events(rec[1], s._cols)
                if not len(ev.t) or ((ev.t - shape.start_time) // s._g != p).any():
                    raise CodecError(f"pane {p} holds events of another pane: corrupted state")
                s._open[p] = ev
                vals = s._fold_events(ev)
            elif isinstance(rec, tuple) and len(rec) == 2 and rec[0] == "p":
                vals = rec[1]
                if not (isinstance(vals, tuple) and len(vals) == n):
                    raise CodecError(f"pane {p} holds {vals!r}, not {n} partials: corrupted")
            else:
                raise CodecError(f"pane {p}: not a windowagg pane record: corrupted state")
            for i, v in enumerate(vals):
                parts[i].append((p, v))
        s._fibas = [
            FiBA.from_sorted_partials(_Partials(m), ps)
            for m, ps in zip(s._monoids, parts, strict=True)
        ]
        s._keys = np.asarray(keys, dtype=np.int64)
        return s

    # ------------------------------------------------------------------ the verbs
    def feed(self, t: np.ndarray, values: Mapping[str, np.ndarray]) -> tuple[StepResult, Delta]:
        """Admit one micro-batch (arrival order), update the panes, emit what it closed or
        revised. O(m log m + m + (q + r) log P + P) (see the module docstring)."""
        t = np.asarray(t, dtype=np.int64)
        vals = {c: np.asarray(values[c], dtype=np.float64) for c in self._cols}
        a = admit_key(self._plan, self._clock, self._judge, t, vals, self._shape)
        new = Events(
            t[a.order],
            self._seq + a.order.astype(np.int64),
            {c: v[a.order] for c, v in vals.items()},
        )
        self._seq += len(t)
        old_keys = self._keys
        touched = self._update(new)
        cols, ids = self._close(old_keys, touched)
        put, delete = self._settle(touched)
        return StepResult(cols, a.refused, a.reasons, ids), Delta(self.meta_bytes(), put, delete)

    def advance(self, watermark: int) -> tuple[StepResult, Delta]:
        """Raise the key's watermark to *watermark* and emit what that closes. O(P + r log P)."""
        self._clock.observe(np.array([int(watermark) + self._ooo], dtype=np.int64))
        return self.feed(np.empty(0, np.int64), {c: np.empty(0) for c in self._cols})

    # ------------------------------------------------------------------ panes
    def _pane_of(self, t: np.ndarray) -> np.ndarray:
        out: np.ndarray = (t - self._shape.start_time) // self._g
        return out

    def _fold_events(self, ev: Events) -> list[Any]:
        """Every aggregation's partial of *ev* (sorted, non-empty), in order. O(n)."""
        lo, hi = np.zeros(1, np.int64), np.full(1, len(ev.t), np.int64)
        out = []
        for g, m in zip(self._plan.groups, self._monoids, strict=True):
            col = ev.values[g.column] if g.column is not None else np.zeros(len(ev.t))
            out.append(_fold(m, col, lo, hi, self._make)[0])
        return out

    def _update(self, new: Events) -> np.ndarray:
        """Fold the new events (sorted by time, then arrival) into their panes; returns
        the panes touched, ascending. O(m + q log P)."""
        panes = self._pane_of(new.t)
        lo, hi = _runs(panes)
        touched: np.ndarray = panes[lo]
        if not len(touched):
            return touched
        if self._raw:
            for j, p in enumerate(touched.tolist()):
                part = take_events(new, slice(int(lo[j]), int(hi[j])))
                old = self._open.get(p)
                ev = part if old is None else sorted_events(concat_events([old, part], self._cols))
                self._open[p] = ev
                for i, v in enumerate(self._guarded(self._fold_events, p, ev)):
                    f = self._fibas[i]
                    f.evict(p)
                    f.insert(p, v)
        else:
            ps = touched.tolist()
            for i, (g, m) in enumerate(zip(self._plan.groups, self._monoids, strict=True)):
                col = new.values[g.column] if g.column is not None else np.zeros(len(new.t))
                ins = self._fibas[i].insert
                parts = self._guarded(_fold, ps[0], m, col, lo, hi, self._make, i=i)
                for p, v in zip(ps, parts, strict=True):
                    self._guarded(ins, p, p, v, i=i)  # old ⊗ new: the monoid is commutative
        self._keys = np.union1d(self._keys, touched).astype(np.int64)
        return touched

    def _guarded(self, fn: Any, pane: int, *args: Any, i: int | None = None) -> Any:
        """``fn(*args)``; a monoid's exception becomes an ``AggregationError`` naming the
        aggregation (*i*, or the one that raises when refolded) and pane *pane*."""
        try:
            return fn(*args)
        except Exception as e:
            alias, monoid = self._culprit(i, pane)
            st = self._shape.start_time + pane * self._g
            where = f" in the pane [{st}, {st + self._g})"
            reason = f"{type(e).__name__}: {e}"
            raise AggregationError(
                aggregation_message(alias, monoid, reason, where), alias=alias, reason=reason
            ) from e

    def _culprit(self, i: int | None, pane: int) -> tuple[str, Any]:
        """The aggregation that raised: *i*, else the first whose fold of the open pane
        raises (O(events of the pane), on the error path)."""
        groups = self._plan.groups
        if i is None:
            ev = self._open.get(pane)
            for j, (g, m) in enumerate(zip(groups, self._monoids, strict=True)):
                try:
                    if ev is not None:
                        col = ev.values[g.column] if g.column is not None else np.zeros(len(ev.t))
                        lo, hi = np.zeros(1, np.int64), np.full(1, len(ev.t), np.int64)
                        _fold(m, col, lo, hi, self._make)
                except Exception:
                    i = j
                    break
        g = groups[i if i is not None else 0]
        return g.alias, g.monoid

    def _windows(self) -> Windows:
        """The windows over the stored panes, in pane units (start ``k*s``, end ``k*s +
        w``), ``lo``/``hi`` indexing the panes. O(P + windows)."""
        return assign(Shape(size=self._w, slide=self._s), self._keys)

    def _close(
        self, old_keys: np.ndarray, touched: np.ndarray
    ) -> tuple[dict[str, Any], np.ndarray]:
        """The windows to emit: closed ones not emitted yet (revision 0) and emitted ones
        holding a touched pane (revision + 1)."""
        wm = self._clock.watermark
        w = self._windows()
        st, g, size = self._shape.start_time, self._g, self._shape.size
        assert size is not None
        start = st + w.start * g
        end = start + size
        emitted = self._emitted_wm
        if wm is None or not len(end):
            return self._columns(start[:0], end[:0], [], np.zeros(0, np.int64))
        keys = self._keys
        is_new = np.isin(keys, touched)
        had = np.isin(keys, old_keys)
        new_before = np.concatenate([[0], np.cumsum(is_new)])
        old_before = np.concatenate([[0], np.cumsum(had)])
        holds_new = new_before[w.hi] > new_before[w.lo]
        holds_old = old_before[w.hi] > old_before[w.lo]
        closed = end <= wm
        fresh = closed if emitted is None else closed & (end > emitted)
        emit = fresh | (closed & holds_new)
        rev = np.zeros(len(end), dtype=np.int64)
        if emitted is not None:
            again = np.flatnonzero(emit & ~fresh & holds_old)
            for j in again.tolist():
                key = int(start[j])
                prev = self._revs.get(key, (0, 0))[1]
                rev[j] = prev + 1
                self._revs[key] = (int(end[j]), prev + 1)
        self._emitted_wm = wm if emitted is None else max(emitted, wm)
        idx = np.flatnonzero(emit)
        lo_p = w.start[idx].tolist()
        return self._columns(start[idx], end[idx], lo_p, rev[idx])

    def _columns(
        self, start: np.ndarray, end: np.ndarray, lo_p: list[int], rev: np.ndarray
    ) -> tuple[dict[str, Any], np.ndarray]:
        span = self._w - 1
        results: dict[str, Any] = {}
        for grp, m, f in zip(self._plan.groups, self._monoids, self._fibas, strict=True):
            rq, lower = f.range_query, m.lower  # bound methods: one call per window
            res: list[Any] = []
            try:
                for p in lo_p:
                    res.append(lower(rq(p, p + span)))
            except Exception as exc:  # a user monoid's combine / lower: name the window
                j = len(res)
                where = f" in the window (window_start {int(start[j])}, window_end {int(end[j])})"
                reason = f"{type(exc).__name__}: {exc}"
                raise AggregationError(
                    aggregation_message(grp.alias, m, reason, where),
                    alias=grp.alias,
                    window=j,
                    reason=reason,
                ) from exc
            results[grp.alias] = res
        z = np.zeros(len(start), dtype=np.int64)
        out = columns(Windows(start, end, z, z, z, z, z), results, self._aggs)
        out["revision"] = np.asarray(rev, dtype=np.int64)
        return out, np.asarray(start, dtype=np.int64)

    def _settle(self, touched: np.ndarray) -> tuple[dict[int, bytes], tuple[int, ...]]:
        """After emission: prune revisions, evict the dead panes, freeze the open panes
        the bound passed. Returns the pieces to put and to delete. O(q + dead + P)."""
        b = self._clock.bound
        dirty = set(touched.tolist())
        delete: list[int] = []
        if b is not None:
            self._revs = {k: v for k, v in self._revs.items() if v[0] > b}
            s = self._shape
            assert s.size is not None and s.slide is not None
            # pane p's last window (k = p // s) ends at start_time + k*slide + size: dead
            # when that is <= b, i.e. p // s <= kdead
            kdead = (b - s.start_time - s.size) // s.slide
            last_dead = kdead * self._s + self._s - 1
            n_dead = int(np.searchsorted(self._keys, last_dead, "right"))
            if n_dead:
                delete = self._keys[:n_dead].tolist()
                self._keys = self._keys[n_dead:]
                for f in self._fibas:
                    f.bulk_evict(last_dead)
                for p in delete:
                    self._open.pop(p, None)
                    dirty.discard(p)
            if self._open:
                # pane p ends at start_time + (p + 1)*g: frozen once that is <= b
                for p in [p for p in self._open if s.start_time + (p + 1) * self._g <= b]:
                    del self._open[p]
                    dirty.add(p)
        return {p: self.piece(p) for p in sorted(dirty)}, tuple(delete)

    # ------------------------------------------------------------------ timers
    def deadline(self) -> int | None:
        """The end of the oldest window not emitted yet; else the watermark at which every
        stored pane is dead; None when nothing is stored. O(P)."""
        if not len(self._keys):
            return None
        wm = self._clock.watermark
        s = self._shape
        assert s.size is not None and s.slide is not None
        ends = s.start_time + self._windows().start * self._g + s.size
        pending = ends[ends > wm] if wm is not None else ends
        if len(pending):
            return int(pending.min())
        last = int(self._keys[-1]) // self._s
        at = s.start_time + last * s.slide + s.size + self._lateness
        return None if wm is not None and at <= wm else at

    def _check(self) -> None:
        """Invariants (O(P + events)): panes ascending and unique, every FiBA holds exactly
        them, open panes hold their own sorted events (none past the bound) and the FiBA
        holds their fold."""
        k = self._keys
        if len(k) > 1 and not (np.diff(k) > 0).all():
            raise AssertionError("PaneStream: stored panes are not strictly ascending")
        for f in self._fibas:
            f._check()
            got = [p for p, _ in f.to_partials()]
            if got != k.tolist():
                raise AssertionError(f"PaneStream: a FiBA holds panes {got}, not {k.tolist()}")
        if self._open and not self._raw:
            raise AssertionError("PaneStream: a commutative plan keeps raw events")
        b = self._clock.bound
        for p, ev in self._open.items():
            if p not in set(k.tolist()):
                raise AssertionError(f"PaneStream: open pane {p} is not stored")
            if (self._pane_of(ev.t) != p).any():
                raise AssertionError(f"PaneStream: open pane {p} holds another pane's events")
            if not np.array_equal(np.lexsort((ev.seq, ev.t)), np.arange(len(ev.t))):
                raise AssertionError(f"PaneStream: pane {p}'s events are not sorted")
            if b is not None and self._shape.start_time + (p + 1) * self._g <= b:
                raise AssertionError(f"PaneStream: pane {p} is past the bound {b} but open")
            want = self._fold_events(ev)
            got = [f.range_query(p, p) for f in self._fibas]
            if repr(want) != repr(got):
                raise AssertionError(f"PaneStream: pane {p} holds {got}, its events fold to {want}")
