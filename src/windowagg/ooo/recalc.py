"""Recalc: the out-of-order oracle (sorted arrays, recompute from scratch).

=================  ==========================================================
ordering           out-of-order
operator needs     monoid (associative, identity); not commutative, no inverse
insert / evict     O(n) worst case (array insert/delete), O(log n) search
query              O(n) combines, every time: nothing is cached
bulk_insert        O(m log m + m n); bulk_evict O(n)
space              O(n)
paper              the naive baseline of Tangwongsan et al., VLDB 2019
=================  ==========================================================

It is deliberately simple so that it can be trusted: every other out-of-order
aggregator is tested in lockstep against it.

Examples
--------
>>> from windowagg.monoids import Concat
>>> w = Recalc(Concat())
>>> w.insert(3, "c"); w.insert(1, "a"); w.insert(2, "b"); w.insert(1, "A")
>>> w.query()
('a', 'A', 'b', 'c')
>>> w.range_query(2, 3)
('b', 'c')
>>> w.bulk_evict(2); w.query(), len(w), w.oldest()
(('c',), 1, 3)
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Iterator
from typing import Any, Generic

from windowagg._time import check_timestamp
from windowagg.errors import InvariantError
from windowagg.monoids.base import In, Monoid, Out, P, require_monoid

__all__ = ["Recalc"]


class Recalc(Generic[In, P, Out]):
    """Out-of-order window that recomputes every query from the stored entries."""

    def __init__(self, monoid: Monoid[In, P, Out]) -> None:
        require_monoid(monoid, "ooo.Recalc")
        self._m = monoid
        self._times: list[Any] = []
        self._vals: list[Any] = []

    @property
    def monoid(self) -> Monoid[In, P, Out]:
        """The monoid this window aggregates with."""
        return self._m

    def _ref(self) -> Any:
        return self._times[0] if self._times else None

    def insert(self, t: Any, v: In) -> None:
        """Insert ``v`` at time ``t``; at an existing ``t`` store ``old ⊗ lift(v)``. O(n)."""
        check_timestamp(t, self._ref())
        p = self._m.lift(v)
        times = self._times
        i = bisect_left(times, t)
        if i < len(times) and times[i] == t:
            self._vals[i] = self._m.combine(self._vals[i], p)
        else:
            times.insert(i, t)
            self._vals.insert(i, p)

    def evict(self, t: Any) -> None:
        """Remove the entry at ``t``; no-op when absent. O(n)."""
        check_timestamp(t, self._ref())
        times = self._times
        i = bisect_left(times, t)
        if i < len(times) and times[i] == t:
            del times[i]
            del self._vals[i]

    def bulk_insert(self, pairs: Iterable[tuple[Any, In]]) -> None:
        """Insert every ``(t, v)``; equals inserting them one by one in the given order.

        All timestamps are validated before anything changes, and a ``lift`` or
        ``combine`` that raises leaves the window as before (the oracle copies its lists).
        """
        items = list(pairs)
        ref = self._ref()
        for t, _ in items:
            check_timestamp(t, ref if ref is not None else (items[0][0] if items else None))
        saved = self._times[:], self._vals[:]
        try:
            for t, v in items:
                self.insert(t, v)
        except BaseException:
            self._times, self._vals = saved
            raise

    def bulk_evict(self, t: Any) -> None:
        """Remove every entry with time ``<= t``. O(n)."""
        check_timestamp(t, self._ref())
        i = bisect_right(self._times, t)
        del self._times[:i]
        del self._vals[:i]

    def _fold(self, lo: int, hi: int) -> Any:
        m = self._m
        acc = m.identity
        combine = m.combine
        for p in self._vals[lo:hi]:
            acc = combine(acc, p)
        return acc

    def query(self) -> Out:
        """``lower(v1 ⊗ ... ⊗ vn)`` in time order; ``lower(identity)`` when empty. O(n)."""
        return self._m.lower(self._fold(0, len(self._vals)))

    def range_query(self, t_from: Any, t_to: Any) -> Out:
        """The lowered aggregate of entries with ``t_from <= t <= t_to``. O(n)."""
        check_timestamp(t_from, self._ref(), where="t_from")
        check_timestamp(t_to, self._ref(), where="t_to")
        if t_to < t_from:
            return self._m.lower(self._m.identity)
        lo = bisect_left(self._times, t_from)
        hi = bisect_right(self._times, t_to)
        return self._m.lower(self._fold(lo, hi))

    def oldest(self) -> Any:
        """The smallest timestamp, or None when empty. O(1)."""
        return self._times[0] if self._times else None

    def youngest(self) -> Any:
        """The largest timestamp, or None when empty. O(1)."""
        return self._times[-1] if self._times else None

    def __len__(self) -> int:
        return len(self._times)

    def __iter__(self) -> Iterator[tuple[Any, P]]:
        """``(t, partial)`` pairs in time order."""
        return iter(list(zip(self._times, self._vals, strict=True)))

    def _check(self) -> None:
        """O(n): timestamps strictly increasing, one value per timestamp."""
        if len(self._times) != len(self._vals):
            raise InvariantError("ooo.Recalc: times and values differ in length")
        for i in range(1, len(self._times)):
            if not self._times[i - 1] < self._times[i]:
                raise InvariantError(f"ooo.Recalc: timestamps not increasing at index {i}")

    def __repr__(self) -> str:
        return f"ooo.Recalc({self._m!r}, n={len(self)})"
