"""Several window sizes in one call (``size=[...]``): each size's columns against a separate
one-size call of the same front end (the oracle), for hopping and per-event windows."""

from __future__ import annotations

import itertools
import math
import os
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from windowagg.errors import AggregationError, ArgumentError
from windowagg.monoids import Sum
from windowagg.pandas import window_agg
from windowagg.windows.engine import KeyStream, Shape
from windowagg.windows.engine.sizes import size_label

AGGS = ["max(v)", "sum(v)", "count", "first(v)", "last(v)", "p90(v)", "median(v)"]
ALIASES = ["max_v", "sum_v", "count", "first_v", "last_v", "p90_v", "median_v"]
#: The answer over no events: the monoid's lower(identity); exact quantiles null.
EMPTY = {"sum_v": 0.0, "count": 0}


@st.composite
def frames(draw: st.DrawFn) -> pd.DataFrame:
    """A few events of two keys in arrival order: times out of order, with duplicates."""
    n = draw(st.integers(0, 25))
    return pd.DataFrame(
        {
            "k": draw(st.lists(st.sampled_from("ab"), min_size=n, max_size=n)),
            "t": draw(st.lists(st.integers(0, 60), min_size=n, max_size=n)),
            "v": draw(st.lists(st.integers(-4, 4).map(float), min_size=n, max_size=n)),
        }
    )


def _check_against_one_size_calls(
    df: pd.DataFrame, sizes: list[int], slide: int | None, **kw: Any
) -> None:
    got = window_agg(df, "k", "t", AGGS, size=sizes, slide=slide, **kw)
    res = got.results
    names = [f"{a}_{size_label(s * 1_000_000)}" for a in ALIASES for s in sizes]
    assert list(res.columns) == ["k", "window_start", "window_end", *names]
    largest = max(sizes)
    assert (res["window_end"] - res["window_start"] == pd.Timedelta(seconds=largest)).all()
    # admission (rejects, lateness) is the largest size's alone: every row aggregated or
    # rejected, never lost
    alone = window_agg(df, "k", "t", AGGS, size=largest, slide=slide, **kw)
    pd.testing.assert_frame_equal(got.rejects, alone.rejects)
    assert len(res) == len(alone.results)
    # the oracle of each size: the size alone over the rows the call admitted (a smaller
    # size alone would refuse, with slide > size, rows in no window of its own, and those
    # then move no lateness clock)
    admitted = df.drop(index=got.rejects["row_index"].to_numpy())
    for s in sizes:
        one = window_agg(admitted, "k", "t", AGGS, size=s, slide=slide)
        label = size_label(s * 1_000_000)
        if slide is None:  # one row per admitted event, in the same (time, arrival) order
            assert len(one.results) == len(res)
            for alias in ALIASES:
                np.testing.assert_array_equal(res[f"{alias}_{label}"], one.results[alias])
            continue
        # hopping: every window of the size alone is a row; the other rows' windows of
        # this size hold no event
        m = res[["k", "window_end"]].merge(
            one.results, on=["k", "window_end"], how="left", indicator=True, validate="1:1"
        )
        held = (m["_merge"] == "both").to_numpy()
        assert int(held.sum()) == len(one.results)
        for alias in ALIASES:
            want = m[alias].to_numpy(dtype=np.float64).copy()
            want[~held] = EMPTY.get(alias, math.nan)
            got_col = res[f"{alias}_{label}"].to_numpy(dtype=np.float64)
            np.testing.assert_array_equal(got_col, want, err_msg=f"{alias}_{label}")


@given(
    frames(),
    st.sampled_from([2, 5]),
    st.sampled_from([0, 1]),
    st.lists(st.integers(0, 4), min_size=1, max_size=3, unique=True),
    st.booleans(),
)
def test_hopping_sizes_equal_one_size_calls(
    df: pd.DataFrame, slide: int, offset: int, multiples: list[int], late: bool
) -> None:
    sizes = [offset + m * slide for m in multiples if offset + m * slide > 0]
    if not sizes:
        sizes = [slide]
    kw: dict[str, Any] = {"max_out_of_orderness": 3} if late else {}
    _check_against_one_size_calls(df, sizes, slide, **kw)


@given(
    frames(),
    st.lists(st.integers(1, 30), min_size=1, max_size=3, unique=True),
    st.booleans(),
)
def test_per_event_sizes_equal_one_size_calls(
    df: pd.DataFrame, sizes: list[int], late: bool
) -> None:
    kw: dict[str, Any] = {"allowed_lateness": 2, "max_out_of_orderness": 1} if late else {}
    _check_against_one_size_calls(df, sizes, None, **kw)


def test_names_start_and_empty_windows() -> None:
    df = pd.DataFrame({"k": ["a"] * 3, "t": [1, 4, 12], "v": [5.0, 2.0, 3.0]})
    res = window_agg(df, "k", "t", ["max(v)", "count", "p50(v)"], size=[5, 10], slide=5).results
    assert list(res.columns) == [
        "k",
        "window_start",
        "window_end",
        "max_v_5s",
        "max_v_10s",
        "count_5s",
        "count_10s",
        "p50_v_5s",
        "p50_v_10s",
    ]
    end = res["window_end"].astype("int64") // 10**9
    assert end.tolist() == [5, 10, 15, 20]
    assert (res["window_start"].astype("int64") // 10**9).tolist() == [-5, 0, 5, 10]
    assert res["max_v_5s"].tolist()[::2] == [5.0, 3.0]
    assert res["max_v_5s"].isna().tolist() == [False, True, False, True]
    assert res["count_5s"].tolist() == [2, 0, 1, 0]
    assert res["p50_v_10s"].tolist() == [2.0, 2.0, 3.0, 3.0]


def test_polars_and_arrow_inputs_give_the_same_columns() -> None:
    pl = pytest.importorskip("polars")
    import pyarrow as pa

    df = pd.DataFrame({"k": ["a", "b", "a"], "t": [3, 1, 70], "v": [1.0, 2.0, 4.0]})
    want = window_agg(df, "k", "t", ["sum(v)"], size=["1 min", "10 s"]).results
    assert list(want.columns[-2:]) == ["sum_v_1m", "sum_v_10s"]
    for other in (pl.from_pandas(df), pa.Table.from_pandas(df)):
        got = window_agg(other, "k", "t", ["sum(v)"], size=["1 min", "10 s"]).results
        got = got.to_pandas()
        assert got["sum_v_1m"].tolist() == want["sum_v_1m"].tolist() == [1.0, 4.0, 2.0]
        assert got["sum_v_10s"].tolist() == want["sum_v_10s"].tolist() == [1.0, 4.0, 2.0]


@pytest.mark.parametrize(
    ("kw", "words"),
    [
        ({"size": ["1 min", "1 h"], "rows": 3}, "need time windows"),
        ({"size": ["1 min", "1 h"], "gap": 3}, "need time windows"),
        (
            {"size": [10, 25], "slide": 10},
            r"size=\[10, 25\] with slide=10: .*multiples of the slide",
        ),
        ({"size": [10, "10 s"], "slide": 5}, "repeats a size"),
        ({"size": []}, "no window size"),
    ],
)
def test_refusals_name_the_sizes(kw: dict[str, Any], words: str) -> None:
    df = pd.DataFrame({"k": ["a"], "t": [1], "v": [1.0]})
    with pytest.raises(ArgumentError, match=words):
        window_agg(df, "k", "t", ["max(v)"], **kw)


@given(
    st.lists(st.tuples(st.integers(0, 60), st.integers(-4, 4).map(float)), max_size=25),
    st.lists(st.integers(0, 25), max_size=4),
    st.sampled_from([None, 2, 5]),
    st.lists(st.integers(1, 4), min_size=2, max_size=3, unique=True),
    st.integers(0, 6),
    st.booleans(),
)
def test_streaming_sizes_final_revisions_equal_the_batch_call(
    events: list[tuple[int, float]],
    cuts: list[int],
    slide: int | None,
    multiples: list[int],
    lag: int,
    through_bytes: bool,
) -> None:
    """One key's stream with several sizes (micro-batches cut anywhere, the state through
    its bytes between them): the last revision of every row equals the batch call with
    the same sizes, and every event is aggregated or refused as the batch rejects it."""
    from windowagg.aggs import parse_aggs

    sizes = [m * (slide or 3) for m in multiples]
    shape = Shape(size=max(sizes), slide=slide, sizes=tuple(sizes))
    aggs = parse_aggs(AGGS)
    kw: dict[str, Any] = {"max_out_of_orderness": lag, "allowed_lateness": 0}
    ts = np.array([e[0] for e in events], dtype=np.int64)
    vs = np.array([e[1] for e in events], dtype=np.float64)
    s = KeyStream(aggs, shape, **kw)
    meta: bytes | None = None
    pieces: dict[int, bytes] = {}
    rows: dict[int, dict[str, Any]] = {}  # window id -> its last revision
    refused: list[int] = []
    names = [f"{a}_{size_label(z)}" for a in ALIASES for z in sizes]

    def collect(res: Any) -> None:
        for j, i in enumerate(res.ids.tolist()):
            rev = int(res.columns["revision"][j])
            assert rev == (rows[i]["revision"] + 1 if i in rows else 0)  # 0, 1, 2, ...
            rows[i] = {c: res.columns[c][j] for c in ["end", "revision", *names]}

    bounds = [0, *sorted(min(c, len(ts)) for c in cuts), len(ts)]
    for lo, hi in itertools.pairwise(bounds):
        if through_bytes:
            s = KeyStream.restore(meta, pieces, aggs, shape, **kw)
        res, delta = s.feed(ts[lo:hi], {"v": vs[lo:hi]})
        delta.apply(pieces)
        meta = delta.meta
        collect(res)
        refused.extend((lo + res.refused).tolist())
    collect(s.advance(10**6)[0])
    df = pd.DataFrame({"k": "a", "t": ts, "v": vs})
    batch = window_agg(
        df, "k", "t", AGGS, size=[z * 1e-6 for z in sizes],
        slide=None if slide is None else slide * 1e-6, time_unit="us",
        max_out_of_orderness=lag * 1e-6,
    )  # fmt: skip
    assert sorted(refused) == batch.rejects["row_index"].tolist()
    want = batch.results
    final = sorted(rows.items(), key=lambda r: (int(r[1]["end"]), r[0]))  # batch's order
    ends = want["window_end"].astype("datetime64[ns, UTC]").astype("int64") // 1000
    assert [int(r["end"]) for _, r in final] == ends.tolist()
    for c in names:
        got = np.array([np.nan if r[c] is None else r[c] for _, r in final], dtype=np.float64)
        np.testing.assert_array_equal(got, want[c].to_numpy(dtype=np.float64), err_msg=c)


def test_streaming_several_sizes_need_emission_by_watermark() -> None:
    from windowagg.aggs import parse_aggs

    with pytest.raises(ArgumentError, match="emit='watermark'"):
        KeyStream(parse_aggs(["max(v)"]), Shape(size=10, sizes=(5, 10)), emit="arrival")


class _Fragile(Sum):
    """Sum that refuses to combine past 100: a monoid failing in one size's window only."""

    def combine(self, a: Any, b: Any) -> Any:
        if a + b > 100:
            raise OverflowError("past 100")
        return a + b


def test_a_monoid_failing_in_one_size_names_that_sizes_column_and_window() -> None:
    df = pd.DataFrame({"k": ["a"] * 4, "t": [1, 2, 11, 12], "v": [30.0, 30.0, 30.0, 30.0]})
    with pytest.raises(AggregationError) as info:
        window_agg(df, "k", "t", [("s", _Fragile(), "v")], size=[10, 20], slide=10)
    e = info.value
    assert e.alias == "s_20s"
    assert "'s_20s'" in str(e) and "key ('a',)" in str(e)
    assert "window_start 1970-01-01T00:00:00" in str(e)
    assert e.window == 1  # the row (window end 20 s) among the key's windows
    np.testing.assert_equal(e.key, ("a",))


@pytest.mark.parametrize("slide", [5, None])
def test_decayed_aggregations_take_their_times_in_every_size(
    slide: int | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Decayed aggregations read the events' times: each size's column equals the size
    alone (as of each window's end), hopping and per event."""
    from windowagg._backend import native_available

    if os.environ.get("WINDOWAGG_BACKEND", "auto") != "python" and native_available():
        from windowagg._native import _core

        if not hasattr(_core, "decay_slices"):  # a core built before decay: the reference
            monkeypatch.setenv("WINDOWAGG_BACKEND", "python")
    rng = np.random.default_rng(5)
    df = pd.DataFrame(
        {
            "k": rng.choice(["a", "b"], 60),
            "t": rng.integers(0, 120, 60),
            "v": rng.integers(-5, 6, 60).astype(float),
        }
    )
    aggs = ["decayed_sum(v, half_life=10s)", "ewm_mean(v, half_life=10s)", "max(v)"]
    res = window_agg(df, "k", "t", aggs, size=[10, 30], slide=slide).results
    for s in (10, 30):
        one = window_agg(df, "k", "t", aggs, size=s, slide=slide).results
        same = one[["k", "window_end"]]
        mine = res if slide is None else res.merge(same, on=["k", "window_end"])
        assert len(mine) == len(one)
        for a in ("decayed_sum_v", "ewm_mean_v", "max_v"):
            np.testing.assert_allclose(mine[f"{a}_{s}s"], one[a], rtol=1e-12, err_msg=a)
