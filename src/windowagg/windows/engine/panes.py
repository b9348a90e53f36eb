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

import atexit
from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Mapping, Sequence
from functools import lru_cache, reduce
from itertools import repeat
from math import gcd
from operator import add, sub
from typing import Any, ClassVar

import numpy as np

from windowagg import codec
from windowagg._backend import resolve_backend
from windowagg.errors import AggregationError, CodecError
from windowagg.monoids.base import declared_kind
from windowagg.monoids.builtins import Max, Min, Sum
from windowagg.windows.engine.assign import Windows
from windowagg.windows.engine.clock import WatermarkClock
from windowagg.windows.engine.covers import LEVEL_BITS, cover, covers, fold_covers
from windowagg.windows.engine.emit import columns
from windowagg.windows.engine.layout import Layout
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
    concat_events,
    decode_events,
    encode_events,
    sorted_events,
    take_events,
)
from windowagg.windows.engine.shapes import Shape
from windowagg.windows.engine.sizes import at_row, empty_answer, size_label, sized_aggs, spread
from windowagg.windows.engine.state import (
    Factory,
    Plan,
    Reused,
    aggregation_message,
    plan,
    query_slices,
)
from windowagg.windows.engine.values import VALUE_TAG, Values, is_value_key, value_key

__all__ = ["PaneStream", "fits", "node_key"]

#: Micro-batches of up to this many events of a commutative plan take the plain-Python
#: path (:meth:`PaneStream._step_small`); larger ones numpy's.
_SMALL = 256

#: Declared kinds (:func:`~windowagg.monoids.base.declared_kind`) whose ``lower`` is the
#: identity and whose partial of a float column is a number: a pane's partial is then the
#: answer of the numpy-native slice verb (:func:`~.state.query_slices`), one call for all
#: the panes of a micro-batch.
_NUMERIC_PARTIAL: frozenset[str] = frozenset({"sum", "max", "min", "count"})

#: How the float partials of a numeric kind merge into a window's value, with the type
#: every partial must have: sum, max and min as themselves, counts summed (the slice verb
#: of :func:`~.state.query_slices`; ``lower`` is the identity for all four).
_MERGE: dict[str, tuple[Any, type]] = {
    "sum": (Sum(), float),
    "max": (Max(), float),
    "min": (Min(), float),
    "count": (Sum(), int),
}


def fits(shape: Shape, p: Plan, emit: str = "watermark") -> bool:
    """Whether *shape* and the planned aggregations take the pane layout: hopping or
    tumbling windows, every aggregation a monoid answered without the time (decayed
    aggregations, answered as of each window's end, keep the event log) or an exact
    quantile (the :class:`~.values.Values` component: one cursor per size). O(aggregations)."""
    timed = any(g.timed for g in p.groups)
    return shape.grid and emit == "watermark" and not timed


def _fold(m: Any, col: np.ndarray, lo: np.ndarray, hi: np.ndarray, make: Factory) -> list[Any]:
    """The partial of ``col[lo[j]:hi[j]]`` (non-empty, in order) for every j. O(n)."""
    kind = declared_kind(m)
    if kind in _NUMERIC_PARTIAL and col.dtype != object:  # the slice verb's answer
        buffer = np.int64 if kind == "count" else np.float64
        out: list[Any] = query_slices(make(m), col, lo, hi, buffer).tolist()
        return out
    return _fold_lists(m, col.tolist(), lo.tolist(), hi.tolist(), False)


def _fold_lists(
    m: Any, vals: list[Any], lo: list[int], hi: list[int], numeric: bool = True
) -> list[Any]:
    """:func:`_fold` over plain lists, the same answers: a numeric kind over floats
    (*numeric*) by the kind's own code, as the slice verb (``0.0 + -0.0`` is ``0.0``), any
    other monoid, or values that are not floats, by its lift and combine. O(n)."""
    kind = declared_kind(m)
    if numeric and kind in _NUMERIC_PARTIAL:  # the kind's own code, as the native slice verb's
        return _NUMERIC_FOLD[kind](vals, lo, hi)  # type: ignore[no-any-return]
    lift, comb = m.lift, m.combine  # bound methods: hot loop
    res = []
    for a, b in zip(lo, hi, strict=True):
        acc = lift(vals[a])
        for i in range(a + 1, b):
            acc = comb(acc, lift(vals[i]))
        res.append(acc)
    return res


def _segments(vals: list[Any], lo: list[int], hi: list[int]) -> list[list[Any]]:
    """``vals[lo[j]:hi[j]]`` for every j, in one C-level pass. O(n)."""
    return list(map(vals.__getitem__, map(slice, lo, hi)))


#: From this many panes touched by a small micro-batch, its numeric kinds are folded by the
#: slice verbs (:func:`_fold`: one call per aggregation, the same answers) rather than pane
#: by pane in Python (:func:`_fold_lists`).
_FOLD_ARRAYS = 32

#: Partials of one float each (a micro-batch with one event per pane) by declared kind, as
#: :data:`_NUMERIC_FOLD` answers them one by one: the values themselves, ``0.0 + x`` (a sum
#: from the identity: ``-0.0`` becomes ``0.0``), 1.
_SINGLE: dict[str, Any] = {
    "max": lambda col: col,
    "min": lambda col: col,
    "sum": lambda col: [0.0 + x for x in col],
    "count": lambda col: [1] * len(col),
}

#: Partials of ``vals[lo[j]:hi[j]]`` for every j (non-empty runs of finite floats) by
#: declared kind, each kind's own code mapped over the runs (no Python step per run): a
#: sum left to right from the identity, as the slice verb (``0.0 + -0.0`` is ``0.0``; not
#: ``sum()``, which may compensate its rounding from Python 3.12), max and min as the
#: built-ins (ties: the first), a count as the run's length.
_NUMERIC_FOLD: dict[str, Any] = {
    "sum": lambda vals, lo, hi: list(
        map(reduce, repeat(add), _segments(vals, lo, hi), repeat(0.0))
    ),
    "max": lambda vals, lo, hi: list(map(max, _segments(vals, lo, hi))),
    "min": lambda vals, lo, hi: list(map(min, _segments(vals, lo, hi))),
    "count": lambda vals, lo, hi: list(map(sub, hi, lo)),
}


#: The combine of each numeric kind, inlined over two partials' item j: the built-ins'
#: answers whenever both are values (``Max``/``Min`` keep the left one on ties and return
#: the other when ``<`` says so; ``Sum``/``Count`` add); a partial that is None or values
#: that do not compare raise, and the monoids' own combine answers instead.
_INLINE: dict[str, str] = {
    "sum": "x[{j}] + y[{j}]",
    "count": "x[{j}] + y[{j}]",
    "max": "(y[{j}] if x[{j}] < y[{j}] else x[{j}])",
    "min": "(y[{j}] if y[{j}] < x[{j}] else x[{j}])",
}


def _inline_combine(kinds: Sequence[str | None]) -> Any:
    """One function combining two tuples of partials of the numeric *kinds* item by item
    (:data:`_INLINE`), or None when a kind is another (or there is none): a node refresh
    is then one call, not one per aggregation. Built from the fixed templates above only.

    >>> f = _inline_combine(["max", "sum", "count"])
    >>> f((2.0, 1.5, 3), (5.0, 0.25, 1))
    (5.0, 1.75, 4)
    """
    if not kinds or any(k not in _INLINE for k in kinds):
        return None
    return _inline_compiled(tuple(kinds))


@lru_cache(maxsize=64)
def _inline_compiled(kinds: tuple[str, ...]) -> Any:
    """:func:`_inline_combine`'s function for *kinds* (all in :data:`_INLINE`), compiled
    once per process: a stream restores a key's state every micro-batch (Spark: every key,
    twice per restore), and ``eval`` cost ~0.3 ms each time. O(len(kinds)) the first time."""
    body = ", ".join(_INLINE[k].format(j=j) for j, k in enumerate(kinds))
    return eval(f"lambda x, y: ({body},)")  # the fixed templates above: no input reaches it


def _runs(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Start and end (exclusive) of every run of equal values of sorted *keys*. O(n)."""
    n = len(keys)
    if not n:
        return np.empty(0, np.int64), np.empty(0, np.int64)
    head = np.ones(n, dtype=bool)
    head[1:] = keys[1:] != keys[:-1]
    lo = np.flatnonzero(head).astype(np.int64)
    return lo, np.append(lo[1:], n).astype(np.int64)


def _backend_make(native: bool) -> Factory:
    """The default aggregator, ``TwoStacksLite(monoid)``, on the backend *native* says
    (named: the default is not read again)."""
    from windowagg.fifo import TwoStacksLite

    if native:
        return lambda monoid: TwoStacksLite(monoid, backend="native")
    return lambda monoid: TwoStacksLite(monoid, backend="python")


#: The default aggregators by backend (the streams ask only their ``query_slices``, which
#: neither reads nor changes them), shared by every pane stream of the process: Spark's
#: handler restores every key's state, a new stream, every micro-batch, and making three
#: of them per key was ~3% of its time. A stream resolves the default backend once, at
#: construction, and takes that backend's table.
_SHARED_MAKE = {native: Reused(_backend_make(native), limit=256) for native in (True, False)}


@atexit.register
def _forget_shared() -> None:
    """Drop the shared aggregators before the interpreter unloads the compiled core
    (which reports the objects still alive then as leaks)."""
    for shared in _SHARED_MAKE.values():
        shared.forget()


_LEVEL_BITS = LEVEL_BITS
#: A store row (:meth:`PaneStream.store_rows`) holds the pieces of ``2**_ROW_BITS`` panes.
_ROW_BITS = 5
#: Up to this many window numbers (or top nodes) are walked one by one; a wider span (events
#: of a key far apart in time) is enumerated from the stored panes instead.
_WALK = 1 << 16
#: A node whose combine raised (a user monoid): queries ask its two children instead, so
#: that the error is raised, naming the window, only by a window that needs it.
_SPLIT = "x"

#: :meth:`PaneStream.config` -> its encoding (:func:`_encoded_config`), shared by the
#: states of a query: Spark's handler restores every key's state, a new object, every
#: micro-batch, and encoding the configuration was a tenth of a restore's cost
_CONFIGS: dict[tuple[Any, str], codec.Encoded] = {}
#: :data:`_CONFIGS` is emptied when it holds this many (a process runs a few queries)
_CONFIGS_MAX = 64


def _encoded_config(config: tuple[Any, ...]) -> codec.Encoded:
    """``codec.encoded(config)``, made once per configuration in the process (one that
    holds an unhashable value: every time). Known by the configuration and its ``repr``
    (``1 == 1.0 == True``, but their bytes differ). O(configuration), a tenth of the
    encoding's when known."""
    try:
        key = (config, repr(config))
        got = _CONFIGS.get(key)
    except TypeError:
        return codec.encoded(config)
    if got is None:
        if len(_CONFIGS) >= _CONFIGS_MAX:
            _CONFIGS.clear()
        got = _CONFIGS[key] = codec.encoded(config)
    return got


def node_key(level: int, index: int) -> int:
    """The piece key of node (*level*, *index*); a pane's own piece is ``node_key(0, p)``.

    >>> node_key(0, 5), node_key(3, 2), node_key(0, -1)
    (320, 131, -64)
    """
    return (index << _LEVEL_BITS) | level


def store_rows(keys: np.ndarray) -> np.ndarray:
    """The store row of each pane piece key: the row of the piece's first pane, rows of
    ``2**_ROW_BITS`` panes (a node of level ``L`` starts at pane ``index << L``, a pane's
    values at the pane itself): what one micro-batch changes (the panes its events land
    in, their ancestors, the panes it drops) falls in a few rows. O(len(keys)).

    >>> store_rows(np.array([node_key(0, 5), node_key(0, 40), node_key(3, 4), 40 << 6 | 63]))
    array([0, 1, 1, 1])
    """
    keys = np.asarray(keys, dtype=np.int64)
    level = keys & ((1 << _LEVEL_BITS) - 1)
    index = keys >> _LEVEL_BITS
    value = level == VALUE_TAG
    first = np.where(value, index, index << np.where(value, 0, level))
    return first >> _ROW_BITS


#: Up to this many windows to emit, a micro-batch walks their covers in plain Python
#: (:meth:`PaneStream._close_walk`); more take numpy and the slice verbs.
_FEW = 48


class PaneStream(Layout):
    """One key's hopping/tumbling windows over pane partials (see the module docstring).

    Same verbs, output and revisions as the event log of :mod:`.stream`;
    :class:`~.stream.KeyStream` holds one of the two.
    """

    __slots__ = (
        "_aggs",
        "_clock",
        "_cols",
        "_combine_all",
        "_combines",
        "_config_bytes",
        "_context",
        "_deltas",
        "_emitted_wm",
        "_g",
        "_inline",
        "_judge",
        "_lateness",
        "_make",
        "_merges",
        "_monoids",
        "_nodes",
        "_ooo",
        "_open",
        "_plan",
        "_raw",
        "_revs",
        "_s",
        "_scalar",
        "_seq",
        "_shape",
        "_sizes",
        "_span",
        "_top",
        "_values",
        "_w",
    )

    #: Slots set at construction only (the configuration and what it derives): a step's
    #: :func:`~.records.atomic` does not keep them (a micro-batch per key keeps the rest).
    _FIXED: ClassVar[frozenset[str]] = frozenset(
        {
            "_aggs", "_cols", "_combine_all", "_combines", "_context", "_deltas", "_g",
            "_inline", "_judge", "_lateness", "_make", "_merges", "_monoids", "_ooo",
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
        self._combines = tuple(m.combine for m in self._monoids)  # bound: _ancestors' loop
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
        return self._nodes.raw(key, self._encode)

    def pieces(self) -> dict[int, bytes]:
        """Every stored piece (what a store holds for this key). O(stored pieces)."""
        out = {k: self.piece(k) for k in self._tree_keys()}
        if self._values is not None:
            out.update({k: self.piece(k) for k in map(value_key, self._values.stored())})
        return dict(sorted(out.items()))

    def _tree_keys(self) -> list[int]:
        """The stored keys of the tree's nodes (not the values' pieces), ascending."""
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
        """Refresh the nodes above the touched panes (ascending), level by level, and widen
        the span: one ``get_many`` per level and side, the combine inlined for
        numeric plans (the monoids' own where it raises; a split node where they raise
        too). O(q log W) combines."""
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
        span = self._span
        lo_p, hi_p = touched[0], touched[-1]
        self._span = (lo_p, hi_p) if span is None else (min(span[0], lo_p), max(span[1], hi_p))

    def _siblings(self, touched: list[int]) -> list[int]:
        """The keys of the nodes :meth:`_ancestors` reads and does not write first: at
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
        return out

    def _parts(self, k: int) -> list[tuple[Any, ...]]:
        """The partials of window *k*'s nodes, in order (empty: no pane). O(log W)."""
        return self._parts_at(k * self._s, self._w)

    def _parts_at(self, a: int, width: int) -> list[tuple[Any, ...]]:
        """The partials of the nodes over the panes ``a .. a + width - 1``, in order
        (empty: no pane). O(log W)."""
        out: list[tuple[Any, ...]] = []
        for level, i in cover(a, a + width - 1, self._top):
            self._collect(level, i, out)
        return out

    def _covered(self, k: int) -> bool:
        """Whether window *k* holds a stored pane. O(log W) look-ups."""
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
                    self._drop_range(span, last_dead, every)
                else:
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
        events (none past the bound) and their fold, and are listed as open."""
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
