"""FOA: the Functional Okasaki Aggregator (an incremental Two-Stacks on lazy lists).

=================  ==========================================================
ordering           FIFO (in-order)
operator needs     monoid (:mod:`windowagg.monoids.base`); neither commutative
                   nor invertible
insert             O(1) worst case: at most 4 combines
evict              O(1) worst case: at most 3 combines
query              O(1) worst case: at most 1 combine
bulk_evict(k)      O(k) worst case: k evictions and a query (no bulk form in the paper)
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
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from windowagg.fifo._common import Slack, close, empty_error, invariant, same
from windowagg.fifo.base import _FifoBase
from windowagg.monoids.base import In, Monoid, Out, P

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


class _OkasakiFifo(_FifoBase[In, P, Out]):
    """Okasaki's real-time queue state ``⟨F, N, B⟩``, shared by :class:`FOA` and ``IOA``.

    ``_f`` is the front list (oldest first), ``_sched`` the schedule ``N`` (a suffix of
    ``F``), ``_b`` the back list (youngest first), ``_n`` the size and ``_last`` the
    youngest partial (``B`` may be empty right after a rotation). The cell types differ
    (immutable cells plus suspensions here, cells forced in place in ``IOA``); each class
    passes its module's ``_walk`` (values of a list, oldest first, forcing nothing) as
    ``_values``.
    """

    __slots__ = ("_b", "_f", "_last", "_n", "_sched")

    if TYPE_CHECKING:  # set by each subclass to its module's _walk

        @staticmethod
        def _values(c: Any) -> Iterator[Any]: ...

    def __init__(self, monoid: Monoid[In, P, Out]) -> None:
        super().__init__(monoid)
        self._f: Any = None
        self._sched: Any = None
        self._b: Any = None
        self._n = 0
        self._last: Any = None

    def oldest_partial(self) -> P:
        """The oldest partial, the head cell of ``F``. O(1). EmptyWindowError when empty.

        >>> from windowagg.monoids import Sum
        >>> w = FOA(Sum())
        >>> for x in (1, 2, 3): w.insert(x)
        >>> w.evict(); w.oldest_partial()
        2
        """
        if self._f is None:
            raise empty_error(self._who, "oldest_partial()")
        res: P = self._f.val
        return res

    def youngest_partial(self) -> P:
        """The youngest partial, kept in ``_last`` (``B`` is empty after a rotation). O(1).

        EmptyWindowError when empty.

        >>> from windowagg.monoids import Sum
        >>> w = FOA(Sum()); w.insert(1); w.insert(2)
        >>> w.youngest_partial()
        2
        """
        if self._f is None:
            raise empty_error(self._who, "youngest_partial()")
        res: P = self._last
        return res

    def __len__(self) -> int:
        """Number of entries. O(1).

        >>> from windowagg.monoids import Sum
        >>> w = FOA(Sum()); w.insert(1); w.insert(2)
        >>> len(w)
        2
        """
        return self._n

    def __iter__(self) -> Iterator[P]:
        """Partials oldest to youngest (a snapshot, forcing nothing). O(n).

        >>> from windowagg.monoids import Sum
        >>> w = FOA(Sum()); w.insert(1); w.insert(2)
        >>> list(w)
        [1, 2]
        """
        values = type(self)._values
        back = list(values(self._b))
        back.reverse()
        return iter(list(values(self._f)) + back)

    def _check_queue(self, k: int, front_aggs: list[Any], back_aggs: list[Any]) -> None:
        """The checks FOA and IOA share, O(n): sizes, ``|N|``, aggregates, the youngest.

        *k* counts the cells of ``F`` before ``N``; *front_aggs* are the ``agg`` of the
        materialised cells of ``F`` (oldest first), *back_aggs* those of ``B`` (youngest
        first). ``F``'s cells hold ``val ⊗ rest of F``, ``B``'s ``older ⊗ val``.
        """
        who = type(self)._who
        values = type(self)._values
        front, back = list(values(self._f)), list(values(self._b))
        nf, nb = len(front), len(back)
        invariant(nf + nb == self._n, who, f"|F| + |B| = {nf + nb} != n = {self._n}")
        invariant(nb <= nf, who, f"|B| = {nb} > |F| = {nf}")
        invariant(k == nb, who, f"|N| = {nf - k} != |F| - |B| = {nf - nb}")
        combine, ident = self._combine, self._identity
        slack = Slack(front + back)  # stored aggregates were built in another grouping
        acc, suffix = ident, [ident] * (nf + 1)
        for i in range(nf - 1, -1, -1):
            acc = combine(front[i], acc)
            suffix[i] = acc
        for i, agg in enumerate(front_aggs):
            invariant(
                close(agg, suffix[i], slack), who, f"front cell {i}: agg {agg!r} != {suffix[i]!r}"
            )
        acc, prefix = ident, []
        for p in reversed(back):
            acc = combine(acc, p)
            prefix.append(acc)
        for j, agg in enumerate(back_aggs):
            invariant(close(agg, prefix[nb - 1 - j], slack), who, f"back cell {j}: agg {agg!r}")
        if self._n:
            invariant(same(self._last, back[0] if back else front[-1]), who, "youngest partial")


class FOA(_OkasakiFifo[In, P, Out]):
    """Worst-case O(1) FIFO aggregator on lazy immutable lists (Okasaki's queue).

    The fact card (ordering, operator needs, costs, space, paper) opens the
    module docstring: ``help(windowagg.fifo.foa)``.

    Examples
    --------
    >>> from windowagg.monoids import Max
    >>> w = FOA(Max())
    >>> for x in (2, 6, 3): w.insert(x)
    >>> w.query(), w.oldest_partial(), w.youngest_partial(), list(w)
    (6, 2, 3, [2, 6, 3])
    """

    __slots__ = ("_rot",)
    _who = _WHO
    _f: _Cell | None
    _sched: _Cell | None
    _b: _Cell | None
    _values = staticmethod(_walk)

    def __init__(self, monoid: Monoid[In, P, Out]) -> None:
        super().__init__(monoid)
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

    def insert(self, v: In) -> None:
        """Cons ``lift(v)`` onto the back list. O(1) worst case, at most 4 combines.

        >>> from windowagg.monoids import Sum
        >>> w = FOA(Sum()); w.insert(3); w.insert(4); w.query()
        7
        """
        lift = self._lift
        p = v if lift is None else lift(v)
        b = self._b
        cell = _Cell(p, p if b is None else self._combine(b.agg, p), b)
        saved = self._f, self._sched, self._last  # a raising combine restores them
        self._b = cell
        self._last = p
        self._n += 1
        try:
            self._makeq(self._f)
        except BaseException:
            self._f, self._sched, self._last = saved
            self._b = b
            self._n -= 1
            raise

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
        saved = f, self._sched, self._b  # a raising combine restores them
        self._n -= 1
        try:
            self._makeq(_tail(f, self._rot))
        except BaseException:
            self._f, self._sched, self._b = saved
            self._n += 1
            raise

    def query(self) -> Out:
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

    def _check(self) -> None:
        """O(n), forcing nothing: Okasaki's size invariant, N a suffix of F, and aggs."""
        # N must be a suffix of F (same cells), reached over materialised cells only
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
        front_aggs, c = [], self._f
        while c is not None:
            front_aggs.append(c.agg)
            t = c.tail
            if isinstance(t, _Lazy):
                if not t.forced:
                    break
                c = t.out
            else:
                c = t
        back_aggs, c = [], self._b
        while c is not None:
            back_aggs.append(c.agg)
            c = c.tail  # type: ignore[assignment]
        self._check_queue(k, front_aggs, back_aggs)
