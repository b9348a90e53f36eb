"""The object API's windows as thin stateful adapters over the windows engine's streaming state.

=================  ==========================================================================
engine             one :class:`~windowagg.windows.engine.KeyStream` per window size (the
                   engine's admission, watermark clock, assignment, state and emission; its
                   pane layout for hopping windows of monoids, its event log otherwise)
adapter            converts times (``int``, or ``datetime`` -> int64 microseconds) and
                   values (numbers -> float64), keeps the side output (:attr:`rejected`),
                   the counters and the late / bad-value policies (``"raise"`` before the
                   engine sees the event), and holds events in a buffer; nothing else
asks the engine    whether an event is refused (its value:
                   :func:`~windowagg.windows.engine.admission.value_refusal`; its time:
                   :meth:`~windowagg.windows.engine.shapes.Shape.no_window`) or late, the
                   watermark and lateness bound, and when to feed the buffer (the key's
                   :class:`~windowagg.windows.engine.schedule.Schedule`: an arrival behind
                   the watermark, or the watermark reaching the earliest window end the
                   held or stored events can close), so ``insert`` returns exactly the
                   windows the engine emits for that arrival
semantics          the engine's, as :func:`windowagg.pandas.window_agg` and Spark: late =
                   ``t < watermark - allowed_lateness`` (watermark = newest time -
                   ``max_out_of_orderness``), judged per arrival; a window is emitted when the
                   watermark reaches its end (per-event windows ``(t - size, t]``: when it
                   reaches ``t``) and again, with ``revision`` + 1, when a late-but-allowed
                   event changes it
all or nothing     a call that raises (a monoid's ``combine`` or ``lower``, bad input, a time
                   past ``datetime``'s range) leaves the window as before it: the buffered
                   events, counters, side output, watermark and every size's engine stream
                   (:meth:`EngineWindows._door`)
time               ``insert`` O(1) while buffering; a flush is one engine micro-batch (see
                   ``docs/engine.md``: O(m log m + stored) numpy + the aggregators over the
                   emitted windows)
=================  ==========================================================================
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from datetime import UTC, datetime, timedelta
from numbers import Integral, Real
from typing import Any, Generic

import numpy as np

from windowagg.aggs import MAX_MICROS, MIN_MICROS, Agg
from windowagg.errors import (
    ArgumentError,
    ArgumentTypeError,
    LateEventError,
    MonoidInputError,
    StateError,
    TimestampError,
)
from windowagg.monoids import Count, Max, Mean, Min, Sum
from windowagg.monoids.base import In, Monoid, Out, P
from windowagg.windows import _state_bytes
from windowagg.windows._common import (
    BAD_TIMESTAMP,
    BAD_VALUE,
    LATE,
    Rejected,
    WindowResult,
    check_bad_value_policy,
    check_late_policy,
    monoid_name,
)
from windowagg.windows.engine.admission import value_refusal
from windowagg.windows.engine.records import atomic
from windowagg.windows.engine.schedule import Schedule
from windowagg.windows.engine.shapes import Shape
from windowagg.windows.engine.stream import KeyStream

__all__ = ["EngineWindows"]

_KINDS: dict[type, str] = {Sum: "sum", Max: "max", Min: "min", Mean: "mean"}
_UNIX = datetime(1970, 1, 1)
_UNIX_UTC = datetime(1970, 1, 1, tzinfo=UTC)
_US = timedelta(microseconds=1)
#: The watermark :meth:`EngineWindows.close` raises the clock to (far past any time).
_END = 2**62
_INF = math.inf


def _aggs(monoid: Monoid[Any, Any, Any]) -> list[Agg]:
    """The engine's aggregations: the monoid over the ``value`` column, and ``count``."""
    kind = _KINDS.get(type(monoid))  # exact built-ins keep the engine's float64 fast paths
    value = Agg("value", monoid, "value", "double" if kind else "object", kind)
    return [value, Agg("count", Count(), None, "bigint", "count")]


def _nothing(i: int) -> tuple[Any, Any]:
    """``raw`` of a step that fed no event (a watermark advance)."""
    raise AssertionError(f"event {i} of a step that fed none")


class _Times:
    """Times and durations: ``int`` (as given) or ``datetime`` (int64 microseconds since
    the Unix epoch, naive or aware as the first event). Floats are refused: the engine's
    times are integers (scale them, e.g. to milliseconds)."""

    __slots__ = ("aware", "dt")

    def __init__(self, durations: dict[str, Any]) -> None:
        given = {k: d for k, d in durations.items() if d is not None}
        for k, d in given.items():
            if isinstance(d, float | np.floating) or (
                isinstance(d, Real) and not isinstance(d, Integral)
            ):
                raise ArgumentTypeError(
                    f"{k}={d!r}: the windows engine counts time in integers; scale float "
                    "times and durations to an integer unit (e.g. milliseconds), or use "
                    "datetime times with timedelta durations"
                )
            if isinstance(d, bool) or not isinstance(d, Integral | timedelta):
                raise ArgumentTypeError(
                    f"{k} must be an int or a datetime.timedelta; got {type(d).__name__} {d!r}"
                )
        # an int 0 (the defaults) goes with either kind
        kinds = {
            isinstance(d, timedelta)
            for k, d in given.items()
            if k != "origin" and (isinstance(d, timedelta) or d != 0)
        }
        if len(kinds) > 1:
            raise ArgumentTypeError(
                "durations must all be timedeltas (datetime times) or all ints; got "
                + ", ".join(f"{k}={d!r}" for k, d in given.items())
            )
        # no duration but zeros (count windows without lateness): the first time decides
        self.dt: bool | None = (True in kinds) if kinds else None  # None: the first time decides
        self.aware: bool | None = None

    def duration(self, d: Any, what: str, *, zero: bool = False) -> int:
        """A duration in engine units (ints as given; timedeltas in microseconds)."""
        x = d // _US if isinstance(d, timedelta) else int(d)
        if x < 0 or (x == 0 and not zero):
            raise ArgumentError(f"{what} must be {'>= 0' if zero else 'positive'}; got {d!r}")
        return int(x)

    def origin(self, o: Any) -> int:
        """``start_time`` in engine units: an int / timedelta offset from the epoch, or a
        datetime (datetime times only)."""
        if isinstance(o, datetime):
            if not self.dt:
                raise ArgumentTypeError(f"origin {o!r} is a datetime but the times are ints")
            epoch = _UNIX_UTC if o.tzinfo is not None else _UNIX
            return int((o - epoch) // _US)
        if isinstance(o, timedelta):
            return int(o // _US)
        return int(o)

    def to_engine(self, t: Any) -> int:
        """*t* in engine units, changing nothing; ``TypeError`` / ``ValueError`` (the
        adapter's ``bad_timestamp``). :meth:`commit` fixes the type of the first time."""
        dt = self.dt if self.dt is not None else isinstance(t, datetime)
        if dt:
            if not isinstance(t, datetime):
                raise TypeError(f"{type(t).__name__} {t!r} is not a datetime")
            aware = t.tzinfo is not None
            if self.aware is not None and aware != self.aware:
                raise TypeError(
                    f"{t!r} is {'aware' if aware else 'naive'} but the window's first time was "
                    f"{'aware' if self.aware else 'naive'}"
                )
            return int((t - (_UNIX_UTC if aware else _UNIX)) // _US)
        if isinstance(t, bool) or not isinstance(t, Integral):
            raise TypeError(f"{type(t).__name__} {t!r} is not an int")
        x = int(t)
        if not -_END <= x <= _END:
            raise ValueError(f"{x} is outside +-2**62")
        return x

    def commit(self, t: Any) -> None:
        """Fix the time type (datetime or int; naive or aware) on the first admitted time."""
        if self.dt is None:
            self.dt = isinstance(t, datetime)
        if self.dt and self.aware is None:
            self.aware = t.tzinfo is not None

    def from_engine(self, x: int) -> Any:
        """An engine time back in the caller's type. A datetime is inside the years
        0001-9999 (a window starting before 0001-01-01 or ending after 9999-12-31, a
        watermark before the first year, gives the range's edge, as every front end does:
        :func:`windowagg.rejects.window_bound`)."""
        if not self.dt:
            return int(x)
        x = min(max(int(x), MIN_MICROS), MAX_MICROS)
        return (_UNIX_UTC if self.aware else _UNIX) + timedelta(microseconds=x)


class EngineWindows(Generic[In, P, Out]):
    """The adapter behind :class:`~windowagg.windows.SlidingWindows`, ``CountWindows``,
    ``SessionWindows`` and ``SharedWindows``: one engine stream per window size (see the
    module docstring). Not public: use those classes.
    """

    _kind = "engine"

    def __init__(
        self,
        monoid: Monoid[In, P, Out],
        shapes: Sequence[dict[str, Any]],
        *,
        times: _Times,
        origin: Any,
        max_out_of_orderness: Any,
        allowed_lateness: Any,
        late: str,
        bad_value: str,
        emit: str = "watermark",
    ) -> None:
        check_late_policy(late)
        check_bad_value_policy(bad_value)
        self._monoid = monoid
        self._times = times
        self._ooo = times.duration(max_out_of_orderness, "max_out_of_orderness", zero=True)
        self._allowed = times.duration(allowed_lateness, "allowed_lateness", zero=True)
        self._origin = times.origin(origin)
        self._late = late
        self._bad_value = bad_value
        self._emit = emit
        self._shapes = [Shape.of(start_time=self._origin, **s) for s in shapes]
        self._aggs = _aggs(monoid)
        self._streams = [self._stream(s) for s in self._shapes]
        # the engine's schedule: the clock of the held events, and when to feed them
        self._schedule = Schedule(
            self._shapes, self._streams, max_out_of_orderness=self._ooo,
            allowed_lateness=self._allowed, emit=emit,
        )  # fmt: skip
        # the monoid's lift, for the engine's admission of one value (None: the exact
        # float built-ins, which refuse only non-finite values); their values are float64
        self._probe = monoid.lift if self._aggs[0].kind is None else None
        self._objects = self._aggs[0].dtype == "object"
        self._buf_t: list[int] = []
        self._buf_v: list[Any] = []
        # the caller's (t, v) of the buffered events that _add converted (the others are
        # _buf_t[i], _buf_v[i] as given), by buffer position: for their rejects
        self._buf_raw: dict[int, tuple[Any, Any]] = {}
        self._closed = False
        self._fast = False  # int times known, no probe, no gaps, no raise: insert's fast path
        self._burst = False  # inside insert_many: feed once at its end
        self._feed_due = False  # the schedule asked for a feed inside the burst
        self.rejected: list[Rejected] = []
        """The side output: every event not aggregated (``late="side"``,
        ``bad_value="side"``, bad timestamps, times in no window), oldest first."""
        self._counts = {
            "accepted": 0,
            BAD_TIMESTAMP: 0,
            BAD_VALUE: 0,
            LATE: 0,
            "unassigned": 0,
            "emitted": 0,
            "revised": 0,
        }

    def _stream(self, shape: Shape) -> KeyStream:
        return KeyStream(
            self._aggs,
            shape,
            max_out_of_orderness=self._ooo,
            allowed_lateness=self._allowed,
            emit=self._emit,
            deltas=False,  # no store: the state is written whole by to_bytes
        )

    # ------------------------------------------------------------------ read-only facts
    @property
    def counters(self) -> dict[str, int]:
        """Events per outcome (accepted, bad_timestamp, bad_value, late, unassigned) and
        windows emitted (``emitted``, of which ``revised`` were revisions). O(buffered)."""
        self._flush()
        return dict(self._counts)

    @property
    def late_count(self) -> int:
        """Events refused as late. O(buffered)."""
        self._flush()
        return self._counts[LATE]

    @property
    def watermark(self) -> Any:
        """Newest admitted time minus ``max_out_of_orderness`` (None before any). O(1)."""
        wm = self._schedule.watermark
        return None if wm is None else self._times.from_engine(wm)

    @property
    def lateness_bound(self) -> Any:
        """Events with ``t < lateness_bound`` are late: ``watermark - allowed_lateness``
        (None before the first event). O(1)."""
        b = self._schedule.bound
        return None if b is None else self._times.from_engine(b)

    @property
    def streams(self) -> list[KeyStream]:
        """The engine streams (one per window size), after handing buffered events over."""
        self._flush()
        return list(self._streams)

    def next_deadline(self) -> Any:
        """The watermark at which the window next has work (a window to close, or state to
        drop), for an event-time timer; None when nothing is stored. O(stored)."""
        self._flush()
        d = self._schedule.due
        return None if d == _INF else self._times.from_engine(int(d))

    def __len__(self) -> int:
        """Entries the engine stores (events or panes; the largest size's) plus buffered
        events. O(1)."""
        return len(self._streams[-1]) + len(self._buf_t)

    # ------------------------------------------------------------------ all or nothing
    def _save(self) -> tuple[Any, ...]:
        """What a call may change on this side of the engine (for :meth:`_undo`). O(1): the
        buffer and the side output only grow within a call (a flush replaces the buffer's
        lists, keeping these), so their lengths restore them."""
        bt = self._buf_t
        return (bt, self._buf_v, self._buf_raw, len(bt), dict(self._counts), self.rejected,
                len(self.rejected), self._schedule.saved(), self._feed_due, self._fast,
                self._closed, self._times.dt, self._times.aware)  # fmt: skip

    def _undo(self, saved: tuple[Any, ...]) -> None:
        """Put back what :meth:`_save` kept. O(buffered)."""
        bt, bv, raw, n, self._counts, rej, n_rej, sched = saved[:8]
        (self._feed_due, self._fast, self._closed, self._times.dt,
         self._times.aware) = saved[8:]  # fmt: skip
        self._schedule.put_back(sched)
        del bt[n:], bv[n:], rej[n_rej:]
        for i in [i for i in raw if i >= n]:
            del raw[i]
        self._buf_t, self._buf_v, self._buf_raw, self.rejected = bt, bv, raw, rej

    @contextmanager
    def _door(self, streams: Sequence[KeyStream] = ()) -> Iterator[None]:
        """Run a call all or nothing: if it raises, the adapter's state is put back, and
        *streams* too (each stream's own step is atomic; this makes several sizes, or a
        flush and an advance, one step). O(1), plus O(each of *streams*' metadata)
        (:func:`~.engine.records.atomic`)."""
        saved = self._save()
        try:
            if streams:
                with ExitStack() as journals:
                    for st in streams:
                        journals.enter_context(atomic(st._state))
                    yield
            else:
                yield
        except BaseException:
            self._undo(saved)
            raise

    # ------------------------------------------------------------------ the verbs
    def insert(self, t: Any, v: In) -> list[WindowResult[Out]]:
        """Add one event; return the windows its arrival closed or revised.

        O(1) while buffered; otherwise one engine micro-batch (module docstring).
        """
        out: list[WindowResult[Out]] = []
        val: Any = v
        tv = type(val)
        # the common case inline (int time of an int-timed window, a finite float or int
        # value, nothing to probe or refuse here): what _add does, without its calls; the
        # engine's admission still judges every event when the buffer is fed
        if (
            self._fast
            and type(t) is int
            and (tv is float or (tv is int and -_END <= val <= _END))
            and val - val == 0
            and -_END <= t <= _END
        ):
            self._buf_t.append(t)
            self._buf_v.append(val)  # as given: the flush makes the float64 column
            if self._schedule.hold(t):  # the engine's schedule: feed now
                try:
                    self._flush(out)
                except BaseException:  # the flush put the buffer back: take t out
                    self._buf_t.pop()
                    self._buf_v.pop()
                    self._schedule.unhold()
                    raise
            return out
        self._check_open()
        with self._door():
            self._add(t, v, out)
        return out

    def insert_many(self, pairs: Iterable[tuple[Any, In]]) -> list[WindowResult[Out]]:
        """Add events in arrival order as one engine micro-batch: each judged as by
        :meth:`insert` (lateness per arrival), then the windows the burst closed or revised
        (a window the burst both closes and changes comes once, with its final value). With
        ``late="raise"`` or ``bad_value="raise"`` nothing changes when one event fails (the
        call's door puts back what the events before it did). O(m) + at most one engine
        micro-batch."""
        self._check_open()
        items = list(pairs)
        out: list[WindowResult[Out]] = []
        with self._door():  # a raise (bad input, the flush) puts the window back
            self._burst_in(items, out)
        return out

    def _burst_in(self, items: list[tuple[Any, In]], out: list[WindowResult[Out]]) -> None:
        """:meth:`insert_many`'s work, inside its all-or-nothing door."""
        self._burst = True  # one engine micro-batch for the burst (judged per arrival)
        bt, bv, sched = self._buf_t, self._buf_v, self._schedule  # hot loop: locals
        run = len(bt)  # the first of the buffered run of fast events the schedule has not held
        due = False
        try:
            for t, v in items:
                val: Any = v
                tv = type(val)
                # insert's fast path, without a flush: the burst is one micro-batch
                if (
                    self._fast
                    and type(t) is int
                    and (tv is float or (tv is int and -_END <= val <= _END))
                    and val - val == 0
                    and -_END <= t <= _END
                ):
                    bt.append(t)
                    bv.append(val)
                    continue
                if len(bt) > run:  # the schedule holds the run first: arrival order
                    due = sched.hold_many(bt[run:]) or due
                self._add(t, v, out)
                run = len(bt)
            if len(bt) > run:
                due = sched.hold_many(bt[run:]) or due
        finally:
            self._burst = False
        if due or self._feed_due:
            self._flush(out)

    def advance_watermark(self, wm: Any) -> list[WindowResult[Out]]:
        """Raise the watermark to *wm* (a punctuation, an idle source) and return what that
        closes; a value not ahead of the watermark is a no-op. One engine micro-batch."""
        self._check_open()
        try:
            x = self._times.to_engine(wm)
        except (TypeError, ValueError, OverflowError) as e:
            raise TimestampError(
                f"watermark {wm!r} is not a time of this window ({e}): give one of its type; "
                "to end the stream (an infinite watermark) call close()"
            ) from e
        out: list[WindowResult[Out]] = []
        with self._door(self._streams):  # the flush and the advance: one step
            self._flush(out)
            if self._schedule.advance(x):
                self._results([s.advance(x) for s in self._streams], 0, _nothing, out)
        return out

    def close(self) -> list[WindowResult[Out]]:
        """End the stream: emit every window still open; later calls are refused.

        Count windows' last events that complete no window become rejects (``in no
        window: ...``), as in the batch front ends.
        """
        if self._closed:
            return []
        out: list[WindowResult[Out]] = []
        with self._door(self._streams):  # the flush and the last windows: one step
            self._flush(out)
            self._results([s.advance(_END) for s in self._streams], 0, _nothing, out)
            self._close_extra()
            self._closed = True
            self._fast = False
        return out

    def _close_extra(self) -> None:
        """What :meth:`close` does after the last emission (count windows: their tail)."""

    # ------------------------------------------------------------------ admission
    def _check_open(self) -> None:
        if self._closed:
            raise StateError(
                f"{type(self).__name__} is closed: close() ended the stream; make a new one"
            )

    def _value(self, v: Any) -> tuple[Any, str | None]:
        """``(value, None)`` (a float for the float64 column of an exact ``Sum``, ``Max``,
        ``Min`` or ``Mean``; the value itself for any other monoid), or ``(None, reason)``
        for a value the engine's admission refuses (:func:`~.engine.admission.value_refusal`)."""
        if self._objects:
            why = value_refusal(v, "value", self._probe)
            return (v, None) if why is None else (None, why)
        if (isinstance(v, Real) and not isinstance(v, bool)) or isinstance(v, np.floating):
            x = float(v)
            why = value_refusal(x, "value", None)
            return (x, None) if why is None else (None, why)
        why = value_refusal(v, "value", self._monoid.lift)
        if why is not None:
            return None, why
        name = type(self._monoid).__name__
        raise ArgumentTypeError(
            f"{monoid_name(self._monoid)} keeps float64 values in the windows engine (its "
            f"numeric fast path); got {type(v).__name__} {v!r}: give numbers, or, for values "
            f"of other types, a monoid that is not exactly Sum/Max/Min/Mean (e.g. a subclass "
            f"`class Any{name}({name}): pass`, which takes any value its lift accepts)"
        )

    def _reject(self, t: Any, v: Any, reason: str, code: str) -> None:
        self._counts[code] += 1
        policy = {LATE: self._late, BAD_VALUE: self._bad_value}.get(code, "side")
        if policy == "drop":
            return
        self.rejected.append(Rejected(t, v, reason))

    def _add(self, t: Any, v: Any, out: list[WindowResult[Out]]) -> None:
        # the common case first (int time, float value, no probe): exact type checks are
        # several times cheaper than the ABC checks of to_engine / _value
        tv = type(v)
        if (
            type(t) is int
            and self._times.dt is False
            and -_END <= t <= _END
            and (tv is float or tv is int)
            and self._probe is None
            and v - v == 0
        ):
            x: int = t
            value: Any = float(v)
            why: str | None = None
        else:
            try:
                x = self._times.to_engine(t)
            except (TypeError, ValueError, OverflowError) as e:
                self._reject(t, v, f"{BAD_TIMESTAMP}: {e}", BAD_TIMESTAMP)
                return
            value, why = self._value(v)
        if why is not None:
            if self._bad_value == "raise":
                raise MonoidInputError(
                    f"{self._kind}: the engine refused the value {v!r} at {t!r} ({why}); "
                    + ("nothing of the burst was applied: " if self._burst else "")
                    + "fix or filter the input, or use bad_value='side' (or 'drop')"
                )
            self._reject(t, v, why, BAD_VALUE)
            return
        gap = self._shapes[0].no_window(x)  # the engine's reason for a time in no window
        if gap is not None:
            self._reject(t, v, gap, "unassigned")
            return
        sched = self._schedule
        bound = sched.late(x)
        if bound is not None and self._late == "raise":
            if self._burst:
                raise LateEventError(
                    f"event at {t!r} is older than the lateness bound; nothing of the burst "
                    "was applied: raise allowed_lateness or use late='side'"
                )
            raise LateEventError(
                f"event at {t!r} is older than the lateness bound "
                f"{self._times.from_engine(bound)!r} (watermark minus allowed_lateness); "
                "raise allowed_lateness or max_out_of_orderness, or use late='side' (the "
                "default) or 'drop'"
            )
        self._times.commit(t)
        if not self._fast:
            self._set_fast()
        self._buf_raw[len(self._buf_t)] = (t, v)
        self._buf_t.append(x)
        self._buf_v.append(value)
        if sched.hold(x):  # the engine's schedule: feed now (once, at a burst's end)
            if self._burst:
                self._feed_due = True
            else:
                self._flush(out)

    def _set_fast(self) -> None:
        """Whether insert may take its fast path: int times (known), no probe, no gaps,
        emission at the watermark, no policy that raises, open, a time admitted."""
        self._fast = (
            self._times.dt is False
            and self._probe is None
            and not self._shapes[0].gaps
            and self._emit == "watermark"
            and self._late != "raise"
            and self._bad_value != "raise"
            and not self._closed
            and self._schedule.watermark is not None
        )

    # ------------------------------------------------------------------ emission
    def _flush(self, out: list[WindowResult[Out]] | None = None) -> None:
        """Feed the buffered events to the engine (one micro-batch); collect what it emits.
        All or nothing: if it raises, the buffer and every stream are as before. The last
        stream fed needs no journal here: its feed is atomic, and what follows it (the
        results' conversions) does not raise."""
        if not self._buf_t:
            return
        with self._door(self._streams[:-1]):
            self._feed(out)

    def _feed(self, out: list[WindowResult[Out]] | None) -> None:
        t = np.asarray(self._buf_t, dtype=np.int64)
        if self._objects:  # the values as given, for the monoid's own lift and combine
            col = np.empty(len(self._buf_v), dtype=object)
            col[:] = self._buf_v
        else:
            col = np.asarray(self._buf_v, dtype=np.float64)
        vals = {"value": col}
        bt, bv, conv = self._buf_t, self._buf_v, self._buf_raw
        self._buf_t, self._buf_v, self._buf_raw = [], [], {}
        self._feed_due = False
        steps = [s.feed(t, vals) for s in self._streams]

        def raw(i: int) -> tuple[Any, Any]:
            """The caller's (t, v) of buffered event *i*."""
            got = conv.get(i)
            return got if got is not None else (bt[i], bv[i])

        self._results(steps, len(bt), raw, out if out is not None else [])

    def _results(
        self, steps: list[Any], n: int, raw: Callable[[int], tuple[Any, Any]], out: list[Any]
    ) -> None:
        """Collect the engine's steps for *n* fed events (``raw(i)``: the caller's (t, v) of
        event i): rejects, counters and the emitted windows, in end order; then the
        schedule hears what the streams now have pending."""
        step = steps[0][0]  # every size admits alike (one clock configuration)
        refused = step.refused.tolist()
        for i, why in zip(refused, step.reasons, strict=True):
            code = LATE if why.startswith("late") else BAD_VALUE
            t, v = raw(i)
            self._reject(t, v, why, code)
        self._counts["accepted"] += n - len(refused)
        self._schedule.fed(n - len(refused))
        rows: list[tuple[int, int, int, WindowResult[Out]]] = []
        frm = self._times.from_engine
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
                rows.append((e, size_i, s, WindowResult(frm(s), frm(e), v, n, r, i)))
        rows.sort(key=lambda x: (x[0], x[1], x[2]))
        self._counts["emitted"] += len(rows)
        self._counts["revised"] += sum(1 for x in rows if x[3].revision)
        out.extend(x[3] for x in rows)

    # ------------------------------------------------------------------ state bytes
    def to_bytes(self) -> bytes:
        """The window's state as versioned ``windowagg.codec`` bytes (no pickle): the
        configuration, counters, side output and each engine stream's metadata and pieces
        (:mod:`windowagg.windows._state_bytes`). O(stored)."""
        with self._door(self._streams):
            self._flush()
            return _state_bytes.dump(self)

    def _restore(self, data: bytes) -> None:
        """Load :meth:`to_bytes` into this fresh window (same configuration); any failure is
        a ``CodecError``."""
        _state_bytes.restore(self, data)

    def _check(self) -> None:
        """Invariants (O(stored)): each engine stream's, and the buffer's lengths."""
        for s in self._streams:
            s._check()
        if len(self._buf_t) != len(self._buf_v) or any(
            i >= len(self._buf_t) for i in self._buf_raw
        ):
            raise AssertionError(f"{self._kind}: buffer columns of different lengths")
