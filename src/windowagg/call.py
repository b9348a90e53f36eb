"""One reading of a ``window_agg`` call, for every front end.

``windowagg.pandas.window_agg``, ``windowagg.spark.window_agg`` and
``windowagg.spark.stream_window_agg`` take the same arguments (keys, time, aggregations,
the window shape, the lateness settings, the unit of numeric times) and read them here,
once, into a :class:`WindowCall`: the engine's :class:`~windowagg.windows.engine.Shape`,
parsed aggregations (:func:`windowagg.aggs.parse`), lateness in microseconds. A front end
adds only its input and output conversion. A front end over another one hands it the call
already read (``windowagg run`` calls :func:`windowagg.pandas.run_call` or
:func:`windowagg.spark.batch.run_call`), so every call is read once.

================  =========================================================================
shape             ``size`` + ``slide`` (hopping/tumbling), ``size`` alone (one window
                  ``(t - size, t]`` per event), ``rows`` + ``every`` (count windows),
                  ``gap`` (sessions); durations as text (``"10 minutes"``), seconds or
                  timedeltas, resolved to integer microseconds
several sizes     ``size=["5 minutes", "1 hour", "1 day"]`` (a list, with one ``slide`` or
                  none): one row per window end of the largest size, one output column per
                  aggregation and size, ``<alias>_<size>`` (``max_v_5m``, ``max_v_1h``,
                  ``max_v_1d``: :attr:`WindowCall.outputs`); ``window_start`` is the largest
                  size's, each size's window ends at ``window_end``
                  (:mod:`windowagg.windows.engine.sizes`)
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
>>> c = parse_call("k", "t", ["max(v)"], size=["5 min", "1 hour"], slide="5 min")
>>> c.shape.size, c.shape.sizes, [a.alias for a in c.outputs]
(3600000000, (300000000, 3600000000), ['max_v_5m', 'max_v_1h'])
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta
from typing import Any, NamedTuple

from windowagg.aggs import MAX_DURATION, Agg, parse, to_micros
from windowagg.errors import ArgumentError
from windowagg.rejects import check_time_unit
from windowagg.windows.engine import Shape
from windowagg.windows.engine.sizes import sized_aggs

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
    outputs: list[Agg]
    """The output columns: ``aggs``, or with several sizes each aggregation per size
    (:func:`~windowagg.windows.engine.sizes.sized_aggs`)."""


def shape_of(
    size: Any, slide: Any, rows: int | None, every: int, gap: Any, start_time: Any
) -> Shape:
    """The engine's :class:`~windowagg.windows.engine.Shape` from a call's arguments
    (durations as text, seconds or timedeltas; ``size`` may be a list of them, several
    sizes at once). O(1) per size.

    >>> shape_of("10 min", "10 s", None, 1, None, 0).size
    600000000
    >>> shape_of(["1 h", "1 min"], None, None, 1, None, 0).sizes
    (3600000000, 60000000)
    >>> shape_of(["1 h", "1 min"], None, 3, 1, None, 0)
    Traceback (most recent call last):
    ...
    windowagg.errors.ArgumentError: several sizes (size=['1 h', '1 min']) need time windows: give slide (hopping) or nothing (per event), not rows or gap; run count or session windows once per call
    """
    if isinstance(size, list | tuple):
        return _shape_of_sizes(list(size), slide, rows, gap, start_time)
    return Shape(
        size=None if size is None else to_micros(size, "size"),
        slide=None if slide is None else to_micros(slide, "slide"),
        rows=rows,
        every=every,
        gap=None if gap is None else to_micros(gap, "gap"),
        start_time=to_micros(start_time, "start_time"),
    )


def _shape_of_sizes(
    size: list[Any], slide: Any, rows: int | None, gap: Any, start_time: Any
) -> Shape:
    """:func:`shape_of` for a list of sizes; every refusal an ``ArgumentError``. O(sizes)."""
    if rows is not None or gap is not None:
        raise ArgumentError(
            f"several sizes (size={size!r}) need time windows: give slide (hopping) or "
            "nothing (per event), not rows or gap; run count or session windows once per call"
        )
    if not size:
        raise ArgumentError("size=[] gives no window size; give one or more, e.g. ['5 min', '1 h']")
    sizes = tuple(to_micros(s, "size") for s in size)
    if len(set(sizes)) != len(sizes):
        raise ArgumentError(f"size={size!r} repeats a size; give each size once")
    try:
        return Shape(
            size=max(sizes),
            slide=None if slide is None else to_micros(slide, "slide"),
            start_time=to_micros(start_time, "start_time"),
            sizes=sizes,
        )
    except ValueError as e:
        raise ArgumentError(f"size={size!r} with slide={slide!r}: {e}") from None


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
    parsed = parse(aggs)
    if (
        size is None
        and rows is None
        and gap is None
        and all(getattr(a.monoid, "needs_time", False) for a in parsed)
    ):
        # decayed aggregations alone: each key's whole history (a per-event window as
        # long as every time's span: windows.engine.assign.HISTORY)
        size = timedelta(microseconds=MAX_DURATION)
    shape = shape_of(size, slide, rows, every, gap, start_time)
    return WindowCall(
        keys=[keys] if isinstance(keys, str) else list(keys),
        time=time,
        aggs=parsed,
        shape=shape,
        lateness=lateness_of(max_out_of_orderness, allowed_lateness),
        time_unit=time_unit,
        outputs=sized_aggs(parsed, shape.sizes) if shape.sizes else parsed,
    )
