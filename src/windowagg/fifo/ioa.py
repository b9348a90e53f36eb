"""IOA: the Imperative Okasaki Aggregator (FOA with hand-coded, in-place laziness).

=================  ==========================================================
ordering           FIFO (in-order)
operator needs     monoid (:mod:`windowagg.monoids.base`); neither commutative
                   nor invertible
insert             O(1) worst case: at most 4 combines
evict              O(1) worst case: at most 3 combines
query              O(1) worst case: at most 1 combine
bulk_evict(k)      O(k) worst case: k evictions and a query (no bulk form in the paper)
space              O(n): one cell object per entry
paper              Tangwongsan, Hirzel, Schneider, DEBS 2017, §3.2
=================  ==========================================================

The same algorithm as :class:`~windowagg.fifo.FOA` (Okasaki's real-time queue with
out-of-band aggregates), written imperatively as in the paper's C++: a list cell is
either *forced* (``val``, ``agg``, ``nxt``) or *delayed*, holding the arguments
``(lft, r, a)`` of a suspended ``rot(lft, r, a)``; forcing overwrites the delayed cell in
place with the head of the rotation, so no separate suspension object exists and every
reference to the cell sees the forced value. Reference counting frees evicted cells one
at a time.

A ``combine`` that raises leaves the window as before: a forced cell is written only
after its combines, and ``insert``/``evict`` put the list pointers back on the way out.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from windowagg.fifo._common import empty_error, invariant
from windowagg.fifo.foa import _OkasakiFifo
from windowagg.monoids.base import In, Out, P

__all__ = ["IOA"]

_WHO = "IOA"


class _Cell:
    """A list cell; delayed while ``delayed`` is true (then ``lft``, ``r``, ``a`` hold the
    suspended rotation's arguments and ``val``/``agg``/``nxt`` are unset)."""

    __slots__ = ("a", "agg", "delayed", "lft", "nxt", "r", "val")

    def __init__(self, val: Any, agg: Any, nxt: _Cell | None) -> None:
        self.val = val
        self.agg = agg
        self.nxt = nxt
        self.delayed = False
        self.lft: _Cell | None = None
        self.r: _Cell | None = None
        self.a: _Cell | None = None


def _delayed(lft: _Cell | None, r: _Cell | None, a: _Cell) -> _Cell:
    c = _Cell(None, None, None)
    c.delayed = True
    c.lft, c.r, c.a = lft, r, a
    return c


def _walk(c: _Cell | None) -> Iterator[Any]:
    """Values oldest first without forcing: a delayed cell stands for lft ++ rev(r) ++ a."""
    while c is not None:
        if c.delayed:
            yield from _walk(c.lft)
            yield from reversed(list(_walk(c.r)))
            yield from _walk(c.a)
            return
        yield c.val
        c = c.nxt


class IOA(_OkasakiFifo[In, P, Out]):
    """Worst-case O(1) FIFO aggregator: Okasaki's queue with in-place forcing.

    The fact card (ordering, operator needs, costs, space, paper) opens the
    module docstring: ``help(windowagg.fifo.ioa)``.

    Examples
    --------
    >>> from windowagg.monoids import Max
    >>> w = IOA(Max())
    >>> for x in (2, 6, 3): w.insert(x)
    >>> w.evict(); w.query(), list(w)
    (6, [6, 3])
    """

    __slots__ = ()
    _who = _WHO
    _values = staticmethod(_walk)
    _f: _Cell | None
    _sched: _Cell | None
    _b: _Cell | None

    def _rot_into(self, c: _Cell, lft: _Cell | None, r: _Cell, a: _Cell | None) -> None:
        """Write the head of ``lft ++ reverse(r) ++ a`` into cell *c*: at most 3 combines."""
        combine = self._combine
        hv = r.val
        ha = hv if a is None else combine(hv, a.agg)
        if lft is None:
            c.val, c.agg, c.nxt = hv, ha, a
        else:
            agg = combine(lft.agg, r.agg)
            if a is not None:
                agg = combine(agg, a.agg)
            c.val, c.agg = lft.val, agg
            c.nxt = _delayed(lft.nxt, r.nxt, _Cell(hv, ha, a))
        c.delayed = False
        c.lft = c.r = c.a = None

    def _force(self, c: _Cell | None) -> _Cell | None:
        if c is not None and c.delayed:
            self._rot_into(c, c.lft, c.r, c.a)  # type: ignore[arg-type]
        return c

    def _makeq(self, f: _Cell | None) -> None:
        sched = self._sched
        if sched is None:
            head = _Cell(None, None, None)
            self._rot_into(head, f, self._b, None)  # type: ignore[arg-type]
            self._f = self._sched = head
            self._b = None
        else:
            self._f = f
            self._sched = self._force(sched.nxt)

    def insert(self, v: In) -> None:
        """Push ``lift(v)`` on the back list. O(1) worst case, at most 4 combines.

        >>> from windowagg.monoids import Sum
        >>> w = IOA(Sum()); w.insert(3); w.insert(4); w.query()
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
        """Drop the oldest entry. O(1) worst case, at most 3 combines.

        Raises :class:`~windowagg.errors.EmptyWindowError` when the window is empty.

        >>> from windowagg.monoids import Sum
        >>> w = IOA(Sum()); w.insert(3); w.insert(4); w.evict(); w.query()
        4
        """
        f = self._f
        if f is None:
            raise empty_error(_WHO, "evict()")
        saved = f, self._sched, self._b  # a raising combine restores them
        self._n -= 1
        try:
            self._makeq(self._force(f.nxt))
        except BaseException:
            self._f, self._sched, self._b = saved
            self._n += 1
            raise

    def query(self) -> Out:
        """``lower(agg(F) ⊗ agg(B))``. O(1) worst case, at most 1 combine.

        >>> from windowagg.monoids import Concat
        >>> IOA(Concat()).query()
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
        invariant(self._f is None or not self._f.delayed, _WHO, "head of F is delayed")
        sched, c, k = self._sched, self._f, 0
        while c is not sched and c is not None and not c.delayed:
            c, k = c.nxt, k + 1
        invariant(c is sched, _WHO, "schedule N is not a forced suffix of F")
        invariant(sched is None or not sched.delayed, _WHO, "schedule head is delayed")
        front_aggs, c = [], self._f
        while c is not None and not c.delayed:
            front_aggs.append(c.agg)
            c = c.nxt
        back_aggs, c = [], self._b
        while c is not None:
            back_aggs.append(c.agg)
            c = c.nxt
        self._check_queue(k, front_aggs, back_aggs)
