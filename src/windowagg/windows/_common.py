"""Shared pieces of the window classes: results, rejects, policies; and for ``PolicyWindows``
(which keeps its own code over an out-of-order aggregator) counted partials and state.

Examples
--------
>>> WindowResult(0, 10, 7, 2), WindowResult(0, 10, 9, 3, 1, 0)
(WindowResult(start=0, end=10, value=7, count=2), WindowResult(start=0, end=10, value=9, count=3, revision=1, id=0))
>>> Rejected(float("nan"), 1, "bad_timestamp: timestamp is NaN").reason.split(":")[0]
'bad_timestamp'
>>> from windowagg.monoids import Sum
>>> c = Counted(Sum()); c.combine(c.identity, (1, 5))
(1, 5)
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, Generic, NamedTuple, TypeVar

from windowagg._time import check_timestamp
from windowagg.errors import (
    ArgumentError,
    CodecError,
    LateEventError,
    MonoidInputError,
    TimestampError,
)
from windowagg.monoids.base import Monoid, require_monoid

if TYPE_CHECKING:  # WindowResult without a parameter is WindowResult[Any] (PEP 696)
    from typing_extensions import TypeVar as _TypeVarWithDefault

    _V = _TypeVarWithDefault("_V", default=Any)
else:
    _V = TypeVar("_V")

__all__ = [
    "BAD_VALUE_POLICIES",
    "LATE_POLICIES",
    "Counted",
    "Rejected",
    "WindowResult",
    "make_aggregator",
    "monoid_name",
]

LATE_POLICIES = ("drop", "raise", "side")
#: What happens to a value the monoid refuses (its ``lift``, or one ``combine`` with an
#: earlier partial, raised): ``"side"`` (default) appends ``Rejected(t, v, "bad_value: ...")``
#: to ``rejected``; ``"raise"`` raises :class:`~windowagg.errors.MonoidInputError` before the
#: call changes anything; ``"drop"`` only counts it. Independent of the ``late`` policy.
BAD_VALUE_POLICIES = ("side", "raise", "drop")

# Reason codes (the part of ``Rejected.reason`` before the first colon, and the keys of
# ``counters``).
BAD_TIMESTAMP = "bad_timestamp"
BAD_VALUE = "bad_value"
LATE = "late"


class WindowResult(NamedTuple, Generic[_V]):
    """One emitted window: ``value`` is the lowered aggregate of its ``count`` events.

    Generic in the type of ``value`` (the monoid's answer type) for type checkers:
    ``SlidingWindows(Max(), ...).insert(...)`` returns ``list[WindowResult[float | None]]``.

    For time windows the interval is half-open ``[start, end)``; for per-event emission it
    is ``(start, end]`` with ``end`` the event's timestamp; for count and policy windows
    ``start``/``end`` are the oldest and youngest timestamps in the window (inclusive).

    >>> r = WindowResult(0, 10, ("a", "b"), 2); r.end - r.start, r.count
    (10, 2)
    """

    start: Any
    end: Any
    value: _V
    count: int  # type: ignore[assignment]  # shadows tuple.count, as the contract names it
    revision: int = 0
    """0 at the window's first emission; + 1 each time a late-but-allowed event changes it
    (the engine's revisions: the latest revision of a window is its answer)."""
    id: int = 0
    """Which window a revision revises (the engine's window identity): a time window's or a
    session's start in engine units (ints, or microseconds), a count window's ordinal, a
    per-event window's event number (among the events the window admitted)."""

    def __repr__(self) -> str:
        """The first four fields; ``revision`` and ``id`` too when a revision says which
        window it revises (``revision > 0``)."""
        head = f"start={self.start!r}, end={self.end!r}, value={self.value!r}, count={self.count!r}"
        if self.revision:
            head += f", revision={self.revision!r}, id={self.id!r}"
        return f"WindowResult({head})"


class Rejected(NamedTuple):
    """An event the window did not aggregate, with why: ``reason`` is ``"code: detail"``.

    Codes: ``bad_timestamp`` (None, NaN, wrong type), ``bad_value`` (the monoid's ``lift``
    or ``combine`` raised), ``late`` (older than the lateness bound, kept with
    ``late="side"``).

    >>> Rejected(3, "x", "late: 3 < lateness bound 5").reason.startswith("late")
    True
    """

    t: Any
    value: Any
    reason: str


class Counted:
    """The product monoid ``(count, partial)`` every window adapter stores.

    ``lift`` is the identity: the adapter lifts values itself (so that a value the user's
    monoid rejects never reaches the aggregator) and inserts ready ``(1, lift(v))`` pairs.
    The same pass-through ``lift`` is what lets a restore ``bulk_insert`` stored partials.
    ``combine`` costs one user ``combine`` and one integer addition.

    >>> from windowagg.monoids import Concat
    >>> c = Counted(Concat()); c.lower(c.combine((1, ("a",)), (2, ("b", "c"))))
    (3, ('a', 'b', 'c'))
    """

    __slots__ = ("_combine", "identity", "inner")

    def __init__(self, inner: Monoid[Any, Any, Any]) -> None:
        require_monoid(inner, "windows")
        self.inner = inner
        self.identity: tuple[int, Any] = (0, inner.identity)
        self._combine = inner.combine

    def lift(self, x: tuple[int, Any]) -> tuple[int, Any]:
        return x

    def combine(self, a: tuple[int, Any], b: tuple[int, Any]) -> tuple[int, Any]:
        return (a[0] + b[0], self._combine(a[1], b[1]))

    def lower(self, a: tuple[int, Any]) -> tuple[int, Any]:
        return a

    def __repr__(self) -> str:
        return f"Counted({self.inner!r})"


def monoid_name(m: object) -> str:
    """A stable name for *m* (its ``name`` attribute, else its class name), stored in state.

    >>> from windowagg.monoids import Sum
    >>> monoid_name(Sum())
    'sum'
    """
    name = getattr(m, "name", None)
    return name if isinstance(name, str) else type(m).__name__


AggregatorSpec = str | Callable[[Any], Any]


def make_aggregator(spec: AggregatorSpec, monoid: Counted) -> Any:
    """Build the out-of-order aggregator named by *spec* over the counted monoid.

    ``"fiba"`` imports :class:`windowagg.ooo.fiba.FiBA` lazily, ``"recalc"`` uses the sorted
    oracle, and a callable is called as ``spec(monoid)``.

    >>> from windowagg.monoids import Sum
    >>> type(make_aggregator("recalc", Counted(Sum()))).__name__
    'Recalc'
    """
    if callable(spec):
        return spec(monoid)
    if spec == "recalc":
        from windowagg.ooo.recalc import Recalc

        return Recalc(monoid)
    if spec == "fiba":
        from windowagg.ooo.fiba import FiBA

        return FiBA(monoid)
    raise ArgumentError(f"aggregator must be 'fiba', 'recalc' or a factory; got {spec!r}")


def aggregator_label(spec: AggregatorSpec) -> str:
    """The aggregator's name stored in ``PolicyWindows`` state (a factory: ``"custom"``)."""
    return spec if isinstance(spec, str) else "custom"


def check_late_policy(late: str) -> None:
    if late not in LATE_POLICIES:
        raise ArgumentError(f"late must be one of {LATE_POLICIES}; got {late!r}")


def check_bad_value_policy(bad_value: str) -> None:
    if bad_value not in BAD_VALUE_POLICIES:
        raise ValueError(f"bad_value must be one of {BAD_VALUE_POLICIES}; got {bad_value!r}")


def bad_value_reason(e: BaseException) -> str:
    """The ``Rejected.reason`` of a value the monoid refused with *e*.

    >>> bad_value_reason(ValueError("negative"))
    'bad_value: ValueError: negative'
    """
    return f"{BAD_VALUE}: {type(e).__name__}: {e}"


def bad_value_error(kind: str, t: Any, v: Any, e: BaseException) -> MonoidInputError:
    """The error of ``bad_value="raise"`` for the value *v* at *t* that raised *e*."""
    return MonoidInputError(
        f"{kind}: the monoid refused the value {v!r} at {t!r} ({type(e).__name__}: {e}); "
        "fix or filter the input, or use bad_value='side' to collect such events in "
        "`rejected` (or 'drop' to count them only)"
    )


def check_value(monoid: Monoid[Any, Any, Any], witness: Any, v: Any) -> None:
    """Raise what the adapters' value check raises for *v*: ``lift``, then one ``combine``.

    *witness* is an earlier partial (or the identity). Changes nothing.
    """
    monoid.combine(witness, monoid.lift(v))


def precheck_values(
    kind: str,
    monoid: Monoid[Any, Any, Any],
    witness: Any,
    items: list[tuple[Any, Any]],
    *,
    ref: Any,
    bound: Any,
    mx: Any,
    ooo: Any,
    lateness: Any,
    skip: Callable[[Any], bool] | None = None,
) -> None:
    """``bad_value="raise"``: raise MonoidInputError if a value that would be aggregated is
    refused by the monoid (``lift`` + one ``combine`` with *witness*); change nothing. O(m).

    Events with a bad timestamp, late ones (below the lateness bound) and those *skip*
    says no to are passed over: their own outcome comes first, as in the ingestion loops.
    With *ooo* (max_out_of_orderness) the bound, largest time seen - *ooo* - *lateness*,
    follows the events one by one as the loops move it; with None it stays *bound*.
    *ref*, *bound* and *mx* are the window's state before the burst.
    """
    for t, v in items:
        try:
            check_timestamp(t, ref)
            if ref is None:
                ref = t
            if bound is not None and t < bound:
                continue
            if skip is not None and skip(t):
                continue
        except (TimestampError, TypeError):
            continue
        try:
            check_value(monoid, witness, v)
        except Exception as e:
            raise bad_value_error(kind, t, v, e) from e
        if ooo is not None and (mx is None or t > mx):
            mx = t
            b = t - ooo - lateness
            if bound is None or b > bound:
                bound = b


def late_error(t: Any, bound: Any) -> LateEventError:
    return LateEventError(
        f"event at {t!r} is older than the lateness bound {bound!r} (watermark minus "
        "allowed_lateness, or the start of the oldest window still open); raise "
        "allowed_lateness or max_out_of_orderness, or use late='drop' / late='side'"
    )


# ----------------------------------------------------------------------------- state format

STATE_VERSION = 1


def dump_state(
    kind: str,
    monoid: object,
    spec: AggregatorSpec,
    config: tuple[Any, ...],
    dyn: tuple[Any, ...],
    counters: dict[str, int],
    rejected: list[Rejected],
    entries: Iterable[tuple[Any, tuple[int, Any]]],
) -> bytes:
    """Encode a window's state with :mod:`windowagg.codec` (compact, positional). O(n).

    The record is the tuple ``(kind, STATE_VERSION, monoid name, aggregator label, config,
    dynamic fields, counter values, rejected, entries)``; ``entries`` is flat:
    ``[key0, count0, partial0, key1, ...]`` in key order. Counters are stored in the
    class's fixed key order. A rejected record the codec cannot encode is stored with
    ``repr`` of its timestamp and value (the reason says so).

    >>> from windowagg.monoids import Sum
    >>> from windowagg import codec
    >>> codec.loads(dump_state("X", Sum(), "fiba", (1,), (), {"a": 2}, [], [(5, (1, 7))]))
    ('X', 1, 'sum', 'fiba', (1,), (), (2,), [], [5, 1, 7])
    """
    from windowagg import codec

    rej: list[tuple[Any, Any, str]] = []
    for r in rejected:
        try:
            codec.dumps((r.t, r.value))
            rej.append((r.t, r.value, r.reason))
        except CodecError:
            rej.append((repr(r.t), repr(r.value), r.reason + " (stored as repr)"))
    flat: list[Any] = []
    add = flat.extend
    for k, cp in entries:
        add((k, cp[0], cp[1]))
    state = (
        kind,
        STATE_VERSION,
        monoid_name(monoid),
        aggregator_label(spec),
        config,
        dyn,
        tuple(counters.values()),
        rej,
        flat,
    )
    return codec.dumps(state)


class LoadedState(NamedTuple):
    """The decoded parts of a window's state (see :func:`dump_state`)."""

    config: tuple[Any, ...]
    dyn: tuple[Any, ...]
    counters: tuple[int, ...]
    rejected: list[Rejected]
    pairs: list[tuple[Any, tuple[int, Any]]]


def load_state(
    data: bytes,
    kind: str,
    monoid: object,
    n_config: int,
    n_dyn: int,
    n_counters: int,
    *,
    config_defaults: tuple[Any, ...] = (),
) -> LoadedState:
    """Decode and check :func:`dump_state` output; CodecError on any mismatch. O(n).

    *config_defaults* are the values of the last configuration fields for state written
    before they existed (the returned ``config`` always has *n_config* fields).

    >>> from windowagg.monoids import Max, Sum
    >>> data = dump_state("X", Sum(), "fiba", (1,), (), {"a": 2}, [], [(5, (1, 7))])
    >>> load_state(data, "X", Sum(), 1, 0, 1).pairs
    [(5, (1, 7))]
    >>> load_state(data, "X", Max(), 1, 0, 1)
    Traceback (most recent call last):
    ...
    windowagg.errors.CodecError: X.from_bytes: the state was written with monoid 'sum', not 'max'
    """
    from windowagg import codec

    state = codec.loads(data)
    if not (isinstance(state, tuple) and len(state) == 9 and isinstance(state[0], str)):
        raise CodecError(f"{kind}.from_bytes: the data does not hold window state")
    s_kind, version, mname, _label, config, dyn, counters, rej, flat = state
    if s_kind != kind:
        raise CodecError(f"{kind}.from_bytes: the data holds {s_kind!r} state")
    if version != STATE_VERSION:
        raise CodecError(
            f"{kind}.from_bytes: state version {version!r} is not supported (this library "
            f"reads and writes version {STATE_VERSION})"
        )
    if mname != monoid_name(monoid):
        raise CodecError(
            f"{kind}.from_bytes: the state was written with monoid {mname!r}, "
            f"not {monoid_name(monoid)!r}"
        )
    if isinstance(config, tuple) and n_config - len(config) in range(1, len(config_defaults) + 1):
        config = config + config_defaults[len(config_defaults) - (n_config - len(config)) :]
    ok = (
        isinstance(config, tuple)
        and len(config) == n_config
        and isinstance(dyn, tuple)
        and len(dyn) == n_dyn
        and isinstance(counters, tuple)
        and len(counters) == n_counters
        and all(isinstance(c, int) for c in counters)
        and isinstance(rej, list)
        and all(isinstance(r, tuple) and len(r) == 3 for r in rej)
        and isinstance(flat, list)
        and len(flat) % 3 == 0
    )
    if not ok:
        raise CodecError(f"{kind}.from_bytes: malformed state (wrong field shapes)")
    pairs = [(flat[i], (flat[i + 1], flat[i + 2])) for i in range(0, len(flat), 3)]
    for _, (c, _p) in pairs:
        if isinstance(c, bool) or not isinstance(c, int) or c < 1:
            raise CodecError(f"{kind}.from_bytes: malformed state (entry count {c!r})")
    return LoadedState(config, dyn, counters, [Rejected(*r) for r in rej], pairs)


def restore_aggregator(spec: AggregatorSpec, cm: Counted, empty: Any, pairs: list[Any]) -> Any:
    """Rebuild an aggregator from sorted ``(key, partial)`` pairs.

    Uses ``type(empty).from_sorted_partials(cm, pairs)`` (O(n), FiBA) when the class has it;
    otherwise one ``bulk_insert`` of the partials into *empty*, which works because
    :class:`Counted`'s ``lift`` is the identity on stored partials.
    """
    build = getattr(type(empty), "from_sorted_partials", None)
    if build is not None:
        return build(cm, pairs)
    empty.bulk_insert(pairs)
    return empty
