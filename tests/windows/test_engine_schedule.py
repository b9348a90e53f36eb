"""The engine's :class:`~windowagg.windows.engine.schedule.Schedule`: a front end that holds
arrivals and feeds them only when the schedule says so emits, arrival by arrival, what a
stream fed every arrival emits (the object API's own test against the engine:
``test_adapter_schedule.py``)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from windowagg.aggs import parse_aggs
from windowagg.windows.engine import KeyStream, Shape
from windowagg.windows.engine.schedule import Schedule

AGGS = parse_aggs(["sum(v)", "count"])

SHAPES: dict[str, list[dict[str, int]]] = {
    "tumbling": [{"size": 5, "slide": 5}],
    "hopping": [{"size": 10, "slide": 4, "start_time": 3}],
    "per_event": [{"size": 6}],
    "session": [{"gap": 3}],
    "count": [{"rows": 3, "every": 2}],
    "sizes": [{"size": 3, "slide": 3}, {"size": 4, "slide": 3}, {"size": 10, "slide": 3}],
}


def _streams(fields: list[dict[str, int]], ooo: int, lateness: int) -> list[KeyStream]:
    return [
        KeyStream(AGGS, Shape.of(**f), max_out_of_orderness=ooo, allowed_lateness=lateness)
        for f in fields
    ]


def _rows(steps: list[Any]) -> list[tuple[Any, ...]]:
    out = []
    for i, (res, _) in enumerate(steps):
        c = res.columns
        out += zip(
            c["end"].tolist(), [i] * len(c["end"]), c["start"].tolist(),
            c["sum_v"].tolist(), c["count"].tolist(), c["revision"].tolist(), strict=True,
        )  # fmt: skip
    return sorted(out)


@pytest.mark.parametrize("name", sorted(SHAPES))
@given(
    ooo=st.integers(0, 3),
    lateness=st.integers(0, 4),
    arrivals=st.lists(st.one_of(st.integers(-5, 6), st.just(None)), max_size=40),
)
def test_feeding_when_the_schedule_says_emits_what_every_arrival_does(
    name: str, ooo: int, lateness: int, arrivals: list[int | None]
) -> None:
    """*arrivals*: an event that far behind the newest time (negative: ahead), or None: the
    watermark advanced by 2. Events of one value: sums are exact in any order."""
    fields = SHAPES[name]
    each, held_streams = _streams(fields, ooo, lateness), _streams(fields, ooo, lateness)
    shapes = [Shape.of(**f) for f in fields]
    sched = Schedule(shapes, held_streams, max_out_of_orderness=ooo, allowed_lateness=lateness)
    held: list[int] = []
    newest = 0
    for back in arrivals:
        if back is None:  # an advance feeds what is held first, then moves the clock
            wm = newest + 2 - ooo
            want = _rows([s.advance(wm) for s in each])
            got = []
            if held:
                got = _rows([s.feed(np.array(held), {"v": np.ones(len(held))})
                             for s in held_streams])  # fmt: skip
                sched.fed(len(held))
                held = []
            if sched.advance(wm):
                got += _rows([s.advance(wm) for s in held_streams])
                sched.fed(0)
            newest += 2
            assert sorted(got) == want
            continue
        x = newest - back
        newest = max(newest, x)
        want_steps = [s.feed(np.array([x]), {"v": np.ones(1)}) for s in each]
        late = want_steps[0][0].refused.tolist()
        assert (sched.late(x) is not None) == bool(late)  # the schedule's clock judges alike
        held.append(x)
        if sched.hold(x):
            steps = [s.feed(np.array(held), {"v": np.ones(len(held))}) for s in held_streams]
            sched.fed(len(held) - len(steps[0][0].refused))
            held = []
            assert _rows(steps) == _rows(want_steps)
        else:  # held: the arrival closes nothing, and refuses nothing
            assert _rows(want_steps) == [] and not late
        assert sched.watermark == each[0].watermark


def test_unhold_and_put_back_restore_the_schedule() -> None:
    s = Schedule([Shape(size=10, slide=5)], max_out_of_orderness=1)
    s.hold(3)
    before = s.saved()
    assert s.hold(20)
    s.unhold()
    assert s.saved() == before
    s.hold(30)
    s.put_back(before)
    assert (s.newest, s.watermark, s.bound) == (3, 2, 2)


def test_advance_is_a_no_op_not_ahead_of_the_watermark() -> None:
    s = Schedule([Shape(gap=3)], max_out_of_orderness=2)
    assert s.advance(5) and s.watermark == 5
    assert not s.advance(5) and not s.advance(4)
    assert s.advance(6) and s.newest == 8


def test_count_windows_wait_for_events_that_complete_one() -> None:
    """Nothing is due from count windows' held events until they complete a window (while
    none is pending); with a restored stream, the events it admitted count."""
    s = Schedule([Shape(rows=4, every=3)], admitted=5)
    assert s.hold(100) and s.due == 100  # the 6th event completes the second window
    t = Schedule([Shape(rows=4, every=3)], admitted=3)
    assert not t.hold(100) and not t.hold(101) and t.due == float("inf")
    assert t.hold(102)  # the 6th event: due at 102, the watermark's


def test_several_sizes_take_the_earliest_first_end() -> None:
    """A larger size's first window holding an event can end before the smaller's (sizes 3
    and 4 every 3: -3 is in [-6, -2) and in [-3, 0)); the bug of 2297fe2, in the adapter's
    copy of this decision then."""
    s = Schedule([Shape(size=3, slide=3), Shape(size=4, slide=3)])
    assert not s.hold(-3)
    assert s.due == -2
    assert s.hold(-2)  # watermark -2 closes [-6, -2)


@pytest.mark.parametrize("name", sorted(SHAPES))
@given(
    ooo=st.integers(0, 3),
    fed=st.lists(st.integers(-5, 6), max_size=6),
    burst=st.lists(st.integers(-5, 6), max_size=12),
)
def test_hold_many_is_hold_of_each(name: str, ooo: int, fed: list[int], burst: list[int]) -> None:
    """A burst's holds (the one-size hopping loop inline) leave the state, and ask for a
    feed, as holding each in turn; *fed*: arrivals held and fed before (due on the grid)."""
    shapes = [Shape.of(**f) for f in SHAPES[name]]
    one, many = (Schedule(shapes, max_out_of_orderness=ooo) for _ in range(2))
    for s in (one, many):
        for x in fed:
            s.hold(x)
        if fed:
            s.fed(len(fed))
    feed = False
    for x in burst:
        feed = one.hold(x) or feed
    assert many.hold_many(burst) == feed
    assert many.saved() == one.saved()
