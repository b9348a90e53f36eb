"""Admission: which of one key's valid-looking events enter the windows, and why not.

=================  ==========================================================================
input              one key's events in arrival order: int64 times and float64 value
                   columns (the front end already rejected unreadable rows: null keys,
                   unparsable times, text in a number column, NaN)
refused here       a non-finite value (``inf``/``-inf``): the built-in monoids refuse it at
                   lift, so it is turned into a reject row instead of an error; a late
                   event (:class:`~windowagg.windows.engine.clock.WatermarkClock`)
output             the admitted positions sorted by event time (ties in arrival order)
                   and the refused positions with one reason each
time               O(m log m) (one stable sort)
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

from collections.abc import Mapping
from typing import NamedTuple

import numpy as np

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
) -> Admitted:
    """Admit one key's events (arrival order); refuse non-finite values and late events.

    The first reason found wins (a non-finite value before lateness); a refused event does
    not move the clock. O(m log m).
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
