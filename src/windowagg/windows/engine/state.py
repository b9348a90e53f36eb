"""State: the aggregators one key's windows are computed by, and the verbs that drive them.

=================  ==========================================================================
aggregators        one FIFO aggregator per monoid aggregation (``fifo.TwoStacksLite`` by
                   default; ``count`` over a zero column); exact quantiles (``pNN``,
                   ``median``) of a column share one order-statistics structure and one
                   pass (:mod:`.ranks`)
ordering           admission sorts one key's events by time, and every shape's windows are
                   slices ``[lo, hi)`` of them with non-decreasing bounds: an in-order
                   aggregator computes them all, each event inserted once, evicted once
one slide          per aggregation one ``slide(values, evict=counts, out=buffer)`` over
                   the sorted events: the first window ending at each event is the
                   aggregator's content right after that event is inserted (the
                   evictions are scheduled so), which covers every per-event, count and
                   session window and every hopping window that a new event opens
the rest           a window that no new event opens (it ends after the same event as the
                   one before it, holding fewer events: hopping windows past a key's last
                   event or across a gap in time) is answered by a second aggregator
                   over those windows' slices: per window insert what entered, evict
                   what left, query (:func:`slide_slices`)
array verbs        used when the aggregator has them (the compiled core, and every Python
                   FIFO class); otherwise the same operations one call at a time
=================  ==========================================================================

Nothing here picks an algorithm by size or by shape: every window goes the same way.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any, NamedTuple

import numpy as np

from windowagg.windows.engine.assign import Windows
from windowagg.windows.engine.ranks import slide_select

__all__ = [
    "Group",
    "Plan",
    "evaluate",
    "plan",
    "quantile_fraction",
    "schedule",
    "slide",
    "slide_slices",
    "slide_windows",
]

_QUANTILE = re.compile(r"^p(\d+)(?:\.(\d+))?$")


def quantile_fraction(kind: str | None) -> tuple[int, int] | None:
    """``"p95"`` -> ``(95, 100)``, ``"p99.9"`` -> ``(999, 1000)``; None if not a quantile. O(1).

    >>> quantile_fraction("p99.9"), quantile_fraction("median"), quantile_fraction("max")
    ((999, 1000), (1, 2), None)
    """
    if kind is None:
        return None
    if kind == "median":
        return (1, 2)
    m = _QUANTILE.match(kind)
    if not m:
        return None
    whole, frac = m.group(1), m.group(2) or ""
    num, den = int(whole + frac), 100 * 10 ** len(frac)
    if not 0 < num < den:
        raise ValueError(f"quantile {kind!r} must lie strictly between p0 and p100")
    return num, den


class Group(NamedTuple):
    """One aggregation computed by its own aggregator."""

    column: str | None
    alias: str
    monoid: Any
    buffer: Any = None
    """float64 / int64 when the answers go straight into a numpy buffer (``out=``)."""


#: Built-in aggregations answering a float for every non-empty window of float values:
#: written straight into float64 ``out`` buffers (``count`` into int64).
_NUMERIC = frozenset({"sum", "max", "min", "mean"})


class Plan(NamedTuple):
    """Which aggregator or order-statistics structure computes each aggregation alias."""

    groups: list[Group]
    quantiles: dict[str, list[tuple[str, int, int]]]
    """Per column: ``(alias, num, den)`` of its exact quantiles."""


def plan(aggs: Sequence[Any]) -> Plan:
    """Group *aggs* (``windowagg.spark.spec.Agg``-like: alias, monoid, column, kind). O(a).

    One aggregator per monoid aggregation (the built-ins keep their own fast paths: two
    aggregators of ``Max`` and ``Sum`` run twice as fast in Python as one over
    ``Composite(Max, Sum)``, and natively each is a numeric adapter over the float64
    buffer); one order-statistics structure per column for all its quantiles.
    """
    groups: list[Group] = []
    quantiles: dict[str, list[tuple[str, int, int]]] = {}
    for a in aggs:
        q = quantile_fraction(a.kind)
        if q is not None:
            if a.column is None:
                raise ValueError(f"quantile {a.alias!r} needs a column")
            quantiles.setdefault(a.column, []).append((a.alias, q[0], q[1]))
            continue
        buffer: Any = None
        if a.kind == "count" and a.dtype == "bigint":
            buffer = np.int64
        elif a.kind in _NUMERIC and a.dtype == "double":
            buffer = np.float64
        groups.append(Group(a.column, a.alias, a.monoid, buffer))
    return Plan(groups, quantiles)


Factory = Callable[[Any], Any]


def _default_factory(monoid: Any) -> Any:
    from windowagg.fifo import TwoStacksLite

    return TwoStacksLite(monoid)


def slide(agg: Any, values: np.ndarray, evict: np.ndarray, buffer: Any = None) -> Any:
    """FIFO ``agg.slide(values, evict=counts)``: per step evict ``counts[i]`` entries, insert
    ``values[i]``, record ``query()``; else the same one call at a time. O(1) amortized/step.

    With *buffer* (a numpy dtype) the answers are written into a new array of that type.
    """
    verb = getattr(agg, "slide", None)
    if verb is not None:
        if buffer is not None:
            return verb(values, evict, np.empty(len(values), dtype=buffer))
        return list(verb(values, evict))
    drop, insert, query = agg.bulk_evict, agg.insert, agg.query  # bound methods: hot loop
    out = []
    for v, e in zip(values.tolist(), evict.tolist(), strict=True):
        if e:
            drop(e)
        insert(v)
        out.append(query())
    return out if buffer is None else np.asarray(out, dtype=buffer)


def schedule(lo: np.ndarray, hi: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """The eviction counts of the one slide, and which windows it answers. O(n + windows).

    Window j is answered by the slide when it is the first window ending after event
    ``hi[j] - 1`` or holds the same events as that first one; its answer is step
    ``hi[j] - 1``. Returns ``(evict, answered)``.
    """
    r = len(lo)
    evict = np.zeros(n, dtype=np.int64)
    if not r:
        return evict, np.zeros(0, dtype=bool)
    first = np.ones(r, dtype=bool)
    first[1:] = hi[1:] != hi[:-1]
    f_lo, f_hi = lo[first], hi[first]
    # evict just before inserting event hi - 1, down to the first window's lo (lo <= hi - 1)
    evict[f_hi - 1] = np.diff(f_lo, prepend=0)
    answered = lo == f_lo[np.cumsum(first) - 1]
    return evict, answered


def slide_slices(agg: Any, values: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> list[Any]:
    """``query()`` of a FIFO aggregator holding ``values[lo[j]:hi[j]]``, for every window j.

    ``lo`` and ``hi`` are non-decreasing: per window, insert the events that entered
    (``bulk_insert`` of a buffer slice when the aggregator has array verbs), evict the
    ones that left (``bulk_evict``), query. Each event is inserted and evicted at most
    once: O(n + windows) aggregator operations (three calls per window).
    """
    verbs = getattr(agg, "slide", None) is not None and hasattr(agg, "bulk_insert")
    source: Any = values if verbs else values.tolist()
    drop, query, insert = agg.bulk_evict, agg.query, agg.insert  # bound methods: hot loop
    insert_many = agg.bulk_insert if verbs else None
    out = []
    cur_lo = cur_hi = 0
    for a, b in zip(lo.tolist(), hi.tolist(), strict=True):
        if a >= cur_hi:  # disjoint from what is held: skip the events in between
            if cur_hi > cur_lo:
                drop(cur_hi - cur_lo)
            cur_lo = cur_hi = a
        if b > cur_hi:
            if insert_many is not None:
                insert_many(source[cur_hi:b])
            else:
                for i in range(cur_hi, b):
                    insert(source[i])
            cur_hi = b
        if a > cur_lo:
            drop(a - cur_lo)
            cur_lo = a
        out.append(query())
    return out


def slide_windows(
    make: Callable[[], Any], values: np.ndarray, lo: np.ndarray, hi: np.ndarray, buffer: Any
) -> Any:
    """The aggregate of ``values[lo[j]:hi[j]]`` for every window j (non-decreasing bounds).

    One :func:`slide` over the events answers every window that is the first to end after
    its last event (:func:`schedule`); the others (hopping windows past a key's last event
    or across a gap in time: no new event opens them) are answered by a second
    aggregator from *make* over their slices (:func:`slide_slices`). O(n + windows)
    aggregator operations, O(1) amortized each.
    """
    r = len(lo)
    n = int(hi[-1]) if r else 0  # events after the last window's end change nothing
    evict, answered = schedule(lo, hi, n)
    steps = slide(make(), values[:n], evict, buffer)
    at = hi[answered] - 1
    rest = np.flatnonzero(~answered)
    others = slide_slices(make(), values, lo[rest], hi[rest]) if len(rest) else []
    if buffer is not None:
        res = np.empty(r, dtype=buffer)
        res[answered] = steps[at]
        res[rest] = np.asarray(others, dtype=buffer)
        return res
    out: list[Any] = [None] * r
    for j, i in zip(np.flatnonzero(answered).tolist(), at.tolist(), strict=True):
        out[j] = steps[i]
    for j, v in zip(rest.tolist(), others, strict=True):
        out[j] = v
    return out


def evaluate(
    p: Plan,
    windows: Windows,
    values: dict[str, np.ndarray],
    factory: Factory | None = None,
) -> dict[str, Any]:
    """Every aggregation of every window: ``{alias: one value per window}``.

    *values* are the time-sorted events' columns. Per aggregation
    :func:`slide_windows`; per column with quantiles :func:`~.ranks.slide_select`.
    O(n + windows) aggregator operations, O(1) amortized each.
    """
    make = factory or _default_factory
    lo, hi = windows.lo, windows.hi
    n = len(windows.keys)  # one key per sorted event
    out: dict[str, Any] = {}
    for g in p.groups:
        col = values[g.column] if g.column is not None else np.zeros(n, dtype=np.float64)
        out[g.alias] = slide_windows(partial(make, g.monoid), col, lo, hi, g.buffer)
    for column, qs in p.quantiles.items():
        cols = slide_select(values[column], lo, hi, [(a, b) for _, a, b in qs])
        for (alias, _, _), c in zip(qs, cols, strict=True):
            out[alias] = c
    return out
