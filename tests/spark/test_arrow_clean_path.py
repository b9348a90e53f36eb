"""``batch.clean_arrays`` (a clean partition's Arrow rows straight to the engine, no pandas
for the values) gives what ``windowagg.pandas.frame_windows`` gives for the same rows, one
key or many, and declines any batch in which validation would find a reject. No Spark
session needed."""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pytest

pytest.importorskip("pyspark")

from windowagg.pandas import FrameWindows, frame_windows, grouped_windows, parse
from windowagg.spark.batch import clean_arrays
from windowagg.windows.engine import Shape

AGGS = parse(["max(v)", "sum(v)", "count", "mean(v)", "p90(v)", "median(v)"])
SHAPES = [
    Shape(size=600_000_000, slide=10_000_000),
    Shape(size=300_000_000),
    Shape(rows=50, every=7),
    Shape(gap=2_000_000),
]


def _table(n: int, key: Any, tz: str | None, seed: int = 0) -> pa.Table:
    rng = np.random.default_rng(seed)
    t = rng.integers(0, 3_600_000_000, n)
    t[::10] = t[1::10][: len(t[::10])]  # simultaneous events
    return pa.table(
        {
            "k": pa.array([key] * n),
            "t": pa.array(t, type=pa.timestamp("us", tz=tz)),
            "v": pa.array(rng.normal(size=n).round(2)),
        }
    )


@pytest.mark.parametrize("key", [7, "x"])
@pytest.mark.parametrize("tz", ["UTC", None])
@pytest.mark.parametrize("shape", SHAPES)
def test_clean_path_equals_the_pandas_path(key: Any, tz: str | None, shape: Shape) -> None:
    table = _table(2000, key, tz)
    clean = clean_arrays(table, ["k"], "t", ["v"])
    assert clean is not None
    groups, micros, values = clean
    fast = grouped_windows(groups, micros, values, AGGS, shape)
    slow = frame_windows(table.to_pandas(), ["k"], "t", AGGS, shape)
    assert fast.keys == slow.keys
    # clean rows: the only rejects are a count window's last events, which complete no
    # window ("in no window: ..."), the same on both paths
    tail = 2000 % shape.every if shape.rows is not None else 0
    assert fast.rejected.tolist() == slow.rejected.tolist() and len(fast.rejected) == tail
    assert fast.reasons == slow.reasons
    assert all(r.startswith("in no window: ") for r in fast.reasons)
    _same_windows(fast, slow)


def test_clean_path_declines_input_with_rejects() -> None:
    table = _table(100, 1, "UTC")
    assert clean_arrays(table.slice(0, 0), ["k"], "t", ["v"]) is None
    v = table.column("v").to_pylist()
    for bad in (float("nan"), float("inf"), None):
        v[5] = bad
        assert clean_arrays(table.set_column(2, "v", pa.array(v)), ["k"], "t", ["v"]) is None
    t = table.column("t").to_pylist()
    t[3] = None
    bad_t = table.set_column(1, "t", pa.array(t, type=pa.timestamp("us", tz="UTC")))
    assert clean_arrays(bad_t, ["k"], "t", ["v"]) is None
    null_key = table.set_column(0, "k", pa.array([1, None] * 50))
    assert clean_arrays(null_key, ["k"], "t", ["v"]) is None
    float_key = table.set_column(0, "k", pa.array([1.5] * 100))
    assert clean_arrays(float_key, ["k"], "t", ["v"]) is None
    text = table.set_column(1, "t", pa.array(["2024-01-01"] * 100))
    assert clean_arrays(text, ["k"], "t", ["v"]) is None
    corrupt = table.append_column("_corrupt_record", pa.nulls(100, pa.string()))
    assert clean_arrays(corrupt, ["k"], "t", ["v"]) is None
    fw = frame_windows(bad_t.to_pandas(), ["k"], "t", AGGS, SHAPES[0])
    assert fw.reasons == ["null timestamp"] and fw.rejected.tolist() == [3]


@pytest.mark.parametrize("shape", SHAPES)
def test_many_keys_in_one_partition(shape: Shape) -> None:
    """A partition holds many keys, in no order: the same groups, keys and columns as the
    pandas path, over one and two key columns."""
    rng = np.random.default_rng(3)
    base = _table(3000, 0, "UTC", seed=3)
    table = base.set_column(0, "k", pa.array(rng.choice(["b", "a", "c"], 3000)))
    table = table.append_column("k2", pa.array(rng.integers(0, 4, 3000).astype(np.int32)))
    for keys in (["k"], ["k", "k2"]):
        clean = clean_arrays(table, keys, "t", ["v"])
        assert clean is not None
        groups, micros, values = clean
        assert sorted(groups.rows.tolist()) == list(range(3000))
        fast = grouped_windows(groups, micros, values, AGGS, shape)
        slow = frame_windows(table.to_pandas(), keys, "t", AGGS, shape)
        assert fast.keys == slow.keys and len(fast.keys) == (3 if keys == ["k"] else 12)
        assert fast.firsts == slow.firsts
        _same_windows(fast, slow)


def _same_windows(a: FrameWindows, b: FrameWindows) -> None:
    assert a.columns.keys() == b.columns.keys()
    assert a.sizes.tolist() == b.sizes.tolist()
    for c in a.columns:
        np.testing.assert_array_equal(np.asarray(a.columns[c]), np.asarray(b.columns[c]))
