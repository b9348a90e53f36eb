"""The vectorised per-event path (``frames.per_event_vector``) against the generic one
(``SlidingWindows`` over FiBA, one range query per event) and a brute-force oracle: batch
in batch (duplicates, bad rows), without Spark. (Streaming runs windows.engine.KeyStream:
tests/windows/test_engine_stream.py.)"""

from __future__ import annotations

import numpy as np
import pandas as pd
from hypothesis import given
from hypothesis import strategies as st

from windowagg.spark.frames import window_frame
from windowagg.spark.spec import WindowSpec, parse_aggs

AGGS = ["max(v)", "min(v)", "sum(v)", "mean(v)", "count"]


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


@given(events, st.integers(1, 60))
def test_batch_vector_equals_brute_force(evs, size):
    ts = [t for t, _ in evs]
    vs = [v for _, v in evs]
    pdf = pd.DataFrame({"k": ["x"] * len(evs), "t": ts, "v": vs})
    aggs = parse_aggs(AGGS)
    fast, _ = window_frame(pdf, ["k"], "t", aggs, WindowSpec(size=size), time_unit="us")
    slow, _ = window_frame(
        pdf, ["k"], "t", aggs, WindowSpec(size=size), time_unit="us", vectorized=False
    )
    _same(fast, slow)
    order = np.argsort(ts, kind="stable")
    for n, r in enumerate(fast.itertuples()):
        t = ts[order[n]]
        seen = [vs[j] for j in order[: n + 1] if t - size < ts[j] <= t]
        assert r.window_end.value // 1000 == t
        assert r.count == len(seen) and r.max_v == max(seen) and r.min_v == min(seen)
        assert r.sum_v == sum(seen)  # small integers: exact in any order


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
