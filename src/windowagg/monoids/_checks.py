"""Input checks shared by the built-in monoids (the non-finite rule)."""

from __future__ import annotations

import cmath
import math
import numbers
from typing import Any

from windowagg.errors import MonoidInputError, MonoidTypeError

# --------------------------------------------------------------------------- input checks
#
# The non-finite rule: every built-in whose lift takes a number refuses NaN and ±inf with
# MonoidInputError (a ValueError), and a value that is not a number at all with
# MonoidTypeError (also a TypeError). One NaN would make Max/Min depend on the order of
# comparisons (so on the algorithm), and one inf would stay in a subtract-on-evict sum
# forever (inf - inf is NaN). Count ignores its input; user monoids decide for
# themselves. Each check is two type tests on the common path (int, finite float).


def _non_finite(x: Any, who: str) -> MonoidInputError:
    return MonoidInputError(
        f"{who}() refuses non-finite value {x!r}: drop or repair the record (a windows "
        "policy can route it to the rejects)"
    )


def _is_finite(x: Any) -> bool:
    """False for NaN (also signalling) and ±inf of any number type, True otherwise."""
    try:
        return math.isfinite(x)
    except OverflowError:  # an int or Fraction too large for a float is still finite
        return True
    except (TypeError, ValueError):  # complex, Decimal("sNaN")
        try:
            return cmath.isfinite(x)
        except (TypeError, ValueError, OverflowError):
            return False


def _number(x: Any, who: str) -> Any:
    """*x* unchanged if it is a finite number; else MonoidInputError / MonoidTypeError.

    >>> _number(2, "Sum"), _number(0.5, "Sum")
    (2, 0.5)
    >>> _number(float("inf"), "Sum")
    Traceback (most recent call last):
    ...
    windowagg.errors.MonoidInputError: Sum() refuses non-finite value inf: drop or repair the record (a windows policy can route it to the rejects)
    >>> _number("x", "Sum")
    Traceback (most recent call last):
    ...
    windowagg.errors.MonoidTypeError: Sum() needs a number, got str 'x'
    """
    t = type(x)
    if t is int:
        return x
    if t is float:
        if x - x == 0.0:
            return x
        raise _non_finite(x, who)
    if isinstance(x, numbers.Number):  # bool, Fraction, Decimal, complex, numpy scalars
        if _is_finite(x):
            return x
        raise _non_finite(x, who)
    raise MonoidTypeError(f"{who}() needs a number, got {t.__name__} {x!r:.60}")


def _incomparable(who: str, a: Any, b: Any) -> MonoidTypeError:
    return MonoidTypeError(
        f"{who}() cannot compare {a!r:.40} ({type(a).__name__}) with {b!r:.40} "
        f"({type(b).__name__}): use one value type per window"
    )


def _ordered(x: Any, who: str) -> Any:
    """*x* unchanged unless it is a non-finite number or unordered (NaN-like).

    Strings, datetimes and other ordered values pass; numbers must be finite.
    """
    t = type(x)
    if t is int or t is str:
        return x
    if t is float:
        if x - x == 0.0:
            return x
        raise _non_finite(x, who)
    if isinstance(x, numbers.Number):
        if _is_finite(x):
            return x
        raise _non_finite(x, who)
    try:
        unordered = x != x
    except TypeError:  # e.g. pandas.NaT-like objects whose comparison raises
        unordered = True
    if unordered is True or (unordered is not False and bool(unordered)):
        raise MonoidInputError(
            f"{who}() got an unordered value {x!r} (NaN-like): drop or repair the record"
        )
    return x
