"""Decayed quantiles and heavy hitters on Spark: Spark batch gives the answers of
``windowagg.pandas`` on one fixed out-of-order frame, and ``decayed_summary`` (one summary
per partition, merged) is within its bound of the exact decayed answer. One Spark test."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

pytestmark = pytest.mark.spark

pyspark = pytest.importorskip("pyspark")

AGGS = [
    "decayed_p90(v, half_life=30 min)",
    "decayed_p50(v, decay=poly(2), unit=1 min) as pm",
    "top_k(code, 3, half_life=1h, eps=0.2)",
]
HOUR = 3_600_000_000


OUT = ["decayed_p90_v", "pm", "top_k_code"]


def test_spark_batch_parity_and_the_whole_stream_summary(spark, decay_frame, by_window):
    from pyspark.sql import functions as F

    from windowagg.errors import ArgumentError
    from windowagg.pandas import window_agg as local
    from windowagg.spark import decayed_summary
    from windowagg.spark import window_agg as batch

    pdf = decay_frame
    sdf = spark.createDataFrame(pdf)
    for shape in ({}, {"size": "1 hour", "slide": "20 minutes"}):
        want = by_window(local(pdf, "k", "t", AGGS, **shape).results, OUT)
        got = by_window(batch(sdf, "k", "t", AGGS, **shape).results.toPandas(), OUT)
        assert len(got) == len(want) > 50
        pd.testing.assert_frame_equal(got[want.columns[:3]], want[want.columns[:3]])
        np.testing.assert_allclose(got[["decayed_p90_v", "pm"]], want[["decayed_p90_v", "pm"]])
        for g, w in zip(got["top_k_code"], want["top_k_code"], strict=True):
            gv, wv = json.loads(g), json.loads(w)
            assert [x for x, _ in gv] == [x for x, _ in wv]
            np.testing.assert_allclose([y for _, y in gv], [y for _, y in wv], rtol=1e-12)

    # the whole stream, 4 partitions, two rows rejected (a null time, a null origin)
    bad = pd.DataFrame({"t": [None, pdf["t"].iloc[0]], "origin": ["JFK", None]})
    rows = pd.concat([pdf[["t", "origin", "v"]], bad], ignore_index=True)
    rows["v"] = rows["v"].fillna(1.0)
    sdf = spark.createDataFrame(rows, "t timestamp, origin string, v double").repartition(4)
    t_us = (pdf["t"].astype("int64") // 1000).to_numpy()
    newest = int(t_us.max())
    w = 2.0 ** (-(newest - t_us) / (6 * HOUR))
    d = math.fsum(w)
    exact = {o: math.fsum(w[pdf["origin"].to_numpy() == o]) for o in set(pdf["origin"])}
    heaviest = sorted(exact, key=lambda o: -exact[o])
    r = decayed_summary(sdf, "t", "origin", half_life="6 hours", k=3, eps=0.25)
    assert (r.method, r.error, r.as_of, r.rows, r.rejects) == (
        "exact",  # top_k's default: Spark's own aggregation, error 0
        0.0,
        newest,
        len(pdf),
        {"null event time": 1, "null value in 'origin'": 1},
    )
    assert abs(r.total - d) <= 1e-9 * d
    assert [o for o, _ in r.answer] == heaviest[:3]
    for o, weight in r.answer:
        assert weight == pytest.approx(exact[o], rel=1e-9)
    r.summary._check()  # a Space-Saving summary of the exact weights: the heaviest held
    held = r.summary.frequency_bounds("s:" + heaviest[0])  # text keys as summarize makes them
    assert held == pytest.approx((exact[heaviest[0]],) * 2, rel=1e-9)
    r = decayed_summary(sdf, "t", "origin", half_life="6 hours", k=3, eps=0.25, method="summary")
    assert (r.method, r.as_of, r.rows, r.rejects) == (
        "summary",
        newest,
        len(pdf),
        {"null event time": 1, "null value in 'origin'": 1},
    )
    assert abs(r.total - d) <= 1e-9 * d and r.error == pytest.approx(0.25 * d)
    assert [o for o, _ in r.answer] == heaviest[:3]
    for o, weight in r.answer:  # Space-Saving: an upper bound, within eps D
        assert exact[o] - 1e-9 * d <= weight <= exact[o] + r.error + 1e-9 * d
    # as of an hour before the newest event, on a timestamp_ntz column: the events after it
    # are rejects, and both methods read the wall clock alike
    ntz = sdf.select(F.col("t").cast("timestamp_ntz").alias("t"), "origin")
    at = newest - HOUR
    late = int((t_us > at).sum())
    both = [
        decayed_summary(ntz, "t", "origin", half_life="6 hours", k=3, as_of=at, method=m)
        for m in ("exact", "summary")
    ]
    for got in both:
        assert (got.as_of, got.rows, got.rejects["event time after as_of"]) == (
            at,
            len(pdf) - late,
            late,
        )
    assert [o for o, _ in both[0].answer] == [o for o, _ in both[1].answer]
    for (_, x), (_, y) in zip(both[0].answer, both[1].answer, strict=True):
        assert x <= y + 1e-9 * d  # the summary's weights are upper bounds
    none = decayed_summary(sdf.where(F.col("origin").isNull()), "t", "origin", half_life="1h")
    assert (none.method, none.answer, none.rows, none.rejects) == (
        "exact",
        [],
        0,
        {"null value in 'origin'": 1},  # the null-time row has an origin: not in this frame
    )
    with pytest.raises(ArgumentError, match="method='exact' answers kind='top_k' only"):
        decayed_summary(sdf, "t", "v", half_life="1 hour", kind="quantiles", method="exact")
    q = decayed_summary(sdf, "t", "v", half_life="6 hours", kind="quantiles", eps=0.02)
    timed = rows[rows["t"].notna()]  # the null-origin row counts here: v is its value
    tq = (timed["t"].astype("int64") // 1000).to_numpy()
    wq, v = 2.0 ** (-(newest - tq) / (6 * HOUR)), timed["v"].to_numpy()
    dq = math.fsum(wq)
    for phi, x in q.answer.items():
        assert math.fsum(wq[v < x]) <= (phi + 0.02) * dq * (1 + 1e-9)
        assert math.fsum(wq[v <= x]) >= (phi - 0.02) * dq * (1 - 1e-9)
    assert q.rows == len(pdf) + 1 and q.rejects == {"null event time": 1}
