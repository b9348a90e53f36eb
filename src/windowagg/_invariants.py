"""Helpers of every ``_check()``: raise :class:`~windowagg.errors.InvariantError`, compare.

``same(a, b)`` is the equality the invariant checks use: ``==``, except that NaN equals
NaN (also inside tuples and lists), so that a window whose user monoid produced a NaN
aggregate is not reported as broken when the stored and the recomputed NaN are two
different float objects.

``close(a, b, slack)`` is the comparison of a stored aggregate with a refold of the
partials *in another association* (DABA's, AMTA's and the two-stacks' checks): float
addition is not associative, so the two may differ in the last bits. Exact values (ints,
tuples of ints, strings, ...) are compared with :func:`same`; an inexact number (float,
complex, Decimal, numpy floats), also inside tuples and lists, may differ by
``slack.rel * max(|a|, |b|) + slack.abs``, where :class:`Slack` scales both to the number
of partials folded and the magnitudes in them (n floating-point operations, each off by
at most half an ulp of a partial sum bounded by the sum of magnitudes). A corrupted
partial is still caught: the slack is a few hundred ulps of the window's magnitudes.

>>> s = Slack([0.1, 0.2, 0.3])
>>> (0.1 + 0.2) + 0.3 == 0.1 + (0.2 + 0.3), close((0.1 + 0.2) + 0.3, 0.1 + (0.2 + 0.3), s)
(False, True)
>>> close(0.6, 0.6000001, s), close((3, 0.6), (3, 0.6 + 1e-16), s), close(1, 2, s)
(False, True, False)

>>> nan = float("nan")
>>> same(nan, float("nan")), same((1, nan), (1, float("nan"))), same(1.0, 2.0)
(True, True, False)
>>> invariant(same([nan], [nan]), "DABA", "never shown")
>>> invariant(False, "DABA", "l_A entry 0")
Traceback (most recent call last):
...
windowagg.errors.InvariantError: DABA: invariant broken: l_A entry 0
"""

from __future__ import annotations

import numbers
from collections.abc import Iterable
from typing import Any

from windowagg.errors import InvariantError

__all__ = ["Slack", "close", "invariant", "same"]

_ULP = 2.0**-52  # the spacing of float64 numbers near 1


def invariant(ok: bool, who: str, what: str) -> None:
    """Raise :class:`InvariantError` ``"<who>: invariant broken: <what>"`` unless *ok*."""
    if not ok:
        raise InvariantError(f"{who}: invariant broken: {what}")


def _is_nan(x: Any) -> bool:
    try:
        ne = x != x
        return ne is True or (ne is not False and bool(ne))
    except (TypeError, ValueError):  # e.g. an array whose truth value is ambiguous
        return False


def same(a: Any, b: Any) -> bool:
    """``a == b``, with NaN equal to NaN, also element-wise in tuples and lists. O(size)."""
    if a is b:
        return True
    try:
        eq = a == b
        if eq is True or (eq is not False and bool(eq)):
            return True
    except (TypeError, ValueError):
        pass
    if type(a) in (tuple, list) and type(a) is type(b) and len(a) == len(b):
        return all(same(x, y) for x, y in zip(a, b, strict=True))
    return _is_nan(a) and _is_nan(b)


def _inexact(x: Any) -> bool:
    """A number whose arithmetic rounds: not a bool, an int or another exact rational."""
    return isinstance(x, numbers.Number) and not isinstance(x, numbers.Rational)


def magnitude(x: Any) -> float:
    """The sum of ``|number|`` over *x* (a number, or tuples/lists of them); 0 otherwise."""
    if isinstance(x, bool):
        return 0.0
    if isinstance(x, numbers.Number):
        try:
            v: Any = x
            m = float(abs(v))
        except (TypeError, ValueError, OverflowError):
            return float("inf")
        return m if m == m else 0.0
    if type(x) in (tuple, list):
        return sum(magnitude(y) for y in x)
    return 0.0


class Slack:
    """How far a refold of *partials* may drift from a stored aggregate of them. O(n).

    ``rel = 4 · n · 2**-52`` and ``abs = rel · Σ magnitude(p)``.
    """

    __slots__ = ("abs", "rel")

    def __init__(self, partials: Iterable[Any]) -> None:
        n = 0
        total = 0.0
        for p in partials:
            n += 1
            total += magnitude(p)
        self.rel = 4.0 * max(n, 1) * _ULP
        self.abs = self.rel * total


def close(a: Any, b: Any, slack: Slack) -> bool:
    """:func:`same`, with inexact numbers allowed to differ by *slack*. O(size)."""
    if same(a, b):
        return True
    if type(a) in (tuple, list) and type(a) is type(b) and len(a) == len(b):
        return all(close(x, y, slack) for x, y in zip(a, b, strict=True))
    if not (_inexact(a) or _inexact(b)):
        return False
    if not (isinstance(a, numbers.Number) and isinstance(b, numbers.Number)):
        return False
    x: Any = a
    y: Any = b
    try:
        d = abs(x - y)
        m = max(abs(x), abs(y))
        return bool(d <= slack.abs + slack.rel * m)
    except (TypeError, ValueError, OverflowError, ArithmeticError):
        return False
