"""DABALite: DABA with one aggregate per entry and two running aggregates, on deques.

=================  ==========================================================
ordering           FIFO (in-order)
operator needs     monoid (:mod:`windowagg.monoids.base`); neither commutative
                   nor invertible
insert             O(1) worst case: at most 3 combines
evict              O(1) worst case: at most 2 combines
query              O(1) worst case: at most 1 combine
bulk_evict(k)      O(k) worst case: k evictions, at most 2k + 1 combines (a query
                   first, when k > 1)
space              n partials (kept for ``oldest_partial``/``youngest_partial``/iteration) + n slots
                   (an aggregate or a shared reference to the partial) + 2 aggregates
paper              Tangwongsan, Hirzel, Schneider, "In-order sliding-window aggregation
                   in worst-case constant time", VLDB Journal 2021 (DABA Lite); DABA is
                   DEBS 2017, §4
=================  ==========================================================

DABA's five sublists (front portion ``[F,L)``, ``l_L = [L,R)``, ``l_R = [R,A)``,
``l_A = [A,B)``, back list ``l_B = [B,E)``) are held as five :class:`collections.deque`
objects instead of pointers into one array. Every DABA step touches only the *ends* of
sublists, so every step here is an end operation of a deque (``append``, ``appendleft``,
``pop``, ``popleft``, ``d[0]``), a length test, or swapping deque references (the flip and
the singleton relabelling). CPython's deque is a doubly linked list of 64-slot blocks with
direct pointers to both end blocks and an offset into each: an end operation writes one
slot and allocates or frees at most one fixed-size block, and ``d[0]``/``d[-1]`` read
through the end-block pointer: all O(1) in the worst case. (Indexing the *middle* of a
deque walks blocks, O(n/64); nothing here does that.)

The Lite layout keeps, per sublist::

    front portion  aggregates  front[i] = v[i] ⊗ ... ⊗ v[B-1]
    l_L            aggregates  ll[i]    = v[i] ⊗ ... ⊗ v[R-1]
    l_R            raw partials (no aggregates)
    l_A            aggregates  aa[i]    = v[i] ⊗ ... ⊗ v[B-1]
    l_B            raw partials (no aggregates)
    agg_ra = Σ(l_R ++ l_A)  (needed only while l_L is non-empty)
    agg_b  = Σ(l_B)

so a shrink is ``Σ_L ⊗ agg_ra`` and ``v[A-1] ⊗ Σ_A`` (2 combines, DABA needs 3) and an
insert folds into ``agg_b`` instead of storing a prefix aggregate.

Every combine of an operation runs before its first mutation, so a monoid whose
``combine`` raises leaves the window unchanged.
"""

from __future__ import annotations

from collections import deque
from typing import Any

from windowagg.fifo._common import FoldChecks, check_lemma_4_1, empty_error, invariant
from windowagg.fifo.base import _BackedFifo, _DequeFifo
from windowagg.monoids.base import In, Monoid, Out, P

__all__ = ["DABALite"]

_WHO = "DABALite"


class PyDABALite(_DequeFifo[In, P, Out]):
    """The pure-Python reference implementation that ``DABALite(..., backend="python")`` holds."""

    __slots__ = ("_aa", "_agg_b", "_agg_ra", "_bb", "_front", "_ll", "_rr")
    _who = _WHO

    def __init__(self, monoid: Monoid[In, P, Out]) -> None:
        super().__init__(monoid)
        self._front: deque[Any] = deque()
        self._ll: deque[Any] = deque()
        self._rr: deque[Any] = deque()
        self._aa: deque[Any] = deque()
        self._bb: deque[Any] = deque()
        self._agg_ra: Any = self._identity
        self._agg_b: Any = self._identity

    def insert(self, v: In) -> None:
        """Append ``lift(v)`` as the youngest entry. O(1) worst case, at most 3 combines.

        >>> from windowagg.monoids import Sum
        >>> w = DABALite(Sum()); w.insert(3); w.insert(4); w.query()
        7
        """
        lift = self._lift
        p = v if lift is None else lift(v)
        bb = self._bb
        combine = self._combine
        agg_b = combine(self._agg_b, p) if bb else p
        # fixup, inlined (the same logic ends insert and evict: a method call would cost
        # about as much as the step itself). Every combine runs before the first
        # mutation, so a combine that raises leaves the window unchanged.
        front = self._front
        ll = self._ll
        if ll:
            # shrink: Σ_L ⊗ agg_ra joins the front portion; v[A-1] ⊗ Σ_A joins l_A
            rr = self._rr
            aa = self._aa
            s_l = ll.popleft()
            r = rr.pop()
            try:
                new_f = combine(s_l, self._agg_ra)
                new_a = combine(r, aa[0]) if aa else r
            except BaseException:  # undo the two pops (try costs nothing when no raise)
                ll.appendleft(s_l)
                rr.append(r)
                raise
            self._vals.append(p)
            bb.append(p)
            self._agg_b = agg_b
            front.append(new_f)
            aa.appendleft(new_a)
            return
        aa = self._aa
        if aa:
            # shift: the oldest of l_A joins the front portion; no combine
            self._vals.append(p)
            bb.append(p)
            self._agg_b = agg_b
            front.append(aa.popleft())
            return
        if not front:
            # singleton: the window was empty; the new entry is the front portion
            self._vals.append(p)
            front.append(p)
            return
        # flip (front portion -> l_L, l_B with the new entry -> l_R, agg_ra = new agg_b),
        # then the shrink: Σ_L ⊗ agg_ra joins the front portion, the new entry (last of
        # l_R) joins l_A; the empty deques are recycled, nothing is allocated
        new_f = combine(front[0], agg_b)
        self._vals.append(p)
        front.popleft()
        self._ll = front
        self._front = ll
        ll.append(new_f)
        self._bb = self._rr
        self._rr = bb
        self._agg_ra = agg_b
        self._agg_b = self._identity
        aa.appendleft(p)

    def evict(self) -> None:
        """Remove the oldest entry. O(1) worst case, at most 2 combines.

        Raises :class:`~windowagg.errors.EmptyWindowError` when the window is empty.

        >>> from windowagg.monoids import Sum
        >>> w = DABALite(Sum()); w.insert(3); w.insert(4); w.evict(); w.query()
        4
        """
        vals = self._vals
        if not vals:
            raise empty_error(_WHO, "evict()")
        front = self._front
        ll = self._ll
        # fixup, inlined (same logic as at the end of insert; combines first)
        if ll:
            combine = self._combine  # shrink
            rr = self._rr
            aa = self._aa
            s_l = ll.popleft()
            r = rr.pop()
            try:
                new_f = combine(s_l, self._agg_ra)
                new_a = combine(r, aa[0]) if aa else r
            except BaseException:  # undo the two pops
                ll.appendleft(s_l)
                rr.append(r)
                raise
            vals.popleft()
            front.popleft()
            front.append(new_f)
            aa.appendleft(new_a)
            return
        aa = self._aa
        if aa:
            vals.popleft()  # shift
            front.popleft()
            front.append(aa.popleft())
            return
        if len(front) == 1:
            # singleton or empty: l_B (at most one raw partial) becomes the front portion
            vals.popleft()
            front.popleft()
            self._front = self._bb
            self._bb = front
            self._agg_b = self._identity
            return
        # flip (the rest of the front portion -> l_L, l_B -> l_R, agg_ra = agg_b), then
        # the shrink: the second-oldest entry joins the new front portion with
        # Σ_L ⊗ agg_ra, the last of l_R joins l_A (Lemma 4.1: l_B is not empty here)
        agg_b = self._agg_b
        new_f = self._combine(front[1], agg_b)
        vals.popleft()
        front.popleft()
        front.popleft()
        self._ll = front
        self._front = ll
        ll.append(new_f)
        bb = self._bb
        self._bb = self._rr
        self._rr = bb
        self._agg_ra = agg_b
        self._agg_b = self._identity
        aa.appendleft(bb.pop())

    def query(self) -> Out:
        """``lower(Σ_F ⊗ agg_b)``. O(1) worst case, at most 1 combine.

        >>> from windowagg.monoids import Concat
        >>> DABALite(Concat()).query()
        ()
        """
        front = self._front
        lower = self._lower
        if not front:
            agg = self._identity
        elif self._bb:
            agg = self._combine(front[0], self._agg_b)
        else:
            agg = front[0]
        return agg if lower is None else lower(agg)

    def _check(self) -> None:
        """O(n): sublist sizes (Lemma 4.1), raw sublists, and every aggregate."""
        vals = list(self._vals)
        sizes = [len(self._front), len(self._ll), len(self._rr), len(self._aa), len(self._bb)]
        n_fp, n_l, n_r, n_a, n_b = sizes
        invariant(sum(sizes) == len(vals), _WHO, f"sublist sizes {sizes} != {len(vals)} partials")
        if not vals:
            return
        n_f = n_fp + n_l + n_r + n_a
        check_lemma_4_1(_WHO, n_l, n_r, n_a, n_f, n_b)
        cut = [0, n_fp, n_fp + n_l, n_fp + n_l + n_r, n_f, len(vals)]
        folds = FoldChecks(self._combine, self._identity, vals, _WHO)
        fold = folds.fold
        folds.suffixes(self._front, cut[0], cut[1], cut[4], "front portion")
        folds.suffixes(self._ll, cut[1], cut[2], cut[2], "l_L")
        folds.suffixes(self._aa, cut[3], cut[4], cut[4], "l_A")
        for region, stored, lo in (("l_R", self._rr, cut[2]), ("l_B", self._bb, cut[4])):
            for i, got in enumerate(stored):
                invariant(got is vals[lo + i], _WHO, f"{region} entry {i} is not the raw partial")
        if n_l:
            got = self._agg_ra
            invariant(
                folds.agrees(got, fold(cut[2], cut[4])), _WHO, f"agg_ra {got!r} != Σ(l_R ++ l_A)"
            )
        invariant(
            folds.agrees(self._agg_b, fold(cut[4], cut[5])),
            _WHO,
            f"agg_b {self._agg_b!r} != Σ(l_B)",
        )


class DABALite(_BackedFifo[In, P, Out]):
    """Worst-case O(1) FIFO aggregator with at most 3 / 2 / 1 combines per operation.

    The fact card (ordering, operator needs, costs, space, paper) opens the
    module docstring: ``help(windowagg.fifo.daba_lite)``.

    Examples
    --------
    >>> from windowagg.monoids import Max
    >>> w = DABALite(Max())
    >>> for x in (2, 6, 3, 5, 3): w.insert(x)
    >>> w.query(); w.evict(); w.insert(1); w.evict(); w.query()
    6
    5
    """

    _py = PyDABALite
    _who = _WHO
