"""Issue 37 step 5: several sizes over monoids on one pane tree (FiBA's window sharing).

A stream with ``Shape.sizes`` whose aggregations are all monoids keeps the largest size's
pane tree alone: each size's window ending at a row's end is a range of the same panes,
answered from its cover. Nothing but the state may change: every micro-batch's rows,
columns, revisions and refusals are the event log's (which served several sizes before),
the final revisions equal ``windowagg.pandas.window_agg`` with the same sizes, the stored
pieces are the largest size's stream's byte for byte, and a restored micro-batch reads only
the nodes it touches.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from typing import Any
from unittest.mock import patch

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from windowagg.monoids import Concat, Sum
from windowagg.pandas import parse, window_agg
from windowagg.windows.engine import KeyStream, Shape, pane_windows
from windowagg.windows.engine.sizes import size_label
from windowagg.windows.engine.stream import EventLog

#: Numeric kinds (one slice verb each), commutative monoids without a kind (mean,
#: variance: combine and lower), and non-commutative ones (Concat, first, last: open panes
#: keep their events).
AGGS: list[list[Any]] = [
    ["sum(v)", "count", "max(v)", "min(v)", "mean(v)", "variance(v)"],
    ["sum(v)", "count", ("cat_v", Concat(), "v", "array<double>"), "first(v)", "last(v)"],
]
#: Small integers and halves: float sums are exact in any order.
VALUES = st.sampled_from([0.0, 1.0, -2.0, 0.5, 3.0, -1.5, 7.0])
BATCHES = st.lists(
    st.tuples(
        st.lists(st.tuples(st.integers(0, 90), VALUES), max_size=14),  # duplicate times
        st.booleans(),  # restore from the stored bytes before this micro-batch
    ),
    max_size=8,
)


@st.composite
def sized_shapes(draw: st.DrawFn) -> Shape:
    """Hopping windows with 2-3 sizes on one grid of ends (sizes differ by multiples of
    the slide; the smaller ones may be shorter than the slide)."""
    slide = draw(st.integers(1, 7))
    offset = draw(st.integers(1, slide))
    multiples = draw(st.lists(st.integers(0, 5), min_size=2, max_size=3, unique=True))
    sizes = tuple(offset + m * slide for m in multiples)
    return Shape(size=max(sizes), slide=slide, sizes=sizes, start_time=draw(st.integers(-4, 4)))


def _value(v: Any) -> Any:
    if isinstance(v, (list, tuple, np.ndarray)):
        return tuple(v)
    if isinstance(v, (float, np.floating)) and math.isnan(v):
        return "nan"
    return v.item() if isinstance(v, np.generic) else v


def _same_columns(got: dict[str, Any], want: dict[str, Any]) -> None:
    """The same column names in the same order, types and values; floats to 1e-12 (mean
    and variance associate differently in a pane tree than in the event log's slices)."""
    assert list(got) == list(want)
    for c in want:
        g, w = got[c], want[c]
        assert type(g) is type(w), c
        if isinstance(w, np.ndarray):
            assert g.dtype == w.dtype, c
        assert len(g) == len(w), c
        for x, y in zip(map(_value, g), map(_value, w), strict=True):
            if isinstance(x, float) and isinstance(y, float):
                assert x == y or abs(x - y) <= 1e-12 * max(1.0, abs(y)), (c, got, want)
            else:
                assert x == y, (c, got, want)


@given(
    BATCHES,
    sized_shapes(),
    st.integers(0, 6),
    st.integers(0, 8),
    st.sampled_from(range(len(AGGS))),
    st.sampled_from([pane_windows._FEW, 0]),
)
def test_sizes_on_the_pane_tree_emit_what_the_event_log_does(
    batches: list[tuple[list[tuple[int, float]] | None, bool]],
    shape: Shape,
    ooo: int,
    allowed: int,
    which: int,
    few: int,
) -> None:
    """*few*: up to how many windows a micro-batch walks its covers in plain Python (0:
    every micro-batch takes numpy's covers and the slice verbs)."""
    with patch.object(pane_windows, "_FEW", few):
        _sizes_against_the_event_log(batches, shape, ooo, allowed, which)


def _sizes_against_the_event_log(
    batches: list[tuple[list[tuple[int, float]] | None, bool]],
    shape: Shape,
    ooo: int,
    allowed: int,
    which: int,
) -> None:
    aggs = parse(AGGS[which])
    kw: dict[str, Any] = {"max_out_of_orderness": ooo, "allowed_lateness": allowed}
    panes = KeyStream(aggs, shape, **kw)
    assert panes.layout == "panes"
    log = EventLog(aggs, shape, **kw)
    # the largest size alone: the tree several sizes keep must be its tree
    alone_shape = Shape(size=shape.size, slide=shape.slide, start_time=shape.start_time)
    alone = KeyStream(aggs, alone_shape, **kw)
    store: dict[int, bytes] = {}
    store_alone: dict[int, bytes] = {}
    meta: bytes | None = None
    rows: dict[int, dict[str, Any]] = {}  # window id -> its last revision
    refused: list[int] = []
    events: list[tuple[int, float]] = []
    for batch, restore in [*batches, (None, False)]:
        if restore:  # as after a restart: the state is the store's bytes only
            panes = KeyStream.restore(meta, store, aggs, shape, **kw)
            panes._check()
        if batch is not None:
            t = np.asarray([x for x, _ in batch], dtype=np.int64)
            v = np.asarray([y for _, y in batch], dtype=np.float64)
            got, d = panes.feed(t, {"v": v})
            want, _ = log.feed(t, {"v": v})
            d_alone = alone.feed(t, {"v": v})[1]
        else:  # the end: every window closes
            got, d = panes.advance(10**6)
            want, _ = log.advance(10**6)
            d_alone = alone.advance(10**6)[1]
        panes._check()
        _same_columns(got.columns, want.columns)
        assert got.ids.tolist() == want.ids.tolist()
        assert got.refused.tolist() == want.refused.tolist()
        assert got.reasons == want.reasons
        refused += (len(events) + got.refused).tolist()
        events += batch or []
        for j, i in enumerate(got.ids.tolist()):
            rev = int(got.columns["revision"][j])
            assert rev == (rows[i]["revision"] + 1 if i in rows else 0)  # 0, 1, 2, ...
            rows[i] = {c: got.columns[c][j] for c in got.columns}
        d.apply(store)
        d_alone.apply(store_alone)
        meta = d.meta
        assert store == panes.pieces() == store_alone  # one tree: the largest size's
    assert store == {}
    # the final revision of every row is the batch call's with the same sizes
    df = pd.DataFrame({"k": "a", "t": [x for x, _ in events], "v": [y for _, y in events]})
    assert shape.size is not None and shape.slide is not None
    batch_res = window_agg(
        df, "k", "t", AGGS[which], size=[z * 1e-6 for z in shape.sizes],
        slide=shape.slide * 1e-6, start_time=shape.start_time * 1e-6, time_unit="us",
        max_out_of_orderness=ooo * 1e-6, allowed_lateness=allowed * 1e-6,
    )  # fmt: skip
    assert sorted(refused) == batch_res.rejects["row_index"].tolist()
    want_rows = batch_res.results
    final = sorted(rows.values(), key=lambda r: int(r["end"]))
    ends = want_rows["window_end"].astype("datetime64[ns, UTC]").astype("int64") // 1000
    assert [int(r["end"]) for r in final] == ends.tolist()
    for a in parse(AGGS[which]):
        for z in shape.sizes:
            c = f"{a.alias}_{size_label(z)}"
            mine = [_value(r[c]) for r in final]
            theirs = [_value(x) for x in want_rows[c]]
            for x, y in zip(mine, theirs, strict=True):
                if isinstance(x, float) and isinstance(y, float):
                    assert x == y or abs(x - y) <= 1e-12 * max(1.0, abs(y)), c
                else:
                    assert x == y, (c, mine, theirs)


class _Counting(Mapping[int, bytes]):
    """A store view counting the look-ups (as Spark's MapState calls)."""

    def __init__(self, store: dict[int, bytes]) -> None:
        self.store, self.reads = store, 0

    def __getitem__(self, k: int) -> bytes:
        self.reads += 1
        return self.store[k]

    def get(self, k: int, default: Any = None) -> Any:
        self.reads += 1
        return self.store.get(k, default)

    def __contains__(self, k: object) -> bool:
        self.reads += 1
        return k in self.store

    def __iter__(self) -> Iterator[int]:
        raise AssertionError("the pane layout scanned every stored piece")

    def __len__(self) -> int:
        raise AssertionError("the pane layout asked how many pieces are stored")


def _reads(shape: Shape, batches: int) -> list[tuple[int, int]]:
    """(store look-ups, pieces stored) per micro-batch of one key restored from its bytes
    every micro-batch (as in Spark): 60 events over 5 minutes each, one in ten late by up
    to a minute (within the allowed lateness); max, sum, count."""
    minute = 60_000_000
    aggs = parse(["max(v)", "sum(v)", "count"])
    kw = {"max_out_of_orderness": minute, "allowed_lateness": minute}
    rng = np.random.default_rng(37)
    store: dict[int, bytes] = {}
    meta: bytes | None = None
    out = []
    for b in range(batches):
        t = np.sort(rng.integers(b * 5 * minute, (b + 1) * 5 * minute, 60))
        t[::10] -= rng.integers(0, minute, len(t[::10]))
        view = _Counting(store)
        s = KeyStream.restore(meta, view, aggs, shape, **kw)
        d = s.feed(t, {"v": rng.random(60)})[1]
        d.apply(store)
        meta = d.meta
        out.append((view.reads, len(store)))
    return out


def test_a_micro_batch_reads_the_nodes_it_touches_for_every_size() -> None:
    """Sizes 1 h and 10 h keep the 10 h tree alone (the same pieces) and a micro-batch
    reads O(log w) nodes per emitted row and size: within 2x of the 10 h size alone (one
    more cover per row), flat once the 10 h window is full, and a small part of what is
    stored (never a scan: the view refuses iteration)."""
    minute, hour = 60_000_000, 3_600_000_000
    both = Shape(size=10 * hour, slide=minute, sizes=(hour, 10 * hour))
    large = Shape(size=10 * hour, slide=minute)
    got, alone = _reads(both, 150), _reads(large, 150)
    assert [n for _, n in got] == [n for _, n in alone]  # the same tree
    tail, tail_alone = got[-20:], alone[-20:]  # 10 h = 120 micro-batches: full
    med = lambda rows: float(np.median([r for r, _ in rows]))  # noqa: E731
    assert med(tail) <= 2 * med(tail_alone), (med(tail), med(tail_alone))
    reads = [r for r, _ in tail]
    assert max(reads) <= 1.5 * min(reads)  # flat while the state keeps 10 h
    assert max(reads) * 2 < tail[-1][1]  # a small part of the stored pieces (~1,200)


def test_the_sizes_stream_takes_the_pane_layout_for_monoids_and_quantiles() -> None:
    """Several sizes of monoids and exact quantiles take the pane layout (the quantiles'
    pane values, :mod:`windowagg.windows.engine.values`); sketches keep the event log. The
    pane layout's configuration names the sizes, so a state written without them is
    refused rather than misread."""
    from windowagg.errors import CodecError

    shape = Shape(size=10, slide=5, sizes=(5, 10))
    assert KeyStream(parse(["max(v)", "count"]), shape).layout == "panes"
    assert KeyStream(parse(["max(v)", "p95(v)"]), shape).layout == "panes"
    aggs = parse(["max(v)"])
    one = KeyStream(aggs, Shape(size=10, slide=5))
    d = one.feed(np.array([1, 7]), {"v": np.array([1.0, 2.0])})[1]
    store: dict[int, bytes] = {}
    d.apply(store)
    with pytest.raises(CodecError, match="sizes"):
        KeyStream.restore(d.meta, store, aggs, shape)


class _Fragile(Sum):
    """Sum that refuses to combine past 100: a monoid failing in one size's window only."""

    def combine(self, a: Any, b: Any) -> Any:
        if a + b > 100:
            raise OverflowError("past 100")
        return a + b


@pytest.mark.parametrize("few", [48, 0])
def test_a_monoid_failing_in_one_size_is_named_as_the_event_log_names_it(few: int) -> None:
    """A combine that raises only in the larger size's window (a split node of the tree):
    the same AggregationError as the event log's (that size's column, the row), and the
    micro-batch changes nothing (the smaller size alone then answers)."""
    from windowagg.errors import AggregationError

    aggs = [("s", _Fragile(), "v")]
    shape = Shape(size=20, slide=10, sizes=(10, 20))
    t, v = np.array([1, 2, 11, 12]), np.array([30.0, 30.0, 30.0, 30.0])
    errors = []
    with patch.object(pane_windows, "_FEW", few):
        for s in (KeyStream(parse(aggs), shape), EventLog(parse(aggs), shape)):
            before = s.meta_bytes()
            with pytest.raises(AggregationError) as info:
                s.feed(np.concatenate([t, [40]]), {"v": np.concatenate([v, [1.0]])})
            assert s.meta_bytes() == before
            errors.append(info.value)
    got, want = errors
    assert (got.alias, got.window, str(got)) == (want.alias, want.window, str(want))
    assert got.alias == "s_20us" and got.window == 1  # the row ending at 20
