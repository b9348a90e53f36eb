"""The admission half of the time windows: timestamp and value checks, rejects, lateness.

A mixin of :class:`windowagg.windows.sliding._TimeWindows`: what decides, before anything
is aggregated, whether an event is accepted, rejected (with its reason and the original
record in ``rejected``) or late, and the up-front checks of ``late="raise"`` and
``bad_value="raise"`` that refuse a burst before it changes anything.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from windowagg._time import check_timestamp
from windowagg.errors import TimestampError
from windowagg.monoids.base import Monoid
from windowagg.windows._common import (
    BAD_TIMESTAMP,
    BAD_VALUE,
    LATE,
    Rejected,
    bad_value_error,
    bad_value_reason,
    late_error,
    precheck_values,
)


def _float_in_int_stream(t: float) -> TimestampError:
    return TimestampError(
        f"float timestamp {t!r} in a window of int timestamps; use one timestamp type per "
        "window (or panes=True, where any mix of numbers works)"
    )


class _Admission:
    """Admission of events into ``_TimeWindows``."""

    _m: Monoid[Any, Any, Any]
    _combine: Any
    _counts: dict[str, int]
    rejected: list[Rejected]
    _bad: str
    _late: str
    _ooo: Any
    _L: Any
    _gaps: bool
    _E0: Any
    _ref: Any
    _max: Any
    _bound: Any
    _int_only: bool
    _has_witness: bool
    _witness: Any

    if TYPE_CHECKING:  # provided by _TimeWindows

        def _init_time(self, t: Any) -> None: ...
        def _in_gap(self, t: Any) -> bool: ...

    def _admit_time(self, t: Any, v: Any) -> bool:
        """The slow path of the timestamp check (a new type, NaN, or the first event). O(1).

        Validates *t*, fixes the stream's time type on the first event, and refuses floats
        in an exact-int stream; a bad timestamp is routed to ``rejected`` and False returned.
        The hot loops call it only when ``type(t)`` differs from the stream's type or t is NaN.
        """
        try:
            check_timestamp(t, self._ref)
            if self._ref is None:
                self._init_time(t)
            elif self._int_only and isinstance(t, float):
                raise _float_in_int_stream(t)
        except TimestampError as e:
            self._reject(t, v, BAD_TIMESTAMP, str(e))
            return False
        return True

    def _reject(self, t: Any, v: Any, code: str, detail: str) -> None:
        self._counts[code] += 1
        self.rejected.append(Rejected(t, v, f"{code}: {detail}"))

    def _bad_value(self, t: Any, v: Any, e: BaseException) -> None:
        """A value the monoid refused with *e*: counted, then per the ``bad_value`` policy."""
        self._counts[BAD_VALUE] += 1
        if self._bad == "side":
            self.rejected.append(Rejected(t, v, bad_value_reason(e)))
        elif self._bad == "raise":  # only if the up-front check missed it (see _precheck_values)
            raise bad_value_error(type(self).__name__, t, v, e) from e

    def _precheck_values(self, items: list[tuple[Any, Any]], *, sequential: bool) -> None:
        """``bad_value="raise"``: raise MonoidInputError if a value that would be aggregated
        is refused by the monoid; change nothing (:func:`precheck_values`). O(m) lifts.

        Events in a gap are skipped too; *sequential* simulates the watermark event by
        event (per-event mode), else the burst's bound is fixed.
        """
        precheck_values(
            type(self).__name__,
            self._m,
            self._witness if self._has_witness else self._m.identity,
            items,
            ref=self._ref,
            bound=self._bound,
            mx=self._max,
            ooo=self._ooo if sequential else None,
            lateness=self._L,
            skip=self._in_gap if self._gaps and self._E0 is not None else None,
        )

    def _lift(self, v: Any) -> Any:
        """``lift(v)``, checked by one ``combine`` with an earlier partial; raises on bad values."""
        p = self._m.lift(v)
        self._validate(p)
        return p

    def _late_event(self, t: Any, v: Any) -> None:
        self._counts[LATE] += 1
        if self._late == "side":
            self.rejected.append(Rejected(t, v, f"{LATE}: {t!r} < lateness bound {self._bound!r}"))

    def _validate(self, p: Any) -> None:
        """One ``combine`` of a new partial with an earlier one: raises on values the monoid rejects."""
        if self._has_witness:
            self._combine(self._witness, p)
        else:
            self._combine(self._m.identity, p)
            self._witness = p
            self._has_witness = True

    def _precheck_late(self, items: list[tuple[Any, Any]], *, sequential: bool = False) -> None:
        """Raise LateEventError if any event of *items* would be late; change nothing.

        With *sequential*, the watermark is simulated event by event (per-event mode).
        """
        bound = self._bound
        mx = self._max
        ref = self._ref
        for t, _ in items:
            try:
                check_timestamp(t, ref)
                if ref is None:
                    ref = t
                is_late = bound is not None and t < bound
                if sequential and not is_late and (mx is None or t > mx):
                    mx = t
                    b = t - self._ooo - self._L
                    if bound is None or b > bound:
                        bound = b
            except (TimestampError, TypeError):
                continue
            if is_late:
                raise late_error(t, bound)
