"""Admission: which valid-looking events (of one key, or many) enter the windows, and why not.

=================  ==========================================================================
input              one key's events in arrival order: int64 times and float64 value
                   columns (the front end already rejected unreadable rows: null keys,
                   unparsable times, text in a number column, NaN)
refused here       a non-finite value (``inf``/``-inf``): the built-in monoids refuse it at
                   lift, so it is turned into a reject row instead of an error; a value a
                   user (or structured) monoid's ``lift`` refuses (``bad_value: <error
                   type>: <message>``, tried with ``probes``); a time in no window of a
                   hopping shape with ``size < slide`` (``in no window: ...``); a late
                   event (:class:`~windowagg.windows.engine.clock.WatermarkClock`)
output             the admitted positions sorted by event time (ties in arrival order)
                   and the refused positions with one reason each
time               O(m log m) (one stable sort), plus one ``lift`` per event and probe
many keys          :func:`admit_groups`: the keys' events end to end, judged in one pass
                   (a clock per key), admitted sorted by key, then time
=================  ==========================================================================

Positions are indexes into the caller's arrays: the caller maps them back to its input rows,
so a refused event is carried by identity, never found again by value.

Examples
--------
>>> import numpy as np
>>> a = admit(np.array([5, 1, 3]), {"v": np.array([1.0, np.inf, 2.0])})
>>> a.order.tolist(), a.refused.tolist(), a.reasons
([2, 0], [1], ["non-finite value in 'v': inf"])
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np

from windowagg.windows._common import bad_value_reason
from windowagg.windows.engine.assign import key_shifts
from windowagg.windows.engine.clock import WatermarkClock
from windowagg.windows.engine.shapes import Shape

__all__ = ["Admitted", "admit", "admit_groups", "nonfinite_reason", "value_refusal"]


class Admitted(NamedTuple):
    """The outcome of :func:`admit` (positions into the caller's arrays)."""

    order: np.ndarray
    """Admitted positions, sorted by event time (stable: ties keep arrival order)."""
    refused: np.ndarray
    """Refused positions, ascending."""
    reasons: list[str]
    """One reason per refused position."""
    in_order: bool = False
    """True when ``order`` is every position in order (``0, 1, ..., n - 1``): nothing was
    refused and the events were sorted already, so the caller's arrays are the sorted
    events as they are (no gather needed)."""


def admit(
    t: np.ndarray,
    values: Mapping[str, np.ndarray],
    clock: WatermarkClock | None = None,
    probes: Sequence[tuple[str | None, Callable[[Any], Any]]] = (),
    shape: Shape | None = None,
) -> Admitted:
    """Admit one key's events (arrival order); refuse non-finite values, values a monoid
    refuses and late events.

    *probes* are ``(column, lift)`` of the aggregations whose monoid may refuse a finite
    float (user monoids, ``geomean``, ...; None: the monoid reads no column and is tried
    on ``0.0``): each admitted value is lifted once here, and an exception makes the event
    a ``bad_value`` reject instead of an error in the middle of a window. The first reason
    found wins (non-finite, then refused, then late); a refused event does not move the
    clock. With a hopping *shape* whose ``size < slide``, an event in a gap between two
    windows is refused too (``in no window: ...``, after the value checks, before the
    clock). O(m log m) + one ``lift`` per event and probe.

    >>> a = admit(np.array([1, 2]), {"v": np.array([4.0, -1.0])},
    ...           probes=[("v", lambda x: x if x >= 0 else 1 / 0)])
    >>> a.refused.tolist(), a.reasons
    ([1], ['bad_value: ZeroDivisionError: division by zero'])
    >>> admit(np.array([3, 7]), {}, shape=Shape(size=5, slide=10)).reasons
    ['in no window: 7 lies between the hopping windows [0, 5) and [10, 15) (size < slide leaves gaps); make slide <= size to cover every time']
    """
    t = np.asarray(t, dtype=np.int64)
    ok, reason = _refusals(t, values, probes, shape)
    if clock is not None:
        _judge_late(t, ok, reason, clock)
    return _admitted(t, ok, reason, None)


def admit_groups(
    t: np.ndarray,
    values: Mapping[str, np.ndarray],
    starts: np.ndarray,
    lateness: tuple[int, int] | None = None,
    probes: Sequence[tuple[str | None, Callable[[Any], Any]]] = (),
    shape: Shape | None = None,
) -> Admitted:
    """:func:`admit` for many keys at once: key g's events are ``t[starts[g]:starts[g + 1]]``
    (arrival order), each key judged by a clock of its own (``WatermarkClock(*lateness)``;
    None: nothing is late). Admitted positions come sorted by key, then time (ties in
    arrival order). O(m log m) + one ``lift`` per event and probe (+ O(keys) with a clock).

    >>> a = admit_groups(np.array([5, 3, 9, 2]), {"v": np.ones(4)}, np.array([0, 2, 4]), (2, 0))
    >>> a.order.tolist(), a.refused.tolist(), a.reasons
    ([1, 0, 2], [3], ['late: 2 < lateness bound 7'])
    """
    t = np.asarray(t, dtype=np.int64)
    starts = np.asarray(starts, dtype=np.int64)
    ok, reason = _refusals(t, values, probes, shape)
    if lateness is not None:
        for a, b in zip(starts[:-1].tolist(), starts[1:].tolist(), strict=True):
            if b > a:
                _judge_late(t, ok, reason, WatermarkClock(*lateness), a, b)
    if not reason and _sorted_by_key(t, starts):  # the stable sort would change nothing
        return Admitted(np.arange(len(t), dtype=np.int64), np.empty(0, np.int64), [], True)
    return _admitted(t, ok, reason, _by_key(t, starts))


def nonfinite_reason(column: str, x: Any) -> str:
    """The reason a non-finite value *x* of *column* is refused. O(1).

    >>> nonfinite_reason("v", float("-inf"))
    "non-finite value in 'v': -inf"
    """
    return f"non-finite value in {column!r}: {float(x)!r}"


def value_refusal(value: Any, column: str, lift: Callable[[Any], Any] | None) -> str | None:
    """Why admission refuses one event's *value* of *column*, None when it admits it: a
    float NaN or +-inf, then a value *lift* (a probe's, see :func:`admit`) refuses; the
    reasons of :func:`admit`, for a front end that judges arrivals one at a time (the
    object API). Times in no window: :meth:`~.shapes.Shape.no_window`. O(1) + one lift.

    >>> value_refusal(float("nan"), "v", None), value_refusal(2.0, "v", None)
    ("non-finite value in 'v': nan", None)
    >>> value_refusal(-1.0, "v", lambda x: x if x >= 0 else 1 / 0)
    'bad_value: ZeroDivisionError: division by zero'
    """
    if isinstance(value, float) and value - value != 0:
        return nonfinite_reason(column, value)
    if lift is not None:
        try:
            lift(value)
        except Exception as e:  # the monoid's own refusal, whatever its type
            return bad_value_reason(e)
    return None


def _refusals(
    t: np.ndarray,
    values: Mapping[str, np.ndarray],
    probes: Sequence[tuple[str | None, Callable[[Any], Any]]],
    shape: Shape | None = None,
) -> tuple[np.ndarray, dict[int, str]]:
    """``(admissible mask, {refused position: reason})`` before lateness: non-finite values,
    then values a probe's ``lift`` refuses, then times in no window of *shape*. O(m) + one
    ``lift`` per event and probe."""
    ok = np.ones(len(t), dtype=bool)
    reason: dict[int, str] = {}  # refused position -> why (the first reason found)
    for column, v in values.items():
        if v.dtype == object:  # a user monoid's values: only float NaN / inf are refused
            finite = np.fromiter(
                (not (isinstance(x, float) and x - x != 0) for x in v.tolist()), bool, len(v)
            )
        else:
            finite = np.isfinite(v)
        if finite.all():
            continue
        for i in np.flatnonzero(ok & ~finite).tolist():
            reason[i] = nonfinite_reason(column, v[i])
        ok &= finite
    for probed, lift in probes:
        where = np.flatnonzero(ok)
        col = values[probed][where].tolist() if probed is not None else [0.0] * len(where)
        for j, x in zip(where.tolist(), col, strict=True):
            try:
                lift(x)
            except Exception as e:  # the monoid's own refusal, whatever its type
                reason[j] = bad_value_reason(e)
                ok[j] = False
    if shape is not None:
        shape.refuse_times(t, ok, reason)
    return ok, reason


def _judge_late(
    t: np.ndarray,
    ok: np.ndarray,
    reason: dict[int, str],
    clock: WatermarkClock,
    a: int = 0,
    b: int | None = None,
) -> None:
    """Refuse (in *ok* and *reason*) the admissible events of ``t[a:b]`` that *clock*
    finds late, in arrival order; a refused event does not move the clock."""
    pos = a + np.flatnonzero(ok[a:b])
    sub = t[pos]
    bounds = clock.bounds(sub)
    late = clock.observe(sub, bounds)
    for i, bound in zip(pos[late].tolist(), bounds[late].tolist(), strict=True):
        reason[i] = f"late: {int(t[i])} < lateness bound {bound}"
    ok[pos[late]] = False


def _sorted_by_key(t: np.ndarray, starts: np.ndarray) -> bool:
    """Whether every key's times are non-decreasing already (the keys' events end to end,
    key g's at ``starts[g]:starts[g + 1]``): then sorting by key, then time, stably, keeps
    every event where it is. One comparison per event, no sort. O(n)."""
    if len(t) < 2:
        return True
    up = t[1:] >= t[:-1]
    inner = starts[1:-1]
    up[inner[(inner > 0) & (inner < len(t))] - 1] = True  # a key's first event may drop
    return bool(up.all())


def _by_key(t: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """A sort key of the keys' times end to end that orders by key, then time: each key's
    times shifted past the previous key's (:func:`~.assign.key_shifts`; a nearly sorted
    array, cheap to sort stably); if the shifted times would not fit in int64, a
    lexicographic key (a 2-row array)."""
    counts = np.diff(starts)
    has = np.flatnonzero(counts)
    if not len(has):
        return t
    lo = np.zeros(len(counts), dtype=np.int64)
    hi = np.full(len(counts), -1, dtype=np.int64)
    lo[has] = np.minimum.reduceat(t, starts[has])
    hi[has] = np.maximum.reduceat(t, starts[has])
    shift = key_shifts(lo, hi)
    if shift is not None:
        shifted: np.ndarray = t + np.repeat(shift, counts)
        return shifted
    return np.stack([t, np.repeat(np.arange(len(counts), dtype=np.int64), counts)])


def _admitted(
    t: np.ndarray, ok: np.ndarray, reason: dict[int, str], key: np.ndarray | None
) -> Admitted:
    """The admitted positions sorted by *key* (default: the time), stable, and the refused
    with reasons. *key* is one sort key per event, or rows of one, the last the primary."""
    if key is None:
        key = t
    if not reason:  # everything admitted: the positions are the sort's own indices
        refused = np.empty(0, dtype=np.int64)
        order = np.argsort(key, kind="stable") if key.ndim == 1 else np.lexsort(key)
        return Admitted(order.astype(np.int64, copy=False), refused, [])
    keep = np.flatnonzero(ok)
    refused = np.flatnonzero(~ok)
    if key.ndim == 1:
        order = keep[np.argsort(key[keep], kind="stable")]
    else:
        order = keep[np.lexsort(key[:, keep])]
    return Admitted(order, refused, [reason[i] for i in refused.tolist()])
