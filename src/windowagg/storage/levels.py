"""Where the level queues of a Monoid Tree Aggregator live (MTA §4.1.5, Fig. 3).

An MTA keeps a list of *level queues* of sibling pairs. The aggregator itself always holds
the **head pair** (``first``) and the **tail pair** (``last``) of every level, and the
positions ``lo`` (head) and ``hi`` (one past the tail) -- O(log n) values. Everything in
between, the *middle* of each level, lives in one of the two classes here:

- :class:`LocalLevels` keeps the middle in process, in chunks of 256 pairs; dropped
  chunks are freed lazily (one per chunk started), so a bulk eviction never pays for
  deallocating what it evicts. Middle pairs are stored as tuples: CPython's cyclic
  garbage collector stops tracking tuples of plain values, so a window of 10^6 entries
  does not make every collection walk 10^6 lists (that cost ~30% of the throughput).
- :class:`StoredLevels` decouples storage from computation as in the paper: a global
  **write buffer** (``buffer_size`` pairs, default 512) collects pairs that stop being a
  tail; when full it goes to the key-value store in one ``multi_put``, grouped in pages
  of ``page_size`` consecutive pairs (default 64; 1 = one pair per key). A per-level
  **head cache** (``cache_size`` pairs, default 512) holds the pairs right after the head;
  it is refilled from the buffer and the store when it holds fewer than ``refill_below``
  (default 256) and more pairs exist. The store key is ``(level, page)`` with
  ``page = position // page_size``; positions are absolute and never reused (a restarted
  level starts on a fresh page), so a key names the same pairs forever.

A pair is a two-slot list ``[e0, e1]``; :data:`EMPTY` marks an empty slot (it is *not*
the monoid identity, which can be a real value). In a store a pair is written as
``(1, e0)``, ``(2, e1)`` or ``(3, e0, e1)`` and a page as the tuple of its pairs (``None``
for a position that holds nothing), encoded with :mod:`windowagg.codec`; pages use the
flat form of :func:`encode_page` (slot tags + values).

A pair is immutable once it stops being a tail, until it becomes the head; head pairs
change only locally (an evicted left slot, a refreshed left spine) and are saved in the
checkpoint record, so each pair is written to the store once.

Examples
--------
>>> from windowagg.storage import MemoryStore
>>> lo = [0]
>>> mid = StoredLevels(MemoryStore(), "w", lo, buffer_size=2, cache_size=2,
...                    refill_below=1, page_size=4)
>>> mid.new_level(0, 0)
>>> mid.push(0, 0, [1, 2]); mid.push(0, 1, [3, 4])
>>> mid.flush_due(), len(mid.store)
(True, 0)
>>> mid.flush_buffer(); mid.push(0, 2, [5, 6])
>>> len(mid.store)  # one page (of 4 pairs) holds positions 0 and 1
1
>>> lo[0] = 1; mid.drop(0, 1); mid.fetch(0, 1, 3)
[3, 4]
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from typing import Any, Final

from windowagg import codec
from windowagg._invariants import same
from windowagg.errors import CodecError, InvariantError, StorageError
from windowagg.storage.base import Key, KVStore

__all__ = [
    "EMPTY",
    "LocalLevels",
    "StoredLevels",
    "decode_page",
    "decode_pair",
    "encode_page",
    "encode_pair",
]


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


def encode_page(entries: list[Any]) -> bytes:
    """Encode a page: ``(tags, values)`` where ``tags`` has one byte per position
    (0 nothing, 1 ``<e0, EMPTY>``, 2 ``<EMPTY, e1>``, 3 full) and ``values`` is the flat
    tuple of the present slots. One codec call per page, two values per full pair.

    >>> decode_page(encode_page([(1, 2), None, (EMPTY, 5)]))
    [(1, 2), None, (EMPTY, 5)]
    """
    tags = bytearray()
    values: list[Any] = []
    add = values.append
    for t in entries:
        if t is None:
            tags.append(0)
            continue
        a, b = t
        if b is EMPTY:
            tags.append(1)
            add(a)
        elif a is EMPTY:
            tags.append(2)
            add(b)
        else:
            tags.append(3)
            add(a)
            add(b)
    return codec.dumps((bytes(tags), tuple(values)))


def decode_page(data: bytes) -> list[Any]:
    """Inverse of :func:`encode_page`; StorageError on anything malformed."""
    try:
        t = codec.loads(data)
    except CodecError as e:
        raise StorageError(f"cannot decode an MTA page from the store: {e}") from e
    if not (isinstance(t, tuple) and len(t) == 2 and isinstance(t[0], bytes)):
        raise StorageError(f"malformed MTA page in the store: {t!r:.80}")
    tags, values = t
    out: list[Any] = []
    add = out.append
    i = 0
    try:
        for tag in tags:
            if tag == 3:
                add((values[i], values[i + 1]))
                i += 2
            elif tag == 1:
                add((values[i], EMPTY))
                i += 1
            elif tag == 2:
                add((EMPTY, values[i]))
                i += 1
            elif tag == 0:
                add(None)
            else:
                raise StorageError(f"malformed MTA page: unknown slot tag {tag}")
    except IndexError:
        raise StorageError("malformed MTA page: fewer values than its tags announce") from None
    if i != len(values):
        raise StorageError("malformed MTA page: more values than its tags announce")
    return out


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
        # per level: chunk id (position >> 8) -> list of 256 pairs; the list object of a
        # level is never replaced (aggregators may hold it for inlined fast paths)
        self._chunks: list[dict[int, list[Any]]] = []
        self._gc: list[int] = []  # per level: lowest chunk id that may still be allocated
        self._dead: deque[list[Any]] = deque()  # [chunk dict, next cid, end cid] to free

    @property
    def chunks(self) -> list[dict[int, list[Any]]]:
        """Per level, chunk id (position >> 8) -> list of pairs (read-only use)."""
        return self._chunks

    def start_position(self, level: int, proposed: int) -> int:
        """The first position of a (re)started level: *proposed* itself. O(1)."""
        return proposed

    def new_level(self, level: int, start: int) -> None:
        """Level *level* starts (again) at position *start*. O(1)."""
        while len(self._chunks) <= level:
            self._chunks.append({})
            self._gc.append(0)
        self._chunks[level] = {}
        self._gc[level] = start >> _SHIFT

    def push(self, level: int, pos: int, pair: list[Any]) -> None:
        """Store the pair that stopped being the tail of *level*, at *pos*. O(1)."""
        t = (pair[0], pair[1])
        c = self._chunks[level]
        cid = pos >> _SHIFT
        ch = c.get(cid)
        off = pos & _MASK
        if ch is not None and len(ch) == off:
            ch.append(t)
            return
        if ch is None:
            c[cid] = [None] * off + [t] if off else [t]
            dead = self._dead
            if dead:  # free one dead chunk per chunk started: deallocation is spread out
                d = dead[0]
                d[0].pop(d[1], None)
                d[1] += 1
                if d[1] >= d[2]:
                    dead.popleft()
        else:  # a skipped position (a re-rooted level): pad
            ch.extend([None] * (off - len(ch)))
            ch.append(t)

    def fetch(self, level: int, pos: int, limit: int) -> list[Any]:
        """The pair at *pos*, which is becoming the head (a mutable copy). O(1)."""
        return list(self._chunks[level][pos >> _SHIFT][pos & _MASK])

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
    page_size
        Pairs per store value: the key ``(level, page)`` holds the pairs at positions
        ``page * page_size ... + page_size - 1`` (one codec call per page instead of per
        pair). ``page_size=1`` is the paper's one-pair-per-key layout.

    Complexities (k = pairs moved, B = buffer_size, C = cache_size, P = page_size):
    ``push`` O(1), plus one ``multi_put`` of about B/P pages every B pushes; ``fetch``
    O(1) on a cache hit, one ``multi_get`` of at most C/P + 1 pages on a refill or a miss;
    ``drop`` O(min(k, C)).
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
        page_size: int = 64,
    ) -> None:
        if buffer_size < 1 or cache_size < 1 or not 0 <= refill_below <= cache_size:
            raise ValueError(
                "need buffer_size >= 1, cache_size >= 1 and 0 <= refill_below <= cache_size; "
                f"got {buffer_size}, {cache_size}, {refill_below}"
            )
        if page_size < 1:
            raise ValueError(f"page_size must be >= 1, got {page_size}")
        self.store = store
        self.ns = namespace
        self._lo = lo
        self.buffer_size = buffer_size
        self.cache_size = cache_size
        self.refill_below = refill_below
        self.page_size = page_size
        self._bufs: list[dict[int, tuple[Any, Any]]] = []  # per level: position -> pair
        self._nbuf = 0
        self._cache: list[deque[tuple[Any, Any]]] = []
        self._cstart: list[int] = []
        # per level: the last page written, while it is incomplete: (page, entries)
        self._open: dict[int, tuple[int, list[Any]]] = {}
        self.kv_lo: list[int] = []  # per level: lowest page that may be in the store
        self._dead: list[tuple[int, int, int]] = []  # page ranges to delete at next commit
        self.misses = 0
        self.refills = 0

    # -- level lifecycle -------------------------------------------------------------
    def _ensure(self, level: int) -> None:
        while len(self._cache) <= level:
            self._bufs.append({})
            self._cache.append(deque())
            self._cstart.append(0)
            self.kv_lo.append(0)

    def start_position(self, level: int, proposed: int) -> int:
        """The first position of a (re)started level: *proposed* rounded up to a page
        boundary at or above every page the level used before. O(1)."""
        self._ensure(level)
        ps = self.page_size
        page = max(-(-proposed // ps), self.kv_lo[level])
        return page * ps

    def new_level(self, level: int, start: int) -> None:
        """Level *level* starts (again) at *start* (from :meth:`start_position`). O(1)."""
        self._ensure(level)
        self._cache[level].clear()
        self._cstart[level] = start + 1
        self._open.pop(level, None)
        if start // self.page_size < self.kv_lo[level] or start % self.page_size:
            raise StorageError(f"level {level} restarted at {start}, not a fresh page")

    def drop_level(self, level: int, hi: int) -> None:
        """The whole level is gone: its pages are deleted at the next commit. O(1)."""
        self._cache[level].clear()
        self._open.pop(level, None)
        bl = self._bufs[level]
        self._nbuf -= len(bl)
        bl.clear()
        end = -(-hi // self.page_size)
        if end > self.kv_lo[level]:
            self._dead.append((level, self.kv_lo[level], end))
            self.kv_lo[level] = end

    # -- the hot operations ----------------------------------------------------------
    def push(self, level: int, pos: int, pair: list[Any]) -> None:
        """Buffer the pair that stopped being the tail. O(1). The owner flushes a full
        buffer (``flush_due()`` / ``flush_buffer()``) before its next mutation, so that a
        store error never interrupts a half-done update."""
        t = (pair[0], pair[1])
        self._bufs[level][pos] = t
        self._nbuf += 1
        if pos > self._lo[level]:
            c = self._cache[level]
            n = len(c)
            if n < self.cache_size:
                if not n:
                    self._cstart[level] = pos
                    c.append(t)
                elif self._cstart[level] + n == pos:
                    c.append(t)

    def fetch(self, level: int, pos: int, limit: int) -> list[Any]:
        """The pair at *pos*, becoming the head (a mutable copy); *limit* = tail position.
        O(1) on a cache hit; a refill reads at most ``cache_size / page_size + 1`` pages."""
        c = self._cache[level]
        if c and self._cstart[level] == pos:
            t = c.popleft()
            self._cstart[level] = pos + 1
        else:
            # a miss (a bulk eviction jumped past the cache): read only the page holding
            # pos now, one round trip; the usual refill follows on a later fetch, so a
            # bulk eviction costs about one page per level, not a cache per level
            self.misses += 1
            c.clear()
            self._cstart[level] = pos
            ps = self.page_size
            self._refill(level, pos, min(limit, (pos // ps + 1) * ps))
            if not c:
                raise self._missing(level, pos)
            t = c.popleft()
            self._cstart[level] = pos + 1
            return [t[0], t[1]]
        if len(c) < self.refill_below:
            end = self._cstart[level] + len(c)
            if end < limit:
                self._refill(level, end, limit)
        return [t[0], t[1]]

    def _missing(self, level: int, pos: int) -> StorageError:
        return StorageError(
            f"MTA pair (level {level}, position {pos}) of namespace {self.ns!r} is missing "
            "from the store; the store was modified or does not hold this window"
        )

    def _pages(self, level: int, first: int, last: int) -> dict[int, list[Any]]:
        """Decoded pages ``first..last`` of *level* that exist in the store."""
        keys = [(level, g) for g in range(first, last + 1)]
        out: dict[int, list[Any]] = {}
        for (_, g), data in zip(keys, self.store.multi_get(self.ns, keys), strict=True):
            if data is not None:
                out[g] = decode_page(data)
        return out

    def _pick(self, pages: dict[int, list[Any]], level: int, pos: int) -> tuple[Any, Any]:
        t = self._bufs[level].get(pos)
        if t is not None:
            return t
        g, i = divmod(pos, self.page_size)
        page = pages.get(g)
        if page is None or i >= len(page) or page[i] is None:
            raise self._missing(level, pos)
        return page[i]  # type: ignore[no-any-return]

    def _read(self, level: int, pos: int) -> tuple[Any, Any]:
        t = self._bufs[level].get(pos)
        if t is not None:
            return t
        g = pos // self.page_size
        return self._pick(self._pages(level, g, g), level, pos)

    def _refill(self, level: int, start: int, limit: int) -> None:
        c = self._cache[level]
        stop = min(limit, start + self.cache_size - len(c))
        if stop <= start:
            return
        bl = self._bufs[level]
        ps = self.page_size
        pages: dict[int, list[Any]] = {}
        if not bl or any(p not in bl for p in range(start, stop)):
            self.refills += 1
            pages = self._pages(level, start // ps, (stop - 1) // ps)
        append = c.append  # cached: called up to cache_size times
        get = bl.get
        for p in range(start, stop):
            t = get(p)  # the buffer holds the newest copy of a position
            if t is None:
                page = pages.get(p // ps)
                i = p % ps
                if page is None or i >= len(page) or page[i] is None:
                    raise self._missing(level, p)
                t = page[i]
            append(t)

    def peek(self, level: int, pos: int) -> tuple[Any, Any]:
        """Read the pair at *pos* without changing caches (for iteration and checks)."""
        c = self._cache[level]
        i = pos - self._cstart[level]
        if 0 <= i < len(c):
            return c[i]
        return self._read(level, pos)

    def scan(self, level: int, lo: int, hi: int) -> Iterator[tuple[Any, Any]]:
        """Pairs at positions ``lo <= pos < hi`` in order, read 512 positions at a time."""
        ps = self.page_size
        for a in range(lo, hi, 512):
            b = min(hi, a + 512)
            pages = self._pages(level, a // ps, (b - 1) // ps)
            for p in range(a, b):
                yield self._pick(pages, level, p)

    def drop(self, level: int, new_lo: int) -> None:
        """The head of *level* moved to *new_lo*; drop cached pairs before it. O(min(k, C))."""
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
    def _pending_pages(self) -> tuple[list[tuple[Key, bytes]], dict[int, Any]]:
        """Encode the buffer as pages (merged with each level's open page). Return them and
        the open-page updates to apply once they are written (so that a failed write can
        be retried). Pairs already dead (below the head) are left out."""
        lo = self._lo
        nlev = len(lo)
        ps = self.page_size
        pages: dict[Key, list[Any]] = {}
        for lv, bl in enumerate(self._bufs):
            if not bl or lv >= nlev:
                continue
            lo_lv = lo[lv]
            op = self._open.get(lv)
            g_cur = -1
            entries: list[Any] = []
            for pos, t in bl.items():  # insertion order = increasing positions
                if pos < lo_lv:
                    continue
                g, i = divmod(pos, ps)
                if g != g_cur:
                    g_cur = g
                    entries = list(op[1]) if op is not None and op[0] == g else []
                    pages[(lv, g)] = entries
                if len(entries) <= i:
                    entries.extend([None] * (i + 1 - len(entries)))
                entries[i] = t
        top_page: dict[int, int] = {}
        for lv, g in pages:
            if g >= top_page.get(lv, -1):
                top_page[lv] = g
        opened: dict[int, Any] = {}
        for lv, g in top_page.items():
            entries = pages[(lv, g)]
            opened[lv] = (g, entries) if len(entries) < ps else None
        return [(key, encode_page(entries)) for key, entries in pages.items()], opened

    def _written(self, opened: dict[int, Any]) -> None:
        """The pending pages are in the store: update the open pages, clear the buffer."""
        for lv, op in opened.items():
            if op is None:
                self._open.pop(lv, None)
            else:
                self._open[lv] = op
        for bl in self._bufs:
            bl.clear()
        self._nbuf = 0

    def flush_buffer(self) -> None:
        """Write the buffered pairs to the store (one ``multi_put``); not a checkpoint."""
        items, opened = self._pending_pages()
        if items:
            self.store.multi_put(self.ns, items)
        self._written(opened)

    def commit(self, meta: bytes, nlevels: int) -> None:
        """Atomically write the buffer, delete dead pages and store the checkpoint *meta*."""
        items, opened = self._pending_pages()
        lo = self._lo
        ps = self.page_size
        dead = list(self._dead)
        kv_lo = list(self.kv_lo)
        for lv in range(nlevels):
            g = lo[lv] // ps
            if g > kv_lo[lv]:
                dead.append((lv, kv_lo[lv], g))
                kv_lo[lv] = g
        self.store.commit(self.ns, items, dead, meta)  # on failure nothing above applies
        self.kv_lo[:] = kv_lo
        self._dead = []
        self._written(opened)

    def restore(self, kv_lo: list[int], nlevels: int, lo: list[int], hi: list[int]) -> None:
        """Set the state read back from a checkpoint: caches start empty, and each level's
        last written page is read back as its open page. O(levels) page reads."""
        self._ensure(max(len(kv_lo), nlevels) - 1)
        for i, v in enumerate(kv_lo):
            self.kv_lo[i] = v
        ps = self.page_size
        for lv in range(nlevels):
            self._cache[lv].clear()
            self._cstart[lv] = lo[lv] + 1
            g = (hi[lv] - 1) // ps  # the page the next pushed pair goes to
            page = self._pages(lv, g, g).get(g)
            if page is not None:
                # keep only what the checkpoint owns: positions < hi - 1. Entries beyond
                # were written after it (by a buffer flush of a process that then died)
                # and will be pushed again; kept, they would make the page look complete.
                self._open[lv] = (g, list(page[: hi[lv] - 1 - g * ps]))

    def held(self) -> int:
        """Pairs held in process: buffered, cached and in open pages. O(levels)."""
        return (
            self._nbuf
            + sum(len(c) for c in self._cache)
            + sum(len(e) for _, e in self._open.values())
        )

    def flush_due(self) -> bool:
        """True when the buffer is at capacity."""
        return self._nbuf >= self.buffer_size

    def check(self, nlevels: int, hi: list[int]) -> None:
        """Verify every cached pair equals the buffered/stored pair at its position."""
        for lv in range(nlevels):
            c = self._cache[lv]
            s = self._cstart[lv]
            if c and not (self._lo[lv] < s and s + len(c) <= hi[lv] - 1):
                raise InvariantError(
                    f"StoredLevels: cache of level {lv} covers [{s}, {s + len(c)}) outside "
                    f"the middle ({self._lo[lv]}, {hi[lv] - 1})"
                )
            if len(c) > self.cache_size:
                raise InvariantError(f"StoredLevels: cache of level {lv} over capacity")
            for i, t in enumerate(c):
                ref = self._read(lv, s + i)
                if (
                    ref is None
                    or not (ref[0] is t[0] or same(ref[0], t[0]))
                    or not (ref[1] is t[1] or same(ref[1], t[1]))
                ):
                    raise InvariantError(
                        f"StoredLevels: cached pair (level {lv}, position {s + i}) is {t!r} "
                        f"but the store holds {ref!r}"
                    )
        if self._nbuf != sum(len(bl) for bl in self._bufs):
            raise InvariantError("StoredLevels: write-buffer count does not match its contents")
