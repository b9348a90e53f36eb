"""Composite: the product monoid, positional or named, with fan-out."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from windowagg.errors import MonoidContractError
from windowagg.monoids import (
    Composite,
    Concat,
    Count,
    Counting,
    First,
    Max,
    MaxCount,
    Mean,
    MonoidInputError,
    Sum,
    Variance,
    is_group,
    laws,
)
from windowagg.ooo import Recalc

small = st.integers(-3, 3)


@given(st.lists(st.tuples(small, small, small), min_size=1, max_size=5))
def test_positional_composite_obeys_the_laws(samples: list[tuple[int, int, int]]) -> None:
    laws.check(Composite(Sum(), Concat(), MaxCount()), samples)


@given(st.lists(st.floats(-1e3, 1e3), min_size=1, max_size=5))
def test_named_fan_out_composite_obeys_the_laws(samples: list[float]) -> None:
    laws.check(
        Composite(n=Count(), avg=Mean(), var=Variance(), first=First(), fan_out=True),
        samples,
        eq=laws.approx(abs=1e-6),
    )


@given(st.lists(st.tuples(st.integers(0, 20), small, small), max_size=30))
def test_composite_equals_its_components_run_separately(events: list[tuple[int, int, int]]) -> None:
    comp = Composite(total=Sum(), seq=Concat())
    w = Recalc(comp)
    w_sum, w_seq = Recalc(Sum()), Recalc(Concat())
    for t, a, b in events:
        w.insert(t, (a, b))
        w_sum.insert(t, a)
        w_seq.insert(t, b)
    assert w.query() == {"total": w_sum.query(), "seq": w_seq.query()}


def test_lift_forms_and_input_errors() -> None:
    named = Composite(s=Sum(), m=Max())
    assert named.lift({"m": 4, "s": 1}) == named.lift((1, 4)) == named.lift([1, 4]) == (1, 4)
    with pytest.raises(MonoidInputError, match=r"exactly the keys \['s', 'm'\]"):
        named.lift({"s": 1})
    with pytest.raises(MonoidInputError, match=r"needs 2 inputs, got 3"):
        named.lift((1, 2, 3))
    with pytest.raises(MonoidInputError, match="fan_out=True"):
        Composite(Sum(), Max()).lift(5)
    assert Composite(Sum(), Max(), fan_out=True).lift(5) == (5, 5)


def test_construction_errors() -> None:
    with pytest.raises(MonoidContractError, match="at least one"):
        Composite()
    with pytest.raises(MonoidContractError, match="not both"):
        Composite(Sum(), m=Max())
    with pytest.raises(MonoidContractError, match=r"Composite component 'bad' needs a monoid"):
        Composite(ok=Sum(), bad=object())


def test_flags_and_inverse() -> None:
    groups = Composite(Sum(), Mean())
    assert groups.invertible and is_group(groups) and groups.commutative and not groups.idempotent
    laws.check(groups, [(1, 2), (3, -4)])
    mixed = Composite(a=Sum(), b=Max())
    assert not mixed.invertible and not is_group(mixed)
    with pytest.raises(MonoidContractError, match="component\\(s\\) 'b' are not groups"):
        mixed.inverse(mixed.identity)
    assert Composite(Max(), First()).idempotent
    assert not Composite(Max(), First()).commutative

    class Plain:  # a user monoid without flags counts as neither commutative nor idempotent
        identity = 0

        def lift(self, x: Any) -> Any:
            return x

        def combine(self, a: Any, b: Any) -> Any:
            return a | b

        def lower(self, a: Any) -> Any:
            return a

    c = Composite(Plain(), Max())
    assert not c.commutative and not c.idempotent and c.name == "composite(Plain,max)"


def test_combine_calls_each_component_once() -> None:
    a, b = Counting(Sum()), Counting(Max())
    c = Composite(a, b)
    c.combine(c.lift((1, 2)), c.lift((3, 4)))
    assert (a.combines, b.combines) == (1, 1)


def test_repr() -> None:
    assert repr(Composite(Sum(), Max(), fan_out=True)) == "Composite(Sum(), Max(), fan_out=True)"
    assert repr(Composite(s=Sum())) == "Composite(s=Sum())"


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 7])
def test_every_arity_combines_component_wise(n: int) -> None:
    comps = [Concat() if i % 2 else Sum() for i in range(n)]
    c = Composite(*comps)
    xs = [tuple(range(k, k + n)) for k in range(4)]
    laws.check(c, xs)
    acc = c.identity
    for x in xs:
        acc = c.combine(acc, c.lift(x))
    assert acc == tuple(
        tuple(x[i] for x in xs) if i % 2 else sum(x[i] for x in xs) for i in range(n)
    )
