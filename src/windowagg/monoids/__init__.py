"""Monoids: the operators every windowagg aggregator is parameterised by.

See :mod:`windowagg.monoids.base` for the contract, :mod:`windowagg.monoids.builtins`
for the built-ins, :mod:`windowagg.monoids.bloom` for the Bloom filter,
:mod:`windowagg.monoids.composite` to aggregate several monoids at once,
:func:`get` / :func:`available` to build built-ins by name, and
:mod:`windowagg.monoids.laws` to check a monoid's laws.

>>> from windowagg.monoids import Sum, get, is_group, laws
>>> is_group(Sum()), get("max_count")
(True, MaxCount())
>>> laws.check(get("mean"), [1, 2, 3])
"""

from __future__ import annotations

from windowagg.monoids import laws
from windowagg.monoids.base import (
    Counting,
    Group,
    Monoid,
    is_group,
    is_monoid,
    require_group,
    require_monoid,
)
from windowagg.monoids.bloom import BloomFilter, BloomSet
from windowagg.monoids.builtins import (
    NOTHING,
    ArgMax,
    ArgMin,
    Concat,
    Count,
    First,
    GeometricMean,
    Last,
    MatMul2x2,
    Max,
    MaxCount,
    Mean,
    Min,
    MinCount,
    MonoidInputError,
    Product,
    StdDev,
    Sum,
    Variance,
)
from windowagg.monoids.composite import Composite
from windowagg.monoids.registry import MonoidSpecError, available, get

__all__ = [
    "NOTHING",
    "ArgMax",
    "ArgMin",
    "BloomFilter",
    "BloomSet",
    "Composite",
    "Concat",
    "Count",
    "Counting",
    "First",
    "GeometricMean",
    "Group",
    "Last",
    "MatMul2x2",
    "Max",
    "MaxCount",
    "Mean",
    "Min",
    "MinCount",
    "Monoid",
    "MonoidInputError",
    "MonoidSpecError",
    "Product",
    "StdDev",
    "Sum",
    "Variance",
    "available",
    "get",
    "is_group",
    "is_monoid",
    "laws",
    "require_group",
    "require_monoid",
]
