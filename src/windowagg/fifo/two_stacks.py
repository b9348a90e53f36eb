"""TwoStacks: a queue made of two stacks, each entry carrying its partial aggregate.

=================  ==========================================================
ordering           FIFO (in-order)
operator needs     monoid (:mod:`windowagg.monoids.base`); neither commutative
                   nor invertible
insert             O(1) worst case: at most 1 combine
evict              amortized O(1); worst case O(n): a *flip* costs n - 1 combines
query              O(1) worst case: at most 1 combine
bulk_evict(k)      O(k) list slicing plus, if k reaches into the back stack, a flip
                   of the survivors: O(k + n) worst case, amortized O(1) per entry
space              2n references (a value and an aggregate per entry)
paper              Tangwongsan, Hirzel, Schneider, DEBS 2017, Fig. 1 (after Stack
                   Overflow answers by J. Skeet and adamax)
=================  ==========================================================

Front stack ``F`` (oldest on top) and back stack ``B`` (youngest on top) each hold
``(val, agg)`` pairs in two parallel Python lists. ``agg`` of an entry aggregates it and
everything below it *in window order*: ``val ⊗ below`` in ``F``, ``below ⊗ val`` in
``B``. ``query = Σ_F ⊗ Σ_B``. When ``F`` runs empty an eviction *flips* ``B`` onto ``F``,
re-aggregating every entry: that single eviction costs ``n - 1`` combines, which is the
latency spike :class:`~windowagg.fifo.DABA` removes.

A flip computes all its aggregates before it changes anything, so a ``combine`` that
raises leaves the window unchanged.
"""

from __future__ import annotations

from collections.abc import Iterator
from itertools import accumulate, chain, islice
from typing import Any

from windowagg.fifo._common import Slack, check_count, close, empty_error, flip_op, invariant
from windowagg.fifo.base import _FifoBase
from windowagg.monoids.base import In, Monoid, Out, P

__all__ = ["TwoStacks"]

_WHO = "TwoStacks"


class TwoStacks(_FifoBase[In, P, Out]):
    """Amortized O(1) FIFO aggregator over any monoid (the paper's Two-Stacks).

    The fact card (ordering, operator needs, costs, space, paper) opens the
    module docstring: ``help(windowagg.fifo.two_stacks)``.

    Examples
    --------
    The flip is the latency spike: one eviction re-aggregates the whole back stack.

    >>> from windowagg.monoids import Concat, Counting
    >>> m = Counting(Concat())
    >>> w = TwoStacks(m)
    >>> for x in "abcd": w.insert(x)
    >>> m.reset(); w.evict(); m.combines  # flip of 4 entries: 3 combines
    3
    >>> w.insert("e"); w.query()
    ('b', 'c', 'd', 'e')
    """

    __slots__ = ("_ba", "_bv", "_fa", "_flip_op", "_fv")
    _who = _WHO

    def __init__(self, monoid: Monoid[In, P, Out]) -> None:
        super().__init__(monoid)
        self._flip_op = flip_op(monoid, self._combine)
        self._fv: list[Any] = []  # front values, oldest last
        self._fa: list[Any] = []  # front aggregates: fa[i] = fv[i] ⊗ fv[i-1] ⊗ ... ⊗ fv[0]
        self._bv: list[Any] = []  # back values, youngest last
        self._ba: list[Any] = []  # back aggregates: ba[i] = bv[0] ⊗ ... ⊗ bv[i]

    def insert(self, v: In) -> None:
        """Push ``lift(v)`` on the back stack. O(1) amortized (list append), 1 combine.

        >>> from windowagg.monoids import Sum
        >>> w = TwoStacks(Sum()); w.insert(3); w.insert(4); w.query()
        7
        """
        lift = self._lift
        p = v if lift is None else lift(v)
        ba = self._ba
        ba.append(self._combine(ba[-1], p) if ba else p)
        self._bv.append(p)

    def _flip(self) -> None:
        """Move the back stack onto the (empty) front stack: O(n), n - 1 combines.

        Run by :func:`itertools.accumulate` from the young end: ``acc = older ⊗ acc``.
        """
        bv = self._bv
        aggs = list(accumulate(reversed(bv), self._flip_op))  # a raising combine: no change
        self._fv.extend(reversed(bv))
        self._fa.extend(aggs)
        self._bv = []
        self._ba = []

    def evict(self) -> None:
        """Pop the oldest entry. Amortized O(1); a flip costs n - 1 combines.

        Raises :class:`~windowagg.errors.EmptyWindowError` when the window is empty.

        >>> from windowagg.monoids import Sum
        >>> w = TwoStacks(Sum()); w.insert(3); w.insert(4); w.evict(); w.query()
        4
        """
        fa = self._fa
        if not fa:
            if not self._bv:
                raise empty_error(_WHO, "evict()")
            self._flip()
        fa.pop()
        self._fv.pop()

    def bulk_evict(self, count: int) -> None:
        """Remove the ``count`` oldest entries.

        O(count) without combines while they all sit in the front stack; otherwise the
        front stack is dropped, the oldest back entries are discarded and the survivors
        flipped (``survivors - 1`` combines). A bad count raises and changes nothing.

        >>> from windowagg.monoids import Sum
        >>> w = TwoStacks(Sum())
        >>> for x in range(6): w.insert(x)
        >>> w.bulk_evict(4); w.query(), len(w)
        (9, 2)
        """
        nf = len(self._fv)
        k = check_count(count, nf + len(self._bv), _WHO)
        if k == 0:
            return
        if k <= nf:
            del self._fv[nf - k :]
            del self._fa[nf - k :]
            return
        survivors = self._bv[k - nf :]
        aggs = list(accumulate(reversed(survivors), self._flip_op))  # before any change
        self._fv[:] = survivors[::-1]
        self._fa[:] = aggs
        self._bv = []
        self._ba = []

    def query(self) -> Out:
        """``lower(Σ_F ⊗ Σ_B)``. O(1) worst case, at most 1 combine.

        >>> from windowagg.monoids import Concat
        >>> TwoStacks(Concat()).query()
        ()
        """
        fa, ba = self._fa, self._ba
        lower = self._lower
        if fa:
            agg = self._combine(fa[-1], ba[-1]) if ba else fa[-1]
        else:
            agg = ba[-1] if ba else self._identity
        res: Out = agg if lower is None else lower(agg)
        return res

    def oldest_partial(self) -> P:
        """The oldest partial (top of ``F``, else bottom of ``B``). O(1). EmptyWindowError.

        >>> from windowagg.monoids import Sum
        >>> w = TwoStacks(Sum()); w.insert(1); w.insert(2)
        >>> w.oldest_partial()  # no flip yet: the bottom of the back stack
        1
        """
        if self._fv:
            res: P = self._fv[-1]
            return res
        if self._bv:
            res = self._bv[0]
            return res
        raise empty_error(_WHO, "oldest_partial()")

    def youngest_partial(self) -> P:
        """The youngest partial (top of ``B``, else bottom of ``F``). O(1). EmptyWindowError.

        >>> from windowagg.monoids import Max
        >>> w = TwoStacks(Max()); w.insert(5); w.insert(4); w.evict()
        >>> w.youngest_partial()  # the flip emptied the back stack: the bottom of the front stack
        4
        """
        if self._bv:
            res: P = self._bv[-1]
            return res
        if self._fv:
            res = self._fv[0]
            return res
        raise empty_error(_WHO, "youngest_partial()")

    def __len__(self) -> int:
        """Number of entries, ``|F| + |B|``. O(1).

        >>> from windowagg.monoids import Sum
        >>> w = TwoStacks(Sum())
        >>> for x in range(3): w.insert(x)
        >>> w.evict(); w.insert(9); len(w)  # two in the front stack, one in the back
        3
        """
        return len(self._fv) + len(self._bv)

    def __iter__(self) -> Iterator[P]:
        """Partials oldest to youngest (a snapshot): ``F`` from its top, then ``B``. O(n).

        >>> from windowagg.monoids import Concat
        >>> w = TwoStacks(Concat())
        >>> for x in "abc": w.insert(x)
        >>> w.evict(); w.insert("d"); list(w)
        [('b',), ('c',), ('d',)]
        """
        return iter(self._fv[::-1] + self._bv)

    def _head(self, k: int) -> list[Any]:
        """The *k* oldest partials. O(k)."""
        return list(islice(chain(reversed(self._fv), self._bv), k))

    def _check(self) -> None:
        """O(n): list lengths match and every stored aggregate equals its fold."""
        fv, fa, bv, ba = self._fv, self._fa, self._bv, self._ba
        invariant(len(fv) == len(fa), _WHO, f"front has {len(fv)} values, {len(fa)} aggs")
        invariant(len(bv) == len(ba), _WHO, f"back has {len(bv)} values, {len(ba)} aggs")
        combine = self._combine
        slack = Slack([*fv, *bv])  # stored aggregates may be grouped otherwise
        acc = self._identity
        for i, p in enumerate(fv):
            acc = combine(p, acc)
            invariant(
                close(fa[i], acc, slack), _WHO, f"front agg at depth {i}: {fa[i]!r} != {acc!r}"
            )
        acc = self._identity
        for i, p in enumerate(bv):
            acc = combine(acc, p)
            invariant(
                close(ba[i], acc, slack), _WHO, f"back agg at depth {i}: {ba[i]!r} != {acc!r}"
            )
