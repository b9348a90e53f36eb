"""The pane layout's folds and keys: a micro-batch's runs folded into pane partials, the numeric kinds' combines inlined, the piece keys and the process-wide caches.

=================  ==========================================================================
component          the module-level helpers of :class:`~.panes.PaneStream`, split from
                   :mod:`.panes` (:mod:`.pane_tree` and :mod:`.pane_windows` use them too)
folds              :func:`_fold` (numpy: one slice verb per numeric kind, else lift and
                   combine) and :func:`_fold_lists` (plain lists, the same answers): the
                   partial of every run ``col[lo[j]:hi[j]]`` of a micro-batch's events,
                   one run per touched pane; :func:`_runs` finds the runs
combines           :func:`_inline_combine`: one compiled function combining two tuples of
                   partials of numeric kinds (sum, max, min, count) item by item; where it
                   raises, the callers ask the monoids' own combine
keys               :func:`node_key` (``index << 6 | level``) and :func:`store_rows` (a
                   store row per ``2**5`` panes)
caches             per process: the default aggregators by backend (:data:`_SHARED_MAKE`,
                   dropped at exit) and the encoded configurations (:func:`_encoded_config`)
ordering           a run is folded in its order (time, then arrival)
operator needs     monoids (lift, combine); the numeric kinds known by their declared kind
time               O(n) per fold of n events; O(1) per key; a configuration encoded once
space              at most 64 compiled combines and 64 encoded configurations per process
paper              panes: Li et al., SIGMOD Record 2005
=================  ==========================================================================

Examples
--------
>>> from windowagg.monoids.builtins import Max
>>> _fold_lists(Max(), [3.0, 1.0, 4.0, 1.0, 5.0], [0, 2], [2, 5])  # runs [0, 2), [2, 5)
[3.0, 5.0]
>>> node_key(1, 3), store_rows(np.array([node_key(0, 31), node_key(0, 32)])).tolist()
(193, [0, 1])
"""

from __future__ import annotations

import atexit
from collections.abc import Sequence
from functools import lru_cache, reduce
from itertools import repeat
from operator import add, sub
from typing import Any

import numpy as np

from windowagg import codec
from windowagg.monoids.base import declared_kind
from windowagg.monoids.builtins import Max, Min, Sum
from windowagg.windows.engine.covers import LEVEL_BITS
from windowagg.windows.engine.state import Factory, Reused, query_slices
from windowagg.windows.engine.values import VALUE_TAG

__all__ = ["node_key", "store_rows"]

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
