"""``windowagg.spark``'s lazy entry points are the functions, whatever was imported first."""

from __future__ import annotations

import subprocess
import sys

import pytest

pytest.importorskip("pyspark")

ORDERS = [
    "from windowagg.spark import session",
    "import windowagg.spark as S; session = S.session",
    "import windowagg.spark.batch, windowagg.spark.streaming\n"
    "from windowagg.spark import session, window_agg, stream_window_agg, split",
    "from windowagg.spark import window_agg\nfrom windowagg.spark import session",
]


@pytest.mark.parametrize("code", ORDERS)
def test_session_is_the_function_not_a_module(code: str) -> None:
    # README's and docs/spark.md's first Spark line raised "'module' object is not
    # callable": the lazy import loaded a submodule named like the function
    check = (
        code
        + "\nimport types, windowagg.spark as S"
        + "\nassert callable(session) and not isinstance(session, types.ModuleType), session"
        + "\nassert S.session is session and S.session.__name__ == 'session'"
        + "\nassert callable(S.window_agg) and callable(S.stream_window_agg)"
    )
    out = subprocess.run([sys.executable, "-c", check], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
