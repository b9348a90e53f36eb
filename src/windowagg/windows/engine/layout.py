"""What every streaming layout of one key declares and shares: the protocol :class:`KeyStream` drives.

=================  ==========================================================================
component          the base of the engine's per-key streaming states (the *layouts*):
                   :class:`~.panes.PaneStream` (hopping windows of monoids and exact
                   quantiles), :class:`~.stream.EventLog` (any shape; its subclass
                   :class:`~.sessions.OpenSessions`), :class:`~.trailing.TrailingFiBA`
                   (per-event windows), :class:`~.history.HistoryFold` (whole history);
                   :class:`~.stream.KeyStream` picks one and calls only what is declared here
declared           ``feed`` / ``advance`` (here: one all-or-nothing ``_step`` each),
                   ``watermark`` / ``bound`` (here: the key's clock), ``config``,
                   ``meta_bytes``, ``pieces``, ``restore``, ``deadline``, ``expired``,
                   ``__len__``, ``_check`` (each layout's own: what it keeps differs)
shared here        the verbs' undo (:func:`~.records.atomic` around ``_step``), the clock's
                   properties, and ``advance`` as a step of no events after the clock moved
ordering           any (each layout admits out-of-order events up to its lateness bound)
time, space        each layout's own (its module's fact card; ``docs/engine.md``'s table)
=================  ==========================================================================
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import Any

import numpy as np

from windowagg.windows.engine.clock import WatermarkClock
from windowagg.windows.engine.records import Delta, StepResult, atomic

__all__ = ["Layout"]


class Layout(ABC):
    """The base of a key's streaming layout (see the module docstring).

    A subclass sets ``_clock`` (its :class:`~.clock.WatermarkClock`), ``_ooo`` (the maximum
    out-of-orderness, int64 units) and ``_cols`` (the value columns) in its constructor
    and implements ``_step(t, values)``: admit the events (none for an advance) and emit
    what they closed or revised, returning the windows and the :class:`~.records.Delta`.
    """

    __slots__ = ()

    _clock: WatermarkClock
    _ooo: int
    _cols: list[str]

    # ------------------------------------------------------------------ the clock
    @property
    def watermark(self) -> int | None:
        """The key's watermark (None before its first event). O(1)."""
        return self._clock.watermark

    @property
    def bound(self) -> int | None:
        """Events older than this are late (``watermark - allowed_lateness``). O(1)."""
        return self._clock.bound

    # ------------------------------------------------------------------ the verbs
    def feed(self, t: np.ndarray, values: Mapping[str, np.ndarray]) -> tuple[StepResult, Delta]:
        """Admit one micro-batch (arrival order) and emit what it closed or revised.

        Returns the windows and refused positions, and the :class:`~.records.Delta` to
        store; the cost is the layout's (its module's fact card). A micro-batch that
        raises (a user monoid's ``combine`` or ``lower``: ``AggregationError``) changes
        nothing (:func:`~.records.atomic`).
        """
        with atomic(self):
            return self._step(t, values)

    def advance(self, watermark: int) -> tuple[StepResult, Delta]:
        """Raise the key's watermark to *watermark* (e.g. Spark's global one) and emit
        what that closes: a step of no events after the clock moved. No-op below the
        key's own watermark. Changes nothing if it raises."""
        with atomic(self):
            self._clock.observe(np.array([int(watermark) + self._ooo], dtype=np.int64))
            return self._step(np.empty(0, np.int64), {c: np.empty(0) for c in self._cols})

    @abstractmethod
    def _step(self, t: np.ndarray, values: Mapping[str, np.ndarray]) -> tuple[StepResult, Delta]:
        """Admit *t*/*values* (none: an advance) and emit; called inside ``atomic``."""

    # ------------------------------------------------------------------ declared, per layout
    @abstractmethod
    def config(self) -> tuple[Any, ...]:
        """What a stored state must have been written for (``("layout", name)`` first)."""

    @abstractmethod
    def meta_bytes(self) -> bytes:
        """The metadata record (codec bytes) of the key's state."""

    @abstractmethod
    def pieces(self) -> dict[int, bytes]:
        """Every stored piece, by its integer key (what a store holds for the key)."""

    def store_rows(self, keys: np.ndarray) -> np.ndarray:
        """The store row of each piece key in *keys* (int64): pieces a step tends to change
        together share a row, so that a key-value store writes a few rows per key and
        micro-batch rather than one per piece (``windowagg.stream``'s store). Default: a
        row per piece; a layout of many small pieces groups them. O(len(keys))."""
        return np.asarray(keys, dtype=np.int64)

    @abstractmethod
    def deadline(self) -> int | None:
        """The watermark at which the state next has something to emit or drop (None:
        nothing stored)."""

    @abstractmethod
    def expired(self) -> bool:
        """Whether the state can go: nothing it holds can be emitted or revised any more."""

    @abstractmethod
    def __len__(self) -> int:
        """What the state retains (events, panes: the layout says which)."""

    @abstractmethod
    def _check(self) -> None:
        """The layout's invariants (tests call it after each step)."""
