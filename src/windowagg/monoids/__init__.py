"""Monoids: the operators every windowagg aggregator is parameterised by.

See :mod:`windowagg.monoids.base` for the contract, :mod:`windowagg.monoids.builtins`
for the built-ins and :mod:`windowagg.monoids.laws` to check a monoid's laws.

>>> from windowagg.monoids import Sum, is_group
>>> is_group(Sum())
True
"""

from __future__ import annotations

from windowagg.monoids.base import (
    Counting,
    Group,
    Monoid,
    is_group,
    is_monoid,
    require_group,
    require_monoid,
)
from windowagg.monoids.builtins import (
    NOTHING,
    Concat,
    Count,
    First,
    Last,
    MatMul2x2,
    Max,
    Min,
    Sum,
)

__all__ = [
    "NOTHING",
    "Concat",
    "Count",
    "Counting",
    "First",
    "Group",
    "Last",
    "MatMul2x2",
    "Max",
    "Min",
    "Monoid",
    "Sum",
    "is_group",
    "is_monoid",
    "require_group",
    "require_monoid",
]
