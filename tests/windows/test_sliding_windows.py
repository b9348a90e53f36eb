"""SlidingWindows against the brute-force TimeOracle over random out-of-order streams."""

from __future__ import annotations

import datetime as dt
import math
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from support import MONOID_MATRIX
from support import value_at as value
from windowagg.errors import LateEventError, TimestampError, WindowaggError
from windowagg.monoids import Concat, Counting, Max, Sum
from windowagg.windows import Rejected, SlidingWindows, WindowResult
from windows.windows_oracle import TimeOracle

AGGREGATORS = ["recalc", "fiba"]
BASE = dt.datetime(2024, 3, 1, 12, 0, 0)


class Units:
    """Maps abstract integer times/durations to ints, dyadic floats, datetimes, or mixes."""

    def __init__(self, kind: str) -> None:
        self.kind = kind

    def t(self, x: int) -> Any:
        if self.kind in ("int", "int_ts_float_dur"):
            return x
        if self.kind in ("float", "float_ts_int_dur"):
            return x * 0.25
        return BASE + dt.timedelta(seconds=x)

    def d(self, x: int) -> Any:
        if self.kind in ("int", "float_ts_int_dur"):
            return x
        if self.kind == "float":
            return x * 0.25
        if self.kind == "int_ts_float_dur":
            return x * 0.5
        return dt.timedelta(seconds=x)

    def origin(self, x: int) -> Any:
        return self.d(x)


@st.composite
def scenarios(draw: st.DrawFn, per_event: bool = False) -> dict[str, Any]:
    kind = draw(
        st.sampled_from(["int", "float", "datetime", "float_ts_int_dur", "int_ts_float_dur"])
    )
    size = draw(st.integers(1, 12))
    slide = None if per_event else draw(st.integers(1, 15))
    ops: list[tuple[str, Any]] = []
    clock = draw(st.integers(-20, 20))
    i = 0
    for _ in range(draw(st.integers(1, 25))):
        op = draw(st.sampled_from(["one", "one", "one", "burst", "wm"]))
        clock += draw(st.integers(0, 5))
        if op == "wm":
            ops.append(("wm", clock - draw(st.integers(0, 6))))
            continue
        n = 1 if op == "one" else draw(st.integers(0, 8))
        batch = []
        for _ in range(n):
            batch.append((clock - draw(st.integers(0, 12)), i))
            i += 1
        ops.append((op, batch))
    return {
        "kind": kind,
        "size": size,
        "slide": slide,
        "origin": draw(st.integers(-3, 3)) if kind != "datetime" else draw(st.integers(0, 3)),
        "ooo": draw(st.integers(0, 6)),
        "lateness": draw(st.integers(0, 8)),
        "late": draw(st.sampled_from(["drop", "side"])),
        "monoid": draw(st.sampled_from(sorted(MONOID_MATRIX))),
        "panes": draw(st.sampled_from([None, False, True])),
        "ops": ops,
    }


def run_scenario(sc: dict[str, Any], aggregator: str, restore_at: int | None = None) -> None:
    u = Units(sc["kind"])
    name = sc["monoid"]
    m = MONOID_MATRIX[name]
    panes = sc["panes"]
    if sc["slide"] is None or (panes and not getattr(m, "commutative", False)):
        panes = None if sc["slide"] is None else False
    kw = dict(
        origin=u.origin(sc["origin"]),
        max_out_of_orderness=u.d(sc["ooo"]),
        allowed_lateness=u.d(sc["lateness"]),
        late=sc["late"],
    )
    slide = None if sc["slide"] is None else u.d(sc["slide"])
    w = SlidingWindows(m, u.d(sc["size"]), slide, aggregator=aggregator, panes=panes, **kw)
    o = TimeOracle(
        m,
        [u.d(sc["size"])],
        slide,
        origin=kw["origin"],
        ooo=kw["max_out_of_orderness"],
        lateness=kw["allowed_lateness"],
        late=sc["late"],
    )
    for step, (op, arg) in enumerate(sc["ops"]):
        if restore_at is not None and step == restore_at:
            w = SlidingWindows.from_bytes(w.to_bytes(), m, aggregator=aggregator)
        if op == "wm":
            got = w.advance_watermark(u.t(arg))
            exp = o.advance(u.t(arg))
        elif op == "one":
            ((t, v),) = arg
            got = w.insert(u.t(t), value(name, v))
            exp = o.batch([(u.t(t), value(name, v))])
        else:
            items = [(u.t(t), value(name, v)) for t, v in arg]
            got = w.insert_many(items)
            exp = o.batch(items)
        assert got == exp, (step, op, arg)
        w._check()
        assert w.watermark == o.wm
        assert w.late_count == o.late_count
        assert w.counters["unassigned"] == o.unassigned
        assert [(r.t, r.value) for r in w.rejected] == [(r.t, r.value) for r in o.rejected]
    assert w.close() == o.close()


@pytest.mark.parametrize("aggregator", AGGREGATORS)
@given(sc=scenarios())
def test_sliding_matches_oracle(aggregator: str, sc: dict[str, Any]) -> None:
    run_scenario(sc, aggregator)


@pytest.mark.parametrize("aggregator", AGGREGATORS)
@given(sc=scenarios(per_event=True))
def test_per_event_matches_oracle(aggregator: str, sc: dict[str, Any]) -> None:
    run_scenario(sc, aggregator)


@pytest.mark.parametrize("aggregator", AGGREGATORS)
@given(sc=scenarios(), cut=st.integers(0, 30))
def test_restore_mid_stream_gives_identical_results(
    aggregator: str, sc: dict[str, Any], cut: int
) -> None:
    run_scenario(sc, aggregator, restore_at=cut)


# ------------------------------------------------------------------------ exact edges


@pytest.mark.parametrize("aggregator", AGGREGATORS)
def test_event_exactly_at_lateness_bound_is_accepted(aggregator: str) -> None:
    w = SlidingWindows(
        Sum(), 10, 2, max_out_of_orderness=3, allowed_lateness=2, aggregator=aggregator
    )
    w.insert(20, 1)  # watermark 17; bound = max(17 - 2, open start 8) = 15
    assert w.watermark == 17 and w.lateness_bound == 15
    w.insert(15, 1)
    assert w.late_count == 0
    w.insert(14, 1)
    assert w.late_count == 1


@pytest.mark.parametrize("aggregator", AGGREGATORS)
def test_late_raise_changes_nothing(aggregator: str) -> None:
    w = SlidingWindows(Concat(), 4, 4, late="raise", aggregator=aggregator)
    w.insert(10, "a")
    before = w.to_bytes()
    with pytest.raises(LateEventError, match="lateness bound"):
        w.insert(3, "late")
    with pytest.raises(LateEventError):
        w.insert_many([(11, "b"), (2, "late")])
    assert w.to_bytes() == before
    assert w.insert_many([(11, "b"), (13, "c")]) == [WindowResult(8, 12, ("a", "b"), 2)]


@pytest.mark.parametrize("aggregator", AGGREGATORS)
def test_late_side_output_and_drop_counter(aggregator: str) -> None:
    side = SlidingWindows(Sum(), 5, 5, late="side", aggregator=aggregator)
    drop = SlidingWindows(Sum(), 5, 5, late="drop", aggregator=aggregator)
    for w in (side, drop):
        w.insert(12, 1)
        w.insert(3, 7)
        assert w.late_count == 1
    assert side.rejected == [Rejected(3, 7, "late: 3 < lateness bound 12")]
    assert drop.rejected == []


@pytest.mark.parametrize("aggregator", AGGREGATORS)
def test_bad_input_goes_to_rejected_and_window_survives(aggregator: str) -> None:
    w = SlidingWindows(Sum(), 10, 10, aggregator=aggregator)
    w.insert(1, 5)
    w.insert(float("nan"), 1)
    w.insert(None, 1)
    w.insert("2", 1)
    w.insert(2, "abc")  # Sum cannot add a str to an int
    w.insert_many([(3, 1), (None, 2), (4, "x"), (5, 2)])
    codes = [r.reason.split(":")[0] for r in w.rejected]
    assert codes == ["bad_timestamp"] * 3 + ["bad_value", "bad_timestamp", "bad_value"]
    assert w.counters["bad_timestamp"] == 4 and w.counters["bad_value"] == 2
    assert w.close() == [WindowResult(0, 10, 8, 3)]


def test_bad_first_timestamp_type_does_not_poison_the_window() -> None:
    w = SlidingWindows(Sum(), 10, 10, aggregator="recalc")
    w.insert("x", 1)  # str - int is not defined: rejected, and the grid stays unresolved
    w.insert(3, 1)
    assert w.counters["bad_timestamp"] == 1 and w.close() == [WindowResult(0, 10, 1, 1)]


def test_datetime_windows_align_to_epoch_and_origin() -> None:
    base = dt.datetime(2024, 1, 1, 0, 7)
    w = SlidingWindows(
        Sum(),
        dt.timedelta(minutes=10),
        dt.timedelta(minutes=5),
        origin=dt.timedelta(minutes=1),
        aggregator="recalc",
    )
    w.insert(base, 1)
    res = w.close()
    assert [(r.start.minute, r.end.minute) for r in res] == [(1, 11), (6, 16)]


def test_aware_datetimes() -> None:
    utc = dt.UTC
    w = SlidingWindows(
        Max(), dt.timedelta(seconds=10), dt.timedelta(seconds=10), aggregator="recalc"
    )
    w.insert(dt.datetime(2024, 1, 1, 0, 0, 3, tzinfo=utc), 4)
    res = w.advance_watermark(dt.datetime(2024, 1, 1, 0, 0, 10, tzinfo=utc))
    assert res == [
        WindowResult(
            dt.datetime(2024, 1, 1, tzinfo=utc), dt.datetime(2024, 1, 1, 0, 0, 10, tzinfo=utc), 4, 1
        )
    ]


def test_float_half_open_ends_use_one_ulp() -> None:
    w = SlidingWindows(Concat(), 1.0, 1.0, aggregator="recalc")
    res = w.insert_many([(0.0, "a"), (math.nextafter(1.0, 0.0), "b"), (1.0, "c")])
    assert res + w.close() == [
        WindowResult(0.0, 1.0, ("a", "b"), 2),
        WindowResult(1.0, 2.0, ("c",), 1),
    ]


def test_panes_coarsen_commutative_state() -> None:
    w = SlidingWindows(Sum(), 60, 10, aggregator="recalc")
    assert w.panes == 10
    w.insert_many([(t, 1) for t in range(0, 50)])
    assert len(w) == 5  # five panes of width 10 instead of 50 timestamps
    exact = SlidingWindows(Sum(), 60, 10, aggregator="recalc", panes=False)
    exact.insert_many([(t, 1) for t in range(0, 50)])
    assert len(exact) == 50 and w.close() == exact.close()


def test_non_commutative_default_keeps_event_time_order() -> None:
    w = SlidingWindows(Concat(), 60, 10, aggregator="recalc")
    assert w.panes is None
    w.insert_many([(5, "b"), (1, "a"), (5, "c")])
    assert w.close()[0].value == ("a", "b", "c")


def test_gap_events_are_counted_unassigned() -> None:
    w = SlidingWindows(Sum(), 2, 5, aggregator="recalc")  # windows [0,2), [5,7), ...
    res = w.insert_many([(1, 1), (3, 1), (5, 1)])
    assert w.counters["unassigned"] == 1
    assert res + w.close() == [WindowResult(0, 2, 1, 1), WindowResult(5, 7, 1, 1)]


def test_long_idle_gap_is_skipped_without_scanning() -> None:
    m = Counting(Sum())
    w = SlidingWindows(m, 10, 1, aggregator="recalc", panes=False)
    w.insert(0, 1)
    m.reset()
    res = w.insert(10**9, 1)  # a billion slides later: emits the 10 windows holding t=0
    assert len(res) == 10
    assert m.combines < 200


def test_insert_after_close_raises() -> None:
    w = SlidingWindows(Sum(), 10, 10, aggregator="recalc")
    w.close()
    with pytest.raises(WindowaggError, match="closed"):
        w.insert(1, 1)


def test_bad_configuration() -> None:
    with pytest.raises(ValueError, match="size"):
        SlidingWindows(Sum(), 0, 1)
    with pytest.raises(TypeError):
        SlidingWindows(Sum(), "10", 1)
    with pytest.raises(ValueError, match="late"):
        SlidingWindows(Sum(), 10, 1, late="ignore")
    with pytest.raises(ValueError, match="aggregator"):
        SlidingWindows(Sum(), 10, 1, aggregator="btree-ish")
    with pytest.raises(ValueError, match="panes"):
        SlidingWindows(Sum(), 10, None, panes=True)
    w = SlidingWindows(Sum(), 10, 1, aggregator="recalc")
    w.insert(1, 1)
    with pytest.raises(TimestampError):
        w.advance_watermark(float("nan"))


@pytest.mark.parametrize("aggregator", AGGREGATORS)
def test_pending_buffer_overflow_flushes_without_changing_results(aggregator: str) -> None:
    # 5000 distinct timestamps and no window closing: the pending buffer flushes at 4096
    w = SlidingWindows(Concat(), 10_000, 10_000, max_out_of_orderness=20_000, aggregator=aggregator)
    o = TimeOracle(Concat(), [10_000], 10_000, ooo=20_000)
    items = [((i * 7919) % 5000, i) for i in range(5000)]
    for t, v in items:
        assert w.insert(t, v) == o.batch([(t, v)])
    assert len(w.aggregator) == 5000
    w._check()
    assert w.close() == o.close()


def _combines_per_emitted_window(n_per_window: int) -> float:
    m = Counting(Sum())
    w = SlidingWindows(m, n_per_window, 10, aggregator="fiba", panes=False)
    w.insert_many([(t, 1) for t in range(n_per_window)])
    emitted = 0
    m.reset()
    for t in range(n_per_window, 3 * n_per_window):
        emitted += len(w.insert(t, 1))
    # subtract the per-event cost (validation + bulk insert) measured separately
    per_window = m.combines / emitted
    return per_window


def test_emission_cost_grows_logarithmically_not_linearly() -> None:
    small = _combines_per_emitted_window(1_000)
    large = _combines_per_emitted_window(16_000)
    # 16x more events per window: a rescan would cost ~16x more per window; one range
    # query per window (plus one bulk_insert of the slide's 10 events) costs O(log n) more
    assert large < 2 * small, (small, large)


def test_state_rejects_foreign_or_corrupt_bytes() -> None:
    from windowagg import codec
    from windowagg.errors import CodecError
    from windowagg.windows import CountWindows, SharedWindows

    w = SlidingWindows(Sum(), 10, 5, aggregator="recalc")
    w.insert(3, object())  # a bad value whose repr is stored in the side output
    w.insert(4, 2)
    data = w.to_bytes()
    restored = SlidingWindows.from_bytes(data, Sum(), aggregator="recalc")
    assert restored.rejected[0].reason.endswith("(stored as repr)")
    with pytest.raises(CodecError, match="holds 'SlidingWindows' state"):
        SharedWindows.from_bytes(data, Sum())
    with pytest.raises(CodecError, match="holds 'SlidingWindows' state"):
        CountWindows.from_bytes(data, Sum())
    with pytest.raises(CodecError, match="monoid"):
        SlidingWindows.from_bytes(data, Max())
    with pytest.raises(CodecError):
        SlidingWindows.from_bytes(data[:-3], Sum())
    with pytest.raises(CodecError, match="does not hold window state"):
        SlidingWindows.from_bytes(codec.dumps({"kind": "SlidingWindows"}), Sum())
    bad = list(codec.loads(data))
    bad[1] = 99
    with pytest.raises(CodecError, match="version 99"):
        SlidingWindows.from_bytes(codec.dumps(tuple(bad)), Sum())
    bad = list(codec.loads(data))
    bad[8] = [4, 0, 2]  # an entry with a count of 0
    with pytest.raises(CodecError, match="entry count"):
        SlidingWindows.from_bytes(codec.dumps(tuple(bad)), Sum())


def test_state_is_compact() -> None:
    w = SlidingWindows(Sum(), 600_000, 10_000, aggregator="fiba")
    w.insert_many([(t * 100, 1) for t in range(6000)])  # 6000 events in 60 panes
    assert len(w) == 60
    assert len(w.to_bytes()) < 1000


def test_pandas_timestamps_keep_nanoseconds_at_window_ends() -> None:
    pd = pytest.importorskip("pandas")
    w = SlidingWindows(
        Concat(), dt.timedelta(seconds=10), dt.timedelta(seconds=10), aggregator="recalc"
    )
    res = (
        w.insert_many(
            [
                (pd.Timestamp("2024-01-01 00:00:03"), "a"),
                (pd.Timestamp("2024-01-01 00:00:09.999999999"), "b"),
                (pd.Timestamp("2024-01-01 00:00:10"), "c"),
            ]
        )
        + w.close()
    )
    assert [r.value for r in res] == [("a", "b"), ("c",)]
    assert res[0].end == pd.Timestamp("2024-01-01 00:00:10")


def test_float_timestamps_with_int_durations() -> None:
    w = SlidingWindows(Concat(), 10, 10, aggregator="recalc")
    res = w.insert_many([(9.5, "a"), (9.999, "b"), (10.0, "c")]) + w.close()
    assert [r.value for r in res] == [("a", "b"), ("c",)]


def test_forced_panes_on_non_commutative_monoid_use_arrival_order_within_a_pane() -> None:
    # documented trade-off: panes=True combines inside a pane in arrival order
    w = SlidingWindows(Concat(), 20, 10, aggregator="recalc", panes=True)
    res = w.insert_many([(5, "late-in-pane"), (1, "early"), (12, "next-pane")]) + w.close()
    assert res[1] == WindowResult(0, 20, ("late-in-pane", "early", "next-pane"), 3)
    exact = SlidingWindows(Concat(), 20, 10, aggregator="recalc")
    res = exact.insert_many([(5, "late-in-pane"), (1, "early"), (12, "next-pane")])
    res += exact.close()
    assert res[1] == WindowResult(0, 20, ("early", "late-in-pane", "next-pane"), 3)


def test_mixed_duration_kinds_are_refused_at_construction() -> None:
    with pytest.raises(TypeError, match="all be timedeltas"):
        SlidingWindows(
            Sum(), dt.timedelta(seconds=10), dt.timedelta(seconds=5), max_out_of_orderness=5
        )
    with pytest.raises(TypeError, match="all be timedeltas"):
        SlidingWindows(Sum(), 10, dt.timedelta(seconds=5))


@pytest.mark.parametrize("aggregator", AGGREGATORS)
def test_naive_and_aware_datetimes_do_not_mix(aggregator: str) -> None:
    w = SlidingWindows(
        Sum(), dt.timedelta(seconds=10), dt.timedelta(seconds=10), aggregator=aggregator
    )
    w.insert(dt.datetime(2024, 1, 1, 0, 0, 1), 1)
    w.insert(dt.datetime(2024, 1, 1, 0, 0, 2, tzinfo=dt.UTC), 1)
    assert w.counters["bad_timestamp"] == 1
    assert [r.count for r in w.close()] == [1]


def test_float_timestamp_in_an_exact_int_stream_is_rejected() -> None:
    w = SlidingWindows(Concat(), 10, 10, aggregator="recalc")
    w.insert(9, "a")
    w.insert(9.5, "b")  # would fall behind the inclusive end 9 of [0, 10)
    w.insert_many([(9.75, "c")])
    assert w.counters["bad_timestamp"] == 2
    assert "one timestamp type" in w.rejected[0].reason
    p = SlidingWindows(Sum(), 10, 10, aggregator="recalc")  # panes: any numbers mix
    p.insert_many([(9, 1), (9.5, 2), (10, 4)])
    assert [r.value for r in p.close()] == [4]


@given(
    st.lists(st.integers(0, 200), min_size=1, max_size=40),
    st.sampled_from([(20, 5), (20, 20), (15, 40), (30, None)]),
    st.booleans(),
    st.integers(0, 10),
)
def test_next_deadline_is_exactly_when_the_watermark_has_work(
    ts: list[int], size_slide: tuple[int, int | None], commutative: bool, lateness: int
) -> None:
    """Below the deadline a watermark emits nothing; at it, a hopping window with events
    closes; None comes only when nothing stored can be emitted any more (so a fresh
    object started at the watermark would judge every later event the same way)."""
    size, slide = size_slide
    monoid: Any = Sum() if commutative else Concat()
    w = SlidingWindows(monoid, size, slide, max_out_of_orderness=300, allowed_lateness=lateness)
    for t in ts:
        w.insert(t, value("sum" if commutative else "concat", t))
    emitted = 0
    for _ in range(len(ts) + 60):
        d = w.next_deadline()
        if d is None:
            break
        wm = w.watermark
        if d - 1 > wm:
            assert w.advance_watermark(d - 1) == []
        got = w.advance_watermark(d)
        if slide is not None:
            assert got and all(r.end == d for r in got[:1])
            emitted += len(got)
    else:
        raise AssertionError("the deadlines never ran out")
    if slide is not None:
        assert len(w) == 0 and w.close() == []  # everything was emitted on the way
        assert emitted == w.counters["emitted"]
    else:
        youngest = max(ts)
        assert w.watermark >= youngest + size + lateness  # every stored event is dead
