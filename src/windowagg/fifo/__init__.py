"""In-order (FIFO) sliding-window aggregators.

>>> from windowagg.fifo import Recalc
>>> from windowagg.monoids import Sum
>>> w = Recalc(Sum()); w.insert(1); w.insert(2); w.evict(); w.query()
2
"""

from __future__ import annotations

from windowagg.fifo.base import FifoAggregator
from windowagg.fifo.recalc import Recalc

__all__ = ["FifoAggregator", "Recalc"]
