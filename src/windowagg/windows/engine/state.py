"""State: the aggregators one key's windows are computed by, and the verbs that drive them.

=================  ==========================================================================
aggregators        one aggregator per monoid aggregation (``count`` over a zero column);
                   exact quantiles (``pNN``, ``median``) of a column share one
                   order-statistics multiset and one pass (:mod:`.ranks`)
ordering           admission sorts one key's events by time, and every shape's windows are
                   slices ``[lo, hi)`` of them with non-decreasing bounds: a FIFO
                   aggregator (``fifo.TwoStacksLite`` by default) computes them all, each
                   event inserted once and evicted once
per shape          per-event and count windows: one ``slide(values, evict=counts)`` per
                   aggregation (per event: evict what left, insert it, record
                   ``query()``); hopping windows and sessions: per window insert the
                   events that entered, evict those that left, ``query()``
array verbs        used when the aggregator has them (the compiled core, and the Python
                   classes once they gain them); otherwise the same operations one call
                   at a time, with the same results
=================  ==========================================================================

Nothing here picks an algorithm by size: the shape alone decides slide or range query.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import numpy as np

from windowagg.windows.engine.assign import Windows
from windowagg.windows.engine.ranks import slide_select

__all__ = ["Group", "Plan", "evaluate", "plan", "quantile_fraction"]

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
    """The aggregations one aggregator computes (over one value column; ``composite``: its
    results are tuples, one element per alias)."""

    column: str | None
    aliases: list[str]
    monoid: Any
    composite: bool
    buffer: Any = None
    """float64 / int64 when the answers go straight into a numpy buffer (``out=``)."""


#: Built-in aggregations answering a float for every non-empty window of float values:
#: written straight into float64 ``out`` buffers (``count`` into int64).
_NUMERIC = frozenset({"sum", "max", "min", "mean"})


class Plan(NamedTuple):
    """Which aggregator or multiset computes each aggregation alias."""

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
        else:
            buffer: Any = None
            if a.kind == "count" and a.dtype == "bigint":
                buffer = np.int64
            elif a.kind in _NUMERIC and a.dtype == "double":
                buffer = np.float64
            groups.append(Group(a.column, [a.alias], a.monoid, False, buffer))
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
    return out


def slide_slices(agg: Any, values: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> list[Any]:
    """``query()`` of a FIFO aggregator holding ``values[lo[j]:hi[j]]``, for every window j.

    ``lo`` and ``hi`` are non-decreasing: per window, insert the events that entered
    (``bulk_insert`` of a buffer slice when the aggregator has array verbs), evict the
    ones that left (``bulk_evict``), query. Each event is inserted and evicted once:
    O(n + windows) aggregator operations.
    """
    verbs = getattr(agg, "slide", None) is not None and hasattr(agg, "bulk_insert")
    source: Any = values if verbs else values.tolist()
    drop, query = agg.bulk_evict, agg.query  # bound methods: hot loop
    insert_many = agg.bulk_insert if verbs else None
    insert = agg.insert
    out = []
    cur_lo = cur_hi = 0
    for a, b in zip(lo.tolist(), hi.tolist(), strict=True):
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


def evaluate(
    p: Plan,
    windows: Windows,
    values: dict[str, np.ndarray],
    step_lo: np.ndarray | None,
    factory: Factory | None = None,
) -> dict[str, Any]:
    """Every aggregation of every window: ``{alias: one value per window}``.

    *values* are the time-sorted events' columns. *step_lo* is given for per-event and
    count windows: after inserting sorted event i the FIFO aggregator holds events
    ``step_lo[i] .. i`` (one ``slide`` call per aggregation), and window j is its content
    after event ``hi[j] - 1``. Other shapes slide over the windows' slices
    (:func:`slide_slices`). O(n + windows) aggregator operations, each O(1) amortized.
    """
    make = factory or _default_factory
    n = len(windows.keys)  # one key per sorted event
    out: dict[str, Any] = {}
    if step_lo is not None:
        evict = np.diff(step_lo, prepend=0)
        last = windows.hi - 1  # the step after which window j is the content
    for g in p.groups:
        col = values[g.column] if g.column is not None else np.zeros(n, dtype=np.float64)
        res: Any
        if step_lo is not None:
            steps = slide(make(g.monoid), col, evict, g.buffer)
            if isinstance(steps, np.ndarray):
                res = steps[last]
            else:
                res = [steps[i] for i in last.tolist()]
        else:
            res = slide_slices(make(g.monoid), col, windows.lo, windows.hi)
            if g.buffer is not None:
                res = np.asarray(res, dtype=g.buffer)
        if g.composite:
            for j, alias in enumerate(g.aliases):
                out[alias] = [r[j] for r in res]
        else:
            out[g.aliases[0]] = res
    for column, qs in p.quantiles.items():
        cols = slide_select(values[column], windows.lo, windows.hi, [(a, b) for _, a, b in qs])
        for (alias, _, _), c in zip(qs, cols, strict=True):
            out[alias] = c
    return out
