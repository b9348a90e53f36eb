"""The native FiBA's specialised stages against the pure-Python reference.

* ``Sum()`` starts on a float64-only partial (8 bytes, identity = a private NaN) and moves to
  the tagged number at the first value that is not an exact float (an int, a bool, ...),
  then to the generic path. Answers are compared by ``repr`` so that the type (the int 0
  identity against 0.0) and the sign of a zero count.
* ``Composite`` of at most two cells (``Composite(Max(), Sum())``) runs on a 2-cell partial.
* insert / evict / query / range_query are plain method descriptors: positional and
  keyword arguments, and errors for wrong ones.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from windowagg.errors import MonoidInputError
from windowagg.monoids import Composite, Count, Max, Min, Sum
from windowagg.ooo import FiBA

FLOATS = st.one_of(
    st.sampled_from([0.0, -0.0, 1.0, -1.0, 0.5, 1e308, -1e308, 1e-310, 3.0]),
    st.floats(allow_nan=False, allow_infinity=False, width=64),
)
OTHER = st.sampled_from([0, 1, -3, True, 2**70])


def ops(values: st.SearchStrategy[Any]) -> st.SearchStrategy[list[tuple[Any, ...]]]:
    t = st.integers(-3, 40)
    return st.lists(
        st.one_of(
            st.tuples(st.just("insert"), t, values),
            st.tuples(st.just("evict"), t),
            st.tuples(st.just("bulk_evict"), t),
            st.tuples(st.just("bulk_insert"), st.lists(st.tuples(t, values), max_size=8)),
            st.tuples(st.just("range_query"), t, t),
            st.tuples(st.just("query")),
        ),
        max_size=60,
    )


def lockstep(m: Any, mu: int, seq: list[tuple[Any, ...]]) -> Any:
    py = FiBA(m, min_arity=mu, backend="python")
    nat = FiBA(m, min_arity=mu, backend="native")
    assert repr(nat.query()) == repr(py.query())
    for op, *args in seq:
        a = getattr(py, op)(*args)
        b = getattr(nat, op)(*args)
        assert repr(b) == repr(a), (op, args)
        nat._check()
        assert repr(nat.query()) == repr(py.query())
        assert repr(list(nat)) == repr(list(py))
    return nat


@settings(max_examples=300, deadline=None)
@given(ops(FLOATS), st.sampled_from([2, 3, 4]))
def test_float_sum_stage_lockstep(seq: list[tuple[Any, ...]], mu: int) -> None:
    nat = lockstep(Sum(), mu, seq)
    assert nat._path == "int64 keys, native monoid"


@settings(max_examples=200, deadline=None)
@given(ops(st.one_of(FLOATS, FLOATS, OTHER)), st.sampled_from([2, 4]))
def test_float_sum_stage_deoptimises_with_every_answer_unchanged(
    seq: list[tuple[Any, ...]], mu: int
) -> None:
    lockstep(Sum(), mu, seq)


@settings(max_examples=200, deadline=None)
@given(ops(FLOATS), st.sampled_from([2, 4]))
def test_two_cell_composite_lockstep(seq: list[tuple[Any, ...]], mu: int) -> None:
    lockstep(Composite(Max(), Sum(), fan_out=True), mu, seq)
    lockstep(Composite(Min(), Count(), fan_out=True), mu, seq)


# Ties between equal values that can be told apart (0.0 and -0.0, 3 and 3.0): Max and Min
# keep the older one; both backends resolve every tie alike (compared by repr).
TIES = st.sampled_from([0.0, -0.0, 3, 3.0, -3, -3.0, 0, True, 1, 1.0])


@settings(max_examples=200, deadline=None)
@given(ops(st.one_of(TIES, FLOATS)), st.sampled_from([2, 3, 4]), st.sampled_from([Max, Min]))
@example(seq=[("insert", 0, 0.0), ("insert", 1, -0.0)], mu=2, m=Max)
def test_max_min_ties_resolve_as_the_reference(seq: list[tuple[Any, ...]], mu: int, m: Any) -> None:
    lockstep(m(), mu, seq)


def test_float_sum_identity_and_signed_zeros() -> None:
    w = FiBA(Sum(), min_arity=2, backend="native")
    py = FiBA(Sum(), min_arity=2, backend="python")
    assert repr(w.query()) == "0" and repr(w.range_query(0, 9)) == "0"
    for t, v in [(1, -0.0), (2, -0.0), (3, -0.0), (0, -0.0), (5, 1e308), (6, 1e308), (7, 7)]:
        w.insert(t, v)
        py.insert(t, v)
        assert repr(w.query()) == repr(py.query())
        assert repr(list(w)) == repr(list(py))
        assert repr(w.range_query(0, 3)) == repr(py.range_query(0, 3))
        assert w._path == "int64 keys, native monoid"  # the int 7: the tagged stage
    assert w.query() == float("inf")


def test_float_sum_moves_to_the_tagged_stage_on_an_int() -> None:
    w = FiBA(Sum(), min_arity=4, backend="native")
    w.bulk_insert(np.arange(100, dtype=np.int64), np.full(100, 0.25))
    w.insert(200, 3)
    assert w.query() == 28.0 and w._path == "int64 keys, native monoid"
    w.insert(201, True)
    assert w.query() == 29.0 and w._path == "int64 keys, generic"
    g = FiBA(Sum(), min_arity=4, backend="native")
    g.bulk_insert(np.arange(10, dtype=np.int64), np.arange(10, dtype=np.int64))
    assert repr(g.query()) == "45" and g._path == "int64 keys, native monoid"


def test_float_sum_refuses_non_finite_unchanged() -> None:
    w = FiBA(Sum(), backend="native")
    w.insert(1, 1.5)
    with pytest.raises(MonoidInputError):
        w.insert(2, float("inf"))
    with pytest.raises(MonoidInputError):
        w.slide(np.array([3], dtype=np.int64), np.array([float("nan")]))
    assert list(w) == [(1, 1.5)] and w._path == "int64 keys, native monoid"


def test_fast_methods_take_positional_and_keyword_arguments() -> None:
    w = FiBA(Sum(), min_arity=2, backend="native")
    w.insert(1, 2.0)
    w.insert(t=2, v=3.0)
    w.insert(3, v=4.0)
    assert w.range_query(t_from=1, t_to=2) == 5.0 and w.range_query(2, t_to=3) == 7.0
    w.evict(t=1)
    assert w.query() == 7.0
    with pytest.raises(TypeError):
        w.insert(1)
    with pytest.raises(TypeError):
        w.insert(1, 2.0, 3.0)
    with pytest.raises(TypeError):
        w.insert(1, t=2)
    with pytest.raises(TypeError):
        w.evict(x=1)
    with pytest.raises(TypeError):
        w.query(1)  # type: ignore[call-arg]
    assert w.query() == 7.0


# Composite of two among Sum, Max, Min: a first stage of two doubles, then CompositeAdapterT<2>.
# Ints (ties with floats included), None (Max/Min's identity).
FAR_INTS = st.sampled_from([2**60 + 1, -(2**61) - 3, None, True, 3, 0])
COMPOSITES = [
    Composite(Max(), Sum(), fan_out=True),
    Composite(Sum(), Min(), fan_out=True),
    Composite(Min(), Max(), fan_out=True),
]


def lockstep_errors(m: Any, mu: int, seq: list[tuple[Any, ...]]) -> Any:
    """lockstep, where an operation may raise: both backends raise the same error type."""
    py = FiBA(m, min_arity=mu, backend="python")
    nat = FiBA(m, min_arity=mu, backend="native")
    for op, *args in seq:
        res = []
        for w in (py, nat):
            try:
                res.append(repr(getattr(w, op)(*args)))
            except Exception as e:  # both backends must raise alike
                res.append(type(e).__name__)
        assert res[1] == res[0], (op, args)
        nat._check()
        assert repr(nat.query()) == repr(py.query())
        assert repr(list(nat)) == repr(list(py))
    return nat


@settings(max_examples=150, deadline=None)
@given(ops(FLOATS), st.sampled_from([2, 4]), st.sampled_from(COMPOSITES))
def test_float_composite_stage_lockstep(seq: list[tuple[Any, ...]], mu: int, m: Any) -> None:
    nat = lockstep_errors(m, mu, seq)
    assert nat._path == "int64 keys, native monoid"


@settings(max_examples=150, deadline=None)
@given(ops(st.one_of(FLOATS, TIES, FAR_INTS)), st.sampled_from([2, 4]), st.sampled_from(COMPOSITES))
def test_float_composite_stage_deoptimises_with_every_answer_unchanged(
    seq: list[tuple[Any, ...]], mu: int, m: Any
) -> None:
    lockstep_errors(m, mu, seq)


def test_float_composite_stage_tuples_dicts_and_buffers() -> None:
    for m, vals in [
        (Composite(Max(), Sum()), [(1.5, 2.0), [0.25, -1.0], (7.5, 3)]),
        (
            Composite(hi=Max(), total=Sum()),
            [{"hi": 1.5, "total": 2.0}, {"hi": 0.5, "total": 1.0}],
        ),
    ]:
        nat, py = FiBA(m, backend="native"), FiBA(m, backend="python")
        assert repr(nat.query()) == repr(py.query())
        for t, v in enumerate(vals):
            nat.insert(t, v)
            py.insert(t, v)
            assert repr(nat.query()) == repr(py.query()) and repr(list(nat)) == repr(list(py))
            assert repr(nat.range_query(1, 5)) == repr(py.range_query(1, 5))
            nat._check()
    m = Composite(Max(), Sum(), fan_out=True)
    nat, py = FiBA(m, backend="native"), FiBA(m, backend="python")
    ts, vs = np.arange(50, dtype=np.int64), np.linspace(-3.0, 4.0, 50)
    for w in (nat, py):
        w.bulk_insert(ts, vs)
    lo, hi = np.array([0, 5, 40, 60, 9]), np.array([10, 5, 49, 70, 3])
    assert repr(nat.range_query_many(lo, hi)) == repr(py.range_query_many(lo, hi))
    with pytest.raises(MonoidInputError):
        nat.insert(99, float("nan"))
    assert repr(list(nat)) == repr(list(py)) and nat._path == "int64 keys, native monoid"


class Tree:
    """The association itself as the answer: ``combine(a, b) = (a, b)``. Two FiBAs that
    agree on every answer of this monoid combine in the same order everywhere, so float
    sums agree to the bit."""

    identity: Any = ()
    commutative = False

    def lift(self, x: Any) -> Any:
        return x

    def combine(self, a: Any, b: Any) -> Any:
        return b if a == () else a if b == () else (a, b)

    def lower(self, a: Any) -> Any:
        return a


@settings(max_examples=200, deadline=None)
@given(ops(st.integers(0, 9)), st.sampled_from([2, 3, 4]))
@example(  # bulk_evict of the oldest entry alone: native took the single evict, the
    # reference the bulk path, and the left leaf's underflow was repaired two ways
    [("insert", 7, 1), ("bulk_insert", [(t, 0) for t in (0, 1, -1, 2, 3, 4, 5, 6)]),
     ("evict", 0), ("insert", 8, 2), ("bulk_evict", 0), ("insert", 0, 3)],
    4,
)  # fmt: skip
def test_native_associates_every_combine_as_the_reference(
    seq: list[tuple[Any, ...]], mu: int
) -> None:
    lockstep(Tree(), mu, seq)
