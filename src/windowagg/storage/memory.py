"""MemoryStore: the default, in-process key-value store backend (a dict per namespace level).

=================  ===========================================================
durability         none: the data lives and dies with the process
get / put          O(1) per key
delete_range       O(hi - lo)
commit             atomic trivially (single-threaded, no I/O)
=================  ===========================================================

It holds ``bytes`` exactly like the persistent backends, so the encode/decode path of a
storage-decoupled aggregator is exercised identically; it is the backend to use for
tests and for measuring how much an aggregator keeps *locally* (its own tails, buffer
and caches) as opposed to in the store.

Examples
--------
>>> s = MemoryStore()
>>> s.put("w", (0, 7), b"x"); s.get("w", (0, 7)), s.get("w", (1, 7))
(b'x', None)
>>> s.delete_range("w", 0, 0, 10); s.get("w", (0, 7)) is None
True
>>> len(s)
0
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from windowagg.storage.base import Key, Stats, new_stats

__all__ = ["MemoryStore"]


class MemoryStore:
    """In-process store: ``{namespace: {level: {position: bytes}}}`` plus metadata."""

    def __init__(self) -> None:
        self._data: dict[str, dict[int, dict[int, bytes]]] = {}
        self._meta: dict[str, bytes] = {}
        self.stats: Stats = new_stats()

    def _level(self, ns: str, level: int) -> dict[int, bytes]:
        d = self._data.get(ns)
        if d is None:
            d = self._data[ns] = {}
        lv = d.get(level)
        if lv is None:
            lv = d[level] = {}
        return lv

    def get(self, ns: str, key: Key) -> bytes | None:
        """One value or None. O(1)."""
        self.stats["round_trips"] += 1
        self.stats["keys_read"] += 1
        return self._data.get(ns, {}).get(key[0], {}).get(key[1])

    def multi_get(self, ns: str, keys: Sequence[Key]) -> list[bytes | None]:
        """Values of *keys* in order. O(len(keys))."""
        self.stats["round_trips"] += 1
        self.stats["keys_read"] += len(keys)
        d = self._data.get(ns, {})
        return [d.get(lv, {}).get(pos) for lv, pos in keys]

    def put(self, ns: str, key: Key, value: bytes) -> None:
        """Write one value. O(1)."""
        self.stats["round_trips"] += 1
        self.stats["keys_written"] += 1
        self._level(ns, key[0])[key[1]] = bytes(value)

    def multi_put(self, ns: str, items: Iterable[tuple[Key, bytes]]) -> None:
        """Write many values in one call. O(len(items))."""
        self.stats["round_trips"] += 1
        self._put_all(ns, items)

    def _put_all(self, ns: str, items: Iterable[tuple[Key, bytes]]) -> None:
        n = 0
        for (lv, pos), value in items:
            self._level(ns, lv)[pos] = bytes(value)
            n += 1
        self.stats["keys_written"] += n

    def delete(self, ns: str, key: Key) -> None:
        """Remove one key. O(1)."""
        self.stats["round_trips"] += 1
        self._delete_range(ns, key[0], key[1], key[1] + 1)

    def delete_range(self, ns: str, level: int, lo: int, hi: int) -> None:
        """Remove positions ``lo <= pos < hi`` of *level*. O(min(hi - lo, keys in level))."""
        self.stats["round_trips"] += 1
        self._delete_range(ns, level, lo, hi)

    def _delete_range(self, ns: str, level: int, lo: int, hi: int) -> None:
        lv = self._data.get(ns, {}).get(level)
        if not lv or hi <= lo:
            return
        before = len(lv)
        if hi - lo > len(lv):
            for pos in [p for p in lv if lo <= p < hi]:
                del lv[pos]
        else:
            for pos in range(lo, hi):
                lv.pop(pos, None)
        self.stats["keys_deleted"] += before - len(lv)

    def positions(self, ns: str, level: int) -> list[int]:
        """The positions *level* holds, ascending. O(k log k)."""
        self.stats["round_trips"] += 1
        return sorted(self._data.get(ns, {}).get(level, {}))

    def get_meta(self, ns: str) -> bytes | None:
        """The metadata record of *ns* or None. O(1)."""
        self.stats["round_trips"] += 1
        return self._meta.get(ns)

    def commit(
        self,
        ns: str,
        puts: Iterable[tuple[Key, bytes]],
        delete_ranges: Iterable[tuple[int, int, int]],
        meta: bytes | None,
    ) -> None:
        """Apply puts, then deletes, then the metadata record, as one step."""
        self.stats["round_trips"] += 1
        self._put_all(ns, puts)
        for level, lo, hi in delete_ranges:
            self._delete_range(ns, level, lo, hi)
        if meta is not None:
            self._meta[ns] = bytes(meta)

    def drop_namespace(self, ns: str) -> None:
        """Forget every key and the metadata of *ns*. O(keys in ns)."""
        self.stats["round_trips"] += 1
        self._data.pop(ns, None)
        self._meta.pop(ns, None)

    def close(self) -> None:
        """Nothing to release."""

    def __len__(self) -> int:
        """Number of keys held, over all namespaces (metadata records not counted)."""
        return sum(len(lv) for d in self._data.values() for lv in d.values())

    def __repr__(self) -> str:
        return f"MemoryStore(keys={len(self)})"
