"""``batch.clean_groups`` (Arrow straight to the window computation, for clean input)
equals the pandas path (``frames.window_groups``), and declines input with rejects."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from windowagg.spark.batch import clean_groups, make_spec
from windowagg.spark.frames import window_groups
from windowagg.spark.spec import parse_aggs

AGGS = parse_aggs(["max(v)", "sum(v)", "count", "mean(v)", "min(v)"])


def _table(n, key, tz, seed=0):
    rng = np.random.default_rng(seed)
    t = rng.integers(0, 3_600_000_000, n)
    return pa.table(
        {
            "k": pa.array([key] * n),
            "t": pa.array(t, type=pa.timestamp("us", tz=tz)),
            "v": pa.array(rng.normal(size=n)),
        }
    )


def _same(a, b):
    assert len(a) == len(b)
    for (ka, ca), (kb, cb) in zip(a, b, strict=True):
        assert ka == kb and ca.keys() == cb.keys()
        for c in ca:
            np.testing.assert_array_equal(np.asarray(ca[c]), np.asarray(cb[c]))


@pytest.mark.parametrize("key", [7, "x"])
@pytest.mark.parametrize("tz", ["UTC", None])
@pytest.mark.parametrize(
    "spec",
    [make_spec("10 minutes", "10 seconds"), make_spec("5 minutes"), make_spec(rows=50, every=7)],
)
def test_clean_path_equals_pandas_path(key, tz, spec):
    table = _table(3000, key, tz)
    fast = clean_groups(table, ["k"], "t", AGGS, spec)
    assert fast is not None
    groups, rejects = window_groups(table.to_pandas(), ["k"], "t", AGGS, spec)
    _same(fast[0], groups)
    assert len(fast[1]) == 0 and len(rejects) == 0
    assert list(fast[1].columns) == list(rejects.columns)


def test_clean_path_declines_input_with_rejects():
    spec = make_spec("10 minutes", "10 seconds")
    table = _table(100, 1, "UTC")
    assert clean_groups(table.slice(0, 0), ["k"], "t", AGGS, spec) is None
    v = table.column("v").to_pylist()
    v[5] = float("nan")
    assert clean_groups(table.set_column(2, "v", pa.array(v)), ["k"], "t", AGGS, spec) is None
    v[5] = None
    assert clean_groups(table.set_column(2, "v", pa.array(v)), ["k"], "t", AGGS, spec) is None
    t = table.column("t").to_pylist()
    t[3] = None
    bad_t = table.set_column(1, "t", pa.array(t, type=pa.timestamp("us", tz="UTC")))
    assert clean_groups(bad_t, ["k"], "t", AGGS, spec) is None
    two_keys = table.set_column(0, "k", pa.array([1, 2] * 50))
    assert clean_groups(two_keys, ["k"], "t", AGGS, spec) is None
    text = table.set_column(1, "t", pa.array(["2024-01-01"] * 100))
    assert clean_groups(text, ["k"], "t", AGGS, spec) is None
    corrupt = table.append_column("_corrupt_record", pa.nulls(100, pa.string()))
    assert clean_groups(corrupt, ["k"], "t", AGGS, spec) is None
    groups, rejects = window_groups(bad_t.to_pandas(), ["k"], "t", AGGS, spec)
    assert len(rejects) == 1 and rejects["reason"][0] == "null timestamp"
    assert sum(len(c["end"]) for _, c in groups) > 0
