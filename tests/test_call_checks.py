"""Issue 36 items 4-6: what a ``window_agg`` call refuses, and the years its output keeps.

- **Names** (item 4): an output column named as a key or as the output's own columns
  (``... as k``, ``... as window_end``, a key ``count`` with ``count``, a key equal to a
  several-sizes column ``<alias>_<size>``) silently replaced it; now an ``ArgumentError``
  naming the name and what to rename, on pandas, polars, Arrow and the CLI (both engines
  refuse Spark's combined-output names, so a call runs on either).
- **Window arguments** (item 5): every bad one is an ``ArgumentError`` naming the argument
  and the value as given (``size=-5``, not ``-5000000``), on every front end; the CLI
  names the option (exit 2); the object API classes too (``ArgumentTypeError`` is an
  ``ArgumentError``).
- **Years** (item 6): no window bound leaves 0001-9999 (a bound past the range is the
  range's edge); the windows hold what a run shifted into the range holds.

The Spark front ends' twins are in ``tests/spark/test_spark_call_checks.py``.
"""

from __future__ import annotations

import datetime as dt

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from click.testing import CliRunner

from windowagg import CountWindows, SessionWindows, SharedWindows, SlidingWindows, monoids
from windowagg.aggs import MAX_MICROS, MIN_MICROS
from windowagg.cli import main
from windowagg.errors import ArgumentError
from windowagg.pandas import window_agg

FRONTS = ["pandas", "polars", "arrow"]


def _frame(kind: str, pdf: pd.DataFrame):
    if kind == "polars":
        import polars as pl

        return pl.from_pandas(pdf)
    if kind == "arrow":
        return pa.Table.from_pandas(pdf, preserve_index=False)
    return pdf


def _results_pandas(res):
    """Results of any front end as pandas (polars / Arrow through Arrow)."""
    if isinstance(res, pd.DataFrame):
        return res
    if isinstance(res, pa.Table):
        return res.to_pandas()
    return res.to_pandas()


DATA = pd.DataFrame(
    {"k": ["a", "a", "b"], "count": [1, 2, 3], "kind": ["x", "y", "x"], "t": [1, 7, 3],
     "v": [2.0, 5.0, 1.0]}
)  # fmt: skip

# ------------------------------------------------------------------------------- item 4

# (keys, aggs, window, the colliding name)
CLASHES = [
    ("k", ["max(v) as k"], {"size": 10}, "k"),
    ("k", ["max(v) as window_end"], {"size": 10, "slide": 5}, "window_end"),
    ("k", ["mean(v) as window_start"], {"gap": 3}, "window_start"),
    ("count", ["count"], {"size": 10}, "count"),
    ("window_start", ["count"], {"rows": 2}, "window_start"),
    (["k", "count"], [("count", "sum", "v")], {"size": 10}, "count"),
    ("k", ["ewm_mean(v, half_life=1h) as window_end"], {}, "window_end"),
    ("k", ["p95(v) as k"], {"size": 10}, "k"),
    ("count", ["max(v)", "count"], {"size": [5, 10], "slide": 5}, None),  # count_5s: no clash
    ("max_v_10s", ["max(v)"], {"size": [5, 10], "slide": 5}, "max_v_10s"),
    ("count_5s", ["max(v)", "count"], {"size": [5, 10]}, "count_5s"),
]


@pytest.mark.parametrize("front", FRONTS)
@pytest.mark.parametrize("keys, aggs, window, name", CLASHES)
def test_an_output_name_that_would_replace_a_column_is_refused(front, keys, aggs, window, name):
    df = _frame(front, DATA)
    if name is None:  # several sizes name their columns <alias>_<size>: no clash
        res = _results_pandas(window_agg(df, keys, "t", aggs, **window).results)
        assert {"count", "count_5s", "count_10s", "max_v_5s"} <= set(res.columns)
        return
    with pytest.raises(ArgumentError) as info:
        window_agg(df, keys, "t", aggs, **window)
    msg = str(info.value)
    assert f"the output column {name!r} would be both" in msg, msg
    assert "name the aggregation otherwise" in msg or "rename the key column" in msg, msg


@pytest.mark.parametrize("front", FRONTS)
def test_spark_output_names_are_free_in_process(front):
    """``kind``, ``reason``, ``row``... are columns of Spark's combined output only: an
    in-process results frame has no such column, and a key or alias may take the name."""
    res = window_agg(_frame(front, DATA), "kind", "t", ["max(v) as reason"], size=10, slide=10)
    res = _results_pandas(res.results)
    assert res.columns.tolist() == ["kind", "window_start", "window_end", "reason"]
    assert res["reason"].tolist() == [2.0, 5.0]


def test_two_aggregations_with_one_name_are_still_refused():
    with pytest.raises(ArgumentError, match="two aggregations are named 'max_v'"):
        window_agg(DATA, "k", "t", ["max(v)", "max(v)"], size=10)


CLI_CLASHES = [
    (["--key", "count", "--agg", "count", "--size", "10s"], "count"),
    (["--key", "k", "--agg", "max(v) as window_end", "--size", "10s"], "window_end"),
    (["--key", "kind", "--agg", "count", "--size", "10s"], "kind"),  # Spark's output column
    (["--key", "k", "--agg", "mean(v) as Reason", "--gap", "3s"], "reason"),  # ignoring case
    (["--key", "max_v_10s", "--agg", "max(v)", "--size", "5s", "--size", "10s"], "max_v_10s"),
]


@pytest.mark.parametrize("engine", ["local", "spark"])
@pytest.mark.parametrize("argv, name", CLI_CLASHES)
def test_the_cli_refuses_a_clashing_name_before_reading(tmp_path, engine, argv, name):
    """Both engines refuse Spark's combined-output names (they write the same files), with
    click's usage error (exit 2) before any input is read or Spark is started."""
    path = tmp_path / "in.csv"
    DATA.to_csv(path, index=False)
    out = tmp_path / "out"
    r = CliRunner().invoke(
        main, ["run", str(path), "--time", "t", *argv, "--out", str(out), "--engine", engine]
    )
    assert r.exit_code == 2, r.output
    text = " ".join(r.output.split())
    assert "--agg / --key" in text and f"the output column {name!r}" in text, text
    assert not out.exists()


# ------------------------------------------------------------------------------- item 5

# (argument, bad value, the other window arguments)
BAD_ARGS = [
    ("size", 0, {}),
    ("size", -5, {}),
    ("size", "-5 minutes", {}),
    ("size", dt.timedelta(0), {}),
    ("gap", "0s", {}),
    ("gap", -1, {}),
    ("slide", "0 minutes", {"size": 10}),
    ("slide", -1, {"size": 10}),
    ("rows", 0, {}),
    ("rows", -3, {}),
    ("rows", 2.5, {}),
    ("rows", True, {}),
    ("rows", "3", {}),
    ("every", 0, {"rows": 3}),
    ("every", 1.5, {"rows": 3}),
    ("every", True, {"rows": 3}),
    ("every", 2, {"size": 10}),  # every belongs to count windows
    ("allowed_lateness", -3, {"size": 10}),
    ("max_out_of_orderness", "-1 minute", {"size": 10}),
    ("size", [10, 0], {}),
    ("size", [10, -5], {"slide": 5}),
    ("start_time", True, {"size": 10}),
    ("size", ["1 min", "90 s"], {"slide": "60 s"}),  # sizes off the slide's grid
]


def bad_call(arg, value, others):
    """The keyword arguments of a call with *arg* = *value* and the rest of its window."""
    return {**others, arg: value}


def expect_named(err: BaseException, arg: str, value) -> None:
    """The message names the argument and the value as given."""
    msg = str(err)
    shown = (f"{arg}={value!r}", f"the {arg} {value!r}")  # 'cannot read the size ...'
    assert any(s in msg for s in shown), (shown, msg)


@pytest.mark.parametrize("front", FRONTS)
@pytest.mark.parametrize("arg, value, others", BAD_ARGS)
def test_a_bad_window_argument_is_an_argument_error_naming_it(front, arg, value, others):
    with pytest.raises(ArgumentError) as info:
        window_agg(_frame(front, DATA), "k", "t", ["count"], **bad_call(arg, value, others))
    expect_named(info.value, arg, value)


def test_no_window_or_two_windows_name_what_was_given():
    with pytest.raises(ArgumentError, match=r"got size=10, rows=3, gap=None"):
        window_agg(DATA, "k", "t", ["count"], size=10, rows=3)
    with pytest.raises(ArgumentError, match=r"slide=2 needs time windows"):
        window_agg(DATA, "k", "t", ["count"], gap=5, slide=2)
    with pytest.raises(ArgumentError, match=r"got size=None, rows=None, gap=None"):
        window_agg(DATA, "k", "t", ["count"])


CLI_BAD = [
    (["--size", "0s"], "--size", "'0s'"),
    (["--size", "-5s"], "--size", "'-5s'"),
    (["--size", "10s", "--size", "0s"], "--size", "'0s'"),
    (["--gap", "0s"], "--gap", "'0s'"),
    (["--size", "10s", "--slide", "0 minutes"], "--slide", "'0 minutes'"),
    (["--rows", "0"], "'--rows'", "0"),
    (["--rows", "2.5"], "'--rows'", "'2.5'"),
    (["--rows", "3", "--every", "0"], "'--every'", "0"),
    (["--size", "10s", "--every", "2"], "--every", "--every 2"),
]


@pytest.mark.parametrize("argv, option, shown", CLI_BAD)
def test_the_cli_names_a_bad_window_option_and_its_value(tmp_path, argv, option, shown):
    path = tmp_path / "in.csv"
    DATA.to_csv(path, index=False)
    base = ["run", str(path), "--key", "k", "--time", "t", "--agg", "count"]
    r = CliRunner().invoke(main, [*base, *argv, "--out", str(tmp_path / "o"), "--engine", "local"])
    assert r.exit_code == 2, r.output
    text = " ".join(r.output.split())
    assert f"Invalid value for {option}" in text and shown in text, text


S = monoids.Sum
# (constructor, argument named in the message, the value as given)
OBJECT_BAD = [
    (lambda: SlidingWindows(S(), 0), "size", 0),
    (lambda: SlidingWindows(S(), -5), "size", -5),
    (lambda: SlidingWindows(S(), 2.5), "size", 2.5),
    (lambda: SlidingWindows(S(), True), "size", True),
    (lambda: SlidingWindows(S(), "10"), "size", "10"),
    (lambda: SlidingWindows(S(), dt.timedelta(0)), "size", dt.timedelta(0)),
    (lambda: SlidingWindows(S(), 10, 0), "slide", 0),
    (lambda: SlidingWindows(S(), 10, -1), "slide", -1),
    (lambda: SlidingWindows(S(), 10, allowed_lateness=-3), "allowed_lateness", -3),
    (lambda: SlidingWindows(S(), 10, max_out_of_orderness=1.5), "max_out_of_orderness", 1.5),
    (lambda: SessionWindows(S(), 0), "gap", 0),
    (lambda: SessionWindows(S(), -1), "gap", -1),
    (lambda: SessionWindows(S(), 2.5), "gap", 2.5),
    (lambda: CountWindows(S(), 0), "n", 0),
    (lambda: CountWindows(S(), 2.5), "n", 2.5),
    (lambda: CountWindows(S(), True), "n", True),
    (lambda: CountWindows(S(), 3, 0), "every", 0),
    (lambda: CountWindows(S(), 3, allowed_lateness=-1), "allowed_lateness", -1),
    (lambda: SharedWindows(S(), [10, 0], 5), "size", 0),
    (lambda: SharedWindows(S(), [10, -5], 5), "size", -5),
    (lambda: SharedWindows(S(), [10, 2.5], 5), "sizes[1]", 2.5),
    (lambda: SharedWindows(S(), [], 5), "sizes", []),
    (lambda: SharedWindows(S(), 10, 5), "sizes", 10),
    (lambda: SharedWindows(S(), [10, 20], 0), "slide", 0),
    (lambda: SharedWindows(S(), [10, 20], 5, allowed_lateness=-3), "allowed_lateness", -3),
]


@pytest.mark.parametrize("make, arg, value", OBJECT_BAD)
def test_the_object_api_refuses_a_bad_window_argument_with_an_argument_error(make, arg, value):
    with pytest.raises(ArgumentError) as info:
        make()
    msg = str(info.value)
    assert arg in msg and repr(value) in msg, msg


# ------------------------------------------------------------------------------- item 6

DAY = 86_400_000_000
EDGE = 30 * DAY  # the shift that moves the edge cases inside the range


def _edge_frame(lo: bool) -> pd.DataFrame:
    """Events in the first (lo) or last hours of the years 0001-9999, as ISO text."""
    base = MIN_MICROS if lo else MAX_MICROS - 20 * 3_600_000_000
    us = base + np.array([0, 1, 3_600_000_000, 5 * 3_600_000_000, 20 * 3_600_000_000 - 1])
    if not lo:
        us[-1] = MAX_MICROS
    return pd.DataFrame({"k": ["a"] * len(us), "us": us, "v": [1.0, 2.0, 3.0, 4.0, 5.0]})


def _us(s: pd.Series) -> np.ndarray:
    """UTC window bounds as int64 microseconds."""
    return s.dt.tz_localize(None).to_numpy().astype("datetime64[us]").astype(np.int64)


def _iso(us: np.ndarray) -> list[str]:
    epoch = dt.datetime(1970, 1, 1)
    return [(epoch + dt.timedelta(microseconds=int(x))).isoformat() for x in us]


SHAPES = [
    {"size": "1 day", "slide": "1 hour"},
    {"size": "1 day", "slide": "1 hour", "start_time": "30 min"},
    {"size": "1 day"},
    {"gap": "1 day"},
    {"rows": 2},
    {"size": ["1 hour", "1 day"], "slide": "1 hour"},
]


@pytest.mark.parametrize("front", FRONTS)
@pytest.mark.parametrize("lo", [True, False], ids=["year1", "year9999"])
@pytest.mark.parametrize("window", SHAPES, ids=lambda w: "-".join(map(str, w.values())))
def test_no_window_bound_leaves_the_years_0001_9999(front, lo, window):
    """The bounds are clamped to the range, and each window holds what the same events
    shifted 30 days into the range hold (bounds shifted back, then clamped)."""
    e = _edge_frame(lo)
    shift = EDGE if lo else -EDGE
    aggs = ["count", "sum(v)", "max(v)"]
    df = pd.DataFrame({"k": e["k"], "t": _iso(e["us"]), "v": e["v"]})
    res = _results_pandas(window_agg(_frame(front, df), "k", "t", aggs, **window).results)
    moved = pd.DataFrame({"k": e["k"], "t": _iso(e["us"] + shift), "v": e["v"]})
    ref = window_agg(moved, "k", "t", aggs, **window).results
    assert len(res) == len(ref) > 0
    reached = False  # did some window reach past the range (its bound clamped)?
    for c in ("window_start", "window_end"):
        got, want = _us(res[c]), _us(ref[c]) - shift
        np.testing.assert_array_equal(got, np.clip(want, MIN_MICROS, MAX_MICROS), c)
        reached |= bool(((want < MIN_MICROS) | (want > MAX_MICROS)).any())
        assert all(1 <= t.to_pydatetime().year <= 9999 for t in res[c])  # no year 0 or 10000
    kind = "rows" if "rows" in window else "gap" if "gap" in window else "time"
    per_event = kind == "time" and "slide" not in window
    # windows reach before year 1 from their start (time windows), past 9999 from their
    # end (hopping windows and sessions); count windows' bounds are event times
    assert reached == (
        kind == "time" if lo else kind == "gap" or (kind == "time" and not per_event)
    )
    for c in res.columns.drop(["k", "window_start", "window_end"]):
        np.testing.assert_array_equal(res[c].to_numpy(), ref[c].to_numpy(), c)


@pytest.mark.parametrize("lo", [True, False], ids=["year1", "year9999"])
@pytest.mark.parametrize("tz", [None, dt.UTC], ids=["naive", "aware"])
def test_the_object_api_keeps_datetime_bounds_in_the_range(lo, tz):
    """``datetime`` bounds and watermarks past the range were an ``OverflowError``."""
    e = _edge_frame(lo)
    epoch = dt.datetime(1970, 1, 1, tzinfo=tz)
    times = [epoch + dt.timedelta(microseconds=int(x)) for x in e["us"]]
    for w in (
        SlidingWindows(S(), dt.timedelta(days=1), dt.timedelta(hours=1),
                       max_out_of_orderness=dt.timedelta(days=2)),
        SlidingWindows(S(), dt.timedelta(days=1)),
        SessionWindows(S(), dt.timedelta(days=1)),
    ):  # fmt: skip
        out = w.insert_many(list(zip(times, e["v"], strict=True)))
        assert w.watermark is not None and 1 <= w.watermark.year <= 9999
        out += w.close()
        assert out and sum(r.count for r in out) >= len(times)
        for r in out:
            assert epoch.replace(year=1, month=1, day=1) <= r.start <= r.end
            assert r.end <= dt.datetime.max.replace(tzinfo=tz)


BAD_AGGS = [
    (["max(v)", "max(v)"], "two aggregations are named 'max_v'"),
    (["nosuch(v)"], "'nosuch' is not an aggregation"),
    (["max v"], "cannot read the aggregation 'max v'"),
    (["max()"], "aggregation 'max()' needs a column"),
    (["p100(v)"], "quantile 'p100' must be between p0 and p100"),
    (["ewm_mean(half_life=1h, v)"], "positional argument 'v' after a keyword argument"),
    (["max(v, k=2)"], "'max' takes no keyword arguments"),
    ([3], "an aggregation is a string like 'max(col)'"),
    (["max(nope)"], "column 'nope' is not in the DataFrame"),
]


@pytest.mark.parametrize("front", FRONTS)
@pytest.mark.parametrize("aggs, message", BAD_AGGS)
def test_a_bad_aggregation_is_an_argument_error_saying_what_to_write(front, aggs, message):
    with pytest.raises(ArgumentError) as info:
        window_agg(_frame(front, DATA), "k", "t", aggs, size=10)
    assert message in str(info.value), str(info.value)


def test_sizes_off_the_slides_grid_are_named_as_given_not_in_microseconds():
    with pytest.raises(ArgumentError) as info:
        window_agg(DATA, "k", "t", ["count"], size=["1 min", "90 s"], slide="60 s")
    msg = str(info.value)
    assert "size=['1 min', '90 s'] with slide='60 s'" in msg and "000000" not in msg, msg


@pytest.mark.parametrize(
    "aggs, window",
    [
        (["ewm_mean(v, half_life=1h)"], {}),
        (["max(v)", "sum(v)", "count", "p50(v)"], {"size": "10 min", "slide": "1 min"}),
        (["mean(v)"], {"size": "10 min"}),
        (["sum(v)"], {"gap": "5 min"}),
    ],
)
def test_the_input_frame_is_left_as_it_was(aggs, window):
    """The call reads the frame's own columns without copying them (no ``pdf[names]``
    copy since the ewm branch): it must write none of them, nor reorder, nor re-index
    the frame, on unsorted times with ties, bad rows (a NaN time, a text value, a NaN
    value), a non-default index and a column the call does not read."""
    rng = np.random.default_rng(40)
    n = 500
    t = rng.integers(0, 3_600_000_000, n).astype(np.float64)
    t[::97] = t[1::97][: len(t[::97])]  # ties
    t[13] = np.nan
    v = rng.random(n).astype(object)
    v[7], v[8] = "text", np.nan
    pdf = pd.DataFrame(
        {"k": rng.integers(0, 7, n), "t": t, "v": v, "other": rng.random(n)},
        index=pd.Index(rng.permutation(n) * 3, name="row"),
    )
    before = pdf.copy(deep=True)
    arrays = {c: pdf[c].to_numpy(copy=True) for c in pdf.columns}
    res = window_agg(pdf, "k", "t", aggs, time_unit="us", **window)
    assert len(res.results) and len(res.rejects)
    pd.testing.assert_frame_equal(pdf, before)
    for c, a in arrays.items():  # the arrays themselves, NaN where NaN was
        assert pd.Series(pdf[c].to_numpy()).equals(pd.Series(a)), c
