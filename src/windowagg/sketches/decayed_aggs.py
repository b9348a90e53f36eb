"""Decayed quantiles and heavy hitters as timed monoids over the paper's summaries.

Fact card
---------
==================  ==========================================================================
DecayedQuantile     the phi-quantile of a window's values, each event weighted by its decay as
                    of the window's end: ``decayed_p99(v, half_life=1h)``,
                    ``decayed_p50(v, decay=poly(2))``
  summary           exponential: :class:`~windowagg.sketches.ExpDecayQDigest` (Theorem 3);
                    polynomial: :class:`~windowagg.sketches.ValueDivision` (Theorem 6,
                    ``theta = beta = eps/2``); values through ``FloatOrderMapper`` (exact keys)
  error             with D = the window's decayed total as of T and W(< q), W(<= q) the
                    decayed weight of its values below / at most the answer q:
                    ``W(< q) <= (phi + eps) D`` and ``W(<= q) >= (phi - eps) D``
DecayedTopK         the k heaviest values of a window by decayed count, as a JSON text
                    ``[[value, weight], ...]`` heaviest first: ``top_k(v, 3, half_life=1d)``
  summary           :class:`~windowagg.sketches.ExpDecaySpaceSaving` (Theorem 4) with
                    ``m = max(k, ceil(1/eps))`` counters (exponential decay only)
  error             every reported weight w(x) is an upper bound: ``f(x) <= w(x) <= f(x) +
                    D/m``; every value not reported has ``f <= max(the k-th weight, D/m)``
batch               under exponential decay :meth:`DecayedQuantile.slices` and
                    :meth:`DecayedTopK.slices` (the engine's batch verb) answer exactly
                    (:mod:`windowagg.sketches.exact_decay`: error 0); the summaries answer
                    where state is bounded (streaming whole history, per-event streams,
                    merges) and for polynomial decay
ordering            out-of-order: commutative monoids (a late event is weighted by its own
                    time); mergeable, so any tree of combines keeps the bounds with D = the
                    union's total
time                :meth:`slices` (the engine's array verb): a window whose start stays and
                    whose end grows extends one summary (whole history, tumbling windows:
                    O(n) updates); a window whose start moved is rebuilt from its events
                    (sliding windows: O(sum of the window lengths) updates); one query per
                    window (O(s log s) for a digest of s nodes)
space               one summary: <= 12 L / eps + 1 q-digest nodes (L = 64), m counters, or
                    value division's O((1/theta) ln(1/g(oldest age))) digests
paper               Cormode, Korn, Tirthapura 2007: sections 4.1 (Theorems 3 and 4) and 4.3
                    (Theorem 6)
==================  ==========================================================================

Times are the engine's integers (microseconds in every front end); ``half_life`` and
``unit`` are in the same unit.

Examples
--------
>>> m = DecayedQuantile(0.5, half_life=10)
>>> p = m.combine(m.lift((0, 1.0)), m.combine(m.lift((10, 2.0)), m.lift((10, 3.0))))
>>> m.as_of(p, 10)          # weights 0.5, 1, 1: the decayed median is 2.0
2.0
>>> top = DecayedTopK(2, half_life=10)
>>> q = top.combine(top.lift((0, 7.0)), top.combine(top.lift((10, 5.0)), top.lift((10, 5.0))))
>>> top.as_of(q, 10)        # 5.0 twice at 10, 7.0 once, a half-life earlier
'[[5.0, 2.0], [7.0, 0.5]]'
"""

from __future__ import annotations

import json
import math
from typing import Any, Final

import numpy as np

from windowagg.errors import ArgumentError
from windowagg.sketches.decay import PolynomialDecay
from windowagg.sketches.exact_decay import SNAP, fenwick_below, quantile_slices, top_k_slices
from windowagg.sketches.exp_qdigest import ExpDecayQDigest
from windowagg.sketches.mapping import FloatOrderMapper
from windowagg.sketches.space_saving import ExpDecaySpaceSaving
from windowagg.sketches.value_division import ValueDivision

__all__ = ["DEFAULT_EPS", "DecayedQuantile", "DecayedTopK", "top_k_json"]

#: The accuracy of ``decayed_pNN`` and ``top_k`` unless ``eps=`` says otherwise.
DEFAULT_EPS: Final = 0.01

_LN2 = math.log(2.0)
_MAPPER = FloatOrderMapper()


def _check_eps(eps: Any) -> float:
    if isinstance(eps, bool) or not isinstance(eps, int | float) or not 0 < eps < 1:
        raise ArgumentError(f"eps={eps!r} must be a number in (0, 1); give e.g. eps=0.01")
    return float(eps)


def _check_decay(half_life: float | None, alpha: float | None, unit: float) -> None:
    if (half_life is None) == (alpha is None):
        raise ArgumentError("give exactly one decay: half_life=<duration> or alpha (poly)")
    for name, x in (("half_life", half_life), ("alpha", alpha), ("unit", unit)):
        if x is not None and not (isinstance(x, int | float) and math.isfinite(x) and x > 0):
            raise ArgumentError(f"{name}={x!r} must be a positive finite number")


def top_k_json(pairs: Any) -> str:
    """``[(value, weight), ...]`` as the JSON text ``top_k`` answers. O(k).

    >>> top_k_json([(3.0, 1.5), ("JFK", 0.25)])
    '[[3.0, 1.5], ["JFK", 0.25]]'
    """
    return json.dumps([[v, w] for v, w in pairs], allow_nan=False)


class _Timed:
    """What both monoids share: the timed-monoid protocol over a summary factory."""

    __slots__ = ()
    needs_time: Final = True
    partial: Final = "summary"
    """Its partial is a mergeable summary of bounded size: a stream keeps a key's whole
    history as one summary (:mod:`windowagg.windows.engine.history`)."""
    commutative: Final = True
    idempotent: Final = False
    invertible: Final = False
    identity: Final = None

    def _new(self) -> Any:  # pragma: no cover - overridden
        raise NotImplementedError

    def _add(self, s: Any, t: int, v: float) -> None:  # pragma: no cover - overridden
        raise NotImplementedError

    def _answer(self, s: Any, at: int) -> Any:  # pragma: no cover - overridden
        raise NotImplementedError

    def lift(self, x: tuple[int, float]) -> Any:
        """``(t, v)`` -> a summary of the one event. O(1)."""
        t, v = x
        s = self._new()
        self._add(s, int(t), float(v))
        return s

    def combine(self, a: Any, b: Any) -> Any:
        """A new summary of both (neither changes): the summaries' ``merge``. O(s1 + s2)."""
        if a is None:
            return b
        if b is None:
            return a
        s = self._new()
        s.merge(a)
        s.merge(b)
        return s

    def as_of(self, p: Any, at: int) -> Any:
        """The answer of summary *p* as of time *at* (None for no events). O(s log s)."""
        return None if p is None else self._answer(p, int(at))

    def lower(self, p: Any) -> Any:
        """:meth:`as_of` the newest event in *p*. O(s log s)."""
        if p is None:
            return None
        if isinstance(p, ValueDivision):
            newest = p.t_now
            assert newest is not None  # a non-identity partial holds an event
            return self.as_of(p, round(newest * getattr(self, "_unit", 1.0)))
        return self.as_of(p, p.max_timestamp)

    def slices(
        self, t: np.ndarray, v: np.ndarray, lo: np.ndarray, hi: np.ndarray, end: np.ndarray
    ) -> np.ndarray:
        """The answer over ``(t, v)[lo[j]:hi[j]]`` as of ``end[j]`` for every window j (the
        engine's array verb; ``lo``, ``hi`` non-decreasing). A window with the previous one's
        start extends its summary; any other is built from its events. No events: None
        (NaN for a float answer). O(n) updates when starts repeat, else O(sum of the window
        lengths); one query per window."""
        ts = np.asarray(t, dtype=np.int64).tolist()
        vs = np.asarray(v, dtype=np.float64).tolist()
        out: list[Any] = []
        s: Any = None
        held_lo = held_hi = -1
        add, new, answer = self._add, self._new, self._answer  # bound methods: hot loop
        for a, b, e in zip(lo.tolist(), hi.tolist(), end.tolist(), strict=True):
            if s is None or a != held_lo or b < held_hi:
                s, held_hi = new(), a
            for i in range(held_hi, b):
                add(s, ts[i], vs[i])
            held_lo, held_hi = a, b
            out.append(answer(s, e) if b > a else None)
        return self._array(out)

    def fold(self, seed: Any, t: np.ndarray, v: np.ndarray) -> Any:
        """A new summary of *seed* and the events ``(t, v)`` (neither changes): a stream
        folding the events its lateness bound passed into the key's frozen summary. The
        summary compacts itself as it grows, as in :meth:`slices`. O(s + len(t)) updates."""
        if not len(t) and seed is None:
            return None
        s = self._new()
        if seed is not None:
            s.merge(seed)
        add = self._add
        for ti, vi in zip(np.asarray(t).tolist(), np.asarray(v).tolist(), strict=True):
            add(s, ti, vi)
        return s

    def slices_from(
        self, seed: Any, t: np.ndarray, v: np.ndarray, hi: np.ndarray, end: np.ndarray
    ) -> np.ndarray:
        """The answer over ``seed ⊗ (t, v)[0:hi[j]]`` as of ``end[j]`` for every window j
        (*hi* non-decreasing): :meth:`slices` over windows that all start at the first event,
        seeded with the summary of everything older (a whole-history stream's frozen
        summary). One copy of *seed*, then one summary extended event by event, one query
        per window. O(s + len(t)) updates + the queries."""
        ts = np.asarray(t, dtype=np.int64).tolist()
        vs = np.asarray(v).tolist()
        s: Any = None
        if seed is not None:
            s = self._new()
            s.merge(seed)
        held = 0
        out: list[Any] = []
        add, answer = self._add, self._answer
        for b, e in zip(np.asarray(hi).tolist(), np.asarray(end).tolist(), strict=True):
            if s is None and b > held:
                s = self._new()
            for i in range(held, b):
                add(s, ts[i], vs[i])
            held = max(held, b)
            out.append(None if s is None else answer(s, e))
        return self._array(out)

    def _array(self, out: list[Any]) -> np.ndarray:
        return np.asarray([np.nan if x is None else x for x in out], dtype=np.float64)


class DecayedQuantile(_Timed):
    """The decayed *phi*-quantile of ``(t, v)`` events (see the module docstring).

    Parameters
    ----------
    phi
        The quantile, in (0, 1) (``decayed_p99``: 0.99).
    half_life
        Exponential decay: the half-life in the unit of t (microseconds in the engine).
    alpha, unit
        Polynomial decay ``g(a) = (1 + a/unit)^-alpha`` instead (value division).
    eps
        The rank error, a fraction of the decayed total (default 0.01).

    >>> DecayedQuantile(0.99, alpha=2.0, unit=1).rank_error
    0.01
    """

    __slots__ = ("_decay", "_lam", "_unit", "alpha", "eps", "half_life", "phi")

    def __init__(
        self,
        phi: float,
        half_life: float | None = None,
        *,
        alpha: float | None = None,
        unit: float = 1_000_000,
        eps: float = DEFAULT_EPS,
    ) -> None:
        if isinstance(phi, bool) or not isinstance(phi, int | float) or not 0 < phi < 1:
            raise ArgumentError(f"phi={phi!r} must lie strictly between 0 and 1, e.g. 0.99")
        _check_decay(half_life, alpha, unit)
        self.phi = float(phi)
        self.eps = _check_eps(eps)
        self.half_life = None if half_life is None else float(half_life)
        self.alpha = None if alpha is None else float(alpha)
        self._lam = _LN2 / self.half_life if self.half_life is not None else 0.0
        self._unit = 1.0 if self.alpha is None else float(unit)
        self._decay = None if self.alpha is None else PolynomialDecay(self.alpha)

    @property
    def rank_error(self) -> float:
        """The bound: ``W(< q) <= (phi + e) D`` and ``W(<= q) >= (phi - e) D``, e this. O(1)."""
        return self.eps

    def _new(self) -> Any:
        if self._decay is None:
            return ExpDecayQDigest(_MAPPER.universe, self.eps, self._lam)
        half = self.eps / 2
        return ValueDivision(_MAPPER.universe, self._decay, theta=half, beta=half)

    def _add(self, s: Any, t: int, v: float) -> None:
        s.update(_MAPPER.to_key(v), t / self._unit if self._decay is not None else t)

    def slices(
        self, t: np.ndarray, v: np.ndarray, lo: np.ndarray, hi: np.ndarray, end: np.ndarray
    ) -> np.ndarray:
        """:meth:`_Timed.slices`; with exponential decay the exact decayed quantile of every
        window (:func:`~windowagg.sketches.exact_decay.quantile_slices`: the events are
        held, so no summary is needed; error 0). Polynomial decay: the value-division
        summaries."""
        if self._decay is not None:
            return super().slices(t, v, lo, hi, end)
        assert self.half_life is not None
        return quantile_slices(t, v, lo, hi, self.phi, self.half_life)

    def slices_from(
        self, seed: Any, t: np.ndarray, v: np.ndarray, hi: np.ndarray, end: np.ndarray
    ) -> np.ndarray:
        """:meth:`_Timed.slices_from`; with exponential decay each window's quantile comes
        from one Fenwick tree over the seed digest's nodes and the events' leaves (sorted
        once: by the q-digest's post-order, as :meth:`QDigest.quantile` reads it), so a
        window costs O(log(s + n)), not the O(s log s) sort of a digest changed since its
        last query. The same answer as the digest extended event by event while it does
        not compress (every window of the batch path with fewer nodes than the digest's
        capacity: its exact regime); a digest that would compress answers within the same
        bound (the uncompressed one is exact over the seed's nodes and the events).
        O((s + n) log(s + n) + windows log(s + n))."""
        if self._decay is not None:
            return super().slices_from(seed, t, v, hi, end)
        return _fenwick_quantiles(self, seed, t, v, hi, end)

    def _answer(self, s: Any, at: int) -> float:
        if self._decay is None:
            return _MAPPER.to_value(s.quantile(self.phi))
        # weights relative to the newest event's (a quantile does not change when every
        # weight is scaled by one factor): g(age) itself underflows to 0 for every event
        # of a window that ends long after them, and an empty digest has no quantile
        tt = max(at / self._unit, s.t_now)
        base, alpha = 1.0 + (tt - s.t_now), self._decay.alpha
        d = s.digest(tt, decay=lambda age: (base / (1.0 + age)) ** alpha)
        return _MAPPER.to_value(d.quantile(self.phi))

    def __repr__(self) -> str:
        decay = (
            f"half_life={self.half_life!r}"
            if self.alpha is None
            else f"alpha={self.alpha!r}, unit={self._unit!r}"
        )
        return f"DecayedQuantile({self.phi!r}, {decay}, eps={self.eps!r})"


class DecayedTopK(_Timed):
    """The *k* heaviest values of ``(t, v)`` events by exponentially decayed count, answered
    as the JSON text ``[[value, weight], ...]`` heaviest first (see the module docstring).

    Parameters
    ----------
    k
        How many values to report (>= 1).
    half_life
        The half-life in the unit of t (microseconds in the engine).
    eps
        The weight error, a fraction of the decayed total: ``max(k, ceil(1/eps))`` counters.

    >>> DecayedTopK(3, half_life=60, eps=0.1).counters
    10
    """

    __slots__ = ("_lam", "counters", "eps", "half_life", "k")
    answers_text: Final = True
    """Its answers are text (JSON), not numbers: the engine keeps them as objects."""

    def __init__(self, k: int, half_life: float, *, eps: float = DEFAULT_EPS) -> None:
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise ArgumentError(f"k={k!r} must be a whole number >= 1, e.g. top_k(v, 5, ...)")
        _check_decay(half_life, None, 1.0)
        self.k = k
        self.eps = _check_eps(eps)
        self.half_life = float(half_life)
        self._lam = _LN2 / self.half_life
        self.counters = max(k, math.ceil(1.0 / self.eps))

    @property
    def weight_error(self) -> float:
        """The bound: a reported weight is within ``D * this`` above the true one. O(1)."""
        return 1.0 / self.counters

    def _new(self) -> Any:
        return ExpDecaySpaceSaving(lam=self._lam, k=self.counters)

    def _add(self, s: Any, t: int, v: Any) -> None:
        s.update(v, t)

    def slices(
        self, t: np.ndarray, v: np.ndarray, lo: np.ndarray, hi: np.ndarray, end: np.ndarray
    ) -> np.ndarray:
        """The exact decayed top-k of every window
        (:func:`~windowagg.sketches.exact_decay.top_k_slices`: the events are held, so no
        summary is needed; error 0): the same JSON text, None for no events."""
        return top_k_slices(t, v, lo, hi, end, self.k, self.half_life)

    def _answer(self, s: Any, at: int) -> str:
        pairs = sorted(s.heavy_hitters(0.0, at), key=lambda p: (-p[1], str(p[0])))
        return top_k_json(pairs[: self.k])

    def _array(self, out: list[Any]) -> np.ndarray:
        return np.asarray(out, dtype=object)

    def __repr__(self) -> str:
        return f"DecayedTopK({self.k!r}, half_life={self.half_life!r}, eps={self.eps!r})"


def _fenwick_quantiles(
    m: DecayedQuantile, seed: Any, t: np.ndarray, v: np.ndarray, hi: np.ndarray, end: np.ndarray
) -> np.ndarray:
    """:meth:`DecayedQuantile.slices_from` for exponential decay (see there)."""
    ts = np.asarray(t, dtype=np.int64)
    keys = [_MAPPER.to_key(x) for x in np.asarray(v, dtype=np.float64).tolist()]
    proto = seed._q if seed is not None else m._new()._q
    big_l, base = proto._L, proto._base
    ref = float(ts.max()) if len(ts) else 0.0
    entries: list[tuple[int, int, int, float]] = []  # (hi, range shift, node, weight)
    if seed is not None and seed.landmark is not None:
        if not len(ts):
            ref = float(seed.landmark)
        f = math.exp(-m._lam * (ref - seed.landmark)) if ref > seed.landmark else 1.0
        if ref < seed.landmark:  # every event older than the seed's landmark: rescale up
            f = math.exp(m._lam * (seed.landmark - ref))
        for node, w in proto._items().items():
            d = node.bit_length() - 1
            shift = big_l - d
            entries.append((((node - (1 << d) + 1) << shift) - 1, shift, node, w * f))
    lam = m._lam
    weights = np.exp(lam * (ts.astype(np.float64) - ref)).tolist()
    first_leaf = len(entries)
    for x, w in zip(keys, weights, strict=True):
        entries.append((x, 0, base + x, -w))  # marked: added when its window comes
    order = sorted(range(len(entries)), key=lambda i: entries[i][:3])
    n = len(entries)
    pos = [0] * n
    his = [0] * n
    tree = [0.0] * (n + 1)
    for rank, i in enumerate(order):
        pos[i] = rank + 1
        his[rank] = entries[i][0]
        w = entries[i][3]
        if w > 0:
            tree[rank + 1] = w
    for i in range(1, n + 1):  # the Fenwick tree of the seed's weights, in O(n)
        j = i + (i & -i)
        if j <= n:
            tree[j] += tree[i]
    total = sum(e[3] for e in entries[:first_leaf] if e[3] > 0)
    top = 1 << max(n.bit_length() - 1, 0)
    phi = m.phi
    out: list[float] = []
    held = 0
    for b in np.asarray(hi).tolist():
        for i in range(held, b):
            w = -entries[first_leaf + i][3]
            if w > 0:
                total += w
                k = pos[first_leaf + i]
                while k <= n:
                    tree[k] += w
                    k += k & -k
        held = max(held, b)
        if total <= 0.0:
            out.append(math.nan)
            continue
        # the largest prefix below the target (the slack of QDigest.quantile's rank)
        at = fenwick_below(tree, n, top, (phi * total) * SNAP)
        out.append(_MAPPER.to_value(his[min(at, n - 1)]))
    del end  # every window's quantile is the same as of any time (Theorem 3)
    return np.asarray(out, dtype=np.float64)
