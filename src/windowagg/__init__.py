"""windowagg: sliding-window aggregation over out-of-order and bursty streams.

The package is organised by what the stream looks like and what you ask of it:

- :mod:`windowagg.monoids`: the operators (built-ins, :class:`~windowagg.monoids.Composite`
  for several at once, and :func:`windowagg.monoids.laws.check` for your own);
- :mod:`windowagg.ooo`: out-of-order aggregators (:class:`FiBA`, ``BTree``, ``Recalc``);
- :mod:`windowagg.fifo`: in-order aggregators (:class:`DABA`, ``TwoStacks``, ...,
  :class:`AMTA` with window slide policies and key-value storage);
- :mod:`windowagg.windows`: time, count and policy windows with watermarks and lateness,
  wrapping any aggregator;
- :mod:`windowagg.sketches`: q-digest and time-decayed summaries (:class:`QDigest`, ...);
- :mod:`windowagg.storage` and :mod:`windowagg.codec`: key-value stores and the versioned
  state codec; :func:`windowagg.stream`: ``window_agg`` over micro-batches in-process, its
  state in a store (:mod:`windowagg.streaming`); ``windowagg.spark``: the optional PySpark layer (``pip install
  'windowagg[spark]'``), imported only on request.

A tour
------
An out-of-order window, with a non-commutative monoid so that order shows:

>>> from windowagg import FiBA, DABA, SlidingWindows, monoids
>>> w = FiBA(monoids.Concat())
>>> w.insert(3, "c"); w.insert(1, "a"); w.insert(2, "b")
>>> w.query(), w.range_query(2, 3)
(('a', 'b', 'c'), ('b', 'c'))
>>> w.bulk_evict(1); w.query(), len(w), w.oldest()
(('b', 'c'), 2, 2)

An in-order window in worst-case O(1) per operation:

>>> d = DABA(monoids.Max())
>>> for x in [4, 9, 2]: d.insert(x)
>>> d.evict(); d.evict(); d.query()
2

Event-time sliding windows (size 10, slide 5) whose watermark trails the largest event
time by 5, so the late event at time 3 still counts; the one at time 0 is too late:

>>> sw = SlidingWindows(monoids.Sum(), 10, 5, max_out_of_orderness=5)
>>> sw.insert(1, 1) + sw.insert(7, 2) + sw.insert(3, 4)
[]
>>> [(r.start, r.end, r.value, r.count) for r in sw.insert(12, 8)]
[(-5, 5, 5.0, 2)]
>>> sw.insert(0, 100), sw.late_count
([], 1)
>>> [(r.start, r.end, r.value, r.count) for r in sw.close()]
[(0, 10, 7.0, 3), (5, 15, 10.0, 2), (10, 20, 8.0, 1)]
"""

from __future__ import annotations

import importlib
from typing import Any

from windowagg import codec, errors, fifo, monoids, ooo, sketches, storage, windows
from windowagg._backend import native_available
from windowagg.fifo import AMTA, DABA, DABALite, LogMTA, TwoStacks, TwoStacksLite
from windowagg.ooo import BTree, FiBA
from windowagg.order_statistics import OrderStatistics
from windowagg.sketches import QDigest
from windowagg.windows import CountWindows, SessionWindows, SharedWindows, SlidingWindows

__version__ = "0.1.0"

__all__ = [
    "AMTA",
    "DABA",
    "BTree",
    "CountWindows",
    "DABALite",
    "FiBA",
    "LogMTA",
    "OrderStatistics",
    "QDigest",
    "SessionWindows",
    "SharedWindows",
    "SlidingWindows",
    "TwoStacks",
    "TwoStacksLite",
    "__version__",
    "codec",
    "errors",
    "fifo",
    "monoids",
    "native_available",
    "ooo",
    "sketches",
    "storage",
    "stream",
    "windows",
]


def __getattr__(name: str) -> Any:
    """``stream`` (:func:`windowagg.streaming.stream`), imported on first use: it needs
    pandas, which ``import windowagg`` does not load."""
    if name in ("stream", "Stream"):
        value = getattr(importlib.import_module("windowagg.streaming"), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'windowagg' has no attribute {name!r}")
