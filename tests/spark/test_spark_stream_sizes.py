"""Several window sizes in one Spark streaming query (issue 30): with late-but-accepted
events, the final revision of every row equals ``windowagg.pandas.window_agg`` with the same
list of sizes, column by column, on both layouts (issue 37: monoids on the pane tree)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

pytestmark = pytest.mark.spark

pyspark = pytest.importorskip("pyspark")


@pytest.mark.parametrize(
    "aggs",
    [["max(value)", "count", "p95(value)"], ["max(value)", "count", "sum(value)"]],
    ids=["panes-values", "panes"],
)
def test_two_sizes_in_one_stream_end_as_the_batch_call(
    spark, tmp_path, arrival_files, run_to_end, aggs
):
    """Both take the pane layout (the largest size's tree answers both sizes); with an
    exact quantile the panes' values answer it too, one cursor per size."""
    from windowagg.pandas import parse
    from windowagg.windows.engine import KeyStream, Shape

    minute = 60_000_000
    shape = Shape(size=3 * minute, slide=minute, sizes=(minute, 3 * minute))
    layout = KeyStream(parse(aggs), shape).layout
    assert layout == "panes"
    from windowagg.pandas import window_agg
    from windowagg.spark import stream_window_agg

    rng = np.random.default_rng(30)
    parts = []
    for i in range(3):  # 3 files of 5 minutes of two keys, the later ones with stragglers
        ts = rng.integers(i * 300 - (200 if i else 0), i * 300 + 300, 60)
        parts.append(
            pd.DataFrame(
                {
                    "key": rng.integers(1, 3, 60).astype("int32"),
                    "t": pd.to_datetime(ts * 1_000_000, unit="us", utc=True),
                    "value": rng.integers(1, 100, 60).astype(float),
                }
            )
        )
    arrival_files(tmp_path / "in", parts)
    sdf = (
        spark.readStream.schema("key int, value double, t timestamp")
        .option("maxFilesPerTrigger", 1)
        .parquet(str(tmp_path / "in"))
    )
    sizes = {"size": ["1 minute", "3 minutes"], "slide": "1 minute"}
    out = stream_window_agg(
        sdf, "key", "t", aggs, max_out_of_orderness="30 seconds", allowed_lateness="1 hour",
        api="transformWithStateInPandas", **sizes,
    )  # fmt: skip
    drained = run_to_end(out, tmp_path / "q")
    res, rej = drained.results, drained.rejects
    assert rej.empty and (res["revision"] > 0).any()  # stragglers revised emitted rows
    res = res.sort_values(["key", "window_end", "revision"]).groupby(["key", "window_end"])
    final = res.tail(1).sort_values(["key", "window_end"]).reset_index(drop=True)
    pdf = pd.concat(parts, ignore_index=True)
    batch = window_agg(pdf, "key", "t", aggs, **sizes).results
    wm = pdf.groupby("key")["t"].max() - pd.Timedelta(seconds=30)  # what the stream closed
    batch = batch[batch["window_end"] <= batch["key"].map(wm)].reset_index(drop=True)
    names = [a.split("(")[0] + ("_value" if "(" in a else "") for a in aggs]
    cols = [f"{a}_{s}" for a in names for s in ("1m", "3m")]
    assert len(final) == len(batch) > 10
    for c in cols:
        np.testing.assert_array_equal(final[c].to_numpy(float), batch[c].to_numpy(float), c)
    ends = batch["window_end"].dt.tz_localize(None)
    assert final["window_end"].tolist() == ends.tolist()
