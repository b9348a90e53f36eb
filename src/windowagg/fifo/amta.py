"""AMTA: the Amortized Monoid Tree Aggregator (a forest of level queues).

=================  ==========================================================================
ordering           FIFO (in-order)
operator needs     monoid; not commutative, no inverse
insert             amortized O(1) combines, O(log n) worst case (binary-counter carry)
evict              amortized O(1), O(log n) worst case (left-spine values left stale)
bulk_evict(k)      O(min(k, c·log n) + log n): after ``c·⌊log2 n⌋ + 1`` single evictions
                   (c = ``bulk_after``, default 1) the rest goes in one forest descent
enforce(policy)    same as bulk_evict, for the longest prefix the policy selects
query              O(1) (``R0 · R1``: one combine)
space              O(n); local memory O(log n) pairs + buffer + caches with a store
paper              "Monoid Tree Aggregator" (MTA) §4.2, Algorithms 3-7, with the errata of
                   guides/seed-mta-daba.md A5 (Alg. 3 missing levels, Alg. 5 reset,
                   Alg. 6 empty stack and vanished tree, concrete forest bulk eviction)
=================  ==========================================================================

Structure (Invariant 3): the level queues of Log MTA, but the **tail pair of every level
is the root of its own tree**; a pair gets a parent only when it stops being the tail
(its value is then final), so level l+1 holds the parents of level l's non-tail pairs.
The top level holds the root of the oldest (leftmost) tree. Locally kept:

- ``R0`` -- aggregate of the leftmost tree, ``R1`` -- aggregate of all the other trees;
- the stack ``S`` -- aggregates of the leftmost tree with the first element of each level
  removed (its top is ``R0`` without the oldest entry), so a single eviction is
  ``R0 <- S.pop()`` plus O(1) amortized pair updates. Ancestors on the left spine are left
  stale on purpose and recomputed (O(log n)) only before a bulk descent.

Examples
--------
>>> from windowagg.monoids import Sum
>>> w = AMTA(Sum())
>>> for x in [1, 2, 1, 2, 1, 2, 1, 2]: w.insert(x)
>>> w.result_pair, w.stack                  # MTA Fig. 4: R0 = 6, R1 = 6, S = [3, 5]
((6, 6), [3, 5])
>>> w.insert(1); w.result_pair[1]
7
>>> w.evict(); w.result_pair[0], w.query()
(5, 12)
"""

from __future__ import annotations

import math
from typing import Any, Unpack

from windowagg._backend import Backend, resolve_backend
from windowagg.errors import ArgumentError, EmptyWindowError
from windowagg.fifo._common import Slack, check_count, close, empty_error, invariant, same
from windowagg.fifo._mta_base import MTAOptions, _MTABase
from windowagg.fifo.base import _BackedFifo
from windowagg.fifo.wsp import CountWindow, Policy
from windowagg.monoids.base import In, Monoid, Out, P, require_monoid
from windowagg.storage.levels import EMPTY

__all__ = ["AMTA"]


class PyAMTA(_MTABase[In, P, Out]):
    """The pure-Python reference implementation that ``AMTA(..., backend="python")`` holds
    (and every AMTA with a ``store`` or a ``policy``)."""

    _WHO = "AMTA"
    _FOREST = True

    def __init__(
        self,
        monoid: Monoid[In, P, Out],
        *,
        bulk_after: float = 1.0,
        **options: Unpack[MTAOptions],
    ) -> None:
        if not bulk_after >= 0:
            raise ArgumentError(f"bulk_after must be >= 0 (or math.inf), got {bulk_after!r}")
        require_monoid(monoid, self._WHO)
        self._bulk_after = bulk_after
        self._R0: Any = monoid.identity
        self._R1: Any = monoid.identity
        self._S: list[Any] = []
        super().__init__(monoid, **options)

    # -- read-only facts -----------------------------------------------------------------
    @property
    def result_pair(self) -> tuple[Any, Any]:
        """``(R0, R1)``: aggregates of the leftmost tree and of the other trees. O(1)."""
        return (self._R0, self._R1)

    @property
    def stack(self) -> list[Any]:
        """A copy of the stack S, bottom first. O(log n)."""
        return list(self._S)

    def aggregate(self) -> P:
        """The partial aggregate of the window, ``R0 · R1``. O(1), at most one combine."""
        r0, r1 = self._R0, self._R1
        ident = self._identity
        if r1 is ident:
            res: P = r0
            return res
        if r0 is ident:
            res = r1
            return res
        res = self._combine(r0, r1)
        return res

    def query(self) -> Out:
        """``lower`` of the window aggregate, oldest to youngest. O(1), one combine."""
        r0, r1 = self._R0, self._R1
        ident = self._identity
        agg = r0 if r1 is ident else (r1 if r0 is ident else self._combine(r0, r1))
        lower = self._lower
        res: Out = agg if lower is None else lower(agg)
        return res

    def _limit(self, n: int) -> float:
        return self._bulk_after * math.floor(math.log2(n)) + 1 if n > 1 else 1

    # -- Result Pair and stack (Alg. 4 and 5, fixed) -------------------------------------
    def _compute_left(self) -> None:
        """Rebuild S and R0 from the first pair of every level. O(log n)."""
        self._S[:], self._R0 = self._left_of(self._first)

    def _left_of(self, first: list[list[Any]]) -> tuple[list[Any], Any]:
        """``(S, R0)`` for the first pairs *first* (bottom level first); no mutation."""
        comb = self._combine
        S: list[Any] = []
        for lv in range(len(first) - 1, -1, -1):
            a, b = first[lv]
            if a is not EMPTY and b is not EMPTY:
                S.append(comb(b, S[-1]) if S else b)
        a, b = first[0]
        head = b if a is EMPTY else a
        return S, (comb(head, S[-1]) if S else head)

    def _compute_right(self) -> None:
        """R1 = aggregate of the tails of levels 0 .. top-1, oldest first. O(log n)."""
        self._R1 = self._right_of(self._last[:-1])

    def _right_of(self, tails: list[list[Any]]) -> Any:
        """The aggregate of the pairs *tails* (bottom level first), oldest first."""
        comb = self._combine
        r1: Any = EMPTY
        for a, b in tails:
            val = a if b is EMPTY else (b if a is EMPTY else comb(a, b))
            r1 = val if r1 is EMPTY else comb(val, r1)
        return self._identity if r1 is EMPTY else r1

    def _reset(self) -> None:
        super()._reset()
        self._R0 = self._identity
        self._R1 = self._identity
        self._S.clear()

    # -- insert (Alg. 3, fixed) ----------------------------------------------------------
    def insert(self, v: In) -> None:
        """Append ``lift(v)``: a binary-counter carry through the tails.

        Amortized O(1) combines, O(log n) worst case (when the carry reaches the top
        pair, R0, R1 and S are recomputed)."""
        lift = self._lift
        u = v if lift is None else lift(v)
        last = self._last
        try:  # zero-cost in CPython >= 3.11 when the window is not empty
            p = last[0]
        except IndexError:
            self._new_level([u, EMPTY], 0, 0)
            self._R0 = u
            return
        comb = self._combine  # bound method cached in a local: hot loop
        # Every combine runs before the first mutation, so one that raises changes
        # nothing. The new entry is combined into R1; when R1 is empty it would join the
        # window without any combine, so it is combined with R0 instead (the result is
        # dropped): an entry the monoid cannot combine with the window is refused here,
        # not by every later query. (Rare: R1 is empty only right after trees merge.)
        r1 = self._R1
        if r1 is self._identity:
            r1 = u
            comb(self._R0, u)  # also when R0 is the identity: a no-op for a lawful monoid
        else:
            r1 = comb(r1, u)
        top = len(last) - 1
        if p[1] is EMPTY and top:  # the common case: fill the leaf tail's free slot
            p[1] = u
            self._R1 = r1
            return
        hi = self._hi
        chunks = self._chunks  # the in-process middle sections, or None with a store
        if top > 1 and chunks is not None and p[0] is not EMPTY:
            # the next most common case: the leaf tail is full, its carry fills level 1
            q = last[1]
            if q[1] is EMPTY:
                a, b = p
                ab = comb(a, b)
                h = hi[0]
                pos = h - 1
                ch = chunks[0].get(pos >> 8)
                if ch is not None and len(ch) == pos & 255:
                    ch.append((a, b))  # an immutable snapshot (see LocalLevels)
                else:
                    self._mid.push(0, pos, p)
                last[0] = [u, EMPTY]
                hi[0] = h + 1
                q[1] = ab
                self._R1 = r1
                return
            if top > 2 and q[0] is not EMPTY:
                # the third most common case: the carry fills level 1's tail too and
                # stops in level 2 (below the top)
                r = last[2]
                if r[1] is EMPTY:
                    a, b = p
                    c, d = q
                    ab = comb(a, b)
                    cd = comb(c, d)
                    h = hi[0]
                    pos = h - 1
                    ch = chunks[0].get(pos >> 8)
                    if ch is not None and len(ch) == pos & 255:
                        ch.append((a, b))  # an immutable snapshot (see LocalLevels)
                    else:
                        self._mid.push(0, pos, p)
                    h1 = hi[1]
                    pos = h1 - 1
                    ch = chunks[1].get(pos >> 8)
                    if ch is not None and len(ch) == pos & 255:
                        ch.append((c, d))
                    else:
                        self._mid.push(1, pos, q)
                    last[0] = [u, EMPTY]
                    hi[0] = h + 1
                    last[1] = [ab, EMPTY]
                    hi[1] = h1 + 1
                    r[1] = cd
                    self._R1 = r1
                    return
        # the general carry: first the carries (combines), then the writes
        carries = [u]  # the carry entering each level, from level 0 up
        lv = 0
        while True:
            a, b = last[lv]
            if b is EMPTY:  # free right slot: the carry stops here
                break
            carries.append(b if a is EMPTY else comb(a, b))
            lv += 1
            if lv > top:
                break
        stop = lv
        merged: tuple[list[Any], Any, Any] | None = None
        if stop == top:  # the leftmost tree grows: trees merge, R0, S and R1 recomputed
            top_pair = [last[top][0], carries[top]]
            firsts = [*self._first[:top], top_pair]
            tails = [[c, EMPTY] for c in carries[:top]]
            s_new, r0_new = self._left_of(firsts)
            merged = (s_new, r0_new, self._right_of(tails))
            if merged[2] is not self._identity:
                comb(r0_new, merged[2])
        push = self._mid.push
        for lv in range(min(stop, top + 1)):
            p = last[lv]
            h = hi[lv]
            if chunks is not None:  # LocalLevels.push, inlined for the common case
                pos = h - 1
                ch = chunks[lv].get(pos >> 8)
                if ch is not None and len(ch) == pos & 255:
                    ch.append((p[0], p[1]))  # an immutable snapshot (see LocalLevels)
                else:
                    push(lv, pos, p)
            else:
                push(lv, h - 1, p)
            # append <carry, EMPTY> as the new tail; the old tail (now with a parent)
            # went to the level's middle section
            last[lv] = [carries[lv], EMPTY]
            hi[lv] = h + 1
        if stop > top:  # the old top pair got a parent: a new top level, R0/S unchanged
            self._new_level([carries[stop], EMPTY], hi[top] - 2, 0)
            self._R1 = r1
            return
        last[stop][1] = carries[stop]
        if merged is None:
            self._R1 = r1
            return
        self._S[:], self._R0, self._R1 = merged

    # -- single eviction (Alg. 6 + 7, fixed) ---------------------------------------------
    def evict(self) -> None:
        """Remove the oldest entry. Amortized O(1), O(log n) worst case (when the leftmost
        tree vanishes). EmptyWindowError when empty.

        Atomic: every case computes its combines before it writes, so a combine that
        raises changes nothing."""
        first = self._first
        try:  # zero-cost in CPython >= 3.11 when the window is not empty
            p = first[0]
        except IndexError:
            raise empty_error(self._WHO, "evict()") from None
        S = self._S
        if p[0] is not EMPTY and p[1] is not EMPTY:  # the common case: no combine
            self._R0 = S.pop() if S else self._identity
            p[0] = EMPTY  # keep the pair; ancestors stay stale on purpose
            return
        lo, hi = self._lo, self._hi
        chunks = self._chunks
        top = len(first) - 1
        if top and chunks is not None:
            # the common cases of Alg. 7 inlined, with their combines first: the new
            # stack top is y (then y1) combined with S without its top
            new_lo = lo[0] + 1
            h = hi[0]
            p1 = first[1]
            if new_lo < h - 1 and new_lo & 255:
                if p1[0] is not EMPTY and p1[1] is not EMPTY:
                    x, y = chunks[0][new_lo >> 8][new_lo & 255]
                    ns = len(S)
                    s_new = self._combine(y, S[-2]) if ns > 1 else y
                    self._R0 = S.pop() if ns else self._identity
                    lo[0] = new_lo
                    first[0] = [x, y]  # a mutable copy (cheaper than list())
                    p1[0] = EMPTY
                    S.append(s_new)
                    return
                if top > 1:
                    new_lo1 = lo[1] + 1
                    p2 = first[2]
                    if (
                        new_lo1 < hi[1] - 1
                        and new_lo1 & 255
                        and p2[0] is not EMPTY
                        and p2[1] is not EMPTY
                    ):
                        x, y = chunks[0][new_lo >> 8][new_lo & 255]
                        x1, y1 = chunks[1][new_lo1 >> 8][new_lo1 & 255]
                        comb = self._combine
                        ns = len(S)
                        s1 = comb(y1, S[-2]) if ns > 1 else y1
                        s2 = comb(y, s1)
                        self._R0 = S.pop() if ns else self._identity
                        lo[0] = new_lo
                        first[0] = [x, y]
                        lo[1] = new_lo1
                        first[1] = [x1, y1]
                        p2[0] = EMPTY
                        S.append(s1)
                        S.append(s2)
                        return
        self._evict_general(first, S, top)

    def _evict_general(self, first: list[list[Any]], S: list[Any], top: int) -> None:
        """:meth:`evict` when the oldest leaf's pair holds only it (Alg. 7): drop pairs up
        the left spine until a pair keeps a node; new full head pairs feed the stack. In
        three phases, so that a combine that raises changes nothing: read the new heads,
        combine (the stack, or R0, R1 and S when the leftmost tree vanishes), write."""
        lo, hi, last = self._lo, self._hi, self._last
        chunks = self._chunks
        mid = self._mid
        # 1. the plan: per level from the leaves up, its new head position and pair (None
        # when the level empties), until a head pair keeps a node (stop) or the top
        steps: list[tuple[int, Any]] = []
        new_heads: list[Any] = []  # right nodes of the new full head pairs, bottom first
        stop = -1
        lv = 0
        while True:
            new_lo = lo[lv] + 1
            h = hi[lv]
            q: Any = None
            if new_lo < h - 1:
                if chunks is not None:
                    x, y = chunks[lv][new_lo >> 8][new_lo & 255]
                else:
                    x, y = mid.peek(lv, new_lo)
                q = [x, y]
            elif new_lo == h - 1:
                q = last[lv]
                x, y = q
            if q is not None and x is not EMPTY and y is not EMPTY:
                new_heads.append(y)
            steps.append((new_lo, q))
            lv += 1
            if lv > top:
                break
            p = first[lv]
            if p[0] is not EMPTY and p[1] is not EMPTY:
                stop = lv
                break
        # 2. the combines
        comb = self._combine
        if stop < 0:  # ran off the top: the leftmost tree vanished
            keep = top + 1
            while keep and steps[keep - 1][0] == hi[keep - 1]:
                keep -= 1
            if not keep:
                self._reset()
                return
            heads = [q if q is not None else first[k] for k, (_, q) in enumerate(steps[:keep])]
            s_new, r0 = self._left_of(heads)
            r1 = self._right_of(last[: keep - 1])
        else:
            adds: list[Any] = []
            acc = S[-2] if len(S) > 1 else EMPTY  # the stack's top once R0 is popped
            for y in reversed(new_heads):
                acc = y if acc is EMPTY else comb(y, acc)
                adds.append(acc)
        # 3. the writes
        for k, (new_lo, q) in enumerate(steps):
            lo[k] = new_lo
            if q is None:
                continue
            h = hi[k]
            if new_lo < h - 1:
                if chunks is None:
                    q = mid.fetch(k, new_lo, h - 1)  # the store's head cache moves on
                elif not new_lo & 255:
                    mid.drop(k, new_lo)
            first[k] = q
        if stop < 0:
            self._drop_empty_top()
            S[:] = s_new
            self._R0 = r0
            self._R1 = r1
            return
        self._R0 = S.pop() if S else self._identity
        first[stop][0] = EMPTY  # keep the pair; ancestors stay stale on purpose
        S.extend(adds)

    _evict_one = evict

    # -- bulk eviction and enforcement ---------------------------------------------------
    def bulk_evict(self, count: int) -> None:
        """Remove the *count* oldest entries: single evictions up to the switch point,
        then one forest descent. O(min(count, c·log n) + log n).

        EmptyWindowError (window unchanged) unless ``0 <= count <= len(window)``."""
        n = len(self)
        k = check_count(count, n, self._WHO)
        if k == n:
            if k:
                self._reset()
            return
        if not k:
            return
        if k <= self._limit(n):
            self._atomic(PyAMTA._evict_many, k)
            return
        # the descent's combines (the spine, R0, R1, S) run after the levels changed: on
        # a shadow, committed when they all succeeded
        self._atomic(PyAMTA._bulk_descend, k)

    def _evict_many(self, k: int) -> None:
        """*k* single evictions, run by :meth:`bulk_evict` on a shadow (``_atomic``: O(levels)
        to take, O(levels) to commit): if one raises, the window is unchanged, with no
        combine run to undo it (a rebuild from the partials would combine them in another
        grouping, which a partial combine may refuse; the native twin undoes from its log,
        also without combines)."""
        evict = self._evict_one  # cached: called k times
        for _ in range(k):
            evict()

    def _bulk_descend(self, k: int) -> None:
        self._descend(self._count_accept(self._leaf_lo() + k), True)
        self._after_bulk()

    def _enforce(self, policy: Policy) -> None:
        self._atomic(PyAMTA._enforce_raw, policy)

    def _enforce_raw(self, policy: Policy) -> None:
        total = self.aggregate()
        if policy(total, total):
            self._reset()
            return
        comb = self._combine
        limit = self._limit(len(self))
        acc: Any = EMPTY
        done = 0
        while self._first:
            f = self._first[0]
            head = f[1] if f[0] is EMPTY else f[0]
            cand = head if acc is EMPTY else comb(acc, head)
            if not policy(total, cand):
                return
            self._evict_one()
            acc = cand
            done += 1
            if done >= limit:
                break
        if not self._first:  # only a non-monotone policy gets here
            return
        # switch to one descent over the forest (the left spine must be fresh for it)
        self._refresh_left_spine()
        box = [acc]
        self._descend(self._policy_accept(policy, total, box), True)
        self._after_bulk()

    def _after_bulk(self) -> None:
        self._drop_empty_top()
        if not self._first:
            self._reset()
            return
        self._compute_left()
        self._compute_right()

    def _shadow_extra(self, twin: Any) -> None:
        twin._S = list(self._S)

    def _commit_extra(self, twin: Any) -> None:
        self._S[:] = twin._S
        self._R0 = twin._R0
        self._R1 = twin._R1

    # -- local state for checkpoints -----------------------------------------------------
    def _extra_local(self) -> int:
        return len(self._S) + 2

    def _extra_state(self) -> Any:
        return {"R0": self._R0, "R1": self._R1, "S": list(self._S)}

    def _load_extra(self, extra: Any) -> None:
        if not isinstance(extra, dict):
            raise EmptyWindowError("AMTA checkpoint lacks the result pair")  # pragma: no cover
        self._R0 = extra["R0"]
        self._R1 = extra["R1"]
        self._S[:] = list(extra["S"])

    # -- invariants ----------------------------------------------------------------------
    def _check(self) -> None:
        """Verify every invariant (O(n)): Invariants 1-3 (#nodes(l+1) = #pairs(l) - 1),
        one top pair, every node off the left spine = combine of its children, leaf
        offsets, height <= log2(n) + 2, R0 = fold(leftmost tree), R1 = fold(other trees),
        S recomputed from scratch, store caches consistent."""
        who = self._WHO
        levels = self._check_common(1)
        m = self._m
        ident = self._identity

        def fold(xs: list[Any]) -> Any:
            acc = ident
            for x in xs:
                acc = m.combine(acc, x)
            return acc

        if not levels:
            invariant(not self._S, who, "empty window with a non-empty stack")
            invariant(
                same(ident, self._R0) and same(ident, self._R1), who, "empty window, R != identity"
            )
            return
        leaves = [x for a, b in levels[0] for x in (a, b) if x is not EMPTY]
        slack = Slack(leaves)  # R0, R1 and S were grouped otherwise than a left fold
        # leaves of the trees rooted at the tails of levels 0..top-1 (newest last)
        right = 0
        for lv in range(len(levels) - 1):
            a, b = levels[lv][-1]
            right += ((a is not EMPTY) + (b is not EMPTY)) << lv
        left_leaves, right_leaves = leaves[: len(leaves) - right], leaves[len(leaves) - right :]
        invariant(
            close(self._R0, fold(left_leaves), slack),
            who,
            f"R0 = {self._R0!r:.60} but the leftmost tree folds to {fold(left_leaves)!r:.60}",
        )
        invariant(
            close(self._R1, fold(right_leaves), slack),
            who,
            f"R1 = {self._R1!r:.60} but the other trees fold to {fold(right_leaves)!r:.60}",
        )
        saved_s = list(self._S)
        saved_r0 = self._R0
        self._compute_left()
        fresh = list(self._S)
        self._S[:] = saved_s
        self._R0 = saved_r0
        invariant(
            close(saved_s, fresh, slack), who, f"stack {saved_s!r:.80} != recomputed {fresh!r:.80}"
        )

    def __repr__(self) -> str:
        where = "" if self._store is None else f", store={self._store!r}"
        return f"AMTA({self._m!r}, n={len(self)}{where})"


class AMTA(_BackedFifo[In, P, Out]):
    """Amortized MTA over *monoid*: amortized O(1) insert / evict / query, O(log n) bulk.

    Parameters
    ----------
    monoid, policy, store, namespace, buffer_size, cache_size, refill_below, page_size, on_existing
        As for :class:`~windowagg.fifo.log_mta.LogMTA`.
    bulk_after
        The factor c: a bulk eviction or an enforcement switches from single evictions to
        one forest descent after ``c·⌊log2 n⌋ + 1`` single evictions. ``0`` descends at
        once (after one single eviction); ``math.inf`` never descends (O(k)).

    Examples
    --------
    >>> from windowagg.monoids import Concat
    >>> w = AMTA(Concat())
    >>> for x in range(10): w.insert(x)
    >>> w.bulk_evict(7); w.query()
    (7, 8, 9)
    """

    _py = PyAMTA
    _who = "AMTA"

    def __init__(
        self,
        monoid: Monoid[In, P, Out],
        *,
        bulk_after: float = 1.0,
        backend: Backend | None = None,
        **options: Unpack[MTAOptions],
    ) -> None:
        unknown = sorted(set(options) - MTAOptions.__optional_keys__)
        if unknown:  # the native branch reads only some options: a misspelt one is an error
            raise TypeError(f"AMTA() got an unexpected keyword argument {unknown[0]!r}")
        # the native AMTA is the in-memory one, without a slide policy: with a store or a
        # policy, backend="native" raises and the default/"auto" hold the Python class
        store, policy = options.get("store"), options.get("policy")
        lacks = "store=" if store is not None else ("policy=" if policy is not None else None)
        if resolve_backend(backend, "AMTA", lacks):
            if not bulk_after >= 0:
                raise ArgumentError(f"bulk_after must be >= 0 (or math.inf), got {bulk_after!r}")
            if options.get("on_existing", "resume") not in ("resume", "overwrite", "error"):
                raise ValueError("on_existing must be 'resume', 'overwrite' or 'error'")
            from windowagg._native.fifo import make

            self._hold(make("AMTA", monoid, bulk_after))
            return
        self._hold(PyAMTA(monoid, bulk_after=bulk_after, **options))

    @property
    def result_pair(self) -> tuple[Any, Any]:
        """``(R0, R1)``: aggregates of the leftmost tree and of the other trees. O(1)."""
        if self.backend == "python":
            pair: tuple[Any, Any] = self._impl.result_pair
            return pair
        r0, r1, _ = self._impl._amta_state()
        return (r0, r1)

    @property
    def stack(self) -> list[Any]:
        """A copy of the stack S, bottom first. O(log n)."""
        if self.backend == "python":
            st: list[Any] = self._impl.stack
            return st
        return list(self._impl._amta_state()[2])

    def aggregate(self) -> P:
        """The aggregate before ``lower`` (``R0 · R1``). O(1)."""
        agg: P = self._impl.aggregate()
        return agg

    def enforce(self, policy: Policy | None = None) -> None:
        """Evict the longest prefix that *policy* (else the constructor's) selects.

        Python: see the reference class. Native (no constructor policy, so *policy* is
        required): ``CountWindow(n)`` without ``count=`` is one ``bulk_evict`` (O(log n) by
        the forest descent); any other policy is asked about one growing prefix per evicted
        entry: O(k) policy calls and combines for k evictions.
        """
        impl = self._impl
        if self.backend == "python":
            impl.enforce(policy)
            return
        if policy is None:
            raise TypeError(
                "AMTA.enforce() needs a policy: pass one here (the native AMTA has none)"
            )
        if isinstance(policy, CountWindow) and policy.count is None:
            k = len(impl) - policy.size
            if k > 0:
                impl.bulk_evict(k)
            return
        if not len(impl):
            return
        total = impl.aggregate()
        if policy(total, total):
            impl.bulk_evict(len(impl))
            return
        combine = impl.monoid.combine
        acc: Any = None
        first = True
        while len(impl):
            head = impl.oldest_partial()
            cand = head if first else combine(acc, head)
            if not policy(total, cand):
                return
            impl.evict()
            acc, first = cand, False

    def insert_and_enforce(self, v: In) -> None:
        """Insert *v*, then enforce the constructor's policy (the reactive step)."""
        if self.backend == "python":
            self._impl.insert_and_enforce(v)
            return
        raise TypeError("AMTA.insert_and_enforce() needs policy= at construction")
