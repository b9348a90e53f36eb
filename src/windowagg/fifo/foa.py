"""FOA: the Functional Okasaki Aggregator (an incremental Two-Stacks on lazy lists).

=================  ==========================================================
ordering           FIFO (in-order)
operator needs     monoid; neither commutative nor invertible
insert             O(1) worst case: at most 4 combines
evict              O(1) worst case: at most 3 combines
query              O(1) worst case: at most 1 combine
bulk_evict(k)      O(k) worst case: k evictions (no bulk form in the paper)
space              O(n): one immutable cell per entry and per pending rotation step,
                   plus one suspension object per pending step
paper              Tangwongsan, Hirzel, Schneider, DEBS 2017, §3.1, Fig. 5, after
                   Okasaki's real-time queue
=================  ==========================================================

State ``⟨F, N, B⟩``: the front list ``F`` (oldest first), the back list ``B`` (youngest
first), and the schedule ``N``, a suffix of ``F`` whose head is the next suspension to
force. Cells are immutable ``(val, agg, tail)``; ``agg`` is passed in "out of band"
(``v ⊗ agg(tail)`` in ``F``, ``agg(tail) ⊗ v`` in ``B``) and never computed by forcing a
tail. A tail may be a :class:`_Lazy` suspension of ``rot(L, R, A)`` (which returns
``L ++ reverse(R) ++ A``), memoised on first force. Invariant (the seed's is garbled):
``|B| <= |F|`` and ``|N| = |F| - |B|``; a rotation starts when ``|B| = |F| + 1``, and every
operation forces one suspended step, so rotations finish in time and at most one
suspension is pending (Lemma 3.1).

In Python, laziness is a memoising object and garbage collection is reference counting,
which frees at most one cell per operation here; the difference from
:class:`~windowagg.fifo.IOA` is that FOA keeps every cell immutable and allocates a
separate suspension object, IOA forces a delayed cell in place.

``combine`` must be total (the monoid contract): one that raises while a rotation step
is forced can leave the lists inconsistent, which ``_check()`` reports.

Examples
--------
>>> from windowagg.monoids import Concat
>>> w = FOA(Concat())
>>> for x in "abcd": w.insert(x)
>>> w.evict(); w.query(), len(w)
(('b', 'c', 'd'), 3)
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from windowagg.fifo._common import check_count, empty_error, hot_ops, invariant
from windowagg.monoids.base import Monoid, require_monoid

__all__ = ["FOA"]

_WHO = "FOA"


class _Cell:
    """An immutable list cell: ``val``, its out-of-band ``agg`` and ``tail`` (cell,
    :class:`_Lazy` or ``None`` for the empty list)."""

    __slots__ = ("agg", "tail", "val")

    def __init__(self, val: Any, agg: Any, tail: _Cell | _Lazy | None) -> None:
        self.val = val
        self.agg = agg
        self.tail = tail


class _Lazy:
    """A memoised suspension of ``rot(lft, r, a)``; ``out`` is its value once forced."""

    __slots__ = ("a", "forced", "lft", "out", "r")

    def __init__(self, lft: _Cell | None, r: _Cell, a: _Cell) -> None:
        self.lft = lft
        self.r = r
        self.a = a
        self.forced = False
        self.out: _Cell | None = None


def _tail(c: _Cell, rot: Callable[[_Cell | None, _Cell, _Cell | None], _Cell]) -> _Cell | None:
    """The tail of *c*, forcing (once) a suspension: O(1), at most 3 combines."""
    t = c.tail
    if t.__class__ is _Lazy:
        lz: _Lazy = t
        if not lz.forced:
            lz.out = rot(lz.lft, lz.r, lz.a)
            lz.forced = True
            lz.lft = lz.r = lz.a = None  # type: ignore[assignment]  # drop the inputs
        return lz.out
    return t  # type: ignore[return-value]


def _plain_tail(c: _Cell) -> _Cell | None:
    """The tail of a fully materialised cell (no suspension left to force)."""
    t = c.tail
    if t.__class__ is _Lazy:
        return t.out
    return t  # type: ignore[return-value]


def _walk(c: _Cell | None) -> Iterator[Any]:
    """Values of a list, oldest first, without forcing anything (for iteration/checks)."""
    while c is not None:
        yield c.val
        t = c.tail
        if t.__class__ is _Lazy:
            lz: _Lazy = t
            if not lz.forced:  # rest = lft ++ reverse(r) ++ a, all three materialised
                yield from _walk(lz.lft)
                yield from reversed(list(_walk(lz.r)))
                yield from _walk(lz.a)
                return
            c = lz.out
        else:
            c = t  # type: ignore[assignment]


class FOA:
    """Worst-case O(1) FIFO aggregator on lazy immutable lists (Okasaki's queue).

    =================  ==========================================================
    ordering           FIFO (in-order)
    operator needs     monoid; neither commutative nor invertible
    insert             O(1) worst case: at most 4 combines
    evict              O(1) worst case: at most 3 combines
    query              O(1) worst case: at most 1 combine
    bulk_evict(k)      O(k) worst case: k evictions (no bulk form in the paper)
    space              O(n): one immutable cell per entry and per pending rotation step,
                       plus one suspension object per pending step
    paper              Tangwongsan, Hirzel, Schneider, DEBS 2017, §3.1, Fig. 5, after
                       Okasaki's real-time queue
    =================  ==========================================================

    Parameters
    ----------
    monoid : Monoid
        Any monoid (see :mod:`windowagg.monoids.base`).

    Examples
    --------
    >>> from windowagg.monoids import Max
    >>> w = FOA(Max())
    >>> for x in (2, 6, 3): w.insert(x)
    >>> w.query(), w.oldest(), w.youngest(), list(w)
    (6, 2, 3, [2, 6, 3])
    """

    __slots__ = (
        "_b",
        "_combine",
        "_f",
        "_identity",
        "_last",
        "_lift",
        "_lower",
        "_m",
        "_n",
        "_rot",
        "_sched",
    )

    def __init__(self, monoid: Monoid[Any, Any, Any]) -> None:
        require_monoid(monoid, _WHO)
        self._m = monoid
        # bound methods cached once: every operation calls them
        self._lift, self._combine, self._lower = hot_ops(monoid)
        self._identity = monoid.identity
        self._f: _Cell | None = None
        self._sched: _Cell | None = None
        self._b: _Cell | None = None
        self._n = 0
        self._last: Any = None  # youngest partial (B may be empty right after a rotation)
        self._rot = self._make_rot()

    def _make_rot(self) -> Callable[[_Cell | None, _Cell, _Cell | None], _Cell]:
        combine = self._combine

        def rot(lft: _Cell | None, r: _Cell, a: _Cell | None) -> _Cell:
            """Head cell of ``lft ++ reverse(r) ++ a``, rest suspended; at most 3 combines."""
            hv = r.val
            a2 = _Cell(hv, hv if a is None else combine(hv, a.agg), a)
            if lft is None:
                return a2
            agg = combine(lft.agg, r.agg)
            if a is not None:
                agg = combine(agg, a.agg)
            return _Cell(lft.val, agg, _Lazy(_plain_tail(lft), _plain_tail(r), a2))  # type: ignore[arg-type]

        return rot

    @property
    def monoid(self) -> Monoid[Any, Any, Any]:
        """The monoid this window aggregates with. O(1).

        >>> from windowagg.monoids import Sum
        >>> FOA(Sum()).monoid
        Sum()
        """
        return self._m

    def _makeq(self, f: _Cell | None) -> None:
        """Okasaki's ``makeq``: start a rotation or force one scheduled step. O(1)."""
        sched = self._sched
        if sched is None:
            f = self._rot(f, self._b, None)  # type: ignore[arg-type]
            self._f = f
            self._sched = f
            self._b = None
        else:
            self._f = f
            self._sched = _tail(sched, self._rot)

    def insert(self, v: Any) -> None:
        """Cons ``lift(v)`` onto the back list. O(1) worst case, at most 4 combines.

        >>> from windowagg.monoids import Sum
        >>> w = FOA(Sum()); w.insert(3); w.insert(4); w.query()
        7
        """
        lift = self._lift
        p = v if lift is None else lift(v)
        b = self._b
        self._b = _Cell(p, p if b is None else self._combine(b.agg, p), b)
        self._last = p
        self._n += 1
        self._makeq(self._f)

    def evict(self) -> None:
        """Drop the head of the front list. O(1) worst case, at most 3 combines.

        Raises :class:`~windowagg.errors.EmptyWindowError` when the window is empty.

        >>> from windowagg.monoids import Sum
        >>> w = FOA(Sum()); w.insert(3); w.insert(4); w.evict(); w.query()
        4
        """
        f = self._f
        if f is None:
            raise empty_error(_WHO, "evict()")
        self._n -= 1
        self._makeq(_tail(f, self._rot))

    def bulk_evict(self, count: int) -> None:
        """Remove the ``count`` oldest entries: O(count) worst case, <= 3 combines each.

        A bad count raises and leaves the window unchanged.

        >>> from windowagg.monoids import Sum
        >>> w = FOA(Sum())
        >>> for x in range(6): w.insert(x)
        >>> w.bulk_evict(4); w.query(), len(w)
        (9, 2)
        """
        k = check_count(count, self._n, _WHO)
        evict = self.evict  # cached: called k times
        for _ in range(k):
            evict()

    def query(self) -> Any:
        """``lower(agg(F) ⊗ agg(B))``. O(1) worst case, at most 1 combine.

        >>> from windowagg.monoids import Concat
        >>> FOA(Concat()).query()
        ()
        """
        f, b = self._f, self._b
        lower = self._lower
        if f is None:
            agg = self._identity
        elif b is None:
            agg = f.agg
        else:
            agg = self._combine(f.agg, b.agg)
        return agg if lower is None else lower(agg)

    def oldest(self) -> Any:
        """The oldest partial. O(1). EmptyWindowError when empty.

        >>> from windowagg.monoids import Sum
        >>> w = FOA(Sum()); w.insert(1); w.insert(2)
        >>> w.oldest()
        1
        """
        if self._f is None:
            raise empty_error(_WHO, "oldest()")
        return self._f.val

    def youngest(self) -> Any:
        """The youngest partial. O(1). EmptyWindowError when empty.

        >>> from windowagg.monoids import Sum
        >>> w = FOA(Sum()); w.insert(1); w.insert(2)
        >>> w.youngest()
        2
        """
        if self._f is None:
            raise empty_error(_WHO, "youngest()")
        return self._last

    def __len__(self) -> int:
        """Number of entries. O(1).

        >>> from windowagg.monoids import Sum
        >>> w = FOA(Sum()); w.insert(1); w.insert(2)
        >>> len(w)
        2
        """
        return self._n

    def __iter__(self) -> Iterator[Any]:
        """Partials oldest to youngest (a snapshot, forcing nothing). O(n).

        >>> from windowagg.monoids import Sum
        >>> w = FOA(Sum()); w.insert(1); w.insert(2)
        >>> list(w)
        [1, 2]
        """
        back = list(_walk(self._b))
        back.reverse()
        return iter(list(_walk(self._f)) + back)

    def _check(self) -> None:
        """O(n), forcing nothing: Okasaki's size invariant, N a suffix of F, and aggs."""
        front = list(_walk(self._f))
        back = list(_walk(self._b))
        nf, nb = len(front), len(back)
        invariant(nf + nb == self._n, _WHO, f"|F| + |B| = {nf + nb} != n = {self._n}")
        invariant(nb <= nf, _WHO, f"|B| = {nb} > |F| = {nf}")
        # N must be a suffix of F (same cells) of length |F| - |B|
        sched, k, ok = self._sched, 0, True
        c: _Cell | None = self._f
        while c is not sched and c is not None:
            k += 1
            t = c.tail
            if isinstance(t, _Lazy):
                if not t.forced:
                    ok = False
                    break
                c = t.out
            else:
                c = t
        invariant(ok and c is sched, _WHO, "schedule N is not a materialised suffix of F")
        invariant(nf - k == nf - nb, _WHO, f"|N| = {nf - k} != |F| - |B| = {nf - nb}")
        combine, ident = self._combine, self._identity
        # materialised front cells: agg = val ⊗ rest of F; back cells: agg = older ⊗ val
        acc, suffix = ident, [ident] * (nf + 1)
        for i in range(nf - 1, -1, -1):
            acc = combine(front[i], acc)
            suffix[i] = acc
        c, i = self._f, 0
        while c is not None:
            invariant(c.agg == suffix[i], _WHO, f"front cell {i}: agg {c.agg!r} != {suffix[i]!r}")
            t = c.tail
            if t.__class__ is _Lazy:
                if not t.forced:
                    break
                t = t.out
            c, i = t, i + 1  # type: ignore[assignment]
        acc = ident
        prefix = []
        for p in reversed(back):
            acc = combine(acc, p)
            prefix.append(acc)
        c, i = self._b, nb - 1
        while c is not None:
            invariant(c.agg == prefix[i], _WHO, f"back cell {nb - 1 - i}: agg {c.agg!r}")
            c, i = c.tail, i - 1  # type: ignore[assignment]
        if self._n:
            invariant(self._last == (back[0] if back else front[-1]), _WHO, "youngest partial")

    def __repr__(self) -> str:
        return f"fifo.FOA({self._m!r}, n={len(self)})"
