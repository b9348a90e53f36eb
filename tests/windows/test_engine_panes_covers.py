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
#: their events) with ``first``; numeric kinds alone (their combines inlined, windows
#: answered from the panes when that pays: ``PaneStream._dense``), and with an exact p95.
AGGS: list[list[Any]] = [
    ["sum(v)", "count", "max(v)", "min(v)", "mean(v)", "variance(v)"],
    ["sum(v)", "count", ("cat_v", Concat(), "v", "array<double>"), "first(v)", "max(v)"],
    ["sum(v)", "count", "max(v)", "min(v)"],
    ["sum(v)", "count", "max(v)", "p95(v)"],
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
        if which in (0, 2):  # commutative: every stored pane is the fold of its live events
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


def _counted(monkeypatch: Any) -> dict[str, int]:
    """Count the calls of the two ways a micro-batch answers its windows: from the panes,
    or from the covers (numpy's gather, or the walk for a few windows)."""
    from windowagg.windows.engine.panes import PaneStream

    calls = {"dense": 0, "covers": 0}
    dense, gathered, walk = PaneStream._dense, PaneStream._gathered, PaneStream._close_walk

    def count_dense(self: Any, ks: list[int]) -> Any:
        calls["dense"] += 1
        return dense(self, ks)

    def count_gathered(self: Any, a: np.ndarray, width: int) -> Any:
        calls["covers"] += 1
        return gathered(self, a, width)

    def count_walk(self: Any, *args: Any) -> Any:
        calls["covers"] += 1
        return walk(self, *args)

    monkeypatch.setattr(PaneStream, "_dense", count_dense)
    monkeypatch.setattr(PaneStream, "_gathered", count_gathered)
    monkeypatch.setattr(PaneStream, "_close_walk", count_walk)
    return calls


def test_many_windows_are_answered_from_the_panes_with_the_covers_answers(
    monkeypatch: Any,
) -> None:
    """Numeric kinds, 1 h / 1 min, micro-batches of 90 minutes: each emits ~90 windows over
    ~150 panes (at most 2 per window), answered from the panes by one
    slice verb per aggregation, with the event log's answers; one window (a revision) is
    answered from its cover."""
    minute = 60
    aggs = parse(["sum(v)", "count", "max(v)", "min(v)"])
    names = [a.alias for a in aggs]
    shape = Shape(size=60 * minute, slide=minute)
    kw: dict[str, Any] = {"allowed_lateness": 2 * minute}
    panes, log = KeyStream(aggs, shape, **kw), EventLog(aggs, shape, **kw)
    calls = _counted(monkeypatch)
    rng = np.random.default_rng(37)
    for b in range(6):
        t = np.sort(rng.integers(b * 90 * minute, (b + 1) * 90 * minute, 120))
        v = rng.integers(-8, 8, len(t)).astype(np.float64)  # exact sums in any order
        got, _ = panes.feed(t, {"v": v})
        want, _ = log.feed(t, {"v": v})
        _same(_rows(got, names), _rows(want, names))
        panes._state._check()
    assert calls["dense"] >= 5 and calls["covers"] == 0
    wm = int(t.max())  # one pane before the watermark's: late, within the lateness, in
    late = np.array([(wm // minute - 1) * minute])  # one emitted window (a revision)
    got, _ = panes.feed(late, {"v": np.array([100.0])})
    want, _ = log.feed(late, {"v": np.array([100.0])})
    _same(_rows(got, names), _rows(want, names))
    assert got.columns["revision"].tolist() == [1]


class _Counting(dict[int, bytes]):
    """A store counting the look-ups (as Spark's MapState calls)."""

    reads = 0

    def get(self, k: int, default: Any = None) -> Any:  # type: ignore[override]
        self.reads += 1
        return super().get(k, default)

    def __contains__(self, k: object) -> bool:
        self.reads += 1
        return super().__contains__(k)


def _reads_per_batch(minutes: int) -> list[int]:
    """Store look-ups per micro-batch of one key restored from its pieces every micro-batch
    (as in Spark): 1 h / 1 min, 40 events per *minutes* (about as many windows each)."""
    minute = 60
    aggs = parse(["sum(v)", "count", "max(v)"])
    shape = Shape(size=60 * minute, slide=minute)
    kw: dict[str, Any] = {"allowed_lateness": minute}
    store = _Counting()
    meta: bytes | None = None
    rng = np.random.default_rng(7)
    out = []
    for b in range(12):
        t = np.sort(rng.integers(b * minutes * minute, (b + 1) * minutes * minute, 40))
        s = KeyStream.restore(meta, store, aggs, shape, **kw)
        store.reads = 0
        _, d = s.feed(t, {"v": rng.random(len(t))})
        out.append(store.reads)
        d.apply(store)
        meta = d.meta
    return out


def test_answering_from_the_panes_reads_o_r_log_w_pieces(monkeypatch: Any) -> None:
    """Answering from the panes is chosen only when the panes spanned are at most 2 log2(w)
    per window: restored from its pieces every micro-batch (as in Spark), a micro-batch
    still reads O((touched + r) log w) pieces, within 1.5x of the covers' path on the same
    stream (sparse panes: 40 events over 30 or 120 windows)."""
    from windowagg.windows.engine.panes import PaneStream

    calls = _counted(monkeypatch)
    dense = _reads_per_batch(30) + _reads_per_batch(120)
    assert calls["dense"] >= 20 and calls["covers"] == 0
    monkeypatch.setattr(PaneStream, "_dense_pays", lambda self, ks: False)
    by_covers = _reads_per_batch(30) + _reads_per_batch(120)
    assert calls["covers"] >= 20
    for n, (a, b) in enumerate(zip(dense, by_covers, strict=True)):
        windows = 30 if n < 12 else 120
        assert a <= 1.5 * b, (dense, by_covers)
        assert a <= 7 * (40 + 2 * windows), (a, windows)  # (touched + r) (log2(60) + 1)


def test_the_metadata_record_splices_the_configuration_byte_for_byte() -> None:
    """``meta_bytes`` encodes the configuration once (``codec.encoded``) and splices it into
    every record: the bytes are the record the layout always wrote, configuration included,
    at every step and after a restore."""
    minute = 60
    aggs = parse(["sum(v)", "count", "max(v)", "p95(v)"])
    shape = Shape(size=10 * minute, slide=minute, sizes=(5 * minute, 10 * minute))
    kw: dict[str, Any] = {"allowed_lateness": minute}
    s = KeyStream(aggs, shape, **kw)
    store: dict[int, bytes] = {}
    for b in range(4):
        t = np.arange(b * 7 * minute, (b + 1) * 7 * minute, 50, dtype=np.int64)
        _, d = s.feed(t, {"v": np.sin(t.astype(np.float64))})
        d.apply(store)
        rec = codec.loads(d.meta)
        state = s._state
        assert d.meta == codec.dumps((rec[0], state.config(), *rec[2:]))
        assert rec[1] == state.config()
        s = KeyStream.restore(d.meta, store, aggs, shape, **kw)


def test_reading_the_ancestors_siblings_ahead_reads_the_same_pieces(monkeypatch: Any) -> None:
    """``_ancestors`` reads the touched panes' siblings (and theirs, up the tree) in one
    ``get_many`` ahead of its walk: per micro-batch of a state restored every time, the
    same store look-ups, key by key, as the walk reading them level by level, and the
    same deltas."""
    from windowagg.windows.engine.panes import PaneStream

    class Keys(_Counting):
        def get(self, k: int, default: Any = None) -> Any:  # type: ignore[override]
            self.keys.append(k)
            return super().get(k, default)

    def run() -> tuple[list[list[int]], list[Any]]:
        aggs = parse(["sum(v)", "count", "max(v)"])
        shape = Shape(size=3600, slide=60)
        store, meta, rng = Keys(), None, np.random.default_rng(11)
        read, deltas = [], []
        for b in range(10):
            t = np.sort(rng.integers(b * 900, (b + 1) * 900 + 200, 40))
            s = KeyStream.restore(meta, store, aggs, shape, allowed_lateness=60)
            store.keys = []
            _, d = s.feed(t, {"v": rng.random(len(t))})
            read.append(sorted(store.keys))
            deltas.append((d.meta, d.put, d.delete))
            d.apply(store)
            meta = d.meta
        return read, deltas

    ahead = run()
    monkeypatch.setattr(PaneStream, "_siblings", lambda self, touched: [])
    walked = run()
    assert ahead == walked
    assert all(len(r) == len(set(r)) for r in ahead[0])  # each piece read once
    assert sum(map(len, ahead[0])) > 100
