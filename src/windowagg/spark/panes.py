"""Vectorised sliding windows over panes: Two-Stacks over blocks (van Herk / Gil-Werman).

=================  ==========================================================================
ordering           batch: one key's events, any order (they are sorted first)
operator needs     a numpy ufunc monoid (``np.add``, ``np.maximum``, ``np.minimum``);
                   associative; commutativity not needed for the window step.
                   Quantiles (``pNN``) are not a ufunc monoid: each window's events are a
                   contiguous slice of the time-sorted events, selected exactly (row-wise
                   sort of the padded slices), O(sum of window lengths · log)
time               O(n log n) sort + O(n) pane partials + O(L) for the windows, where
                   L = panes spanned by the key's events; 3 ufunc applications per pane,
                   independent of size/slide (Spark's ``F.window`` costs n * size/slide)
space              O(n + L)
paper              stream slicing into panes (Li et al., "No pane, no gain", SIGMOD Rec.
                   2005); sliding combine by prefix/suffix blocks (van Herk 1992,
                   Gil & Werman 1993), i.e. Two-Stacks (Tangwongsan et al.) with the stack
                   flips done block by block in numpy
=================  ==========================================================================

Windows are Spark's: half-open ``[end - size, end)`` with ``end = origin + k*slide``.
Time is cut into panes of ``g = gcd(size, slide)``; each window is exactly ``w = size/g``
consecutive panes, and consecutive windows start ``s = slide/g`` panes apart. The pane
partials are laid out densely, split into blocks of ``w`` panes, and each block gets a
prefix fold (left to right) and a suffix fold (right to left). The window that starts at
pane ``i`` is then ``suffix[i] ⊗ prefix[i + w - 1]`` (just ``suffix[i]`` when ``i`` starts a
block): at most one combine per window, exact for
max/min/count and within float rounding for sums (every window sums at most ``2w`` pane
partials; no running-sum cancellation).

Examples
--------
>>> import numpy as np
>>> ts = np.array([0, 5, 12, 31], dtype=np.int64)
>>> out = sliding_panes(ts, {"v": np.array([1.0, 4.0, 2.0, 8.0])}, [("mx", "max", "v"),
...                     ("n", "count", None)], size=20, slide=10, origin=0)
>>> out["end"].tolist(), out["mx"].tolist(), out["n"].tolist()
([10, 20, 30, 40, 50], [4.0, 4.0, 2.0, 8.0, 8.0], [2, 3, 1, 1, 1])
"""

from __future__ import annotations

from collections.abc import Sequence
from math import gcd
from typing import Any

import numpy as np

__all__ = ["dense_span", "sliding_panes"]

_OPS: dict[str, tuple[Any, float]] = {
    "sum": (np.add, 0.0),
    "max": (np.maximum, -np.inf),
    "min": (np.minimum, np.inf),
}


def dense_span(ts_min: int, ts_max: int, size: int, slide: int, origin: int) -> int:
    """Number of panes the dense layout needs for events in ``[ts_min, ts_max]``. O(1)."""
    g = gcd(size, slide)
    w = size // g
    return (ts_max - origin) // g - (ts_min - origin) // g + 2 * w + 1


def _sliding(op: Any, x: np.ndarray, w: int, identity: float) -> np.ndarray:
    """``r[i] = x[i] ⊗ ... ⊗ x[i+w-1]`` for every ``i`` in ``0 .. len(x)-w``. O(len(x))."""
    n = len(x)
    if w == 1:
        return x.copy()
    blocks = -(-n // w)
    padded = np.full(blocks * w, identity, dtype=x.dtype)
    padded[:n] = x
    b = padded.reshape(blocks, w)
    prefix = op.accumulate(b, axis=1).ravel()
    suffix = op.accumulate(b[:, ::-1], axis=1)[:, ::-1].ravel()
    m = n - w + 1
    result: np.ndarray = op(suffix[:m], prefix[w - 1 : w - 1 + m])
    # a window that starts on a block boundary is that whole block: its suffix alone
    # (combining it with the block's prefix would count the block twice)
    aligned = np.arange(0, m, w)
    result[aligned] = suffix[aligned]
    return result


#: Largest (windows x longest window) matrix sorted at once by the exact quantile path.
_QUANTILE_CHUNK = 4_000_000


def quantile_cost(ts_sorted: np.ndarray, size: int) -> int:
    """Upper bound of the longest window's event count (for choosing the quantile path). O(n)."""
    if len(ts_sorted) == 0:
        return 0
    hi = np.searchsorted(ts_sorted, ts_sorted + size, side="left")
    return int((hi - np.arange(len(ts_sorted))).max())


def _window_quantiles(
    ts: np.ndarray, vals: np.ndarray, starts: np.ndarray, ends: np.ndarray, phi: float
) -> np.ndarray:
    """Exact nearest-rank quantile of the events in each ``[start, end)`` (ts sorted).

    The k-th smallest value with k = max(1, ceil(phi * m)): the smallest value whose rank
    reaches ``phi * m`` (the q-digest's definition, with no error). Each window is a
    contiguous slice of the time-sorted events; slices are padded into a matrix and sorted
    row-wise, in chunks. O(sum of window lengths * log(longest)).
    """
    lo = np.searchsorted(ts, starts, side="left")
    hi = np.searchsorted(ts, ends, side="left")
    m = hi - lo
    out = np.full(len(starts), np.nan)
    if len(starts) == 0:
        return out
    width = int(m.max())
    rows = max(1, _QUANTILE_CHUNK // max(width, 1))
    cols = np.arange(width)
    last = len(vals) - 1
    for a in range(0, len(starts), rows):
        b = min(len(starts), a + rows)
        idx = np.minimum(lo[a:b, None] + cols[None, :], last)
        block = np.where(cols[None, :] < m[a:b, None], vals[idx], np.inf)
        block.sort(axis=1)
        k = np.maximum(np.ceil(phi * m[a:b]).astype(np.int64), 1) - 1
        out[a:b] = block[np.arange(b - a), k]
    return out


def sliding_panes(
    ts: np.ndarray,
    columns: dict[str, np.ndarray],
    aggs: Sequence[tuple[str, str, str | None]],
    *,
    size: int,
    slide: int,
    origin: int,
) -> dict[str, np.ndarray]:
    """Every non-empty window ``[end - size, end)``, ``end ≡ origin (mod slide)``, of one key.

    Parameters
    ----------
    ts
        int64 event times (any order; equal times allowed).
    columns
        float64 value arrays aligned with ``ts`` (no NaN: reject them before).
    aggs
        ``(alias, kind, column)`` with kind in sum, count, max, min, mean, or ``pNN``
        (exact nearest-rank quantile, see :func:`_window_quantiles`).
    size, slide, origin
        Window length, hop and alignment of window ends (same unit as ``ts``).

    Returns
    -------
    dict
        ``"end"`` (int64 window ends, ascending) and one array per alias (float64; int64 for
        ``count``). Windows without events are left out, as in Spark.

    Complexity: O(n log n + L) with L = :func:`dense_span`; see the module's fact card.
    """
    n = len(ts)
    out: dict[str, np.ndarray] = {"end": np.empty(0, dtype=np.int64)}
    if n == 0:
        for alias, kind, _ in aggs:
            out[alias] = np.empty(0, dtype=np.int64 if kind == "count" else np.float64)
        return out
    order = np.argsort(ts, kind="stable")
    ts = ts[order]
    g = gcd(size, slide)
    w, s = size // g, slide // g
    pane = (ts - origin) // g  # pane j covers [origin + j*g, origin + (j+1)*g)
    j_min, j_max = int(pane[0]), int(pane[-1])
    j0 = j_min - w  # dense index 0 is pane j0: w identity panes of padding on each side
    length = j_max + w - j0 + 1
    starts = np.flatnonzero(np.r_[True, pane[1:] != pane[:-1]])
    dense_idx = pane[starts] - j0

    counts = np.zeros(length, dtype=np.int64)
    counts[dense_idx] = np.diff(np.r_[starts, n])
    # window k covers panes [k*s - w, k*s): k from j_min//s + 1 to (j_max + w)//s
    k = np.arange(j_min // s + 1, (j_max + w) // s + 1, dtype=np.int64)
    first = k * s - w - j0  # dense index of each window's first pane
    win_counts = _sliding(np.add, counts, w, 0)[first]
    keep = win_counts > 0
    first = first[keep]
    out["end"] = origin + (k[keep] * s) * g
    partial_cache: dict[tuple[str, str], np.ndarray] = {}

    def window_fold(kind: str, column: str) -> np.ndarray:
        key = (kind, column)
        if key not in partial_cache:
            op, identity = _OPS[kind]
            vals = columns[column][order]
            dense = np.full(length, identity, dtype=np.float64)
            dense[dense_idx] = op.reduceat(vals, starts)
            partial_cache[key] = _sliding(op, dense, w, identity)[first]
        return partial_cache[key]

    sorted_ends = out["end"]
    for alias, kind, column in aggs:
        if kind.startswith("p") and kind[1:].replace(".", "", 1).isdigit():
            assert column is not None
            out[alias] = _window_quantiles(
                ts, columns[column][order], sorted_ends - size, sorted_ends, float(kind[1:]) / 100.0
            )
        elif kind == "count":
            out[alias] = win_counts[keep]
        elif kind == "mean":
            assert column is not None
            out[alias] = window_fold("sum", column) / win_counts[keep]
        elif kind in _OPS:
            assert column is not None
            out[alias] = window_fold(kind, column)
        else:
            raise ValueError(f"{kind!r} has no vectorised pane path; use the generic path")
    return out
