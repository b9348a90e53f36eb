"""The key-value store protocol behind storage-decoupled aggregators (MTA §4.1.5).

A store maps ``namespace`` + ``(level, position)`` to ``bytes`` and keeps one small
metadata record per namespace. Values are opaque to the store; aggregators encode them
with :mod:`windowagg.codec` (never pickle), so bytes read back from a shared or remote
store cannot run code.

Operations (every backend implements all of them):

==========================================  ===============================================
``get(ns, key)``                            one value or ``None``
``multi_get(ns, keys)``                     values in the order of *keys* (``None`` = absent)
``put(ns, key, value)``                     write one value
``multi_put(ns, items)``                    write many ``(key, value)`` pairs, one round trip
``delete(ns, key)``                         remove one key (absent keys are fine)
``delete_range(ns, level, lo, hi)``         remove positions ``lo <= pos < hi`` of a level
``positions(ns, level)``                    the positions a level holds, ascending
``get_meta(ns)``                            the namespace's metadata record or ``None``
``commit(ns, puts, delete_ranges, meta)``   **atomic**: all puts, deletes and the metadata
                                            record become visible together or not at all
``drop_namespace(ns)``                      remove every key and the metadata of *ns*
``close()``                                 release connections / file handles
==========================================  ===============================================

Every backend counts its traffic in ``stats`` (``round_trips``, ``keys_read``,
``keys_written``, ``keys_deleted``) so that tests can assert I/O, not wall time.

Examples
--------
>>> from windowagg.storage import MemoryStore
>>> s = MemoryStore()
>>> s.multi_put("w", [((0, 1), b"a"), ((0, 2), b"b")])
>>> s.multi_get("w", [(0, 1), (0, 3)])
[b'a', None]
>>> s.commit("w", [((1, 0), b"c")], [(0, 0, 2)], b"meta")
>>> s.get("w", (0, 1)), s.get("w", (0, 2)), s.get_meta("w")
(None, b'b', b'meta')
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Protocol, runtime_checkable

__all__ = ["KVStore", "Key", "Stats", "new_stats"]

Key = tuple[int, int]
"""A store key inside a namespace: ``(level, position)``."""

Stats = dict[str, int]


def new_stats() -> Stats:
    """A fresh traffic counter dictionary (all zero)."""
    return {"round_trips": 0, "keys_read": 0, "keys_written": 0, "keys_deleted": 0}


@runtime_checkable
class KVStore(Protocol):
    """Structural type of a key-value store backend (see the module docstring)."""

    stats: Stats

    def get(self, ns: str, key: Key) -> bytes | None: ...

    def multi_get(self, ns: str, keys: Sequence[Key]) -> list[bytes | None]: ...

    def put(self, ns: str, key: Key, value: bytes) -> None: ...

    def multi_put(self, ns: str, items: Iterable[tuple[Key, bytes]]) -> None: ...

    def delete(self, ns: str, key: Key) -> None: ...

    def delete_range(self, ns: str, level: int, lo: int, hi: int) -> None: ...

    def positions(self, ns: str, level: int) -> list[int]: ...

    def get_meta(self, ns: str) -> bytes | None: ...

    def commit(
        self,
        ns: str,
        puts: Iterable[tuple[Key, bytes]],
        delete_ranges: Iterable[tuple[int, int, int]],
        meta: bytes | None,
    ) -> None: ...

    def drop_namespace(self, ns: str) -> None: ...

    def close(self) -> None: ...
