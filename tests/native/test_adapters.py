"""Each native monoid (adapter) against its Python twin, on the three native FIFO classes.

A random script of inserts, evictions, bulk evictions and array verbs runs on the native
class and on the Python reference class with the same monoid; after every step the
answers, the partials (iteration), both ends and ``_check()`` agree exactly (floats bit
for bit: the native algorithms combine the same operands in the same order). Values include
what makes the native structure deoptimise to the generic path (bools, ints beyond int64,
int64 overflow in a sum, a str into Max, a Decimal), which must change no answer.
"""

from __future__ import annotations

import math
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fifo.fifo_family import NATIVE_CLASSES
from windowagg.errors import MonoidInputError
from windowagg.monoids import (
    ArgMax,
    ArgMin,
    Composite,
    Count,
    First,
    Last,
    Max,
    Mean,
    Min,
    StdDev,
    Sum,
    Variance,
)

ints = st.integers(min_value=-(10**6), max_value=10**6)
floats = st.floats(allow_nan=False, allow_infinity=False, min_value=-1e9, max_value=1e9)
nums = st.one_of(ints, floats)
big = st.sampled_from([2**62, -(2**62), 2**63 - 1, 2**64, -(2**70), True, False])


def _key(x: Any) -> Any:
    return x % 5


# name: (monoid, values that stay native, values that deoptimise or None)
MONOIDS: dict[str, tuple[Any, Any, Any]] = {
    "sum": (Sum(), nums, big),
    "sum_int": (Sum(), ints, big),
    "count": (Count(), nums, st.text(max_size=2)),
    "max": (Max(), nums, st.one_of(big, st.just(Decimal("1.5")))),
    "min": (Min(), nums, big),
    "first": (First(), nums, st.one_of(st.none(), st.text(max_size=2))),
    "last": (Last(), nums, st.one_of(st.none(), big)),
    "mean": (Mean(), nums, big),
    "mean_int": (Mean(), ints, big),
    "variance": (Variance(), nums, st.just(Decimal("2.5"))),
    "stddev1": (StdDev(ddof=1), nums, st.just(2**70)),
    "argmax": (ArgMax(), st.tuples(nums, st.text(max_size=1)), st.tuples(big, st.text(max_size=1))),
    "argmin_key": (ArgMin(key=_key), ints, None),
    "composite": (Composite(Max(), Sum(), Count(), Mean(), fan_out=True), nums, big),
    "composite_named": (
        Composite(lo=Min(), total=Sum()),
        st.tuples(nums, nums),
        st.tuples(nums, big),
    ),
}


# _check() recomputes folds in another association than the structure's: exact only for
# monoids without float arithmetic (the Python classes' _check has the same limit)
EXACT_CHECK = {
    "sum_int",
    "mean_int",
    "count",
    "first",
    "last",
    "max",
    "min",
    "argmax",
    "argmin_key",
}


def _same(w: Any, o: Any, check: bool = True) -> None:
    assert len(w) == len(o)
    a, b = w.query(), o.query()
    assert a == b and type(a) is type(b), (a, b)
    assert list(w) == list(o)
    if len(o):
        assert (
            w.oldest_partial() == o.oldest_partial()
            and w.youngest_partial() == o.youngest_partial()
        )
    if check:
        w._check()


def _script(values: Any) -> Any:
    step = st.one_of(
        st.tuples(st.just("insert"), values),
        st.tuples(st.just("evict"), st.none()),
        st.tuples(st.just("bulk_evict"), st.integers(0, 6)),
        st.tuples(st.just("bulk_insert"), st.lists(values, max_size=6)),
        st.tuples(st.just("slide"), st.lists(values, min_size=1, max_size=6)),
    )
    return st.lists(step, max_size=60)


def _run(cls: Any, monoid: Any, script: list[tuple[str, Any]], check: bool) -> Any:
    w, o = cls(monoid, backend="native"), cls(monoid, backend="python")
    for op, arg in script:
        if op == "insert":
            w.insert(arg)
            o.insert(arg)
        elif op == "evict":
            if not len(o):
                continue
            w.evict()
            o.evict()
        elif op == "bulk_evict":
            k = min(arg, len(o))
            w.bulk_evict(k)
            o.bulk_evict(k)
        elif op == "bulk_insert":
            w.bulk_insert(arg)
            o.bulk_insert(arg)
        else:
            k = 1 if len(o) else 0
            assert w.slide(arg, evict=k) == o.slide(arg, evict=k)
        _same(w, o, check)
    return w


@pytest.mark.parametrize("cls_name", sorted(NATIVE_CLASSES))
@pytest.mark.parametrize("name", sorted(MONOIDS))
@settings(max_examples=25)
@given(data=st.data())
def test_native_monoid_equals_python_twin(cls_name: str, name: str, data: st.DataObject) -> None:
    monoid, values, _deopt = MONOIDS[name]
    script = data.draw(_script(values), label="script")
    w = _run(NATIVE_CLASSES[cls_name], monoid, script, name in EXACT_CHECK)
    assert not w._generic, "plain numbers must stay on the native path"


@pytest.mark.parametrize("cls_name", sorted(NATIVE_CLASSES))
@pytest.mark.parametrize("name", sorted(k for k, v in MONOIDS.items() if v[2] is not None))
@settings(max_examples=15)
@given(data=st.data())
def test_deoptimisation_changes_no_answer(cls_name: str, name: str, data: st.DataObject) -> None:
    monoid, values, deopt = MONOIDS[name]
    script = data.draw(_script(st.one_of(values, values, deopt)), label="script")
    _run(NATIVE_CLASSES[cls_name], monoid, script, name in EXACT_CHECK)


@pytest.mark.parametrize("cls_name", sorted(NATIVE_CLASSES))
def test_int64_overflow_deoptimises_exactly(cls_name: str) -> None:
    w = NATIVE_CLASSES[cls_name](Sum(), backend="native")
    w.bulk_insert([2**62, 2**62, 2**62])
    assert w.query() == 3 * 2**62 and w._generic
    w.evict()
    assert w.query() == 2**63 and list(w) == [2**62, 2**62]
    w._check()


@pytest.mark.parametrize("cls_name", sorted(NATIVE_CLASSES))
@pytest.mark.parametrize("monoid", [Sum(), Max(), Min(), Mean(), Variance(), StdDev()])
@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_non_finite_refused_and_nothing_changes(cls_name: str, monoid: Any, bad: float) -> None:
    w = NATIVE_CLASSES[cls_name](monoid, backend="native")
    w.bulk_insert([1.0, 2.0])
    before = (w.query(), list(w))
    with pytest.raises(MonoidInputError, match=r"refuses non-finite value (nan|inf|-inf)"):
        w.insert(bad)
    with pytest.raises(MonoidInputError):
        w.slide([bad], evict=0)  # a step evicts first: evict nothing here
    assert (w.query(), list(w)) == before and not w._generic
    w._check()


@pytest.mark.parametrize("cls_name", sorted(NATIVE_CLASSES))
def test_a_value_the_twin_refuses_raises_and_stays_native(cls_name: str) -> None:
    w = NATIVE_CLASSES[cls_name](Variance(), backend="native")
    w.insert(1)
    with pytest.raises(MonoidInputError, match="real number"):
        w.insert("x")  # the twin's lift raises: no deoptimisation
    assert not w._generic and w.query() == 0.0
    m = Composite(Sum(), Max())
    c = NATIVE_CLASSES[cls_name](m, backend="native")
    with pytest.raises(MonoidInputError, match="needs 2 inputs"):
        c.insert((1, 2, 3))
    assert not c._generic


@pytest.mark.parametrize("cls_name", sorted(NATIVE_CLASSES))
def test_str_into_max_deoptimises(cls_name: str) -> None:
    w = NATIVE_CLASSES[cls_name](Max(), backend="native")
    w.bulk_insert(["b", "a"])
    assert w._generic and w.query() == "b"
    w.insert("c")
    assert w.slide(["a"]) == ["c"]
