"""Where the level queues of a Monoid Tree Aggregator live (MTA §4.1.5, Fig. 3).

An MTA keeps a list of *level queues* of sibling pairs. The aggregator itself always holds
the **head pair** (``first``) and the **tail pair** (``last``) of every level, and the
positions ``lo`` (head) and ``hi`` (one past the tail) -- O(log n) values. Everything in
between, the *middle* of each level, lives in one of the two classes here:

- :class:`LocalLevels` keeps the middle in process, in chunks of 256 pairs; dropped
  chunks are freed lazily (one per push), so a bulk eviction never pays for
  deallocating what it evicts.
- :class:`StoredLevels` decouples storage from computation as in the paper: a global
  **write buffer** (``buffer_size`` pairs, default 512) collects pairs that stop being a
  tail; when full it goes to the key-value store in one ``multi_put``. A per-level
  **head cache** (``cache_size`` pairs, default 512) holds the pairs right after the head;
  it is refilled from the buffer and the store when it holds fewer than ``refill_below``
  (default 256) and more pairs exist. The store key is ``(level, position)``, positions
  are absolute and never reused, so a key names one pair forever.

A pair is a two-slot list ``[e0, e1]``; :data:`EMPTY` marks an empty slot (it is *not*
the monoid identity, which can be a real value). In a store a pair is encoded with
:mod:`windowagg.codec` as ``(1, e0)``, ``(2, e1)`` or ``(3, e0, e1)``.

A pair is immutable once it stops being a tail, until it becomes the head; head pairs
change only locally (an evicted left slot, a refreshed left spine) and are saved in the
checkpoint record, so each pair is written to the store once.

Examples
--------
>>> from windowagg.storage import MemoryStore
>>> lo = [0]
>>> mid = StoredLevels(MemoryStore(), "w", lo, buffer_size=2, cache_size=2, refill_below=1)
>>> mid.new_level(0, 0)
>>> mid.push(0, 0, [1, 2]); mid.push(0, 1, [3, 4]); mid.push(0, 2, [5, 6])
>>> mid.held(), len(mid.store)  # the buffer went to the store when it filled up
(3, 2)
>>> lo[0] = 1; mid.drop(0, 1); mid.fetch(0, 1, 3)
[3, 4]
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from typing import Any, Final

from windowagg import codec
from windowagg.errors import CodecError, StorageError
from windowagg.storage.base import Key, KVStore

__all__ = ["EMPTY", "LocalLevels", "StoredLevels", "decode_pair", "encode_pair"]


class _Empty:
    """The empty-slot marker of MTA pairs (the paper's lost epsilon glyph)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "EMPTY"


EMPTY: Final = _Empty()

_SHIFT: Final = 8
_MASK: Final = (1 << _SHIFT) - 1


def encode_pair(pair: list[Any] | tuple[Any, ...]) -> bytes:
    """Encode a pair with the codec: ``(1, e0)``, ``(2, e1)`` or ``(3, e0, e1)``.

    >>> decode_pair(encode_pair([7, EMPTY]))
    (7, EMPTY)
    """
    a, b = pair
    if b is EMPTY:
        return codec.dumps((1, a))
    if a is EMPTY:
        return codec.dumps((2, b))
    return codec.dumps((3, a, b))


def pair_to_plain(pair: list[Any] | tuple[Any, ...]) -> tuple[Any, ...]:
    """The codec-plain form of a pair (used inside checkpoint records)."""
    a, b = pair
    if b is EMPTY:
        return (1, a)
    if a is EMPTY:
        return (2, b)
    return (3, a, b)


def pair_from_plain(t: Any) -> tuple[Any, Any]:
    """Inverse of :func:`pair_to_plain`; raises StorageError on a malformed record."""
    if isinstance(t, tuple | list) and t:
        tag = t[0]
        if tag == 1 and len(t) == 2:
            return (t[1], EMPTY)
        if tag == 2 and len(t) == 2:
            return (EMPTY, t[1])
        if tag == 3 and len(t) == 3:
            return (t[1], t[2])
    raise StorageError(f"malformed MTA pair record in the store: {t!r:.80}")


def decode_pair(data: bytes) -> tuple[Any, Any]:
    """Decode bytes written by :func:`encode_pair` (codec errors become StorageError)."""
    try:
        t = codec.loads(data)
    except CodecError as e:
        raise StorageError(f"cannot decode an MTA pair from the store: {e}") from e
    return pair_from_plain(t)


class LocalLevels:
    """The middle of every level queue, in process (the paper's "Mem." variants).

    ``push`` O(1); ``fetch``/``peek`` O(1); ``drop`` O(1) (chunks freed later, one per
    push); ``drop_level`` O(1).
    """

    stored: Final = False

    __slots__ = ("_chunks", "_dead", "_gc")

    def __init__(self) -> None:
        self._chunks: list[dict[int, list[Any]]] = []
        self._gc: list[int] = []  # per level: lowest chunk id that may still be allocated
        self._dead: deque[list[Any]] = deque()  # [chunk dict, next cid, end cid] to free

    def new_level(self, level: int, start: int) -> None:
        """Level *level* starts (again) at position *start*. O(1)."""
        while len(self._chunks) <= level:
            self._chunks.append({})
            self._gc.append(0)
        self._chunks[level] = {}
        self._gc[level] = start >> _SHIFT

    def push(self, level: int, pos: int, pair: list[Any]) -> None:
        """Store the pair that stopped being the tail of *level*, at *pos*. O(1)."""
        c = self._chunks[level]
        cid = pos >> _SHIFT
        ch = c.get(cid)
        off = pos & _MASK
        if ch is None:
            c[cid] = [None] * off + [pair] if off else [pair]
        elif len(ch) == off:
            ch.append(pair)
        else:  # a skipped position (a re-rooted level): pad
            ch.extend([None] * (off - len(ch)))
            ch.append(pair)
        dead = self._dead
        if dead:  # free one dead chunk per push: deallocation is spread over inserts
            d = dead[0]
            d[0].pop(d[1], None)
            d[1] += 1
            if d[1] >= d[2]:
                dead.popleft()

    def fetch(self, level: int, pos: int, limit: int) -> list[Any]:
        """The pair at *pos*, which is becoming the head. O(1)."""
        return self._chunks[level][pos >> _SHIFT][pos & _MASK]  # type: ignore[no-any-return]

    def peek(self, level: int, pos: int) -> tuple[Any, Any]:
        """Read the pair at *pos* without side effects. O(1)."""
        p = self._chunks[level][pos >> _SHIFT][pos & _MASK]
        return (p[0], p[1])

    def scan(self, level: int, lo: int, hi: int) -> Iterator[tuple[Any, Any]]:
        """Pairs at positions ``lo <= pos < hi``, in order."""
        for pos in range(lo, hi):
            yield self.peek(level, pos)

    def drop(self, level: int, new_lo: int) -> None:
        """Positions below *new_lo* are dead; their chunks are freed lazily. O(1)."""
        cid = new_lo >> _SHIFT
        g = self._gc[level]
        if cid > g:
            self._dead.append([self._chunks[level], g, cid])
            self._gc[level] = cid

    def drop_level(self, level: int, hi: int) -> None:
        """The whole level is gone; free its chunks lazily. O(1)."""
        c = self._chunks[level]
        if c:
            self._dead.append([c, self._gc[level], (hi >> _SHIFT) + 1])
        self._chunks[level] = {}

    def flush_due(self) -> bool:
        """Never: nothing to write."""
        return False

    def held(self) -> int:
        """Pairs held in process by the middle sections (all of them, here)."""
        return sum(len(ch) for c in self._chunks for ch in c.values())


class StoredLevels:
    """The middle of every level queue in a key-value store, with buffer and head caches.

    Parameters
    ----------
    store
        A :class:`~windowagg.storage.KVStore`.
    namespace
        The window's name in the store.
    lo
        The aggregator's list of head positions (shared, read only here).
    buffer_size, cache_size, refill_below
        Write-buffer capacity (pairs, over all levels), per-level cache capacity and
        refill threshold (paper: 512, 512, 256).

    Complexities (k = pairs moved, B = buffer_size, C = cache_size): ``push`` O(1),
    plus one ``multi_put`` of B pairs every B pushes; ``fetch`` O(1) on a cache hit,
    one ``multi_get`` of at most C pairs on a refill or a miss; ``drop`` O(min(k, C)).
    """

    stored: Final = True

    def __init__(
        self,
        store: KVStore,
        namespace: str,
        lo: list[int],
        *,
        buffer_size: int = 512,
        cache_size: int = 512,
        refill_below: int = 256,
    ) -> None:
        if buffer_size < 1 or cache_size < 1 or not 0 <= refill_below <= cache_size:
            raise ValueError(
                "need buffer_size >= 1, cache_size >= 1 and 0 <= refill_below <= cache_size; "
                f"got {buffer_size}, {cache_size}, {refill_below}"
            )
        self.store = store
        self.ns = namespace
        self._lo = lo
        self.buffer_size = buffer_size
        self.cache_size = cache_size
        self.refill_below = refill_below
        self._buf: dict[Key, tuple[Any, Any]] = {}
        self._cache: list[deque[tuple[Any, Any]]] = []
        self._cstart: list[int] = []
        self.kv_lo: list[int] = []  # per level: lowest position that may be in the store
        self._dead: list[tuple[int, int, int]] = []  # ranges to delete at the next commit
        self.misses = 0
        self.refills = 0

    # -- level lifecycle -------------------------------------------------------------
    def _ensure(self, level: int) -> None:
        while len(self._cache) <= level:
            self._cache.append(deque())
            self._cstart.append(0)
            self.kv_lo.append(0)

    def new_level(self, level: int, start: int) -> None:
        """Level *level* starts (again) at position *start* (>= every earlier one). O(1)."""
        self._ensure(level)
        self._cache[level].clear()
        self._cstart[level] = start + 1
        if self.kv_lo[level] > start:
            raise StorageError(f"level {level} restarted at {start} below {self.kv_lo[level]}")

    def drop_level(self, level: int, hi: int) -> None:
        """The whole level is gone: its keys below *hi* are deleted at the next commit."""
        self._cache[level].clear()
        if hi > self.kv_lo[level]:
            self._dead.append((level, self.kv_lo[level], hi))
            self.kv_lo[level] = hi

    # -- the hot operations ----------------------------------------------------------
    def push(self, level: int, pos: int, pair: list[Any]) -> None:
        """Buffer the pair that stopped being the tail; flush the buffer when full."""
        t = (pair[0], pair[1])
        buf = self._buf
        buf[(level, pos)] = t
        if pos > self._lo[level]:
            c = self._cache[level]
            n = len(c)
            if n < self.cache_size:
                if not n:
                    self._cstart[level] = pos
                    c.append(t)
                elif self._cstart[level] + n == pos:
                    c.append(t)
        if len(buf) >= self.buffer_size:
            self.flush_buffer()

    def fetch(self, level: int, pos: int, limit: int) -> list[Any]:
        """The pair at *pos*, becoming the head (a mutable copy); *limit* = tail position."""
        c = self._cache[level]
        if c and self._cstart[level] == pos:
            t = c.popleft()
            self._cstart[level] = pos + 1
        else:
            self.misses += 1
            c.clear()
            got = self._read(level, pos)
            if got is None:
                raise StorageError(
                    f"MTA pair (level {level}, position {pos}) of namespace {self.ns!r} is "
                    "missing from the store; the store was modified or is not this window's"
                )
            t = got
            self._cstart[level] = pos + 1
        if len(c) < self.refill_below:
            end = self._cstart[level] + len(c)
            if end < limit:
                self._refill(level, end, limit)
        return [t[0], t[1]]

    def _read(self, level: int, pos: int) -> tuple[Any, Any] | None:
        t = self._buf.get((level, pos))
        if t is not None:
            return t
        data = self.store.get(self.ns, (level, pos))
        return None if data is None else decode_pair(data)

    def _refill(self, level: int, start: int, limit: int) -> None:
        c = self._cache[level]
        stop = min(limit, start + self.cache_size - len(c))
        buf = self._buf
        need = [(level, p) for p in range(start, stop) if (level, p) not in buf]
        got: dict[Key, bytes | None] = {}
        if need:
            self.refills += 1
            got = dict(zip(need, self.store.multi_get(self.ns, need), strict=True))
        for p in range(start, stop):
            t = buf.get((level, p))
            if t is None:
                data = got.get((level, p))
                if data is None:
                    raise StorageError(
                        f"MTA pair (level {level}, position {p}) of namespace {self.ns!r} "
                        "is missing from the store"
                    )
                t = decode_pair(data)
            c.append(t)

    def peek(self, level: int, pos: int) -> tuple[Any, Any]:
        """Read the pair at *pos* without changing caches (for iteration and checks)."""
        c = self._cache[level]
        i = pos - self._cstart[level]
        if 0 <= i < len(c):
            return c[i]
        t = self._read(level, pos)
        if t is None:
            raise StorageError(f"MTA pair (level {level}, position {pos}) missing from the store")
        return t

    def scan(self, level: int, lo: int, hi: int) -> Iterator[tuple[Any, Any]]:
        """Pairs at positions ``lo <= pos < hi`` in order, read in batches of 512."""
        for a in range(lo, hi, 512):
            b = min(hi, a + 512)
            keys = [(level, p) for p in range(a, b) if (level, p) not in self._buf]
            got = dict(zip(keys, self.store.multi_get(self.ns, keys), strict=True)) if keys else {}
            for p in range(a, b):
                t = self._buf.get((level, p))
                if t is None:
                    data = got.get((level, p))
                    if data is None:
                        raise StorageError(
                            f"MTA pair (level {level}, position {p}) missing from the store"
                        )
                    t = decode_pair(data)
                yield t

    def drop(self, level: int, new_lo: int) -> None:
        """The head of *level* moved to *new_lo*; drop cached pairs before it."""
        c = self._cache[level]
        d = new_lo - self._cstart[level]
        if d > 0:
            if d >= len(c):
                c.clear()
            else:
                for _ in range(d):
                    c.popleft()
            self._cstart[level] = new_lo

    # -- writing ---------------------------------------------------------------------
    def _live_buffer(self) -> list[tuple[Key, bytes]]:
        lo = self._lo
        nlev = len(lo)
        return [
            ((lv, pos), encode_pair(t))
            for (lv, pos), t in self._buf.items()
            if lv < nlev and pos >= lo[lv]
        ]

    def flush_buffer(self) -> None:
        """Write the live buffered pairs to the store (one ``multi_put``); not a checkpoint."""
        items = self._live_buffer()
        if items:
            self.store.multi_put(self.ns, items)
        self._buf.clear()

    def commit(self, meta: bytes, nlevels: int) -> None:
        """Atomically write the buffer, delete dead ranges and store the checkpoint *meta*."""
        items = self._live_buffer()
        lo = self._lo
        for lv in range(nlevels):
            if lo[lv] > self.kv_lo[lv]:
                self._dead.append((lv, self.kv_lo[lv], lo[lv]))
                self.kv_lo[lv] = lo[lv]
        self.store.commit(self.ns, items, self._dead, meta)
        self._buf.clear()
        self._dead = []

    def restore(self, kv_lo: list[int], nlevels: int, lo: list[int]) -> None:
        """Set the state read back from a checkpoint (caches start empty)."""
        self._ensure(max(len(kv_lo), nlevels) - 1)
        for i, v in enumerate(kv_lo):
            self.kv_lo[i] = v
        for lv in range(nlevels):
            self._cache[lv].clear()
            self._cstart[lv] = lo[lv] + 1

    def held(self) -> int:
        """Pairs held in process: buffered plus cached (tails and heads not included)."""
        return len(self._buf) + sum(len(c) for c in self._cache)

    def flush_due(self) -> bool:
        """True when the buffer is at capacity."""
        return len(self._buf) >= self.buffer_size

    def check(self, nlevels: int, hi: list[int]) -> None:
        """Verify every cached pair equals the buffered/stored pair at its position."""
        for lv in range(nlevels):
            c = self._cache[lv]
            s = self._cstart[lv]
            if c and not (self._lo[lv] < s and s + len(c) <= hi[lv] - 1):
                raise AssertionError(
                    f"StoredLevels: cache of level {lv} covers [{s}, {s + len(c)}) outside "
                    f"the middle ({self._lo[lv]}, {hi[lv] - 1})"
                )
            if len(c) > self.cache_size:
                raise AssertionError(f"StoredLevels: cache of level {lv} over capacity")
            for i, t in enumerate(c):
                ref = self._read(lv, s + i)
                if (
                    ref is None
                    or not (ref[0] is t[0] or ref[0] == t[0])
                    or not (ref[1] is t[1] or ref[1] == t[1])
                ):
                    raise AssertionError(
                        f"StoredLevels: cached pair (level {lv}, position {s + i}) is {t!r} "
                        f"but the store holds {ref!r}"
                    )
        if len(self._buf) > self.buffer_size:
            raise AssertionError("StoredLevels: write buffer over capacity")
