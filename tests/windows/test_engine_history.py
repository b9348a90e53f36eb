"""The whole-history layout (:mod:`windowagg.windows.engine.history`): a frozen partial per
aggregation plus the events a late event can still revise.

Oracles: the event log (``EventLog``, which keeps every event: the same windows, ids and
revisions micro-batch by micro-batch) and the batch answer (``window_key`` over the admitted
events: the final revision of every window). Exponential decay compares at rel 1e-9;
summaries in their exact regime (few distinct values). The state is checked against its
bound: every stored event is at or above the lateness bound, and the bytes are a constant
plus 24 B per retained event."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from windowagg.aggs import parse_aggs
from windowagg.errors import ArgumentError
from windowagg.sketches.forward_decay import ExpDecayed, exp_fold, exp_slices, exp_slices_from
from windowagg.windows.engine import KeyStream, Shape, window_key
from windowagg.windows.engine.assign import HISTORY
from windowagg.windows.engine.history import CHUNK_TAG, FROZEN_KEY
from windowagg.windows.engine.records import decode_events
from windowagg.windows.engine.stream import EventLog

HIST = Shape(size=HISTORY)
# half-lives in microseconds, the engine's unit, of the order of the tests' times
EXP = [
    "ewm_mean(v, half_life=7us)",
    "decayed_sum(v, half_life=20us)",
    "decayed_count(half_life=3us)",
]
SUMMARY = ["decayed_p50(v, half_life=9us) as med", "top_k(v, 5, half_life=30us) as top"]
EXP_NAMES = ["ewm_mean_v", "decayed_sum_v", "decayed_count"]


def _same(name: str, got: object, want: object) -> bool:
    if name == "top":  # every value reported (k >= distinct values): weights at rel 1e-9
        g, w = dict(map(tuple, json.loads(got))), dict(map(tuple, json.loads(want)))
        return g.keys() == w.keys() and all(math.isclose(g[k], w[k], rel_tol=1e-9) for k in g)
    if name == "med":
        return bool(got == want)
    return math.isclose(float(got), float(want), rel_tol=1e-9, abs_tol=1e-300)


batches = st.lists(
    st.lists(
        st.tuples(st.integers(0, 60), st.sampled_from([0.0, 1.0, 2.0, 0.5, 3.0])),
        min_size=0,
        max_size=8,
    ),
    min_size=1,
    max_size=10,
)


@settings(max_examples=60, deadline=None)
@given(
    data=batches,
    ooo=st.integers(0, 5),
    late=st.integers(0, 5),
    judge=st.sampled_from(["arrival", "batch"]),
    summaries=st.booleans(),
    restarts=st.lists(st.booleans(), min_size=10, max_size=10),
)
def test_the_fold_answers_as_the_event_log_and_the_batch(
    data, ooo, late, judge, summaries, restarts
):
    """Random micro-batches (duplicate times, late-but-accepted and late events), the state
    through its bytes at random micro-batches: each micro-batch's windows, ids and
    revisions are the event log's, and the final revision of every window the batch's."""
    aggs = parse_aggs(EXP + (SUMMARY if summaries else []))
    names = EXP_NAMES + (["med", "top"] if summaries else [])
    kw = {"max_out_of_orderness": ooo, "allowed_lateness": late, "judge": judge}
    s = KeyStream(aggs, HIST, **kw)
    assert s.layout == "history"
    log = EventLog(aggs, HIST, **kw)
    store: dict[int, bytes] = {}
    final: dict[int, tuple[object, ...]] = {}
    admitted_t: list[int] = []
    admitted_v: list[float] = []
    seq_of: list[int] = []
    seq = 0
    steps = [*data, None]
    for i, batch in enumerate(steps):
        if batch is None:
            got, d = s.advance(10**6)
            want, _ = log.advance(10**6)
            t = np.empty(0, np.int64)
        else:
            t = np.array([x for x, _ in batch], dtype=np.int64)
            v = np.array([y for _, y in batch], dtype=np.float64)
            got, d = s.feed(t, {"v": v})
            want, _ = log.feed(t, {"v": v})
            ok = np.setdiff1d(np.arange(len(t)), got.refused)
            admitted_t += t[ok].tolist()
            admitted_v += v[ok].tolist()
            seq_of += (seq + ok).tolist()
        seq += len(t)
        assert got.refused.tolist() == want.refused.tolist()
        assert got.reasons == want.reasons
        gc, wc = got.columns, want.columns
        for c in ("start", "end", "revision"):
            assert gc[c].tolist() == wc[c].tolist(), c
        assert got.ids.tolist() == want.ids.tolist()
        for c in names:
            for x, y in zip(gc[c], wc[c], strict=True):
                assert _same(c, x, y), (c, x, y)
        for j, sid in enumerate(got.ids.tolist()):
            final[sid] = (int(gc["start"][j]), int(gc["end"][j]), *(gc[c][j] for c in names))
        d.apply(store)
        s._check()
        _assert_bounded(s, d.meta, store, summaries)
        if restarts[i % len(restarts)]:  # a restart from the stored bytes
            s = KeyStream.restore(d.meta, dict(store), aggs, HIST, **kw)
            assert s.pieces() == store or summaries  # summaries: bytes of equal digests
    if not admitted_t:
        assert not final
        return
    b = window_key(np.array(admitted_t), {"v": np.array(admitted_v)}, aggs, HIST).columns
    order = np.lexsort((np.array(seq_of), np.array(admitted_t)))  # the batch's window order
    assert sorted(final) == sorted(seq_of)
    for j, pos in enumerate(order.tolist()):
        row = final[seq_of[pos]]
        assert row[:2] == (int(b["start"][j]), int(b["end"][j]))
        for c, x in zip(names, row[2:], strict=True):
            assert _same(c, x, b[c][j]), (c, x, b[c][j])


def _assert_bounded(s: KeyStream, meta: bytes, store: dict[int, bytes], summaries: bool) -> None:
    """Every stored event is one a late event can still revise (t >= the bound), each
    stored once; the bytes are a constant plus 24 B per retained event (+ the summaries)."""
    cols = ["v"]
    held = [decode_events(b, cols) for k, b in store.items() if k & 63 == CHUNK_TAG]
    n = sum(len(e.t) for e in held)
    assert n == len(s)
    if s.bound is not None and n:
        assert min(int(e.t.min()) for e in held if len(e.t)) >= s.bound
    chunk_bytes = sum(len(b) for k, b in store.items() if k & 63 == CHUNK_TAG)
    assert chunk_bytes <= 24 * n + 120 * len(held)
    assert len(held) <= n + 1
    assert len(meta) <= 1200 + 40 * len(s._state._revs)
    assert set(store) <= {FROZEN_KEY} | {k for k in store if k & 63 == CHUNK_TAG}
    if not summaries:
        assert FROZEN_KEY not in store


def test_state_stays_bounded_over_a_long_history():
    """100,000 events over 2,000 half-lives in 100 micro-batches: the state after each
    one is the partial plus the ~rate x lateness retained events, and the answers of the
    last micro-batch are the batch's (no NaN, no underflow to 0 of a mean)."""
    rng = np.random.default_rng(3)
    n, half = 100_000, 1_000
    t = np.sort(rng.integers(0, 2_000 * half, n))
    t = t + rng.integers(0, 50, n)  # a little out of order
    v = rng.normal(size=n)
    aggs = parse_aggs([f"ewm_mean(v, half_life={half}us)", f"decayed_sum(v, half_life={half}us)"])
    s = KeyStream(aggs, HIST, max_out_of_orderness=50, allowed_lateness=100)
    store: dict[int, bytes] = {}
    sizes = []
    for part in np.array_split(np.arange(n), 100):
        out, d = s.feed(t[part], {"v": v[part]})
        assert not np.isnan(out.columns["ewm_mean_v"]).any()
        d.apply(store)
        sizes.append(len(d.meta) + sum(len(b) for b in store.values()))
        assert sizes[-1] <= 1200 + 24 * len(s) + 120 * len(store)
    assert max(sizes) < 8_000  # ~150 retained events, whatever the history's length
    out, _ = s.advance(10**12)
    b = window_key(t, {"v": v}, aggs, HIST).columns
    k = len(out.columns["end"])
    assert k and out.columns["end"].tolist() == b["end"][-k:].tolist()
    for c in ("ewm_mean_v", "decayed_sum_v"):
        np.testing.assert_allclose(out.columns[c], b[c][-k:], rtol=1e-9)


def test_a_mean_thousands_of_half_lives_after_the_partial_is_its_value():
    """Issue 36's bounds through the frozen partial: the frozen events lie 1,100 and
    3,000 half-lives before the retained ones (their weights underflow to 0 in a scaled
    sum); the mean is the newest value's, the sum scaled once, never NaN."""
    aggs = parse_aggs(["ewm_mean(v, half_life=1us)", "decayed_sum(v, half_life=1us)"])
    s = KeyStream(aggs, HIST, allowed_lateness=0)
    s.feed(np.array([0, 1_900]), {"v": np.array([1e300, 5.0])})
    out, _ = s.feed(np.array([3_000, 3_000]), {"v": np.array([2.0, 4.0])})
    assert s._state.frozen[0][0] == 1_900  # 0 and 1,900 are one partial
    assert out.columns["ewm_mean_v"].tolist() == [3.0, 3.0]
    assert out.columns["decayed_sum_v"].tolist() == [6.0, 6.0]  # 5 * 2^-1100 = 0; 1e300 too
    out, _ = s.advance(6_000)
    assert out.columns["end"].tolist() == []
    b = window_key(
        np.array([0, 1_900, 3_000, 3_000]), {"v": np.array([1e300, 5.0, 2.0, 4.0])}, aggs, HIST
    ).columns
    assert b["ewm_mean_v"].tolist()[1:] == [5.0, 3.0, 3.0]


@pytest.mark.parametrize("what", ["sum", "count", "mean"])
@pytest.mark.parametrize("gap", [0, 1_030, 1_074, 1_080, 5_000])
def test_exp_slices_from_equals_exp_slices_over_the_whole(what, gap):
    """The seeded verb (both backends) equals the unseeded one over seed + events, at the
    edges of the subnormals (gaps of 1,030-5,000 half-lives between seed and events)."""
    m = ExpDecayed(1.0, what)
    t0 = np.array([0, 3, 3], dtype=np.int64)
    v0 = np.array([1e300, -2.0, 7.0])
    t1 = np.array([gap + 10, gap + 10, gap + 12, gap + 40], dtype=np.int64)
    v1 = np.array([1.0, 2.5, -1.0, 3.0])
    seed = exp_fold(m, None, t0, v0)
    hi = np.array([0, 2, 2, 3, 4], dtype=np.int64)
    end = np.array([gap + 5, gap + 10, gap + 11, gap + 12, gap + 1_200], dtype=np.int64)
    t, v = np.concatenate([t0, t1]), np.concatenate([v0, v1])
    want = exp_slices(m, t, v, np.zeros(5, np.int64), hi + 3, end, backend="python")
    for backend in ("python", "auto"):
        got = exp_slices_from(m, seed, t1, v1, hi, end, backend=backend)
        assert not np.isnan(got).any()
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=0)


def test_exp_fold_is_the_combine_of_every_event():
    m = ExpDecayed(5.0, "sum")
    rng = np.random.default_rng(1)
    t = np.sort(rng.integers(0, 10_000, 300))
    v = rng.normal(size=300)
    p = None
    for ti, vi in zip(t.tolist(), v.tolist(), strict=True):
        p = m.combine(p, m.lift((ti, vi)))
    got = exp_fold(m, exp_fold(m, None, t[:100], v[:100]), t[100:], v[100:])
    assert got[0] == p[0]
    assert got[1] == pytest.approx(p[1], rel=1e-12) and got[2] == pytest.approx(p[2], rel=1e-12)


POLY = [
    "decayed_sum(v, decay=poly(2))",
    "ewm_mean(v, decay=poly(1.5))",
    "decayed_count(decay=poly(2))",
]


@pytest.mark.parametrize("agg", POLY)
def test_a_whole_history_polynomial_decay_is_refused_in_streaming_only(agg):
    """Polynomial decay's partial is its events: a whole-history stream of it would keep
    every event forever, so it is refused naming the alternatives; batch answers it."""
    import pandas as pd

    import windowagg
    from windowagg.pandas import window_agg

    aggs = parse_aggs([agg, "ewm_mean(v, half_life=1h) as e"])
    with pytest.raises(ArgumentError, match=r"with no size keeps every event") as e:
        KeyStream(aggs, HIST)
    assert "size=" in str(e.value) and "half_life=" in str(e.value)
    KeyStream(aggs, Shape(size=3_600_000_000))  # a size bounds it: the event log
    with pytest.raises(ArgumentError, match=r"with no size keeps every event"):
        windowagg.stream("k", "t", [agg])
    df = pd.DataFrame({"k": [1, 1], "t": pd.to_datetime([0, 1], unit="s"), "v": [1.0, 2.0]})
    assert len(window_agg(df, "k", "t", [agg]).results) == 2
    # the value-division summary is bounded: decayed_pNN with polynomial decay streams
    assert KeyStream(parse_aggs(["decayed_p50(v, decay=poly(2))"]), HIST).layout == "history"


def test_a_user_timed_monoid_without_a_partial_declaration_is_refused():
    class Timed:
        needs_time = True
        commutative = True
        identity = None

        def lift(self, x):
            return x

        def combine(self, a, b):
            return b if a is None else a

        def as_of(self, p, t):
            return 0.0

        def lower(self, p):
            return 0.0

    from windowagg.aggs import Agg

    a = Agg(alias="mine", monoid=Timed(), column="v", kind=None, dtype="double")
    with pytest.raises(ArgumentError, match=r"declares no partial="):
        KeyStream([a], HIST)


def test_arrival_emission_answers_each_event_as_of_its_arrival():
    """``emit="arrival"`` over the whole history: P and the events that arrived before,
    as the event log answers; never revised."""
    aggs = parse_aggs(["decayed_sum(v, half_life=10us)", "top_k(v, 3, half_life=10us) as top"])
    kw = {"emit": "arrival", "max_out_of_orderness": 50, "allowed_lateness": 5}
    s, log = KeyStream(aggs, HIST, **kw), EventLog(aggs, HIST, **kw)
    assert s.layout == "history"
    for t, v in (([0, 20, 10], [1.0, 2.0, 4.0]), ([200, 150, 190], [1.0, 1.0, 2.0]), ([5], [1.0])):
        got, _ = s.feed(np.array(t), {"v": np.array(v)})
        want, _ = log.feed(np.array(t), {"v": np.array(v)})
        assert got.columns["end"].tolist() == want.columns["end"].tolist()
        assert got.refused.tolist() == want.refused.tolist()
        np.testing.assert_allclose(got.columns["decayed_sum_v"], want.columns["decayed_sum_v"])
        for x, y in zip(got.columns["top"], want.columns["top"], strict=True):
            assert _same("top", x, y)
    assert len(s) < 5  # 0, 10, 20 folded once the watermark passed them
