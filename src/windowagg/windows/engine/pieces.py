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

from collections import deque
from collections.abc import Callable, Iterator, Mapping
from itertools import compress, repeat
from operator import is_, is_not
from typing import Any, cast

__all__ = ["Pieces"]

#: :meth:`Pieces.begin` copies a cache of at most this many times the keys the last flush
#: put or deleted (a step changes about as many): the copy then costs about as much as
#: noting the changes one by one, in one C-level pass.
_SNAPSHOT = 8

#: What a journal keeps for a key that was absent from the cache before its first change.
_UNCACHED = object()


class Pieces:
    """A key's pieces read through from *store* (a ``Mapping[int, bytes]``; None: a new,
    empty state) and decoded with ``decode(key, bytes)``.

    Reads ask the store at most once per key (then the answer, present or absent, is
    cached); writes stay here until :meth:`flush`.
    """

    __slots__ = (
        "_cache",
        "_churn",
        "_decode",
        "_decode_many",
        "_dirty",
        "_gone",
        "_journal",
        "_noting",
        "_store",
        "read_bytes",
        "reads",
    )

    def __init__(
        self,
        decode: Callable[[int, bytes], Any],
        store: Mapping[int, bytes] | None = None,
        decode_many: Callable[[list[int], list[bytes]], list[Any]] | None = None,
    ) -> None:
        self._decode = decode
        #: decodes several pieces in one call (keys, their bytes), as *decode* would one by
        #: one (the same pieces, the same error for a bad one): :meth:`get_many`'s misses
        self._decode_many = decode_many
        self._store = store
        self._cache: dict[int, Any] = {}  # key -> decoded piece, or None: absent
        self._dirty: set[int] = set()
        self._gone: set[int] = set()
        # per begin() not yet committed or rolled back (innermost last): the pending sets
        # as they were, and either per key changed since, what the cache held (_UNCACHED:
        # nothing), or a copy of the whole cache (see begin)
        self._journal: list[tuple[set[int], set[int], dict[int, Any] | None, Any]] = []
        self._noting: list[dict[int, Any]] = []  # the open per-key journals, innermost last
        self._churn = 0  # keys put or deleted by the last flush
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

    @property
    def in_memory(self) -> bool:
        """Whether the cache is the whole state (no store behind it). O(1)."""
        return self._store is None

    def cached(self) -> int:
        """How many keys the cache holds (without a store: the pieces stored). O(1)."""
        return len(self._cache)

    def stored_among(self, keys: list[int]) -> list[int]:
        """The keys of *keys* under which a piece is stored, in order: without a store one
        pass over the cache (no Python step per key), else :meth:`contains` of each.
        O(len(keys))."""
        if self._store is None:  # the cache holds exactly the stored pieces
            return list(filter(self._cache.__contains__, keys))
        contains = self.contains
        return [k for k in keys if contains(k)]

    def _note(self, key: int) -> None:
        """Journal what *key* holds before its first change since each open :meth:`begin`."""
        for before in self._noting:
            if key not in before:
                before[key] = self._cache.get(key, _UNCACHED)

    def begin(self) -> None:
        """Start journalling the changes, for :meth:`rollback` (inside an open journal: a
        nested one, which :meth:`commit` or :meth:`rollback` closes). With a cache no larger
        than :data:`_SNAPSHOT` times the last flush's changes (a state just restored from a
        store: an empty one), the journal is one copy of the cache (one C-level pass,
        instead of a note per key changed; over a store, a rollback then forgets the
        reads since too, which the next look-up reads again); else the keys are noted as
        they change. O(pending changes), amortized
        O(changes) for a copy."""
        dirty, gone = set(self._dirty), set(self._gone)
        if len(self._cache) <= _SNAPSHOT * max(self._churn, 1):
            self._journal.append((dirty, gone, None, self._cache.copy()))
        else:
            before: dict[int, Any] = {}
            self._journal.append((dirty, gone, before, None))
            self._noting.append(before)

    def rollback(self) -> None:
        """Undo every ``put``, ``delete`` and ``flush`` since the innermost open
        :meth:`begin`, and close its journal. O(changes)."""
        if not self._journal:
            return
        dirty, gone, before, copy = self._journal.pop()
        if before is None:
            self._cache = copy
        else:
            self._noting.pop()
            cache = self._cache
            for key, piece in before.items():
                if piece is _UNCACHED:
                    cache.pop(key, None)
                else:
                    cache[key] = piece
        self._dirty, self._gone = dirty, gone

    def commit(self) -> None:
        """Keep the changes since the innermost open :meth:`begin` (close its journal; an
        enclosing one still holds what they replaced). O(1)."""
        if self._journal and self._journal.pop()[2] is not None:
            self._noting.pop()

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
        """:meth:`put` of every (key, piece) of *items*, in order. O(len(items)), in set
        and dict operations (no Python step per item: a micro-batch puts hundreds)."""
        keys = [k for k, _ in items]
        self._journal_many(keys)
        self._cache.update(items)
        self._dirty.update(keys)
        self._gone.difference_update(keys)

    def delete_many(self, keys: list[int]) -> None:
        """:meth:`delete` of every key of *keys*, in order. O(len(keys)), as :meth:`put_many`."""
        if not keys:
            return
        self._journal_many(keys)
        cache = self._cache
        if self._store is not None:  # a store's piece is masked; without one, forgotten
            cache.update(zip(keys, repeat(None)))
        else:  # one C-level pass (a micro-batch drops hundreds)
            deque(map(cache.pop, keys, repeat(None)), maxlen=0)
        self._dirty.difference_update(keys)
        self._gone.update(keys)

    def _journal_many(self, keys: list[int]) -> None:
        """:meth:`_note` of every key of *keys*. O(len(keys))."""
        get = self._cache.get
        for before in self._noting:
            new = set(keys).difference(before)
            before.update(zip(new, map(get, new, repeat(_UNCACHED)), strict=True))

    def get_many(self, keys: list[int]) -> list[Any]:
        """:meth:`get` of every key of *keys* (repeats allowed), in order. O(len(keys)): the
        cached ones in one dict pass, the others one store read each, decoded together
        when the pieces have a ``decode_many`` (one call: a restored state's micro-batch
        reads tens of pieces per key)."""
        cache = self._cache
        store = self._store
        if store is None:  # the cache is the whole state: a miss is an absent piece
            return list(map(cache.get, keys))
        got = list(map(cache.get, keys, repeat(_UNCACHED)))
        if not any(map(is_, got, repeat(_UNCACHED))):  # identity only: pieces may be arrays
            return got
        many = self._decode_many
        if many is None:
            get = self.get
            return [get(k) if g is _UNCACHED else g for k, g in zip(keys, got, strict=True)]
        # the misses (once each, in order) and their store reads, in C-level passes
        missed = list(dict.fromkeys(compress(keys, map(is_, got, repeat(_UNCACHED)))))
        raws = list(map(store.get, missed))
        present = list(map(is_not, raws, repeat(None)))
        held = list(compress(missed, present))
        found = list(map(bytes, cast("Iterator[bytes]", compress(raws, present))))
        self.reads += len(missed)
        self.read_bytes += 8 * len(missed) + sum(map(len, found))
        decoded = many(held, found) if held else []
        cache.update(zip(missed, repeat(None)))  # after the decode: a raise caches nothing
        cache.update(zip(held, decoded, strict=True))
        return list(map(cache.__getitem__, keys))  # a hit's piece is still the cache's

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
        self._churn = len(self._dirty) + len(self._gone)
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
