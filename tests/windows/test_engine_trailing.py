"""Per-event windows on a FiBA (issue 37 step 7: ``windows.engine.trailing.TrailingFiBA``).

The final revision of every per-event window equals ``windowagg.pandas.window_agg`` on the
same input (random micro-batch cuts, out-of-order and late-but-accepted events, duplicate
times, non-commutative monoids: Concat, first/last, a 2x2 integer matrix product; one or
two sizes; the state through its bytes and restarts at random points; judged in arrival or
per micro-batch); ``emit="arrival"`` answers each event as of its arrival; the work of a
micro-batch, counted in combines, grows with log(retained), not with the retained events;
the stored events stay within rate x (size + lateness).
"""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st
from tests.windows.test_engine_stream import _late_per_batch

from windowagg.errors import AggregationError, CodecError
from windowagg.monoids import Concat, Counting, MatMul2x2, Sum
from windowagg.pandas import parse, window_agg
from windowagg.windows.engine import KeyStream, Shape
from windowagg.windows.engine.trailing import SMALL, TrailingFiBA, chunk_key


class Mat:
    """Products of ``[[v, 1], [1, 0]]`` in window order (Python ints: exact): a monoid of
    the caller's that is not commutative."""

    identity = (1, 0, 0, 1)
    commutative = False

    def lift(self, v: float) -> tuple[int, ...]:
        return (int(v), 1, 1, 0)

    def combine(self, a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...]:
        return MatMul2x2().combine(a, b)

    def lower(self, a: tuple[int, ...]) -> tuple[int, ...]:
        return a


AGGS: list[Any] = [
    "sum(v)",
    "count",
    "max(v)",
    "mean(v)",
    "first(v)",
    "last(v)",
    ("cat_v", Concat(), "v", "array<double>"),
    ("mm", Mat(), "v", "array<bigint>"),
]
NAMES = ["sum_v", "count", "max_v", "mean_v", "first_v", "last_v", "cat_v", "mm"]

# integers and halves: every sum is exact whatever the grouping; inf is refused
VALUES = st.one_of(st.integers(-9, 9).map(float), st.sampled_from([0.5, -1.5, float("inf")]))


@st.composite
def streams(draw: Any) -> tuple[np.ndarray, np.ndarray, list[int], list[int]]:
    n = draw(st.integers(0, 30))
    ts = np.asarray(draw(st.lists(st.integers(0, 40), min_size=n, max_size=n)), dtype=np.int64)
    vs = np.asarray(draw(st.lists(VALUES, min_size=n, max_size=n)), dtype=np.float64)
    cuts = sorted(draw(st.lists(st.integers(0, n), max_size=6)))
    restarts = draw(st.lists(st.integers(0, len(cuts) + 1), max_size=3))
    return ts, vs, cuts, restarts


def _columns(sizes: tuple[int, ...]) -> list[str]:
    if len(sizes) == 1:
        return NAMES
    from windowagg.windows.engine.sizes import size_label

    return [f"{a}_{size_label(s)}" for a in NAMES for s in sizes]


def _run(
    ts: np.ndarray,
    vs: np.ndarray,
    cuts: list[int],
    restarts: list[int],
    shape: Shape,
    kw: dict[str, Any],
) -> tuple[list[dict[str, Any]], list[int], list[str]]:
    """Feed the micro-batches, the state through its bytes at the *restarts* (a fresh
    object from the stored metadata and pieces, as after a SIGKILL); then flush."""
    aggs = parse(AGGS)
    cols = _columns(shape.sizes or (shape.size,))  # type: ignore[arg-type]
    s = KeyStream(aggs, shape, **kw)
    assert s.layout == "trailing"
    meta: bytes | None = None
    store: dict[int, bytes] = {}
    rows: list[dict[str, Any]] = []
    refused: list[int] = []
    reasons: list[str] = []

    def collect(res: Any) -> None:
        for j in range(len(res.columns["end"])):
            row = {c: res.columns[c][j] for c in ["start", "end", "revision", *cols]}
            row["id"] = int(res.ids[j])
            rows.append(row)

    for i, (lo, hi) in enumerate(itertools.pairwise([0, *cuts, len(ts)])):
        if i in restarts:
            s = KeyStream.restore(meta, store, aggs, shape, **kw)
            assert s.pieces() == store and (meta is None or s.meta_bytes() == meta)
        res, delta = s.feed(ts[lo:hi], {"v": vs[lo:hi]})
        s._check()
        delta.apply(store)
        meta = delta.meta
        assert s.pieces() == store
        collect(res)
        refused.extend((lo + res.refused).tolist())
        reasons.extend(res.reasons)
    if len(cuts) + 1 in restarts:
        s = KeyStream.restore(meta, store, aggs, shape, **kw)
    res, _ = s.advance(10**6)
    s._check()
    collect(res)
    return rows, refused, reasons


@given(
    streams(),
    st.sampled_from([(1,), (4,), (9,), (3, 9), (1, 6), (5, 12)]),
    st.integers(0, 8),
    st.integers(0, 8),
    st.sampled_from(["arrival", "batch"]),
)
def test_final_revisions_equal_the_batch_answer(
    data: tuple[np.ndarray, np.ndarray, list[int], list[int]],
    sizes: tuple[int, ...],
    ooo: int,
    allowed: int,
    judge: str,
) -> None:
    ts, vs, cuts, restarts = data
    shape = Shape(size=max(sizes), sizes=sizes if len(sizes) > 1 else ())
    kw = {"max_out_of_orderness": ooo, "allowed_lateness": allowed, "judge": judge}
    rows, refused, _ = _run(ts, vs, cuts, restarts, shape, kw)
    cols = _columns(sizes)
    df = pd.DataFrame({"k": "a", "t": ts, "v": vs})
    if judge == "arrival":  # the batch engine judges lateness in input order too
        lateness = {"max_out_of_orderness": ooo * 1e-6, "allowed_lateness": allowed * 1e-6}
        late: list[int] = []
    else:
        lateness = {}
        late = _late_per_batch(ts, vs, cuts, ooo + allowed, [])
    kept = df.drop(index=late).reset_index(drop=True)
    size = [s * 1e-6 for s in sizes] if len(sizes) > 1 else sizes[0] * 1e-6
    batch = window_agg(kept, "k", "t", AGGS, time_unit="us", size=size, slide=None, **lateness)
    got = pd.DataFrame(rows, columns=["start", "end", "revision", *cols, "id"])
    for _, g in got.groupby("id"):  # a window's revisions come out in order, 0, 1, 2, ...
        assert g["revision"].tolist() == list(range(len(g)))
    final = got.groupby("id").tail(1).sort_values(["end", "id"]).reset_index(drop=True)
    want = batch.results
    assert len(final) == len(want)
    us = want["window_end"].astype("datetime64[ns, UTC]").astype("int64") // 1000
    assert final["end"].tolist() == us.tolist()
    for c in cols:  # exact: integer and half values, integer matrices
        assert [_plain(x) for x in final[c]] == [_plain(x) for x in want[c]], c
    if judge == "arrival":
        assert sorted(refused) == batch.rejects["row_index"].tolist()
    else:
        bad = [i for i in range(len(ts)) if not math.isfinite(vs[i])]
        assert sorted(refused) == sorted(bad + late)


def _plain(x: Any) -> Any:
    if isinstance(x, tuple | list | np.ndarray):
        return tuple(_plain(y) for y in x)
    return float(x) if isinstance(x, float | np.floating) else int(x)


@given(streams(), st.integers(1, 12), st.integers(0, 8))
def test_arrival_answers_each_event_as_of_its_arrival_in_arrival_order(
    data: tuple[np.ndarray, np.ndarray, list[int], list[int]], size: int, ooo: int
) -> None:
    """emit="arrival": each event's window holds the events that arrived before it (and
    itself), in time order, ties in arrival order (Concat shows the order)."""
    ts, vs, cuts, restarts = data
    aggs = parse(["sum(v)", ("cat_v", Concat(), "v", "array<double>")])
    kw: dict[str, Any] = {"max_out_of_orderness": ooo, "emit": "arrival"}
    s = KeyStream(aggs, Shape(size=size), **kw)
    assert s.layout == "trailing"
    store: dict[int, bytes] = {}
    meta: bytes | None = None
    seen: list[tuple[int, int, float]] = []  # admitted (t, arrival, v)
    for i, (lo, hi) in enumerate(itertools.pairwise([0, *cuts, len(ts)])):
        if i in restarts:
            s = KeyStream.restore(meta, store, aggs, Shape(size=size), **kw)
        res, d = s.feed(ts[lo:hi], {"v": vs[lo:hi]})
        d.apply(store)
        meta = d.meta
        s._check()
        refused = set((lo + res.refused).tolist())
        want = []
        for j in range(lo, hi):
            if j in refused:
                continue
            seen.append((int(ts[j]), j, float(vs[j])))
            inside = sorted(x for x in seen if ts[j] - size < x[0] <= ts[j])
            want.append((int(ts[j]), sum(v for *_, v in inside), tuple(v for *_, v in inside)))
        got = list(zip(res.columns["end"].tolist(), res.columns["sum_v"].tolist(),
                       res.columns["cat_v"], strict=True))  # fmt: skip
        assert got == want
        assert res.ids.tolist() == [j for j in range(lo, hi) if j not in refused]
        assert (res.columns["revision"] == 0).all()


def _combines_per_batch(retained: int, batches: int = 6, m: int = 40) -> tuple[float, float]:
    """Combines of the trailing layout and of the event log per micro-batch of *m*
    in-order events, once *retained* events are held (size = retained events)."""
    out = []
    for layout in ("trailing", "events"):
        cm = Counting(Sum())
        aggs = parse([("s", cm, "v")])
        kw: dict[str, Any] = {"allowed_lateness": 5}
        if layout == "events":
            from windowagg.fifo import TwoStacksLite

            kw["factory"] = TwoStacksLite  # a FIFO aggregator of the caller's: the event log
        s = KeyStream(aggs, Shape(size=retained), **kw)
        assert s.layout == layout
        t = np.arange(retained + batches * m, dtype=np.int64)
        s.feed(t[:retained], {"v": np.ones(retained)})
        cm.reset()
        for b in range(batches):
            part = t[retained + b * m : retained + (b + 1) * m]
            res, _ = s.feed(part, {"v": np.ones(m)})
            assert len(res.columns["end"]) == m  # r = m windows emitted per micro-batch
            assert res.columns["s"][-1] == retained  # the trailing window holds `retained`
        out.append(cm.combines / batches)
    return out[0], out[1]


def test_a_micro_batch_costs_log_retained_combines_not_retained() -> None:
    """m = 40 events and r = 40 windows per micro-batch over 2^10 and 2^16 retained
    events: the trailing layout's combines grow like log d (bulk_insert, range queries,
    bulk_evict: 2345 and 5449 per micro-batch), the event log's like d (it slides over
    every window's events: 2125 and 131149)."""
    small, big = _combines_per_batch(2**10), _combines_per_batch(2**16)
    for d, fiba in ((2**10, small[0]), (2**16, big[0])):
        assert fiba <= 6 * (40 + 40) * math.log2(d), (d, fiba)  # O((m + r) log d)
    assert big[0] <= 2.6 * small[0], (small, big)  # 64x the events, log d 10 -> 16
    assert big[1] >= 32 * small[1], (small, big)  # the event log: ~64x


def test_the_stored_events_stay_within_rate_times_size_and_lateness() -> None:
    """2 events per time unit, size 50, lateness 20, out-of-order by up to 10: after the
    first window the key stores at most rate x (size + lateness + ooo) events plus the
    newest chunk, whatever the length of the stream, and its pieces stay flat."""
    aggs = parse(["max(v)", "sum(v)"])
    s = KeyStream(aggs, Shape(size=50), max_out_of_orderness=10, allowed_lateness=20)
    rng = np.random.default_rng(37)
    store: dict[int, bytes] = {}
    sizes = []
    for b in range(200):
        t = np.sort(rng.integers(b * 10, b * 10 + 10, 20)) - rng.integers(0, 10, 20)
        _, d = s.feed(t, {"v": rng.random(20)})
        d.apply(store)
        if b > 10:
            assert len(s) <= 2 * (50 + 20 + 10 + 10) + 20, (b, len(s))
            sizes.append(sum(map(len, store.values())))
    assert max(sizes[-50:]) <= 1.2 * max(sizes[:50])
    assert all(k & 63 == 62 for k in store)  # event chunks


def test_single_event_micro_batches_share_chunks() -> None:
    """The object API's single inserts: a micro-batch extends the newest chunk while it
    holds fewer than SMALL events (one chunk per SMALL events, not one per event)."""
    aggs = parse(["sum(v)"])
    s = KeyStream(aggs, Shape(size=10**6))
    store: dict[int, bytes] = {}
    for i in range(5 * SMALL):
        _, d = s.feed(np.array([i]), {"v": np.array([1.0])})
        assert len(d.put) == 1 and not d.delete
        d.apply(store)
    assert sorted(store) == [chunk_key(n) for n in range(5)]
    again = KeyStream.restore(d.meta, store, aggs, Shape(size=10**6))
    assert again.pieces() == store and len(again) == 5 * SMALL


def test_a_raising_user_monoid_names_its_aggregation_and_changes_nothing() -> None:
    from tests.windows.engine_oracle import Fussy

    aggs = parse([("f", Fussy(True), "v"), "count"])
    s = KeyStream(aggs, Shape(size=10), allowed_lateness=100)
    assert isinstance(s._state, TrailingFiBA)
    s.feed(np.array([1, 2]), {"v": np.array([10.0, 20.0])})
    before = (s.meta_bytes(), s.pieces())
    with pytest.raises(AggregationError, match=r"aggregation 'f' \(monoid Fussy\)") as e:
        s.feed(np.array([3]), {"v": np.array([20.0])})  # the window (-7, 3] sums to 50
    assert e.value.alias == "f" and "window_end 3" in str(e.value)
    assert (s.meta_bytes(), s.pieces()) == before
    out, _ = s.feed(np.array([4]), {"v": np.array([1.0])})
    s._check()
    assert out.columns["f"].tolist() == [31.0] and out.columns["count"].tolist() == [3]


def test_state_of_another_layout_or_configuration_is_refused() -> None:
    aggs = parse(["sum(v)"])
    s = KeyStream(aggs, Shape(size=10))
    _, d = s.feed(np.array([1, 2]), {"v": np.array([1.0, 2.0])})
    with pytest.raises(CodecError, match="size"):
        KeyStream.restore(d.meta, d.put, aggs, Shape(size=20))
    with pytest.raises(CodecError, match="not an event chunk"):
        KeyStream.restore(d.meta, {7: b"x"}, aggs, Shape(size=10))
    with pytest.raises(CodecError):
        KeyStream.restore(d.meta, {chunk_key(0): b"garbage"}, aggs, Shape(size=10))
    from windowagg.fifo import TwoStacksLite

    log = KeyStream(aggs, Shape(size=10), factory=TwoStacksLite)  # the event log
    _, d2 = log.feed(np.array([1]), {"v": np.array([1.0])})
    with pytest.raises(CodecError, match="layout"):
        KeyStream.restore(d2.meta, d2.put, aggs, Shape(size=10))


class _LowerOnce:
    """A sum whose ``lower`` raises once, when armed."""

    identity = 0.0
    commutative = True

    def __init__(self) -> None:
        self.armed = False

    def lift(self, x: float) -> float:
        return x

    def combine(self, a: float, b: float) -> float:
        return a + b

    def lower(self, a: float) -> float:
        if self.armed:
            self.armed = False
            raise RuntimeError("once")
        return a


def test_an_advance_that_raised_is_answered_in_full_when_retried() -> None:
    """The trees are rebuilt from what they held before the step, not by the clock the
    failed ``advance`` had moved (which had evicted every event: empty windows)."""
    m = _LowerOnce()
    aggs = parse([("s", m, "v"), "count"])
    s = KeyStream(aggs, Shape(size=10), max_out_of_orderness=5)
    s.feed(np.array([1, 2, 2]), {"v": np.array([1.0, 2.0, 3.0])})
    before = (s.meta_bytes(), s.pieces())
    m.armed = True
    with pytest.raises(AggregationError, match="once"):
        s.advance(100)
    assert (s.meta_bytes(), s.pieces()) == before
    out, _ = s.advance(100)
    s._check()
    assert out.columns["s"].tolist() == [1.0, 6.0, 6.0] and out.columns["count"].tolist() == [
        1,
        3,
        3,
    ]


#: Decayed aggregations whose partial is a constant (exponential decay) or a bounded
#: summary: each window's tree partial answered ``as_of`` its end.
TIMED = [
    "ewm_mean(v, half_life=9)",
    "decayed_sum(v, half_life=4) as ds",
    "decayed_count(half_life=20) as dc",
    "decayed_p90(v, half_life=9) as dq",
    "top_k(v, 2, half_life=30) as tk",
    "first(v)",
]
TIMED_NAMES = ["ewm_mean_v", "ds", "dc", "dq", "tk", "first_v"]
S = 1_000_000  # times in seconds, as microseconds


def _close_enough(got: Any, want: Any) -> bool:
    """Floats within 1e-9 (the tree groups the decayed partials otherwise than the batch's
    slide); top_k's JSON text by its values and weights."""
    import json

    if isinstance(want, str):
        g, w = json.loads(got), json.loads(want)
        return [v for v, _ in g] == [v for v, _ in w] and np.allclose(
            [x for _, x in g], [x for _, x in w], rtol=1e-9, atol=0
        )
    return bool(np.isclose(float(got), float(want), rtol=1e-9, atol=1e-300))


@given(
    streams(),
    st.sampled_from([(9,), (20,), (4, 15)]),
    st.integers(0, 8),
    st.integers(0, 8),
)
def test_decayed_final_revisions_equal_the_batch_answer(
    data: tuple[np.ndarray, np.ndarray, list[int], list[int]],
    sizes: tuple[int, ...],
    ooo: int,
    allowed: int,
) -> None:
    """Exponential decay and decayed summaries (few distinct values: the summaries'
    exact regime) on the trailing layout, times in seconds: the last revision of every
    window equals window_agg's, through restarts."""
    ts, vs, cuts, restarts = data
    ts = ts * S
    vs = np.where(np.isfinite(vs), np.abs(np.nan_to_num(vs)) % 5, vs)  # 0..4.5: few values
    us = tuple(s * S for s in sizes)
    shape = Shape(size=max(us), sizes=us if len(us) > 1 else ())
    kw = {"max_out_of_orderness": ooo * S, "allowed_lateness": allowed * S}
    aggs = parse(TIMED)
    s = KeyStream(aggs, shape, **kw)
    assert s.layout == "trailing"
    from windowagg.windows.engine.sizes import size_label

    cols = (
        TIMED_NAMES if len(us) == 1 else [f"{a}_{size_label(x)}" for a in TIMED_NAMES for x in us]
    )
    meta: bytes | None = None
    store: dict[int, bytes] = {}
    last: dict[int, tuple[int, list[Any]]] = {}
    for i, (lo, hi) in enumerate(itertools.pairwise([0, *cuts, len(ts)])):
        if i in restarts:
            s = KeyStream.restore(meta, store, aggs, shape, **kw)
        res, d = s.feed(ts[lo:hi], {"v": vs[lo:hi]})
        d.apply(store)
        meta = d.meta
        for j, key in enumerate(res.ids.tolist()):
            last[key] = (int(res.columns["end"][j]), [res.columns[c][j] for c in cols])
    s._check()
    res, _ = s.advance(10**12)
    for j, key in enumerate(res.ids.tolist()):
        last[key] = (int(res.columns["end"][j]), [res.columns[c][j] for c in cols])
    df = pd.DataFrame({"k": "a", "t": ts, "v": vs})
    size = [float(x) for x in sizes] if len(sizes) > 1 else float(sizes[0])
    batch = window_agg(
        df, "k", "t", TIMED, time_unit="us", size=size, slide=None,
        max_out_of_orderness=float(ooo), allowed_lateness=float(allowed),
    ).results  # fmt: skip
    final = [last[k] for k in sorted(last, key=lambda k: (last[k][0], k))]
    assert len(final) == len(batch)
    ends = batch["window_end"].astype("datetime64[ns, UTC]").astype("int64") // 1000
    assert [e for e, _ in final] == ends.tolist()
    if not final:  # (an empty batch result names no sized columns)
        return
    for c_i, c in enumerate(cols):
        for (_, row), want in zip(final, batch[c].tolist(), strict=True):
            assert _close_enough(row[c_i], want), (c, row[c_i], want)
