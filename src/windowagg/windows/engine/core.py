"""One key's windows, end to end: admission, assignment, the aggregators, emission.

This is the per-key function every front end calls: ``windowagg.pandas.window_agg``, and
``windowagg.spark.window_agg`` per key of each ``mapInArrow`` partition (``docs/engine.md``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np

from windowagg.windows.engine.admission import admit
from windowagg.windows.engine.assign import Shape, assign
from windowagg.windows.engine.clock import WatermarkClock
from windowagg.windows.engine.emit import columns
from windowagg.windows.engine.state import Factory, Plan, evaluate, plan

__all__ = ["KeyResult", "window_key"]


class KeyResult(NamedTuple):
    """One key's output: window columns, and the refused positions with reasons."""

    columns: dict[str, Any]
    """``start``, ``end`` (int64) and one column per aggregation alias."""
    refused: np.ndarray
    """Positions (into the caller's arrays) of the events refused at admission."""
    reasons: list[str]
    """One reason per refused position."""


def window_key(
    t: np.ndarray,
    values: Mapping[str, np.ndarray],
    aggs: Sequence[Any],
    shape: Shape,
    *,
    clock: WatermarkClock | None = None,
    factory: Factory | None = None,
    planned: Plan | None = None,
) -> KeyResult:
    """All windows of one key's events (arrival order) and the events refused.

    Parameters
    ----------
    t
        int64 event times, in arrival order.
    values
        float64 value columns, aligned with *t*.
    aggs
        ``Agg``-like objects (alias, monoid, column, kind, dtype).
    shape
        The windows to compute.
    clock
        Judge lateness in arrival order (None: every valid event is on time, as in batch).
    factory
        ``monoid -> FIFO aggregator`` (default ``fifo.TwoStacksLite``).
    planned
        ``plan(aggs)`` computed once by a caller that runs many keys.

    Returns
    -------
    KeyResult
        Windows ordered by end (per-event windows: one per admitted event, in time order,
        ties in arrival order); refused positions ascending.

    Complexity: O(n log n) admission + O(n + windows) assignment + the aggregators' verbs
    (amortized O(1) per event and per window) + O(log w) per event and per window for
    each column with exact quantiles.

    Examples
    --------
    >>> from windowagg.spark.spec import parse_aggs
    >>> r = window_key(np.array([3, 1, 12]), {"v": np.array([2.0, 5.0, 1.0])},
    ...                parse_aggs(["max(v)", "count"]), Shape(size=10, slide=10))
    >>> r.columns["end"].tolist(), r.columns["max_v"].tolist(), r.columns["count"].tolist()
    ([10, 20], [5.0, 1.0], [2, 1])
    """
    p = planned if planned is not None else plan(aggs)
    a = admit(t, values, clock, p.probes)
    ts = np.asarray(t, dtype=np.int64)[a.order]
    sorted_values = {c: np.asarray(v, dtype=np.float64)[a.order] for c, v in values.items()}
    w = assign(shape, ts)
    results = evaluate(p, w, sorted_values, factory)
    return KeyResult(columns(w, results, aggs), a.refused, a.reasons)
