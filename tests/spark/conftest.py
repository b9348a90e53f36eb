"""The ONE local SparkSession of the test session (about 6-10 s to start), shared by all
Spark tests; tests that need it request the ``spark`` fixture."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from typing import Any

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
