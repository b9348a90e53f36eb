"""Exact quantiles on the pane layout (windows.engine.values.Values) against the batch engine.

Hopping and tumbling windows whose aggregations include exact quantiles take the pane layout:
values per pane in pieces, one order-statistics multiset at a cursor window. Once the
watermark has passed everything, the final revision of every window equals
``windowagg.pandas.window_agg`` exactly (random cuts, out of order, late-but-accepted,
duplicate times and values, non-finite values refused, restarts through bytes); the multiset
work per micro-batch is counted: it follows the panes that enter or leave the cursor and the
events that land, not the window's values.
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from windowagg.errors import CodecError
from windowagg.order_statistics import OrderStatistics
from windowagg.pandas import parse, window_agg
from windowagg.windows.engine import Shape
from windowagg.windows.engine import bands as bands_module
from windowagg.windows.engine import values as values_module
from windowagg.windows.engine.panes import PaneStream
from windowagg.windows.engine.stream import KeyStream
from windowagg.windows.engine.values import Values, is_value_key, value_key

#: Aggregation sets: quantiles alone, and mixed with monoids (one pane layout, two
#: components); Concat-free, so every plan is commutative, and one with a non-commutative
#: monoid (first) whose open panes keep their events.
AGG_SETS = [
    ["p95(v)"],
    ["median(v)", "p10(v)", "p99.9(v)"],
    ["max(v)", "sum(v)", "count", "p95(v)"],
    ["first(v)", "p50(v)", "min(v)"],
]
VALUES = st.one_of(
    st.sampled_from([0.0, 1.0, 2.0, 2.5, -3.0, 7.0, -0.5]),  # many duplicates
    st.integers(-20, 20).map(float),
    st.sampled_from([float("inf"), float("nan")]),  # refused, as window_agg does
)
FINITE = st.one_of(
    st.sampled_from([0.0, 1.0, 2.0, 2.5, -3.0, 7.0, -0.5]), st.integers(-20, 20).map(float)
)
HOPPING = st.builds(
    lambda size, slide, start: {"size": size, "slide": slide, "start_time": start},
    st.integers(1, 14),
    st.integers(1, 8),
    st.integers(-4, 4),
)


@st.composite
def streams(draw: Any) -> tuple[np.ndarray, np.ndarray, list[int], list[bool]]:
    n = draw(st.integers(0, 40))
    ts = draw(st.lists(st.integers(0, 60), min_size=n, max_size=n))
    vs = draw(st.lists(VALUES, min_size=n, max_size=n))
    cuts = sorted(draw(st.lists(st.integers(0, n), max_size=6)))
    restarts = draw(st.lists(st.booleans(), min_size=len(cuts) + 2, max_size=len(cuts) + 2))
    return np.asarray(ts, np.int64), np.asarray(vs, np.float64), cuts, restarts


def _us(shape: dict[str, int]) -> dict[str, Any]:
    return {k: v * 10**-6 for k, v in shape.items()}


def _aliases(aggs: list[Any]) -> list[str]:
    return [a.alias for a in aggs]


@given(
    streams(),
    HOPPING,
    st.sampled_from(AGG_SETS),
    st.integers(0, 6),
    st.integers(0, 8),
    st.booleans(),
    st.sampled_from([None, 0, 1]),
)
def test_final_revisions_equal_the_batch_answer_exactly(
    data: tuple[np.ndarray, np.ndarray, list[int], list[bool]],
    shape: dict[str, int],
    names: list[str],
    ooo: int,
    allowed: int,
    cursor: bool,
    margin: int | None,
) -> None:
    """*cursor*: every window by the cursor (no scratch slide for short windows), else
    as it comes (these small windows mostly take the scratch slide); *margin*: the
    cursor's rank bands that narrow (0, 1: a band of one to three ranks, rebuilt whenever
    the rank leaves it), or as configured (None: these small windows' bands hold them
    whole)."""
    old = values_module._PER_WINDOW, values_module._FRESH_SLIDE, bands_module.MARGIN
    values_module._PER_WINDOW = 0 if cursor else old[0]
    values_module._FRESH_SLIDE = not cursor and old[1]
    bands_module.MARGIN = old[2] if margin is None else margin
    try:
        _final_revisions_equal(data, shape, names, ooo, allowed)
    finally:
        values_module._PER_WINDOW, values_module._FRESH_SLIDE, bands_module.MARGIN = old


def _final_revisions_equal(
    data: tuple[np.ndarray, np.ndarray, list[int], list[bool]],
    shape: dict[str, int],
    names: list[str],
    ooo: int,
    allowed: int,
) -> None:
    ts, vs, cuts, restarts = data
    aggs = parse(names)
    cols = _aliases(aggs)
    kw: dict[str, Any] = {"max_out_of_orderness": ooo, "allowed_lateness": allowed}
    s = KeyStream(aggs, Shape(**shape), **kw)
    assert s.layout == "panes"
    meta: bytes | None = None
    store: dict[int, bytes] = {}
    rows: list[dict[str, Any]] = []
    refused: list[int] = []
    bounds = [0, *cuts, len(ts)]

    def collect(res: Any) -> None:
        for j in range(len(res.columns["end"])):
            row = {c: res.columns[c][j] for c in ["start", "end", "revision", *cols]}
            rows.append(row)

    for (lo, hi), again in zip(itertools.pairwise(bounds), restarts, strict=False):
        if again:  # a restart: the state from its bytes only
            s = KeyStream.restore(meta, store, aggs, Shape(**shape), **kw)
            s._check()
        res, delta = s.feed(ts[lo:hi], {"v": vs[lo:hi]})
        s._check()
        delta.apply(store)
        meta = delta.meta
        assert store == s.pieces()  # the deltas kept the store equal to the state
        collect(res)
        refused.extend((lo + res.refused).tolist())
    if restarts[-1]:
        s = KeyStream.restore(meta, store, aggs, Shape(**shape), **kw)
    res, delta = s.advance(10**6)
    s._check()
    collect(res)
    delta.apply(store)
    assert store == {}  # every pane dead: its values went with it
    # the batch answer, lateness judged in input order as the stream's arrival order
    df = pd.DataFrame({"k": "a", "t": ts, "v": vs})
    lateness = {"max_out_of_orderness": ooo * 10**-6, "allowed_lateness": allowed * 10**-6}
    batch = window_agg(df, "k", "t", names, time_unit="us", **lateness, **_us(shape))
    assert sorted(refused) == batch.rejects["row_index"].tolist()
    want = batch.results
    got = pd.DataFrame(rows, columns=["start", "end", "revision", *cols])
    for _, g in got.groupby("start"):
        assert g["revision"].tolist() == list(range(len(g)))
    final = got.groupby("start").tail(1).sort_values("start").reset_index(drop=True)
    assert len(final) == len(want)
    us = want["window_end"].astype("datetime64[ns, UTC]").astype("int64") // 1000
    assert final["end"].tolist() == us.tolist()
    for c in cols:
        assert final[c].to_numpy(float).tolist() == want[c].to_numpy(float).tolist(), c


class Counting:
    """An OrderStatistics that counts the values it is given and loses."""

    inserted = 0
    evicted = 0
    made = 0

    def __init__(self) -> None:
        Counting.made += 1
        self._ms = OrderStatistics()

    def bulk_insert(self, values: Any) -> None:
        Counting.inserted += len(values)
        self._ms.bulk_insert(values)

    def bulk_evict(self, values: Any) -> None:
        Counting.evicted += len(values)
        self._ms.bulk_evict(values)

    def kth(self, k: int) -> Any:
        return self._ms.kth(k)

    def __len__(self) -> int:
        return len(self._ms)

    def __iter__(self) -> Any:
        return iter(self._ms)


def _counted_run(panes_per_window: int, rate: int) -> list[tuple[int, int, int]]:
    """One key, slide 10, window *panes_per_window* slides, *rate* events per pane (values
    repeat), fed one slide per micro-batch plus one late event; per micro-batch after the
    first window: (values inserted, values evicted, events fed)."""
    aggs = parse(["p95(v)", "max(v)"])
    shape = Shape(size=10 * panes_per_window, slide=10)
    s = PaneStream(aggs, shape, allowed_lateness=10)
    assert s._values is not None
    s._values._make = Counting
    out = []
    rng = np.random.default_rng(7)
    for step in range(3 * panes_per_window):
        t = np.sort(rng.integers(step * 10, step * 10 + 10, rate))
        if step:  # a late-but-accepted event in the previous pane
            t = np.append(t, step * 10 - 3)
        before = (Counting.inserted, Counting.evicted, Counting.made)
        s.feed(t, {"v": (t % 13).astype(np.float64)})
        s._check()
        if step > panes_per_window + 1:
            assert Counting.made == before[2]  # the cursor moved, never rebuilt
            out.append((Counting.inserted - before[0], Counting.evicted - before[1], len(t)))
    return out


def test_multiset_work_follows_the_panes_moved_not_the_window() -> None:
    small = _counted_run(8, 40)
    large = _counted_run(64, 40)
    assert small and large
    for ins, ev, m in small + large:
        # a micro-batch emits one new window and revises one: the cursor takes one new
        # pane and the late event, moves back over one pane and forward again
        assert ins <= 3 * m and ev <= 3 * m, (ins, ev, m)
    # the same work whatever the window holds (8 x 40 against 64 x 40 values)
    assert max(i + e for i, e, _ in large) <= max(i + e for i, e, _ in small) + 10


def test_a_late_event_revises_the_quantile_and_its_pane_piece() -> None:
    aggs = parse(["p50(v)", "count"])
    s = KeyStream(aggs, Shape(size=10, slide=5), allowed_lateness=20)
    res, d = s.feed(np.array([1, 2, 7, 12]), {"v": np.array([1.0, 2.0, 9.0, 3.0])})
    assert res.columns["end"].tolist() == [5, 10]
    assert res.columns["p50_v"].tolist() == [1.0, 2.0]
    assert sorted(k >> 6 for k in d.put if is_value_key(k)) == [0, 1, 2]
    res, d = s.feed(np.array([3, 4]), {"v": np.array([8.0, 8.0])})  # late, accepted
    assert res.columns["end"].tolist() == [5, 10]
    assert res.columns["revision"].tolist() == [1, 1]
    assert res.columns["p50_v"].tolist() == [2.0, 8.0]
    assert [k for k in d.put if is_value_key(k)] == [value_key(0)]  # only pane 0's values


def test_dead_panes_drop_their_values_and_state_stays_bounded() -> None:
    aggs = parse(["max(v)", "p95(v)"])
    s = KeyStream(aggs, Shape(size=100, slide=10), allowed_lateness=10)
    store: dict[int, bytes] = {}
    most = 0
    for step in range(60):
        t = np.arange(step * 20, step * 20 + 20, dtype=np.int64)
        _, d = s.feed(t, {"v": t.astype(np.float64)})
        d.apply(store)
        held = [k >> 6 for k in store if is_value_key(k)]
        most = max(most, len(held))
        assert held == sorted(k >> 6 for k in store if k & 63 == 0)  # one per stored pane
    # window 100 + lateness 10 + one micro-batch of 20: at most 13 panes of 10
    assert most <= 13
    s._check()


def test_a_corrupted_value_piece_is_a_codec_error() -> None:
    aggs = parse(["p95(v)"])
    shape = Shape(size=10, slide=5)
    s = KeyStream(aggs, shape)
    _, d = s.feed(np.array([1, 2]), {"v": np.array([1.0, 2.0])})
    store: dict[int, bytes] = {}
    d.apply(store)
    bad = dict(store)
    bad[value_key(0)] = store[value_key(0)][:-3]
    r = KeyStream.restore(d.meta, bad, aggs, shape)
    with pytest.raises(CodecError):
        r.advance(100)


def test_values_answers_each_window_from_the_cursor() -> None:
    v = Values({"v": [("p50_v", 1, 2)]}, width=2, step=2, present=lambda a, b: range(a, b + 1))
    v.add([0, 1, 2, 3], [0, 1, 2, 3], [1, 2, 3, 4], {"v": np.array([4.0, 1.0, 3.0, 2.0])})
    got = v.answers([0, 1])  # two short windows: one scratch slide, the cursor untouched
    assert got["p50_v"].tolist() == [1.0, 2.0] and v.held is None and v.scratch == 4
    assert v.answers([0])["p50_v"].tolist() == [1.0] and v.held == (0, 1)
    assert v.answers([1])["p50_v"].tolist() == [2.0]
    assert v.held == (2, 3) and v.inserted == 4 and v.evicted == 0  # disjoint: refilled


def test_several_sizes_take_the_pane_layout_with_one_cursor_per_size(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Sizes [10, 30] every 5 with p50: one pane layout, each size answered by its own
    cursor (width 2 and 6 panes) over the same value pieces; rows equal the batch call's
    (a window of the small size holding no event: NaN, as the batch)."""
    from windowagg.windows.engine.sizes import size_label

    monkeypatch.setattr(values_module, "_PER_WINDOW", 0)  # the cursors, not scratch slides
    monkeypatch.setattr(values_module, "_FRESH_SLIDE", False)
    aggs = parse(["p50(v)", "count"])
    shape = Shape(size=30, slide=5, sizes=(10, 30))
    s = KeyStream(aggs, shape, allowed_lateness=5)
    assert s.layout == "panes"
    ts = np.array([1, 3, 8, 21, 22, 40, 44, 17, 60], dtype=np.int64)
    vs = np.array([5.0, 1.0, 3.0, 2.0, 2.0, 9.0, 4.0, 6.0, 7.0])
    rows: dict[int, dict[str, Any]] = {}
    names = [f"{a}_{size_label(z)}" for a in ("p50_v", "count") for z in (10, 30)]
    store: dict[int, bytes] = {}
    meta = None
    for lo, hi in ((0, 4), (4, 8), (8, 9)):
        s = KeyStream.restore(meta, store, aggs, shape, allowed_lateness=5)
        res, d = s.feed(ts[lo:hi], {"v": vs[lo:hi]})
        s._check()
        d.apply(store)
        meta = d.meta
        for j, i in enumerate(res.ids.tolist()):
            rows[i] = {c: res.columns[c][j] for c in ["end", *names]}
    assert isinstance(s._state, PaneStream) and s._state._values is not None
    assert sorted(s._state._values._cursors) == [2, 6]
    res, _ = KeyStream.restore(meta, store, aggs, shape, allowed_lateness=5).advance(10**6)
    for j, i in enumerate(res.ids.tolist()):
        rows[i] = {c: res.columns[c][j] for c in ["end", *names]}
    df = pd.DataFrame({"k": "a", "t": ts, "v": vs})
    batch = window_agg(
        df, "k", "t", ["p50(v)", "count"], size=[10e-6, 30e-6], slide=5e-6, time_unit="us",
        allowed_lateness=5e-6,
    )  # fmt: skip
    want = batch.results
    final = sorted(rows.values(), key=lambda r: int(r["end"]))
    assert len(final) == len(want)
    for c in names:
        got = [np.nan if r[c] is None else float(r[c]) for r in final]
        np.testing.assert_array_equal(got, want[c].to_numpy(dtype=np.float64), err_msg=c)


@given(
    st.integers(1, 12),
    st.integers(1, 4),
    st.lists(
        st.tuples(
            st.lists(st.tuples(st.integers(0, 30), FINITE), max_size=30),
            st.integers(0, 30),
            st.integers(0, 6),
        ),
        min_size=1,
        max_size=8,
    ),
    st.sampled_from([0, 1, 3]),
)
def test_narrow_bands_answer_every_window_exactly(
    width: int, step: int, rounds: list[tuple[list[tuple[int, float]], int, int]], margin: int
) -> None:
    """The cursor's rank bands with a margin of a few ranks (rebuilt whenever the rank
    leaves them) against the sorted values of each window: values landing in held panes,
    the cursor moving forward and back (revisions), dead panes dropped; the invariant
    after every call."""
    old = bands_module.MARGIN
    bands_module.MARGIN = margin
    try:
        stored: dict[int, list[float]] = {}
        v = Values(
            {"v": [("p50_v", 1, 2), ("p95_v", 19, 20), ("p10_v", 1, 10)]},
            width=width,
            step=step,
            present=lambda a, b: [p for p in sorted(stored) if a <= p <= b],
            multiset=OrderStatistics,
        )
        values_module_few = values_module._PER_WINDOW, values_module._FRESH_SLIDE
        values_module._PER_WINDOW = 0  # the cursor, not the scratch slide
        values_module._FRESH_SLIDE = False
        try:
            for events, first, count in rounds:
                events = sorted(events)
                panes = sorted({p for p, _ in events})
                if panes:
                    lo = [next(j for j, e in enumerate(events) if e[0] == p) for p in panes]
                    hi = [*lo[1:], len(events)]
                    v.add(panes, lo, hi, {"v": np.array([x for _, x in events])})
                    for p, x in events:
                        stored.setdefault(p, []).append(x)
                ks = [
                    k
                    for k in range(first, first + count)
                    if any(k * step <= p < k * step + width for p in stored)
                ]
                got = v.answers(ks)
                for j, k in enumerate(ks):
                    held = sorted(
                        x
                        for p, xs in stored.items()
                        if k * step <= p < k * step + width
                        for x in xs
                    )
                    for alias, num, den in (("p50_v", 1, 2), ("p95_v", 19, 20), ("p10_v", 1, 10)):
                        assert got[alias][j] == held[max(1, -(-num * len(held) // den)) - 1]
                dead = [p for p in sorted(stored) if p < first * step - 2]
                v.drop(dead)
                for p in dead:
                    del stored[p]
                v._check(sorted(stored))
        finally:
            values_module._PER_WINDOW, values_module._FRESH_SLIDE = values_module_few
    finally:
        bands_module.MARGIN = old


def test_add_takes_runs_in_any_place() -> None:
    """Runs end to end (the engine's callers: one sort) and runs apart or reordered (each
    pane's run sorted on its own) give the same sorted pieces."""
    x = np.array([3.0, 1.0, 2.0, 9.0, 0.5, 4.0])
    together = Values({"v": [("p50_v", 1, 2)]}, width=2, step=1, present=lambda a, b: [0, 1])
    together.add([0, 1], [0, 3], [3, 6], {"v": x})
    apart = Values({"v": [("p50_v", 1, 2)]}, width=2, step=1, present=lambda a, b: [0, 1])
    apart.add([0, 1], [3, 0], [6, 2], {"v": x})
    assert together.piece(0) != apart.piece(0)
    assert [together._chunks.get(value_key(p))["v"].tolist() for p in (0, 1)] == [
        [1.0, 2.0, 3.0],
        [0.5, 4.0, 9.0],
    ]
    assert [apart._chunks.get(value_key(p))["v"].tolist() for p in (0, 1)] == [
        [0.5, 4.0, 9.0],
        [1.0, 3.0],
    ]
    apart.add([1], [2], [3], {"v": x})  # merged into the stored piece
    assert apart._chunks.get(value_key(1))["v"].tolist() == [1.0, 2.0, 3.0]


QS = {"v": [("p50_v", 1, 2), ("p95_v", 19, 20), ("p10_v", 1, 10)], "w": [("p95_w", 19, 20)]}


@given(
    st.integers(1, 12),
    st.integers(1, 4),
    st.lists(
        st.tuples(
            st.lists(st.tuples(st.integers(0, 40), FINITE), max_size=40),
            st.integers(0, 40),
            st.integers(0, 8),
            st.booleans(),
        ),
        min_size=1,
        max_size=8,
    ),
)
def test_a_fresh_cursor_slide_answers_as_the_cursor(
    width: int, step: int, rounds: list[tuple[list[tuple[int, float]], int, int, bool]]
) -> None:
    """Windows whose cursor is not built (a new or restored state's) answered by one
    scratch slide over their span (:data:`~.values._FRESH_SLIDE`) against the cursor
    stepping window by window, in lockstep over the same rounds (values landing, the
    windows moving forward and back, dead panes dropped; *restore*: the slide's state
    read back from its flushed pieces, as Spark's handler does every micro-batch): the
    same answers, the sorted values' nearest ranks, and the invariant after every call."""
    old = values_module._PER_WINDOW, values_module._FRESH_SLIDE
    stored: dict[int, list[float]] = {}
    pieces: dict[int, bytes] = {}

    def present(a: int, b: int) -> list[int]:
        return [p for p in sorted(stored) if a <= p <= b]

    def make(store: dict[int, bytes] | None) -> Values:
        return Values(QS, width=width, step=step, present=present, store=store)

    walk, slide = make(None), make(None)
    try:
        values_module._PER_WINDOW = 0  # short windows: the cursor (walk) or a fresh slide
        for events, first, count, restore in rounds:
            if restore:
                slide = make(dict(pieces))
            events = sorted(events)
            panes = sorted({p for p, _ in events})
            if panes:
                lo = [next(j for j, e in enumerate(events) if e[0] == p) for p in panes]
                hi = [*lo[1:], len(events)]
                cols = {
                    "v": np.array([x for _, x in events]),
                    "w": -np.array([x for _, x in events]),
                }
                walk.add(panes, lo, hi, cols)
                slide.add(panes, lo, hi, cols)
                for p, x in events:
                    stored.setdefault(p, []).append(x)
            ks = [
                k
                for k in range(first, first + count)
                if any(k * step <= p < k * step + width for p in stored)
            ]
            values_module._FRESH_SLIDE = False
            want = walk.answers(ks)
            values_module._FRESH_SLIDE = True
            got = slide.answers(ks)
            for j, k in enumerate(ks):
                held = sorted(
                    x for p, xs in stored.items() if k * step <= p < k * step + width for x in xs
                )
                assert want["p50_v"][j] == held[max(1, -(-len(held) // 2)) - 1]
            for alias in want:
                assert got[alias].tolist() == want[alias].tolist(), alias
            dead = [p for p in sorted(stored) if p < first * step - 2]
            walk.drop(dead)
            slide.drop(dead)
            for p in dead:
                del stored[p]
            walk._check(sorted(stored))
            slide._check(sorted(stored))
            put, gone = slide.flush(True)
            walk.flush(True)
            pieces.update(put)
            for key in gone:
                pieces.pop(key, None)
    finally:
        values_module._PER_WINDOW, values_module._FRESH_SLIDE = old


def test_a_fresh_cursor_is_built_once_when_it_next_moves() -> None:
    """Restored windows take one slide and leave the cursor at the last window unbuilt
    (nothing inserted into a band); kept in memory, the next micro-batch builds it at its
    first window (one window's values) and later ones only move it (a pane's values)."""
    v = Values({"v": [("p95_v", 19, 20)]}, width=10, step=1, present=lambda a, b: range(a, b + 1))
    x = np.arange(400, dtype=np.float64)  # 20 values per pane
    v.add(list(range(20)), list(range(0, 400, 20)), list(range(20, 420, 20)), {"v": x})
    got = v.answers(range(0, 8))  # 8 windows of 200 values: not short; no cursor: fresh
    assert got["p95_v"].tolist() == [x[20 * k + 189] for k in range(8)]
    assert v.held == (7, 16) and v.inserted == 0 and v.scratch == 17 * 20
    assert v.answers([8, 9])["p95_v"].tolist() == [x[160 + 189], x[180 + 189]]
    built = v.inserted  # the cursor: built at window 8, then moved
    assert built > 0 and v.gathered == 200 and v.scratch == 17 * 20
    v.answers([10, 11])
    assert v.gathered == 200 and v.inserted - built <= 2 * 20  # moved by two panes


@given(
    st.lists(
        st.lists(st.floats(-1e9, 1e9), min_size=1, max_size=5).map(sorted), min_size=0, max_size=8
    ),
    st.integers(1, 3),
)
def test_pieces_encoded_together_are_encoded_one_by_one(panes: list[list[float]], k: int) -> None:
    """Values._encode_many cuts every piece's buffer (its columns end to end) from one
    buffer of all the pieces' values: the same bytes as each piece on its own, for one
    column and several."""
    cols = [f"c{j}" for j in range(k)]
    v = Values({c: [(f"p50_{c}", 1, 2)] for c in cols}, width=3, step=1, present=range)
    recs = [{c: np.asarray(xs, np.float64) + j for j, c in enumerate(cols)} for xs in panes]
    keys = [value_key(p) for p in range(len(recs))]
    assert v._encode_many(keys, recs) == [
        v._encode(key, r) for key, r in zip(keys, recs, strict=True)
    ]
