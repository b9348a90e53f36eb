"""SessionWindows: runs of events at most ``gap`` apart, an adapter over the engine.

=================  ==========================================================================
ordering           out-of-order (event time; watermark = newest time - max_out_of_orderness)
operator needs     monoid (associative, identity); not commutative, no inverse
windows            the engine's sessions: a run where each event is at most ``gap`` after the
                   previous; ``start`` = its first event, ``end`` = its last event + gap;
                   emitted when the watermark reaches ``end``; a late event that extends or
                   bridges emitted sessions emits the merged session with a revision one more
                   than theirs (it supersedes them)
engine             :class:`~windowagg.windows.engine.KeyStream` (event log), see
                   :mod:`windowagg.windows.adapter`
insert             O(1) while buffered; else one engine micro-batch
=================  ==========================================================================
"""

from __future__ import annotations

from typing import Any

from windowagg.monoids.base import In, Monoid, Out, P
from windowagg.windows.adapter import EngineWindows, _Times

__all__ = ["SessionWindows"]


class SessionWindows(EngineWindows[In, P, Out]):
    """Session windows: runs of events at most ``gap`` apart.

    Parameters
    ----------
    monoid : Monoid
        Any windowagg monoid over numbers.
    gap : int or datetime.timedelta
        The largest distance between two events of one session.
    max_out_of_orderness, allowed_lateness, late, bad_value
        As for :class:`~windowagg.windows.SlidingWindows`.

    Examples
    --------
    >>> from windowagg.monoids import Sum
    >>> w = SessionWindows(Sum(), 5, allowed_lateness=20)
    >>> w.insert_many([(1, 1), (3, 2), (12, 4)])
    [WindowResult(start=1, end=8, value=3.0, count=2)]
    >>> w.insert(7, 8)               # late but allowed: bridges [1, 8) and [12, 17)
    []
    >>> w.close()                    # the merged session supersedes [1, 8)
    [WindowResult(start=1, end=17, value=15.0, count=4, revision=1, id=1)]
    """

    _kind = "session"

    def __init__(
        self,
        monoid: Monoid[In, P, Out],
        gap: Any,
        *,
        max_out_of_orderness: Any = 0,
        allowed_lateness: Any = 0,
        late: str = "side",
        bad_value: str = "side",
    ) -> None:
        times = _Times(
            {
                "gap": gap,
                "max_out_of_orderness": max_out_of_orderness,
                "allowed_lateness": allowed_lateness,
            }
        )
        self._gap_d = gap
        super().__init__(
            monoid,
            [{"gap": times.duration(gap, "gap")}],
            times=times,
            origin=0,
            max_out_of_orderness=max_out_of_orderness,
            allowed_lateness=allowed_lateness,
            late=late,
            bad_value=bad_value,
        )

    @property
    def gap(self) -> Any:
        """The session gap, as given. O(1)."""
        return self._gap_d

    @classmethod
    def from_bytes(
        cls, data: bytes, monoid: Monoid[In, P, Out], *args: Any, **kwargs: Any
    ) -> SessionWindows[In, P, Out]:
        """The window :meth:`to_bytes` wrote; pass the monoid and the same configuration.
        O(stored)."""
        w = cls(monoid, *args, **kwargs)
        w._restore(data)
        return w

    def __repr__(self) -> str:
        return f"SessionWindows(gap={self._gap_d!r}, stored={len(self)})"
