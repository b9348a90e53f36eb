"""Several window sizes in one call: one sort, one assignment, one slide per size.

=================  ==========================================================================
rows               the windows of the largest size (:func:`~.assign.assign_groups`): one
                   row per window end; each size's window ends where the row's does:
                   hopping ``[end - size, end)``, per-event ``(end - size, end]``
                   (``window_start`` of the row is the largest size's)
shared             admission (one sort), the assignment and ``hi`` (where every window
                   ends in the sorted events) are computed once; per size only ``lo``
                   (one ``searchsorted`` for all keys)
state              per size, the plan's aggregators slide once over the same sorted
                   columns (:func:`~.state.evaluate`), over the rows whose window of that
                   size holds an event; the other rows get the aggregation's empty answer
                   (the monoid's ``lower(identity)``: 0 for ``count`` and ``sum``, None,
                   i.e. null, for ``max``, ``mean``, ...; null for exact quantiles)
quantiles          hopping windows: one :class:`~windowagg.wavelet_matrix.WaveletMatrix`
                   per column, built once for every size, each size's windows answered by
                   range selection (:func:`~.ranks.range_select`); per-event windows slide
                   one order-statistics structure per size (:func:`~.ranks.slide_select`)
columns            ``<alias>_<size>`` per aggregation and size (:func:`size_label`:
                   ``max_v_5m``, ``max_v_1h``, ``max_v_1d``), aggregation by aggregation,
                   sizes in the order given
time               per size O(n + windows) aggregator operations; exact quantiles O(n log n)
                   once plus O(log n) per window and size (per-event windows: O(log w) per
                   event and window, per size); the shared stages once
=================  ==========================================================================

Why not one out-of-order structure with range queries per size (FiBA's window sharing)?
Measured on the ``sizes`` benchmark's data (1M events, 100 keys, 5 min / 1 h / 1 day with
a 5 min slide, max and sum, load ~2-4): ``ooo.FiBA`` (native) filled once with every key's
events and asked ``range_query_many`` per size took 0.38-0.53 s, one in-order slide per size
(``query_slices``, native) 0.10-0.16 s; and exact quantiles have no monoid to share anyway.

Examples
--------
>>> import numpy as np
>>> from windowagg.aggs import parse_aggs
>>> from windowagg.windows.engine import Shape, window_key
>>> r = window_key(np.array([1, 4, 12]), {"v": np.array([5.0, 2.0, 3.0])},
...                parse_aggs(["max(v)", "count"]), Shape(size=10, slide=5, sizes=(5, 10)))
>>> r.columns["end"].tolist(), r.columns["max_v_5us"].tolist(), r.columns["max_v_10us"].tolist()
([5, 10, 15, 20], [5.0, nan, 3.0, nan], [5.0, 5.0, 3.0, 3.0])
>>> r.columns["count_5us"].tolist(), r.columns["count_10us"].tolist()
([2, 0, 1, 0], [2, 2, 1, 1])
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import numpy as np

from windowagg.errors import AggregationError
from windowagg.exact_quantile import ExactQuantile
from windowagg.windows.engine.assign import Windows, _search
from windowagg.windows.engine.shapes import Shape
from windowagg.windows.engine.state import (
    Factory,
    Plan,
    aggregation_message,
    evaluate,
)

__all__ = ["at_row", "empty_answer", "evaluate_sizes", "size_label", "sized_aggs", "spread"]

_UNITS = (("d", 86_400_000_000), ("h", 3_600_000_000), ("m", 60_000_000), ("s", 1_000_000))


def size_label(size: int) -> str:
    """The column suffix of a size in microseconds: the largest unit it is a whole number
    of (``d``, ``h``, ``m`` for minutes, ``s``, ``ms``, ``us``). O(1).

    >>> [size_label(s) for s in (300_000_000, 3_600_000_000, 86_400_000_000, 90_000_000)]
    ['5m', '1h', '1d', '90s']
    >>> size_label(1_500), size_label(7)
    ('1500us', '7us')
    """
    for unit, us in _UNITS:
        if size % us == 0:
            return f"{size // us}{unit}"
    return f"{size // 1000}ms" if size % 1000 == 0 else f"{size}us"


def _renamed(a: Any, alias: str) -> Any:
    """*a* (an ``Agg`` or an Agg-like named tuple) with another alias. O(1)."""
    if dataclasses.is_dataclass(a) and not isinstance(a, type):
        return dataclasses.replace(a, alias=alias)
    return a._replace(alias=alias)


def sized_aggs(aggs: Sequence[Any], sizes: Sequence[int]) -> list[Any]:
    """The output columns of *aggs* over several *sizes*: each aggregation once per size,
    aliased ``<alias>_<size_label(size)>``, aggregation by aggregation. Distinct aliases
    and sizes give distinct names (a label has no ``_``). O(aggs · sizes).

    >>> from windowagg.aggs import parse_aggs
    >>> [a.alias for a in sized_aggs(parse_aggs(["max(v)", "count"]), [60_000_000, 1_000])]
    ['max_v_1m', 'max_v_1ms', 'count_1m', 'count_1ms']
    """
    out = [_renamed(a, f"{a.alias}_{size_label(s)}") for a in aggs for s in sizes]
    return out


def evaluate_sizes(
    p: Plan,
    w: Windows,
    counts: np.ndarray,
    t: np.ndarray,
    starts: np.ndarray,
    values: dict[str, np.ndarray],
    shape: Shape,
    aggs: Sequence[Any],
    factory: Factory | None = None,
) -> dict[str, Any]:
    """Every aggregation of every row for every size of ``shape.sizes``:
    ``{"<alias>_<size>": one value per row}``.

    *w* are the windows of the largest size (``shape.size``) over the keys' sorted times
    *t* (key g's in ``t[starts[g]:starts[g + 1]]``), *counts* the number of windows of
    every key, *values* the sorted events' columns. Per size one ``searchsorted`` for the
    windows' first events and one :func:`~.state.evaluate` over the rows whose window of
    that size holds an event. O(sizes · (n + windows)) aggregator operations.
    """
    end, hi = w.end, w.hi
    per_event = shape.per_event
    ev_counts = np.diff(starts)
    # exact quantiles: one wavelet matrix per column for every size (per-event windows,
    # one per event and size, keep the slide)
    indexes: dict[str, Any] | None = None if per_event else {}
    out: dict[str, Any] = {}
    for s in shape.sizes:
        if s == shape.size:
            lo = w.lo
        elif per_event:  # (t - s, t]; the rows may be some events' windows (a stream's)
            lo = _search(t, starts, ev_counts, end - s, counts, s, "right")
        else:  # [end - s, end)
            assert shape.size is not None and shape.slide is not None
            lo = _search(t, starts, ev_counts, end - s, counts, shape.size + shape.slide, "left")
        rows = np.flatnonzero(hi > lo)
        whole = len(rows) == len(end)
        ws = Windows(
            start=end - s if whole else end[rows] - s,
            end=end if whole else end[rows],
            lo=lo if whole else lo[rows],
            hi=hi if whole else hi[rows],
            keys=t,
            key_lo=(end if whole else end[rows]) - (s - 1 if per_event else s),
            key_hi=(end if whole else end[rows]) - (0 if per_event else 1),
        )
        try:
            got = evaluate(p, ws, values, factory, times=t, indexes=indexes)
        except AggregationError as e:
            raise at_row(e, s, rows, ws, aggs) from e.__cause__
        for alias, col in got.items():
            filled = col if whole else spread(col, rows, len(end), empty_answer(alias, aggs))
            out[f"{alias}_{size_label(s)}"] = filled
    # aggregation by aggregation, sizes in the order given
    return {b.alias: out[b.alias] for b in sized_aggs(aggs, shape.sizes)}


def empty_answer(alias: str, aggs: Sequence[Any]) -> Any:
    """The answer of aggregation *alias* over no events: its monoid's ``lower(identity)``
    (exact quantiles: None). O(1)."""
    a = next(a for a in aggs if a.alias == alias)
    if isinstance(a.monoid, ExactQuantile):
        return None
    return a.monoid.lower(a.monoid.identity)


def spread(col: Any, rows: np.ndarray, r: int, empty: Any) -> Any:
    """*col* (answers of the windows *rows*) at its rows among *r*, *empty* elsewhere.
    O(r)."""
    if isinstance(col, np.ndarray) and col.dtype != object:
        if empty is None and col.dtype.kind == "f":
            empty = np.nan
        if empty is not None:
            full = np.full(r, empty, dtype=col.dtype)
            full[rows] = col
            return full
    spread: list[Any] = [empty] * r
    for i, v in zip(rows.tolist(), list(col), strict=True):
        spread[i] = v
    return spread


def at_row(
    e: AggregationError, s: int, rows: np.ndarray, ws: Windows, aggs: Sequence[Any]
) -> AggregationError:
    """*e* (raised for a window among one size's) named by its size's column and its row
    among all windows. O(1)."""
    if e.alias is None:
        return e
    alias = f"{e.alias}_{size_label(s)}"
    monoid = next(a.monoid for a in aggs if a.alias == e.alias)
    where, window = "", None
    if e.window is not None:
        window = int(rows[e.window])
        start, end = int(ws.start[e.window]), int(ws.end[e.window])
        where = f" in the window (window_start {start}, window_end {end})"
    return AggregationError(
        aggregation_message(alias, monoid, e.reason or "", where),
        alias=alias,
        window=window,
        reason=e.reason,
    )
