"""SubtractOnEvict: keep one running aggregate and take evicted values back out.

=================  ==========================================================
ordering           FIFO (in-order)
operator needs     a **group**: monoid plus ``inverse``; commutativity not needed
insert / evict     O(1) worst case: 1 combine each (evict also 1 ``inverse``)
query              O(1): 0 combines
bulk_evict(k)      O(k) worst case: k combines and k inverses
space              n partials + 1 aggregate
paper              "Subtract on Evict", Tangwongsan, Hirzel, Schneider, DEBS 2017, Fig. 2
=================  ==========================================================

The window is a :class:`collections.deque` of partials (only its ends are touched, which
CPython does in O(1) worst case) and the running aggregate ``agg`` of all of them.
Eviction of the oldest partial ``v`` uses ``agg = inverse(v) ⊗ agg``, which is correct
for non-commutative groups too (the paper writes ``agg ⊗ inverse(v)``, which needs
commutativity). With floating-point sums the running aggregate drifts by rounding;
use an exact group (integers, fractions) or a monoid-only aggregator such as
:class:`~windowagg.fifo.DABA` when that matters.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from windowagg.fifo._common import check_count, empty_error, invariant, same
from windowagg.fifo.base import _DequeFifo
from windowagg.monoids.base import Group, In, Out, P, require_group

__all__ = ["SubtractOnEvict"]

_WHO = "SubtractOnEvict"


class SubtractOnEvict(_DequeFifo[In, P, Out]):
    """Worst-case O(1) FIFO aggregator for groups (monoids with an inverse).

    The fact card (ordering, operator needs, costs, space, paper) opens the
    module docstring: ``help(windowagg.fifo.subtract_on_evict)``.

    Parameters
    ----------
    monoid : Group
        The group to aggregate with. A monoid without ``inverse`` (or with
        ``invertible = False``) raises :class:`~windowagg.errors.MonoidContractError`
        at construction; use :class:`~windowagg.fifo.DABA` or
        :class:`~windowagg.fifo.TwoStacksLite` for those.

    Examples
    --------
    >>> from windowagg.monoids import Max
    >>> SubtractOnEvict(Max())
    Traceback (most recent call last):
    ...
    windowagg.errors.MonoidContractError: SubtractOnEvict needs a group (a monoid with inverse); Max has no usable inverse. Use TwoStacks, DABA or another monoid-only aggregator instead.

    >>> from windowagg.monoids import Sum
    >>> w = SubtractOnEvict(Sum())
    >>> for x in (1, 2, 3): w.insert(x)
    >>> w.query(); w.evict(); w.query(), len(w)
    6
    (5, 2)
    """

    __slots__ = ("_agg", "_inverse")
    _who = _WHO

    if TYPE_CHECKING:  # the inherited property, typed for a group

        @property
        def monoid(self) -> Group[In, P, Out]: ...

    def __init__(self, monoid: Group[In, P, Out]) -> None:
        require_group(monoid, _WHO)  # first: its message names the monoid-only classes
        super().__init__(monoid)
        self._inverse = monoid.inverse  # cached once: every eviction calls it
        self._agg: Any = self._identity

    def insert(self, v: In) -> None:
        """Append ``lift(v)`` as the youngest entry. O(1) worst case, 1 combine.

        >>> from windowagg.monoids import Sum
        >>> w = SubtractOnEvict(Sum()); w.insert(4); w.query()
        4
        """
        lift = self._lift
        p = v if lift is None else lift(v)
        agg = self._combine(self._agg, p)
        self._vals.append(p)
        self._agg = agg

    def evict(self) -> None:
        """Remove the oldest entry. O(1) worst case: 1 inverse, 1 combine.

        Raises :class:`~windowagg.errors.EmptyWindowError` when the window is empty.

        >>> from windowagg.monoids import Sum
        >>> w = SubtractOnEvict(Sum()); w.insert(4); w.insert(5); w.evict(); w.query()
        5
        """
        vals = self._vals
        if not vals:
            raise empty_error(_WHO, "evict()")
        if len(vals) == 1:
            vals.popleft()
            self._agg = self._identity  # exact reset: no rounding residue survives
            return
        agg = self._combine(self._inverse(vals[0]), self._agg)
        vals.popleft()
        self._agg = agg

    def bulk_evict(self, count: int) -> None:
        """Remove the ``count`` oldest entries. O(count) worst case: count combines.

        A bad count raises (``TypeError`` / :class:`~windowagg.errors.EmptyWindowError`)
        and leaves the window unchanged.

        >>> from windowagg.monoids import Sum
        >>> w = SubtractOnEvict(Sum())
        >>> for x in range(5): w.insert(x)
        >>> w.bulk_evict(3); w.query(), len(w)
        (7, 2)
        """
        vals = self._vals
        k = check_count(count, len(vals), _WHO)
        if k == 0:
            return
        if k == len(vals):
            vals.clear()
            self._agg = self._identity
            return
        combine = self._combine
        it = iter(vals)  # fold first, pop after: a raising combine changes nothing
        gone = next(it)
        for _ in range(k - 1):
            gone = combine(gone, next(it))
        agg = combine(self._inverse(gone), self._agg)
        popleft = vals.popleft  # cached: called k times
        for _ in range(k):
            popleft()
        self._agg = agg

    def query(self) -> Out:
        """``lower`` of the running aggregate. O(1), 0 combines.

        >>> from windowagg.monoids import Sum
        >>> SubtractOnEvict(Sum()).query()
        0
        """
        lower = self._lower
        res: Out = self._agg if lower is None else lower(self._agg)
        return res

    def _check(self) -> None:
        """O(n): the running aggregate equals the fold of the stored partials."""
        acc = self._identity
        for p in self._vals:
            acc = self._combine(acc, p)
        invariant(
            same(acc, self._agg),
            _WHO,
            f"running aggregate {self._agg!r} != fold of the {len(self._vals)} partials {acc!r}",
        )
