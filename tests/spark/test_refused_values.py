"""Values a monoid refuses become ``bad_value`` rejects on every pandas path (batch
hopping, per-event, count and session windows through the engine, as the Spark batch
adapter runs it; the streaming step), never vanish; non-finite numbers (NaN, inf, -inf)
follow the same rule. No Spark needed."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pandas as pd
import pytest

from windowagg import monoids
from windowagg.aggs import Agg, parse_aggs
from windowagg.monoids import Sum
from windowagg.pandas import window_agg
from windowagg.windows.engine import Shape

N = 2_000


class NoThirteens(Sum):
    """A user monoid: a sum that refuses values ending in 13."""

    name = "no_thirteens"

    def lift(self, x: Any) -> Any:
        if int(x) % 100 == 13:
            raise ValueError(f"unlucky value {x}")
        return x


def _data() -> pd.DataFrame:
    rng = np.random.default_rng(5)
    return pd.DataFrame(
        {
            "host": rng.choice(["a", "b", "c"], N),
            "ts": pd.Timestamp("2024-01-01", tz="UTC")
            + pd.to_timedelta(rng.integers(0, 3_600_000_000, N), unit="us"),
            "latency": np.arange(N, dtype=np.float64),
        }
    )


SPECS: dict[str, dict[str, Any]] = {
    "hopping": {"size": "10 minutes", "slide": "1 minute"},
    "per_event": {"size": "10 minutes"},
    "count": {"rows": 50, "every": 7},
    "session": {"gap": "5 seconds"},
}


def window_frame(pdf: pd.DataFrame, keys: list[str], time: str, aggs: Any, shape: Any) -> Any:
    out = window_agg(pdf, keys, time, aggs, **shape)
    return out.results, out.rejects


@pytest.mark.parametrize("shape", list(SPECS))
@pytest.mark.parametrize("with_builtins", [False, True])
def test_refused_values_are_rejects_with_their_rows(shape: str, with_builtins: bool) -> None:
    pdf = _data()
    aggs: list[Any] = [Agg("s", NoThirteens(), "latency")]
    if with_builtins:
        aggs = [*aggs, *parse_aggs(["max(latency)", "count"])]
    refused = pdf["latency"].astype(int) % 100 == 13
    assert refused.sum() == 20
    res, rej = window_frame(pdf, ["host"], "ts", aggs, SPECS[shape])
    # count windows: each host's last events (fewer than `every`) complete no window
    tail = rej["reason"].str.startswith("in no window: ").to_numpy()
    assert tail.any() == (shape == "count") and tail.sum() <= 3 * (7 - 1)
    rej = rej[~tail]
    assert len(rej) == 20  # nothing vanished: every refused row is a reject
    assert rej["reason"].str.startswith("bad_value: ValueError: unlucky value").all()
    rows = [json.loads(r) for r in rej["row"]]
    assert sorted(r["latency"] for r in rows) == sorted(pdf.loc[refused, "latency"].tolist())
    assert set(rows[0]) == {"host", "ts", "latency"}
    assert rows[0]["ts"].endswith("Z")  # ISO 8601, UTC
    got = rej.sort_values("event_time")["event_time"].reset_index(drop=True)
    want = pdf.loc[refused, "ts"].sort_values().reset_index(drop=True)
    assert (got == want).all()
    # the windows are those of the input without the refused rows
    clean, clean_rej = window_frame(pdf[~refused], ["host"], "ts", aggs, SPECS[shape])
    assert clean_rej["reason"].str.startswith("in no window: ").all()
    pd.testing.assert_frame_equal(res.reset_index(drop=True), clean.reset_index(drop=True))


def test_a_monoid_that_cannot_take_a_plain_column_rejects_every_row() -> None:
    # the issue's `--agg "argmax(latency)" --agg count`: 0 windows and 0 rejects before
    pdf = _data().head(1_000)
    aggs = [Agg("argmax", monoids.get("argmax"), "latency"), *parse_aggs(["count"])]
    res, rej = window_frame(pdf, ["host"], "ts", aggs, {"size": "10 minutes"})
    assert len(res) == 0 and len(rej) == 1_000
    assert rej["reason"].str.contains("ArgMax").all()


def _stream_batches(
    aggs: list[Agg], shape: Shape, batches: list[pd.DataFrame], keys: list[str], time: str
) -> pd.DataFrame:
    """Feed *batches* to one key's streaming step, its state through the stored bytes
    (meta + pieces) between micro-batches; the rejects it packed."""
    from windowagg.spark.streaming import _Step

    step = _Step(keys, time, aggs, shape, "s", max_out_of_orderness=60_000_000)
    meta: bytes | None = None
    pieces: dict[int, bytes] = {}
    rejects = []
    for batch in batches:
        packed, deltas = step.feed(step.stream(meta, pieces), batch)
        for d in deltas:
            meta = d.meta
            d.apply(pieces)
        rejects += [p[p["reason"].notna()] for p in packed if p["reason"].notna().any()]
    return pd.concat(rejects, ignore_index=True)


def test_streaming_rejects_refused_values() -> None:
    pdf = _data().sort_values("ts").reset_index(drop=True)
    pdf = pdf[pdf["host"] == "a"].reset_index(drop=True)
    aggs = [Agg("s", NoThirteens(), "latency"), *parse_aggs(["count"])]
    shape = Shape(size=600_000_000, slide=60_000_000)
    batches = [pdf.iloc[lo : lo + 100] for lo in range(0, len(pdf), 100)]
    rej = _stream_batches(aggs, shape, batches, ["host"], "ts")
    refused = pdf["latency"].astype(int) % 100 == 13
    assert len(rej) == refused.sum()
    assert rej["reason"].str.startswith("bad_value: ValueError").all()
    assert sorted(json.loads(r)["latency"] for r in rej["row"]) == sorted(
        pdf.loc[refused, "latency"].tolist()
    )


@pytest.mark.parametrize("agg", ["max(v)", "mean(v)", "p50(v)", "stddev(v)"])
@pytest.mark.parametrize("slide", [10_000_000, None])
def test_non_finite_values_are_bad_value_rejects_nan_and_inf_alike(
    agg: str, slide: int | None
) -> None:
    vs: list[Any] = [1.0, float("nan"), float("inf"), 2.0, float("-inf"), 3.0]
    pdf = pd.DataFrame(
        {
            "k": ["x"] * 6,
            "t": pd.date_range("2024-01-01", periods=6, freq="1s", tz="UTC"),
            "v": vs,
        }
    )
    spec = {"size": "1 minute", "slide": None if slide is None else f"{slide} us"}
    res, rej = window_frame(pdf, ["k"], "t", [agg, "count"], spec)
    assert rej["reason"].tolist() == [
        "bad_value: non-finite value in 'v': nan",
        "bad_value: non-finite value in 'v': inf",
        "bad_value: non-finite value in 'v': -inf",
    ]
    assert np.isfinite(res.iloc[:, -2]).all()
    assert res["count"].max() == 3
    # as text (a CSV read without a schema) and as a nullable column: the same rule
    text = pdf.assign(v=["1", "NaN", "inf", "2", "-Infinity", None])
    _, rej_t = window_frame(text, ["k"], "t", [agg], spec)
    assert [r.split(":")[0] for r in rej_t["reason"]] == ["bad_value"] * 3 + ["null value in 'v'"]
    nullable = pdf.assign(v=pd.array([1.0, None, 2.0, 3.0, 4.0, 5.0], dtype="Float64"))
    _, rej_n = window_frame(nullable, ["k"], "t", [agg], spec)
    assert rej_n["reason"].tolist() == ["null value in 'v'"]


def test_late_rejects_read_iso_times_and_carry_the_flat_row() -> None:
    t0 = pd.Timestamp("2013-02-04T18:00:00.000001", tz="UTC")
    shape = Shape(size=600_000_000, slide=60_000_000)
    aggs = parse_aggs(["max(v)", "count"])
    first = pd.DataFrame({"k": ["x", "x"], "t": [t0, t0 + pd.Timedelta(hours=1)], "v": [1.0, 2.0]})
    late = pd.DataFrame({"k": ["x"], "t": [t0 - pd.Timedelta(minutes=1)], "v": [3.0]})
    rej = _stream_batches(aggs, shape, [first, late], ["k"], "t")
    assert rej["reason"].tolist() == [
        "late: 2013-02-04T17:59:00.000001Z < lateness bound 2013-02-04T18:59:00.000001Z"
    ]
    assert json.loads(rej["row"][0]) == {"k": "x", "t": "2013-02-04T17:59:00.000001Z", "v": 3.0}


@pytest.mark.parametrize("bad", [False, True])
def test_late_rejects_beside_bad_rows_keep_their_own_times_and_rows(bad: bool) -> None:
    """A micro-batch whose rows are all good (the clean path: no rejects frame built) and
    one with bad rows before the late ones (the good rows' positions map back to the
    batch): each late reject reads its own time and row."""
    t0 = pd.Timestamp("2013-02-04T18:00:00", tz="UTC")
    shape = Shape(size=600_000_000, slide=60_000_000)
    aggs = parse_aggs(["max(v)", "count"])
    first = pd.DataFrame({"k": ["x", "x"], "t": [t0, t0 + pd.Timedelta(hours=1)], "v": [1.0, 2.0]})
    minutes = [3, 1, 2] if bad else [1, 2]
    vs = [float("nan"), 3.0, 4.0] if bad else [3.0, 4.0]
    late = pd.DataFrame(
        {"k": ["x"] * len(vs), "t": [t0 - pd.Timedelta(minutes=m) for m in minutes], "v": vs}
    )
    rej = _stream_batches(aggs, shape, [first, late], ["k"], "t")
    lates = rej[rej["reason"].str.startswith("late")]
    assert [json.loads(r)["v"] for r in lates["row"]] == [3.0, 4.0]
    assert [r.split(" < ")[0] for r in lates["reason"]] == [
        "late: 2013-02-04T17:59:00Z",
        "late: 2013-02-04T17:58:00Z",
    ]
    assert len(rej) == len(lates) + bad
