"""The engine behind CountWindows and PolicyWindows: one entry per event, in event-time order.

Each accepted event is stored under the key ``(t, seq)``, ``seq`` its arrival number, so the
aggregator orders events by event time and equal timestamps by arrival, and every event can
be evicted on its own (a count or a policy may cut between two events with the same
timestamp). The watermark is optional here: with ``max_out_of_orderness=None`` (the
default) no event is ever late; an event older than the window's oldest entry simply does
not enter it.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from windowagg._time import check_timestamp
from windowagg.errors import CodecError, TimestampError, WindowaggError
from windowagg.monoids.base import Monoid
from windowagg.windows._common import (
    BAD_TIMESTAMP,
    BAD_VALUE,
    LATE,
    AggregatorSpec,
    Counted,
    Rejected,
    WindowResult,
    aggregator_label,
    check_late_policy,
    late_error,
    make_aggregator,
    monoid_name,
)

STATE_VERSION = 1


class _EventOrderWindows:
    """Shared ingestion, lateness, rejects and state; subclasses define ``_after_insert``."""

    def __init__(
        self,
        monoid: Monoid[Any, Any, Any],
        *,
        max_out_of_orderness: Any,
        allowed_lateness: Any,
        late: str,
        aggregator: AggregatorSpec,
    ) -> None:
        check_late_policy(late)
        self._m = monoid
        self._cm = Counted(monoid)
        self._spec = aggregator
        self._agg: Any = make_aggregator(aggregator, self._cm)
        self._ooo = max_out_of_orderness
        self._L = allowed_lateness
        self._late = late
        self._seq = 0
        self._ref: Any = None
        self._max: Any = None
        self._wm: Any = None
        self._bound: Any = None
        self._witness: Any = None
        self._has_witness = False
        self.rejected: list[Rejected] = []
        self.counters: dict[str, int] = {
            "accepted": 0,
            BAD_TIMESTAMP: 0,
            BAD_VALUE: 0,
            LATE: 0,
            "emitted": 0,
        }

    @property
    def watermark(self) -> Any:
        """The watermark (None without ``max_out_of_orderness`` or before any event). O(1)."""
        return self._wm

    @property
    def late_count(self) -> int:
        """Events refused as late. O(1)."""
        return self.counters[LATE]

    @property
    def aggregator(self) -> Any:
        """The wrapped aggregator (entries ``((t, seq), (count, partial))``)."""
        return self._agg

    def __len__(self) -> int:
        """Events in the window. O(1) (amortized with FiBA)."""
        return len(self._agg)

    def _reject(self, t: Any, v: Any, code: str, detail: str) -> None:
        self.counters[code] += 1
        self.rejected.append(Rejected(t, v, f"{code}: {detail}"))

    def _lift(self, v: Any) -> Any:
        p = self._m.lift(v)
        if self._has_witness:
            self._m.combine(self._witness, p)
        else:
            self._m.combine(self._m.identity, p)
            self._witness = p
            self._has_witness = True
        return p

    def insert(self, t: Any, v: Any) -> list[WindowResult]:
        """Add one event; return what the window emits for it. See the subclass for costs.

        Bad timestamps and values the monoid rejects go to ``rejected``; late events (only
        with a watermark) follow the ``late`` policy.
        """
        out: list[WindowResult] = []
        try:
            check_timestamp(t, self._ref)
            t < t  # noqa: B015 - timestamps must be ordered (rejects e.g. complex numbers)
        except (TimestampError, TypeError) as e:
            self._reject(t, v, BAD_TIMESTAMP, str(e))
            return out
        bound = self._bound
        if bound is not None and t < bound:
            if self._late == "raise":
                raise late_error(t, bound)
            self.counters[LATE] += 1
            if self._late == "side":
                self.rejected.append(Rejected(t, v, f"{LATE}: {t!r} < lateness bound {bound!r}"))
            return out
        try:
            p = self._lift(v)
        except Exception as e:  # the monoid rejected the value: keep it, say why
            self._reject(t, v, BAD_VALUE, f"{type(e).__name__}: {e}")
            return out
        if self._ref is None:
            self._ref = t
        self.counters["accepted"] += 1
        seq = self._seq
        self._seq = seq + 1
        if self._max is None or t > self._max:
            self._max = t
            if self._ooo is not None:
                self._wm = t - self._ooo
                self._bound = self._wm - self._L
        self._after_insert((t, seq), p, out)
        return out

    def _after_insert(self, key: tuple[Any, int], p: Any, out: list[WindowResult]) -> None:
        raise NotImplementedError

    def insert_many(self, pairs: Iterable[tuple[Any, Any]]) -> list[WindowResult]:
        """Add a burst event by event in arrival order (every event is an emission point).

        With ``late="raise"`` the whole burst is checked first (simulating the watermark)
        and nothing changes if an event would be late. O(m) times the cost of ``insert``.
        """
        items = list(pairs)
        if self._late == "raise" and self._ooo is not None:
            mx, bound, ref = self._max, self._bound, self._ref
            for t, _ in items:
                try:
                    check_timestamp(t, ref)
                    if bound is not None and t < bound:
                        raise late_error(t, bound)
                    ref = t if ref is None else ref
                    if mx is None or t > mx:
                        mx = t
                        bound = t - self._ooo - self._L
                except (TimestampError, TypeError):
                    continue
        out: list[WindowResult] = []
        for t, v in items:
            out.extend(self.insert(t, v))
        return out

    def _emit(self, out: list[WindowResult]) -> None:
        agg = self._agg
        c, p = agg.query()
        if c:
            out.append(WindowResult(agg.oldest()[0], agg.youngest()[0], self._m.lower(p), c))
            self.counters["emitted"] += 1

    def query(self) -> WindowResult | None:
        """The current window as a result (None when empty), without emitting. O(1) with FiBA."""
        out: list[WindowResult] = []
        self._emit(out)
        self.counters["emitted"] -= len(out)
        return out[0] if out else None

    # ------------------------------------------------------------------ state

    def _config(self) -> dict[str, Any]:
        raise NotImplementedError

    def _extra_state(self) -> dict[str, Any]:
        return {}

    def to_bytes(self) -> bytes:
        """Full state as versioned codec bytes (no pickle); the monoid is passed on restore. O(n)."""
        from windowagg import codec

        rejected = []
        for r in self.rejected:
            try:
                codec.dumps((r.t, r.value))
                rejected.append((r.t, r.value, r.reason))
            except CodecError:
                rejected.append((repr(r.t), repr(r.value), r.reason + " (stored as repr)"))
        state = {
            "kind": type(self).__name__,
            "version": STATE_VERSION,
            "monoid": monoid_name(self._m),
            "aggregator": aggregator_label(self._spec),
            "config": {
                "max_out_of_orderness": self._ooo,
                "allowed_lateness": self._L,
                "late": self._late,
                **self._config(),
            },
            "seq": self._seq,
            "ref": self._ref,
            "max": self._max,
            "wm": self._wm,
            "bound": self._bound,
            "witness": (self._has_witness, self._witness),
            "counters": dict(self.counters),
            "rejected": rejected,
            "extra": self._extra_state(),
            "entries": [(k, cp[0], cp[1]) for k, cp in self._agg],
        }
        return codec.dumps(state)

    @classmethod
    def _load_state(cls, data: bytes, monoid: Monoid[Any, Any, Any]) -> dict[str, Any]:
        from windowagg import codec

        state = codec.loads(data)
        if not isinstance(state, dict) or state.get("kind") != cls.__name__:
            kind = state.get("kind") if isinstance(state, dict) else type(state).__name__
            raise CodecError(f"{cls.__name__}.from_bytes: the data holds {kind!r} state")
        if state.get("version") != STATE_VERSION:
            raise CodecError(
                f"{cls.__name__}.from_bytes: state version {state.get('version')!r} is not "
                f"supported (this library writes version {STATE_VERSION})"
            )
        if state["monoid"] != monoid_name(monoid):
            raise CodecError(
                f"{cls.__name__}.from_bytes: the state was written with monoid "
                f"{state['monoid']!r}, not {monoid_name(monoid)!r}"
            )
        return state

    def _restore(self, state: dict[str, Any]) -> None:
        from windowagg.windows.sliding import restore_aggregator

        self._seq = state["seq"]
        self._ref = state["ref"]
        self._max = state["max"]
        self._wm = state["wm"]
        self._bound = state["bound"]
        self._has_witness, self._witness = state["witness"]
        self.counters.update(state["counters"])
        self.rejected = [Rejected(t, v, r) for t, v, r in state["rejected"]]
        pairs = [(tuple(k), (c, p)) for k, c, p in state["entries"]]
        self._agg = restore_aggregator(self._spec, self._cm, self._agg, pairs)

    def _check(self) -> None:
        """O(n): aggregator invariants; one event per entry; keys carry distinct arrival numbers."""
        self._agg._check()
        for k, (c, _) in self._agg:
            if c != 1:
                raise WindowaggError(f"windows: entry {k!r} holds {c!r} events, expected 1")
            if not (isinstance(k, tuple) and len(k) == 2 and 0 <= k[1] < self._seq):
                raise WindowaggError(f"windows: bad entry key {k!r}")
