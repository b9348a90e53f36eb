"""Issue 27 (speed of the object API on the engine): small micro-batches in plain Python.

The pane layout answers a micro-batch of a few events of a commutative plan without numpy
(``PaneStream._step_small``, ``records.admit_key_small``: numpy's fixed cost per call was
most of the object API's cost per window); a stream without a store encodes no deltas
(``deltas=False``). Both must change nothing but the speed: the same windows, refused
positions, reasons and state bytes as the numpy path and as a stream with deltas.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from windowagg.aggs import parse_aggs
from windowagg.windows.engine import KeyStream, Shape, panes
from windowagg.windows.engine.clock import WatermarkClock
from windowagg.windows.engine.records import admit_key, admit_key_small
from windowagg.windows.engine.state import plan

AGGS = ["sum(v)", "max(v)", "min(v)", "count", "mean(v)", "geomean(w)"]
value = st.sampled_from([1.0, 2.5, -0.0, 0.0, -3.0, 1e16, np.inf, np.nan, -1.0])
batch = st.lists(st.tuples(st.integers(-5, 90), value, value), max_size=6)


def _answers(out: Any) -> Any:
    cols = {k: repr(np.asarray(v).tolist()) for k, v in out.columns.items()}
    return cols, out.refused.tolist(), out.reasons, out.ids.tolist()


def _arrays(step: list[tuple[int, float, float]]) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    t = np.array([x for x, _, _ in step], dtype=np.int64)
    v = np.array([y for _, y, _ in step], dtype=np.float64)
    w = np.array([z for _, _, z in step], dtype=np.float64)
    return t, {"v": v, "w": w}


@pytest.mark.parametrize("judge", ["arrival", "batch"])
@given(steps=st.lists(st.one_of(batch, st.integers(0, 100)), max_size=8))
def test_small_batches_answer_as_numpy(judge: str, steps: list[Any]) -> None:
    aggs = parse_aggs(AGGS)
    shape = Shape(size=20, slide=5)
    kw: dict[str, Any] = {"max_out_of_orderness": 3, "allowed_lateness": 10, "judge": judge}
    small = KeyStream(aggs, shape, **kw)
    big = KeyStream(aggs, shape, **kw)
    quiet = KeyStream(aggs, shape, deltas=False, **kw)
    for step in steps:
        with pytest.MonkeyPatch.context() as mp:
            if isinstance(step, int):
                got, want, mute = small.advance(step), None, quiet.advance(step)
                mp.setattr(panes, "_SMALL", -1)  # the numpy path
                want = big.advance(step)
            else:
                t, vals = _arrays(step)
                got, mute = small.feed(t, vals), quiet.feed(t, vals)
                mp.setattr(panes, "_SMALL", -1)
                want = big.feed(t, vals)
        assert _answers(got[0]) == _answers(want[0]) == _answers(mute[0]), step
        assert got[1] == want[1], step
        assert mute[1].meta == b"" and not mute[1].put and not mute[1].delete
        assert small.meta_bytes() == big.meta_bytes() == quiet.meta_bytes()
        assert small.pieces() == big.pieces() == quiet.pieces()
    small._check()


@pytest.mark.parametrize("judge", ["arrival", "batch"])
@given(steps=st.lists(batch, max_size=5))
def test_small_admission_is_admit_key(judge: str, steps: list[Any]) -> None:
    p = plan(parse_aggs(AGGS))
    c1, c2 = WatermarkClock(3, 10), WatermarkClock(3, 10)
    for step in steps:
        t, vals = _arrays(step)
        a = admit_key(p, c1, judge, t, vals)
        got = admit_key_small(p, c2, judge, t.tolist(), {k: v.tolist() for k, v in vals.items()})
        assert got == (a.order.tolist(), a.refused.tolist(), a.reasons), step
        assert c1.watermark == c2.watermark


def test_the_small_path_is_taken() -> None:
    """A few events of a commutative plan go through _step_small (no numpy admission)."""
    s = KeyStream(parse_aggs(["sum(v)"]), Shape(size=10, slide=5), deltas=False)
    calls: list[int] = []
    with pytest.MonkeyPatch.context() as mp:
        orig = panes.PaneStream._step_small
        mp.setattr(
            panes.PaneStream,
            "_step_small",
            lambda self, t, v: calls.append(len(t)) or orig(self, t, v),
        )
        out, delta = s.feed(np.array([1, 12]), {"v": np.array([1.0, 2.0])})
    assert calls == [2] and out.columns["sum_v"].tolist() == [1.0, 1.0]
    assert delta.meta == b""


class _Picky:
    """A user monoid (sum) whose lift refuses values below *floor*, counting its lifts."""

    identity = 0.0

    def __init__(self, floor: float) -> None:
        self.floor, self.lifts = floor, 0

    def lift(self, x: float) -> float:
        self.lifts += 1
        if x < self.floor:
            raise ValueError(f"below {self.floor}")
        return x

    def combine(self, a: float, b: float) -> float:
        return a + b

    def lower(self, a: float) -> float:
        return a


@pytest.mark.parametrize("judge", ["arrival", "batch"])
@given(steps=st.lists(batch, max_size=5))
def test_user_monoid_refusals_are_admit_key_small(judge: str, steps: list[Any]) -> None:
    """Two user monoids whose lifts refuse overlapping rows: admit_key and admit_key_small
    give the same positions and reasons (the first refusal's, ``bad_value: <type>:
    <message>``); a row one lift refused is not lifted again (admit_key kept its refused
    rows in a list and searched it for every later refusal: quadratic in the refusals), so
    the lifts number at most one per row and monoid."""
    first, second = _Picky(0.0), _Picky(2.0)
    p = plan(parse_aggs([("a", first, "v"), ("b", second, "w")]))
    c1, c2 = WatermarkClock(3, 10), WatermarkClock(3, 10)
    for step in steps:
        t, vals = _arrays(step)
        first.lifts = second.lifts = 0
        a = admit_key(p, c1, judge, t, vals)
        assert first.lifts + second.lifts <= 2 * len(step)
        refused_first = sum(
            1 for _, v, _ in step if np.isfinite(v) and v < 0.0
        )  # rows the first monoid refused: the second never sees them
        assert second.lifts <= len(step) - refused_first
        got = admit_key_small(p, c2, judge, t.tolist(), {k: v.tolist() for k, v in vals.items()})
        assert got == (a.order.tolist(), a.refused.tolist(), a.reasons), step
        for i, why in zip(a.refused.tolist(), a.reasons, strict=True):
            v = step[i][1]
            if why.startswith("bad_value"):
                below = "0.0" if np.isfinite(v) and v < 0.0 else "2.0"
                assert why == f"bad_value: ValueError: below {below}", (step, i)
        assert c1.watermark == c2.watermark
