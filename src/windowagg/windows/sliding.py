"""SlidingWindows: tumbling, hopping and per-event time windows, an adapter over the engine.

=================  ==========================================================================
ordering           out-of-order (event time; watermark = newest time - max_out_of_orderness)
operator needs     monoid (associative, identity); not commutative, no inverse
windows            ``[start, end)``, ``start = origin + k*slide``, ``end = start + size``
                   (Spark's ``F.window``); tumbling when slide == size, gaps when slide > size;
                   ``slide=None``: per-event windows ``(t - size, t]``
engine             :class:`~windowagg.windows.engine.KeyStream` (a segment tree of pane
                   partials for hopping windows of monoids, the event log otherwise):
                   see :mod:`windowagg.windows.adapter` and ``docs/windows.md``
insert             O(1) while the watermark closes nothing; else one engine micro-batch
                   (panes: O(m log m + (q + r) log P); event log: O(m log n + n))
space              panes: O(size / gcd(size, slide)) partials; event log: the events the
                   windows still to be emitted or revised can hold
=================  ==========================================================================

Examples
--------
A 10-unit window sliding every 5, watermark = newest time seen:

>>> from windowagg.monoids import Sum
>>> w = SlidingWindows(Sum(), 10, 5)
>>> w.insert(6, 10), w.insert(7, 20)
([], [])
>>> w.insert(12, 5)          # watermark 12 closes [-5, 5) (empty: not emitted) and [0, 10)
[WindowResult(start=0, end=10, value=30.0, count=2)]
>>> w.insert(3, 1)           # 3 < lateness bound 12: late, a reject with the reason
[]
>>> w.late_count, w.rejected
(1, [Rejected(t=3, value=1, reason='late: 3 < lateness bound 12')])
>>> w.close()
[WindowResult(start=5, end=15, value=35.0, count=3), WindowResult(start=10, end=20, value=5.0, count=1)]
"""

from __future__ import annotations

from typing import Any

from windowagg.errors import ArgumentError
from windowagg.monoids.base import In, Monoid, Out, P
from windowagg.windows.adapter import EngineWindows, _Times

__all__ = ["SlidingWindows"]


def removed(aggregator: Any, panes: Any) -> None:
    """``ArgumentError`` for the options of the object API's own engine (gone)."""
    if aggregator is not None or panes is not None:
        raise ArgumentError(
            "aggregator= and panes= belonged to the object API's own FiBA engine, which is "
            "gone: the windows run on the windows engine, which keeps pane partials for "
            "hopping windows of monoids by itself (docs/windows.md); drop the argument"
        )


class SlidingWindows(EngineWindows[In, P, Out]):
    """Time windows ``[origin + k*slide, origin + k*slide + size)``, or per-event windows.

    Parameters
    ----------
    monoid : Monoid
        Any windowagg monoid over numbers (values are float64 in the engine).
    size : int or datetime.timedelta
        Window length (ints: times are ints; timedeltas: times are datetimes).
    slide : same type as size, optional
        Distance between window starts: ``slide == size`` is tumbling, ``slide > size``
        hopping with gaps (a time in a gap is a reject ``in no window: ...``). ``None``:
        one window ``(t - size, t]`` per accepted event.
    origin : int, timedelta or datetime
        Alignment of window starts (Spark's ``startTime``): an offset from the Unix epoch,
        or a datetime.
    max_out_of_orderness : duration
        ``watermark = newest accepted time - max_out_of_orderness``.
    allowed_lateness : duration
        An event is late when ``t < watermark - allowed_lateness``; a late-but-allowed
        event changes the windows holding it, emitted ones again with ``revision`` + 1.
    late : {"side", "raise", "drop"}
        Late events go to :attr:`rejected` (default), raise
        :class:`~windowagg.errors.LateEventError` (nothing changes), or are only counted.
    bad_value : {"side", "raise", "drop"}
        Values the engine refuses (non-finite, or the monoid's ``lift`` raised): as ``late``.
    emit : {"watermark", "arrival"}
        ``"watermark"`` (default): each window when the watermark reaches its end.
        ``"arrival"`` (per-event windows only): each event's window at once, over the
        events that arrived before it, never revised.
    aggregator, panes
        Gone (the object API's own engine): giving either raises ``ArgumentError``.

    Examples
    --------
    Tumbling windows with a watermark lagging 5 units and 5 more of allowed lateness:

    >>> from windowagg.monoids import Sum
    >>> w = SlidingWindows(Sum(), 10, 10, max_out_of_orderness=5, allowed_lateness=5)
    >>> w.insert(4, 1), w.insert(12, 2), w.insert(3, 3)
    ([], [], [])
    >>> w.insert(16, 4)                      # watermark 11 closes [0, 10)
    [WindowResult(start=0, end=10, value=4.0, count=2)]
    >>> w.insert(7, 5)                       # 7 >= bound 6: [0, 10) is revised
    [WindowResult(start=0, end=10, value=9.0, count=3, revision=1, id=0)]
    >>> w.insert(20, 6), w.insert(2, 7), w.rejected    # bound 10: 2 is late
    ([], [], [Rejected(t=2, value=7, reason='late: 2 < lateness bound 10')])
    >>> w2 = SlidingWindows.from_bytes(w.to_bytes(), Sum(), 10, 10, max_out_of_orderness=5,
    ...                                allowed_lateness=5)
    >>> w2.close() == w.close()
    True
    """

    _kind = "sliding"

    def __init__(
        self,
        monoid: Monoid[In, P, Out],
        size: Any,
        slide: Any = None,
        *,
        origin: Any = 0,
        max_out_of_orderness: Any = 0,
        allowed_lateness: Any = 0,
        late: str = "side",
        bad_value: str = "side",
        emit: str = "watermark",
        aggregator: Any = None,
        panes: Any = None,
    ) -> None:
        removed(aggregator, panes)
        times = _Times(
            {
                "size": size,
                "slide": slide,
                "max_out_of_orderness": max_out_of_orderness,
                "allowed_lateness": allowed_lateness,
                "origin": origin,
            }
        )
        shape = {"size": times.duration(size, "size")}
        if slide is not None:
            shape["slide"] = times.duration(slide, "slide")
        self._size, self._slide = size, slide
        super().__init__(
            monoid,
            [shape],
            times=times,
            origin=origin,
            max_out_of_orderness=max_out_of_orderness,
            allowed_lateness=allowed_lateness,
            late=late,
            bad_value=bad_value,
            emit=emit,
        )

    @property
    def size(self) -> Any:
        """The window length, as given. O(1)."""
        return self._size

    @property
    def slide(self) -> Any:
        """The distance between window starts, as given (None: per-event windows). O(1)."""
        return self._slide

    @classmethod
    def from_bytes(
        cls, data: bytes, monoid: Monoid[In, P, Out], *args: Any, **kwargs: Any
    ) -> SlidingWindows[In, P, Out]:
        """The window :meth:`to_bytes` wrote; pass the monoid and the same configuration
        (``CodecError`` when it differs, or for bytes of another kind). O(stored)."""
        w = cls(monoid, *args, **kwargs)
        w._restore(data)
        return w

    def __repr__(self) -> str:
        return (
            f"SlidingWindows(size={self._size!r}, slide={self._slide!r}, "
            f"watermark={self.watermark!r}, stored={len(self)})"
        )
