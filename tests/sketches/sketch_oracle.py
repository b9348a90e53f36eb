"""Exact brute-force answers for the sketch tests (weighted, decayed, windowed)."""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Sequence

Item = tuple[int, float]  # (key, weight)


def weight_le(items: Sequence[Item], x: int) -> float:
    return math.fsum(w for k, w in items if k <= x)


def weight_lt(items: Sequence[Item], x: int) -> float:
    return math.fsum(w for k, w in items if k < x)


def freq(items: Sequence[Item]) -> dict[int, float]:
    out: dict[int, float] = {}
    for k, w in items:
        out[k] = out.get(k, 0.0) + w
    return out


def total(items: Sequence[Item]) -> float:
    return math.fsum(w for _, w in items)


def quantile_ok(items: Sequence[Item], q: int, phi: float, err: float) -> tuple[bool, str]:
    """Corrected Def. 4: W(< q) <= (phi + err) D and W(<= q) >= (phi - err) D."""
    D = total(items)
    tol = 1e-9 * max(1.0, D)
    lt, le = weight_lt(items, q), weight_le(items, q)
    ok = lt <= (phi + err) * D + tol and le >= (phi - err) * D - tol
    return ok, f"q={q} phi={phi} W(<q)/D={lt / D:.4f} W(<=q)/D={le / D:.4f} err={err}"


def hh_ok(
    items: Sequence[Item], reported: Sequence[int], lo_phi: float, hi_phi: float
) -> tuple[bool, str]:
    """Every key with f >= hi_phi*D is reported; none with f < lo_phi*D is."""
    D = total(items)
    tol = 1e-9 * max(1.0, D)
    f = freq(items)
    rep = set(reported)
    missing = [k for k, v in f.items() if v >= hi_phi * D + tol and k not in rep]
    false = [k for k in rep if f.get(k, 0.0) < lo_phi * D - tol]
    return not missing and not false, f"missing={missing} false={false}"


def decayed(
    stream: Sequence[tuple[int, int, float]],
    g: Callable[[float], float],
    t: float,
    horizon: float = math.inf,
) -> list[Item]:
    """(key, w*g(t - t_i)) for items with age < horizon."""
    return [(x, w * g(t - ts)) for x, ts, w in stream if t - ts < horizon]


def window(stream: Sequence[tuple[int, int, float]], t: int, w: int) -> list[Item]:
    """Items with t - w < t_i <= t (age < w)."""
    return [(x, wt) for x, ts, wt in stream if t - w < ts <= t]


def orders(n: int, ts: Sequence[int], rng: random.Random) -> dict[str, list[int]]:
    """Arrival permutations (indices) of the same stream, from benign to adversarial."""
    idx = list(range(n))
    by_t = sorted(idx, key=lambda i: ts[i])
    shuffled = idx[:]
    rng.shuffle(shuffled)
    zig = []
    lo, hi = 0, n - 1
    while lo <= hi:
        zig.append(by_t[lo])
        if lo != hi:
            zig.append(by_t[hi])
        lo += 1
        hi -= 1
    bursts = []
    chunks = [by_t[i : i + max(1, n // 10)] for i in range(0, n, max(1, n // 10))]
    rng.shuffle(chunks)
    for c in chunks:
        bursts.extend(c)
    bits = max(1, (n - 1).bit_length())
    pos = {i: r for r, i in enumerate(by_t)}
    bitrev = sorted(idx, key=lambda i: int(format(pos[i], f"0{bits}b")[::-1], 2))
    late = by_t[1:] + by_t[:1]  # one very late item far in the past
    return {
        "sorted": by_t,
        "reversed": by_t[::-1],
        "random": shuffled,
        "zigzag": zig,
        "bursty": bursts,
        "bitrev": bitrev,
        "one_late": late,
    }
