"""Shared pieces of the window adapters: results, rejects, counted partials, time arithmetic.

Nothing here is an algorithm of its own; the adapters in ``sliding``, ``shared``,
``count`` and ``policy`` use these helpers outside their per-event hot paths (or, for
:class:`Counted`, as the monoid the wrapped aggregator runs with).

Examples
--------
>>> WindowResult(0, 10, 7, 2)
WindowResult(start=0, end=10, value=7, count=2)
>>> Rejected(float("nan"), 1, "bad_timestamp: timestamp is NaN").reason.split(":")[0]
'bad_timestamp'
>>> from windowagg.monoids import Sum
>>> c = Counted(Sum()); c.combine(c.identity, (1, 5))
(1, 5)
"""

from __future__ import annotations

import datetime as _dt
import math
from collections.abc import Callable
from fractions import Fraction
from typing import Any, NamedTuple

from windowagg.errors import LateEventError, TimestampError
from windowagg.monoids.base import Monoid, require_monoid

__all__ = [
    "LATE_POLICIES",
    "Counted",
    "Rejected",
    "WindowResult",
    "make_aggregator",
    "monoid_name",
]

LATE_POLICIES = ("drop", "raise", "side")

# Reason codes (the part of ``Rejected.reason`` before the first colon, and the keys of
# ``counters``).
BAD_TIMESTAMP = "bad_timestamp"
BAD_VALUE = "bad_value"
LATE = "late"


class WindowResult(NamedTuple):
    """One emitted window: ``value`` is the lowered aggregate of its ``count`` events.

    For time windows the interval is half-open ``[start, end)``; for per-event emission it
    is ``(start, end]`` with ``end`` the event's timestamp; for count and policy windows
    ``start``/``end`` are the oldest and youngest timestamps in the window (inclusive).

    >>> r = WindowResult(0, 10, ("a", "b"), 2); r.end - r.start, r.count
    (10, 2)
    """

    start: Any
    end: Any
    value: Any
    count: int  # type: ignore[assignment]  # shadows tuple.count, as the contract names it


class Rejected(NamedTuple):
    """An event the window did not aggregate, with why: ``reason`` is ``"code: detail"``.

    Codes: ``bad_timestamp`` (None, NaN, wrong type), ``bad_value`` (the monoid's ``lift``
    or ``combine`` raised), ``late`` (older than the lateness bound, kept with
    ``late="side"``).

    >>> Rejected(3, "x", "late: 3 < lateness bound 5").reason.startswith("late")
    True
    """

    t: Any
    value: Any
    reason: str


class Counted:
    """The product monoid ``(count, partial)`` every window adapter stores.

    ``lift`` is the identity: the adapter lifts values itself (so that a value the user's
    monoid rejects never reaches the aggregator) and inserts ready ``(1, lift(v))`` pairs.
    The same pass-through ``lift`` is what lets a restore ``bulk_insert`` stored partials.
    ``combine`` costs one user ``combine`` and one integer addition.

    >>> from windowagg.monoids import Concat
    >>> c = Counted(Concat()); c.lower(c.combine((1, ("a",)), (2, ("b", "c"))))
    (3, ('a', 'b', 'c'))
    """

    __slots__ = ("_combine", "identity", "inner")

    def __init__(self, inner: Monoid[Any, Any, Any]) -> None:
        require_monoid(inner, "windows")
        self.inner = inner
        self.identity: tuple[int, Any] = (0, inner.identity)
        self._combine = inner.combine

    def lift(self, x: tuple[int, Any]) -> tuple[int, Any]:
        return x

    def combine(self, a: tuple[int, Any], b: tuple[int, Any]) -> tuple[int, Any]:
        return (a[0] + b[0], self._combine(a[1], b[1]))

    def lower(self, a: tuple[int, Any]) -> tuple[int, Any]:
        return a

    def __repr__(self) -> str:
        return f"Counted({self.inner!r})"


def monoid_name(m: object) -> str:
    """A stable name for *m* (its ``name`` attribute, else its class name), stored in state.

    >>> from windowagg.monoids import Sum
    >>> monoid_name(Sum())
    'sum'
    """
    name = getattr(m, "name", None)
    return name if isinstance(name, str) else type(m).__name__


AggregatorSpec = str | Callable[[Any], Any]


def make_aggregator(spec: AggregatorSpec, monoid: Counted) -> Any:
    """Build the out-of-order aggregator named by *spec* over the counted monoid.

    ``"fiba"`` imports :class:`windowagg.ooo.fiba.FiBA` lazily, ``"recalc"`` uses the sorted
    oracle, and a callable is called as ``spec(monoid)``.

    >>> from windowagg.monoids import Sum
    >>> type(make_aggregator("recalc", Counted(Sum()))).__name__
    'Recalc'
    """
    if callable(spec):
        return spec(monoid)
    if spec == "recalc":
        from windowagg.ooo.recalc import Recalc

        return Recalc(monoid)
    if spec == "fiba":
        from windowagg.ooo.fiba import FiBA

        return FiBA(monoid)
    raise ValueError(f"aggregator must be 'fiba', 'recalc' or a factory; got {spec!r}")


def aggregator_label(spec: AggregatorSpec) -> str:
    """What to store in state for *spec* (factories are stored as ``"custom"``)."""
    return spec if isinstance(spec, str) else "custom"


def check_late_policy(late: str) -> None:
    if late not in LATE_POLICIES:
        raise ValueError(f"late must be one of {LATE_POLICIES}; got {late!r}")


def late_error(t: Any, bound: Any) -> LateEventError:
    return LateEventError(
        f"event at {t!r} is older than the lateness bound {bound!r} (watermark minus "
        "allowed_lateness, or the start of the oldest window still open); raise "
        "allowed_lateness or max_out_of_orderness, or use late='drop' / late='side'"
    )


# ----------------------------------------------------------------------------- time units


def is_real_float(x: Any) -> bool:
    return isinstance(x, float)


def zero_like(d: Any) -> Any:
    """The zero of the duration type of *d* (``timedelta(0)`` or ``0``)."""
    return _dt.timedelta(0) if isinstance(d, _dt.timedelta) else 0


def check_duration(d: Any, what: str, *, allow_zero: bool = False) -> None:
    """Raise ValueError/TypeError unless *d* is a positive int, float or timedelta."""
    if isinstance(d, bool) or not isinstance(d, int | float | Fraction | _dt.timedelta):
        raise TypeError(
            f"{what} must be an int, float or datetime.timedelta; got {type(d).__name__}"
        )
    zero = zero_like(d)
    if isinstance(d, float) and not math.isfinite(d):
        raise ValueError(f"{what} must be finite; got {d!r}")
    if d < zero or (d == zero and not allow_zero):
        raise ValueError(f"{what} must be {'>= 0' if allow_zero else '> 0'}; got {d!r}")


def duration_gcd(ds: list[Any]) -> Any:
    """Exact gcd of positive durations (ints, floats as exact binary fractions, timedeltas).

    >>> duration_gcd([600, 10]), duration_gcd([0.75, 0.5])
    (10, 0.25)
    >>> duration_gcd([_dt.timedelta(minutes=10), _dt.timedelta(seconds=15)])
    datetime.timedelta(seconds=15)
    """
    if all(isinstance(d, _dt.timedelta) for d in ds):
        us = 0
        for d in ds:
            us = math.gcd(us, d // _dt.timedelta(microseconds=1))
        return _dt.timedelta(microseconds=us)
    if all(isinstance(d, int) for d in ds):
        g = 0
        for d in ds:
            g = math.gcd(g, d)
        return g
    fr = [Fraction(d) for d in ds]
    den = math.lcm(*(f.denominator for f in fr))
    num = 0
    for f in fr:
        num = math.gcd(num, f.numerator * (den // f.denominator))
    return float(Fraction(num, den))


def epoch_for(t: Any) -> Any:
    """The Unix epoch in the flavour of *t* (naive or UTC-aware datetime, else 0)."""
    if isinstance(t, _dt.datetime):
        if t.tzinfo is None:
            return _dt.datetime(1970, 1, 1)
        return _dt.datetime(1970, 1, 1, tzinfo=_dt.UTC)
    return 0


def resolve_origin(origin: Any, t: Any) -> Any:
    """The absolute time of *origin* for timestamps like *t*.

    An ``int``/``float``/``timedelta`` origin is an offset from the epoch (as Spark's
    ``startTime``) when timestamps are datetimes; otherwise it is used as given.

    >>> resolve_origin(0, _dt.datetime(2024, 1, 1, 12))
    datetime.datetime(1970, 1, 1, 0, 0)
    >>> resolve_origin(5, 17)
    5
    """
    if isinstance(t, _dt.datetime):
        if isinstance(origin, _dt.datetime):
            return origin
        if isinstance(origin, _dt.timedelta):
            return epoch_for(t) + origin
        if origin == 0:
            return epoch_for(t)
        raise TimestampError(
            f"origin {origin!r} cannot align datetime timestamps; pass a datetime or a timedelta"
        )
    return origin


def floordiv(x: Any, d: Any) -> int:
    """``floor(x / d)`` for ints, floats and timedeltas (exact for ints and timedeltas).

    >>> floordiv(-1, 10), floordiv(2.5, 0.5), floordiv(_dt.timedelta(seconds=25), _dt.timedelta(seconds=10))
    (-1, 5, 2)
    """
    q = x // d
    return int(q)


def pred(t: Any) -> Any:
    """The largest timestamp strictly smaller than *t*, in *t*'s own type.

    Used to turn half-open ``[start, end)`` into the inclusive ``[start, pred(end)]`` that
    ``range_query`` takes: ints step by 1, floats by one ulp (``math.nextafter``),
    datetimes (and pandas Timestamps) by their ``resolution``.

    >>> pred(10), pred(1.0) < 1.0, pred(_dt.datetime(2024, 1, 1))
    (9, True, datetime.datetime(2023, 12, 31, 23, 59, 59, 999999))
    """
    if isinstance(t, int) and not isinstance(t, bool):
        return t - 1
    if isinstance(t, float):
        return math.nextafter(t, -math.inf)
    res = getattr(t, "resolution", None)
    if res is not None:
        return t - res
    raise TimestampError(
        f"timestamps of type {type(t).__name__} have no predecessor, so half-open windows "
        "cannot be mapped onto inclusive range queries; use int, float or datetime "
        "timestamps, or panes=True"
    )


def succ(t: Any) -> Any:
    """The smallest timestamp strictly greater than *t* (the mirror of :func:`pred`).

    >>> succ(10), succ(_dt.datetime(2024, 1, 1))
    (11, datetime.datetime(2024, 1, 1, 0, 0, 0, 1))
    """
    if isinstance(t, int) and not isinstance(t, bool):
        return t + 1
    if isinstance(t, float):
        return math.nextafter(t, math.inf)
    res = getattr(t, "resolution", None)
    if res is not None:
        return t + res
    raise TimestampError(
        f"timestamps of type {type(t).__name__} have no successor; use int, float or "
        "datetime timestamps"
    )
