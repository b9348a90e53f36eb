"""The session layout (:mod:`windowagg.windows.engine.sessions`) and count windows' bound.

Sessions of monoids keep the first session that can still change folded below the lateness
bound (the head) and the events at or after it; final revisions equal the batch answer
(non-commutative monoids, duplicate times, late-but-accepted events, state through bytes
and restarts), state and combines per micro-batch do not grow with the history.
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st
from tests.windows.engine_oracle import superseded_sessions_dropped
from tests.windows.test_engine_stream import _late_per_batch

from windowagg import codec
from windowagg.errors import AggregationError, CodecError
from windowagg.monoids import Concat
from windowagg.pandas import parse, window_agg
from windowagg.sketches.forward_decay import ExpDecayed
from windowagg.windows.engine import Shape
from windowagg.windows.engine.sessions import OpenSessions
from windowagg.windows.engine.stream import EventLog, KeyStream


class ConstantExp(ExpDecayed):
    """Exponential decay declaring its constant-size partial (the declaration the
    built-in gets with the whole-history layout; a subclass here, whatever it has)."""

    partial = "constant"


#: Monoids only: sessions take the session layout. ``cat_v`` (Concat) and ``first(v)`` are
#: not commutative: the head's partial must come before the events after it, in order.
#: Decayed means and sums (a constant-size partial) are answered as of the session's end.
SESSION_AGGS: list[list[Any]] = [
    ["sum(v)", "count", "max(v)", "min(v)", "mean(v)"],
    ["sum(v)", "count", ("cat_v", Concat(), "v", "array<double>"), "first(v)", "last(v)"],
    [
        "count",
        ("ewm_v", ConstantExp(7.0, "mean"), "v", "double"),
        ("dsum_v", ConstantExp(3.0, "sum"), "v", "double"),
        ("dcount", ConstantExp(5.0, "count"), None, "double"),
    ],
]


@st.composite
def session_streams(draw: Any) -> tuple[np.ndarray, np.ndarray, list[int], list[int | None]]:
    """Times in runs (sessions that do and do not bridge), duplicates, small-int values,
    cuts, and after each micro-batch perhaps a watermark from outside."""
    n = draw(st.integers(0, 40))
    ts = np.asarray(draw(st.lists(st.integers(0, 90), min_size=n, max_size=n)), dtype=np.int64)
    vs = np.asarray(
        draw(st.lists(st.integers(-9, 9).map(float), min_size=n, max_size=n)), dtype=np.float64
    )
    cuts = sorted(draw(st.lists(st.integers(0, n), max_size=8)))
    wms = draw(
        st.lists(
            st.one_of(st.none(), st.integers(0, 100)), min_size=len(cuts) + 1,
            max_size=len(cuts) + 1,
        )
    )  # fmt: skip
    return ts, vs, cuts, wms


def _feed(
    aggs: list[Any],
    shape: Shape,
    data: tuple[np.ndarray, np.ndarray, list[int], list[int | None]],
    kw: dict[str, Any],
    through_bytes: bool,
) -> tuple[list[dict[str, Any]], list[int]]:
    """Every emitted row and the refused positions; the store kept equal to the state."""
    ts, vs, cuts, wms = data
    store: dict[int, bytes] = {}
    meta: bytes | None = None
    s = KeyStream(aggs, shape, **kw)
    assert s.layout == "sessions"
    rows: list[dict[str, Any]] = []
    refused: list[int] = []
    names = [a.alias for a in aggs]

    def collect(res: Any) -> None:
        for j in range(len(res.columns["end"])):
            rows.append({c: res.columns[c][j] for c in ["start", "end", "revision", *names]})

    def step(res: Any, d: Any) -> None:
        nonlocal meta
        s._check()
        d.apply(store)
        meta = d.meta
        back = KeyStream.restore(meta, store, aggs, shape, **kw)  # the store holds the state
        assert (back.meta_bytes(), back.pieces()) == (s.meta_bytes(), s.pieces())
        collect(res)

    for (lo, hi), wm in zip(itertools.pairwise([0, *cuts, len(ts)]), wms, strict=True):
        if through_bytes:  # a restart: everything from the store
            s = KeyStream.restore(meta, store, aggs, shape, **kw)
            s._check()
        res, d = s.feed(ts[lo:hi], {"v": vs[lo:hi]})
        refused.extend((lo + res.refused).tolist())
        step(res, d)
        if wm is not None:  # Spark's global watermark
            step(*s.advance(wm))
    if through_bytes:
        s = KeyStream.restore(meta, store, aggs, shape, **kw)
    res, d = s.advance(10**6)
    step(res, d)
    assert store == {} and len(s) == 0  # every session final: nothing kept
    return rows, refused


def _tuples(col: Any) -> list[Any]:
    return [tuple(x) if isinstance(x, (tuple, list, np.ndarray)) else x for x in col]


@given(
    session_streams(),
    st.integers(1, 12),
    st.integers(0, 6),
    st.integers(0, 10),
    st.booleans(),
    st.sampled_from(["arrival", "batch"]),
    st.sampled_from(range(len(SESSION_AGGS))),
)
def test_final_sessions_equal_the_batch_answer(
    data: tuple[np.ndarray, np.ndarray, list[int], list[int | None]],
    gap: int,
    ooo: int,
    allowed: int,
    through_bytes: bool,
    judge: str,
    which: int,
) -> None:
    ts, vs, cuts, wms = data
    spec = SESSION_AGGS[which]
    aggs = parse(spec)
    kw: dict[str, Any] = {"max_out_of_orderness": ooo, "allowed_lateness": allowed, "judge": judge}
    rows, refused = _feed(aggs, Shape(gap=gap), data, kw, through_bytes)
    names = [a.alias for a in aggs]
    df = pd.DataFrame({"k": "a", "t": ts, "v": vs})
    if judge == "arrival" and all(w is None for w in wms):
        lateness = {"max_out_of_orderness": ooo * 10**-6, "allowed_lateness": allowed * 10**-6}
        late: list[int] = []
    elif judge == "batch" and all(w is None for w in wms):
        lateness = {}
        late = _late_per_batch(ts, vs, cuts, ooo + allowed, [])
    else:  # a watermark from outside: the stream's own rejects are the late rows
        lateness, late = {}, refused
    kept = df.drop(index=late).reset_index(drop=True)
    batch = window_agg(kept, "k", "t", spec, gap=gap * 10**-6, time_unit="us", **lateness)
    got = pd.DataFrame(rows, columns=["start", "end", "revision", *names])
    final = superseded_sessions_dropped(got, "start", "end").sort_values("start")
    want = batch.results
    us = want["window_end"].astype("datetime64[ns, UTC]").astype("int64") // 1000
    assert final["end"].tolist() == us.tolist()
    for a in aggs:
        if a.dtype == "double":
            np.testing.assert_allclose(
                final[a.alias].to_numpy(float), want[a.alias].to_numpy(float), rtol=1e-9,
                atol=1e-9,
            )  # fmt: skip
        else:
            assert _tuples(final[a.alias]) == _tuples(want[a.alias])
    if lateness or (judge == "batch" and all(w is None for w in wms)):
        assert sorted(refused) == sorted(batch.rejects["row_index"].tolist() + late)


def test_a_late_event_bridging_a_folded_session_supersedes_it() -> None:
    aggs = parse(["sum(v)", ("cat_v", Concat(), "v", "array<double>")])
    s = KeyStream(aggs, Shape(gap=5), allowed_lateness=10)
    res, _ = s.feed(np.array([28, 26, 40]), {"v": np.array([28.0, 26.0, 40.0])})  # bound 30
    assert (res.columns["start"].tolist(), res.columns["end"].tolist()) == ([26], [33])
    assert res.columns["revision"].tolist() == [0]
    state = s._state
    assert isinstance(state, OpenSessions) and state._head is not None
    assert state._head[:3] == (26, 28, 2)  # [26, 33) can still change: folded below 30
    assert len(state._events.t) == 1  # 40 only
    res, _ = s.feed(np.array([36, 32, 29]), {"v": np.array([36.0, 32.0, 29.0])})
    assert res.refused.tolist() == [2]  # 29 is late; 32 bridges [26, 33) and [36, 45)
    assert res.columns["start"].tolist() == []  # [26, 45) is not closed yet
    res, _ = s.feed(np.array([60]), {"v": np.array([60.0])})  # closes it
    assert (res.columns["start"].tolist(), res.columns["end"].tolist()) == ([26], [45])
    assert res.columns["revision"].tolist() == [1]  # supersedes [26, 33)
    assert res.columns["sum_v"].tolist() == [162.0]
    assert tuple(res.columns["cat_v"][0]) == (26.0, 28.0, 32.0, 36.0, 40.0)  # time order


class Counted:
    """A non-commutative monoid (the first value) counting its combines: no declared kind,
    so every combine is the monoid's own."""

    identity = None
    commutative = False
    calls = 0

    def lift(self, x: float) -> float:
        return x

    def combine(self, a: Any, b: Any) -> Any:
        Counted.calls += 1
        return b if a is None else a

    def lower(self, a: Any) -> Any:
        return a


@pytest.mark.parametrize("gap", [5, 10**9])  # sessions that close; one that never does
def test_state_and_combines_do_not_grow_with_the_history(gap: int) -> None:
    aggs = parse(["sum(v)", "count", ("f", Counted(), "v", "double")])
    shape = Shape(gap=gap)
    s = KeyStream(aggs, shape, allowed_lateness=20, max_out_of_orderness=5)
    log = EventLog(aggs, shape, allowed_lateness=20, max_out_of_orderness=5)
    store: dict[int, bytes] = {}
    rng = np.random.default_rng(7)
    held, calls, sizes = [], [], []
    for i in range(60):  # 100 events a micro-batch, one every time unit, up to 5 late
        t = i * 100 + np.arange(100) - rng.integers(0, 5, 100)
        if gap == 5:
            t = t[(t // 50) % 3 != 0]  # gaps of 50 time units: sessions close
        v = {"v": rng.integers(0, 9, len(t)).astype(float)}
        Counted.calls = 0
        _, d = s.feed(t, v)
        calls.append(Counted.calls)
        log.feed(t, v)
        d.apply(store)
        s._check()
        held.append(len(d.meta) + sum(len(x) for x in store.values()))
        sizes.append(len(s))
    # retained: the events at or after the bound (about 25) and up to one micro-batch
    # more before a fold, and the head
    assert max(sizes) <= 2 * (100 + 25) + 1
    assert max(held[30:]) <= 1.2 * max(held[:30])
    assert max(calls[30:]) <= 1.2 * max(calls[:30]) + 10  # combines: the micro-batch's
    assert max(calls) <= 4 * 125  # folds and answers: O(m + L), never the history
    if gap == 10**9:  # one session: the event log keeps every event
        assert len(log) == 60 * 100 and len(s) < 300
    # the final answer is the batch's
    res, _ = s.advance(10**12)
    out, _ = log.advance(10**12)
    if gap == 10**9:
        assert res.columns["count"].tolist() == out.columns["count"].tolist() == [6000]
        assert res.columns["sum_v"].tolist() == out.columns["sum_v"].tolist()
        assert res.columns["f"].tolist() == out.columns["f"].tolist()


def test_a_head_is_restored_from_its_piece_and_refused_when_missing_or_foreign() -> None:
    aggs = parse(["sum(v)", "count"])
    shape = Shape(gap=10)
    s = KeyStream(aggs, shape, allowed_lateness=2)
    store: dict[int, bytes] = {}
    _, d = s.feed(np.arange(0, 40, 2), {"v": np.ones(20)})
    d.apply(store)
    state = s._state
    assert isinstance(state, OpenSessions) and state._head is not None
    hk = state._head_key
    assert hk in d.put  # the fold wrote the head under its own key
    r = KeyStream.restore(d.meta, store, aggs, shape, allowed_lateness=2)
    assert r.pieces() == s.pieces() and r.meta_bytes() == s.meta_bytes()
    # a micro-batch that does not fold leaves the head's piece alone
    _, d = s.feed(np.array([40]), {"v": np.ones(1)})
    assert hk not in d.put and hk not in d.delete
    missing = {k: v for k, v in store.items() if k != hk}
    with pytest.raises(CodecError, match="head piece"):
        KeyStream.restore(d.meta, missing, aggs, shape, allowed_lateness=2)
    bad = dict(store)
    bad[hk] = codec.dumps(("session", 0, 1, 1, (1.0,)))  # one partial, not two
    with pytest.raises(CodecError, match="not a windowagg session head"):
        KeyStream.restore(d.meta, bad, aggs, shape, allowed_lateness=2)
    # an event-log state (a quantile's) is not a session state
    q = parse(["sum(v)", "count", "p50(v)"])
    other = KeyStream(q, shape, allowed_lateness=2)
    assert other.layout == "events"
    _, d2 = other.feed(np.arange(5), {"v": np.ones(5)})
    with pytest.raises(CodecError):
        KeyStream.restore(d2.meta, {}, aggs, shape, allowed_lateness=2)


def test_a_raising_head_answer_names_the_session_and_changes_nothing() -> None:
    class Picky:
        identity = 0.0
        commutative = True

        def lift(self, x: float) -> float:
            return x

        def combine(self, a: float, b: float) -> float:
            if a + b > 100:
                raise ValueError("too big")
            return a + b

        def lower(self, a: float) -> float:
            return a

    aggs = parse([("p", Picky(), "v", "double")])
    s = KeyStream(aggs, Shape(gap=10), allowed_lateness=2)
    s.feed(np.arange(0, 40, 2), {"v": np.ones(20)})
    before = (s.meta_bytes(), s.pieces())
    with pytest.raises(AggregationError, match="window_start 0"):
        s.feed(np.array([41, 100]), {"v": np.array([99.0, 1.0])})  # the session closes
    assert (s.meta_bytes(), s.pieces()) == before


def test_count_windows_keep_rows_and_the_lateness_whatever_the_history() -> None:
    """Count windows on the event log: the positions before the first window a later
    event can still shift are dropped, so state and combines stay O(rows + L)."""
    aggs = parse(["sum(v)", ("f", Counted(), "v", "double")])
    shape = Shape(rows=50, every=10)
    s = KeyStream(aggs, shape, allowed_lateness=20, max_out_of_orderness=5)
    rng = np.random.default_rng(11)
    sizes, calls = [], []
    for i in range(60):
        t = i * 100 + np.arange(100) - rng.integers(0, 5, 100)
        Counted.calls = 0
        s.feed(t, {"v": rng.integers(0, 9, 100).astype(float)})
        calls.append(Counted.calls)
        s._check()
        sizes.append(len(s))
    assert max(sizes) <= 2 * (50 + 25 + 100)
    assert max(calls[30:]) <= 1.2 * max(calls[:30]) + 10


def test_carried_columns_go_through_a_restart() -> None:
    aggs = parse(["sum(v)"])
    shape = Shape(gap=3)
    s = KeyStream(aggs, shape, allowed_lateness=2, carry=["row"])
    assert s.layout == "sessions"
    _, d = s.feed(np.array([1, 2, 9]), {"v": np.ones(3), "row": ["a", "b", "c"]})
    store: dict[int, bytes] = {}
    d.apply(store)
    back = KeyStream.restore(d.meta, store, aggs, shape, allowed_lateness=2, carry=["row"])
    assert back.meta_bytes() == s.meta_bytes() and back.pieces() == s.pieces()
    assert back.tail().events.t.tolist() == []  # time settles every session's event


def test_decayed_aggregations_with_a_summary_or_events_keep_the_event_log() -> None:
    shape = Shape(gap=3)
    assert KeyStream(parse(["ewm_mean(v, half_life=1h)", "sum(v)"]), shape).layout == (
        "sessions" if getattr(ExpDecayed, "partial", None) == "constant" else "events"
    )
    for spec in (["decayed_sum(v, decay=poly(2))"], ["decayed_p50(v, half_life=1h)"]):
        assert KeyStream(parse(spec), shape).layout == "events"
    assert KeyStream(parse([("e", ConstantExp(2.0), "v", "double")]), shape).layout == "sessions"


def test_a_count_stream_compacted_to_nothing_takes_its_next_event() -> None:
    """rows=1: every event older than the bound is dead, so a compaction can leave no
    event stored; the next micro-batch's window was not emitted before (it raised an
    IndexError on the empty stored times)."""
    aggs = parse(["max(v)", "count"])
    s = KeyStream(aggs, Shape(rows=1, every=1))
    res, _ = s.feed(np.array([0]), {"v": np.array([5.0])})
    assert res.columns["max_v"].tolist() == [5.0]
    s.advance(1)
    assert len(s) == 0
    res, _ = s.feed(np.array([1000]), {"v": np.array([7.0])})
    assert res.columns["end"].tolist() == [1000] and res.columns["revision"].tolist() == [0]
    assert res.columns["max_v"].tolist() == [7.0]
