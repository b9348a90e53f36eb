"""One key's stored pieces, read on demand: what a micro-batch reads is what it touches.

=================  ==========================================================================
:class:`Pieces`    a read-through, write-back cache over a key's pieces (integer key ->
                   bytes) in a store: Spark's ``MapState`` (through a ``Mapping`` view), a
                   ``dict``, a KVS. ``get``/``contains`` ask the store once per key and
                   micro-batch; ``put``/``delete`` are kept and handed over as one
                   :class:`~.records.Delta` (:meth:`Pieces.flush`)
reads              counted (:attr:`Pieces.reads`, :attr:`Pieces.read_bytes`): a micro-batch
                   reads the pieces it asks for, never the whole store
undo               :meth:`Pieces.begin` starts a journal of the changes (the first
                   ``put``/``delete`` of a key keeps what the key held), :meth:`Pieces.rollback`
                   puts them back (a micro-batch that raised changes nothing),
                   :meth:`Pieces.commit` drops it: O(changes); journals nest (a step
                   inside a caller's all-or-nothing call: the object API's several sizes)
decoded            pieces are kept decoded (``decode(key, bytes)``), encoded only when put
without a store    (a new in-process stream) the cache is the whole state: a miss is an
                   absent piece, and nothing is counted as read
=================  ==========================================================================

>>> p = Pieces(lambda k, b: b.decode(), {1: b"one", 2: b"two"})
>>> p.get(1), p.get(3), p.contains(2), p.reads
('one', None, True, 3)
>>> p.put(3, "three"); p.delete(1)
>>> p.flush(lambda k, v: v.encode())
({3: b'three'}, (1,))
>>> p.begin(); p.put(2, "TWO"); p.delete(3); p.rollback(); p.get(2), p.get(3)
('two', 'three')
>>> p.begin(); p.begin(); p.put(2, "TWO"); p.commit(); p.rollback(); p.get(2)  # nested
'two'
>>> p.begin(); p.put_many([(5, "five")]); p.delete_many([2]); p.rollback(); p.get(5), p.get(2)
(None, 'two')
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any

__all__ = ["Pieces"]


class Pieces:
    """A key's pieces read through from *store* (a ``Mapping[int, bytes]``; None: a new,
    empty state) and decoded with ``decode(key, bytes)``.

    Reads ask the store at most once per key (then the answer, present or absent, is
    cached); writes stay here until :meth:`flush`.
    """

    __slots__ = (
        "_cache",
        "_decode",
        "_dirty",
        "_gone",
        "_journal",
        "_store",
        "read_bytes",
        "reads",
    )

    def __init__(
        self, decode: Callable[[int, bytes], Any], store: Mapping[int, bytes] | None = None
    ) -> None:
        self._decode = decode
        self._store = store
        self._cache: dict[int, Any] = {}  # key -> decoded piece, or None: absent
        self._dirty: set[int] = set()
        self._gone: set[int] = set()
        # per begin() not yet committed or rolled back (innermost last): the pending sets
        # as they were, and per key changed since, what it held
        self._journal: list[tuple[set[int], set[int], dict[int, tuple[bool, Any]]]] = []
        self.reads = 0
        """Store look-ups (``get`` or ``contains`` of a key not cached yet)."""
        self.read_bytes = 0
        """Bytes the look-ups returned: an 8-byte key each, plus the piece's bytes."""

    def get(self, key: int) -> Any:
        """The decoded piece under *key*, or None. O(1) cached, else one store read."""
        cache = self._cache
        if key in cache:
            return cache[key]
        got = None
        store = self._store
        if store is None:  # the cache is the whole state: a miss is an absent piece
            return None
        raw = store.get(key)
        self.reads += 1
        self.read_bytes += 8
        if raw is not None:
            self.read_bytes += len(raw)
            got = self._decode(key, bytes(raw))
        cache[key] = got
        return got

    def contains(self, key: int) -> bool:
        """Whether a piece is stored under *key* (no value read). O(1) or one store probe."""
        cache = self._cache
        if key in cache:
            return cache[key] is not None
        store = self._store
        if store is None:
            return False
        self.reads += 1
        self.read_bytes += 8
        return key in store

    def _note(self, key: int) -> None:
        """Journal what *key* holds before its first change since each open :meth:`begin`."""
        for _, _, before in self._journal:
            if key not in before:
                cache = self._cache
                before[key] = (key in cache, cache.get(key))

    def begin(self) -> None:
        """Start journalling the changes, for :meth:`rollback` (inside an open journal: a
        nested one, which :meth:`commit` or :meth:`rollback` closes). O(pending changes)."""
        self._journal.append((set(self._dirty), set(self._gone), {}))

    def rollback(self) -> None:
        """Undo every ``put``, ``delete`` and ``flush`` since the innermost open
        :meth:`begin`, and close its journal. O(changes)."""
        if not self._journal:
            return
        dirty, gone, before = self._journal.pop()
        cache = self._cache
        for key, (held, piece) in before.items():
            if held:
                cache[key] = piece
            else:
                cache.pop(key, None)
        self._dirty, self._gone = dirty, gone

    def commit(self) -> None:
        """Keep the changes since the innermost open :meth:`begin` (close its journal; an
        enclosing one still holds what they replaced). O(1)."""
        if self._journal:
            self._journal.pop()

    def put(self, key: int, piece: Any) -> None:
        """Store *piece* (decoded) under *key* at the next :meth:`flush`. O(1)."""
        self._note(key)
        self._cache[key] = piece
        self._dirty.add(key)
        self._gone.discard(key)

    def delete(self, key: int) -> None:
        """Remove the piece under *key* at the next :meth:`flush`. O(1)."""
        self._note(key)
        if self._store is None:  # nothing to mask: forget it
            self._cache.pop(key, None)
        else:
            self._cache[key] = None
        self._dirty.discard(key)
        self._gone.add(key)

    def put_many(self, items: list[tuple[int, Any]]) -> None:
        """:meth:`put` of every (key, piece) of *items*, in order. O(len(items))."""
        journals, cache, dirty, gone = self._journal, self._cache, self._dirty, self._gone
        for key, piece in items:
            for _, _, before in journals:  # as _note
                if key not in before:
                    before[key] = (key in cache, cache.get(key))
            cache[key] = piece
            dirty.add(key)
            gone.discard(key)

    def delete_many(self, keys: list[int]) -> None:
        """:meth:`delete` of every key of *keys*, in order. O(len(keys))."""
        journals, cache, dirty, gone = self._journal, self._cache, self._dirty, self._gone
        keep = self._store is not None  # a store's piece is masked; without one, forgotten
        for key in keys:
            for _, _, before in journals:  # as _note
                if key not in before:
                    before[key] = (key in cache, cache.get(key))
            if keep:
                cache[key] = None
            else:
                cache.pop(key, None)
            dirty.discard(key)
            gone.add(key)

    def flush(
        self,
        encode: Callable[[int, Any], bytes] | None,
        many: Callable[[list[int], list[Any]], list[bytes]] | None = None,
    ) -> tuple[dict[int, bytes], tuple[int, ...]]:
        """The pieces put (encoded, by key) and the keys deleted since the last flush
        (*encode* None: no store takes them, nothing is encoded: ``({}, ())``); *many*,
        if given, encodes all the pieces put in one call (keys ascending, pieces), as
        *encode* would one by one. O(changes)."""
        cache = self._cache
        if encode is None:
            put: dict[int, bytes] = {}
            gone: tuple[int, ...] = ()
        else:
            keys = sorted(self._dirty)
            if many is not None:
                put = dict(zip(keys, many(keys, [cache[k] for k in keys]), strict=True))
            else:
                put = {k: encode(k, cache[k]) for k in keys}
            gone = tuple(sorted(self._gone))
        self._dirty.clear()
        self._gone.clear()
        return put, gone

    def stored(self) -> Iterator[int]:
        """Every stored key (the store's, as changed here), ascending. O(stored)."""
        cache = self._cache
        known = {k for k, v in cache.items() if v is not None}
        if self._store is not None:
            known.update(k for k in self._store if k not in cache)
        return iter(sorted(known))

    def raw(self, key: int, encode: Callable[[int, Any], bytes]) -> bytes:
        """The bytes of the stored piece *key* (as the store holds them, or as a flush
        would write them). O(piece)."""
        if key not in self._cache and self._store is not None:
            return bytes(self._store[key])
        return encode(key, self.get(key))
