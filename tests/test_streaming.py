"""windowagg.stream: micro-batches of many keys against window_agg on the whole input.

The final revision of every window equals ``windowagg.pandas.window_agg`` on the
concatenated input with the same lateness (rows judged in input order per key, as the
stream judges them), and the rejects are the same rows with the same reasons, for random
micro-batch cuts, arrival orders, keys, window shapes and aggregations, and restarts
through a store (committed, or lost before their commit and replayed from
``checkpoint_token``). Count windows' last events, which complete no window, are rejects
at ``close`` (``in no window: ...``), with the rows they came with.
"""

from __future__ import annotations

import itertools
import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import windowagg
from support import FlakyStore
from windowagg.errors import (
    AggregationError,
    ArgumentError,
    ArgumentTypeError,
    CodecError,
    StateError,
    StorageError,
)
from windowagg.pandas import window_agg
from windowagg.storage import MemoryStore, SQLiteStore

SHAPES: dict[str, dict[str, Any]] = {
    "hopping": {"size": 10, "slide": 5},
    "tumbling": {"size": 6, "slide": 6},
    "per_event": {"size": 7},
    "session": {"gap": 4},
    "count": {"rows": 3, "every": 2},
    "sizes": {"size": [5, 10], "slide": 5},
}
AGGS: dict[str, list[str]] = {
    "monoids": ["sum(v)", "count", "max(v)"],
    "quantiles": ["median(v)", "p90(v)", "min(v)"],
    "decayed": ["ewm_mean(v, half_life=5)", "count"],
}


def _final(results: pd.DataFrame, keys: list[str], shape: str) -> pd.DataFrame:
    """The last revision of every window emitted (sessions: those no session of a higher
    revision contains; per-event windows: see below), sorted like window_agg's results."""
    r = results.reset_index(drop=True)
    if not len(r):
        return r.drop(columns="revision")
    ident = [*keys, "window_start", "window_end"]
    if shape == "session":
        keep = np.ones(len(r), dtype=bool)
        for _, g in r.groupby(keys, sort=False) if keys else [(None, r)]:
            for i in g.index:
                inside = g[
                    (g["window_start"] <= r.at[i, "window_start"])
                    & (g["window_end"] >= r.at[i, "window_end"])
                    & (g["revision"] > r.at[i, "revision"])
                ]
                keep[i] = not len(inside)
        r = r[keep]
    elif shape == "per_event":
        # one window per event, and events of one time share (start, end): each first
        # emission (revision 0) is a window, and all of them end as the group's last row
        g = r.groupby(ident, sort=False)
        n = g["revision"].transform(lambda x: int((x == 0).sum()))
        last = g.cumcount(ascending=False) == 0
        r = r[last].loc[lambda f: f.index.repeat(n[last])]
    else:
        top = r.groupby(ident, sort=False)["revision"].transform("max")
        r = r[r["revision"] == top]
    return r.drop(columns="revision").sort_values(ident, kind="stable").reset_index(drop=True)


def _same(got: pd.DataFrame, want: pd.DataFrame) -> None:
    ident = list(want.columns[: list(want.columns).index("window_end") + 1])
    want = want.sort_values(ident, kind="stable").reset_index(drop=True)
    assert list(got.columns) == list(want.columns)
    assert len(got) == len(want), (got, want)
    for c in want.columns:
        a, b = got[c].tolist(), want[c].tolist()
        if want[c].dtype == np.float64:
            assert np.allclose(np.asarray(a, float), np.asarray(b, float), equal_nan=True), c
        else:
            assert a == b, c


def _run(
    df: pd.DataFrame,
    cuts: list[int],
    kw: dict[str, Any],
    store: Any = None,
    restarts: set[int] = frozenset(),  # type: ignore[assignment]
    lost: set[int] = frozenset(),  # type: ignore[assignment]
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Feed *df* cut at *cuts*; after batch i in *restarts* the stream is reopened from
    *store*; a batch in *lost* is fed with ``commit=False`` and the stream is then dropped
    before its commit (a crash): the caller replays from ``checkpoint_token``, and each
    batch's output replaces the output it had under the same token (an idempotent sink)."""
    bounds = [0, *sorted(set(cuts)), len(df)]
    batches = [(a, b) for a, b in itertools.pairwise(bounds) if b > a] or [(0, 0)]
    out: dict[int, tuple[pd.DataFrame, pd.DataFrame]] = {}
    s = windowagg.stream(store=store, **kw)
    i = 0
    crashed: set[int] = set()
    while i < len(batches):
        a, b = batches[i]
        crash = i in lost and i not in crashed
        got = s.feed(df.iloc[a:b], token=i, commit=not crash)
        rej = got.rejects.copy()
        rej["row_index"] += a
        out[i] = (got.results, rej)
        if crash:
            crashed.add(i)
            s = windowagg.stream(store=store, **kw)  # pending changes lost
            tok = s.checkpoint_token
            i = 0 if tok is None else tok + 1
            continue
        if i in restarts:
            s = windowagg.stream(store=store, **kw)
            assert s.checkpoint_token == i
        i += 1
    closing = s.close()
    results = pd.concat([out[j][0] for j in sorted(out)] + [closing.results], ignore_index=True)
    tail = closing.rejects.copy()
    if len(tail):  # count windows' last events: row_index in its micro-batch; "id": global
        ids = [json.loads(r)["id"] for r in tail["row"]]
        starts = [next(a for a, b in batches if a <= i < b) for i in ids]
        assert tail["row_index"].tolist() == [i - a for i, a in zip(ids, starts, strict=True)]
        tail["row_index"] = ids
    rejects = pd.concat([out[j][1] for j in sorted(out)] + [tail], ignore_index=True)
    rejects = rejects.sort_values("row_index", kind="stable").reset_index(drop=True)
    return results, rejects


@st.composite
def cases(draw: Any) -> tuple[Any, ...]:
    n = draw(st.integers(0, 40))
    keys = draw(st.lists(st.sampled_from(["a", "b", "c"]), min_size=n, max_size=n))
    times = draw(st.lists(st.integers(-30, 60), min_size=n, max_size=n))
    values = draw(st.lists(st.integers(-5, 9), min_size=n, max_size=n))
    cuts = draw(st.lists(st.integers(0, n), max_size=6))
    return keys, times, values, cuts


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    case=cases(),
    shape=st.sampled_from(sorted(SHAPES)),
    aggs=st.sampled_from(sorted(AGGS)),
    lateness=st.sampled_from([(0, 0), (3, 0), (2, 5), (0, 100)]),
    restarts=st.sets(st.integers(0, 6), max_size=3),
    lost=st.sets(st.integers(0, 6), max_size=2),
    use_store=st.booleans(),
)
def test_final_revisions_equal_window_agg(
    case: Any, shape: str, aggs: str, lateness: Any, restarts: Any, lost: Any, use_store: bool
) -> None:
    keys, times, values, cuts = case
    if shape == "count":
        lateness = (0, 0)  # count windows are revised by position: no late-but-accepted
    if aggs == "decayed" and shape == "sizes":
        aggs = "monoids"
    df = pd.DataFrame({"k": keys, "t": times, "v": np.asarray(values, dtype=np.float64)})
    df["id"] = np.arange(len(df))
    kw = dict(
        keys="k",
        time="t",
        aggs=AGGS[aggs],
        max_out_of_orderness=lateness[0],
        allowed_lateness=lateness[1],
        row_columns=["k", "t", "v", "id"],
        **SHAPES[shape],
    )
    store = MemoryStore() if use_store else None
    results, rejects = _run(
        df, cuts, kw, store, restarts if use_store else set(), lost if use_store else set()
    )
    want = window_agg(df, **kw)
    _same(_final(results, ["k"], shape), want.results)
    wr = want.rejects  # count windows' last events too: rejects at close
    assert rejects["row_index"].tolist() == wr["row_index"].tolist()
    assert rejects["reason"].tolist() == wr["reason"].tolist()
    assert rejects["row"].tolist() == wr["row"].tolist()
    assert rejects["event_time"].tolist() == wr["event_time"].tolist()


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    case=cases(),
    count=st.sampled_from([(1, 1), (3, 2), (4, 3), (2, 2), (5, 4)]),
    lateness=st.sampled_from([(0, 0), (3, 0), (2, 5), (0, 100)]),
    restarts=st.sets(st.integers(0, 6), max_size=3),
    lost=st.sets(st.integers(0, 6), max_size=2),
    store=st.sampled_from(["none", "memory", "sqlite"]),
)
def test_count_windows_and_their_tail_rejects_equal_window_agg(
    case: Any, count: Any, lateness: Any, restarts: Any, lost: Any, store: str
) -> None:
    """Count windows, with lateness, through store restarts and lost commits: the final
    windows (without late-but-accepted events) and every reject (the tail's at close included: row, reason, time, row_index)
    equal window_agg's on the whole input."""
    keys, times, values, cuts = case
    df = pd.DataFrame({"k": keys, "t": times, "v": np.asarray(values, dtype=np.float64)})
    df["id"] = np.arange(len(df))
    kw = dict(
        keys="k",
        time="t",
        aggs=["sum(v)", "count", "median(v)"],
        rows=count[0],
        every=count[1],
        max_out_of_orderness=lateness[0],
        allowed_lateness=lateness[1],
        row_columns=["k", "t", "v", "id"],
    )
    kv = {"none": None, "memory": MemoryStore(), "sqlite": SQLiteStore(":memory:")}[store]
    with_store = kv is not None
    results, rejects = _run(
        df, cuts, kw, kv, restarts if with_store else set(), lost if with_store else set()
    )
    want = window_agg(df, **kw)
    if not lateness[1]:  # late-but-accepted events shift count windows: their revisions
        # have other bounds than the windows they revise, so only the rejects are compared
        _same(_final(results, ["k"], "count"), want.results)
    wr = want.rejects
    for c in ("row_index", "reason", "row", "event_time"):
        assert rejects[c].tolist() == wr[c].tolist(), c


@pytest.mark.parametrize("kind", ["pandas", "polars", "arrow"])
def test_count_windows_last_events_are_rejects_at_close(kind: str) -> None:
    """5 events, rows=3, every=2: windows end at the 2nd and 4th events; the 5th completes
    none, and close() rejects it as window_agg does, with its row and its row_index."""
    import polars as pl
    import pyarrow as pa

    df = pd.DataFrame({"k": ["a"] * 5, "t": [1, 2, 3, 4, 5], "v": [1.0, 2.0, 3.0, 4.0, 5.0]})

    def of(f: pd.DataFrame) -> Any:
        f = f.reset_index(drop=True)
        return {"pandas": f, "polars": pl.from_pandas(f), "arrow": pa.Table.from_pandas(f)}[kind]

    def pdf(x: Any) -> pd.DataFrame:
        return x if isinstance(x, pd.DataFrame) else x.to_pandas()

    kw: dict[str, Any] = dict(keys="k", time="t", aggs=["sum(v)"], rows=3, every=2)
    s = windowagg.stream(**kw)
    fed = [s.feed(of(df.iloc[:3])), s.feed(of(df.iloc[3:]))]
    assert all(not len(pdf(o.rejects)) for o in fed)  # open: the 5th waits for a 6th
    closing = s.close()
    assert isinstance(closing.rejects, type(of(df)))
    got, want = pdf(closing.rejects), window_agg(df, **kw).rejects
    assert got["reason"].tolist() == want["reason"].tolist()
    assert got["reason"].str.startswith("in no window: one of its key's last 1").all()
    assert got["row"].tolist() == want["row"].tolist() == ['{"k": "a", "t": 5, "v": 5.0}']
    assert got["event_time"].tolist() == want["event_time"].tolist()
    assert got["row_index"].tolist() == [1]  # its position in its micro-batch (df.iloc[3:])
    assert [pdf(o.results)["sum_v"].tolist() for o in fed] == [[3.0], [9.0]]


def test_the_tail_is_reported_once(tmp_path: Path) -> None:
    """An advance to the end of time reports the tail; a later close, or a stream resumed
    after a committed close, reports nothing again; a restart before it loses nothing."""
    kw: dict[str, Any] = dict(keys="k", time="t", aggs=["count"], rows=2, every=2)
    df = pd.DataFrame({"k": ["a", "b", "a", "a"], "t": [1, 2, 3, 4], "v": 1.0})
    db = tmp_path / "s.db"
    s = windowagg.stream(store=db, **kw)
    s.feed(df, token=1)
    s = windowagg.stream(store=db, **kw)  # a restart: the rows come back from the store
    out = s.advance(float("inf"), token="end")
    assert out.rejects["row_index"].tolist() == [3, 1]  # key a's 4th event, then key b's
    assert out.rejects["row"].tolist() == [
        '{"k": "a", "t": 4}',
        '{"k": "b", "t": 2}',
    ]  # the columns the stream reads (row_columns=None)
    assert not len(s.close().rejects)
    assert not len(windowagg.stream(store=db, **kw).close().rejects)


def test_a_count_store_of_an_earlier_windowagg_is_refused_clearly() -> None:
    from windowagg._stream_store import Pending, StreamStore
    from windowagg.call import parse_call
    from windowagg.streaming import _config

    kw: dict[str, Any] = dict(keys="k", time="t", aggs=["count"], rows=2, every=2)
    call = parse_call(kw["keys"], kw["time"], kw["aggs"], rows=2, every=2,
                      max_out_of_orderness=None, allowed_lateness=None)  # fmt: skip
    store = MemoryStore()
    old = StreamStore(store, "windowagg.stream", _config(call, (0, 0))[:-1])
    old.commit(Pending(), token=7)  # a store as a windowagg before carried rows wrote it
    with pytest.raises(CodecError, match=r"kept no rows.*drop it.*replay"):
        windowagg.stream(store=store, **kw)


def test_restart_reads_only_the_keys_a_batch_touches(tmp_path: Path) -> None:
    kw = dict(keys="k", time="t", aggs=["sum(v)"], size=10, slide=10, allowed_lateness=100)
    db = tmp_path / "s.db"
    df = pd.DataFrame({"k": [f"k{i}" for i in range(50)], "t": 1, "v": 1.0})
    s = windowagg.stream(store=db, **kw)
    s.feed(df, token="offset-1")
    s2 = windowagg.stream(store=SQLiteStore(db), **kw)
    assert s2.checkpoint_token == "offset-1" and len(s2) == 50
    kv = s2._store.store  # type: ignore[union-attr]
    before = dict(kv.stats)
    s2.feed(pd.DataFrame({"k": ["k3"], "t": [25], "v": [2.0]}), token="offset-2")
    # one key's head and the pieces its windows need, one commit: not the other 49 keys
    assert kv.stats["keys_read"] - before["keys_read"] <= 8
    assert kv.stats["round_trips"] - before["round_trips"] <= 12
    got = s2.close().results
    assert len(got) == 50 and got["sum_v"].sum() == 51.0


def test_advance_closes_idle_keys_and_commits(tmp_path: Path) -> None:
    store = MemoryStore()
    kw = dict(keys=["k"], time="t", aggs=["max(v)"], size="10s", slide="10s")
    s = windowagg.stream(store=store, **kw)
    s.feed(pd.DataFrame({"k": ["idle", "busy"], "t": [1, 2], "v": [5.0, 1.0]}), token=1)
    s.feed(pd.DataFrame({"k": ["busy"], "t": [35], "v": [2.0]}), token=2)
    out = s.advance(20, token=3)
    assert out.results[["k", "max_v"]].values.tolist() == [["idle", 5.0]]
    assert windowagg.stream(store=store, **kw).checkpoint_token == 3
    # after the advance, an idle key's event older than the watermark is a reject
    late = s.feed(pd.DataFrame({"k": ["idle"], "t": [3], "v": [1.0]}))
    assert late.rejects["reason"].str.startswith("late").tolist() == [True]
    with pytest.raises(ArgumentError, match="watermark 'soon'"):
        s.advance("soon")


@pytest.mark.parametrize("kind", ["pandas", "polars", "arrow"])
def test_input_kind_is_output_kind(kind: str) -> None:
    import polars as pl
    import pyarrow as pa

    df = pd.DataFrame({"k": [1, 1, 2, None], "t": [1.0, 12.0, 3.0, 4.0], "v": [1.0, 2.0, 3.0, 1.0]})
    frame: Any = {"pandas": df, "polars": pl.from_pandas(df), "arrow": pa.Table.from_pandas(df)}[
        kind
    ]
    s = windowagg.stream("k", "t", ["sum(v)"], size=10, slide=10)
    out = s.feed(frame)
    want = type(frame)
    assert isinstance(out.results, want) and isinstance(out.rejects, want)
    res = out.results if kind == "pandas" else out.results.to_pandas()
    rej = out.rejects if kind == "pandas" else out.rejects.to_pandas()
    assert res.columns.tolist() == ["k", "window_start", "window_end", "sum_v", "revision"]
    assert res["sum_v"].tolist() == [1.0] and rej["reason"].tolist() == ["null key k"]
    closing = s.close().results
    closing = closing if kind == "pandas" else closing.to_pandas()
    assert sorted(closing["sum_v"].tolist()) == [2.0, 3.0]


def test_bad_rows_are_rejects_with_reasons() -> None:
    s = windowagg.stream("k", "t", ["sum(v)"], size=10, slide=10)
    df = pd.DataFrame(
        {
            "k": ["a", float("nan"), "a", "a", "a"],
            "t": ["1970-01-01T00:00:05", "1970-01-01T00:00:06", "soon", None, "1970-01-01"],
            "v": [1.0, 2.0, 3.0, 4.0, math.inf],
        }
    )
    out = s.feed(df)
    assert out.rejects["row_index"].tolist() == [1, 2, 3, 4]
    assert out.rejects["reason"].tolist()[:3] == [
        "null key k",
        "unparsable timestamp 'soon'",
        "null timestamp",
    ]
    assert "non-finite value in 'v'" in out.rejects["reason"].iloc[3]
    # a time before the key's watermark: late (the defaults: no out-of-orderness)
    out = s.feed(pd.DataFrame({"k": ["a"], "t": ["1970-01-01T00:00:01"], "v": [1.0]}))
    assert out.rejects["reason"].iloc[0].startswith("late: 1970-01-01T00:00:01Z")
    # wrong value types
    out = s.feed(pd.DataFrame({"k": ["a"], "t": ["1970-01-01T00:00:09"], "v": ["x"]}))
    assert out.rejects["reason"].tolist() == ["not a number in 'v': 'x'"]
    assert out.rejects["row"].tolist() == ['{"k": "a", "t": "1970-01-01T00:00:09", "v": "x"}']


def test_missing_column_raises_and_changes_nothing() -> None:
    store = MemoryStore()
    s = windowagg.stream("k", "t", ["sum(v)"], size=10, slide=10, store=store)
    s.feed(pd.DataFrame({"k": ["a"], "t": [1], "v": [1.0]}), token=1)
    written = dict(store.stats)
    with pytest.raises(ArgumentError, match="column 'v' is not in the micro-batch"):
        s.feed(pd.DataFrame({"k": ["a"], "t": [12]}), token=2)
    with pytest.raises(
        ArgumentTypeError, match=r"feed takes a pandas or polars DataFrame.*got list"
    ):
        s.feed([1, 2, 3])
    assert store.stats["keys_written"] == written["keys_written"] and s.checkpoint_token == 1


def test_an_output_named_revision_is_an_argument_error() -> None:
    with pytest.raises(ArgumentError, match="'revision'"):
        windowagg.stream("k", "t", ["max(v) as revision"], size=10, slide=10)


def test_another_configuration_is_a_clear_error(tmp_path: Path) -> None:
    db = str(tmp_path / "s.db")
    s = windowagg.stream("k", "t", ["sum(v)"], size=10, slide=10, store=db)
    s.feed(pd.DataFrame({"k": ["a"], "t": [1], "v": [1.0]}), token=1)
    s.close()
    with pytest.raises(CodecError, match=r"another configuration.*another namespace"):
        windowagg.stream("k", "t", ["max(v)"], size=10, slide=10, store=db)
    with pytest.raises(CodecError, match="another configuration"):
        windowagg.stream("k", "t", ["sum(v)"], size=20, slide=10, store=f"sqlite://{db}")
    other = windowagg.stream("k", "t", ["max(v)"], size=10, slide=10, store=db, namespace="b")
    assert other.checkpoint_token is None
    with pytest.raises(StateError, match="closed"):
        s.feed(pd.DataFrame({"k": ["a"], "t": [1], "v": [1.0]}))


def _boom_sum() -> Any:
    from windowagg.monoids import Sum

    class Boom(Sum):
        def combine(self, a: Any, b: Any) -> Any:
            if a == 13 or b == 13:
                raise ValueError("13")
            return super().combine(a, b)

    return Boom()


def test_a_call_that_raises_changes_nothing() -> None:
    store = FlakyStore()
    kw = dict(keys="k", time="t", aggs=["sum(v)"], size=10, slide=10, allowed_lateness=50)
    s = windowagg.stream(store=store, **kw)
    ref = windowagg.stream(**kw)
    first = pd.DataFrame({"k": ["a", "b"], "t": [1, 2], "v": [1.0, 2.0]})
    s.feed(first, token=0)
    ref.feed(first)
    store.fail = True
    second = pd.DataFrame({"k": ["a", "b"], "t": [15, 16], "v": [3.0, 4.0]})
    with pytest.raises(StorageError):
        s.feed(second, token=1)
    store.fail = False
    assert s.checkpoint_token == 0
    got, want = s.feed(second, token=1), ref.feed(second)
    pd.testing.assert_frame_equal(got.results, want.results)
    pd.testing.assert_frame_equal(s.close().results, ref.close().results)


def test_an_aggregation_error_in_one_key_leaves_every_key_unchanged() -> None:
    kw = dict(keys="k", time="t", aggs=[("s", _boom_sum(), "v")], size=10, slide=10)
    s = windowagg.stream(store=MemoryStore(), allowed_lateness=50, **kw)
    s.feed(pd.DataFrame({"k": ["a", "b"], "t": [1, 1], "v": [1.0, 2.0]}), token=0)
    with pytest.raises(AggregationError):
        s.feed(pd.DataFrame({"k": ["a", "b"], "t": [2, 2], "v": [5.0, 13.0]}), token=1)
    assert s.checkpoint_token == 0
    out = s.close().results
    assert out["s"].tolist() == [1.0, 2.0]


def test_a_user_monoid_stream_resumes() -> None:
    store = MemoryStore()
    kw = dict(keys="k", time="t", aggs=[("s", _boom_sum(), "v")], size=10, slide=10)
    windowagg.stream(store=store, **kw).feed(pd.DataFrame({"k": ["a"], "t": [1], "v": [2.0]}), 1)
    again = windowagg.stream(store=store, **kw)  # a new monoid object, the same parameters
    assert again.checkpoint_token == 1 and again.close().results["s"].tolist() == [2.0]


def test_commit_false_keeps_changes_until_commit() -> None:
    store = MemoryStore()
    kw = dict(keys="k", time="t", aggs=["count"], size=10, slide=10)
    s = windowagg.stream(store=store, **kw)
    s.feed(pd.DataFrame({"k": ["a"], "t": [1], "v": [1.0]}), token=5, commit=False)
    assert windowagg.stream(store=store, **kw).checkpoint_token is None
    s.feed(pd.DataFrame({"k": ["b"], "t": [2], "v": [1.0]}), token=6, commit=False)
    s.commit()
    again = windowagg.stream(store=store, **kw)
    assert again.checkpoint_token == 6 and len(again) == 2
    assert sorted(again.close().results["k"].tolist()) == ["a", "b"]


def test_stream_in_windowagg_namespace() -> None:
    assert windowagg.stream is windowagg.streaming.stream
    with pytest.raises(AttributeError):
        windowagg.no_such_thing  # noqa: B018
