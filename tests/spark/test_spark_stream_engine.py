"""Streaming on the batch engine, on a real local SparkSession: with late-but-accepted
events, the final revision of every window equals ``windowagg.pandas.window_agg`` (hopping
and per-event windows), and the state is stored as deltas in a MapState (Spark's state reader
shows, for hopping windows of monoids, one piece per pane holding its partial aggregates and
the tree's nodes above them; for the event log, one piece per micro-batch holding exactly that batch's events)."""

from __future__ import annotations

import os

import numpy as np
import pandas as pd
import pytest

pytestmark = pytest.mark.spark

pyspark = pytest.importorskip("pyspark")

AGGS = ["max(value)", "sum(value)", "count", "p95(value)", "median(value)"]
#: Monoids only: hopping windows keep pane partials (windows.engine.panes)
MONOIDS = ["max(value)", "sum(value)", "count", "mean(value)"]
FILES = 4


def write_input(folder: str, seed: int = 5, stragglers: bool = True) -> pd.DataFrame:
    """FILES files (mtimes increasing), 2 keys, each file 5 minutes of event time, plus
    (with *stragglers*) events from 5-10 minutes earlier: behind the watermark (OOO 30 s),
    inside the allowed lateness (1 hour), so they revise windows already emitted. Times are
    distinct per key (a per-event or count window is then named by its end)."""
    rng = np.random.default_rng(seed)
    os.makedirs(folder)
    parts = []
    used: dict[int, set[int]] = {1: set(), 2: set()}
    for i in range(FILES):
        rows = []
        for key in (1, 2):
            ts = sorted(rng.choice(np.arange(i * 300, i * 300 + 300), 40, replace=False).tolist())
            if i and stragglers:  # 3 events 5-10 minutes behind this file's start
                ts += rng.choice(np.arange(i * 300 - 600, i * 300 - 300), 3, replace=False).tolist()
            ts = [t for t in ts if t not in used[key]]
            used[key].update(ts)
            rows += [(key, t, float(rng.integers(1, 100))) for t in ts]
        part = pd.DataFrame(rows, columns=["key", "s", "value"])
        part["key"] = part["key"].astype("int32")
        part["t"] = pd.to_datetime(part.pop("s") * 1_000_000, unit="us", utc=True)
        p = os.path.join(folder, f"part-{i:03d}.parquet")
        part.to_parquet(p, index=False, coerce_timestamps="us")
        os.utime(p, (1_000_000 + i, 1_000_000 + i))
        parts.append(part.assign(file=i))
    return pd.concat(parts, ignore_index=True)


def run(spark, tmp_path, name: str, stragglers: bool = True, aggs=AGGS, **shape):
    from windowagg.spark import split, stream_window_agg

    folder = str(tmp_path / f"in-{name}")
    pdf = write_input(folder, stragglers=stragglers)
    sdf = (
        spark.readStream.schema("key int, value double, t timestamp")
        .option("maxFilesPerTrigger", 1)
        .parquet(folder)
    )
    out = stream_window_agg(
        sdf,
        "key",
        "t",
        aggs,
        max_out_of_orderness="30 seconds",
        allowed_lateness="1 hour",
        api="transformWithStateInPandas",
        **shape,
    )
    ckpt = str(tmp_path / f"ck-{name}")
    q = (
        out.writeStream.format("parquet")
        .outputMode("append")
        .option("path", str(tmp_path / f"out-{name}"))
        .option("checkpointLocation", ckpt)
        .trigger(availableNow=True)
        .start()
    )
    q.awaitTermination()
    assert q.exception() is None
    res, rej = split(spark.read.parquet(str(tmp_path / f"out-{name}")))
    return pdf, res.toPandas(), rej.toPandas(), ckpt


def final_revisions(res: pd.DataFrame, by: list[str]) -> pd.DataFrame:
    res = res.sort_values([*by, "revision"])
    for _, g in res.groupby(by):  # each window's revisions come out as 0, 1, 2, ...
        assert g["revision"].tolist() == list(range(len(g)))
    return res.groupby(by).tail(1).sort_values(["key", "window_end"]).reset_index(drop=True)


def final_sessions(res: pd.DataFrame) -> pd.DataFrame:
    """The sessions no session of a higher revision of the same key contains."""
    from tests.windows.engine_oracle import superseded_sessions_dropped

    final = superseded_sessions_dropped(res, "window_start", "window_end", by=["key"])
    return final.sort_values(["key", "window_end"]).reset_index(drop=True)


def batch_closed(pdf: pd.DataFrame, aggs=AGGS, **shape) -> pd.DataFrame:
    """The batch answer for the windows the per-key watermark (max t - 30 s) closed."""
    from windowagg.pandas import window_agg

    b = window_agg(pdf.drop(columns="file"), "key", "t", aggs, **shape).results
    wm = pdf.groupby("key")["t"].max() - pd.Timedelta(seconds=30)
    b = b[b["window_end"] <= b["key"].map(wm)]
    for c in ("window_start", "window_end"):
        b[c] = b[c].dt.tz_localize(None)
    return b.sort_values(["key", "window_end"]).reset_index(drop=True)


def assert_equal(
    final: pd.DataFrame, batch: pd.DataFrame, at_least: int = 40, quantiles: bool = True
) -> None:
    cols = ["key", "window_start", "window_end", "max_value", "count"]
    cols += ["p95_value", "median_value"] if quantiles else ["mean_value"]
    assert len(final) == len(batch) > at_least
    pd.testing.assert_frame_equal(
        final[cols].astype({"key": "int64"}),
        batch[cols].astype({"key": "int64"}),
        check_dtype=False,
    )
    np.testing.assert_allclose(final["sum_value"], batch["sum_value"], rtol=1e-12)


@pytest.mark.parametrize(
    ("shape", "aggs"),
    [
        ({"size": "10 minutes", "slide": "1 minute"}, MONOIDS),
        ({"size": "10 minutes", "slide": "1 minute"}, AGGS),
        ({"size": "2 minutes"}, AGGS),
    ],
    ids=["hopping-panes", "hopping-quantiles", "per_event"],
)
def test_final_revisions_equal_the_batch_answer_and_state_is_deltas(spark, tmp_path, shape, aggs):
    name = ("hop" if "slide" in shape else "event") + str(len(aggs))
    pdf, res, rej, ckpt = run(spark, tmp_path, name, aggs=aggs, **shape)
    assert rej.empty  # every straggler is within the allowed lateness
    by = ["key", "window_start"] if "slide" in shape else ["key", "window_end"]
    assert (res["revision"] > 0).sum() > 5  # the stragglers revised emitted windows
    panes = aggs is MONOIDS
    assert_equal(final_revisions(res, by), batch_closed(pdf, aggs, **shape), quantiles=not panes)
    from windowagg import codec
    from windowagg.windows.engine.records import decode_events

    for batch_id in range(FILES):
        state = (
            spark.read.format("statestore")
            .option("stateVarName", "pieces")
            .option("batchId", batch_id)
            .load(ckpt)
            .toPandas()
        )
        for key in (1, 2):
            mine = [
                (int(k["piece"]), bytes(v["bytes"]))
                for g, k, v in zip(
                    state["key"], state["user_map_key"], state["user_map_value"], strict=True
                )
                if g["key"] == key
            ]
            seen = pdf[(pdf["key"] == key) & (pdf["file"] <= batch_id)]
            if panes:
                # one piece per pane (1 minute; key node_key(0, pane)) holding its partials:
                # max, sum, count, mean (nothing is evicted yet: the allowed lateness is 1
                # hour), and above them the tree's nodes, each the sum of its panes' counts
                us = seen["t"].dt.tz_localize(None).astype("datetime64[us]").astype("int64")
                minutes = (us // 60_000_000).value_counts()
                counts = {p >> 6: codec.loads(b)[1][2] for p, b in mine if p & 63 == 0}
                assert counts == minutes.to_dict()
                for p, b in mine:
                    level, i = p & 63, p >> 6
                    under = [c for m, c in counts.items() if m >> level == i]
                    assert codec.loads(b)[1][2] == sum(under)
            else:
                # the event log: one piece per micro-batch (no event is dead yet) holding
                # that batch's events of the key, nothing more
                assert len(mine) == batch_id + 1
                sizes = [len(decode_events(b, ["value"]).t) for _, b in mine]
                per_file = pdf[pdf["key"] == key].groupby("file").size().tolist()
                assert sorted(sizes) == sorted(per_file[: batch_id + 1])


def test_sessions_and_count_windows_end_as_the_batch_answer(spark, tmp_path):
    """Sessions (stragglers bridge emitted sessions: the merged one supersedes them) and
    count windows (in-order input: a count window is named by its last event) through the
    same Spark streaming path; the final answers equal the batch engine's closed windows."""
    shape = {"gap": "20 seconds"}
    pdf, res, rej, _ = run(spark, tmp_path, "session", **shape)
    assert rej.empty and (res["revision"] > 0).any()
    assert_equal(final_sessions(res), batch_closed(pdf, **shape), at_least=10)
    shape = {"rows": 12, "every": 5}
    pdf, res, rej, _ = run(spark, tmp_path, "count", stragglers=False, **shape)
    assert rej.empty and (res["revision"] == 0).all()
    assert_equal(final_revisions(res, ["key", "window_end"]), batch_closed(pdf, **shape))
