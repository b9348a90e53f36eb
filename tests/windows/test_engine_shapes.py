"""The window shapes' protocol (:mod:`windowagg.windows.engine.shapes`), each method of each
shape on random inputs against an oracle: brute-force windows built from the shapes'
definitions, and the branches the engine tested a shape's name with before the classes
(written out here as the reference: ``_old_*``)."""

from __future__ import annotations

import copy
import dataclasses

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from windowagg.aggs import parse_aggs
from windowagg.windows.engine import KeyStream, Shape
from windowagg.windows.engine.assign import assign, assign_groups
from windowagg.windows.engine.shapes import (
    HISTORY,
    Count,
    Hopping,
    PerEvent,
    Session,
    WholeHistory,
)

# ---------------------------------------------------------------------- strategies


@st.composite
def shapes(draw: st.DrawFn) -> Shape:
    """Any shape, small enough for brute force: hopping (gaps, tumbling and overlapping,
    one or several sizes), per-event (one or several sizes), whole history, count
    (``rows`` below, at or above ``every``), session."""
    kind = draw(st.sampled_from(["hopping", "per_event", "history", "count", "session"]))
    start = draw(st.integers(-7, 7))
    if kind == "hopping":
        slide = draw(st.integers(1, 8))
        size = draw(st.integers(1, 20))
        if draw(st.booleans()) and size > slide:  # several sizes on one grid of ends
            small = size - slide * draw(st.integers(1, max(1, (size - 1) // slide)))
            if small > 0:
                return Shape(size=size, slide=slide, start_time=start, sizes=(small, size))
        return Shape(size=size, slide=slide, start_time=start)
    if kind == "per_event":
        size = draw(st.integers(1, 20))
        if draw(st.booleans()) and size > 1:
            return Shape(size=size, sizes=(draw(st.integers(1, size - 1)), size))
        return Shape(size=size)
    if kind == "history":
        return Shape(size=HISTORY)
    if kind == "count":
        return Shape(rows=draw(st.integers(1, 5)), every=draw(st.integers(1, 4)))
    return Shape(gap=draw(st.integers(1, 8)), start_time=start)


def times(max_size: int = 14) -> st.SearchStrategy[np.ndarray]:
    """One key's sorted times, with ties."""
    return st.lists(st.integers(-30, 30), max_size=max_size).map(
        lambda xs: np.array(sorted(xs), dtype=np.int64)
    )


# ---------------------------------------------------------------------- brute force


def _brute(shape: Shape, t: np.ndarray) -> list[tuple[int, int, int, int]]:
    """Every window of *shape* over one key's sorted times as (start, end, lo, hi), from the
    shape's definition, ordered by end (then start). O(n * range) Python."""
    n = len(t)
    if not n:
        return []
    xs = t.tolist()
    out: list[tuple[int, int, int, int]] = []
    if isinstance(shape, Hopping):
        assert shape.size is not None and shape.slide is not None
        size, slide, st0 = shape.size, shape.slide, shape.start_time
        k_lo = (xs[0] - size - st0) // slide
        k_hi = (xs[-1] - st0) // slide + 1
        for k in range(k_lo, k_hi + 1):
            a = st0 + k * slide
            inside = [i for i, x in enumerate(xs) if a <= x < a + size]
            if inside:
                out.append((a, a + size, inside[0], inside[-1] + 1))
    elif isinstance(shape, WholeHistory):
        for x in xs:
            inside = [i for i, y in enumerate(xs) if y <= x]
            out.append((xs[0], x, 0, inside[-1] + 1))
    elif isinstance(shape, PerEvent):
        assert shape.size is not None
        for x in xs:
            inside = [i for i, y in enumerate(xs) if x - shape.size < y <= x]
            out.append((x - shape.size, x, inside[0], inside[-1] + 1))
    elif isinstance(shape, Count):
        assert shape.rows is not None
        for last in range(shape.every - 1, n, shape.every):
            first = max(0, last - shape.rows + 1)
            out.append((xs[first], xs[last], first, last + 1))
    else:
        assert isinstance(shape, Session) and shape.gap is not None
        first = 0
        for i in range(1, n + 1):
            if i == n or xs[i] - xs[i - 1] > shape.gap:
                out.append((xs[first], xs[i - 1] + shape.gap, first, i))
                first = i
    return out


def _in_some_window(shape: Shape, x: int) -> bool:
    """Whether a time *x* lies in a window of *shape* (hopping: some ``[a, a + size)`` of the
    grid; every other shape has a window for every time)."""
    if not isinstance(shape, Hopping):
        return True
    assert shape.size is not None and shape.slide is not None
    return any(
        a <= x < a + shape.size
        for a in (shape.start_time + k * shape.slide for k in range(-60, 60))
    )


# ---------------------------------------------------------------------- the old branches


def _old_first_end(s: Shape, x: int) -> int:
    """The object API's ``_first_end`` before the classes (one shape; count: ``_due`` set)."""
    if s.kind == "hopping":
        ends = []
        for z in s.sizes or (s.size,):
            assert z is not None and s.slide is not None
            k = -((s.start_time - x + z - 1) // s.slide)
            ends.append(s.start_time + k * s.slide + z)
        return min(ends)
    if s.kind == "session":
        assert s.gap is not None
        return x + s.gap
    return x


def _old_deadline_tail(s: Shape, top: int, lateness: int) -> int | None:
    """``EventLog.deadline``'s watermark at which every stored event is dead, before."""
    if s.kind == "count":
        return None
    if s.kind == "session":
        assert s.gap is not None
        return top + s.gap + lateness + 1
    assert s.size is not None
    return top + s.size + lateness


def _old_dead(s: Shape, t: np.ndarray, b: int, dropped: int) -> int:
    """``EventLog._dead`` before (given a bound and stored events)."""
    if s.kind in ("hopping", "per_event"):
        assert s.size is not None
        return int(np.searchsorted(t, b - s.size, "right"))
    if s.kind == "session":
        w = assign(s, t)
        live = np.flatnonzero(w.end >= b)
        return int(w.lo[live[0]]) if len(live) else len(t)
    assert s.rows is not None
    p = dropped + int(np.searchsorted(t, b, "left"))
    return int(min(max(0, p - s.rows + 1 - dropped), len(t)))


def _old_gap(s: Shape, x: int) -> str | None:
    """The object API's ``_gap`` before."""
    if s.kind != "hopping" or s.size is None or s.slide is None or s.size >= s.slide:
        return None
    phase = (x - s.start_time) % s.slide
    if phase < s.size:
        return None
    a = x - phase
    return (
        f"in no window: {x} lies between the hopping windows [{a}, {a + s.size}) and "
        f"[{a + s.slide}, {a + s.slide + s.size}) (size < slide leaves gaps); make "
        "slide <= size to cover every time"
    )


# ---------------------------------------------------------------------- construction


def test_construction_picks_the_class_and_keeps_the_fields() -> None:
    cases = [
        (Shape(size=10, slide=5), Hopping, "hopping"),
        (Shape(size=10), PerEvent, "per_event"),
        (Shape(size=HISTORY), WholeHistory, "per_event"),
        (Shape(rows=3, every=2), Count, "count"),
        (Shape(gap=4), Session, "session"),
    ]
    for s, cls, kind in cases:
        assert type(s) is cls and isinstance(s, Shape) and s.kind == kind
        assert s == Shape.of(s.size, s.slide, s.rows, s.every, s.gap, s.start_time, s.sizes)
        assert hash(s) == hash(dataclasses.replace(s))
        assert type(dataclasses.replace(s, start_time=3)) is cls
    assert Shape(size=10, slide=5) != Shape(size=10, slide=4)
    with pytest.raises(dataclasses.FrozenInstanceError):
        Shape(gap=3).gap = 4  # type: ignore[misc]


def test_copies_and_closures_keep_the_shape() -> None:
    """``copy`` and cloudpickle (Spark ships the shape to its Python workers in a closure)
    rebuild the shape from its fields."""
    cloudpickle = pytest.importorskip("pyspark.cloudpickle")
    for s in (
        Shape(size=10, slide=5, start_time=3, sizes=(5, 10)),
        Shape(size=10),
        Shape(size=HISTORY),
        Shape(rows=3, every=2),
        Shape(gap=4),
    ):
        for back in (copy.copy(s), copy.deepcopy(s), cloudpickle.loads(cloudpickle.dumps(s))):
            assert back == s and type(back) is type(s)


def test_a_class_asked_for_another_shape_refuses() -> None:
    with pytest.raises(ValueError, match="that is PerEvent"):
        dataclasses.replace(Shape(size=10, slide=5), slide=None)
    with pytest.raises(ValueError, match="exactly one window shape"):
        Shape()
    with pytest.raises(ValueError, match="session gap must be positive"):
        Shape(gap=0)


def test_capabilities() -> None:
    h, p, w, c, s = (
        Shape(size=4, slide=2),
        Shape(size=4),
        Shape(size=HISTORY),
        Shape(rows=2),
        Shape(gap=2),
    )
    assert [x.grid for x in (h, p, w, c, s)] == [True, False, False, False, False]
    assert [x.per_event for x in (h, p, w, c, s)] == [False, True, True, False, False]
    assert [x.trails for x in (h, p, w, c, s)] == [False, True, False, False, False]
    assert [x.whole_history for x in (h, p, w, c, s)] == [False, False, True, False, False]
    assert [x.positional for x in (h, p, w, c, s)] == [False, False, False, True, False]
    assert [x.merges for x in (h, p, w, c, s)] == [False, False, False, False, True]
    assert Shape(size=2, slide=4).gaps and not h.gaps and not s.gaps


# ---------------------------------------------------------------------- assignment


@given(shapes(), times())
def test_assign_is_the_definition(shape: Shape, t: np.ndarray) -> None:
    w = shape.assign(t)
    got = sorted(
        zip(w.start.tolist(), w.end.tolist(), w.lo.tolist(), w.hi.tolist(), strict=True),
        key=lambda r: (r[1], r[0]),
    )
    assert got == sorted(_brute(shape, t), key=lambda r: (r[1], r[0]))
    assert np.array_equal(assign(shape, t).end, w.end)


@given(shapes(), st.lists(times(8), max_size=4))
def test_assign_groups_is_each_key_alone(shape: Shape, keys: list[np.ndarray]) -> None:
    t = np.concatenate([np.zeros(0, np.int64), *keys])
    starts = np.concatenate([[0], np.cumsum([len(k) for k in keys], dtype=np.int64)])
    w, counts = shape.assign_groups(t, starts)
    assert counts.tolist() == [len(shape.assign(k).end) for k in keys]
    at = 0
    for g, k in enumerate(keys):
        one = shape.assign(k)
        r = slice(at, at + int(counts[g]))
        assert w.start[r].tolist() == one.start.tolist()
        assert w.end[r].tolist() == one.end.tolist()
        assert (w.lo[r] - starts[g]).tolist() == one.lo.tolist()
        assert (w.hi[r] - starts[g]).tolist() == one.hi.tolist()
        at += int(counts[g])
    w2, c2 = assign_groups(shape, t, starts)
    assert np.array_equal(w2.hi, w.hi) and np.array_equal(c2, counts)


# ---------------------------------------------------------------------- first end


@given(shapes(), times(), st.integers(-30, 30))
def test_first_end_bounds_every_window_an_event_joins(shape: Shape, t: np.ndarray, x: int) -> None:
    f = shape.first_end(x)
    assert f == _old_first_end(shape, x)
    merged = np.sort(np.concatenate([t, [x]]))
    if isinstance(shape, Count):  # positions: the windows from x's position on
        ends = [e for _, e, _, hi in _brute(shape, merged) if merged[hi - 1] >= x]
    else:
        ends = [e for _, e, lo, hi in _brute(shape, merged) if merged[lo] <= x <= merged[hi - 1]]
    assert all(e >= f for e in ends)
    tight = shape.per_event or (shape.grid and not shape.sizes and shape.no_window(x) is None)
    if tight:  # the bound is the end of the window that closes first
        assert min(ends) == f


# ---------------------------------------------------------------------- deadline


@given(shapes(), times(), st.integers(0, 5), st.integers(0, 30))
def test_deadline_settles_every_event_up_to_the_newest(
    shape: Shape, t: np.ndarray, lateness: int, later: int
) -> None:
    if not len(t):
        return
    top = int(t[-1])
    d = shape.deadline(top, lateness)
    assert d == _old_deadline_tail(shape, top, lateness)
    if d is None:
        assert isinstance(shape, Count)
        return
    # at a watermark >= d an admitted event is at or after d - lateness: it joins no
    # window holding an event up to top
    y = d - lateness + later
    merged = np.concatenate([t, [y]])
    for _, _, lo, hi in _brute(shape, merged):
        if hi == len(merged):
            assert lo == len(merged) - 1 or shape.whole_history


# ---------------------------------------------------------------------- compaction bound


@given(shapes(), times(), st.integers(-30, 35), st.lists(st.integers(0, 8), min_size=1))
def test_dead_events_are_in_no_window_a_later_event_changes(
    shape: Shape, t: np.ndarray, b: int, later: list[int]
) -> None:
    d = shape.dead(t, b, 0)
    assert d == _old_dead(shape, t, b, 0)
    for dropped in (1, 3):
        assert shape.dead(t, b, dropped) == _old_dead(shape, t, b, dropped)
    assert 0 <= d <= len(t)
    # the events admitted from now on are at or after the bound b; stored events first
    # among equal times (their arrival is earlier)
    both = np.concatenate([t, [b + x for x in later]])
    order = np.argsort(both, kind="stable")
    merged, new = both[order], order >= len(t)
    first_new = int(np.argmax(new))
    assert not new[:d].any()  # the dead events keep the first positions
    for _, _, lo, hi in _brute(shape, merged):
        changed = hi > first_new if shape.positional else bool(new[lo:hi].any())
        if changed:
            assert lo >= d, (lo, d)


@given(st.integers(1, 5), st.integers(1, 4), times(), st.integers(0, 6))
def test_count_stored_windows_count_the_dropped(
    rows: int, every: int, t: np.ndarray, dropped: int
) -> None:
    shape = Shape(rows=rows, every=every)
    whole = shape.assign(np.concatenate([np.full(dropped, -100, dtype=np.int64), t]))
    got = shape.stored_windows(t, dropped)
    keep = np.flatnonzero(whole.hi > dropped)  # the windows whose last event is stored
    assert (got.hi + dropped).tolist() == whole.hi[keep].tolist()
    assert (got.lo + dropped).tolist() == np.maximum(whole.lo[keep], dropped).tolist()
    assert got.end.tolist() == whole.end[keep].tolist()
    assert got.key_hi.tolist() == keep.tolist()  # the ordinal: the window's identity
    assert shape.window_ids(got, np.zeros(0, np.int64)).tolist() == keep.tolist()


def test_revisable_excludes_the_hopping_end() -> None:
    assert not Shape(size=4, slide=2).revisable(10, 10)
    assert Shape(size=4, slide=2).revisable(11, 10)
    for s in (Shape(size=4), Shape(rows=2), Shape(gap=3), Shape(size=HISTORY)):
        assert s.revisable(10, 10) and not s.revisable(9, 10)


# ---------------------------------------------------------------------- in no window


@given(shapes(), st.integers(-40, 40))
def test_no_window_is_the_definition(shape: Shape, x: int) -> None:
    why = shape.no_window(x)
    assert why == _old_gap(shape, x)
    assert (why is None) == _in_some_window(shape, x)
    ok = np.ones(1, dtype=bool)
    reason: dict[int, str] = {}
    shape.refuse_times(np.array([x], dtype=np.int64), ok, reason)
    assert bool(ok[0]) == (why is None) and reason.get(0) == why


@given(shapes(), st.integers(-40, 40))
def test_next_end_is_the_first_grid_end_past_the_watermark(shape: Shape, wm: int) -> None:
    got = shape.next_end(wm)
    if not shape.grid:
        assert got is None
        return
    assert shape.slide is not None
    ends = [
        shape.start_time + k * shape.slide + z
        for z in (shape.sizes or (shape.size,))
        if z is not None
        for k in range(-100, 100)
    ]
    assert got == min(e for e in ends if e > wm)


@given(st.integers(1, 5), st.integers(1, 4), times())
def test_count_unassigned_are_the_events_in_no_window(rows: int, every: int, t: np.ndarray) -> None:
    shape = Shape(rows=rows, every=every)
    w = shape.assign(t)
    starts = np.array([0, len(t)], dtype=np.int64)
    order = np.arange(len(t), dtype=np.int64)[::-1].copy()  # any input positions
    refused, reasons = shape.unassigned(w, starts, order, np.zeros(0, np.int64), [])
    held = np.zeros(len(t), dtype=bool)
    for lo, hi in zip(w.lo.tolist(), w.hi.tolist(), strict=True):
        held[lo:hi] = True
    assert sorted(refused.tolist()) == sorted(order[~held].tolist())
    assert all(r.startswith("in no window: ") for r in reasons)
    for other in (Shape(size=3), Shape(gap=2), Shape(size=3, slide=1)):
        assert other.unassigned(other.assign(t), starts, order, refused, reasons) == (
            refused,
            reasons,
        )


def test_a_stream_refuses_count_windows_that_skip_events() -> None:
    assert Shape(rows=2, every=3).stream_refusal() is not None
    assert Shape(rows=3, every=3).stream_refusal() is None
    with pytest.raises(ValueError, match="rows >= every"):
        KeyStream(parse_aggs(["count"]), Shape(rows=2, every=3))
    with pytest.raises(TypeError, match="merge"):
        Shape(gap=2).emitted_before(
            Shape(gap=2).assign(np.array([1])), np.ones(1, bool), np.zeros(0, np.int64), 0, 0
        )
