"""One key's ``transformWithStateInPandas`` state as rows of one ``MapState``, in few round trips.

Every state call of a TWS operator is one round trip over the Python worker's socket to the
state server (PySpark 4.3: ``getValue``, ``updateValue``, ``removeKey`` one call each; a
scan one call per fetched batch of rows; no batched put), and those round trips, not the
bytes, were half of the operator's time per key (issue 28's profile). So a key's state is
laid out to be read and written in as few calls as the layout allows.

=================  ==========================================================================
rows               one ``MapState`` (``bigint`` -> ``binary``): the engine's pieces under
                   their own keys, and the *head* under :data:`HEAD_KEY` (no piece's key):
                   ``codec`` bytes of ``(TWS_LAYOUT, meta, {key: piece})``, the metadata
                   record and the pieces kept *inline*
inline pieces      the event log (it reads every piece each micro-batch) keeps the pieces in
                   the head while they hold at most :data:`INLINE` x the bytes the
                   micro-batch puts; beyond that the oldest move to rows of their own (each
                   piece at most once): a micro-batch reads the key in **one scan** and
                   writes it in **one** ``updateValue`` in the common case, and writes at
                   most ``INLINE`` x its new pieces' bytes (plus the pieces moved out).
                   So are the layouts that re-read most of their pieces anyway (the pane
                   layout with exact quantiles: its cursor's window values). A layout read
                   on demand (the pane tree of monoids, the history fold:
                   ``KeyStream.on_demand``) reads its pieces one by one where the
                   micro-batch touches them: its head holds only the metadata
                   (``getValue``), its pieces are rows
round trips        per key and micro-batch: scanned 1 scan + 1 ``updateValue`` (+1 per
                   piece moved out or removed from a row); on demand 1 ``getValue`` + 1
                   per piece read, put or removed + 1 ``updateValue`` of the head
versions           ``TWS_LAYOUT`` 2; layout 1 (windowagg before 2026-11-28: the metadata in a
                   ``ValueState`` "meta", every piece a row) is read, and rewritten as
                   layout 2 by the key's next write (the ``ValueState`` cleared then); a
                   head of another layout raises ``CodecError`` naming it
=================  ==========================================================================

>>> from windowagg.windows.engine.records import Delta
>>> class Fake:  # a MapState/ValueState standing in for Spark's, counting round trips
...     def __init__(self): self.rows, self.calls = {}, 0
...     def iterator(self): self.calls += 1; return iter(list(self.rows.items()))
...     def getValue(self, k): self.calls += 1; return self.rows.get(k)
...     def updateValue(self, k, v): self.calls += 1; self.rows[k] = v
...     def removeKey(self, k): self.calls += 1; self.rows.pop(k, None)
...     def get(self): self.calls += 1; return None
>>> m, v = Fake(), Fake()
>>> s = KeyRows(m, v, scan=True)  # a new key: a scan, then the old layout's ValueState
>>> s.meta, dict(s.pieces), m.calls + v.calls
(None, {}, 2)
>>> s.store([Delta(b"meta", {0: b"events 0"})]); sorted(m.rows)  # the head row only
[(-9223372036854775808,)]
>>> m.calls = v.calls = 0
>>> s = KeyRows(m, v, scan=True); s.meta, dict(s.pieces)
(b'meta', {0: b'events 0'})
>>> s.store([Delta(b"meta2", {1: b"events 1"}, (0,))]); m.calls + v.calls  # scan, write
2
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from windowagg import codec
from windowagg.errors import CodecError
from windowagg.windows.engine.records import HEAD_KEY, Delta

__all__ = [
    "HEAD_KEY",
    "INLINE",
    "TWS_LAYOUT",
    "KeyRows",
    "MapStateView",
    "decode_head",
    "key_state",
]

#: Version of the rows' layout (inside the engine's ``STATE_VERSION`` and the codec's own)
TWS_LAYOUT = 2
#: The event log's inline pieces hold at most this many times the bytes a micro-batch puts
INLINE = 16


def decode_head(raw: bytes) -> tuple[bytes, dict[int, bytes]]:
    """The metadata record and the inline pieces of a head row's bytes. O(head).

    Raises ``CodecError`` for a head of another layout (it names both layouts).
    """
    with codec.decoding("a windowagg transformWithStateInPandas state"):
        rec = codec.loads(raw)
    if not (isinstance(rec, tuple) and len(rec) == 3 and rec[0] == TWS_LAYOUT):
        found = rec[0] if isinstance(rec, tuple) and rec else type(rec).__name__
        raise CodecError(
            f"not a windowagg transformWithStateInPandas state of layout {TWS_LAYOUT} (its "
            f"head row holds layout {found!r}): clear the query's checkpoint or run the "
            "windowagg version that wrote it"
        )
    _, meta, inline = rec
    if not (isinstance(meta, bytes) and isinstance(inline, dict)):
        raise CodecError(
            "a windowagg transformWithStateInPandas head row without its metadata and pieces: "
            "clear the query's checkpoint"
        )
    if all(type(k) is int for k in inline) and all(type(v) is bytes for v in inline.values()):
        return meta, inline  # as decoded (one pass each instead of a new dict)
    return meta, {int(k): bytes(v) for k, v in inline.items()}


def key_state(rows: Mapping[int, bytes]) -> tuple[bytes | None, dict[int, bytes]]:
    """A key's metadata record (None: no head row) and every piece, inline or in a row of
    its own, from its rows by key (as Spark's state reader shows them:
    ``spark.read.format("statestore").option("stateVarName", "pieces")``). O(rows)."""
    pieces = {int(k): bytes(v) for k, v in rows.items() if k != HEAD_KEY}
    if HEAD_KEY not in rows:
        return None, pieces
    meta, inline = decode_head(bytes(rows[HEAD_KEY]))
    pieces.update(inline)
    return meta, pieces


class MapStateView(Mapping[int, bytes]):
    """A ``MapState`` of pieces (``bigint`` -> ``binary``) as a read-only
    ``Mapping[int, bytes]`` over the pieces only (the head row is left out), with the
    head's *inline* pieces in front: ``get``/``[]`` is one ``getValue`` (none for an inline
    piece), ``in`` one ``containsKey``, iteration one ``keys()`` scan. The engine's
    :class:`~windowagg.windows.engine.pieces.Pieces` reads through it on demand."""

    __slots__ = ("_inline", "_state")

    def __init__(self, state: Any, inline: Mapping[int, bytes] | None = None) -> None:
        self._state = state
        self._inline: Mapping[int, bytes] = {} if inline is None else inline

    def get(self, key: int, default: Any = None) -> Any:
        if key in self._inline:
            return self._inline[key]
        if key == HEAD_KEY:
            return default
        got = self._state.getValue((int(key),))
        return default if got is None else bytes(got[0])

    def __getitem__(self, key: int) -> bytes:
        got = self.get(key)
        if got is None:
            raise KeyError(key)
        out: bytes = got
        return out

    def __contains__(self, key: object) -> bool:
        if key in self._inline:
            return True
        return isinstance(key, int) and key != HEAD_KEY and bool(self._state.containsKey((key,)))

    def __iter__(self) -> Iterator[int]:
        scan = self._state.keys()  # MapState.keys(): an iterator of key tuples
        rows = (int(k[0]) for k in scan)
        inline = self._inline
        yield from inline
        yield from (k for k in rows if k != HEAD_KEY and k not in inline)

    def __len__(self) -> int:
        return sum(1 for _ in iter(self))


class KeyRows:
    """One key's state rows for one micro-batch: read once at construction, written by
    :meth:`store` (see the module docstring).

    *pieces* is a ``MapState`` (``bigint`` -> ``binary``), *legacy* the layout-1
    ``ValueState`` of the metadata (read only when the key has no head row). ``scan=True``
    (the event log; panes with exact quantiles) reads every row in one scan and keeps
    pieces inline; ``scan=False`` (a layout read on demand: the pane tree of monoids, the
    history fold) reads the head with one ``getValue`` and the pieces on demand
    (:attr:`pieces` is then a :class:`MapStateView`).
    """

    __slots__ = ("_inline", "_legacy", "_rows", "_scan", "_spilled", "_state", "meta", "pieces")

    def __init__(self, pieces: Any, legacy: Any, *, scan: bool) -> None:
        self._state = pieces
        self._legacy: Any = None
        self._scan = scan
        head: bytes | None
        rows: dict[int, bytes] = {}
        if scan:
            rows = {int(k[0]): bytes(v[0]) for k, v in pieces.iterator()}
            head = rows.pop(HEAD_KEY, None)
        else:
            got = pieces.getValue((HEAD_KEY,))
            head = None if got is None else bytes(got[0])
        #: the metadata record (None: a new key)
        self.meta: bytes | None = None
        self._inline: dict[int, bytes] = {}
        if head is not None:
            self.meta, self._inline = decode_head(head)
        else:  # no head: a new key, or a layout-1 state (its metadata in the ValueState)
            old = legacy.get()
            if old is not None:
                self.meta = bytes(old[0])
                self._legacy = legacy
        #: the keys with a row of their own (event log: known from the scan; panes: None)
        self._spilled: set[int] | None = set(rows) if scan else None
        #: the key's pieces by key: inline and in rows
        self.pieces: Mapping[int, bytes]
        if scan:
            rows.update(self._inline)
            self.pieces = rows
        else:
            self.pieces = MapStateView(pieces, self._inline)

    def store(self, deltas: Sequence[Delta]) -> None:
        """Write *deltas* (several: a timer's advance, then the rows; their net changes):
        remove and put the pieces they name, the head last. No deltas: nothing written.
        O(changes + inline pieces), one ``updateValue`` for the head plus one call per
        piece removed from or written to a row of its own."""
        if not deltas:
            return
        put: dict[int, bytes] = {}
        gone: set[int] = set()
        for d in deltas:
            for k in d.delete:
                put.pop(k, None)
                gone.add(k)
            put.update(d.put)
            gone.difference_update(d.put)
        state, inline, spilled = self._state, self._inline, self._spilled
        for k in sorted(gone):
            inline.pop(k, None)
            if spilled is None or k in spilled:
                state.removeKey((k,))
                if spilled is not None:
                    spilled.discard(k)
        new = 0
        for k, v in put.items():
            if spilled is None or k in spilled:  # panes, or a piece with a row already
                state.updateValue((k,), (v,))
                inline.pop(k, None)
            else:
                inline[k] = v
                new += len(v)
        held = sum(map(len, inline.values())) if new and spilled is not None else 0
        if held > INLINE * new:  # the oldest inline pieces beyond the budget: out
            assert spilled is not None
            for k in sorted(inline):
                if held <= INLINE * new:
                    break
                v = inline.pop(k)
                state.updateValue((k,), (v,))
                spilled.add(k)
                held -= len(v)
        meta = deltas[-1].meta
        state.updateValue((HEAD_KEY,), (codec.dumps((TWS_LAYOUT, meta, dict(inline))),))
        self.meta = meta
        if self._legacy is not None:  # layout 1 -> 2: the ValueState goes
            self._legacy.clear()
            self._legacy = None

    def clear(self) -> None:
        """Drop the key's state (every row; a layout-1 ``ValueState`` too)."""
        self._state.clear()
        if self._legacy is not None:
            self._legacy.clear()
            self._legacy = None
        self._inline.clear()
        self.meta = None
