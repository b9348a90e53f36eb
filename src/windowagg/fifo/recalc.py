"""Recalc: the in-order oracle (a deque, recompute every query from scratch).

=================  ==========================================================
ordering           FIFO (in-order)
operator needs     monoid; not commutative, no inverse
insert / evict     O(1) worst case
query              O(n) combines, every time
bulk_evict(k)      O(k)
space              O(n)
paper              the naive baseline of Tangwongsan et al., DEBS 2017
=================  ==========================================================

Recalc stays independent of the other classes' shared code (it calls the monoid's own
methods, no fast paths): it is what they are tested against.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Iterator
from itertools import islice
from typing import Any, Generic

from windowagg.errors import EmptyWindowError, InvariantError
from windowagg.fifo._common import DeprecatedEnds, check_count
from windowagg.fifo._verbs import ArrayVerbs
from windowagg.monoids.base import In, Monoid, Out, P, require_monoid

__all__ = ["Recalc"]


class Recalc(ArrayVerbs, DeprecatedEnds, Generic[In, P, Out]):
    """FIFO window that recomputes every query; the oracle for ``windowagg.fifo``.

    The fact card (ordering, operator needs, costs, space, paper) opens the
    module docstring: ``help(windowagg.fifo.recalc)``.

    Examples
    --------
    >>> from windowagg.monoids import Concat
    >>> w = Recalc(Concat())
    >>> for x in "abc": w.insert(x)
    >>> w.evict(); w.query(), len(w)
    (('b', 'c'), 2)
    """

    def __init__(self, monoid: Monoid[In, P, Out]) -> None:
        require_monoid(monoid, "fifo.Recalc")
        self._m = monoid
        self._q: deque[Any] = deque()

    @property
    def monoid(self) -> Monoid[In, P, Out]:
        """The monoid this window aggregates with."""
        return self._m

    def insert(self, v: In) -> None:
        """Append ``lift(v)`` as the youngest entry. O(1)."""
        self._q.append(self._m.lift(v))

    def evict(self) -> None:
        """Remove the oldest entry. O(1). Raises EmptyWindowError when empty."""
        if not self._q:
            raise EmptyWindowError("evict() on an empty window; check len(window) first")
        self._q.popleft()

    def bulk_evict(self, count: int) -> None:
        """Remove the ``count`` oldest entries. O(count).

        A count that is not an int (a bool included) raises ArgumentTypeError, one outside
        ``[0, len]`` EmptyWindowError; both change nothing, like every FIFO class.
        """
        k = check_count(count, len(self._q), "fifo.Recalc")
        for _ in range(k):
            self._q.popleft()

    def query(self) -> Out:
        """``lower`` of the aggregate oldest to youngest; ``lower(identity)`` when empty. O(n)."""
        m = self._m
        acc = m.identity
        for p in self._q:
            acc = m.combine(acc, p)
        return m.lower(acc)

    def oldest_partial(self) -> P:
        """The oldest partial aggregate. O(1)."""
        if not self._q:
            raise EmptyWindowError("oldest() on an empty window")
        res: P = self._q[0]
        return res

    def youngest_partial(self) -> P:
        """The youngest partial aggregate. O(1)."""
        if not self._q:
            raise EmptyWindowError("youngest() on an empty window")
        res: P = self._q[-1]
        return res

    def __len__(self) -> int:
        return len(self._q)

    def __iter__(self) -> Iterator[P]:
        return iter(list(self._q))

    def _check(self) -> None:
        """O(1): nothing can break in a deque; kept for interface parity."""
        if not isinstance(self._q, deque):
            raise InvariantError("fifo.Recalc: storage is not a deque")

    def _load_partials(self, partials: Iterable[Any]) -> None:
        """Append *partials* (already lifted) as the youngest entries. O(m)."""
        self._q.extend(partials)

    def _hold_again(self, partials: list[Any]) -> None:
        """Error path of the bulk calls: hold *partials* instead. O(n), no combine."""
        self._q = deque(partials)

    def _head(self, k: int) -> list[Any]:
        """The *k* oldest partials. O(k)."""
        return list(islice(self._q, k))

    def __repr__(self) -> str:
        return f"fifo.Recalc({self._m!r}, n={len(self)})"
