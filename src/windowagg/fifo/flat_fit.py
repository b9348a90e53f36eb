"""FlatFIT: a flat index of partial aggregates with pointer jumps and path compression.

=================  ==========================================================
ordering           FIFO (in-order)
operator needs     monoid (:mod:`windowagg.monoids.base`); neither commutative
                   nor invertible
insert             O(1), no combine (amortized: the ring doubles when full)
evict              O(1), no combine (amortized: the ring halves when a quarter full)
query              (jumps - 1) combines, where jumps is the length of the pointer chain
                   from the oldest entry; amortized O(1) for a sliding window queried
                   once per slide (the paper's setting), O(n) worst case (a query
                   after n inserts)
bulk_evict(k)      O(k) reference clearing, no combine
space              3 * capacity slots (value, partial, pointer), capacity < 4n (+ 8)
paper              Shein, Chrysanthis, Labrinidis, "FlatFIT: Accelerated Incremental
                   Sliding-Window Aggregation for Real-Time Analytics", SSDBM 2017
=================  ==========================================================

Every live position ``i`` (absolute, slot ``i & (cap - 1)`` of a ring) stores its
partial ``v[i]``, a pointer ``ptr[i]`` in ``(i, end]`` and ``part[i] = v[i] ⊗ ... ⊗
v[ptr[i] - 1]``. A query follows the pointers from the oldest entry to the end, then
*path-compresses*: unwinding the chain it folds ``part`` from the young end and re-points
every visited position at the end. A position's range never includes anything older
than itself, so eviction only advances the front. Queries therefore mutate internal
state (like a splay), never the window's contents.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from windowagg.fifo._common import check_count, empty_error, invariant, same
from windowagg.fifo.base import _FifoBase
from windowagg.monoids.base import In, Monoid, Out, P

__all__ = ["FlatFIT"]

_WHO = "FlatFIT"
_MIN_CAP = 8


class FlatFIT(_FifoBase[In, P, Out]):
    """Amortized O(1) FIFO aggregator with pointer jumping (FlatFIT).

    The fact card (ordering, operator needs, costs, space, paper) opens the
    module docstring: ``help(windowagg.fifo.flat_fit)``.

    Examples
    --------
    >>> from windowagg.monoids import Max
    >>> w = FlatFIT(Max())
    >>> for x in (2, 6, 3): w.insert(x)
    >>> w.evict(); w.query(), w.oldest_partial(), w.youngest_partial(), len(w)
    (6, 6, 3, 2)

    >>> from windowagg.monoids import Concat
    >>> w = FlatFIT(Concat())
    >>> for x in "abcd": w.insert(x)
    >>> w.query(); w.evict(); w.insert("e"); w.query()
    ('a', 'b', 'c', 'd')
    ('b', 'c', 'd', 'e')
    """

    __slots__ = ("_cap", "_end", "_front", "_mask", "_parts", "_ptrs", "_stack", "_vals")
    _who = _WHO
    _repr_fields = ("capacity",)

    def __init__(self, monoid: Monoid[In, P, Out]) -> None:
        super().__init__(monoid)
        self._front = 0
        self._end = 0
        self._stack: list[int] = []  # reused by query, so a query allocates nothing
        self._cap = _MIN_CAP
        self._mask = _MIN_CAP - 1
        self._vals: list[Any] = [None] * _MIN_CAP
        self._parts: list[Any] = [None] * _MIN_CAP
        self._ptrs: list[int] = [0] * _MIN_CAP

    @property
    def capacity(self) -> int:
        """Slots in the ring (a power of two >= 8). O(1).

        >>> from windowagg.monoids import Sum
        >>> FlatFIT(Sum()).capacity
        8
        """
        return self._cap

    def _resize(self, cap: int) -> None:
        """Move the live positions into rings of *cap* slots. O(n), no combine."""
        vals: list[Any] = [None] * cap
        parts: list[Any] = [None] * cap
        ptrs = [0] * cap
        mask = cap - 1
        om = self._mask
        for p in range(self._front, self._end):
            vals[p & mask] = self._vals[p & om]
            parts[p & mask] = self._parts[p & om]
            ptrs[p & mask] = self._ptrs[p & om]
        self._vals, self._parts, self._ptrs = vals, parts, ptrs
        self._cap, self._mask = cap, mask

    def insert(self, v: In) -> None:
        """Append ``lift(v)`` pointing at the new end. O(1) amortized, no combine.

        >>> from windowagg.monoids import Sum
        >>> w = FlatFIT(Sum()); w.insert(3); w.insert(4); w.query()
        7
        """
        lift = self._lift
        p = v if lift is None else lift(v)
        e = self._end
        if e - self._front == self._cap:
            self._resize(2 * self._cap)
        s = e & self._mask
        self._vals[s] = p
        self._parts[s] = p
        self._ptrs[s] = e + 1
        self._end = e + 1

    def evict(self) -> None:
        """Advance the front. O(1) amortized, no combine.

        Raises :class:`~windowagg.errors.EmptyWindowError` when the window is empty.

        >>> from windowagg.monoids import Sum
        >>> w = FlatFIT(Sum()); w.insert(3); w.insert(4); w.evict(); w.query()
        4
        """
        f = self._front
        if f == self._end:
            raise empty_error(_WHO, "evict()")
        s = f & self._mask
        self._vals[s] = None  # drop references so evicted partials are freed
        self._parts[s] = None
        self._front = f + 1
        if self._cap > _MIN_CAP and 4 * (self._end - f - 1) < self._cap:
            self._shrink()

    def _shrink(self) -> None:
        cap, n = self._cap, self._end - self._front
        while cap > _MIN_CAP and 4 * n < cap:
            cap //= 2
        self._resize(cap)

    def bulk_evict(self, count: int) -> None:
        """Advance the front by ``count``: O(count) reference clearing, no combine.

        A bad count raises and leaves the window unchanged.

        >>> from windowagg.monoids import Sum
        >>> w = FlatFIT(Sum())
        >>> for x in range(6): w.insert(x)
        >>> w.bulk_evict(4); w.query(), len(w)
        (9, 2)
        """
        f = self._front
        k = check_count(count, self._end - f, _WHO)
        mask, vals, parts = self._mask, self._vals, self._parts
        for p in range(f, f + k):
            vals[p & mask] = None
            parts[p & mask] = None
        self._front = f + k
        if self._cap > _MIN_CAP and 4 * (self._end - self._front) < self._cap:
            self._shrink()

    def query(self) -> Out:
        """Follow pointers from the oldest entry and compress the path: (jumps - 1) combines.

        Amortized O(1) per slide of a sliding window; O(n) after n unqueried inserts.

        >>> from windowagg.monoids import Concat
        >>> FlatFIT(Concat()).query()
        ()
        """
        i = self._front
        end = self._end
        if i == end:
            lower = self._lower
            return self._identity if lower is None else lower(self._identity)
        mask, ptrs, parts = self._mask, self._ptrs, self._parts
        stack = self._stack
        push = stack.append  # cached: called once per jump
        j = ptrs[i & mask]
        while j != end:
            push(i)
            i = j
            j = ptrs[i & mask]
        acc = parts[i & mask]
        if stack:
            combine = self._combine  # cached: called once per jump
            pop = stack.pop
            try:
                while stack:
                    s = pop() & mask
                    acc = combine(parts[s], acc)
                    parts[s] = acc  # each write is a valid compression on its own
                    ptrs[s] = end
            except BaseException:
                stack.clear()  # a failing combine leaves a consistent, uncompressed rest
                raise
        lower = self._lower
        res: Out = acc if lower is None else lower(acc)
        return res

    def oldest_partial(self) -> P:
        """The oldest partial (its value, not its compressed ``part``). O(1).

        EmptyWindowError when empty.

        >>> from windowagg.monoids import Sum
        >>> w = FlatFIT(Sum())
        >>> for x in (1, 2, 3): w.insert(x)
        >>> w.query(), w.oldest_partial()  # the query re-pointed position 0 at the end
        (6, 1)
        """
        if self._front == self._end:
            raise empty_error(_WHO, "oldest_partial()")
        res: P = self._vals[self._front & self._mask]
        return res

    def youngest_partial(self) -> P:
        """The youngest partial, at slot ``(end - 1) & mask``. O(1). EmptyWindowError.

        >>> from windowagg.monoids import Sum
        >>> w = FlatFIT(Sum())
        >>> for x in range(1, 9): w.insert(x)
        >>> w.evict(); w.insert(9); w.youngest_partial()  # position 8 wrapped to slot 0
        9
        """
        if self._front == self._end:
            raise empty_error(_WHO, "youngest_partial()")
        res: P = self._vals[(self._end - 1) & self._mask]
        return res

    def __len__(self) -> int:
        """Number of entries, ``end - front`` (absolute positions). O(1).

        >>> from windowagg.monoids import Sum
        >>> w = FlatFIT(Sum())
        >>> for x in range(10): w.insert(x)
        >>> w.bulk_evict(3); len(w), w.capacity
        (7, 16)
        """
        return self._end - self._front

    def __iter__(self) -> Iterator[P]:
        """Partials oldest to youngest (a snapshot of the live slots). O(n).

        >>> from windowagg.monoids import Sum
        >>> w = FlatFIT(Sum())
        >>> for x in range(1, 10): w.insert(x)
        >>> w.bulk_evict(6); list(w), w.capacity  # the ring halved back to 8 slots
        ([7, 8, 9], 8)
        """
        mask, vals = self._mask, self._vals
        return iter([vals[p & mask] for p in range(self._front, self._end)])

    def _head(self, k: int) -> list[Any]:
        """The *k* oldest partials. O(k)."""
        mask, vals, f = self._mask, self._vals, self._front
        return [vals[p & mask] for p in range(f, min(f + k, self._end))]

    def _check(self) -> None:
        """O(sum of pointer spans), at most O(n^2): pointers in range, every partial."""
        f, e, cap, mask = self._front, self._end, self._cap, self._mask
        n = e - f
        invariant(0 <= n <= cap, _WHO, f"n = {n} outside [0, capacity {cap}]")
        invariant(cap == _MIN_CAP or 4 * n >= cap, _WHO, f"too sparse: n = {n}, cap = {cap}")
        invariant(not self._stack, _WHO, "query stack not empty between operations")
        live = {p & mask for p in range(f, e)}
        for s in range(cap):
            if s not in live:
                invariant(
                    self._vals[s] is None and self._parts[s] is None,
                    _WHO,
                    f"slot {s} outside the window holds a reference",
                )
        combine = self._combine
        for p in range(f, e):
            s = p & mask
            q = self._ptrs[s]
            invariant(p < q <= e, _WHO, f"ptr[{p}] = {q} outside ({p}, {e}]")
            acc = self._identity
            for r in range(p, q):
                acc = combine(acc, self._vals[r & mask])
            invariant(
                same(self._parts[s], acc), _WHO, f"part[{p}] = {self._parts[s]!r} != fold {acc!r}"
            )
