"""The Spark benchmarks' data and session, shared by ``bench_spark``, ``bench_spark_batch``
and ``probe_spark_batch``: N out-of-order events over 100 keys (key int, event_time
timestamp, value ~ Gamma(2, 10)), spread over 24 h with +-30 s jitter, seed 42."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd


def generate(n: int, keys: int = 100, seed: int = 42) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    day = 24 * 3600 * 1_000_000
    base = np.linspace(0, day, n, endpoint=False).astype(np.int64)
    jitter = rng.integers(-30_000_000, 30_000_001, n)
    t = base + jitter + 1_700_000_000_000_000 // day * day
    return pd.DataFrame(
        {
            "key": rng.integers(0, keys, n).astype("int32"),
            "event_time": pd.to_datetime(t, unit="us"),
            "value": rng.gamma(2.0, 10.0, n),
        }
    )


def bench_session(name: str) -> Any:
    """The benchmarks' session: local[2], the session's shuffle partitions (its local
    default, one per core), Arrow batches of 10,000 rows, quiet logs."""
    from windowagg.spark import session

    spark = session(
        "local[2]",
        name,
        driver_memory="6g",
        conf={"spark.sql.execution.arrow.maxRecordsPerBatch": "10000"},
    )
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def hopping_frame(spark: Any, pdf: pd.DataFrame, work: Path) -> Any:
    """*pdf* through a Parquet file in *work* into a cached DataFrame of 2 even partitions."""
    from pyspark.sql import functions as F

    pdf.to_parquet(work / "events.parquet", index=False, coerce_timestamps="us")
    df = (
        spark.read.parquet(str(work / "events.parquet"))
        .withColumn("event_time", F.col("event_time").cast("timestamp"))
        # evenly over the 2 cores: the file is one Parquet row group, which Spark reads as
        # one full and one empty partition; F.window's map side (Expand, partial
        # aggregation) then ran on one core while windowagg's ran after its shuffle on two
        .repartition(2)
        .cache()
    )
    df.count()
    return df
