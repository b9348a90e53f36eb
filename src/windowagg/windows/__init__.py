"""The object API: stateful window objects, thin adapters over the windows engine.

``SlidingWindows``, ``SessionWindows``, ``CountWindows`` and ``SharedWindows`` feed one
:class:`~windowagg.windows.engine.KeyStream` per window size (the engine's admission,
watermark clock, assignment, state and emission: :mod:`windowagg.windows.adapter`), so they
answer exactly as :func:`windowagg.pandas.window_agg` and Spark do for the same stream:
lateness ``t < watermark - allowed_lateness``, late events rejected with a reason, windows
emitted when the watermark reaches their end and revised (``revision`` + 1) when a
late-but-allowed event changes them. ``PolicyWindows`` (a user slide policy over
``ooo.FiBA``) keeps its own code. See ``docs/windows.md``.

=================  ==========================================================================
SlidingWindows     time windows ``[start, end)`` (Spark's ``F.window``) or per event
                   ``(t - size, t]``
SessionWindows     runs of events at most ``gap`` apart
CountWindows       the last n events in (event time, arrival) order, one window every
                   ``every`` events
SharedWindows      several sizes on one slide
PolicyWindows      a prefix-monotone slide policy ``wsp(total, prefix)`` (MTA)
WindowResult       ``(start, end, value, count, revision, id)``
Rejected           ``(t, value, reason)``: the side output
=================  ==========================================================================

>>> from windowagg.windows import SlidingWindows
>>> from windowagg.monoids import Max
>>> w = SlidingWindows(Max(), 10, 10)
>>> w.insert_many([(1, 5), (3, 9), (11, 2)])
[WindowResult(start=0, end=10, value=9.0, count=2)]
"""

from __future__ import annotations

from windowagg.windows._common import Rejected, WindowResult
from windowagg.windows.count import CountWindows
from windowagg.windows.policy import PolicyWindows
from windowagg.windows.session import SessionWindows
from windowagg.windows.shared import SharedWindows
from windowagg.windows.sliding import SlidingWindows

__all__ = [
    "CountWindows",
    "PolicyWindows",
    "Rejected",
    "SessionWindows",
    "SharedWindows",
    "SlidingWindows",
    "WindowResult",
]
