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
                   ``-2**63`` its metadata record (:data:`HEAD`: no piece's key), every
                   other position one of its pieces (pane nodes, pane values or event
                   chunks, by the engine's integer piece key: negative for panes before the
                   windows' ``start_time``)
reads              at open: the metadata record and the directory (O(keys)); a key's head
                   when the stream first needs it, its pieces only when the engine asks
                   (:class:`StoredPieces`): a key not in a micro-batch is never read
writes             per commit: the heads and pieces the micro-batches changed, the new
                   directory entries and the metadata record, nothing else
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

from collections.abc import Iterator, Mapping
from typing import Any

from windowagg import codec
from windowagg.errors import ArgumentError, CodecError
from windowagg.storage.base import Key, KVStore
from windowagg.windows.engine.records import HEAD_KEY

__all__ = ["HEAD", "STREAM_LAYOUT", "Pending", "StoredPieces", "StreamStore"]

#: Version of this layout (inside the engine's own ``STATE_VERSION`` and the codec's).
#: Layout 1 kept the head at position -1, where the values of pane -1 (a time just before
#: the windows' ``start_time``) went too: it is refused, not misread.
STREAM_LAYOUT = 2
#: The position of a key's metadata record in its level: the engine's
#: :data:`~windowagg.windows.engine.records.HEAD_KEY`, the one int64 no piece key takes
HEAD = HEAD_KEY


class StoredPieces(Mapping[int, bytes]):
    """Key *level*'s pieces in *store* as a read-only ``Mapping[int, bytes]``: ``get`` is one
    store read, iteration one listing of the level (the head left out). The engine's
    :class:`~windowagg.windows.engine.pieces.Pieces` reads through it on demand."""

    __slots__ = ("_level", "_ns", "_store")

    def __init__(self, store: KVStore, ns: str, level: int) -> None:
        self._store, self._ns, self._level = store, ns, level

    def get(self, key: int, default: Any = None) -> Any:
        got = self._store.get(self._ns, (self._level, int(key))) if key != HEAD else None
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
        return iter([p for p in self._store.positions(self._ns, self._level) if p != HEAD])

    def __len__(self) -> int:
        return sum(1 for _ in self)


class Pending:
    """Changes not committed yet: per store key the bytes to put (None: to delete), the
    new directory entries, by key id. Several micro-batches merge here (their net
    changes) when the caller commits after them. O(changes)."""

    __slots__ = ("changes", "keys")

    def __init__(self) -> None:
        self.changes: dict[Key, bytes | None] = {}
        self.keys: dict[int, tuple[Any, ...]] = {}

    def __bool__(self) -> bool:
        return bool(self.changes or self.keys)

    def new_key(self, key: tuple[Any, ...], kid: int) -> None:
        """Key *kid* is new: its directory entry goes with the next commit."""
        self.keys[kid] = key

    def key_delta(
        self, kid: int, meta: bytes, put: Mapping[int, bytes], delete: tuple[int, ...]
    ) -> None:
        """Key *kid*'s :class:`~windowagg.windows.engine.stream.Delta`. O(changes)."""
        level = kid + 1
        changes = self.changes
        if HEAD in put or HEAD in delete:
            raise CodecError(
                f"key {kid}: a piece under position {HEAD}, the head's: the engine's piece keys "
                "never take it; this state is corrupted, start a new namespace"
            )
        for k in delete:
            changes[(level, k)] = None
        for k, v in put.items():
            changes[(level, k)] = v
        changes[(level, HEAD)] = meta

    def merged(self, later: Pending) -> Pending:
        """A new :class:`Pending`: these changes, then *later*'s. O(changes)."""
        out = Pending()
        out.changes = {**self.changes, **later.changes}
        out.keys = {**self.keys, **later.keys}
        return out


class StreamStore:
    """A stream's namespace in *store* (see the module docstring): opened, checked against
    *config* and its directory read at construction (O(keys)). *older*: the configuration
    an earlier windowagg wrote for the same call, and why it cannot be read (the error
    says so rather than "another configuration")."""

    __slots__ = ("batches", "config", "keys", "ns", "store", "token")

    def __init__(
        self,
        store: KVStore,
        ns: str,
        config: tuple[Any, ...],
        older: tuple[tuple[Any, ...], str] | None = None,
    ) -> None:
        self.store, self.ns, self.config = store, ns, config
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
        return StoredPieces(self.store, self.ns, kid + 1)

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
        for (level, pos), v in pending.changes.items():
            if v is None:
                dels.append((level, pos, pos + 1))
            else:
                puts.append(((level, pos), v))
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
        self.token = token
        self.batches += 1
