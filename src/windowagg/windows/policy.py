"""PolicyWindows: a user window slide policy (MTA's WSP) over an out-of-order aggregator.

=================  ==========================================================================
ordering           out-of-order (events kept in (event time, arrival) order)
operator needs     monoid (associative, identity); not commutative, no inverse
policy             ``wsp(total, prefix) -> bool`` over the user monoid's *partials*: after
                   each insertion, evict the longest non-empty prefix P (oldest events first)
                   with ``wsp(total, agg(P))``, ``total`` the aggregate after the insertion;
                   the policy must be prefix-monotone (MTA §4.1.3; guide C2)
insert             O(log d) amortized with FiBA + enforcement: one ``query()`` (O(1) FiBA),
                   then per evicted event one peek at the oldest entry, one combine, one
                   policy call and one ``evict`` of the oldest (O(1) amortized with FiBA's
                   finger), plus one more peek/combine/call for the first kept event:
                   O(k + 1) for k evictions, i.e. amortized O(1) per event over a stream
emission           per accepted event, the window after enforcement (nothing when empty)
space              O(events in the window)
paper              Monoid Tree Aggregator (MTA) WSPs; FiBA for the out-of-order store
=================  ==========================================================================

Any callable ``(total, prefix) -> bool`` is a policy, including the built-ins of
:mod:`windowagg.fifo.wsp` (``CountWindow``, ``TimeWindow``). Note that an out-of-order
event inserted *into the middle* of the window changes which prefixes exist; the rule
above is applied to the window as it is after the insertion (so a late event older than
everything kept may be evicted at once).

Examples
--------
Keep the newest suffix whose values sum to at most 10 (MTA's running example), report Max:

>>> from windowagg.monoids import Composite, Last, Max, Sum
>>> m = Composite(Max(), Sum(), Last())          # partials (max, sum, last)
>>> def wsp(total, prefix):                      # the suffix from prefix's last value on
...     return total[1] - prefix[1] + prefix[2] > 10      # would still sum to more than 10
>>> w = PolicyWindows(m, wsp, lift=lambda v: (v, v, v), aggregator="recalc")
>>> for t, v in [(1, 2), (2, 2), (3, 3), (4, 3)]: _ = w.insert(t, v)
>>> w.insert(5, 4)                               # evicts the two 2s: 3 + 3 + 4 <= 10
[WindowResult(start=3, end=5, value=(4, 10, 4), count=3)]
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from windowagg import codec
from windowagg.errors import ArgumentTypeError
from windowagg.monoids.base import Monoid, Out, P
from windowagg.windows._common import AggregatorSpec, WindowResult
from windowagg.windows._event_order import _EventOrderWindows

__all__ = ["PolicyWindows"]


class _Lifted:
    """``monoid`` with ``lift`` replaced by ``lift_fn(x)`` then the monoid's own lift."""

    __slots__ = ("_inner", "_lift", "combine", "identity", "lower", "name")

    def __init__(self, inner: Monoid[Any, Any, Any], lift_fn: Callable[[Any], Any]) -> None:
        self._inner = inner
        self._lift = lift_fn
        self.identity = inner.identity
        self.combine = inner.combine
        self.lower = inner.lower
        self.name = getattr(inner, "name", type(inner).__name__)

    def lift(self, x: Any) -> Any:
        return self._inner.lift(self._lift(x))


class PolicyWindows(_EventOrderWindows[Any, P, Out]):
    """Windows cut by a prefix-monotone slide policy ``wsp(total, prefix)``.

    Parameters
    ----------
    monoid : Monoid
        Any windowagg monoid; the policy reads its partial aggregates.
    wsp : callable
        ``wsp(total, prefix) -> bool``, prefix-monotone (if it holds for a prefix it holds
        for every shorter non-empty prefix); non-monotone policies give
        implementation-defined evictions.
    lift : callable, optional
        Applied to each value before ``monoid.lift`` (e.g. to add a timestamp dimension).
    max_out_of_orderness, allowed_lateness, late, aggregator, bad_value
        As for :class:`~windowagg.windows.CountWindows`.

    Examples
    --------
    A time policy in event time: keep events with ``t > newest - 10`` (a Max dimension
    carries the timestamp, as in MTA's Listing 1):

    >>> from windowagg.monoids import Composite, Max, Count
    >>> w = PolicyWindows(Composite(Max(), Count()),
    ...                   lambda total, prefix: total[0] - prefix[0] >= 10, aggregator="recalc")
    >>> _ = w.insert_many([(t, (t, None)) for t in (1, 4, 9)])
    >>> w.insert(12, (12, None))
    [WindowResult(start=4, end=12, value=(12, 3), count=3)]
    """

    def __init__(
        self,
        monoid: Monoid[Any, P, Out],
        wsp: Callable[[Any, Any], bool],
        *,
        lift: Callable[[Any], Any] | None = None,
        max_out_of_orderness: Any = None,
        allowed_lateness: Any = 0,
        late: str = "drop",
        aggregator: AggregatorSpec = "fiba",
        bad_value: str = "side",
    ) -> None:
        if not callable(wsp):
            raise ArgumentTypeError(f"wsp must be a callable (total, prefix) -> bool; got {wsp!r}")
        if lift is not None:
            monoid = _Lifted(monoid, lift)
        super().__init__(
            monoid,
            max_out_of_orderness=max_out_of_orderness,
            allowed_lateness=allowed_lateness,
            late=late,
            aggregator=aggregator,
            bad_value=bad_value,
        )
        self._wsp = wsp
        self._lift_fn = lift
        self.counters["evicted"] = 0

    def _after_insert(self, key: tuple[Any, int], p: Any, out: list[WindowResult]) -> None:
        agg = self._agg
        agg.insert(key, (1, p))
        self._added.append(key)  # the call's journal (_EventOrderWindows._undo)
        self._enforce()
        self._emit(out)

    def _enforce(self) -> None:
        """Evict the longest prefix the policy selects (generic loop, guide C2)."""
        agg = self._agg
        wsp = self._wsp
        combine = self._m.combine
        total = agg.query()[1]
        acc = self._m.identity
        evicted = 0
        while True:
            k0 = agg.oldest()
            if k0 is None:
                break
            entry = agg.range_query(k0, k0)
            cand = combine(acc, entry[1])
            if not wsp(total, cand):
                break
            acc = cand
            agg.evict(k0)
            self._gone.append((k0, entry))
            evicted += 1
        self.counters["evicted"] += evicted

    @classmethod
    def from_bytes(
        cls,
        data: bytes,
        monoid: Monoid[Any, P, Out],
        wsp: Callable[[Any, Any], bool],
        *,
        lift: Callable[[Any], Any] | None = None,
        aggregator: AggregatorSpec = "fiba",
    ) -> PolicyWindows[P, Out]:
        """Rebuild from :meth:`to_bytes` output (pass the same monoid, policy and lift). O(n).

        >>> from windowagg.monoids import Sum
        >>> wsp = lambda total, prefix: total - prefix <= 5
        >>> w = PolicyWindows(Sum(), wsp, aggregator="recalc"); _ = w.insert_many([(1, 3), (2, 2)])
        >>> w2 = PolicyWindows.from_bytes(w.to_bytes(), Sum(), wsp, aggregator="recalc")
        >>> w2.insert(3, 4) == w.insert(3, 4)
        True
        """
        with codec.decoding(f"{cls.__name__}.from_bytes"):
            state = cls._load_state(data, monoid, 6)
            cfg = state["config"]
            w = cls(
                monoid,
                wsp,
                lift=lift,
                max_out_of_orderness=cfg["max_out_of_orderness"],
                allowed_lateness=cfg["allowed_lateness"],
                late=cfg["late"],
                aggregator=aggregator,
                bad_value=cfg["bad_value"],
            )
            w._restore(state)
            return w

    def __repr__(self) -> str:
        return f"PolicyWindows({self._m!r}, wsp={self._wsp!r}, len={len(self)})"
