"""Reuse the one session-scoped SparkSession fixture of tests/spark/conftest.py."""

from __future__ import annotations

import importlib.util
from pathlib import Path

_spec = importlib.util.spec_from_file_location(
    "windowagg_tests_spark_conftest", Path(__file__).resolve().parents[1] / "spark" / "conftest.py"
)
assert _spec is not None and _spec.loader is not None
_mod = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_mod)
spark = _mod.spark
