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
from windowagg.errors import (
    ArgumentTypeError,
    EmptyWindowError,
    MissingValueError,
    ValueOrderError,
)

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
    for bad_k in (0.5, None, True, "1"):
        with pytest.raises(ArgumentTypeError, match="kth needs an integer index"):
            s.kth(bad_k)
    with pytest.raises(MissingValueError, match="step 1"):
        s.slide([4, 5], evict=[[1], [9]], q=0.5)
    assert list(s) == [2, 3, 4]  # step 0 done, step 1 undone
    s._check()


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("form", ["single", "lists", "f64 rows", "f64 flat"])
def test_evicting_nan_is_refused_and_undone(backend: str, form: str) -> None:
    """NaN equals nothing: evicting it raises ValueOrderError and changes nothing (a search
    for it would otherwise stop at the smallest value and remove that)."""
    s = make(backend)
    s.bulk_insert([1.0, 2.0, 3.0])
    nan = float("nan")
    with pytest.raises(ValueOrderError, match="NaN"):
        if form == "single":
            s.evict(nan)
        elif form == "lists":
            s.slide([4.0, 5.0], evict=[[1.0], [2.0, nan]], q=0.5)
        elif form == "f64 rows":
            s.slide(np.array([4.0, 5.0]), evict=np.array([[1.0, 2.0], [3.0, nan]]), q=0.5)
        else:
            s.slide(np.array([4.0, 5.0]), evict=np.array([1.0, nan]), q=0.5)
    done = {"single": [1.0, 2.0, 3.0], "lists": [2.0, 3.0, 4.0]}
    assert list(s) == done.get(form, [3.0, 4.0] if form == "f64 rows" else [2.0, 3.0, 4.0])
    s._check()


class Unequal:
    """An object that is not equal to itself, as NaN (and orders like nothing)."""

    def __eq__(self, other: object) -> bool:
        return False

    def __ne__(self, other: object) -> bool:
        return True

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return "Unequal()"


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("held", ["floats", "decimals"])
@pytest.mark.parametrize("form", ["single", "slide"])
def test_evicting_an_object_nan_is_refused_as_the_reference(
    backend: str, held: str, form: str
) -> None:
    """Issue 26: ``Decimal('NaN')`` (or any value not equal to itself) is refused by
    ``evict`` as by ``insert``, with ValueOrderError, on both backends; nothing changes, the
    keys' form included (the native evict compared it with the keys: InvalidOperation)."""
    from decimal import Decimal

    start = [1.0, 2.0, 3.0] if held == "floats" else [Decimal(1), Decimal(2), Decimal(3)]
    for bad in (Decimal("NaN"), Unequal()):
        s = make(backend)
        s.bulk_insert(start)
        generic = getattr(s, "_generic", None)
        with pytest.raises(ValueOrderError, match="not equal to itself"):
            if form == "single":
                s.evict(bad)
            else:
                s.slide([4.0], evict=[[bad]], q=0.5)
        assert list(s) == start and getattr(s, "_generic", None) == generic
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


def _stepwise(start: list[Any], xs: list[Any], gone: list[list[Any]], qs: list[float]) -> Any:
    """The oracle of slide: a sorted list, one step at a time."""
    a = sorted(start)
    answers = []
    for x, g in zip(xs, gone, strict=True):
        bisect.insort(a, x)
        for y in g:
            a.remove(y)
        answers.append([a[nr(q, len(a))] for q in qs])
    return answers, a


@pytest.mark.parametrize("backend", BACKENDS)
@settings(max_examples=60)
@given(
    data=st.data(),
    dtype=st.sampled_from([np.float64, np.int64]),
    per=st.sampled_from([None, 0, 1, 2]),
    qs=st.lists(st.floats(0, 1), min_size=1, max_size=3),
)
def test_slide_flat_evict_against_stepwise(
    backend: str, data: Any, dtype: Any, per: int | None, qs: list[float]
) -> None:
    """evict as one float64/int64 array, shape (steps,) (per=None: one value per step) or
    (steps, per), equals per-step evict lists and a sorted-list oracle; a step evicting an
    absent value is undone and raises, the steps before it stay done."""
    k = 1 if per is None else per
    vals = (
        st.integers(-20, 20)
        if dtype is np.int64
        else st.sampled_from([-1.5, -0.0, 0.0, 1.0, 2.5, 7.0])
    )
    steps = data.draw(st.integers(0, 25))
    start = data.draw(st.lists(vals, min_size=k * steps + 1, max_size=k * steps + 5))
    xs = data.draw(st.lists(vals, min_size=steps, max_size=steps))
    pool = start + xs  # evict the oldest k per step: always present
    gone = [pool[i * k : (i + 1) * k] for i in range(steps)]
    spoil = (
        data.draw(st.one_of(st.none(), st.integers(0, max(steps - 1, 0)))) if steps and k else None
    )
    if spoil is not None:
        gone[spoil] = [*gone[spoil][:-1], 99]  # never inserted
    arr = np.array(gone, dtype=dtype).reshape(steps, k)
    if per is None:
        arr = arr.reshape(steps)
    s, t = make(backend), make(backend)
    s.bulk_insert(np.array(start, dtype=dtype))
    t.bulk_insert(np.array(start, dtype=dtype))
    if spoil is not None:
        with pytest.raises(MissingValueError, match=f"step {spoil}"):
            s.slide(np.array(xs, dtype=dtype), arr, qs)
        _, after = _stepwise(start, xs[:spoil], gone[:spoil], qs)
        assert list(s) == after
        s._check()
        return
    want, _ = _stepwise(start, xs, gone, qs)
    got = s.slide(np.array(xs, dtype=dtype), arr, qs)
    assert got == want == t.slide(xs, [list(g) for g in arr.reshape(steps, k).tolist()], qs)
    out = np.zeros((steps, len(qs)), dtype=dtype)
    u = make(backend)
    u.bulk_insert(np.array(start, dtype=dtype))
    assert u.slide(np.array(xs, dtype=dtype), arr, qs, out=out) is out and out.tolist() == want
    assert list(s) == list(t) == list(u)
    s._check()


@pytest.mark.parametrize("backend", BACKENDS)
def test_slide_evict_shape_errors(backend: str) -> None:
    s = make(backend)
    s.bulk_insert([1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="2 evict sets for 3 values"):
        s.slide(np.array([4.0, 5.0, 6.0]), np.array([1.0, 2.0]), 0.5)
    with pytest.raises(TypeError, match="evict must be a sequence"):
        s.slide(np.array([4.0]), 7, 0.5)
    assert list(s) == [1.0, 2.0, 3.0]


@pytest.mark.parametrize("backend", BACKENDS)
def test_key_forms_switch_keeping_counts(backend: str) -> None:
    """Natively float keys switch to numbers at the first int, and to objects at the
    first other value; duplicates (counts) and the first-inserted object survive."""
    s = make(backend)
    s.bulk_insert([2.5, -0.0, 2.5, 0.0, 2.5])
    assert [str(x) for x in s] == ["-0.0", "-0.0", "2.5", "2.5", "2.5"]
    s.insert(3)
    assert list(s) == [-0.0, -0.0, 2.5, 2.5, 2.5, 3] and type(s.kth(5)) is int
    assert str(s.kth(1)) == "-0.0" and s.rank(2.5) == 2 and s.quantile(0.5) == 2.5
    s.evict(0)  # an int equal to a float key
    s._check()
    s.insert(True)
    assert list(s) == [-0.0, True, 2.5, 2.5, 2.5, 3] and str(s.kth(0)) == "-0.0"
    s._check()
    if backend == "native":
        assert s._generic


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("switch", ["floats", "then ints", "then objects"])
def test_large_tree_against_sorted_list(backend: str, switch: str) -> None:
    """Thousands of values (native: a tree of several levels, nodes splitting, evening out and merging),
    duplicates among them, against a sorted list; natively the keys switch form mid-way."""
    rng = random.Random(11)
    pool = [rng.uniform(-1e3, 1e3) for _ in range(2500)]
    s, oracle = make(backend), []
    for step in range(12_000):
        if step == 6_000 and switch != "floats":
            x: Any = 7 if switch == "then ints" else True
            s.insert(x)
            bisect.insort(oracle, x)
        if oracle and rng.random() < (0.2 if step < 9_000 else 0.9):  # grow, then shrink
            y = oracle[rng.randrange(len(oracle))]
            s.evict(y)
            oracle.remove(y)
        else:
            x = rng.choice(pool)
            s.insert(x)
            bisect.insort(oracle, x)
        if step % 97 == 0 and oracle:
            n = len(oracle)
            for k in (0, n // 3, n // 2, n - 1, rng.randrange(n)):
                assert s.kth(k) == oracle[k]
            q = rng.random()
            assert s.quantile(q) == oracle[nr(q, n)]
            probe = rng.choice(pool)
            assert s.rank(probe) == bisect.bisect_left(oracle, probe)
        if step % 2_000 == 0:
            s._check()
            assert len(s) == len(oracle)
        if step == 8_999:
            assert len(oracle) > 4_500  # three levels natively (fanout 64)
    assert list(s) == oracle
    s._check()
    if backend == "native":
        assert s._generic == (switch == "then objects")


@pytest.mark.parametrize("backend", BACKENDS)
@settings(max_examples=60)
@given(
    start=st.lists(st.sampled_from([-1.5, 0.0, 1.0, 2.0, 2.0, 7.0]), max_size=20),
    gone=st.lists(st.sampled_from([-1.5, 0.0, 1.0, 2.0, 7.0, 9.0]), max_size=8),
    form=st.sampled_from(["list", "f64", "i64"]),
)
def test_bulk_evict_is_evict_of_each_all_or_nothing(
    backend: str, start: list[float], gone: list[float], form: str
) -> None:
    """bulk_evict(xs) equals evict() of each value in turn; a missing value (9.0, or one
    evicted more often than held) raises MissingValueError and leaves the multiset as it
    was, on both backends and for a list, a float64 and an int64 buffer."""
    s = make(backend)
    s.bulk_insert(np.asarray(start, np.float64))
    want = sorted(start)
    arg: Any = gone
    if form == "f64":
        arg = np.asarray(gone, np.float64)
    elif form == "i64":
        gone = [float(int(x)) for x in gone]
        arg = np.asarray(gone, np.int64)
    ok = all(gone.count(x) <= want.count(x) for x in set(gone))
    if ok:
        s.bulk_evict(arg)
        for x in gone:
            want.remove(x)
    else:
        with pytest.raises(MissingValueError, match="not in the multiset"):
            s.bulk_evict(arg)
    assert [float(x) for x in s] == want
    s._check()


@pytest.mark.parametrize("backend", BACKENDS)
def test_bulk_evict_of_nan_is_refused_and_undone(backend: str) -> None:
    s = make(backend)
    s.bulk_insert([1.0, 2.0, 3.0])
    with pytest.raises(ValueOrderError, match="NaN"):
        s.bulk_evict(np.array([1.0, float("nan")]))
    assert list(s) == [1.0, 2.0, 3.0]
    s._check()
