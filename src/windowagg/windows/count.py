"""CountWindows: the last n events in event-time order, emitted every ``every`` arrivals.

=================  ==========================================================================
ordering           out-of-order (events kept in (event time, arrival) order)
operator needs     monoid (associative, identity); not commutative, no inverse
window             the n accepted events with the largest ``(t, arrival number)``
insert             O(log d) amortized with FiBA (d = out-of-order distance) + at most one
                   eviction of the oldest entry (O(1) amortized with FiBA's finger); an event
                   older than the oldest of a full window costs O(1) and is not stored
emission           every ``every`` accepted events: ``query()`` (O(1) with FiBA)
space              O(n) (exactly the window: older events can never re-enter it)
paper              count windows over out-of-order streams via FiBA, Tangwongsan et al. 2019
=================  ==========================================================================

Definition: after each accepted event the window holds the ``n`` youngest accepted events,
where "younger" means a larger timestamp, and among equal timestamps a later arrival. An
out-of-order event enters the window only if it is younger than the current oldest of a
full window (which it then pushes out); otherwise it is accepted but not stored (counted in
``counters["superseded"]``). Because the set only ever loses its oldest events, the
window never needs more than ``n`` entries, and the ``n``-th youngest timestamp is simply
``oldest()``: no order-statistic search is needed.

Examples
--------
>>> from windowagg.monoids import Concat
>>> w = CountWindows(Concat(), 3, aggregator="recalc")
>>> for t, v in [(1, "a"), (5, "e"), (3, "c")]: _ = w.insert(t, v)
>>> w.insert(4, "d")           # pushes out a, the oldest
[WindowResult(start=3, end=5, value=('c', 'd', 'e'), count=3)]
>>> w.insert(2, "b"), w.counters["superseded"]    # older than every event in the window
([WindowResult(start=3, end=5, value=('c', 'd', 'e'), count=3)], 1)
"""

from __future__ import annotations

from typing import Any

from windowagg import codec
from windowagg.errors import ArgumentError, InvariantError
from windowagg.monoids.base import In, Monoid, Out, P
from windowagg.windows._common import AggregatorSpec, WindowResult
from windowagg.windows._event_order import _EventOrderWindows

__all__ = ["CountWindows"]


class CountWindows(_EventOrderWindows[In, P, Out]):
    """The last ``n`` events in event-time order over any out-of-order aggregator.

    Parameters
    ----------
    monoid : Monoid
        Any windowagg monoid.
    n : int
        Window length in events (>= 1).
    every : int
        Emit after every ``every``-th accepted event (arrival count), default 1.
    max_out_of_orderness : duration, optional
        If given, ``watermark = max t - max_out_of_orderness`` and events with
        ``t < watermark - allowed_lateness`` are late (policy ``late``); if None (default)
        no event is late.
    allowed_lateness, late, aggregator, bad_value
        As for :class:`~windowagg.windows.SlidingWindows`.

    Examples
    --------
    >>> from windowagg.monoids import Sum
    >>> w = CountWindows(Sum(), 2, every=2, aggregator="recalc")
    >>> w.insert_many([(1, 1), (2, 10), (3, 100), (0, 1000)])
    [WindowResult(start=1, end=2, value=11, count=2), WindowResult(start=2, end=3, value=110, count=2)]
    """

    def __init__(
        self,
        monoid: Monoid[In, P, Out],
        n: int,
        every: int = 1,
        *,
        max_out_of_orderness: Any = None,
        allowed_lateness: Any = 0,
        late: str = "drop",
        aggregator: AggregatorSpec = "fiba",
        bad_value: str = "side",
    ) -> None:
        for name, x in (("n", n), ("every", every)):
            if isinstance(x, bool) or not isinstance(x, int) or x < 1:
                raise ArgumentError(f"CountWindows {name} must be an int >= 1; got {x!r}")
        super().__init__(
            monoid,
            max_out_of_orderness=max_out_of_orderness,
            allowed_lateness=allowed_lateness,
            late=late,
            aggregator=aggregator,
            bad_value=bad_value,
        )
        self._n = n
        self._every = every
        self._since = 0
        self.counters["superseded"] = 0

    @property
    def n(self) -> int:
        """The window length in events.

        >>> from windowagg.monoids import Sum
        >>> CountWindows(Sum(), 5).n
        5
        """
        return self._n

    def _after_insert(self, key: tuple[Any, int], p: Any, out: list[WindowResult]) -> None:
        agg = self._agg
        if len(agg) >= self._n and key < agg.oldest():
            self.counters["superseded"] += 1
        else:
            agg.insert(key, (1, p))
            if len(agg) > self._n:
                agg.evict(agg.oldest())
        self._since += 1
        if self._since >= self._every:
            self._since = 0
            self._emit(out)

    _CONFIG_KEYS = ("n", "every")

    def _config(self) -> tuple[Any, ...]:
        return (self._n, self._every)

    def _extra_state(self) -> tuple[Any, ...]:
        return (self._since,)

    @classmethod
    def from_bytes(
        cls, data: bytes, monoid: Monoid[In, P, Out], *, aggregator: AggregatorSpec = "fiba"
    ) -> CountWindows[In, P, Out]:
        """Rebuild from :meth:`to_bytes` output; O(n) with FiBA's sorted build.

        >>> from windowagg.monoids import Sum
        >>> w = CountWindows(Sum(), 2, aggregator="recalc"); _ = w.insert_many([(1, 1), (2, 2)])
        >>> w2 = CountWindows.from_bytes(w.to_bytes(), Sum(), aggregator="recalc")
        >>> w2.insert(3, 3) == w.insert(3, 3)
        True
        """
        with codec.decoding(f"{cls.__name__}.from_bytes"):
            state = cls._load_state(data, monoid, 6)
            cfg = state["config"]
            w = cls(
                monoid,
                cfg["n"],
                cfg["every"],
                max_out_of_orderness=cfg["max_out_of_orderness"],
                allowed_lateness=cfg["allowed_lateness"],
                late=cfg["late"],
                aggregator=aggregator,
                bad_value=cfg["bad_value"],
            )
            (w._since,) = w._restore(state)
            return w

    def _check(self) -> None:
        """O(n): the base invariants and at most ``n`` entries."""
        super()._check()
        if len(self._agg) > self._n:
            raise InvariantError(f"CountWindows holds {len(self._agg)} entries > n = {self._n}")

    def __repr__(self) -> str:
        return f"CountWindows({self._m!r}, n={self._n}, every={self._every}, len={len(self)})"
