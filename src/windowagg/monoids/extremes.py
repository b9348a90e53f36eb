"""Built-in extremes with counts and positions: MaxCount, MinCount, ArgMax, ArgMin.

Each class documents identity, lift, combine, lower and its laws; comparisons cost what
the values' ``<`` costs. Re-exported by ``windowagg.monoids`` (and
``windowagg.monoids.builtins``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar, Final

from windowagg.errors import ArgumentTypeError, MonoidInputError
from windowagg.monoids._checks import _incomparable, _ordered


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
    native_kind: ClassVar[str | None] = "argmax"  # see monoids.base.declared_kind
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
    native_kind: ClassVar[str | None] = "argmin"  # see monoids.base.declared_kind

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
