"""SlidingWindows / SharedWindows over the engine, in lockstep with a brute-force oracle.

The configuration (shape, sizes, slide, origin, out-of-orderness, lateness, late policy,
monoid) is drawn once per run, so every run drives one window over a long random history.
Rules: single inserts (in order, out of order, late, bad timestamp), bursts with duplicate
timestamps (``insert_many``), watermark advances, a ``to_bytes``/``from_bytes`` round trip,
reading the counters (which hands the buffer to the engine early) and ``close``. After every
step the latest revision of each window the adapter has emitted must equal the oracle's
fold of the admitted events in (time, arrival) order for every window the watermark has
passed (``windows_oracle.StreamOracle``), each revision one more than the last, and the
side output, watermark and ``_check()`` must agree. Under the twin fixture of
``tests/conftest.py`` the machine runs on the native and the Python backend.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from support import MONOID_MATRIX, values_for
from windowagg.errors import LateEventError, StateError
from windowagg.windows import SharedWindows, SlidingWindows
from windows.windows_oracle import StreamOracle

#: Timestamps the adapter must reject as ``bad_timestamp`` (floats are not times).
BAD_TIMES = st.sampled_from([None, float("nan"), "x", 1.5, True, 2**63])


def _code(reason: str) -> str:
    """The reject code of an adapter reason (``late: ...``, ``bad_timestamp: ...``)."""
    if reason.startswith("in no window"):
        return "unassigned"
    return reason.split(":", 1)[0]


class WindowsMachine(RuleBasedStateMachine):
    @initialize(
        name=st.sampled_from(sorted(MONOID_MATRIX)),
        shape=st.sampled_from(["tumbling", "hopping", "gaps", "shared", "per_event"]),
        slide=st.integers(1, 5),
        mults=st.lists(st.integers(1, 4), min_size=3, max_size=3, unique=True),
        extra=st.integers(0, 3),
        origin=st.integers(-4, 4),
        ooo=st.integers(0, 6),
        lateness=st.integers(0, 8),
        late=st.sampled_from(["side", "drop", "raise"]),
        n_sizes=st.integers(2, 3),
    )
    def setup(
        self,
        name: str,
        shape: str,
        slide: int,
        mults: list[int],
        extra: int,
        origin: int,
        ooo: int,
        lateness: int,
        late: str,
        n_sizes: int,
    ) -> None:
        self.name, self.m = name, MONOID_MATRIX[name]
        self.values = values_for(name)
        size = mults[0] * slide + extra
        kw: dict[str, Any] = {
            "origin": origin,
            "max_out_of_orderness": ooo,
            "allowed_lateness": lateness,
            "late": late,
        }
        if shape == "tumbling":
            self.cls, self.args, sizes, sl = SlidingWindows, (slide, slide), [slide], slide
        elif shape == "hopping":
            self.cls, self.args, sizes, sl = SlidingWindows, (size, slide), [size], slide
        elif shape == "gaps":  # slide > size: times between windows are rejects
            sl = size + 1 + extra
            self.cls, self.args, sizes = SlidingWindows, (size, sl), [size]
        elif shape == "shared":  # every size >= slide: SharedWindows refuses smaller ones
            sizes = sorted({m * slide for m in mults[: n_sizes - 1]} | {size})
            self.cls, self.args, sl = SharedWindows, (sizes, slide), slide
        else:
            del kw["origin"]
            self.cls, self.args, sizes, sl = SlidingWindows, (size,), [size], None
        self.kw = kw
        self.per_event = sl is None
        self.late = late
        self.w = self.cls(self.m, *self.args, **kw)
        self.o = StreamOracle(self.m, sizes, sl, origin=origin, ooo=ooo, lateness=lateness)
        self.emitted: dict[Any, Any] = {}  # window key -> latest revision the adapter emitted
        # the rejects each call should add, (repr t, repr v, code) in arrival order
        self.rejected: list[list[tuple[str, str, str]]] = []
        self.clock = 0
        self.closed = False

    # ------------------------------------------------------------------ bookkeeping
    def _took(self, results: list[Any]) -> None:
        """Record what the adapter emitted; each revision is one more than the last."""
        for r in results:
            key = r.id if self.per_event else (r.start, r.end)
            prev = self.emitted.get(key)
            want = 0 if prev is None else prev.revision + 1
            assert r.revision == want, (r, prev)
            if prev is not None:
                assert r.count > prev.count, (r, prev)  # a revision adds events
            self.emitted[key] = r

    def _arrive(self, items: list[tuple[Any, Any]]) -> None:
        """The oracle takes the arrivals of one call (``insert`` or ``insert_many``)."""
        call = []
        for t, v in items:
            code = self.o.insert(t, v)
            if code is not None and not (code == "late" and self.late == "drop"):
                call.append((repr(t), repr(v), code))
        self.rejected.append(call)

    def _would_raise(self, items: list[tuple[Any, Any]]) -> bool:
        """``late="raise"``: whether an arrival of the burst is late (judged in turn)."""
        if self.late != "raise":
            return False
        max_t = self.o.max_t
        for t, _ in items:
            if not self.o.valid(t) or not self.o.covered(t):
                continue
            if max_t is not None and t < max_t - self.o.ooo - self.o.L:
                return True
            max_t = t if max_t is None else max(max_t, t)
        return False

    # ------------------------------------------------------------------ rules
    @precondition(lambda self: not self.closed)
    @rule(data=st.data(), step=st.integers(0, 4), back=st.integers(0, 16))
    def insert(self, data: st.DataObject, step: int, back: int) -> None:
        """One event: in order (back 0), out of order, or late (back past the bound)."""
        self.clock += step
        t, v = self.clock - back, data.draw(self.values)
        if self._would_raise([(t, v)]):
            with pytest.raises(LateEventError):
                self.w.insert(t, v)
            return
        self._took(self.w.insert(t, v))
        self._arrive([(t, v)])

    @precondition(lambda self: not self.closed)
    @rule(data=st.data(), bad=BAD_TIMES)
    def insert_bad_timestamp(self, data: st.DataObject, bad: Any) -> None:
        v = data.draw(self.values)
        self._took(self.w.insert(bad, v))
        self._arrive([(bad, v)])

    @precondition(lambda self: not self.closed)
    @rule(
        data=st.data(),
        step=st.integers(0, 8),
        backs=st.lists(st.integers(0, 14), max_size=10),
        dups=st.integers(0, 3),
        bad=st.lists(BAD_TIMES, max_size=1),
    )
    def insert_many(
        self, data: st.DataObject, step: int, backs: list[int], dups: int, bad: list[Any]
    ) -> None:
        """A burst: colliding timestamps (repeats of its first), maybe a bad timestamp."""
        self.clock += step
        times: list[Any] = [self.clock - b for b in backs]
        if times:
            times += [times[0]] * dups
        times += bad
        order = data.draw(st.permutations(times)) if times else []
        items = [(t, data.draw(self.values)) for t in order]
        if self._would_raise(items):
            with pytest.raises(LateEventError):
                self.w.insert_many(items)
            return
        self._took(self.w.insert_many(items))
        self._arrive(items)

    @precondition(lambda self: not self.closed)
    @rule(ahead=st.integers(-4, 10))
    def advance_watermark(self, ahead: int) -> None:
        wm = self.clock + ahead
        self._took(self.w.advance_watermark(wm))
        self.o.advance(wm)

    @precondition(lambda self: not self.closed)
    @rule()
    def round_trip(self) -> None:
        self.w = self.cls.from_bytes(self.w.to_bytes(), self.m, *self.args, **self.kw)

    @precondition(lambda self: not self.closed)
    @rule()
    def read_counters(self) -> None:
        """``counters`` hands the buffer to the engine: nothing may be lost by that."""
        c = self.w.counters
        assert {k: c[k] for k in self.o.counts} == self.o.counts
        assert self.w.late_count == self.o.counts["late"]
        assert c["emitted"] == sum(r.revision + 1 for r in self.emitted.values())
        assert c["revised"] == sum(r.revision for r in self.emitted.values())

    @precondition(lambda self: not self.closed)
    @rule()
    def close(self) -> None:
        self._took(self.w.close())
        self.o.close()
        self.closed = True
        assert self.w.close() == []

    @precondition(lambda self: self.closed)
    @rule()
    def insert_after_close_raises(self) -> None:
        with pytest.raises(StateError, match="closed"):
            self.w.insert(self.clock, 0)

    # ------------------------------------------------------------------ lockstep
    @invariant()
    def agrees(self) -> None:
        if not hasattr(self, "w"):
            return
        self.w._check()
        got = sorted(
            ((r.start, r.end, r.value, r.count) for r in self.emitted.values()),
            key=lambda x: (x[1], x[0], x[3]),
        )
        want = sorted(self.o.expected(), key=lambda x: (x[1], x[0], x[3]))
        assert got == want
        if not self.closed:
            assert self.w.watermark == self.o.wm
        # per call in arrival order; within a burst as a multiset (a burst's bad timestamps
        # come before its late events: the engine judges lateness when the burst is fed)
        rej = [(repr(r.t), repr(r.value), _code(r.reason)) for r in self.w.rejected]
        assert len(rej) == sum(map(len, self.rejected))
        i = 0
        for call in self.rejected:
            assert sorted(rej[i : i + len(call)]) == sorted(call)
            i += len(call)


TestWindowsMachine = WindowsMachine.TestCase


def test_shared_sizes_below_the_slide_are_refused_with_what_to_use() -> None:
    """A size below the slide leaves gaps that a larger size covers (3 lies in no
    [4k, 4k + 2) window but in [0, 6)); each size runs its own stream, which would refuse
    3 as in no window: the constructor refuses such sizes and names what to use."""
    from windowagg.errors import ArgumentError
    from windowagg.monoids import Sum

    with pytest.raises(ArgumentError, match=r"every size >= the slide 4, got size 2.*window_agg"):
        SharedWindows(Sum(), [2, 6], 4)
    w = SharedWindows(Sum(), [4, 6], 4)  # sizes from the slide up have no gap
    out = w.insert_many([(1, 1), (3, 10), (5, 100)]) + w.close()
    assert {(r.start, r.end): (r.value, r.count) for r in out}[(0, 6)] == (111.0, 3)
    assert w.rejected == []
