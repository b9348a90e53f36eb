"""One reading of a ``window_agg`` call, for every front end.

``windowagg.pandas.window_agg``, ``windowagg.spark.window_agg`` and
``windowagg.spark.stream_window_agg`` take the same arguments (keys, time, aggregations,
the window shape, the lateness settings, the unit of numeric times) and read them here,
once, into a :class:`WindowCall`: the engine's :class:`~windowagg.windows.engine.Shape`,
parsed aggregations (:func:`windowagg.aggs.parse`), lateness in microseconds. A front end
adds only its input and output conversion.

================  =========================================================================
shape             ``size`` + ``slide`` (hopping/tumbling), ``size`` alone (one window
                  ``(t - size, t]`` per event), ``rows`` + ``every`` (count windows),
                  ``gap`` (sessions); durations as text (``"10 minutes"``), seconds or
                  timedeltas, resolved to integer microseconds
lateness          ``None`` when neither ``max_out_of_orderness`` nor ``allowed_lateness``
                  is given: batch judges nothing late; a stream judges with both at 0 (a
                  stream always has a watermark)
errors            :class:`~windowagg.errors.ArgumentError` naming the argument and the value
================  =========================================================================

>>> c = parse_call("k", "t", ["max(v)", "p95(v)"], size="10 min", slide="10 s")
>>> c.keys, [a.alias for a in c.aggs], c.shape.size, c.shape.slide, c.lateness
(['k'], ['max_v', 'p95_v'], 600000000, 10000000, None)
>>> parse_call([], "t", ["count"], rows=3, allowed_lateness="1 min").lateness
(0, 60000000)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

from windowagg.aggs import Agg, parse, to_micros
from windowagg.rejects import check_time_unit
from windowagg.windows.engine import Shape

__all__ = ["WindowCall", "lateness_of", "parse_call", "shape_of"]


class WindowCall(NamedTuple):
    """A ``window_agg`` call as every front end reads it (see the module docstring)."""

    keys: list[str]
    """Grouping columns (``[]`` for one group)."""
    time: str
    """The event-time column."""
    aggs: list[Agg]
    """Parsed aggregations (:func:`windowagg.aggs.parse`)."""
    shape: Shape
    """The windows, in microseconds."""
    lateness: tuple[int, int] | None
    """``(max_out_of_orderness, allowed_lateness)`` in microseconds, or None."""
    time_unit: str
    """The unit of numeric event times (checked)."""


def shape_of(
    size: Any, slide: Any, rows: int | None, every: int, gap: Any, start_time: Any
) -> Shape:
    """The engine's :class:`~windowagg.windows.engine.Shape` from a call's arguments
    (durations as text, seconds or timedeltas). O(1).

    >>> shape_of("10 min", "10 s", None, 1, None, 0).size
    600000000
    """
    return Shape(
        size=None if size is None else to_micros(size, "size"),
        slide=None if slide is None else to_micros(slide, "slide"),
        rows=rows,
        every=every,
        gap=None if gap is None else to_micros(gap, "gap"),
        start_time=to_micros(start_time, "start_time"),
    )


def lateness_of(max_out_of_orderness: Any, allowed_lateness: Any) -> tuple[int, int] | None:
    """``(max_out_of_orderness, allowed_lateness)`` in microseconds, or None when neither
    is given. O(1).

    >>> lateness_of("1 min", None), lateness_of(None, None)
    ((60000000, 0), None)
    """
    if max_out_of_orderness is None and allowed_lateness is None:
        return None
    return (
        to_micros(max_out_of_orderness or 0, "max_out_of_orderness"),
        to_micros(allowed_lateness or 0, "allowed_lateness"),
    )


def parse_call(
    keys: str | Sequence[str],
    time: str,
    aggs: Sequence[str | Agg | tuple[Any, ...]],
    *,
    size: Any = None,
    slide: Any = None,
    rows: int | None = None,
    every: int = 1,
    gap: Any = None,
    start_time: Any = 0,
    time_unit: str = "s",
    max_out_of_orderness: Any = None,
    allowed_lateness: Any = None,
) -> WindowCall:
    """Read one ``window_agg`` call (the arguments every front end shares). O(len(aggs)).

    Raises :class:`~windowagg.errors.ArgumentError` (or ``ValueError`` for an aggregation
    string) naming what is wrong, before any data is read.
    """
    check_time_unit(time_unit)
    return WindowCall(
        keys=[keys] if isinstance(keys, str) else list(keys),
        time=time,
        aggs=parse(aggs),
        shape=shape_of(size, slide, rows, every, gap, start_time),
        lateness=lateness_of(max_out_of_orderness, allowed_lateness),
        time_unit=time_unit,
    )
