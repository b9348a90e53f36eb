"""The transformWithStateInPandas state rows (windowagg.spark.tws_state) through a fake
state server counting round trips: the event log costs one scan and one write per key and
micro-batch, answers as the engine over a plain dict store, and reads layout-1 state."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pytest

pytestmark = pytest.mark.spark

pyspark = pytest.importorskip("pyspark")

MINUTE, HOUR = 60_000_000, 3_600_000_000
AGGS = ["max(value)", "sum(value)", "count", "p95(value)"]


class _Server:
    """PySpark's ValueState and MapState (no JVM): every method is one round trip to the
    state server, counted in :attr:`calls`."""

    def __init__(self) -> None:
        self.value: tuple | None = None
        self.map: dict[tuple, tuple] = {}
        self.calls = 0

    def get(self):
        self.calls += 1
        return self.value

    def update(self, v):
        self.calls += 1
        self.value = v

    def getValue(self, k):
        self.calls += 1
        return self.map.get(k)

    def containsKey(self, k):
        self.calls += 1
        return k in self.map

    def keys(self):
        self.calls += 1
        return iter(list(self.map))

    def iterator(self):  # one fetch: PySpark batches a scan's rows
        self.calls += 1
        return iter(list(self.map.items()))

    def updateValue(self, k, v):
        self.calls += 1
        self.map[k] = v

    def removeKey(self, k):
        self.calls += 1
        self.map.pop(k, None)

    def clear(self):
        self.calls += 1
        self.value = None
        self.map.clear()


class _Handle:
    def __init__(self) -> None:
        self.meta, self.pieces = _Server(), _Server()
        self.timers: list[int] = []

    def registerTimer(self, ms):
        self.timers.append(ms)

    def getValueState(self, name, schema):
        return self.meta

    def getMapState(self, name, key_schema, value_schema):
        return self.pieces

    @property
    def calls(self) -> int:
        return self.meta.calls + self.pieces.calls


class _Times:
    """Spark's TimerValues (and ExpiredTimerInfo): the watermark in ms, -1 in timeMode
    "None"."""

    def __init__(self, ms: int) -> None:
        self.ms = ms

    def getCurrentWatermarkInMs(self):
        return self.ms

    def getExpiryTimeInMs(self):
        return self.ms


def _micro_batch(proc: Any, key: tuple, pdf: pd.DataFrame) -> list[pd.DataFrame]:
    """One key's micro-batch as Spark runs it in EventTime mode (windowagg's default): the
    key's rows at a watermark of 0, then the task's expired timers (the output's flush)."""
    out = list(proc.handleInputRows(key, iter([pdf]), _Times(0)))
    for k, ms in [(key, t) for t in proc._handle.timers]:
        out += list(proc.handleExpiredTimer(k, _Times(0), _Times(ms)))
    proc._handle.timers.clear()
    return out


def _batches(n_batches: int, n: int = 100, seed: int = 5) -> list[pd.DataFrame]:
    """One key's micro-batches as issue 28's benchmark makes them: an event every ~10 s,
    times jittered +-20 s (inside the 30 s out-of-orderness), arrival order."""
    rng = np.random.default_rng(seed)
    out = []
    for b in range(n_batches):
        s = (np.arange(b * n, (b + 1) * n) * 10 + rng.integers(-20, 21, n)) * 1_000_000
        out.append(
            pd.DataFrame(
                {"key": 1, "t": pd.to_datetime(s, unit="us", utc=True), "value": rng.random(n)}
            )
        )
    return out


def _processor(aggs: list[str] = AGGS, per_event: bool = False) -> Any:
    """Hopping 1 h / 1 min (the pane layout, exact p95 included), or *per_event* 1 h
    windows (a layout of event chunks, read by one scan)."""
    from windowagg.aggs import parse_aggs
    from windowagg.spark.streaming import WindowAggProcessor
    from windowagg.windows.engine import Shape

    shape = Shape(size=HOUR) if per_event else Shape(size=HOUR, slide=MINUTE)
    return WindowAggProcessor(
        ["key"], "t", parse_aggs(aggs), shape, "s",
        max_out_of_orderness=30_000_000, allowed_lateness=0,
    )  # fmt: skip


def _reference(
    batches: list[pd.DataFrame], put: list[int] | None = None, per_event: bool = False
) -> list[list[tuple]]:
    """The engine's answers over a plain dict store (no rows layout): per micro-batch, the
    emitted windows as (end, max, sum, count, p95, revision); the bytes of the pieces each
    micro-batch puts are appended to *put*."""
    step = _processor(per_event=per_event)._step
    meta, pieces, out = None, {}, []
    for pdf in batches:
        got, deltas = step((1,), iter([pdf]), meta, pieces)
        for d in deltas:
            d.apply(pieces)
        meta = deltas[-1].meta if deltas else meta
        out.append(_windows(got))
        if put is not None:
            put.append(sum(len(v) for d in deltas for v in d.put.values()))
    return out


def _windows(frames: list[pd.DataFrame]) -> list[tuple]:
    rows = []
    for f in frames:
        for _, r in f.iterrows():
            assert r["reason"] is None  # no reject
            rows += list(
                zip(r["_we"], r["max_value"], r["sum_value"], r["count"], r["p95_value"],
                    r["_rev"], strict=True)
            )  # fmt: skip
    return rows


def test_event_log_costs_one_scan_and_one_write_per_key_and_micro_batch():
    """Per-event 1 h windows with exact p95 (event chunks), issue 28's benchmark stream on
    one key: after the first micro-batch every micro-batch makes 2 state-server round
    trips (the layout-1 operator made 4: the ValueState's get and update, a scan, a chunk's
    updateValue, plus a removeKey per chunk at each compaction), and the answers equal the
    engine's over a plain dict store."""
    batches = _batches(40)
    proc, h = _processor(per_event=True), _Handle()
    proc.init(h)
    calls, got = [], []
    for pdf in batches:
        before = h.calls
        got.append(_windows(list(_micro_batch(proc, (1,), pdf))))
        calls.append(h.calls - before)
    assert got == _reference(batches, per_event=True)
    assert sum(len(g) for g in got) > 500  # windows were emitted all along
    assert calls[0] == 3  # a new key: the scan, the layout-1 ValueState, the write
    assert max(calls[1:]) == 2, calls
    assert h.meta.value is None  # the ValueState is not written any more
    assert list(h.pieces.map) == [(-(2**63),)]  # everything inline in the head row


def test_panes_with_exact_quantiles_cost_one_scan_and_one_write_per_key_and_micro_batch():
    """Hopping 1 h / 1 min with exact p95 (the pane layout: tree nodes and each pane's
    values), issue 28's benchmark stream on one key: the rows are read in one scan and
    written in one ``updateValue`` of the head (one look-up per piece made ~350 round trips
    per micro-batch: the cursor re-reads the window's values at every restore), and the
    answers equal the engine's over a plain dict store."""
    batches = _batches(40)
    proc, h = _processor(), _Handle()
    proc.init(h)
    assert proc._step.layout == "panes" and not proc._step.on_demand
    calls, got = [], []
    for pdf in batches:
        before = h.calls
        got.append(_windows(list(_micro_batch(proc, (1,), pdf))))
        calls.append(h.calls - before)
    assert got == _reference(batches)
    assert sum(len(g) for g in got) > 500
    assert calls[0] == 3 and max(calls[1:]) == 2, calls
    assert list(h.pieces.map) == [(-(2**63),)]  # everything inline in the head row


def test_panes_of_monoids_are_read_on_demand():
    """Without a quantile the pane tree reads the nodes a micro-batch touches, one
    ``getValue`` each (the head names no piece inline): a 10 h window reads within 2x what
    a 1 h one reads (tests/spark/test_spark_streaming.py counts the bytes)."""
    proc = _processor(aggs=["max(value)", "sum(value)", "count"])
    assert proc._step.layout == "panes" and proc._step.on_demand


def test_event_log_spills_old_pieces_when_the_key_outgrows_its_head():
    """A window holding more than INLINE micro-batches of events: the oldest pieces move to
    rows of their own (each once), the head stays within INLINE x a micro-batch's bytes,
    and the answers still equal the engine's over a plain dict store."""
    from windowagg.spark.tws_state import HEAD_KEY, INLINE, decode_head

    batches = _batches(60, n=20, seed=6)  # 200 s per batch: 18 batches per hour
    proc, h = _processor(per_event=True), _Handle()
    proc.init(h)
    got, heads, rows = [], [], []
    for pdf in batches:
        got.append(_windows(list(_micro_batch(proc, (1,), pdf))))
        _, inline = decode_head(h.pieces.map[(HEAD_KEY,)][0])
        heads.append(sum(len(v) for v in inline.values()))
        rows.append(len(h.pieces.map))
    put: list[int] = []
    assert got == _reference(batches, put, per_event=True)
    assert max(rows) >= 3  # pieces moved out of the head (compactions remove them again)
    assert all(0 < held <= INLINE * p for held, p in zip(heads, put, strict=True))
    assert max(h / p for h, p in zip(heads, put, strict=True)) > INLINE - 2  # the head fills


def test_layout_1_state_is_read_and_rewritten_as_layout_2():
    """A key stored by the layout-1 operator (metadata in the ValueState 'meta', every
    piece a row of the MapState) goes on where it stopped: same answers as the engine over
    a plain dict store, the ValueState cleared at the key's first write; for both kinds of
    state layout (event chunks: per-event windows; panes: monoids, and exact p95)."""
    from windowagg.spark.tws_state import HEAD_KEY

    for aggs, per_event in ((AGGS, True), (AGGS, False), (AGGS[:3], False)):
        batches = _batches(12)
        proc, h = _processor(aggs, per_event), _Handle()
        proc.init(h)
        step, meta, pieces, got = proc._step, None, {}, []
        for pdf in batches[:6]:  # the layout-1 operator, as it wrote its state
            out, deltas = step((1,), iter([pdf]), meta, pieces)
            for d in deltas:
                d.apply(pieces)
            meta = deltas[-1].meta
            got.append(out)
        h.meta.value = (meta,)
        h.pieces.map = {(k,): (v,) for k, v in pieces.items()}
        for pdf in batches[6:]:
            got.append(list(_micro_batch(proc, (1,), pdf)))
            assert h.meta.value is None and (HEAD_KEY,) in h.pieces.map
        ref_step = _processor(aggs, per_event)._step
        meta, pieces = None, {}
        for pdf, out in zip(batches, got, strict=True):
            want, deltas = ref_step((1,), iter([pdf]), meta, pieces)
            for d in deltas:
                d.apply(pieces)
            meta = deltas[-1].meta
            cols = ["_we", "max_value", "sum_value", "count", "_rev"]
            assert [f[cols].to_dict("list") for f in out] == [f[cols].to_dict("list") for f in want]


def test_a_head_row_of_another_layout_is_refused_by_name():
    from windowagg import codec
    from windowagg.errors import CodecError
    from windowagg.spark.tws_state import HEAD_KEY

    proc, h = _processor(), _Handle()
    proc.init(h)
    h.pieces.map[(HEAD_KEY,)] = (codec.dumps((3, b"meta", {})),)
    with pytest.raises(CodecError, match=r"layout 2 \(its head row holds layout 3\).*checkpoint"):
        _micro_batch(proc, (1,), _batches(1)[0])


class _Keyed:
    """A state variable per grouping key, as Spark keeps them (the implicit key: *cur*)."""

    def __init__(self, cur: list) -> None:
        self.cur, self.by_key = cur, {}

    def __getattr__(self, name):
        return getattr(self.by_key.setdefault(self.cur[0], _Server()), name)


class _KeyedHandle(_Handle):
    def __init__(self) -> None:
        super().__init__()
        self.cur = [None]
        self.meta, self.pieces = _Keyed(self.cur), _Keyed(self.cur)

    @property
    def calls(self) -> int:
        return sum(s.calls for v in (self.meta, self.pieces) for s in v.by_key.values())


def _key_batches(k: int, n_batches: int) -> list[pd.DataFrame]:
    return [pdf.assign(key=k) for pdf in _batches(n_batches, seed=k)]


def _feed(proc: Any, h: _KeyedHandle, k: int, pdf: pd.DataFrame, wm_ms: int) -> list:
    h.cur[0] = k  # Spark sets the implicit key before each call
    return list(proc.handleInputRows((k,), iter([pdf]), _Times(wm_ms)))


def test_the_output_waits_for_the_tasks_flush_timer_and_goes_out_in_one_frame():
    """In EventTime mode (windowagg's default) a task's keys hand their windows over in one
    frame, from the flush timer the first key registers at the current watermark (one
    registration per task, no state call for it); the rows are those each key would have
    yielded on its own (timeMode "None", watermark -1, one frame per key)."""
    batches = {k: _key_batches(k, 3) for k in (1, 2, 3)}
    per_key, h0 = _processor(), _KeyedHandle()
    per_key.init(h0)
    want = [
        w
        for b in range(3)
        for k in (1, 2, 3)
        for w in _windows(_feed(per_key, h0, k, batches[k][b], -1))
    ]
    assert h0.timers == []  # no timers without event time
    proc, h = _processor(), _KeyedHandle()
    proc.init(h)
    got = []
    for b in range(3):
        held = [_feed(proc, h, k, batches[k][b], 0) for k in (1, 2, 3)]
        assert held == [[], [], []] and h.timers == [0]  # kept; one flush timer
        calls, h.cur[0] = h.calls, 1
        out = list(proc.handleExpiredTimer((1,), _Times(0), _Times(0)))
        assert h.calls == calls  # the flush reads and writes no state
        assert len(out) == 1 and sorted(set(out[0]["key"])) == [1, 2, 3]
        got += _windows(out)
        h.timers.clear()
    assert sorted(got) == sorted(want) and len(got) > 100
    proc.close()  # nothing waits


def test_a_task_never_ends_with_output_waiting():
    """Rows still waiting when the task closes (the flush timer did not fire) fail the
    task with StateError instead of vanishing; past FLUSH_KEYS waiting keys a key's own
    call hands them over."""
    from windowagg.errors import StateError
    from windowagg.spark import tws_outbox

    proc, h = _processor(), _KeyedHandle()
    proc.init(h)
    assert _feed(proc, h, 1, _key_batches(1, 1)[0], 0) == []
    with pytest.raises(StateError, match="still waiting when the task closed"):
        proc.close()
    old, tws_outbox.FLUSH_KEYS = tws_outbox.FLUSH_KEYS, 2
    try:
        proc, h = _processor(), _KeyedHandle()
        proc.init(h)
        assert _feed(proc, h, 1, _key_batches(1, 1)[0], 0) == []
        out = _feed(proc, h, 2, _key_batches(2, 1)[0], 0)
        assert len(out) == 1 and sorted(set(out[0]["key"])) == [1, 2]
        proc.close()
    finally:
        tws_outbox.FLUSH_KEYS = old


def test_a_null_key_group_is_rejects_with_no_state_and_leaves_through_the_flush():
    """A group of stream_window_agg's null-key mask (key 0 standing for a null, mask 1)
    alone in its task: its rows come out as rejects (``null key key``, the row with the key
    null) from the flush timer it registers, and no state is read or written, no key
    timer set; the keys' own groups (mask 0) keep their windows."""
    import json

    proc, h = _processor(), _Handle()
    proc.init(h)
    pdf = _batches(1)[0].iloc[:3].assign(key=0, _wa_null_keys=1)
    proc._columns = list(pdf.columns)  # stream_window_agg's input columns
    assert list(proc.handleInputRows((0, 1), iter([pdf]), _Times(0))) == []
    assert h.calls == 0 and h.timers == [0]  # the flush timer only
    out = list(proc.handleExpiredTimer((0, 1), _Times(0), _Times(0)))
    assert h.calls == 0 and len(out) == 1
    assert out[0]["reason"].tolist() == ["null key key"] * 3 and out[0]["key"].isna().all()
    rows = [json.loads(r) for r in out[0]["row"]]
    assert [r["key"] for r in rows] == [None] * 3 and all("_wa_null_keys" not in r for r in rows)
    assert [r["value"] for r in rows] == pdf["value"].tolist()
    proc.close()  # nothing waits
    h.timers.clear()
    windows = _micro_batch(proc, (1, 0), _batches(2)[1].assign(_wa_null_keys=0))
    assert len(_windows(windows)) > 10 and h.pieces.calls > 0
    calls, nan = h.calls, float("nan")  # a NaN key (no null to Spark): rejects, no state
    out = _micro_batch(proc, (nan, 0), pdf.assign(key=nan, _wa_null_keys=0))
    assert h.calls == calls and out[0]["reason"].tolist() == ["null key key"] * 3


def test_whole_history_reads_its_pieces_on_demand_and_keeps_few_rows():
    """``ewm_mean`` and ``decayed_p50`` with no size (the whole-history layout, issue 37):
    each micro-batch reads the head and the few pieces its metadata names (the revisable
    events' chunks and the summary piece), never a scan; the key's rows stay bounded
    however long the history, and the answers equal the engine's over a plain dict."""
    from windowagg.aggs import parse_aggs
    from windowagg.spark.streaming import WindowAggProcessor
    from windowagg.windows.engine import Shape
    from windowagg.windows.engine.assign import HISTORY

    aggs = ["ewm_mean(value, half_life=10 min)", "decayed_p50(value, half_life=1h) as med"]

    def make() -> Any:
        return WindowAggProcessor(
            ["key"], "t", parse_aggs(aggs), Shape(size=HISTORY), "s",
            max_out_of_orderness=30_000_000, allowed_lateness=60_000_000,
        )  # fmt: skip

    assert make()._step.layout == "history"
    batches = _batches(40)
    proc, h = make(), _Handle()
    proc.init(h)
    scans = {"n": 0}
    scan = h.pieces.iterator

    def counted_scan():
        scans["n"] += 1
        return scan()

    h.pieces.iterator = counted_scan
    calls, rows, got = [], [], []
    for pdf in batches:
        before = h.calls
        out = _micro_batch(proc, (1,), pdf)
        calls.append(h.calls - before)
        rows.append(len(h.pieces.map))
        got.append([(w, e, q, r) for f in out for _, x in f.iterrows()
                    for w, e, q, r in zip(x["_we"], x["ewm_mean_value"], x["med"], x["_rev"],
                                          strict=True)])  # fmt: skip
    step = make()._step
    meta, pieces, want = None, {}, []
    for pdf in batches:
        res, deltas = step((1,), iter([pdf]), meta, pieces)
        for d in deltas:
            d.apply(pieces)
        meta = deltas[-1].meta if deltas else meta
        want.append([(w, e, q, r) for f in res for _, x in f.iterrows()
                     for w, e, q, r in zip(x["_we"], x["ewm_mean_value"], x["med"], x["_rev"],
                                           strict=True)])  # fmt: skip
    assert got == want and sum(map(len, got)) > 3_000
    assert scans["n"] == 0  # pieces read one by one, never a scan
    assert max(rows) <= 4 and max(calls[1:]) <= 9, (rows, calls)  # head, chunk, summary
