"""Streaming on the batch engine, on a real local SparkSession: with late-but-accepted
events, the final revision of every window equals ``windowagg.pandas.window_agg`` (hopping
and per-event windows), and the state is stored as deltas in a MapState (Spark's state reader
shows, for hopping windows of monoids, one piece per pane holding its partial aggregates and
the tree's nodes above them; for the event log, one piece per micro-batch holding exactly that batch's events)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

pytestmark = pytest.mark.spark

pyspark = pytest.importorskip("pyspark")

AGGS = ["max(value)", "sum(value)", "count", "p95(value)", "median(value)"]
#: Monoids only: hopping windows keep pane partials (windows.engine.panes)
MONOIDS = ["max(value)", "sum(value)", "count", "mean(value)"]
FILES = 4


def input_parts(seed: int = 5, stragglers: bool = True) -> list[pd.DataFrame]:
    """FILES parts in arrival order, 2 keys, each part 5 minutes of event time, plus
    (with *stragglers*) events from 5-10 minutes earlier: behind the watermark (OOO 30 s),
    inside the allowed lateness (1 hour), so they revise windows already emitted. Times are
    distinct per key (a per-event or count window is then named by its end)."""
    rng = np.random.default_rng(seed)
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
        parts.append(part)
    return parts


@pytest.fixture
def run(spark, tmp_path, arrival_files, run_to_end):
    """``run(name, stragglers, aggs, **shape)``: the input (with each row's ``file``), the
    stream's results and rejects, and its checkpoint."""
    from windowagg.spark import stream_window_agg

    def go(name: str, stragglers: bool = True, aggs=AGGS, **shape):
        parts = input_parts(stragglers=stragglers)
        arrival_files(tmp_path / f"in-{name}", parts)
        sdf = (
            spark.readStream.schema("key int, value double, t timestamp")
            .option("maxFilesPerTrigger", 1)
            .parquet(str(tmp_path / f"in-{name}"))
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
        drained = run_to_end(out, tmp_path / name)
        pdf = pd.concat([p.assign(file=i) for i, p in enumerate(parts)], ignore_index=True)
        return pdf, drained.results, drained.rejects, drained.checkpoint

    return go


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
        ({"size": "2 minutes"}, MONOIDS),
    ],
    ids=["hopping-panes", "hopping-quantiles", "per_event", "per_event-trailing"],
)
def test_final_revisions_equal_the_batch_answer_and_state_is_deltas(spark, run, shape, aggs):
    name = ("hop" if "slide" in shape else "event") + str(len(aggs))
    pdf, res, rej, ckpt = run(name, aggs=aggs, **shape)
    assert rej.empty  # every straggler is within the allowed lateness
    by = ["key", "window_start"] if "slide" in shape else ["key", "window_end"]
    assert (res["revision"] > 0).sum() > 5  # the stragglers revised emitted windows
    panes = "slide" in shape  # hopping: the pane layout (exact quantiles: values per pane)
    quantiles = aggs is not MONOIDS
    assert_equal(final_revisions(res, by), batch_closed(pdf, aggs, **shape), quantiles=quantiles)
    from windowagg import codec
    from windowagg.spark.tws_state import key_state
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
            rows = {
                int(k["piece"]): bytes(v["bytes"])
                for g, k, v in zip(
                    state["key"], state["user_map_key"], state["user_map_value"], strict=True
                )
                if g["key"] == key
            }
            meta, by_key = key_state(rows)  # the head row's metadata and inline pieces too
            assert meta is not None
            mine = sorted(by_key.items())
            seen = pdf[(pdf["key"] == key) & (pdf["file"] <= batch_id)]
            if panes:
                # one piece per pane (1 minute; key node_key(0, pane)) holding its partials:
                # max, sum, count, mean (nothing is evicted yet: the allowed lateness is 1
                # hour), and above them the tree's nodes, each the sum of its panes' counts
                us = seen["t"].dt.tz_localize(None).astype("datetime64[us]").astype("int64")
                minutes = (us // 60_000_000).value_counts()
                counts = {p >> 6: codec.loads(b)[1][2] for p, b in mine if p & 63 == 0}
                assert counts == minutes.to_dict()
                values = {p >> 6 for p, _ in mine if p & 63 == 63}
                assert values == (set(counts) if quantiles else set())
                for p, b in mine:
                    level, i = p & 63, p >> 6
                    if level == 63:  # a pane's values for the quantiles: sorted, one per event
                        got = np.frombuffer(codec.loads(b), "<f8")  # one column
                        assert len(got) == counts[i] and (np.diff(got) >= 0).all()
                        continue
                    under = [c for m, c in counts.items() if m >> level == i]
                    assert codec.loads(b)[1][2] == sum(under)
            elif not quantiles:
                # the trailing layout (per-event windows of monoids): event chunks, one
                # per micro-batch or the newest extended while small, holding the key's
                # events so far (no event is dead yet)
                assert all(p & 63 == 62 for p, _ in mine) and len(mine) <= batch_id + 1
                held = sum(len(decode_events(b, ["value"]).t) for _, b in mine)
                assert held == len(seen)
            else:
                # the event log: one piece per micro-batch (no event is dead yet) holding
                # that batch's events of the key, nothing more
                assert len(mine) == batch_id + 1
                sizes = [len(decode_events(b, ["value"]).t) for _, b in mine]
                per_file = pdf[pdf["key"] == key].groupby("file").size().tolist()
                assert sorted(sizes) == sorted(per_file[: batch_id + 1])


def test_sessions_and_count_windows_end_as_the_batch_answer(run):
    """Sessions (stragglers bridge emitted sessions: the merged one supersedes them) and
    count windows (in-order input: a count window is named by its last event) through the
    same Spark streaming path; the final answers equal the batch engine's closed windows."""
    shape = {"gap": "20 seconds"}
    pdf, res, rej, _ = run("session", **shape)
    assert rej.empty and (res["revision"] > 0).any()
    assert_equal(final_sessions(res), batch_closed(pdf, **shape), at_least=10)
    shape = {"rows": 12, "every": 5}
    pdf, res, rej, _ = run("count", stragglers=False, **shape)
    assert rej.empty and (res["revision"] == 0).all()
    assert_equal(final_revisions(res, ["key", "window_end"]), batch_closed(pdf, **shape))


def test_the_in_process_stream_gives_the_spark_streams_rows(
    spark, tmp_path, arrival_files, run_to_end
):
    """``windowagg.stream`` fed the same micro-batches (one file each) emits what
    ``stream_window_agg`` emits, row for row: the same columns, every revision, and the same
    rejects (too late for the allowed lateness: the same reasons, times and row JSON). The
    late rows come first in their micro-batch: the in-process stream judges rows in input
    order, Spark against the bound before the micro-batch (docs/stream.md, docs/spark.md),
    and for a micro-batch's first rows the two bounds are the same."""
    import windowagg
    from windowagg.spark import stream_window_agg

    parts = input_parts(seed=9)
    for i, part in enumerate(parts[1:], start=1):  # per key one row 20 minutes behind: late
        late = part.groupby("key", as_index=False).head(1).copy()
        late["t"] = late["t"] - pd.Timedelta(minutes=20) - pd.Timedelta(seconds=i)
        parts[i] = pd.concat([late, part], ignore_index=True)
    kw = dict(
        size="10 minutes",
        slide="1 minute",
        max_out_of_orderness="30 seconds",
        allowed_lateness="15 minutes",
    )
    arrival_files(tmp_path / "in", parts)
    sdf = (
        spark.readStream.schema("key int, value double, t timestamp")
        .option("maxFilesPerTrigger", 1)
        .parquet(str(tmp_path / "in"))
    )
    out = stream_window_agg(sdf, "key", "t", AGGS, api="transformWithStateInPandas", **kw)
    drained = run_to_end(out, tmp_path / "spark")

    s = windowagg.stream("key", "t", AGGS, **kw)
    fed = [s.feed(p[["key", "value", "t"]]) for p in parts]
    res = pd.concat([f.results for f in fed], ignore_index=True)
    rej = pd.concat([f.rejects for f in fed], ignore_index=True)

    ident = ["key", "window_start", "window_end", "revision"]
    got, want = drained.results, res
    assert list(got.columns) == list(want.columns)
    assert (want["revision"] > 0).sum() > 5 and len(want) > 40
    for c in ("window_start", "window_end"):
        want[c] = want[c].dt.tz_localize(None)
    got = got.sort_values(ident).reset_index(drop=True).astype({"key": "int64"})
    want = want.sort_values(ident).reset_index(drop=True).astype({"key": "int64"})
    pd.testing.assert_frame_equal(got, want, check_dtype=False)

    assert len(rej) == 2 * (len(parts) - 1)  # the late rows, each rejected once
    want_rej = rej[["reason", "event_time", "row"]].assign(
        event_time=lambda f: f["event_time"].dt.tz_localize(None)
    )
    got_rej = drained.rejects[["reason", "event_time", "row"]]
    order = ["event_time", "row"]
    pd.testing.assert_frame_equal(
        got_rej.sort_values(order).reset_index(drop=True),
        want_rej.sort_values(order).reset_index(drop=True),
        check_dtype=False,
    )
