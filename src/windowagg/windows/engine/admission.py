"""Admission: which of one key's valid-looking events enter the windows, and why not.

=================  ==========================================================================
input              one key's events in arrival order: int64 times and float64 value
                   columns (the front end already rejected unreadable rows: null keys,
                   unparsable times, text in a number column, NaN)
refused here       a non-finite value (``inf``/``-inf``): the built-in monoids refuse it at
                   lift, so it is turned into a reject row instead of an error; a value a
                   user (or structured) monoid's ``lift`` refuses (``bad_value: <error
                   type>: <message>``, tried with ``probes``); a late event
                   (:class:`~windowagg.windows.engine.clock.WatermarkClock`)
output             the admitted positions sorted by event time (ties in arrival order)
                   and the refused positions with one reason each
time               O(m log m) (one stable sort), plus one ``lift`` per event and probe
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
from windowagg.windows.engine.clock import WatermarkClock

__all__ = ["Admitted", "admit"]


class Admitted(NamedTuple):
    """The outcome of :func:`admit` (positions into the caller's arrays)."""

    order: np.ndarray
    """Admitted positions, sorted by event time (stable: ties keep arrival order)."""
    refused: np.ndarray
    """Refused positions, ascending."""
    reasons: list[str]
    """One reason per refused position."""


def admit(
    t: np.ndarray,
    values: Mapping[str, np.ndarray],
    clock: WatermarkClock | None = None,
    probes: Sequence[tuple[str | None, Callable[[Any], Any]]] = (),
) -> Admitted:
    """Admit one key's events (arrival order); refuse non-finite values, values a monoid
    refuses and late events.

    *probes* are ``(column, lift)`` of the aggregations whose monoid may refuse a finite
    float (user monoids, ``geomean``, ...; None: the monoid reads no column and is tried
    on ``0.0``): each admitted value is lifted once here, and an exception makes the event
    a ``bad_value`` reject instead of an error in the middle of a window. The first reason
    found wins (non-finite, then refused, then late); a refused event does not move the
    clock. O(m log m) + one ``lift`` per event and probe.

    >>> a = admit(np.array([1, 2]), {"v": np.array([4.0, -1.0])},
    ...           probes=[("v", lambda x: x if x >= 0 else 1 / 0)])
    >>> a.refused.tolist(), a.reasons
    ([1], ['bad_value: ZeroDivisionError: division by zero'])
    """
    t = np.asarray(t, dtype=np.int64)
    ok = np.ones(len(t), dtype=bool)
    reason: dict[int, str] = {}  # refused position -> why (the first reason found)
    for column, v in values.items():
        finite = np.isfinite(v)
        if finite.all():
            continue
        for i in np.flatnonzero(ok & ~finite).tolist():
            reason[i] = f"non-finite value in {column!r}: {float(v[i])!r}"
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
    if clock is not None:
        pos = np.flatnonzero(ok)
        sub = t[pos]
        bounds = clock.bounds(sub)
        late = clock.observe(sub)
        for i, b in zip(pos[late].tolist(), bounds[late].tolist(), strict=True):
            reason[i] = f"late: {int(t[i])} < lateness bound {b}"
        ok[pos[late]] = False
    if not reason:  # everything admitted
        return Admitted(np.argsort(t, kind="stable"), np.empty(0, dtype=np.int64), [])
    keep = np.flatnonzero(ok)
    order = keep[np.argsort(t[keep], kind="stable")]
    refused = np.flatnonzero(~ok)
    return Admitted(order, refused, [reason[i] for i in refused.tolist()])
