"""``query_slices(values, lo, hi, out=None)``: every FIFO class, both backends, against a
brute-force oracle (a fold of each slice), with non-commutative and Python monoids.

The verb answers ``query()`` of a fresh window holding ``values[lo[i]:hi[i]]`` for every
window i (bounds non-decreasing) and never reads or changes the window it is called on:
a call that raises (a bad bound, a ``combine`` that refuses) leaves it as it was.
"""

from __future__ import annotations

from functools import reduce
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from fifo.fifo_family import FAMILY, NATIVE_CLASSES, native, python
from fifo.test_raising_call_atomic import Picky, Refused, snapshot
from windowagg import fifo
from windowagg.errors import ArgumentError, ArgumentTypeError
from windowagg.monoids import Concat, MatMul2x2, Max, Mean, Sum

EVERY = {
    **FAMILY,
    "Recalc": fifo.Recalc,
    "LogMTA": fifo.LogMTA,
    **{f"{k}@python": python(c) for k, c in NATIVE_CLASSES.items()},
}
MATRICES = [(1, 1, 0, 1), (1, 0, 1, 1), (0, -1, 1, 0), (2, 1, 1, 1), (1, 2, 0, 1)]


@st.composite
def slices(draw: st.DrawFn, n: int) -> tuple[list[int], list[int]]:
    """Non-decreasing bounds over n values: overlapping, disjoint, repeated and empty
    windows alike."""
    r = draw(st.integers(0, 25))
    his = sorted(draw(st.lists(st.integers(0, n), min_size=r, max_size=r)))
    los: list[int] = []
    for h in his:
        floor = los[-1] if los else 0
        los.append(draw(st.integers(min(floor, h), h)) if floor <= h else h)
    return los, his


def _fold(monoid: Any, xs: list[Any]) -> Any:
    parts = [monoid.lift(x) for x in xs]
    return monoid.lower(reduce(monoid.combine, parts, monoid.identity))


@pytest.mark.parametrize("name", sorted(EVERY))
@given(data=st.data())
def test_query_slices_is_the_fold_of_each_slice(name: str, data: Any) -> None:
    cases: list[tuple[Any, Any]] = [
        (Concat(), st.integers(-9, 9)),  # non-commutative, a Python partial (a tuple)
        (MatMul2x2(), st.sampled_from(MATRICES)),  # non-commutative, 2x2 products
        (Max(), st.integers(-9, 9)),
    ]
    if name == "SubtractOnEvict":
        from fifo.fifo_family import UnimodularGroup, sl2_values

        cases = [(UnimodularGroup(), sl2_values), (Sum(), st.integers(-9, 9))]
    monoid, values = data.draw(st.sampled_from(cases))
    xs = data.draw(st.lists(values, max_size=30))
    lo, hi = data.draw(slices(len(xs)))
    w = EVERY[name](monoid)
    for x in data.draw(st.lists(values, max_size=5)):  # the window's own content: ignored
        w.insert(x)
    before = snapshot(w)
    got = w.query_slices(xs, lo, hi)
    assert got == [_fold(monoid, xs[a:b]) for a, b in zip(lo, hi, strict=True)]
    assert snapshot(w) == before


@pytest.mark.parametrize("name", sorted(NATIVE_CLASSES))
@given(
    xs=st.lists(st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False), max_size=40),
    data=st.data(),
)
def test_native_floats_equal_the_python_reference_bit_for_bit(
    name: str, xs: list[float], data: Any
) -> None:
    lo, hi = data.draw(slices(len(xs)))
    lo_a, hi_a = np.array(lo, dtype=np.int64), np.array(hi, dtype=np.int64)
    v = np.array(xs, dtype=np.float64)
    for monoid in (Sum(), Mean()):
        ref = python(NATIVE_CLASSES[name])(monoid).query_slices(xs, lo, hi)
        w = native(NATIVE_CLASSES[name])(monoid)
        nonempty = [i for i, (a, b) in enumerate(zip(lo, hi, strict=True)) if b > a]
        assert w.query_slices(v, lo_a, hi_a) == ref
        out = np.empty(len(nonempty))
        idx = np.array(nonempty, dtype=np.int64)
        w.query_slices(v, lo_a[idx], hi_a[idx], out)
        assert out.tolist() == [float(ref[i]) for i in nonempty]


@pytest.mark.parametrize("backend", ["python", "native"])
@pytest.mark.parametrize("name", sorted(NATIVE_CLASSES))
@given(xs=st.lists(st.integers(-1, 9), max_size=20), data=st.data())
def test_a_raising_call_changes_nothing(backend: str, name: str, xs: list[int], data: Any) -> None:
    cls = NATIVE_CLASSES[name]
    make = python(cls) if backend == "python" else native(cls)
    w = make(Picky())
    for x in data.draw(st.lists(st.integers(0, 9), max_size=5)):
        w.insert(x)
    lo, hi = data.draw(slices(len(xs)))
    before = snapshot(w)
    want: Any
    try:
        want = [_fold(Picky(), xs[a:b]) for a, b in zip(lo, hi, strict=True)]
    except Refused:
        want = Refused
    if want is Refused:
        with pytest.raises(Refused):
            w.query_slices(xs, lo, hi)
    else:
        assert w.query_slices(xs, lo, hi) == want
    assert snapshot(w) == before


@pytest.mark.parametrize("backend", ["python", "native"])
@pytest.mark.parametrize("name", sorted(NATIVE_CLASSES))
def test_bad_bounds_and_outputs_are_refused_before_anything_runs(backend: str, name: str) -> None:
    cls = NATIVE_CLASSES[name]
    w = (python(cls) if backend == "python" else native(cls))(Sum())
    w.insert(5)
    with pytest.raises(ArgumentError, match="window 1 is \\[0, 2\\) after \\[1, 2\\)"):
        w.query_slices([1, 2], [1, 0], [2, 2])
    with pytest.raises(ArgumentError, match="window 0 is \\[0, 3\\) over 2 values"):
        w.query_slices([1, 2], [0], [3])
    with pytest.raises(ArgumentError, match="window 0 is \\[2, 1\\)"):
        w.query_slices([1, 2], [2], [1])
    with pytest.raises(ArgumentError, match="1 lower bounds for 2 upper bounds"):
        w.query_slices([1, 2], [0], [1, 2])
    with pytest.raises(ArgumentTypeError, match="integer window bounds lo, got float64"):
        w.query_slices([1, 2], np.array([0.0]), [1])
    with pytest.raises(ArgumentError, match="slots"):
        w.query_slices([1.0, 2.0], [0], [1], np.empty(2))
    assert w.query_slices(
        [1, 2, 3], [0, 1, 3], [2, 3, 3], np.empty(3, dtype=np.int64)
    ).tolist() == [
        3,
        5,
        0,
    ]
    assert (len(w), w.query()) == (1, 5)
