"""KeyStream.tail: count windows' last events, with the columns the stream carries.

When the input ends, the events :meth:`KeyStream.tail` returns are exactly the ones the
batch engine (``window_key``) rejects as ``in no window: ...`` (one of a key's last
events), with the same reasons, whatever the micro-batch cuts, arrival orders, lateness
and compaction, and through the state's bytes (a restore from the stored deltas after any
micro-batch): the carried columns (here each event's input position) survive them all.
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from windowagg.aggs import parse_aggs
from windowagg.errors import ArgumentError, CodecError
from windowagg.windows.engine import KeyStream
from windowagg.windows.engine.core import count_tail_reason, window_key
from windowagg.windows.engine.shapes import Shape

AGGS = parse_aggs(["sum(v)", "count"])


def _feed(
    t: list[int],
    cuts: list[int],
    shape: Shape,
    lateness: tuple[int, int],
    restarts: set[int],
    lazy: bool = False,
) -> KeyStream:
    """Feed *t* (values = positions) cut at *cuts*, carrying each event's position and a
    text label (*lazy*: a callable the engine asks for the events its tail may return);
    after micro-batch i in *restarts* the stream is restored from its deltas."""
    kw: dict[str, Any] = {
        "max_out_of_orderness": lateness[0],
        "allowed_lateness": lateness[1],
        "carry": ["pos", "label"],
    }
    s = KeyStream(AGGS, shape, **kw)
    store: dict[int, bytes] = {}
    meta = None
    bounds = [0, *sorted(set(cuts)), len(t)]
    for i, (a, b) in enumerate(itertools.pairwise(bounds)):
        pos = np.arange(a, b)
        labels = [f"row {j}" for j in pos.tolist()]
        label: Any = (lambda at, ls=labels: [ls[i] for i in at]) if lazy else labels
        _, d = s.feed(
            np.asarray(t[a:b], dtype=np.int64), {"v": pos.astype(float), "pos": pos, "label": label}
        )
        d.apply(store)
        meta = d.meta
        if i in restarts:
            s = KeyStream.restore(meta, dict(store), AGGS, shape, **kw)
    return s


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    t=st.lists(st.integers(0, 30), max_size=40),
    cuts=st.lists(st.integers(0, 40), max_size=6),
    count=st.sampled_from([(1, 1), (3, 2), (4, 3), (2, 2), (5, 4)]),
    lateness=st.sampled_from([(0, 0), (0, 4), (3, 2), (0, 100)]),
    restarts=st.sets(st.integers(0, 6), max_size=3),
    ordered=st.booleans(),
    lazy=st.booleans(),
)
def test_tail_is_the_batch_engines_uncounted_events(
    t: list[int],
    cuts: list[int],
    count: Any,
    lateness: Any,
    restarts: Any,
    ordered: bool,
    lazy: bool,
) -> None:
    if ordered:  # mostly in order: compaction drops the oldest events
        t = sorted(t)
    cuts = [c for c in cuts if c <= len(t)]
    shape = Shape(rows=count[0], every=count[1])
    s = _feed(t, cuts, shape, lateness, restarts, lazy)
    want = window_key(
        np.asarray(t, dtype=np.int64),
        {"v": np.arange(len(t), dtype=float)},
        AGGS,
        shape,
        lateness=lateness,
    )
    tail_why = [r for r in want.reasons if r.startswith("in no window")]
    tail_pos = [
        p for p, r in zip(want.refused.tolist(), want.reasons, strict=True) if r in tail_why
    ]
    got = s.tail()
    assert sorted(got.events.values["pos"].astype(int).tolist()) == tail_pos
    assert got.reasons == tail_why
    assert got.events.values["label"].tolist() == [
        f"row {int(p)}" for p in got.events.values["pos"].tolist()
    ]
    assert got.events.t.tolist() == sorted(got.events.t.tolist())
    s._check()


def test_five_events_rows_3_every_2_leave_the_fifth() -> None:
    s = KeyStream(AGGS, Shape(rows=3, every=2), carry=["row"])
    s.feed(np.array([1, 2, 3]), {"v": np.ones(3), "row": ["a", "b", "c"]})
    assert s.tail().events.values["row"].tolist() == ["c"]  # a later event may complete it
    s.feed(np.array([4, 5]), {"v": np.ones(2), "row": ["d", "e"]})
    tail = s.tail()
    assert tail.events.t.tolist() == [5]
    assert tail.events.values["row"].tolist() == ["e"]
    assert tail.reasons == [count_tail_reason(1, 2)]


def test_a_carried_callable_is_asked_for_few_events() -> None:
    """In order, no lateness: of 1,000 events, rows=5 every=4, the engine asks for the
    label of the events at the bound's time and the batch's last 3, not all."""
    asked: list[int] = []

    def label(at: np.ndarray) -> list[str]:
        asked.extend(at.tolist())
        return [f"e{i}" for i in at.tolist()]

    s = KeyStream(AGGS, Shape(rows=5, every=4), carry=["row"])
    for i in range(0, 1000, 100):
        s.feed(np.arange(i, i + 100), {"v": np.ones(100), "row": label})
    assert len(asked) == 10 * 3 and s.tail().events.values["row"].tolist() == []
    s.feed(np.array([1000, 1001]), {"v": np.ones(2), "row": label})
    assert s.tail().events.values["row"].tolist() == ["e0", "e1"]


def test_the_tail_survives_compaction() -> None:
    s = KeyStream(AGGS, Shape(rows=3, every=2), carry=["row"])
    for i in range(21):
        s.feed(np.array([i]), {"v": np.ones(1), "row": [i]})
    assert s._state._dropped > 0  # compacted: most events are gone
    assert s.tail().events.values["row"].tolist() == [20.0]


def test_other_shapes_have_no_tail() -> None:
    for shape in (Shape(size=10, slide=5), Shape(size=10), Shape(gap=3)):
        s = KeyStream(AGGS, shape, carry=["row"])
        s.feed(np.array([1, 2, 3]), {"v": np.ones(3), "row": ["a", "b", "c"]})
        assert not len(s.tail().events.t) and s.tail().reasons == []


def test_carried_columns_are_part_of_the_configuration() -> None:
    shape = Shape(rows=3, every=2)
    s = KeyStream(AGGS, shape, carry=["row"])
    _, d = s.feed(np.array([1, 2, 3]), {"v": np.ones(3), "row": ["a", "b", "c"]})
    with pytest.raises(CodecError, match="carry"):
        KeyStream.restore(d.meta, d.put, AGGS, shape)  # written with, read without
    plain = KeyStream(AGGS, shape)
    _, d = plain.feed(np.array([1, 2, 3]), {"v": np.ones(3)})
    with pytest.raises(CodecError, match="carry"):
        KeyStream.restore(d.meta, d.put, AGGS, shape, carry=["row"])


def test_a_carried_name_must_be_its_own_and_given() -> None:
    with pytest.raises(ArgumentError, match="carry"):
        KeyStream(AGGS, Shape(rows=3, every=2), carry=["v"])
    s = KeyStream(AGGS, Shape(rows=3, every=2), carry=["row"])
    with pytest.raises(ArgumentError, match="'row'"):
        s.feed(np.array([1]), {"v": np.ones(1)})
    assert len(s) == 0 and s.watermark is None  # the refused call changed nothing
