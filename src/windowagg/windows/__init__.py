"""Window policies over any aggregator: time (sliding, tumbling, hopping), count, custom.

One adapter wraps any out-of-order aggregator (``ooo.FiBA`` by default, ``ooo.Recalc`` or a
factory) with a window policy, an event-time watermark, allowed lateness, a late-event
policy, a side output for rejected input, emission, and versioned state
(``to_bytes``/``from_bytes`` via :mod:`windowagg.codec`). See ``docs/windows.md``.

=================  ==========================================================================
SlidingWindows     time windows ``[start, end)`` (Spark's ``F.window``), per slide or event
SharedWindows      several sizes over one aggregator, one ``range_query`` per size
CountWindows       the last n events in event-time order, every ``every`` arrivals
PolicyWindows      a prefix-monotone slide policy ``wsp(total, prefix)`` (MTA)
WindowResult       ``(start, end, value, count)``
Rejected           ``(t, value, reason)``: the side output
=================  ==========================================================================

>>> from windowagg.windows import SlidingWindows
>>> from windowagg.monoids import Max
>>> w = SlidingWindows(Max(), 10, 10, aggregator="recalc")
>>> w.insert_many([(1, 5), (3, 9), (11, 2)])
[WindowResult(start=0, end=10, value=9, count=2)]
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
