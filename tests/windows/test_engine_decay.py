"""Decayed aggregations through the windows engine (``windowagg.pandas.window_agg`` and the
streaming ``KeyStream``) against a naive oracle: every window by its shape's definition, its
decayed sum ``sum v_i 2^(-(T - t_i)/h)`` in exact-ish Python floats (``math.fsum``) as of the
window's end T; pandas ``ewm(halflife=..., times=...)`` on in-order input; out-of-order input,
duplicate times, the whole-history shape."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from windowagg.aggs import parse_aggs
from windowagg.pandas import window_agg
from windowagg.windows.engine import KeyStream, Shape

S = 1_000_000  # one second in the engine's unit (microseconds)
H = 7  # half-life (seconds) of the hypothesis tests: small windows see real decay
AGGS = [
    f"ewm_mean(v, half_life={H})",
    f"decayed_sum(v, half_life={H})",
    f"decayed_count(half_life={H})",
    "decayed_sum(v, decay=poly(1.5)) as poly_sum",
    "ewm_mean(v, decay=poly(2)) as poly_mean",
]
COLUMNS = ["ewm_mean_v", "decayed_sum_v", "decayed_count", "poly_sum", "poly_mean"]

SHAPES = st.one_of(
    st.builds(
        lambda size, slide: {"size": size, "slide": slide}, st.integers(1, 20), st.integers(1, 20)
    ),
    st.builds(lambda size: {"size": size}, st.integers(1, 25)),
    st.builds(lambda r, e: {"rows": r, "every": e}, st.integers(1, 6), st.integers(1, 3)),
    st.builds(lambda g: {"gap": g}, st.integers(1, 8)),
    st.just({}),  # no size: each key's whole history, one answer per event
)


def oracle_windows(ev: list[tuple[int, float]], shape: dict[str, int]) -> list[Any]:
    """``(start, end, [(t, v), ...])`` of every window of one key's events, by definition
    (times in seconds; *ev* sorted by time, then input order)."""
    out: list[Any] = []
    if not shape:
        for t, _ in ev:
            out.append((ev[0][0], t, [e for e in ev if e[0] <= t]))
    elif "gap" in shape:
        sessions: list[list[tuple[int, float]]] = []
        for e in ev:
            if sessions and e[0] - sessions[-1][-1][0] <= shape["gap"]:
                sessions[-1].append(e)
            else:
                sessions.append([e])
        out = [(s[0][0], s[-1][0] + shape["gap"], s) for s in sessions]
    elif "rows" in shape:
        n, every = shape["rows"], shape["every"]
        for j in range(every - 1, len(ev), every):
            w = ev[max(0, j - n + 1) : j + 1]
            out.append((w[0][0], w[-1][0], w))
    elif "slide" not in shape:
        size = shape["size"]
        out = [(t - size, t, [e for e in ev if t - size < e[0] <= t]) for t, _ in ev]
    else:
        size, slide = shape["size"], shape["slide"]
        ts = [e[0] for e in ev]
        for kk in range((min(ts) - size) // slide - 1, max(ts) // slide + 2):
            w = [e for e in ev if kk * slide <= e[0] < kk * slide + size]
            if w:
                out.append((kk * slide, kk * slide + size, w))
    return out


def decayed(w: list[tuple[int, float]], end: int) -> dict[str, float]:
    """The oracle's answers as of *end*, and the scale of each (``sum |v_i| w_i``)."""
    ew = [2.0 ** (-(end - t) / H) for t, _ in w]
    pw = [(1.0 + (end - t)) ** -1.5 for t, _ in w]
    p2 = [(1.0 + (end - t)) ** -2.0 for t, _ in w]
    s = math.fsum(x * v for x, (_, v) in zip(ew, w, strict=True))
    c = math.fsum(ew)
    return {
        "ewm_mean_v": s / c,
        "decayed_sum_v": s,
        "decayed_count": c,
        "poly_sum": math.fsum(x * v for x, (_, v) in zip(pw, w, strict=True)),
        "poly_mean": math.fsum(x * v for x, (_, v) in zip(p2, w, strict=True)) / math.fsum(p2),
        "scale": math.fsum(x * abs(v) for x, (_, v) in zip(ew, w, strict=True)) + c,
        "poly_scale": math.fsum(x * abs(v) for x, (_, v) in zip(pw, w, strict=True)),
        "mean_scale": max(abs(v) for _, v in w),
    }


def check_against_oracle(df: pd.DataFrame, shape: dict[str, int], res: pd.DataFrame) -> None:
    rows = []
    for k in sorted(df["k"].unique()):
        part = df[df["k"] == k]
        ev = sorted(
            zip(part["t"].tolist(), part["v"].tolist(), strict=True), key=lambda e: e[0]
        )  # stable: ties in input order
        for start, end, w in oracle_windows(ev, shape):
            rows.append((k, start, end, decayed(w, end)))
    assert len(res) == len(rows)
    got_start = (res["window_start"].astype("int64") // 1000).tolist()  # ns -> us
    got_end = (res["window_end"].astype("int64") // 1000).tolist()
    for i, (k, start, end, want) in enumerate(rows):
        assert res["k"].iloc[i] == k
        assert (got_start[i], got_end[i]) == (start * 10**6, end * 10**6)
        for c in COLUMNS:
            scale = {"poly_sum": "poly_scale", "ewm_mean_v": "mean_scale"}.get(c, "scale")
            scale = "mean_scale" if c == "poly_mean" else scale
            # (+ 1e-300: subnormal values round to 0 in the products and quotients)
            assert abs(res[c].iloc[i] - want[c]) <= 1e-9 * want[scale] + 1e-300, (i, c)


FRAMES = st.lists(
    st.tuples(st.integers(0, 2), st.integers(0, 60), st.floats(-100, 100, allow_nan=False)),
    min_size=1,
    max_size=40,
)


@given(FRAMES, SHAPES)
def test_every_shape_matches_the_oracle_on_out_of_order_input(rows, shape):
    """Random keys, times (out of order, duplicates) and signed values, every window shape:
    each decayed answer within 1e-9 of the oracle, relative to ``sum |v_i| w_i`` (the
    condition of the sum; relative to the answer itself for counts and positive values)."""
    df = pd.DataFrame(rows, columns=["k", "t", "v"])
    res = window_agg(df, "k", "t", AGGS, **shape).results
    check_against_oracle(df, shape, res)


def test_in_order_input_equals_pandas_ewm():
    """No size: one answer per event over its key's history, equal to pandas'
    ``groupby().ewm(halflife=..., times=...).mean()`` (adjust=True) to 1e-9 relative."""
    rng = np.random.default_rng(4)
    n = 3_000
    t = np.cumsum(rng.integers(1, 600, n))  # distinct, increasing seconds
    df = pd.DataFrame(
        {
            "k": rng.integers(0, 5, n),
            "t": pd.to_datetime(t, unit="s", utc=True),
            "v": rng.normal(10, 5, n),
        }
    )
    res = window_agg(df, "k", "t", ["ewm_mean(v, half_life=1h)"]).results
    want = (
        df.set_index("t")
        .groupby("k")["v"]
        .apply(lambda s: s.ewm(halflife=pd.Timedelta("1h"), times=s.index).mean())
    )
    assert len(res) == n
    atol = 1e-9 * float(df["v"].abs().mean())  # answers near 0: no relative accuracy
    np.testing.assert_allclose(res["ewm_mean_v"].to_numpy(), want.to_numpy(), 1e-9, atol)
    assert (res["window_end"].to_numpy() == want.index.get_level_values("t").to_numpy()).all()


def test_shuffled_input_gives_the_sorted_answers():
    """Out-of-order input: the same answers (and rows) as the time-sorted input."""
    rng = np.random.default_rng(5)
    n = 2_000
    df = pd.DataFrame(
        {"k": rng.integers(0, 3, n), "t": rng.integers(0, 86_400, n), "v": rng.normal(size=n)}
    )
    aggs = ["ewm_mean(v, half_life=1h)", "decayed_sum(v, half_life=10 min)"]
    shuffled = window_agg(df.sample(frac=1.0, random_state=1), "k", "t", aggs).results
    ordered = window_agg(df.sort_values("t", kind="stable"), "k", "t", aggs).results
    pd.testing.assert_frame_equal(
        shuffled.drop(columns=[c for c in shuffled if c.startswith(("ewm", "decayed"))]),
        ordered.drop(columns=[c for c in ordered if c.startswith(("ewm", "decayed"))]),
    )
    for c in ("ewm_mean_v", "decayed_sum_v"):
        np.testing.assert_allclose(shuffled[c], ordered[c], rtol=1e-12, atol=1e-12)


def test_duplicate_times_share_one_answer():
    """Ties: an event's answer covers every event of its key at times <= its own, so the
    events of one time share one answer (pandas' positional ewm counts only the rows
    above: its answer for the last of the ties is ours)."""
    df = pd.DataFrame({"k": [1] * 5, "t": [0, 10, 10, 10, 20], "v": [1.0, 2.0, 4.0, 8.0, 3.0]})
    res = window_agg(df, "k", "t", ["ewm_mean(v, half_life=10)"]).results
    got = res["ewm_mean_v"].tolist()
    assert got[1] == got[2] == got[3]
    want = df["v"].ewm(halflife=pd.Timedelta("10s"), times=pd.to_datetime(df["t"], unit="s"))
    np.testing.assert_allclose(got[3:], want.mean().to_numpy()[3:], rtol=1e-12)
    assert got[1] == pytest.approx((1.0 * 0.5 + 2.0 + 4.0 + 8.0) / 3.5, rel=1e-12)


def test_empty_windows_and_no_events():
    """A window with no events decays to 0 (sum, count) and has no mean (NaN); a frame
    with no rows has no results."""
    from windowagg.sketches.forward_decay import ExpDecayed, PolyDecayed, exp_slices, poly_slices

    t, v = np.array([0, 10]), np.array([1.0, 2.0])
    lo, hi, end = np.array([0, 1, 2]), np.array([0, 2, 2]), np.array([5, 10, 20])
    for what, want in (("sum", [0.0, 2.0, 0.0]), ("count", [0.0, 1.0, 0.0])):
        assert exp_slices(ExpDecayed(10, what), t, v, lo, hi, end).tolist() == want
        assert poly_slices(PolyDecayed(2.0, what), t, v, lo, hi, end).tolist() == want
    mean = exp_slices(ExpDecayed(10, "mean"), t, v, lo, hi, end)
    assert np.isnan(mean[[0, 2]]).all() and mean[1] == 2.0
    assert ExpDecayed(10, "mean").as_of(None, 3) is None
    assert PolyDecayed(2.0, "sum").as_of((), 3) == 0.0
    empty = pd.DataFrame({"k": pd.Series([], dtype="int64"), "t": [], "v": []})
    assert len(window_agg(empty, "k", "t", ["ewm_mean(v, half_life=1h)"]).results) == 0


def test_long_histories_neither_overflow_nor_lose_the_recent_events():
    """10,000 half-lives between the first and the last event: the landmark moves with the
    newest event, so the old events underflow to 0 instead of the sums overflowing."""
    df = pd.DataFrame({"k": [0, 0, 0], "t": [0, 10_000, 10_001], "v": [1e300, 2.0, 4.0]})
    res = window_agg(df, "k", "t", ["ewm_mean(v, half_life=1)", "decayed_sum(v, half_life=1)"])
    r = res.results
    assert r["ewm_mean_v"].tolist()[1:] == [2.0, pytest.approx((2.0 * 0.5 + 4.0) / 1.5)]
    assert r["decayed_sum_v"].tolist()[2] == pytest.approx(5.0)
    assert np.isfinite(r["decayed_sum_v"]).all()


@pytest.mark.parametrize(
    "shape",
    [
        Shape(size=20 * S, slide=5 * S),
        Shape(size=15 * S),
        Shape(size=315_537_897_599_999_999),
        Shape(gap=4 * S),
    ],
    ids=["hopping", "per_event", "history", "session"],
)
def test_stream_final_answers_equal_the_batch(shape):
    """``KeyStream`` fed in out-of-order micro-batches: the last revision of every window
    equals the batch. The event log for a size; the whole history's fold (``"history"``)
    for exponential decay with no size: polynomial decay's partial is its events, and a
    stream refuses its whole history (tests/windows/test_engine_history.py), so that case
    streams two exponential decays."""
    from windowagg.windows.engine import window_key

    rng = np.random.default_rng(8)
    t = (np.sort(rng.integers(0, 200, 120)) + rng.integers(-4, 4, 120)) * S  # microseconds
    v = rng.normal(size=120)
    second = "decayed_sum(v, decay=poly(2), unit=1)"
    history = shape.size is not None and shape.size >= 315_537_897_599_999_999
    if history:
        second = "decayed_sum(v, half_life=30)"
    aggs = parse_aggs(["ewm_mean(v, half_life=9)", second])
    s = KeyStream(aggs, shape, max_out_of_orderness=10 * S)
    assert s.layout == ("history" if history else "events")
    outs = []
    for part in np.array_split(np.arange(120), 6):
        outs.append(s.feed(t[part], {"v": v[part]})[0].columns)
    outs.append(s.advance(10**12)[0].columns)
    outs = [o for o in outs if len(o.get("end", ()))]
    cols = {c: np.concatenate([o[c] for o in outs]) for c in outs[0]}
    last: dict[tuple[int, int], tuple[float, float]] = {}
    for i in range(len(cols["end"])):
        key = (int(cols["start"][i]), int(cols["end"][i]))
        last[key] = (cols["ewm_mean_v"][i], cols["decayed_sum_v"][i])
    batch = window_key(t, {"v": v}, aggs, shape).columns
    want = {
        (int(a), int(b)): (x, y)
        for a, b, x, y in zip(
            batch["start"], batch["end"], batch["ewm_mean_v"], batch["decayed_sum_v"], strict=True
        )
    }
    if shape.kind == "session":  # superseded sessions: keep the ones the batch has
        last = {k: x for k, x in last.items() if k in want}
    assert last.keys() == want.keys()
    for k, (x, y) in want.items():
        tol = 1e-9 if history else 1e-12  # the fold associates the sums otherwise
        assert last[k][0] == pytest.approx(x, rel=tol, abs=1e-12)
        assert last[k][1] == pytest.approx(y, rel=tol, abs=1e-12)


def test_stream_arrival_emission_answers_as_of_each_event():
    """``emit="arrival"``: each event's window as of its own time over the events that
    arrived before it (the late one's answer leaves out what came after it)."""
    aggs = parse_aggs(["decayed_sum(v, half_life=10)"])
    s = KeyStream(aggs, Shape(size=100 * S), emit="arrival", max_out_of_orderness=50 * S)
    out = s.feed(np.array([0, 20, 10]) * S, {"v": np.array([1.0, 2.0, 4.0])})[0].columns
    assert out["end"].tolist() == [0, 20 * S, 10 * S]
    assert out["decayed_sum_v"].tolist() == pytest.approx([1.0, 0.25 + 2.0, 0.5 + 4.0])


@pytest.mark.parametrize("slide", [None, "10 min"])
def test_several_sizes_in_one_call_equal_each_size_alone(slide):
    """``size=[...]`` with decayed aggregations: each size's column equals that size alone
    (the sizes' windows hand the engine the events' times too)."""
    rng = np.random.default_rng(9)
    n = 400
    df = pd.DataFrame(
        {"k": rng.integers(0, 3, n), "t": rng.integers(0, 6 * 3600, n), "v": rng.normal(size=n)}
    )
    aggs = ["ewm_mean(v, half_life=20 min)", "decayed_sum(v, decay=poly(2), unit=1 min) as p"]
    ends = ["k", "window_end"]  # per event: ties share a window, hence one answer
    both = window_agg(df, "k", "t", aggs, size=["30 min", "2 h"], slide=slide).results
    both = both.drop_duplicates(ends)
    for size, label in (("30 min", "30m"), ("2 h", "2h")):
        alone = window_agg(df, "k", "t", aggs, size=size, slide=slide).results
        alone = alone.drop_duplicates(ends)
        merged = both.merge(alone, on=ends, suffixes=("", "_alone"))
        assert len(merged) == len(alone)
        np.testing.assert_allclose(merged[f"ewm_mean_v_{label}"], merged["ewm_mean_v"], rtol=1e-12)
        np.testing.assert_allclose(merged[f"p_{label}"], merged["p"], rtol=1e-12)
