"""The object API's state bytes: what :meth:`EngineWindows.to_bytes` writes and
``from_bytes`` loads (versioned ``windowagg.codec`` records, no pickle).

=================  ==========================================================================
record             ``(kind, STATE_VERSION, monoid name, configuration, newest time, time
                   type, closed, counters, side output, [(stream metadata, pieces)])``, one
                   engine stream per window size
time               O(stored) either way
=================  ==========================================================================
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from windowagg import codec
from windowagg.errors import CodecError
from windowagg.windows._common import Rejected, monoid_name
from windowagg.windows.engine.stream import KeyStream

if TYPE_CHECKING:
    from windowagg.windows.adapter import EngineWindows

__all__ = ["STATE_VERSION", "config", "dump", "restore"]

#: Version of the adapter's state record (version 1 was the object API's own FiBA engine).
STATE_VERSION = 2


def config(w: EngineWindows[Any, Any, Any]) -> tuple[Any, ...]:
    """What a stored state must have been written for (shapes, origin, lateness, policies)."""
    return (
        [(s.size, s.slide, s.rows, s.every, s.gap) for s in w._shapes],
        w._origin,
        w._ooo,
        w._allowed,
        w._late,
        w._bad_value,
        w._emit,
    )


def dump(w: EngineWindows[Any, Any, Any]) -> bytes:
    """*w*'s state (its buffer handed to the engine first) as codec bytes. O(stored)."""
    rejected = []
    for r in w.rejected:
        rec = (r.t, r.value, r.reason)
        try:
            codec.dumps(rec)
        except Exception:
            rec = (repr(r.t), repr(r.value), r.reason + " (t and value stored as repr)")
        rejected.append(rec)
    return codec.dumps(
        (
            w._kind,
            STATE_VERSION,
            monoid_name(w._monoid),
            config(w),
            w._schedule.newest,
            (w._times.dt, w._times.aware),
            w._closed,
            dict(w._counts),
            rejected,
            [(s.meta_bytes(), s.pieces()) for s in w._streams],
        )
    )


def restore(w: EngineWindows[Any, Any, Any], data: bytes) -> None:
    """Load :func:`dump`'s bytes into the fresh window *w* (same configuration); any failure
    is a ``CodecError`` (the original exception as its ``__cause__``)."""
    try:
        _load(w, data)
    except CodecError:
        raise
    except Exception as e:
        raise CodecError(f"cannot restore a windowagg {w._kind} state: {e}") from e


def _load(w: EngineWindows[Any, Any, Any], data: bytes) -> None:
    kind = w._kind
    with codec.decoding(f"a windowagg {kind} state"):
        rec = codec.loads(data)
    kinds = ("sliding", "count", "session", "shared")
    if isinstance(rec, tuple) and len(rec) == 10 and rec[0] in kinds and rec[0] != kind:
        raise CodecError(
            f"this is a windowagg {rec[0]} window's state, not a {kind} window's: "
            f"restore it with that class's from_bytes"
        )
    if not (isinstance(rec, tuple) and len(rec) == 10 and rec[0] == kind):
        raise CodecError(
            f"not a windowagg {kind} state of version {STATE_VERSION} (state written "
            "by the object API's own engine, before it ran on the windows engine, cannot "
            "be restored: rebuild it from the events)"
        )
    _, version, name, cfg, max_t, types, closed, counts, rejected, streams = rec
    if version != STATE_VERSION:
        raise CodecError(
            f"{kind} state of version {version!r}, not {STATE_VERSION}: state written "
            "before the object API ran on the engine cannot be restored; rebuild it"
        )
    if name != monoid_name(w._monoid):
        raise CodecError(f"state written for the monoid {name!r}, not {monoid_name(w._monoid)!r}")
    if cfg != config(w):
        raise CodecError(f"state written for {cfg!r}, not {config(w)!r}")
    w._times.dt, w._times.aware = types
    w._closed = bool(closed)
    w._counts = dict(counts)
    w.rejected = [Rejected(*r) for r in rejected]
    w._streams = [
        KeyStream.restore(
            meta,
            pieces,
            w._aggs,
            shape,
            max_out_of_orderness=w._ooo,
            allowed_lateness=w._allowed,
            emit=w._emit,
            deltas=False,
        )
        for (meta, pieces), shape in zip(streams, w._shapes, strict=True)
    ]
    w._schedule.restart(w._streams, max_t, w._counts["accepted"])
    w._set_fast()
