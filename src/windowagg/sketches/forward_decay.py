"""Decayed sums, counts and means as monoids over ``(time, value)`` events: exponential decay
by forward decay with a landmark, polynomial decay exactly over the window's events.

Fact card
---------
==================  ==========================================================================
ExpDecayed          exponential decay, half-life h: the answer as of T is
                    ``sum v_i 2^(-(T - t_i)/h)`` (``"sum"``), ``sum 2^(-(T - t_i)/h)``
                    (``"count"``) or their ratio (``"mean"``, pandas' ``ewm(adjust=True)``)
  partial           ``(r, S, W)``: landmark r = the newest time in it, ``S = sum v_i
                    2^((t_i - r)/h)``, ``W = sum 2^((t_i - r)/h)``; every weight <= 1, so
                    nothing overflows (old events underflow to 0, as their weight does)
  answer            the mean ``S / W`` unscaled (``W >= 1``: never 0 / 0); a sum or count
                    scaled to the as-of time by :func:`scale2` (one rounding into the
                    subnormals); error bounds in docs/decay.md
  combine           the partial with the older landmark rescaled to the newer one
                    (``x 2^((r_old - r_new)/h)``); commutative bit for bit, associative up to
                    rounding (a few ulps per combine)
  ordering          out-of-order (a commutative monoid); FIFO and FiBA aggregators, panes
  time              O(1) per lift and combine (one ``exp2``); the engine's batch windows in
                    one native call (:func:`exp_slices`, two stacks: no subtraction)
  space             three numbers per partial
PolyDecayed         polynomial decay ``g(a) = (1 + a/unit)^-alpha``, age a in microseconds
                    over ``unit`` (default 1 second): not a monoid with a fixed landmark
                    (``g(a + A) != g(a) g(A)``), so its partial is the events themselves
  partial           a tuple of ``(t, v)``: the window's retained events (a bag)
  answer            at emission: weights relative to the newest event's (<= 1; the mean
                    never 0 / 0), ``math.fsum`` over the events (order-free, correctly
                    rounded sums), sums scaled by the newest's weight (log space where it
                    is subnormal), O(w) per window of w events
  space             O(w) per window (sketches with bounded space: ``ValueDivision``)
paper               Cormode, Korn, Tirthapura 2007 (section 2; exponential decay as a sum
                    scaled at query time, Theorem 3's remark); forward decay with a landmark
                    (Cormode, Shkapenyuk, Srivastava, Xu 2009)
==================  ==========================================================================

The engine passes a decayed aggregation ``(t, v)`` pairs (``needs_time``; t in the engine's
integer unit, microseconds in every front end) and evaluates each window's partial as of the
window's end with :meth:`ExpDecayed.as_of`. ``lower`` answers as of the partial's newest
event.

Examples
--------
>>> m = ExpDecayed(half_life=10, what="sum")
>>> p = m.combine(m.lift((0, 4.0)), m.lift((10, 1.0)))
>>> p, m.as_of(p, 20)
((10, 3.0, 1.5), 1.5)
>>> m.combine(m.lift((10, 1.0)), m.lift((0, 4.0))) == p   # commutative
True
>>> ExpDecayed(10, "mean").lower(p)
2.0
>>> q = PolyDecayed(2.0, what="sum", unit=1)
>>> q.as_of(q.combine(q.lift((0, 9.0)), q.lift((2, 1.0))), 2)
2.0
"""

from __future__ import annotations

import math
from typing import Any, Final

import numpy as np

from windowagg.errors import ArgumentError

__all__ = [
    "WHATS",
    "ExpDecayed",
    "PolyDecayed",
    "exp_fold",
    "exp_slices",
    "exp_slices_from",
    "poly_slices",
    "scale2",
]

#: What a decayed aggregation answers: the decayed sum of values, of weights, or their ratio.
WHATS: Final = ("sum", "count", "mean")

ExpPartial = tuple[int, float, float]

#: The smallest normal double, 2^-1022: a weight below it is applied in log space.
_TINY: Final = 2.0**-1022


def _what(what: str) -> str:
    if what not in WHATS:
        raise ArgumentError(f"what={what!r} is not one of {WHATS}; give 'sum', 'count' or 'mean'")
    return what


def _answer(what: str, s: float, w: float) -> float | None:
    if what == "sum":
        return s
    if what == "count":
        return w
    return s / w if w > 0 else None


def scale2(x: float, e: float) -> float:
    """``x 2^e`` rounded once where it is subnormal (the native kernel's ``scale2``).

    While ``2^e`` is a normal double (``e >= -1022``): one ``exp2`` and one product. Below,
    ``exp2`` would round ``2^e`` onto the subnormal grid (or to 0) and the product would
    carry that error (``1e300 * 2^-1100`` is a normal number, ``2^-1100`` is 0): ``exp2``
    of e's fraction, then ``ldexp`` by its integer part, one rounding (absolute error
    <= 2^-1075). O(1).

    >>> scale2(1e300, -1100.0) > 0, 1e300 * 2.0 ** -1100.0
    (True, 0.0)
    >>> scale2(3.0, -1075.5), scale2(3.0, -1072.0) == 3 * 2.0 ** -1072
    (5e-324, True)
    """
    if e >= -1022.0:
        return x * math.exp2(e)
    n = math.floor(e)
    return math.ldexp(x * math.exp2(e - n), max(n, -4000))


def _scale2_array(x: np.ndarray, e: np.ndarray) -> np.ndarray:
    """:func:`scale2` elementwise. O(len)."""
    with np.errstate(over="ignore", under="ignore"):
        n = np.floor(np.minimum(e, 0.0))
        low = np.ldexp(x * np.exp2(e - n), np.maximum(n, -4000).astype(np.int64))
        out: np.ndarray = np.where(e >= -1022.0, x * np.exp2(np.maximum(e, -1022.0)), low)
    return out


class ExpDecayed:
    """Exponentially decayed sum / count / mean of ``(t, v)`` events (see the module docstring).

    Parameters
    ----------
    half_life
        The half-life in the unit of t (the engine's: microseconds); positive, finite.
    what
        ``"sum"``, ``"count"`` or ``"mean"``.

    The identity is ``None`` (no events). O(1) per lift, combine, lower and :meth:`as_of`.
    """

    __slots__ = ("half_life", "what")
    needs_time: Final = True
    partial: Final = "constant"
    """Its partial is three numbers whatever it holds: a stream keeps a key's whole history
    as one partial (:mod:`windowagg.windows.engine.history`)."""
    commutative: Final = True
    idempotent: Final = False
    invertible: Final = False
    identity: Final = None

    def __init__(self, half_life: float, what: str = "mean") -> None:
        if not (isinstance(half_life, int | float) and math.isfinite(half_life) and half_life > 0):
            raise ArgumentError(
                f"half_life={half_life!r} must be a positive finite duration; give e.g. "
                "half_life=1h"
            )
        self.half_life = float(half_life)
        self.what = _what(what)

    def lift(self, x: tuple[int, float]) -> ExpPartial:
        """``(t, v)`` -> ``(t, v, 1.0)``: the event is its own landmark. O(1)."""
        t, v = x
        return (int(t), float(v), 1.0)

    def combine(self, a: ExpPartial | None, b: ExpPartial | None) -> ExpPartial | None:
        """The older landmark's partial rescaled to the newer one, then added. O(1)."""
        if a is None:
            return b
        if b is None:
            return a
        if a[0] < b[0]:
            a, b = b, a
        e = (b[0] - a[0]) / self.half_life
        if e >= -1022.0:  # scale2 inline (one exp2 for S and W): the reference's hot path
            f = math.exp2(e)
            return (a[0], a[1] + b[1] * f, a[2] + b[2] * f)
        return (a[0], a[1] + scale2(b[1], e), a[2] + scale2(b[2], e))

    def as_of(self, p: ExpPartial | None, at: int) -> float | None:
        """The answer of partial *p* as of time *at* (``None``: a mean of no events). O(1).

        The mean is ``S / W`` of the landmark partial (``W >= 1``: never 0 / 0, whatever
        *at*); a sum or count is scaled by ``2^((r - at)/h)`` with :func:`scale2`, and
        underflows to 0 only where its exact value is below 2^-1075."""
        if p is None:
            return None if self.what == "mean" else 0.0
        if self.what == "mean":
            return _answer("mean", p[1], p[2])
        return scale2(p[1] if self.what == "sum" else p[2], (p[0] - at) / self.half_life)

    def lower(self, p: ExpPartial | None) -> float | None:
        """:meth:`as_of` the partial's own landmark (its newest event). O(1)."""
        return self.as_of(p, p[0] if p is not None else 0)

    def slices(
        self, t: np.ndarray, v: np.ndarray, lo: np.ndarray, hi: np.ndarray, end: np.ndarray
    ) -> np.ndarray:
        """The answer over ``(t, v)[lo[j]:hi[j]]`` as of ``end[j]`` for every window j: the
        engine's array verb (:func:`exp_slices`, default backend). O(n + windows)."""
        return exp_slices(self, t, v, lo, hi, end)

    def __repr__(self) -> str:
        return f"ExpDecayed(half_life={self.half_life!r}, what={self.what!r})"


PolyPartial = tuple[tuple[int, float], ...]


class PolyDecayed:
    """Polynomially decayed sum / count / mean of ``(t, v)`` events, exact per window.

    Parameters
    ----------
    alpha
        The exponent: ``g(a) = (1 + a / unit) ** -alpha``; positive, finite.
    what
        ``"sum"``, ``"count"`` or ``"mean"``.
    unit
        The unit of age, in the unit of t (default 1 second in microseconds).

    The partial is the tuple of the events (a bag: combine concatenates, O(len)); the
    answer sums them with ``math.fsum`` (correctly rounded, order-free). Ages below 0 (an
    event after the time asked) count as 0. O(w) per :meth:`as_of` of w events.
    """

    __slots__ = ("alpha", "unit", "what")
    needs_time: Final = True
    partial: Final = "events"
    """Its partial is the events themselves: only a window size bounds it (a stream
    refuses it over the whole history)."""
    commutative: Final = True
    idempotent: Final = False
    invertible: Final = False
    identity: Final = ()

    def __init__(self, alpha: float, what: str = "mean", unit: float = 1_000_000) -> None:
        for name, x in (("alpha", alpha), ("unit", unit)):
            if not (isinstance(x, int | float) and math.isfinite(x) and x > 0):
                raise ArgumentError(
                    f"{name}={x!r} must be a positive finite number; write e.g. decay=poly(2)"
                )
        self.alpha = float(alpha)
        self.unit = float(unit)
        self.what = _what(what)

    def lift(self, x: tuple[int, float]) -> PolyPartial:
        """``(t, v)`` -> a bag of one event. O(1)."""
        t, v = x
        return ((int(t), float(v)),)

    def combine(self, a: PolyPartial, b: PolyPartial) -> PolyPartial:
        """The bag of both partials' events. O(len(a) + len(b))."""
        return a + b

    def as_of(self, p: PolyPartial, at: int) -> float | None:
        """The decayed answer of the events of *p* as of time *at*. O(len(p))."""
        if not p:
            return None if self.what == "mean" else 0.0
        ages = [max(at - t, 0) for t, _ in p]
        a0 = self.unit + min(ages)
        # weights relative to the newest event's (1 for it): they underflow only where an
        # event weighs < 2^-1074 of the newest, so the mean is never 0 / 0
        rel = [(a0 / (self.unit + a)) ** self.alpha for a in ages]
        s = math.fsum(w * v for w, (_, v) in zip(rel, p, strict=True))
        w = math.fsum(rel)
        if self.what == "mean":
            return s / w
        return self._scaled(s if self.what == "sum" else w, a0)

    def _scaled(self, x: float, a0: float) -> float:
        """*x* times the newest event's weight ``g = (a0 / unit)^-alpha``: directly while
        g is a normal double, else in log space (:func:`scale2`). O(1)."""
        g: float = (a0 / self.unit) ** -self.alpha
        if g >= _TINY:
            return x * g
        return scale2(x, -self.alpha * math.log2(a0 / self.unit))

    def lower(self, p: PolyPartial) -> float | None:
        """:meth:`as_of` the partial's newest event. O(len(p))."""
        return self.as_of(p, max((t for t, _ in p), default=0))

    def slices(
        self, t: np.ndarray, v: np.ndarray, lo: np.ndarray, hi: np.ndarray, end: np.ndarray
    ) -> np.ndarray:
        """The answer over ``(t, v)[lo[j]:hi[j]]`` as of ``end[j]`` for every window j: the
        engine's array verb (:func:`poly_slices`). O(sum of the window lengths)."""
        return poly_slices(self, t, v, lo, hi, end)

    def __repr__(self) -> str:
        return f"PolyDecayed({self.alpha!r}, what={self.what!r}, unit={self.unit!r})"


class _Partials:
    """*m* answering its partials (``lower`` the identity), for ``query_slices``."""

    __slots__ = ("combine", "identity", "lift")
    commutative: Final = True

    def __init__(self, m: ExpDecayed) -> None:
        self.identity, self.lift, self.combine = m.identity, m.lift, m.combine

    def lower(self, p: Any) -> Any:
        return p


def exp_slices(
    m: ExpDecayed,
    t: np.ndarray,
    v: np.ndarray,
    lo: np.ndarray,
    hi: np.ndarray,
    end: np.ndarray,
    backend: str | None = None,
) -> np.ndarray:
    """*m*'s answer over ``(t, v)[lo[j]:hi[j]]`` as of ``end[j]``, for every window j.

    *t* (int64) and *v* (float64) are the engine's sorted events; ``lo`` and ``hi`` are
    non-decreasing. Natively (``backend`` ``"auto"`` with the core built, or ``"native"``)
    one call slides two stacks of partials over the windows (no subtraction: evicting
    drops a suffix aggregate); in Python, ``fifo.TwoStacksLite`` over the monoid
    (``query_slices``), then :meth:`ExpDecayed.as_of` per window: the same operations.
    A mean of no events is NaN. O(n + windows).

    >>> m = ExpDecayed(10, "sum")
    >>> exp_slices(m, np.array([0, 10, 20]), np.array([4.0, 1.0, 2.0]), np.array([0, 0, 1]),
    ...            np.array([1, 2, 3]), np.array([0, 10, 20]), backend="python").tolist()
    [4.0, 3.0, 2.5]
    """
    from windowagg._backend import native_verb

    t = np.ascontiguousarray(t, dtype=np.int64)
    v = np.ascontiguousarray(v, dtype=np.float64)
    lo = np.ascontiguousarray(lo, dtype=np.int64)
    hi = np.ascontiguousarray(hi, dtype=np.int64)
    end = np.ascontiguousarray(end, dtype=np.int64)
    core = native_verb(backend, "ExpDecayed", "decay_slices")
    if core is not None:
        s = np.empty(len(lo), dtype=np.float64)
        w = np.empty(len(lo), dtype=np.float64)
        mean = m.what == "mean"
        # a mean from the landmark partials (as of each window's newest event, W >= 1):
        # the ratio needs no scaling, and scaled S and W would both underflow to 0 in a
        # window ending ~1075 half-lives after its newest event (0 / 0)
        core.decay_slices(t, v, lo, hi, end, m.half_life, s, w, not mean)
        if m.what == "sum":
            return s
        if m.what == "count":
            return w
        with np.errstate(invalid="ignore"):  # w is 0 only in an empty window: NaN there
            out: np.ndarray = np.divide(s, w, out=s)  # in place: s is this call's own
        return out
    from windowagg.fifo import TwoStacksLite

    pairs = list(zip(t.tolist(), v.tolist(), strict=True))
    parts = TwoStacksLite(_Partials(m), backend="python").query_slices(pairs, lo, hi)
    ans = [m.as_of(p, e) for p, e in zip(parts, end.tolist(), strict=True)]
    return np.asarray([np.nan if a is None else a for a in ans], dtype=np.float64)


def poly_slices(
    m: PolyDecayed,
    t: np.ndarray,
    v: np.ndarray,
    lo: np.ndarray,
    hi: np.ndarray,
    end: np.ndarray,
) -> np.ndarray:
    """*m*'s answer over ``(t, v)[lo[j]:hi[j]]`` as of ``end[j]``, for every window j, in
    numpy: every window's events weighted and summed (pairwise summation, not ``fsum``:
    within a few ulps of :meth:`PolyDecayed.as_of`), in chunks of about a million
    (window, event) pairs. O(sum of the window lengths).

    >>> poly_slices(PolyDecayed(2.0, "sum", unit=1), np.array([0, 2]), np.array([9.0, 1.0]),
    ...             np.array([0]), np.array([2]), np.array([2])).tolist()
    [2.0]
    """
    lo = np.asarray(lo, dtype=np.int64)
    hi = np.asarray(hi, dtype=np.int64)
    end = np.asarray(end, dtype=np.int64)
    t = np.asarray(t, dtype=np.int64)
    v = np.asarray(v, dtype=np.float64)
    lengths = hi - lo
    out = np.full(len(lo), np.nan if m.what == "mean" else 0.0)
    unit, alpha = m.unit, m.alpha
    bounds = np.concatenate([[0], np.cumsum(lengths)])
    j = 0
    while j < len(lo):  # windows [j, k) hold about a million events in all
        k = int(np.searchsorted(bounds, bounds[j] + 1_000_000, "right"))
        k = min(max(k - 1, j + 1), len(lo))
        n = lengths[j:k]
        if int(n.sum()):
            win = np.repeat(np.arange(j, k), n)
            idx = np.arange(int(n.sum())) - np.repeat(bounds[j:k] - bounds[j], n) + lo[win]
            age = unit + np.maximum(end[win] - t[idx], 0).astype(np.float64)
            has = n > 0
            # each window's weights relative to its newest event's (as PolyDecayed.as_of)
            a0 = np.ones(k - j)
            a0[has] = np.minimum.reduceat(age, (bounds[j:k] - bounds[j])[has])
            wt = (a0[win - j] / age) ** alpha
            s = np.bincount(win - j, wt * v[idx], minlength=k - j)[has]
            w = np.bincount(win - j, wt, minlength=k - j)[has]
            if m.what == "mean":
                out[j:k][has] = s / w
            else:
                x, base = (s if m.what == "sum" else w), a0[has] / unit
                g = base**-alpha
                out[j:k][has] = np.where(
                    g >= _TINY, x * g, _scale2_array(x, -alpha * np.log2(base))
                )
        j = k
    return out


def exp_fold(
    m: ExpDecayed, seed: ExpPartial | None, t: np.ndarray, v: np.ndarray
) -> ExpPartial | None:
    """``seed ⊗ lift(t[0], v[0]) ⊗ ...``: the partial of *seed* and the events, whose times
    are all at or after *seed*'s landmark (a stream folding the events its lateness bound
    passed into the key's frozen partial). In numpy: every weight relative to the newest
    time (<= 1, :func:`scale2` below 2^-1022), one pairwise sum; the same partial as
    :meth:`ExpDecayed.combine` one event at a time up to rounding (a few ulps). O(len(t)).

    >>> m = ExpDecayed(10, "sum")
    >>> exp_fold(m, (0, 4.0, 1.0), np.array([10, 10]), np.array([1.0, 2.0]))
    (10, 5.0, 2.5)
    >>> exp_fold(m, None, np.array([], dtype=np.int64), np.array([])) is None
    True
    """
    t = np.asarray(t, dtype=np.int64)
    v = np.asarray(v, dtype=np.float64)
    if not len(t):
        return seed
    r = int(t.max())
    e = (t - r).astype(np.float64) / m.half_life
    s = float(np.sum(_scale2_array(v, e)))
    w = float(np.sum(_scale2_array(np.ones(len(t)), e)))
    if seed is not None:
        if seed[0] > r:
            raise ValueError(
                f"exp_fold: events at {r} are older than the seed's landmark {seed[0]}"
            )
        f = (seed[0] - r) / m.half_life
        s += scale2(seed[1], f)
        w += scale2(seed[2], f)
    return (r, s, w)


def exp_slices_from(
    m: ExpDecayed,
    seed: ExpPartial | None,
    t: np.ndarray,
    v: np.ndarray,
    hi: np.ndarray,
    end: np.ndarray,
    backend: str | None = None,
) -> np.ndarray:
    """*m*'s answer over ``seed ⊗ (t, v)[0:hi[j]]`` as of ``end[j]`` for every window j:
    :func:`exp_slices` over windows that all start at the first event, seeded with the
    partial of everything older (a whole-history stream's frozen partial; its landmark is
    at or before ``t[0]``). *t* sorted, *hi* non-decreasing.

    Natively: one ``decay_slices(as_of=False)`` call gives each window's landmark partial
    (as of its newest event ``t[hi[j] - 1]``), the seed is rescaled to it with
    :func:`scale2` in numpy (every factor <= 1: nothing overflows), then the answers as
    :meth:`ExpDecayed.as_of` (a mean from the landmark partial, ``W >= 1``; a sum or count
    scaled once to ``end``). In Python: the seed combined with one event at a time and
    :meth:`ExpDecayed.as_of` per window (the same operations). A mean of no events is NaN.
    O(len(t) + windows).

    >>> m = ExpDecayed(10, "sum")
    >>> t, v = np.array([10, 20]), np.array([1.0, 2.0])
    >>> exp_slices_from(m, (0, 4.0, 1.0), t, v, np.array([0, 1, 2]), np.array([0, 10, 20]),
    ...                 backend="python").tolist()
    [4.0, 3.0, 3.5]
    """
    from windowagg._backend import native_verb

    t = np.ascontiguousarray(t, dtype=np.int64)
    v = np.ascontiguousarray(v, dtype=np.float64)
    hi = np.ascontiguousarray(hi, dtype=np.int64)
    end = np.ascontiguousarray(end, dtype=np.int64)
    core = native_verb(backend, "ExpDecayed", "decay_slices")
    if core is None:
        return _exp_slices_from_python(m, seed, t, v, hi, end)
    r = len(hi)
    s = np.empty(r, dtype=np.float64)
    w = np.empty(r, dtype=np.float64)
    core.decay_slices(t, v, np.zeros(r, dtype=np.int64), hi, end, m.half_life, s, w, False)
    has = hi > 0
    land = np.where(has, t[np.maximum(hi - 1, 0)], 0 if seed is None else seed[0])
    if seed is not None:
        f = (seed[0] - land).astype(np.float64) / m.half_life  # <= 0
        s = np.where(has, s, 0.0) + _scale2_array(np.full(r, seed[1]), f)
        w = np.where(has, w, 0.0) + _scale2_array(np.full(r, seed[2]), f)
    empty = ~has if seed is None else np.zeros(r, dtype=bool)
    if m.what == "mean":
        with np.errstate(invalid="ignore", divide="ignore"):
            out: np.ndarray = s / w
        out[empty] = np.nan
        return out
    x = s if m.what == "sum" else w
    out = _scale2_array(x, (land - end).astype(np.float64) / m.half_life)
    out[empty] = 0.0
    return out


def _exp_slices_from_python(
    m: ExpDecayed,
    seed: ExpPartial | None,
    t: np.ndarray,
    v: np.ndarray,
    hi: np.ndarray,
    end: np.ndarray,
) -> np.ndarray:
    """:func:`exp_slices_from` one combine per event (the Python twin). O(n + windows)."""
    ts, vs = t.tolist(), v.tolist()
    p = seed
    held = 0
    combine, as_of = m.combine, m.as_of
    out: list[float] = []
    for b, e in zip(hi.tolist(), end.tolist(), strict=True):
        for i in range(held, b):
            p = combine(p, (ts[i], vs[i], 1.0))
        held = max(held, b)
        a = as_of(p, e)
        out.append(np.nan if a is None else a)
    return np.asarray(out, dtype=np.float64)
