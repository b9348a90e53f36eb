"""DABA: the De-Amortized Banker's Aggregator, one chunked queue per sublist.

=================  ==========================================================
ordering           FIFO (in-order)
operator needs     monoid (:mod:`windowagg.monoids.base`); neither commutative
                   nor invertible
insert             O(1) worst case: at most 4 combines (1 into Σ_B, 3 in a shrink)
evict              O(1) worst case: at most 3 combines (a shrink); both are the
                   paper's bounds (Thm. 4.3) and are reached; identity operands
                   (an empty l_A or l_B) are skipped, never added
query              O(1) worst case: at most 1 combine
bulk_evict(k)      O(k) worst case: k evictions, at most 3k + 1 combines (a query
                   first, when k > 1; the paper has no bulk eviction)
space              3n references: a value and an aggregate per entry (as in the
                   paper) plus the partial kept for ``oldest_partial``/``youngest_partial``/iteration
paper              Tangwongsan, Hirzel, Schneider, "Low-Latency Sliding-Window
                   Aggregation in Worst-Case Constant Time", DEBS 2017, §4, Figs. 9-10
=================  ==========================================================

The algorithm is the paper's, with its five sublists (front portion ``[F,L)``,
``l_L = [L,R)``, ``l_R = [R,A)``, ``l_A = [A,B)``, back list ``l_B = [B,E)``) and their
aggregates (Fig. 9)::

    front portion  fa[i] = v[i] ⊗ ... ⊗ v[B-1]      (to the end of the front list)
    l_L            la[i] = v[i] ⊗ ... ⊗ v[R-1]
    l_R            ra[i] = v[R] ⊗ ... ⊗ v[i]        (values kept too: rv)
    l_A            aa[i] = v[i] ⊗ ... ⊗ v[B-1]
    l_B            ba[i] = v[B] ⊗ ... ⊗ v[i]        (values kept too: bv)

Storage: instead of one chunked array with six pointers, each sublist is its own
:class:`collections.deque`, which *is* a chunked-array queue (CPython: a doubly linked list
of 64-slot blocks, with pointers to both end blocks and an index into each). DABA only ever
touches sublists at their ends (``Σ_L`` is the first of ``l_L``, ``Σ_R`` the last of
``l_R``, ``Σ_A`` the first of ``l_A``; a shrink moves the first of ``l_L`` and the last of
``l_R``; a shift the first of ``l_A``), and a flip or singleton relabelling becomes swapping
deque references. An end operation on a deque writes one slot and allocates or frees at
most one fixed-size block; ``d[0]``/``d[-1]`` and ``len(d)`` read fields: all O(1) in the
worst case. (Indexing a deque's *middle* walks blocks; nothing here does.) The paper's
single-array layout is :class:`~windowagg.fifo.DABAChunked`, about half as fast in CPython.

Lemma 4.1: either the window is empty, or ``|l_L|+|l_R|+|l_A|+1 = |l_F|-|l_B|`` and
``|l_L| = |l_R|``; ``fixup`` (singleton / flip / shift / shrink, Fig. 10) restores it after
every insert and evict.

Every combine of an operation runs before its first mutation, so a monoid whose
``combine`` raises leaves the window unchanged.
"""

from __future__ import annotations

from collections import deque
from typing import Any

from windowagg.fifo._common import FoldChecks, check_lemma_4_1, empty_error, invariant
from windowagg.fifo.base import _BackedFifo, _DequeFifo
from windowagg.monoids.base import In, Monoid, Out, P

__all__ = ["DABA"]

_WHO = "DABA"


class PyDABA(_DequeFifo[In, P, Out]):
    """The pure-Python reference implementation that ``DABA(..., backend="python")`` holds."""

    __slots__ = ("_aa", "_ba", "_bv", "_fa", "_la", "_ra", "_rv")
    _who = _WHO

    def __init__(self, monoid: Monoid[In, P, Out]) -> None:
        super().__init__(monoid)
        self._fa: deque[Any] = deque()  # front portion aggregates
        self._la: deque[Any] = deque()  # l_L aggregates
        self._rv: deque[Any] = deque()  # l_R values
        self._ra: deque[Any] = deque()  # l_R aggregates
        self._aa: deque[Any] = deque()  # l_A aggregates
        self._bv: deque[Any] = deque()  # l_B values
        self._ba: deque[Any] = deque()  # l_B aggregates

    def _sizes(self) -> tuple[int, int, int, int, int]:
        """``(|front portion|, |l_L|, |l_R|, |l_A|, |l_B|)`` (for tests and the docs)."""
        return (len(self._fa), len(self._la), len(self._rv), len(self._aa), len(self._bv))

    def insert(self, v: In) -> None:
        """Append ``lift(v)`` as the youngest entry. O(1) worst case, at most 4 combines.

        >>> from windowagg.monoids import Sum
        >>> w = DABA(Sum()); w.insert(3); w.insert(4); w.query()
        7
        """
        lift = self._lift
        p = v if lift is None else lift(v)
        ba = self._ba
        combine = self._combine
        agg = combine(ba[-1], p) if ba else p
        # fixup, inlined (the same logic ends insert and evict: a method call would cost
        # about as much as the step itself). Every combine runs before the first
        # mutation, so a combine that raises leaves the window unchanged.
        fa = self._fa
        la = self._la
        if la:
            # shrink: aggs[L] <- Σ_L ⊗ Σ_R ⊗ Σ_A joins the front portion; the last of l_R
            # joins l_A with v[A-1] ⊗ Σ_A (Σ_A read before the move)
            ra = self._ra
            rv = self._rv
            aa = self._aa
            s_l = la.popleft()
            s_r = ra.pop()
            new_a = rv.pop()
            try:
                if aa:
                    s_a = aa[0]
                    new_f = combine(combine(s_l, s_r), s_a)
                    new_a = combine(new_a, s_a)
                else:
                    new_f = combine(s_l, s_r)
            except BaseException:  # undo the three pops (try costs nothing when no raise)
                la.appendleft(s_l)
                ra.append(s_r)
                rv.append(new_a)
                raise
            self._vals.append(p)
            ba.append(agg)
            self._bv.append(p)
            fa.append(new_f)
            aa.appendleft(new_a)
            return
        aa = self._aa
        if aa:
            # shift: the oldest of l_A joins the front portion; no combine
            self._vals.append(p)
            ba.append(agg)
            self._bv.append(p)
            fa.append(aa.popleft())
            return
        if not fa:
            # singleton: the window was empty; the new entry is the front portion
            self._vals.append(p)
            fa.append(p)
            return
        # flip (front portion -> l_L, l_B with the new entry -> l_R), then the shrink:
        # Σ_L ⊗ Σ_R joins the front portion, the new entry (last of l_R) joins l_A;
        # the empty l_L / l_R deques are recycled, so nothing is allocated
        new_f = combine(fa[0], agg)
        self._vals.append(p)
        empty = la
        fa.popleft()
        self._la = fa
        self._fa = front = self._ra
        front.append(new_f)
        self._ra = ba
        self._ba = self._rv
        self._rv = self._bv
        self._bv = empty
        aa.appendleft(p)

    def evict(self) -> None:
        """Remove the oldest entry. O(1) worst case, at most 3 combines.

        Raises :class:`~windowagg.errors.EmptyWindowError` when the window is empty.

        >>> from windowagg.monoids import Sum
        >>> w = DABA(Sum()); w.insert(3); w.insert(4); w.evict(); w.query()
        4
        """
        vals = self._vals
        if not vals:
            raise empty_error(_WHO, "evict()")
        fa = self._fa
        la = self._la
        # fixup, inlined (same logic as at the end of insert; combines first)
        if la:
            combine = self._combine  # shrink
            ra = self._ra
            rv = self._rv
            aa = self._aa
            s_l = la.popleft()
            s_r = ra.pop()
            new_a = rv.pop()
            try:
                if aa:
                    s_a = aa[0]
                    new_f = combine(combine(s_l, s_r), s_a)
                    new_a = combine(new_a, s_a)
                else:
                    new_f = combine(s_l, s_r)
            except BaseException:  # undo the three pops
                la.appendleft(s_l)
                ra.append(s_r)
                rv.append(new_a)
                raise
            vals.popleft()
            fa.popleft()
            fa.append(new_f)
            aa.appendleft(new_a)
            return
        aa = self._aa
        if aa:
            vals.popleft()  # shift
            fa.popleft()
            fa.append(aa.popleft())
            return
        if len(fa) == 1:
            # singleton or empty: l_B (at most one entry) becomes the front portion
            vals.popleft()
            fa.popleft()
            self._fa = self._ba
            self._ba = fa
            self._bv.clear()
            return
        # flip (the rest of the front portion -> l_L, l_B -> l_R), then the shrink: the
        # second-oldest entry joins the new front portion with Σ_L ⊗ Σ_R, the last of
        # l_R joins l_A (Lemma 4.1: l_B is not empty here)
        ba = self._ba
        new_f = self._combine(fa[1], ba[-1])
        vals.popleft()
        fa.popleft()
        fa.popleft()
        empty = la
        self._la = fa
        self._fa = front = self._ra
        front.append(new_f)
        ba.pop()
        self._ra = ba
        self._ba = self._rv
        bv = self._bv
        self._rv = bv
        self._bv = empty
        aa.appendleft(bv.pop())

    def query(self) -> Out:
        """``lower(Σ_F ⊗ Σ_B)``. O(1) worst case, at most 1 combine.

        >>> from windowagg.monoids import Concat
        >>> DABA(Concat()).query()
        ()
        """
        fa = self._fa
        lower = self._lower
        if fa:
            ba = self._ba
            agg = self._combine(fa[0], ba[-1]) if ba else fa[0]
        else:
            agg = self._identity
        res: Out = agg if lower is None else lower(agg)
        return res

    def _check(self) -> None:
        """O(n): sublist sizes (Lemma 4.1), parallel deques, and every aggregate."""
        vals = list(self._vals)
        n_fp, n_l, n_r, n_a, n_b = self._sizes()
        sizes = [n_fp, n_l, n_r, n_a, n_b]
        invariant(sum(sizes) == len(vals), _WHO, f"sublist sizes {sizes} != {len(vals)} partials")
        invariant(len(self._ra) == n_r, _WHO, f"l_R: {n_r} values, {len(self._ra)} aggregates")
        invariant(len(self._ba) == n_b, _WHO, f"l_B: {n_b} values, {len(self._ba)} aggregates")
        if not vals:
            return
        n_f = n_fp + n_l + n_r + n_a
        check_lemma_4_1(_WHO, n_l, n_r, n_a, n_f, n_b)
        L, R, A, B = n_fp, n_fp + n_l, n_fp + n_l + n_r, n_f
        folds = FoldChecks(self._combine, self._identity, vals, _WHO)
        folds.suffixes(self._fa, 0, L, B, "front portion")
        folds.suffixes(self._la, L, R, R, "l_L")
        folds.prefixes(self._ra, R, A, "l_R")
        folds.suffixes(self._aa, A, B, B, "l_A")
        folds.prefixes(self._ba, B, len(vals), "l_B")
        for region, stored, lo in (("l_R", self._rv, R), ("l_B", self._bv, B)):
            for i, got in enumerate(stored):
                invariant(got is vals[lo + i], _WHO, f"{region} value {i} is not the partial")


class DABA(_BackedFifo[In, P, Out]):
    """Worst-case O(1) FIFO aggregator over any monoid (De-Amortized Banker's Aggregator).

    The fact card (ordering, operator needs, costs, space, paper) opens the
    module docstring: ``help(windowagg.fifo.daba)``.

    Examples
    --------
    The guide's regression trace (Max, the paper's running example):

    >>> from windowagg.monoids import Max
    >>> w = DABA(Max(), backend="python")  # the Python class: its sublists are readable
    >>> for x in (2, 6, 3, 5, 3): w.insert(x)
    >>> w.query(); w.evict(); w.insert(1); w.evict(); w.query()
    6
    5
    >>> w._sizes()  # |front portion|, |l_L|, |l_R|, |l_A|, |l_B|
    (1, 1, 1, 1, 0)

    >>> from windowagg.monoids import Concat
    >>> w = DABA(Concat())
    >>> for x in "abcde": w.insert(x)
    >>> w.bulk_evict(2); w.query(), w.oldest_partial(), w.youngest_partial(), len(w)
    (('c', 'd', 'e'), ('c',), ('e',), 3)
    """

    _py = PyDABA
    _who = _WHO
