"""SharedWindows: several window sizes over one aggregator, answered by range queries.

=================  ==========================================================================
ordering           out-of-order (event time, watermark, lateness as ``SlidingWindows``)
operator needs     monoid (associative, identity); not commutative, no inverse
windows            for every size s and every end ``e = origin + max(sizes) + j*slide``:
                   ``[e - s, e)``; each size must be a multiple of ``slide`` (then every
                   size's grid is exactly ``SlidingWindows(size, slide, origin)``'s)
insert             one aggregator ``insert`` for all sizes (O(log d) amortized with FiBA)
emission           per closed end with events: one ``bulk_evict`` (keys before the largest
                   window) and one ``range_query`` per size: O(k log n) for k sizes with FiBA
space              O(entries of the largest open window), shared by all sizes
paper              window sharing by range queries: Tangwongsan et al., VLDB 2019, §4
=================  ==========================================================================

Running k separate ``SlidingWindows`` stores every event k times and pays k inserts; here
one tree holds the events of the largest window, and each smaller window is a range query
``[e - s, e)`` over it (mapped onto the inclusive ``range_query(e - s, pred(e))``, or onto
pane indices when timestamps are coarsened; see ``docs/windows.md``).

Examples
--------
>>> from windowagg.monoids import Sum
>>> w = SharedWindows(Sum(), [10, 30], 10, aggregator="recalc")
>>> w.insert_many([(5, 1), (15, 2), (25, 4)])
[WindowResult(start=0, end=10, value=1, count=1), WindowResult(start=-20, end=10, value=1, count=1), WindowResult(start=10, end=20, value=2, count=1), WindowResult(start=-10, end=20, value=3, count=2)]
>>> w.close()[:2]
[WindowResult(start=20, end=30, value=4, count=1), WindowResult(start=0, end=30, value=7, count=3)]
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from windowagg.errors import ArgumentError
from windowagg.monoids.base import In, Monoid, Out, P
from windowagg.windows._common import AggregatorSpec
from windowagg.windows.sliding import _TimeWindows

__all__ = ["SharedWindows"]


class SharedWindows(_TimeWindows[In, P, Out]):
    """Several sliding-window sizes sharing one out-of-order aggregator.

    Parameters are those of :class:`~windowagg.windows.SlidingWindows`, with ``sizes`` (a
    non-empty sequence of distinct window lengths, each a multiple of ``slide``) instead
    of ``size``. ``slide=None`` emits, per accepted event, one result per size for
    ``(t - s, t]``. Results come per end time, sizes ascending; a size whose window is
    empty is not emitted. The lateness bound is that of the *largest* size.

    Examples
    --------
    Per-event emission of a 2- and a 5-unit window (``(t - s, t]``):

    >>> from windowagg.monoids import Max
    >>> w = SharedWindows(Max(), [2, 5], aggregator="recalc")
    >>> w.insert(1, 9), w.insert(4, 3)[0]
    ([WindowResult(start=-1, end=1, value=9, count=1), WindowResult(start=-4, end=1, value=9, count=1)], WindowResult(start=2, end=4, value=3, count=1))
    """

    def __init__(
        self,
        monoid: Monoid[In, P, Out],
        sizes: Sequence[Any],
        slide: Any = None,
        *,
        origin: Any = 0,
        max_out_of_orderness: Any = 0,
        allowed_lateness: Any = 0,
        late: str = "drop",
        aggregator: AggregatorSpec = "fiba",
        panes: bool | None = None,
        bad_value: str = "side",
    ) -> None:
        sizes = tuple(sizes)
        if not sizes:
            raise ArgumentError("SharedWindows needs at least one size")
        if len(set(sizes)) != len(sizes):
            raise ArgumentError(f"SharedWindows sizes must be distinct; got {sizes!r}")
        super().__init__(
            monoid,
            sizes,
            slide,
            origin=origin,
            max_out_of_orderness=max_out_of_orderness,
            allowed_lateness=allowed_lateness,
            late=late,
            aggregator=aggregator,
            panes=panes,
            bad_value=bad_value,
        )
        if slide is not None:
            for s in sizes:
                q = s / slide
                if q != round(q) or s != round(q) * slide:
                    raise ArgumentError(
                        f"SharedWindows: size {s!r} is not a multiple of slide {slide!r}; "
                        "use separate SlidingWindows for unaligned sizes"
                    )

    @property
    def sizes(self) -> tuple[Any, ...]:
        """The window lengths, ascending.

        >>> from windowagg.monoids import Sum
        >>> SharedWindows(Sum(), [30, 10], 10).sizes
        (10, 30)
        """
        return self._sizes

    @property
    def slide(self) -> Any:
        """The slide (None for per-event emission).

        >>> from windowagg.monoids import Sum
        >>> SharedWindows(Sum(), [30, 10], 10).slide
        10
        """
        return self._slide

    @classmethod
    def from_bytes(
        cls,
        data: bytes,
        monoid: Monoid[In, P, Out],
        *,
        aggregator: AggregatorSpec = "fiba",
    ) -> SharedWindows[In, P, Out]:
        """Rebuild from :meth:`to_bytes` output; O(n) with FiBA's sorted build.

        >>> from windowagg.monoids import Sum
        >>> w = SharedWindows(Sum(), [2, 4], 2, aggregator="recalc"); w.insert(1, 5)
        []
        >>> SharedWindows.from_bytes(w.to_bytes(), Sum(), aggregator="recalc").close() == w.close()
        True
        """
        w: SharedWindows[In, P, Out] = cls._from_bytes(
            data, monoid, aggregator, lambda sizes: sizes
        )
        return w

    def __repr__(self) -> str:
        return (
            f"SharedWindows({self._m!r}, sizes={list(self._sizes)!r}, slide={self._slide!r}, "
            f"watermark={self._wm!r}, n={len(self)})"
        )
