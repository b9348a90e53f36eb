"""Hypothesis state machines: sketches in lockstep with exact oracles."""

from __future__ import annotations

import math

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from sketches.sketch_oracle import quantile_ok, total, weight_le, window
from windowagg.sketches import QDigest, SlidingWindowCount, SlidingWindowQDigest

U = 64
EPS = 0.2


class QDigestMachine(RuleBasedStateMachine):
    """update / update_many / merge / compress, every bound checked after each step."""

    def __init__(self) -> None:
        super().__init__()
        self.d = QDigest(U, EPS)
        self.items: list[tuple[int, float]] = []

    @rule(x=st.integers(0, U - 1), w=st.sampled_from([1.0, 0.5, 4.0]))
    def update(self, x: int, w: float) -> None:
        self.d.update(x, w)
        self.items.append((x, w))

    @rule(xs=st.lists(st.integers(0, U - 1), max_size=40))
    def update_many(self, xs: list[int]) -> None:
        self.d.update_many(xs)
        self.items.extend((x, 1.0) for x in xs)

    @rule(xs=st.lists(st.integers(0, U - 1), max_size=60))
    def merge(self, xs: list[int]) -> None:
        other = QDigest(U, EPS)
        for x in xs:
            other.update(x)
        self.d.merge(other)
        self.items.extend((x, 1.0) for x in xs)

    @rule()
    def compress(self) -> None:
        self.d.compress()
        self.d._check_compressed()

    @rule(x=st.integers(-1, U))
    def rank_and_range(self, x: int) -> None:
        n = total(self.items)
        r = weight_le(self.items, x)
        assert abs(self.d.rank(x) - r) <= EPS * n / 2 + 1e-9
        lo = max(0, x - 10)
        if 0 <= x < U:
            true = math.fsum(w for k, w in self.items if lo <= k <= x)
            assert abs(self.d.range_count(lo, x) - true) <= EPS * n + 1e-9

    @precondition(lambda self: self.items)
    @rule(phi=st.sampled_from([0.0, 0.1, 0.5, 0.9, 1.0]))
    def quantile(self, phi: float) -> None:
        ok, msg = quantile_ok(self.items, self.d.quantile(phi), phi, EPS)
        assert ok, msg

    @invariant()
    def consistent(self) -> None:
        self.d._check()


class SlidingWindowMachine(RuleBasedStateMachine):
    """Out-of-order updates and merges; certified and eps bounds for every window."""

    LT = 8

    def __init__(self) -> None:
        super().__init__()
        self.c = SlidingWindowCount(0.3, self.LT, capacity_factor=1.0)
        self.q = SlidingWindowQDigest(U, 0.3, self.LT, capacity_factor=1.0)
        self.stream: list[tuple[int, int, float]] = []

    @rule(x=st.integers(0, U - 1), t=st.integers(0, 2**8 - 1), w=st.sampled_from([1, 1, 3]))
    def update(self, x: int, t: int, w: int) -> None:
        self.c.update(t, w)
        self.q.update(x, t, w)
        self.stream.append((x, t, float(w)))

    @rule(pairs=st.lists(st.tuples(st.integers(0, U - 1), st.integers(0, 255)), max_size=80))
    def merge(self, pairs: list[tuple[int, int]]) -> None:
        oc = SlidingWindowCount(0.3, self.LT, capacity_factor=1.0)
        oq = SlidingWindowQDigest(U, 0.3, self.LT, capacity_factor=1.0)
        for x, t in pairs:
            oc.update(t)
            oq.update(x, t)
        self.c.merge(oc)
        self.q.merge(oq)
        self.stream.extend((x, t, 1.0) for x, t in pairs)

    @precondition(lambda self: self.stream)
    @rule(w=st.integers(1, 300), extra=st.integers(0, 5))
    def window_queries(self, w: int, extra: int) -> None:
        t = max(s[1] for s in self.stream) + extra
        items = window(self.stream, t, w)
        true = total(items)
        for s in (self.c, self.q):
            lo, hi = s.count_bounds(w, t)
            assert lo - 1e-9 <= true <= hi + 1e-9
        for x in (0, 10, 40):
            lo, hi = self.q.rank_bounds(x, w, t)
            assert lo - 1e-9 <= weight_le(items, x) <= hi + 1e-9

    @invariant()
    def consistent(self) -> None:
        self.c._check()
        self.q._check()


TestQDigestMachine = QDigestMachine.TestCase
TestSlidingWindowMachine = SlidingWindowMachine.TestCase
