"""Built-in-monoid fast paths: taken for the monoids that declare the built-in's kind (the
built-in and its subclasses that keep its members: issue 27), and equal to the generic path
on every operation (results, iteration, invariants, failed inserts)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from windowagg.fifo import TwoStacksLite
from windowagg.fifo.two_stacks_lite import PyTwoStacksLite
from windowagg.monoids import Counting, Sum


class MySum(Sum):
    """A user subclass of Sum that keeps its members: it keeps the fast path."""

    __slots__ = ()


class OwnCombine(Sum):
    """A user subclass of Sum with its own combine: the generic path (its combine runs)."""

    __slots__ = ()

    def combine(self, a: float, b: float) -> float:
        return a + b


def _held(m: Any) -> type:
    """The class of the Python implementation ``TwoStacksLite(m)`` holds."""
    return type(TwoStacksLite(m, backend="python")._impl)


def test_fast_path_follows_the_declared_kind() -> None:
    assert _held(Sum()) is not PyTwoStacksLite
    assert issubclass(_held(Sum()), PyTwoStacksLite)
    assert _held(Counting(Sum())) is PyTwoStacksLite
    assert _held(MySum()) is not PyTwoStacksLite
    assert _held(OwnCombine()) is PyTwoStacksLite
    assert type(TwoStacksLite(Sum(), backend="python")) is TwoStacksLite


ops = st.lists(
    st.one_of(
        st.tuples(
            st.just("insert"), st.one_of(st.integers(-(10**20), 10**20), st.floats(-1e9, 1e9))
        ),
        st.tuples(st.just("evict"), st.none()),
        st.tuples(st.just("bulk_evict"), st.integers(0, 5)),
    ),
    max_size=80,
)


@given(ops)
def test_fast_path_equals_generic_path(script: list[tuple[str, Any]]) -> None:
    fast = TwoStacksLite(Sum(), backend="python")
    counted = Counting(Sum())
    generic = TwoStacksLite(counted, backend="python")  # Counting keeps the generic path
    for op, arg in script:
        if op == "insert":
            fast.insert(arg)
            generic.insert(arg)
        elif len(generic) > 0:
            k = 1 if op == "evict" else min(arg, len(generic))
            fast.bulk_evict(k)
            generic.bulk_evict(k)
        fast._check()
        a, b = fast.query(), generic.query()
        assert a == b and type(a) is type(b)  # same operands, same order: bit for bit
        assert list(fast) == list(generic) and len(fast) == len(generic)
    if any(op == "insert" for op, _ in script):
        assert counted.combines > 0  # the generic side really went through combine


def test_failed_insert_changes_nothing() -> None:
    w = TwoStacksLite(Sum(), backend="python")
    for x in (1, 2, 3):
        w.insert(x)
    w.evict()
    with pytest.raises(TypeError):
        w.insert("not a number")
    w._check()
    assert w.query() == 5 and list(w) == [2, 3]
