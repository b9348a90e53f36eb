"""Issue 13 item 11: one rule for NaN and ±inf, the same in every aggregator.

The built-in numeric monoids refuse NaN and ±inf in ``lift`` (MonoidInputError), so no
window can hold one and the answer can no longer depend on the algorithm; ``Count``
ignores its input; ``Max``/``Min`` of strings and datetimes keep working. ``_check()``
treats a NaN aggregate (from a user monoid) as equal to itself.
"""

from __future__ import annotations

import math
from datetime import datetime
from decimal import Decimal
from fractions import Fraction
from typing import Any

import numpy as np
import pytest

from fifo.fifo_family import DEFAULT_BACKEND
from windowagg import fifo, ooo
from windowagg.errors import MonoidInputError, MonoidTypeError, WindowaggError
from windowagg.monoids import (
    ArgMax,
    ArgMin,
    Count,
    GeometricMean,
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

NON_FINITE = [
    math.nan,
    math.inf,
    -math.inf,
    np.float64("nan"),
    np.float32("inf"),
    Decimal("NaN"),
    Decimal("-Infinity"),
]
NUMERIC = [Sum(), Mean(), Max(), Min(), Variance(), StdDev(), GeometricMean(), Product()]
NUMERIC += [MaxCount(), MinCount()]


@pytest.mark.parametrize("m", NUMERIC, ids=repr)
@pytest.mark.parametrize("x", NON_FINITE, ids=repr)
def test_numeric_builtins_refuse_non_finite_at_lift(m: Any, x: Any) -> None:
    with pytest.raises(MonoidInputError, match=r"\(\) refuses non-finite value") as info:
        m.lift(x)
    assert isinstance(info.value, ValueError) and isinstance(info.value, WindowaggError)
    assert type(m).__name__ + "()" in str(info.value)


@pytest.mark.parametrize("m", [ArgMax(), ArgMin()], ids=repr)
@pytest.mark.parametrize("x", [math.nan, math.inf, -math.inf], ids=repr)
def test_arg_extremes_refuse_non_finite_keys(m: Any, x: Any) -> None:
    with pytest.raises(MonoidInputError, match="non-finite"):
        m.lift((x, "v"))
    with pytest.raises(MonoidInputError, match="non-finite"):
        type(m)(key=lambda v: v).lift(x)


@pytest.mark.parametrize("m", NUMERIC, ids=repr)
def test_finite_numbers_of_every_kind_are_accepted(m: Any) -> None:
    for x in (3, 2.5, Fraction(1, 3), Decimal("1.5"), np.float64(2.0), np.int64(4)):
        m.lift(x)


def test_sum_refuses_a_non_number_with_a_type_error() -> None:
    with pytest.raises(MonoidTypeError, match=r"Sum\(\) needs a number, got str 'x'") as info:
        Sum().lift("x")
    assert isinstance(info.value, TypeError) and isinstance(info.value, MonoidInputError)


def test_count_accepts_anything_and_ordered_non_numbers_keep_working() -> None:
    c = Count()
    assert [c.lift(x) for x in (math.nan, math.inf, "x", None)] == [1, 1, 1, 1]
    for m in (Max(), Min()):
        assert m.lift("b") == "b"
        d = datetime(2024, 1, 1)
        assert m.lift(d) is d


FIFO: dict[str, Any] = DEFAULT_BACKEND


@pytest.mark.parametrize("name", sorted(FIFO))
@pytest.mark.parametrize("m", [Max(), Min(), Sum()], ids=repr)
@pytest.mark.parametrize("x", [math.nan, math.inf, -math.inf], ids=repr)
def test_every_fifo_aggregator_refuses_non_finite(name: str, m: Any, x: float) -> None:
    """The issue's example: Max over [3.0, nan, 1.0] gave 3.0, nan or 1.0 by algorithm."""
    w = FIFO[name](m)
    w.insert(3.0)
    with pytest.raises(MonoidInputError):
        w.insert(x)
    w.insert(1.0)
    assert w.query() == {"Max": 3.0, "Min": 1.0, "Sum": 4.0}[type(m).__name__]
    assert list(w) == [3.0, 1.0] and len(w) == 2
    w._check()


@pytest.mark.parametrize("x", [math.inf, -math.inf, math.nan], ids=repr)
def test_subtract_on_evict_cannot_be_poisoned(x: float) -> None:
    w = fifo.SubtractOnEvict(Sum())
    w.insert(1.5)
    with pytest.raises(MonoidInputError):
        w.insert(x)
    w.insert(2.0)
    w.evict()
    assert w.query() == 2.0


@pytest.mark.parametrize("cls", [ooo.Recalc, ooo.BTree, ooo.FiBA], ids=lambda c: c.__name__)
@pytest.mark.parametrize("m", [Max(), Sum()], ids=repr)
def test_ooo_aggregators_refuse_non_finite(cls: Any, m: Any) -> None:
    w = cls(m)
    w.insert(1, 3.0)
    with pytest.raises(MonoidInputError):
        w.insert(2, math.nan)
    with pytest.raises(MonoidInputError):
        w.bulk_insert([(3, 1.0), (4, math.inf)])
    assert list(w) == [(1, 3.0)]
    w._check()


class FloatSum:
    """A user monoid that accepts NaN (its own choice): the window must stay checkable.

    (SubtractOnEvict is left out: a group's running aggregate stays NaN after the NaN is
    evicted, which is why the built-ins refuse NaN.)
    """

    identity = 0.0

    def lift(self, x: float) -> float:
        return float(x)

    def combine(self, a: float, b: float) -> float:
        return a + b

    def lower(self, a: float) -> float:
        return a

    def inverse(self, a: float) -> float:
        return -a


class PairSum(FloatSum):
    """NaN inside a tuple partial."""

    identity = (0.0, 0)  # type: ignore[assignment]

    def lift(self, x: float) -> tuple[float, int]:  # type: ignore[override]
        return (float(x), 1)

    def combine(self, a: Any, b: Any) -> Any:
        return (a[0] + b[0], a[1] + b[1])


ALL: dict[str, Any] = {
    **FIFO,
    "ooo.BTree": lambda m: _Timed(ooo.BTree(m, min_arity=2)),
}


class _Timed:
    """Feeds an out-of-order aggregator in time order (for the NaN _check test)."""

    def __init__(self, w: Any) -> None:
        self.w, self.t = w, 0

    def insert(self, v: Any) -> None:
        self.t += 1
        self.w.insert(self.t, v)

    def evict(self) -> None:
        self.w.evict(self.w.oldest())

    def _check(self) -> None:
        self.w._check()


@pytest.mark.parametrize("name", sorted(ALL))
@pytest.mark.parametrize("m", [FloatSum(), PairSum()], ids=lambda m: type(m).__name__)
def test_check_treats_nan_aggregates_as_equal(name: str, m: Any) -> None:
    w = ALL[name](m)
    for x in [1.0, math.nan, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0]:
        w.insert(x)
        w._check()
    for _ in range(3):
        w.evict()
        w._check()
