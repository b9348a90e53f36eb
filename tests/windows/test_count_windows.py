"""CountWindows against the brute-force CountOracle (last n events in event-time order)."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from support import MONOID_MATRIX
from support import value_at as value
from windowagg.errors import LateEventError
from windowagg.monoids import Concat, Counting, Sum
from windowagg.windows import CountWindows, WindowResult
from windows.windows_oracle import CountOracle

AGGREGATORS = ["recalc", "fiba"]


@pytest.mark.parametrize("aggregator", AGGREGATORS)
@given(
    name=st.sampled_from(sorted(MONOID_MATRIX)),
    n=st.integers(1, 8),
    every=st.integers(1, 4),
    ooo=st.one_of(st.none(), st.integers(0, 6)),
    lateness=st.integers(0, 4),
    late=st.sampled_from(["drop", "side"]),
    kind=st.sampled_from(["int", "float", "datetime"]),
    ops=st.lists(
        st.tuples(st.booleans(), st.lists(st.integers(-10, 3), min_size=1, max_size=6)),
        max_size=20,
    ),
    restore_at=st.one_of(st.none(), st.integers(0, 20)),
)
def test_count_windows_match_oracle(
    aggregator: str,
    name: str,
    n: int,
    every: int,
    ooo: Any,
    lateness: int,
    late: str,
    kind: str,
    ops: list[tuple[bool, list[int]]],
    restore_at: int | None,
) -> None:
    def T(x: int) -> Any:
        return {
            "int": x,
            "float": x * 0.5,
            "datetime": dt.datetime(2024, 1, 1) + dt.timedelta(seconds=x),
        }[kind]

    def D(x: int) -> Any:
        return {"int": x, "float": x * 0.5, "datetime": dt.timedelta(seconds=x)}[kind]

    m = MONOID_MATRIX[name]
    kw: dict[str, Any] = {
        "max_out_of_orderness": None if ooo is None else D(ooo),
        "allowed_lateness": D(lateness),
        "late": late,
    }
    w = CountWindows(m, n, every, aggregator=aggregator, **kw)
    o = CountOracle(m, n, every, ooo=kw["max_out_of_orderness"], lateness=D(lateness), late=late)
    clock, i = 0, 0
    for step, (burst, deltas) in enumerate(ops):
        if step == restore_at:
            w = CountWindows.from_bytes(w.to_bytes(), m, aggregator=aggregator)
        items = []
        for d in deltas:
            clock += 1
            items.append((T(clock + d), value(name, i)))
            i += 1
        got = w.insert_many(items) if burst else [r for t, v in items for r in w.insert(t, v)]
        exp = [r for t, v in items for r in o.insert(t, v)]
        assert got == exp
        w._check()
        assert w.late_count == o.late_count
        assert [(r.t, r.value) for r in w.rejected] == [(r.t, r.value) for r in o.rejected]


def test_count_window_costs_constant_combines_per_event_with_fiba() -> None:
    m = Counting(Sum())
    w = CountWindows(m, 1000, aggregator="fiba")
    for t in range(3000):
        w.insert(t if t % 10 else t - 5, 1)  # every tenth event 5 steps out of order
    m.reset()
    for t in range(3000, 6000):
        w.insert(t if t % 10 else t - 5, 1)
    # insert + evict-oldest + query per event; no O(n) rescans (that would be ~10^6)
    assert m.combines / 3000 < 40


def test_ties_keep_arrival_order_and_superseded_events() -> None:
    w = CountWindows(Concat(), 3, aggregator="recalc")
    w.insert_many([(5, "a"), (5, "b"), (7, "c"), (5, "d")])
    assert w.query() == WindowResult(5, 7, ("b", "d", "c"), 3)
    w.insert(1, "old")
    assert w.counters["superseded"] == 1 and len(w) == 3


def test_late_raise_in_burst_changes_nothing() -> None:
    w = CountWindows(Sum(), 2, max_out_of_orderness=1, late="raise", aggregator="recalc")
    w.insert(10, 1)
    before = w.to_bytes()
    with pytest.raises(LateEventError):
        w.insert_many([(12, 1), (10, 1)])  # 12 moves the watermark to 11: 10 is late
    assert w.to_bytes() == before


def test_bad_input_is_rejected() -> None:
    w = CountWindows(Sum(), 2, aggregator="recalc")
    w.insert_many([(1, 1), (None, 2), (float("nan"), 3), (2, "x"), ((1, 2), 1), (3, 4)])
    assert [r.reason.split(":")[0] for r in w.rejected] == [
        "bad_timestamp",
        "bad_timestamp",
        "bad_value",
        "bad_timestamp",
    ]
    assert w.query() == WindowResult(1, 3, 5, 2)


def test_bad_configuration() -> None:
    with pytest.raises(ValueError):
        CountWindows(Sum(), 0)
    with pytest.raises(ValueError):
        CountWindows(Sum(), 3, every=0)


def test_timestamps_that_do_not_work_with_the_durations_are_rejected() -> None:
    w = CountWindows(Sum(), 2, max_out_of_orderness=5, aggregator="recalc")
    w.insert(dt.datetime(2024, 1, 1), 1)  # datetime - int is undefined
    assert w.counters["bad_timestamp"] == 1 and len(w) == 0
    assert w.insert(3, 1) == [WindowResult(3, 3, 1, 1)]
