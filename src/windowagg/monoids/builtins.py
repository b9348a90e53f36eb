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

from typing import TYPE_CHECKING, Any, ClassVar, Final, Generic, TypeVar

if TYPE_CHECKING:  # a default for T (PEP 696): Max() is Max[float]; typing_extensions
    # is only read by type checkers (mypy bundles its stubs), never imported at run time
    from typing import Protocol

    from typing_extensions import TypeVar as _TypeVarWithDefault

    class _Ordered(Protocol):
        def __lt__(self, other: Any, /) -> bool: ...

    T = _TypeVarWithDefault("T", bound=_Ordered, default=float)
else:
    T = TypeVar("T")

from windowagg.errors import MonoidInputError, MonoidTypeError

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


from windowagg.monoids._checks import _incomparable, _number, _ordered


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
    native_kind: ClassVar[str | None] = "sum"  # see monoids.base.declared_kind
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
    native_kind: ClassVar[str | None] = "count"  # see monoids.base.declared_kind
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
    native_kind: ClassVar[str | None] = "max"  # see monoids.base.declared_kind
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
    native_kind: ClassVar[str | None] = "min"  # see monoids.base.declared_kind
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
    native_kind: ClassVar[str | None] = "first"  # see monoids.base.declared_kind
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
    native_kind: ClassVar[str | None] = "last"  # see monoids.base.declared_kind
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
    native_kind: ClassVar[str | None] = "matmul2x2"  # see monoids.base.declared_kind
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


# The statistics and the extremes with counts live in their own modules; they stay
# importable from here (the compiled core and earlier code import them from this module).
from windowagg.monoids.extremes import ArgMax, ArgMin, MaxCount, MinCount  # noqa: E402
from windowagg.monoids.statistics import (  # noqa: E402
    GeometricMean,
    Mean,
    Product,
    StdDev,
    Variance,
)
