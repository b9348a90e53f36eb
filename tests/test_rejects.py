"""The pandas functions under the Spark adapter, without Spark: batch windows (the engine,
through ``windowagg.pandas.window_agg``, as the Spark batch adapter runs it per key) against
a brute-force oracle, rejects with reasons. (Streaming: tests/windows/test_engine_stream.py.)"""

from __future__ import annotations

import datetime as dt
import json
import subprocess
import sys
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from windowagg.aggs import Agg, parse_aggs, to_micros
from windowagg.monoids import Concat
from windowagg.pandas import window_agg
from windowagg.rejects import parse_times, validate
from windowagg.windows.engine import Shape


def window_frame(pdf, keys, time, aggs, spec, time_unit="s"):
    """Batch windows of *spec* by ``windowagg.pandas.window_agg``: (results, rejects)."""
    us = {k: f"{v} us" for k, v in (("size", spec.size), ("slide", spec.slide)) if v is not None}
    kw = {"rows": spec.rows, "every": spec.every, "start_time": f"{spec.start_time} us", **us}
    out = window_agg(pdf, keys, time, aggs, time_unit=time_unit, **kw)
    return out.results, out.rejects


VECTOR_AGGS = ["max(v)", "min(v)", "sum(v)", "mean(v)", "count"]


def brute_windows(ts, vs, size, slide, start_time=0):
    """Every non-empty window [s, s+size), s = start_time + k*slide, by scanning all events."""
    ts = np.asarray(ts, dtype=np.int64)
    out = {}
    if len(ts) == 0:
        return out
    k_lo = (int(ts.min()) - size - start_time) // slide
    k_hi = (int(ts.max()) - start_time) // slide + 1
    order = np.argsort(ts, kind="stable")
    for k in range(k_lo, k_hi + 1):
        s = start_time + k * slide
        sel = [i for i in order if s <= ts[i] < s + size]
        if sel:
            out[(s, s + size)] = [vs[i] for i in sel]
    return out


def frame(keys, ts, vs):
    return pd.DataFrame(
        {"k": keys, "t": pd.to_datetime(np.asarray(ts, dtype=np.int64), unit="us"), "v": vs}
    )


events = st.lists(
    st.tuples(
        st.sampled_from(["a", "b"]),
        st.integers(0, 200),
        st.integers(-50, 50).map(float),
    ),
    max_size=60,
)


@given(events, st.sampled_from([(20, 5), (20, 20), (30, 20), (7, 3), (5, 10)]), st.integers(0, 9))
def test_hopping_windows_equal_brute_force(evs, size_slide, start_time):
    size, slide = size_slide
    keys = [e[0] for e in evs]
    ts = [e[1] for e in evs]
    vs = [e[2] for e in evs]
    pdf = frame(keys, ts, vs)
    spec = Shape(size=size, slide=slide, start_time=start_time)
    aggs = parse_aggs(VECTOR_AGGS)
    res, rej = window_frame(pdf, ["k"], "t", aggs, spec, time_unit="us")
    # size < slide: the rows between windows are rejects, never dropped
    gaps = [i for i, t in enumerate(ts) if (t - start_time) % slide >= size]
    assert rej["row_index"].tolist() == gaps
    assert all(r.startswith("in no window: ") for r in rej["reason"])
    got = {}
    for r in res.itertuples(index=False):
        s = int(r.window_start.value // 1000)
        got[(r.k, s)] = (r.max_v, r.min_v, r.sum_v, r.mean_v, r.count)
    want = {}
    for key in ("a", "b"):
        idx = [i for i, kk in enumerate(keys) if kk == key]
        for (s, _), vals in brute_windows(
            [ts[i] for i in idx], [vs[i] for i in idx], size, slide, start_time
        ).items():
            want[(key, s)] = (max(vals), min(vals), sum(vals), sum(vals) / len(vals), len(vals))
    assert got.keys() == want.keys()
    for k, (mx, mn, sm, mean, n) in want.items():
        g = got[k]
        assert (g[0], g[1], g[4]) == (mx, mn, n)
        assert g[2] == pytest.approx(sm, abs=1e-9) and g[3] == pytest.approx(mean, abs=1e-9)


@given(st.lists(st.tuples(st.integers(0, 100), st.integers(0, 99)), max_size=40))
def test_windows_keep_event_time_order_for_a_non_commutative_monoid(evs):
    ts = [t for t, _ in evs]
    vs = [v for _, v in evs]
    pdf = pd.DataFrame({"k": ["x"] * len(evs), "t": ts, "v": vs})
    aggs = [Agg("seq", Concat(), "v", "string")]
    res, _ = window_frame(pdf, ["k"], "t", aggs, Shape(size=15, slide=5), time_unit="us")
    got = {int(r.window_start.value // 1000): tuple(r.seq) for r in res.itertuples()}
    assert len(got) == len(res)
    want = {s: tuple(float(x) for x in v) for (s, _), v in brute_windows(ts, vs, 15, 5).items()}
    assert got == want


@given(st.lists(st.tuples(st.integers(0, 100), st.integers(-9, 9)), min_size=1, max_size=40))
def test_per_event_and_count_windows(evs):
    ts = [t for t, _ in evs]
    vs = [float(v) for _, v in evs]
    pdf = pd.DataFrame({"k": ["x"] * len(evs), "t": ts, "v": vs})
    aggs = parse_aggs(["sum(v)", "count"])
    per_event, _ = window_frame(pdf, ["k"], "t", aggs, Shape(size=10), time_unit="us")
    order = np.argsort(ts, kind="stable")
    for r, i in zip(per_event.itertuples(), order, strict=True):
        t = ts[i]
        assert r.window_end.value // 1000 == t
        # the window (t - 10, t], complete by event time: every event at t included
        seen = [j for j in order if t - 10 < ts[j] <= t]
        assert r.count == len(seen) and r.sum_v == sum(vs[j] for j in seen)
    counts, _ = window_frame(pdf, ["k"], "t", aggs, Shape(rows=3), time_unit="us")
    assert len(counts) == len(evs)
    for n, r in enumerate(counts.itertuples()):
        last = [vs[j] for j in order[max(0, n - 2) : n + 1]]
        assert r.count == len(last) and r.sum_v == sum(last)


def test_every_bad_row_is_a_reject_with_its_reason_and_row():
    pdf = pd.DataFrame(
        {
            "k": ["a", None, "a", "a", "a", "a", "a", "a", "a"],
            "t": [
                "2024-01-01T00:00:01",
                "2024-01-01T00:00:02",
                None,
                "yesterday",
                5,
                "2024-01-01T00:00:03",
                "2024-01-01T00:00:04",
                "2024-01-01T00:00:05",
                "2024-01-01T00:00:06",
            ],
            "v": [1.0, 2.0, 3.0, 4.0, 5.0, float("nan"), "abc", None, "7.5"],
            "_corrupt_record": [None] * 8 + ["a,b,,c"],
        }
    )
    pdf.loc[7, "v"] = None
    good, _, _, rejects = validate(pdf, ["k"], "t", ["v"])
    assert good.tolist() == [True] + [False] * 8
    reasons = rejects["reason"].tolist()
    assert reasons == [
        "null key k",
        "null timestamp",
        "unparsable timestamp 'yesterday'",
        "mixed-type timestamp: number 5 in a column of text",
        "bad_value: non-finite value in 'v': nan",
        "not a number in 'v': 'abc'",
        "null value in 'v'",
        "malformed record",
    ]
    rows = [json.loads(r) for r in rejects["row"]]
    assert rows[2]["t"] == "yesterday" and rows[5]["v"] == "abc"
    assert rejects["event_time"].isna().tolist() == [False, True, True, True] + [False] * 4
    res, rej = window_frame(pdf, ["k"], "t", parse_aggs(["sum(v)"]), Shape(size=10**6, slide=10**6))
    assert res["sum_v"].tolist() == [1.0] and len(rej) == 8


def test_parse_times_numeric_and_datetime_columns():
    us, why = parse_times(pd.Series([1.5, float("nan"), float("inf"), 2.0]), "s")
    assert us[0] == 1_500_000 and us[3] == 2_000_000
    assert why.tolist() == [None, "null timestamp", "NaN timestamp (not finite)", None]
    s = pd.Series(pd.to_datetime(["2024-01-01 01:00"]).tz_localize("America/New_York"))
    us, _ = parse_times(s)
    assert us[0] == pd.Timestamp("2024-01-01 06:00", tz="UTC").value // 1000
    _, why = parse_times(pd.Series([True, False]))
    assert why.str.startswith("mixed-type").all()


def test_quantiles_exact_and_approximate_within_the_sketch_error():
    rng = np.random.default_rng(3)
    n = 500
    ts = rng.integers(0, 1_000, n)
    vs = rng.gamma(2.0, 10.0, n).round(2)
    pdf = pd.DataFrame({"k": ["x"] * n, "t": ts, "v": vs})
    res, _ = window_frame(
        pdf,
        ["k"],
        "t",
        ["p99(v)", "approx_p99(v)", "count"],
        Shape(size=200, slide=100),
        time_unit="us",
    )
    for r in res.itertuples():
        s = r.window_start.value // 1000
        w = np.sort(vs[(ts >= s) & (ts < s + 200)])
        m = len(w)
        assert r.count == m
        assert r.p99_v == w[max(1, -(-99 * m // 100)) - 1]  # exact nearest rank
        below = int((w < r.approx_p99_v).sum())
        at_most = int((w <= r.approx_p99_v).sum())
        # q-digest guarantee: W(< q) <= (phi + eps) n and W(<= q) >= phi n (eps = 0.01)
        assert below <= (0.99 + 0.01) * m + 1e-9 and at_most >= 0.99 * m - 1e-9


def test_spec_errors():
    with pytest.raises(ValueError, match="exactly one"):
        Shape()
    with pytest.raises(ValueError, match="needs a column"):
        parse_aggs(["max"])
    with pytest.raises(ValueError, match="is not an aggregation"):
        parse_aggs(["nope(x)"])
    assert to_micros("2 days") == 2 * 86_400_000_000


def test_importing_windowagg_never_imports_pyspark_and_missing_extra_is_clear():
    code = (
        "import sys, windowagg, windowagg.spark, windowagg.rejects; "
        "assert 'pyspark' not in sys.modules, 'pyspark imported'; "
        "sys.modules['pyspark'] = None\n"
        "try:\n"
        "    from windowagg.spark import window_agg\n"
        "except ImportError as e:\n"
        "    print(type(e).__name__, e)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "MissingExtraError" in out.stdout and "windowagg[spark]" in out.stdout


@pytest.mark.parametrize("unit", ["s", "ms", "us", "ns"])
@pytest.mark.parametrize("tz", [None, "UTC", "Europe/Paris"])
def test_parse_times_datetime_columns_floor_to_utc_micros(unit, tz):
    """Datetime columns of any unit and zone: epoch microseconds in UTC, floored (numpy's
    unit cast), NaT a reject; checked against pandas' own conversions."""
    raw = np.array([-1_500_123_457, -1, 0, 1_499, 1_700_000_000_123_456_789], dtype="int64")
    s = pd.Series(pd.to_datetime(raw, unit="ns"))
    if tz is not None:
        s = s.dt.tz_localize(tz).astype(pd.DatetimeTZDtype(unit=unit, tz=tz))
    else:
        s = s.astype(f"datetime64[{unit}]")
    s[2] = pd.NaT
    micros, why = parse_times(s)
    utc = s.dt.tz_convert("UTC") if tz is not None else s
    ref = utc.dt.tz_localize(None).astype("datetime64[us]").to_numpy().astype(np.int64)
    good = why.isna().to_numpy()
    assert why.tolist()[2] == "null timestamp" and good.sum() == 4
    assert micros[good].tolist() == ref[good].tolist()


_cells = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True, width=64), st.just(0.5), st.just(1.0)
)


@given(
    st.lists(
        st.tuples(
            st.one_of(st.integers(-5, 5), st.none()),  # key (None: a nullable Int32 NA)
            st.one_of(st.integers(0, 10**12), st.none()),  # event time us (None: NaT)
            _cells,
            st.booleans(),  # the value's Spark null flag
        ),
        max_size=12,
    ),
    st.sampled_from(["s", "ms", "us", "ns"]),
    st.booleans(),
    st.sampled_from(["as drawn", "all good", "one null flag", "one NaN", "one NaT", "one NA"]),
    st.sampled_from(["UTC", None]),
)
def test_validate_fast_path_equals_the_row_by_row_path(rows, unit, nullable_key, make, tz):
    """``validate`` answers by a numpy-only path when every row is good; it must answer
    exactly as the general path does (good rows, times, values, no rejects), and fall back
    to it whenever a row has a reason. Time columns of every unit, zoned (pandas) or naive
    (numpy datetime64, as PySpark hands them over)."""
    from windowagg.rejects import _validate_rows, null_flag

    if make != "as drawn":  # mostly good rows, at most one bad: the fast path's edge
        rows = [(k or 0, 0 if t is None else t, v if np.isfinite(v) else 1.0, False)
                for k, t, v, _ in rows]  # fmt: skip
        spoil = {"one null flag": 3, "one NaN": 2, "one NaT": 1, "one NA": 0}.get(make)
        if rows and spoil is not None:
            bad = list(rows[-1])
            bad[spoil] = {3: True, 2: float("nan"), 1: None, 0: None}[spoil]
            rows[-1] = tuple(bad)
    keys = [r[0] for r in rows]
    if nullable_key:
        key = pd.array(keys, dtype="Int32")
    else:
        key = np.array([0 if k is None else k for k in keys], dtype=np.int64)
    t = pd.to_datetime(pd.Series([r[1] for r in rows], dtype="float64"), unit="us", utc=True)
    pdf = pd.DataFrame(
        {
            "k": key,
            "t": t.astype(f"datetime64[{unit}, UTC]")
            if tz
            else t.dt.tz_localize(None).astype(f"datetime64[{unit}]"),
            "v": np.array([r[2] for r in rows], dtype=np.float64),
            null_flag("v"): np.array([r[3] for r in rows], dtype=bool),
        }
    )
    got = validate(pdf, ["k"], "t", ["v"])
    want = _validate_rows(pdf, ["k"], "t", ["v"], "s")
    np.testing.assert_array_equal(got[0], want[0])
    good = want[0]
    np.testing.assert_array_equal(got[1][good], want[1][good])
    np.testing.assert_array_equal(got[2]["v"][good], want[2]["v"][good])
    pd.testing.assert_frame_equal(
        got[3].reset_index(drop=True), want[3].reset_index(drop=True), check_dtype=False
    )


@given(
    st.lists(st.integers(-(2**63), 2**63 - 1), max_size=8),
    st.sampled_from(["s", "ms", "us"]),
    st.sampled_from(["int64", "int32", "uint64", "uint8"]),
)
def test_validate_integer_times_fast_path_equals_the_row_by_row_path(times, unit, dtype):
    """Integer event times in ``time_unit`` take the numpy-only path when every time is in
    years 0001-9999, and the general path (which rejects the others) otherwise: the same
    good rows and microseconds either way, whatever the integer type."""
    from windowagg.rejects import _validate_rows

    info = np.iinfo(dtype)
    raw = np.array([min(max(x, info.min), info.max) for x in times], dtype=dtype)
    pdf = pd.DataFrame({"k": np.zeros(len(raw), np.int64), "t": raw, "v": np.ones(len(raw))})
    got = validate(pdf, ["k"], "t", ["v"], time_unit=unit)
    want = _validate_rows(pdf, ["k"], "t", ["v"], unit)
    np.testing.assert_array_equal(got[0], want[0])
    good = want[0]
    np.testing.assert_array_equal(got[1][good], want[1][good])
    assert got[3]["reason"].tolist() == want[3]["reason"].tolist()


def _rows_json_per_value(pdf: pd.DataFrame, mask: np.ndarray) -> list[str]:
    """The rejects' row JSON value by value (the reference the column-wise build must equal)."""
    from windowagg.rejects import _jsonable

    sub = pdf.loc[mask, [c for c in pdf.columns if not c.startswith("_wa_")]]
    for c in sub.columns:  # pandas 2.3 crashes iterating far-past times in New York's zone
        if isinstance(sub[c].dtype, pd.DatetimeTZDtype):
            sub[c] = sub[c].dt.tz_convert("UTC")
    return [
        json.dumps({str(k): _jsonable(v) for k, v in rec.items()})
        for rec in sub.to_dict(orient="records")
    ]


@settings(deadline=None)
@given(
    ints=st.lists(st.integers(-(2**53), 2**53), min_size=1, max_size=6),
    data=st.data(),
)
def test_rows_json_column_by_column_equals_value_by_value(ints: list[int], data: Any) -> None:
    """Numbers, NaN/inf, booleans, text and None, datetimes naive/tz-aware/us with and
    without fractions, NaT, nullable ints and mixed objects: the same JSON as the per-value
    reference, row for row."""
    from windowagg.rejects import _rows_json

    n = len(ints)
    floats = data.draw(
        st.lists(st.floats(allow_nan=True, allow_infinity=True), min_size=n, max_size=n)
    )
    secs = data.draw(st.lists(st.integers(-(2**34), 2**35), min_size=n, max_size=n))
    frac = data.draw(st.booleans())
    us = np.array(secs, dtype=np.int64) * 1_000_000 + (np.arange(n) * 1_500 if frac else 0)
    t = pd.Series(us.astype("datetime64[us]"))
    t[data.draw(st.lists(st.booleans(), min_size=n, max_size=n))] = pd.NaT
    pdf = pd.DataFrame(
        {
            "i": ints,
            "f": floats,
            "b": [x % 2 == 0 for x in ints],
            "s": [None if x % 3 == 0 else f"r{x}" for x in ints],
            "t": t,
            "tz": t.dt.tz_localize("UTC").dt.tz_convert("America/New_York"),
            "ni": pd.array([None if x % 4 == 0 else x for x in ints], dtype="Int64"),
            "o": [dt.date(2020, 1, 1) if x % 2 else x for x in ints],
            "_wa_hidden": ints,
        }
    )
    mask = np.array(data.draw(st.lists(st.booleans(), min_size=n, max_size=n)))
    assert _rows_json(pdf, mask) == _rows_json_per_value(pdf, mask)


def test_rows_json_of_far_past_tz_aware_times_does_not_crash():
    """A tz-aware time with a fraction of a second in 1425 (America/New_York): pandas 2.3
    crashed the interpreter (SIGSEGV) when the rejects' JSON iterated the column; the
    text is the UTC time, as for every other time."""
    from windowagg.rejects import _rows_json

    us = np.array([-(2**34), 0], dtype=np.int64) * 1_000_000 + 1_500
    t = pd.Series(us.astype("datetime64[us]")).dt.tz_localize("UTC")
    pdf = pd.DataFrame({"tz": t.dt.tz_convert("America/New_York")})
    assert _rows_json(pdf, np.array([True, True])) == [
        '{"tz": "1425-08-04T22:06:56.001500Z"}',
        '{"tz": "1970-01-01T00:00:00.001500Z"}',
    ]


_I64 = np.iinfo(np.int64)


@given(
    st.lists(
        st.one_of(
            st.integers(int(_I64.min), int(_I64.max)),
            st.integers(-(10**12), 10**12),  # mostly inside, whatever the unit
            st.sampled_from([int(_I64.min), -62135596800, 253402300799, 0]),  # NaT, year ends
        ),
        max_size=8,
    ),
    st.sampled_from(["s", "ms", "us", "ns"]),
    st.booleans(),
)
def test_clean_micros_is_epoch_micros_when_every_time_is_inside(
    raw: list[int], unit: str, tz: bool
) -> None:
    """The clean path's conversion (range checked on the smallest and largest value)
    against the general one: None exactly when a time is NaT (which nanoseconds' floor
    division alone would put in 1677) or outside years 0001-9999, else the same
    microseconds."""
    from windowagg.rejects import _clean_micros, _epoch_micros

    i8 = np.asarray(raw, dtype=np.int64)
    dtype: Any = pd.DatetimeTZDtype(unit, "UTC") if tz else np.dtype(f"datetime64[{unit}]")
    micros, inside = _epoch_micros(i8, dtype)
    got = _clean_micros(i8, dtype)
    if not inside.all() or (i8 == _I64.min).any():
        assert got is None
    else:
        assert got is not None and got.dtype == np.int64 and got.tolist() == micros.tolist()


def test_stored_columns_are_the_series_values_without_a_series() -> None:
    """``_stored_columns``: each column's values as stored, whose items are what the
    Series gives (``iloc``: the first row's keys of a Spark group) for every kind of
    column; None for a name that is missing or repeated."""
    from windowagg.rejects import _stored_columns

    pdf = pd.DataFrame(
        {
            "i32": np.array([3, 4], dtype=np.int32),
            "nullable": pd.array([None, 5], dtype="Int32"),
            "text": ["a", None],
            "cat": pd.Categorical(["x", "y"]),
            "naive": pd.to_datetime(["2024-01-01", "2024-01-02"]),
            "zoned": pd.to_datetime(["2024-01-01", "2024-01-02"], utc=True),
            "flag": [True, False],
            "f": [1.5, float("nan")],
        }
    )
    got = _stored_columns(pdf, list(pdf.columns))
    assert got is not None
    for name, arr in zip(pdf.columns, got, strict=True):
        for j in range(2):
            want, have = pdf[name].iloc[j], arr[j]
            assert type(have) is type(want) and repr(have) == repr(want), name
    assert _stored_columns(pdf, ["missing"]) is None
    twice = pd.concat([pdf[["f"]], pdf[["f"]]], axis=1)
    assert _stored_columns(twice, ["f"]) is None


def test_a_pandas_without_the_private_column_read_takes_the_general_path(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``_stored_columns`` reads ``DataFrame._get_column_array``, a private method of the
    pandas versions this package takes; where it is missing the clean path is skipped
    and ``validate`` answers as before, bad rows included."""
    from windowagg.rejects import _stored_columns

    pdf = pd.DataFrame(
        {"k": [1, 1, 2], "t": [1.0, float("nan"), 3.0], "v": [0.5, 1.5, float("inf")]}
    )
    want = validate(pdf, ["k"], "t", ["v"])
    monkeypatch.delattr(pd.DataFrame, "_get_column_array")
    assert _stored_columns(pdf, ["k", "t", "v"]) is None
    got = validate(pdf, ["k"], "t", ["v"])
    assert got[0].tolist() == want[0].tolist()
    assert got[1][got[0]].tolist() == want[1][want[0]].tolist()
    assert got[2]["v"][got[0]].tolist() == want[2]["v"][want[0]].tolist()
    pd.testing.assert_frame_equal(got[3], want[3])
    clean = pdf.iloc[[0]]
    assert validate(clean, ["k"], "t", ["v"])[0].tolist() == [True]
