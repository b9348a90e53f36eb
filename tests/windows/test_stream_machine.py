"""One key's stream (``KeyStream``) as a Hypothesis state machine against the batch answers.

Each run draws one *cell* (issue 37, design §5): a window shape (hopping, with ``size <
slide`` and tumbling; hopping with several sizes; per-event, with or without several
sizes; the whole history; count windows with ``rows >= every``; sessions) x a set of
aggregation classes (commutative monoids ``max``/``sum``/``count``/``mean``; a
non-commutative monoid, :class:`~windowagg.monoids.Concat`; exact quantiles ``p50``/``p95``;
exponentially decayed ``ewm_mean``/``decayed_sum``; the decayed summaries
``decayed_p50``/``top_k``; polynomial decay), out-of-orderness and lateness 0..5, lateness
judged per arrival or per micro-batch, deltas on or off. A cell the engine refuses must
raise :class:`~windowagg.errors.ArgumentError`, and only the cells of :func:`may_refuse`
may; the run then stops there.

Rules: ``feed`` (0-8 events around a moving cursor: many duplicate times, late-but-accepted
and late events, values small integers and halves so that float sums are exact, rarely an
infinite one), ``through_bytes`` (restore from the metadata and the dict the deltas were
applied to, which must equal the stream's own ``meta_bytes``/``pieces``), ``restart``
(drop the object and restore, as after a SIGKILL; optionally the last step's delta and
output were lost and the step is replayed) and ``advance`` (the watermark, as Spark's).

After every step: the layout's ``_check()``; every row fed is refused exactly when the
clock's model says so (late, in no window, not finite), once, by position; the stored
bytes within the layout's bound (:data:`BOUNDS`). At the end (``teardown``): the watermark
goes past everything, and the final revision of every window equals
:func:`windowagg.pandas.window_agg` on the admitted rows (sessions: the ones no later
revision supersedes; count windows: the batch's windows, whose tail rejects the stream
keeps waiting). Values compare exactly, except exponential and polynomial decay (1e-9
relative) and the summaries (compared where they are exact: a few distinct values, and
``top_k``'s weights to 1e-9 with ties at the k-th weight in either order).

Profiles: ``dev`` runs 200 examples; ``ci`` and ``thorough`` are tests/conftest.py's. Under
its twin fixture the machine runs on both backends.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np
import pandas as pd
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule
from tests.windows.engine_oracle import superseded_sessions_dropped

from windowagg.errors import ArgumentError
from windowagg.monoids import Concat
from windowagg.pandas import parse, window_agg
from windowagg.rejects import readable_reason
from windowagg.windows.engine import KeyStream, Shape
from windowagg.windows.engine.assign import HISTORY

S = 1_000_000  # the engine's unit is the microsecond; the machine's times are seconds
H = 3  # half-life (seconds) of the decayed aggregations: small windows see real decay

#: The aggregation classes and their aggregations (design §3).
CLASSES: dict[str, list[Any]] = {
    "monoid": ["max(v)", "sum(v)", "count", "mean(v)"],
    "concat": [("cat_v", Concat(), "v", "array<double>")],  # not commutative
    "quantile": ["p50(v)", "p95(v)"],
    "exp": [f"ewm_mean(v, half_life={H})", f"decayed_sum(v, half_life={H})"],
    "summary": [f"decayed_p50(v, half_life={H})", f"top_k(v, 2, half_life={H})"],
    "poly": ["decayed_sum(v, decay=poly(2), unit=1) as poly_sum"],
}
#: What each output column compares as, by its name's prefix (several sizes add a suffix).
COMPARE = [
    ("decayed_p50_v", "summary"),
    ("decayed_sum_v", "rel"),
    ("ewm_mean_v", "rel"),
    ("poly_sum", "rel"),
    ("top_k_v", "top_k"),
    ("cat_v", "exact"),
    ("p50_v", "exact"),
    ("p95_v", "exact"),
    ("max_v", "exact"),
    ("sum_v", "exact"),
    ("mean_v", "exact"),
    ("count", "exact"),
]
KINDS = ["hopping", "sizes", "per_event", "per_event_sizes", "history", "count", "session"]
VALUES = st.one_of(
    st.integers(-12, 12).map(lambda x: x / 2), st.just(float("inf")), st.integers(-3, 3)
).map(float)
EVENTS = st.lists(st.tuples(st.integers(-6, 6), VALUES), max_size=8)


class Cell(NamedTuple):
    kind: str
    shape: dict[str, Any]  # window_agg's keywords, in seconds
    classes: tuple[str, ...]
    aggs: list[Any]
    ooo: int
    allowed: int
    judge: str
    deltas: bool


@st.composite
def cells(draw: Any) -> Cell:
    kind = draw(st.sampled_from(KINDS))
    shape: dict[str, Any]
    if kind == "hopping":  # size < slide (gaps), tumbling and overlapping
        shape = {"size": draw(st.integers(1, 8)), "slide": draw(st.integers(1, 8)),
                 "start_time": draw(st.integers(-3, 3))}  # fmt: skip
    elif kind == "sizes":  # several sizes on one grid: they differ by multiples of the slide
        slide, a = draw(st.integers(1, 4)), draw(st.integers(1, 6))
        ks = draw(st.sets(st.integers(1, 3), min_size=1, max_size=2))
        sizes = sorted({a, *(a + k * slide for k in ks)})
        shape = {"size": sizes, "slide": slide}
    elif kind == "per_event":
        shape = {"size": draw(st.integers(1, 10)), "slide": None}
    elif kind == "per_event_sizes":
        shape = {"size": sorted(draw(st.sets(st.integers(1, 10), min_size=2, max_size=3))),
                 "slide": None}  # fmt: skip
    elif kind == "history":  # no size: every event's window is the key's history up to it
        shape = {}
    elif kind == "count":
        rows = draw(st.integers(1, 6))
        shape = {"rows": rows, "every": draw(st.integers(1, rows))}
    else:
        shape = {"gap": draw(st.integers(1, 6))}
    # the whole history is what window_agg gives decayed aggregations alone
    pool = ["exp", "summary", "poly"] if kind == "history" else list(CLASSES)
    classes = tuple(sorted(draw(st.sets(st.sampled_from(pool), min_size=1, max_size=3))))
    aggs: list[Any] = []
    for c in classes:
        picked = draw(st.sets(st.sampled_from(range(len(CLASSES[c]))), min_size=1))
        aggs += [CLASSES[c][i] for i in sorted(picked)]
    return Cell(
        kind, shape, classes, aggs,
        ooo=draw(st.integers(0, 5)), allowed=draw(st.integers(0, 5)),
        judge=draw(st.sampled_from(["arrival", "batch"])), deltas=draw(st.booleans()),
    )  # fmt: skip


def engine_shape(c: Cell) -> Shape:
    """The cell's shape in the engine's unit (microseconds)."""
    d = c.shape
    if c.kind == "history":
        return Shape(size=HISTORY)  # what window_agg runs for decayed aggregations alone
    if "rows" in d:
        return Shape(rows=d["rows"], every=d["every"])
    if "gap" in d:
        return Shape(gap=d["gap"] * S)
    sizes = d["size"] if isinstance(d["size"], list) else [d["size"]]
    slide = None if d["slide"] is None else d["slide"] * S
    return Shape(
        size=max(sizes) * S,
        slide=slide,
        start_time=d.get("start_time", 0) * S,
        sizes=tuple(x * S for x in sizes) if len(sizes) > 1 else (),
    )


def may_refuse(c: Cell) -> bool:
    """The cells the engine may refuse (design §3): a polynomial decay over the whole
    history keeps every event (the alternative: a size, or an exponential decay)."""
    return c.kind == "history" and "poly" in c.classes


class Retained(NamedTuple):
    """What a state-size bound may depend on, from the model (no look at the state)."""

    admitted: int  # events admitted so far
    live: int  # admitted events a window still to emit or revise can hold, by the shape
    recent: int  # admitted events at or after the lateness bound
    changing: int  # sessions: admitted events of the sessions that can still change
    panes: int  # hopping: the panes (width gcd(size, slide)) holding live events
    last_batch: int  # rows of the last micro-batch
    writes: int  # steps that admitted an event (each writes one chunk at most)


def _state_bytes(s: KeyStream) -> int:
    return len(s.meta_bytes()) + sum(len(p) for p in s.pieces().values())


def _panes_bound(s: KeyStream, c: Cell, r: Retained) -> int:
    """Pane partials: a tree over the panes that hold live events (at most 2 nodes per
    pane over all levels, plus a spine of 2 per level), O(1) per aggregation and node; a
    Concat partial holds its subtree's values at every level, exact quantiles hold their
    panes' values, and a non-commutative plan the open panes' events. Never the events of
    dead panes."""
    shape = engine_shape(c)
    assert shape.size is not None and shape.slide is not None
    g = math.gcd(shape.size, shape.slide)
    levels = max(1, math.ceil(math.log2(max(shape.size // g, 1))) + 1)
    nodes = 2 * r.panes + 2 * levels
    per_value = 0
    if "concat" in c.classes:
        per_value += 16 * levels + 24  # the value at every level, and the open pane's event
    if "quantile" in c.classes:
        per_value += 16
    most = 1_000 + nodes * (40 + 16 * len(c.aggs)) + per_value * r.live
    assert len(s.pieces()) <= nodes + r.panes, (len(s.pieces()), nodes, r)
    return most


def _events_bound(s: KeyStream, c: Cell, r: Retained) -> int:
    """The event log: compaction keeps at most twice the events a window still to emit or
    revise can hold, plus the micro-batch not compacted yet; one chunk per step."""
    pieces = len(s.pieces())
    assert pieces <= r.writes + 1, (pieces, r)
    return 1_000 + 40 * (2 * r.live + r.last_batch) + 60 * pieces


def _sessions_bound(s: KeyStream, c: Cell, r: Retained) -> int:
    """Open sessions: the head (one partial per aggregation; a Concat partial holds the
    head session's values) and at most twice the events at or after the bound, plus the
    micro-batch not folded yet; one chunk per step and the head."""
    pieces = len(s.pieces())
    assert pieces <= r.writes + 2, (pieces, r)
    head = 16 * r.changing if "concat" in c.classes else 0
    return 1_000 + 40 * (2 * r.recent + r.last_batch) + 60 * pieces + head


#: Layout name -> the most bytes (``meta_bytes`` + pieces) its state may hold; checked after
#: every step when the layout is the cell's. New layouts add their entry.
BOUNDS: dict[str, Callable[[KeyStream, Cell, Retained], int]] = {
    "panes": _panes_bound,
    "events": _events_bound,
    "sessions": _sessions_bound,
}


def _compare_as(col: str) -> str:
    for prefix, how in COMPARE:
        if col == prefix or col.startswith(prefix + "_"):
            return how
    raise AssertionError(f"no comparison for column {col!r}")


def _empty(x: Any) -> bool:
    return x is None or (isinstance(x, float) and math.isnan(x))


def _same(how: str, a: Any, b: Any) -> bool:
    if how == "exact" or how == "summary":
        if isinstance(a, (tuple, list, np.ndarray)) or isinstance(b, (tuple, list, np.ndarray)):
            return tuple(float(x) for x in a) == tuple(float(x) for x in b)
        fa, fb = float(a), float(b)
        return fa == fb or (math.isnan(fa) and math.isnan(fb))
    if how == "rel":
        fa, fb = float(a), float(b)
        return math.isclose(fa, fb, rel_tol=1e-9, abs_tol=1e-9) or (
            math.isnan(fa) and math.isnan(fb)
        )
    # top_k: the k heaviest (value, weight) pairs; equal weights (to 1e-9) may come in
    # either order, and a value tied with the k-th weight may be listed by one side only
    if not (isinstance(a, str) and isinstance(b, str)):  # an empty size's answer
        return a is b or (_empty(a) and _empty(b))
    x, y = json.loads(a), json.loads(b)
    if len(x) != len(y):
        return False
    wx, wy = [w for _, w in x], [w for _, w in y]
    if not all(
        math.isclose(p, q, rel_tol=1e-9, abs_tol=1e-12) for p, q in zip(wx, wy, strict=True)
    ):
        return False
    dx, dy = dict(map(tuple, x)), dict(map(tuple, y))
    for v in dx.keys() & dy.keys():
        if not math.isclose(dx[v], dy[v], rel_tol=1e-9, abs_tol=1e-12):
            return False
    kth = wx[-1] if wx else 0.0
    return all(math.isclose(w, kth, rel_tol=1e-9) for v, w in dx.items() if v not in dy)


class StreamMachine(RuleBasedStateMachine):
    """One cell's ``KeyStream`` through feeds, restores, restarts and watermark moves."""

    s: KeyStream | None

    @initialize(cell=cells())
    def setup(self, cell: Cell) -> None:
        self.c = cell
        self.shape = engine_shape(cell)
        self.aggs = parse(cell.aggs)
        self.reads_v = any(a.column is not None for a in self.aggs)  # `count` alone: no
        self.kw: dict[str, Any] = {
            "max_out_of_orderness": cell.ooo * S,
            "allowed_lateness": cell.allowed * S,
            "judge": cell.judge,
            "deltas": cell.deltas,
        }
        self.ts: list[int] = []  # every row fed, by position (microseconds)
        self.vs: list[float] = []
        self.refused: dict[int, str] = {}  # position -> reason
        self.out: list[dict[str, Any]] = []  # every emitted row, with its window id
        self.top: int | None = None  # the model clock's newest time (us)
        self.advanced = False  # a watermark move the batch clock does not know
        self.cursor = 0
        self.meta: bytes | None = None  # the store: metadata + pieces (deltas applied)
        self.store: dict[int, bytes] = {}
        self.undo: tuple[Any, ...] | None = None
        self.last_batch = 0
        self.writes = 0  # steps that admitted an event
        try:
            self.s = KeyStream(self.aggs, self.shape, **self.kw)
        except ArgumentError as e:
            assert may_refuse(cell), f"{cell} refused: {e}"
            assert "size" in str(e) or "half_life" in str(e), f"no alternative named: {e}"
            self.s = None  # the example stops here: every rule is a no-op
            return
        self.layout = self.s.layout
        if cell.kind == "hopping" and set(cell.classes) <= {"monoid", "concat"}:
            assert self.layout == "panes"

    # ---------------------------------------------------------------- the model clock
    def _lag(self) -> int:
        return (self.c.ooo + self.c.allowed) * S

    def _in_a_gap(self, t: int) -> bool:
        """A hopping window with size < slide leaves times in no window."""
        d = self.c.shape
        if self.c.kind != "hopping" or d["size"] >= d["slide"]:
            return False
        return (t // S - d["start_time"]) % d["slide"] >= d["size"]

    def _bound_for(self, before: int | None, top: int | None) -> int | None:
        """judge="batch": the bound before the micro-batch; "arrival": before the event."""
        if self.c.judge == "batch":
            return before
        return None if top is None else top - self._lag()

    def _expect(self, t: np.ndarray, v: np.ndarray) -> dict[int, str]:
        """The refusals the clock's definition gives this micro-batch (and advance it)."""
        out: dict[int, str] = {}
        lag, top = self._lag(), self.top
        before = None if top is None else top - lag  # judge="batch": the bound before
        for i, (x, y) in enumerate(zip(t.tolist(), v.tolist(), strict=True)):
            if self.reads_v and not math.isfinite(y):
                out[i] = "bad"
            elif self._in_a_gap(x):
                out[i] = "gap"
            elif (b := self._bound_for(before, top)) is not None and x < b:
                out[i] = "late"
            else:
                top = x if top is None else max(top, x)
        self.top = top
        return out

    # ---------------------------------------------------------------- steps
    def _collect(self, res: Any) -> None:
        cols = res.columns
        n = len(cols["end"])
        assert len(res.ids) == n
        for j in range(n):
            row = {k: cols[k][j] for k in cols}
            row["id"] = int(res.ids[j])
            self.out.append(row)

    def _commit(self, delta: Any) -> None:
        if self.c.deltas:
            delta.apply(self.store)
            self.meta = delta.meta

    def _snapshot(self, step: tuple[Any, ...]) -> None:
        """What a restart that lost *step* rolls back to."""
        assert self.s is not None
        if self.c.deltas:
            meta, store = self.meta, dict(self.store)
        else:
            meta, store = self.s.meta_bytes(), self.s.pieces()
        self.undo = (step, meta, store, len(self.out), len(self.ts), dict(self.refused),
                     self.top, self.advanced, self.last_batch, self.writes)  # fmt: skip

    def _feed(self, t: np.ndarray, v: np.ndarray) -> None:
        assert self.s is not None
        lo = len(self.ts)
        want = self._expect(t, v)
        res, delta = self.s.feed(t, {"v": v})
        self.ts += t.tolist()
        self.vs += v.tolist()
        self.last_batch = len(t)
        got = res.refused.tolist()
        self.writes += len(got) < len(t)
        assert len(got) == len(set(got)) == len(res.reasons), "each refusal once, with a reason"
        assert set(got) == set(want), (sorted(got), want)
        for i, r in zip(got, res.reasons, strict=True):
            why = readable_reason(r)
            code = want[i]
            if code == "late":
                assert why.startswith("late: "), why
            elif code == "gap":
                assert why.startswith("in no window: "), why
            else:
                assert not why.startswith(("late: ", "in no window: ")), why
            assert lo + i not in self.refused
            self.refused[lo + i] = why
        self._collect(res)
        self._commit(delta)

    def _advance(self, wm: int) -> None:
        assert self.s is not None
        res, delta = self.s.advance(wm)
        assert not len(res.refused)
        new = wm + self.c.ooo * S  # the clock's newest time, as if an event came at it
        if self.top is None or new > self.top:
            self.top, self.advanced = new, True
        self.last_batch = 0
        self._collect(res)
        self._commit(delta)

    def _restore(self, meta: bytes | None, store: dict[int, bytes]) -> None:
        assert self.s is not None
        s = KeyStream.restore(meta, store, self.aggs, self.shape, **self.kw)
        s._check()
        if meta is not None:
            assert s.layout == self.layout, (s.layout, self.layout)
        self.s = s

    @rule(forward=st.integers(0, 4), events=EVENTS)
    def feed(self, forward: int, events: list[tuple[int, float]]) -> None:
        if self.s is None:
            return
        self.cursor += forward
        t = np.array([max(0, self.cursor + d) * S for d, _ in events], dtype=np.int64)
        v = np.array([x for _, x in events], dtype=np.float64)
        self._snapshot(("feed", t, v))
        self._feed(t, v)

    @rule(back=st.integers(-8, 3))
    def advance(self, back: int) -> None:
        if self.s is None:
            return
        wm = (self.cursor + back) * S
        self._snapshot(("advance", wm))
        self._advance(wm)

    @rule()
    def through_bytes(self) -> None:
        """Restore from the store the deltas were applied to (deltas off: from the
        stream's own bytes: ``pieces()`` is an equivalent of the store, not its copy; the
        event log gives its chunks as one)."""
        if self.s is None:
            return
        if self.c.deltas:
            if self.meta is not None:
                assert self.meta == self.s.meta_bytes()
            self._restore(self.meta, self.store)
        else:
            self._restore(self.s.meta_bytes(), self.s.pieces())

    @rule(lost=st.booleans())
    def restart(self, lost: bool) -> None:
        """A SIGKILL: the object is gone. With *lost*, the last step's delta and output
        never reached the store or the sink: the state rolls back and the step is replayed
        (exactly once)."""
        if self.s is None:
            return
        if not (lost and self.undo is not None):
            meta = self.meta if self.c.deltas else self.s.meta_bytes()
            store = self.store if self.c.deltas else self.s.pieces()
            self._restore(meta, store)
            return
        step, meta, store, n_out, n_ts, refused, top, advanced, last, writes = self.undo
        self.undo = None
        del self.out[n_out:], self.ts[n_ts:], self.vs[n_ts:]
        self.refused, self.top, self.advanced = refused, top, advanced
        self.last_batch, self.writes = last, writes
        self.meta, self.store = meta, dict(store)
        self._restore(meta, store)
        if step[0] == "feed":
            self._feed(step[1], step[2])
        else:
            self._advance(step[1])

    # ---------------------------------------------------------------- invariants
    def _retained(self) -> Retained:
        assert self.s is not None
        adm = sorted(self.ts[i] for i in range(len(self.ts)) if i not in self.refused)
        bound = self.s.bound
        lo = bound if bound is not None else -(2**62)
        recent = [x for x in adm if x >= lo]
        changing = 0
        panes = 0
        k, shape = self.c.kind, self.shape
        if k in ("hopping", "sizes", "per_event", "per_event_sizes"):
            assert shape.size is not None
            live = [x for x in adm if x >= lo - shape.size]
            if shape.slide is not None:
                g = math.gcd(shape.size, shape.slide)
                panes = len({(x - shape.start_time) // g for x in live})
            n_live = len(live)
        elif k == "session":  # a session can change while its last event + gap >= bound
            assert shape.gap is not None
            runs: list[list[int]] = []
            for x in adm:
                if runs and x - runs[-1][-1] <= shape.gap:
                    runs[-1].append(x)
                else:
                    runs.append([x])
            changing = sum(len(r) for r in runs if r[-1] + shape.gap >= lo)
            n_live = changing
        elif k == "count":  # late events shift the last windows' positions
            assert shape.rows is not None
            n_live = min(len(adm), len(recent) + shape.rows + shape.every)
        else:  # the whole history: every event is in every later window
            n_live = len(adm)
        return Retained(len(adm), n_live, len(recent), changing, panes, self.last_batch,
                        self.writes)  # fmt: skip

    @invariant()
    def checked(self) -> None:
        if self.s is None:
            return
        self.s._check()
        assert self.s.layout == self.layout
        assert set(self.refused) <= set(range(len(self.ts)))
        bound = BOUNDS.get(self.layout)
        if bound is not None:
            got, most = _state_bytes(self.s), bound(self.s, self.c, self._retained())
            assert got <= most, f"{self.layout}: {got} bytes > {most} ({self._retained()})"

    # ---------------------------------------------------------------- the batch answer
    def _final(self) -> pd.DataFrame:
        cols = ["start", "end", "revision", "id"]
        df = pd.DataFrame(self.out)
        if not len(df):
            return df
        if self.c.kind == "session":
            final = superseded_sessions_dropped(df, "start", "end")
            return final.sort_values("start", kind="stable").reset_index(drop=True)
        for _, g in df.groupby("id"):  # a window's revisions come out in order
            assert g["revision"].tolist() == list(range(len(g))), g[cols]
        last = df.groupby("id").tail(1)
        by = ["id"] if self.c.kind == "count" else ["end", "id"]
        return last.sort_values(by, kind="stable").reset_index(drop=True)

    def _batch(self, rows: list[int], lateness: bool) -> Any:
        df = pd.DataFrame(
            {"k": "a", "t": [self.ts[i] for i in rows], "v": [self.vs[i] for i in rows]}
        )
        kw: dict[str, Any] = dict(self.c.shape)
        if lateness:
            kw |= {"max_out_of_orderness": self.c.ooo, "allowed_lateness": self.c.allowed}
        return window_agg(df, "k", "t", self.c.aggs, time_unit="us", **kw)

    def teardown(self) -> None:
        if getattr(self, "s", None) is None:
            return
        assert self.s is not None
        res, delta = self.s.advance(2**62)  # past everything: every window is final
        self._collect(res)
        self._commit(delta)
        self.s._check()
        kept = [i for i in range(len(self.ts)) if i not in self.refused]
        final = self._final()
        if not kept:
            assert not len(final), final
            return
        batch = self._batch(kept, lateness=False)
        if self.c.judge == "arrival" and not self.advanced:
            # the batch's own clock refuses the same rows (the model is window_agg's)
            whole = self._batch(list(range(len(self.ts))), lateness=True)
            rej = whole.rejects
            if self.c.kind == "count":
                rej = rej[~rej["reason"].str.startswith("in no window: ")]
            assert rej["row_index"].tolist() == sorted(self.refused), (rej, self.refused)
        rej = batch.rejects
        if self.c.kind == "count":  # the tail: events a later one would complete a window of
            assert rej["reason"].str.startswith("in no window: ").all(), rej
        else:
            assert not len(rej), rej
        want = batch.results
        assert len(final) == len(want), (final, want)
        if not len(want):  # (count windows: every admitted event still in the tail)
            return
        ends = want["window_end"].astype("datetime64[ns, UTC]").astype("int64") // 1000
        assert final["end"].tolist() == ends.tolist()
        if self.c.kind != "history":  # (the history's start: the batch's first event)
            starts = want["window_start"].astype("datetime64[ns, UTC]").astype("int64") // 1000
            assert final["start"].tolist() == starts.tolist()
        names = [c for c in want.columns if c not in ("k", "window_start", "window_end")]
        assert set(names) == set(final.columns) - {"start", "end", "revision", "id"}
        for c in names:
            how = _compare_as(c)
            for j, (a, b) in enumerate(zip(final[c], want[c], strict=True)):
                assert _same(how, a, b), (c, j, a, b, final.loc[j, ["start", "end"]].tolist())


_profile = settings.get_current_profile_name()
StreamMachine.TestCase.settings = settings(
    settings.get_profile(_profile), **({"max_examples": 200} if _profile == "dev" else {})
)
TestStreamMachine = StreamMachine.TestCase


def test_a_count_stream_whose_events_were_all_compacted_takes_the_next_event() -> None:
    """Found by the machine: a watermark past every count window drops every stored event
    (compaction), and the next event indexed the empty store (IndexError)."""
    aggs = parse(["max(v)", "p50(v)"])
    s = KeyStream(aggs, Shape(rows=1, every=1), max_out_of_orderness=3)
    first, _ = s.feed(np.array([0, 10]), {"v": np.array([1.0, 2.0])})
    out, _ = s.advance(100)
    assert [*first.columns["end"], *out.columns["end"]] == [0, 10] and len(s) == 0
    out, _ = s.feed(np.array([200]), {"v": np.array([5.0])})
    s._check()
    out, _ = s.advance(10**6)
    assert out.columns["end"].tolist() == [200] and out.columns["max_v"].tolist() == [5.0]
    assert out.columns["revision"].tolist() == [0]


def test_decayed_summaries_compare_by_state_so_a_trailing_stream_passes_its_check() -> None:
    """Found by the machine: the trailing layout's FiBA check compares each stored
    aggregate with its recomputation, and the decayed summaries compared by identity, so
    every check of a per-event ``decayed_p50``/``top_k`` stream failed."""
    from windowagg.sketches.exp_qdigest import ExpDecayQDigest
    from windowagg.sketches.space_saving import ExpDecaySpaceSaving

    def digest(*ts: int) -> ExpDecayQDigest:
        d = ExpDecayQDigest(2**64, 0.01, 0.1)
        for t in ts:
            d.update(7, t)
        return d

    def saving(*ts: int) -> ExpDecaySpaceSaving:
        s = ExpDecaySpaceSaving(lam=0.1, k=4)
        for t in ts:
            s.update("x", t)
        return s

    assert digest(1, 2) == digest(1, 2) and digest(1, 2) != digest(1, 3)
    assert saving(1, 2) == saving(1, 2) and saving(1, 2) != saving(1, 3)
    for agg in (f"decayed_p50(v, half_life={H})", f"top_k(v, 2, half_life={H})"):
        s = KeyStream(parse([agg]), Shape(size=S), allowed_lateness=S, deltas=False)
        s.feed(np.array([0, S, S // 2]), {"v": np.array([0.0, 1.0, 2.0])})
        s._check()


def test_a_decayed_median_tying_half_the_weight_agrees_with_the_batch() -> None:
    """Found by the machine: a per-event window whose weights below a value sum to half
    the window's in real arithmetic; the stream's q-digest and the batch's exact kernel
    summed them in other orders, and the rounding picked 0.0 on one side, -0.5 on the
    other. Both now take the smallest value reaching ``(1 - 2**-40)`` of the rank."""
    state = StreamMachine()
    state.setup(
        cell=Cell(
            kind="per_event",
            shape={"size": 2, "slide": None},
            classes=("monoid", "summary"),
            aggs=["max(v)", "decayed_p50(v, half_life=3)"],
            ooo=0,
            allowed=1,
            judge="arrival",
            deltas=False,
        )
    )
    state.checked()
    state.feed(events=[(0, -0.5), (-1, 0.0), (-1, -0.5), (-1, -0.5), (-1, -1.0)], forward=1)
    state.checked()
    state.feed(events=[(0, 0.0), (-1, 0.0), (-1, 0.0)], forward=0)
    state.checked()
    state.teardown()
