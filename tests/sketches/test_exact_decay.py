"""Exact decayed quantiles and top-k under exponential decay (``sketches.exact_decay``, what
``window_agg`` answers for ``decayed_pNN`` / ``top_k``) against a brute force: every
weight ``2^((t - T)/h)`` from the exact exponent (a fraction, one ``ldexp``), sums by
``math.fsum``; random out-of-order streams with duplicate times and values, windows that
share starts (the prefix pass) and windows that do not (the gathered pass), spans of
thousands of half-lives, through the module and through ``window_agg`` (hopping,
per-event, whole history)."""

from __future__ import annotations

import itertools
import json
import math
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from windowagg.errors import ArgumentError
from windowagg.pandas import window_agg
from windowagg.sketches.exact_decay import (
    SNAP,
    exponents,
    prefix_quantiles,
    quantile_slices,
    top_k_slices,
)

HOUR = 3_600_000_000
VALUES = [-3.0, 0.0, 1.0, 2.5, 10.0, 9.0, 100.0]


def weight(t: int, at: int, h: float) -> float:
    """``2^((t - at)/h)``: the exponent exact, one rounding of its power of two."""
    x = Fraction(t - at) / Fraction(h)
    n = math.floor(x)
    return math.ldexp(2.0 ** float(x - n), n)


def brute_quantile(ts: list[int], vs: list[float], phi: float, h: float) -> float:
    """The smallest value q with ``W(<= q) >= (phi D) SNAP`` (weights as of the newest)."""
    if not ts:
        return math.nan
    newest = max(ts)
    w = [weight(t, newest, h) for t in ts]
    goal = (phi * math.fsum(w)) * SNAP
    for q in sorted(set(vs)):
        if math.fsum(wi for wi, v in zip(w, vs, strict=True) if v <= q) >= goal:
            return q
    raise AssertionError("no value reaches phi D")


def brute_weights(ts: list[int], vs: list[float], at: int, h: float) -> dict[float, float]:
    """Each value's exact decayed count as of *at*."""
    parts: dict[float, list[float]] = {}
    for t, v in zip(ts, vs, strict=True):
        parts.setdefault(v, []).append(weight(t, at, h))
    return {v: math.fsum(p) for v, p in parts.items()}


def check_top_k(answer: str | None, exact: dict[float, float], k: int) -> None:
    """The k heaviest by exact weight (to rounding), weights equal to the brute force's,
    heaviest first, equal reported weights in the order of the values' text."""
    if not exact:
        assert answer is None
        return
    assert answer is not None
    got = json.loads(answer)
    assert len(got) == min(k, len(exact))

    def close(a: float, b: float) -> bool:
        return math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-300)

    for x, w in got:
        assert close(w, exact[x]), (x, w, exact[x])
    for (x1, w1), (x2, w2) in itertools.pairwise(got):
        assert w1 >= w2 and (w1 != w2 or str(x1) < str(x2)), got
    listed = {x for x, _ in got}
    kth = exact[got[-1][0]]
    for x, f in exact.items():
        assert x in listed or f <= kth or close(f, kth), (x, f, got)


@st.composite
def streams(draw: st.DrawFn) -> tuple[list[int], list[float], float]:
    """Times and values in arrival order (out of order, duplicates) and a half-life."""
    h = draw(st.sampled_from([1.0, 3.0, 7.0, 10.0, 2.5]))
    half_lives = draw(st.sampled_from([0.5, 4.0, 40.0, 3000.0]))
    n = draw(st.integers(1, 30))
    span = max(1, int(half_lives * h))
    base = draw(st.sampled_from([0, -17, 10**12]))
    ts = draw(st.lists(st.integers(0, span), min_size=n, max_size=n))
    if draw(st.booleans()):  # bursts: many events at a few times
        ts = [ts[i % 3] for i in range(n)]
    vs = draw(st.lists(st.sampled_from(VALUES), min_size=n, max_size=n))
    return [base + t for t in ts], vs, h


@st.composite
def windows(draw: st.DrawFn, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Non-decreasing window bounds over n sorted events, starts often shared."""
    m = draw(st.integers(1, 12))
    lo = sorted(draw(st.lists(st.integers(0, n), min_size=m, max_size=m)))
    if draw(st.booleans()):
        lo = [lo[0]] * m  # one run: the prefix pass (each key's whole history)
    hi = sorted(draw(st.lists(st.integers(0, n), min_size=m, max_size=m)))
    hi = [max(a, b) for a, b in zip(lo, hi, strict=True)]
    return np.asarray(lo, dtype=np.int64), np.asarray(hi, dtype=np.int64)


def _sorted(ts: list[int], vs: list[float]) -> tuple[np.ndarray, np.ndarray]:
    order = np.argsort(np.asarray(ts), kind="stable")
    return np.asarray(ts, dtype=np.int64)[order], np.asarray(vs, dtype=np.float64)[order]


@settings(max_examples=300, deadline=None)
@given(data=st.data(), phi=st.sampled_from([0.5, 0.9, 0.99, 0.25, 1 / 3, 0.001]))
def test_quantiles_equal_the_brute_force(data: st.DataObject, phi: float) -> None:
    ts, vs, h = data.draw(streams())
    t, v = _sorted(ts, vs)
    lo, hi = data.draw(windows(len(t)))
    for backend in ("python", "native"):
        got = quantile_slices(t, v, lo, hi, phi, h, backend=backend)
        want = [
            brute_quantile(t[a:b].tolist(), v[a:b].tolist(), phi, h)
            for a, b in zip(lo.tolist(), hi.tolist(), strict=True)
        ]
        np.testing.assert_array_equal(got, np.asarray(want))


@settings(max_examples=300, deadline=None)
@given(data=st.data(), k=st.integers(1, 4))
def test_top_k_equals_the_brute_force(data: st.DataObject, k: int) -> None:
    """Both passes against the brute force; native and Python write the same text."""
    ts, vs, h = data.draw(streams())
    t, v = _sorted(ts, vs)
    lo, hi = data.draw(windows(len(t)))
    late = data.draw(st.lists(st.integers(0, 3 * int(h)), min_size=len(lo), max_size=len(lo)))
    newest = np.where(hi > 0, t[np.maximum(hi - 1, 0)], t[0])
    end = newest + np.asarray(late, dtype=np.int64)
    got = top_k_slices(t, v, lo, hi, end, k, h, backend="python")
    assert got.tolist() == top_k_slices(t, v, lo, hi, end, k, h, backend="auto").tolist()
    for j, (a, b) in enumerate(zip(lo.tolist(), hi.tolist(), strict=True)):
        exact = brute_weights(t[a:b].tolist(), v[a:b].tolist(), int(end[j]), h)
        check_top_k(got[j], exact, k)


def test_the_two_backends_give_the_same_positions() -> None:
    """The prefix pass natively and in Python: the same ranks, on a long history rebased
    several times (12,000 half-lives, RESCALE = 960)."""
    rng = np.random.default_rng(3)
    n = 4000
    t = np.sort(rng.integers(0, 12_000 * 50, n))
    v = rng.integers(0, 60, n).astype(np.float64)
    m, e = exponents(t, 50.0)
    rank = np.empty(n, dtype=np.int64)
    rank[np.lexsort((t, v))] = np.arange(n)
    lo = np.repeat([0, 1000, 2500], [1500, 901, 1500]).astype(np.int64)
    hi = np.concatenate([np.arange(1, 1501), np.arange(1600, 2501), np.arange(2501, 4001)])
    for phi in (0.5, 0.99):
        a = prefix_quantiles(rank, m, e, lo, hi, phi, backend="python")
        b = prefix_quantiles(rank, m, e, lo, hi, phi, backend="auto")
        np.testing.assert_array_equal(a, b)
    with pytest.raises(ArgumentError, match=r"window 0 has bounds \[1000, 1\)"):
        prefix_quantiles(rank, m, e, lo[[1500, 0]], hi[:2], 0.5, backend="python")


def test_weights_neither_overflow_nor_lose_ratios_over_thousands_of_half_lives() -> None:
    """A key's history of 5,000 half-lives: the newest events decide the quantile (older
    ones weigh under 2^-1000 of them), and top_k's weights are the newest events' own."""
    h = 10.0
    t = np.arange(0, 50_000, 5, dtype=np.int64)  # 10,000 events, one every half a half-life
    v = np.where(np.arange(len(t)) < len(t) - 3, 1.0, 7.0)  # the newest three: 7.0
    lo = np.zeros(len(t), dtype=np.int64)
    hi = np.arange(1, len(t) + 1, dtype=np.int64)
    q = quantile_slices(t, v, lo, hi, 0.5, h)
    # the newest three weigh 1 + 2^-0.5 + 2^-1 of the total 1 / (1 - 2^-0.5) = 3.41
    assert q[-1] == 7.0 and q[-4] == 1.0
    top = json.loads(top_k_slices(t, v, lo, hi, t, 2, h)[-1])
    assert top[0][0] == 7.0 and top[0][1] == pytest.approx(1 + 2**-0.5 + 0.5, rel=1e-15)
    assert top[1][1] == pytest.approx(2**-1.5 / (1 - 2**-0.5), rel=1e-12)


@st.composite
def frames(draw: st.DrawFn) -> pd.DataFrame:
    """Two keys' out-of-order events (microseconds), spans up to 2,000 hours."""
    n = draw(st.integers(1, 40))
    hours = draw(st.sampled_from([3, 2000]))
    ts = draw(st.lists(st.integers(0, hours * 4), min_size=n, max_size=n))
    ks = draw(st.lists(st.sampled_from(["a", "b"]), min_size=n, max_size=n))
    vs = draw(st.lists(st.sampled_from(VALUES), min_size=n, max_size=n))
    t = [x * HOUR // 4 for x in ts]
    return pd.DataFrame({"k": ks, "t": pd.to_datetime(t, unit="us", utc=True), "v": vs})


@settings(max_examples=60, deadline=None)
@given(df=frames(), shape=st.sampled_from(["hop", "per_event", "history"]))
def test_window_agg_answers_exactly(df: pd.DataFrame, shape: str) -> None:
    """Through ``window_agg``: each row equals the brute force over its key's events in the
    window, as of the window's end (hopping ``[start, end)``, per event ``(t - 2h, t]``,
    whole history ``t <= end``)."""
    kw = {"hop": {"size": "3h", "slide": "1h"}, "per_event": {"size": "2h"}, "history": {}}[shape]
    aggs = [
        "decayed_p90(v, half_life=1h)",
        "decayed_p50(v, half_life=1h)",
        "top_k(v, 2, half_life=1h)",
    ]
    r = window_agg(df, "k", "t", aggs, **kw).results
    us = df["t"].astype("int64") // 1000 if df["t"].dtype.unit == "ns" else df["t"].astype("int64")
    events = pd.DataFrame({"k": df["k"], "t": us, "v": df["v"]})
    for row in r.itertuples():
        end = int(pd.Timestamp(row.window_end).value // 1000)
        g = events[events["k"] == row.k]
        if shape == "hop":
            start = int(pd.Timestamp(row.window_start).value // 1000)
            inside = g[(g["t"] >= start) & (g["t"] < end)]
        elif shape == "per_event":
            inside = g[(g["t"] > end - 2 * HOUR) & (g["t"] <= end)]
        else:
            inside = g[g["t"] <= end]
        ts, vs = inside["t"].tolist(), inside["v"].tolist()
        assert row.decayed_p90_v == brute_quantile(ts, vs, 0.9, HOUR)
        assert row.decayed_p50_v == brute_quantile(ts, vs, 0.5, HOUR)
        check_top_k(row.top_k_v, brute_weights(ts, vs, end, HOUR), 2)


@settings(max_examples=500, deadline=None)
@given(x=st.floats(allow_nan=False, allow_infinity=False))
def test_the_native_text_of_a_float_is_pythons_repr(x: float) -> None:
    from windowagg._backend import native_core

    core = native_core()
    if core is None:
        pytest.skip("the compiled core is not built")
    edges = [1e16, 1e-5, 1e-4, 123456.0, 2.0**53, 2.0**53 + 2, 9999999999999998.0, 0.0, -0.0]
    edges += [math.nextafter(b, d) for b in (1e-4, 1e16, 2.0**53) for d in (0.0, math.inf)]
    for y in (
        x,
        x * 1e-300,
        x * 1e300 if abs(x) < 1e8 else x,
        float(round(x)) if abs(x) < 1e300 else x,
        *edges,
    ):
        assert core.py_float_repr(y) == repr(y)
        assert core.py_float_repr(-y) == repr(-y)


@settings(max_examples=150, deadline=None)
@given(data=st.data(), k=st.integers(1, 4))
def test_the_prefix_top_k_backends_write_the_same_text(data: st.DataObject, k: int) -> None:
    """Windows sharing starts (the prefix pass) natively and in Python: the same JSON text,
    byte for byte (rebased histories, ties, -0.0)."""
    ts, vs, h = data.draw(streams())
    vs = [-0.0 if x == 0.0 and i % 2 else x for i, x in enumerate(vs)]
    t, v = _sorted(ts, vs)
    lo = np.zeros(len(t), dtype=np.int64)
    hi = np.arange(1, len(t) + 1, dtype=np.int64)
    a = top_k_slices(t, v, lo, hi, t, k, h, backend="python")
    b = top_k_slices(t, v, lo, hi, t, k, h, backend="auto")
    assert a.tolist() == b.tolist()
    for j in range(len(t)):
        check_top_k(b[j], brute_weights(t[: j + 1].tolist(), v[: j + 1].tolist(), int(t[j]), h), k)
