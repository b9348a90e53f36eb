"""BTree: the classic augmented B-tree, the baseline FiBA is measured against.

=================  ==========================================================================
ordering           out-of-order (any insert/evict position; timestamps of one ordered type)
operator needs     monoid (associative, identity); not commutative, no inverse
query              O(1): the root's aggregate, lowered
insert / evict     O(log n) worst case and amortized: search from the root, local change,
                   rebalance, then repair every ancestor up to the root
range_query        O(log n) worst case
bulk_evict(t)      O(m log n): a loop of oldest-evictions (the paper's baseline has no bulk
                   algorithm)
bulk_insert        O(m log n): validates and lifts everything, sorts stably, then a loop of
                   single inserts (no bulk algorithm in the baseline)
space              O(n): one node per 1..2μ-1 entries
paper              the "classic" competitor of Tangwongsan, Hirzel, Schneider, VLDB 2019, §3.1
=================  ==========================================================================

Every node stores the *up* aggregate of its subtree (``c0 ⊗ v0 ⊗ c1 ⊗ … ⊗ c_{a-1}``), so
the whole-window aggregate sits at the root; there are no fingers and no spine
aggregates, which is why every update pays for the full root-to-leaf path.

Examples
--------
>>> from windowagg.monoids import Concat
>>> w = BTree(Concat(), min_arity=2)
>>> for t in (3, 1, 2): w.insert(t, str(t))
>>> w.query(), w.range_query(2, 3)
(('1', '2', '3'), ('2', '3'))
>>> w.bulk_evict(1); w.query(), len(w)
(('2', '3'), 2)
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable, Iterator
from typing import Any, Generic

from windowagg._invariants import same
from windowagg._time import check_timestamp
from windowagg.errors import ArgumentError, InvariantError, TimestampError
from windowagg.monoids.base import In, Monoid, Out, P, require_monoid
from windowagg.ooo._pack import pack_levels

__all__ = ["BTree"]

DEFAULT_MIN_ARITY = 8

_NONE: Any = object()


class _BNode:
    """A B-tree node: parallel entry lists, children (None at leaves), the up-aggregate."""

    __slots__ = ("agg", "kids", "parent", "times", "vals")

    def __init__(
        self, times: list[Any], vals: list[Any], kids: list[_BNode] | None, parent: _BNode | None
    ) -> None:
        self.times = times
        self.vals = vals
        self.kids = kids
        self.parent = parent
        self.agg: Any = None


class BTree(Generic[In, P, Out]):
    """Classic augmented B-tree over an out-of-order window (see the module fact card).

    Parameters
    ----------
    monoid
        Any object with ``identity``, ``lift``, ``combine`` and ``lower``.
    min_arity
        μ >= 2; nodes have between μ and 2μ children (the root: 2 to 2μ).

    Examples
    --------
    >>> from windowagg.monoids import Sum
    >>> w = BTree(Sum()); w.insert(2, 5); w.insert(1, 1); w.insert(2, 1)
    >>> w.query(), list(w)
    (7, [(1, 1), (2, 6)])
    """

    __slots__ = (
        "_combine",
        "_lift",
        "_lower",
        "_m",
        "_maxk",
        "_mink",
        "_mu",
        "_one",
        "_root",
        "_size",
    )

    def __init__(self, monoid: Monoid[In, P, Out], min_arity: int = DEFAULT_MIN_ARITY) -> None:
        require_monoid(monoid, "ooo.BTree")
        if not isinstance(min_arity, int) or isinstance(min_arity, bool) or min_arity < 2:
            raise ArgumentError(f"ooo.BTree: min_arity must be an int >= 2, got {min_arity!r}")
        self._m = monoid
        self._combine = monoid.combine
        self._lift = monoid.lift
        self._lower = monoid.lower
        self._one = monoid.identity
        self._mu = min_arity
        self._mink = min_arity - 1
        self._maxk = 2 * min_arity - 1
        self._root = _BNode([], [], None, None)
        self._root.agg = self._one
        self._size = 0

    @property
    def monoid(self) -> Monoid[In, P, Out]:
        """The monoid this window aggregates with.

        >>> from windowagg.monoids import Sum
        >>> BTree(Sum()).monoid
        Sum()
        """
        return self._m

    @property
    def min_arity(self) -> int:
        """μ: every non-root node has between μ and 2μ children.

        >>> from windowagg.monoids import Sum
        >>> BTree(Sum(), min_arity=3).min_arity
        3
        """
        return self._mu

    # ------------------------------------------------------------------ helpers
    def _ref(self) -> Any:
        y = self._root
        while y.kids is not None:
            y = y.kids[0]
        return y.times[0] if y.times else None

    def _fix(self, y: _BNode) -> None:
        """Recompute y's up-aggregate from its values and children. O(arity) combines."""
        comb = self._combine
        vals, kids = y.vals, y.kids
        if kids is None:
            if not vals:
                y.agg = self._one
                return
            acc = vals[0]
            for i in range(1, len(vals)):
                acc = comb(acc, vals[i])
        else:
            acc = kids[0].agg
            for i in range(len(vals)):
                acc = comb(comb(acc, vals[i]), kids[i + 1].agg)
        y.agg = acc

    def _fix_up(self, y: _BNode | None) -> None:
        fix = self._fix
        while y is not None:
            fix(y)
            y = y.parent

    def _search(self, t: Any) -> tuple[_BNode, int, bool]:
        node = self._root
        while True:
            times = node.times
            i = bisect_left(times, t)
            if i < len(times) and times[i] == t:
                return node, i, True
            if node.kids is None:
                return node, i, False
            node = node.kids[i]

    def _split(self, y: _BNode) -> _BNode:
        """Split y (2μ entries); return its parent (created if y was the root)."""
        mu = self._mu
        p = y.parent
        if p is None:
            p = _BNode([], [], [y], None)
            y.parent = p
            self._root = p
        pk = p.kids
        assert pk is not None
        j = pk.index(y)
        z = _BNode(y.times[mu + 1 :], y.vals[mu + 1 :], None, p)
        p.times.insert(j, y.times[mu])
        p.vals.insert(j, y.vals[mu])
        pk.insert(j + 1, z)
        del y.times[mu:]
        del y.vals[mu:]
        if y.kids is not None:
            z.kids = y.kids[mu + 1 :]
            del y.kids[mu + 1 :]
            for c in z.kids:
                c.parent = z
        self._fix(y)
        self._fix(z)
        return p

    def _rebalance_evict(self, node: _BNode) -> None:
        """Fix underflow from node upwards by merges and moves, then repair to the root."""
        mink = self._mink
        fix = self._fix
        while node.parent is not None and len(node.times) < mink:
            p = node.parent
            pk = p.kids
            assert pk is not None
            j = pk.index(node)
            s = j + 1 if j < len(pk) - 1 else j - 1
            sib = pk[s]
            lo = min(j, s)
            left, right = pk[lo], pk[lo + 1]
            if len(sib.times) <= mink:  # merge right into left around separator lo
                left.times.append(p.times[lo])
                left.times.extend(right.times)
                left.vals.append(p.vals[lo])
                left.vals.extend(right.vals)
                if left.kids is not None:
                    assert right.kids is not None
                    for c in right.kids:
                        c.parent = left
                    left.kids.extend(right.kids)
                del p.times[lo]
                del p.vals[lo]
                del pk[lo + 1]
                fix(left)
                if p.parent is None and not p.times:
                    left.parent = None
                    self._root = left
                    return
            elif s > j:  # rotate left: borrow the sibling's first entry
                node.times.append(p.times[j])
                node.vals.append(p.vals[j])
                p.times[j] = sib.times.pop(0)
                p.vals[j] = sib.vals.pop(0)
                if node.kids is not None:
                    assert sib.kids is not None
                    c = sib.kids.pop(0)
                    c.parent = node
                    node.kids.append(c)
                fix(node)
                fix(sib)
            else:  # rotate right: borrow the sibling's last entry
                node.times.insert(0, p.times[s])
                node.vals.insert(0, p.vals[s])
                p.times[s] = sib.times.pop()
                p.vals[s] = sib.vals.pop()
                if node.kids is not None:
                    assert sib.kids is not None
                    c = sib.kids.pop()
                    c.parent = node
                    node.kids.insert(0, c)
                fix(node)
                fix(sib)
            node = p
        self._fix_up(node)

    # ------------------------------------------------------------------ operations
    def insert(self, t: Any, v: In) -> None:
        """Insert ``v`` at ``t`` (``old ⊗ lift(v)`` at an existing ``t``). O(log n).

        >>> from windowagg.monoids import Concat
        >>> w = BTree(Concat()); w.insert(1, "a"); w.insert(1, "b"); w.query()
        ('a', 'b')
        """
        check_timestamp(t, self._ref())
        p = self._lift(v)
        node, i, found = self._search(t)
        if found:
            old = node.vals[i]
            node.vals[i] = self._combine(old, p)
            try:
                self._fix_up(node)
            except BaseException:
                self._rollback([(t, old)])
                raise
            return
        try:
            self._insert_new(node, i, t, p)
        except BaseException:
            self._rollback([(t, _NONE)])
            raise

    def _insert_new(self, node: _BNode, i: int, t: Any, p: Any) -> None:
        """Put the new key *t* with partial *p* at index *i* of leaf *node*; rebalance."""
        node.times.insert(i, t)
        node.vals.insert(i, p)
        self._size += 1
        maxk = self._maxk
        while len(node.times) > maxk:
            node = self._split(node)
        self._fix_up(node)

    def _rollback(self, undo: list[tuple[Any, Any]]) -> None:
        """Error path of a failed update, O(n): undo *undo* and rebuild the tree.

        *undo* lists ``(t, old partial)`` (``_NONE``: *t* was absent) in the order the
        changes were made; the keys and partials of the tree are consistent even when a
        ``combine`` raised part-way, only aggregates can be stale, so the entries are
        read back, the changes undone newest first, and the tree rebuilt from them.
        """
        entries = dict(self)
        for t, old in reversed(undo):
            if old is _NONE:
                entries.pop(t, None)
            else:
                entries[t] = old
        fresh = BTree.from_sorted_partials(self._m, sorted(entries.items()), self._mu)
        self._root, self._size = fresh._root, fresh._size

    def evict(self, t: Any) -> None:
        """Remove the entry at ``t``; no-op when absent. O(log n).

        >>> from windowagg.monoids import Sum
        >>> w = BTree(Sum()); w.insert(1, 2); w.insert(3, 4); w.evict(1); w.query()
        4
        """
        check_timestamp(t, self._ref())
        if not self._size:
            return
        node, i, found = self._search(t)
        if not found:
            return
        old = node.vals[i]
        try:
            self._remove(node, i)
        except BaseException:
            self._rollback([(t, old)])
            raise

    def _remove(self, node: _BNode, i: int) -> None:
        """Remove entry *i* of *node*, rebalance and repair the aggregates to the root."""
        self._size -= 1
        if node.kids is None:
            del node.times[i]
            del node.vals[i]
            self._rebalance_evict(node)
            return
        leaf = node.kids[i]  # replace by the in-order predecessor
        while leaf.kids is not None:
            leaf = leaf.kids[-1]
        node.times[i] = leaf.times.pop()
        node.vals[i] = leaf.vals.pop()
        # node is an ancestor of leaf: the repair to the root below passes through it, or
        # a merge/rotation that restructures it recomputes it.
        self._rebalance_evict(leaf)

    def bulk_insert(self, pairs: Iterable[tuple[Any, In]]) -> None:
        """Insert every ``(t, v)`` as if one by one in order. O(m log n) (a loop).

        All timestamps are validated and all values lifted before anything changes.

        >>> from windowagg.monoids import Concat
        >>> w = BTree(Concat()); w.bulk_insert([(2, "b"), (1, "a"), (2, "c")]); w.query()
        ('a', 'b', 'c')
        """
        items = list(pairs)
        if not items:
            return
        ref = self._ref()
        if ref is None:
            ref = items[0][0]
            check_timestamp(ref, None)
        lifted = []
        for t, v in items:
            check_timestamp(t, ref)
            lifted.append((t, self._lift(v)))
        lifted.sort(key=lambda e: e[0])  # stable: equal times keep input order
        comb = self._combine
        undo: list[tuple[Any, Any]] = []  # (t, old partial or _NONE) per change, in order
        try:
            for t, p in lifted:
                node, i, found = self._search(t)
                if found:
                    old = node.vals[i]
                    undo.append((t, old))
                    node.vals[i] = comb(old, p)
                    self._fix_up(node)
                    continue
                undo.append((t, _NONE))
                self._insert_new(node, i, t, p)
        except BaseException:  # O(n) on the error path only: the window is as before
            self._rollback(undo)
            raise

    def bulk_evict(self, t: Any) -> None:
        """Remove every entry with time ``<= t``. O(m log n) (a loop of oldest-evictions).

        >>> from windowagg.monoids import Sum
        >>> w = BTree(Sum())
        >>> for s in range(10): w.insert(s, s)
        >>> w.bulk_evict(6); w.query(), len(w)
        (24, 3)
        """
        check_timestamp(t, self._ref())
        undo: list[tuple[Any, Any]] = []  # (t, partial) of every entry evicted so far
        try:
            while self._size:
                o = self._ref()
                if t < o:
                    break
                node, i, _ = self._search(o)
                undo.append((o, node.vals[i]))
                self._remove(node, i)
        except BaseException:  # O(n) on the error path only: the window is as before
            self._rollback(undo)
            raise

    def query(self) -> Out:
        """``lower`` of the whole window's aggregate. O(1).

        >>> from windowagg.monoids import Sum
        >>> BTree(Sum()).query()
        0
        """
        return self._lower(self._root.agg)

    def range_query(self, t_from: Any, t_to: Any) -> Out:
        """``lower`` of the entries with ``t_from <= t <= t_to``. O(log n).

        >>> from windowagg.monoids import Concat
        >>> w = BTree(Concat())
        >>> for s in range(6): w.insert(s, s)
        >>> w.range_query(1, 3), w.range_query(3, 1)
        ((1, 2, 3), ())
        """
        ref = self._ref()
        check_timestamp(t_from, ref, where="t_from")
        check_timestamp(t_to, ref if ref is not None else t_from, where="t_to")
        if ref is None or t_to < t_from:
            return self._lower(self._one)
        return self._lower(self._rq(self._root, t_from, False, t_to, False))

    def _rq(self, y: _BNode, lo: Any, lo_inf: bool, hi: Any, hi_inf: bool) -> Any:
        if lo_inf and hi_inf:
            return y.agg
        comb = self._combine
        acc = _NONE
        times, vals, kids = y.times, y.vals, y.kids
        n = len(times)
        for i in range(n + 1):
            if kids is not None:
                below = i < n and not lo_inf and times[i] <= lo
                above = i > 0 and not hi_inf and times[i - 1] >= hi
                if not below and not above:
                    r = self._rq(
                        kids[i],
                        lo,
                        lo_inf or (i > 0 and lo <= times[i - 1]),
                        hi,
                        hi_inf or (i < n and times[i] <= hi),
                    )
                    acc = r if acc is _NONE else comb(acc, r)
            if i < n:
                t = times[i]
                if (lo_inf or lo <= t) and (hi_inf or t <= hi):
                    acc = vals[i] if acc is _NONE else comb(acc, vals[i])
        return self._one if acc is _NONE else acc

    def oldest(self) -> Any:
        """The smallest timestamp, or None when empty. O(log n).

        >>> from windowagg.monoids import Sum
        >>> BTree(Sum()).oldest() is None
        True
        """
        return self._ref()

    def youngest(self) -> Any:
        """The largest timestamp, or None when empty. O(log n).

        >>> from windowagg.monoids import Sum
        >>> w = BTree(Sum()); w.insert(3, 0); w.insert(8, 0); w.youngest()
        8
        """
        y = self._root
        while y.kids is not None:
            y = y.kids[-1]
        return y.times[-1] if y.times else None

    def __len__(self) -> int:
        """Number of distinct timestamps. O(1).

        >>> from windowagg.monoids import Sum
        >>> w = BTree(Sum()); w.bulk_insert([(1, 1), (1, 2), (4, 0)]); len(w)
        2
        """
        return self._size

    def __iter__(self) -> Iterator[tuple[Any, P]]:
        """``(t, partial)`` pairs in time order. O(n).

        >>> from windowagg.monoids import Concat
        >>> w = BTree(Concat()); w.insert(2, "b"); w.insert(1, "a"); list(w)
        [(1, ('a',)), (2, ('b',))]
        """
        out: list[tuple[Any, Any]] = []

        def walk(y: _BNode) -> None:
            if y.kids is None:
                out.extend(zip(y.times, y.vals, strict=True))
                return
            for i in range(len(y.times)):
                walk(y.kids[i])
                out.append((y.times[i], y.vals[i]))
            walk(y.kids[-1])

        walk(self._root)
        return iter(out)

    @classmethod
    def from_sorted_partials(
        cls,
        monoid: Monoid[In, P, Out],
        pairs: Iterable[tuple[Any, Any]],
        min_arity: int = DEFAULT_MIN_ARITY,
    ) -> BTree[In, P, Out]:
        """Build from strictly increasing ``(t, partial)`` pairs (not lifted) in O(n).

        >>> from windowagg.monoids import Sum
        >>> BTree.from_sorted_partials(Sum(), [(1, 2), (5, 3)]).query()
        5
        """
        w = cls(monoid, min_arity=min_arity)
        items = list(pairs)
        if not items:
            return w
        ref = items[0][0]
        check_timestamp(ref, None)
        for i in range(1, len(items)):
            check_timestamp(items[i][0], ref)
            if not items[i - 1][0] < items[i][0]:
                raise TimestampError(
                    f"from_sorted_partials: timestamps must be strictly increasing at entry {i}"
                )
        root, levels = pack_levels(_BNode, [t for t, _ in items], [p for _, p in items], w._maxk)
        for nodes in levels:  # bottom-up: a node's aggregate needs its children's
            for y in nodes:
                w._fix(y)
        w._fix(root)
        w._root = root
        w._size = len(items)
        return w

    def _check(self) -> None:
        """O(n): shape, arity, key order, parent pointers, aggregates, size.

        >>> from windowagg.monoids import Sum
        >>> w = BTree(Sum(), min_arity=2)
        >>> for s in range(30): w.insert(s, 1)
        >>> w._check()
        """
        root = self._root
        if root.parent is not None:
            raise InvariantError("BTree: root has a parent")
        depths: set[int] = set()
        count = [0]
        mink, maxk = self._mink, self._maxk

        def walk(y: _BNode, depth: int, lo: Any, hi: Any) -> None:
            where = f"node {y.times!r} at depth {depth}"
            k = len(y.times)
            if len(y.vals) != k:
                raise InvariantError(f"BTree: {where}: times and vals differ in length")
            if y.parent is not None and not mink <= k <= maxk:
                raise InvariantError(f"BTree: {where}: {k} entries, allowed {mink}..{maxk}")
            if k > maxk or (y.parent is None and y.kids is not None and k < 1):
                raise InvariantError(f"BTree: root {where}: bad entry count {k}")
            for i in range(1, k):
                if not y.times[i - 1] < y.times[i]:
                    raise InvariantError(f"BTree: {where}: keys not increasing at {i}")
            if k and lo is not _NONE and not lo < y.times[0]:
                raise InvariantError(f"BTree: {where}: key below its subtree range")
            if k and hi is not _NONE and not y.times[-1] < hi:
                raise InvariantError(f"BTree: {where}: key above its subtree range")
            count[0] += k
            if y.kids is None:
                depths.add(depth)
            else:
                if len(y.kids) != k + 1:
                    raise InvariantError(f"BTree: {where}: {len(y.kids)} children for {k} keys")
                for i, c in enumerate(y.kids):
                    if c.parent is not y:
                        raise InvariantError(f"BTree: child {i} of {where} has a wrong parent")
                    walk(c, depth + 1, y.times[i - 1] if i else lo, y.times[i] if i < k else hi)
            old = y.agg
            self._fix(y)
            new = y.agg
            y.agg = old
            if not same(old, new):
                raise InvariantError(f"BTree: {where}: stored aggregate {old!r} != {new!r}")

        walk(root, 0, _NONE, _NONE)
        if len(depths) > 1:
            raise InvariantError(f"BTree: leaves at different depths {sorted(depths)}")
        if count[0] != self._size:
            raise InvariantError(f"BTree: size {self._size} but the tree holds {count[0]}")

    def __repr__(self) -> str:
        return f"ooo.BTree({self._m!r}, min_arity={self._mu}, n={len(self)})"
