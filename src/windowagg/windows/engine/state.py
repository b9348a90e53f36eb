"""State: the aggregators one key's windows are computed by, and the verbs that drive them.

=================  ==========================================================================
aggregators        one FIFO aggregator per monoid aggregation (``fifo.TwoStacksLite`` by
                   default; ``count`` over a zero column); exact quantiles (``pNN``,
                   ``median``) of a column share one order-statistics structure and one
                   pass (:mod:`.ranks`)
ordering           admission sorts one key's events by time, and every shape's windows are
                   slices ``[lo, hi)`` of them with non-decreasing bounds: an in-order
                   aggregator computes them all, each event inserted once, evicted once
slides             per aggregation ``slide(values, evict=counts, out=buffer)`` over the
                   sorted events: the first window ending after each event is the
                   aggregator's content right after that event is inserted (the
                   evictions are scheduled so), which covers every per-event, count and
                   session window and every hopping window that a new event opens; a
                   second slide answers the last window ending after each event (a
                   hopping window that only lost events)
the rest           the windows between those two (hopping windows past a key's last event,
                   or across a gap of more than two slides) are answered by a third
                   aggregator over their slices: per window insert what entered, evict
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
    "Slides",
    "evaluate",
    "evictions",
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
    probes: Sequence[tuple[str | None, Any]] = ()
    """``(column, lift)`` of the aggregations whose monoid may refuse a finite float (see
    :func:`~windowagg.windows.engine.admission.admit`)."""


#: Built-in aggregations whose monoid takes every finite float: admission does not try
#: their ``lift`` (the others, user monoids and ``geomean`` / ``argmax`` ..., it does).
_TAKES_ANY_FLOAT = frozenset({"sum", "max", "min", "mean", "count"})


def plan(aggs: Sequence[Any]) -> Plan:
    """Group *aggs* (``windowagg.spark.spec.Agg``-like: alias, monoid, column, kind). O(a).

    One aggregator per monoid aggregation (the built-ins keep their own fast paths: two
    aggregators of ``Max`` and ``Sum`` run twice as fast in Python as one over
    ``Composite(Max, Sum)``, and natively each is a numeric adapter over the float64
    buffer); one order-statistics structure per column for all its quantiles.
    """
    groups: list[Group] = []
    quantiles: dict[str, list[tuple[str, int, int]]] = {}
    probes: list[tuple[str | None, Any]] = []
    for a in aggs:
        q = quantile_fraction(a.kind)
        kind = a.kind or ""
        if q is None and kind not in _TAKES_ANY_FLOAT and not kind.startswith("approx_p"):
            probes.append((a.column, a.monoid.lift))
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
    return Plan(groups, quantiles, probes)


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


def evictions(lo: np.ndarray, hi: np.ndarray, n: int) -> np.ndarray:
    """Eviction counts for one slide over n events answering windows with distinct ends.

    After step ``hi[j] - 1`` (its evictions first, then the insert) the aggregator holds
    exactly events ``lo[j] .. hi[j] - 1``; *lo* and *hi* are non-decreasing, *hi* strictly
    increasing, ``lo < hi``. O(n).
    """
    evict = np.zeros(n, dtype=np.int64)
    evict[hi - 1] = np.diff(lo, prepend=0)
    return evict


def slide_slices(agg: Any, values: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> list[Any]:
    """``query()`` of a FIFO aggregator holding ``values[lo[j]:hi[j]]``, for every window j.

    ``lo`` and ``hi`` are non-decreasing. Per window: evict the events that left (all of
    them when the window starts after what is held), insert the ones that entered
    (``bulk_insert`` of a buffer slice when the aggregator has array verbs; never the
    events between two disjoint windows), query. Each event is inserted and evicted at
    most once: O(n + windows) aggregator operations, three calls per window.
    """
    r = len(lo)
    if not r:
        return []
    prev_lo = np.concatenate([[0], lo[:-1]])
    prev_hi = np.concatenate([[0], hi[:-1]])
    evict = (np.minimum(lo, prev_hi) - prev_lo).tolist()  # all that is held when disjoint
    start = np.maximum(prev_hi, lo).tolist()
    stop = hi.tolist()
    verbs = getattr(agg, "slide", None) is not None and hasattr(agg, "bulk_insert")
    source: Any = values if verbs else values.tolist()
    drop, query, insert = agg.bulk_evict, agg.query, agg.insert  # bound methods: hot loop
    insert_many = agg.bulk_insert if verbs else None
    out = []
    for e, a, b in zip(evict, start, stop, strict=True):
        if e:
            drop(e)
        if b > a:
            if insert_many is not None:
                insert_many(source[a:b])
            else:
                for i in range(a, b):
                    insert(source[i])
        out.append(query())
    return out


class Slides(NamedTuple):
    """How one key's windows are answered (the same for every aggregation of the key)."""

    n: int
    """Events the slides read (those up to the last window's end)."""
    passes: list[tuple[np.ndarray, np.ndarray, np.ndarray]]
    """Per slide: the eviction counts, the windows it answers, and their steps."""
    rest: np.ndarray
    """Windows answered by :func:`slide_slices`."""


def schedule(lo: np.ndarray, hi: np.ndarray) -> Slides:
    """The slides that answer windows ``[lo[j], hi[j])`` (non-decreasing bounds). O(n + r).

    Windows ending after the same event form a group (their ``lo`` grow). One slide
    answers every group's first window, a second its last (and any window with the same
    events as one of them); the middle ones (hopping windows past a key's last event, or
    across a gap of more than two slides) are left to :func:`slide_slices`.
    """
    r = len(lo)
    if not r:
        return Slides(0, [], np.empty(0, dtype=np.int64))
    n = int(hi[-1])  # events after the last window's end change nothing
    first = np.ones(r, dtype=bool)
    first[1:] = hi[1:] != hi[:-1]
    last = np.ones(r, dtype=bool)
    last[:-1] = first[1:]
    group = np.cumsum(first) - 1
    by_first = lo == lo[first][group]
    by_last = (lo == lo[last][group]) & ~by_first
    passes = [(evictions(lo[first], hi[first], n), np.flatnonzero(by_first), hi[by_first] - 1)]
    if by_last.any():
        passes.append((evictions(lo[last], hi[last], n), np.flatnonzero(by_last), hi[by_last] - 1))
    return Slides(n, passes, np.flatnonzero(~(by_first | by_last)))


def slide_windows(
    make: Callable[[], Any],
    values: np.ndarray,
    lo: np.ndarray,
    hi: np.ndarray,
    buffer: Any,
    slides: Slides | None = None,
) -> Any:
    """The aggregate of ``values[lo[j]:hi[j]]`` for every window j (non-decreasing bounds).

    Runs :func:`schedule`'s slides (one ``slide`` call each) and :func:`slide_slices` for
    the rest, each on a new aggregator from *make*. O(n + windows) aggregator operations,
    O(1) amortized each.
    """
    plan_ = slides if slides is not None else schedule(lo, hi)
    r = len(lo)
    res: Any = np.empty(r, dtype=buffer) if buffer is not None else [None] * r
    head = values[: plan_.n]
    for evict, windows, at in plan_.passes:
        steps = slide(make(), head, evict, buffer)
        if buffer is not None:
            res[windows] = steps[at]
        else:
            for j, i in zip(windows.tolist(), at.tolist(), strict=True):
                res[j] = steps[i]
    rest = plan_.rest
    if len(rest):
        others = slide_slices(make(), values, lo[rest], hi[rest])
        if buffer is not None:
            res[rest] = np.asarray(others, dtype=buffer)
        else:
            for j, v in zip(rest.tolist(), others, strict=True):
                res[j] = v
    return res


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
    slides = schedule(lo, hi)  # the same for every aggregation of the key
    for g in p.groups:
        col = values[g.column] if g.column is not None else np.zeros(n, dtype=np.float64)
        out[g.alias] = slide_windows(partial(make, g.monoid), col, lo, hi, g.buffer, slides)
    for column, qs in p.quantiles.items():
        cols = slide_select(values[column], lo, hi, [(a, b) for _, a, b in qs])
        for (alias, _, _), c in zip(qs, cols, strict=True):
            out[alias] = c
    return out
