"""Window shapes: one class per shape behind one protocol, which the batch path, the streaming
layouts and the object API ask instead of testing a shape's name.

=================  ==========================================================================
shapes             :class:`Hopping` (``size`` + ``slide``: ``[start, start + size)`` on a grid
                   of starts ``start_time + k * slide``), :class:`PerEvent` (``size``, no
                   slide: ``(t - size, t]``), :class:`WholeHistory` (a per-event ``size`` at
                   least :data:`HISTORY`: each key's history up to the event), :class:`Count`
                   (the last ``rows`` events, one window every ``every`` events),
                   :class:`Session` (``gap``)
protocol           :meth:`Shape.assign_groups` (which events every window holds, many keys at
                   once: :mod:`.assign`); :meth:`Shape.first_end` (the earliest window end an
                   event can close); :meth:`Shape.deadline` (the watermark after which an
                   event changes no window); :meth:`Shape.dead` (the compaction bound: stored
                   events no later emission can hold); :meth:`Shape.no_window` (why a time is
                   in no window); :meth:`Shape.completes` (whether held events can complete
                   a window: count windows)
capabilities       ``grid`` (window ends on a fixed grid: panes), ``trails`` (per-event windows
                   of a bounded size), ``per_event`` (one window per event, ending at it),
                   ``whole_history``, ``positional`` (windows by position: a later event
                   shifts them, the last events wait for events, not time), ``merges``
                   (windows merge as events arrive: a revision supersedes those it contains)
construction       ``Shape(size=..., slide=...)`` (or ``rows``/``every``, ``gap``) returns the
                   shape's class; ``kind`` names it (``"hopping"``, ``"per_event"`` (also the
                   whole history), ``"count"``, ``"session"``), in messages only: stored
                   configurations hold the fields
time               every method O(1) unless it says otherwise
=================  ==========================================================================

Adding a shape is a class here (and its kernel in :mod:`.assign`) and its tests.

>>> Shape(size=10, slide=5), Shape(size=10).kind, Shape(rows=3).kind
(Hopping(size=10, slide=5, rows=None, every=1, gap=None, start_time=0, sizes=()), 'per_event', 'count')
>>> h = Shape(size=4, slide=10)
>>> h.first_end(13), h.deadline(13, lateness=2)
(14, 19)
>>> print(h.no_window(15))
in no window: 15 lies between the hopping windows [10, 14) and [20, 24) (size < slide leaves gaps); make slide <= size to cover every time
>>> Shape(gap=5).first_end(7), Shape(gap=5).deadline(7, lateness=0)
(12, 13)
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from windowagg.windows.engine.assign import (
    HISTORY,
    Windows,
    _count,
    _hopping,
    _per_event,
    _session,
)

__all__ = [
    "HISTORY",
    "Count",
    "Hopping",
    "PerEvent",
    "Session",
    "Shape",
    "WholeHistory",
    "count_tail_reason",
]


def _class_of(
    size: int | None, slide: int | None, rows: int | None, gap: int | None
) -> type[Shape]:
    """The class of the shape the fields give (exactly one of size, rows, gap). O(1)."""
    given = [x is not None for x in (size, rows, gap)]
    if sum(given) != 1:
        raise ValueError(
            "give exactly one window shape: size (with slide), rows (with every) or gap; "
            f"got size={size}, rows={rows}, gap={gap}"
        )
    if gap is not None:
        return Session
    if rows is not None:
        return Count
    if slide is not None:
        return Hopping
    return WholeHistory if size is not None and size >= HISTORY else PerEvent


@dataclass(frozen=True)
class Shape(ABC):
    """One window shape (all times in the caller's integer unit, e.g. microseconds): the
    protocol every shape's class implements, and its constructor.

    Exactly one of ``size`` (time windows; ``slide=None`` for per-event windows), ``rows``
    (count windows, with ``every``) or ``gap`` (session windows); ``Shape(...)`` returns
    the class of that shape. ``sizes`` (time windows only) asks for several sizes at once
    over the same windows' ends: ``size`` is then the largest (it decides the windows,
    :func:`~.assign.assign`), and each size's window ends where the row's does
    (:mod:`~windowagg.windows.engine.sizes`); with a ``slide`` the sizes differ by
    multiples of it, so that they share one grid of window ends.

    >>> Shape(size=10).kind, Shape(size=10, slide=5).kind, Shape(rows=3).kind
    ('per_event', 'hopping', 'count')
    >>> type(Shape(gap=3)).__name__, isinstance(Shape(gap=3), Shape)
    ('Session', True)
    >>> Shape(size=20, slide=5, sizes=(5, 20)).sizes
    (5, 20)
    >>> Shape(size=20, slide=10, sizes=(5, 20))
    Traceback (most recent call last):
    ...
    ValueError: sizes (5, 20) must differ by multiples of slide 10 (to share one grid of window ends); give e.g. sizes that are multiples of the slide
    >>> Shape(size=10, gap=3)
    Traceback (most recent call last):
    ...
    ValueError: give exactly one window shape: size (with slide), rows (with every) or gap; got size=10, rows=None, gap=3
    >>> Session(size=10)
    Traceback (most recent call last):
    ...
    ValueError: Session is not the shape of size=10, slide=None, rows=None, gap=None (that is PerEvent); build it with Shape(...)
    """

    size: int | None = None
    slide: int | None = None
    rows: int | None = None
    every: int = 1
    gap: int | None = None
    start_time: int = 0
    sizes: tuple[int, ...] = ()

    #: The shape's name, in messages (stored configurations hold the fields).
    kind: ClassVar[str]
    #: Window ends on a fixed grid, whatever the events (hopping: the pane layout).
    grid: ClassVar[bool] = False
    #: One window per event, ending at it (per-event windows and the whole history).
    per_event: ClassVar[bool] = False
    #: Per-event windows of a bounded size (found by searches; not the whole history).
    trails: ClassVar[bool] = False
    #: Each key's whole history up to every event.
    whole_history: ClassVar[bool] = False
    #: Windows by position in the key's order: a later event shifts them, and the last
    #: events wait for later events, not for time (count windows).
    positional: ClassVar[bool] = False
    #: Windows merge as events arrive: an emitted window is revised by the one containing
    #: it (sessions), not by its identity.
    merges: ClassVar[bool] = False

    def __new__(
        cls,
        size: int | None = None,
        slide: int | None = None,
        rows: int | None = None,
        every: int = 1,
        gap: int | None = None,
        start_time: int = 0,
        sizes: tuple[int, ...] = (),
    ) -> Shape:
        """The instance of the class the fields give (a subclass asked for directly must
        be that class: ``dataclasses.replace`` keeps the shape). O(1)."""
        got = _class_of(size, slide, rows, gap)
        if not issubclass(got, cls):
            raise ValueError(
                f"{cls.__name__} is not the shape of size={size}, slide={slide}, rows={rows}, "
                f"gap={gap} (that is {got.__name__}); build it with Shape(...)"
            )
        made: Shape = object.__new__(got)
        return made

    def __reduce__(self) -> tuple[type[Shape], tuple[object, ...]]:
        """Rebuilt from its fields (``copy``, and Spark shipping a closure to its Python
        workers with cloudpickle: ``__new__`` needs the fields to pick the class). O(1)."""
        return type(self), (
            self.size,
            self.slide,
            self.rows,
            self.every,
            self.gap,
            self.start_time,
            self.sizes,
        )

    @classmethod
    def of(
        cls,
        size: int | None = None,
        slide: int | None = None,
        rows: int | None = None,
        every: int = 1,
        gap: int | None = None,
        start_time: int = 0,
        sizes: tuple[int, ...] = (),
    ) -> Shape:
        """``Shape(...)`` as a type checker reads it (it sees an abstract class called).
        O(len(sizes)).

        >>> Shape.of(gap=3) == Shape(gap=3)
        True
        """
        got = _class_of(size, slide, rows, gap)
        return got(size, slide, rows, every, gap, start_time, sizes)

    def __post_init__(self) -> None:
        if self.size is not None and self.size <= 0:
            raise ValueError(f"window size must be positive, got {self.size}")
        if self.slide is not None and (self.size is None or self.slide <= 0):
            raise ValueError(
                f"slide needs a time window (size) and must be positive, got {self.slide}"
            )
        if self.rows is not None and (self.rows <= 0 or self.every <= 0):
            raise ValueError(
                f"rows and every must be positive, got rows={self.rows}, every={self.every}"
            )
        if self.gap is not None and self.gap <= 0:
            raise ValueError(f"session gap must be positive, got {self.gap}")
        if self.sizes:
            self._check_sizes()

    def _check_sizes(self) -> None:
        """Several sizes: time windows, positive and distinct, ``size`` the largest, and
        with a slide all alike modulo the slide. O(len(sizes))."""
        sizes = self.sizes
        if self.size is None:
            raise ValueError(f"sizes {sizes} need time windows (size), not rows or gap")
        if min(sizes) <= 0 or len(set(sizes)) != len(sizes):
            raise ValueError(f"sizes {sizes} must be positive and distinct")
        if self.size != max(sizes):
            raise ValueError(f"size must be the largest of sizes {sizes}, got {self.size}")
        if self.slide is not None and any((s - self.size) % self.slide for s in sizes):
            raise ValueError(
                f"sizes {sizes} must differ by multiples of slide {self.slide} (to share "
                "one grid of window ends); give e.g. sizes that are multiples of the slide"
            )

    # ------------------------------------------------------------------ the protocol
    @abstractmethod
    def assign_groups(self, t: np.ndarray, starts: np.ndarray) -> tuple[Windows, np.ndarray]:
        """The windows over many keys' sorted times at once, and how many each key has
        (:func:`~.assign.assign_groups`). O(n + windows + keys) numpy."""

    def assign(self, t: np.ndarray) -> Windows:
        """The windows over one key's sorted int64 times (:func:`~.assign.assign`).
        O(n + windows) numpy."""
        t = np.asarray(t, dtype=np.int64)
        return self.assign_groups(t, np.array([0, len(t)], dtype=np.int64))[0]

    @abstractmethod
    def first_end(self, x: int) -> int:
        """A lower bound of the end of any window an event at *x* can close: no window it
        joins is emitted before the watermark reaches it. O(1)."""

    @abstractmethod
    def deadline(self, newest: int, lateness: int) -> int | None:
        """The watermark past which events up to *newest* change no window any more, with
        *lateness* (allowed lateness) admitted behind the watermark; None when time never
        settles them (count windows wait for events). O(1)."""

    @abstractmethod
    def dead(self, t: np.ndarray, bound: int, dropped: int) -> int:
        """The compaction bound: how many of a key's stored sorted times *t* no window still
        to be emitted or revised can hold, once no event older than *bound* (the lateness
        bound) is admitted; *dropped* events were compacted before ``t[0]``. O(log n)
        (sessions: O(n))."""

    def no_window(self, x: int) -> str | None:
        """Why the time *x* is in no window (the reject reason), None when some window can
        hold it. Only hopping windows with ``size < slide`` leave times out (count windows
        leave events out by position: :meth:`unassigned`). O(1)."""
        return None

    # ------------------------------------------------------------------ derived verbs
    @property
    def gaps(self) -> bool:
        """Whether some times are in no window (:meth:`no_window`). O(1)."""
        return False

    def refuse_times(self, t: np.ndarray, ok: np.ndarray, reason: dict[int, str]) -> None:
        """Refuse (in *ok*, with *reason*) the admissible times in no window: a property of
        the time alone, so a stream refuses them on arrival as a batch does. O(m)."""
        if not self.gaps:
            return
        for i in np.flatnonzero(ok).tolist():
            why = self.no_window(int(t[i]))
            if why is not None:
                reason[i] = why
                ok[i] = False

    def unassigned(
        self,
        w: Windows,
        starts: np.ndarray,
        order: np.ndarray,
        refused: np.ndarray,
        reasons: list[str],
    ) -> tuple[np.ndarray, list[str]]:
        """The refused positions and reasons plus the admitted events no window of *w*
        holds (*order*: the admitted events' input positions in sorted order; *starts*:
        each key's first). Every event of a time window is in one. O(1) here."""
        return refused, reasons

    def next_end(self, watermark: int) -> int | None:
        """The first window end after *watermark* on the shape's grid of ends (every size's),
        None when window ends follow the events (ask the layout's deadline). O(sizes)."""
        return None

    def completes(self, stored: int, held: int) -> bool:
        """Whether *held* events arriving after *stored* admitted ones can complete a window
        (a positional shape's windows close by count: :class:`Count`); a time window's
        always can. O(1)."""
        return True

    def stored_windows(self, t: np.ndarray, dropped: int) -> Windows:
        """The windows over a stream's stored sorted times *t*, after *dropped* compacted
        events (positions count them: :class:`Count`). O(n) numpy."""
        return self.assign(t)

    def window_ids(self, w: Windows, seq: np.ndarray) -> np.ndarray:
        """Every window's identity across micro-batches (its start: what a revision names);
        *seq*: the stored events' arrival numbers. O(1)."""
        return w.start

    def holds_new(self, w: Windows, is_new: np.ndarray) -> np.ndarray:
        """Per window, whether a micro-batch's events (``is_new`` over the stored sorted
        events) change it: it holds one. O(n + windows)."""
        new_before = np.concatenate([[0], np.cumsum(is_new)])
        out: np.ndarray = new_before[w.hi] > new_before[w.lo]
        return out

    def emitted_before(
        self,
        w: Windows,
        is_new: np.ndarray,
        old_sorted: np.ndarray,
        emitted: int,
        dropped: int,
    ) -> np.ndarray:
        """Per window of the stored events after a micro-batch (``is_new`` marks its
        events; *old_sorted*: the stored times before it, after *dropped* compacted ones),
        whether it was emitted before, at a watermark up to *emitted*. Shapes that
        :attr:`merge` revise by containment instead. O(n + windows)."""
        raise TypeError(
            f"{type(self).__name__} windows merge: a stream revises them by the emitted "
            "windows they contain, not by identity"
        )

    def revisable(self, end: int, bound: int) -> bool:
        """Whether a window ending at *end* can still change once no event older than
        *bound* is admitted (its end includes its last event's time). O(1)."""
        return end >= bound

    def stream_refusal(self) -> str | None:
        """Why a stream cannot take this shape (an ``ArgumentError``'s message), None when
        it can. O(1)."""
        return None


class Hopping(Shape):
    """Hopping (tumbling: ``slide == size``) windows ``[start, start + size)``, ``start =
    start_time + k * slide``, as Spark's ``F.window``.

    >>> h = Shape(size=10, slide=5)
    >>> h.first_end(7), h.next_end(12), h.revisable(10, 10), h.dead(np.array([1, 6, 12]), 12, 0)
    (10, 15, False, 1)
    """

    kind = "hopping"
    grid = True

    def assign_groups(self, t: np.ndarray, starts: np.ndarray) -> tuple[Windows, np.ndarray]:

        assert self.size is not None and self.slide is not None
        return _hopping(t, starts, np.diff(starts), self.size, self.slide, self.start_time)

    def first_end(self, x: int) -> int:
        # the first window holding x: k = ceil((x - size + 1 - start_time) / slide); every
        # size's (several sizes: a larger one's first window can end first)
        st, sl = self.start_time, self.slide
        assert sl is not None and self.size is not None
        return min(st + -((st - x + z - 1) // sl) * sl + z for z in (self.sizes or (self.size,)))

    def deadline(self, newest: int, lateness: int) -> int | None:
        assert self.size is not None
        return newest + self.size + lateness

    def dead(self, t: np.ndarray, bound: int, dropped: int) -> int:
        assert self.size is not None
        return int(np.searchsorted(t, bound - self.size, "right"))

    @property
    def gaps(self) -> bool:
        assert self.size is not None and self.slide is not None
        return self.size < self.slide

    def no_window(self, x: int) -> str | None:
        size, slide = self.size, self.slide
        assert size is not None and slide is not None
        phase = (x - self.start_time) % slide
        if phase < size:
            return None
        a = x - phase
        return (
            f"in no window: {x} lies between the hopping windows [{a}, {a + size}) "
            f"and [{a + slide}, {a + slide + size}) (size < slide leaves gaps); make "
            "slide <= size to cover every time"
        )

    def refuse_times(self, t: np.ndarray, ok: np.ndarray, reason: dict[int, str]) -> None:
        if not self.gaps:
            return
        assert self.size is not None and self.slide is not None
        phase = (t - self.start_time) % self.slide
        for i in np.flatnonzero(ok & (phase >= self.size)).tolist():
            got = self.no_window(int(t[i]))
            assert got is not None
            reason[i] = got
            ok[i] = False

    def next_end(self, watermark: int) -> int | None:
        st, sl = self.start_time, self.slide
        assert sl is not None and self.size is not None
        return min(
            st + z + ((watermark - st - z) // sl + 1) * sl for z in (self.sizes or (self.size,))
        )

    def emitted_before(
        self,
        w: Windows,
        is_new: np.ndarray,
        old_sorted: np.ndarray,
        emitted: int,
        dropped: int,
    ) -> np.ndarray:
        # a window held an old event and had closed by the last emission
        new_before = np.concatenate([[0], np.cumsum(is_new)])
        olds = (w.hi - w.lo) - (new_before[w.hi] - new_before[w.lo])
        out: np.ndarray = (olds > 0) & (w.end <= emitted)
        return out

    def revisable(self, end: int, bound: int) -> bool:
        return end > bound  # [start, end): an event at the bound is past it


class PerEvent(Shape):
    """Per-event windows ``(t - size, t]``, one per event (``slide=None``).

    >>> p = Shape(size=10)
    >>> p.first_end(7), p.deadline(7, 3), p.dead(np.array([1, 6, 12]), 12, 0)
    (7, 20, 1)
    """

    kind = "per_event"
    per_event = True
    trails = True

    def assign(self, t: np.ndarray) -> Windows:

        # one key: the searches of the many-key kernel without the keys' shifts
        t = np.asarray(t, dtype=np.int64)
        size = self.size
        assert size is not None
        return Windows(
            start=t - size,
            end=t.copy(),
            lo=np.searchsorted(t, t - size, "right").astype(np.int64),
            hi=np.searchsorted(t, t, "right").astype(np.int64),
            keys=t,
            key_lo=t - (size - 1),
            key_hi=t.copy(),
        )

    def assign_groups(self, t: np.ndarray, starts: np.ndarray) -> tuple[Windows, np.ndarray]:

        assert self.size is not None
        counts = np.diff(starts)
        return _per_event(t, starts, counts, self.size), counts

    def first_end(self, x: int) -> int:
        return x

    def deadline(self, newest: int, lateness: int) -> int | None:
        assert self.size is not None
        return newest + self.size + lateness

    def dead(self, t: np.ndarray, bound: int, dropped: int) -> int:
        assert self.size is not None
        return int(np.searchsorted(t, bound - self.size, "right"))

    def window_ids(self, w: Windows, seq: np.ndarray) -> np.ndarray:
        return seq  # one window per event: its arrival number

    def emitted_before(
        self,
        w: Windows,
        is_new: np.ndarray,
        old_sorted: np.ndarray,
        emitted: int,
        dropped: int,
    ) -> np.ndarray:
        out: np.ndarray = ~is_new & (w.end <= emitted)  # an old event's, closed then
        return out


class WholeHistory(PerEvent):
    """Each key's whole history up to every event (a per-event ``size`` of at least
    :data:`HISTORY`): the window of an event holds every event of its key up to its time,
    from ``start`` = the key's first time. Its events never die (:meth:`dead` is 0 for
    any bound that is a time).

    >>> w = Shape(size=HISTORY)
    >>> type(w).__name__, w.kind, w.assign(np.array([2, 5, 5])).lo.tolist()
    ('WholeHistory', 'per_event', [0, 0, 0])
    """

    trails = False
    whole_history = True

    def assign(self, t: np.ndarray) -> Windows:
        t = np.asarray(t, dtype=np.int64)
        return self.assign_groups(t, np.array([0, len(t)], dtype=np.int64))[0]


class Count(Shape):
    """Count windows: the last ``rows`` events of a key, one window every ``every`` events
    (in the key's (time, arrival) order).

    >>> c = Shape(rows=3, every=2)
    >>> c.first_end(7), c.deadline(7, 0), c.dead(np.array([1, 6, 12, 20]), 12, 0)
    (7, None, 0)
    >>> c.completes(stored=4, held=1), c.completes(stored=5, held=1)
    (False, True)
    """

    kind = "count"
    positional = True

    def assign_groups(self, t: np.ndarray, starts: np.ndarray) -> tuple[Windows, np.ndarray]:

        assert self.rows is not None
        return _count(t, starts, np.diff(starts), self.rows, self.every)

    def first_end(self, x: int) -> int:
        return x  # a window ends at its last event's time

    def deadline(self, newest: int, lateness: int) -> int | None:
        return None  # the last events wait for later events, not for time

    def completes(self, stored: int, held: int) -> bool:
        # one window ends every `every` events: the held ones must reach the next multiple
        return stored + held >= (stored // self.every + 1) * self.every

    def dead(self, t: np.ndarray, bound: int, dropped: int) -> int:
        # a later event lands at a global position >= p (the events older than the
        # bound), so every window still to be emitted or changed ends at or after p and
        # starts at or after p - rows + 1
        assert self.rows is not None
        p = dropped + int(np.searchsorted(t, bound, "left"))
        return int(min(max(0, p - self.rows + 1 - dropped), len(t)))

    def unassigned(
        self,
        w: Windows,
        starts: np.ndarray,
        order: np.ndarray,
        refused: np.ndarray,
        reasons: list[str],
    ) -> tuple[np.ndarray, list[str]]:
        """A key's last events after its last window (fewer than ``every``: their reason is
        :func:`count_tail_reason`), and with ``rows < every`` the events between windows.
        O(n + windows)."""
        n = len(order)
        if not n:
            return refused, reasons
        depth = np.cumsum(np.bincount(w.lo, minlength=n + 1) - np.bincount(w.hi, minlength=n + 1))
        out = np.flatnonzero(depth[:n] == 0)
        if not len(out):
            return refused, reasons
        assert self.rows is not None
        rows, every = self.rows, self.every
        counts = np.diff(starts)
        key = np.searchsorted(starts, out, "right") - 1
        position = out - starts[key]  # in the key's (time, arrival) order
        count = counts[key]
        full = count // every * every  # the key's events up to its last window
        why = []
        for p, f, c in zip(position.tolist(), full.tolist(), count.tolist(), strict=True):
            if p >= f:
                why.append(count_tail_reason(c - f, every))
            else:
                why.append(
                    f"in no window: count windows of the last {rows} of every {every} events "
                    "skip it (rows < every leaves events out); make rows >= every to cover "
                    "every event"
                )
        all_refused = np.concatenate([refused, order[out]]).astype(np.int64)
        all_reasons = [*reasons, *why]
        by_position = np.argsort(all_refused, kind="stable")
        return all_refused[by_position], [all_reasons[i] for i in by_position.tolist()]

    def stored_windows(self, t: np.ndarray, dropped: int) -> Windows:
        """Count windows over stored events that start at global position *dropped*; a
        window's ``key_hi`` is its ordinal. O(n)."""

        assert self.rows is not None
        rows, every = self.rows, self.every
        n = len(t)
        total = dropped + n
        last_g = np.arange(every - 1, total, every, dtype=np.int64)
        last_g = last_g[last_g >= dropped]
        first_g = np.maximum(last_g - (rows - 1), 0)
        first = np.maximum(first_g - dropped, 0)
        last = last_g - dropped
        return Windows(
            start=t[first],
            end=t[last],
            lo=first,
            hi=last + 1,
            keys=np.arange(dropped, total, dtype=np.int64),
            key_lo=first_g,
            key_hi=(last_g - (every - 1)) // every,  # the window's ordinal
        )

    def window_ids(self, w: Windows, seq: np.ndarray) -> np.ndarray:
        return w.key_hi  # the ordinal (stored_windows)

    def holds_new(self, w: Windows, is_new: np.ndarray) -> np.ndarray:
        # a new event shifts the positions of every later one: every window reaching
        # past the first new event changes
        first_new = int(np.argmax(is_new)) if is_new.any() else len(is_new)
        out: np.ndarray = w.hi > first_new
        return out

    def emitted_before(
        self,
        w: Windows,
        is_new: np.ndarray,
        old_sorted: np.ndarray,
        emitted: int,
        dropped: int,
    ) -> np.ndarray:
        # the ordinal: emitted if it existed with an end <= emitted before the batch
        old_n = len(old_sorted)
        last_old = w.key_hi * self.every + (self.every - 1) - dropped
        existed: np.ndarray = last_old < old_n
        if not old_n:  # every stored event was compacted away: nothing to index
            return existed
        old_end = np.where(existed, old_sorted[np.minimum(last_old, old_n - 1)], 0)
        out: np.ndarray = existed & (old_end <= emitted)
        return out

    def stream_refusal(self) -> str | None:
        assert self.rows is not None
        if self.rows >= self.every:
            return None
        return (
            f"count windows of rows={self.rows} every={self.every} events leave "
            "events out of every window, and a stream cannot reject them on arrival "
            "(a later event may still shift their position); use rows >= every in "
            "streaming, or a batch front end, which rejects them ('in no window: ...')"
        )


class Session(Shape):
    """Session windows: an event at most ``gap`` after the previous one of its key extends
    its session, which ends ``gap`` after its last event.

    >>> s = Shape(gap=5)
    >>> s.dead(np.array([1, 3, 20, 22]), 20, 0), s.revisable(8, 8)
    (2, True)
    """

    kind = "session"
    merges = True

    def assign_groups(self, t: np.ndarray, starts: np.ndarray) -> tuple[Windows, np.ndarray]:

        assert self.gap is not None
        return _session(t, starts, np.diff(starts), self.gap)

    def first_end(self, x: int) -> int:
        assert self.gap is not None
        return x + self.gap

    def deadline(self, newest: int, lateness: int) -> int | None:
        assert self.gap is not None
        return newest + self.gap + lateness + 1  # an event at the session's end joins it

    def dead(self, t: np.ndarray, bound: int, dropped: int) -> int:
        w = self.assign(t)
        live = np.flatnonzero(w.end >= bound)
        return int(w.lo[live[0]]) if len(live) else len(t)


def count_tail_reason(last: int, every: int) -> str:
    """Why one of a key's *last* events (fewer than *every*, after its last count window)
    is in no window: the reject reason of the batch front ends, and of a stream's or the
    object API's close (:meth:`~.stream.KeyStream.tail`). O(1).

    >>> count_tail_reason(1, 2)[:60]
    "in no window: one of its key's last 1 events in time order, "
    """
    return (
        f"in no window: one of its key's last {last} events in time order, which complete "
        f"no count window (one closes every {every} events); use every=1 for a window per "
        "event, or a time window"
    )
