"""The streaming state of one key (windows.engine.stream.KeyStream) against the batch engine.

Random arrival orders, random micro-batch splits, every window shape: once the watermark has
passed everything, the final revision of every window equals ``windowagg.pandas.window_agg``
on the whole input (same lateness, judged in arrival order); every row is aggregated or
rejected, by position; the state goes through its bytes (metadata + chunks) between
micro-batches and round-trips exactly; chunks are deltas.
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st
from tests.windows.engine_oracle import (
    AGGS,
    COLUMNS,
    SHAPES,
    Fussy,
    hopping_gaps,
    superseded_sessions_dropped,
)

from windowagg.errors import ArgumentError, CodecError
from windowagg.monoids import Concat
from windowagg.pandas import parse, window_agg
from windowagg.rejects import readable_reason
from windowagg.windows.engine import Shape
from windowagg.windows.engine.panes import node_key
from windowagg.windows.engine.stream import Delta, KeyStream

VALUES = st.one_of(st.integers(-20, 20).map(float), st.sampled_from([0.5, -1.25, float("inf")]))


@st.composite
def streams(draw: Any) -> tuple[np.ndarray, np.ndarray, list[int]]:
    n = draw(st.integers(0, 30))
    ts = np.asarray(draw(st.lists(st.integers(0, 60), min_size=n, max_size=n)), dtype=np.int64)
    vs = np.asarray(draw(st.lists(VALUES, min_size=n, max_size=n)), dtype=np.float64)
    cuts = sorted(draw(st.lists(st.integers(0, n), max_size=5)))
    return ts, vs, cuts


def _shape(d: dict[str, int]) -> Shape:
    return Shape(**d)


def _run(
    ts: np.ndarray,
    vs: np.ndarray,
    cuts: list[int],
    shape: dict[str, int],
    ooo: int,
    allowed: int,
    through_bytes: bool = True,
    judge: str = "arrival",
) -> tuple[list[dict[str, Any]], list[int], list[str]]:
    """Feed the micro-batches (state through bytes between them); then flush. Returns
    every emitted row (with its id), the refused rows (positions) and their reasons."""
    aggs = parse(AGGS)
    kw: dict[str, Any] = {"max_out_of_orderness": ooo, "allowed_lateness": allowed, "judge": judge}
    meta: bytes | None = None
    pieces: dict[int, bytes] = {}
    s = KeyStream(aggs, _shape(shape), **kw)
    rows: list[dict[str, Any]] = []
    refused: list[int] = []
    reasons: list[str] = []
    bounds = [0, *cuts, len(ts)]

    def collect(res: Any) -> None:
        n = len(res.columns["end"])
        assert len(res.ids) == n
        for j in range(n):
            row = {c: res.columns[c][j] for c in ["start", "end", "revision", *COLUMNS]}
            row["id"] = int(res.ids[j])
            rows.append(row)

    for lo, hi in itertools.pairwise(bounds):
        if through_bytes:
            s = KeyStream.restore(meta, pieces, aggs, _shape(shape), **kw)
            s._check()
        res, delta = s.feed(ts[lo:hi], {"v": vs[lo:hi]})
        s._check()
        delta.apply(pieces)
        meta = delta.meta
        collect(res)
        refused.extend((lo + res.refused).tolist())
        reasons.extend(res.reasons)
    if through_bytes:
        s = KeyStream.restore(meta, pieces, aggs, _shape(shape), **kw)
    res, _ = s.advance(10**6)
    collect(res)
    return rows, refused, reasons


def _final(rows: list[dict[str, Any]], kind: str) -> pd.DataFrame:
    """The last revision of every window (sessions: those no higher revision contains)."""
    df = pd.DataFrame(rows, columns=["start", "end", "revision", *COLUMNS, "id"])
    if kind == "session":
        final = superseded_sessions_dropped(df, "start", "end")
        return final.sort_values("start").reset_index(drop=True)
    # a window's revisions come out in order, 0, 1, 2, ...
    for _, g in df.groupby("id"):
        assert g["revision"].tolist() == list(range(len(g)))
    last = df.groupby("id").tail(1)
    by = ["end", "id"] if kind == "per_event" else ["id"]
    return last.sort_values(by).reset_index(drop=True)


#: The shapes a stream takes: count windows with rows < every leave events in no window,
#: which a stream cannot reject on arrival (refused: tests/windows/test_engine_trust.py).
STREAM_SHAPES = SHAPES.filter(lambda s: "rows" not in s or s["rows"] >= s["every"])


def _late_per_batch(
    ts: np.ndarray, vs: np.ndarray, cuts: list[int], lag: int, gaps: list[int]
) -> list[int]:
    """Reference for judge="batch": a row is late when older than the bound before its
    micro-batch (the newest admitted time so far minus *lag*); rows with a non-finite
    value or in no window (*gaps*) are refused before the clock sees them."""
    late, top = [], None
    bounds = [0, *cuts, len(ts)]
    for lo, hi in itertools.pairwise(bounds):
        ok = [i for i in range(lo, hi) if np.isfinite(vs[i]) and i not in gaps]
        if top is not None:
            late += [i for i in ok if ts[i] < top - lag]
        kept = [int(ts[i]) for i in ok if i not in late]
        if kept:
            top = max(kept) if top is None else max(top, *kept)
    return late


@given(
    streams(),
    STREAM_SHAPES,
    st.integers(0, 10),
    st.integers(0, 10),
    st.booleans(),
    st.sampled_from(["arrival", "batch"]),
)
def test_final_revisions_equal_the_batch_answer(
    data: tuple[np.ndarray, np.ndarray, list[int]],
    shape: dict[str, int],
    ooo: int,
    allowed: int,
    through_bytes: bool,
    judge: str,
) -> None:
    ts, vs, cuts = data
    rows, refused, reasons = _run(ts, vs, cuts, shape, ooo, allowed, through_bytes, judge)
    df = pd.DataFrame({"k": "a", "t": ts, "v": vs})
    gaps = sorted(hopping_gaps(df, shape, list(range(len(ts)))))
    if judge == "arrival":  # the batch engine judges lateness in input order too
        lateness = {"max_out_of_orderness": ooo * 10**-6, "allowed_lateness": allowed * 10**-6}
        late: list[int] = []
    else:
        lateness = {}
        late = _late_per_batch(ts, vs, cuts, ooo + allowed, gaps)
    kept = df.drop(index=late).reset_index(drop=True)
    batch = window_agg(kept, "k", "t", AGGS, time_unit="us", **lateness, **_batch_shape(shape))
    kind = _shape(shape).kind
    final = _final(rows, kind)
    want = batch.results
    assert len(final) == len(want), (final, want)
    for c in COLUMNS:
        np.testing.assert_allclose(final[c].to_numpy(float), want[c].to_numpy(float))
    us = want["window_end"].astype("datetime64[ns, UTC]").astype("int64") // 1000
    assert final["end"].tolist() == us.tolist()
    # every row aggregated or rejected, by identity
    by_row = dict(zip(refused, [readable_reason(r) for r in reasons], strict=True))
    # a count window's last events wait in the stream for the events that complete their
    # window; the batch, whose input has ended, rejects them (in no window)
    rej = batch.rejects
    pending = rej["reason"].str.startswith("in no window: ") & (kind == "count")
    rej = rej[~pending]
    if judge == "arrival":
        assert sorted(refused) == rej["row_index"].tolist()
        # (the front end's validation says "bad_value: " before a non-finite value's reason)
        want_why = [r.removeprefix("bad_value: ") for r in rej["reason"]]
        assert [by_row[i] for i in rej["row_index"]] == want_why
    else:
        bad = [i for i in range(len(ts)) if not np.isfinite(vs[i]) or i in gaps]
        assert sorted(refused) == sorted(bad + late)
        assert all(by_row[i].startswith("late: ") for i in late)
        # (a non-finite value is found first)
        assert all(by_row[i].startswith("in no window: ") for i in gaps if np.isfinite(vs[i]))


def _batch_shape(shape: dict[str, int]) -> dict[str, Any]:
    """The same shape for window_agg, whose durations are seconds (times here are us)."""
    out: dict[str, Any] = {}
    for k, v in shape.items():
        out[k] = v if k in ("rows", "every") else v * 10**-6
    if "size" in shape and "slide" not in shape:
        out["slide"] = None
    return out


@given(streams(), st.integers(1, 15), st.integers(0, 10))
def test_arrival_answers_each_event_as_of_its_arrival(
    data: tuple[np.ndarray, np.ndarray, list[int]], size: int, ooo: int
) -> None:
    ts, vs, cuts = data
    aggs = parse(["sum(v)", "count", "max(v)"])
    s = KeyStream(aggs, Shape(size=size), max_out_of_orderness=ooo, emit="arrival")
    seen: list[tuple[int, float]] = []  # admitted events so far, in arrival order
    bounds = [0, *cuts, len(ts)]
    for lo, hi in itertools.pairwise(bounds):
        res, _ = s.feed(ts[lo:hi], {"v": vs[lo:hi]})
        refused = set((lo + res.refused).tolist())
        got = list(zip(res.columns["end"].tolist(), res.columns["sum_v"].tolist(),
                       res.columns["count"].tolist(), strict=True))  # fmt: skip
        want = []
        for i in range(lo, hi):
            if i in refused:
                continue
            seen.append((int(ts[i]), float(vs[i])))
            inside = [v for t, v in seen if ts[i] - size < t <= ts[i]]
            want.append((int(ts[i]), sum(inside), len(inside)))
        assert [(e, c) for e, _, c in got] == [(e, c) for e, _, c in want]
        np.testing.assert_allclose([x for _, x, _ in got], [x for _, x, _ in want])
        assert (res.columns["revision"] == 0).all()


def test_late_event_revises_an_emitted_window_and_pieces_are_deltas() -> None:
    aggs = parse(["sum(v)", "count"])
    shape = Shape(size=10, slide=10)
    s = KeyStream(aggs, shape, allowed_lateness=30)
    assert s.layout == "panes"
    store: dict[int, bytes] = {}
    res, d1 = s.feed(np.array([1, 2, 15]), {"v": np.array([1.0, 2.0, 3.0])})
    assert res.columns["end"].tolist() == [10] and res.columns["revision"].tolist() == [0]
    pk = [node_key(0, p) for p in range(5)]  # tumbling: one piece per pane, no node above
    assert sorted(d1.put) == pk[:2] and d1.delete == ()
    d1.apply(store)
    res, d2 = s.feed(np.array([3, 22]), {"v": np.array([4.0, 5.0])})
    # [0, 10) again with the late event (revision 1), [10, 20) for the first time
    assert res.columns["end"].tolist() == [10, 20]
    assert res.columns["revision"].tolist() == [1, 0]
    assert res.columns["sum_v"].tolist() == [7.0, 3.0]
    assert sorted(d2.put) == [pk[0], pk[2]] and d2.delete == ()  # only the panes touched
    d2.apply(store)
    s2 = KeyStream.restore(d2.meta, store, aggs, shape, allowed_lateness=30)
    assert s2.meta_bytes() == s.meta_bytes() and s2.pieces() == s.pieces() == store
    res, d3 = s2.feed(np.array([4, 45]), {"v": np.array([1.0, 0.0])})
    assert res.columns["end"].tolist() == [10, 30]  # [0, 10) again, [20, 30) closes
    assert res.columns["revision"].tolist() == [2, 0]
    assert res.columns["sum_v"].tolist() == [8.0, 5.0]
    assert d3.delete == (pk[0],)  # the bound (45 - 30) passed the end of pane 0's last window


def test_compaction_rewrites_the_chunks_when_half_are_dead() -> None:
    from windowagg.fifo import TwoStacksLite

    aggs = parse(["sum(v)"])
    # per-event windows with a FIFO aggregator of the caller's: the event log
    s = KeyStream(aggs, Shape(size=10), factory=TwoStacksLite)
    assert s.layout == "events"
    store: dict[int, bytes] = {}
    rewrites = 0
    for b in range(20):
        t = np.arange(b * 10, b * 10 + 10)
        _, d = s.feed(t, {"v": np.ones(10)})
        rewrites += bool(d.delete)
        d.apply(store)
        assert len(s) <= 40  # only the live events (and at most as many dead ones)
        assert len(store) <= 3
    assert 5 <= rewrites <= 20
    again = KeyStream.restore(d.meta, store, aggs, Shape(size=10), factory=TwoStacksLite)
    assert len(again) == len(s) and again.meta_bytes() == s.meta_bytes()


def test_state_of_another_configuration_is_refused() -> None:
    aggs = parse(["sum(v)"])
    for shape in (Shape(size=10, slide=10), Shape(size=10)):
        s = KeyStream(aggs, shape)
        _, d = s.feed(np.array([1]), {"v": np.array([1.0])})
        with pytest.raises(CodecError, match="checkpoint"):
            KeyStream.restore(d.meta, d.put, aggs, Shape(size=20, slide=10))
        if s.layout == "panes":  # partials of another aggregation (events hold any)
            with pytest.raises(CodecError, match="checkpoint"):
                KeyStream.restore(d.meta, d.put, parse(["max(v)"]), shape)
        garbage = {node_key(0, 0) if s.layout == "panes" else 0: b"garbage"}
        with pytest.raises(CodecError):  # the panes read a piece when a micro-batch needs it
            r = KeyStream.restore(d.meta, garbage, aggs, shape)
            r.feed(np.array([2]), {"v": np.array([1.0])})
        with pytest.raises(CodecError):
            KeyStream.restore(b"garbage", d.put, aggs, shape)
    with pytest.raises(ArgumentError, match="emit='watermark'"):
        KeyStream(aggs, Shape(size=10, slide=10), emit="arrival")


def test_values_a_monoid_refuses_are_rejected_by_position_and_do_not_move_the_clock() -> None:
    aggs = parse(["geomean(v)", "count"])
    s = KeyStream(aggs, Shape(size=10, slide=10))
    res, _ = s.feed(np.array([1, 50, 3]), {"v": np.array([2.0, -1.0, 8.0])})
    assert res.refused.tolist() == [1] and res.reasons[0].startswith("bad_value: ")
    assert s.watermark == 3  # the refused event at 50 did not move the clock
    res, _ = s.advance(100)
    assert res.columns["count"].tolist() == [2]
    np.testing.assert_allclose(res.columns["geomean_v"], [4.0])


def test_a_late_event_bridging_sessions_supersedes_them() -> None:
    aggs = parse(["sum(v)", "count"])
    s = KeyStream(aggs, Shape(gap=3), allowed_lateness=50)
    res, _ = s.feed(np.array([1, 10, 30]), {"v": np.array([1.0, 2.0, 3.0])})
    assert res.columns["start"].tolist() == [1, 10] and res.columns["end"].tolist() == [4, 13]
    assert res.columns["revision"].tolist() == [0, 0]
    res, _ = s.feed(np.array([4, 7]), {"v": np.array([4.0, 5.0])})  # 1-4-7-10: one session
    assert (res.columns["start"].tolist(), res.columns["end"].tolist()) == ([1], [13])
    assert res.columns["count"].tolist() == [4] and res.columns["revision"].tolist() == [1]
    res, _ = s.feed(np.array([12]), {"v": np.array([1.0])})  # extends it again
    assert (res.columns["end"].tolist(), res.columns["revision"].tolist()) == ([15], [2])


# ---------------------------------------------------------------- the pane layout
#: Monoids only (no exact quantile): hopping windows take the pane layout. ``cat_v``
#: (Concat) is not commutative: the open panes keep their events, in (time, arrival) order.
PANE_AGGS: list[list[Any]] = [
    ["sum(v)", "count", "max(v)", "min(v)", "mean(v)", "variance(v)"],
    ["sum(v)", "count", "max(v)", ("cat_v", Concat(), "v", "array<double>"), "first(v)"],
]
HOPPING = st.builds(
    lambda size, slide, start: Shape(size=size, slide=slide, start_time=start),
    st.integers(1, 12),
    st.integers(1, 12),
    st.integers(-5, 5),
)


def _feed_all(
    aggs: list[Any],
    shape: Shape,
    ts: np.ndarray,
    vs: np.ndarray,
    cuts: list[int],
    kw: dict[str, Any],
    through_bytes: bool,
) -> tuple[list[dict[str, Any]], list[int], list[Delta]]:
    """Feed the micro-batches (through a dict store and restore when *through_bytes*),
    then flush; every emitted row, the refused positions and the deltas."""
    store: dict[int, bytes] = {}
    meta: bytes | None = None
    s = KeyStream(aggs, shape, **kw)
    assert s.layout == "panes"
    rows: list[dict[str, Any]] = []
    refused: list[int] = []
    deltas: list[Delta] = []
    names = [a.alias for a in aggs]

    def collect(res: Any) -> None:
        for j in range(len(res.columns["end"])):
            row = {c: res.columns[c][j] for c in ["start", "end", "revision", *names]}
            row["id"] = int(res.ids[j])
            rows.append(row)

    for lo, hi in itertools.pairwise([0, *cuts, len(ts)]):
        if through_bytes:
            s = KeyStream.restore(meta, store, aggs, shape, **kw)
            s._check()
        res, d = s.feed(ts[lo:hi], {"v": vs[lo:hi]})
        s._check()
        d.apply(store)
        assert store == s.pieces()  # the deltas keep the store equal to the state
        meta = d.meta
        deltas.append(d)
        collect(res)
        refused.extend((lo + res.refused).tolist())
    if through_bytes:
        s = KeyStream.restore(meta, store, aggs, shape, **kw)
    res, d = s.advance(10**6)
    d.apply(store)
    assert store == {}  # every pane evicted once nothing can change
    collect(res)
    return rows, refused, deltas


@given(
    streams(),
    HOPPING,
    st.integers(0, 10),
    st.integers(0, 10),
    st.booleans(),
    st.sampled_from(["arrival", "batch"]),
    st.sampled_from(range(len(PANE_AGGS))),
)
def test_pane_layout_final_revisions_equal_the_batch_answer(
    data: tuple[np.ndarray, np.ndarray, list[int]],
    shape: Shape,
    ooo: int,
    allowed: int,
    through_bytes: bool,
    judge: str,
    which: int,
) -> None:
    ts, vs, cuts = data
    spec = PANE_AGGS[which]
    aggs = parse(spec)
    kw: dict[str, Any] = {"max_out_of_orderness": ooo, "allowed_lateness": allowed, "judge": judge}
    rows, refused, _ = _feed_all(aggs, shape, ts, vs, cuts, kw, through_bytes)
    df = pd.DataFrame({"k": "a", "t": ts, "v": vs})
    shape_kw = {"size": shape.size, "slide": shape.slide, "start_time": shape.start_time}
    gaps = sorted(hopping_gaps(df, shape_kw, list(range(len(ts)))))  # size < slide
    if judge == "arrival":
        lateness = {"max_out_of_orderness": ooo * 10**-6, "allowed_lateness": allowed * 10**-6}
        late: list[int] = []
    else:
        lateness = {}
        late = _late_per_batch(ts, vs, cuts, ooo + allowed, gaps)
    kept = df.drop(index=late).reset_index(drop=True)
    batch = window_agg(kept, "k", "t", spec, time_unit="us", **lateness, **_batch_shape(shape_kw))
    final = _final_of(rows, [a.alias for a in aggs])
    want = batch.results
    us = want["window_end"].astype("datetime64[ns, UTC]").astype("int64") // 1000
    assert final["end"].tolist() == us.tolist()
    for a in aggs:
        if a.dtype == "double":
            np.testing.assert_allclose(
                final[a.alias].to_numpy(float), want[a.alias].to_numpy(float), atol=1e-9
            )
        else:
            got = [tuple(x) if isinstance(x, (tuple, list)) else x for x in final[a.alias]]
            exp = [tuple(x) if isinstance(x, (tuple, list)) else x for x in want[a.alias]]
            assert got == exp
    if judge == "arrival":
        assert sorted(refused) == batch.rejects["row_index"].tolist()


def _final_of(rows: list[dict[str, Any]], names: list[str]) -> pd.DataFrame:
    df = pd.DataFrame(rows, columns=["start", "end", "revision", *names, "id"])
    for _, g in df.groupby("id"):
        assert g["revision"].tolist() == list(range(len(g)))
    return df.groupby("id").tail(1).sort_values("id").reset_index(drop=True)


def test_a_non_commutative_pane_folds_its_events_in_time_order_then_freezes() -> None:
    aggs = parse([("cat_v", Concat(), "v", "array<double>"), "count"])
    shape = Shape(size=20, slide=10)
    s = KeyStream(aggs, shape, allowed_lateness=15)
    store: dict[int, bytes] = {}
    got: dict[int, Any] = {}  # window end -> its last revision's cat_v

    def collect(res: Any) -> None:
        got.update(zip(res.columns["end"].tolist(), res.columns["cat_v"], strict=True))

    # pane [0, 10) receives 5, 3 then (late, within the lateness) 4 and 1: out of order
    for t, v in (([5, 3, 12], [5.0, 3.0, 12.0]), ([4, 1, 21], [4.0, 1.0, 21.0])):
        res, d = s.feed(np.array(t), {"v": np.array(v)})
        d.apply(store)
        s._check()
        collect(res)
    assert len(s) == 3 + 6  # three panes and the events of the open ones: 0 (4), 1, 2
    res, d = s.feed(np.array([33]), {"v": np.array([33.0])})  # bound 18: pane 0 freezes
    d.apply(store)
    s._check()
    collect(res)
    assert node_key(0, 0) in d.put and len(s) == 4 + 3  # pane 0 is a partial now
    s = KeyStream.restore(d.meta, store, aggs, shape, allowed_lateness=15)
    res, _ = s.advance(100)
    collect(res)
    assert got[20] == (1.0, 3.0, 4.0, 5.0, 12.0)  # [0, 20): time order, not arrival order
    df = pd.DataFrame({"k": "a", "t": [5, 3, 12, 4, 1, 21, 33], "v": [5, 3, 12, 4, 1, 21, 33.0]})
    want = window_agg(df, "k", "t", aggs, size=20e-6, slide=10e-6, time_unit="us").results
    ends = want["window_end"].astype("datetime64[ns, UTC]").astype("int64") // 1000
    assert {e: tuple(c) for e, c in zip(ends.tolist(), want["cat_v"], strict=True)} == got


def test_pane_state_bytes_do_not_grow_with_retained_events() -> None:
    """Bytes written per micro-batch (the Delta) and read on restore (the store) follow
    the panes, not the events: a 10x denser stream over the same time writes and keeps
    the same bytes, and the last micro-batches write what the first ones did."""
    aggs = parse(["max(v)", "sum(v)", "count"])
    shape = Shape(size=600, slide=10)  # 60 panes per window

    def run(rate: int) -> tuple[list[int], list[int]]:
        s = KeyStream(aggs, shape, allowed_lateness=10)
        rng = np.random.default_rng(7)
        store: dict[int, bytes] = {}
        written, read = [], []
        for b in range(40):  # 40 micro-batches of 30 time units: 2x the window
            t = np.sort(rng.integers(b * 30, b * 30 + 30, 30 * rate))
            t[::7] -= 5  # some out of order, within the lateness
            _, d = s.feed(t, {"v": rng.random(len(t))})
            d.apply(store)
            written.append(d.nbytes)
            read.append(sum(len(v) + 8 for v in store.values()) + len(d.meta))
            s = KeyStream.restore(d.meta, store, aggs, shape, allowed_lateness=10)
        return written, read

    w1, r1 = run(1)
    w10, r10 = run(10)
    # after the first window, state read stays at ~the window's panes (<= 62 pieces)
    assert max(r1[25:]) <= 1.1 * min(r1[25:]) and max(r10[25:]) <= 1.1 * min(r10[25:])
    # same time, 10x the events: the same pieces (their values differ, not their size)
    assert max(r10) <= 1.05 * max(r1) and max(w10) <= 1.05 * max(w1)
    # the last quarter writes what the first quarter wrote (pieces of ~4 panes + meta)
    assert max(w10[30:]) <= 1.5 * max(w10[:10])


@pytest.mark.parametrize("commutative", [True, False])
def test_a_raising_user_monoid_names_its_aggregation_and_window(commutative: bool) -> None:
    from windowagg.errors import AggregationError

    fussy = Fussy(commutative=True)
    fussy.commutative = commutative  # type: ignore[misc]
    aggs = parse([("f", fussy, "v"), "count"])
    s = KeyStream(aggs, Shape(size=10, slide=10), allowed_lateness=100)
    assert s.layout == "panes"
    with pytest.raises(AggregationError, match=r"aggregation 'f' \(monoid Fussy\)") as e:
        s.feed(np.array([1, 2]), {"v": np.array([60.0, 70.0])})  # one pane: 130 > 100
    assert e.value.alias == "f" and "OverflowError" in str(e.value)
    s = KeyStream(aggs, Shape(size=10, slide=10), allowed_lateness=100)
    with pytest.raises(AggregationError, match=r"window_start 0, window_end 10") as e:
        s.feed(np.array([1, 2, 15]), {"v": np.array([20.0, 30.0, 1.0])})  # lower(50)
    assert e.value.alias == "f" and "ValueError: fifty" in str(e.value)


def test_count_windows_need_no_timer_but_keep_their_state() -> None:
    """Count windows wait for events, not time: deadline() is a complete window's end while
    one waits for the watermark, else None, and the state never expires once it holds
    events (its last ones wait for the events that complete their windows); it used to fail
    an assert whenever no window was pending."""
    s = KeyStream(parse(["sum(v)"]), Shape(rows=2, every=2), max_out_of_orderness=0)
    assert (s.deadline(), s.expired()) == (None, True)  # nothing admitted yet
    s.feed(np.array([1, 2, 3, 4]), {"v": np.array([1.0, 2, 3, 4])})
    assert (s.deadline(), s.expired()) == (None, False)  # both windows emitted
    s.feed(np.array([5]), {"v": np.array([5.0])})  # waits for its window's second event
    assert (s.deadline(), s.expired(), len(s) >= 1) == (None, False, True)
    s2 = KeyStream(
        parse(["sum(v)"]), Shape(rows=2, every=2), max_out_of_orderness=3, allowed_lateness=5
    )
    out, _ = s2.feed(np.array([1, 2, 3]), {"v": np.array([1.0, 2, 3])})
    assert out.columns["end"].tolist() == [] and s2.deadline() == 2  # (1, 2] waits for wm 2
    out, _ = s2.advance(10)
    assert out.columns["sum_v"].tolist() == [3.0] and s2.deadline() is None
    assert not s2.expired() and len(s2) == 1  # 3 waits for its pair (1 and 2 compacted)
    out, _ = s2.feed(np.array([6]), {"v": np.array([6.0])})  # behind wm 10, within lateness
    assert out.columns["sum_v"].tolist() == [9.0] and out.refused.tolist() == []


@pytest.mark.timeout(120)
def test_panes_far_apart_in_time_cost_no_step_per_empty_window() -> None:
    # years 1 and 3000 of one key, 5 s windows every 10 s: ~1e10 empty windows between them
    # (the pane tree once walked each one in emission, deadline and clean-up)
    us = 1_000_000
    y1, y3000 = -62135596800 * us, 32503680000 * us
    aggs = parse(["sum(v)", "count"])
    s = KeyStream(aggs, Shape(size=5 * us, slide=10 * us))
    assert type(s._state).__name__ == "PaneStream"
    res, _ = s.feed(np.array([y1 + us, y3000, y3000 + 5 * us]), {"v": np.array([4.0, 1.0, 2.0])})
    assert res.columns["start"].tolist() == [y1] and res.columns["sum_v"].tolist() == [4.0]
    assert [r.split(":")[0] for r in res.reasons] == ["in no window"]
    assert s.deadline() == y3000 + 5 * us and not s.expired()
    res, _ = s.advance(y3000 + 10 * us)
    assert res.columns["start"].tolist() == [y3000] and res.columns["sum_v"].tolist() == [1.0]
    s._check()
