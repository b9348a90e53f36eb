"""Helpers of every ``_check()``: raise :class:`~windowagg.errors.InvariantError`, compare.

``same(a, b)`` is the equality the invariant checks use: ``==``, except that NaN equals
NaN (also inside tuples and lists), so that a window whose user monoid produced a NaN
aggregate is not reported as broken when the stored and the recomputed NaN are two
different float objects.

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

from typing import Any

from windowagg.errors import InvariantError

__all__ = ["invariant", "same"]


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
