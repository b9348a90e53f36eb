"""windowagg.pandas.window_agg equals the Spark adapter's local per-key function
(``windowagg.spark.frames.window_frame``, no Spark started) where the shapes overlap.

Overlap: hopping/tumbling windows and count windows for every input; per-event windows when
a key has no two events at the same time (``window_frame`` answers a per-event window as of
its event's insertion, so the first of two simultaneous events does not see the second; the
engine's window is complete by event time, as DuckDB's RANGE frame). Quantiles differ on
purpose (``window_frame``'s ``pNN`` is the q-digest) and finite values only (``window_frame``
aggregates ``inf``; the engine rejects it).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from hypothesis import given
from hypothesis import strategies as st

from windowagg.pandas import window_agg
from windowagg.spark.frames import window_frame
from windowagg.spark.spec import WindowSpec, parse_aggs

AGGS = ["sum(v)", "count", "max(v)", "min(v)", "mean(v)"]


@st.composite
def frames(draw: Any, distinct_times: bool = False) -> pd.DataFrame:
    n = draw(st.integers(0, 30))
    keys = draw(st.lists(st.sampled_from(["a", "b", None]), min_size=n, max_size=n))
    if distinct_times:
        ts = draw(st.lists(st.integers(0, 60), min_size=n, max_size=n, unique=True))
    else:
        ts = draw(st.lists(st.integers(0, 60), min_size=n, max_size=n))
    vs = draw(
        st.lists(
            st.one_of(st.integers(-9, 9).map(float), st.just(float("nan"))), min_size=n, max_size=n
        )
    )
    return pd.DataFrame({"k": pd.Series(keys, dtype=object), "t": ts, "v": vs})


def same(df: pd.DataFrame, kw: dict[str, Any], spec: WindowSpec, vectorized: bool) -> None:
    got = window_agg(df, "k", "t", AGGS, **kw)
    want, want_rej = window_frame(df, ["k"], "t", parse_aggs(AGGS), spec, vectorized=vectorized)
    assert len(got.results) == len(want)
    for c in ["k", "window_start", "window_end", "count", "max_v", "min_v"]:
        assert got.results[c].tolist() == want[c].tolist(), c
    for c in ["sum_v", "mean_v"]:
        np.testing.assert_allclose(got.results[c], want[c], rtol=1e-9, atol=1e-9)
    assert got.rejects["reason"].tolist() == want_rej["reason"].tolist()
    assert got.rejects["row"].tolist() == want_rej["row"].tolist()


@given(frames(), st.integers(1, 15), st.integers(1, 15), st.integers(-5, 5), st.booleans())
def test_hopping_equals_window_frame(
    df: pd.DataFrame, size: int, slide: int, start: int, vectorized: bool
) -> None:
    spec = WindowSpec(size=size * 10**6, slide=slide * 10**6, start_time=start * 10**6)
    same(df, {"size": size, "slide": slide, "start_time": start}, spec, vectorized)


@given(frames(distinct_times=True), st.integers(1, 20), st.booleans())
def test_per_event_equals_window_frame(df: pd.DataFrame, size: int, vectorized: bool) -> None:
    same(df, {"size": size}, WindowSpec(size=size * 10**6), vectorized)


@given(frames(), st.integers(1, 6), st.integers(1, 4))
def test_count_windows_equal_window_frame(df: pd.DataFrame, rows: int, every: int) -> None:
    same(df, {"rows": rows, "every": every}, WindowSpec(rows=rows, every=every), False)
