"""Built-in monoids.

Each class documents identity, lift, combine, lower, and whether it is commutative,
idempotent and invertible (a group). Instances are cheap and stateless; hot paths
call ``combine`` directly, so ``combine`` never allocates more than its result.

Complexity: ``lift``, ``combine``, ``lower`` and ``inverse`` are O(1) for every class
here (for numbers of bounded size), except :class:`Concat`, whose ``combine`` is
O(len(a) + len(b)). Comparisons in Min/Max/MinCount/MaxCount/ArgMin/ArgMax cost what
the values' ``<`` costs. The Bloom filter (``bloom.py``) and :class:`Composite`
(``composite.py``) state their own costs.

Examples
--------
>>> from windowagg.monoids import Sum, Max, Concat
>>> s = Sum(); s.lower(s.combine(s.lift(2), s.lift(3)))
5
>>> Max().lower(Max().identity) is None
True
>>> c = Concat(); c.lower(c.combine(c.lift("a"), c.lift("b")))
('a', 'b')
"""

from __future__ import annotations

import cmath
import math
import numbers
from collections.abc import Callable
from decimal import Decimal
from typing import TYPE_CHECKING, Any, Final, Generic, TypeVar

if TYPE_CHECKING:  # a default for T (PEP 696): Max() is Max[float]; typing_extensions
    # is only read by type checkers (mypy bundles its stubs), never imported at run time
    from typing import Protocol

    from typing_extensions import TypeVar as _TypeVarWithDefault

    class _Ordered(Protocol):
        def __lt__(self, other: Any, /) -> bool: ...

    T = _TypeVarWithDefault("T", bound=_Ordered, default=float)
else:
    T = TypeVar("T")

from windowagg.errors import ArgumentError, ArgumentTypeError, MonoidInputError, MonoidTypeError

__all__ = [
    "NOTHING",
    "ArgMax",
    "ArgMin",
    "Concat",
    "Count",
    "First",
    "GeometricMean",
    "Last",
    "MatMul2x2",
    "Max",
    "MaxCount",
    "Mean",
    "Min",
    "MinCount",
    "MonoidInputError",
    "MonoidTypeError",
    "Product",
    "StdDev",
    "Sum",
    "Variance",
]


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


class Sum:
    """Sum of numbers. A commutative group.

    ===========  ==============================================================
    identity     ``0``
    lift(x)      ``x``; NaN and ±inf raise :class:`MonoidInputError`, a value that
                 is not a number :class:`MonoidTypeError`
    combine      ``a + b``
    lower(a)     ``a``
    inverse(a)   ``-a``
    ===========  ==============================================================

    >>> Sum().inverse(Sum().lift(4))
    -4
    """

    __slots__ = ()
    name: Final = "sum"
    commutative: Final = True
    idempotent: Final = False
    invertible: Final = True
    identity: Final = 0

    def lift(self, x: float) -> float:
        t = type(x)
        if t is int or (t is float and not x - x):  # x - x is nan for nan and ±inf
            return x
        res: float = _number(x, "Sum")
        return res

    def combine(self, a: float, b: float) -> float:
        try:  # costs nothing unless two number types do not add (Decimal and float)
            return a + b
        except TypeError:
            raise MonoidTypeError(
                f"Sum() cannot add {a!r:.40} ({type(a).__name__}) and {b!r:.40} "
                f"({type(b).__name__}): use one number type per window"
            ) from None

    def lower(self, a: float) -> float:
        return a

    def inverse(self, a: float) -> float:
        return -a

    def __repr__(self) -> str:
        return "Sum()"


class Count:
    """Number of inputs (the input value is ignored). A commutative group.

    identity ``0``; lift ``1``; combine ``a + b``; lower ``a``; inverse ``-a``.

    >>> c = Count(); c.lower(c.combine(c.lift("x"), c.lift(None)))
    2
    """

    __slots__ = ()
    name: Final = "count"
    commutative: Final = True
    idempotent: Final = False
    invertible: Final = True
    identity: Final = 0

    def lift(self, x: object) -> int:
        return 1

    def combine(self, a: int, b: int) -> int:
        return a + b

    def lower(self, a: int) -> int:
        return a

    def inverse(self, a: int) -> int:
        return -a

    def __repr__(self) -> str:
        return "Count()"


class Max(Generic[T]):
    """Largest input; ``None`` for the empty window. Commutative and idempotent, no inverse.

    identity ``None``; lift ``x``; combine keeps the larger (the left one on ties);
    lower ``a``. Works for any totally ordered values (numbers, datetimes, strings);
    NaN and ±inf raise :class:`MonoidInputError` in ``lift``.

    >>> m = Max(); m.lower(m.combine(m.lift(3), m.combine(m.identity, m.lift(7))))
    7
    """

    __slots__ = ()
    name: Final = "max"
    commutative: Final = True
    idempotent: Final = True
    invertible: Final = False
    identity: Final = None

    def lift(self, x: T) -> T:
        t = type(x)
        y: Any = x  # the arithmetic below is on a float (or an int), not on any T
        if t is int or (t is float and not y - y):  # y - y is nan for nan and ±inf
            return x
        res: T = _ordered(x, "Max")
        return res

    def combine(self, a: T | None, b: T | None) -> T | None:
        if a is None:
            return b
        try:  # costs nothing unless the values cannot be compared
            if b is None or not a < b:
                return a
        except TypeError:
            raise _incomparable("Max", a, b) from None
        return b

    def lower(self, a: T | None) -> T | None:
        return a

    def __repr__(self) -> str:
        return "Max()"


class Min(Generic[T]):
    """Smallest input; ``None`` for the empty window. Commutative and idempotent, no inverse.

    identity ``None``; lift ``x``; combine keeps the smaller (the left one on ties); lower ``a``.
    Any totally ordered values; NaN and ±inf raise :class:`MonoidInputError` in ``lift``.

    >>> m = Min(); m.lower(m.combine(m.lift(3), m.lift(-1)))
    -1
    """

    __slots__ = ()
    name: Final = "min"
    commutative: Final = True
    idempotent: Final = True
    invertible: Final = False
    identity: Final = None

    def lift(self, x: T) -> T:
        t = type(x)
        y: Any = x  # the arithmetic below is on a float (or an int), not on any T
        if t is int or (t is float and not y - y):  # y - y is nan for nan and ±inf
            return x
        res: T = _ordered(x, "Min")
        return res

    def combine(self, a: T | None, b: T | None) -> T | None:
        if a is None:
            return b
        try:  # costs nothing unless the values cannot be compared
            if b is None or not b < a:
                return a
        except TypeError:
            raise _incomparable("Min", a, b) from None
        return b

    def lower(self, a: T | None) -> T | None:
        return a

    def __repr__(self) -> str:
        return "Min()"


class _Nothing:
    """The identity of :class:`First` and :class:`Last` (distinct from every input, even None)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "NOTHING"

    def __reduce__(self) -> str:
        return "NOTHING"


NOTHING: Final = _Nothing()


class First:
    """The oldest input (``x ⊗ y = x``). Not commutative; idempotent; no inverse.

    identity ``NOTHING``; lift ``x``; combine ``a`` unless ``a`` is ``NOTHING``;
    lower ``None`` for ``NOTHING`` else ``a``.

    >>> f = First(); f.lower(f.combine(f.lift("a"), f.lift("b"))), f.lower(f.identity)
    ('a', None)
    """

    __slots__ = ()
    name: Final = "first"
    commutative: Final = False
    idempotent: Final = True
    invertible: Final = False
    identity: Final = NOTHING

    def lift(self, x: Any) -> Any:
        return x

    def combine(self, a: Any, b: Any) -> Any:
        return b if a is NOTHING else a

    def lower(self, a: Any) -> Any:
        return None if a is NOTHING else a

    def __repr__(self) -> str:
        return "First()"


class Last:
    """The youngest input (``x ⊗ y = y``). Not commutative; idempotent; no inverse.

    >>> f = Last(); f.lower(f.combine(f.lift("a"), f.lift("b")))
    'b'
    """

    __slots__ = ()
    name: Final = "last"
    commutative: Final = False
    idempotent: Final = True
    invertible: Final = False
    identity: Final = NOTHING

    def lift(self, x: Any) -> Any:
        return x

    def combine(self, a: Any, b: Any) -> Any:
        return a if b is NOTHING else b

    def lower(self, a: Any) -> Any:
        return None if a is NOTHING else a

    def __repr__(self) -> str:
        return "Last()"


class Concat:
    """All inputs in window order, as a tuple. Not commutative, not idempotent, no inverse.

    identity ``()``; lift ``(x,)``; combine ``a + b``; lower ``a``. Combine costs O(len):
    use it for tests and small windows.

    >>> c = Concat(); c.lower(c.combine(c.lift(1), c.lift(2)))
    (1, 2)
    """

    __slots__ = ()
    name: Final = "concat"
    commutative: Final = False
    idempotent: Final = False
    invertible: Final = False
    identity: Final[tuple[Any, ...]] = ()

    def lift(self, x: Any) -> tuple[Any, ...]:
        return (x,)

    def combine(self, a: tuple[Any, ...], b: tuple[Any, ...]) -> tuple[Any, ...]:
        return a + b

    def lower(self, a: tuple[Any, ...]) -> tuple[Any, ...]:
        return a

    def __repr__(self) -> str:
        return "Concat()"


Mat2 = tuple[int, int, int, int]


class MatMul2x2:
    """Product of 2x2 integer matrices ``(a, b, c, d)`` in window order. Not commutative.

    identity ``(1, 0, 0, 1)``; lift ``x`` (a 4-tuple, row-major); combine the matrix
    product ``a @ b``; lower ``a``. Exact integer arithmetic makes it the sharpest test of
    combine order: almost any reordering or dropped term changes the result.

    >>> m = MatMul2x2(); m.combine((1, 1, 0, 1), (1, 0, 1, 1))
    (2, 1, 1, 1)
    """

    __slots__ = ()
    name: Final = "matmul2x2"
    commutative: Final = False
    idempotent: Final = False
    invertible: Final = False
    identity: Final[Mat2] = (1, 0, 0, 1)

    def lift(self, x: Mat2) -> Mat2:
        return x

    def combine(self, a: Mat2, b: Mat2) -> Mat2:
        a0, a1, a2, a3 = a
        b0, b1, b2, b3 = b
        return (a0 * b0 + a1 * b2, a0 * b1 + a1 * b3, a2 * b0 + a3 * b2, a2 * b1 + a3 * b3)

    def lower(self, a: Mat2) -> Mat2:
        return a

    def __repr__(self) -> str:
        return "MatMul2x2()"


# --------------------------------------------------------------------------- statistics


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
        except (OverflowError, ValueError):
            raise _non_finite(x, who) from None
        if v - v == 0.0:
            return v
        raise _non_finite(x, who)
    raise MonoidTypeError(f"{who}() needs a real number, got {type(x).__name__} {x!r:.60}")


class Mean:
    """Arithmetic mean. A commutative group over partials ``(sum, count)``.

    ===========  ====================================================
    identity     ``(0, 0)``
    lift(x)      ``(x, 1)``; NaN and ±inf raise :class:`MonoidInputError`
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
    commutative: Final = True
    idempotent: Final = False
    invertible: Final = True
    identity: Final[tuple[Any, int]] = (0, 0)

    def lift(self, x: float) -> tuple[float, int]:
        return (_number(x, "Mean"), 1)

    def combine(self, a: tuple[float, int], b: tuple[float, int]) -> tuple[float, int]:
        return (a[0] + b[0], a[1] + b[1])

    def lower(self, a: tuple[float, int]) -> float | None:
        return a[0] / a[1] if a[1] else None

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


# --------------------------------------------------------------------------- extremes with counts


class MaxCount:
    """Largest input and how many times it occurs: partials ``<m, c>``. Commutative monoid.

    ===========  ==================================================================
    identity     ``(None, 0)`` (recognised by ``c == 0``)
    lift(x)      ``(x, 1)``; NaN and ±inf raise :class:`MonoidInputError`
    combine      the pair with the larger ``m``; equal ``m`` keeps the left ``m`` and
                 adds the counts
    lower(a)     ``(m, c)``; ``(None, 0)`` for the empty window
    ===========  ==================================================================

    Commutative, not idempotent (counts add), not invertible: after evicting the only
    maximum, the next ``<m, c>`` must be recomputed from stored partials (the running
    example of the papers for why eviction cannot subtract).

    >>> m = MaxCount(); a = m.identity
    >>> for x in (4, 5, 4, 5, 1): a = m.combine(a, m.lift(x))
    >>> m.lower(a), m.lower(m.identity)
    ((5, 2), (None, 0))
    """

    __slots__ = ()
    name: Final = "max_count"
    commutative: Final = True
    idempotent: Final = False
    invertible: Final = False
    identity: Final[tuple[Any, int]] = (None, 0)

    def lift(self, x: Any) -> tuple[Any, int]:
        return (_ordered(x, "MaxCount"), 1)

    def combine(self, a: tuple[Any, int], b: tuple[Any, int]) -> tuple[Any, int]:
        if not a[1]:
            return b
        if not b[1]:
            return a
        try:  # costs nothing unless the values cannot be compared
            if a[0] < b[0]:
                return b
            if b[0] < a[0]:
                return a
        except TypeError:
            raise _incomparable("MaxCount", a[0], b[0]) from None
        return (a[0], a[1] + b[1])

    def lower(self, a: tuple[Any, int]) -> tuple[Any, int]:
        return a

    def __repr__(self) -> str:
        return "MaxCount()"


class MinCount:
    """Smallest input and how many times it occurs: partials ``<m, c>``. Commutative monoid.

    identity ``(None, 0)``; lift ``(x, 1)``; combine keeps the pair with the smaller
    ``m``, and on equal ``m`` keeps the left ``m`` and adds the counts; lower ``(m, c)``
    (``(None, 0)`` when empty). Commutative, not idempotent, not invertible.

    >>> m = MinCount(); a = m.identity
    >>> for x in (3, 1, 2, 1): a = m.combine(a, m.lift(x))
    >>> m.lower(a)
    (1, 2)
    """

    __slots__ = ()
    name: Final = "min_count"
    commutative: Final = True
    idempotent: Final = False
    invertible: Final = False
    identity: Final[tuple[Any, int]] = (None, 0)

    def lift(self, x: Any) -> tuple[Any, int]:
        return (_ordered(x, "MinCount"), 1)

    def combine(self, a: tuple[Any, int], b: tuple[Any, int]) -> tuple[Any, int]:
        if not a[1]:
            return b
        if not b[1]:
            return a
        try:  # costs nothing unless the values cannot be compared
            if b[0] < a[0]:
                return b
            if a[0] < b[0]:
                return a
        except TypeError:
            raise _incomparable("MinCount", a[0], b[0]) from None
        return (a[0], a[1] + b[1])

    def lower(self, a: tuple[Any, int]) -> tuple[Any, int]:
        return a

    def __repr__(self) -> str:
        return "MinCount()"


class ArgMax:
    """The input whose key is largest; the oldest one wins ties. Monoid, not commutative.

    Inputs are ``(key, value)`` pairs, or any values when a *key* function is given
    (then ``lift(x) = (key(x), x)``, like the authors' ``ArgMax`` with its lifter).

    ===========  ==================================================================
    identity     ``None``
    lift(x)      ``(key, value)`` (the pair itself as a tuple; a 2-list is accepted,
                 or ``(key(x), x)``); a NaN or ±inf key raises :class:`MonoidInputError`
    combine      ``b`` if ``a`` is the identity or ``a.key < b.key``, else ``a``: on
                 equal keys the left (older) partial wins
    lower(a)     ``value``; ``None`` for the empty window
    ===========  ==================================================================

    Keeping the left operand on ties is associative (it selects the leftmost maximal
    element of the window), but not commutative: ``combine(a, b)`` and ``combine(b, a)``
    differ when keys tie and values differ. Idempotent; not invertible.

    Parameters
    ----------
    key : callable, optional
        Maps an input to its comparison key. Without it, inputs must be ``(key, value)``.

    Examples
    --------
    >>> m = ArgMax(); a = m.identity
    >>> for pair in [(3, "a"), (7, "b"), (7, "c"), (1, "d")]: a = m.combine(a, m.lift(pair))
    >>> m.lower(a)
    'b'
    >>> w = ArgMax(key=len); w.lower(w.combine(w.lift("kiwi"), w.lift("banana")))
    'banana'
    """

    __slots__ = ("key",)
    name: Final = "argmax"
    commutative: Final = False
    idempotent: Final = True
    invertible: Final = False
    identity: Final = None

    def __init__(self, key: Callable[[Any], Any] | None = None) -> None:
        if key is not None and not callable(key):
            raise ArgumentTypeError(f"{type(self).__name__}: key must be callable, got {key!r}")
        self.key = key

    def lift(self, x: Any) -> tuple[Any, Any]:
        key = self.key
        if key is None:
            if type(x) is tuple and len(x) == 2:
                pair: tuple[Any, Any] = x
            elif type(x) is list and len(x) == 2:  # e.g. a decoded JSON or Spark array
                pair = (x[0], x[1])
            else:
                raise MonoidInputError(
                    f"{type(self).__name__}.lift needs a (key, value) pair (or construct "
                    f"{type(self).__name__}(key=...)), got {x!r}"
                )
        else:
            pair = (key(x), x)
        _ordered(pair[0], type(self).__name__)
        return pair

    def combine(self, a: tuple[Any, Any] | None, b: tuple[Any, Any] | None) -> Any:
        if a is None:
            return b
        if b is None:
            return a
        try:  # costs nothing unless the keys cannot be compared
            if not a[0] < b[0]:
                return a
        except TypeError:
            raise _incomparable(type(self).__name__, a[0], b[0]) from None
        return b

    def lower(self, a: tuple[Any, Any] | None) -> Any:
        return None if a is None else a[1]

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(key={self.key!r})" if self.key else f"{type(self).__name__}()"
        )


class ArgMin(ArgMax):
    """The input whose key is smallest; the oldest one wins ties. Monoid, not commutative.

    As :class:`ArgMax` with the comparison reversed: combine returns ``b`` if ``a`` is
    the identity or ``b.key < a.key``, else ``a``. identity ``None``; lower ``value``.

    >>> m = ArgMin(); m.lower(m.combine(m.lift((2, "x")), m.lift((2, "y"))))
    'x'
    """

    __slots__ = ()
    name: Final = "argmin"  # type: ignore[misc]

    def combine(self, a: tuple[Any, Any] | None, b: tuple[Any, Any] | None) -> Any:
        if a is None:
            return b
        if b is None:
            return a
        try:  # costs nothing unless the keys cannot be compared
            if not b[0] < a[0]:
                return a
        except TypeError:
            raise _incomparable(type(self).__name__, a[0], b[0]) from None
        return b
