"""PolicyWindows against the brute-force PolicyOracle (MTA slide policies in event-time order)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from windowagg.fifo.wsp import CountWindow, TimeWindow
from windowagg.monoids import Composite, Concat, Count, Counting, Last, Max, Sum
from windowagg.windows import PolicyWindows, WindowResult
from windows.windows_oracle import PolicyOracle

AGGREGATORS = ["recalc", "fiba"]


def _last_n(n: int) -> Any:
    return lambda total, prefix: total[0] - prefix[0] >= n


def _time(w: int) -> Any:
    return lambda total, prefix: total[1] - prefix[1] >= w


def _sum_at_most(limit: int) -> Any:
    # the suffix starting at the prefix's last value would still exceed the limit
    return lambda total, prefix: total[2] - prefix[2] + prefix[3] > limit


# partials: (count, max timestamp, sum, last value, concat of ids)
MONOID = Composite(Count(), Max(), Sum(), Last(), Concat())


def lift(tv: tuple[int, int, int]) -> tuple[Any, ...]:
    t, v, i = tv
    return (None, t, v, v, i)


POLICIES = {
    "last3": _last_n(3),
    "time5": _time(5),
    "sum10": _sum_at_most(10),
    "lib_count4": CountWindow(4, count=0),
    "lib_time6": TimeWindow(6, time=1),
}


@pytest.mark.parametrize("aggregator", AGGREGATORS)
@given(
    policy=st.sampled_from(sorted(POLICIES)),
    ooo=st.one_of(st.none(), st.integers(0, 5)),
    lateness=st.integers(0, 4),
    events=st.lists(st.tuples(st.integers(-6, 2), st.integers(0, 6)), max_size=40),
    burst=st.integers(1, 5),
    restore_at=st.one_of(st.none(), st.integers(0, 40)),
)
def test_policy_windows_match_oracle(
    aggregator: str,
    policy: str,
    ooo: Any,
    lateness: int,
    events: list[tuple[int, int]],
    burst: int,
    restore_at: int | None,
) -> None:
    wsp = POLICIES[policy]
    w = PolicyWindows(
        MONOID,
        wsp,
        lift=lift,
        max_out_of_orderness=ooo,
        allowed_lateness=lateness,
        aggregator=aggregator,
    )
    om = Composite(Count(), Max(), Sum(), Last(), Concat())

    class Lifted:
        identity = om.identity
        combine = staticmethod(om.combine)
        lower = staticmethod(om.lower)

        @staticmethod
        def lift(x: Any) -> Any:
            return om.lift(lift(x))

    o = PolicyOracle(Lifted(), wsp, ooo=ooo, lateness=lateness)
    items = [(i + 1 + d, (i + 1 + d, v, i)) for i, (d, v) in enumerate(events)]
    for k in range(0, len(items), burst):
        if restore_at is not None and k >= restore_at > k - burst:
            w = PolicyWindows.from_bytes(
                w.to_bytes(), MONOID, wsp, lift=lift, aggregator=aggregator
            )
        chunk = items[k : k + burst]
        got = w.insert_many(chunk) if burst > 1 else w.insert(*chunk[0])
        exp = [r for t, v in chunk for r in o.insert(t, v)]
        assert got == exp
        w._check()
        assert w.late_count == o.late_count


def test_enforcement_cost_is_amortized_constant() -> None:
    m = Counting(Composite(Count(), Sum()))
    w = PolicyWindows(
        m,
        lambda total, prefix: total[0] - prefix[0] >= 500,
        lift=lambda v: (None, v),
        aggregator="fiba",
    )
    for t in range(2000):
        w.insert(t, 1)
    m.reset()
    for t in range(2000, 4000):
        w.insert(t, 1)
    assert len(w) == 500
    assert m.combines / 2000 < 40  # no rescans of the 500 kept events


def test_policy_that_evicts_everything_emits_nothing() -> None:
    w = PolicyWindows(Sum(), lambda total, prefix: True, aggregator="recalc")
    assert w.insert(1, 5) == [] and len(w) == 0 and w.counters["evicted"] == 1


def test_out_of_order_event_is_placed_by_event_time() -> None:
    w = PolicyWindows(
        Composite(Count(), Concat()), _last_n(2), lift=lambda v: (None, v), aggregator="recalc"
    )
    w.insert_many([(1, "a"), (3, "c")])
    assert w.insert(2, "b") == [WindowResult(2, 3, (2, ("b", "c")), 2)]
    assert w.insert(0, "z") == [WindowResult(2, 3, (2, ("b", "c")), 2)]  # in, then out


def test_wsp_must_be_callable() -> None:
    with pytest.raises(TypeError):
        PolicyWindows(Sum(), 3)  # type: ignore[arg-type]
