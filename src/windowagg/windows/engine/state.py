"""State: the aggregators the windows are computed by (one key's or many keys'), and their verb.

=================  ==========================================================================
aggregators        one FIFO aggregator per monoid aggregation (``fifo.TwoStacksLite`` by
                   default; ``count`` over a zero column); exact quantiles (an
                   :class:`~windowagg.exact_quantile.ExactQuantile` in the place of the
                   monoid, whatever the alias) of a column share one order-statistics
                   structure and one pass (:mod:`.ranks`)
ordering           admission sorts one key's events by time, and every shape's windows are
                   slices ``[lo, hi)`` of them with non-decreasing bounds: an in-order
                   aggregator computes them all, each event inserted once, evicted once
one call           per aggregation ``query_slices(values, lo, hi, out=buffer)``: the FIFO
                   verb slides one aggregator over every window of the key (evict what
                   left, insert what entered, query), natively in one call
fallback           an aggregator without the verb (a user factory's) gets the same
                   operations one call at a time (:func:`query_slices`)
=================  ==========================================================================

Nothing here picks an algorithm by size or by shape: every window goes the same way.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np

from windowagg.errors import AggregationError, ArgumentError
from windowagg.exact_quantile import ExactQuantile
from windowagg.monoids.base import declared_kind
from windowagg.wavelet_matrix import WaveletMatrix
from windowagg.windows.engine.assign import Windows
from windowagg.windows.engine.ranks import range_select, slide_select

__all__ = [
    "Group",
    "Plan",
    "Unlowered",
    "aggregation_message",
    "evaluate",
    "group_input",
    "plan",
    "query_slices",
    "slide_windows",
]


class Group(NamedTuple):
    """One aggregation computed by its own aggregator."""

    column: str | None
    alias: str
    monoid: Any
    buffer: Any = None
    """float64 / int64 when the answers go straight into a numpy buffer (``out=``)."""
    timed: bool = False
    """The monoid declares ``needs_time``: it lifts ``(t, v)`` pairs, and each window's
    partial is answered as of the window's end (``monoid.as_of``; decayed aggregations)."""


#: Declared monoid kinds (:func:`~windowagg.monoids.base.declared_kind`) answering a float
#: for every non-empty window of float values: written straight into float64 ``out``
#: buffers (``count`` into int64).
_NUMERIC = frozenset({"sum", "max", "min", "mean"})


class Plan(NamedTuple):
    """Which aggregator or order-statistics structure computes each aggregation alias."""

    groups: list[Group]
    quantiles: dict[str, list[tuple[str, int, int]]]
    """Per column: ``(alias, num, den)`` of its exact quantiles."""
    probes: Sequence[tuple[str | None, Any]] = ()
    """``(column, lift)`` of the aggregations whose monoid may refuse a finite float (see
    :func:`~windowagg.windows.engine.admission.admit`)."""


#: Declared monoid kinds that take every finite float: admission does not try their
#: ``lift`` (the others, user monoids and ``geomean`` / ``argmax`` ..., it does).
_TAKES_ANY_FLOAT = frozenset({"sum", "max", "min", "mean", "count"})


def plan(aggs: Sequence[Any]) -> Plan:
    """Group *aggs* (``windowagg.aggs.Agg``-like: alias, monoid, column, kind). O(a).

    One aggregator per monoid aggregation (the built-ins keep their own fast paths: two
    aggregators of ``Max`` and ``Sum`` run twice as fast in Python as one over
    ``Composite(Max, Sum)``, and natively each is a numeric adapter over the float64
    buffer); one order-statistics structure per column for all its quantiles.
    """
    groups: list[Group] = []
    quantiles: dict[str, list[tuple[str, int, int]]] = {}
    probes: list[tuple[str | None, Any]] = []
    for a in aggs:
        if isinstance(a.monoid, ExactQuantile):  # not a monoid: the order-statistics path
            if a.column is None:
                raise ValueError(f"quantile {a.alias!r} needs a column")
            num, den = a.monoid.fraction
            quantiles.setdefault(a.column, []).append((a.alias, num, den))
            continue
        kind = declared_kind(a.monoid)
        approx = (a.kind or "").startswith("approx_p")
        timed = bool(getattr(a.monoid, "needs_time", False))  # lifts (t, v): any v
        if not timed and kind not in _TAKES_ANY_FLOAT and not approx:
            probes.append((a.column, a.monoid.lift))
        buffer: Any = None
        if kind == "count" and a.dtype == "bigint":
            buffer = np.int64
        elif kind in _NUMERIC and a.dtype == "double":
            buffer = np.float64
        groups.append(Group(a.column, a.alias, a.monoid, None if timed else buffer, timed))
    return Plan(groups, quantiles, probes)


def group_input(g: Group, t: np.ndarray, values: Mapping[str, np.ndarray]) -> np.ndarray:
    """What group *g*'s monoid lifts, for the sorted events ``(t, values)``: its column
    (zeros for none), or for a timed monoid an object array of ``(t, v)`` pairs. O(n)."""
    n = len(t)
    col = values[g.column] if g.column is not None else np.zeros(n, dtype=np.float64)
    if not g.timed:
        return col
    pairs = zip(np.asarray(t).tolist(), np.asarray(col).tolist(), strict=True)
    return np.fromiter(pairs, dtype=object, count=n)


class Unlowered:
    """A monoid whose ``lower`` is the identity (the aggregator answers partials): for
    timed monoids, whose partials are answered as of a time their ``lower`` does not know."""

    __slots__ = ("combine", "commutative", "identity", "lift", "monoid")

    def __init__(self, m: Any) -> None:
        self.monoid = m
        self.identity = m.identity
        self.lift = m.lift
        self.combine = m.combine
        self.commutative = bool(getattr(m, "commutative", False))

    def lower(self, x: Any) -> Any:
        return x


def _timed(
    g: Group,
    make: Factory,
    user: bool,
    windows: Windows,
    t: np.ndarray,
    values: Mapping[str, np.ndarray],
) -> np.ndarray:
    """A timed aggregation's answer per window, as of the window's end: the monoid's own
    array verb ``slices(t, v, lo, hi, end)`` when it has one and no factory is given
    (exponential decay: one native call), else the aggregator over ``(t, v)`` pairs, its
    partials answered by ``monoid.as_of``. O(n + windows) aggregator operations."""
    verb = getattr(g.monoid, "slices", None)
    if verb is not None and not user:
        col = values[g.column] if g.column is not None else np.zeros(len(t), dtype=np.float64)
        out: np.ndarray = verb(t, col, windows.lo, windows.hi, windows.end)
        return out
    agg = _aggregator(make, Unlowered(g.monoid), user)
    parts = query_slices(agg, group_input(g, t, values), windows.lo, windows.hi, None)
    as_of = g.monoid.as_of
    answers = [as_of(p, e) for p, e in zip(parts, windows.end.tolist(), strict=True)]
    if getattr(g.monoid, "answers_text", False):  # declared: text per window (top_k's JSON)
        return np.asarray(answers, dtype=object)
    return np.asarray([np.nan if a is None else a for a in answers], dtype=np.float64)


Factory = Callable[[Any], Any]


class Reused:
    """``factory(monoid)`` made once per monoid, for callers that only ask the aggregator's
    ``query_slices`` (which neither reads nor changes it): one construction per stream,
    not per micro-batch."""

    __slots__ = ("_factory", "_limit", "_made")

    def __init__(self, factory: Factory, limit: int | None = None) -> None:
        self._factory = factory
        #: at most this many monoids' aggregators kept (None: no bound): a table shared by
        #: every stream of a process forgets them all when full, and makes them again
        self._limit = limit
        self._made: dict[int, tuple[Any, Any]] = {}  # id(monoid) -> (monoid, aggregator)

    def __call__(self, monoid: Any) -> Any:
        got = self._made.get(id(monoid))
        if got is None or got[0] is not monoid:
            if self._limit is not None and len(self._made) >= self._limit:
                self._made.clear()
            got = self._made[id(monoid)] = (monoid, self._factory(monoid))
        return got[1]

    def forget(self) -> None:
        """Drop every aggregator made (made again when next asked). O(made)."""
        self._made.clear()


def _default_factory(monoid: Any) -> Any:
    from windowagg.fifo import TwoStacksLite

    return TwoStacksLite(monoid)


def query_slices(agg: Any, values: np.ndarray, lo: np.ndarray, hi: np.ndarray, buffer: Any) -> Any:
    """``query()`` of a FIFO aggregator holding ``values[lo[j]:hi[j]]``, for every window j.

    ``lo`` and ``hi`` are non-decreasing. With the verb (every ``windowagg.fifo`` class,
    native or Python): one ``agg.query_slices`` call, into a new *buffer* array (a numpy
    dtype) or a list. Without it, the same operations one call at a time: per window evict
    what left (everything held when the window starts after it), insert what entered,
    query. Each event is inserted and evicted at most once: O(n + windows) aggregator
    operations.
    """
    r = len(lo)
    verb = getattr(agg, "query_slices", None)
    if verb is not None:
        if buffer is not None:
            return verb(values, lo, hi, np.empty(r, dtype=buffer))
        return verb(values, lo, hi)
    out = list(_one_by_one(agg, values, lo, hi))
    return out if buffer is None else np.asarray(out, dtype=buffer)


def _one_by_one(agg: Any, values: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> Iterator[Any]:
    """:func:`query_slices` one aggregator call at a time: per window, evict what left,
    insert what entered, yield ``query()``. O(n + windows) aggregator operations."""
    source = values.tolist()
    drop, query, insert = agg.bulk_evict, agg.query, agg.insert  # bound methods: hot loop
    held_lo = held_hi = 0
    for a, b in zip(lo.tolist(), hi.tolist(), strict=True):
        if a >= held_hi:
            if held_hi > held_lo:
                drop(held_hi - held_lo)
            held_lo = held_hi = a
        elif a > held_lo:
            drop(a - held_lo)
            held_lo = a
        for i in range(held_hi, b):
            insert(source[i])
        held_hi = max(held_hi, b)
        yield query()


def slide_windows(
    make: Callable[[], Any], values: np.ndarray, lo: np.ndarray, hi: np.ndarray, buffer: Any
) -> Any:
    """The aggregate of ``values[lo[j]:hi[j]]`` for every window j (non-decreasing bounds),
    from one new aggregator made by *make*: :func:`query_slices`. O(n + windows)."""
    return query_slices(make(), values, lo, hi, buffer)


def _aggregator(make: Factory, monoid: Any, user: bool) -> Any:
    """``make(monoid)``, checked to be a FIFO aggregator the engine can drive. O(1)."""
    agg = make(monoid)
    if hasattr(agg, "query_slices") or all(
        hasattr(agg, verb) for verb in ("insert", "bulk_evict", "query")
    ):
        return agg
    who = "factory" if user else "the default factory"
    raise ArgumentError(
        f"{who} returned {type(agg).__name__!r} for the monoid {type(monoid).__name__}, not a "
        "FIFO aggregator (it needs query_slices, or insert, bulk_evict and query); pass a "
        "windowagg.fifo class such as factory=fifo.TwoStacksLite, or a function returning one"
    )


def _window_error(
    make: Factory, g: Group, col: np.ndarray, windows: Windows, e: Exception
) -> AggregationError:
    """The error of an aggregation whose monoid raised *e*: the windows are replayed one
    at a time on a new aggregator to find the first that raises (``window`` attribute:
    its index, None if the replay does not raise). O(n + windows), on the error path."""
    done = 0  # windows the replay answered
    try:
        for _ in _one_by_one(make(g.monoid), col, windows.lo, windows.hi):
            done += 1
        window = None  # the replay went through: the failure did not repeat
    except Exception:  # window `done` raised (the user's error is chained from e)
        window = done
    where = ""
    if window is not None:
        start, end = int(windows.start[window]), int(windows.end[window])
        where = f" in the window (window_start {start}, window_end {end})"
    return AggregationError(
        aggregation_message(g.alias, g.monoid, f"{type(e).__name__}: {e}", where),
        alias=g.alias,
        window=window,
        reason=f"{type(e).__name__}: {e}",
    )


#: Modules of windowagg's own monoids (the aggregation strings' and ``windowagg.monoids``'
#: built-ins), whose failure is not the caller's monoid to fix. Not ``monoids.composite``
#: or ``monoids.base``, whose wrappers hold monoids of the caller's.
_BUILTIN_MODULES = (
    "windowagg.sketches.",
    "windowagg.monoids.builtins",
    "windowagg.monoids.statistics",
    "windowagg.monoids.extremes",
    "windowagg.monoids.bloom",
)


def aggregation_message(alias: str, monoid: Any, reason: str, where: str) -> str:
    """The message of an :class:`~windowagg.errors.AggregationError` (*where*: the window
    and key, as the caller knows them). A monoid of the caller's: fix it or make its lift
    refuse; one of windowagg's own (through :class:`Unlowered` too): report it.

    >>> from windowagg.sketches.forward_decay import ExpDecayed
    >>> aggregation_message("m", Unlowered(ExpDecayed(1.0)), "E: x", "")[:61]
    "aggregation 'm' (windowagg's built-in ExpDecayed) raised E: x"
    """
    m = monoid.monoid if isinstance(monoid, Unlowered) else monoid
    name = type(m).__name__
    if type(m).__module__.startswith(_BUILTIN_MODULES):
        return (
            f"aggregation {alias!r} (windowagg's built-in {name}) raised {reason}{where}; "
            "this is not a monoid of yours to fix: report it to windowagg with this message "
            "(the exception is chained below)"
        )
    return (
        f"aggregation {alias!r} (monoid {name}) raised {reason}{where}; fix "
        "the monoid (its exception is chained below), or make its lift refuse the values it "
        "cannot combine (a lift error is a bad_value reject, not a failure)"
    )


def evaluate(
    p: Plan,
    windows: Windows,
    values: dict[str, np.ndarray],
    factory: Factory | None = None,
    times: np.ndarray | None = None,
    indexes: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Every aggregation of every window: ``{alias: one value per window}``.

    *values* are the time-sorted events' columns, *times* their int64 times (needed by
    timed aggregations: decayed sums, counts and means). Per aggregation one
    :func:`query_slices`; per column with quantiles :func:`~.ranks.slide_select`, or,
    given *indexes* (a dict, possibly empty), :func:`~.ranks.range_select` over the
    column's :class:`~windowagg.wavelet_matrix.WaveletMatrix` in ``indexes[column]``
    (built there on first use: callers evaluating several sizes over the same *values*
    build it once). O(n + windows) aggregator operations, O(1) amortized each.
    """
    make = factory or _default_factory
    lo, hi = windows.lo, windows.hi
    n = len(windows.keys)  # one key per sorted event
    out: dict[str, Any] = {}
    for g in p.groups:
        if g.timed:
            if times is None:
                raise ArgumentError(
                    f"aggregation {g.alias!r} decays with time: evaluate needs the events' "
                    "times (times=)"
                )
            try:
                out[g.alias] = _timed(g, make, factory is not None, windows, times, values)
            except ArgumentError:
                raise
            except Exception as e:  # a user factory's aggregator or a monoid's error
                inputs = group_input(g, times, values)
                raw = g._replace(monoid=Unlowered(g.monoid))
                raise _window_error(make, raw, inputs, windows, e) from e
            continue
        col = values[g.column] if g.column is not None else np.zeros(n, dtype=np.float64)
        agg = _aggregator(make, g.monoid, factory is not None)
        try:
            out[g.alias] = query_slices(agg, col, lo, hi, g.buffer)
        except Exception as e:  # a user monoid's combine / lower: name the window
            raise _window_error(make, g, col, windows, e) from e
    for column, qs in p.quantiles.items():
        fractions = [(a, b) for _, a, b in qs]
        if indexes is None:
            cols = slide_select(values[column], lo, hi, fractions)
        else:
            if column not in indexes:
                indexes[column] = WaveletMatrix(values[column])
            cols = range_select(indexes[column], lo, hi, fractions)
        for (alias, _, _), c in zip(qs, cols, strict=True):
            out[alias] = c
    return out
