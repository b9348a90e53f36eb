"""Streaming's vectorised per-event path (``frames.per_event_vector``) against the generic
one (``SlidingWindows`` over FiBA, one range query per event) and a brute-force oracle
(lateness, duplicates, bad rows, state through bytes), without Spark. (Batch per-event
windows are the engine's: ``tests/windows/test_engine_oracle.py``.)"""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
from hypothesis import given
from hypothesis import strategies as st

from windowagg.spark import frames
from windowagg.spark.frames import KeyRunner
from windowagg.spark.spec import WindowSpec, parse_aggs

AGGS = ["max(v)", "min(v)", "sum(v)", "mean(v)", "count"]


def _stream(pdf, aggs, spec, cuts, vectorized, roundtrip=True):
    state, runner, outs, rejs = None, None, [], []
    bounds = [0, *sorted(set(cuts)), len(pdf)]
    for lo, hi in itertools.pairwise(bounds):
        if roundtrip or runner is None:
            runner = KeyRunner(["k"], "t", aggs, spec, state, time_unit="us", vectorized=vectorized)
        res, rej = runner.feed(pdf.iloc[lo:hi])
        state = runner.to_bytes()
        outs.append(res)
        rejs.append(rej)
    return pd.concat(outs, ignore_index=True), pd.concat(rejs, ignore_index=True), runner


def _same(a: pd.DataFrame, b: pd.DataFrame) -> None:
    assert list(a.columns) == list(b.columns) and len(a) == len(b)
    for c in a.columns:
        if a[c].dtype == np.float64:
            np.testing.assert_allclose(a[c].to_numpy(), b[c].to_numpy(), rtol=1e-12, atol=1e-12)
        else:
            pd.testing.assert_series_equal(a[c], b[c], check_dtype=True)


events = st.lists(
    st.tuples(st.integers(0, 300), st.integers(-20, 20).map(float)), min_size=1, max_size=80
)


@given(
    events,
    st.lists(st.integers(1, 79), max_size=5),
    st.integers(1, 60),
    st.integers(0, 40),
    st.integers(0, 20),
)
def test_streaming_vector_equals_generic(evs, cuts, size, ooo, lateness):
    ts = [t for t, _ in evs]
    vs = [v for _, v in evs]
    if len(vs) > 3:
        vs[3] = float("nan")  # a bad row: a reject on both paths
    pdf = pd.DataFrame({"k": ["x"] * len(evs), "t": ts, "v": vs})
    aggs = parse_aggs(AGGS)
    spec = WindowSpec(size=size, max_out_of_orderness=ooo, allowed_lateness=lateness)
    cuts = [c for c in cuts if c < len(evs)]
    r1, j1, w1 = _stream(pdf, aggs, spec, cuts, vectorized=True)
    r2, j2, w2 = _stream(pdf, aggs, spec, cuts, vectorized=False, roundtrip=False)
    _same(r1, r2)
    pd.testing.assert_frame_equal(j1, j2)
    assert w1._windows.counters == w2._windows.counters
    # entries no future event can see (t <= bound - size) may be evicted at other times
    bound = w1._windows.lateness_bound
    assert bound == w2._windows.lateness_bound
    if bound is not None:
        live1 = [e for e in w1._windows.aggregator if e[0] > bound - size]
        live2 = [e for e in w2._windows.aggregator if e[0] > bound - size]
        assert live1 == live2
    w1._windows._check()


def test_blocks_split_and_wide_windows_fall_back(monkeypatch):
    rng = np.random.default_rng(3)
    n = 3000
    ts = np.sort(rng.integers(0, 50_000, n)) + rng.integers(-300, 300, n)
    vs = rng.normal(size=n).round(2)
    pdf = pd.DataFrame({"k": ["x"] * n, "t": ts, "v": vs})
    aggs = parse_aggs(AGGS)
    spec = WindowSpec(size=2_000, max_out_of_orderness=200, allowed_lateness=50)
    cuts = list(range(700, n, 700))
    slow = _stream(pdf, aggs, spec, cuts, vectorized=False)
    monkeypatch.setattr(frames, "_BLOCK_CELLS", 1000)  # many small blocks
    fast = _stream(pdf, aggs, spec, cuts, vectorized=True)
    _same(fast[0], slow[0])
    pd.testing.assert_frame_equal(fast[1], slow[1])
    monkeypatch.setattr(frames, "_MAX_VECTOR_WINDOW", 10)  # windows too wide: generic path
    wide = _stream(pdf, aggs, spec, cuts, vectorized=True)
    _same(wide[0], slow[0])
    assert len(slow[1]) > 0  # some events were late


@given(
    events,
    st.lists(st.integers(1, 79), max_size=5),
    st.sampled_from([(20, 5), (20, 20), (30, 20), (7, 3), (5, 10), (60, 15)]),
    st.integers(0, 40),
    st.integers(0, 20),
)
def test_streaming_hopping_range_evaluator_equals_fiba(evs, cuts, size_slide, ooo, lateness):
    ts = [t for t, _ in evs]
    vs = [v for _, v in evs]
    if len(vs) > 3:
        vs[3] = float("nan")
    pdf = pd.DataFrame({"k": ["x"] * len(evs), "t": ts, "v": vs})
    aggs = parse_aggs(AGGS)
    size, slide = size_slide
    spec = WindowSpec(size=size, slide=slide, max_out_of_orderness=ooo, allowed_lateness=lateness)
    cuts = [c for c in cuts if c < len(evs)]
    r1, j1, w1 = _stream(pdf, aggs, spec, cuts, vectorized=True)
    r2, j2, w2 = _stream(pdf, aggs, spec, cuts, vectorized=False, roundtrip=False)
    assert len(r1) > 0 or len(r2) == 0
    _same(r1, r2)
    pd.testing.assert_frame_equal(j1, j2)
    assert w1._windows.counters == w2._windows.counters
    assert list(w1._windows.aggregator) == list(w2._windows.aggregator)
    w1._windows._check()


def test_range_evaluator_blocks_split(monkeypatch):
    rng = np.random.default_rng(5)
    n = 2000
    ts = np.sort(rng.integers(0, 80_000, n)) + rng.integers(-300, 300, n)
    vs = rng.normal(size=n).round(2)
    pdf = pd.DataFrame({"k": ["x"] * n, "t": ts, "v": vs})
    aggs = parse_aggs(AGGS)
    spec = WindowSpec(size=3_000, slide=100, max_out_of_orderness=200, allowed_lateness=50)
    cuts = list(range(500, n, 500))
    slow = _stream(pdf, aggs, spec, cuts, vectorized=False)
    monkeypatch.setattr(frames, "_BLOCK_CELLS", 500)
    fast = _stream(pdf, aggs, spec, cuts, vectorized=True)
    assert len(slow[0]) > 500
    _same(fast[0], slow[0])
    pd.testing.assert_frame_equal(fast[1], slow[1])


@given(
    st.lists(st.lists(st.integers(-50, 400), max_size=40), min_size=1, max_size=5),
    st.integers(1, 60),
    st.integers(0, 40),
    st.integers(0, 20),
)
def test_accept_many_trusted_values_stores_the_same(bursts, size, ooo, lateness):
    """``accept_many(trusted_values=True)`` (lift only what the burst's eviction keeps)
    leaves the same entries, counters, rejects and state bytes as the checked loop."""
    from windowagg.monoids import Max, Sum
    from windowagg.monoids.composite import Composite
    from windowagg.windows import SlidingWindows

    def make():
        m = Composite(Max(), Sum())
        return SlidingWindows(
            m, size, max_out_of_orderness=ooo, allowed_lateness=lateness, late="side"
        )

    checked, trusted = make(), make()
    for n, burst in enumerate(bursts):
        pairs = [(t, (float(t % 7), float(n))) for t in burst]
        assert checked.accept_many(pairs) == trusted.accept_many(pairs, trusted_values=True)
        assert list(checked.aggregator) == list(trusted.aggregator)
        assert checked.counters == trusted.counters
        assert [r.reason for r in checked.rejected] == [r.reason for r in trusted.rejected]
        trusted._check()
    assert checked.to_bytes() == trusted.to_bytes()
