"""Built-in statistics monoids: Mean, Variance, StdDev, GeometricMean, Product.

Each class documents identity, lift, combine, lower, and whether it is commutative,
idempotent and invertible; all operations are O(1). Re-exported by
``windowagg.monoids`` (and ``windowagg.monoids.builtins``).
"""

from __future__ import annotations

import math
import numbers
from decimal import Decimal
from typing import Any, ClassVar, Final

from windowagg.errors import ArgumentError, MonoidInputError, MonoidTypeError
from windowagg.monoids._checks import _non_finite, _number


def _too_large(x: Any, who: str) -> MonoidInputError:
    """The error for a finite number beyond the float64 range (``10**400``)."""
    digits = f"an int of {len(str(abs(x)))} digits" if type(x) is int else repr(x)[:40]
    return MonoidInputError(
        f"{who}() refuses {digits}: it is beyond the float64 range (about ±1.8e308), and "
        f"{who}'s result is a float; scale the values down first (e.g. divide by 1e300), "
        "or aggregate them with Sum, which keeps ints exact"
    )


def _float_range(x: Any, who: str) -> Any:
    """*x* unchanged unless it is a number too large for a float (MonoidInputError)."""
    if type(x) is int:
        if x.bit_length() <= 1023:
            return x
    elif type(x) is float:
        return x
    try:
        float(x)
    except OverflowError:
        raise _too_large(x, who) from None
    except (TypeError, ValueError):  # complex and the like: no float form, no range
        pass
    return x


def _overflow(who: str, what: str) -> MonoidInputError:
    return MonoidInputError(
        f"{who}(): {what} is beyond the float64 range (about ±1.8e308); scale the values "
        "down first (e.g. divide by 1e300)"
    )


def _real(x: Any, who: str) -> float:
    """*x* as a finite float; MonoidInputError for NaN, ±inf or a real too large for a
    float, MonoidTypeError naming *who* for bools, strings and the like."""
    if type(x) is float:
        if x - x == 0.0:
            return x
        raise _non_finite(x, who)
    if not isinstance(x, bool) and isinstance(x, (numbers.Real, Decimal)):
        try:
            v = float(x)
        except OverflowError:
            raise _too_large(x, who) from None
        except ValueError:
            raise _non_finite(x, who) from None
        if v - v == 0.0:
            return v
        raise _non_finite(x, who)
    raise MonoidTypeError(f"{who}() needs a real number, got {type(x).__name__} {x!r:.60}")


class Mean:
    """Arithmetic mean. A commutative group over partials ``(sum, count)``.

    ===========  ====================================================
    identity     ``(0, 0)``
    lift(x)      ``(x, 1)``; NaN, ±inf and numbers beyond float64 (``10**400``) raise
                 :class:`MonoidInputError`
    combine      ``(s1 + s2, n1 + n2)``
    lower(a)     ``s / n``; ``None`` when ``n == 0`` (empty window)
    inverse(a)   ``(-s, -n)``
    ===========  ====================================================

    Commutative, not idempotent, invertible. The sum is kept as given (ints stay exact);
    with floats an inverse (subtract-on-evict) accumulates rounding error like
    :class:`Sum` does.

    Examples
    --------
    >>> m = Mean(); a = m.combine(m.lift(1), m.combine(m.lift(2), m.lift(6)))
    >>> a, m.lower(a), m.lower(m.identity)
    ((9, 3), 3.0, None)
    >>> m.lower(m.combine(a, m.inverse(m.lift(6))))
    1.5
    """

    __slots__ = ()
    name: Final = "mean"
    native_kind: ClassVar[str | None] = "mean"  # see monoids.base.declared_kind
    commutative: Final = True
    idempotent: Final = False
    invertible: Final = True
    identity: Final[tuple[Any, int]] = (0, 0)

    def lift(self, x: float) -> tuple[float, int]:
        return (_float_range(_number(x, "Mean"), "Mean"), 1)

    def combine(self, a: tuple[float, int], b: tuple[float, int]) -> tuple[float, int]:
        try:
            return (a[0] + b[0], a[1] + b[1])
        except OverflowError:  # an exact int sum beyond float64, meeting a float
            raise _overflow("Mean", "the exact int sum of the window, added to a float,") from None

    def lower(self, a: tuple[float, int]) -> float | None:
        try:
            return a[0] / a[1] if a[1] else None
        except OverflowError:  # an exact int sum whose mean is beyond float64
            raise _overflow("Mean", f"the mean of {a[1]} values (an exact int sum)") from None

    def inverse(self, a: tuple[float, int]) -> tuple[float, int]:
        return (-a[0], -a[1])

    def __repr__(self) -> str:
        return "Mean()"


VarPartial = tuple[int, float, float]


class Variance:
    """Variance with a numerically stable merge. A commutative monoid, deliberately not a group.

    Partials are ``(n, mean, M2)`` where ``M2`` is the sum of squared deviations from the
    mean; two partials merge with the pairwise formula of Chan, Golub and LeVeque (1979):
    ``delta = mean_b - mean_a``, ``mean = mean_a + delta * n_b / n``,
    ``M2 = M2_a + M2_b + delta**2 * n_a * n_b / n``. Unlike the textbook
    ``(n, Σx, Σx²)`` form it does not cancel catastrophically when the mean is large
    compared with the spread.

    ===========  ==================================================================
    identity     ``(0, 0.0, 0.0)``
    lift(x)      ``(1, float(x), 0.0)``; NaN and ±inf raise :class:`MonoidInputError`
    combine      Chan et al.'s pairwise merge (above); combining with the identity
                 returns the other partial unchanged
    lower(a)     ``M2 / (n - ddof)``; ``None`` when ``n <= ddof`` (empty window, or a
                 single value with ``ddof=1``)
    ===========  ==================================================================

    Commutative (up to float rounding), not idempotent, **not invertible**: un-merging
    ``M2 = M2_ab - M2_b - delta**2 n_a n_b / n`` subtracts nearly equal numbers when the
    remaining spread is small, so the result can be badly wrong or negative after a few
    evictions. Use a monoid-only aggregator (TwoStacks, DABA, FiBA) instead of
    SubtractOnEvict. Associativity holds up to rounding; check it with
    ``laws.check(..., eq=laws.approx())``.

    Parameters
    ----------
    ddof : int
        Delta degrees of freedom: 0 (default) for the population variance, 1 for the
        sample variance.

    Examples
    --------
    >>> v = Variance(); a = v.identity
    >>> for x in (2, 4, 4, 4, 5, 5, 7, 9): a = v.combine(a, v.lift(x))
    >>> a, v.lower(a), Variance(ddof=1).lower(a)
    ((8, 5.0, 32.0), 4.0, 4.571428571428571)
    >>> v.lower(v.identity) is None
    True
    """

    __slots__ = ("ddof",)
    name: Final = "variance"
    native_kind: ClassVar[str | None] = "variance"  # see monoids.base.declared_kind
    commutative: Final = True
    idempotent: Final = False
    invertible: Final = False
    identity: Final[VarPartial] = (0, 0.0, 0.0)

    def __init__(self, ddof: int = 0) -> None:
        if isinstance(ddof, bool) or not isinstance(ddof, int) or ddof < 0:
            raise ArgumentError(f"{type(self).__name__}: ddof must be an int >= 0, got {ddof!r}")
        self.ddof = ddof

    def lift(self, x: Any) -> VarPartial:
        return (1, _real(x, type(self).__name__), 0.0)

    def combine(self, a: VarPartial, b: VarPartial) -> VarPartial:
        na, ma, qa = a
        nb, mb, qb = b
        if not nb:
            return a
        if not na:
            return b
        n = na + nb
        delta = mb - ma
        return (n, ma + delta * nb / n, qa + qb + delta * delta * na * nb / n)

    def lower(self, a: VarPartial) -> float | None:
        dof = a[0] - self.ddof
        return a[2] / dof if dof > 0 else None

    def __repr__(self) -> str:
        return f"{type(self).__name__}(ddof={self.ddof})"


class StdDev(Variance):
    """Standard deviation: :class:`Variance` with ``lower = sqrt(variance)``.

    Same partials, identity, lift and combine as :class:`Variance` (commutative, not
    idempotent, not invertible); ``lower`` is ``None`` when ``n <= ddof``.

    >>> s = StdDev(ddof=0); a = s.identity
    >>> for x in (2, 4, 4, 4, 5, 5, 7, 9): a = s.combine(a, s.lift(x))
    >>> s.lower(a)
    2.0
    """

    __slots__ = ()
    name: Final = "stddev"  # type: ignore[misc]
    native_kind: ClassVar[str | None] = "stddev"  # see monoids.base.declared_kind

    def lower(self, a: VarPartial) -> float | None:
        dof = a[0] - self.ddof
        return math.sqrt(a[2] / dof) if dof > 0 else None


class GeometricMean:
    """Geometric mean, in log space. A commutative group over ``(sum_log, count)``.

    ===========  ==================================================================
    identity     ``(0.0, 0)`` (the authors' C++ had ``(1.0, 0)``: every combine with
                 it multiplied the result by e; see guides/reference-bug-classes B2)
    lift(x)      ``(log(x), 1)``; *x* must be a finite real number > 0, else
                 :class:`MonoidInputError`
    combine      ``(l1 + l2, n1 + n2)``
    lower(a)     ``exp(l / n)``; ``None`` when ``n == 0`` (empty window)
    inverse(a)   ``(-l, -n)``
    ===========  ==================================================================

    Commutative, not idempotent, invertible (as exactly as float :class:`Sum`: an inverse
    leaves rounding error in ``l``, never in ``n``). Associative up to float rounding.

    Examples
    --------
    >>> g = GeometricMean(); a = g.combine(g.lift(2), g.lift(8))
    >>> round(g.lower(a), 12), g.lower(g.identity)
    (4.0, None)
    >>> g.lift(0)
    Traceback (most recent call last):
    ...
    windowagg.errors.MonoidInputError: GeometricMean() needs a finite number > 0, got 0
    """

    __slots__ = ()
    name: Final = "geomean"
    commutative: Final = True
    idempotent: Final = False
    invertible: Final = True
    identity: Final[tuple[float, int]] = (0.0, 0)

    def lift(self, x: Any) -> tuple[float, int]:
        v = _real(x, "GeometricMean")
        if not v > 0.0:
            raise MonoidInputError(f"GeometricMean() needs a finite number > 0, got {x!r}")
        return (math.log(v), 1)

    def combine(self, a: tuple[float, int], b: tuple[float, int]) -> tuple[float, int]:
        return (a[0] + b[0], a[1] + b[1])

    def lower(self, a: tuple[float, int]) -> float | None:
        return math.exp(a[0] / a[1]) if a[1] else None

    def inverse(self, a: tuple[float, int]) -> tuple[float, int]:
        return (-a[0], -a[1])

    def __repr__(self) -> str:
        return "GeometricMean()"


class Product:
    """Product of numbers. A commutative monoid, not a group.

    ===========  ==================================================================
    identity     ``1``
    lift(x)      ``x``; NaN and ±inf raise :class:`MonoidInputError`
    combine      ``a * b``
    lower(a)     ``a``
    ===========  ==================================================================

    Commutative, not idempotent, **not invertible**: 0 has no inverse, so one zero would
    make subtract-on-evict wrong forever (and ``1 / a`` would also turn exact ints into
    floats). It has no ``inverse`` method. For products of positive values over long
    windows, :class:`GeometricMean` works in log space and is a group.

    >>> p = Product(); p.lower(p.combine(p.lift(3), p.combine(p.lift(-2), p.identity)))
    -6
    """

    __slots__ = ()
    name: Final = "product"
    commutative: Final = True
    idempotent: Final = False
    invertible: Final = False
    identity: Final = 1

    def lift(self, x: Any) -> Any:
        return _number(x, "Product")

    def combine(self, a: Any, b: Any) -> Any:
        return a * b

    def lower(self, a: Any) -> Any:
        return a

    def __repr__(self) -> str:
        return "Product()"
