"""Issue 37 (the pane layout's constant factor): every emitted window's cover is found with
numpy (``covers.covers``) and answered by one slice verb per aggregation, the ancestors are
refreshed level by level. Nothing but the speed may change: the covers are the scalar
walk's (``covers.cover``), the answers and revisions are the event log's on the same
stream, and the stored pieces are the tree the pane layout has always written (each
pane's partials are its admitted events' fold, each node its children's combine:
``PaneStream._check``), through restores from the pieces at any micro-batch.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from windowagg import codec
from windowagg.monoids import Concat
from windowagg.pandas import parse
from windowagg.windows.engine import KeyStream, Shape
from windowagg.windows.engine.covers import TABLE_TOP, cover, covers, covers_levels
from windowagg.windows.engine.stream import EventLog


@given(
    st.lists(st.integers(-10_000, 10_000), max_size=40),
    st.integers(1, 3000),
    st.integers(0, 3),
)
def test_covers_are_the_scalar_walks(starts: list[int], width: int, extra: int) -> None:
    top = (width - 1).bit_length() + extra  # 2**top >= width, as PaneStream's (or more)
    a = np.asarray(starts, dtype=np.int64)
    want = [(i << 6) | lv for x in starts for lv, i in cover(x, x + width - 1, top)]
    counts = [len(cover(x, x + width - 1, top)) for x in starts]
    for fn in (covers, covers_levels):  # the table (top <= TABLE_TOP) and the walk
        keys, n = fn(a, width, top)
        assert keys.tolist() == want
        assert n.tolist() == counts
    assert TABLE_TOP < 13  # widths above 2**12 panes take the walk


#: Commutative numeric kinds (one slice verb each), a commutative monoid without a kind
#: (mean, variance: combine and lower), and a non-commutative one (Concat: open panes keep
#: their events) with ``first``.
AGGS: list[list[Any]] = [
    ["sum(v)", "count", "max(v)", "min(v)", "mean(v)", "variance(v)"],
    ["sum(v)", "count", ("cat_v", Concat(), "v", "array<double>"), "first(v)", "max(v)"],
]
#: Small integers and halves: float sums are exact in any order, so the pane tree's
#: association and the event log's agree to the bit.
VALUES = st.sampled_from([0.0, 1.0, -2.0, 0.5, 3.0, -1.5, 7.0])
BATCHES = st.lists(
    st.tuples(
        st.lists(st.tuples(st.integers(0, 80), VALUES), max_size=12),  # duplicate times
        st.booleans(),  # restore from the pieces before this micro-batch
    ),
    max_size=8,
)


def _rows(res: Any, names: list[str]) -> list[tuple[Any, ...]]:
    c = res.columns
    out = []
    for j in range(len(c["end"])):
        vals = [c[a][j] for a in names]
        vals = [tuple(v) if isinstance(v, (list, tuple, np.ndarray)) else v for v in vals]
        out.append((int(c["start"][j]), int(c["end"][j]), int(c["revision"][j]), *vals))
    return sorted(out, key=lambda r: r[:3])  # one row per (start, end, revision)


def _same(got: list[tuple[Any, ...]], want: list[tuple[Any, ...]]) -> None:
    """Equal rows; floats to 1e-12 (mean and variance associate differently in a pane
    tree than in the event log's slices), everything else exactly."""
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        assert len(g) == len(w)
        for x, y in zip(g, w, strict=True):
            if isinstance(x, float) and isinstance(y, float):
                assert x == y or abs(x - y) <= 1e-12 * max(1.0, abs(y)), (g, w)
            else:
                assert x == y, (g, w)


def _panes_of(store: dict[int, bytes]) -> dict[int, Any]:
    return {k >> 6: codec.loads(v) for k, v in store.items() if k & 63 == 0}


@given(
    BATCHES,
    st.integers(1, 12),
    st.integers(1, 12),
    st.integers(-5, 5),
    st.integers(0, 6),
    st.integers(0, 8),
    st.sampled_from(range(len(AGGS))),
)
def test_pane_layout_answers_and_pieces_equal_the_event_logs(
    batches: list[tuple[list[tuple[int, float]], bool]],
    size: int,
    slide: int,
    start: int,
    ooo: int,
    allowed: int,
    which: int,
) -> None:
    aggs = parse(AGGS[which])
    names = [a.alias for a in aggs]
    shape = Shape(size=size, slide=slide, start_time=start)
    kw: dict[str, Any] = {"max_out_of_orderness": ooo, "allowed_lateness": allowed}
    panes = KeyStream(aggs, shape, **kw)
    assert panes.layout == "panes"
    log = EventLog(aggs, shape, **kw)
    store: dict[int, bytes] = {}
    meta: bytes | None = None
    admitted: list[tuple[int, int, float]] = []  # (time, arrival, value) of admitted events
    seq = 0
    for events, restore in batches:
        if restore:  # as after a restart: the state is the store's pieces only
            panes = KeyStream.restore(meta, store, aggs, shape, **kw)
            panes._state._check()
        t = np.asarray([x for x, _ in events], dtype=np.int64)
        v = np.asarray([y for _, y in events], dtype=np.float64)
        got, d = panes.feed(t, {"v": v})
        want, _ = log.feed(t, {"v": v})
        panes._state._check()
        _same(_rows(got, names), _rows(want, names))
        assert got.refused.tolist() == want.refused.tolist()
        refused = set(got.refused.tolist())
        admitted += [(x, seq + i, y) for i, (x, y) in enumerate(events) if i not in refused]
        seq += len(events)
        d.apply(store)
        meta = d.meta
        assert store == panes.pieces()  # the deltas keep the store equal to the state
        if which == 0:  # commutative: every stored pane is the fold of its live events
            g = np.gcd(size, slide)
            for p, rec in _panes_of(store).items():
                mine = sorted((x, a, y) for x, a, y in admitted if (x - start) // g == p)
                vals = [y for _, _, y in mine]
                assert rec[0] == "p"
                assert rec[1][:4] == (sum(vals), len(vals), max(vals), min(vals))
    got, d = panes.advance(10**6)
    want, _ = log.advance(10**6)
    _same(_rows(got, names), _rows(want, names))
    d.apply(store)
    assert store == {}
