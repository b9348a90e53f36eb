"""The engine behind PolicyWindows: one entry per event, in event-time order.

Each accepted event is stored under the key ``(t, seq)``, ``seq`` its arrival number, so the
aggregator orders events by event time and equal timestamps by arrival, and every event can
be evicted on its own (a count or a policy may cut between two events with the same
timestamp). The watermark is optional here: with ``max_out_of_orderness=None`` (the
default) no event is ever late; an event older than the window's oldest entry simply does
not enter it.

A call that raises (the monoid's ``combine`` or ``lower``, the policy, bad input) leaves the
window as before it: ``insert`` and ``insert_many`` keep the scalars, counters and side
output at the call's start and journal the entries the call inserted and evicted; on a raise
those are taken out and put back (each an atomic aggregator verb).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Generic

from windowagg._time import check_timestamp
from windowagg.errors import InvariantError, TimestampError
from windowagg.monoids.base import In, Monoid, Out, P
from windowagg.windows._common import (
    BAD_TIMESTAMP,
    BAD_VALUE,
    LATE,
    AggregatorSpec,
    Counted,
    LoadedState,
    Rejected,
    WindowResult,
    bad_value_error,
    bad_value_reason,
    check_bad_value_policy,
    check_late_policy,
    dump_state,
    late_error,
    load_state,
    make_aggregator,
    precheck_values,
    restore_aggregator,
)


class _EventOrderWindows(Generic[In, P, Out]):
    """Shared ingestion, lateness, rejects and state; subclasses define ``_after_insert``."""

    def __init__(
        self,
        monoid: Monoid[In, P, Out],
        *,
        max_out_of_orderness: Any,
        allowed_lateness: Any,
        late: str,
        aggregator: AggregatorSpec,
        bad_value: str = "side",
    ) -> None:
        check_late_policy(late)
        check_bad_value_policy(bad_value)
        self._m = monoid
        self._cm = Counted(monoid)
        self._spec = aggregator
        self._agg: Any = make_aggregator(aggregator, self._cm)
        self._ooo = max_out_of_orderness
        self._L = allowed_lateness
        self._late = late
        self._bad = bad_value
        self._seq = 0
        self._ref: Any = None
        self._max: Any = None
        self._wm: Any = None
        self._bound: Any = None
        self._witness: Any = None
        self._has_witness = False
        # the current call's journal: keys it inserted, (key, entry) pairs it evicted
        self._added: list[Any] = []
        self._gone: list[tuple[Any, Any]] = []
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
        """The watermark (None without ``max_out_of_orderness`` or before any event). O(1).

        >>> from windowagg.monoids import Sum
        >>> from windowagg.windows import PolicyWindows
        >>> w = PolicyWindows(Sum(), lambda total, prefix: False, max_out_of_orderness=2, aggregator="recalc")
        >>> _ = w.insert(10, 1); w.watermark
        8
        """
        return self._wm

    @property
    def late_count(self) -> int:
        """Events refused as late. O(1).

        >>> from windowagg.monoids import Sum
        >>> from windowagg.windows import PolicyWindows
        >>> w = PolicyWindows(Sum(), lambda total, prefix: False, max_out_of_orderness=2, aggregator="recalc")
        >>> _ = w.insert_many([(10, 1), (7, 1), (8, 1)]); w.late_count
        1
        """
        return self.counters[LATE]

    @property
    def aggregator(self) -> Any:
        """The wrapped aggregator (entries ``((t, seq), (count, partial))``).

        >>> from windowagg.monoids import Sum
        >>> from windowagg.windows import PolicyWindows
        >>> w = PolicyWindows(Sum(), lambda total, prefix: False, aggregator="recalc"); _ = w.insert_many([(5, 1), (5, 2)])
        >>> list(w.aggregator)
        [((5, 0), (1, 1)), ((5, 1), (1, 2))]
        """
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

    def _save(self) -> tuple[Any, ...]:
        """The state a call may change besides the aggregator (whose changes the call
        journals from here on), for :meth:`_undo`. O(1)."""
        self._added, self._gone = [], []
        return (self._seq, self._ref, self._max, self._wm, self._bound, self._witness,
                self._has_witness, dict(self.counters), self.rejected,
                len(self.rejected))  # fmt: skip

    def _undo(self, saved: tuple[Any, ...]) -> None:
        """Put the window back as :meth:`_save` found it: the journalled entries out and
        in again. O((inserted + evicted) log n)."""
        (self._seq, self._ref, self._max, self._wm, self._bound, self._witness,
         self._has_witness, counters, rej, n) = saved  # fmt: skip
        self.counters.clear()
        self.counters.update(counters)
        del rej[n:]
        self.rejected = rej
        agg, added = self._agg, set(self._added)
        for key in self._added:
            agg.evict(key)  # absent (evicted again by the call): a no-op
        for key, entry in self._gone:
            if key not in added:
                agg.insert(key, entry)  # Counted's lift keeps a stored (count, partial)
        self._added, self._gone = [], []

    def insert(self, t: Any, v: In) -> list[WindowResult[Out]]:
        """Add one event; return what the window emits for it. See the subclass for costs.

        Bad timestamps go to ``rejected``; values the monoid refuses follow the
        ``bad_value`` policy, late events (only with a watermark) the ``late`` policy.
        A call that raises changes nothing (module docstring).

        >>> from windowagg.monoids import Sum
        >>> from windowagg.windows import PolicyWindows
        >>> w = PolicyWindows(Sum(), lambda total, prefix: False, aggregator="recalc")
        >>> w.insert(1, 5), w.insert(None, 1), w.rejected[0].reason.split(":")[0]
        ([WindowResult(start=1, end=1, value=5, count=1)], [], 'bad_timestamp')
        """
        saved = self._save()
        try:
            return self._insert(t, v)
        except BaseException:
            self._undo(saved)
            raise

    def _insert(self, t: Any, v: In) -> list[WindowResult[Out]]:
        out: list[WindowResult] = []
        if self._bad == "raise":
            self._precheck_values([(t, v)])
        try:
            check_timestamp(t, self._ref)
            if self._ref is None:
                t < t  # noqa: B015 - timestamps must be ordered (rejects e.g. complex numbers)
                if self._ooo is not None:
                    _ = t - self._ooo - self._L  # must work with the durations
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
        except Exception as e:  # the monoid refused the value: per the bad_value policy
            self.counters[BAD_VALUE] += 1
            if self._bad == "side":
                self.rejected.append(Rejected(t, v, bad_value_reason(e)))
            elif self._bad == "raise":  # only if _precheck_values missed it
                raise bad_value_error(type(self).__name__, t, v, e) from e
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

    def _precheck_values(self, items: list[tuple[Any, Any]]) -> None:
        """``bad_value="raise"``: raise MonoidInputError if a value that :meth:`insert`
        would aggregate is refused by the monoid; change nothing (:func:`precheck_values`).
        O(m) lifts.
        """
        precheck_values(
            type(self).__name__,
            self._m,
            self._witness if self._has_witness else self._m.identity,
            items,
            ref=self._ref,
            bound=self._bound,
            mx=self._max,
            ooo=self._ooo,
            lateness=self._L,
        )

    def insert_many(self, pairs: Iterable[tuple[Any, In]]) -> list[WindowResult[Out]]:
        """Add a burst event by event in arrival order (every event is an emission point).

        With ``late="raise"`` the whole burst is checked first (simulating the watermark)
        and nothing changes if an event would be late. O(m) times the cost of ``insert``.

        >>> from windowagg.monoids import Concat
        >>> from windowagg.windows import PolicyWindows
        >>> PolicyWindows(Concat(), lambda total, prefix: False, aggregator="recalc").insert_many(
        ...     [(2, "b"), (1, "a"), (3, "c"), (0, "z")])
        [WindowResult(start=2, end=2, value=('b',), count=1), WindowResult(start=1, end=2, value=('a', 'b'), count=2), WindowResult(start=1, end=3, value=('a', 'b', 'c'), count=3), WindowResult(start=0, end=3, value=('z', 'a', 'b', 'c'), count=4)]
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
        if self._bad == "raise":
            self._precheck_values(items)
        out: list[WindowResult] = []
        saved = self._save()
        try:
            for t, v in items:
                out.extend(self._insert(t, v))
        except BaseException:
            self._undo(saved)
            raise
        return out

    def _emit(self, out: list[WindowResult]) -> None:
        agg = self._agg
        c, p = agg.query()
        if c:
            out.append(WindowResult(agg.oldest()[0], agg.youngest()[0], self._m.lower(p), c))
            self.counters["emitted"] += 1

    def query(self) -> WindowResult[Out] | None:
        """The current window as a result (None when empty), without emitting. O(1) with FiBA.

        >>> from windowagg.monoids import Sum
        >>> from windowagg.windows import PolicyWindows
        >>> w = PolicyWindows(Sum(), lambda total, prefix: False, aggregator="recalc")
        >>> w.query(), len(w.insert_many([(1, 1), (2, 2), (3, 3)])), w.query()
        (None, 3, WindowResult(start=1, end=3, value=6, count=3))
        """
        out: list[WindowResult] = []
        self._emit(out)
        self.counters["emitted"] -= len(out)
        return out[0] if out else None

    # ------------------------------------------------------------------ state

    _CONFIG_KEYS: tuple[str, ...] = ()  # the subclass's own configuration fields

    def _config(self) -> tuple[Any, ...]:
        return ()

    def _extra_state(self) -> tuple[Any, ...]:
        return ()

    def to_bytes(self) -> bytes:
        """Full state as versioned codec bytes (no pickle); the monoid is passed on restore. O(n).

        Format: the object API's version-1 record (``_common.dump_state``).

        >>> from windowagg.monoids import Sum
        >>> from windowagg.windows import PolicyWindows
        >>> w = PolicyWindows(Sum(), lambda total, prefix: False, aggregator="recalc"); _ = w.insert(1, 1)
        >>> PolicyWindows.from_bytes(w.to_bytes(), Sum(), lambda total, prefix: False, aggregator="recalc").query()
        WindowResult(start=1, end=1, value=1, count=1)
        """
        dyn = (
            self._seq,
            self._ref,
            self._max,
            self._wm,
            self._bound,
            self._has_witness,
            self._witness,
            self._extra_state(),
        )
        return dump_state(
            type(self).__name__,
            self._m,
            self._spec,
            (self._ooo, self._L, self._late, *self._config(), self._bad),
            dyn,
            self.counters,
            self.rejected,
            self._agg,
        )

    @classmethod
    def _load_state(
        cls, data: bytes, monoid: Monoid[In, P, Out], n_counters: int
    ) -> dict[str, Any]:
        keys = ("max_out_of_orderness", "allowed_lateness", "late", *cls._CONFIG_KEYS, "bad_value")
        st = load_state(
            data,
            cls.__name__,
            monoid,
            len(keys),
            8,
            n_counters,
            config_defaults=("side",),  # bad_value: state written before the policy existed
        )
        return {"config": dict(zip(keys, st.config, strict=True)), "loaded": st}

    def _restore(self, state: dict[str, Any]) -> tuple[Any, ...]:
        """Restore the shared fields; return the subclass's extra state."""

        st: LoadedState = state["loaded"]
        (
            self._seq,
            self._ref,
            self._max,
            self._wm,
            self._bound,
            self._has_witness,
            self._witness,
            extra,
        ) = st.dyn
        self.counters.update(zip(self.counters, st.counters, strict=True))
        self.rejected = st.rejected
        pairs = [(tuple(k), cp) for k, cp in st.pairs]
        self._agg = restore_aggregator(self._spec, self._cm, self._agg, pairs)
        return tuple(extra)

    def _check(self) -> None:
        """O(n): aggregator invariants; one event per entry; keys carry distinct arrival numbers."""
        self._agg._check()
        for k, (c, _) in self._agg:
            if c != 1:
                raise InvariantError(f"windows: entry {k!r} holds {c!r} events, expected 1")
            if not (isinstance(k, tuple) and len(k) == 2 and 0 <= k[1] < self._seq):
                raise InvariantError(f"windows: bad entry key {k!r}")
