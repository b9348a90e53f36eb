"""SharedWindows against separate SlidingWindows and the multi-size TimeOracle."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from support import MONOID_MATRIX
from support import value_at as value
from windowagg.monoids import Counting, Sum
from windowagg.windows import SharedWindows, SlidingWindows
from windows.windows_oracle import TimeOracle

AGGREGATORS = ["recalc", "fiba"]


@pytest.mark.parametrize("aggregator", AGGREGATORS)
@given(
    name=st.sampled_from(sorted(MONOID_MATRIX)),
    slide=st.one_of(st.none(), st.integers(1, 5)),
    mults=st.sets(st.integers(1, 5), min_size=1, max_size=3),
    origin=st.integers(-3, 3),
    ooo=st.integers(0, 5),
    lateness=st.integers(0, 6),
    ops=st.lists(st.lists(st.integers(-8, 2), min_size=1, max_size=5), max_size=20),
    restore_at=st.one_of(st.none(), st.integers(0, 20)),
)
def test_shared_matches_oracle_and_separate_windows(
    aggregator: str,
    name: str,
    slide: Any,
    mults: set[int],
    origin: int,
    ooo: int,
    lateness: int,
    ops: list[list[int]],
    restore_at: int | None,
) -> None:
    m = MONOID_MATRIX[name]
    sizes = sorted(k * (slide or 2) for k in mults)
    kw: dict[str, Any] = {
        "origin": origin,
        "max_out_of_orderness": ooo,
        "allowed_lateness": lateness,
    }
    w = SharedWindows(m, sizes, slide, aggregator=aggregator, **kw)
    o = TimeOracle(m, sizes, slide, origin=origin, ooo=ooo, lateness=lateness)
    clock, i = 0, 0
    for step, deltas in enumerate(ops):
        if step == restore_at:
            w = SharedWindows.from_bytes(w.to_bytes(), m, aggregator=aggregator)
        items = []
        for d in deltas:
            clock += 1
            items.append((clock + d, value(name, i)))
            i += 1
        got = w.insert_many(items)
        assert got == o.batch(items)
        w._check()
        assert w.late_count == o.late_count
    assert w.close() == o.close()
    if len(sizes) == 1 and slide is not None:
        # a single size with the same rules is exactly SlidingWindows
        s = SlidingWindows(m, sizes[0], slide, aggregator=aggregator, **kw)
        t = SharedWindows(m, sizes, slide, aggregator=aggregator, **kw)
        flat = [(clock2, v) for clock2, v in enumerate(range(30))]
        assert s.insert_many(flat) == t.insert_many(flat)


@given(ops=st.lists(st.integers(0, 40), min_size=1, max_size=60))
def test_shared_equals_merged_separate_windows_when_nothing_is_late(ops: list[int]) -> None:
    sizes = [10, 20, 40]
    shared = SharedWindows(Sum(), sizes, 10, max_out_of_orderness=100, aggregator="fiba")
    separate = [
        SlidingWindows(Sum(), s, 10, max_out_of_orderness=100, aggregator="fiba") for s in sizes
    ]
    got = shared.insert_many([(t, t) for t in ops]) + shared.close()
    exp = [r for w in separate for r in w.insert_many([(t, t) for t in ops]) + w.close()]
    assert got == sorted(exp, key=lambda r: (r.end, r.end - r.start))


def test_one_insert_per_event_for_all_sizes() -> None:
    m = Counting(Sum())
    shared = SharedWindows(m, [10, 100, 1000], 10, aggregator="fiba", panes=False)
    for t in range(5000):
        shared.insert(t, 1)
    per_event = m.combines / 5000
    m2 = Counting(Sum())
    separate = [SlidingWindows(m2, s, 10, aggregator="fiba", panes=False) for s in (10, 100, 1000)]
    for t in range(5000):
        for w in separate:
            w.insert(t, 1)
    assert per_event < m2.combines / 5000


def test_sizes_must_be_multiples_of_slide() -> None:
    with pytest.raises(ValueError, match="multiple"):
        SharedWindows(Sum(), [10, 15], 10)
    with pytest.raises(ValueError, match="distinct"):
        SharedWindows(Sum(), [10, 10], 10)
    with pytest.raises(ValueError, match="at least one"):
        SharedWindows(Sum(), [], 10)
