"""DABAChunked: DABA on the paper's chunked-array queue (one array, six pointers).

=================  ==========================================================
ordering           FIFO (in-order)
operator needs     monoid; neither commutative nor invertible
insert             O(1) worst case: at most 4 combines (1 into Σ_B, 3 in a shrink)
evict              O(1) worst case: at most 3 combines (a shrink); both are the
                   paper's bounds (Thm. 4.3), reached; identity operands are skipped
query              O(1) worst case: at most 1 combine
bulk_evict(k)      O(k) worst case: k evictions, at most 3k + 1 combines (a query
                   first, when k > 1; the paper has no bulk eviction)
space              2n references (a value and an aggregate per entry) in chunks of
                   ``chunk_size`` slots, plus one spare chunk at most
paper              Tangwongsan, Hirzel, Schneider, "Low-Latency Sliding-Window
                   Aggregation in Worst-Case Constant Time", DEBS 2017, §4, Figs. 9-10
=================  ==========================================================

Storage is the paper's chunked-array queue (§4.1): a doubly linked list of fixed-size
chunks, each a Python list ``[vals (C slots) | aggs (C slots) | next | prev]``. Six
pointers ``F <= L <= R <= A <= B <= E`` are absolute integer positions (they only grow,
Python ints do not overflow); the slot of position ``p`` is ``p & (C - 1)`` in the chunk
that holds it, and the chunks of ``F``, ``L``, ``A`` and ``E`` (the positions that are
read or written) are kept as references. Moving a pointer by one crosses at most one chunk
link, pushing allocates at most one chunk of ``2C + 2`` slots, popping frees at most one
(its links are cut so reference counting frees it at once): every queue step is O(1) in
the worst case, and DABA takes O(1) of them per operation. No step touches the middle of a
Python list by position scanning, resizes a list or rehashes a dict.

The aggregates obey, for the sublists of the front list ``[F, B)`` and back list
``[B, E)`` (Fig. 9)::

    p in [F, L): aggs[p] = v[p] ⊗ ... ⊗ v[B-1]
    p in [L, R): aggs[p] = v[p] ⊗ ... ⊗ v[R-1]
    p in [R, A): aggs[p] = v[R] ⊗ ... ⊗ v[p]
    p in [A, B): aggs[p] = v[p] ⊗ ... ⊗ v[B-1]
    p in [B, E): aggs[p] = v[B] ⊗ ... ⊗ v[p]

and either the window is empty or ``|L..R| + |R..A| + |A..B| + 1 = |F..B| - |B..E|`` and
``|L..R| = |R..A|`` (Lemma 4.1). ``fixup`` (singleton / flip / shift / shrink) restores
them after every insert and evict with at most 3 combines; ``Σ_B = aggs[E-1]`` is cached.
Evicted partials stay referenced until their chunk is freed (at most ``C - 1`` of them).

A ``combine`` that raises leaves the window as before: a shrink computes both of its
aggregates before writing either, and puts the pointers of the append or eviction back.
"""

from __future__ import annotations

from collections.abc import Iterator
from itertools import islice
from typing import Any

from windowagg.errors import ArgumentError
from windowagg.fifo._common import FoldChecks, check_lemma_4_1, empty_error, invariant
from windowagg.fifo.base import _FifoBase
from windowagg.monoids.base import In, Monoid, Out, P

__all__ = ["DABAChunked"]

_WHO = "DABAChunked"
# The largest chunk_size: a chunk of 2 * 2**20 + 2 slots is 16 MiB of references.
MAX_CHUNK_SIZE = 1 << 20


class DABAChunked(_FifoBase[In, P, Out]):
    """Worst-case O(1) FIFO aggregator over any monoid (De-Amortized Banker's Aggregator).

    The fact card (ordering, operator needs, costs, space, paper) opens the
    module docstring: ``help(windowagg.fifo.daba_chunked)``.

    Parameters
    ----------
    monoid : Monoid
        Any monoid (see :mod:`windowagg.monoids.base`).
    chunk_size : int, default 512
        Slots per chunk of the queue; a power of two from 2 to ``MAX_CHUNK_SIZE`` (2**20,
        checked before the first chunk is allocated). Small values exercise the chunk
        boundaries (tests use 2 and 4); large ones allocate less often.

    Examples
    --------
    The regression trace of the guide (Max, Fig. 4 of the paper):

    >>> from windowagg.monoids import Max
    >>> w = DABAChunked(Max(), chunk_size=4)
    >>> for x in (2, 6, 3, 5, 3): w.insert(x)
    >>> w.query(); w.evict(); w.insert(1); w.evict(); w.query()
    6
    5
    >>> w._pointers()
    (2, 3, 4, 5, 6, 6)
    """

    __slots__ = (
        "_a",
        "_ac",
        "_b",
        "_c",
        "_e",
        "_ec",
        "_f",
        "_fc",
        "_l",
        "_lc",
        "_mask",
        "_r",
        "_sb",
    )
    _who = _WHO
    _repr_fields = ("chunk_size",)

    def __init__(self, monoid: Monoid[In, P, Out], chunk_size: int = 512) -> None:
        super().__init__(monoid)
        if (
            isinstance(chunk_size, bool)
            or not isinstance(chunk_size, int)
            or chunk_size < 2
            or chunk_size & (chunk_size - 1)
            or chunk_size > MAX_CHUNK_SIZE
        ):
            # the limit is checked before the first chunk (2 * chunk_size + 2 slots) exists:
            # chunk_size=2**40 was a bare MemoryError here (and a sanitizer's abort under ASan)
            raise ArgumentError(
                f"DABAChunked chunk_size must be a power of two from 2 to {MAX_CHUNK_SIZE}, "
                f"got {chunk_size!r}"
            )
        self._c = chunk_size
        self._mask = chunk_size - 1
        chunk: list[Any] = [None] * (2 * chunk_size + 2)
        self._f = self._l = self._r = self._a = self._b = self._e = 0
        self._fc = self._lc = self._ac = self._ec = chunk
        self._sb: Any = self._identity  # Σ_B = aggs[E-1] when B < E

    @property
    def chunk_size(self) -> int:
        """Slots per chunk of the underlying chunked-array queue. O(1).

        >>> from windowagg.monoids import Sum
        >>> DABAChunked(Sum()).chunk_size
        512
        """
        return self._c

    def _fresh(self) -> DABAChunked[In, P, Out]:
        return DABAChunked(self._m, chunk_size=self._c)

    def _clone(self) -> DABAChunked[In, P, Out]:
        """A copy with its own chunk chain (the partials are shared). O(n)."""
        twin = self._fresh()
        for name in self._slots():
            setattr(twin, name, getattr(self, name))
        copies: dict[int, list[Any]] = {}
        prev: list[Any] | None = None
        chunk: list[Any] | None = self._fc
        while chunk is not None:  # F's chunk to E's, along the [-2] links
            twin_chunk = chunk.copy()
            twin_chunk[-1] = prev
            if prev is not None:
                prev[-2] = twin_chunk
            copies[id(chunk)] = twin_chunk
            prev = twin_chunk
            chunk = chunk[-2]
        twin._fc = copies[id(self._fc)]
        twin._lc = copies[id(self._lc)]
        twin._ac = copies[id(self._ac)]
        twin._ec = copies[id(self._ec)]
        return twin

    def _pointers(self) -> tuple[int, int, int, int, int, int]:
        """``(F, L, R, A, B, E)`` as absolute positions (for tests and the docs)."""
        return (self._f, self._l, self._r, self._a, self._b, self._e)

    # ------------------------------------------------------------------ operations
    def insert(self, v: In) -> None:
        """Append ``lift(v)`` as the youngest entry. O(1) worst case, at most 4 combines.

        >>> from windowagg.monoids import Sum
        >>> w = DABAChunked(Sum()); w.insert(3); w.insert(4); w.query()
        7
        """
        lift = self._lift
        p = v if lift is None else lift(v)
        e = self._e
        ec = self._ec
        b = self._b
        mask = self._mask
        c = self._c
        agg = p if e == b else self._combine(self._sb, p)
        saved = e, ec, b, self._sb  # for a shrink whose combine raises
        i = e & mask
        ec[i] = p
        ec[i + c] = agg
        self._sb = agg
        e += 1
        if not e & mask:  # the sentinel slot needs a new chunk: O(C) allocation
            nc: list[Any] = [None] * (2 * c + 2)
            nc[-1] = ec
            ec[-2] = nc
            self._ec = nc
        self._e = e
        f = self._f
        # fixup, inlined (the same code ends insert and evict: a method call would cost
        # as much as a shrink step). Cases: singleton / flip / shift / shrink (Fig. 10).
        if f == b:
            # singleton (or empty): the back list becomes the front portion; no combine
            self._l = self._r = self._a = self._b = e
            self._lc = self._ac = self._ec
            return
        lp = self._l
        if lp == b:
            # flip: front portion -> l_L, back list -> l_R (then a shrink); no combine
            lp = f
            lc = self._fc
            a = b = self._b = e
            ac = self._ec
        else:
            if lp == self._r:
                # shift: the oldest of l_A joins the front portion; no combine
                a = self._a + 1
                ac = self._ac
                if not a & mask:
                    ac = ac[-2]
                self._a = self._l = self._r = a
                self._ac = self._lc = ac
                return
            lc = self._lc
            a = self._a
            ac = self._ac
        # shrink: the oldest of l_L joins the front portion, the youngest of l_R joins
        # l_A; aggs[L] <- Σ_L ⊗ Σ_R ⊗ Σ_A and aggs[A-1] <- v[A-1] ⊗ Σ_A (old A)
        ai = a & mask
        if ai:
            pc = ac
            pi = ai - 1 + c  # aggs slot of position A-1
        else:
            pc = ac[-1]
            pi = mask + c
        li = (lp & mask) + c
        combine = self._combine
        try:  # both combines before either write (try costs nothing when no raise)
            if a != b:
                s_a = ac[ai + c]
                new_l = combine(combine(lc[li], pc[pi]), s_a)
                new_p = combine(pc[pi - c], s_a)
            else:  # l_A empty: Σ_A is the identity, skip both identity operands
                new_l = combine(lc[li], pc[pi])
                new_p = pc[pi - c]
        except BaseException:  # undo the append (and a flip's relabelling)
            if self._ec is not saved[1]:  # unlink the chunk the append allocated
                saved[1][-2] = None
            self._e, self._ec, self._b, self._sb = saved
            raise
        lc[li] = new_l
        pc[pi] = new_p
        lp += 1
        if not lp & mask:
            lc = lc[-2]
        self._l = lp
        self._lc = lc
        self._a = a - 1
        self._ac = pc

    def evict(self) -> None:
        """Remove the oldest entry. O(1) worst case, at most 3 combines.

        Raises :class:`~windowagg.errors.EmptyWindowError` when the window is empty.

        >>> from windowagg.monoids import Sum
        >>> w = DABAChunked(Sum()); w.insert(3); w.insert(4); w.evict(); w.query()
        4
        """
        f = self._f
        e = self._e
        if f == e:
            raise empty_error(_WHO, "evict()")
        mask = self._mask
        c = self._c
        saved_fc, saved_b = self._fc, self._b  # for a shrink whose combine raises
        f += 1
        if not f & mask:
            old = self._fc
            fc = old[-2]
            old[-2] = None  # cut both links: reference counting frees the old chunk now
            fc[-1] = None
            self._fc = fc
        self._f = f
        b = self._b
        # fixup, inlined (the same code ends insert and evict: a method call would cost
        # as much as a shrink step). Cases: singleton / flip / shift / shrink (Fig. 10).
        if f == b:
            # singleton (or empty): the back list becomes the front portion; no combine
            self._l = self._r = self._a = self._b = e
            self._lc = self._ac = self._ec
            return
        lp = self._l
        if lp == b:
            # flip: front portion -> l_L, back list -> l_R (then a shrink); no combine
            lp = f
            lc = self._fc
            a = b = self._b = e
            ac = self._ec
        else:
            if lp == self._r:
                # shift: the oldest of l_A joins the front portion; no combine
                a = self._a + 1
                ac = self._ac
                if not a & mask:
                    ac = ac[-2]
                self._a = self._l = self._r = a
                self._ac = self._lc = ac
                return
            lc = self._lc
            a = self._a
            ac = self._ac
        # shrink: the oldest of l_L joins the front portion, the youngest of l_R joins
        # l_A; aggs[L] <- Σ_L ⊗ Σ_R ⊗ Σ_A and aggs[A-1] <- v[A-1] ⊗ Σ_A (old A)
        ai = a & mask
        if ai:
            pc = ac
            pi = ai - 1 + c  # aggs slot of position A-1
        else:
            pc = ac[-1]
            pi = mask + c
        li = (lp & mask) + c
        combine = self._combine
        try:  # both combines before either write (try costs nothing when no raise)
            if a != b:
                s_a = ac[ai + c]
                new_l = combine(combine(lc[li], pc[pi]), s_a)
                new_p = combine(pc[pi - c], s_a)
            else:  # l_A empty: Σ_A is the identity, skip both identity operands
                new_l = combine(lc[li], pc[pi])
                new_p = pc[pi - c]
        except BaseException:  # undo the eviction (and a flip's relabelling)
            self._f, self._b = f - 1, saved_b
            if self._fc is not saved_fc:  # relink the chunk the eviction freed
                saved_fc[-2] = self._fc
                self._fc[-1] = saved_fc
                self._fc = saved_fc
            raise
        lc[li] = new_l
        pc[pi] = new_p
        lp += 1
        if not lp & mask:
            lc = lc[-2]
        self._l = lp
        self._lc = lc
        self._a = a - 1
        self._ac = pc

    def query(self) -> Out:
        """``lower(Σ_F ⊗ Σ_B)``. O(1) worst case, at most 1 combine.

        >>> from windowagg.monoids import Concat
        >>> DABAChunked(Concat()).query()
        ()
        """
        f = self._f
        b = self._b
        lower = self._lower
        if f == b:
            agg = self._identity
        elif b == self._e:
            agg = self._fc[(f & self._mask) + self._c]
        else:
            agg = self._combine(self._fc[(f & self._mask) + self._c], self._sb)
        return agg if lower is None else lower(agg)

    def oldest_partial(self) -> P:
        """The oldest partial, slot ``F & (C - 1)`` of F's chunk. O(1). EmptyWindowError.

        >>> from windowagg.monoids import Sum
        >>> w = DABAChunked(Sum(), chunk_size=2)
        >>> for x in (1, 2, 3): w.insert(x)
        >>> w.bulk_evict(2); w.oldest_partial()  # F moved on to the second chunk
        3
        """
        f = self._f
        if f == self._e:
            raise empty_error(_WHO, "oldest_partial()")
        res: P = self._fc[f & self._mask]
        return res

    def youngest_partial(self) -> P:
        """The youngest partial, at ``E - 1``. O(1). EmptyWindowError when empty.

        >>> from windowagg.monoids import Sum
        >>> w = DABAChunked(Sum(), chunk_size=2); w.insert(1); w.insert(2)
        >>> w.youngest_partial()  # E opened a new chunk: the last slot of the one before
        2
        """
        e = self._e
        if e == self._f:
            raise empty_error(_WHO, "youngest_partial()")
        i = e & self._mask
        if i:
            res: P = self._ec[i - 1]
            return res
        res = self._ec[-1][self._mask]
        return res

    def __len__(self) -> int:
        """Number of entries, ``E - F``. O(1).

        >>> from windowagg.monoids import Sum
        >>> w = DABAChunked(Sum(), chunk_size=2)
        >>> for x in range(5): w.insert(x)
        >>> w.evict(); len(w), w._pointers()[0], w._pointers()[-1]
        (4, 1, 5)
        """
        return self._e - self._f

    def _walk(self) -> Iterator[tuple[int, list[Any], int]]:
        """``(position, chunk, slot)`` for every live position, oldest first."""
        c = self._fc
        mask = self._mask
        for p in range(self._f, self._e):
            i = p & mask
            if p != self._f and i == 0:
                c = c[-2]
            yield p, c, i

    def __iter__(self) -> Iterator[P]:
        """Partials oldest to youngest (a snapshot, following the chunk links). O(n).

        >>> from windowagg.monoids import Concat
        >>> w = DABAChunked(Concat(), chunk_size=2)
        >>> for x in "abcde": w.insert(x)
        >>> w.evict(); list(w)
        [('b',), ('c',), ('d',), ('e',)]
        """
        return iter([c[i] for _, c, i in self._walk()])

    def _head(self, k: int) -> list[Any]:
        """The *k* oldest partials. O(k)."""
        return [c[i] for _, c, i in islice(self._walk(), k)]

    def _check(self) -> None:
        """O(n): pointer order, chunk links, Lemma 4.1 sizes and every aggregate."""
        f, lp, r, a, b, e = self._pointers()
        invariant(
            f <= lp <= r <= a <= b <= e, _WHO, f"pointer order F L R A B E = {f, lp, r, a, b, e}"
        )
        mask, cs = self._mask, self._c
        # chunk chain from F's chunk to E's chunk; map chunk number -> chunk
        chunks: dict[int, list[Any]] = {}
        c: list[Any] | None = self._fc
        invariant(c is not None and c[-1] is None, _WHO, "F's chunk has a live prev link")
        no = f // cs
        prev: list[Any] | None = None
        while c is not None:
            invariant(len(c) == 2 * cs + 2, _WHO, f"chunk {no} has {len(c)} slots")
            invariant(prev is None or c[-1] is prev, _WHO, f"chunk {no}: prev link broken")
            chunks[no] = c
            prev, c = c, c[-2]
            no += 1
        invariant(no - 1 == e // cs, _WHO, f"chunk chain ends at {no - 1}, E's chunk is {e // cs}")
        for name, pos, ref in (
            ("F", f, self._fc),
            ("L", lp, self._lc),
            ("A", a, self._ac),
            ("E", e, self._ec),
        ):
            invariant(
                chunks.get(pos // cs) is ref, _WHO, f"pointer {name}={pos}: wrong chunk reference"
            )
        vals = [chunks[p // cs][p & mask] for p in range(f, e)]
        aggs = [chunks[p // cs][(p & mask) + cs] for p in range(f, e)]
        if f == e:
            invariant(
                lp == r == a == b == e, _WHO, f"empty window but pointers {f, lp, r, a, b, e}"
            )
            return
        n_l, n_r, n_a, n_f, n_b = r - lp, a - r, b - a, b - f, e - b
        check_lemma_4_1(_WHO, n_l, n_r, n_a, n_f, n_b)
        # positions relative to F: region [x, y) is vals[x - f : y - f], its aggs likewise
        folds = FoldChecks(self._combine, self._identity, vals, _WHO)
        for lo, hi, end, region in (
            (f, lp, b, "front portion [F,L)"),
            (lp, r, r, "l_L [L,R)"),
            (a, b, b, "l_A [A,B)"),
        ):
            folds.suffixes(aggs[lo - f : hi - f], lo - f, hi - f, end - f, region)
        for lo, hi, region in ((r, a, "l_R [R,A)"), (b, e, "l_B [B,E)")):
            folds.prefixes(aggs[lo - f : hi - f], lo - f, hi - f, region)
        if b < e:
            invariant(
                folds.agrees(self._sb, aggs[e - 1 - f]),
                _WHO,
                f"cached Σ_B {self._sb!r} != aggs[E-1]",
            )
