"""SharedWindows: several window sizes on one slide, an adapter over the engine.

=================  ==========================================================================
windows            for each size ``s``, the hopping windows ``[origin + k*slide, ... + s)``,
                   exactly those of ``SlidingWindows(monoid, s, slide)``
engine             one :class:`~windowagg.windows.engine.KeyStream` per size (the engine's
                   pane layout for monoids), fed the same micro-batches; one admission
                   (every size's clock is configured alike, so they refuse alike)
emission           per end, sizes ascending
sizes              every size >= slide (a smaller one leaves gaps the others cover: refused)
=================  ==========================================================================

Before the object API ran on the engine, all sizes shared one ``ooo.FiBA`` (one entry per
event, one ``range_query`` per size); the engine keeps one pane tree per size instead,
O(size / gcd(size, slide)) partials each.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from windowagg.errors import ArgumentError, ArgumentTypeError
from windowagg.monoids.base import In, Monoid, Out, P
from windowagg.windows.adapter import EngineWindows, _Times
from windowagg.windows.sliding import removed

__all__ = ["SharedWindows"]


class SharedWindows(EngineWindows[In, P, Out]):
    """Several window sizes over one slide (see the module docstring).

    Parameters
    ----------
    monoid : Monoid
        Any windowagg monoid over numbers.
    sizes : sequence of durations
        The window lengths (distinct, any order; results come sizes ascending).
    slide : duration
        The distance between window starts, shared by every size.
    origin, max_out_of_orderness, allowed_lateness, late, bad_value
        As for :class:`~windowagg.windows.SlidingWindows`.

    Examples
    --------
    >>> from windowagg.monoids import Sum
    >>> w = SharedWindows(Sum(), [10, 30], 10)
    >>> w.insert_many([(5, 1), (15, 2), (25, 4)])[:3]
    [WindowResult(start=0, end=10, value=1.0, count=1), WindowResult(start=-20, end=10, value=1.0, count=1), WindowResult(start=10, end=20, value=2.0, count=1)]
    """

    _kind = "shared"

    def __init__(
        self,
        monoid: Monoid[In, P, Out],
        sizes: Sequence[Any],
        slide: Any = None,
        *,
        origin: Any = 0,
        max_out_of_orderness: Any = 0,
        allowed_lateness: Any = 0,
        late: str = "side",
        bad_value: str = "side",
        aggregator: Any = None,
        panes: Any = None,
    ) -> None:
        removed(aggregator, panes)
        if isinstance(sizes, str | bytes) or not isinstance(sizes, Iterable):
            raise ArgumentTypeError(
                f"SharedWindows sizes must be a list of window sizes, got {sizes!r}; give "
                "e.g. [10, 60] (ints) or [timedelta(minutes=1), timedelta(hours=1)]"
            )
        sizes = tuple(sizes)
        if not sizes or len(set(sizes)) != len(sizes):
            raise ArgumentError(f"SharedWindows needs distinct sizes, got {list(sizes)!r}")
        if slide is None:
            raise ArgumentError("SharedWindows needs a slide (every size's windows share it)")
        times = _Times(
            {
                "slide": slide,
                "max_out_of_orderness": max_out_of_orderness,
                "allowed_lateness": allowed_lateness,
                "origin": origin,
                **{f"sizes[{i}]": s for i, s in enumerate(sizes)},
            }
        )
        ordered = sorted(sizes, key=lambda s: times.duration(s, "size"))
        self._sizes = tuple(ordered)
        self._slide_d = slide
        sl = times.duration(slide, "slide")
        if times.duration(ordered[0], "size") < sl:
            # each size runs its own stream with its own admission: a time in the smaller
            # size's gap would be refused there although a larger size's window holds it
            raise ArgumentError(
                f"SharedWindows needs every size >= the slide {slide!r}, got size "
                f"{ordered[0]!r}: a smaller size leaves gaps between its windows that the "
                "other sizes cover; use windowagg.pandas.window_agg(size=[...]) for such "
                "sizes, or one SlidingWindows per size"
            )
        super().__init__(
            monoid,
            [{"size": times.duration(s, "size"), "slide": sl} for s in ordered],
            times=times,
            origin=origin,
            max_out_of_orderness=max_out_of_orderness,
            allowed_lateness=allowed_lateness,
            late=late,
            bad_value=bad_value,
        )

    @property
    def sizes(self) -> tuple[Any, ...]:
        """The window lengths, ascending. O(1)."""
        return self._sizes

    @property
    def slide(self) -> Any:
        """The shared slide. O(1)."""
        return self._slide_d

    @classmethod
    def from_bytes(
        cls, data: bytes, monoid: Monoid[In, P, Out], *args: Any, **kwargs: Any
    ) -> SharedWindows[In, P, Out]:
        """The window :meth:`to_bytes` wrote; pass the monoid and the same configuration.
        O(stored)."""
        w = cls(monoid, *args, **kwargs)
        w._restore(data)
        return w

    def __repr__(self) -> str:
        return f"SharedWindows(sizes={self._sizes!r}, slide={self._slide_d!r}, stored={len(self)})"
