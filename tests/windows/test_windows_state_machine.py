"""SlidingWindows / SharedWindows in lockstep with the brute-force TimeOracle (state machine).

Rules: single inserts (in order, out of order, late, bad), bursts with duplicates,
watermark advances, a to_bytes/from_bytes round trip, and close; ``_check()`` after every
step. The configuration (sizes, slide, lateness, policy, monoid, panes) is drawn once per
run, so every run exercises one window over a long random history.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from support import MONOID_MATRIX
from support import value_at as value
from windowagg.errors import WindowaggError
from windowagg.windows import SharedWindows, SlidingWindows
from windows.windows_oracle import TimeOracle


class WindowsMachine(RuleBasedStateMachine):
    aggregator = "fiba"

    @initialize(
        name=st.sampled_from(sorted(MONOID_MATRIX)),
        slide=st.integers(1, 6),
        mults=st.sets(st.integers(1, 4), min_size=1, max_size=3),
        origin=st.integers(-4, 4),
        ooo=st.integers(0, 6),
        lateness=st.integers(0, 10),
        late=st.sampled_from(["drop", "side"]),
        panes=st.sampled_from([None, False]),
        shared=st.booleans(),
    )
    def setup(
        self,
        name: str,
        slide: int,
        mults: set[int],
        origin: int,
        ooo: int,
        lateness: int,
        late: str,
        panes: bool | None,
        shared: bool,
    ) -> None:
        self.name = name
        self.m = MONOID_MATRIX[name]
        sizes = sorted(k * slide for k in mults)
        if not shared:
            sizes = sizes[:1]
        kw: dict[str, Any] = {
            "origin": origin,
            "max_out_of_orderness": ooo,
            "allowed_lateness": lateness,
            "late": late,
            "aggregator": self.aggregator,
            "panes": panes,
        }
        self.cls = SharedWindows if shared else SlidingWindows
        self.w = (
            SharedWindows(self.m, sizes, slide, **kw)
            if shared
            else SlidingWindows(self.m, sizes[0], slide, **kw)
        )
        self.o = TimeOracle(
            self.m, sizes, slide, origin=origin, ooo=ooo, lateness=lateness, late=late
        )
        self.clock = 0
        self.i = 0
        self.closed = False

    def _val(self) -> Any:
        self.i += 1
        return value(self.name, self.i)

    @precondition(lambda self: not self.closed)
    @rule(step=st.integers(0, 4), back=st.integers(0, 15))
    def insert(self, step: int, back: int) -> None:
        self.clock += step
        t, v = self.clock - back, self._val()
        assert self.w.insert(t, v) == self.o.batch([(t, v)])

    @precondition(lambda self: not self.closed)
    @rule(
        step=st.integers(0, 6), backs=st.lists(st.integers(0, 12), max_size=12), dup=st.booleans()
    )
    def burst(self, step: int, backs: list[int], dup: bool) -> None:
        self.clock += step
        items = [(self.clock - b, self._val()) for b in backs]
        if dup and items:
            items.append((items[0][0], self._val()))  # a duplicate timestamp in the burst
        assert self.w.insert_many(items) == self.o.batch(items)

    @precondition(lambda self: not self.closed)
    @rule(bad=st.sampled_from([None, float("nan"), "x"]))
    def bad_timestamp(self, bad: Any) -> None:
        before = self.w.counters["bad_timestamp"]
        assert self.w.insert(bad, self._val()) == []
        assert self.w.counters["bad_timestamp"] == before + 1
        self.o.rejected.append(self.w.rejected[-1])

    @precondition(lambda self: not self.closed)
    @rule(ahead=st.integers(-3, 8))
    def watermark(self, ahead: int) -> None:
        wm = self.clock + ahead
        assert self.w.advance_watermark(wm) == self.o.advance(wm)

    @precondition(lambda self: not self.closed)
    @rule()
    def round_trip(self) -> None:
        self.w = self.cls.from_bytes(self.w.to_bytes(), self.m, aggregator=self.aggregator)

    @precondition(lambda self: not self.closed)
    @rule()
    def close(self) -> None:
        assert self.w.close() == self.o.close()
        self.closed = True

    @precondition(lambda self: self.closed)
    @rule()
    def insert_after_close_raises(self) -> None:
        with pytest.raises(WindowaggError, match="closed"):
            self.w.insert(self.clock, self._val())

    @invariant()
    def consistent(self) -> None:
        if not hasattr(self, "w"):
            return
        self.w._check()
        assert self.w.watermark == self.o.wm
        assert self.w.late_count == self.o.late_count
        assert [(r.t, r.value) for r in self.w.rejected if r.t == r.t] == [
            (r.t, r.value) for r in self.o.rejected if r.t == r.t
        ]


class FibaWindowsMachine(WindowsMachine):
    aggregator = "fiba"


class RecalcWindowsMachine(WindowsMachine):
    aggregator = "recalc"


TestFibaWindowsMachine = FibaWindowsMachine.TestCase
TestRecalcWindowsMachine = RecalcWindowsMachine.TestCase
