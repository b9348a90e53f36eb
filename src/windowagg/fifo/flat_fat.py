"""FlatFAT: the Reactive Aggregator's flat fixed-size aggregation tree, in one array.

=================  ==========================================================
ordering           FIFO (in-order)
operator needs     monoid (:mod:`windowagg.monoids.base`); neither commutative
                   nor invertible
insert / evict     O(log n) combines (the leaf-to-root path); amortized, because the
                   tree doubles when full and halves when a quarter full (O(n) each)
query              O(1), 0 combines, while the window does not wrap around the leaf
                   ring; O(log n) combines when it does
bulk_evict(k)      O(k + log n) combines: the k leaves are cleared, then each level
                   recomputes only the nodes above them (better than k evictions)
space              2 * capacity references, capacity < 4n (+ a minimum of 8)
paper              Tangwongsan, Gedik, Hirzel, Schneider, "General Incremental
                   Sliding-Window Aggregation", PVLDB 2015 (Reactive Aggregator);
                   a baseline of DEBS 2017
=================  ==========================================================

A complete binary tree in heap layout: ``tree[1]`` is the root, leaves are
``tree[cap:2*cap]`` and form a ring of partials (the window occupies ``n`` consecutive
leaves from ``front``, wrapping around); every other leaf holds the identity and every
inner node is ``tree[2i] ⊗ tree[2i+1]``. If the window does not wrap, the root is the
answer. If it wraps, the answer is the aggregate of leaves ``[front, cap)`` followed by
that of ``[0, end)``, each an O(log n) range fold.

A ``combine`` that raises leaves the window exactly as before: ``insert`` and ``evict``
compute the new leaf-to-root path into a list before writing it, ``bulk_evict`` works
on a copy of the tree, and a resize builds a new tree that replaces the old one only
when it is complete.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from windowagg.fifo._common import check_count, empty_error, invariant, same
from windowagg.fifo.base import _FifoBase
from windowagg.monoids.base import In, Monoid, Out, P

__all__ = ["FlatFAT"]

_WHO = "FlatFAT"
_MIN_CAP = 8


class FlatFAT(_FifoBase[In, P, Out]):
    """Amortized O(log n) FIFO aggregator over any monoid (flat aggregation tree).

    The fact card (ordering, operator needs, costs, space, paper) opens the
    module docstring: ``help(windowagg.fifo.flat_fat)``.

    Examples
    --------
    >>> from windowagg.monoids import Max
    >>> w = FlatFAT(Max())
    >>> for x in (2, 6, 3): w.insert(x)
    >>> w.evict(); w.query(), w.oldest_partial(), w.youngest_partial(), w.capacity
    (6, 6, 3, 8)

    >>> from windowagg.monoids import Concat
    >>> w = FlatFAT(Concat())
    >>> for x in "abcdefghij": w.insert(x)
    >>> w.bulk_evict(7); w.insert("k"); w.query()
    ('h', 'i', 'j', 'k')
    """

    __slots__ = ("_cap", "_front", "_n", "_tree")
    _who = _WHO
    _repr_fields = ("capacity",)

    def __init__(self, monoid: Monoid[In, P, Out]) -> None:
        super().__init__(monoid)
        self._cap = _MIN_CAP
        self._tree: list[Any] = [self._identity] * (2 * _MIN_CAP)
        self._front = 0
        self._n = 0

    @property
    def capacity(self) -> int:
        """Number of leaves (a power of two >= 8). O(1).

        >>> from windowagg.monoids import Sum
        >>> FlatFAT(Sum()).capacity
        8
        """
        return self._cap

    def _rebuild(self, cap: int) -> None:
        """Re-layout the window into a tree of *cap* leaves from leaf 0. O(cap) combines."""
        leaves = list(self)
        ident = self._identity
        tree = [ident] * (2 * cap)
        tree[cap : cap + len(leaves)] = leaves
        combine = self._combine  # cached: called cap - 1 times
        for i in range(cap - 1, 0, -1):
            tree[i] = combine(tree[2 * i], tree[2 * i + 1])
        self._tree = tree
        self._cap = cap
        self._front = 0

    def _write(self, leaf: int, p: Any) -> None:
        """Set tree index *leaf* to *p* and recompute its ancestors: log2(cap) combines.

        Every combine runs before the first write, so one that raises changes nothing.
        """
        tree = self._tree
        combine = self._combine  # cached: called once per level
        path = []
        i, acc = leaf, p
        while i > 1:
            acc = combine(tree[i - 1], acc) if i & 1 else combine(acc, tree[i + 1])
            i >>= 1
            path.append(acc)
        tree[leaf] = p
        i = leaf >> 1
        for acc in path:
            tree[i] = acc
            i >>= 1

    def insert(self, v: In) -> None:
        """Write ``lift(v)`` into the next leaf. O(log n) combines; amortized O(n/n) growth.

        >>> from windowagg.monoids import Sum
        >>> w = FlatFAT(Sum()); w.insert(3); w.insert(4); w.query()
        7
        """
        lift = self._lift
        p = v if lift is None else lift(v)
        if self._n == self._cap:
            old = self._tree, self._cap, self._front
            self._rebuild(2 * self._cap)
            try:
                self._write(self._cap + self._n, p)
            except BaseException:  # the grown tree is dropped: the old one is untouched
                self._tree, self._cap, self._front = old
                raise
        else:
            self._write(self._cap + ((self._front + self._n) & (self._cap - 1)), p)
        self._n += 1

    def evict(self) -> None:
        """Clear the oldest leaf. O(log n) combines; amortized O(1) shrinking.

        Raises :class:`~windowagg.errors.EmptyWindowError` when the window is empty.

        >>> from windowagg.monoids import Sum
        >>> w = FlatFAT(Sum()); w.insert(3); w.insert(4); w.evict(); w.query()
        4
        """
        if not self._n:
            raise empty_error(_WHO, "evict()")
        cap = self._cap
        new_cap = self._shrunk_cap(self._n - 1)
        if new_cap != cap:  # rebuild the survivors into a smaller tree, then switch
            old = self._tree, self._front, self._n
            self._front = (self._front + 1) & (cap - 1)
            self._n -= 1
            try:
                self._rebuild(new_cap)
            except BaseException:
                self._tree, self._front, self._n = old
                raise
            return
        self._write(cap + self._front, self._identity)
        self._front = (self._front + 1) & (cap - 1)
        self._n -= 1

    def _shrunk_cap(self, n: int) -> int:
        cap = self._cap
        while cap > _MIN_CAP and 4 * n < cap:
            cap //= 2
        return cap

    def bulk_evict(self, count: int) -> None:
        """Clear the ``count`` oldest leaves, then fix each level once: O(count + log n).

        A bad count raises and leaves the window unchanged.

        >>> from windowagg.monoids import Sum
        >>> w = FlatFAT(Sum())
        >>> for x in range(6): w.insert(x)
        >>> w.bulk_evict(4); w.query(), len(w)
        (9, 2)
        """
        k = check_count(count, self._n, _WHO)
        if k == 0:
            return
        new_cap = self._shrunk_cap(self._n - k)
        if new_cap != self._cap:  # rebuild the survivors into a smaller tree, then switch
            old = self._tree, self._front, self._n
            self._front = (self._front + k) & (self._cap - 1)
            self._n -= k
            try:
                self._rebuild(new_cap)
            except BaseException:
                self._tree, self._front, self._n = old
                raise
            return
        cap, tree, ident = self._cap, self._tree, self._identity
        lo = self._front
        hi = lo + k  # leaves [lo, hi) in ring order; split if wrapping
        spans = [(lo, min(hi, cap))] + ([(0, hi - cap)] if hi > cap else [])
        combine = self._combine  # cached: called once per touched inner node
        cleared: list[tuple[int, list[Any]]] = []  # (first leaf, old leaves) per span
        undo: list[tuple[int, Any]] = []  # (index, old value) of every inner node written
        try:
            for a, b in spans:
                cleared.append((cap + a, tree[cap + a : cap + b]))
                tree[cap + a : cap + b] = [ident] * (b - a)
                i, j = (cap + a) >> 1, (cap + b - 1) >> 1
                while i:
                    for x in range(i, j + 1):
                        new = combine(tree[2 * x], tree[2 * x + 1])
                        undo.append((x, tree[x]))
                        tree[x] = new
                    i, j = i >> 1, j >> 1
        except BaseException:  # put back every written node, newest write first
            for x, old in reversed(undo):
                tree[x] = old
            for x, leaves in cleared:
                tree[x : x + len(leaves)] = leaves
            raise
        self._front = hi & (cap - 1)
        self._n -= k

    def _fold(self, lo: int, hi: int) -> Any:
        """Aggregate of leaves ``[lo, hi)`` in order: O(log n) combines."""
        tree, combine = self._tree, self._combine
        left = right = self._identity
        lo += self._cap
        hi += self._cap
        while lo < hi:
            if lo & 1:
                left = combine(left, tree[lo])
                lo += 1
            if hi & 1:
                hi -= 1
                right = combine(tree[hi], right)
            lo >>= 1
            hi >>= 1
        return combine(left, right)

    def query(self) -> Out:
        """The window's aggregate: the root (0 combines) unless the ring wraps (O(log n)).

        >>> from windowagg.monoids import Concat
        >>> FlatFAT(Concat()).query()
        ()
        """
        end = self._front + self._n
        lower = self._lower
        if end <= self._cap:
            agg = self._tree[1]
        else:
            agg = self._combine(self._fold(self._front, self._cap), self._fold(0, end - self._cap))
        res: Out = agg if lower is None else lower(agg)
        return res

    def oldest_partial(self) -> P:
        """The oldest partial, leaf ``front`` of the ring. O(1). EmptyWindowError when empty.

        >>> from windowagg.monoids import Sum
        >>> w = FlatFAT(Sum())
        >>> for x in range(1, 9): w.insert(x)
        >>> w.evict(); w.oldest_partial()
        2
        """
        if not self._n:
            raise empty_error(_WHO, "oldest_partial()")
        res: P = self._tree[self._cap + self._front]
        return res

    def youngest_partial(self) -> P:
        """The youngest partial, ``n - 1`` leaves after ``front`` (mod capacity). O(1).

        EmptyWindowError when empty.

        >>> from windowagg.monoids import Sum
        >>> w = FlatFAT(Sum())
        >>> for x in range(1, 9): w.insert(x)
        >>> w.evict(); w.insert(9); w.youngest_partial()  # the ring wrapped round to leaf 0
        9
        """
        if not self._n:
            raise empty_error(_WHO, "youngest_partial()")
        res: P = self._tree[self._cap + ((self._front + self._n - 1) & (self._cap - 1))]
        return res

    def __len__(self) -> int:
        """Number of entries (live leaves). O(1).

        >>> from windowagg.monoids import Sum
        >>> w = FlatFAT(Sum())
        >>> for x in range(9): w.insert(x)
        >>> len(w), w.capacity  # the ninth entry doubled the tree
        (9, 16)
        """
        return self._n

    def __iter__(self) -> Iterator[P]:
        """Partials oldest to youngest (a snapshot of the live leaves, unwrapped). O(n).

        >>> from windowagg.monoids import Sum
        >>> w = FlatFAT(Sum())
        >>> for x in range(1, 9): w.insert(x)
        >>> w.bulk_evict(6); w.insert(9); list(w)
        [7, 8, 9]
        """
        cap, f, n = self._cap, self._front, self._n
        leaves = self._tree[cap:]
        out = leaves[f : f + n]
        if f + n > cap:
            out += leaves[: f + n - cap]
        return iter(out)

    def _head(self, k: int) -> list[Any]:
        """The *k* oldest partials. O(k)."""
        tree, cap, f = self._tree, self._cap, self._front
        return [tree[cap + ((f + i) & (cap - 1))] for i in range(min(k, self._n))]

    def _check(self) -> None:
        """O(cap) = O(n): sizes, identity outside the window, every inner node."""
        cap, tree, n, f = self._cap, self._tree, self._n, self._front
        invariant(cap >= _MIN_CAP and cap & (cap - 1) == 0, _WHO, f"capacity {cap}")
        invariant(len(tree) == 2 * cap, _WHO, f"tree length {len(tree)} != 2 * {cap}")
        invariant(0 <= n <= cap and 0 <= f < cap, _WHO, f"n = {n}, front = {f}, cap = {cap}")
        invariant(cap == _MIN_CAP or 4 * n >= cap, _WHO, f"too sparse: n = {n}, cap = {cap}")
        live = {(f + i) & (cap - 1) for i in range(n)}
        for i in range(cap):
            if i not in live:
                invariant(same(tree[cap + i], self._identity), _WHO, f"leaf {i} outside the window")
        for i in range(cap - 1, 0, -1):
            want = self._combine(tree[2 * i], tree[2 * i + 1])
            invariant(same(tree[i], want), _WHO, f"inner node {i}: {tree[i]!r} != {want!r}")
