"""OrderStatistics (both backends) against a sorted-list oracle, and against DuckDB.

The oracle is a plain sorted list of the values (``bisect.insort``), with quantiles at the
nearest rank ``max(ceil(q * n) - 1, 0)``; DuckDB's ``quantile_disc`` is checked to give
the same value on random data, several quantiles at once.
"""

from __future__ import annotations

import bisect
import math
import random
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from windowagg import OrderStatistics, native_available
from windowagg.errors import EmptyWindowError, MissingValueError, ValueOrderError

BACKENDS = ["python", "native"]
ints = st.integers(-50, 50)
values = st.one_of(ints, st.floats(-50, 50, allow_nan=False), st.sampled_from([2**70, -(2**65)]))


def make(backend: str) -> Any:
    if backend == "native" and not native_available():  # pragma: no cover
        pytest.skip("compiled core not built")
    return OrderStatistics(backend=backend)


def nr(q: float, n: int) -> int:
    return max(math.ceil(q * n) - 1, 0)


@pytest.mark.parametrize("backend", BACKENDS)
@settings(max_examples=80)
@given(ops=st.lists(st.tuples(st.sampled_from("iieekrq"), values, st.floats(0, 1)), max_size=80))
def test_against_sorted_list(backend: str, ops: list[tuple[str, Any, float]]) -> None:
    s, oracle = make(backend), []
    for op, x, q in ops:
        if op == "i":
            s.insert(x)
            bisect.insort(oracle, x)
        elif op == "e":
            if oracle and x not in oracle:
                x = oracle[len(oracle) // 2]
            if x in oracle:
                s.evict(x)
                oracle.remove(x)
            else:
                with pytest.raises(MissingValueError):
                    s.evict(x)
        elif op == "k" and oracle:
            k = int(q * (len(oracle) - 1))
            assert s.kth(k) == oracle[k]
        elif op == "r":
            assert s.rank(x) == bisect.bisect_left(oracle, x)
        elif op == "q" and oracle:
            assert s.quantile(q) == oracle[nr(q, len(oracle))]
            assert s.quantile([q, 0.0, 1.0]) == [oracle[nr(q, len(oracle))], oracle[0], oracle[-1]]
        assert len(s) == len(oracle) and list(s) == oracle
        s._check()


@pytest.mark.parametrize("backend", BACKENDS)
def test_deoptimises_to_python_objects(backend: str) -> None:
    s = make(backend)
    s.bulk_insert([3, 1.5, 2])
    s.insert(True)  # a bool: the native keys become Python objects
    assert list(s) == [True, 1.5, 2, 3] and s.quantile(0.5) == 1.5
    s.evict(1)  # equal to True
    assert list(s) == [1.5, 2, 3]
    if backend == "native":
        assert s._generic
    t = make(backend)
    t.bulk_insert(["b", "a", "c"])
    assert t.kth(0) == "a" and t.rank("bb") == 2
    with pytest.raises(TypeError):
        t.insert(1)  # str and int do not compare: nothing changes
    assert list(t) == ["a", "b", "c"]
    t._check()


@pytest.mark.parametrize("backend", BACKENDS)
def test_equal_values_keep_the_first_object(backend: str) -> None:
    s = make(backend)
    s.bulk_insert([1, 1.0, 2])
    assert [type(x) for x in s] == [int, int, int]
    s.evict(1.0)
    s.evict(1)
    s.insert(1.0)
    assert [type(x) for x in s] == [float, int]


@pytest.mark.parametrize("backend", BACKENDS)
def test_errors_change_nothing(backend: str) -> None:
    s = make(backend)
    with pytest.raises(EmptyWindowError):
        s.quantile(0.5)
    s.bulk_insert([1, 2, 3])
    with pytest.raises(ValueOrderError, match="NaN"):
        s.insert(float("nan"))
    with pytest.raises(MissingValueError, match="not in the multiset"):
        s.evict(7)
    for bad in (-0.1, 1.5, float("nan")):
        with pytest.raises(ValueError, match="0 <= q <= 1"):
            s.quantile(bad)
    with pytest.raises(EmptyWindowError):
        s.kth(3)
    with pytest.raises(MissingValueError, match="step 1"):
        s.slide([4, 5], evict=[[1], [9]], q=0.5)
    assert list(s) == [2, 3, 4]  # step 0 done, step 1 undone
    s._check()


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("kind", ["list", "f64", "i64"])
def test_slide_equals_stepwise(backend: str, kind: str) -> None:
    rng = random.Random(7)
    n, w = 300, 20
    xs = [rng.randint(0, 1000) for _ in range(n)]
    evict = [[] if i < w else [xs[i - w]] for i in range(n)]
    qs = [0.0, 0.5, 0.9, 1.0]
    ref, expect = make("python"), []
    for i, x in enumerate(xs):
        ref.insert(x)
        for y in evict[i]:
            ref.evict(y)
        expect.append(ref.quantile(qs))
    s = make(backend)
    if kind == "list":
        assert s.slide(xs, evict, qs) == expect
        return
    dtype = np.float64 if kind == "f64" else np.int64
    out = np.zeros((n, len(qs)), dtype=dtype)
    got = s.slide(np.array(xs, dtype=dtype), [np.array(e, dtype=dtype) for e in evict], qs, out=out)
    assert got is out and out.tolist() == expect


@pytest.mark.skipif(not native_available(), reason="compiled core not built")
def test_native_is_fast_path_for_numbers() -> None:
    s = OrderStatistics(backend="native")
    s.bulk_insert(np.arange(1000.0))
    s.bulk_insert(list(range(1000)))
    assert not s._generic and len(s) == 2000 and s.quantile(0.5) == 499.0


def test_quantile_disc_equals_duckdb() -> None:
    duckdb = pytest.importorskip("duckdb")
    con = duckdb.connect()
    rng = random.Random(3)
    qs = [0.0, 0.1, 0.25, 0.3, 0.5, 0.7, 0.75, 0.9, 0.99, 1.0, round(rng.random(), 3)]
    for trial in range(30):
        n = rng.randint(1, 200)
        xs = [rng.choice([rng.randint(-100, 100), rng.uniform(-1e3, 1e3)]) for _ in range(n)]
        xs = [float(x) for x in xs]
        con.execute("create or replace table t as select unnest(?::double[]) as x", [xs])
        sql = ", ".join(f"quantile_disc(x, {q!r})" for q in qs)
        want = list(con.execute(f"select {sql} from t").fetchone())
        for backend in BACKENDS if native_available() else ["python"]:
            s = OrderStatistics(backend=backend)
            s.bulk_insert(xs)
            assert s.quantile(qs) == want, (trial, backend)


@pytest.mark.parametrize("backend", BACKENDS)
def test_slide_of_no_steps_into_an_empty_two_column_out(backend: str) -> None:
    """Both backends accept an ``out`` of shape (0, m) for zero steps (the Python one raised
    TypeError casting a multi-dimensional view with a zero in its shape)."""
    import numpy as np

    out = np.empty((0, 2))
    assert make(backend).slide([], [], q=[0.5, 0.9], out=out) is out
