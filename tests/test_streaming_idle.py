"""windowagg.stream: a key whose state expired leaves the process, its clock kept.

A key's state expires when nothing in it can be emitted or revised any more (the engine's
``KeyStream.expired``, as Spark drops a key's state). The stream then keeps only the key's
clock (its newest event time), and a fresh state on that clock takes the key's next event.
Every micro-batch's and advance's output (every revision, every reject and its reason) is
the same as a stream that keeps every key's state, for random keys, shapes, aggregations,
lateness, advances and restarts through a store.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import windowagg
from windowagg.storage import MemoryStore

SHAPES: dict[str, dict[str, Any]] = {
    "hopping": {"size": 10, "slide": 5},
    "per_event": {"size": 7},
    "session": {"gap": 4},
    "count": {"rows": 3, "every": 2},
    "sizes": {"size": [5, 10], "slide": 5},
    "history": {},
}
AGGS: dict[str, list[str]] = {
    "monoids": ["sum(v)", "count", "max(v)"],
    "quantiles": ["median(v)", "p90(v)"],
    "decayed": ["ewm_mean(v, half_life=5)", "count"],
    "history": ["ewm_mean(v, half_life=5)", "decayed_sum(v, half_life=5)"],
}


def _steps(draw: Any) -> list[tuple[str, Any]]:
    """Micro-batches of rows (key, time, value) and advances (a watermark)."""
    out: list[tuple[str, Any]] = []
    clock = 0
    for _ in range(draw(st.integers(1, 8))):
        if draw(st.integers(0, 3)) == 0:
            clock += draw(st.integers(0, 40))
            out.append(("advance", clock))
            continue
        n = draw(st.integers(0, 12))
        keys = draw(st.lists(st.sampled_from("abcdefgh"), min_size=n, max_size=n))
        # mostly forward in time, some late: parked keys meet both
        times = [clock + draw(st.integers(-25, 30)) for _ in range(n)]
        clock = max([clock, *times])
        values = draw(st.lists(st.integers(-5, 9), min_size=n, max_size=n))
        out.append(("feed", pd.DataFrame({"k": keys, "t": times, "v": np.asarray(values, float)})))
    return out


def _play(
    steps: list[tuple[str, Any]], kw: dict[str, Any], park: bool, store: Any, restarts: set[int]
) -> tuple[list[tuple[pd.DataFrame, pd.DataFrame]], int]:
    """Every step's (results, rejects), then the close's; and the most keys parked at once."""
    s = windowagg.stream(store=store, **kw)
    s._park = park
    outs = []
    most = 0
    for i, (verb, arg) in enumerate(steps):
        got = s.feed(arg, token=i) if verb == "feed" else s.advance(arg, token=i)
        outs.append((got.results, got.rejects))
        most = max(most, len(s._parked))
        assert set(s._parked).isdisjoint(s._live)
        if i in restarts and store is not None:
            s = windowagg.stream(store=store, **kw)
            s._park = park
    got = s.close()
    outs.append((got.results, got.rejects))
    return outs, most


@st.composite
def cases(draw: Any) -> tuple[Any, ...]:
    return (
        _steps(draw),
        draw(st.sampled_from(sorted(SHAPES))),
        draw(st.sampled_from(sorted(AGGS))),  # "history" is history's own
        draw(st.sampled_from([(0, 0), (3, 0), (2, 5), (0, 20)])),
        draw(st.booleans()),
        draw(st.sets(st.integers(0, 7), max_size=3)),
    )


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow], max_examples=150)
@given(case=cases())
def test_parked_keys_answer_as_kept_ones(case: Any) -> None:
    steps, shape, aggs, lateness, use_store, restarts = case
    if shape == "count":
        lateness = (0, 0)
    if aggs == "decayed" and shape == "sizes":
        aggs = "monoids"
    if shape == "history":  # decayed aggregations alone: each key's whole history
        aggs = "history"
    elif aggs == "history":
        aggs = "decayed"
    kw = dict(
        keys="k",
        time="t",
        aggs=AGGS[aggs],
        max_out_of_orderness=lateness[0],
        allowed_lateness=lateness[1],
        **SHAPES[shape],
    )
    want, _ = _play(steps, kw, False, MemoryStore() if use_store else None, restarts)
    got, _ = _play(steps, kw, True, MemoryStore() if use_store else None, restarts)
    assert len(got) == len(want)
    for (gr, gj), (wr, wj) in zip(got, want, strict=True):
        pd.testing.assert_frame_equal(gr, wr)
        pd.testing.assert_frame_equal(gj, wj)


@pytest.mark.parametrize("use_store", [False, True])
def test_an_expired_key_keeps_only_its_clock(use_store: bool) -> None:
    """Keys whose windows have all closed leave the process; a late event for one is still
    late, an on-time one opens its windows, as if the key had stayed."""
    s = windowagg.stream(
        "k", "t", ["sum(v)", "count"], size=10, slide=10, allowed_lateness=5,
        store=MemoryStore() if use_store else None,
    )  # fmt: skip
    s.feed(pd.DataFrame({"k": list("abc"), "t": [1, 2, 3], "v": [1.0, 2.0, 3.0]}))
    assert len(s._live) == 3 and not s._parked
    closed = s.feed(pd.DataFrame({"k": list("abc"), "t": [31, 32, 33], "v": [1.0, 1.0, 1.0]}))
    assert closed.results["sum_v"].tolist() == [1.0, 2.0, 3.0]
    assert len(s._live) == 3  # the windows [30, 40) are open
    s.advance(60)
    assert not s._live and set(s._parked) == {("a",), ("b",), ("c",)}
    assert len(s) == 3
    got = s.feed(pd.DataFrame({"k": ["a", "b"], "t": [54, 56], "v": [7.0, 8.0]}))
    # a: 54 < 60 - 5 is late; b: 56 is on time, in [50, 60), which closes at once
    assert got.rejects["reason"].str.startswith("late: ").tolist() == [True]
    assert got.rejects["row_index"].tolist() == [0]
    assert got.results[["k", "sum_v", "revision"]].values.tolist() == [["b", 8.0, 0]]
    assert got.results["window_start"].tolist() == [pd.Timestamp(50, unit="s", tz="UTC")]
    # b's window [50, 60) may still be revised until 65: b is live again, a and c parked
    assert set(s._live) == {("b",)} and set(s._parked) == {("a",), ("c",)}


def test_a_decayed_history_key_is_never_parked() -> None:
    """Whole-history decay keeps a partial per key for ever: its key stays live."""
    s = windowagg.stream("k", "t", ["ewm_mean(v, half_life=5)"])
    s.feed(pd.DataFrame({"k": ["a"], "t": [1], "v": [1.0]}))
    s.advance(10**6)
    assert set(s._live) == {("a",)} and not s._parked
