"""windowagg.spark batch on a real local SparkSession: parity with Spark's own F.window and
with windowagg.pandas; exact quantiles and user monoids; rejects routed with reasons.
(Every shape against windowagg.pandas, with bad rows: ``test_batch_parity.py``.)"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

pytestmark = pytest.mark.spark

pyspark = pytest.importorskip("pyspark")

from pyspark.sql import functions as F  # noqa: E402

from windowagg.monoids import Concat  # noqa: E402
from windowagg.pandas import window_agg as local_window_agg  # noqa: E402


def events(n: int = 6000, keys: int = 4, seed: int = 5) -> pd.DataFrame:
    """Out-of-order events with duplicate timestamps, over ~2 hours."""
    rng = np.random.default_rng(seed)
    t = np.sort(rng.integers(0, 7_200, n)) + rng.integers(-30, 30, n)  # seconds
    t[::50] = t[1::50][: len(t[::50])]  # duplicate timestamps
    return pd.DataFrame(
        {
            "key": rng.integers(0, keys, n).astype("int32"),
            "t": pd.to_datetime(t * 1_000_000, unit="us"),
            "value": rng.gamma(2.0, 10.0, n).round(3),
        }
    )


def spark_fwindow(df, size: str, slide: str):
    return (
        df.groupBy("key", F.window("t", size, slide))
        .agg(
            F.max("value").alias("max_value"),
            F.min("value").alias("min_value"),
            F.sum("value").alias("sum_value"),
            F.avg("value").alias("mean_value"),
            F.count("*").alias("count"),
        )
        .select(
            "key",
            F.col("window.start").alias("window_start"),
            F.col("window.end").alias("window_end"),
            "max_value",
            "min_value",
            "sum_value",
            "mean_value",
            "count",
        )
    )


def sort(pdf: pd.DataFrame) -> pd.DataFrame:
    return pdf.sort_values(["key", "window_start"]).reset_index(drop=True)


def test_batch_equals_spark_f_window_and_local_pandas(spark):
    from windowagg.spark import window_agg

    pdf = events()
    df = spark.createDataFrame(pdf)
    aggs = ["max(value)", "min(value)", "sum(value)", "mean(value)", "count"]
    out = window_agg(df, "key", "t", aggs, size="10 minutes", slide="1 minute")
    ours = sort(out.results.toPandas())
    theirs = sort(spark_fwindow(df, "10 minutes", "1 minute").toPandas())
    assert len(out.rejects.toPandas()) == 0
    assert len(ours) == len(theirs) > 400
    exact = ["key", "window_start", "window_end", "max_value", "min_value", "count"]
    pd.testing.assert_frame_equal(ours[exact], theirs[exact])
    np.testing.assert_allclose(ours["sum_value"], theirs["sum_value"], rtol=1e-12)
    np.testing.assert_allclose(ours["mean_value"], theirs["mean_value"], rtol=1e-12)
    local = local_window_agg(pdf, "key", "t", aggs, size="10 minutes", slide="1 minute").results
    local["window_start"] = local["window_start"].dt.tz_localize(None)
    local["window_end"] = local["window_end"].dt.tz_localize(None)
    pd.testing.assert_frame_equal(sort(local)[exact], ours[exact], check_dtype=False)


def test_quantiles_and_user_monoid_match_local_run(spark):
    from windowagg.spark import window_agg

    pdf = events(1500, keys=2)
    df = spark.createDataFrame(pdf)
    aggs = ["p95(value)", "count", ("seq", Concat(), "value", "array<double>")]
    out = window_agg(df, "key", "t", aggs, size="30 minutes", slide="10 minutes")
    ours = sort(out.results.toPandas())
    local = local_window_agg(pdf, "key", "t", aggs, size="30 minutes", slide="10 minutes")
    local = sort(local.results)
    assert ours["p95_value"].tolist() == local["p95_value"].tolist()
    assert [list(x) for x in ours["seq"]] == [list(x) for x in local["seq"]]
    # the Concat windows hold exactly the events in [start, end), in event-time order
    for r in ours.sample(20, random_state=1).itertuples():
        sel = pdf[(pdf.key == r.key) & (pdf.t >= r.window_start) & (pdf.t < r.window_end)]
        assert sorted(r.seq) == sorted(sel["value"].tolist()) and r.count == len(sel)
        vals = np.sort(sel["value"].to_numpy())  # p95 exact: the ceil(0.95 n)-th smallest
        assert r.p95_value == vals[-(-95 * len(vals) // 100) - 1]


def test_rejects_are_routed_with_reasons_from_a_csv(spark, tmp_path):
    from windowagg.spark import window_agg

    csv = tmp_path / "in.csv"
    csv.write_text(
        "key,t,value\n"
        "a,2024-01-01T00:00:01,1.5\n"
        "a,2024-01-01T00:00:02,2.5\n"
        ",2024-01-01T00:00:03,3.0\n"
        "a,not-a-time,4.0\n"
        "a,2024-01-01T00:00:05,NaN\n"
        "a,2024-01-01T00:00:06,abc\n"
        "a,2024-01-01T00:00:07\n"
        "b,2024-01-01T00:00:08,8.0,extra,fields\n"
        "b,,9.0\n"
    )
    df = (
        spark.read.option("header", True)
        .option("mode", "PERMISSIVE")
        .option("columnNameOfCorruptRecord", "_corrupt_record")
        .schema("key string, t string, value string, _corrupt_record string")
        .csv(str(csv))
    ).cache()
    out = window_agg(
        df,
        "key",
        "t",
        ["sum(value)", "count"],
        size="10 seconds",
        slide="10 seconds",
        row_columns="*",
    )
    res = out.results.toPandas()
    rej = out.rejects.toPandas().sort_values("reason").reset_index(drop=True)
    assert res["sum_value"].tolist() == [4.0] and res["count"].tolist() == [2]
    reasons = sorted(rej["reason"])
    assert reasons == sorted(
        [
            "null key key",
            "unparsable timestamp 'not-a-time'",
            "bad_value: non-finite value in 'value': nan",
            "not a number in 'value': 'abc'",
            "malformed record",
            "malformed record",
            "null timestamp",
        ]
    ), reasons
    rows = [json.loads(r) for r in rej["row"]]
    assert any(r.get("t") == "not-a-time" for r in rows)
    assert rej["row_index"].is_unique and rej["row_index"].notna().all()
    assert len(res["count"]) + 0 == 1 and int(res["count"].sum()) + len(rej) == 9


def test_a_pandas_frame_above_1_mb_is_distributed_not_kept_in_the_plan(spark):
    """session() lowers Spark's Arrow local-relation threshold (48 MB) to 1 MB: a larger
    pandas frame goes to the executors once, one partition per Arrow batch, instead of a
    ``LocalRelation`` whose rows every job serialises into its tasks again (~2.5 s per job
    for 1M rows on local[2]); a small one stays local."""
    big = events(100_000, keys=10)  # ~2 MB as Arrow
    df = spark.createDataFrame(big)
    plan = df._jdf.queryExecution().analyzed().getClass().getSimpleName()
    assert plan != "LocalRelation", plan
    assert df.rdd.getNumPartitions() == 10  # batches of 10,000 rows (the fixture's)
    assert df.count() == len(big)
    small = spark.createDataFrame(events(1_000))
    assert small._jdf.queryExecution().analyzed().getClass().getSimpleName() == "LocalRelation"
