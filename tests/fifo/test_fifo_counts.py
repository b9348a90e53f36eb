"""Complexity claims as numbers: ``combine`` calls per operation (``monoids.Counting``).

Adversarial sequences: grow to N with a query after every insert, drain to empty with a
query after every evict, then oscillate (alternating evict/insert, and bursts of 1000 up
and down). For each operation the number of combines it made is recorded.

- DABA never exceeds 4 / 3 / 1 (insert / evict / query), DABALite 3 / 2 / 1, FOA and IOA
  4 / 3 / 1, SubtractOnEvict 1 / 1 / 0, whatever the window size (N = 10^5 for DABA and
  DABALite, 10^4 for the others).
- TwoStacks' and TwoStacksLite's worst evict is a flip of the whole window: n - 1
  combines, growing with n (the contrast); their amortized cost stays small.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from fifo.fifo_family import UnimodularGroup, native, python
from windowagg.fifo import (
    DABA,
    FOA,
    IOA,
    DABAChunked,
    DABALite,
    FlatFAT,
    FlatFIT,
    SubtractOnEvict,
    TwoStacks,
    TwoStacksLite,
)
from windowagg.monoids import Counting, MatMul2x2, Sum


def adversarial(n: int) -> Iterator[tuple[str, int]]:
    """grow to n, drain to 0, then oscillate: ('i', v) insert, ('e', 0) evict."""
    for v in range(n):
        yield "i", v
    for _ in range(n):
        yield "e", 0
    for v in range(n // 2):  # regrow to n/2, then alternate evict/insert
        yield "i", v
    for r in range(n // 2):
        yield "e", 0
        yield "i", r
    burst = min(1000, n // 4)
    size = n // 2
    for _ in range(3):  # bursts: up 2 * burst, down burst
        for v in range(2 * burst):
            yield "i", v
        for _ in range(burst):
            yield "e", 0
        size += burst
    for _ in range(size):  # drain again, then a little regrowth from empty
        yield "e", 0
    for v in range(10):
        yield "i", v


def run_counts(
    w: Any, m: Counting[Any, Any, Any], ops: Iterator[tuple[str, int]]
) -> dict[str, Any]:
    """Per-operation combine counts: max per kind, totals, and the window size at each max."""
    worst = {"insert": 0, "evict": 0, "query": 0}
    total = {"insert": 0, "evict": 0, "query": 0}
    count = {"insert": 0, "evict": 0, "query": 0}
    ins, ev, q = w.insert, w.evict, w.query
    for kind, v in ops:
        c0 = m.combines
        if kind == "i":
            ins(v)
            name = "insert"
        else:
            ev()
            name = "evict"
        d = m.combines - c0
        worst[name] = max(worst[name], d)
        total[name] += d
        count[name] += 1
        c0 = m.combines
        q()
        d = m.combines - c0
        worst["query"] = max(worst["query"], d)
        total["query"] += d
        count["query"] += 1
    return {"worst": worst, "total": total, "count": count}


WORST_CASE: dict[str, tuple[Callable[[Any], Any], int, tuple[int, int, int]]] = {
    # name: (factory, N, (insert, evict, query) bounds)
    "DABA": (python(DABA), 100_000, (4, 3, 1)),
    # the native twins through the generic path (Counting is not a built-in): same bounds
    "DABA@native": (native(DABA), 100_000, (4, 3, 1)),
    "DABALite@native": (native(DABALite), 100_000, (3, 2, 1)),
    "DABAChunked": (DABAChunked, 100_000, (4, 3, 1)),
    "DABAChunked-2": (lambda m: DABAChunked(m, chunk_size=2), 10_000, (4, 3, 1)),
    "DABALite": (python(DABALite), 100_000, (3, 2, 1)),
    "FOA": (FOA, 10_000, (4, 3, 1)),
    "IOA": (IOA, 10_000, (4, 3, 1)),
}


@pytest.mark.parametrize("name", sorted(WORST_CASE))
def test_worst_case_constant(name: str) -> None:
    factory, n, bounds = WORST_CASE[name]
    m = Counting(Sum())
    res = run_counts(factory(m), m, adversarial(n))
    worst = res["worst"]
    for got, bound in zip((worst["insert"], worst["evict"], worst["query"]), bounds, strict=True):
        assert got <= bound, (name, worst, bounds)
    # the bounds are reached (they are tight, not slack): a shrink happens in both ops
    if name.startswith("DABA"):
        assert (worst["insert"], worst["evict"], worst["query"]) == bounds, worst


@pytest.mark.parametrize("make", [python, native])
def test_daba_bounds_hold_for_non_commutative_monoid(make: Any) -> None:
    m = Counting(MatMul2x2())
    for factory, bounds in (
        (make(DABA), (4, 3, 1)),
        (DABAChunked, (4, 3, 1)),
        (make(DABALite), (3, 2, 1)),
    ):
        m.reset()
        ops = (
            (k, (1, v % 3, 0, 1) if k == "i" else v)
            for k, v in adversarial(2_000)  # type: ignore[misc]
        )
        res = run_counts(factory(m), m, ops)  # type: ignore[arg-type]
        w = res["worst"]
        assert (w["insert"], w["evict"], w["query"]) == bounds


def test_daba_long_run_means() -> None:
    """Alternating evict+insert costs 4 combines (paper: 4.0, counting identity operands;
    skipping them saves 2 per flip, so slightly less here)."""
    for cls in (python(DABA), native(DABA), DABAChunked):
        m = Counting(Sum())
        w = cls(m)
        for v in range(1000):
            w.insert(v)
        m.reset()
        rounds = 10_000
        for v in range(rounds):
            w.evict()
            w.insert(v)
        assert 3.95 <= m.combines / rounds <= 4.0, m.combines / rounds


@pytest.mark.parametrize("cls", [TwoStacks, python(TwoStacksLite), native(TwoStacksLite)])
def test_two_stacks_worst_case_grows_with_n(cls: Callable[[Any], Any]) -> None:
    """The contrast: one evict flips the whole window, n - 1 combines; amortized small."""
    worsts = []
    for n in (1_000, 10_000, 100_000):
        m = Counting(Sum())
        res = run_counts(cls(m), m, adversarial(n))
        worsts.append(res["worst"]["evict"])
        ops = sum(res["count"][k] for k in ("insert", "evict"))
        amortized = sum(res["total"].values()) / ops  # includes the query after each op
        assert amortized <= 3.0, (n, amortized)
        assert res["worst"]["insert"] <= 1 and res["worst"]["query"] <= 1
    assert worsts == [999, 9_999, 99_999], worsts


@pytest.mark.parametrize("cls", [FOA, IOA])
def test_okasaki_amortized(cls: Callable[[Any], Any]) -> None:
    m = Counting(Sum())
    res = run_counts(cls(m), m, adversarial(10_000))
    ops = sum(res["count"][k] for k in ("insert", "evict"))
    assert sum(res["total"].values()) / ops <= 4.5


def test_subtract_on_evict_counts() -> None:
    m = Counting(UnimodularGroup())
    ops = ((k, (1, v % 3, 0, 1) if k == "i" else v) for k, v in adversarial(4_000))
    res = run_counts(SubtractOnEvict(m), m, ops)  # type: ignore[arg-type]
    assert res["worst"] == {"insert": 1, "evict": 1, "query": 0}


def test_flat_fat_logarithmic() -> None:
    m = Counting(Sum())
    w = FlatFAT(m)
    for v in range(4096):
        w.insert(v)
    m.reset()
    worst = 0
    for v in range(4096):  # sliding at a fixed size: no resizing, log2(cap) per update
        c0 = m.combines
        w.evict()
        w.insert(v)
        w.query()
        worst = max(worst, m.combines - c0)
    cap = w.capacity
    log = cap.bit_length() - 1
    assert worst <= 2 * log + 2 * (2 * log) + 1  # two updates + a wrapped query
    assert worst >= log  # and it is logarithmic, not constant


def test_flat_fit_amortized_per_slide() -> None:
    m = Counting(Sum())
    w = FlatFIT(m)
    for v in range(10_000):
        w.insert(v)
    m.reset()
    c0 = m.combines
    w.query()  # the first query after n inserts walks the whole chain: n - 1 combines
    assert m.combines - c0 == 9_999
    m.reset()
    rounds = 20_000
    for v in range(rounds):
        w.evict()
        w.insert(v)
        w.query()
    assert m.combines / rounds <= 3.0, m.combines / rounds
