"""Exact quantiles over sliding windows: one order-statistics multiset per column.

=================  ==========================================================================
structure          :class:`windowagg.order_statistics.OrderStatistics` (natively a treap
                   with subtree sizes; in Python a sorted list), one per column, shared by
                   all its quantiles
ordering           FIFO over the engine's windows: every shape's windows are slices
                   ``[lo, hi)`` of the time-sorted events with ``lo`` and ``hi``
                   non-decreasing, so each event is inserted once and removed once
quantile           nearest rank: the ``ceil(q * n)``-th smallest (at least the 1st), with
                   ``q`` an exact fraction (``p99.9`` is 999/1000): DuckDB's
                   ``quantile_disc``; ``median`` is ``p50``
operator needs     a total order on the values (finite floats here)
time               O(log w) expected per insert, evict and rank selection (native); several
                   quantiles of one column share one multiset and one pass
space              O(w) for windows of w events
=================  ==========================================================================

Examples
--------
>>> import numpy as np
>>> x = np.array([5.0, 1.0, 4.0, 2.0, 3.0])
>>> out = slide_select(x, np.array([0, 0, 2]), np.array([2, 5, 5]), [(1, 2), (95, 100)])
>>> out[0].tolist(), out[1].tolist()
([1.0, 3.0, 3.0], [5.0, 5.0, 4.0])
>>> nearest_rank(95, 100, 20), nearest_rank(1, 2, 2), nearest_rank(1, 1000, 3)
(19, 1, 1)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

__all__ = ["nearest_rank", "slide_select"]


def nearest_rank(num: int, den: int, n: int) -> int:
    """The 1-based rank of quantile ``num/den`` among *n* values: ``max(1, ceil(q n))``. O(1)."""
    return max(1, -((-num * n) // den))


def _default_factory() -> Any:
    from windowagg.order_statistics import OrderStatistics

    return OrderStatistics()


def slide_select(
    values: np.ndarray,
    lo: np.ndarray,
    hi: np.ndarray,
    quantiles: Sequence[tuple[int, int]],
    factory: Callable[[], Any] | None = None,
) -> list[np.ndarray]:
    """Nearest-rank quantiles of ``values[lo[j]:hi[j]]`` for every window j, in one pass.

    *values* are one column of the time-sorted events; ``lo`` and ``hi`` are
    non-decreasing (the engine's windows always are) and every window is non-empty.
    *factory* makes the order-statistics structure (``insert``, ``evict(x)``, ``kth(k)``;
    default :class:`~windowagg.order_statistics.OrderStatistics`). The ranks are computed
    here, in exact integers, not by ``OrderStatistics.quantile`` (float64 ``q * n``).
    Returns one float64 array per ``(num, den)`` quantile. O((n + windows · quantiles)
    log w) expected for windows of w events (native structure).
    """
    lo_l = np.asarray(lo, dtype=np.int64).tolist()
    hi_l = np.asarray(hi, dtype=np.int64).tolist()
    r = len(lo_l)
    out = [np.empty(r, dtype=np.float64) for _ in quantiles]
    if not r:
        return out
    if np.any(np.diff(lo) < 0) or np.any(np.diff(hi) < 0):
        raise ValueError("slide_select needs non-decreasing window bounds lo and hi")
    vals = np.asarray(values, dtype=np.float64).tolist()
    # 0-based ranks of every window and quantile, up front, in exact integer arithmetic
    sizes = np.asarray(hi, dtype=np.int64) - np.asarray(lo, dtype=np.int64)
    if np.any(sizes <= 0):
        j = int(np.flatnonzero(sizes <= 0)[0])
        raise ValueError(f"slide_select: window {j} ([{lo_l[j]}, {hi_l[j]})) holds no event")
    ranks = [(np.maximum(-((-num * sizes) // den), 1) - 1).tolist() for num, den in quantiles]
    make = factory or _default_factory
    ms = make()
    insert, evict, kth = ms.insert, ms.evict, ms.kth  # bound methods: hot loop
    cur_lo = cur_hi = lo_l[0]
    single = len(quantiles) == 1
    col0, rank0 = out[0], ranks[0]
    for j in range(r):
        a, b = lo_l[j], hi_l[j]
        if a >= cur_hi:  # the previous window and this one do not overlap: restart
            ms = make()
            insert, evict, kth = ms.insert, ms.evict, ms.kth
            cur_lo = cur_hi = a
        while cur_hi < b:
            insert(vals[cur_hi])
            cur_hi += 1
        while cur_lo < a:
            evict(vals[cur_lo])
            cur_lo += 1
        if single:
            col0[j] = kth(rank0[j])
        else:  # every quantile of the column from the same structure
            for col, rank in zip(out, ranks, strict=True):
                col[j] = kth(rank[j])
    return out
