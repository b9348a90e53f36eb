"""The q-digest's Python kernels: compress over a dict or numpy levels, batch validation.

Split from :mod:`windowagg.sketches.qdigest` (the class and its fact card live there); the
compiled twin of these is ``_native/include/windowagg/qdigest.hpp``.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from windowagg.errors import ArgumentError, ArgumentTypeError

__all__ = [
    "aggregate_keys",
    "compress_dict",
    "compress_numpy",
    "first_reaching",
    "key_array",
    "weight_array",
]


def first_reaching(pref: list[float], target: float) -> int:
    lo, hi = 0, len(pref)
    while lo < hi:
        mid = (lo + hi) // 2
        if pref[mid] >= target:
            hi = mid
        else:
            lo = mid + 1
    return lo


def compress_dict(nodes: dict[int, float], th: float, L: int) -> None:
    """Bottom-up compress of a node dict in place (pure Python). O(s + L)."""
    by_depth: list[list[int]] = [[] for _ in range(L + 1)]
    for node in nodes:
        by_depth[node.bit_length() - 1].append(node)
    get = nodes.get  # cached: called ~3 times per node
    for depth in range(L, 0, -1):
        up = by_depth[depth - 1]
        for node in by_depth[depth]:
            c = get(node)
            if c is None:  # folded away together with its sibling
                continue
            sib = node ^ 1
            par = node >> 1
            pc = get(par)
            tot = c + get(sib, 0.0) + (pc or 0.0)
            if tot <= th:
                nodes[par] = tot
                del nodes[node]
                nodes.pop(sib, None)
                if pc is None:
                    up.append(par)


def compress_numpy(np: Any, nodes: dict[int, float], th: float, L: int) -> dict[int, float]:
    """The same compress as :func:`compress_dict`, vectorized per level (L <= 62)."""
    ids = np.fromiter(nodes.keys(), dtype=np.int64, count=len(nodes))
    cnt = np.fromiter(nodes.values(), dtype=np.float64, count=len(nodes))
    pow2 = np.left_shift(np.int64(1), np.arange(L + 1, dtype=np.int64))
    depth = np.searchsorted(pow2, ids, side="right") - 1
    order = np.lexsort((ids, depth))
    ids, cnt, depth = ids[order], cnt[order], depth[order]
    bounds = np.searchsorted(depth, np.arange(L + 2))
    lvl_ids = [ids[bounds[d] : bounds[d + 1]] for d in range(L + 1)]
    lvl_cnt = [cnt[bounds[d] : bounds[d + 1]] for d in range(L + 1)]
    for d in range(L, 0, -1):
        cid = lvl_ids[d]
        if cid.size == 0:
            continue
        cc = lvl_cnt[d]
        par = cid >> 1
        up, inv = np.unique(par, return_inverse=True)
        csum = np.bincount(inv, weights=cc, minlength=up.size)
        pid, pc = lvl_ids[d - 1], lvl_cnt[d - 1]
        pos = np.searchsorted(pid, up)
        posc = np.minimum(pos, max(pid.size - 1, 0))
        present = (pos < pid.size) & (pid[posc] == up) if pid.size else np.zeros(up.size, bool)
        pcount = np.where(present, pc[posc] if pid.size else 0.0, 0.0)
        tot = csum + pcount
        merge = tot <= th
        if not merge.any():
            continue
        keep = ~merge[inv]
        lvl_ids[d], lvl_cnt[d] = cid[keep], cc[keep]
        upd = present & merge
        if upd.any():
            pc = pc.copy()
            pc[pos[upd]] = tot[upd]
        new = merge & ~present
        if new.any():
            pid = np.concatenate([pid, up[new]])
            pc = np.concatenate([pc, tot[new]])
            o = np.argsort(pid, kind="stable")
            pid, pc = pid[o], pc[o]
        lvl_ids[d - 1], lvl_cnt[d - 1] = pid, pc
    out_ids = np.concatenate(lvl_ids).tolist()
    out_cnt = np.concatenate(lvl_cnt).tolist()
    return dict(zip(out_ids, out_cnt, strict=False))


def key_array(np: Any, xs: Iterable[int], universe: int) -> Any:
    """A batch of keys as a checked 1-D C-contiguous int64 (or uint64) array. O(b).

    ArgumentTypeError for non-integer keys, ArgumentError naming the smallest negative or
    the largest key beyond the universe; both backends call it before anything changes.
    """
    a = np.asarray(xs if not isinstance(xs, Iterator) else list(xs))
    if a.ndim != 1:
        a = a.reshape(-1)
    if a.size == 0:
        return a.astype(np.int64)
    if a.dtype.kind not in "iu":
        if a.dtype.kind == "O" and all(
            isinstance(v, int) and not isinstance(v, bool) for v in a.tolist()
        ):
            a = np.array(a.tolist(), dtype=object)
        else:
            raise ArgumentTypeError(
                f"update_many needs integer keys, got dtype {a.dtype}; map real values with "
                "windowagg.sketches.ValueMapper"
            )
    if a.dtype.kind == "u" and universe > np.iinfo(a.dtype).max:
        return np.ascontiguousarray(a, dtype=np.uint64)  # every value in [0, universe)
    lo, hi = a.min(), a.max()
    if lo < 0 or hi >= universe:
        bad = lo if lo < 0 else hi
        raise ArgumentError(f"QDigest key {int(bad)} is outside the universe [0, {universe})")
    if a.dtype.kind == "O":
        return np.array([int(v) for v in a.tolist()], dtype=np.uint64)
    # checked in [0, universe): an int64 buffer holds them whatever the universe (a
    # universe past 2**63 once sent every key through a Python int here: ~60 ns a key)
    return np.ascontiguousarray(a, dtype=np.uint64 if a.dtype.kind == "u" else np.int64)


def weight_array(np: Any, weights: Iterable[float], size: int) -> Any:
    """A batch's weights as a checked C-contiguous float64 array of *size* items. O(b)."""
    w = np.asarray(weights if not isinstance(weights, Iterator) else list(weights), dtype=float)
    w = np.ascontiguousarray(w.reshape(-1), dtype=np.float64)
    if w.size != size:
        raise ArgumentError(f"xs has {size} keys but weights has {w.size} entries")
    if not (np.all(np.isfinite(w)) and np.all(w > 0)):
        raise ArgumentError("weights must be positive finite numbers")
    return w


def aggregate_keys(np: Any, a: Any, w: Any | None) -> tuple[Any, Any, float]:
    """(distinct keys, their weights summed in input order, total weight summed in input
    order) of a checked batch (:func:`key_array`, :func:`weight_array`). O(b log b).

    The sums run left to right (``np.bincount``, ``np.cumsum``), as the compiled twin adds
    them, so both backends hold the same floats."""
    if a.size == 0:
        return a, np.zeros(0), 0.0
    if w is None:
        uniq, counts = np.unique(a, return_counts=True)
        return uniq, counts.astype(np.float64), float(a.size)
    uniq, inv = np.unique(a, return_inverse=True)
    wsum = np.bincount(inv.reshape(-1), weights=w, minlength=uniq.size)
    with np.errstate(over="ignore"):  # an infinite total is refused by the caller
        total = float(np.cumsum(w)[-1])
    return uniq, wsum, total
