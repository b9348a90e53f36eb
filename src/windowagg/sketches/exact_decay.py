"""Exact decayed quantiles and heavy hitters under exponential decay, over events held anyway.

Fact card
---------
==================  ==========================================================================
what                ``decayed_pNN(v, half_life=h)`` and ``top_k(v, k, half_life=h)`` of every
                    batch window (hopping, tumbling, per event, each key's whole history),
                    exactly: the engine holds the window's events, so no summary is needed
idea                under exponential decay an event's weight as of any time T is
                    ``2^((t_i - T)/h)``: the ratio of two weights never changes, so a decayed
                    quantile is a weighted quantile with fixed weights and a decayed count a
                    sum of fixed weights. Weights are kept relative to a landmark (forward
                    decay, Cormode, Shkapenyuk, Srivastava, Xu 2009) as ``m_i 2^(e_i - N)``
                    with ``2^(t_i/h) = m_i 2^e_i`` (``m_i`` in [1, 2]) and N the landmark
                    exponent: rebasing is an exact power of two, so histories of any number
                    of half-lives neither overflow nor lose ratios (:func:`exponents`)
quantile            the smallest value q of the window with ``W(<= q) >= (1 - 2^-40) phi D``
                    (W: the window's weights, D their sum): so ``W(< q) < phi D`` and
                    ``W(<= q) >= phi D`` up to the slack, which absorbs float rounding (sums
                    are within ``n u`` of exact): a rank that ties ``phi D`` exactly resolves
                    the same way whatever the order of summation
top_k               the exact decayed weight of each distinct value as of the window's end,
                    the k heaviest, heaviest first; equal weights (equal doubles) by the
                    value's text (``str``); weights of one value summed in time order
time                windows whose start repeats (each key's whole history, runs of per-event
                    windows sharing a start): one pass per run, O(log n) per event and per
                    window (a Fenwick tree over value ranks, :func:`prefix_quantiles`; top_k:
                    each value's weight and the k heaviest kept as weights grow, O(k) per
                    event and window); other windows (hopping, tumbling, per event with a
                    size): each window's events sorted by (value, index) and summed,
                    O(w log w) per window of w events (native top_k: summed by value id,
                    O(w) + O(k log k)). Plus O(n) for the weights
native              ``_core.decayed_prefix_quantiles``, ``decayed_window_quantiles``,
                    ``decayed_prefix_top_k``, ``decayed_window_top_k`` (the GIL released;
                    top_k's JSON written in C++, floats as Python's ``repr``, in chunks of
                    windows made ASCII strings straight into the output's object array);
                    the Python twins (loops, and numpy matrices for the gathered quantiles)
                    give the same answers bit for bit, the same text byte for byte
                    (``backend=``)
space               O(n); the numpy twin: a matrix chunk of about 2^21 entries
bound               0: exact (up to the float rounding of the sums, see quantile)
==================  ==========================================================================

Examples
--------
>>> t = np.array([0, 10, 10, 20], dtype=np.int64)
>>> v = np.array([1.0, 2.0, 3.0, 3.0])
>>> lo, hi = np.array([0, 0, 0, 1]), np.array([1, 3, 4, 4])
>>> quantile_slices(t, v, lo, hi, 0.5, 10.0, backend="python").tolist()
[1.0, 2.0, 3.0, 3.0]
>>> top_k_slices(t, v, lo, hi, np.array([0, 10, 20, 20]), 2, 10.0)[2]
'[[3.0, 1.5], [2.0, 0.5]]'
"""

from __future__ import annotations

import json
import math
from typing import Final

import numpy as np

from windowagg._backend import native_verb

__all__ = [
    "RESCALE",
    "SNAP",
    "exponents",
    "fenwick_below",
    "prefix_quantiles",
    "quantile_slices",
    "top_k_slices",
]

#: The rank slack of the exact quantile: the smallest q with ``W(<= q) >= SNAP phi D``.
SNAP: Final = 1.0 - 2.0**-40
#: A run's weights are rebased (an exact power of two) once the newest is 2^RESCALE times
#: the landmark's: sums stay below 2^1023 for any count below 2^62.
RESCALE: Final = 960
#: Rows (window x padded length) of one matrix chunk of the gathered windows.
_CHUNK: Final = 1 << 21


def exponents(t: np.ndarray, half_life: float) -> tuple[np.ndarray, np.ndarray]:
    """``(m, e)`` with ``2^(t_i / h) = m_i 2^e_i``, ``m_i`` in [1, 2] (float64), ``e_i`` an
    int64: the integer part of ``t_i / h`` by exact integer division when h is a whole
    number (every front end's durations), so ``m_i`` is within 2 ulp of exact whatever
    t_i's magnitude; for a fractional h by float ``divmod`` (exact remainders for
    ``|t_i| < 2^53``). O(n).

    >>> m, e = exponents(np.array([-5, 0, 15, 20]), 10.0)
    >>> e.tolist(), [round(x, 6) for x in m.tolist()]
    ([-1, 0, 1, 2], [1.414214, 1.0, 1.414214, 1.0])
    """
    f, e = _split(t, half_life)
    return np.exp2(f), e


def _split(t: np.ndarray, half_life: float) -> tuple[np.ndarray, np.ndarray]:
    """``(f, e)`` with ``t_i / h = e_i + f_i``, ``f_i`` in [0, 1]: see :func:`exponents`."""
    t = np.asarray(t, dtype=np.int64)
    h = float(half_life)
    if h == math.floor(h) and h < 2.0**62:
        e, r = np.divmod(t, np.int64(int(h)))
        return r.astype(np.float64) / h, np.asarray(e, dtype=np.int64)
    # a fractional h: the remainder by fmod (exact for times within 2^53), not the
    # fraction of t / h, whose rounding grows with t
    q, r = np.divmod(t.astype(np.float64), h)
    return np.clip(r / h, 0.0, 1.0), q.astype(np.int64)


def _runs(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """True for the windows answered by a run's prefix pass: those sharing their start with
    a neighbour (each key's whole history, per-event windows in a burst). O(windows)."""
    same = np.zeros(len(lo), dtype=bool)
    if len(lo) > 1:
        eq = lo[1:] == lo[:-1]
        same[1:] |= eq
        same[:-1] |= eq
    return same & (hi > lo)


def _order(v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The events sorted by value, equal values in their sorted order (so by time within a
    key: the engine's events are sorted by key and time), and each event's position there.
    O(n log n)."""
    order = np.argsort(v, kind="stable").astype(np.int64)
    rank = np.empty(len(order), dtype=np.int64)
    rank[order] = np.arange(len(order), dtype=np.int64)
    return order, rank


def _gathered(
    order: np.ndarray, rank: np.ndarray, lo: np.ndarray, hi: np.ndarray, pick: np.ndarray
) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """The windows *pick* as matrices: per chunk ``(rows, idx, valid)``, *idx* each row's
    events sorted by (value, time), then padding (``valid`` False; the window's first event
    where it matters). O(rows log w)."""
    out: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    if not len(pick):
        return out
    lengths = hi[pick] - lo[pick]
    width = np.left_shift(1, np.ceil(np.log2(np.maximum(lengths, 1))).astype(np.int64))
    n = len(rank)
    for p in np.unique(width).tolist():
        rows_all = pick[width == p]
        step = max(1, _CHUNK // p)
        col = np.arange(p, dtype=np.int64)
        for c in range(0, len(rows_all), step):
            rows = rows_all[c : c + step]
            first = lo[rows][:, None]
            inside = col[None, :] < (hi[rows] - lo[rows])[:, None]
            keys = np.sort(np.where(inside, rank[np.where(inside, first + col, 0)], n), axis=1)
            valid = keys < n
            idx = np.where(valid, order[np.minimum(keys, n - 1)], first)
            out.append((rows, idx, valid))
    return out


def quantile_slices(
    t: np.ndarray,
    v: np.ndarray,
    lo: np.ndarray,
    hi: np.ndarray,
    phi: float,
    half_life: float,
    backend: str | None = None,
) -> np.ndarray:
    """The exact decayed *phi*-quantile of ``v[lo[j]:hi[j]]`` (times *t*, half-life h) for
    every window j (see the module docstring; NaN for no events). *lo*, *hi* non-decreasing.
    Windows sharing a start: :func:`prefix_quantiles` (native with the core built, as
    *backend* says); the others gathered in numpy. O(n log n + the passes)."""
    t = np.ascontiguousarray(t, dtype=np.int64)
    v = np.ascontiguousarray(v, dtype=np.float64)
    lo = np.ascontiguousarray(lo, dtype=np.int64)
    hi = np.ascontiguousarray(hi, dtype=np.int64)
    out = np.full(len(lo), np.nan, dtype=np.float64)
    if not len(t) or not len(lo):
        return out
    m, e = exponents(t, half_life)
    prefix = _runs(lo, hi)
    pick = np.flatnonzero(~prefix & (hi > lo))
    core = native_verb(backend, "decayed_pNN", "decayed_window_quantiles") if len(pick) else None
    if core is not None:  # each window's events sorted by (value, index) natively
        at = np.empty(len(pick), dtype=np.int64)
        core.decayed_window_quantiles(v, m, e, lo[pick], hi[pick], phi, SNAP, at)
        out[pick] = v[at]
        pick = pick[:0]
    if not len(pick) and not prefix.any():
        return out
    order, rank = _order(v)
    for rows, idx, _ in _gathered(order, rank, lo, hi, pick):
        # padding follows each row's events: it changes no sum up to the row's last event
        with np.errstate(over="ignore", invalid="ignore"):
            cum = np.cumsum(np.ldexp(m[idx], e[idx] - e[hi[rows] - 1][:, None]), axis=1)
        r = np.arange(len(rows))
        goal = (float(phi) * cum[r, hi[rows] - lo[rows] - 1]) * SNAP
        pos = np.argmax(cum >= goal[:, None], axis=1)  # sequential sums along each row
        out[rows] = v[idx[r, pos]]
    j = np.flatnonzero(prefix)
    if len(j):
        got = prefix_quantiles(rank, m, e, lo[j], hi[j], float(phi), backend)
        out[j] = v[order[got]]
    return out


def prefix_quantiles(
    rank: np.ndarray,
    m: np.ndarray,
    e: np.ndarray,
    lo: np.ndarray,
    hi: np.ndarray,
    phi: float,
    backend: str | None = None,
) -> np.ndarray:
    """For windows ``[lo[j], hi[j])`` (non-empty; *lo*, *hi* non-decreasing), the position
    in the (value, time) order (*rank*: each event's) of the smallest value with
    ``W(<= q) >= (phi W) SNAP``, weights ``m_i 2^(e_i - N)``. A window with the previous
    one's start extends its Fenwick tree over the n ranks (one per run: cleared, not
    rebuilt, when the start moves; rebased by an exact power of two when the newest weight
    passes ``2^RESCALE``). Natively ``_core.decayed_prefix_quantiles`` (the GIL released),
    else this loop: the same operations, the same answers. O((events + windows) log n)."""
    from windowagg.errors import ArgumentError

    rank = np.ascontiguousarray(rank, dtype=np.int64)
    m = np.ascontiguousarray(m, dtype=np.float64)
    e = np.ascontiguousarray(e, dtype=np.int64)
    lo = np.ascontiguousarray(lo, dtype=np.int64)
    hi = np.ascontiguousarray(hi, dtype=np.int64)
    out = np.empty(len(lo), dtype=np.int64)
    bad = np.flatnonzero(
        (lo >= hi) | (hi > len(rank)) | (np.diff(lo, prepend=0) < 0) | (np.diff(hi, prepend=0) < 0)
    )
    if len(bad):  # the native twin's check, before either runs
        j = int(bad[0])
        raise ArgumentError(
            f"decayed_prefix_quantiles: window {j} has bounds [{int(lo[j])}, {int(hi[j])}); "
            "they must be non-decreasing, non-empty and within the events"
        )
    core = native_verb(backend, "decayed_pNN", "decayed_prefix_quantiles")
    if core is not None:
        core.decayed_prefix_quantiles(rank, m, e, lo, hi, phi, SNAP, RESCALE, out)
        return out
    _prefix_quantiles_python(rank, m, e, lo, hi, phi, out)
    return out


def fenwick_below(tree: list[float], n: int, top: int, goal: float) -> int:
    """The longest prefix of ranks ``1..at`` of the Fenwick tree *tree* (sizes ``1..n``,
    *top* the largest power of two ``<= n``) whose weights sum below *goal*: ``at``, the
    0-based rank of the first value reaching it (``n`` when none does). O(log n).

    >>> fenwick_below([0.0, 1.0, 3.0, 1.0, 6.0], 4, 4, 3.5)  # weights 1, 2, 1, 2
    2
    """
    at, acc, step = 0, 0.0, top
    while step:
        nxt = at + step
        if nxt <= n and acc + tree[nxt] < goal:
            at = nxt
            acc += tree[nxt]
        step >>= 1
    return at


def _prefix_quantiles_python(
    rank: np.ndarray,
    m: np.ndarray,
    e: np.ndarray,
    lo: np.ndarray,
    hi: np.ndarray,
    phi: float,
    out: np.ndarray,
) -> None:
    """:func:`prefix_quantiles`'s loop (the Python twin of the native kernel)."""
    n = len(rank)
    tree = [0.0] * (n + 1)
    touched: list[int] = []
    mark = bytearray(n + 1)
    rk, ms, es = rank.tolist(), m.tolist(), e.tolist()
    top = 1 << max(n.bit_length() - 1, 0)
    ldexp = math.ldexp
    cur = -1
    held = 0
    total = 0.0
    base = 0
    for j, (a, b) in enumerate(zip(lo.tolist(), hi.tolist(), strict=True)):
        if a != cur:  # a new run: clear what the last one touched
            for k in touched:
                tree[k] = 0.0
                mark[k] = 0
            touched.clear()
            cur, held, total, base = a, a, 0.0, es[a]
        for i in range(held, b):
            if es[i] - base > RESCALE:  # rebase: an exact power of two, ratios kept
                shift = max(-3000, base - es[i])  # (clamped as the native twin's int)
                for k in touched:
                    tree[k] = ldexp(tree[k], shift)
                total = ldexp(total, shift)
                base = es[i]
            w = ldexp(ms[i], max(-3000, es[i] - base))
            total += w
            k = rk[i] + 1
            while k <= n:
                if not mark[k]:
                    mark[k] = 1
                    touched.append(k)
                tree[k] += w
                k += k & -k
        held = max(held, b)
        out[j] = min(fenwick_below(tree, n, top, (phi * total) * SNAP), n - 1)


def _heavy(p: tuple[str, float]) -> tuple[float, str]:
    """The (-weight, text) order of ``(text, weight)`` pairs: heaviest first."""
    return -p[1], p[0]


def _best(cands: list[tuple[float, float]], k: int) -> list[tuple[float, float]]:
    """The k heaviest of ``(value, weight)`` candidates, ties by the value's text. O(c log c)."""
    cands.sort(key=lambda p: (-p[1], str(p[0])))
    return cands[:k]


def top_k_slices(
    t: np.ndarray,
    v: np.ndarray,
    lo: np.ndarray,
    hi: np.ndarray,
    end: np.ndarray,
    k: int,
    half_life: float,
    backend: str | None = None,
) -> np.ndarray:
    """The exact decayed top-k of ``v[lo[j]:hi[j]]`` as of ``end[j]`` for every window j:
    the JSON text ``[[value, weight], ...]`` (``top_k``'s column), None for no events (see
    the module docstring). Windows sharing a start: one pass per run keeping each value's
    weight and the k heaviest; the others gathered in numpy (per value a sum in time
    order). O(n log n + sum of the gathered lengths x log + k log k per window)."""
    t = np.ascontiguousarray(t, dtype=np.int64)
    v = np.ascontiguousarray(v, dtype=np.float64) + 0.0  # -0.0 is 0.0: one value, one text
    lo = np.ascontiguousarray(lo, dtype=np.int64)
    hi = np.ascontiguousarray(hi, dtype=np.int64)
    end = np.ascontiguousarray(end, dtype=np.int64)
    out = np.full(len(lo), None, dtype=object)
    if not len(t) or not len(lo):
        return out
    m, e = exponents(t, half_life)
    # per-event windows end at their events' times: the same exponents, not computed again
    me, ee = (m, e) if np.array_equal(end, t) else exponents(end, half_life)
    prefix = _runs(lo, hi)
    pick = np.flatnonzero(~prefix & (hi > lo))
    if len(pick):
        args = (v, m, e, lo[pick], hi[pick], me[pick], ee[pick], k)
        core = native_verb(backend, "top_k", "decayed_window_top_k")
        if core is not None:  # the texts written into out in place
            core.decayed_window_top_k(*args, out, pick)
        else:
            out[pick] = _window_top_k(*args)
    j = np.flatnonzero(prefix)
    if len(j) == len(lo):  # every window in a run (each key's whole history): no gathers
        _prefix_top_k(v, m, e, lo, hi, me, ee, k, out, j, backend)
    elif len(j):
        _prefix_top_k(v, m, e, lo[j], hi[j], me[j], ee[j], k, out, j, backend)
    return out


def _window_top_k(
    v: np.ndarray,
    m: np.ndarray,
    e: np.ndarray,
    lo: np.ndarray,
    hi: np.ndarray,
    me: np.ndarray,
    ee: np.ndarray,
    k: int,
) -> list[str]:
    """:func:`top_k_slices` for windows answered one by one (non-empty): the window's events
    in (value, index) order (by time within a value), each value's weights
    ``m_i 2^(e_i - N)`` summed in that order (N the exponent of the window's newest event),
    as of the end ``w / me 2^(N - ee)`` (an event at the end weighs exactly 1), the k
    heaviest by (-weight, text). The Python twin of ``_core.decayed_window_top_k`` (which
    sums each value's weights in time order through a table of value ids, without the sort:
    the same sums in the same order), the same text. O(w log w) per window of w events."""
    vs, ms, es = v.tolist(), m.tolist(), e.tolist()
    ldexp = math.ldexp
    out: list[str] = []
    for a, b, mt, et in zip(lo.tolist(), hi.tolist(), me.tolist(), ee.tolist(), strict=True):
        top = es[b - 1]
        items: list[tuple[float, float]] = []
        s, x = 0.0, None
        for _, i in sorted(zip(vs[a:b], range(a, b), strict=True)):
            if x is not None and vs[i] != x:
                items.append((x, s))
                s = 0.0
            x = vs[i]
            s += ldexp(ms[i], max(-3000, min(3000, es[i] - top)))
        assert x is not None  # a window with events
        items.append((x, s))
        shift = max(-3000, min(3000, top - et))
        pairs = _best([(y, ldexp(w / mt, shift)) for y, w in items], k)
        out.append(json.dumps([[y, w] for y, w in pairs], allow_nan=False))
    return out


def _prefix_top_k(
    v: np.ndarray,
    m: np.ndarray,
    e: np.ndarray,
    lo: np.ndarray,
    hi: np.ndarray,
    me: np.ndarray,
    ee: np.ndarray,
    k: int,
    out: np.ndarray,
    at: np.ndarray,
    backend: str | None = None,
) -> None:
    """:func:`top_k_slices` for windows sharing their start (non-empty, bounds
    non-decreasing; ``2^(end_j/h) = me_j 2^ee_j``), window j's text into ``out[at[j]]``: per
    run each value's weight (relative to the run's landmark, rebased as in
    :func:`prefix_quantiles`) and the set of the k heaviest (weights only grow: a value
    outside enters by replacing the lightest member); a value written and ordered by its text
    as first seen in the run (``0.0`` or ``-0.0``). Natively ``_core.decayed_prefix_top_k``
    (the GIL released but to make the strings; floats written as Python's ``repr``), else
    this loop: the same operations, the same text. O((events + windows) k)."""
    core = native_verb(backend, "top_k", "decayed_prefix_top_k")
    if core is not None:
        core.decayed_prefix_top_k(v, m, e, lo, hi, me, ee, k, RESCALE, out, at)
        return
    texts: list[str] = []
    vs, ms, es = v.tolist(), m.tolist(), e.tolist()
    ldexp = math.ldexp
    cur = -1
    held = 0
    base = 0
    weight: dict[float, float] = {}
    best: dict[float, None] = {}
    text: dict[float, str] = {}
    for a, b, mt, et in zip(lo.tolist(), hi.tolist(), me.tolist(), ee.tolist(), strict=True):
        if a != cur:
            cur, held, base = a, a, es[a]
            weight, best, text = {}, {}, {}
        for i in range(held, b):
            if es[i] - base > RESCALE:
                shift = max(-3000, base - es[i])
                weight = {x: ldexp(w, shift) for x, w in weight.items()}
                base = es[i]
            x = vs[i]
            if x not in text:
                text[x] = str(x)
            weight[x] = wx = weight.get(x, 0.0) + ldexp(ms[i], max(-3000, es[i] - base))
            if x in best:
                continue
            if len(best) < k:
                best[x] = None
                continue
            worst = max(best, key=lambda y: (-weight[y], text[y]))
            if (-wx, text[x]) < (-weight[worst], text[worst]):
                del best[worst]
                best[x] = None
        held = max(held, b)
        # as of the end: w / (2^(end/h) 2^-base), an event at the end weighing exactly 1
        shift = max(-3000, min(3000, base - et))
        # each value written as first seen in the run (0.0 or -0.0), as it is ordered
        pairs = sorted(((text[x], ldexp(weight[x] / mt, shift)) for x in best), key=_heavy)
        texts.append(
            "[" + ", ".join(f"[{s}, {json.dumps(w, allow_nan=False)}]" for s, w in pairs[:k]) + "]"
        )
    out[at] = texts
