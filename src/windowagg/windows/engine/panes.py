"""One key's hopping/tumbling windows over pane partials: state O(window / slide), not O(events).

=================  ==========================================================================
shape              hopping and tumbling windows (``size``, ``slide``, ``start_time``; one
                   size or several, ``sizes``) whose aggregations are monoids answered
                   without the time, or exact quantiles: :class:`KeyStream` picks this
                   layout from the shape and the aggregations, never from a size
panes              width ``g = gcd(size, slide)``, aligned to ``start_time``: pane ``p`` is
                   ``[start_time + p*g, start_time + (p+1)*g)``; window ``k`` (start
                   ``start_time + k*slide``) is the panes ``k*s .. k*s + w - 1`` (``w =
                   size/g``, ``s = slide/g``), as Li et al.'s panes (SIGMOD Record 2005)
state              a tree of *nodes* over the pane numbers: node ``(l, i)`` holds, for every
                   aggregation, the partial (lift and combine, never lowered) of the
                   non-empty panes ``i*2**l .. (i+1)*2**l - 1``, for levels ``l = 0 ..
                   top`` (``2**top >= w``); a node is stored while a pane under it is. A
                   window's value is ``lower`` of its <= 2 top nodes' cover (O(log w)
                   nodes, left to right): a segment tree in a key-value store, as the MTA
                   paper keeps its tree in a KVS. Panes whose windows can all no longer
                   change (last window's end <= the lateness bound) are deleted, with the
                   nodes above only them
commutative        every monoid ``commutative``: a micro-batch's events are folded per pane
                   and combined into the pane's partial (``old ⊗ new``); no event is kept
otherwise          a pane that can still receive events (pane end > lateness bound =
                   watermark - allowed_lateness) keeps its raw events, and its partial is
                   refolded from them in (time, arrival) order when it changes; once the
                   bound passes its end the events go and the partial is frozen: raw events
                   are O(rate x lateness), never O(rate x window)
pieces             one stored piece per node (key :func:`node_key`), ``("p", partials)``
                   or, for an open pane of a non-commutative plan, ``("e", events)``; plus
                   the metadata record (configuration, clock, emission, revisions, the span
                   of stored panes, the open panes). Pieces are read on demand
                   (:class:`~.pieces.Pieces`): a micro-batch reads the nodes of the panes
                   it touches and of the windows it emits, and its
                   :class:`~.records.Delta` puts the nodes it changed and deletes the dead
                   ones: O((q + r) log w) pieces, whatever the window holds
exact quantiles    a second component over the same panes, :class:`~.values.Values`: a
                   piece of sorted values per stored pane (``(p << 6) | 63``) and an
                   order-statistics multiset per column and size at a cursor window, moved
                   by the panes entering and leaving (see :mod:`.values`); a plan of
                   quantiles alone keeps the tree with empty partials (it says which panes
                   are stored)
emission           as the event log (:mod:`.stream`): a window when the key's watermark
                   passes its end (``revision`` 0), and again (``revision`` + 1) when a
                   late-but-accepted event lands in one of its panes; final answers equal
                   :func:`windowagg.pandas.window_agg`'s
several sizes      one tree, ``top`` set by the largest size (FiBA's window sharing): rows,
                   revisions and deletion are the largest size's; size z's window ending
                   where row k's does is the panes ``k*s + w - w_z .. k*s + w - 1``
                   (``w_z = z / g``: the sizes differ by multiples of the slide), answered
                   from its own cover; a row whose size-z window holds no pane gets the
                   aggregation's empty answer, as :func:`~.sizes.evaluate_sizes`. The stored
                   pieces are the largest size's alone
time               per micro-batch of m events touching q panes and emitting r windows:
                   O(m log m) numpy + one ``lift`` and ``combine`` per event (numpy-native
                   for ``sum``/``max``/``min``/``count``) + O((q + r) log w) node reads,
                   combines and writes (windows of numeric kinds spanning at most
                   ``2 log2 w`` panes each: answered from those panes, one slice verb per
                   aggregation, :meth:`PaneStream._dense`); a jump of the watermark also
                   looks at the stored span once (O(span / slide) windows, O(span /
                   2**top) top nodes);
                   several sizes: O(z r log W) for z sizes
space              O(window / slide + panes of the lateness) partials per key, plus, for a
                   non-commutative plan, the events of the open panes
=================  ==========================================================================

The code is in four modules: this one (the configuration, the bytes, the verbs, the
settling of dead and frozen panes, the timers), :mod:`.pane_windows` (the windows a
micro-batch closes or revises, and their answers), :mod:`.pane_tree` (the tree of
partials: folding in, reading back, dropping) and :mod:`.pane_folds` (the folds, the
piece keys and the process-wide caches).

Examples
--------
>>> import numpy as np
>>> from windowagg.aggs import parse_aggs
>>> s = PaneStream(parse_aggs(["sum(v)", "count"]), Shape(size=10, slide=5), allowed_lateness=20)
>>> out, d = s.feed(np.array([1, 7, 12]), {"v": np.array([1.0, 2.0, 3.0])})
>>> out.columns["end"].tolist(), out.columns["sum_v"].tolist()
([5, 10], [1.0, 3.0])
>>> [(k % 64, k // 64) for k in sorted(d.put)]  # (level, index): panes 0, 1, 2 and 2 nodes
[(0, 0), (1, 0), (0, 1), (1, 1), (0, 2)]
>>> out, d = s.feed(np.array([3]), {"v": np.array([4.0])})  # late, within the lateness
>>> out.columns["end"].tolist(), out.columns["sum_v"].tolist(), out.columns["revision"].tolist()
([5, 10], [5.0, 7.0], [1, 1])
>>> [(k % 64, k // 64) for k in sorted(d.put)], d.delete  # pane 0 and its node again
([(0, 0), (1, 0)], ())
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable, Mapping, Sequence
from math import gcd
from typing import Any, ClassVar

import numpy as np

from windowagg import codec
from windowagg._backend import resolve_backend
from windowagg.errors import CodecError
from windowagg.monoids.base import declared_kind
from windowagg.windows.engine.clock import WatermarkClock
from windowagg.windows.engine.pane_folds import (
    _FOLD_ARRAYS,
    _LEVEL_BITS,
    _MERGE,
    _NUMERIC_PARTIAL,
    _SHARED_MAKE,
    _SINGLE,
    _SPLIT,
    _WALK,
    _encoded_config,
    _fold,
    _fold_lists,
    _inline_combine,
    _runs,
    node_key,
    store_rows,
)
from windowagg.windows.engine.pane_windows import PaneWindows
from windowagg.windows.engine.pieces import Pieces
from windowagg.windows.engine.records import (
    NO_DELTA,
    STATE_VERSION,
    Delta,
    Events,
    StepResult,
    admit_key,
    admit_key_small,
    agg_signature,
    as_column,
    check_config,
    decode_events,
    encode_events,
)
from windowagg.windows.engine.shapes import Shape
from windowagg.windows.engine.state import Factory, Plan, Reused, plan
from windowagg.windows.engine.values import Values, is_value_key, value_key

__all__ = ["PaneStream", "fits", "node_key"]

#: Micro-batches of up to this many events of a commutative plan take the plain-Python
#: path (:meth:`PaneStream._step_small`); larger ones numpy's.
_SMALL = 256


def fits(shape: Shape, p: Plan, emit: str = "watermark") -> bool:
    """Whether *shape* and the planned aggregations take the pane layout: hopping or
    tumbling windows, every aggregation a monoid answered without the time (decayed
    aggregations, answered as of each window's end, keep the event log) or an exact
    quantile (the :class:`~.values.Values` component: one cursor per size). O(aggregations)."""
    timed = any(g.timed for g in p.groups)
    return shape.grid and emit == "watermark" and not timed


#: Whether a plan answered from the panes alone (numeric kinds, one size) refreshes the
#: nodes above them on demand (:meth:`PaneTree._ancestors`); False: at every micro-batch
#: (the tests' reference).
_LAZY = True


class PaneStream(PaneWindows):
    """One key's hopping/tumbling windows over pane partials (see the module docstring).

    Same verbs, output and revisions as the event log of :mod:`.stream`;
    :class:`~.stream.KeyStream` holds one of the two.
    """

    #: The slots of the configuration, the arrival counter and the encoded configuration;
    #: the tree's and the windows' are in :class:`~.pane_tree.PaneTree` and
    #: :class:`~.pane_windows.PaneWindows` (31 in all, as one class held them).
    __slots__ = (
        "_combine_all",
        "_config_bytes",
        "_context",
        "_deltas",
        "_judge",
        "_lateness",
        "_ooo",
        "_scalar",
        "_seq",
    )

    #: Slots set at construction only (the configuration and what it derives): a step's
    #: :func:`~.records.atomic` does not keep them (a micro-batch per key keeps the rest).
    _FIXED: ClassVar[frozenset[str]] = frozenset(
        {
            "_aggs", "_cols", "_combine_all", "_combines", "_context", "_deltas", "_g",
            "_inline", "_judge", "_lateness", "_lazy", "_make", "_merges", "_monoids", "_ooo",
            "_plan", "_raw", "_s", "_scalar", "_shape", "_sizes", "_top", "_w",
        }
    )  # fmt: skip

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
        deltas: bool = True,
        context: tuple[tuple[str, Any], ...] = (),
    ) -> None:
        self._plan = planned if planned is not None else plan(aggs)
        self._context = tuple(context)  # the caller's parameters, in config()
        self._deltas = deltas  # False: no store takes the deltas, nothing is encoded
        if not fits(shape, self._plan):
            raise ValueError(
                f"PaneStream needs hopping windows of untimed aggregations, got a {shape.kind} "
                "window" + (" with decayed aggregations" if shape.grid else "")
            )
        assert shape.size is not None and shape.slide is not None
        self._aggs = list(aggs)
        self._shape = shape
        self._judge = judge
        self._make = (
            _SHARED_MAKE[resolve_backend(None, "TwoStacksLite")]
            if factory is None
            else Reused(factory)
        )
        self._ooo = int(max_out_of_orderness)
        self._lateness = int(allowed_lateness)
        self._clock = WatermarkClock(self._ooo, self._lateness)
        self._cols = list(dict.fromkeys(a.column for a in aggs if a.column is not None))
        self._g = gcd(shape.size, shape.slide)
        self._w = shape.size // self._g  # panes per window
        self._s = shape.slide // self._g  # panes per slide
        self._top = (self._w - 1).bit_length()  # 2**top >= w: a window spans <= 2 top nodes
        # several sizes: (size, panes) each; they differ from size by multiples of the
        # slide, so g divides them all, and one tree (top set by the largest) holds them
        self._sizes = tuple((z, z // self._g) for z in shape.sizes)
        self._monoids = [g.monoid for g in self._plan.groups]
        self._combines = tuple(m.combine for m in self._monoids)  # bound: _refresh's loop
        self._inline = _inline_combine([declared_kind(m) for m in self._monoids])
        self._combine_all = self._combine_each if self._inline is None else self._combine_fast
        # every aggregation a numeric kind: (group, merge) each, answered from the panes by
        # slice verbs when that pays (:meth:`_dense`); else () (a quantile-only plan too)
        merges = [(g, _MERGE.get(declared_kind(g.monoid) or "")) for g in self._plan.groups]
        ok = merges and all(m is not None for _, m in merges)
        self._merges: tuple[tuple[Any, tuple[Any, type]], ...] = tuple(merges) if ok else ()  # type: ignore[arg-type]
        self._raw = not all(bool(getattr(m, "commutative", False)) for m in self._monoids)
        # small micro-batches in plain Python: commutative plans, no gaps between windows
        self._scalar = not self._raw and shape.size >= shape.slide
        self._nodes = Pieces(self._decode)
        self._span: tuple[int, int] | None = None  # no stored pane outside [lo, hi]
        self._open: list[int] = []  # non-commutative plans: the open panes, ascending
        self._seq = 0
        self._emitted_wm: int | None = None
        self._revs: dict[int, tuple[int, int]] = {}  # window start -> (end, revision)
        self._values = self._new_values(None)  # exact quantiles' component (or None)
        self._config_bytes: codec.Encoded | None = None  # config(), encoded once
        # windows answered from the panes (:meth:`_dense`), no deltas to write: the nodes
        # above them are refreshed when something reads them (:meth:`_build`)
        self._lazy = _LAZY and bool(self._merges) and not self._sizes and not deltas
        self._stale: list[int] = []  # panes whose ancestors are not refreshed, ascending

    def _new_values(self, store: Mapping[int, bytes] | None) -> Values | None:
        """The exact quantiles' component over the same panes (None: no quantile)."""
        if not self._plan.quantiles:
            return None
        return Values(
            self._plan.quantiles, width=self._w, step=self._s, present=self._present_panes,
            store=store,
        )  # fmt: skip

    # ------------------------------------------------------------------ properties
    @property
    def reads(self) -> tuple[int, int]:
        """Store look-ups since the state was restored, and the bytes they returned. O(1)."""
        more = (0, 0) if self._values is None else self._values.reads
        return self._nodes.reads + more[0], self._nodes.read_bytes + more[1]

    def __len__(self) -> int:
        """Panes stored plus the raw events of open panes. O(stored pieces)."""
        n = 0
        for k in self._nodes.stored():
            if k & ((1 << _LEVEL_BITS) - 1) == 0:
                rec = self._nodes.get(k)
                n += 1 + (len(rec[2].t) if rec[0] == "e" else 0)
        return n

    # ------------------------------------------------------------------ bytes
    def config(self) -> tuple[Any, ...]:
        """What a stored state must have been written for (checked by :meth:`restore`)."""
        s = self._shape
        return (
            ("layout", "panes"), ("size", s.size), ("slide", s.slide),
            ("start_time", s.start_time),
            *((("sizes", tuple(s.sizes)),) if s.sizes else ()),
            ("max_out_of_orderness", self._ooo),
            ("allowed_lateness", self._lateness), ("judge", self._judge),
            ("columns", tuple(self._cols)), ("aggregations", agg_signature(self._aggs)),
            ("partials", tuple((g.alias, type(g.monoid).__name__) for g in self._plan.groups)),
            *self._context,
        )  # fmt: skip

    def meta_bytes(self) -> bytes:
        """The metadata record: configuration, clock, emission, revisions, the span of the
        stored panes and the open panes. O(revisions + open panes): the configuration's
        bytes are made once (:func:`~windowagg.codec.encoded`)."""
        clock_max = None if self._clock.watermark is None else self._clock.watermark + self._ooo
        config = self._config_bytes
        if config is None:  # fixed at construction: encoded once, spliced in every step
            config = self._config_bytes = _encoded_config(self.config())
        return codec.dumps(
            (
                STATE_VERSION,
                config,
                clock_max,
                self._emitted_wm,
                self._seq,
                [(k, e, r) for k, (e, r) in self._revs.items()],
                self._span,
                list(self._open),
            )
        )

    def _encode(self, key: int, rec: Any) -> bytes:
        kind, partials, ev = rec
        if kind == "e":
            return codec.dumps(("e", encode_events(ev)))
        if kind == _SPLIT:
            return codec.dumps((_SPLIT, None))
        return codec.dumps(("p", partials))

    def _encode_many(self, keys: list[int], recs: list[Any]) -> list[bytes]:
        """:meth:`_encode` of every piece, byte for byte: the partials' records through
        :func:`~windowagg.codec.dumps_numbers` in one call. O(pieces)."""
        part = [j for j, r in enumerate(recs) if r[0] == "p"]
        if len(part) == len(recs):
            return codec.dumps_numbers("p", [r[1] for r in recs])
        out = [b"" if r[0] == "p" else self._encode(k, r) for k, r in zip(keys, recs, strict=True)]
        for j, b in zip(part, codec.dumps_numbers("p", [recs[j][1] for j in part]), strict=True):
            out[j] = b
        return out

    def _decode_many(self, keys: list[int], datas: list[bytes]) -> list[Any]:
        """:meth:`_decode` of every piece: the partials' records (most pieces) read by
        :func:`~windowagg.codec.loads_numbers` in one call, any other piece (or a record
        :meth:`_decode` refuses) by :meth:`_decode`. O(pieces)."""
        n = len(self._monoids)
        rows = codec.loads_numbers("p", datas)
        return [
            ("p", r, None) if r is not None and len(r) == n else self._decode(k, d)
            for k, d, r in zip(keys, datas, rows, strict=True)
        ]

    def _decode(self, key: int, data: bytes) -> Any:
        n = len(self._monoids)
        level, index = key & ((1 << _LEVEL_BITS) - 1), key >> _LEVEL_BITS
        with codec.decoding("a windowagg pane"):
            rec = codec.loads(data)
        if isinstance(rec, tuple) and len(rec) == 2 and rec[0] == "e" and level == 0:
            ev = decode_events(rec[1], self._cols)
            if not len(ev.t) or (self._pane_of(ev.t) != index).any():
                raise CodecError(f"pane {index} holds events of another pane: corrupted state")
            return ("e", self._fold_events(index, ev), ev)
        if isinstance(rec, tuple) and len(rec) == 2 and rec[0] == "p":
            vals = rec[1]
            if not (isinstance(vals, tuple) and len(vals) == n):
                raise CodecError(f"piece {key} holds {vals!r}, not {n} partials: corrupted")
            return ("p", vals, None)
        if isinstance(rec, tuple) and len(rec) == 2 and rec[0] == _SPLIT and level > 0:
            return (_SPLIT, None, None)
        raise CodecError(f"piece {key}: not a windowagg pane record: corrupted state")

    def piece(self, key: int) -> bytes:
        """The stored piece under *key* (:func:`node_key`): a pane's raw events while open
        (non-commutative plans), else partials; a pane's values for exact quantiles
        (:func:`~.values.value_key`). O(piece)."""
        if is_value_key(key) and self._values is not None:
            return self._values.piece(key >> _LEVEL_BITS)
        self._build()
        return self._nodes.raw(key, self._encode)

    def pieces(self) -> dict[int, bytes]:
        """Every stored piece (what a store holds for this key). O(stored pieces)."""
        out = {k: self.piece(k) for k in self._tree_keys()}
        if self._values is not None:
            out.update({k: self.piece(k) for k in map(value_key, self._values.stored())})
        return dict(sorted(out.items()))

    def _tree_keys(self) -> list[int]:
        """The stored keys of the tree's nodes (not the values' pieces), ascending."""
        self._build()
        return [k for k in self._nodes.stored() if not is_value_key(k)]

    @classmethod
    def restore(
        cls, meta: Any, pieces: Mapping[int, bytes], aggs: Sequence[Any], shape: Shape, **kw: Any
    ) -> PaneStream:
        """A key's state from its decoded metadata tuple; its pieces are read from
        *pieces* (any ``Mapping``: a dict, a view of Spark's ``MapState``) only when a
        micro-batch needs them. O(revisions + open panes)."""
        s = cls(aggs, shape, **kw)
        if isinstance(meta, tuple) and len(meta) >= 2:  # first: another layout's says so
            want = s.config()
            check_config(meta[1], want)
            s._config_bytes = _encoded_config(want)
        if not (isinstance(meta, tuple) and len(meta) == 8):
            raise CodecError("not a windowagg pane state: clear the query's checkpoint")
        _, _config, clock_max, emitted_wm, seq, revs, span, open_ = meta
        if clock_max is not None:  # a new clock: its newest time (no numpy call)
            s._clock.advance_to(int(clock_max))
        s._emitted_wm = emitted_wm
        s._seq = int(seq)
        s._revs = {int(k): (int(e), int(r)) for k, e, r in revs}
        s._span = None if span is None else (int(span[0]), int(span[1]))
        s._open = sorted(int(p) for p in open_)
        s._nodes = Pieces(s._decode, pieces, s._decode_many)
        s._values = s._new_values(pieces)
        return s

    # ------------------------------------------------------------------ the verbs
    def _step(self, t: np.ndarray, values: Mapping[str, np.ndarray]) -> tuple[StepResult, Delta]:
        if self._scalar and len(t) <= _SMALL:
            return self._step_small(t, values)
        t = np.asarray(t, dtype=np.int64)
        vals = {c: as_column(values[c]) for c in self._cols}
        a = admit_key(self._plan, self._clock, self._judge, t, vals, self._shape)
        new = Events(
            t[a.order],
            self._seq + a.order.astype(np.int64),
            {c: v[a.order] for c, v in vals.items()},
        )
        self._seq += len(t)
        panes = self._pane_of(new.t)
        lo, hi = _runs(panes)
        touched = panes[lo].tolist()
        again = self._revisable(touched)  # emitted windows a touched pane may change
        held = [self._covered(k) for k in again]  # ... and whether they held panes before
        self._update(new, panes, lo, hi)
        cols, ids = self._close(again, held)
        put, delete = self._settle()
        if not self._deltas:
            return StepResult(cols, a.refused, a.reasons, ids), NO_DELTA
        return StepResult(cols, a.refused, a.reasons, ids), Delta(self.meta_bytes(), put, delete)

    def _step_small(
        self, t: np.ndarray, values: Mapping[str, np.ndarray]
    ) -> tuple[StepResult, Delta]:
        """:meth:`_step` for a few events of a commutative plan, in plain Python (numpy's
        fixed cost per call is most of a small micro-batch's): the same admission
        (:func:`~.records.admit_key_small`), folds in the same order and the same pane
        tree, emission and settling. O(m log m + (q + r) log W)."""
        ts: list[int] = np.asarray(t, dtype=np.int64).tolist()
        arrays = {c: as_column(values[c]) for c in self._cols}
        objects = {c for c, a in arrays.items() if a.dtype == object}
        vals = {c: a.tolist() for c, a in arrays.items()}
        order, refused, reasons = admit_key_small(self._plan, self._clock, self._judge, ts, vals)
        self._seq += len(ts)
        st, g = self._shape.start_time, self._g
        sts = [ts[i] for i in order]  # admitted times, sorted
        touched: list[int] = []
        lo: list[int] = []
        if sts:  # the runs of equal panes: one search per pane boundary, not a step per event
            p, last = (sts[0] - st) // g, (sts[-1] - st) // g
            j = 0
            while True:
                touched.append(p)
                lo.append(j)
                if p == last:
                    break
                j = bisect_left(sts, st + (p + 1) * g, j)
                p = (sts[j] - st) // g
        again = self._revisable(touched)  # emitted windows a touched pane may change
        held = [self._covered(k) for k in again]  # ... and whether they held panes before
        if touched:
            hi = [*lo[1:], len(order)]
            if self._values is not None:
                cs = self._plan.quantiles
                self._values.add(touched, lo, hi, {c: [vals[c][k] for k in order] for c in cs})
            folded = []
            single = len(touched) == len(order)  # one event per pane: its lift is the partial
            by_column: dict[str | None, list[Any]] = {None: [0.0] * len(order)}
            floats: dict[str | None, np.ndarray] = {}  # the columns as float arrays, if asked
            bounds: tuple[np.ndarray, np.ndarray] | None = None
            for i, (grp, m) in enumerate(zip(self._plan.groups, self._monoids, strict=True)):
                c = grp.column
                col = by_column.get(c)
                if col is None:
                    assert c is not None  # no column: the zeros above
                    col = by_column[c] = [vals[c][k] for k in order]
                numeric = c is None or c not in objects
                kind = declared_kind(m) if numeric else None
                if single and kind in _SINGLE:
                    folded.append(_SINGLE[kind](col))
                    continue
                if kind in _NUMERIC_PARTIAL and len(touched) >= _FOLD_ARRAYS:
                    if bounds is None:
                        bounds = np.asarray(lo, np.int64), np.asarray(hi, np.int64)
                    a = floats.get(c)
                    if a is None:
                        a = floats[c] = np.asarray(col, np.float64)
                    folded.append(self._guarded(_fold, touched[0], m, a, *bounds, self._make, i=i))
                    continue
                folded.append(self._guarded(_fold_lists, touched[0], m, col, lo, hi, numeric, i=i))
            self._put_folded(touched, folded)
            self._ancestors(touched)
        cols, ids = self._close(again, held)
        put, delete = self._settle()
        res = StepResult(cols, np.asarray(refused, dtype=np.int64), reasons, ids)
        if not self._deltas:
            return res, NO_DELTA
        return res, Delta(self.meta_bytes(), put, delete)

    # ------------------------------------------------------------------ settling
    def _settle(self) -> tuple[dict[int, bytes], tuple[int, ...]]:
        """After emission: prune revisions, delete the dead panes (and the nodes above
        them), freeze the open panes the bound passed. Returns the pieces to put and the
        keys to delete. O(changes + dead top nodes) look-ups."""
        b = self._clock.bound
        span = self._span
        if b is not None:
            self._revs = {k: v for k, v in self._revs.items() if v[0] > b}
            s = self._shape
            assert s.size is not None and s.slide is not None
            # pane p's last window (k = p // s) ends at start_time + k*slide + size: dead
            # when that is <= b, i.e. p // s <= kdead
            last_dead = self._closed_upto(b) * self._s + self._s - 1
            if span is not None and last_dead >= span[0]:
                every = last_dead >= span[1]
                nodes = self._nodes
                if nodes.in_memory and min(last_dead, span[1]) - span[0] < 16 * nodes.cached():
                    # in memory, a dead range not much wider than the state: scanned (C-level)
                    self._settle_stale(last_dead, every)
                    self._drop_range(span, last_dead, every)
                else:
                    self._build()  # the walk goes down through stored nodes only
                    lo_i, hi_i = span[0] >> self._top, min(last_dead, span[1]) >> self._top
                    tops: Iterable[int] = range(lo_i, hi_i + 1)
                    if hi_i - lo_i >= _WALK:  # sparse: the top nodes of the stored panes
                        stored = self._stored_panes(span[0], span[1])
                        tops = sorted({p >> self._top for p in stored})
                        tops = [i for i in tops if lo_i <= i <= hi_i]
                    self._drop(tops, last_dead, every)
                self._span = None if every else (last_dead + 1, span[1])
                self._open = [p for p in self._open if p > last_dead]
            # pane p ends at start_time + (p + 1)*g: frozen once that is <= b
            frozen = [p for p in self._open if s.start_time + (p + 1) * self._g <= b]
            for p in frozen:
                rec = self._nodes.get(node_key(0, p))
                self._nodes.put(node_key(0, p), ("p", rec[1], None))
            if frozen:
                self._open = [p for p in self._open if p not in set(frozen)]
        put, gone = self._nodes.flush(self._encode if self._deltas else None, self._encode_many)
        if self._values is None:
            return put, gone
        vput, vgone = self._values.flush(self._deltas)
        return {**put, **vput}, tuple(sorted(gone + vgone))

    # ------------------------------------------------------------------ timers
    def store_rows(self, keys: np.ndarray) -> np.ndarray:
        """A store row per 32 panes (:func:`store_rows`). O(len(keys))."""
        return store_rows(keys)

    def deadline(self) -> int | None:
        """The end of the oldest window not emitted yet; else the watermark at which every
        stored pane is dead; None when nothing is stored. O((span / slide) log W)."""
        span = self._span
        if span is None:
            return None
        wm = self._clock.watermark
        first = self._first(span[0])
        if wm is not None:
            first = max(first, self._closed_upto(wm) + 1)
        for k in self._windows_with_panes(first, span[1] // self._s):
            if self._covered(k):
                return self._end(k)
        at = self._end(span[1] // self._s) + self._lateness
        return None if wm is not None and at <= wm else at

    def expired(self) -> bool:
        """Whether the state can go once the watermark passes :meth:`deadline` (None: now).
        Panes hold hopping windows only, which every watermark past the last one's end plus
        the lateness settles. O((span / slide) log W)."""
        return self.deadline() is None

    def _check(self) -> None:
        """Invariants (O(stored pieces + events)): stored panes inside the span; a node is
        stored iff a pane under it is (nodes over dead panes only may linger until their
        live part dies) and holds its children's combine; open panes hold their own sorted
        events (none past the bound) and their fold, and are listed as open. The stale
        nodes are refreshed first (:meth:`_build`)."""
        self._build()
        keys = self._tree_keys()
        mask = (1 << _LEVEL_BITS) - 1
        panes = [k >> _LEVEL_BITS for k in keys if k & mask == 0]
        span = self._span
        if panes and (span is None or not span[0] <= min(panes) or max(panes) != span[1]):
            raise AssertionError(f"PaneStream: panes {panes} outside the span {span}")
        b = self._clock.bound
        for p in panes:
            rec = self._nodes.get(node_key(0, p))
            if rec[0] == "e":
                ev = rec[2]
                if not self._raw or p not in self._open:
                    raise AssertionError(f"PaneStream: pane {p} keeps events but is not open")
                if not np.array_equal(np.lexsort((ev.seq, ev.t)), np.arange(len(ev.t))):
                    raise AssertionError(f"PaneStream: pane {p}'s events are not sorted")
                if b is not None and self._shape.start_time + (p + 1) * self._g <= b:
                    raise AssertionError(f"PaneStream: pane {p} is past the bound {b} but open")
                if repr(self._fold_events(p, ev)) != repr(rec[1]):
                    raise AssertionError(f"PaneStream: pane {p}'s partials are not its events'")
            elif p in self._open:
                raise AssertionError(f"PaneStream: open pane {p} holds no events")
        lo = span[0] if span is not None else None
        for k in keys:
            level, i = k & mask, k >> _LEVEL_BITS
            if level == 0:
                continue
            if level > self._top:
                raise AssertionError(f"PaneStream: node ({level}, {i}) above the top level")
            if lo is not None and (i << level) < lo:
                continue  # covers dead panes: never used whole again
            under = [p for p in panes if p >> level == i]
            if not under:
                raise AssertionError(f"PaneStream: node ({level}, {i}) over no stored pane")
            rec = self._nodes.get(k)
            if rec[0] == _SPLIT:
                continue
            got: list[tuple[Any, ...]] = []
            self._collect(level - 1, 2 * i, got)
            self._collect(level - 1, 2 * i + 1, got)
            want = [got[0][j] for j in range(len(self._monoids))]
            for x in got[1:]:
                want = [m.combine(a, y) for m, a, y in zip(self._monoids, want, x, strict=True)]
            if repr(tuple(want)) != repr(rec[1]):
                raise AssertionError(f"PaneStream: node ({level}, {i}) holds {rec[1]}, not {want}")
        for p in panes:
            for level in range(1, self._top + 1):
                if not self._nodes.contains(node_key(level, p >> level)):
                    raise AssertionError(f"PaneStream: pane {p} has no node at level {level}")
        if self._values is not None:
            self._values._check(panes)
