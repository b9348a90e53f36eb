"""Decay functions g(age): g(0) = 1, 0 <= g <= 1, non-increasing in age.

Fact card
---------
==========================  ==================================================================
ExponentialDecay(lam)       g(a) = exp(-lam * a); smooth; g(a + A) = g(a) g(A)
PolynomialDecay(alpha)      g(a) = (1 + a) ** -alpha; smooth (log-convex)
SlidingWindowDecay(W)       g(a) = 1 if a < W else 0; not smooth
any callable                accepted where a decay is needed (Theorem 5 takes any monotone g)
is_smooth(g, ages)          numeric check of log-convexity (Definition 6) on a grid, O(len)
paper                       Cormode, Korn, Tirthapura 2007, section 2 and Definition 6
==========================  ==================================================================

Ages are ``t - t_i`` in the stream's time units. ``neg_log(a)`` is ``-ln g(a)``, computed
without underflow (value division uses it to find age bands).

Examples
--------
>>> PolynomialDecay(2.0)(3.0)
0.0625
>>> round(ExponentialDecay(0.5).neg_log(4.0), 12)
2.0
>>> is_smooth(PolynomialDecay(1.0), range(0, 1000)), is_smooth(lambda a: math.exp(-a * a), range(50))
(True, False)
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable

from windowagg.errors import ArgumentError

__all__ = [
    "Decay",
    "ExponentialDecay",
    "PolynomialDecay",
    "SlidingWindowDecay",
    "is_smooth",
    "neg_log_of",
]

Decay = Callable[[float], float]


class ExponentialDecay:
    """g(a) = exp(-lam * a), lam > 0. O(1) per evaluation."""

    __slots__ = ("lam",)

    def __init__(self, lam: float) -> None:
        if not (math.isfinite(lam) and lam > 0):
            raise ArgumentError(f"lam must be a positive finite number, got {lam!r}")
        self.lam = float(lam)

    def __call__(self, age: float) -> float:
        return math.exp(-self.lam * age)

    def neg_log(self, age: float) -> float:
        return self.lam * age

    def __repr__(self) -> str:
        return f"ExponentialDecay({self.lam})"


class PolynomialDecay:
    """g(a) = (1 + a) ** -alpha, alpha > 0. O(1) per evaluation."""

    __slots__ = ("alpha",)

    def __init__(self, alpha: float) -> None:
        if not (math.isfinite(alpha) and alpha > 0):
            raise ArgumentError(f"alpha must be a positive finite number, got {alpha!r}")
        self.alpha = float(alpha)

    def __call__(self, age: float) -> float:
        return float((1.0 + age) ** -self.alpha)

    def neg_log(self, age: float) -> float:
        return self.alpha * math.log1p(age)

    def __repr__(self) -> str:
        return f"PolynomialDecay({self.alpha})"


class SlidingWindowDecay:
    """g(a) = 1 if a < width else 0 (ages 0 .. width-1 count). O(1) per evaluation."""

    __slots__ = ("width",)

    def __init__(self, width: int) -> None:
        if isinstance(width, bool) or not isinstance(width, int) or width < 1:
            raise ArgumentError(f"width must be an int >= 1, got {width!r}")
        self.width = width

    def __call__(self, age: float) -> float:
        return 1.0 if age < self.width else 0.0

    def neg_log(self, age: float) -> float:
        return 0.0 if age < self.width else math.inf

    def __repr__(self) -> str:
        return f"SlidingWindowDecay({self.width})"


def neg_log_of(g: Decay) -> Callable[[float], float]:
    """``-ln g(a)`` for any decay: its own ``neg_log`` if it has one, else computed."""
    nl = getattr(g, "neg_log", None)
    if callable(nl):
        return nl  # type: ignore[no-any-return]

    def _nl(age: float) -> float:
        v = g(age)
        return math.inf if v <= 0 else -math.log(v)

    return _nl


def is_smooth(g: Decay, ages: Iterable[float], *, tol: float = 1e-12) -> bool:
    """True if ln g has non-negative second differences on the (sorted, evenly spaced) grid.

    That is log-convexity, the paper's smoothness (Definition 6) for g > 0; value division
    (Theorem 6) needs it. O(len(ages)).
    """
    nl = neg_log_of(g)
    pts = sorted(ages)
    vals = [-nl(a) for a in pts]
    if any(math.isinf(v) for v in vals):
        return False
    for i in range(1, len(vals) - 1):
        if vals[i + 1] - 2 * vals[i] + vals[i - 1] < -tol * max(1.0, abs(vals[i])):
            return False
    return True
