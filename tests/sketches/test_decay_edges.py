"""The decayed aggregations at their numeric edges (issue 36, item 1): windows ending 1,000+
half-lives after their newest event, sums and counts in the subnormals, spans of thousands
of half-lives between events, polynomial weights below the smallest double.

Each answer is checked against docs/decay.md's bound ("Numeric error") with a brute-force
oracle built on ``math.fsum`` (exponents as exact fractions, every term at one common power
of two, one ``ldexp`` at the end: correct to a few ulps, subnormals included), and the
means against pandas' ``ewm(times=)`` and polars' ``ewm_mean_by``. Every shape (hopping,
tumbling, session, several sizes, per event, whole history), both backends (the conftest's
twins, and ``exp_slices(backend=...)``), pandas, polars and Arrow input.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from windowagg.pandas import window_agg
from windowagg.sketches.decayed_aggs import DecayedQuantile
from windowagg.sketches.forward_decay import ExpDecayed, PolyDecayed, exp_slices, poly_slices

U = 2.0**-53
SUB = 2.0**-1074  # the smallest subnormal; 2^-1075, half of it, is one rounding onto its grid
US = 1_000_000  # the engine's unit: microseconds per second


# --- the oracle and the bound ----------------------------------------------------------


def exact(events: list[tuple[int, float]], at: int, h: float) -> tuple[float, float, float]:
    """``(S, W, S / W)`` of *events* as of *at* under half-life *h*, by brute force.

    Ages ``(at - t_i) / h`` as exact fractions; every term ``v_i 2^-age_i`` is formed
    relative to the newest event's weight ``2^-N`` (N its age in whole half-lives) and the
    largest term's power of two, as one ``ldexp(mantissa(v_i) 2^-frac_i, ...)`` (never a
    subnormal weight times a large value), summed by ``math.fsum`` and scaled back by one
    ``ldexp``. The mean is the ratio at that scale.
    """
    ages = [Fraction(at - t) / Fraction(h) for t, _ in events]
    n0 = math.floor(min(ages))
    parts = []  # per event: its value's mantissa and exponent, its weight's fraction and whole
    for a, (_, v) in zip(ages, events, strict=True):
        k = math.floor(a - n0)
        mant, ex = math.frexp(v)
        parts.append((mant, ex, math.exp2(-float(a - n0 - k)), k))
    e = -max(ex - k for mant, ex, _, k in parts if mant) if any(p[0] for p in parts) else 0
    ts = [math.ldexp(mant * f, ex - k + e) for mant, ex, f, k in parts]  # the largest at ~1
    ws = [math.ldexp(f, -k) for _, _, f, k in parts]
    s, w = math.fsum(ts), math.fsum(ws)
    return math.ldexp(s, -n0 - e), math.ldexp(w, -n0), math.ldexp(s / w, -e)


def sum_bound(events: list[tuple[int, float]], at: int, h: float, what: str) -> float:
    """docs/decay.md: ``(4n + 2K + 8) u scale + (n + 1) 2^-1075``, K the oldest event's age
    in half-lives as of *at*; plus the oracle's own few ulps and roundings."""
    n = len(events)
    ones = [(t, 1.0) for t, _ in events]
    scale = exact([(t, abs(v)) for t, v in events] if what == "sum" else ones, at, h)[0]
    k = (at - min(t for t, _ in events)) / h
    return (4 * n + 2 * k + 8 + 4) * U * scale + (n + 3) * SUB


def mean_bound(events: list[tuple[int, float]]) -> float:
    """docs/decay.md: ``(10n + 2) u max|v| + n 2^-1075``; plus the oracle's few ulps."""
    n = len(events)
    return (10 * n + 2 + 4) * U * max(abs(v) for _, v in events) + (n + 2) * SUB


def check(got: float, events: list[tuple[int, float]], at: int, h: float, what: str) -> None:
    s, w, mean = exact(events, at, h)
    if what == "mean":
        assert math.isfinite(got), (got, mean)
        assert abs(got - mean) <= mean_bound(events), (got, mean)
    else:
        want = s if what == "sum" else w
        assert abs(got - want) <= sum_bound(events, at, h, what), (got, want)


# --- the issue's case, against pandas and polars ---------------------------------------

ISSUE = pd.DataFrame({"k": ["a", "a"], "t": [0, 1800], "v": [3.0, 5.0]})


def pandas_ewm(df: pd.DataFrame, half_life: str) -> float:
    times = pd.to_datetime(df["t"], unit="s")
    return float(df["v"].ewm(halflife=pd.Timedelta(half_life), times=times).mean().iloc[-1])


def polars_ewm(df: pd.DataFrame, half_life: str) -> float:
    pl = pytest.importorskip("polars")
    frame = pl.from_pandas(df).with_columns(pl.from_epoch("t", time_unit="s"))
    got = frame.select(pl.col("v").ewm_mean_by("t", half_life=half_life))
    return float(got.to_series()[-1])


@pytest.mark.parametrize(("half_life", "polars_hl"), [("1min", "1m"), ("80s", "80s")])
@pytest.mark.parametrize(
    "shape",
    [
        {"size": "1 day", "slide": "1 day"},
        {"size": "1 day", "slide": "6 hours"},
        {"gap": "1 day"},
        {"size": ["1 day", "2 days"], "slide": "1 day"},
    ],
    ids=["tumbling", "hopping", "session", "sizes"],
)
def test_the_issue_mean_is_pandas_and_polars_answer(
    half_life: str, polars_hl: str, shape: dict[str, Any]
) -> None:
    """A window ending 1,440 (1 min) or 1,080 (80 s) half-lives after its newest event: the
    mean is pandas' and polars' (4.999999998137355 and 4.9999996628...) to a few ulps, not
    NaN (both S and W scaled to the end underflowed: 0 / 0) nor 5.0 (subnormal S and W)."""
    want = pandas_ewm(ISSUE, half_life)
    assert want == pytest.approx(polars_ewm(ISSUE, polars_hl), rel=4 * U)
    out = window_agg(ISSUE, "k", "t", [f"ewm_mean(v, half_life={half_life})"], **shape).results
    cols = [c for c in out.columns if c.startswith("ewm_mean_v")]
    got = [x for c in cols for x in out[c].tolist() if not math.isnan(x)]
    assert got and all(x == pytest.approx(want, rel=4 * U, abs=0) for x in got), (got, want)
    if half_life == "1min":
        assert got[0] == pytest.approx(4.999999998137355, rel=4 * U, abs=0)


@pytest.mark.parametrize("kind", ["polars", "arrow"])
def test_the_issue_mean_from_polars_and_arrow(kind: str) -> None:
    """The same call on a polars DataFrame and an Arrow table."""
    want = pandas_ewm(ISSUE, "1min")
    if kind == "polars":
        pl = pytest.importorskip("polars")
        frame: Any = pl.from_pandas(ISSUE)
    else:
        import pyarrow as pa

        frame = pa.Table.from_pandas(ISSUE, preserve_index=False)
    out = window_agg(frame, "k", "t", ["ewm_mean(v, half_life=1min)"], size="1 day", slide="1 day")
    got = out.results["ewm_mean_v"].to_pylist() if kind == "arrow" else None
    if got is None:
        got = out.results["ewm_mean_v"].to_list()
    assert got == [pytest.approx(want, rel=4 * U, abs=0)]


# --- every shape against the oracle ----------------------------------------------------

SHAPES: list[dict[str, Any]] = [
    {"size": "1 day", "slide": "1 day"},
    {"size": "1 day", "slide": "6 hours"},
    {"gap": "20 hours"},
    {"size": ["1 day", "2 days"], "slide": "1 day"},
    {"size": "1 day"},
    {},
]
SIZE_OF = {"1d": 86_400 * US, "2d": 2 * 86_400 * US}


def window_events(
    ev: list[tuple[int, float]], start: int, end: int, shape: dict[str, Any], size: int | None
) -> list[tuple[int, float]]:
    """The events of one result row's window (times in microseconds)."""
    if not shape or ("size" in shape and "slide" not in shape):  # per event: (end - size, end]
        lo = start if not shape else end - (size or 0)
        return [(t, v) for t, v in ev if (t >= lo if not shape else t > lo) and t <= end]
    if size is not None:  # hopping, tumbling: [end - size, end)
        return [(t, v) for t, v in ev if end - size <= t < end]
    return [(t, v) for t, v in ev if start <= t < end]  # session


def us(col: pd.Series) -> list[int]:
    return [int(x) // 1000 for x in col.astype("int64").tolist()]


EVENTS = st.lists(
    st.tuples(
        st.integers(0, 3 * 86_400),
        st.one_of(
            st.floats(-1e6, 1e6, allow_nan=False),
            st.sampled_from([1e300, -1e300, 1e-300, 5e-324, 0.0]),
        ),
    ),
    min_size=1,
    max_size=8,
)
HALF_LIVES = st.sampled_from(["1s", "1min", "80s", "1h"])


@given(EVENTS, HALF_LIVES)
def test_every_shape_within_the_bound(events: list[tuple[int, float]], half_life: str) -> None:
    """Random events (values of every magnitude, windows ending up to 86,400 half-lives
    after their newest event): every window of every shape within the documented bound of
    the oracle; no NaN mean where a window holds events; sums and counts as of the end."""
    df = pd.DataFrame({"k": "a", "t": [t for t, _ in events], "v": [v for _, v in events]})
    h = float(pd.Timedelta(half_life).total_seconds() * US)
    ev = [(t * US, v) for t, v in events]
    aggs = [
        f"ewm_mean(v, half_life={half_life}) as mean",
        f"decayed_sum(v, half_life={half_life}) as sum",
        f"decayed_count(half_life={half_life}) as count",
    ]
    for shape in SHAPES:
        out = window_agg(df, "k", "t", aggs, **shape).results
        assert len(out) > 0
        starts, ends = us(out["window_start"]), us(out["window_end"])
        for what in ("mean", "sum", "count"):
            cols = [c for c in out.columns if c.startswith(what)]
            for col in cols:
                suffix = col[len(what) + 1 :]
                size = SIZE_OF.get(suffix, 86_400 * US if "size" in shape else None)
                for j, got in enumerate(out[col].tolist()):
                    win = window_events(ev, starts[j], ends[j], shape, size)
                    if not win:  # a size without this window (several sizes' rows)
                        assert math.isnan(got) if what == "mean" else got in (0.0,), (col, j)
                        continue
                    check(got, win, ends[j], h, what)


# --- the kernels directly: both backends ------------------------------------------------


def slices(backend: str, m: Any, ev: list[tuple[int, float]], ends: list[int]) -> np.ndarray:
    """*m*'s answer over all of *ev* as of each time in *ends* (one window each)."""
    t = np.array([x for x, _ in ev], dtype=np.int64)
    v = np.array([y for _, y in ev], dtype=np.float64)
    r = len(ends)
    lo, hi = np.zeros(r, dtype=np.int64), np.full(r, len(ev), dtype=np.int64)
    end = np.array(ends, dtype=np.int64)
    if isinstance(m, PolyDecayed):
        return poly_slices(m, t, v, lo, hi, end)
    if backend == "native":
        core = pytest.importorskip("windowagg._native._core")
        assert hasattr(core, "decay_slices")
    return exp_slices(m, t, v, lo, hi, end, backend=backend)


AFTER = [0, 1, 500, 1000, 1021, 1022.5, 1050, 1074, 1074.5, 1075, 1076, 1100, 2000, 10**5]


@pytest.mark.parametrize("backend", ["python", "native"])
@pytest.mark.parametrize("what", ["mean", "sum", "count"])
def test_answers_1000_half_lives_after_the_newest_event(backend: str, what: str) -> None:
    """As of 0 to 100,000 half-lives after the newest event: the mean never changes; sums
    and counts follow the exact value into the subnormals (within the bound: one rounding,
    not exp2's subnormal 2^-age times the sum) and reach 0 only below 2^-1075."""
    h = 1_000.0
    for values in ([3.0, 5.0], [1e300, -1e300 / 3], [1e-300, 2e-300], [5e-324, 5e-324]):
        ev = [(0, values[0]), (1_800, values[1])]
        ends = [1_800 + round(a * h) for a in AFTER]
        m = ExpDecayed(h, what)
        got = slices(backend, m, ev, ends)
        for g, at in zip(got.tolist(), ends, strict=True):
            check(g, ev, at, h, what)
            assert g == m.as_of(_fold(m, ev), at)  # the monoid's answer, bit for bit
        if what == "mean":
            assert len(set(got.tolist())) == 1


def _fold(m: Any, ev: list[tuple[int, float]]) -> Any:
    acc = m.identity
    for e in ev:
        acc = m.combine(acc, m.lift(e))
    return acc


@pytest.mark.parametrize("backend", ["python", "native"])
@pytest.mark.parametrize("what", ["mean", "sum", "count"])
def test_huge_spans_between_events(backend: str, what: str) -> None:
    """An old event of 1e300 1,100 half-lives before a newest of 1e-300 dominates both the
    mean and the sum (its weight relative to the newest, 2^-1100, is below the smallest
    double, its term 1e300 2^-1100 ~ 2^-104 is not); spans of a million half-lives too."""
    h = 1_000.0
    for ev in (
        [(0, 1e300), (1_100_000, 1e-300)],
        [(0, 1e300), (1_060_000, -1e-300), (1_070_000, 1.0)],
        [(0, 7.0), (10**9, 2.0), (2 * 10**9, -1.0)],
    ):
        ends = [ev[-1][0], ev[-1][0] + 500_000, ev[-1][0] + 1_000_000]
        m = ExpDecayed(h, what)
        for g, at in zip(slices(backend, m, ev, ends).tolist(), ends, strict=True):
            check(g, ev, at, h, what)


def test_scale2_rounds_once_into_the_subnormals() -> None:
    """``scale2(x, e)`` is ``x 2^e`` correctly rounded at the subnormal edge: checked
    against exact rationals (one rounding: within 2^-1075 + u |x 2^e|)."""
    from windowagg.sketches.forward_decay import scale2

    for x in (1.0, 3.0, 1e300, 1.5e-300, 5e-324, -7.25):
        for e in (-1000.0, -1022.0, -1022.25, -1050.7, -1074.0, -1075.0, -1076.3, -1400.5, -2e6):
            got = scale2(x, e)
            whole = math.floor(e)
            want = Fraction(x) * Fraction(math.exp2(e - whole)) * Fraction(2) ** whole
            tol = Fraction(SUB) / 2 + 2 * Fraction(U) * abs(want)
            assert abs(Fraction(got) - want) <= tol, (x, e)


# --- polynomial decay -------------------------------------------------------------------


def poly_exact(
    ev: list[tuple[int, float]], at: int, alpha: float, unit: float
) -> tuple[float, float, float]:
    """``(S, W, S / W)`` under ``g(a) = (1 + a/unit)^-alpha`` in log space, by brute force:
    ``log2 g`` per event in high precision (``Fraction`` ratios, ``math.log2`` of each
    factor), the terms at the newest event's scale, ``math.fsum``, one ``ldexp``."""
    logs = [-alpha * math.log2(Fraction(unit + max(at - t, 0)) / Fraction(unit)) for t, _ in ev]
    top = max(logs)
    n0 = math.floor(top)
    ts, ws = [], []
    for lg, (_, v) in zip(logs, ev, strict=True):
        d = lg - n0  # <= 1
        k = math.floor(d)
        f = math.exp2(d - k)
        ts.append(math.ldexp(v * f, k))
        ws.append(math.ldexp(f, k))
    s, w = math.fsum(ts), math.fsum(ws)
    return math.ldexp(s, n0), math.ldexp(w, n0), s / w


@pytest.mark.parametrize("alpha", [2.0, 50.0, 200.0])
def test_polynomial_weights_below_the_smallest_double(alpha: float) -> None:
    """Every weight (1 + a)^-200 of a day's ages underflows to 0: the mean is the relative
    weights' (not 0 / 0 = NaN), sums and counts follow the exact value into the
    subnormals; the monoid (``as_of``) and the batch verb (``poly_slices``) agree with the
    log-space oracle within docs/decay.md's bound."""
    unit = 1_000_000.0
    ev = [(0, 3.0), (1_800 * US, 5.0), (1_900 * US, 1e300)]
    for after in (0, 1, 60, 3_600, 86_400, 10**6):
        at = ev[-1][0] + after * US
        s, w, mean = poly_exact(ev, at, alpha, unit)
        lg = alpha * math.log2(1 + after)
        for what, want, scale in (("mean", mean, 0.0), ("sum", s, s), ("count", w, w)):
            m = PolyDecayed(alpha, what, unit=unit)
            got = [m.as_of(_fold(m, ev), at), float(slices("python", m, ev, [at])[0])]
            for g in got:
                assert g is not None and math.isfinite(g), (what, after)
                # docs/decay.md's bounds (n = 3), plus the oracle's few ulps
                if what == "mean":
                    tol = (2 * 3 + 8 * alpha + 4 + 4) * U * 1e300
                else:
                    tol = (3 + 5 * alpha + 8 + 2 * lg + 4) * U * scale + SUB
                assert abs(g - want) <= tol, (what, after, g, want)


def test_decayed_quantile_of_underflowing_polynomial_weights() -> None:
    """``decayed_p50`` under polynomial weights that all underflow answers the weighted
    median (no 'fix the monoid' error of an empty digest), through ``window_agg``."""
    df = pd.DataFrame({"k": "a", "t": [0, 10, 20, 10**6], "v": [3.0, 5.0, 7.0, 9.0]})
    out = window_agg(df, "k", "t", ["decayed_p50(v, decay=poly(200))"], size="1 day", slide="1 day")
    # the first day: weights relative to the newest (t=20, as of 86,400 s): 1, 0.9998^200,
    # 0.99977^200 ~ 1, 0.957, 0.955 of 2.91: the median is 5.0; the 12th day holds only 9.0
    assert out.results["decayed_p50_v"].tolist() == [5.0, 9.0]
    q = DecayedQuantile(0.5, alpha=200.0)
    p = _fold(q, [(0, 3.0), (10 * US, 5.0), (20 * US, 7.0)])
    assert q.as_of(p, 86_400 * US) == 5.0


def test_polynomial_mean_through_window_agg() -> None:
    """``ewm_mean(v, decay=poly(200))`` of a window ending a day after its events: the
    relative weights' mean, not NaN; sums underflow to 0 as their exact value does."""
    df = pd.DataFrame({"k": "a", "t": [0, 1800], "v": [3.0, 5.0]})
    aggs = ["ewm_mean(v, decay=poly(200)) as m", "decayed_sum(v, decay=poly(200)) as s"]
    out = window_agg(df, "k", "t", aggs, size="1 day", slide="1 day").results
    _, _, mean = poly_exact([(0, 3.0), (1_800 * US, 5.0)], 86_400 * US, 200.0, 1e6)
    assert out["m"].tolist() == [pytest.approx(mean, rel=1e-12, abs=0)]
    assert out["s"].tolist() == [0.0]  # exact: ~5 * 84,601^-200 ~ 1e-985


def test_a_failing_built_in_is_not_the_users_monoid_to_fix(monkeypatch: Any) -> None:
    """A built-in aggregation that raises (here decayed_pNN, made to fail) is reported as
    windowagg's, to report, never as a monoid for the user to fix; a user's monoid still
    is."""
    from windowagg.errors import AggregationError

    def boom(self: Any, s: Any, at: int) -> float:
        raise RuntimeError("boom")

    monkeypatch.setattr(DecayedQuantile, "_answer", boom)
    df = pd.DataFrame({"k": "a", "t": [0, 10], "v": [3.0, 5.0]})
    with pytest.raises(AggregationError) as e:
        window_agg(df, "k", "t", ["decayed_p50(v, decay=poly(2))"], size="1 day", slide="1 day")
    msg = str(e.value)
    assert "windowagg's built-in DecayedQuantile" in msg and "report it" in msg
    assert "fix the monoid" not in msg and "Unlowered" not in msg
