"""Issue 26 defect 9: native ``query_slices`` runs the Python class's operations in its order.

docs/native.md promises that the native ``query_slices`` makes the same operations as the
Python reference, in the same order. The native DABA and DABALite made fewer combines: a
window that moves by more than one entry is a ``bulk_evict(k)`` in the reference, which
runs one ``query()`` first, and the native scratch window evicted without it. A monoid that
records every ``lift``, ``combine`` and ``lower`` (with its operands) over non-commutative
monoids (concatenation, 2x2 matrix product) shows both backends making the same calls.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fifo.fifo_family import NATIVE_CLASSES, native
from windowagg.monoids import Concat, MatMul2x2


class Recorded:
    """*inner*, with every call and its operands appended to ``log``."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.identity = inner.identity
        self.log: list[tuple[Any, ...]] = []

    def lift(self, x: Any) -> Any:
        self.log.append(("lift", x))
        return self.inner.lift(x)

    def combine(self, a: Any, b: Any) -> Any:
        self.log.append(("combine", a, b))
        return self.inner.combine(a, b)

    def lower(self, a: Any) -> Any:
        self.log.append(("lower", a))
        return self.inner.lower(a)


def _matrix(i: int) -> tuple[int, int, int, int]:
    return (1, i % 3, (i * 7) % 5 - 2, 1 + i % 2)


MONOIDS: dict[str, tuple[Any, Any]] = {
    "Concat": (Concat, lambda i: i),
    "MatMul2x2": (MatMul2x2, _matrix),
}


@st.composite
def slices(draw: Any) -> tuple[int, list[int], list[int]]:
    """``len(values)`` and non-decreasing bounds ``lo <= hi``, windows moving by 0..6."""
    n = draw(st.integers(0, 30))
    los: list[int] = []
    his: list[int] = []
    lo = hi = 0
    for _ in range(draw(st.integers(0, 15))):
        lo = min(n, lo + draw(st.integers(0, 6)))
        hi = min(n, max(lo, hi + draw(st.integers(0, 6))))
        los.append(lo)
        his.append(hi)
    return n, los, his


@pytest.mark.parametrize("monoid", sorted(MONOIDS))
@pytest.mark.parametrize("name", sorted(NATIVE_CLASSES))
@given(case=slices())
def test_native_query_slices_makes_the_reference_calls_in_order(
    name: str, monoid: str, case: tuple[int, list[int], list[int]]
) -> None:
    make, value = MONOIDS[monoid]
    n, lo, hi = case
    values = [value(i) for i in range(n)]
    got = {}
    for backend, build in (
        ("python", NATIVE_CLASSES[name]),
        ("native", native(NATIVE_CLASSES[name])),
    ):
        m = Recorded(make())
        w = build(m) if backend == "native" else build(m, backend="python")
        m.log.clear()
        answers = w.query_slices(values, lo, hi)
        got[backend] = (answers, m.log)
        assert len(w) == 0
    assert got["native"][0] == got["python"][0]
    assert got["native"][1] == got["python"][1]


@pytest.mark.parametrize("name", ["DABA", "DABALite"])
def test_a_window_moving_by_several_entries_queries_first(name: str) -> None:
    """The reference's bulk_evict(k > 1) queries once before it evicts: the counts pinned."""
    for backend, build in (
        ("python", NATIVE_CLASSES[name]),
        ("native", native(NATIVE_CLASSES[name])),
    ):
        m = Recorded(Concat())
        w = build(m) if backend == "native" else build(m, backend="python")
        m.log.clear()
        assert w.query_slices(list(range(6)), [0, 3], [4, 6]) == [(0, 1, 2, 3), (3, 4, 5)]
        lowers = [e for e in m.log if e[0] == "lower"]
        # one lower per window, and the pre-eviction query's lower of the window [0, 4)
        assert lowers == [("lower", (0, 1, 2, 3)), ("lower", (0, 1, 2, 3)), ("lower", (3, 4, 5))], (
            backend,
            lowers,
        )
