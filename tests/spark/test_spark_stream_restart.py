"""A streaming query restarted from its checkpoint with a changed parameter is refused.

Restarted with another ``half_life``, a query used to mix both (of 84 windows, 45 used
the old half-life and 39 the new): each key's state is now restored only under the
configuration it was written for (``KeyStream.config``: the window shape, lateness,
emission, every aggregation with its own parameters, the time column and unit), and a
changed one fails the query with windowagg's ``CodecError`` naming both values.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

pytestmark = pytest.mark.spark

pytest.importorskip("pyspark")


def _parts(n: int = 600, files: int = 4) -> list[pd.DataFrame]:
    rng = np.random.default_rng(36)
    t = np.sort(rng.integers(0, 3 * 3600, n))
    pdf = pd.DataFrame(
        {
            "key": rng.integers(0, 2, n).astype("int32"),
            "t": pd.to_datetime(t * 1_000_000, unit="us", utc=True),
            "value": rng.normal(10.0, 3.0, n).round(2),
        }
    )
    return [pdf.iloc[p] for p in np.array_split(np.arange(n), files)]


def _query(spark, folder, api, half_life):
    from windowagg.spark import stream_window_agg

    sdf = (
        spark.readStream.schema("key int, t timestamp, value double")
        .option("maxFilesPerTrigger", 1)
        .parquet(str(folder))
    )
    return stream_window_agg(
        sdf,
        "key",
        "t",
        [f"ewm_mean(value, half_life={half_life})", "count"],
        size="10 minutes",
        slide="5 minutes",
        api=api,
    )


@pytest.mark.parametrize("api", ["transformWithStateInPandas", "applyInPandasWithState"])
def test_a_restart_with_another_half_life_is_refused(
    spark, tmp_path, api, arrival_files, run_to_end
):
    parts = _parts()
    arrival_files(tmp_path / "in", parts[:2])
    first = run_to_end(_query(spark, tmp_path / "in", api, "1h"), tmp_path)
    assert len(first.results) > 10
    arrival_files(tmp_path / "in2", parts[2:])  # more input, in files the first run never saw
    for i, p in enumerate(sorted((tmp_path / "in2").iterdir())):
        p.rename(tmp_path / "in" / f"part-{i + 2:03d}.parquet")
    with pytest.raises(Exception, match="the query changed since its stream state") as e:
        run_to_end(_query(spark, tmp_path / "in", api, "30min"), tmp_path)
    text = str(e.value)
    assert "half_life=3600000000.0" in text and "half_life=1800000000.0" in text
    assert "CodecError" in text and "new checkpoint location" in text
    # nothing of the refused run reached the sink; the first run's parameters go on
    again = run_to_end(_query(spark, tmp_path / "in", api, "1h"), tmp_path)
    assert len(again.results) > len(first.results)
    assert not again.results.duplicated(["key", "window_start"]).any()


def _earlier_layout(spark, folder):
    """The query windowagg built before 2026-11-28 (evening), rebuilt from today's parts:
    the windowagg operator grouped by the keys alone (no null-key mask column), and a
    second read of the source (then: the null keys' branch) unioned with its output."""
    from pyspark.sql import functions as F

    from windowagg.call import parse_call
    from windowagg.spark.batch import prepare
    from windowagg.spark.streaming import WindowAggProcessor, packed_schema, unpack

    def read():
        return (
            spark.readStream.schema("key int, t timestamp, value double")
            .option("maxFilesPerTrigger", 1)
            .parquet(str(folder))
        )

    wc = parse_call("key", "t", ["count"], size="10 minutes", slide="5 minutes")
    prepared = prepare(read(), wc.keys, "t", wc.aggs)
    packed = prepared.groupBy("key").transformWithStateInPandas(
        statefulProcessor=WindowAggProcessor(["key"], "t", wc.aggs, wc.shape, "s"),
        outputStructType=packed_schema([prepared.schema["key"]], wc.outputs),
        outputMode="Append",
        timeMode="None",
    )
    out = unpack(packed, ["key"], wc.outputs)
    other = read().filter(F.lit(False))  # the second source, no rows
    other = other.select([F.lit(None).cast(f.dataType).alias(f.name) for f in out.schema])
    return out.unionByName(other)


def test_a_checkpoint_of_an_earlier_layout_is_refused_in_windowaggs_words(
    spark, tmp_path, arrival_files, run_to_end
):
    from windowagg.errors import CodecError
    from windowagg.spark import check_checkpoint, stream_window_agg

    parts = _parts(files=2)
    arrival_files(tmp_path / "in", parts)
    old = run_to_end(_earlier_layout(spark, tmp_path / "in"), tmp_path / "old")
    assert len(old.results) > 10
    now = stream_window_agg(
        spark.readStream.schema("key int, t timestamp, value double").parquet(str(tmp_path / "in")),
        "key",
        "t",
        ["count"],
        size="10 minutes",
        slide="5 minutes",
    )
    # Spark refuses the restart before windowagg runs, in its own words ...
    with pytest.raises(Exception, match=r"There are \[2\] sources in the checkpoint"):
        run_to_end(now, tmp_path / "old")
    # ... and check_checkpoint says it in windowagg's, from the files or through Spark
    for how in ({}, {"spark": spark}):
        with pytest.raises(CodecError, match="new checkpoint location") as e:
            check_checkpoint(old.checkpoint, **how)
        text = str(e.value)
        assert "groups by the keys alone" in text and "read 2 sources" in text
    # today's layout, and a location with nothing yet, restart
    new = run_to_end(now, tmp_path / "new")
    assert len(new.results) == len(old.results)
    for how in ({}, {"spark": spark}):
        check_checkpoint(new.checkpoint, **how)
        check_checkpoint(str(tmp_path / "nothing"), **how)
