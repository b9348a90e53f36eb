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
from numbers import Integral
from typing import Any, NamedTuple

from windowagg.aggs import MAX_DURATION, Agg, keyword_builder, parse, to_micros
from windowagg.errors import ArgumentError
from windowagg.rejects import check_time_unit
from windowagg.windows.engine import Shape
from windowagg.windows.engine.sizes import sized_aggs

__all__ = [
    "RESULT_COLUMNS",
    "SPARK_COLUMNS",
    "WindowCall",
    "check_names",
    "lateness_of",
    "parse_call",
    "shape_of",
]


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


def shape_of(size: Any, slide: Any, rows: Any, every: Any, gap: Any, start_time: Any) -> Shape:
    """The engine's :class:`~windowagg.windows.engine.Shape` from a call's arguments
    (durations as text, seconds or timedeltas; ``size`` may be a list of them, several
    sizes at once). Every refusal is an :class:`~windowagg.errors.ArgumentError` naming
    the argument and its value as given. O(1) per size.

    >>> shape_of("10 min", "10 s", None, 1, None, 0).size
    600000000
    >>> shape_of(["1 h", "1 min"], None, None, 1, None, 0).sizes
    (3600000000, 60000000)
    >>> shape_of(["1 h", "1 min"], None, 3, 1, None, 0)
    Traceback (most recent call last):
    ...
    windowagg.errors.ArgumentError: several sizes (size=['1 h', '1 min']) need time windows: give slide (hopping) or nothing (per event), not rows or gap; run count or session windows once per call
    >>> shape_of(-5, None, None, 1, None, 0)
    Traceback (most recent call last):
    ...
    windowagg.errors.ArgumentError: size=-5 is not a positive duration; give a window length such as '10 minutes', 600 (seconds) or a timedelta
    """
    if isinstance(size, list | tuple) and (rows is not None or gap is not None):
        raise ArgumentError(
            f"several sizes (size={size!r}) need time windows: give slide (hopping) or "
            "nothing (per event), not rows or gap; run count or session windows once per call"
        )
    given = {"size": size, "rows": rows, "gap": gap}
    if sum(v is not None for v in given.values()) != 1:
        shown = ", ".join(f"{k}={v!r}" for k, v in given.items())
        raise ArgumentError(
            "give exactly one window shape: size (with slide: hopping; without: per event), "
            f"rows (with every: count windows) or gap (sessions); got {shown}"
        )
    if slide is not None and size is None:
        raise ArgumentError(
            f"slide={slide!r} needs time windows (size); count windows (rows) hop by every, "
            "sessions (gap) take no slide"
        )
    if rows is None and (isinstance(every, bool) or not isinstance(every, Integral) or every != 1):
        raise ArgumentError(
            f"every={every!r} counts events between count windows and needs rows; time "
            "windows hop by slide: drop every"
        )
    start = to_micros(start_time, "start_time")
    slide_us = None if slide is None else _positive(slide, "slide")
    if isinstance(size, list | tuple):
        return _shape_of_sizes(list(size), slide, slide_us, start)
    if rows is not None:
        return Shape.of(rows=_count(rows, "rows"), every=_count(every, "every"), start_time=start)
    if gap is not None:
        return Shape.of(gap=_positive(gap, "gap"), start_time=start)
    return Shape.of(size=_positive(size, "size"), slide=slide_us, start_time=start)


def _positive(d: Any, what: str) -> int:
    """A duration argument in microseconds, ``ArgumentError`` (naming it as given) unless it
    is positive. O(1)."""
    us = to_micros(d, what)
    if us <= 0:
        raise ArgumentError(
            f"{what}={d!r} is not a positive duration; give a window length such as "
            "'10 minutes', 600 (seconds) or a timedelta"
        )
    return us


def _count(n: Any, what: str) -> int:
    """A count argument (``rows``, ``every``): an integer >= 1, not a bool. O(1)."""
    if isinstance(n, bool) or not isinstance(n, Integral) or n < 1:
        raise ArgumentError(
            f"{what}={n!r} is not a whole number of events >= 1; give e.g. {what}=10"
        )
    return int(n)


def _shape_of_sizes(size: list[Any], slide: Any, slide_us: int | None, start: int) -> Shape:
    """:func:`shape_of` for a list of sizes; every refusal an ``ArgumentError``. O(sizes)."""
    if not size:
        raise ArgumentError("size=[] gives no window size; give one or more, e.g. ['5 min', '1 h']")
    sizes = []
    for s in size:
        us = to_micros(s, "size")
        if us <= 0:
            raise ArgumentError(
                f"size={size!r} holds {s!r}, not a positive duration; give window lengths "
                "such as ['5 minutes', '1 hour']"
            )
        sizes.append(us)
    if len(set(sizes)) != len(sizes):
        raise ArgumentError(f"size={size!r} repeats a size; give each size once")
    if slide_us is not None and any((s - max(sizes)) % slide_us for s in sizes):
        raise ArgumentError(
            f"size={size!r} with slide={slide!r}: the sizes must differ by multiples of the "
            "slide (to share one grid of window ends); give sizes that are multiples of the "
            "slide, e.g. ['5 min', '1 h'] every '5 min'"
        )
    try:
        return Shape.of(size=max(sizes), slide=slide_us, start_time=start, sizes=tuple(sizes))
    except ValueError as e:
        raise ArgumentError(f"size={size!r} with slide={slide!r}: {e}") from None


def lateness_of(max_out_of_orderness: Any, allowed_lateness: Any) -> tuple[int, int] | None:
    """``(max_out_of_orderness, allowed_lateness)`` in microseconds, or None when neither
    is given; ``ArgumentError`` (naming the argument as given) for a negative one. O(1).

    >>> lateness_of("1 min", None), lateness_of(None, None)
    ((60000000, 0), None)
    >>> lateness_of(None, -3)
    Traceback (most recent call last):
    ...
    windowagg.errors.ArgumentError: allowed_lateness=-3 is negative; give 0 or a positive duration such as '5 minutes'
    """
    if max_out_of_orderness is None and allowed_lateness is None:
        return None
    out = []
    for what, d in (
        ("max_out_of_orderness", max_out_of_orderness),
        ("allowed_lateness", allowed_lateness),
    ):
        us = 0 if d is None else to_micros(d, what)
        if us < 0:
            raise ArgumentError(
                f"{what}={d!r} is negative; give 0 or a positive duration such as '5 minutes'"
            )
        out.append(us)
    return out[0], out[1]


def parse_call(
    keys: str | Sequence[str],
    time: str,
    aggs: Sequence[str | Agg | tuple[Any, ...]],
    *,
    size: Any = None,
    slide: Any = None,
    rows: Any = None,
    every: Any = 1,
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
    call = WindowCall(
        keys=[keys] if isinstance(keys, str) else list(keys),
        time=time,
        aggs=parsed,
        shape=shape,
        lateness=lateness_of(max_out_of_orderness, allowed_lateness),
        time_unit=time_unit,
        outputs=sized_aggs(parsed, shape.sizes) if shape.sizes else parsed,
    )
    check_names(call)
    return call


#: The results' own columns in every front end (pandas, polars, Arrow).
RESULT_COLUMNS = ("window_start", "window_end")
#: The columns of Spark's combined output (batch: ``kind`` ... ``row_index``; streaming:
#: ``revision``) and the Spark layer's internal ones (the row id, the packed layout's
#: arrays, the null-key mask, the watermark copy): reserved in both Spark front ends and
#: the CLI (whose two engines write the same files), so a call runs on either.
SPARK_COLUMNS = (
    "kind",
    *RESULT_COLUMNS,
    "revision",
    "reason",
    "event_time",
    "row",
    "row_index",
    "_wa_id",
    "_wa_row",
    "_wa_null_keys",
    "_ws",
    "_we",
    "_rev",
    "__windowagg_watermark",
)


def check_names(call: WindowCall, reserved: Sequence[str] = RESULT_COLUMNS) -> None:
    """``ArgumentError`` if two output columns would have one name: a key column, an
    aggregation's output (``<alias>_<size>`` with several sizes) or one of the output's
    own columns (*reserved*: ``window_start``, ``window_end``; :data:`SPARK_COLUMNS` in
    Spark, whose names are compared ignoring case, as Spark resolves them). The message
    names both and says what to rename. O(keys + outputs + reserved).

    >>> check_names(parse_call("k", "t", ["max(v)"], size=10))
    >>> parse_call("k", "t", ["max(v) as k"], size=10)
    Traceback (most recent call last):
    ...
    windowagg.errors.ArgumentError: the output column 'k' would be both the key column 'k' and the aggregation 'max(v)' named 'k'; name the aggregation otherwise ('max(v) as k_agg') or rename the key column
    """
    fold = reserved is not RESULT_COLUMNS  # Spark resolves column names ignoring case
    named: list[tuple[str, str, str | None]] = [
        (k, f"the key column {k!r}", None) for k in call.keys
    ]
    per = len(call.outputs) // max(len(call.aggs), 1)
    for i, a in enumerate(call.outputs):
        base = call.aggs[i // per]
        text = base.kind or "agg"
        if base.kind is not None and keyword_builder(base.kind) is not None:
            text += "(...)"  # its keywords (half_life=...) are not kept
        elif base.column is not None:
            text += f"({base.column})"
        what = f"the aggregation {text!r} named {base.alias!r}"
        if a is not base:  # several sizes: <alias>_<size>
            what += f" at size {a.alias[len(base.alias) + 1 :]} ({a.alias!r})"
        named.append((a.alias, what, f"{text} as {base.alias}_agg"))
    named += [(r, f"windowagg's own {r!r} column", None) for r in reserved]
    seen: dict[str, tuple[str, str | None]] = {}
    for name, what, fix in named:
        folded = name.casefold() if fold else name
        if folded not in seen:
            seen[folded] = (what, fix)
            continue
        first, first_fix = seen[folded]
        fixes = [f"name the aggregation otherwise ('{f}')" for f in (first_fix, fix) if f]
        if first.startswith("the key column"):
            fixes.append("rename the key column")
        raise ArgumentError(
            f"the output column {name!r} would be both {first} and {what}; " + " or ".join(fixes)
        )
