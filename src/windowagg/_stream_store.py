"""The state of :func:`windowagg.stream` in a key-value store: every key in one namespace.

=================  ==========================================================================
namespace          one per stream (``namespace=``, default ``"windowagg.stream"``): one
                   atomic :meth:`~windowagg.storage.KVStore.commit` writes every key's
                   changes of a micro-batch and the checkpoint token together
metadata record    ``codec`` bytes of ``(STREAM_LAYOUT, config, token, keys, batches)``:
                   the call's configuration (checked when a stream opens the namespace),
                   the caller's checkpoint token of the last committed micro-batch, how
                   many keys the directory holds, how many micro-batches were committed
level 0            the key directory: position *i* holds the codec bytes of key *i*'s
                   values (a tuple of plain values), written once, when the key is new
level *i* + 1      key *i*'s :class:`~windowagg.windows.engine.KeyStream` state: position
                   ``-2**63`` its metadata record (:data:`HEAD`: no piece's key, no row's),
                   every other position one *row* of its pieces (pane nodes, pane values
                   or event chunks, by the engine's integer piece key: negative for panes
                   before the windows' ``start_time``). The layout groups its pieces into
                   rows (``KeyStream.store_rows``: the pane layout one row per 32 panes,
                   the others one row per piece), so that a micro-batch writes a few rows
                   per key rather than one per piece. A row is the codec bytes of three
                   buffers: its piece keys (int64, ascending), their lengths (int64) and
                   the pieces' bytes end to end
reads              at open: the metadata record and the directory (O(keys)); a key's head
                   when the stream first needs it, a row of its pieces only when the engine
                   asks for a piece in it (:class:`StoredPieces`): a key not in a
                   micro-batch is never read. Rows read or written stay in memory (the
                   bytes of the touched keys' state)
writes             per commit: the heads and rows the micro-batches changed (a row is
                   rewritten whole), the new directory entries and the metadata record,
                   nothing else
=================  ==========================================================================

>>> from windowagg.storage import MemoryStore
>>> s = StreamStore(MemoryStore(), "ns", ("cfg",))
>>> s.token, s.batches, s.keys
(None, 0, {})
>>> p = Pending(); p.new_key(("a",), 0); p.key_delta(0, b"head", {0: b"p0"}, ())
>>> s.commit(p, token=7); s.token, s.batches
(7, 1)
>>> again = StreamStore(s.store, "ns", ("cfg",)); again.keys, again.token, again.head(0)
({('a',): 0}, 7, b'head')
>>> dict(again.pieces(0))
{0: b'p0'}
>>> StreamStore(s.store, "ns", ("other",))  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
windowagg.errors.CodecError: the store's namespace 'ns' holds a windowagg stream of another configuration...
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any

import numpy as np

from windowagg import codec
from windowagg.errors import ArgumentError, CodecError
from windowagg.storage.base import Key, KVStore
from windowagg.windows.engine.records import HEAD_KEY

__all__ = [
    "HEAD",
    "STREAM_LAYOUT",
    "Pending",
    "StoredPieces",
    "StreamStore",
    "decode_row",
    "encode_row",
]

#: Version of this layout (inside the engine's own ``STATE_VERSION`` and the codec's).
#: Layout 1 kept the head at position -1, where the values of pane -1 (a time just before
#: the windows' ``start_time``) went too; layout 2 kept one position per piece (no rows):
#: both are refused, not misread.
STREAM_LAYOUT = 3
#: The position of a key's metadata record in its level: the engine's
#: :data:`~windowagg.windows.engine.records.HEAD_KEY`, the one int64 no piece key takes
HEAD = HEAD_KEY

#: Maps piece keys (int64 array) to their rows (``KeyStream.store_rows``).
RowsOf = Callable[[np.ndarray], np.ndarray]


def _one_per_row(keys: np.ndarray) -> np.ndarray:
    return np.asarray(keys, dtype=np.int64)


def encode_row(pieces: Mapping[int, bytes]) -> bytes:
    """A row's bytes: codec bytes of (keys, lengths, pieces end to end). O(row bytes).

    >>> decode_row(encode_row({7: b"ab", 3: b"c"}), 7, _one_per_row, "row")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    windowagg.errors.CodecError: row: piece 3 is not one of row 7's...
    >>> decode_row(encode_row({3: b"c", 4: b""}), 0, lambda k: k // 8, "row")
    {3: b'c', 4: b''}
    """
    keys = sorted(pieces)
    parts = [pieces[k] for k in keys]
    return codec.dumps(
        (
            np.asarray(keys, dtype="<i8").tobytes(),
            np.fromiter(map(len, parts), dtype="<i8", count=len(parts)).tobytes(),
            b"".join(parts),
        )
    )


def decode_row(data: bytes, row: int, rows_of: RowsOf, where: str) -> dict[int, bytes]:
    """The pieces of row *row* from :func:`encode_row`'s bytes, checked (keys ascending,
    of this row, not the head's position; lengths adding up): ``CodecError`` naming
    *where* otherwise. O(row bytes)."""
    try:
        rec = codec.loads(data)
    except CodecError as e:
        raise CodecError(
            f"{where}: {e}; drop the namespace (store.drop_namespace) to start over"
        ) from e
    if not (
        isinstance(rec, tuple)
        and len(rec) == 3
        and all(isinstance(x, bytes) for x in rec)
        and rec[0]
        and len(rec[0]) % 8 == 0
        and len(rec[1]) == len(rec[0])
    ):
        raise CodecError(
            f"{where}: not a row of windowagg stream pieces (three buffers: keys, lengths, "
            "bytes): the store was changed outside windowagg or is corrupted; drop the "
            "namespace (store.drop_namespace) to start over"
        )
    keys = np.frombuffer(rec[0], dtype="<i8").astype(np.int64)
    lens = np.frombuffer(rec[1], dtype="<i8").astype(np.int64)
    blob = rec[2]
    bad = ""
    if ((lens < 0) | (lens > len(blob))).any() or int(lens.sum()) != len(blob):
        bad = f"lengths that do not add up to its {len(blob)} bytes"
    elif (np.diff(keys) <= 0).any():
        bad = "piece keys that are not strictly ascending"
    elif (keys == HEAD).any():
        bad = f"a piece under position {HEAD}, the head's"
    else:
        wrong = np.flatnonzero(rows_of(keys) != row)
        if len(wrong):
            bad = f"piece {int(keys[wrong[0]])} is not one of row {row}'s"
    if bad:
        raise CodecError(
            f"{where}: {bad}: the store was changed outside windowagg or is corrupted; drop "
            "the namespace (store.drop_namespace) to start over"
        )
    ends = np.cumsum(lens).tolist()
    starts = [0, *ends[:-1]]
    return {k: blob[a:b] for k, a, b in zip(keys.tolist(), starts, ends, strict=True)}


class StoredPieces(Mapping[int, bytes]):
    """Key *kid*'s pieces in *stream*'s store as a read-only ``Mapping[int, bytes]``: ``get``
    reads the piece's row once (:meth:`StreamStore.row`), iteration every row of the key.
    The engine's :class:`~windowagg.windows.engine.pieces.Pieces` reads through it on
    demand."""

    __slots__ = ("_kid", "_stream")

    def __init__(self, stream: StreamStore, kid: int) -> None:
        self._stream, self._kid = stream, kid

    def get(self, key: int, default: Any = None) -> Any:
        if key == HEAD:
            return default
        st = self._stream
        row = int(st.rows_of(np.array([key], dtype=np.int64))[0])
        got = st.row(self._kid, row).get(int(key))
        return default if got is None else got

    def __getitem__(self, key: int) -> bytes:
        got = self.get(key)
        if got is None:
            raise KeyError(key)
        out: bytes = got
        return out

    def __contains__(self, key: object) -> bool:
        return isinstance(key, int) and self.get(key) is not None

    def __iter__(self) -> Iterator[int]:
        st, kid = self._stream, self._kid
        rows = [r for r in st.store.positions(st.ns, kid + 1) if r != HEAD]
        return iter(sorted(k for r in rows for k in st.row(kid, r)))

    def __len__(self) -> int:
        return sum(1 for _ in self)


class Pending:
    """Changes not committed yet: per key id its head and its pieces' bytes to put (None:
    to delete), and the new directory entries. Several micro-batches merge here (their
    net changes) when the caller commits after them. O(changes)."""

    __slots__ = ("heads", "keys", "pieces")

    def __init__(self) -> None:
        self.heads: dict[int, bytes] = {}
        self.pieces: dict[int, dict[int, bytes | None]] = {}
        self.keys: dict[int, tuple[Any, ...]] = {}

    def __bool__(self) -> bool:
        return bool(self.heads or self.keys)

    def new_key(self, key: tuple[Any, ...], kid: int) -> None:
        """Key *kid* is new: its directory entry goes with the next commit."""
        self.keys[kid] = key

    def key_delta(
        self, kid: int, meta: bytes, put: Mapping[int, bytes], delete: tuple[int, ...]
    ) -> None:
        """Key *kid*'s :class:`~windowagg.windows.engine.stream.Delta`. O(changes)."""
        if HEAD in put or HEAD in delete:
            raise CodecError(
                f"key {kid}: a piece under position {HEAD}, the head's: the engine's piece keys "
                "never take it; this state is corrupted, start a new namespace"
            )
        changes = self.pieces.get(kid)
        if changes is None:
            changes = self.pieces[kid] = {}
        if delete:
            changes.update(dict.fromkeys(delete))
        changes.update(put)
        self.heads[kid] = meta

    def merged(self, later: Pending) -> Pending:
        """A new :class:`Pending`: these changes, then *later*'s. O(changes)."""
        out = Pending()
        out.heads = {**self.heads, **later.heads}
        out.pieces = {kid: dict(ch) for kid, ch in self.pieces.items()}
        for kid, ch in later.pieces.items():
            out.pieces.setdefault(kid, {}).update(ch)
        out.keys = {**self.keys, **later.keys}
        return out


class StreamStore:
    """A stream's namespace in *store* (see the module docstring): opened, checked against
    *config* and its directory read at construction (O(keys)). *older*: the configuration
    an earlier windowagg wrote for the same call, and why it cannot be read (the error
    says so rather than "another configuration"). *rows_of*: the layout's grouping of
    piece keys into rows (``KeyStream.store_rows``; None: one row per piece)."""

    __slots__ = ("_known", "_rows", "batches", "config", "keys", "ns", "rows_of", "store", "token")

    def __init__(
        self,
        store: KVStore,
        ns: str,
        config: tuple[Any, ...],
        older: tuple[tuple[Any, ...], str] | None = None,
        rows_of: RowsOf | None = None,
    ) -> None:
        self.store, self.ns, self.config = store, ns, config
        self.rows_of: RowsOf = rows_of or _one_per_row
        #: per key id, the rows read or written (row -> piece key -> bytes)
        self._rows: dict[int, dict[int, dict[int, bytes]]] = {}
        #: key ids new since the namespace was opened: every row of theirs is in _rows
        self._known: set[int] = set()
        #: the caller's token of the last committed micro-batch (None: none yet)
        self.token: Any = None
        #: micro-batches (and advances) committed
        self.batches = 0
        #: key values -> key id, for every key in the directory
        self.keys: dict[tuple[Any, ...], int] = {}
        raw = store.get_meta(ns)
        if raw is None:
            return
        with codec.decoding(f"the windowagg stream state in namespace {ns!r}"):
            rec = codec.loads(raw)
        if not (isinstance(rec, tuple) and len(rec) == 5 and rec[0] == STREAM_LAYOUT):
            raise CodecError(
                f"the store's namespace {ns!r} does not hold a windowagg stream of layout "
                f"{STREAM_LAYOUT}: give stream() another namespace, or drop this one "
                "(store.drop_namespace) to start over"
            )
        _, stored, token, n, batches = rec
        if older is not None and stored == older[0]:  # this call, by an earlier windowagg
            raise CodecError(
                f"the store's namespace {ns!r} {older[1]}: drop it (store.drop_namespace) "
                "and replay the source from the start, or give stream() another namespace"
            )
        if stored != config:
            raise CodecError(
                f"the store's namespace {ns!r} holds a windowagg stream of another "
                f"configuration ({stored!r}, not {config!r}): give stream() another "
                "namespace or store for a changed call, or drop this one "
                "(store.drop_namespace) to start over"
            )
        self.token, self.batches = token, int(batches)
        raws = store.multi_get(ns, [(0, i) for i in range(int(n))])
        for i, b in enumerate(raws):
            if b is None:
                raise CodecError(
                    f"the windowagg stream in namespace {ns!r} lacks the directory entry of "
                    f"key {i} of {n}: the store was changed outside windowagg; drop the "
                    "namespace (store.drop_namespace) to start over"
                )
            with codec.decoding(f"key {i} of the windowagg stream in namespace {ns!r}"):
                key = codec.loads(b)
            self.keys[tuple(key)] = i

    def head(self, kid: int) -> bytes | None:
        """Key *kid*'s metadata record (one read). O(1) round trips."""
        return self.store.get(self.ns, (kid + 1, HEAD))

    def pieces(self, kid: int) -> StoredPieces:
        """Key *kid*'s pieces, read on demand. O(1)."""
        return StoredPieces(self, kid)

    def row(self, kid: int, row: int) -> dict[int, bytes]:
        """Key *kid*'s row *row* (piece key -> bytes; empty: no such row), read from the
        store once, then kept. Do not change the returned mapping. O(row bytes)."""
        got = self._rows.get(kid, {}).get(row)
        if got is None:
            raw = None if kid in self._known else self.store.get(self.ns, (kid + 1, row))
            got = self._keep(kid, row, raw)
        return got

    def _keep(self, kid: int, row: int, raw: bytes | None) -> dict[int, bytes]:
        """Key *kid*'s row *row* as read from the store (None: absent), decoded and kept."""
        got = {} if raw is None else decode_row(
            raw, row, self.rows_of, f"row {row} of key {kid} of the windowagg stream in "
            f"namespace {self.ns!r}"
        )  # fmt: skip
        self._rows.setdefault(kid, {})[row] = got
        return got

    def _rows_changed(
        self,
        pending: Pending,
        puts: list[tuple[Key, bytes]],
        dels: list[tuple[int, int, int]],
    ) -> list[tuple[int, int, dict[int, bytes]]]:
        """Fold *pending*'s piece changes into their rows: the heads and the changed rows
        go to *puts*, rows left empty to *dels*; returns each changed row's new pieces
        (kept once the commit succeeded). Rows not in memory are read first, one
        round trip for all of them. O(changed rows' bytes)."""
        puts.extend(((kid + 1, HEAD), head) for kid, head in pending.heads.items())
        new_kids = pending.keys
        plans: list[tuple[int, list[int], dict[int, bytes | None]]] = []
        unread: list[Key] = []
        for kid, changes in pending.pieces.items():
            if not changes:
                continue
            rs = self.rows_of(np.fromiter(changes, dtype=np.int64, count=len(changes))).tolist()
            plans.append((kid, rs, changes))
            if kid in self._known or kid in new_kids:
                continue
            held = self._rows.get(kid, {})
            unread.extend((kid + 1, r) for r in dict.fromkeys(rs) if r not in held)
        if unread:
            for (level, r), raw in zip(unread, self.store.multi_get(self.ns, unread), strict=True):
                self._keep(level - 1, r, raw)
        out: list[tuple[int, int, dict[int, bytes]]] = []
        for kid, rs, changes in plans:
            held = self._rows.get(kid, {})
            touched: dict[int, dict[int, bytes]] = {}
            for r, (pos, v) in zip(rs, changes.items(), strict=True):
                row = touched.get(r)
                if row is None:
                    row = touched[r] = dict(held.get(r, ()))
                if v is None:
                    row.pop(pos, None)
                else:
                    row[pos] = v
            level = kid + 1
            for r, row in touched.items():
                if row:
                    puts.append(((level, r), encode_row(row)))
                else:
                    dels.append((level, r, r + 1))
                out.append((kid, r, row))
        return out

    def commit(self, pending: Pending, token: Any) -> None:
        """Write *pending* and the metadata record (*token*, one more batch) in one atomic
        commit. Raises ``ArgumentError`` for a key or token the codec cannot write, the
        store's ``StorageError`` when it fails; nothing is written then. O(changes)."""
        puts: list[tuple[Key, bytes]] = []
        dels: list[tuple[int, int, int]] = []
        for kid, key in pending.keys.items():
            try:
                puts.append(((0, kid), codec.dumps(key)))
            except CodecError as e:
                raise ArgumentError(
                    f"key {key!r} cannot be written to the store ({e}): use key columns of "
                    "text, integers, floats, booleans, bytes or datetimes"
                ) from None
        rows = self._rows_changed(pending, puts, dels)
        n = max([len(self.keys), *[kid + 1 for kid in pending.keys]])
        try:
            meta = codec.dumps((STREAM_LAYOUT, self.config, token, n, self.batches + 1))
        except CodecError as e:
            raise ArgumentError(
                f"checkpoint token {token!r} cannot be written to the store ({e}): give an "
                "int, str, float, bytes, or a tuple of them (e.g. a source offset)"
            ) from None
        self.store.commit(self.ns, puts, dels, meta)
        for kid, key in pending.keys.items():
            self.keys[key] = kid
            self._known.add(kid)
        for kid, r, pieces in rows:
            held = self._rows.setdefault(kid, {})
            if pieces or kid not in self._known:
                held[r] = pieces
            else:
                held.pop(r, None)
        self.token = token
        self.batches += 1
