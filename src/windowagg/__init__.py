"""windowagg: sliding-window aggregation over out-of-order and bursty streams.

A tour
------
>>> from windowagg.monoids import Sum, Concat
>>> from windowagg import ooo, fifo
>>> w = ooo.Recalc(Concat())
>>> w.insert(2, "b"); w.insert(1, "a"); w.query()
('a', 'b')
>>> f = fifo.Recalc(Sum()); f.insert(3); f.insert(4); f.evict(); f.query()
4
"""

from __future__ import annotations

from windowagg import errors, fifo, monoids, ooo

__version__ = "0.1.0"

__all__ = ["__version__", "errors", "fifo", "monoids", "ooo"]
