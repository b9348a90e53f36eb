"""Log MTA: the logarithmic Monoid Tree Aggregator, with WSP bulk eviction and a KV store.

=================  ==========================================================================
ordering           FIFO (in-order)
operator needs     monoid; not commutative, no inverse
insert             O(log n) worst case (right-spine refresh: <= height combines)
evict / bulk       O(log n) worst case **whatever the number evicted** (``bulk_evict(k)``,
                   ``enforce(policy)``): one root-to-leaf descent + one left-spine refresh
query              O(1) (one combine of the root pair)
space              O(n) (about 2n nodes); local memory O(log n) pairs + buffer + caches
                   when the level middles live in a :mod:`windowagg.storage` store
paper              "Monoid Tree Aggregator" (MTA) §4.1, Algorithms 1-2, with the errata and
                   height trimming of guides/seed-mta-daba.md A3
=================  ==========================================================================

Structure: a binary tree kept as a list of *level queues* of sibling pairs ``[e0, e1]``
(level 0 holds the window's leaves in order; every node above is the combine of its child
pair; an empty slot is :data:`~windowagg.storage.levels.EMPTY`). The top level holds one
pair whose aggregate is the window's. Pairs have absolute, never reused positions per
level, so a node's leaves are computed from its position (``f_l(j) = j * 2**l + base_l``):
that makes ``bulk_evict(k)`` a pure descent that needs no counting dimension.

Eviction is a descent from the root (MTA Alg. 2, fixed): at each level, after pruning the
children of nodes removed one level up, the first live left node is tested; if the policy
selects it (together with what is already selected) it is removed, else the descent goes
into it. After the descent empty top levels are dropped and **the top level is dropped
while its only pair holds one node** (the guide's [fix] that keeps the height at
O(log n) instead of O(log inserts)), then the left spine is recomputed bottom-up.

Window slide policies (:mod:`windowagg.fifo.wsp`) must be prefix-monotone; see there.

Storage: by default the middle of every level stays in process
(:class:`~windowagg.storage.levels.LocalLevels`). Pass ``store=`` (a
:class:`~windowagg.storage.KVStore`) to keep it in a key-value store behind a write buffer
and per-level head caches; ``flush(token)`` writes an atomic checkpoint, and a new
aggregator built on the same store and namespace resumes from it (docs/storage.md).

Examples
--------
>>> from windowagg.monoids import Concat
>>> w = LogMTA(Concat())
>>> for x in "abcdef": w.insert(x)
>>> w.bulk_evict(4); w.query(), len(w)
(('e', 'f'), 2)
>>> from windowagg.fifo.wsp import CountWindow
>>> w = LogMTA(Concat(), policy=CountWindow(3))
>>> for x in "abcde": w.insert_and_enforce(x)
>>> w.query()
('c', 'd', 'e')
"""

from __future__ import annotations

from typing import Any

from windowagg.fifo._common import check_count, empty_error
from windowagg.fifo._mta_base import _MTABase
from windowagg.fifo.wsp import Policy
from windowagg.monoids.base import In, Out, P
from windowagg.storage.levels import EMPTY

__all__ = ["LogMTA"]


class LogMTA(_MTABase[In, P, Out]):
    """Log MTA over *monoid*: O(log n) insert and (bulk) eviction, O(1) query.

    Parameters
    ----------
    monoid
        Any monoid (identity, lift, combine, lower); commutativity and inverses are not
        needed.
    policy
        Optional window slide policy used by ``enforce()`` / ``insert_and_enforce()``.
    store
        Optional :class:`~windowagg.storage.KVStore`: keep the level middles there
        (with ``buffer_size``, ``cache_size``, ``refill_below``; paper: 512/512/256;
        ``page_size`` pairs per store value, default 64, 1 = the paper's layout).
    namespace
        The window's name in the store.
    on_existing
        When the store already holds this namespace: ``"resume"`` (default) continue from
        its last checkpoint, ``"overwrite"`` drop it, ``"error"`` raise StorageError.

    Examples
    --------
    >>> from windowagg.monoids import Sum
    >>> w = LogMTA(Sum())
    >>> for x in [1, 2, 1, 2, 1, 2]: w.insert(x)
    >>> w.query(), w.height
    (9, 3)
    >>> w.evict(); w.query(), w.oldest_partial(), w.youngest_partial()
    (8, 2, 2)
    """

    _WHO = "LogMTA"
    _FOREST = False

    def aggregate(self) -> P:
        """The partial aggregate of the window: the root pair's combine. O(1)."""
        if not self._first:
            ident: P = self._identity
            return ident
        res: P = self._agg(self._first[-1])
        return res

    def insert(self, v: In) -> None:
        """Append ``lift(v)`` as the youngest entry. O(log n): at most one combine per
        level to refresh the right spine, and one for the root's aggregate. A combine
        that raises leaves the window unchanged."""
        lift = self._lift
        u = v if lift is None else lift(v)
        last = self._last
        if not last:
            self._new_level([u, EMPTY], 0, 0)
            return
        comb = self._combine
        top = len(last) - 1
        # Every combine runs before the first mutation, so one that raises changes
        # nothing: find the level whose tail has a free right slot (the carry stops
        # there), compute the refreshed right spine above it and the root's aggregate
        # (what a query computes: an entry that cannot join the window is refused
        # here, not by every later query), then write.
        lv = 0
        while lv <= top and last[lv][1] is not EMPTY:
            lv += 1
        if lv > top:  # every tail is full: the top level gets a second pair, and a root
            root = [self._agg(self._first[top]), u]
            comb(root[0], u)
            for i in range(top + 1):
                self._append(i, [u, EMPTY])
            self._new_level(root, self._lo[top], 0)
            return
        spine = []  # the new value of the right slot's node, level by level upwards
        a, b = last[lv][0], u
        for i in range(lv + 1, top + 1):
            val = a if b is EMPTY else (b if a is EMPTY else comb(a, b))
            spine.append(val)
            p = last[i]
            a, b = (val, EMPTY) if p[1] is EMPTY else (p[0], val)
        if a is not EMPTY and b is not EMPTY:
            comb(a, b)
        for i in range(lv):
            self._append(i, [u, EMPTY])
        last[lv][1] = u
        for i, val in enumerate(spine, lv + 1):
            p = last[i]
            if p[1] is EMPTY:
                p[0] = val
            else:
                p[1] = val

    def evict(self) -> None:
        """Remove the oldest entry. O(log n). EmptyWindowError when empty.

        Atomic: the common case reads the new head pairs and computes the refreshed left
        spine before it writes; when levels drop or re-root it runs on a shadow of the
        local state (O(log n) copies) committed when every combine succeeded. Either way
        a combine that raises changes nothing."""
        first = self._first
        if not first:
            raise empty_error(self._WHO, "evict()")
        plan = self._plan_evict()
        if plan is None:  # levels drop or re-root: the general steps, on a shadow
            self._atomic(LogMTA._evict_raw)
            return
        stop, spine = plan
        for lv in range(stop):
            self._drop_first(lv, 1)
        first[stop][0] = EMPTY
        for lv in range(1, len(first)):
            q = first[lv]
            if q[0] is not EMPTY:
                q[0] = spine[lv - 1]
            else:
                q[1] = spine[lv - 1]

    def _plan_evict(self) -> tuple[int, list[Any]] | None:
        """The common eviction, planned without a mutation: the oldest leaf goes, the head
        pairs of the levels below the first full head pair (level *stop*) go with it, and
        ``_after_descent`` only refreshes the left spine (no level empties, drops or is
        re-rooted). Returns *stop* and the spine values of levels 1.. (its combines, in
        ``_refresh_left_spine``'s order), or None when the general steps are needed.
        O(log n)."""
        first, last, lo, hi = self._first, self._last, self._lo, self._hi
        top = len(first) - 1
        heads: list[Any] = []  # the post-eviction head pair of every level
        lv = 0
        while True:
            p = first[lv]
            if p[0] is not EMPTY and p[1] is not EMPTY:
                heads.append([EMPTY, p[1]])
                break
            new_lo = lo[lv] + 1
            h = hi[lv]
            if new_lo < h - 1:
                a, b = self._mid.peek(lv, new_lo)
                heads.append([a, b])
            elif new_lo == h - 1:
                heads.append(last[lv])
            else:
                return None  # the level empties
            lv += 1
            if lv > top:
                return None
        stop = lv
        heads.extend(first[stop + 1 :])
        t = heads[top]
        if top and (t[0] is EMPTY or t[1] is EMPTY):
            return None  # height control would drop the top
        for k in range(top):
            n = hi[k] - lo[k] - (k < stop)
            if n == 2 and heads[k][0] is EMPTY and last[k][1] is EMPTY:
                return None  # re-rooting
        comb = self._combine  # cached: called once per level
        a, b = heads[0]
        val = b if a is EMPTY else (a if b is EMPTY else comb(a, b))
        spine: list[Any] = []
        for k in range(1, top + 1):
            spine.append(val)  # goes into the pair's left slot, or its right if that is empty
            a, b = heads[k]
            if a is not EMPTY and b is not EMPTY:
                val = comb(val, b)
        return stop, spine

    def _evict_raw(self) -> None:
        first = self._first
        top = len(first) - 1
        lv = 0
        while True:  # remove the oldest leaf and every ancestor left without a node
            p = first[lv]
            if p[0] is not EMPTY and p[1] is not EMPTY:
                p[0] = EMPTY
                break
            self._drop_first(lv, 1)
            lv += 1
            if lv > top:
                break
        self._after_descent()

    def bulk_evict(self, count: int) -> None:
        """Remove the *count* oldest entries in O(log n), independent of *count*.

        EmptyWindowError (window unchanged) unless ``0 <= count <= len(window)``."""
        k = check_count(count, len(self), self._WHO)
        if k == 0:
            return
        if k == len(self):
            self._reset()
            return
        self._atomic(LogMTA._bulk_evict_raw, k)

    def _bulk_evict_raw(self, k: int) -> None:
        self._descend(self._count_accept(self._leaf_lo() + k), False)
        self._after_descent()

    def _enforce(self, policy: Policy) -> None:
        self._atomic(LogMTA._enforce_raw, policy)

    def _enforce_raw(self, policy: Policy) -> None:
        acc: list[Any] = [EMPTY]
        self._descend(self._policy_accept(policy, self.aggregate(), acc), False)
        self._after_descent()

    def _after_descent(self) -> None:
        self._drop_empty_top()
        first = self._first
        # [fix] height control: drop the top level while its only pair holds one node
        while len(first) > 1 and (first[-1][0] is EMPTY or first[-1][1] is EMPTY):
            self._drop_top()
        if not first:
            return
        # [fix, ours] re-rooting: the lowest level holding exactly two nodes, as
        # <EMPTY, x><y, EMPTY>, becomes the root level <x, y>; everything above it only
        # covered those two nodes. Without this a window straddling an old power-of-two
        # boundary keeps a chain of such levels (height log2(inserts), not log2(n)).
        lo, hi, last = self._lo, self._hi, self._last
        for lv in range(len(first) - 1):
            if hi[lv] - lo[lv] == 2 and first[lv][0] is EMPTY and last[lv][1] is EMPTY:
                while len(first) > lv + 1:
                    self._drop_top()
                x, y = first[lv][1], last[lv][0]
                pos = hi[lv]
                self._base[lv] += (2 * lo[lv] + 1 - 2 * pos) << lv
                lo[lv] = pos
                hi[lv] = pos + 1
                self._mid.drop(lv, pos)
                pair = [x, y]
                first[lv] = pair
                last[lv] = pair
                break
        self._refresh_left_spine()

    def _check(self) -> None:
        """Verify every invariant (O(n)): Invariants 1-2, one top pair, node counts
        #nodes(l+1) = #pairs(l), every internal node = combine of its children, leaf
        offsets, height <= log2(n) + 2, store caches consistent."""
        self._check_common(0)

    def __repr__(self) -> str:
        where = "" if self._store is None else f", store={self._store!r}"
        return f"LogMTA({self._m!r}, n={len(self)}{where})"
