"""Issue 26, front end: no silent loss, no wrapped times, errors that say what went wrong.

Every input row is aggregated or rejected with a reason (rows in no window included);
times are int64 microseconds of the years 0001-9999 end to end (no pandas nanosecond
step), times outside them are rejects; bad arguments and failing user monoids raise
``windowagg.errors`` errors naming the argument, or the aggregation, key and window.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import numpy as np
import pandas as pd
import pytest

from windowagg import errors
from windowagg.monoids import Sum
from windowagg.pandas import window_agg
from windowagg.windows.engine import KeyStream, Shape


def _conserved(df: pd.DataFrame, out: Any, admitted: int) -> None:
    """Every row aggregated or rejected, never both, by position."""
    assert admitted + len(out.rejects) == len(df)
    assert out.rejects["row_index"].tolist() == sorted(set(out.rejects["row_index"]))


# ---------------------------------------------------------------- defect 3: overflow
def test_epoch_integers_past_int64_micros_are_rejects_never_wrapped() -> None:
    df = pd.DataFrame({"k": ["a", "a"], "t": [2**62, 5], "v": [100.0, 1.0]})
    out = window_agg(df, "k", "t", ["count"], size=10, slide=10)
    assert out.results["count"].tolist() == [1]  # only the row at 5 s
    (reason,) = out.rejects["reason"].tolist()
    assert out.rejects["row_index"].tolist() == [0]
    assert reason.startswith("timestamp out of range: 4611686018427387904 s")
    assert "0001-9999" in reason and "time_unit" in reason


def test_uint64_and_float_times_outside_the_range_are_rejects() -> None:
    df = pd.DataFrame(
        {
            "k": ["a"] * 4,
            "t": np.array([2**64 - 1, 5, 2**63, 7], dtype=np.uint64),
            "v": [1.0] * 4,
        }
    )
    out = window_agg(df, "k", "t", ["count"], size=10, slide=10)
    assert out.results["count"].tolist() == [2]
    assert out.rejects["row_index"].tolist() == [0, 2]
    assert (
        out.rejects["reason"]
        .iloc[0]
        .startswith("timestamp out of range: 18446744073709551615 s since the epoch")
    )
    floats = pd.DataFrame({"k": ["a", "a"], "t": [1e300, 3.0], "v": [1.0, 1.0]})
    out = window_agg(floats, "k", "t", ["count"], size=10, time_unit="ms")
    assert out.rejects["reason"].str.startswith("timestamp out of range: 1e+300 ms").tolist() == [
        True
    ]
    assert out.results["count"].tolist() == [1]


def test_datetime64_seconds_past_the_range_are_rejects() -> None:
    t = np.array([300_000_000_000_000, 10], dtype="datetime64[s]")  # ~ year 9.5 million
    df = pd.DataFrame({"k": ["a", "a"], "t": t, "v": [1.0, 2.0]})
    out = window_agg(df, "k", "t", ["count"], size=10, slide=10)
    assert out.rejects["row_index"].tolist() == [0]
    assert out.rejects["reason"].iloc[0].startswith("timestamp out of range")
    assert out.results["count"].tolist() == [1]


# ---------------------------------------------------------------- defect 6: years 0001-9999
def test_arrow_seconds_of_year_3000_are_windowed() -> None:
    pa = pytest.importorskip("pyarrow")
    times = [dt.datetime(3000, 1, 1), dt.datetime(3000, 1, 1, 0, 0, 5)]
    table = pa.table(
        {"k": ["a", "a"], "t": pa.array(times, type=pa.timestamp("s")), "v": [1.0, 2.0]}
    )
    out = window_agg(table, "k", "t", ["count", "sum(v)"], size=10, slide=10)
    res = out.results.to_pylist()
    assert [(r["count"], r["sum_v"]) for r in res] == [(2, 3.0)]
    assert res[0]["window_start"] == dt.datetime(3000, 1, 1, tzinfo=dt.UTC)
    assert res[0]["window_end"] == dt.datetime(3000, 1, 1, 0, 0, 10, tzinfo=dt.UTC)
    assert out.rejects.num_rows == 0


def test_iso_text_of_years_1_and_3000_parses_and_bounds_hold_them() -> None:
    df = pd.DataFrame(
        {
            "k": ["a", "a", "a"],
            "t": ["3000-01-01T00:00:00", "0001-01-01", "0001-01-01T00:00:03Z"],
            "v": [1.0, 2.0, 4.0],
        }
    )
    out = window_agg(df, "k", "t", ["count", "sum(v)"], size=10, slide=10)
    assert len(out.rejects) == 0
    res = out.results
    assert str(res["window_start"].dtype) == "datetime64[us, UTC]"  # ns cannot hold them
    assert res["sum_v"].tolist() == [6.0, 1.0]
    assert [t.isoformat() for t in res["window_start"]] == [
        "0001-01-01T00:00:00+00:00",
        "3000-01-01T00:00:00+00:00",
    ]
    # times inside nanoseconds keep the output they always had
    small = window_agg(df.assign(t=["2024-01-01T00:00:01"] * 3), "k", "t", ["count"], size=10)
    assert str(small.results["window_end"].dtype) == "datetime64[ns, UTC]"


def test_rejects_of_far_years_keep_their_event_time() -> None:
    df = pd.DataFrame({"k": [None, "a"], "t": ["9999-12-31T23:59:59", "0001-01-01"], "v": 1.0})
    out = window_agg(df, "k", "t", ["count"], size=10)
    assert out.rejects["row_index"].tolist() == [0]
    assert out.rejects["event_time"].iloc[0] == pd.Timestamp("9999-12-31T23:59:59", tz="UTC")
    assert out.results["count"].tolist() == [1]


def test_text_past_year_9999_or_unreadable_is_a_reject() -> None:
    df = pd.DataFrame(
        {"k": "a", "t": ["10000-01-01T00:00:00", "0001-01-01T00:00:00+01:00", "soon"], "v": 1.0}
    )
    out = window_agg(df, "k", "t", ["count"], size=10)
    assert out.rejects["row_index"].tolist() == [0, 1, 2]
    reasons = out.rejects["reason"].tolist()
    assert reasons[0].startswith("unparsable timestamp '10000-01-01")
    assert reasons[1].startswith("timestamp out of range: '0001-01-01T00:00:00+01:00'")
    assert reasons[2] == "unparsable timestamp 'soon'"


# ---------------------------------------------------------------- defect 5: no row vanishes
def test_hopping_windows_with_gaps_reject_the_rows_between_them() -> None:
    df = pd.DataFrame({"k": ["a", "a", "a", "b"], "t": [1, 15, 25, 39], "v": 1.0})
    out = window_agg(df, "k", "t", ["count"], size=10, slide=20)
    assert out.results["count"].tolist() == [1, 1]
    assert out.rejects["row_index"].tolist() == [1, 3]
    assert out.rejects["reason"].iloc[0] == (
        "in no window: 1970-01-01T00:00:15Z lies between the hopping windows "
        "[1970-01-01T00:00:00Z, 1970-01-01T00:00:10Z) and [1970-01-01T00:00:20Z, "
        "1970-01-01T00:00:30Z) (size < slide leaves gaps); make slide <= size to cover "
        "every time"
    )
    _conserved(df, out, int(out.results["count"].sum()))


def test_count_windows_reject_the_tail_and_the_rows_they_skip() -> None:
    df = pd.DataFrame({"k": ["a"] * 5, "t": [5, 4, 3, 2, 1], "v": 1.0})
    out = window_agg(df, "k", "t", ["count"], rows=2, every=100)
    assert len(out.results) == 0
    assert out.rejects["row_index"].tolist() == [0, 1, 2, 3, 4]
    assert all(r.startswith("in no window: ") for r in out.rejects["reason"])
    assert "every 100 events" in out.rejects["reason"].iloc[0]
    out = window_agg(df, "k", "t", ["count"], rows=1, every=2)
    # time order 1, 2, 3, 4, 5 (rows 4, 3, 2, 1, 0): windows end at the 2nd and 4th
    assert out.results["count"].tolist() == [1, 1]
    assert out.rejects["row_index"].tolist() == [0, 2, 4]
    why = dict(zip(out.rejects["row_index"], out.rejects["reason"], strict=True))
    assert "rows < every" in why[2] and "rows < every" in why[4]
    assert "last 1 events" in why[0]  # the 5th in time order: after the last window
    _conserved(df, out, int(out.results["count"].sum()))


def test_a_stream_rejects_hopping_gaps_and_refuses_count_windows_with_gaps() -> None:
    from windowagg.aggs import parse_aggs

    s = KeyStream(parse_aggs(["count"]), Shape(size=10, slide=20))
    res, _ = s.feed(np.array([1, 15, 25]), {})
    assert res.refused.tolist() == [1]
    assert res.reasons[0].startswith("in no window: 15 lies between")
    with pytest.raises(errors.ArgumentError, match="rows >= every"):
        KeyStream(parse_aggs(["count"]), Shape(rows=2, every=3))


# ---------------------------------------------------------------- defect 8: errors
@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"size": 10, "time_unit": "ns"}, "time_unit='ns'.*'s', 'ms' or 'us'"),
        ({"size": float("inf")}, "size=inf is not finite"),
        ({"size": 1e-7}, "size=1e-07 s is under windowagg's time resolution of 1 microsecond"),
        ({"size": 10, "slide": 1e40}, "slide=1e\\+40 s is longer than"),
        ({"gap": "0.0000001 s"}, "gap='0.0000001 s' is under"),
        ({"size": 10, "max_out_of_orderness": float("nan")}, "max_out_of_orderness=nan"),
    ],
)
def test_bad_arguments_are_windowagg_errors_naming_them(kwargs: dict[str, Any], match: str) -> None:
    df = pd.DataFrame({"k": ["a"], "t": [1], "v": [1.0]})
    with pytest.raises(errors.ArgumentError, match=match):
        window_agg(df, "k", "t", ["count"], **kwargs)


def test_duplicate_column_names_are_named() -> None:
    df = pd.DataFrame([["a", 1, 1.0, 2]], columns=["k", "t", "v", "t"])
    with pytest.raises(errors.ArgumentError, match="column 't' appears 2 times"):
        window_agg(df, "k", "t", ["count"], size=10)


def test_a_factory_returning_no_aggregator_is_named() -> None:
    df = pd.DataFrame({"k": ["a"], "t": [1], "v": [1.0]})
    with pytest.raises(
        errors.ArgumentError, match=r"factory returned 'object'.*fifo\.TwoStacksLite"
    ):
        window_agg(df, "k", "t", ["sum(v)"], size=10, factory=lambda m: object())


class _Fragile(Sum):
    """A sum whose combine raises once a total passes 2."""

    def combine(self, a: Any, b: Any) -> Any:
        if a + b > 2:
            raise ZeroDivisionError("boom")
        return super().combine(a, b)


@pytest.mark.parametrize("factory", [None, "no_verbs"])
def test_a_raising_combine_names_the_aggregation_key_and_window(factory: Any) -> None:
    from windowagg.fifo import TwoStacksLite

    make = None
    if factory == "no_verbs":

        class NoVerbs:
            def __init__(self, m: Any) -> None:
                w = TwoStacksLite(m, backend="python")
                self.insert, self.bulk_evict, self.query = w.insert, w.bulk_evict, w.query

        make = NoVerbs
    df = pd.DataFrame({"k": ["x", "b", "b"], "t": [1, 1, 2], "v": [5.0, 1.0, 2.0]})
    with pytest.raises(errors.AggregationError) as info:
        window_agg(df, "k", "t", [("s", _Fragile(), "v"), "count"], size=10, factory=make)
    e = info.value
    assert isinstance(e.__cause__, ZeroDivisionError)
    assert e.key == ("b",) and e.alias == "s"
    msg = str(e)
    assert "aggregation 's' (monoid _Fragile) raised ZeroDivisionError: boom" in msg
    assert "window_end 1970-01-01T00:00:02Z" in msg and "of key ('b',)" in msg


# ---------------------------------------------------------------- defect 9a: ISO late reasons
def test_late_reasons_show_iso_times() -> None:
    df = pd.DataFrame({"k": ["a", "a"], "t": [100, 1], "v": 1.0})
    out = window_agg(df, "k", "t", ["count"], size=10, max_out_of_orderness=0)
    assert out.rejects["reason"].tolist() == [
        "late: 1970-01-01T00:00:01Z < lateness bound 1970-01-01T00:01:40Z"
    ]
