"""Window policies over any aggregator: time (sliding, tumbling, hopping), count, custom.

One adapter wraps any out-of-order aggregator (``ooo.FiBA`` by default, ``ooo.Recalc`` or a
factory) with a window policy, an event-time watermark, allowed lateness, a late-event
policy, a side output for rejected input, emission, and versioned state
(``to_bytes``/``from_bytes`` via :mod:`windowagg.codec`). See ``docs/windows.md``.

>>> from windowagg.windows import SlidingWindows
>>> from windowagg.monoids import Max
>>> w = SlidingWindows(Max(), 10, 10, aggregator="recalc")
>>> w.insert_many([(1, 5), (3, 9), (11, 2)])
[WindowResult(start=0, end=10, value=9, count=2)]
"""

from __future__ import annotations

from windowagg.windows._common import Rejected, WindowResult
from windowagg.windows.sliding import SlidingWindows

__all__ = [
    "Rejected",
    "SlidingWindows",
    "WindowResult",
]
