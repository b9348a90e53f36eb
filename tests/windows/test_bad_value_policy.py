"""The ``bad_value=`` policy of the window adapters: separate from ``late=``, on every path."""

from __future__ import annotations

from typing import Any

import pytest

from windowagg.errors import CodecError, MonoidInputError
from windowagg.monoids import Sum
from windowagg.windows import CountWindows, PolicyWindows, SharedWindows, SlidingWindows
from windowagg.windows._common import dump_state


class Refuses(Sum):
    """Sum over ints that refuses negative values in ``lift`` (a user monoid)."""

    name = "refuses"

    def lift(self, x: Any) -> Any:
        if x < 0:
            raise ValueError(f"negative value {x}")
        return x


EVENTS = [(1, 1), (2, -5), (12, 2), (3, 4), (25, -1), (26, 3)]


def _sliding(**kw: Any) -> SlidingWindows:
    return SlidingWindows(Refuses(), 10, 10, **kw)


def _per_event(**kw: Any) -> SlidingWindows:
    return SlidingWindows(Refuses(), 10, **kw)


def _count(**kw: Any) -> CountWindows:
    return CountWindows(Refuses(), 2, **kw)


def _shared(**kw: Any) -> SharedWindows:
    return SharedWindows(Refuses(), [10, 20], 10, **kw)


def _policy(**kw: Any) -> PolicyWindows:
    return PolicyWindows(
        Refuses(), lambda total, prefix: total - prefix >= 5, aggregator="recalc", **kw
    )


FACTORIES = [_sliding, _per_event, _count, _shared, _policy]
RESTORE: dict[Any, tuple[list[Any], dict[str, Any]]] = {
    _sliding: ([10, 10], {"bad_value": "drop"}),
    _per_event: ([10], {"bad_value": "drop"}),
    _count: ([2], {"bad_value": "drop"}),
    _shared: ([[10, 20], 10], {"bad_value": "drop"}),
    _policy: ([lambda total, prefix: total - prefix >= 5], {"aggregator": "recalc"}),
}


def _feed(w: Any, how: str) -> list[Any]:
    if how == "insert":
        out = []
        for t, v in EVENTS:
            out.extend(w.insert(t, v))
        return out
    return list(w.insert_many(EVENTS))


@pytest.mark.parametrize("make", FACTORIES)
@pytest.mark.parametrize("how", ["insert", "insert_many"])
@pytest.mark.parametrize("late", ["drop", "side", "raise"])
def test_side_is_the_default_whatever_the_late_policy(make: Any, how: str, late: str) -> None:
    # the values the monoid refuses reach `rejected` even with late="drop" (never folded
    # into the late policy); late events are not affected by bad_value
    w = make(late=late, max_out_of_orderness=100)
    _feed(w, how)
    bad = [r for r in w.rejected if r.reason.startswith("bad_value")]
    assert [(r.t, r.value) for r in bad] == [(2, -5), (25, -1)]
    assert all(r.reason.startswith("bad_value: ValueError: negative value") for r in bad)
    assert w.counters["bad_value"] == 2
    assert w.counters["accepted"] == 4


@pytest.mark.parametrize("make", FACTORIES)
@pytest.mark.parametrize("how", ["insert", "insert_many"])
def test_drop_counts_only(make: Any, how: str) -> None:
    w = make(bad_value="drop", late="side")
    side = make(late="side")
    assert _feed(w, how) == _feed(side, how)
    assert w.counters["bad_value"] == 2
    assert not [r for r in w.rejected if r.reason.startswith("bad_value")]


@pytest.mark.parametrize("make", FACTORIES)
@pytest.mark.parametrize("how", ["insert", "insert_many"])
def test_raise_leaves_the_window_as_it_was(make: Any, how: str) -> None:
    w = make(bad_value="raise")
    w.insert(1, 1)
    before = w.to_bytes()
    with pytest.raises(MonoidInputError, match=r"refused the value -5 at [26] .*bad_value='side'"):
        if how == "insert":
            w.insert(2, -5)
        else:
            w.insert_many([(5, 2), (6, -5), (30, 1)])
    assert w.to_bytes() == before
    # the first event of a fresh window too (it would fix the window's time type)
    fresh = make(bad_value="raise")
    empty = fresh.to_bytes()
    with pytest.raises(MonoidInputError):
        fresh.insert(7, -1)
    assert fresh.to_bytes() == empty


def test_raise_skips_events_whose_own_outcome_comes_first() -> None:
    # a bad timestamp is judged before the value; the value before lateness (the engine's
    # order: a refused value never moves the clock), so a late bad value raises
    w = SlidingWindows(Refuses(), 10, 10, bad_value="raise", late="side")
    w.insert_many([(30, 1)])
    w.insert_many([(3, 1), (None, -2), (31, 2)])
    assert sorted(r.reason.split(":")[0] for r in w.rejected) == ["bad_timestamp", "late"]
    with pytest.raises(MonoidInputError):
        w.insert_many([(3, -1)])


def test_per_event_insert_many_follows_the_policy() -> None:
    for policy, n_side in (("side", 1), ("drop", 0)):
        w = _per_event(bad_value=policy)
        assert [r.end for r in w.insert_many([(1, 1), (2, -5), (3, 2)])] == [1, 3]
        assert len(w.rejected) == n_side and w.counters["bad_value"] == 1
    w = _per_event(bad_value="raise")
    with pytest.raises(MonoidInputError):
        w.insert_many([(1, 1), (2, -5)])
    assert len(w) == 0 and w.counters["accepted"] == 0


@pytest.mark.parametrize("make", FACTORIES)
def test_the_policy_is_restored_from_bytes(make: Any) -> None:
    w = make(bad_value="drop")
    w.insert(1, 1)
    args, kw = RESTORE[make]
    w2 = type(w).from_bytes(w.to_bytes(), Refuses(), *args, **kw)
    w2.insert(2, -5)
    assert w2.counters["bad_value"] == 1 and not w2.rejected


def test_state_of_the_object_apis_own_engine_is_refused() -> None:
    # by design (issue 27): version-1 state of the FiBA-based object API cannot be restored
    # into the engine's windows; it is a CodecError saying so, never a wrong window
    config = ([10], 10, 0, 0, 0, "drop", True)
    dyn = (None, None, None, None, None, None, None, False, None, False)
    old = dump_state("SlidingWindows", Refuses(), "recalc", config, dyn, {}, [], [])
    with pytest.raises(CodecError, match="cannot be restored: rebuild it"):
        SlidingWindows.from_bytes(old, Refuses(), 10, 10)


def test_unknown_policy_is_refused() -> None:
    with pytest.raises(ValueError, match="bad_value must be one of"):
        SlidingWindows(Sum(), 10, bad_value="ignore")
    with pytest.raises(ValueError, match="bad_value must be one of"):
        CountWindows(Sum(), 2, bad_value="late")
