"""Key-value storage for storage-decoupled aggregators (MTA §4.1.5).

- :class:`KVStore` -- the protocol: namespace + ``(level, position)`` -> bytes, plus one
  metadata record per namespace and an atomic ``commit``.
- :class:`MemoryStore` (default, in process), :class:`SQLiteStore` (embedded, persistent,
  no server) and :class:`RedisStore` (a Redis server; extra ``windowagg[redis]``).
- :func:`open_store` builds one from a URL: ``memory://``, ``sqlite:///path.db``,
  ``redis://...`` / ``rediss://...``.
- :mod:`windowagg.storage.levels` -- how an MTA's level queues are split into local tails,
  a write buffer, per-level head caches and the store.

Everything an aggregator writes is encoded with :mod:`windowagg.codec` (no pickle).

>>> s = open_store("memory://"); s.put("w", (0, 0), b"x"); s.get("w", (0, 0))
b'x'
"""

from __future__ import annotations

from typing import Any

from windowagg.storage.base import Key, KVStore, new_stats
from windowagg.storage.memory import MemoryStore
from windowagg.storage.redis import RedisStore
from windowagg.storage.sqlite import SQLiteStore

__all__ = ["KVStore", "Key", "MemoryStore", "RedisStore", "SQLiteStore", "new_stats", "open_store"]


def open_store(url: str, **options: Any) -> KVStore:
    """A store from a URL: ``memory://``, ``sqlite://`` + a path (``sqlite:///tmp/w.db`` is
    ``/tmp/w.db``; ``sqlite://:memory:``),
    ``redis://`` / ``rediss://`` / ``unix://`` (options go to :class:`RedisStore`).

    >>> open_store("ftp://x")
    Traceback (most recent call last):
    ...
    ValueError: unknown store URL 'ftp://x': use memory://, sqlite:///path.db, redis:// or rediss://
    """
    if url == "memory://":
        return MemoryStore()
    if url.startswith("sqlite://"):
        path = url[len("sqlite://") :]  # sqlite:///tmp/w.db -> /tmp/w.db
        if not path:
            raise ValueError(
                "sqlite:// URL needs a path, e.g. sqlite:///tmp/w.db or sqlite://:memory:"
            )
        return SQLiteStore(path, **options)
    if url.startswith(("redis://", "rediss://", "unix://")):
        return RedisStore(url, **options)
    raise ValueError(
        f"unknown store URL {url!r}: use memory://, sqlite:///path.db, redis:// or rediss://"
    )
