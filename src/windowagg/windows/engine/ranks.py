"""Exact quantiles over the engine's windows: a slide, or range selection over a wavelet matrix.

=================  ==========================================================================
slide              :func:`slide_select`: one :class:`windowagg.order_statistics.OrderStatistics`
                   (natively a counted B+ tree; in Python a sorted list) per column, shared
                   by all its quantiles, slid over the windows (``lo`` and ``hi``
                   non-decreasing: each event inserted once and removed once) by its
                   ``kth_slices`` verb; O(log w) per event and per rank selection
range              :func:`range_select`: a :class:`windowagg.wavelet_matrix.WaveletMatrix`
                   built once over the column's sorted values (O(n log n)), then O(log n)
                   per window and quantile, windows in any order: several sizes over the
                   same events share it (:mod:`.sizes`), each size costing only its queries
quantile           nearest rank: the ``ceil(q * n)``-th smallest (at least the 1st), with
                   ``q`` an exact fraction (``p99.9`` is 999/1000): DuckDB's
                   ``quantile_disc``; ``median`` is ``p50``; both ways the same ranks
operator needs     a total order on the values (finite floats here)
which              :func:`~.state.evaluate` slides unless its caller hands it the columns'
                   matrices (``indexes``): :func:`~.sizes.evaluate_sizes` does for several
                   sizes of hopping windows (one matrix for every size; per-event windows,
                   one per event and size, slide). One size slides: on the ``sizes``
                   benchmark's 1M events (load ~5) the matrix (0.19-0.34 s, most of it
                   the build) beat the slide for 1 h and 1 day windows (0.29, 0.40 s) but
                   lost to it for tumbling 5 min and 1 h windows (0.07, 0.15 s), and which
                   wins depends on the events per window, a data size
space              O(w) for windows of w events (slide); O(n) values + n bits per level (range)
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

__all__ = ["nearest_rank", "range_select", "slide_select"]


def nearest_rank(num: int, den: int, n: int) -> int:
    """The 1-based rank of quantile ``num/den`` among *n* values: ``max(1, ceil(q n))``. O(1)."""
    return max(1, -((-num * n) // den))


def _default_factory() -> Any:
    """What ``OrderStatistics()`` would hold, the backend resolved as it resolves it:
    natively the core's structure itself (a slide asks only its ``kth_slices``; the
    public wrapper's construction cost several times the call on a short span)."""
    from windowagg._backend import resolve_backend

    if resolve_backend(None, "OrderStatistics"):
        from windowagg._native.order_statistics import make

        return make()
    from windowagg.order_statistics import OrderStatistics

    return OrderStatistics()


def slide_select(
    values: np.ndarray,
    lo: np.ndarray,
    hi: np.ndarray,
    quantiles: Sequence[tuple[int, int]],
    factory: Callable[[], Any] | None = None,
    *,
    checked: bool = True,
) -> list[np.ndarray]:
    """Nearest-rank quantiles of ``values[lo[j]:hi[j]]`` for every window j, in one pass.

    *values* are one column of the time-sorted events; ``lo`` and ``hi`` are
    non-decreasing (the engine's windows always are) and every window is non-empty.
    *factory* makes the order-statistics structure (default
    :class:`~windowagg.order_statistics.OrderStatistics`, whose ``kth_slices`` answers
    everything in one call; a structure with only ``insert``, ``evict(x)`` and ``kth(k)``
    is driven one call at a time). The ranks are computed
    here, in exact integers, not by ``OrderStatistics.quantile`` (float64 ``q * n``).
    *checked* False: the caller vouches for the bounds (int64, non-decreasing, every
    window non-empty; the engine builds them so), which are then not checked (a few
    numpy passes: most of the call's time over a short span of short windows).
    Returns one float64 array per ``(num, den)`` quantile. O((n + windows · quantiles)
    log w) for windows of w events (native structure).
    """
    lo = np.asarray(lo, dtype=np.int64)
    hi = np.asarray(hi, dtype=np.int64)
    r = len(lo)
    if not r:
        return [np.empty(0, dtype=np.float64) for _ in quantiles]
    if checked and (np.any(np.diff(lo) < 0) or np.any(np.diff(hi) < 0)):
        raise ValueError("slide_select needs non-decreasing window bounds lo and hi")
    ranks = _ranks(lo, hi, quantiles, "slide_select" if checked else None)
    vals = np.ascontiguousarray(values, dtype=np.float64)
    ms = (factory or _default_factory)()
    verb = getattr(ms, "kth_slices", None)
    if verb is not None:  # every window and quantile in one call
        got = verb(vals, lo, hi, ranks, np.empty((r, len(quantiles)), dtype=np.float64))
        return [np.ascontiguousarray(got[:, j]) for j in range(len(quantiles))]
    return _select_loop(ms, vals, lo, hi, ranks)


def range_select(
    index: Any, lo: np.ndarray, hi: np.ndarray, quantiles: Sequence[tuple[int, int]]
) -> list[np.ndarray]:
    """:func:`slide_select`'s answers by range selection: *index* is a
    :class:`~windowagg.wavelet_matrix.WaveletMatrix` built once over the column's sorted
    values (shared by every window size over them), and each window
    ``values[lo[j]:hi[j]]`` (non-empty, bounds in any order) costs one query per quantile.
    The same nearest ranks, in exact integers. Returns one float64 array per ``(num,
    den)``. O(windows · quantiles · log n).

    >>> from windowagg.wavelet_matrix import WaveletMatrix
    >>> w = WaveletMatrix([5.0, 1.0, 4.0, 2.0, 3.0])
    >>> out = range_select(w, np.array([0, 0, 2]), np.array([2, 5, 5]), [(1, 2), (95, 100)])
    >>> out[0].tolist(), out[1].tolist()
    ([1.0, 3.0, 3.0], [5.0, 5.0, 4.0])
    """
    lo = np.asarray(lo, dtype=np.int64)
    hi = np.asarray(hi, dtype=np.int64)
    if not len(lo):
        return [np.empty(0, dtype=np.float64) for _ in quantiles]
    got = index.kth_slices(lo, hi, _ranks(lo, hi, quantiles, "range_select"))
    return [np.ascontiguousarray(got[:, j], dtype=np.float64) for j in range(len(quantiles))]


def _ranks(
    lo: np.ndarray, hi: np.ndarray, quantiles: Sequence[tuple[int, int]], who: str | None
) -> np.ndarray:
    """The 0-based nearest ranks of every window and quantile, shape ``(windows,
    quantiles)``, in exact integer arithmetic; ValueError for a window holding no event
    (*who* None: not checked). O(windows · quantiles)."""
    sizes = hi - lo
    if who is not None and np.any(sizes <= 0):
        j = int(np.flatnonzero(sizes <= 0)[0])
        raise ValueError(f"{who}: window {j} ([{lo[j]}, {hi[j]})) holds no event")
    ranks = np.empty((len(lo), len(quantiles)), dtype=np.int64)
    for j, (num, den) in enumerate(quantiles):
        ranks[:, j] = np.maximum(-((-num * sizes) // den), 1) - 1
    return ranks


def _select_loop(
    ms: Any, vals: np.ndarray, lo: np.ndarray, hi: np.ndarray, ranks: np.ndarray
) -> list[np.ndarray]:
    """:func:`slide_select` for a structure without ``kth_slices``: the same slide, one
    ``insert`` / ``evict`` / ``kth`` call at a time (each event inserted and removed once;
    the structure is emptied where two windows do not overlap)."""
    out = np.empty(ranks.shape, dtype=np.float64)
    source = vals.tolist()
    rank_rows = ranks.tolist()
    insert, evict, kth = ms.insert, ms.evict, ms.kth  # bound methods: hot loop
    held_lo = held_hi = 0
    for j, (a, b) in enumerate(zip(lo.tolist(), hi.tolist(), strict=True)):
        if a >= held_hi:
            for x in source[held_lo:held_hi]:
                evict(x)
            held_lo = held_hi = a
        for x in source[held_hi:b]:
            insert(x)
        held_hi = max(held_hi, b)
        for x in source[held_lo:a]:
            evict(x)
        held_lo = a
        out[j] = [kth(k) for k in rank_rows[j]]
    return [np.ascontiguousarray(out[:, j]) for j in range(ranks.shape[1])]
