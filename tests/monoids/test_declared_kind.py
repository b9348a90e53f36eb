"""Capabilities, not names: a monoid's declared kind picks the fast paths (issue 27).

A subclass of a built-in that keeps its members keeps the built-in's fast path on both
backends (the built-in's ``combine`` is never called: ``+`` inline in Python, a float64
tree natively); one that redefines ``combine`` gets its own ``combine`` called, with the
same answers as the reference.
"""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pytest

from windowagg import native_available
from windowagg.aggs import Agg
from windowagg.fifo import AMTA, DABA, DABALite, Recalc, TwoStacksLite
from windowagg.monoids import Composite, Count, Max, Sum
from windowagg.monoids.base import declared_builtin, declared_kind
from windowagg.ooo import FiBA
from windowagg.windows.engine.state import plan


class PlainSum(Sum):
    """A subclass that only renames: it keeps Sum's kind."""

    __slots__ = ()


class DoubledCombine(Sum):
    """A subclass whose combine is its own (here, counted): it loses Sum's kind."""

    calls = 0

    def combine(self, a: float, b: float) -> float:
        DoubledCombine.calls += 1
        return a + b


class PlainMax(Max[float]):
    __slots__ = ()


BACKENDS = [
    "python",
    pytest.param(
        "native", marks=pytest.mark.skipif(not native_available(), reason="core not built")
    ),
]
FIFO = [TwoStacksLite, DABALite, DABA, AMTA]


def test_declared_kind_follows_the_members() -> None:
    assert declared_kind(PlainSum()) == "sum" and declared_builtin(PlainSum()) is Sum
    assert declared_kind(DoubledCombine()) is None and declared_builtin(DoubledCombine()) is None
    assert declared_kind(PlainMax()) == "max"

    class Shadowed(Sum):
        pass

    m = Shadowed()
    m.combine = lambda a, b: a + b  # type: ignore[method-assign]
    assert declared_kind(m) is None  # an instance attribute shadows the kind's member

    class Foreign:  # a kind declared outside windowagg is not trusted
        native_kind = "sum"
        identity = 0

        def lift(self, x: Any) -> Any:
            return x

        def combine(self, a: Any, b: Any) -> Any:
            return a * b

        def lower(self, a: Any) -> Any:
            return a

    assert declared_kind(Foreign()) is None


@pytest.fixture
def counted_sum_combine(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Count every call of ``Sum.combine`` (the generic path's; the fast path never calls it)."""
    calls = [0]
    original = Sum.combine

    def combine(self: Any, a: Any, b: Any) -> Any:
        calls[0] += 1
        return original(self, a, b)

    monkeypatch.setattr(Sum, "combine", combine)
    return calls


def _drive_fifo(w: Any, xs: list[float]) -> list[Any]:
    out = []
    for i, x in enumerate(xs):
        w.insert(x)
        if i % 3 == 2:
            w.evict()
        out.append(w.query())
    return out


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("cls", FIFO, ids=lambda c: c.__name__)
def test_fifo_subclass_keeps_or_loses_the_fast_path(
    cls: Any, backend: str, counted_sum_combine: list[int]
) -> None:
    rnd = random.Random(7)
    xs = [rnd.randint(-20, 20) * 0.5 for _ in range(60)]  # exact sums in any order
    want = _drive_fifo(Recalc(Sum()), xs)
    counted_sum_combine[0] = 0  # the oracle's calls
    got = _drive_fifo(cls(PlainSum(), backend=backend), xs)
    assert got == want
    assert counted_sum_combine[0] == 0  # the fast path: Sum.combine never runs
    DoubledCombine.calls = 0
    got = _drive_fifo(cls(DoubledCombine(), backend=backend), xs)
    assert got == want
    assert DoubledCombine.calls > 0  # its own combine runs


@pytest.mark.parametrize("backend", BACKENDS)
def test_fiba_subclass_keeps_or_loses_the_fast_path(
    backend: str, counted_sum_combine: list[int]
) -> None:
    rnd = random.Random(3)
    ts = rnd.sample(range(1000), 80)
    vals = [rnd.randint(-20, 20) * 0.5 for _ in ts]  # exact sums in any order
    ref = FiBA(Sum(), backend="python")
    w = FiBA(PlainSum(), backend=backend)
    for t, v in zip(ts, vals, strict=True):
        ref.insert(t, v)
        w.insert(t, v)
    calls_ref = counted_sum_combine[0]
    counted_sum_combine[0] = 0
    assert w.query() == ref.query()
    assert w.range_query(100, 600) == ref.range_query(100, 600)
    assert calls_ref == 0 and counted_sum_combine[0] == 0
    DoubledCombine.calls = 0
    own = FiBA(DoubledCombine(), backend=backend)
    for t, v in zip(ts, vals, strict=True):
        own.insert(t, v)
    assert own.query() == ref.query()
    assert DoubledCombine.calls > 0


@pytest.mark.parametrize("backend", BACKENDS)
def test_composite_of_subclasses_keeps_the_native_kernel(backend: str) -> None:
    m = Composite(PlainSum(), PlainMax())
    w = DABA(m, backend=backend)
    for x in (1.0, 5.0, 2.0):
        w.insert((x, x))
    w.evict()
    assert w.query() == (7.0, 5.0)
    if backend == "native":
        assert not w._generic  # the composite's numeric kernel, not the generic path


def test_engine_plan_reads_the_kind_not_the_name() -> None:
    p = plan(
        [
            Agg("s", PlainSum(), "v", "double"),
            Agg("d", DoubledCombine(), "v", "double"),
            Agg("n", Count(), None, "bigint"),
        ]
    )
    assert [g.buffer for g in p.groups] == [np.float64, None, np.int64]
    assert [c for c, _ in p.probes] == ["v"]  # only the monoid of no kind is probed
