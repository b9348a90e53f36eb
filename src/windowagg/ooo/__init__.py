"""Out-of-order sliding-window aggregators: Recalc (oracle), BTree, FiBA.

>>> from windowagg.ooo import Recalc, FiBA
>>> from windowagg.monoids import Sum
>>> w = Recalc(Sum()); w.insert(2, 5); w.insert(1, 1); w.query()
6
>>> f = FiBA(Sum()); f.insert(2, 5); f.insert(1, 1); f.query()
6
"""

from __future__ import annotations

from windowagg.ooo.base import OutOfOrderAggregator
from windowagg.ooo.btree import BTree
from windowagg.ooo.fiba import FiBA
from windowagg.ooo.recalc import Recalc

__all__ = ["BTree", "FiBA", "OutOfOrderAggregator", "Recalc"]
