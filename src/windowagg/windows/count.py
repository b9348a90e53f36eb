"""CountWindows: the last ``n`` events in (event time, arrival) order, an adapter over the engine.

=================  ==========================================================================
ordering           out-of-order (event time; watermark = newest time - max_out_of_orderness)
operator needs     monoid (associative, identity); not commutative, no inverse
windows            the engine's count windows (``rows=n``, ``every``): window k holds the
                   events ``k*every + every - n .. k*every + every - 1`` of the (time,
                   arrival) order; emitted when the watermark reaches its youngest event
engine             :class:`~windowagg.windows.engine.KeyStream` (event log), see
                   :mod:`windowagg.windows.adapter`
insert             one engine micro-batch per closing point (O(m log m + stored) numpy)
=================  ==========================================================================
"""

from __future__ import annotations

from typing import Any

from windowagg.errors import ArgumentError
from windowagg.monoids.base import In, Monoid, Out, P
from windowagg.windows._common import Rejected
from windowagg.windows.adapter import EngineWindows, _Times
from windowagg.windows.sliding import removed

__all__ = ["CountWindows"]


class CountWindows(EngineWindows[In, P, Out]):
    """The last ``n`` events in (event time, arrival) order, one window every ``every``.

    Parameters
    ----------
    monoid : Monoid
        Any windowagg monoid over numbers.
    n : int
        Window length in events (>= 1).
    every : int
        One window every ``every`` events (1 <= every <= n), default 1.
    max_out_of_orderness, allowed_lateness, late, bad_value
        As for :class:`~windowagg.windows.SlidingWindows` (ints, or timedeltas for
        datetime times; with both 0, the first time decides).
    aggregator
        Gone (the object API's own engine): giving it raises ``ArgumentError``.

    Examples
    --------
    >>> from windowagg.monoids import Sum
    >>> w = CountWindows(Sum(), 2, every=2, allowed_lateness=10)
    >>> w.insert_many([(1, 1), (2, 10), (3, 100)])
    [WindowResult(start=1, end=2, value=11.0, count=2)]
    >>> w.insert(0, 1000)        # late but allowed: shifts every window after it
    [WindowResult(start=0, end=1, value=1001.0, count=2, revision=1, id=0), WindowResult(start=2, end=3, value=110.0, count=2)]
    >>> w.close(), w.rejected    # no event completes a window after 3
    ([], [])
    """

    _kind = "count"

    def __init__(
        self,
        monoid: Monoid[In, P, Out],
        n: int,
        every: int = 1,
        *,
        max_out_of_orderness: Any = 0,
        allowed_lateness: Any = 0,
        late: str = "side",
        bad_value: str = "side",
        aggregator: Any = None,
    ) -> None:
        removed(aggregator, None)
        for name, x in (("n", n), ("every", every)):
            if isinstance(x, bool) or not isinstance(x, int) or x < 1:
                raise ArgumentError(f"CountWindows {name} must be an int >= 1; got {x!r}")
        self._n, self._every = n, every
        times = _Times(
            {"max_out_of_orderness": max_out_of_orderness, "allowed_lateness": allowed_lateness}
        )
        super().__init__(
            monoid,
            [{"rows": n, "every": every}],
            times=times,
            origin=0,
            max_out_of_orderness=max_out_of_orderness,
            allowed_lateness=allowed_lateness,
            late=late,
            bad_value=bad_value,
        )

    @property
    def n(self) -> int:
        """The window length in events. O(1)."""
        return self._n

    @property
    def every(self) -> int:
        """One window every ``every`` events. O(1)."""
        return self._every

    def _close_extra(self) -> None:
        """The last events, which complete no window, are rejects (as in batch): the
        engine's :meth:`~windowagg.windows.engine.KeyStream.tail`."""
        tail = self._streams[0].tail()
        t, values = tail.events.t.tolist(), tail.events.values["value"].tolist()
        for x, v, why in zip(t, values, tail.reasons, strict=True):
            self._counts["unassigned"] += 1
            self.rejected.append(Rejected(self._times.from_engine(x), v, why))

    @classmethod
    def from_bytes(
        cls, data: bytes, monoid: Monoid[In, P, Out], *args: Any, **kwargs: Any
    ) -> CountWindows[In, P, Out]:
        """The window :meth:`to_bytes` wrote; pass the monoid and the same configuration.
        O(stored)."""
        w = cls(monoid, *args, **kwargs)
        w._restore(data)
        return w

    def __repr__(self) -> str:
        return f"CountWindows(n={self._n}, every={self._every}, stored={len(self)})"
