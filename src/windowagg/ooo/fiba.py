"""FiBA: the finger B-tree aggregator, with bulk eviction and bulk insertion.

=================  ==========================================================================
ordering           out-of-order (any insert/evict position; timestamps of one ordered type)
operator needs     monoid (associative, identity); not commutative, no inverse
query              O(1) worst case: 2 combines (``leftFinger ⊗ root ⊗ rightFinger``)
insert / evict     O(log d) amortized, O(log n) worst case; d = distance to the closer end;
                   d = 0 (append youngest, evict oldest) is amortized O(1)
range_query        O(log d_from + log d_to + log n_sub) worst case
bulk_evict(t)      O(log m) amortized, O(log n) worst case; m = entries removed
bulk_insert        O(log d + m (1 + log(d/m))) amortized for a sorted bulk of m entries
                   (plus an O(m log m) stable sort when the bulk is not sorted)
len()              O(1) amortized (see "Size" below)
space              O(n): 2 list slots per entry, one node per 1..2μ-1 entries
paper              Tangwongsan, Hirzel, Schneider, VLDB 2019 (FiBA) and VLDB 2023 (bulk FiBA)
=================  ==========================================================================

The window is a B-tree keyed by timestamp with arity between ``min_arity`` (μ) and
``2μ``; entries live in every node.  Every node stores one *position-aware* partial
aggregate: the root its *inner* aggregate, the non-root nodes of the left spine a *left*
aggregate (their subtree without the first child, then the parent's left aggregate), the
right spine the mirror *right* aggregate, every other node the *up* aggregate of its
subtree.  Fingers point at the leftmost and rightmost leaves, so ``query()`` is
``leftFinger.agg ⊗ root.agg ⊗ rightFinger.agg`` and changes near either end only touch a
short stretch of spine.  See ``docs/fiba.md`` for a diagram and the errata we fixed.

Implementation notes beyond the papers:

* the left finger also keeps the suffix aggregates of its values (``v_i ⊗ … ⊗ parent``),
  so evicting the oldest entry costs no combine until the leaf underflows; appending the
  youngest entry extends the right finger's aggregate with one combine;
* **Size.** ``bulk_evict`` detaches whole subtrees without visiting their entries; they are
  put on a graveyard list and counted (and released) a few nodes per later operation off
  the fast paths (including every split and merge at the fingers), or all at once by
  ``len()``.  So ``bulk_evict`` stays O(log m), ``len()`` is exact, O(1) when nothing is
  pending and amortized O(1) overall (each discarded node is counted once).  The d = 0
  fast paths do not count at all: ``_size`` is exact as of the fingers' lengths recorded
  (``_sync``/``_rebase``) by every operation off the fast paths, and ``len()`` adds how
  much the fingers grew or shrank since;
* **Int sums.** For ``Sum`` (exact type, so ``Counting`` and subclasses keep the generic
  path) and while every stored partial is an ``int``, sums are exact in any order, so
  an operation adds (or subtracts) the changed value to each stored aggregate that covers
  it instead of refolding nodes: O(1) per level, and splits and merges cost one ``sum()``
  of the entries that move.  The left finger then keeps no suffix list (its aggregate is
  kept by subtraction).  Inserts off the fast path also remember the middle leaf they
  went to (its key bounds and the nodes to update) and reuse it while nothing has been
  restructured: consecutive late events landing together skip the finger search.  The
  first non-``int`` value (a float, a bool, ...) ends the shortcuts for good; the
  aggregates are the same numbers either way, and ``_check()`` verifies them with the
  generic formulas;
* bulk inserts whose timestamps collide with stored ones, at leaves or inner nodes, are
  combined in place (``old ⊗ new``) and the per-level treelets are coalesced by target
  node, which avoids the tree corruption of the authors' C++ (guide §4.8).

Examples
--------
>>> from windowagg.monoids import Concat
>>> w = FiBA(Concat(), min_arity=2)
>>> for t in (3, 1, 2, 5): w.insert(t, str(t))
>>> w.insert(2, "b"); w.query()
('1', '2', 'b', '3', '5')
>>> w.range_query(2, 4), w.oldest(), w.youngest(), len(w)
(('2', 'b', '3'), 1, 5, 4)
>>> w.bulk_evict(2); w.query()
('3', '5')
>>> w.bulk_insert([(9, "x"), (4, "y"), (3, "z")]); w.query(), len(w)
(('3', 'z', 'y', '5', 'x'), 4)
"""

from __future__ import annotations

import operator
from bisect import bisect_left
from collections.abc import Callable, Iterable, Iterator
from functools import reduce
from itertools import accumulate
from typing import Any

from windowagg._backend import Backend, BackendMeta, resolve_backend
from windowagg._time import check_timestamp
from windowagg.errors import TimestampError, WindowaggError
from windowagg.monoids.base import Monoid, require_monoid
from windowagg.monoids.builtins import MatMul2x2, Max, Min, Sum
from windowagg.ooo._fiba_arrays import FiBAArrays
from windowagg.ooo._pack import pack_levels

__all__ = ["FiBA"]

DEFAULT_MIN_ARITY = 8  # any monoid but Sum (benchmarks/bench_ooo.py, docs/performance/ooo.md)
SUM_MIN_ARITY = 32  # Sum (exact type): cheapest operator, int-sum shortcuts; same source

_AGG = operator.attrgetter("agg")
_NONE: Any = object()  # "no accumulator yet" (None is a legitimate partial, e.g. Max's identity)

# Built-ins whose lift and lower return their argument: the hot paths skip those calls
# (exact type match, so subclasses and wrappers such as Counting keep every call).
_IDENTITY_LIFT_LOWER: frozenset[type] = frozenset({Sum, Max, Min, MatMul2x2})


def _zip_bulk(times: Any, values: Any) -> list[tuple[Any, Any]]:
    """``bulk_insert(times, values)``'s pairs (equal lengths checked; buffers as lists)."""
    ts = times.tolist() if hasattr(times, "tolist") else list(times)
    vs = values.tolist() if hasattr(values, "tolist") else list(values)
    if len(ts) != len(vs):
        raise ValueError(
            f"ooo.FiBA.bulk_insert(times, values): {len(ts)} and {len(vs)} items; "
            "give sequences of equal length"
        )
    return list(zip(ts, vs, strict=True))


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


class FiBA(FiBAArrays, metaclass=BackendMeta):
    """Finger B-tree aggregator over an out-of-order window (see the module fact card).

    Parameters
    ----------
    monoid
        Any object with ``identity``, ``lift``, ``combine`` and ``lower``.
    min_arity
        μ >= 2; nodes have between μ and 2μ children (the root: 2 to 2μ). Default
        (None): 32 for ``Sum`` (the cheapest operator: bigger nodes mean fewer splits
        and merges at the fingers), 8 for every other monoid (a node refold costs O(μ)
        combines when data arrives out of order); chosen by ``benchmarks/bench_ooo.py``,
        see ``docs/performance/ooo.md``. For expensive operators (e.g. large Bloom
        filters) with out-of-order data, 2-4 is faster.

    Examples
    --------
    >>> from windowagg.monoids import Sum
    >>> w = FiBA(Sum())
    >>> w.insert(10, 1); w.insert(5, 2); w.insert(10, 3); w.query(), len(w)
    (6, 2)
    >>> w.evict(5); w.query(), list(w)
    (4, [(10, 4)])
    """

    __slots__ = (
        "_add",
        "_combine",
        "_dead",
        "_flip",
        "_hint",
        "_hlift",
        "_hlower",
        "_ints",
        "_lf",
        "_lfn",
        "_lift",
        "_lower",
        "_lsuf",
        "_m",
        "_maxk",
        "_minarity",
        "_mink",
        "_one",
        "_rf",
        "_rfn",
        "_root",
        "_size",
        "_tcls",
        "_ver",
    )

    @staticmethod
    def _native(monoid: Any, min_arity: int | None = None) -> Any:
        from windowagg._native.fiba import make  # the compiled core, imported on first use

        return make(monoid, min_arity)

    def __init__(
        self,
        monoid: Monoid[Any, Any, Any],
        min_arity: int | None = None,
        *,
        backend: Backend | None = None,
    ) -> None:
        require_monoid(monoid, "ooo.FiBA")
        if min_arity is None:
            min_arity = SUM_MIN_ARITY if type(monoid) is Sum else DEFAULT_MIN_ARITY
        if not isinstance(min_arity, int) or isinstance(min_arity, bool) or min_arity < 2:
            raise ValueError(f"ooo.FiBA: min_arity must be an int >= 2, got {min_arity!r}")
        self._m = monoid
        # Sum's combine is operator.add: same result without a Python frame.
        self._combine = operator.add if type(monoid) is Sum else monoid.combine
        self._lift = monoid.lift
        self._lower = monoid.lower
        fast = type(monoid) in _IDENTITY_LIFT_LOWER
        comb = self._combine
        # flip(a, b) = b ⊗ a, for the right-to-left suffix scan of the left finger
        self._flip: Any = (
            comb if getattr(monoid, "commutative", False) is True else (lambda a, b: comb(b, a))
        )
        self._hlift: Any = None if fast else monoid.lift  # None: identity, skip the call
        self._hlower: Any = None if fast else monoid.lower
        self._one = monoid.identity
        # Sum (exact type): ``+`` inline instead of a combine call (same result)
        self._add = type(monoid) is Sum
        # True while every stored partial of a Sum window is an ``int``: int sums are exact
        # in any order, so aggregates are updated by adding/subtracting the changed value
        # instead of refolding a node (see "Int sums" in the module docstring)
        self._ints = self._add
        self._minarity = min_arity
        self._mink = min_arity - 1  # fewest entries of a non-root node
        self._maxk = 2 * min_arity - 1  # most entries of any node
        root = _Node([], [], None, None)
        root.agg = self._one
        self._root = root
        self._lf = root
        self._rf = root
        self._lsuf: list[Any] = []
        # The fast paths do not count: _size is exact as of the finger lengths _lfn/_rfn
        # (see "Size" in the module docstring, _sync and _rebase)
        self._size = 0
        self._lfn = 0
        self._rfn = 0
        # int sums: the last middle leaf an insert went to, with its key bounds and the
        # nodes whose sums an insert there changes; valid while _ver (bumped by every
        # operation off the fast paths, i.e. by every restructuring) is unchanged
        self._ver = 0
        self._hint: tuple[Any, ...] | None = None
        self._dead: list[_Node] = []
        self._tcls: type | None = None

    # ------------------------------------------------------------------ properties
    @property
    def monoid(self) -> Monoid[Any, Any, Any]:
        """The monoid this window aggregates with.

        >>> from windowagg.monoids import Sum
        >>> FiBA(Sum()).monoid
        Sum()
        """
        return self._m

    @property
    def min_arity(self) -> int:
        """μ: every non-root node has between μ and 2μ children.

        >>> from windowagg.monoids import Concat, Sum
        >>> FiBA(Sum()).min_arity, FiBA(Concat()).min_arity, FiBA(Sum(), min_arity=2).min_arity
        (32, 8, 2)
        """
        return self._minarity

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
    def _inner(self, y: _Node) -> Any:
        """v0 ⊗ c1 ⊗ v1 ⊗ … ⊗ c_{a-2} ⊗ v_{a-2}; all values for a leaf. O(arity) combines."""
        vals = y.vals
        if not vals:
            return self._one
        kids = y.kids
        if kids is None:
            return reduce(self._combine, vals)
        k = len(vals)
        seq = [None] * (2 * k - 1)
        seq[0::2] = vals
        seq[1::2] = [c.agg for c in kids[1:k]]
        return reduce(self._combine, seq)

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
        if self._ints:  # int sums: no suffix list, the aggregate is kept by subtraction
            self._lsuf = []
            a = sum(y.vals)
            y.agg = a if tail is _NONE else a + tail
            return
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

    # ------------------------------------------------------------------ single operations
    def insert(self, t: Any, v: Any) -> None:
        """Insert ``v`` at time ``t``; at an existing ``t`` store ``old ⊗ lift(v)``.

        Amortized O(log d) (O(1) when ``t`` is the youngest), worst case O(log n).
        Raises TimestampError (window unchanged) for a NaN/None/incomparable ``t``.

        >>> from windowagg.monoids import Concat
        >>> w = FiBA(Concat()); w.insert(2, "b"); w.insert(1, "a"); w.insert(2, "c")
        >>> w.query()
        ('a', 'b', 'c')
        """
        if t.__class__ is not int or self._tcls is not int:
            self._validate(t)
        if self._ints:
            if v.__class__ is int:
                rf = self._rf
                times = rf.times
                # d = 0 fast path (int sums): append at the right finger (a non-root
                # leaf); its own part and its aggregate both grow by v
                if rf is not self._lf and t > times[-1]:
                    times.append(t)
                    rf.vals.append(v)
                    rf.loc += v
                    rf.agg += v
                    if len(times) > self._maxk:
                        self._counted(self._split_rs_int, rf)
                    return
                self._insert_int(t, v)  # keeps the count itself
                return
            # a value Sum cannot add (a str, None) is refused before anything changes;
            # any other value ends the int shortcuts
            self._combine(self._one, v)
            self._leave_ints()
        lift = self._hlift
        if lift is not None:
            v = lift(v)
        rf = self._rf
        times = rf.times
        # d = 0 fast path: append at the right finger (a non-root leaf); its right
        # aggregate is extended with one combine. Both combines run before anything
        # changes, so a raising combine leaves the window as it was.
        if rf is not self._lf and t > times[-1]:
            comb = self._combine
            loc = comb(rf.loc, v)
            p = rf.parent
            assert p is not None
            rf.agg = comb(p.agg, loc) if p.parent is not None else loc
            rf.loc = loc
            times.append(t)
            rf.vals.append(v)
            if len(times) > self._maxk:
                self._counted(self._split_rf, rf)
            return
        self._counted(self._insert_generic, t, v)

    def _insert_generic(self, t: Any, v: Any) -> None:
        """insert() off the fast path, generic monoids (and a one-leaf int-sum tree)."""
        if self._dead:
            self._drain(2)
        node, i, found = self._search(t)
        self._insert_at(node, i, found, t, v)

    def _sync(self) -> None:
        """Count what the fast paths did (they only change the fingers' lengths). O(1).

        Every operation off the fast paths runs between ``_sync()`` and ``_rebase()``
        and keeps ``_size`` exact itself.
        """
        self._ver += 1
        lf, rf = self._lf, self._rf
        self._size += len(lf.times) - self._lfn
        if rf is not lf:
            self._size += len(rf.times) - self._rfn
        self._lfn = len(lf.times)
        self._rfn = len(rf.times)

    def _counted(self, fn: Callable[..., Any], *args: Any) -> Any:
        """``fn(*args)`` (an operation off the fast paths) between ``_sync()`` and
        ``_rebase()``, also when it raises."""
        self._sync()
        try:
            return fn(*args)
        finally:
            self._rebase()

    def _lf_underflow(self, lf: _Node) -> None:
        """Generic monoids: rebalance after the left finger underflowed (fast evict)."""
        if self._dead:
            self._drain(2 * self._maxk)
        self._repair(*self._rebalance_evict(lf, None))

    def _rebase(self) -> None:
        """Record the fingers' lengths after an operation off the fast paths. O(1)."""
        self._lfn = len(self._lf.times)
        self._rfn = len(self._rf.times)

    def _insert_at(self, node: _Node, i: int, found: bool, t: Any, v: Any) -> None:
        """Put the partial v at position i of node (combined in place if found); repair."""
        if found:
            node.vals[i] = self._combine(node.vals[i], v)
            self._fix_if_up(node)
            self._repair(*self._rebalance_insert(node))
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
            self._rebuild([e for e in self.to_partials() if e[0] != t])
            raise

    def _rebuild(self, pairs: list[tuple[Any, Any]]) -> None:
        """Replace this window's state by a fresh build of sorted ``pairs``. O(n).

        The recovery of an operation that failed half-way (a ``combine`` that raised):
        ``pairs`` hold the old partials, whose combines succeeded before.
        """
        fresh = FiBA.from_sorted_partials(
            self._m, pairs, min_arity=self._minarity, backend="python"
        )
        tcls = self._tcls
        for name in FiBA.__slots__:
            setattr(self, name, getattr(fresh, name))
        if self._tcls is None:
            self._tcls = tcls  # an emptied window keeps its timestamp type

    def _insert_int(self, t: Any, v: int) -> None:
        """insert() off the fast path in an int-sum window: O(1) per level, no refolds.

        Called outside ``_sync()``/``_rebase()``: it counts a new entry itself unless the
        entry went to the right finger, and wraps anything that restructures.

        One pass: the finger search climbs to the node whose range holds t and descends,
        adding v to the up-aggregate of every middle node it enters (v lands below each
        of them); then the lowest spine node (or root) of the path and the spine below
        it take v, as in ``_bump``. A split uses ``_overflow_int``. An entry that lands
        in the left finger, or a tree that is a single leaf, takes the general path
        (the path to the left finger has no middle node, so nothing was added).
        """
        if self._dead:
            self._drain(2)
        h = self._hint
        if h is not None and h[0] == self._ver and h[2] < t < h[3]:
            # the same middle leaf as the last insert, nothing restructured since
            node: _Node = h[1]
            times = node.times
            i = bisect_left(times, t)
            if i < len(times) and times[i] == t:
                node.vals[i] += v
            else:
                times.insert(i, t)
                node.vals.insert(i, v)
                self._size += 1
            adds = h[4]
            for y in adds:
                y.agg += v
            if h[5] is not None:
                h[5].loc += v
            if len(times) > self._maxk:
                self._split_hinted(node, t, h[2], h[3], adds, h[5])
            return
        root = self._root
        if root.kids is None:
            self._counted(self._insert_generic, t, v)
            return
        rt = root.times
        # the climbs stop at the root at the latest (its keys bound t from the other side)
        if t > rt[-1]:
            node = self._rf
            while t < node.times[0]:
                node = node.parent  # type: ignore[assignment]
        elif t < rt[0]:
            node = self._lf
            while node.times[-1] < t:
                node = node.parent  # type: ignore[assignment]
        else:
            node = root
        top = node  # the lowest spine node or root on the path
        lo = hi = _NONE  # the key bounds of node's subtree, when the descent saw them
        while True:
            times = node.times
            i = bisect_left(times, t)
            if i < len(times) and times[i] == t:
                found = True
                break
            kids = node.kids
            if kids is None:
                found = False
                break
            if i:
                lo = times[i - 1]
            if i < len(times):
                hi = times[i]
            node = kids[i]
            if node.ls or node.rs:
                top = node
            else:
                node.agg += v
        if node is self._lf:
            self._counted(self._insert_at, node, i, found, t, v)
            return
        if found:
            node.vals[i] += v
        else:
            times.insert(i, t)
            node.vals.insert(i, v)
            if node is not self._rf:  # the right finger's length is counted by _sync
                self._size += 1
        if top.parent is None:
            top.agg += v
            adds = []  # the aggregates an insert at node changes (for the hint)
        else:
            adds = self._bump_spine(top, v)
        if lo is not _NONE and hi is not _NONE and node.kids is None and node is not top:
            y = node
            ups = []
            while y is not top:
                ups.append(y)
                y = y.parent
            adds = ups + adds
            adds.append(top)
            toploc = top if top.parent is not None else None
            if len(times) > self._maxk:
                self._split_hinted(node, t, lo, hi, adds, toploc)
            else:
                self._hint = (self._ver, node, lo, hi, adds, toploc)
        elif len(times) > self._maxk:
            self._counted(self._overflow_int, node)

    def _split_hinted(
        self, node: _Node, t: Any, lo: Any, hi: Any, adds: list[_Node], toploc: _Node | None
    ) -> None:
        """Split the overflowing middle leaf of an int-sum insert; keep the hint on the half
        that holds t when only the leaf split (adds[0] is the leaf)."""
        split = self._counted(self._overflow_int, node)
        if split is None:
            return
        z, sep_t = split
        if sep_t < t:
            leaf, lo = z, sep_t
        elif t < sep_t:
            leaf, hi = node, sep_t
        else:
            return  # t went up as the separator
        self._hint = (self._ver, leaf, lo, hi, [leaf, *adds[1:]], toploc)

    def _overflow_int(self, y: _Node) -> tuple[_Node, Any] | None:
        """Int sums: split an overflowing node y and its ancestors as needed. O(μ) per level.

        A middle node keeps μ entries; the new right sibling z takes the rest and its sum;
        the parent's total is unchanged, so nothing above changes unless the parent
        overflows in turn. Right-spine nodes go to ``_split_rs_int``; left-spine nodes and
        the root take the general path. Returns ``(z, separator key)`` when only y split
        (nothing else changed shape), else None.
        """
        mu, maxk = self._minarity, self._maxk
        first = True
        while True:
            if y.rs:
                self._split_rs_int(y)
                return None
            p = y.parent
            if p is None or y.ls:
                self._repair(*self._rebalance_insert(y))
                return None
            z, zagg, sep_t, sep = self._cut_int(y, p, mu)
            y.agg -= zagg + sep
            z.agg = zagg
            pk = p.kids
            assert pk is not None
            j = pk.index(y)
            p.times.insert(j, sep_t)
            p.vals.insert(j, sep)
            pk.insert(j + 1, z)
            if len(p.times) <= maxk:
                return (z, sep_t) if first else None
            first = False
            y = p

    def _bump(self, y: _Node, dv: int) -> None:
        """Int sums: the entries of y (not the left finger; the root is inner) changed by dv.

        Adds dv to every stored aggregate that covers them: y's up-aggregate chain, then
        where the chain meets a spine, that node's own part and aggregate and the
        aggregates below it on the spine (they include their parent's). O(log n) additions.
        """
        while True:
            p = y.parent
            if p is None:  # an inner root: its inner aggregate
                y.agg += dv
                return
            if y.ls or y.rs:
                self._bump_spine(y, dv)
                return
            y.agg += dv
            y = p

    @staticmethod
    def _bump_spine(y: _Node, dv: int) -> list[_Node]:
        """Int sums: dv lands in the part of the spine node y (not the root) that it
        stores itself: add it there, to y's aggregate and to the aggregates below y on
        its spine (they include y's). Returns those nodes below y. O(height of y)."""
        y.loc += dv
        y.agg += dv
        side = 0 if y.ls else -1
        below = []
        kids = y.kids
        while kids is not None:
            y = kids[side]
            y.agg += dv
            below.append(y)
            kids = y.kids
        return below

    def _leave_ints(self) -> None:
        """A non-int partial arrives: stop the int-sum shortcuts, build the suffix list."""
        self._ints = False
        self._fix(self._lf)

    def evict(self, t: Any) -> None:
        """Remove the entry at time ``t``; no-op when absent.

        Amortized O(log d) (O(1) for the oldest entry), worst case O(log n).

        >>> from windowagg.monoids import Sum
        >>> w = FiBA(Sum()); w.insert(1, 5); w.insert(2, 7); w.evict(1); w.evict(3)
        >>> w.query(), len(w)
        (7, 1)
        """
        lf = self._lf
        times = lf.times
        # d = 0 fast path: pop the oldest entry; the new left-finger aggregate is the next
        # suffix aggregate (int sums: the old one minus the value), no combine. No
        # timestamp check needed: t equals a stored timestamp (None and NaN never do).
        if times and times[0] == t:
            del times[0]
            if self._ints:
                lf.agg -= lf.vals.pop(0)
                if len(times) < self._mink and lf.parent is not None:
                    self._counted(self._ls_underflow_int, lf)
                return
            del lf.vals[0]
            suf = self._lsuf
            suf.pop()
            if suf:
                lf.agg = suf[-1]
            else:
                p = lf.parent
                lf.agg = p.agg if p is not None and p.parent is not None else self._one
            if len(times) < self._mink and lf.parent is not None:
                self._counted(self._lf_underflow, lf)
            return
        if t.__class__ is not int or self._tcls is not int:
            if self._root.kids is None and not self._root.times:
                check_timestamp(t, None)
                return
            self._validate(t)
        if not times:
            return  # empty window
        self._counted(self._evict_general, t)

    def _evict_general(self, t: Any) -> None:
        """evict() off the fast path (t is valid, the window is not empty)."""
        lf = self._lf
        if self._dead:
            self._drain(2)
        node, i, found = self._search(t)
        if not found:
            return
        self._size -= 1
        if node.kids is None:
            if (
                self._ints
                and node is not lf
                and node.parent is not None
                and len(node.times) > self._mink
            ):  # int sums, no underflow: only the sums on the path change
                del node.times[i]
                self._bump(node, -node.vals.pop(i))
                return
            del node.times[i]
            del node.vals[i]
            self._fix_if_up(node)
            self._repair(*self._rebalance_evict(node, None))
        else:
            self._repair(*self._evict_inner(node, i))

    def _ls_underflow_int(self, y: _Node) -> None:
        """Int sums: rebalance an underflowing left-spine node y, level by level. O(μ) each.

        y merges with its right sibling when the result fits, else takes the sibling's
        whole surplus (as ``_rebalance_evict``). What moves into y leaves the parent's own
        part, so y's aggregate (own part ⊗ parent's) is unchanged unless the parent is the
        root, whose inner aggregate is not part of it. No refold: the moved entries and
        children are summed once. Falls back to the general path when the sibling is on
        the right spine (a root with two children).
        """
        if self._dead:
            self._drain(2 * self._maxk)
        mink, maxk = self._mink, self._maxk
        while True:
            p = y.parent
            assert p is not None
            pk = p.kids
            assert pk is not None
            sib = pk[1]
            if sib.rs:
                self._repair(*self._rebalance_evict(y, None))
                return
            pt, pv = p.times, p.vals
            st, sv = sib.times, sib.vals
            sep = pv[0]
            kids = y.kids
            if len(y.times) + len(st) < maxk:  # merge: y ++ separator ++ sibling
                gain = sep + sib.agg
                y.times.append(pt[0])
                y.times.extend(st)
                y.vals.append(sep)
                y.vals.extend(sv)
                if kids is not None:
                    sk = sib.kids
                    assert sk is not None
                    for c in sk:
                        c.parent = y
                    kids.extend(sk)
                    sib.kids = None
                del pt[0]
                del pv[0]
                del pk[1]
                sib.parent = None
            else:  # move the sibling's surplus k >= 2 entries (and k children) into y
                k = len(st) - mink
                moved = sum(sv[:k])
                if kids is not None:
                    sk = sib.kids
                    assert sk is not None
                    mk = sk[:k]
                    del sk[:k]
                    for c in mk:
                        c.parent = y
                        moved += c.agg
                    kids.extend(mk)
                gain = sep + moved - sv[k - 1]
                y.times.append(pt[0])
                y.times.extend(st[: k - 1])
                y.vals.append(sep)
                y.vals.extend(sv[: k - 1])
                pt[0] = st[k - 1]
                pv[0] = sv[k - 1]
                del st[:k]
                del sv[:k]
                sib.agg -= moved
            p.agg -= gain
            if kids is not None:
                y.loc += gain
            if p.parent is None:
                # a child of the root does not include the root's part: y's aggregate and
                # those below it on the spine grow by what y received
                y.agg += gain
                while kids is not None:
                    y = kids[0]
                    y.agg += gain
                    kids = y.kids
                return
            p.loc -= gain
            if len(pt) >= mink:
                return
            y = p

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

    @staticmethod
    def _cut_int(y: _Node, p: _Node, mu: int) -> tuple[_Node, int, Any, int]:
        """Int sums: move y's entries (and children) after the μ-th into a new node z
        under p. Returns z, the sum of everything z holds, and the separator (key, value)
        taken out of y. O(μ)."""
        times, vals, kids = y.times, y.vals, y.kids
        zv = vals[mu + 1 :]
        z = _Node(times[mu + 1 :], zv, None, p)
        total = sum(zv)
        if kids is not None:
            zk = kids[mu + 1 :]
            del kids[mu + 1 :]
            for c in zk:
                c.parent = z
                total += c.agg
            z.kids = zk
        sep_t, sep = times[mu], vals[mu]
        del times[mu:]
        del vals[mu:]
        return z, total, sep_t, sep

    def _split_rs_int(self, y: _Node) -> None:
        """Int sums: split an overflowing right-spine node y, and its ancestors as needed.

        y keeps μ entries and becomes a middle child (its aggregate: its own part minus
        what moved out); the new right node z takes the rest. Everything before z is
        unchanged in total, so the aggregates below z on the spine stay valid. O(μ) per
        level, no refold. A root overflow takes the general path (height increase).
        """
        if self._dead:
            self._drain(2 * self._maxk)
        mu, maxk = self._minarity, self._maxk
        while True:
            p = y.parent
            assert p is not None
            z, zloc, sep_t, sep = self._cut_int(y, p, mu)
            zk = z.kids
            if zk is not None:
                zloc -= zk[-1].agg  # the last child is on the spine: not in z's own part
            acc = y.loc - zloc - sep
            y.agg = acc
            y.rs = False
            z.rs = True
            z.loc = zloc
            p.times.append(sep_t)
            p.vals.append(sep)
            pk = p.kids
            assert pk is not None
            pk.append(z)
            if self._rf is y:
                self._rf = z
            gain = acc + sep
            p.agg += gain
            if p.parent is not None:
                p.loc += gain
                z.agg = zloc + p.agg
            else:
                # children of the root do not include the root's part: what moved into
                # it leaves the aggregates of z and of the spine below z
                z.agg = zloc
                below = z.kids
                while below is not None:
                    n = below[-1]
                    n.agg -= gain
                    below = n.kids
            if len(p.times) <= maxk:
                return
            if p.parent is None:
                self._repair(*self._rebalance_insert(p))
                return
            y = p

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

    # ------------------------------------------------------------------ queries
    def query(self) -> Any:
        """``lower(v1 ⊗ … ⊗ vn)`` in time order; ``lower(identity)`` when empty. O(1).

        >>> from windowagg.monoids import Sum
        >>> w = FiBA(Sum()); w.query()
        0
        """
        root = self._root
        if self._add:  # Sum: the same two additions, without the calls
            if root.kids is None:
                return root.agg
            return self._lf.agg + root.agg + self._rf.agg
        lower = self._hlower
        if root.kids is None:
            return root.agg if lower is None else lower(root.agg)
        comb = self._combine
        a = comb(comb(self._lf.agg, root.agg), self._rf.agg)
        return a if lower is None else lower(a)

    def oldest(self) -> Any:
        """The smallest timestamp, or None when empty. O(1).

        >>> from windowagg.monoids import Sum
        >>> w = FiBA(Sum()); w.oldest() is None
        True
        """
        times = self._lf.times
        return times[0] if times else None

    def youngest(self) -> Any:
        """The largest timestamp, or None when empty. O(1).

        >>> from windowagg.monoids import Sum
        >>> w = FiBA(Sum()); w.insert(4, 1); w.insert(9, 1); w.youngest()
        9
        """
        times = self._rf.times
        return times[-1] if times else None

    def __len__(self) -> int:
        """Number of distinct timestamps. O(1) amortized (drains the bulk-evict graveyard).

        >>> from windowagg.monoids import Sum
        >>> w = FiBA(Sum()); w.bulk_insert([(t, 1) for t in range(100)]); w.bulk_evict(49)
        >>> len(w)
        50
        """
        if self._dead:
            self._drain(-1)
        lf, rf = self._lf, self._rf
        n: int = self._size + len(lf.times) - self._lfn
        return n if rf is lf else n + len(rf.times) - self._rfn

    def __bool__(self) -> bool:
        """True when the window holds an entry. O(1).

        >>> from windowagg.monoids import Sum
        >>> w = FiBA(Sum()); bool(w), w.insert(1, 1), bool(w)
        (False, None, True)
        """
        return bool(self._lf.times)

    def __iter__(self) -> Iterator[tuple[Any, Any]]:
        """``(t, partial)`` pairs in time order. O(n) for the whole iteration.

        >>> from windowagg.monoids import Concat
        >>> w = FiBA(Concat()); w.insert(2, "b"); w.insert(1, "a"); list(w)
        [(1, ('a',)), (2, ('b',))]
        """
        return iter(self.to_partials())

    def to_partials(self) -> list[tuple[Any, Any]]:
        """All ``(t, partial)`` pairs in time order (the input of ``from_sorted_partials``). O(n).

        >>> from windowagg.monoids import Sum
        >>> w = FiBA(Sum()); w.insert(3, 1); w.insert(3, 2); w.to_partials()
        [(3, 3)]
        """
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

    def range_query(self, t_from: Any, t_to: Any) -> Any:
        """``lower`` of the entries with ``t_from <= t <= t_to`` in time order.

        Identity (lowered) when ``t_from > t_to`` or nothing is in range. Worst case
        O(log d_from + log d_to + log n_sub) with ``n_sub`` the entries in range.

        >>> from windowagg.monoids import Concat
        >>> w = FiBA(Concat())
        >>> for t in range(10): w.insert(t, t)
        >>> w.range_query(3, 6), w.range_query(6, 3), w.range_query(-5, 1)
        ((3, 4, 5, 6), (), (0, 1))
        """
        if self._lf.times:
            ref = self._lf.times[0]
            check_timestamp(t_from, ref, where="t_from")
            check_timestamp(t_to, ref, where="t_to")
        else:
            check_timestamp(t_from, None, where="t_from")
            check_timestamp(t_to, t_from, where="t_to")
            return self._lower(self._one)
        if t_to < t_from:
            return self._lower(self._one)
        a = self._search(t_from)[0]
        b = self._search(t_to)[0]
        # Lowest common ancestor. All leaves are at the same depth, so a node's height is
        # found by descending its first children: O(height) <= O(height of the LCA),
        # never a walk to the root. Lift the lower node, then climb both together.
        ha = hb = 0
        x = a
        while x.kids is not None:
            x = x.kids[0]
            ha += 1
        x = b
        while x.kids is not None:
            x = x.kids[0]
            hb += 1
        while ha < hb:
            a = a.parent  # type: ignore[assignment]
            ha += 1
        while hb < ha:
            b = b.parent  # type: ignore[assignment]
            hb += 1
        while a is not b:
            a = a.parent  # type: ignore[assignment]
            b = b.parent  # type: ignore[assignment]
        return self._lower(self._rq(a, t_from, False, t_to, False))

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

    # ------------------------------------------------------------------ bulk evict
    def bulk_evict(self, t: Any) -> None:
        """Remove every entry with time ``<= t``.

        Amortized O(log m) for m removed entries (worst case O(log n)): it cuts the tree
        along the boundary path instead of visiting the removed entries.

        >>> from windowagg.monoids import Sum
        >>> w = FiBA(Sum(), min_arity=2)
        >>> for t in range(20): w.insert(t, t)
        >>> w.bulk_evict(14); w.query(), w.oldest(), len(w)
        (85, 15, 5)
        """
        self._counted(self._bulk_evict, t)

    def _bulk_evict(self, t: Any) -> None:
        """``bulk_evict`` between ``_sync()`` and ``_rebase()``."""
        root = self._root
        if root.kids is None and not root.times:
            check_timestamp(t, None)
            return
        self._validate(t)
        if t < self._lf.times[0]:
            return
        levels = self._boundary(t)
        mink = self._mink
        skip_until: _Node | None = None
        top: _Node | None = None
        first = True
        for node, nb, anc in reversed(levels):
            if nb is not None and not first:
                self._fix_if_up(nb)
            if skip_until is None or skip_until is node:
                skip_until = None
                self._evict_prefix(node, t)
                if nb is None:  # node is the root or on the right spine
                    self._make_root(node, first)
                    top = self._root
                    break
                if node.parent is None or len(node.times) >= mink:
                    top = node
                else:
                    assert anc is not None
                    deficit = mink - len(node.times)
                    surplus = len(nb.times) - mink
                    if deficit <= surplus:
                        self._move_batch(node, nb, anc, deficit)
                    elif node.parent is anc:
                        ak = anc.kids
                        assert ak is not None
                        self._merge(anc, ak.index(node))
                    else:
                        self._merge_not_sibling(node, nb, anc)
                        skip_until = anc
                    top = anc
            survivor = node if skip_until is None else nb
            assert survivor is not None
            self._mark_left(survivor, first)
            first = False
        assert top is not None
        if top.parent is None:
            hit_l = hit_r = True
            if top.kids is not None and not top.times:
                self._height_decrease()
                top = self._root
        elif len(top.times) >= mink:
            hit_l, hit_r = top.ls, top.rs
        else:
            top, hit_l, hit_r = self._rebalance_evict(top, None)
        self._repair(top, hit_l, hit_r)

    def _boundary(self, t: Any) -> list[tuple[_Node, _Node | None, _Node | None]]:
        """Boundary search: (node, right neighbour, their common ancestor) per level."""
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
        nb: _Node | None
        anc = node.parent
        if anc is None:
            nb = None
        else:
            ak = anc.kids
            assert ak is not None
            j = ak.index(node)
            nb = ak[j + 1] if j < len(ak) - 1 else None
        levels: list[tuple[_Node, _Node | None, _Node | None]] = [(node, nb, anc)]
        while node.kids is not None:
            times = node.times
            i = bisect_left(times, t)
            if i < len(times) and times[i] == t:
                break
            if i == len(times):
                if nb is not None:
                    nbk = nb.kids
                    assert nbk is not None
                    nb = nbk[0]
            else:
                anc, nb = node, node.kids[i + 1]
            node = node.kids[i]
            levels.append((node, nb, anc))
        return levels

    def _evict_prefix(self, y: _Node, t: Any) -> None:
        """Drop y's entries <= t and the children left of them."""
        times = y.times
        k = bisect_left(times, t)
        if k < len(times) and times[k] == t:
            k += 1
        if k:
            kids = y.kids
            if kids is not None:
                self._discard(kids[:k])
                del kids[:k]
            del times[:k]
            del y.vals[:k]
            self._size -= k
        self._fix_if_up(y)

    def _mark_left(self, y: _Node, down_to_leaf: bool) -> None:
        if y.parent is not None:
            y.ls = True
        if down_to_leaf:
            while y.kids is not None:
                y = y.kids[0]
                y.ls = True
            self._lf = y

    def _make_root(self, node: _Node, first: bool) -> None:
        new = node
        if node.kids is not None and not node.times:
            new = node.kids[0]
        if new is not self._root:
            p = new.parent
            assert p is not None and p.kids is not None and p.kids[-1] is new
            p.kids.pop()
            self._discard([self._root])
        new.parent = None
        new.ls = new.rs = False
        self._root = new
        self._mark_left(new, first)
        if new.kids is None:
            self._rf = new
        self._fix(new)

    def _move_batch(self, node: _Node, nb: _Node, anc: _Node, k: int) -> None:
        """node takes k entries (and k children) from its right neighbour nb via anc."""
        a = bisect_left(anc.times, nb.times[0]) - 1
        node.times.append(anc.times[a])
        node.times.extend(nb.times[: k - 1])
        node.vals.append(anc.vals[a])
        node.vals.extend(nb.vals[: k - 1])
        if node.kids is not None:
            assert nb.kids is not None
            moved = nb.kids[:k]
            del nb.kids[:k]
            for c in moved:
                c.parent = node
            node.kids.extend(moved)
        anc.times[a] = nb.times[k - 1]
        anc.vals[a] = nb.vals[k - 1]
        del nb.times[:k]
        del nb.vals[:k]
        self._fix_if_up(node)
        self._fix_if_up(nb)

    def _merge_not_sibling(self, node: _Node, nb: _Node, anc: _Node) -> None:
        """Prepend node (the last child of its parent) and the separator to nb."""
        a = bisect_left(anc.times, nb.times[0]) - 1
        nb.times[:0] = [*node.times, anc.times[a]]
        nb.vals[:0] = [*node.vals, anc.vals[a]]
        if nb.kids is not None:
            assert node.kids is not None
            for c in node.kids:
                c.parent = nb
            nb.kids[:0] = node.kids
            node.kids = None
        p = node.parent
        assert p is not None and p.kids is not None and p.kids[-1] is node
        p.kids.pop()
        node.parent = None
        ak = anc.kids
        assert ak is not None
        self._discard(ak[: a + 1])
        self._size -= a  # anc's entries before the separator; the separator moved to nb
        del ak[: a + 1]
        del anc.times[: a + 1]
        del anc.vals[: a + 1]
        self._fix_if_up(nb)

    # ------------------------------------------------------------------ bulk insert
    def bulk_insert(self, pairs: Iterable[Any], values: Iterable[Any] | None = None) -> None:
        """Insert every ``(t, v)``; equals inserting them one by one in the given order.

        Timestamps may repeat inside the bulk and may collide with stored ones (stored
        value on the left, then the bulk's values in input order). Everything is validated
        and lifted before the window changes. Amortized O(log d + m (1 + log(d/m))) for a
        bulk already sorted by time; an unsorted bulk is first sorted stably (O(m log m)).

        >>> from windowagg.monoids import Concat
        >>> w = FiBA(Concat()); w.insert(5, "old")
        >>> w.bulk_insert([(7, "b"), (5, "new"), (1, "a"), (7, "c")]); w.query()
        ('a', 'old', 'new', 'b', 'c')

        ``bulk_insert(times, values)`` (two equal-length sequences or buffers) is the same
        as ``bulk_insert(zip(times, values))``.
        """
        if values is not None:
            pairs = _zip_bulk(pairs, values)
        self._counted(self._bulk_insert, pairs)

    def _bulk_insert(self, pairs: Iterable[tuple[Any, Any]]) -> None:
        """``bulk_insert`` between ``_sync()`` and ``_rebase()``."""
        items = pairs if isinstance(pairs, list) else list(pairs)
        if not items:
            return
        root = self._root
        empty = root.kids is None and not root.times
        ref = items[0][0] if empty else self._lf.times[0]
        if empty:
            check_timestamp(ref, None)
        lift = self._hlift
        ts: list[Any] = []
        ps: list[Any] = []
        ordered = True
        prev = items[0][0]
        ints = ref.__class__ is int and (empty or self._tcls is int)
        for t, v in items:
            if not ints or t.__class__ is not int:  # int vs int: no NaN, comparable
                check_timestamp(t, ref)
            if t < prev:
                ordered = False
            prev = t
            ts.append(t)
            ps.append(v if lift is None else lift(v))
        if self._ints and set(map(type, ps)) - {int}:
            one, comb = self._one, self._combine
            for p in ps:  # a value Sum cannot add is refused before anything changes
                if p.__class__ is not int:
                    comb(one, p)
            self._leave_ints()
        if not ordered:
            order = sorted(range(len(ts)), key=ts.__getitem__)  # stable
            ts = [ts[i] for i in order]
            ps = [ps[i] for i in order]
        if empty:
            ts, ps = self._coalesce(ts, ps)  # combines only the bulk's own values
            self._tcls = type(ref)
            try:
                self._build(ts, ps)
            except BaseException:
                self._rebuild([])  # it was empty
                raise
        else:
            self._bulk_insert_sorted(ts, ps)
        if self._dead:
            self._drain(2 * len(ts))

    def _coalesce(self, ts: list[Any], ps: list[Any]) -> tuple[list[Any], list[Any]]:
        """Combine runs of equal timestamps (sorted input) in order. O(m)."""
        comb = self._combine
        out_t: list[Any] = []
        out_p: list[Any] = []
        last = _NONE
        for t, p in zip(ts, ps, strict=True):
            if last is not _NONE and t == last:
                out_p[-1] = comb(out_p[-1], p)
            else:
                out_t.append(t)
                out_p.append(p)
                last = t
        return out_t, out_p

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
        self._size = len(ts)
        self._rebase()
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

    def _bulk_insert_sorted(self, ts: list[Any], ps: list[Any]) -> None:
        """Bulk insertion of time-sorted entries (equal times allowed, combined in order).

        Atomic: if a ``combine`` raises, the window is left exactly as before (step 1
        undoes its in-place combines; after it, a rebuild without the new keys, O(n) on
        that error path only).
        """
        rf = self._rf
        if rf.times and ts[0] > rf.times[-1]:
            # Streaming case: the whole bulk is younger than the window. No search: the
            # right finger takes every entry, then splits into pieces as needed. O(m).
            ts, ps = self._coalesce(ts, ps)
            youngest = rf.times[-1]
            self._size += len(ts)
            pre_nxt: list[list[Any]] = []
            try:
                pieces = self._place(rf, rf.times + ts, rf.vals + ps, None, pre_nxt)
                self._pass_up([], [{}], pieces, pre_nxt)
            except BaseException:  # a combine refused a new value: take them all out
                self._rebuild([e for e in self.to_partials() if e[0] <= youngest])
                raise
            return
        # Step 1: insertion-site search with a finger, climbing only to the common ancestor.
        groups: list[list[Any]] = []  # [leaf, members] in time order, members: (t, v, None)
        recomp: list[dict[int, _Node]] = [{}]  # per level: nodes whose aggregate must be redone
        stack: list[tuple[_Node, Any, int]] = []  # (node, exclusive upper bound or _NONE, level)
        node = self._rf
        level = 0
        t0 = ts[0]
        while node.parent is not None and t0 < node.times[0]:
            node = node.parent
            level += 1
        stack.append((node, _NONE, level))
        # (t, value before the bulk) of every stored entry the bulk combines into, in time
        # order: the only changes step 1 makes, undone if a combine raises
        undo: list[tuple[Any, Any]] = []
        try:
            self._bulk_step1(ts, ps, stack, groups, recomp, undo)
        except BaseException:
            for t, old in reversed(undo):
                node, i, _ = self._search(t)
                node.vals[i] = old
            raise
        added = sum(len(g[1]) for g in groups)
        self._size += added
        try:
            self._pass_up(groups, recomp, [], [])
        except BaseException:
            # new entries are placed and aggregates half-repaired: rebuild without the new
            # keys, with the old values of the stored keys the bulk combined into
            new_ts = [m[0] for g in groups for m in g[1]]
            undo_ts = [t for t, _ in undo]
            kept: list[tuple[Any, Any]] = []
            for t, p in self.to_partials():
                j = bisect_left(new_ts, t)
                if j < len(new_ts) and new_ts[j] == t:
                    continue
                j = bisect_left(undo_ts, t)
                kept.append((t, undo[j][1] if j < len(undo_ts) and undo_ts[j] == t else p))
            self._rebuild(kept)
            raise

    def _bulk_step1(
        self,
        ts: list[Any],
        ps: list[Any],
        stack: list[tuple[_Node, Any, int]],
        groups: list[list[Any]],
        recomp: list[dict[int, _Node]],
        undo: list[tuple[Any, Any]],
    ) -> None:
        """Step 1 of a bulk insertion: find every entry's place with a finger search.

        A timestamp already stored is combined in place (its old value goes to *undo*,
        once); a new one joins its leaf's group. Aggregates are not touched here.
        """
        comb = self._combine
        last_t = _NONE
        last_member: list[Any] | None = None  # [t, v] of the previous new entry
        node, _, level = stack[-1]
        found_at: tuple[_Node, int] = (node, 0)  # where the previous stored entry was found
        for idx in range(len(ts)):
            t = ts[idx]
            v = ps[idx]
            if last_t is not _NONE and t == last_t:
                # duplicate inside the bulk: combine with what the previous one produced
                if last_member is not None:
                    last_member[1] = comb(last_member[1], v)
                else:
                    node, i = found_at
                    node.vals[i] = comb(node.vals[i], v)  # its old value is in undo already
                continue
            last_t = t
            while True:
                hi = stack[-1][1]
                if hi is _NONE or t < hi:
                    break
                stack.pop()
            node, hi, level = stack[-1]
            while True:
                times = node.times
                i = bisect_left(times, t)
                if i < len(times) and times[i] == t:
                    old_v = node.vals[i]
                    node.vals[i] = comb(old_v, v)
                    undo.append((t, old_v))
                    found_at = (node, i)
                    last_member = None
                    while len(recomp) <= level:
                        recomp.append({})
                    recomp[level][id(node)] = node
                    break
                kids = node.kids
                if kids is None:
                    last_member = [t, v]
                    if groups and groups[-1][0] is node:
                        groups[-1][1].append(last_member)
                    else:
                        groups.append([node, [last_member]])
                    break
                node = kids[i]
                if i < len(times):
                    hi = times[i]
                level -= 1
                stack.append((node, hi, level))

    def _pass_up(
        self,
        groups: list[list[Any]],
        recomp: list[dict[int, _Node]],
        pre_changed: list[_Node],
        pre_nxt: list[list[Any]],
    ) -> None:
        """Steps 2 and 3 of bulk insertion: interleave/split level by level, then the spines.

        *groups* are the level-0 targets with their new members; *pre_changed* and
        *pre_nxt* carry a level-0 node that was already given its entries (append path).
        """
        # Step 2: level-by-level pass up (interleave, split), coalescing by target node.
        top_l: _Node | None = None
        top_r: _Node | None = None
        root_touched = False
        level = 0
        cur = groups
        while cur or pre_changed or level < len(recomp):
            nxt: list[list[Any]] = pre_nxt if level == 0 else []
            rc = recomp[level] if level < len(recomp) else {}
            if len(recomp) <= level + 1:
                recomp.append({})
            up_rc = recomp[level + 1]
            changed: list[_Node] = list(pre_changed) if level == 0 else []
            for y, members in cur:
                rc.pop(id(y), None)
                changed.extend(self._absorb(y, members, nxt))
            changed.extend(rc.values())
            for y in changed:
                p = y.parent
                if p is None:
                    root_touched = True
                elif y.ls or y.rs:
                    if y.ls:
                        top_l = y
                    if y.rs:
                        top_r = y
                else:
                    self._fix(y)
                    up_rc[id(p)] = p
            cur = nxt
            level += 1
            pre_changed = []
            if not cur and not any(recomp[level:]):
                break
        # Step 3: pass down the spines that were touched.
        fix = self._fix
        root = self._root
        if root_touched:
            fix(root)
        for top, side in ((top_l, 0), (top_r, -1)):
            if top is not None and top.parent is not None:
                n = top
                fix(n)
                while n.kids is not None:
                    n = n.kids[side]
                    fix(n)

    def _absorb(self, y: _Node, members: list[list[Any]], nxt: list[list[Any]]) -> list[_Node]:
        """Interleave members (t, v[, child]) into y; split into pieces if it overflows.

        Promoted separators become members of y's parent in *nxt*. Returns the pieces.
        """
        times, vals, kids = y.times, y.vals, y.kids
        nt: list[Any] = []
        nv: list[Any] = []
        nk: list[_Node] | None = None if kids is None else [kids[0]]
        n = len(times)
        i = 0
        for m in members:
            t = m[0]
            while i < n and times[i] < t:
                nt.append(times[i])
                nv.append(vals[i])
                if nk is not None:
                    assert kids is not None
                    nk.append(kids[i + 1])
                i += 1
            nt.append(t)
            nv.append(m[1])
            if nk is not None:
                nk.append(m[2])
        nt.extend(times[i:])
        nv.extend(vals[i:])
        if nk is not None:
            assert kids is not None
            nk.extend(kids[i + 1 :])
        return self._place(y, nt, nv, nk, nxt)

    def _place(
        self,
        y: _Node,
        nt: list[Any],
        nv: list[Any],
        nk: list[_Node] | None,
        nxt: list[list[Any]],
    ) -> list[_Node]:
        """Give y the merged entries; bulk-split it into pieces when they overflow it."""
        maxk = self._maxk
        if len(nt) <= maxk:
            y.times, y.vals = nt, nv
            if nk is not None:
                for c in nk:
                    c.parent = y
                y.kids = nk
            return [y]
        # bulkSplit: pieces of arity μ+1 while the rest exceeds 2μ; the rest is μ..2μ.
        mu = self._minarity
        if y.parent is None:
            self._height_increase()
        p = y.parent
        assert p is not None
        was_rs = y.rs
        y.rs = False
        pieces: list[_Node] = []
        pos = 0
        total = len(nt)
        cur = y
        while total - pos > maxk:
            self._fill(cur, nt[pos : pos + mu], nv[pos : pos + mu], nk, pos, mu + 1)
            pieces.append(cur)
            new = _Node([], [], None, p)
            member = [nt[pos + mu], nv[pos + mu], new]
            if nxt and nxt[-1][0] is p:
                nxt[-1][1].append(member)
            else:
                nxt.append([p, [member]])
            cur = new
            pos += mu + 1
        self._fill(cur, nt[pos:], nv[pos:], nk, pos, total - pos + 1)
        pieces.append(cur)
        if was_rs:
            cur.rs = True
        if self._rf is y:
            self._rf = cur
        return pieces

    @staticmethod
    def _fill(
        y: _Node, nt: list[Any], nv: list[Any], nk: list[_Node] | None, pos: int, arity: int
    ) -> None:
        y.times = nt
        y.vals = nv
        if nk is not None:
            ks = nk[pos : pos + arity]
            for c in ks:
                c.parent = y
            y.kids = ks

    # ------------------------------------------------------------------ O(n) build
    @classmethod
    def from_sorted_partials(
        cls,
        monoid: Monoid[Any, Any, Any],
        pairs: Iterable[tuple[Any, Any]],
        min_arity: int | None = None,
        *,
        backend: Backend | None = None,
    ) -> FiBA:
        """Build a window from strictly increasing ``(t, partial)`` pairs in O(n).

        The partials are stored as given (they are *not* lifted); this restores the state
        written by ``to_partials()`` (e.g. through ``windowagg.codec``).

        >>> from windowagg.monoids import Concat
        >>> w = FiBA.from_sorted_partials(Concat(), [(1, ("a",)), (4, ("b", "c"))])
        >>> w.query(), len(w)
        (('a', 'b', 'c'), 2)
        """
        if cls is FiBA and resolve_backend(backend, "FiBA"):
            from windowagg._native.fiba import from_sorted

            return from_sorted(monoid, pairs, min_arity)  # type: ignore[no-any-return]
        w = (
            cls(monoid, min_arity=min_arity, backend="python")
            if cls is FiBA
            else cls(monoid, min_arity)
        )
        items = pairs if isinstance(pairs, list) else list(pairs)
        if not items:
            return w
        ref = items[0][0]
        check_timestamp(ref, None)
        ts: list[Any] = []
        ps: list[Any] = []
        prev = _NONE
        ints = ref.__class__ is int
        for i, (t, p) in enumerate(items):
            if not ints or t.__class__ is not int:  # int vs int: no NaN, comparable
                check_timestamp(t, ref)
            if prev is not _NONE and not prev < t:
                raise TimestampError(
                    f"from_sorted_partials: timestamps must be strictly increasing; "
                    f"entry {i} ({t!r}) follows {prev!r}"
                )
            prev = t
            ts.append(t)
            ps.append(p)
        w._tcls = type(ref)
        if w._ints and set(map(type, ps)) - {int}:
            w._ints = False
        w._build(ts, ps)
        return w

    # ------------------------------------------------------------------ invariants
    def _check(self) -> None:
        """Verify every invariant in O(n); raise WindowaggError naming the first broken one.

        Checks: leaf depth, arity bounds, key order (within nodes and across subtrees),
        parent pointers, spine flags, fingers, every stored aggregate against its
        position-aware formula, the left finger's suffix aggregates, and the size.

        >>> from windowagg.monoids import Sum
        >>> w = FiBA(Sum(), min_arity=2)
        >>> for t in range(50): w.insert(t, 1)
        >>> w._check()
        """
        root = self._root
        if root.parent is not None:
            raise WindowaggError("FiBA: root has a parent")
        if root.ls or root.rs:
            raise WindowaggError("FiBA: root carries a spine flag")
        count = len(self)
        leaf_depth: list[int] = []
        seen = [0]
        mink, maxk = self._mink, self._maxk

        hint = self._hint if self._ints and self._hint and self._hint[0] == self._ver else None
        hint_seen = [hint is None]

        def walk(y: _Node, depth: int, lo: Any, hi: Any, ls: bool, rs: bool) -> None:
            where = f"node {y.times!r} at depth {depth}"
            k = len(y.times)
            if len(y.vals) != k:
                raise WindowaggError(f"FiBA: {where}: times and vals differ in length")
            if self._ints and any(v.__class__ is not int for v in y.vals):
                raise WindowaggError(f"FiBA: {where}: a non-int partial in int-sum mode")
            if hint is not None and hint[1] is y:
                hint_seen[0] = True
                if (hint[2], hint[3]) != (lo, hi):
                    raise WindowaggError(
                        f"FiBA: insert hint bounds {hint[2:4]!r} != the leaf's {(lo, hi)!r}"
                    )
            if y.parent is not None and not (mink <= k <= maxk):
                raise WindowaggError(f"FiBA: {where}: {k} entries, allowed {mink}..{maxk}")
            if y.parent is None and k > maxk:
                raise WindowaggError(f"FiBA: root {where}: {k} entries > {maxk}")
            if y.parent is None and y.kids is not None and k < 1:
                raise WindowaggError("FiBA: inner root without entries")
            for i in range(1, k):
                if not y.times[i - 1] < y.times[i]:
                    raise WindowaggError(f"FiBA: {where}: keys not increasing at {i}")
            if k and lo is not _NONE and not lo < y.times[0]:
                raise WindowaggError(f"FiBA: {where}: key {y.times[0]!r} not above {lo!r}")
            if k and hi is not _NONE and not y.times[-1] < hi:
                raise WindowaggError(f"FiBA: {where}: key {y.times[-1]!r} not below {hi!r}")
            if y.ls != ls or y.rs != rs:
                raise WindowaggError(
                    f"FiBA: {where}: spine flags ls={y.ls} rs={y.rs}, expected ls={ls} rs={rs}"
                )
            seen[0] += k
            if y.kids is None:
                leaf_depth.append(depth)
            else:
                if len(y.kids) != k + 1:
                    raise WindowaggError(f"FiBA: {where}: {len(y.kids)} children for {k} keys")
                top = y.parent is None
                for i, c in enumerate(y.kids):
                    if c.parent is not y:
                        raise WindowaggError(f"FiBA: child {i} of {where} has a wrong parent")
                    walk(
                        c,
                        depth + 1,
                        y.times[i - 1] if i > 0 else lo,
                        y.times[i] if i < k else hi,
                        i == 0 and (top or ls),
                        i == k and (top or rs),
                    )
            saved = self._lsuf
            old, old_loc = y.agg, y.loc
            self._fix(y)
            new, new_loc = y.agg, y.loc
            recomputed_suffix = self._lsuf
            y.agg, y.loc = old, old_loc
            self._lsuf = saved
            spine_inner = y.parent is not None and y.ls != y.rs and (y.kids is not None or y.rs)
            if spine_inner and not (old_loc is new_loc or old_loc == new_loc):
                raise WindowaggError(f"FiBA: {where}: stored spine part {old_loc!r} != {new_loc!r}")
            if not (old is new or old == new):
                raise WindowaggError(f"FiBA: {where}: stored aggregate {old!r} != {new!r}")
            if y is self._lf and not self._ints and recomputed_suffix != saved:
                raise WindowaggError(
                    f"FiBA: left finger suffix aggregates {saved!r} != {recomputed_suffix!r}"
                )

        walk(root, 0, _NONE, _NONE, False, False)
        if len(set(leaf_depth)) > 1:
            raise WindowaggError(f"FiBA: leaves at different depths {sorted(set(leaf_depth))}")
        lf = root
        while lf.kids is not None:
            lf = lf.kids[0]
        rf = root
        while rf.kids is not None:
            rf = rf.kids[-1]
        if self._lf is not lf:
            raise WindowaggError("FiBA: left finger is not the leftmost leaf")
        if self._rf is not rf:
            raise WindowaggError("FiBA: right finger is not the rightmost leaf")
        if seen[0] != count:
            raise WindowaggError(f"FiBA: size {count} but the tree holds {seen[0]} entries")
        if hint is not None:
            self._check_hint(hint, hint_seen[0])

    @staticmethod
    def _check_hint(hint: tuple[Any, ...], in_tree: bool) -> None:
        """The current insert hint names a middle leaf of the tree and exactly the nodes
        whose aggregates an insert there changes (see ``_insert_int``)."""
        if not in_tree:
            raise WindowaggError("FiBA: the insert hint's leaf is not in the tree")
        y = leaf = hint[1]
        if y.kids is not None or y.ls or y.rs:
            raise WindowaggError("FiBA: the insert hint's node is not a middle leaf")
        expect = []
        while y.parent is not None and not y.ls and not y.rs:
            expect.append(y)
            y = y.parent
        top = y
        expect.append(top)
        if top.parent is not None:
            side = 0 if top.ls else -1
            kids = top.kids
            while kids is not None:
                expect.append(kids[side])
                kids = kids[side].kids
        toploc = top if top.parent is not None else None
        if sorted(map(id, hint[4])) != sorted(map(id, expect)) or hint[5] is not toploc:
            raise WindowaggError(f"FiBA: the insert hint for leaf {leaf.times!r} is stale")

    def __repr__(self) -> str:
        return f"ooo.FiBA({self._m!r}, min_arity={self._minarity}, n={len(self)})"
