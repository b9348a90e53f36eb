"""The object API cannot disagree with the engine: every window it emits and every event it
rejects, call by call, is what a :class:`~windowagg.windows.engine.KeyStream` fed the same
arrivals emits and refuses.

The object API holds events back and feeds them when the engine's
:class:`~windowagg.windows.engine.schedule.Schedule` says a window can close; the reference
here holds nothing: each ``insert`` is a micro-batch of one event, each ``insert_many`` one
micro-batch, each ``advance_watermark`` an ``advance``, ``close`` an advance to the end (and
count windows' tail). So a feed the schedule delays past the arrival that closes a window, a
late or refused event judged otherwise, or a state restored with another schedule shows as a
difference in that call's windows or rejects. Out-of-order, late-but-allowed and late
events, bad values (non-finite, and a lift that refuses), times in no window, duplicate
times, a non-commutative monoid, every window shape and several sizes, and the window's
state through its bytes at random points.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from windowagg.aggs import Agg
from windowagg.monoids import Concat, Count, Sum
from windowagg.windows import (
    CountWindows,
    Rejected,
    SessionWindows,
    SharedWindows,
    SlidingWindows,
    WindowResult,
)
from windowagg.windows.engine import KeyStream, Shape
from windowagg.windows.engine.schedule import Schedule

END = 2**62  # the watermark close() raises the clock to


class Picky(Concat):
    """Concat (not commutative; values of any type) whose lift refuses negative numbers."""

    __slots__ = ()

    def lift(self, x: Any) -> tuple[Any, ...]:
        if x < 0:
            raise ValueError(f"negative: {x}")
        return (x,)


# name: (class, positional args, keyword args, the engine shapes: one stream per size)
CONFIGS: dict[str, tuple[Any, tuple[Any, ...], dict[str, Any], list[dict[str, int]]]] = {
    "tumbling": (SlidingWindows, (5, 5), {}, [{"size": 5, "slide": 5}]),
    "hopping": (SlidingWindows, (10, 4), {"origin": 3}, [{"size": 10, "slide": 4}]),
    "gaps": (SlidingWindows, (3, 5), {}, [{"size": 3, "slide": 5}]),
    "per_event": (SlidingWindows, (6,), {}, [{"size": 6}]),
    "arrival": (SlidingWindows, (6,), {"emit": "arrival"}, [{"size": 6}]),
    "session": (SessionWindows, (3,), {}, [{"gap": 3}]),
    "count": (CountWindows, (3, 2), {}, [{"rows": 3, "every": 2}]),
    "count_every": (CountWindows, (2,), {}, [{"rows": 2, "every": 1}]),
    "shared": (
        SharedWindows,
        ([4, 3, 10], 3),
        {},
        [{"size": 3, "slide": 3}, {"size": 4, "slide": 3}, {"size": 10, "slide": 3}],
    ),
}

# an arrival: time (the newest time so far minus this: ahead when negative), value
arrival = st.tuples(
    st.integers(-5, 8),
    st.one_of(
        st.integers(-1, 9),  # -1: Picky's lift refuses it (Sum takes it)
        st.sampled_from([float("inf"), float("nan"), 2.5]),
    ),
)
call = st.one_of(
    st.tuples(st.just("insert"), arrival),
    st.tuples(st.just("insert_many"), st.lists(arrival, max_size=6)),
    st.tuples(st.just("advance_watermark"), st.integers(-4, 10)),
    st.tuples(st.just("bytes"), st.none()),
)


class Reference:
    """The engine with no schedule of its own: one KeyStream per shape, fed every call."""

    def __init__(self, monoid: Any, shapes: list[Shape], ooo: int, lateness: int, emit: str):
        obj = type(monoid) is not Sum  # the exact built-in keeps float64 values
        self.objects = obj
        aggs = [
            Agg("value", monoid, "value", "object" if obj else "double", None if obj else "sum"),
            Agg("count", Count(), None, "bigint", "count"),
        ]
        self.streams = [
            KeyStream(aggs, s, max_out_of_orderness=ooo, allowed_lateness=lateness, emit=emit)
            for s in shapes
        ]
        self.rejected: list[Rejected] = []
        # per-event windows are numbered by arrival: the object API refuses bad values and
        # times in no window itself, and numbers the events it feeds the engine
        self.numbered = shapes[0].per_event
        self.fed = 0  # arrival numbers given
        self.unfed: list[int] = []  # those of events the object API refuses on arrival

    def _column(self, values: list[Any]) -> np.ndarray:
        if not self.objects:
            return np.asarray([float(v) for v in values], dtype=np.float64)
        col = np.empty(len(values), dtype=object)
        col[:] = values
        return col

    def _collect(self, steps: list[Any], pairs: list[tuple[Any, Any]]) -> list[Any]:
        step = steps[0][0]  # every size admits alike
        for i, why in zip(step.refused.tolist(), step.reasons, strict=True):
            self.rejected.append(Rejected(*pairs[i], why))
            if not why.startswith("late"):
                self.unfed.append(self.fed + i)
        self.fed += len(pairs)
        rows = []
        for size_i, (res, _) in enumerate(steps):
            c = res.columns
            for s, e, val, n, r, i in zip(
                c["start"].tolist(),
                c["end"].tolist(),
                list(c["value"]),
                c["count"].tolist(),
                c["revision"].tolist(),
                res.ids.tolist(),
                strict=True,
            ):
                v = val.item() if isinstance(val, np.generic) else val
                if self.numbered:
                    i -= sum(1 for u in self.unfed if u < i)
                rows.append((e, size_i, s, WindowResult(s, e, v, n, r, i)))
        rows.sort(key=lambda x: (x[0], x[1], x[2]))
        return [x[3] for x in rows]

    def feed(self, pairs: list[tuple[int, Any]]) -> list[Any]:
        t = np.asarray([p[0] for p in pairs], dtype=np.int64)
        vals = {"value": self._column([p[1] for p in pairs])}
        return self._collect([s.feed(t, vals) for s in self.streams], pairs)

    def advance(self, wm: int) -> list[Any]:
        return self._collect([s.advance(wm) for s in self.streams], [])

    def close(self) -> list[Any]:
        out = self.advance(END)
        tail = self.streams[0].tail()  # count windows' last events (no other shape has any)
        if tail.reasons:
            for x, v, why in zip(
                tail.events.t.tolist(), tail.events.values["value"].tolist(), tail.reasons,
                strict=True,
            ):  # fmt: skip
                self.rejected.append(Rejected(x, v, why))
        return out


def _key(r: Rejected) -> str:
    return repr(r)  # NaN values compare by their text


@pytest.mark.parametrize("name", sorted(CONFIGS))
@pytest.mark.parametrize("monoid", [Sum, Picky])
@given(
    ooo=st.integers(0, 3),
    lateness=st.integers(0, 5),
    calls=st.lists(call, max_size=30),
)
def test_the_object_api_emits_and_rejects_what_the_engine_does(
    name: str, monoid: Any, ooo: int, lateness: int, calls: list[Any]
) -> None:
    cls, args, kwargs, fields = CONFIGS[name]
    kwargs = {**kwargs, "max_out_of_orderness": ooo, "allowed_lateness": lateness}
    origin = kwargs.get("origin", 0)
    shapes = [Shape.of(start_time=origin, **f) for f in fields]
    w = cls(monoid(), *args, **kwargs)
    ref = Reference(monoid(), shapes, ooo, lateness, kwargs.get("emit", "watermark"))
    newest = 0
    for op, arg in calls:
        seen = len(w.rejected)
        if op == "insert":
            t = newest - arg[0]
            newest = max(newest, t)
            got, want = w.insert(t, arg[1]), ref.feed([(t, arg[1])])
            assert got == want
            assert w.rejected[seen:] == ref.rejected[seen:] or list(
                map(_key, w.rejected[seen:])
            ) == list(map(_key, ref.rejected[seen:]))
            continue
        if op == "insert_many":
            burst = []
            for back, v in arg:
                t = newest - back
                newest = max(newest, t)
                burst.append((t, v))
            got, want = w.insert_many(burst), ref.feed(burst)
        elif op == "advance_watermark":
            got, want = w.advance_watermark(newest + arg), ref.advance(newest + arg)
        else:  # the state through its bytes: the restored window keeps the schedule
            w = cls.from_bytes(w.to_bytes(), monoid(), *args, **kwargs)
            got = want = []
        assert got == want
        # a burst rejects its bad values on arrival and its late events when fed: the
        # same events and reasons, in another order
        assert sorted(map(_key, w.rejected[seen:])) == sorted(map(_key, ref.rejected[seen:]))
    assert w.close() == ref.close()
    assert sorted(map(_key, w.rejected)) == sorted(map(_key, ref.rejected))
    assert w.counters["late"] == sum(1 for r in ref.rejected if r.reason.startswith("late"))


def test_a_schedule_that_fed_late_would_show(monkeypatch: pytest.MonkeyPatch) -> None:
    """The comparison can fail: an object API whose schedule never asks for a feed emits
    nothing on the arrival that closes a window, where the engine emits it."""
    w = SlidingWindows(Sum(), 5, 5)
    ref = Reference(Sum(), [Shape.of(size=5, slide=5)], 0, 0, "watermark")
    monkeypatch.setattr(Schedule, "hold", lambda self, x: False)
    assert w.insert(1, 1.0) == ref.feed([(1, 1.0)]) == []
    assert w.insert(2, 1.0) == ref.feed([(2, 1.0)]) == []
    got, want = w.insert(7, 1.0), ref.feed([(7, 1.0)])
    assert want == [WindowResult(0, 5, 2.0, 2)]
    assert got != want
