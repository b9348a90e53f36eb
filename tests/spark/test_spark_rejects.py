"""On Spark: values a monoid refuses and non-finite numbers are rejects with their original
row (flat JSON, ISO UTC times at full precision), in batch and streaming; Parquet output
reads back tz-aware UTC."""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

import pytest

from windowagg.monoids import Sum

pytestmark = pytest.mark.spark


class NoThirteens(Sum):
    name = "no_thirteens"

    def lift(self, x: Any) -> Any:
        if int(x) % 100 == 13:
            raise ValueError(f"unlucky value {x}")
        return x


def _rows(n: int) -> list[tuple[Any, ...]]:
    t0 = dt.datetime(2024, 3, 1, 0, 0, 0, 123456)
    return [("ab"[i % 2], t0 + dt.timedelta(seconds=7 * i), float(i)) for i in range(n)]


@pytest.mark.parametrize("slide", ["1 minute", None])
def test_batch_rejects_values_a_user_monoid_refuses(spark: Any, slide: str | None) -> None:
    from windowagg.spark import window_agg

    df = spark.createDataFrame(_rows(2_000), "k string, t timestamp, v double")
    out = window_agg(
        df,
        "k",
        "t",
        [("s", NoThirteens(), "v"), "max(v)", "count"],
        size="10 minutes",
        slide=slide,
        row_columns="*",
    )
    rej = out.rejects.toPandas()
    assert len(rej) == 20  # 13, 113, ..., 1913: none vanished
    assert rej["reason"].str.startswith("bad_value: ValueError: unlucky value").all()
    rows = [json.loads(r) for r in rej["row"]]
    assert set(rows[0]) == {"k", "t", "v"}
    assert all(r["t"].endswith(".123456Z") for r in rows)  # full precision, UTC
    assert sorted(r["v"] for r in rows) == [float(i) for i in range(13, 2_000, 100)]
    res = out.results.toPandas()
    assert res["count"].max() > 0


def test_batch_nulls_nan_and_inf_in_a_double_column(spark: Any, tmp_path: Any) -> None:
    from windowagg.spark import window_agg

    t = dt.datetime(2024, 3, 1)
    data = [("a", t, 1.0), ("a", t, None), ("a", t, float("nan")), ("a", t, float("inf"))]
    df = spark.createDataFrame(data, "k string, t timestamp, v double")
    out = window_agg(df, "k", "t", ["max(v)"], size="1 minute", slide="1 minute")
    assert sorted(out.rejects.toPandas()["reason"]) == [
        "bad_value: non-finite value in 'v': inf",
        "bad_value: non-finite value in 'v': nan",
        "null value in 'v'",
    ]
    out.results.write.parquet(str(tmp_path / "res"))
    import pandas as pd

    res = pd.read_parquet(tmp_path / "res")
    assert res["max_v"].tolist() == [1.0]
    assert str(res["window_end"].dt.tz) == "UTC"  # tz-aware, as the pandas path


@pytest.mark.parametrize("api", ["applyInPandasWithState", "transformWithStateInPandas"])
def test_streaming_rejects_values_a_user_monoid_refuses(
    spark: Any, tmp_path: Any, api: str
) -> None:
    from windowagg.spark import split, stream_window_agg

    src = tmp_path / "in"
    spark.createDataFrame(_rows(400), "k string, t timestamp, v double").write.parquet(str(src))
    sdf = spark.readStream.schema("k string, t timestamp, v double").parquet(str(src))
    out = stream_window_agg(
        sdf,
        "k",
        "t",
        [("s", NoThirteens(), "v"), "count"],
        size="10 minutes",
        slide="1 minute",
        row_columns="*",
        api=api,
    )
    q = (
        out.writeStream.format("parquet")
        .option("path", str(tmp_path / "out"))
        .option("checkpointLocation", str(tmp_path / "ckpt"))
        .trigger(availableNow=True)
        .start()
    )
    q.awaitTermination()
    _, rejects = split(spark.read.parquet(str(tmp_path / "out")))
    rej = rejects.toPandas()
    rows = [json.loads(r) for r in rej["row"]]
    assert all(set(r) == {"k", "t", "v"} for r in rows), rows[0]  # flat: no nested "_3"
    assert sorted(r["v"] for r in rows) == [13.0, 113.0, 213.0, 313.0]
    assert rej["reason"].str.startswith("bad_value: ValueError").all()


def _far_rows() -> list[tuple[Any, ...]]:
    """ISO text times of years 1 and 3000 (Spark parses them), a time in a hopping gap and
    one past year 9999 (issue 26)."""
    return [
        ("a", "3000-01-01T00:00:00", 1.0),
        ("a", "3000-01-01T00:00:05", 2.0),  # between [0 s, 5 s) and [10 s, 15 s): no window
        ("a", "0001-01-01T00:00:01", 4.0),
        ("a", "10000-01-01T00:00:00", 8.0),
    ]


def test_batch_reads_years_1_to_9999_and_rejects_rows_in_no_window(spark: Any) -> None:
    import pandas as pd

    from windowagg.pandas import window_agg as local
    from windowagg.spark import window_agg

    df = spark.createDataFrame(_far_rows(), "k string, t string, v double").coalesce(1)
    pdf = pd.DataFrame(_far_rows(), columns=["k", "t", "v"])
    for kw in ({"size": "5 seconds", "slide": "10 seconds"}, {"rows": 2, "every": 2}):
        out = window_agg(df, "k", "t", ["sum(v)", "count"], row_columns="*", **kw)
        want = local(pdf, "k", "t", ["sum(v)", "count"], row_columns="*", **kw)
        res = sorted(
            (r["window_start"], r["window_end"], r["sum_v"], r["count"])
            # through Arrow: PySpark's own collect() cannot convert year 1 (fromtimestamp)
            for r in out.results.toArrow().to_pylist()
        )
        ws = want.results
        assert res == sorted(
            zip(
                [t.to_pydatetime() for t in ws["window_start"]],
                [t.to_pydatetime() for t in ws["window_end"]],
                ws["sum_v"].tolist(),
                ws["count"].tolist(),
                strict=True,
            )
        )
        rej = sorted(
            (r["row_index"], r["reason"], r["row"]) for r in out.rejects.toArrow().to_pylist()
        )
        assert [(i, why) for i, why, _ in rej] == list(
            zip(want.rejects["row_index"], want.rejects["reason"], strict=True)
        )
        assert [json.loads(row) for _, _, row in rej] == [
            {"k": "a", "t": t, "v": v} for _, t, v in (_far_rows()[i] for i, _, _ in rej)
        ]  # the original row
    hop = local(pdf, "k", "t", ["count"], size="5 seconds", slide="10 seconds").rejects
    assert hop["reason"].str.startswith(("in no window: 3000-01-01T00:00:05Z", "unparsable")).all()
    count = local(pdf, "k", "t", ["count"], rows=2, every=2).rejects
    assert count["reason"].str.startswith(("in no window: ", "unparsable")).all()
    assert len(count) == 2  # the row past 9999, and the 3rd of 3 events: no 2nd pair


def test_streaming_reads_far_years_and_rejects_rows_in_no_window(spark: Any, tmp_path: Any) -> None:
    from windowagg.spark import split, stream_window_agg

    src = tmp_path / "in"
    spark.createDataFrame(_far_rows(), "k string, t string, v double").write.parquet(str(src))
    sdf = spark.readStream.schema("k string, t string, v double").parquet(str(src))
    out = stream_window_agg(
        sdf, "k", "t", ["sum(v)", "count"], size="5 seconds", slide="10 seconds", row_columns="*"
    )
    q = (
        out.writeStream.format("parquet")
        .option("path", str(tmp_path / "out"))
        .option("checkpointLocation", str(tmp_path / "ckpt"))
        .trigger(availableNow=True)
        .start()
    )
    q.awaitTermination()
    results, rejects = split(spark.read.parquet(str(tmp_path / "out")))
    rej = sorted((r["reason"], json.loads(r["row"])["t"]) for r in rejects.toArrow().to_pylist())
    assert rej == [
        (
            "in no window: 3000-01-01T00:00:05Z lies between the hopping windows "
            "[3000-01-01T00:00:00Z, 3000-01-01T00:00:05Z) and [3000-01-01T00:00:10Z, "
            "3000-01-01T00:00:15Z) (size < slide leaves gaps); make slide <= size to cover "
            "every time",
            "3000-01-01T00:00:05",
        ),
        ("unparsable timestamp '10000-01-01T00:00:00'", "10000-01-01T00:00:00"),
    ]
    # the watermark (3000-01-01) closed the year-1 window; the year-3000 one stays open
    res = [(r["window_start"], r["sum_v"], r["count"]) for r in results.toArrow().to_pylist()]
    assert res == [(dt.datetime(1, 1, 1, tzinfo=dt.UTC), 4.0, 1)]
