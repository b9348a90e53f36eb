"""In-order (FIFO) sliding-window aggregators, all with one interface.

Every class takes a monoid (see :mod:`windowagg.monoids.base`) and offers ``insert(v)``,
``evict()``, ``bulk_evict(count)``, ``query()``, ``oldest_partial()``, ``youngest_partial()``,
``len()``, iteration over partials oldest to youngest, and ``_check()``, so swapping one
for another is a one-line change. Pick by the trade-off (``docs/fifo.md``):

==================  =========================  ==============================
class               combines per op            choose it when
==================  =========================  ==============================
``Recalc``          O(n) per query             you need an oracle
``SubtractOnEvict`` 1 (worst case)             the operator is a group
``TwoStacks``       O(1) amortized, O(n) flip  throughput matters, tails do not
``TwoStacksLite``   O(1) amortized, O(n) flip  same, with fewer combines
``DABA``            <= 4/3/1 (worst case)      flat tail latency, any monoid
``DABAChunked``     <= 4/3/1 (worst case)      the paper's array layout
``DABALite``        <= 3/2/1 (worst case)      flat tails, fastest worst-case class
``FOA`` / ``IOA``   <= 4/3/1 (worst case)      comparison with the paper
``FlatFAT``         O(log n)                   baseline (Reactive Aggregator)
``FlatFIT``         O(1) amortized per slide   baseline (pointer jumping)
``LogMTA``/``AMTA`` see their modules          bulk eviction by a slide policy
==================  =========================  ==============================

>>> from windowagg.fifo import DABA, TwoStacksLite
>>> from windowagg.monoids import Sum
>>> for cls in (DABA, TwoStacksLite):
...     w = cls(Sum()); w.insert(1); w.insert(2); w.evict(); print(w.query())
2
2
"""

from __future__ import annotations

from windowagg.fifo.amta import AMTA
from windowagg.fifo.base import FifoAggregator
from windowagg.fifo.daba import DABA
from windowagg.fifo.daba_chunked import DABAChunked
from windowagg.fifo.daba_lite import DABALite
from windowagg.fifo.flat_fat import FlatFAT
from windowagg.fifo.flat_fit import FlatFIT
from windowagg.fifo.foa import FOA
from windowagg.fifo.ioa import IOA
from windowagg.fifo.log_mta import LogMTA
from windowagg.fifo.recalc import Recalc
from windowagg.fifo.subtract_on_evict import SubtractOnEvict
from windowagg.fifo.two_stacks import TwoStacks
from windowagg.fifo.two_stacks_lite import TwoStacksLite
from windowagg.fifo.wsp import CountWindow, TimeWindow, enforce_policy

__all__ = [
    "AMTA",
    "DABA",
    "FOA",
    "IOA",
    "CountWindow",
    "DABAChunked",
    "DABALite",
    "FifoAggregator",
    "FlatFAT",
    "FlatFIT",
    "LogMTA",
    "Recalc",
    "SubtractOnEvict",
    "TimeWindow",
    "TwoStacks",
    "TwoStacksLite",
    "enforce_policy",
]
