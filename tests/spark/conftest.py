"""The ONE local SparkSession of the test session (about 6-10 s to start), shared by all
Spark tests; tests that need it request the ``spark`` fixture.

Beside it, the set-up the Spark test files share (each a fixture that hands out a function):

=================  ===========================================================================
``arrival_files``  ``arrival_files(folder, parts)``: each part one Parquet file, mtimes
                   increasing, so that Spark's file source reads them in that order (one
                   micro-batch per file with ``maxFilesPerTrigger=1``)
``run_to_end``     ``run_to_end(stream, where)``: a streaming output written to Parquet under
                   *where* (``out/``, checkpoint ``ck/``) with ``availableNow``, the query's
                   failure raised; returns the query, results and rejects (pandas)
``decay_frame``    the out-of-order frame with duplicate times of the decayed-aggregation
                   parity tests (300 rows, keys 0-2, six hours)
``by_window``      ``by_window(res, columns)``: results with naive microsecond window bounds
                   and int32 keys ``k``, in (key, window) order, for comparing front ends
=================  ===========================================================================
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import pandas as pd
import pytest


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    pytest.importorskip("pyspark")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from windowagg.spark import session

    s = session(
        "local[2]",
        "windowagg-tests",
        driver_memory="2g",
        conf={"spark.sql.execution.arrow.maxRecordsPerBatch": "10000"},
    )
    yield s
    s.stop()


def _write_arrivals(folder: str | Path, parts: Sequence[pd.DataFrame]) -> None:
    os.makedirs(folder, exist_ok=True)
    for i, part in enumerate(parts):
        p = os.path.join(folder, f"part-{i:03d}.parquet")
        part.to_parquet(p, index=False, coerce_timestamps="us", allow_truncated_timestamps=True)
        os.utime(p, (1_000_000 + i, 1_000_000 + i))  # the file source's order: by mtime


@pytest.fixture
def arrival_files() -> Callable[[str | Path, Sequence[pd.DataFrame]], None]:
    return _write_arrivals


class Drained(NamedTuple):
    """A streaming query run to the end of its input, and what it wrote."""

    query: Any
    results: pd.DataFrame
    rejects: pd.DataFrame
    checkpoint: str


@pytest.fixture
def run_to_end(spark: Any) -> Callable[[Any, Path], Drained]:
    from windowagg.spark import split

    def run(stream: Any, where: Path) -> Drained:
        sink, ckpt = str(where / "out"), str(where / "ck")
        q = (
            stream.writeStream.format("parquet")
            .outputMode("append")
            .option("path", sink)
            .option("checkpointLocation", ckpt)
            .trigger(availableNow=True)
            .start()
        )
        q.awaitTermination()
        assert q.exception() is None
        res, rej = split(spark.read.parquet(sink))
        return Drained(q, res.toPandas(), rej.toPandas(), ckpt)

    return run


@pytest.fixture
def decay_frame() -> pd.DataFrame:
    rng = np.random.default_rng(30)
    n = 300
    secs = np.sort(rng.integers(0, 6 * 3600, n)) + rng.integers(-300, 300, n)  # out of order
    secs[10:14] = secs[10]  # duplicate times
    return pd.DataFrame(
        {
            "k": rng.integers(0, 3, n).astype("int32"),
            "t": pd.to_datetime(secs * 1_000_000, unit="us", utc=True),
            "v": rng.normal(20.0, 8.0, n).round(3),
            "code": rng.integers(0, 12, n).astype(float),
            "origin": rng.choice(
                ["EWR", "JFK", "LGA", "BOS", "SFO"], n, p=[0.4, 0.3, 0.2, 0.05, 0.05]
            ),
        }
    )


def _by_window(res: pd.DataFrame, columns: Sequence[str]) -> pd.DataFrame:
    res = res.copy()
    for c in ("window_start", "window_end"):
        res[c] = pd.to_datetime(res[c], utc=True).dt.tz_localize(None).astype("datetime64[us]")
    res["k"] = res["k"].astype("int32")
    cols = ["k", "window_start", "window_end", *columns]
    return res[cols].sort_values(cols[:3], kind="stable").reset_index(drop=True)


@pytest.fixture
def by_window() -> Callable[[pd.DataFrame, Sequence[str]], pd.DataFrame]:
    return _by_window
