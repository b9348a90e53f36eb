"""Built-in monoids by name, so the Spark and CLI layers can take aggregations as strings.

Examples
--------
>>> from windowagg.monoids import available, get
>>> get("variance", ddof=1)
Variance(ddof=1)
>>> "bloom" in available()
True
>>> get("median")
Traceback (most recent call last):
...
windowagg.errors.MonoidSpecError: unknown monoid 'median'; available: argmax, argmin, bloom, concat, count, first, geomean, last, matmul2x2, max, max_count, mean, min, min_count, product, stddev, sum, variance
"""

from __future__ import annotations

import inspect
from typing import Any, Final

from windowagg.errors import MonoidSpecError
from windowagg.monoids.bloom import BloomFilter
from windowagg.monoids.builtins import (
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
    Product,
    StdDev,
    Sum,
    Variance,
)

__all__ = ["MonoidSpecError", "available", "get"]


_BUILTINS: Final[dict[str, type]] = {
    cls.name: cls
    for cls in (
        Sum,
        Count,
        Mean,
        Variance,
        StdDev,
        Min,
        Max,
        MinCount,
        MaxCount,
        ArgMin,
        ArgMax,
        GeometricMean,
        Product,
        First,
        Last,
        Concat,
        MatMul2x2,
        BloomFilter,
    )
}


def available() -> list[str]:
    """The names :func:`get` accepts, sorted. O(1) (18 names).

    >>> available()[:4]
    ['argmax', 'argmin', 'bloom', 'concat']
    """
    return sorted(_BUILTINS)


def get(name: str, **params: Any) -> Any:
    """A new instance of the built-in monoid called *name*, built with *params*. O(1).

    Names are case-insensitive; ``-`` and ``_`` are interchangeable. Parameters:
    ``variance``/``stddev`` take ``ddof``; ``argmin``/``argmax`` take ``key``;
    ``bloom`` takes ``bits`` and ``hashes``; the others take none.

    Raises
    ------
    MonoidSpecError
        For an unknown name (listing the valid ones) or parameters the monoid does not
        take or rejects (naming the ones it takes).

    Examples
    --------
    >>> get("Bloom", bits=1024)
    BloomFilter(bits=1024, hashes=4)
    >>> get("sum", ddof=1)
    Traceback (most recent call last):
    ...
    windowagg.errors.MonoidSpecError: monoid 'sum' takes no parameters, got ddof
    """
    if not isinstance(name, str):
        raise MonoidSpecError(f"monoid name must be a str, got {type(name).__name__} {name!r}")
    key = name.strip().lower().replace("-", "_")
    cls = _BUILTINS.get(key)
    if cls is None:
        raise MonoidSpecError(f"unknown monoid {name!r}; available: {', '.join(available())}")
    accepted = [
        p.name
        for p in inspect.signature(cls).parameters.values()
        if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
    ]
    unknown = sorted(set(params) - set(accepted))
    if unknown:
        takes = f"takes {', '.join(accepted)}" if accepted else "takes no parameters"
        raise MonoidSpecError(f"monoid {key!r} {takes}, got {', '.join(unknown)}")
    try:
        return cls(**params)
    except (TypeError, ValueError) as e:
        raise MonoidSpecError(f"monoid {key!r}: {e}") from e
