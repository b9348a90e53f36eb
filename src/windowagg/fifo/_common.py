"""Helpers shared by the ``windowagg.fifo`` classes (argument checks and error messages).

None of these run inside a hot loop more than once per public call.

>>> check_count(2, 3, "DABA")
2
"""

from __future__ import annotations

import operator
import warnings
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from windowagg._invariants import Slack, close, invariant, same
from windowagg.errors import ArgumentTypeError, EmptyWindowError, InvariantError
from windowagg.monoids.base import declared_kind

__all__ = [
    "DeprecatedEnds",
    "FoldChecks",
    "InvariantError",
    "Slack",
    "check_count",
    "check_lemma_4_1",
    "close",
    "empty_error",
    "flip_op",
    "hot_ops",
    "invariant",
    "same",
]

# Declared kinds (monoids.base.declared_kind) whose ``lower`` returns its argument
# unchanged, and those whose ``lift`` does too: the hot paths skip those calls for them (a
# subclass that redefines lift/combine/lower, or a wrapper such as ``Counting``, declares no
# kind, so it keeps the generic path and every call is still counted). Sum, Max and Min
# check their input in ``lift`` (NaN and ±inf are refused), so their ``lift`` is always called.
_IDENTITY_LOWER: frozenset[str] = frozenset({"sum", "max", "min", "matmul2x2"})
_IDENTITY_LIFT: frozenset[str] = frozenset({"matmul2x2"})


def hot_ops(
    m: Any,
) -> tuple[Callable[[Any], Any] | None, Callable[[Any, Any], Any], Callable[[Any], Any] | None]:
    """``(lift or None, combine, lower or None)`` for the hot paths of the fifo classes.

    ``None`` means "the identity function, skip the call". ``Sum``'s combine is
    :func:`operator.add` (same result, no Python frame). Everything else is the monoid's
    own bound method, cached once.

    >>> from windowagg.monoids import Sum, Counting
    >>> hot_ops(Sum())[2] is None, hot_ops(Sum())[1] is operator.add
    (True, True)
    >>> hot_ops(Counting(Sum()))[2] is None
    False
    """
    kind = declared_kind(m)
    lift = None if kind in _IDENTITY_LIFT else m.lift
    if kind in _IDENTITY_LOWER:
        return lift, (operator.add if kind == "sum" else m.combine), None
    return lift, m.combine, m.lower


def check_lemma_4_1(who: str, n_l: int, n_r: int, n_a: int, n_f: int, n_b: int) -> None:
    """DABA's size invariant for a non-empty window (Lemma 4.1 of DEBS 2017). O(1).

    ``|l_L| + |l_R| + |l_A| + 1 = |l_F| - |l_B|`` and ``|l_L| = |l_R|``, where ``l_F`` is
    the whole front list (front portion, ``l_L``, ``l_R``, ``l_A``).

    >>> check_lemma_4_1("DABA", 1, 1, 1, 4, 0)
    >>> check_lemma_4_1("DABA", 1, 0, 1, 4, 0)
    Traceback (most recent call last):
    ...
    windowagg.errors.InvariantError: DABA: invariant broken: Lemma 4.1: |lL|+|lR|+|lA|+1 = 3 != |lF|-|lB| = 4
    """
    invariant(
        n_l + n_r + n_a + 1 == n_f - n_b,
        who,
        f"Lemma 4.1: |lL|+|lR|+|lA|+1 = {n_l + n_r + n_a + 1} != |lF|-|lB| = {n_f - n_b}",
    )
    invariant(n_l == n_r, who, f"Lemma 4.1: |lL| = {n_l} != |lR| = {n_r}")


class FoldChecks:
    """Compare stored prefix / suffix aggregates with folds of the partials (for ``_check``).

    *vals* are the window's partials, oldest first; positions are indices into it. Each
    check costs O(end - lo) combines and names the region and entry that differ. Stored
    and refolded aggregates are compared with :func:`~windowagg._invariants.close` (the
    stored ones were built in another association: floats may differ in the last bits).

    >>> from windowagg.monoids import Concat
    >>> m = Concat()
    >>> c = FoldChecks(m.combine, m.identity, [m.lift(x) for x in "abc"], "DABA")
    >>> c.suffixes([("a", "b", "c"), ("b", "c")], 0, 2, 3, "front portion")
    >>> c.prefixes([("b",), ("b", "c")], 1, 3, "l_B")
    >>> c.fold(0, 2)
    ('a', 'b')
    >>> c.suffixes([("x",)], 2, 3, 3, "l_A")
    Traceback (most recent call last):
    ...
    windowagg.errors.InvariantError: DABA: invariant broken: l_A entry 0: ('x',) != ('c',)
    """

    __slots__ = ("_combine", "_identity", "_vals", "_who", "slack")

    def __init__(
        self, combine: Callable[[Any, Any], Any], identity: Any, vals: list[Any], who: str
    ) -> None:
        self._combine = combine
        self._identity = identity
        self._vals = vals
        self._who = who
        self.slack = Slack(vals)  # the float tolerance of the comparisons, O(n)

    def agrees(self, stored: Any, refold: Any) -> bool:
        """*stored* equals *refold* up to the float rounding of a regrouped fold."""
        return close(stored, refold, self.slack)

    def fold(self, lo: int, hi: int) -> Any:
        """``v[lo] ⊗ ... ⊗ v[hi-1]`` (the identity when ``lo >= hi``). O(hi - lo)."""
        combine, acc = self._combine, self._identity
        for p in self._vals[lo:hi]:
            acc = combine(acc, p)
        return acc

    def suffixes(self, stored: Sequence[Any], lo: int, hi: int, end: int, region: str) -> None:
        """``stored[p - lo] == v[p] ⊗ ... ⊗ v[end-1]`` for ``p`` in ``[lo, hi)``."""
        combine, vals = self._combine, self._vals
        acc = self.fold(hi, end)
        for p in range(hi - 1, lo - 1, -1):
            acc = combine(vals[p], acc)
            got = stored[p - lo]
            invariant(
                close(got, acc, self.slack),
                self._who,
                f"{region} entry {p - lo}: {got!r} != {acc!r}",
            )

    def prefixes(self, stored: Sequence[Any], lo: int, hi: int, region: str) -> None:
        """``stored[p - lo] == v[lo] ⊗ ... ⊗ v[p]`` for ``p`` in ``[lo, hi)``."""
        combine, vals = self._combine, self._vals
        acc = self._identity
        for p in range(lo, hi):
            acc = combine(acc, vals[p])
            got = stored[p - lo]
            invariant(
                close(got, acc, self.slack),
                self._who,
                f"{region} entry {p - lo}: {got!r} != {acc!r}",
            )


def empty_error(who: str, op: str) -> EmptyWindowError:
    """The error for *op* on an empty window of class *who*.

    >>> str(empty_error("DABA", "evict()"))
    'DABA.evict() on an empty window; check len(window) first'
    """
    return EmptyWindowError(f"{who}.{op} on an empty window; check len(window) first")


def check_count(count: Any, n: int, who: str) -> int:
    """Validate a ``bulk_evict`` count against the window size *n*; return it as an int.

    Raises :class:`~windowagg.errors.ArgumentTypeError` (a ``TypeError``) for a
    non-integer count (a bool included) and
    :class:`~windowagg.errors.EmptyWindowError` (an ``IndexError``) when it is negative
    or larger than the window, so that a failed call leaves the window unchanged.

    >>> check_count(4, 3, "DABA")
    Traceback (most recent call last):
    ...
    windowagg.errors.EmptyWindowError: DABA.bulk_evict(4) on a window of 3 entries; count must be between 0 and len(window)
    """
    if isinstance(count, bool):
        raise ArgumentTypeError(f"{who}.bulk_evict(count) needs an integer count, got a bool")
    try:
        k = operator.index(count)
    except TypeError:
        raise ArgumentTypeError(
            f"{who}.bulk_evict(count) needs an integer count, got {type(count).__name__}"
        ) from None
    if k < 0 or k > n:
        raise EmptyWindowError(
            f"{who}.bulk_evict({k}) on a window of {n} entries; "
            "count must be between 0 and len(window)"
        )
    return k


def flip_op(m: Any, combine: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
    """The step for ``accumulate`` over partials youngest first: ``(acc, older) -> older ⊗ acc``.

    A monoid that declares ``commutative = True`` gets *combine* itself (no wrapper
    frame); any other gets the argument-swapping wrapper, so order is never assumed.

    >>> from windowagg.monoids import Concat, Sum
    >>> flip_op(Concat(), Concat().combine)(("b",), ("a",))
    ('a', 'b')
    >>> flip_op(Sum(), operator.add) is operator.add
    True
    """
    if getattr(m, "commutative", False) is True:
        return combine

    def older_first(acc: Any, older: Any) -> Any:
        return combine(older, acc)

    return older_first


def _public_name(w: Any) -> str:
    """The public class name of *w* (its ``_who``: a reference implementation held by a
    public class says the public name)."""
    return str(getattr(w, "_who", None) or type(w).__name__)


class DeprecatedEnds:
    """``oldest()``/``youngest()`` of the FIFO classes, renamed; kept one release, warning.

    In ``windowagg.ooo`` and ``windowagg.windows`` ``oldest()`` is the smallest timestamp;
    a FIFO aggregator has no timestamps, so its accessors of the partials at the two
    ends are called :meth:`oldest_partial` and :meth:`youngest_partial`.

    >>> import warnings
    >>> from windowagg.fifo import DABA
    >>> from windowagg.monoids import Sum
    >>> w = DABA(Sum()); w.insert(4)
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     w.oldest(), caught[0].category.__name__
    (4, 'DeprecationWarning')
    """

    __slots__ = ()

    if TYPE_CHECKING:

        def oldest_partial(self) -> Any: ...

        def youngest_partial(self) -> Any: ...

    def oldest(self) -> Any:
        """Deprecated alias of :meth:`oldest_partial` (removed in windowagg 0.3)."""
        warnings.warn(
            f"{_public_name(self)}.oldest() is renamed oldest_partial(): in windowagg, "
            "oldest() is the smallest timestamp of an out-of-order window",
            DeprecationWarning,
            stacklevel=2,
        )
        return self.oldest_partial()

    def youngest(self) -> Any:
        """Deprecated alias of :meth:`youngest_partial` (removed in windowagg 0.3)."""
        warnings.warn(
            f"{_public_name(self)}.youngest() is renamed youngest_partial(): in "
            "windowagg, youngest() is the largest timestamp of an out-of-order window",
            DeprecationWarning,
            stacklevel=2,
        )
        return self.youngest_partial()
