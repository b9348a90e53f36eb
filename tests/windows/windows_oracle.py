"""Brute-force oracles for the window adapters: recompute every window from the full event list.

They know nothing about aggregators, panes, eviction or jumps: they keep every accepted
event with its arrival number, apply the documented watermark / lateness rules batch by
batch, and fold the lifted values of each window in (event time, arrival) order.
"""

from __future__ import annotations

import bisect
import datetime as dt
import math
from typing import Any

from windowagg.windows import Rejected, WindowResult


def fold(monoid: Any, values: list[Any]) -> Any:
    acc = monoid.identity
    for v in values:
        acc = monoid.combine(acc, monoid.lift(v))
    return monoid.lower(acc)


def _bad_ts(t: Any, ref: Any) -> bool:
    if t is None:
        return True
    if isinstance(t, float) and math.isnan(t):
        return True
    if ref is not None and type(t) is not type(ref):
        return not (isinstance(t, int | float) and isinstance(ref, int | float))
    return False


def _epoch(t: Any) -> Any:
    if isinstance(t, dt.datetime):
        return dt.datetime(1970, 1, 1, tzinfo=t.tzinfo)
    return 0


class TimeOracle:
    """Time windows (one or several sizes sharing a slide) with batch semantics.

    Window (s, j) is ``[E0 + j*slide - s, E0 + j*slide)`` with ``E0 = origin + max(sizes)``;
    for one size that is ``[origin + k*slide, origin + k*slide + size)``.
    """

    def __init__(
        self,
        monoid: Any,
        sizes: list[Any],
        slide: Any,
        *,
        origin: Any = 0,
        ooo: Any = 0,
        lateness: Any = 0,
        late: str = "drop",
    ) -> None:
        self.m = monoid
        self.sizes = sorted(sizes)
        self.S = self.sizes[-1]
        self.slide = slide
        self.origin = origin
        self.ooo = ooo
        self.L = lateness
        self.late = late
        self.events: list[tuple[Any, int, Any]] = []
        self.seq = 0
        self.wm: Any = None
        self.max: Any = None
        self.ref: Any = None
        self.E0: Any = None
        self.rejected: list[Rejected] = []
        self.late_count = 0
        self.unassigned = 0
        self.closed = False

    def _origin_abs(self, t: Any) -> Any:
        if isinstance(t, dt.datetime):
            o = self.origin
            return _epoch(t) + (o if isinstance(o, dt.timedelta) else dt.timedelta(0))
        return self.origin

    def end(self, j: int) -> Any:
        return self.E0 + j * self.slide

    def first_end_after(self, x: Any) -> int:
        j = math.floor((x - self.E0) / self.slide) + 1
        while self.end(j - 1) > x:
            j -= 1
        while self.end(j) <= x:
            j += 1
        return j

    def bound(self) -> Any:
        if self.wm is None:
            return None
        if self.slide is None:
            return self.wm - self.L
        open_start = self.end(self.first_end_after(self.wm)) - self.S
        lb = self.wm - self.L
        return max(open_start, lb)

    def in_gap(self, t: Any) -> bool:
        if self.slide is None or not self.slide > self.S:
            return False
        j = self.first_end_after(t)
        return bool(self.end(j) - self.S > t)

    def window(self, start: Any, end: Any, *, incl_end: bool = False) -> tuple[Any, int]:
        if incl_end:
            evs = sorted((t, q, v) for t, q, v in self.events if start < t <= end)
        else:
            evs = sorted((t, q, v) for t, q, v in self.events if start <= t < end)
        return fold(self.m, [v for _, _, v in evs]), len(evs)

    def _emit_between(self, lo: Any, hi: Any) -> list[WindowResult]:
        """Non-empty windows with lo < end <= hi (lo None: from the start; hi None: all)."""
        if not self.events:
            return []
        ts = [t for t, _, _ in self.events]
        j_min = self.first_end_after(min(ts))
        j_max = self.first_end_after(max(ts) + self.S)
        out = []
        for j in range(j_min, j_max + 1):
            e = self.end(j)
            if lo is not None and not e > lo:
                continue
            if hi is not None and not e <= hi:
                continue
            for s in self.sizes:
                val, c = self.window(e - s, e)
                if c:
                    out.append(WindowResult(e - s, e, val, c))
        return out

    def batch(self, items: list[tuple[Any, Any]]) -> list[WindowResult]:
        """One insert_many call (or one insert when len(items) == 1)."""
        if self.slide is None:
            out = []
            for t, v in items:
                out.extend(self._event(t, v))
            return out
        bound = self.bound()
        acc: list[tuple[Any, Any]] = []
        for t, v in items:
            if _bad_ts(t, self.ref):
                self.rejected.append(Rejected(t, v, "bad_timestamp"))
                continue
            if self.ref is None:
                self.ref = t
                self.E0 = self._origin_abs(t) + self.S
            if bound is not None and t < bound:
                self.late_count += 1
                if self.late == "side":
                    self.rejected.append(Rejected(t, v, "late"))
                continue
            if self.in_gap(t):
                self.unassigned += 1
                continue
            acc.append((t, v))
        for t, v in acc:
            self.events.append((t, self.seq, v))
            self.seq += 1
        if not acc:
            return []
        mx = max(t for t, _ in acc)
        out: list[WindowResult] = []
        if self.max is None or mx > self.max:
            self.max = mx
            wm = mx - self.ooo
            if self.wm is None or wm > self.wm:
                out = self._emit_between(self.wm, wm)
                self.wm = wm
        return out

    def _event(self, t: Any, v: Any) -> list[WindowResult]:
        if _bad_ts(t, self.ref):
            self.rejected.append(Rejected(t, v, "bad_timestamp"))
            return []
        if self.ref is None:
            self.ref = t
        bound = self.bound()
        if bound is not None and t < bound:
            self.late_count += 1
            if self.late == "side":
                self.rejected.append(Rejected(t, v, "late"))
            return []
        self.events.append((t, self.seq, v))
        self.seq += 1
        if self.max is None or t > self.max:
            self.max = t
            wm = t - self.ooo
            if self.wm is None or wm > self.wm:
                self.wm = wm
        out = []
        for s in self.sizes:
            val, c = self.window(t - s, t, incl_end=True)
            out.append(WindowResult(t - s, t, val, c))
        return out

    def advance(self, wm: Any) -> list[WindowResult]:
        if self.slide is None:
            if self.wm is None or wm > self.wm:
                self.wm = wm
            return []
        if self.E0 is None:
            self.E0 = self._origin_abs(wm) + self.S
        out: list[WindowResult] = []
        if self.wm is None or wm > self.wm:
            out = self._emit_between(self.wm, wm)
            self.wm = wm
        return out

    def close(self) -> list[WindowResult]:
        if self.closed or self.slide is None:
            self.closed = True
            return []
        self.closed = True
        return self._emit_between(self.wm, None)


class CountOracle:
    """The last n accepted events in (event time, arrival) order, emitted every k arrivals."""

    def __init__(
        self,
        monoid: Any,
        n: int,
        every: int = 1,
        *,
        ooo: Any = 0,
        lateness: Any = 0,
        late: str = "drop",
    ) -> None:
        self.m, self.n, self.every = monoid, n, every
        self.ooo, self.L, self.late = ooo, lateness, late
        self.events: list[tuple[Any, int, Any]] = []
        self.seq = 0
        self.wm: Any = None
        self.ref: Any = None
        self.since = 0
        self.late_count = 0
        self.rejected: list[Rejected] = []

    def insert(self, t: Any, v: Any) -> list[WindowResult]:
        if _bad_ts(t, self.ref):
            self.rejected.append(Rejected(t, v, "bad_timestamp"))
            return []
        if self.ref is None:
            self.ref = t
        if self.wm is not None and t < self.wm - self.L:
            self.late_count += 1
            if self.late == "side":
                self.rejected.append(Rejected(t, v, "late"))
            return []
        self.events.append((t, self.seq, v))
        self.seq += 1
        if self.ooo is not None and (self.wm is None or t - self.ooo > self.wm):
            self.wm = t - self.ooo
        self.since += 1
        if self.since < self.every:
            return []
        self.since = 0
        last = sorted(self.events)[-self.n :]
        return [
            WindowResult(last[0][0], last[-1][0], fold(self.m, [v for _, _, v in last]), len(last))
        ]


class PolicyOracle:
    """MTA semantics over event-time order: after each insert, drop the longest prefix P
    (in (t, arrival) order) with ``wsp(total, agg(P))``; emit the remaining window."""

    def __init__(self, monoid: Any, wsp: Any, *, ooo: Any = 0, lateness: Any = 0) -> None:
        self.m, self.wsp = monoid, wsp
        self.ooo, self.L = ooo, lateness
        self.events: list[tuple[Any, int, Any]] = []
        self.seq = 0
        self.wm: Any = None
        self.late_count = 0

    def insert(self, t: Any, v: Any) -> list[WindowResult]:
        m = self.m
        if self.wm is not None and t < self.wm - self.L:
            self.late_count += 1
            return []
        self.events.append((t, self.seq, v))
        self.seq += 1
        if self.ooo is not None and (self.wm is None or t - self.ooo > self.wm):
            self.wm = t - self.ooo
        evs = sorted(self.events)
        total = m.identity
        for _, _, x in evs:
            total = m.combine(total, m.lift(x))
        acc = m.identity
        cut = 0
        for i, (_, _, x) in enumerate(evs):
            acc = m.combine(acc, m.lift(x))
            if self.wsp(total, acc):
                cut = i + 1
            else:
                break
        self.events = evs[cut:]
        if not self.events:
            return []
        return [
            WindowResult(
                self.events[0][0],
                self.events[-1][0],
                fold(m, [x for _, _, x in self.events]),
                len(self.events),
            )
        ]


class StreamOracle:
    """The object API's engine semantics by brute force (int times; hopping or per-event).

    Every admitted event is kept with its arrival number; an arrival is judged against the
    clock *before* it: a time that is not an ``int`` (or is a ``bool``) is ``bad_timestamp``;
    a time in no window of any size (hopping with ``slide > size``) is ``in no window``;
    ``t < max_t - ooo - lateness`` is ``late``; anything else is admitted and raises ``max_t``.
    A window is emitted once ``end <= watermark`` (per-event windows ``(t - size, t]`` once
    ``t <= watermark``; everything at :meth:`close`) and holds the fold of its admitted events
    in (time, arrival) order, so its latest revision is what :meth:`expected` returns.
    """

    def __init__(
        self,
        monoid: Any,
        sizes: list[int],
        slide: int | None,
        *,
        origin: int = 0,
        ooo: int = 0,
        lateness: int = 0,
    ) -> None:
        self.m = monoid
        self.sizes = sorted(sizes)
        self.slide = slide
        self.origin = origin
        self.ooo = ooo
        self.L = lateness
        self.events: list[tuple[int, int, Any]] = []
        self.max_t: int | None = None
        self.closed = False
        self.counts = {"accepted": 0, "bad_timestamp": 0, "late": 0, "unassigned": 0}

    @property
    def wm(self) -> int | None:
        return None if self.max_t is None else self.max_t - self.ooo

    def covered(self, t: int) -> bool:
        """Whether *t* lies in a window of some size."""
        if self.slide is None:
            return True
        return any((t - self.origin) % self.slide < s for s in self.sizes)

    @staticmethod
    def valid(t: Any) -> bool:
        """An engine time: an ``int`` (not a ``bool``) within +-2**62."""
        return type(t) is int and -(2**62) <= t <= 2**62

    def judge(self, t: Any) -> str | None:
        """The reject code of an arrival at *t* now (None: admitted); changes nothing."""
        if not self.valid(t):
            return "bad_timestamp"
        if not self.covered(t):
            return "unassigned"
        if self.max_t is not None and t < self.max_t - self.ooo - self.L:
            return "late"
        return None

    def insert(self, t: Any, v: Any) -> str | None:
        """One arrival; its reject code (None: admitted)."""
        code = self.judge(t)
        self.counts[code or "accepted"] += 1
        if code is None:
            self.events.append((t, len(self.events), v))
            self.max_t = t if self.max_t is None else max(self.max_t, t)
        return code

    def advance(self, wm: int) -> None:
        if self.wm is None or wm > self.wm:
            self.max_t = wm + self.ooo

    def close(self) -> None:
        self.closed = True

    def _due(self, end: int) -> bool:
        return self.closed or (self.wm is not None and end <= self.wm)

    def expected(self) -> list[tuple[int, int, Any, int]]:
        """``(start, end, value, count)`` of every window emitted so far, sorted by
        (end, start) (per-event windows: one per admitted event, in (time, arrival) order)."""
        evs = sorted(self.events)  # (time, arrival) order
        ts = [t for t, _, _ in evs]

        def window(lo: int, hi: int) -> tuple[Any, int]:  # the events with lo <= t < hi
            vs = [v for _, _, v in evs[bisect.bisect_left(ts, lo) : bisect.bisect_left(ts, hi)]]
            return fold(self.m, vs), len(vs)

        out = []
        if self.slide is None:
            (size,) = self.sizes
            for t in ts:
                if self._due(t):
                    out.append((t - size, t, *window(t - size + 1, t + 1)))  # (t - size, t]
            return out
        keys = set()
        for t in ts:
            for s in self.sizes:
                k_hi = (t - self.origin) // self.slide
                k_lo = -((self.origin + s - 1 - t) // self.slide)  # ceil((t-s+1-origin)/slide)
                for k in range(k_lo, k_hi + 1):
                    start = self.origin + k * self.slide
                    if self._due(start + s):
                        keys.add((start + s, start))
        for end, start in sorted(keys):
            out.append((start, end, *window(start, end)))
        return out
