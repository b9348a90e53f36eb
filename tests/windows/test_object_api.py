"""The object API over the engine: what the adapters add to ``KeyStream`` (buffering, time
and value conversion, policies, side output, state bytes) and what they refuse.

The answers themselves are the engine's: ``test_parity.py`` compares them with
``windowagg.pandas.window_agg`` for every shape.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from windowagg.aggs import Agg
from windowagg.errors import ArgumentError, ArgumentTypeError, LateEventError, StateError
from windowagg.monoids import Count, Max, Sum
from windowagg.windows import (
    CountWindows,
    Rejected,
    SessionWindows,
    SharedWindows,
    SlidingWindows,
    WindowResult,
)
from windowagg.windows.engine import KeyStream, Shape

SHAPES: dict[str, dict[str, Any]] = {
    "hopping": {"size": 10, "slide": 4},
    "per_event": {"size": 7},
    "count": {"rows": 3, "every": 2},
    "session": {"gap": 4},
}


def make(shape: dict[str, Any], **kw: Any) -> Any:
    if "rows" in shape:
        return CountWindows(Sum(), shape["rows"], shape["every"], **kw)
    if "gap" in shape:
        return SessionWindows(Sum(), shape["gap"], **kw)
    return SlidingWindows(Sum(), shape["size"], shape.get("slide"), **kw)


events = st.lists(st.tuples(st.integers(0, 60), st.integers(1, 9)), max_size=25)


@given(name=st.sampled_from(sorted(SHAPES)), evs=events, ooo=st.sampled_from([0, 3]))
def test_insert_returns_what_the_engine_emits_for_that_arrival(
    name: str, evs: list[tuple[int, int]], ooo: int
) -> None:
    """The buffer is invisible: each ``insert`` returns exactly the windows a KeyStream fed
    one event per micro-batch emits for that event (same order, values, revisions)."""
    shape = SHAPES[name]
    w = make(shape, max_out_of_orderness=ooo, allowed_lateness=8)
    aggs = [
        Agg("value", Sum(), "value", "double", "sum"),
        Agg("count", Count(), None, "bigint", "count"),
    ]
    ks = KeyStream(aggs, Shape(**shape), max_out_of_orderness=ooo, allowed_lateness=8)
    for t, v in evs:
        got = w.insert(t, v)
        res, _ = ks.feed(np.array([t]), {"value": np.array([float(v)])})
        c = res.columns
        want = [
            (s, e, float(x), n, r)
            for s, e, x, n, r in zip(
                c["start"].tolist(), c["end"].tolist(), c["value"].tolist(),
                c["count"].tolist(), c["revision"].tolist(), strict=True,
            )
        ]  # fmt: skip
        assert sorted((r.start, r.end, r.value, r.count, r.revision) for r in got) == sorted(want)
    w._check()


@given(
    name=st.sampled_from(sorted(SHAPES)),
    evs=events,
    cut=st.integers(0, 25),
    late=st.sampled_from(["side", "drop"]),
)
def test_restore_mid_stream_gives_identical_results(
    name: str, evs: list[tuple[int, int]], cut: int, late: str
) -> None:
    shape = SHAPES[name]
    kw = {"max_out_of_orderness": 2, "allowed_lateness": 5, "late": late}
    a, b = make(shape, **kw), make(shape, **kw)
    out_a = a.insert_many(evs[:cut])
    assert b.insert_many(evs[:cut]) == out_a
    c = type(b).from_bytes(b.to_bytes(), Sum(), *_args(shape), **kw)
    assert c.insert_many(evs[cut:]) == a.insert_many(evs[cut:])
    assert c.close() == a.close()
    assert c.rejected == a.rejected and c.counters == a.counters


def _args(shape: dict[str, Any]) -> list[Any]:
    if "rows" in shape:
        return [shape["rows"], shape["every"]]
    if "gap" in shape:
        return [shape["gap"]]
    return [shape["size"], shape.get("slide")]


def test_late_events_are_rejects_by_default_at_watermark_minus_lateness() -> None:
    w = SlidingWindows(Sum(), 10, 10, max_out_of_orderness=2, allowed_lateness=3)
    w.insert_many([(1, 1), (20, 2)])  # watermark 18, bound 15
    assert w.lateness_bound == 15
    w.insert(15, 4)  # t == bound: accepted
    w.insert(14, 8)  # late
    assert w.rejected == [Rejected(14, 8, "late: 14 < lateness bound 15")]
    assert w.counters["late"] == 1 and w.counters["accepted"] == 3


def test_late_but_allowed_event_revises_an_emitted_window() -> None:
    w = SlidingWindows(Max(), 10, 10, allowed_lateness=20)
    assert w.insert_many([(1, 5), (12, 1)]) == [WindowResult(0, 10, 5.0, 1, 0, 0)]
    assert w.insert(3, 9) == [WindowResult(0, 10, 9.0, 2, 1, 0)]
    assert w.counters["revised"] == 1


@pytest.mark.parametrize("how", ["insert", "insert_many"])
def test_late_raise_changes_nothing(how: str) -> None:
    w = SlidingWindows(Sum(), 10, 5, late="raise")
    w.insert_many([(20, 1), (21, 1)])
    before = w.to_bytes()
    with pytest.raises(LateEventError, match="lateness bound"):
        if how == "insert":
            w.insert(3, 1)
        else:
            w.insert_many([(22, 1), (3, 1)])
    assert w.to_bytes() == before


def test_late_drop_counts_only() -> None:
    w = SlidingWindows(Sum(), 10, 5, late="drop")
    w.insert_many([(20, 1), (3, 1)])
    assert w.late_count == 1 and w.rejected == []


def test_bad_timestamps_are_rejects_and_do_not_fix_the_time_type() -> None:
    w = SlidingWindows(Sum(), 10, 10)
    assert w.insert("x", 1) == [] and w.insert(None, 2) == []
    w.insert(datetime(2020, 1, 1), 3)  # int durations: times are ints
    w.insert(4, 4)
    assert [r.reason.split(":")[0] for r in w.rejected] == ["bad_timestamp"] * 3
    assert w.close() == [WindowResult(0, 10, 4.0, 1, 0, 0)]


def test_datetime_times_align_to_the_epoch_and_origin() -> None:
    day = timedelta(days=1)
    w = SlidingWindows(Sum(), day, day, origin=timedelta(hours=6))
    w.insert(datetime(2024, 3, 5, 3), 1)
    (r,) = w.close()
    assert (r.start, r.end) == (datetime(2024, 3, 4, 6), datetime(2024, 3, 5, 6))
    aware = SessionWindows(Sum(), timedelta(minutes=5))
    aware.insert(datetime(2024, 1, 1, tzinfo=UTC), 1)
    aware.insert(datetime(2024, 1, 1), 2)  # naive after aware: a bad timestamp
    assert aware.rejected[0].reason.startswith("bad_timestamp: ")
    (s,) = aware.close()
    assert s.end == datetime(2024, 1, 1, 0, 5, tzinfo=UTC) and s.value == 1.0


def test_float_times_and_removed_options_are_refused_with_what_to_do() -> None:
    with pytest.raises(ArgumentTypeError, match="milliseconds"):
        SlidingWindows(Sum(), 10.0, 5.0)
    with pytest.raises(ArgumentError, match="drop the argument"):
        SlidingWindows(Sum(), 10, 5, aggregator="recalc")
    with pytest.raises(ArgumentError, match="drop the argument"):
        SharedWindows(Sum(), [10], 5, panes=True)
    with pytest.raises(ArgumentTypeError, match="all be timedeltas"):
        SlidingWindows(Sum(), timedelta(seconds=1), 5)
    w = SlidingWindows(Sum(), 10, 5)
    w.insert(1.5, 1)  # a float time: a reject, not an error
    assert w.rejected[0].reason.startswith("bad_timestamp: float")


def test_values_the_engine_cannot_hold() -> None:
    """The exact float built-ins keep float64 values: a string is an error saying what to
    use; non-finite numbers are rejects."""
    w = SlidingWindows(Max(), 10, 10)
    with pytest.raises(ArgumentTypeError, match="class AnyMax"):
        w.insert(1, "a")
    s = SlidingWindows(Sum(), 10, 10)
    s.insert(1, float("nan"))
    s.insert(2, float("inf"))
    s.insert(3, 1)
    assert [r.reason for r in s.rejected] == [
        "non-finite value in 'value': nan",
        "non-finite value in 'value': inf",
    ]
    assert s.close() == [WindowResult(0, 10, 1.0, 1, 0, 0)]


@pytest.mark.parametrize(
    "make",
    [
        lambda m: SlidingWindows(m, 10, 5, allowed_lateness=20),
        lambda m: SlidingWindows(m, 10, allowed_lateness=20),
        lambda m: CountWindows(m, 2, allowed_lateness=20),
        lambda m: SessionWindows(m, 3, allowed_lateness=20),
    ],
    ids=["hopping", "per-event", "count", "session"],
)
def test_values_of_any_type_through_a_user_monoid(make: Any) -> None:
    """Issue 27: a monoid that is not exactly a float built-in takes its values as given
    (the engine holds an object column): a Concat of strings, non-commutative, with a
    late-but-allowed event and a round trip through the state bytes, answers as the
    engine fed the same rows through window_agg's oracle (the final revision of each
    window holds its strings in time order)."""
    from windowagg.monoids import Concat

    rows = [(1, "a"), (4, "b"), (2, "c"), (12, "d"), (3, "e"), (30, "f")]
    w = make(Concat())
    out = []
    for t, v in rows[:4]:
        out += w.insert(t, v)
    w = type(w).from_bytes(w.to_bytes(), Concat(), *_config(w), allowed_lateness=20)
    for t, v in rows[4:]:
        out += w.insert(t, v)
    out += w.close()
    assert not w.rejected
    final: dict[Any, Any] = {}
    for r in out:  # the latest revision of every window
        final[r.id if r.id is not None else (r.start, r.end)] = r
    by_time = sorted(rows)
    for r in final.values():
        inside = [v for t, v in by_time if _holds(w, r, t)]
        assert r.value == tuple(inside), r
    assert any(r.revision for r in out)  # (3, "e") revised an emitted window


def _config(w: Any) -> tuple[Any, ...]:
    if isinstance(w, CountWindows):
        return (w.n,)
    if isinstance(w, SessionWindows):
        return (w.gap,)
    return (w.size, w.slide)


def _holds(w: Any, r: Any, t: int) -> bool:
    """Whether window *r* holds time *t* (the rows' times are distinct)."""
    if isinstance(w, SlidingWindows):
        return bool(r.end - w.size < t <= r.end if w.slide is None else r.start <= t < r.end)
    return bool(r.start <= t <= r.end)  # count windows and sessions: first to last event


def test_a_sketch_monoid_keeps_its_int_values() -> None:
    """QDigest keys are ints: they reach its lift as ints (the engine no longer makes them
    floats), and the window round-trips through its state bytes."""
    from windowagg.sketches import QDigestMonoid

    m = QDigestMonoid(universe=64, eps=0.1)
    w = SlidingWindows(m, 10, 5)
    first = w.insert_many([(1, 3), (7, 9)])  # the watermark 7 closes [-5, 5)
    assert not w.rejected
    w2 = SlidingWindows.from_bytes(w.to_bytes(), m, 10, 5)
    got, want = w2.close(), w.close()
    assert got == want and [r.count for r in first + want] == [1, 2, 1]


def test_times_in_a_gap_are_rejects_in_no_window() -> None:
    w = SlidingWindows(Sum(), 3, 5)
    w.insert_many([(1, 1), (4, 2)])
    assert w.rejected[0].t == 4 and w.rejected[0].reason.startswith("in no window: 4 lies")
    assert w.counters["unassigned"] == 1
    assert w.close() == [WindowResult(0, 3, 1.0, 1, 0, 0)]


def test_insert_after_close_raises() -> None:
    w = SlidingWindows(Sum(), 10, 5)
    w.insert(1, 1)
    w.close()
    assert w.close() == []
    with pytest.raises(StateError, match="make a new one"):
        w.insert(2, 1)


def test_per_event_windows_at_the_watermark_or_on_arrival() -> None:
    at_wm = SlidingWindows(Sum(), 5, max_out_of_orderness=2, allowed_lateness=10)
    assert at_wm.insert(1, 1) == []
    assert at_wm.insert(3, 2) == [WindowResult(-4, 1, 1.0, 1, 0, 0)]
    assert at_wm.insert(2, 4) == []  # late but allowed: (-3, 2] closes only at 2
    assert at_wm.close()[-1] == WindowResult(-2, 3, 7.0, 3, 0, 1)
    arrival = SlidingWindows(Sum(), 5, emit="arrival", allowed_lateness=10)
    assert arrival.insert(1, 1) == [WindowResult(-4, 1, 1.0, 1, 0, 0)]
    assert arrival.insert(3, 2) == [WindowResult(-2, 3, 3.0, 2, 0, 1)]
    assert arrival.insert(2, 4) == [WindowResult(-3, 2, 5.0, 2, 0, 2)]  # as of its arrival
    with pytest.raises(ArgumentError, match="emit='arrival'"):
        SlidingWindows(Sum(), 5, 5, emit="arrival")


def test_a_long_idle_stretch_is_one_step() -> None:
    w = SlidingWindows(Sum(), 10, 5)
    w.insert(0, 1)
    out = w.insert(10**15, 2)
    assert [(r.start, r.end) for r in out] == [(-5, 5), (0, 10)]
    assert w.next_deadline() == 10**15 + 5


def test_count_windows_tail_is_rejected_at_close_and_rows_below_every_refused() -> None:
    w = CountWindows(Sum(), 2, every=2)
    out = w.insert_many([(1, 1), (2, 2), (3, 4)])
    assert out == [WindowResult(1, 2, 3.0, 2, 0, 0)]
    assert w.close() == []
    assert [(r.t, r.value) for r in w.rejected] == [(3, 4.0)]
    assert w.rejected[0].reason.startswith("in no window: one of its key's last 1 events")
    with pytest.raises(ArgumentError, match="rows >= every"):
        CountWindows(Sum(), 2, every=3)
    with pytest.raises(ArgumentError, match="int >= 1"):
        CountWindows(Sum(), 0)


def test_shared_windows_emit_per_end_sizes_ascending() -> None:
    w = SharedWindows(Sum(), [20, 10], 10)
    out = w.insert_many([(5, 1), (15, 2)]) + w.close()
    assert [(r.start, r.end) for r in out] == [(0, 10), (-10, 10), (10, 20), (0, 20), (10, 30)]
    assert w.sizes == (10, 20)
    with pytest.raises(ArgumentError, match="distinct sizes"):
        SharedWindows(Sum(), [10, 10], 5)


def test_state_of_another_kind_monoid_or_configuration_is_a_codec_error() -> None:
    from windowagg.errors import CodecError

    w = SlidingWindows(Sum(), 10, 5)
    w.insert(1, 1)
    data = w.to_bytes()
    with pytest.raises(CodecError, match="monoid"):
        SlidingWindows.from_bytes(data, Max(), 10, 5)
    with pytest.raises(CodecError, match="written for"):
        SlidingWindows.from_bytes(data, Sum(), 10, 10)
    with pytest.raises(CodecError, match="sliding"):
        CountWindows.from_bytes(data, Sum(), 2)
    with pytest.raises(CodecError):
        SlidingWindows.from_bytes(data[:-3], Sum(), 10, 5)


@pytest.mark.parametrize("burst", [False, True])
def test_shared_windows_emit_a_larger_sizes_window_that_ends_first(burst: bool) -> None:
    """Sizes 3 and 4 every 3: an event at -3 is in [-3, 0) (size 3) and in [-6, -2)
    (size 4), which ends first; an event at 1 (out-of-orderness 2: watermark -1) closes
    [-6, -2). SharedWindows judged the first end an event can close by the smallest size
    alone and kept the window until a later call (the state machine found it)."""
    w = SharedWindows(Max(), [3, 4], 3, max_out_of_orderness=2)
    pairs = [(-3, 0.0), (1, 0.0)]
    got = w.insert_many(pairs) if burst else [r for t, v in pairs for r in w.insert(t, v)]
    assert [(r.start, r.end, r.value, r.count) for r in got] == [(-6, -2, 0.0, 1)]
    assert SlidingWindows(Max(), 4, 3, max_out_of_orderness=2).insert_many(pairs) == got
