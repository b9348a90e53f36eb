"""Streaming records shared by one key's two state layouts (:mod:`.stream`, :mod:`.panes`).

=================  ==========================================================================
:class:`Delta`     what one micro-batch changed in a key's stored state: the metadata record
                   (always rewritten, small) and *pieces* by integer key, to put and to
                   delete: a store (Spark's ``MapState``, a dict, a KVS) writes exactly those
:class:`StepResult` one micro-batch's output for one key (windows, refused positions)
event arrays       :class:`Events` (int64 time, int64 arrival sequence number, float64
                   value columns) and their codec bytes (:func:`encode_events`)
admission          :func:`admit_key`: the clock (judged per arrival or per micro-batch) after
                   the values a user monoid's ``lift`` refuses
atomic steps       :func:`atomic`: a micro-batch that raises (a user monoid's ``combine`` or
                   ``lower``) leaves the key's state as it was, so a later micro-batch
                   answers as if it had never come
bytes              the versioned ``windowagg.codec`` (numpy buffers as ``bytes``), never
                   pickle; the codec checks every length before it allocates
=================  ==========================================================================

>>> d = Delta(b"m", {3: b"abc"}, (1,))
>>> pieces = {1: b"old", 2: b"x"}
>>> d.apply(pieces); sorted(pieces.items()), d.nbytes
([(2, b'x'), (3, b'abc')], 20)
"""

from __future__ import annotations

import copy
from collections.abc import Iterator, Mapping, MutableMapping, Sequence
from contextlib import contextmanager
from typing import Any, NamedTuple

import numpy as np

from windowagg import codec
from windowagg.errors import CodecError
from windowagg.windows._common import bad_value_reason
from windowagg.windows.engine.admission import Admitted, admit, nonfinite_reason
from windowagg.windows.engine.clock import WatermarkClock
from windowagg.windows.engine.shapes import Shape
from windowagg.windows.engine.state import Plan

__all__ = [
    "HEAD_KEY",
    "STATE_VERSION",
    "Delta",
    "Events",
    "StepResult",
    "Tail",
    "admit_key",
    "agg_signature",
    "atomic",
    "check_config",
    "decode_events",
    "describe_monoid",
    "encode_events",
]

#: Version of the metadata and piece records (inside the codec's own version). Version 1
#: kept a list of event chunks for every shape; version 2 kept integer-keyed pieces (one
#: per pane of partials for hopping windows of monoids, event chunks for the rest);
#: version 3 keeps the panes' partials in a tree of pieces (:func:`.panes.node_key`) so
#: that a micro-batch reads only the pieces it needs.
STATE_VERSION = 3
#: The one int64 no piece key takes (piece keys are any other int64: pane nodes and values
#: are negative for panes before the windows' ``start_time``): where a store keeps a key's
#: metadata record beside its pieces (Spark's head row, :func:`windowagg.stream`'s head).
HEAD_KEY = -(2**63)

_I64 = np.dtype("<i8")
_F64 = np.dtype("<f8")


class StepResult(NamedTuple):
    """One micro-batch's output for one key."""

    columns: dict[str, Any]
    """``start``, ``end``, one column per aggregation alias, ``revision`` (int64)."""
    refused: np.ndarray
    """Positions (into the batch's arrays) of the events refused, ascending."""
    reasons: list[str]
    """One reason per refused position."""
    ids: np.ndarray
    """Each emitted window's identity (int64): hopping its start, per-event its event's
    arrival sequence number, count windows their ordinal, sessions their start."""


class Delta(NamedTuple):
    """What one micro-batch changed in a key's stored state.

    Write *meta* (the metadata record); store every ``put`` piece under its integer key
    (new or replaced); remove the pieces keyed in *delete*. Nothing else changed.
    """

    meta: bytes
    put: dict[int, bytes]
    delete: tuple[int, ...] = ()

    def apply(self, pieces: MutableMapping[int, bytes]) -> None:
        """Apply the piece changes to *pieces* (a dict standing for the store). O(changes)."""
        for k in self.delete:
            pieces.pop(k, None)
        pieces.update(self.put)

    @property
    def nbytes(self) -> int:
        """Bytes this delta writes: metadata, pieces and an 8-byte key per piece put or
        deleted (what a key-value store receives). O(changes)."""
        return len(self.meta) + sum(len(v) + 8 for v in self.put.values()) + 8 * len(self.delete)


#: The delta of a stream without a store (``deltas=False``): nothing encoded.
NO_DELTA = Delta(b"", {}, ())


class Events(NamedTuple):
    """Events as arrays: int64 time, int64 arrival sequence number, float64 columns."""

    t: np.ndarray
    seq: np.ndarray
    values: dict[str, np.ndarray]


class Tail(NamedTuple):
    """A key's events that wait for later events and, when the input ends, are rejects:
    count windows' last events, which complete no window (:meth:`.stream.KeyStream.tail`).
    """

    events: Events
    """The events in (time, arrival) order; ``values`` holds the aggregated columns and the
    columns the stream carries (``carry=``: the caller's row identity)."""
    reasons: list[str]
    """One reject reason per event (the batch front ends' text)."""


def empty_events(cols: Sequence[str]) -> Events:
    """No events, with the columns *cols*. O(1)."""
    return Events(
        np.empty(0, np.int64), np.empty(0, np.int64), {c: np.empty(0, np.float64) for c in cols}
    )


def concat_events(parts: Sequence[Events], cols: Sequence[str]) -> Events:
    """*parts* end to end. O(n)."""
    if not parts:
        return empty_events(cols)
    if len(parts) == 1:
        return parts[0]
    return Events(
        np.concatenate([p.t for p in parts]),
        np.concatenate([p.seq for p in parts]),
        {c: np.concatenate([p.values[c] for p in parts]) for c in cols},
    )


def take_events(e: Events, idx: Any) -> Events:
    """The events at *idx* (an index array or a slice). O(len(idx))."""
    return Events(e.t[idx], e.seq[idx], {c: v[idx] for c, v in e.values.items()})


def sorted_events(e: Events) -> Events:
    """*e* sorted by (time, arrival). O(n log n)."""
    return take_events(e, np.lexsort((e.seq, e.t)))


def encode_events(e: Events) -> bytes:
    """Events as codec bytes (little-endian int64 / float64 buffers). O(n)."""
    return codec.dumps(
        (
            STATE_VERSION,
            e.t.astype(_I64).tobytes(),
            e.seq.astype(_I64).tobytes(),
            {
                c: list(v.tolist()) if v.dtype == object else v.astype(_F64).tobytes()
                for c, v in e.values.items()
            },
        )
    )


def as_column(v: Any) -> np.ndarray:
    """A value column as the engine holds it: float64, or, for an object array (values of
    a user monoid that are not numbers: strings, tuples, sketches), the objects. O(m)."""
    a = np.asarray(v)
    if a.dtype == object:
        return a
    return a.astype(np.float64, copy=False)


def nonfinite(v: Any) -> bool:
    """Whether *v* is a float NaN or +-inf (any other value, number or not, is not). O(1)."""
    return isinstance(v, float) and v - v != 0


def _decode_column(v: Any) -> np.ndarray:
    """A column of :func:`encode_events`: float64 buffer bytes, or a list of objects."""
    if isinstance(v, bytes):
        return np.frombuffer(v, dtype=_F64).astype(np.float64)
    if isinstance(v, list):
        out = np.empty(len(v), dtype=object)
        out[:] = v
        return out
    raise CodecError(f"stream chunk column of type {type(v).__name__}: the state is corrupted")


def decode_events(data: bytes, cols: Sequence[str]) -> Events:
    """The inverse of :func:`encode_events`; ``CodecError`` for anything else. O(n)."""
    with codec.decoding("a windowagg stream chunk"):
        rec = codec.loads(data)
    if not (isinstance(rec, tuple) and len(rec) == 4 and rec[0] == STATE_VERSION):
        raise CodecError(
            f"not a windowagg stream chunk of version {STATE_VERSION}: clear the query's "
            "checkpoint or run the windowagg version that wrote it"
        )
    _, tb, sb, vals = rec
    if not (
        isinstance(tb, bytes)
        and isinstance(sb, bytes)
        and isinstance(vals, dict)
        and set(vals) == set(cols)
        and len(tb) == len(sb)
    ):
        raise CodecError(
            f"stream chunk columns {sorted(vals) if isinstance(vals, dict) else vals!r} differ "
            f"from the aggregation's {sorted(cols)}: the checkpoint belongs to another query"
        )
    n = len(tb) // 8
    out = {c: _decode_column(vals[c]) for c in cols}
    if any(len(v) != n for v in out.values()) or len(tb) % 8:
        raise CodecError("stream chunk buffers of different lengths: the state is corrupted")
    t = np.frombuffer(tb, dtype=_I64).astype(np.int64)
    return Events(t, np.frombuffer(sb, dtype=_I64).astype(np.int64), out)


def admit_key(
    p: Plan,
    clock: WatermarkClock,
    judge: str,
    t: np.ndarray,
    vals: Mapping[str, np.ndarray],
    shape: Shape | None = None,
) -> Admitted:
    """One key's admission: the values a monoid's ``lift`` refuses (user monoids:
    ``bad_value: <error type>: <message>``; they do not move the clock), times in no
    window of a hopping *shape* with ``size < slide``, then the clock per *judge*
    (``"arrival"``: each event against the bound before it; ``"batch"``: every event
    against the bound before the micro-batch). O(m log m) + one ``lift`` per probe.
    """
    lifted: dict[int, str] = {}  # position -> reason, the first lift's refusal wins
    for g in p.groups:
        if g.buffer is not None or g.column is None or g.timed:
            continue  # the built-ins and decayed sums take every finite float
        lift = g.monoid.lift
        for i, v in enumerate(vals[g.column].tolist()):
            if nonfinite(v) or i in lifted:
                continue
            try:
                lift(v)
            except Exception as e:
                lifted[i] = bad_value_reason(e)
    bad, why = list(lifted), list(lifted.values())
    if not bad:
        if judge == "batch":
            return _admit_batch(clock, t, vals, shape)
        return admit(t, vals, clock, shape=shape)
    ok = np.setdiff1d(np.arange(len(t)), np.asarray(bad, dtype=np.int64))
    sub_vals = {c: v[ok] for c, v in vals.items()}
    if judge == "batch":
        a = _admit_batch(clock, t[ok], sub_vals, shape)
    else:
        a = admit(t[ok], sub_vals, clock, shape=shape)
    refused = np.concatenate([ok[a.refused], np.asarray(bad, dtype=np.int64)])
    reasons = a.reasons + why
    order = np.argsort(refused, kind="stable")
    return Admitted(ok[a.order], refused[order], [reasons[i] for i in order.tolist()])


def admit_key_small(
    p: Plan, clock: WatermarkClock, judge: str, t: list[int], vals: Mapping[str, list[float]]
) -> tuple[list[int], list[int], list[str]]:
    """:func:`admit_key` over plain lists, for a few events (no numpy call): the same
    admitted order, refused positions and reasons, for a shape without gaps (no ``size <
    slide``). Returns ``(admitted positions by (time, arrival), refused positions
    ascending, their reasons)``. O(m log m) + one ``lift`` per probe.

    >>> from windowagg.aggs import parse_aggs
    >>> from windowagg.windows.engine.state import plan
    >>> c = WatermarkClock(0, 2)
    >>> p = plan(parse_aggs(["sum(v)"]))
    >>> admit_key_small(p, c, "arrival", [9, 10, 8, 7], {"v": [1.0, 2.0, float("inf"), 3.0]})
    ([0, 1], [2, 3], ["non-finite value in 'v': inf", 'late: 7 < lateness bound 8'])
    >>> admit_key_small(p, c, "arrival", [3, 12], {"v": [1.0, 1.0]})
    ([1], [0], ['late: 3 < lateness bound 8'])
    """
    bad: dict[int, str] = {}  # position -> reason, first found wins (as admit_key)
    for g in p.groups:
        if g.buffer is not None or g.column is None or g.timed:
            continue  # the built-ins and decayed sums take every finite float
        lift = g.monoid.lift
        for i, v in enumerate(vals[g.column]):
            if i in bad or nonfinite(v):  # NaN or +-inf: refused as non-finite below
                continue
            try:
                lift(v)
            except Exception as e:
                bad[i] = bad_value_reason(e)
    for c, col in vals.items():
        try:
            if sum(col) - sum(col) == 0:  # NaN or +-inf anywhere makes the sum non-finite
                continue
        except TypeError:  # values that are not numbers (an object column)
            pass
        for i, v in enumerate(col):
            if nonfinite(v) and i not in bad:
                bad[i] = nonfinite_reason(c, v)
    kept: list[int] = []
    if judge == "batch":
        b = clock.bound
        for i, x in enumerate(t):
            if i in bad:
                continue
            if b is not None and x < b:
                bad[i] = f"late: {int(x)} < lateness bound {b}"
            else:
                kept.append(i)
        for i in kept:
            clock.advance_to(t[i])
    else:
        late = clock.observe_list(t, bad)
        for i, b in late.items():
            bad[i] = f"late: {int(t[i])} < lateness bound {b}"
        kept = [i for i in range(len(t)) if i not in bad]
    kept.sort(key=t.__getitem__)  # stable: ties keep arrival order
    refused = sorted(bad)
    return kept, refused, [bad[i] for i in refused]


def _admit_batch(
    clock: WatermarkClock, t: np.ndarray, vals: Mapping[str, np.ndarray], shape: Shape | None
) -> Admitted:
    """Admission with every event judged against the bound before the batch. O(m log m)."""
    a = admit(t, vals, shape=shape)  # non-finite values, times in no window
    b = clock.bound
    if b is None or not len(a.order):
        clock.observe(t[a.order])
        return a
    late = t[a.order] < b
    keep = a.order[~late]
    clock.observe(t[keep])
    refused = np.concatenate([a.refused, a.order[late]])
    why = a.reasons + [f"late: {int(x)} < lateness bound {b}" for x in t[a.order[late]]]
    order = np.argsort(refused, kind="stable")
    return Admitted(keep, refused[order], [why[i] for i in order.tolist()])


def describe_monoid(m: Any) -> str:
    """A monoid as its parameters decide its answers: its ``repr`` when its class defines
    one that names no address (the built-ins: ``ExpDecayed(half_life=3600000000.0,
    what='mean')``, ``ExactQuantile(num=95, den=100)``), else its class's qualified name
    (a user monoid without a ``repr``: its parameters cannot be compared). O(repr).

    >>> from windowagg.monoids import Max
    >>> describe_monoid(Max())
    'Max()'
    >>> class Plain:
    ...     pass
    >>> describe_monoid(Plain())
    'windowagg.windows.engine.records.Plain'
    """
    cls: Any = type(m)
    if cls.__repr__ is not object.__repr__:
        text = repr(m)
        if " at 0x" not in text:
            return text
    return f"{cls.__module__}.{cls.__qualname__}"


def agg_signature(aggs: Sequence[Any]) -> tuple[str, ...]:
    """Each aggregation as it decides answers (alias, kind, column, output type, the
    monoid's parameters: :func:`describe_monoid`), for a stream state's configuration.
    O(aggregations).

    >>> from windowagg.aggs import parse
    >>> agg_signature(parse(["ewm_mean(v, half_life=1h)", "p95(v)"]))
    ("ewm_mean_v: ewm_mean ExpDecayed(half_life=3600000000.0, what='mean') of 'v' as double", "p95_v: p95 ExactQuantile(num=95, den=100) of 'v' as double")
    """
    return tuple(
        f"{getattr(a, 'alias', '?')}: {getattr(a, 'kind', None) or '-'} "
        f"{describe_monoid(a.monoid)} of {getattr(a, 'column', None)!r} as "
        f"{getattr(a, 'dtype', '?')}"
        for a in aggs
    )


def _named(config: Any) -> dict[str, Any] | None:
    """A configuration record as ``{name: value}``; None for a record of an earlier
    windowagg (positional, without names)."""
    if not (isinstance(config, tuple) and config):
        return None
    if not all(isinstance(x, tuple) and len(x) == 2 and isinstance(x[0], str) for x in config):
        return None
    return dict(config)


def _difference(name: str, old: Any, new: Any) -> str:
    """One parameter's change, readable (the aggregations one by one). O(len)."""
    if name == "aggregations" and isinstance(old, tuple) and isinstance(new, tuple):
        gone = [a for a in old if a not in new]
        added = [a for a in new if a not in old]
        if gone or added:
            return f"aggregations {list(gone)} in the state, {list(added)} now"
        return f"aggregations in the order {list(old)} in the state, {list(new)} now"
    return f"{name} {old!r} in the state, {new!r} now"


def check_config(config: Any, want: tuple[tuple[str, Any], ...]) -> None:
    """``CodecError`` unless a stored configuration equals this stream's, naming every
    parameter that differs. *want* is ``((name, value), ...)``: every parameter that
    changes answers (the window shape, lateness, emission, the aggregations with their own
    parameters: :func:`agg_signature`, and the caller's context, e.g. Spark's time unit).
    O(configuration).
    """
    if isinstance(config, tuple) and config == want:
        return
    stored = _named(config)
    if stored is None:
        raise CodecError(
            f"stream state written by an earlier windowagg, whose configuration record "
            f"({config!r}) does not name every parameter that changes answers (the "
            "aggregations' own, such as half_life): start a new checkpoint location"
        )
    now = dict(want)
    diffs = [
        _difference(k, stored.get(k, _UNSET), now.get(k, _UNSET))
        for k in dict.fromkeys([*stored, *now])
        if stored.get(k, _UNSET) != now.get(k, _UNSET)
    ]
    raise CodecError(
        f"the query changed since its stream state was written ({'; '.join(diffs)}): "
        "restart it with the parameters it was started with, or start a new checkpoint "
        "location for the changed query"
    )


class _Unset:
    """A parameter one configuration has and the other has not."""

    def __repr__(self) -> str:
        return "(not set)"


_UNSET = _Unset()


#: Slot types :func:`atomic` keeps as they are (immutable: a step replaces, never changes).
_PLAIN: frozenset[type] = frozenset({int, str, bool, float, tuple, type(None), frozenset, bytes})


#: :func:`_slots` per class.
_SLOTS: dict[type, tuple[str, ...]] = {}


def _slots(kind: type) -> tuple[str, ...]:
    """Every slot of *kind*, its base classes' too (a layout built on another), but those
    a class names in ``_FIXED`` (set at construction, never by a step: its configuration,
    so nothing to keep). O(1) cached."""
    got = _SLOTS.get(kind)
    if got is None:
        fixed = {n for c in kind.__mro__ for n in getattr(c, "_FIXED", ())}
        got = _SLOTS[kind] = tuple(
            n for c in reversed(kind.__mro__) for n in getattr(c, "__slots__", ()) if n not in fixed
        )
    return got


@contextmanager
def atomic(state: Any) -> Iterator[None]:
    """Run one step of a key's *state* (a layout with ``__slots__``) all or nothing.

    Before the step every slot is kept (but the class's ``_FIXED`` ones, its
    configuration; lists, dicts, sets and the clock copied: they
    change in place; a slot with ``begin``/``rollback``/``commit``, such as the pane
    layout's pieces, journals its own changes); if the step raises, the slots and journals
    are put back and the error goes on. Steps nest: a caller's ``atomic`` around several
    steps, or around several states, undoes them all when one raises (a committed inner
    step leaves its changes in the enclosing journals). O(slots + their containers): the
    metadata a step writes anyway, plus the journals' O(changes).

    >>> class S:
    ...     __slots__ = ("n", "seen")
    >>> s = S(); s.n, s.seen = 1, [1]
    >>> try:
    ...     with atomic(s):
    ...         s.n = 2; s.seen.append(2); raise ZeroDivisionError
    ... except ZeroDivisionError:
    ...     pass
    >>> s.n, s.seen
    (1, [1])
    """
    # one list of the slots' values (not a pair per slot): a stream's micro-batch keeps
    # every key's undo open until its commit, and each container kept alive that long
    # counts towards the cyclic GC's next full pass over all the keys' state
    names = _slots(type(state))
    saved = [getattr(state, name) for name in names]
    journals: list[Any] = []
    for i, value in enumerate(saved):
        kind = type(value)
        if kind in _PLAIN:  # immutable, kept as is (the common case first: a cheap test)
            pass
        elif kind is list or kind is dict or kind is set:
            saved[i] = value.copy()
        elif kind is WatermarkClock:
            saved[i] = copy.copy(value)
        elif hasattr(value, "rollback"):
            value.begin()
            journals.append(value)
        elif isinstance(value, (list, dict, set, WatermarkClock)):
            saved[i] = copy.copy(value)
    try:
        yield
    except BaseException:
        for pieces in journals:
            pieces.rollback()
        for name, value in zip(names, saved, strict=True):
            setattr(state, name, value)
        raise
    for pieces in journals:  # only on success: a rollback closed its journal already
        pieces.commit()
