"""FiBA's tree: nodes, finger search, split/merge/move, aggregate repair, O(n) build.

The state and the structural machinery of :class:`windowagg.ooo.FiBA` (the public class
and its fact card live in ``ooo/fiba.py``; bulk operations in ``ooo/_fiba_bulk.py``, the
invariant check in ``ooo/_fiba_check.py``). Every method here runs off the d = 0 fast
paths, which stay inline in ``FiBA.insert``/``FiBA.evict``.

Aggregates (see ``docs/fiba.md``): the root stores its *inner* aggregate, the non-root
nodes of the left spine a *left* aggregate (their subtree without the first child, then
the parent's left aggregate), the right spine the mirror *right* aggregate, every other
node the *up* aggregate of its subtree. Inner spine nodes and the right finger also keep
their own part (``loc``) so that a change inside an up-subtree costs one combine per
spine level; the left finger keeps its suffix aggregates (``_lsuf``).
"""

from __future__ import annotations

import operator
from bisect import bisect_left, insort
from functools import reduce
from itertools import accumulate
from typing import Any

from windowagg._time import check_timestamp
from windowagg.monoids.base import Monoid
from windowagg.ooo._pack import pack_levels

_AGG = operator.attrgetter("agg")
_FIRST = operator.itemgetter(0)
_NONE: Any = object()  # "no accumulator yet" (None is a legitimate partial, e.g. Max's identity)


class _Node:
    """One B-tree node: parallel lists of entries, children (None at leaves), one aggregate."""

    __slots__ = ("agg", "kids", "loc", "ls", "parent", "rs", "times", "vals")

    def __init__(
        self, times: list[Any], vals: list[Any], kids: list[_Node] | None, parent: _Node | None
    ) -> None:
        self.times = times
        self.vals = vals
        self.kids = kids
        self.parent = parent
        self.agg: Any = None
        # inner spine nodes only: the node's own part of its left/right aggregate
        # (inner ⊗ last child, or first child ⊗ inner), without the parent's part
        self.loc: Any = None
        self.ls = False
        self.rs = False


class _FiBATree:
    """FiBA's state and tree operations (a base of :class:`windowagg.ooo.FiBA`)."""

    __slots__ = (
        "_combine",
        "_cut",
        "_dead",
        "_flip",
        "_hlift",
        "_hlower",
        "_lf",
        "_lift",
        "_lower",
        "_lsuf",
        "_m",
        "_maxk",
        "_minarity",
        "_mink",
        "_one",
        "_rf",
        "_root",
        "_size",
        "_tcls",
    )

    _combine: Any  # the monoid's combine (operator.add for Sum: same result, no frame)
    _dead: list[_Node]  # the graveyard: roots of subtrees cut off by bulk_evict
    _flip: Any  # flip(a, b) = b ⊗ a, for the left finger's suffix scan
    _hlift: Any  # None when lift is the identity (the hot paths skip the call)
    _hlower: Any  # likewise for lower
    _lf: _Node  # left finger: the leftmost leaf
    _lift: Any
    _lower: Any
    _lsuf: list[Any]  # the left finger's suffix aggregates, reversed
    _m: Monoid[Any, Any, Any]
    _maxk: int  # most entries of any node: 2μ - 1
    _minarity: int  # μ
    _mink: int  # fewest entries of a non-root node: μ - 1
    _one: Any  # the identity
    _rf: _Node  # right finger: the rightmost leaf
    _root: _Node
    _size: int  # entries, those of the graveyard's nodes included until drained
    _tcls: type | None  # the class of the first timestamp of a non-empty window
    _cut: list[tuple[Any, Any]] | None  # during bulk_evict: the entries deleted in place

    def _reset(self) -> None:
        """Make the window empty: one empty leaf as root and fingers, no graveyard."""
        root = _Node([], [], None, None)
        root.agg = self._one
        self._root = root
        self._lf = root
        self._rf = root
        self._lsuf = []
        self._size = 0
        self._dead = []
        self._cut = None

    # ------------------------------------------------------------------ timestamps
    def _validate(self, t: Any, where: str = "timestamp") -> None:
        """Raise TimestampError for a bad *t*; remember the window's timestamp class."""
        root = self._root
        if root.kids is None and not root.times:
            check_timestamp(t, None, where=where)
            self._tcls = type(t)
        else:
            check_timestamp(t, self._lf.times[0], where=where)

    # ------------------------------------------------------------------ aggregates
    def _fix(self, y: _Node) -> None:
        """Recompute y's position-aware aggregate from its children and parent. O(arity).

        The node's values and its children's aggregates are laid out in one list in time
        order and folded by ``functools.reduce``: the loop runs in C, and the combine
        order is exactly the left fold of the formula.
        """
        comb = self._combine
        p = y.parent
        kids = y.kids
        vals = y.vals
        if kids is None:
            if y is self._lf:
                self._fix_lf(y, p.agg if p is not None and p.parent is not None else _NONE)
                return
            if p is not None and y.rs and not y.ls:
                # the right finger keeps the fold of its own values (its spine part)
                loc = y.loc = reduce(comb, vals) if vals else self._one
                y.agg = comb(p.agg, loc) if p.parent is not None else loc
            elif p is not None and y.ls and not y.rs and p.parent is not None:
                y.agg = comb(reduce(comb, vals), p.agg)
            else:
                y.agg = reduce(comb, vals) if vals else self._one
            return
        k = len(vals)
        seq = [None] * (2 * k + 1)
        seq[0::2] = map(_AGG, kids)
        seq[1::2] = vals
        if p is None or (y.ls and y.rs):
            y.agg = reduce(comb, seq[1:-1]) if k else self._one
        elif y.ls:
            loc = y.loc = reduce(comb, seq[1:])
            y.agg = comb(loc, p.agg) if p.parent is not None else loc
        elif y.rs:
            del seq[-1]
            loc = y.loc = reduce(comb, seq)
            y.agg = comb(p.agg, loc) if p.parent is not None else loc
        else:
            y.agg = reduce(comb, seq)

    def _fix_lf(self, y: _Node, tail: Any) -> None:
        """Rebuild the left finger's suffix aggregates and y.agg. O(entries) combines.

        ``_lsuf[j]`` is ``v_{k-1-j} ⊗ … ⊗ v_{k-1} ⊗ tail`` (stored reversed, so evicting
        the oldest value is ``_lsuf.pop()`` and the new aggregate is ``_lsuf[-1]``).
        """
        rv = y.vals[::-1]
        if tail is _NONE:
            suf = list(accumulate(rv, self._flip))
        else:
            suf = list(accumulate(rv, self._flip, initial=tail))
            del suf[0]
        self._lsuf = suf
        y.agg = suf[-1] if suf else (self._one if tail is _NONE else tail)

    def _fix_if_up(self, y: _Node) -> None:
        if y.parent is not None and not y.ls and not y.rs:
            self._fix(y)

    def _repair(self, top: _Node, hit_l: bool, hit_r: bool) -> None:
        """Finish an operation: climb the up-aggregate chain, then walk down the spines."""
        fix = self._fix
        if top.parent is not None and not top.ls and not top.rs:
            while top.parent is not None and not top.ls and not top.rs:
                top = top.parent
                fix(top)
            # Only an up-subtree (which holds no spine node) changed: the spine nodes
            # below top kept their own parts, so each needs one combine with its
            # parent's new aggregate; the finger leaf is recomputed.
            comb = self._combine
            n = top
            if top.ls:
                while True:
                    kids = n.kids
                    assert kids is not None
                    c = kids[0]
                    if c.kids is None:
                        fix(c)
                        return
                    c.agg = comb(c.loc, n.agg)
                    n = c
            elif top.rs:
                kids = n.kids
                while kids is not None:
                    c = kids[-1]
                    c.agg = comb(n.agg, c.loc)
                    n = c
                    kids = c.kids
            return
        fix(top)
        root = top.parent is None
        if top.ls or (root and hit_l):
            n = top
            while n.kids is not None:
                n = n.kids[0]
                fix(n)
        if top.rs or (root and hit_r):
            n = top
            while n.kids is not None:
                n = n.kids[-1]
                fix(n)

    # ------------------------------------------------------------------ search
    def _search(self, t: Any) -> tuple[_Node, int, bool]:
        """Finger search: the node holding t (found) or the leaf where t belongs. O(log d)."""
        node = self._root
        if node.kids is not None:
            rt = node.times
            if t < rt[0]:
                node = self._lf
                while node.parent is not None and node.times[-1] < t:
                    node = node.parent
            elif t > rt[-1]:
                node = self._rf
                while node.parent is not None and t < node.times[0]:
                    node = node.parent
        while True:
            times = node.times
            i = bisect_left(times, t)
            if i < len(times) and times[i] == t:
                return node, i, True
            kids = node.kids
            if kids is None:
                return node, i, False
            node = kids[i]

    # ------------------------------------------------------------------ restructuring
    def _height_increase(self) -> None:
        old = self._root
        r = _Node([], [], [old], None)
        r.agg = self._one
        old.parent = r
        old.ls = old.rs = True
        self._root = r

    def _height_decrease(self) -> None:
        old = self._root
        kids = old.kids
        assert kids is not None
        c = kids[0]
        c.parent = None
        c.ls = c.rs = False
        old.kids = None
        self._root = c
        self._fix(c)

    def _split(self, y: _Node) -> None:
        """Split an overflowing y (2μ entries) into y (μ entries) and a new right node."""
        mu = self._minarity
        p = y.parent
        assert p is not None
        pk = p.kids
        assert pk is not None
        j = len(pk) - 1 if pk[-1] is y else pk.index(y)
        times, vals = y.times, y.vals
        z = _Node(times[mu + 1 :], vals[mu + 1 :], None, p)
        st, sv = times[mu], vals[mu]
        del times[mu:]
        del vals[mu:]
        kids = y.kids
        if kids is not None:
            zk = kids[mu + 1 :]
            del kids[mu + 1 :]
            z.kids = zk
            for c in zk:
                c.parent = z
        p.times.insert(j, st)
        p.vals.insert(j, sv)
        pk.insert(j + 1, z)
        if y.rs:
            y.rs = False
            z.rs = True
        if self._rf is y:
            self._rf = z
        self._fix_if_up(y)
        self._fix_if_up(z)
        self._fix_if_up(p)

    def _merge(self, p: _Node, k: int) -> _Node:
        """Merge p.kids[k] and p.kids[k+1] around separator k; return the survivor."""
        pk = p.kids
        assert pk is not None
        a, b = pk[k], pk[k + 1]
        a.times.append(p.times[k])
        a.times.extend(b.times)
        a.vals.append(p.vals[k])
        a.vals.extend(b.vals)
        if a.kids is not None:
            assert b.kids is not None
            for c in b.kids:
                c.parent = a
            a.kids.extend(b.kids)
            b.kids = None
        del p.times[k]
        del p.vals[k]
        del pk[k + 1]
        if b.rs:
            a.rs = True
        if self._rf is b:
            self._rf = a
        self._fix_if_up(a)
        self._fix_if_up(p)
        return a

    def _move(self, p: _Node, rec_i: int, giv_i: int, count: int = 1) -> None:
        """Rotate *count* entries (and children) from sibling giv_i to sibling rec_i via p."""
        pk = p.kids
        assert pk is not None
        rec, giv = pk[rec_i], pk[giv_i]
        if rec_i < giv_i:  # giver on the right: rotate left
            k = rec_i
            rec.times.append(p.times[k])
            rec.vals.append(p.vals[k])
            rec.times.extend(giv.times[: count - 1])
            rec.vals.extend(giv.vals[: count - 1])
            p.times[k] = giv.times[count - 1]
            p.vals[k] = giv.vals[count - 1]
            del giv.times[:count]
            del giv.vals[:count]
            if rec.kids is not None:
                assert giv.kids is not None
                moved = giv.kids[:count]
                del giv.kids[:count]
                for c in moved:
                    c.parent = rec
                rec.kids.extend(moved)
        else:  # giver on the left: rotate right
            k = giv_i
            n = len(giv.times)
            rec.times[:0] = [*giv.times[n - count + 1 :], p.times[k]]
            rec.vals[:0] = [*giv.vals[n - count + 1 :], p.vals[k]]
            p.times[k] = giv.times[n - count]
            p.vals[k] = giv.vals[n - count]
            del giv.times[n - count :]
            del giv.vals[n - count :]
            if rec.kids is not None:
                assert giv.kids is not None
                nk = len(giv.kids)
                moved = giv.kids[nk - count :]
                del giv.kids[nk - count :]
                for c in moved:
                    c.parent = rec
                rec.kids[:0] = moved
        self._fix_if_up(rec)
        self._fix_if_up(giv)
        self._fix_if_up(p)

    def _rebalance_insert(self, node: _Node) -> tuple[_Node, bool, bool]:
        hit_l, hit_r = node.ls, node.rs
        maxk = self._maxk
        while len(node.times) > maxk:
            if node.parent is None:
                self._height_increase()
                hit_l = hit_r = True
            self._split(node)
            p = node.parent
            assert p is not None
            node = p
            hit_l = hit_l or node.ls
            hit_r = hit_r or node.rs
        return node, hit_l, hit_r

    def _rebalance_evict(self, node: _Node, to_repair: _Node | None) -> tuple[_Node, bool, bool]:
        hit_l, hit_r = node.ls, node.rs
        if node is to_repair:
            self._fix_if_up(node)
        mink = self._mink
        while node.parent is not None and len(node.times) < mink:
            p = node.parent
            pk = p.kids
            assert pk is not None
            j = 0 if pk[0] is node else pk.index(node)
            s = j + 1 if j < len(pk) - 1 else j - 1
            sib = pk[s]
            hit_r = hit_r or sib.rs
            hit_l = hit_l or sib.ls  # erratum: missing in [P1] Fig. 7 (authors' issue #77)
            surplus = len(sib.times) - mink
            if len(node.times) + len(sib.times) < self._maxk:
                # merge whenever the result fits (not only when the sibling is minimal):
                # in FIFO use the left finger then absorbs a fresh node in one step
                node = self._merge(p, min(j, s))
                if p.parent is None and not p.times:
                    self._height_decrease()  # node is now the root; the loop ends
                else:
                    node = p
            else:
                # Move the sibling's whole surplus (it keeps μ children, the node gets at
                # most 2μ-1): in FIFO use this refills the left finger for many cheap
                # evictions, and the next underflow merges. Amortized O(1) like a single
                # move: the coins of both nodes pay for it (guide §3.9).
                self._move(p, j, s, surplus)
                node = p
            if node is to_repair:
                self._fix_if_up(node)
            hit_l = hit_l or node.ls
            hit_r = hit_r or node.rs
        return node, hit_l, hit_r

    # ------------------------------------------------------------------ off the fast paths
    def _insert_generic(self, t: Any, v: Any) -> None:
        """insert() off the fast path."""
        if self._dead:
            self._drain(2)
        root = self._root
        if root.kids is None and not root.times:
            # an empty window: no combine would meet a lone entry before a query does,
            # so one combine with the identity checks it now
            self._combine(self._one, v)
        node, i, found = self._search(t)
        self._insert_at(node, i, found, t, v)

    def _lf_underflow(self, lf: _Node) -> None:
        """Rebalance after the left finger underflowed (the d = 0 evict path)."""
        if self._dead:
            self._drain(2 * self._maxk)
        self._repair(*self._rebalance_evict(lf, None))

    def _insert_at(self, node: _Node, i: int, found: bool, t: Any, v: Any) -> None:
        """Put the partial v at position i of node (combined in place if found); repair."""
        if found:
            old = node.vals[i]
            node.vals[i] = self._combine(old, v)
            try:
                self._fix_if_up(node)
                self._repair(*self._rebalance_insert(node))
            except BaseException:  # a repair's combine: the old value, rebuilt (O(n))
                node.vals[i] = old
                self._rebuild(self._entries())
                raise
            return
        times = node.times
        n = len(times)
        times.insert(i, t)
        node.vals.insert(i, v)
        self._size += 1
        try:
            if node.parent is not None and not node.ls and not node.rs:
                # appended at the end, a leaf's up-aggregate extends with one combine
                # (the same left fold as a recomputation, so float results agree exactly;
                # prepending would re-associate and is recomputed instead)
                if i == n:
                    node.agg = self._combine(node.agg, v)
                else:
                    self._fix(node)
            self._repair(*self._rebalance_insert(node))
        except BaseException:
            # a combine refused the new value after it was stored: the keys are whole
            # (splits finish before any combine) but aggregates may be stale, so take
            # the entry out again by rebuilding from the other entries (O(n), only on
            # this error path): the window is exactly as before the call
            self._rebuild([e for e in self._entries() if e[0] != t], 1)
            raise

    def _rebuild(self, pairs: list[tuple[Any, Any]], less: int = 0) -> None:
        """Replace this window's state by a fresh build of sorted ``pairs``. O(n).

        The recovery of an operation that failed half-way (a ``combine`` that raised):
        ``pairs`` hold the old partials, whose combines succeeded before. The graveyard is
        dropped with the old tree; the timestamp class is kept. The size is not taken from
        ``pairs`` but kept from the count (minus the *less* entries the failed operation
        had counted in), so that a recovery that lost an entry fails ``_check()``.
        """
        size = self._size - self._pending() - less
        self._reset()
        if pairs:
            self._build([t for t, _ in pairs], [p for _, p in pairs])
        self._size = size

    def _pending(self) -> int:
        """Entries still counted in ``_size`` but held by the graveyard. O(pending)."""
        n = 0
        stack = list(self._dead)
        while stack:
            y = stack.pop()
            n += len(y.times)
            if y.kids is not None:
                stack.extend(y.kids)
        return n

    def _evict_general(self, t: Any) -> None:
        """evict() off the fast path (t is valid, the window is not empty)."""
        if self._dead:
            self._drain(2)
        node, i, found = self._search(t)
        if not found:
            return
        gone = (t, node.vals[i])
        self._size -= 1
        try:
            if node.kids is None:
                del node.times[i]
                del node.vals[i]
                self._fix_if_up(node)
                self._repair(*self._rebalance_evict(node, None))
            else:
                self._repair(*self._evict_inner(node, i))
        except BaseException:
            # a combine of the repair raised: the keys are whole (every move, merge and
            # split finishes before its combines), so rebuild with the entry put back
            # (O(n), only on this error path)
            pairs = self._entries()
            insort(pairs, gone, key=_FIRST)
            self._rebuild(pairs, -1)
            raise

    def _split_rf(self, rf: _Node) -> None:
        """Split the overflowing right finger after an append (the d = 0 insert path).

        The parent is the root or a right-spine node: its inner/right aggregate ends with
        its last entry, so adding the old finger as a middle child and the separator after
        it extends the aggregate with two combines instead of a recomputation.
        """
        if self._dead:
            self._drain(2 * self._maxk)
        mu = self._minarity
        p = rf.parent
        assert p is not None
        times, vals = rf.times, rf.vals
        zv = vals[mu + 1 :]
        z = _Node(times[mu + 1 :], zv, None, p)
        st, sv = times[mu], vals[mu]
        del times[mu:]
        del vals[mu:]
        rf.rs = False  # rf becomes an ordinary node: up-aggregate
        z.rs = True
        pk = p.kids
        assert pk is not None
        p.times.append(st)
        p.vals.append(sv)
        pk.append(z)
        self._rf = z
        comb = self._combine
        acc = reduce(comb, vals)
        rf.agg = acc
        # the parent's inner/right aggregate (and own part) end with its last entry
        if p.parent is None:
            p.agg = comb(comb(p.agg, acc), sv)
        else:
            loc = p.loc = comb(comb(p.loc, acc), sv)
            gp = p.parent
            p.agg = comb(gp.agg, loc) if gp.parent is not None else loc
        if len(p.times) > self._maxk:
            self._repair(*self._rebalance_insert(p))
            return
        loc = z.loc = reduce(comb, zv)
        z.agg = comb(p.agg, loc) if p.parent is not None else loc

    def _evict_inner(self, node: _Node, i: int) -> tuple[_Node, bool, bool]:
        kids = node.kids
        assert kids is not None
        left, right = kids[i], kids[i + 1]
        if len(right.times) > self._mink:
            leaf = right
            while leaf.kids is not None:
                leaf = leaf.kids[0]
            t2 = leaf.times.pop(0)
            v2 = leaf.vals.pop(0)
        else:
            leaf = left
            while leaf.kids is not None:
                leaf = leaf.kids[-1]
            t2 = leaf.times.pop()
            v2 = leaf.vals.pop()
        node.times[i] = t2
        node.vals[i] = v2
        self._fix_if_up(leaf)
        top, hit_l, hit_r = self._rebalance_evict(leaf, node)
        # If rebalancing stopped below node, climb to node repairing up-aggregates.
        x: _Node | None = top
        while x is not None and x is not node:
            x = x.parent
        if x is node:
            while top is not node:
                p = top.parent
                assert p is not None
                top = p
                hit_l = hit_l or top.ls
                hit_r = hit_r or top.rs
                self._fix_if_up(top)
        return top, hit_l, hit_r

    # ------------------------------------------------------------------ reading
    def _entries(self) -> list[tuple[Any, Any]]:
        """All ``(t, partial)`` pairs in time order. O(n)."""
        out: list[tuple[Any, Any]] = []
        self._collect(self._root, out)
        return out

    def _collect(self, y: _Node, out: list[tuple[Any, Any]]) -> None:
        kids = y.kids
        if kids is None:
            out.extend(zip(y.times, y.vals, strict=True))
            return
        times, vals = y.times, y.vals
        for i in range(len(times)):
            self._collect(kids[i], out)
            out.append((times[i], vals[i]))
        self._collect(kids[-1], out)

    def _rq(self, y: _Node, lo: Any, lo_inf: bool, hi: Any, hi_inf: bool) -> Any:
        """Aggregate of y's subtree restricted to [lo, hi]; *_inf flags mean unbounded."""
        if lo_inf and hi_inf and y.parent is not None and not y.ls and not y.rs:
            return y.agg  # whole subtree covered and y stores its up-aggregate
        comb = self._combine
        acc = _NONE
        times, vals, kids = y.times, y.vals, y.kids
        n = len(times)
        for i in range(n + 1):
            if kids is not None:
                # child i holds the keys strictly between times[i-1] and times[i]
                below = i < n and not lo_inf and times[i] <= lo
                above = i > 0 and not hi_inf and times[i - 1] >= hi
                if not below and not above:
                    c_lo_inf = lo_inf or (i > 0 and lo <= times[i - 1])
                    c_hi_inf = hi_inf or (i < n and times[i] <= hi)
                    r = self._rq(kids[i], lo, c_lo_inf, hi, c_hi_inf)
                    acc = r if acc is _NONE else comb(acc, r)
            if i < n:
                t = times[i]
                if (lo_inf or lo <= t) and (hi_inf or t <= hi):
                    acc = vals[i] if acc is _NONE else comb(acc, vals[i])
        return self._one if acc is _NONE else acc

    # ------------------------------------------------------------------ graveyard
    def _drain(self, budget: int) -> None:
        """Count and release up to *budget* discarded nodes (all if budget < 0)."""
        dead = self._dead
        size = self._size
        while dead and budget != 0:
            y = dead.pop()
            size -= len(y.times)
            if y.kids is not None:
                dead.extend(y.kids)
                y.kids = None
            y.parent = None
            budget -= 1
        self._size = size

    def _discard(self, nodes: list[_Node]) -> None:
        self._dead.extend(nodes)

    # ------------------------------------------------------------------ O(n) build
    def _build(self, ts: list[Any], ps: list[Any]) -> None:
        """Replace the (empty) tree by one built bottom-up from strictly increasing entries.

        Nodes are packed with as many entries as fit (between μ-1 and 2μ-1, evenly
        spread), separators move up a level; O(n) time, C-level list slicing.
        """
        root, levels = pack_levels(_Node, ts, ps, self._maxk)
        self._root = root
        lf = rf = root
        while lf.kids is not None:
            lf = lf.kids[0]
            lf.ls = True
        while rf.kids is not None:
            rf = rf.kids[-1]
            rf.rs = True
        self._lf, self._rf = lf, rf
        # the tree was empty, so _size counts only the entries still on the graveyard
        # (a bulk_evict that emptied the window): they stay counted until drained
        self._size += len(ts)
        fix = self._fix
        for nodes in levels:  # bottom-up: up-aggregates first
            for y in nodes:
                if not y.ls and not y.rs:
                    fix(y)
        fix(root)
        for side in (0, -1):
            y = root
            while y.kids is not None:
                y = y.kids[side]
                fix(y)
