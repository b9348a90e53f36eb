"""windowagg.spark streaming on a real local SparkSession: availableNow results equal the
batch results (both stateful APIs), and a query stopped mid-run and restarted from its
checkpoint emits every window exactly once."""

from __future__ import annotations

import time

import numpy as np
import pandas as pd
import pytest

pytestmark = pytest.mark.spark

pyspark = pytest.importorskip("pyspark")

AGGS = ["max(value)", "sum(value)", "count", "p95(value)"]
OOO = 60  # seconds of max out-of-orderness; the jitter below stays well inside it


def stream_input(n=8000, files=12, keys=3, seed=9):
    """Events in arrival order, event times jittered +-20 s, one null key; and their
    *files* parts, in arrival order."""
    rng = np.random.default_rng(seed)
    t = np.sort(rng.integers(0, 4 * 3600, n)) + rng.integers(-20, 20, n)
    pdf = pd.DataFrame(
        {
            "key": pd.array(rng.integers(0, keys, n), dtype="Int32"),
            "t": pd.to_datetime(t * 1_000_000, unit="us", utc=True),
            "value": rng.gamma(2.0, 10.0, n).round(2),
        }
    )
    pdf.loc[5, "key"] = pd.NA  # a null key: must come out as a reject
    return pdf, [pdf.iloc[part] for part in np.array_split(np.arange(n), files)]


def closed_batch_windows(pdf, **shape):
    """The batch engine's windows (windowagg.pandas.window_agg, the answer every streaming
    window's final revision must equal) that the per-key watermark (max t - OOO) closed."""
    from windowagg.pandas import window_agg

    shape = shape or {"size": "10 minutes", "slide": "1 minute"}
    b = window_agg(pdf, "key", "t", AGGS, **shape).results
    b["window_start"] = b["window_start"].dt.tz_localize(None)
    b["window_end"] = b["window_end"].dt.tz_localize(None)
    wm = pdf.dropna(subset=["key"]).groupby("key")["t"].max().dt.tz_localize(None) - pd.Timedelta(
        seconds=OOO
    )
    b = b[b["window_end"] <= b["key"].astype("int32").map(wm)]
    return b.sort_values(["key", "window_end", "window_start"]).reset_index(drop=True)


def windows_of(spark, folder, api, **shape):
    from windowagg.spark import stream_window_agg

    sdf = (
        spark.readStream.schema("key int, t timestamp, value double")
        .option("maxFilesPerTrigger", 2)
        .parquet(str(folder))
    )
    return stream_window_agg(
        sdf,
        "key",
        "t",
        AGGS,
        max_out_of_orderness=f"{OOO} seconds",
        api=api,
        **(shape or {"size": "10 minutes", "slide": "1 minute"}),
    )


def in_order(res):
    res = res.sort_values(["key", "window_end", "window_start"]).reset_index(drop=True)
    res["key"] = res["key"].astype("int32")
    return res


def assert_same(stream, batch):
    cols = ["key", "window_start", "window_end", "max_value", "count", "p95_value"]
    assert len(stream) == len(batch) > 500
    assert (stream["revision"] == 0).all()  # nothing late: no window emitted twice
    batch = batch.assign(key=batch["key"].astype("int32"))
    pd.testing.assert_frame_equal(stream[cols], batch[cols], check_dtype=False)
    np.testing.assert_allclose(stream["sum_value"], batch["sum_value"], rtol=1e-12)


@pytest.mark.parametrize("api", ["transformWithStateInPandas", "applyInPandasWithState"])
def test_available_now_stream_equals_batch(spark, tmp_path, api, arrival_files, run_to_end):
    pdf, parts = stream_input()
    arrival_files(tmp_path / "in", parts)
    drained = run_to_end(windows_of(spark, tmp_path / "in", api), tmp_path)
    assert_same(in_order(drained.results), closed_batch_windows(pdf))
    assert drained.rejects["reason"].tolist() == ["null key key"]


def test_stopped_and_restarted_query_emits_each_window_exactly_once(
    spark, tmp_path, arrival_files, run_to_end
):
    pdf, parts = stream_input(seed=21)
    arrival_files(tmp_path / "in", parts)
    api = "transformWithStateInPandas"
    w = windows_of(spark, tmp_path / "in", api).writeStream.format("parquet")
    w = w.outputMode("append").option("path", str(tmp_path / "out"))
    w = w.option("checkpointLocation", str(tmp_path / "ck"))
    q = w.trigger(processingTime="1 second").start()
    deadline = time.time() + 240
    while time.time() < deadline:  # let a few micro-batches commit, then stop mid-run
        done = [p for p in q.recentProgress if p["numInputRows"] > 0]
        if len(done) >= 2:
            break
        q.awaitTermination(0.5)
    q.stop()
    committed = len([p for p in q.recentProgress if p["numInputRows"] > 0])
    assert 2 <= committed < 6, "the first run should have stopped before the end of the input"
    # the same sink and checkpoint (tmp_path/out, tmp_path/ck), to the end of the input
    drained = run_to_end(windows_of(spark, tmp_path / "in", api), tmp_path)
    assert sum(p["numInputRows"] for p in drained.query.recentProgress) > 0  # real work
    stream = in_order(drained.results)
    assert not stream.duplicated(["key", "window_start"]).any()
    assert_same(stream, closed_batch_windows(pdf))
    assert len(drained.rejects) == 1


@pytest.mark.parametrize("api", ["transformWithStateInPandas", "applyInPandasWithState"])
def test_null_keys_are_rejects_of_the_one_operator_even_alone_in_a_micro_batch(
    spark, tmp_path, api, arrival_files, run_to_end
):
    """Keys (a int, b string): rows with one null key (a or b) or both are rejects naming
    the first null key, their row as it came (a stays an integer; no trace of the null-key
    mask); a micro-batch of null-key rows only still emits its rejects (through the task's
    output flush); the other keys' windows equal the batch windows their watermark closed
    (their state kept under their own integer keys across micro-batches with null keys)."""
    import json

    from windowagg.pandas import window_agg
    from windowagg.spark import stream_window_agg

    base = pd.Timestamp("2024-05-01", tz="UTC")
    nulls = [(1, None, 50, 7.0), (None, None, 60, 8.0)]
    only_nulls = [(None, "x", 210, 9.0), (None, None, 220, 10.0), (1, None, 230, 11.0)]
    files = [
        [(1, "x", s, 1.0) for s in range(0, 200, 10)]
        + [(2, "y", s, 2.0) for s in range(0, 200, 15)]
        + nulls,
        only_nulls,
        [(1, "x", s, 3.0) for s in range(300, 500, 10)]
        + [(2, "y", s, 4.0) for s in range(300, 500, 15)],
    ]
    parts = []
    for rows in files:
        part = pd.DataFrame(rows, columns=["a", "b", "s", "value"])
        part["a"] = part["a"].astype("Int32")
        part["t"] = base + pd.to_timedelta(part.pop("s"), unit="s")
        parts.append(part)
    arrival_files(tmp_path / "in", parts)
    sdf = (
        spark.readStream.schema("a int, b string, value double, t timestamp")
        .option("maxFilesPerTrigger", 1)
        .parquet(str(tmp_path / "in"))
    )
    aggs = ["count", "sum(value)"]
    out = stream_window_agg(sdf, ["a", "b"], "t", aggs, size="1 minute", slide="1 minute", api=api)
    drained = run_to_end(out, tmp_path)
    assert len(drained.query.recentProgress) >= 3  # the null-only file was a micro-batch
    rejects = drained.rejects.sort_values("event_time").reset_index(drop=True)
    assert rejects["reason"].tolist() == [f"null key {k}" for k in "baaab"]
    rows = [json.loads(r) for r in rejects["row"]]
    assert [(r["a"], r["b"], r["value"]) for r in rows] == [
        (a, b, v) for a, b, _, v in nulls + only_nulls
    ]
    assert all(sorted(r) == ["a", "b", "t", "value"] for r in rows)
    assert type(rows[0]["a"]) is int
    everything = pd.concat(parts, ignore_index=True)
    batch = window_agg(everything, ["a", "b"], "t", aggs, size="1 minute", slide="1 minute")
    assert len(batch.rejects) == len(rejects)
    want = batch.results
    last = everything.dropna().groupby(["a", "b"])["t"].max().rename("last").reset_index()
    want = want.merge(last, on=["a", "b"])
    want = want[want["window_end"] <= want["last"]]
    key = ["a", "b", "window_start"]
    got = drained.results.assign(a=drained.results["a"].astype("int64"))
    got["window_start"] = pd.to_datetime(got["window_start"], utc=True)
    want = want.assign(a=want["a"].astype("int64"))
    got, want = (f.sort_values(key).reset_index(drop=True) for f in (got, want))
    assert len(got) == len(want) == 14
    pd.testing.assert_frame_equal(
        got[[*key, "count", "sum_value"]], want[[*key, "count", "sum_value"]], check_dtype=False
    )


def test_packed_output_unpacks_to_the_combined_rows(spark):
    """The streaming operator's packed rows (arrays per key, one row per reject) unpack
    in the JVM to exactly the windows of the engine's ``KeyStream`` and the rejects, late
    events (carried by identity: their own rows) and bad values included."""
    from pyspark.sql import types as T

    from windowagg.aggs import parse_aggs
    from windowagg.rejects import validate
    from windowagg.spark.streaming import _Step, packed_schema, unpack
    from windowagg.windows.engine import KeyStream, Shape

    aggs = parse_aggs(["max(value)", "sum(value)", "count"])
    shape = Shape(size=10_000_000)  # per-event (t - 10 s, t]
    t = pd.to_datetime(
        np.array([100, 103, 101, 90, 104, 104, 80, 106], dtype=np.int64) * 1_000_000,
        unit="us",
        utc=True,
    )
    pdf = pd.DataFrame(
        {"key": np.int32(7), "t": t, "value": [1.0, 2.0, np.nan, 4.0, 5.0, 6.0, 7.0, 8.0]}
    )
    step = _Step(["key"], "t", aggs, shape, "s", max_out_of_orderness=2_000_000)
    first, rest = pdf.iloc[:3], pdf.iloc[3:].reset_index(drop=True)
    _, deltas = step((7,), iter([first]), None)
    assert len(deltas) == 1 and len(deltas[0].put) == 1  # per-event: one chunk of events
    packed, deltas2 = step((7,), iter([rest]), deltas[0].meta, deltas[0].put)
    key_field = T.StructField("key", T.IntegerType(), True)
    got = unpack(
        spark.createDataFrame(packed[0], schema=packed_schema([key_field], aggs)), ["key"], aggs
    ).toPandas()
    ks = KeyStream(aggs, shape, max_out_of_orderness=2_000_000, judge="batch")
    for part in (first, rest):
        good, micros, values, _ = validate(part, ["key"], "t", ["value"])
        res, _ = ks.feed(micros[good], {"value": values["value"][good]})
    win = got[got["kind"] == "window"].reset_index(drop=True)
    rej = got[got["kind"] == "reject"].reset_index(drop=True)
    # 90 s and 80 s are older than the bound before the micro-batch (103 - 2 s); the
    # watermark (106 - 2 s) closed the windows of 103, 104, 104 (100 s: the first batch)
    assert len(win) == len(res.columns["end"]) == 3 and len(rej) == 2
    assert win["key"].tolist() == [7] * 3 and rej["key"].isna().all()
    end_us = win["window_end"].astype("datetime64[us]").astype("int64")
    assert end_us.tolist() == res.columns["end"].tolist()
    assert (win["window_start"] == win["window_end"] - pd.Timedelta(seconds=10)).all()
    for c in ("max_value", "sum_value", "count", "revision"):
        assert win[c].tolist() == list(res.columns[c])
    assert win["count"].tolist() == [2, 4, 4]  # both events at 104 s in each
    assert win["reason"].isna().all() and rej["window_end"].isna().all()
    assert rej["revision"].isna().all()
    assert rej["reason"].str.startswith("late: 1970-01-01T00:01:").tolist() == [True] * 2
    assert rej["reason"].str.endswith("< lateness bound 1970-01-01T00:01:41Z").all()
    # the late rows are the rows themselves (identity), not found again by value
    assert ['"value": 4.0' in r for r in rej["row"]] == [True, False]
    assert ['"value": 7.0' in r for r in rej["row"]] == [False, True]
    assert len(deltas2[0].put) == 1 and not deltas2[0].delete  # one more chunk


def test_event_time_timers_close_quiet_keys_and_route_late_rows(
    spark, tmp_path, arrival_files, run_to_end
):
    """Key 2 goes quiet after the first file: with event-time timers its windows are still
    all emitted once the stream's watermark (driven by key 1) passes them, and its later
    straggler, late against the global watermark, is a reject, not silently dropped."""
    from windowagg.spark import stream_window_agg, window_agg

    folder = tmp_path / "in"
    base = pd.Timestamp("2024-05-01", tz="UTC")
    files = [
        [(1, s, 1.0) for s in range(0, 300, 7)] + [(2, s, 2.0) for s in range(0, 300, 11)],
        [(1, s, 1.0) for s in range(1000, 1300, 7)],
        [(1, s, 1.0) for s in range(2000, 2300, 7)] + [(2, 250, 99.0)],  # key 2's straggler
        [(1, 4000, 1.0)],
    ]
    parts = []
    for rows in files:
        part = pd.DataFrame(rows, columns=["key", "s", "value"])
        part["key"] = part["key"].astype("int32")
        part["t"] = base + pd.to_timedelta(part.pop("s"), unit="s")
        parts.append(part)
    arrival_files(folder, parts)
    sdf = (
        spark.readStream.schema("key int, value double, t timestamp")
        .option("maxFilesPerTrigger", 1)
        .parquet(str(folder))
    )
    kw = dict(size="5 minutes", slide="1 minute")
    out = stream_window_agg(
        sdf,
        "key",
        "t",
        ["sum(value)", "count"],
        max_out_of_orderness="60 seconds",
        event_time_timers=True,
        **kw,
    )
    drained = run_to_end(out, tmp_path)
    stream, rejects, q = in_order(drained.results), drained.rejects, drained.query
    key2 = stream[stream["key"] == 2].reset_index(drop=True)
    # every window of key 2 (its own watermark stopped at 240 s: without timers the windows
    # ending after it would stay open forever), equal to the batch result without the straggler
    first = spark.read.parquet(str(folder / "part-000.parquet"))
    batch = window_agg(first.where("key = 2"), "key", "t", ["sum(value)", "count"], **kw)
    expect = batch.results.toPandas().sort_values("window_start").reset_index(drop=True)
    assert len(key2) == len(expect) == 9  # windows [k*60, k*60 + 300) holding 0..297 s
    pd.testing.assert_frame_equal(
        key2[["window_start", "window_end", "sum_value", "count"]],
        expect[["window_start", "window_end", "sum_value", "count"]],
        check_dtype=False,
    )
    assert rejects["reason"].str.startswith("late").tolist() == [True]
    straggler = pd.Timestamp(rejects["event_time"].iloc[0])
    assert straggler.tz_localize(None) == (base + pd.Timedelta(seconds=250)).tz_localize(None)
    drops = [
        s.get("numRowsDroppedByWatermark", 0) for p in q.recentProgress for s in p["stateOperators"]
    ]
    assert sum(drops) == 0  # Spark dropped nothing: the straggler reached windowagg


def test_event_time_timers_refuse_what_they_cannot_do(spark):
    from windowagg.errors import ArgumentError
    from windowagg.spark import stream_window_agg

    sdf = spark.readStream.format("rate").load().selectExpr("1 as key", "timestamp as t", "value")
    with pytest.raises(ArgumentError, match="applyInPandasWithState"):
        stream_window_agg(
            sdf,
            "key",
            "t",
            ["count"],
            size=60,
            event_time_timers=True,
            api="applyInPandasWithState",
        )
    # count windows take the timers too (_Step.timed closes their complete windows:
    # test_timed_step_over_count_windows_loses_no_row_and_equals_the_batch below)
    counted = stream_window_agg(sdf, "key", "t", ["count"], rows=10, event_time_timers=True)
    assert counted.isStreaming
    with pytest.raises(ArgumentError, match="api must be"):
        stream_window_agg(sdf, "key", "t", ["count"], size=60, api="mapGroupsWithState")
    binary = sdf.selectExpr("key", "cast(cast(value as string) as binary) as t", "value")
    with pytest.raises(ArgumentError, match="event_time_timers: time column 't' is of type binary"):
        stream_window_agg(binary, "key", "t", ["count"], size=60, event_time_timers=True)


def test_timed_step_keeps_state_while_live_and_drops_it_once_covered():
    """_Step.timed without Spark: the timer follows the key's deadline, and the state goes
    only when nothing in it can change and the global watermark has reached the key's own."""
    from windowagg.aggs import parse_aggs
    from windowagg.spark.streaming import _Step
    from windowagg.windows.engine import Shape

    def windows(out, column="count"):  # the packed rows' window arrays, flattened
        return [int(x) for f in out for arr in f[column] if arr is not None for x in arr]

    def stored(deltas):  # the pieces after the deltas, and the meta
        pieces = {}
        for d in deltas:
            d.apply(pieces)
        return deltas[-1].meta, pieces

    per_event = _Step(["key"], "t", parse_aggs(["count"]), Shape(size=10 * 10**6), "s")
    rows = pd.DataFrame({"key": [1, 1], "t": [100, 105]})
    out, deltas, timer = per_event.timed((1,), iter([rows]), None, {}, 0)
    assert deltas is not None and timer == (105 + 10) * 1000  # youngest + size, in ms
    assert windows(out) == [1, 2]  # one per-event window each, closed by the watermark
    meta, chunks = stored(deltas)
    out, deltas2, timer2 = per_event.timed((1,), iter([]), meta, chunks, 114 * 10**6)
    assert deltas2 is not None and timer2 == 115_000 and out == []  # still live: wait
    out, deltas3, timer3 = per_event.timed((1,), iter([]), meta, chunks, 115 * 10**6)
    assert (deltas3, timer3, out) == (None, None, [])  # all dead and covered: dropped

    hopping = _Step(["key"], "t", parse_aggs(["count"]), Shape(size=10**7, slide=5 * 10**6), "s")
    out, deltas, timer = hopping.timed((1,), iter([rows]), None, {}, 0)
    # the key's own watermark (105) closed [95, 105); [100, 110) is next
    assert deltas is not None and timer == 110_000
    assert windows(out) == [1]
    meta, chunks = stored(deltas)
    out, deltas, timer = hopping.timed((1,), iter([]), meta, chunks, 200 * 10**6)
    assert deltas is None and timer is None  # the timer closed the last two windows
    assert windows(out) == [2, 1]
    bad = pd.DataFrame({"key": [1], "t": [None]}, dtype=object)
    out, deltas, timer = hopping.timed((1,), iter([bad]), None, {}, 0)
    assert deltas is None and timer is None  # only a reject: nothing to keep
    assert windows(out) == [] and [r for f in out for r in f["reason"]] == ["null timestamp"]


@pytest.mark.parametrize(
    "key",
    [
        np.int32(7),
        "a",
        2.5,
        pd.Timestamp("2024-01-01 12:00", tz="UTC"),
        pd.Timestamp("2024-01-01 12:00"),
        np.datetime64("2024-01-01T12:00", "us"),
        __import__("datetime").date(2024, 1, 1),
    ],
    ids=repr,
)
def test_packed_row_has_the_frame_pandas_would_infer(key):
    """``_one_row`` skips pandas' dtype inference for speed: its frame must equal the one
    pandas infers from the same cells (a datetime-like key becomes a datetime column, which
    PySpark converts with the session's time zone), for every kind of key."""
    from windowagg.aggs import parse_aggs
    from windowagg.spark.packed import _one_row

    aggs = parse_aggs(["max(value)", "count"])
    cols = {
        "start": np.array([0, 5], np.int64),
        "end": np.array([10, 15], np.int64),
        "max_value": np.array([1.5, 2.5]),
        "count": np.array([1, 2], np.int64),
        "revision": None,
    }
    got = _one_row(["k"], [key], aggs, cols, 2)
    row = np.empty((1, got.shape[1]), dtype=object)
    for i, c in enumerate(got.iloc[0].tolist()):
        row[0, i] = c
    pd.testing.assert_frame_equal(got, pd.DataFrame(row, columns=list(got.columns)))
    assert got["_ws"].iloc[0] == [0, 5] and got["count"].iloc[0] == [1, 2]


class _CountingState:
    """A fake of PySpark's ValueState and MapState (no JVM) counting the calls and the
    bytes that go through it, as the state server's socket would carry them (an 8-byte
    key per MapState key sent or received)."""

    def __init__(self) -> None:
        self.value: tuple | None = None
        self.map: dict[tuple, tuple] = {}
        self.read = self.written = self.calls = 0

    # ValueState
    def get(self):
        self.calls += 1
        if self.value is not None:
            self.read += len(self.value[0])
        return self.value

    def update(self, v):
        self.written += len(v[0])
        self.value = v

    # MapState
    def getValue(self, k):
        self.calls += 1
        v = self.map.get(k)
        self.read += 8 + (len(v[0]) if v is not None else 0)
        return v

    def containsKey(self, k):
        self.calls += 1
        self.read += 8
        return k in self.map

    def keys(self):
        self.calls += 1
        for k in list(self.map):
            self.read += 8
            yield k

    def iterator(self):
        self.calls += 1
        for k, v in list(self.map.items()):
            self.read += 8 + len(v[0])
            yield k, v

    def updateValue(self, k, v):
        self.written += 8 + len(v[0])
        self.map[k] = v

    def removeKey(self, k):
        self.written += 8
        self.map.pop(k, None)

    def clear(self):
        self.value = None
        self.map.clear()


class _Handle:
    def __init__(self) -> None:
        self.meta, self.pieces = _CountingState(), _CountingState()

    def getValueState(self, name, schema):
        return self.meta

    def getMapState(self, name, key_schema, value_schema):
        return self.pieces


class _NoEventTime:  # Spark's TimerValues in timeMode "None": the output goes out per key
    def getCurrentWatermarkInMs(self):
        return -1


_NO_EVENT_TIME = _NoEventTime()


def _state_io(
    shape,
    batches: int,
    n: int,
    span_us: int,
    aggs: tuple[str, ...] = ("max(value)", "sum(value)", "count"),
) -> list[tuple[int, int, int, int]]:
    """(input bytes, bytes read, bytes written, pieces stored) per micro-batch of
    WindowAggProcessor on one key: micro-batches of *n* events over *span_us* of event
    time each, one in ten late by up to a minute (within the allowed lateness)."""
    from windowagg.aggs import parse_aggs
    from windowagg.spark.streaming import WindowAggProcessor

    proc = WindowAggProcessor(
        ["key"], "t", parse_aggs(list(aggs)), shape, "s",
        max_out_of_orderness=60_000_000, allowed_lateness=60_000_000,
    )  # fmt: skip
    h = _Handle()
    proc.init(h)
    rng = np.random.default_rng(3)
    out = []
    for b in range(batches):
        us = np.sort(rng.integers(b * span_us, (b + 1) * span_us, n))
        us[::10] -= rng.integers(0, 60_000_000, len(us[::10]))
        pdf = pd.DataFrame(
            {"key": 1, "t": pd.to_datetime(us, unit="us", utc=True), "value": rng.random(n)}
        )
        before = [(s.read, s.written) for s in (h.meta, h.pieces)]
        got = list(proc.handleInputRows((1,), iter([pdf]), _NO_EVENT_TIME))
        assert not got or got[0]["reason"].isna().all()  # no reject
        read = sum(s.read - r for s, (r, _) in zip((h.meta, h.pieces), before, strict=True))
        written = sum(s.written - w for s, (_, w) in zip((h.meta, h.pieces), before, strict=True))
        out.append((16 * n, read, written, len(h.pieces.map)))
    return out


def test_the_processor_reads_and_writes_what_a_micro_batch_touches_not_what_it_keeps():
    """Through a fake ValueState/MapState counting bytes: with the pane layout a micro-
    batch reads and writes the tree nodes of the panes it touches and of the windows it
    emits. At 10x the retained panes (a 10 h instead of a 1 h window, same stream) the
    bytes read per micro-batch stay within 2x (O(log w) nodes per window, not w panes),
    stay flat once the window is full, and state read + written stays under 10x the
    micro-batch's input (the issue's bound); the event log (per-event windows) reads every
    retained event each micro-batch."""
    from windowagg.windows.engine import Shape

    minute, hour = 60_000_000, 3_600_000_000
    small = _state_io(Shape(size=hour, slide=minute), 140, 100, 5 * minute)
    large = _state_io(Shape(size=10 * hour, slide=minute), 140, 100, 5 * minute)
    assert large[-1][3] >= 8 * small[-1][3]  # the state kept: ~10x the pieces
    tail_s, tail_l = small[-20:], large[-20:]  # both windows full (10 h = 120 batches)
    med = lambda rows, j: float(np.median([r[j] for r in rows]))  # noqa: E731
    assert med(tail_l, 1) <= 2 * med(tail_s, 1), (med(tail_l, 1), med(tail_s, 1))
    assert med(tail_l, 2) <= 2 * med(tail_s, 2)
    reads = [r for _, r, _, _ in tail_l]
    assert max(reads) <= 1.5 * min(reads)  # flat while the state keeps 10 h
    assert max(r + w for i, r, w, _ in large[1:]) <= 10 * large[0][0]
    events = _state_io(Shape(size=hour), 40, 100, minute // 2)  # per-event windows
    # per-event windows (the trailing layout, read in one scan: its FiBA is rebuilt from
    # the chunks) re-read what they keep: 3x more at 4x the retained events, and more
    # than 20x what the panes of a 10 h window read
    assert events[-1][1] > 3 * events[10][1] and events[-1][1] > 20 * max(reads)


def test_exact_quantiles_read_their_window_values_and_write_what_a_micro_batch_touches():
    """The pane layout with exact p95 (values per pane beside the partials): a restored
    key refills its multiset from the cursor window's value pieces, so a micro-batch reads
    O(window values), flat while the window is full, and not the lateness-expired panes
    (its rows are read in one scan: the values are most of what it keeps); it writes the
    head row, which holds the pieces inline up to INLINE x the micro-batch's new bytes:
    under 10x its input plus the window's values."""
    from windowagg.windows.engine import Shape

    minute, hour = 60_000_000, 3_600_000_000
    aggs = ("max(value)", "sum(value)", "count", "p95(value)")
    rows = _state_io(Shape(size=hour, slide=minute), 60, 100, 5 * minute, aggs)
    plain = _state_io(Shape(size=hour, slide=minute), 60, 100, 5 * minute)
    tail = rows[-20:]
    reads = [r for _, r, _, _ in tail]
    assert max(reads) <= 1.5 * min(reads)  # flat
    # 12 micro-batches of 100 events in the window: ~1,200 float64 values, plus the tree
    window_values = 12 * 100 * 8
    extra = [r - p for (_, r, _, _), (_, p, _, _) in zip(tail, plain[-20:], strict=True)]
    assert window_values <= min(extra) and max(extra) <= 2 * window_values, extra
    assert max(r + w for i, r, w, _ in rows[1:]) <= 10 * window_values + 10 * rows[0][0]
    assert max(w for _, _, w, _ in rows[1:]) <= 10 * rows[0][0] + window_values


def test_timed_step_over_count_windows_loses_no_row_and_equals_the_batch():
    """_Step.timed without Spark over count windows, as the TWS processor drives it (rows
    per micro-batch, a quiet key's timer, the global watermark): no exception (deadline()
    used to fail an assert), the state is never dropped while it holds events (a count
    window's last events wait for later ones), and every row is in an emitted window, held
    in the state, or a reject; the final revisions equal windowagg.pandas.window_agg."""
    from windowagg.aggs import parse_aggs
    from windowagg.pandas import window_agg
    from windowagg.spark.streaming import _Step
    from windowagg.windows.engine import Shape

    rng = np.random.default_rng(3)
    step = _Step(
        ["key"],
        "t",
        parse_aggs(["sum(v)", "count"]),
        Shape(rows=3, every=2),
        "s",
        max_out_of_orderness=10 * 10**6,
        allowed_lateness=20 * 10**6,
    )
    # key 1 all along, key 2 only in the first two micro-batches (then its timer drives it);
    # distinct times per key, arrival order jittered within the out-of-orderness (a late
    # event that moves an emitted count window's end has no name in the packed output: the
    # window is named by its end here), one straggler beyond the lateness
    times = {1: np.arange(0, 200, 3), 2: np.arange(0, 100, 5)}  # the same pace of event time
    batches: list[list[tuple[int, int, float]]] = [[], [], [], []]
    for k, ts in times.items():
        parts = np.array_split(ts + rng.integers(-1, 2, len(ts)), 4 if k == 1 else 2)
        for i, p in enumerate(parts):
            batches[i] += [(k, int(t), float(rng.integers(1, 50))) for t in p]
    batches[3].append((1, 10, 99.0))  # far behind key 1's watermark: late
    state: dict[int, tuple[bytes, dict[int, bytes]]] = {}
    timers: dict[int, int] = {}
    emitted, rejected, wm = [], [], 0
    for rows in [*batches, []]:  # the last micro-batch: no rows, the watermark far ahead
        frame = pd.DataFrame(rows, columns=["key", "t", "v"])
        wm = wm if rows else 10**9 * 10**6  # Spark's, from the micro-batches before
        for k in (1, 2):
            mine = frame[frame["key"] == k]
            fires = k in timers and timers[k] * 1000 <= wm
            if mine.empty and not fires:
                continue
            meta, pieces = state.get(k, (None, {}))
            out, deltas, timer = step.timed(
                (k,), iter([mine] if len(mine) else []), meta, pieces, wm
            )
            timers.pop(k, None)
            if timer is not None:
                timers[k] = timer
            if deltas is None:
                state.pop(k, None)
            elif deltas:
                pieces = dict(pieces)
                for d in deltas:
                    d.apply(pieces)
                state[k] = (deltas[-1].meta, pieces)
            for f in out:
                for _, r in f.iterrows():
                    if r["reason"] is not None:
                        rejected.append((k, r["reason"]))
                        continue
                    for s, e, sv, c, rev in zip(
                        r["_ws"], r["_we"], r["sum_v"], r["count"], r["_rev"], strict=True
                    ):
                        emitted.append((k, s // 10**6, e // 10**6, sv, c, rev))
        wm = max(wm, (int(frame["t"].max()) - 10) * 10**6) if rows else wm
    assert [why.split(":")[0] for _, why in rejected] == ["late"]  # the straggler only
    final = pd.DataFrame(emitted, columns=["key", "start", "end", "sum_v", "count", "rev"])
    final = final.sort_values("rev").groupby(["key", "end"], as_index=False).last()
    kept = pd.DataFrame([r for b in batches for r in b][:-1], columns=["key", "t", "v"])
    want = window_agg(kept, "key", "t", ["sum(v)", "count"], rows=3, every=2, time_unit="s")
    res = want.results.sort_values(["key", "window_end"]).reset_index(drop=True)
    ends = res["window_end"].astype("datetime64[ns, UTC]").astype("int64") // 10**9
    assert final["end"].tolist() == ends.tolist() and final["key"].tolist() == res["key"].tolist()
    np.testing.assert_allclose(final["sum_v"], res["sum_v"])
    assert final["count"].tolist() == res["count"].tolist()
    # the rows in no complete window (the batch's "in no window" rejects) wait in the state
    waiting = want.rejects[want.rejects["reason"].str.startswith("in no window: ")]
    waiting = kept.loc[waiting["row_index"]]
    assert len(waiting) and set(waiting["key"]) <= set(state) == {1, 2}
    for k, (meta, pieces) in state.items():
        held = step.stream(meta, pieces)
        assert k not in timers and held.deadline() is None and not held.expired()
        stored = held._state._events.t.tolist()  # the event log's times (us)
        assert all(t * 10**6 in stored for t in waiting.loc[waiting["key"] == k, "t"])
