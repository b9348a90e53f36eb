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
    r = decayed_summary(sdf, "t", "origin", half_life="6 hours", k=3, eps=0.25)
    assert (r.as_of, r.rows, r.rejects) == (
        newest,
        len(pdf),
        {"null event time": 1, "null value in 'origin'": 1},
    )
    exact = {o: math.fsum(w[pdf["origin"].to_numpy() == o]) for o in set(pdf["origin"])}
    assert abs(r.total - d) <= 1e-9 * d and r.error == pytest.approx(0.25 * d)
    assert [o for o, _ in r.answer] == sorted(exact, key=lambda o: -exact[o])[:3]
    for o, weight in r.answer:  # Space-Saving: an upper bound, within eps D
        assert exact[o] - 1e-9 * d <= weight <= exact[o] + r.error + 1e-9 * d
    q = decayed_summary(sdf, "t", "v", half_life="6 hours", kind="quantiles", eps=0.02)
    timed = rows[rows["t"].notna()]  # the null-origin row counts here: v is its value
    tq = (timed["t"].astype("int64") // 1000).to_numpy()
    wq, v = 2.0 ** (-(newest - tq) / (6 * HOUR)), timed["v"].to_numpy()
    dq = math.fsum(wq)
    for phi, x in q.answer.items():
        assert math.fsum(wq[v < x]) <= (phi + 0.02) * dq * (1 + 1e-9)
        assert math.fsum(wq[v <= x]) >= (phi - 0.02) * dq * (1 - 1e-9)
    assert q.rows == len(pdf) + 1 and q.rejects == {"null event time": 1}
