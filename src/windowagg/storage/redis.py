"""RedisStore: a networked key-value store backend (a real Redis server).

=================  ===========================================================
durability         as configured on the server (RDB snapshots / AOF); a
                   ``commit`` is one MULTI/EXEC transaction, so readers and a
                   restarted aggregator see all of it or none of it
key layout         ``{prefix}{ns}:L{level}`` is a hash ``position -> bytes``;
                   ``{prefix}{ns}:meta`` holds the metadata record
get / multi_get    one HGET / one pipelined HMGET per level: one round trip
delete_range       HDEL in batches of 1000 fields, O(hi - lo)
client             the ``redis`` package (extra ``windowagg[redis]``)
=================  ===========================================================

Connections are given as a URL: ``redis://host:port/db`` or ``rediss://`` for TLS
(``unix:///path.sock`` also works), with an optional ``password`` (or ``username`` for
ACLs) and TLS options (``ssl_ca_certs``, ``ssl_certfile``, ``ssl_keyfile``,
``ssl_cert_reqs``). Any other keyword is passed to ``redis.Redis.from_url``.

Examples
--------
>>> RedisStore("http://localhost")  # doctest: +IGNORE_EXCEPTION_DETAIL
Traceback (most recent call last):
...
ValueError: RedisStore needs a redis://, rediss:// or unix:// URL, got 'http://localhost'
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from windowagg.errors import MissingExtraError, StorageError
from windowagg.storage.base import Key, Stats, new_stats

__all__ = ["RedisStore"]

_HDEL_BATCH = 1000


class RedisStore:
    """A key-value store on a Redis server.

    Parameters
    ----------
    url
        ``redis://[user:password@]host:port/db``, ``rediss://...`` (TLS) or ``unix://``.
    password, username
        Credentials (override the URL's).
    prefix
        Prepended to every key, so several applications can share a database.
    ssl_ca_certs, ssl_certfile, ssl_keyfile, ssl_cert_reqs
        TLS options for ``rediss://`` URLs (``ssl_cert_reqs`` is ``"required"`` by default
        in the client; ``"none"`` disables verification, for tests only).
    **kwargs
        Passed to ``redis.Redis.from_url`` (for example ``socket_timeout``).
    """

    def __init__(
        self,
        url: str = "redis://localhost:6379/0",
        *,
        password: str | None = None,
        username: str | None = None,
        prefix: str = "windowagg:",
        ssl_ca_certs: str | None = None,
        ssl_certfile: str | None = None,
        ssl_keyfile: str | None = None,
        ssl_cert_reqs: str | None = None,
        **kwargs: Any,
    ) -> None:
        if not url.startswith(("redis://", "rediss://", "unix://")):
            raise ValueError(f"RedisStore needs a redis://, rediss:// or unix:// URL, got {url!r}")
        try:
            import redis
        except ImportError as e:  # pragma: no cover - exercised without the extra
            raise MissingExtraError.for_extra(
                "redis", "redis", "windowagg.storage.RedisStore"
            ) from e
        opts: dict[str, Any] = dict(kwargs)
        if password is not None:
            opts["password"] = password
        if username is not None:
            opts["username"] = username
        if url.startswith("rediss://"):
            for name, val in (
                ("ssl_ca_certs", ssl_ca_certs),
                ("ssl_certfile", ssl_certfile),
                ("ssl_keyfile", ssl_keyfile),
                ("ssl_cert_reqs", ssl_cert_reqs),
            ):
                if val is not None:
                    opts[name] = val
        elif any(v is not None for v in (ssl_ca_certs, ssl_certfile, ssl_keyfile, ssl_cert_reqs)):
            raise ValueError("TLS options need a rediss:// URL")
        self.url = url
        self.prefix = prefix
        self._redis_mod = redis
        self._r = redis.Redis.from_url(url, **opts)
        try:
            self._r.ping()
        except redis.RedisError as e:
            raise StorageError(f"cannot reach Redis at {_safe(url)}: {e}") from e
        self.stats: Stats = new_stats()

    def _hkey(self, ns: str, level: int) -> str:
        return f"{self.prefix}{ns}:L{level}"

    def _mkey(self, ns: str) -> str:
        return f"{self.prefix}{ns}:meta"

    def _fail(self, what: str, e: Exception) -> StorageError:
        return StorageError(f"Redis store {_safe(self.url)}: {what} failed: {e}")

    def get(self, ns: str, key: Key) -> bytes | None:
        """One value or None (one HGET)."""
        self.stats["round_trips"] += 1
        self.stats["keys_read"] += 1
        try:
            v = self._r.hget(self._hkey(ns, key[0]), str(key[1]))
        except self._redis_mod.RedisError as e:
            raise self._fail("get", e) from e
        return None if v is None else _as_bytes(v)

    def multi_get(self, ns: str, keys: Sequence[Key]) -> list[bytes | None]:
        """Values of *keys* in order: one pipelined HMGET per level, one round trip."""
        self.stats["round_trips"] += 1
        self.stats["keys_read"] += len(keys)
        by_level: dict[int, list[int]] = {}
        for lv, pos in keys:
            by_level.setdefault(lv, []).append(pos)
        try:
            pipe = self._r.pipeline(transaction=False)
            order = list(by_level.items())
            for lv, poss in order:
                pipe.hmget(self._hkey(ns, lv), [str(p) for p in poss])
            replies = pipe.execute()
        except self._redis_mod.RedisError as e:
            raise self._fail("multi_get", e) from e
        found: dict[Key, bytes | None] = {}
        for (lv, poss), vals in zip(order, replies, strict=True):
            for p, v in zip(poss, vals, strict=True):
                found[(lv, p)] = None if v is None else _as_bytes(v)
        return [found[k] for k in keys]

    def put(self, ns: str, key: Key, value: bytes) -> None:
        """Write one value."""
        self.multi_put(ns, [(key, value)])

    def multi_put(self, ns: str, items: Iterable[tuple[Key, bytes]]) -> None:
        """Write many values: one pipelined HSET per level, one round trip."""
        self.commit(ns, items, (), None, transaction=False)

    def delete(self, ns: str, key: Key) -> None:
        """Remove one key."""
        self.commit(ns, (), [(key[0], key[1], key[1] + 1)], None, transaction=False)

    def delete_range(self, ns: str, level: int, lo: int, hi: int) -> None:
        """Remove positions ``lo <= pos < hi`` of *level* (HDEL batches). O(hi - lo)."""
        self.commit(ns, (), [(level, lo, hi)], None, transaction=False)

    def positions(self, ns: str, level: int) -> list[int]:
        """The positions *level* holds, ascending (one HKEYS). O(k log k)."""
        self.stats["round_trips"] += 1
        try:
            fields = self._r.hkeys(self._hkey(ns, level))
        except self._redis_mod.RedisError as e:
            raise self._fail("positions", e) from e
        return sorted(int(f) for f in fields)

    def get_meta(self, ns: str) -> bytes | None:
        """The metadata record of *ns* or None."""
        self.stats["round_trips"] += 1
        try:
            v = self._r.get(self._mkey(ns))
        except self._redis_mod.RedisError as e:
            raise self._fail("get_meta", e) from e
        return None if v is None else _as_bytes(v)

    def commit(
        self,
        ns: str,
        puts: Iterable[tuple[Key, bytes]],
        delete_ranges: Iterable[tuple[int, int, int]],
        meta: bytes | None,
        *,
        transaction: bool = True,
    ) -> None:
        """Apply puts, deletes and the metadata record in one MULTI/EXEC transaction."""
        self.stats["round_trips"] += 1
        by_level: dict[int, dict[str, bytes]] = {}
        n_put = 0
        for (lv, pos), value in puts:
            by_level.setdefault(lv, {})[str(pos)] = value
            n_put += 1
        try:
            pipe = self._r.pipeline(transaction=transaction)
            for lv, mapping in by_level.items():
                pipe.hset(self._hkey(ns, lv), mapping=mapping)  # type: ignore[arg-type]
            n_del = 0
            for lv, lo, hi in delete_ranges:
                for a in range(lo, hi, _HDEL_BATCH):
                    fields = [str(p) for p in range(a, min(hi, a + _HDEL_BATCH))]
                    pipe.hdel(self._hkey(ns, lv), *fields)
                    n_del += len(fields)
            if meta is not None:
                pipe.set(self._mkey(ns), meta)
            pipe.execute()
        except self._redis_mod.RedisError as e:
            raise self._fail("commit", e) from e
        self.stats["keys_written"] += n_put
        self.stats["keys_deleted"] += n_del

    def drop_namespace(self, ns: str) -> None:
        """Remove every level hash and the metadata of *ns* (SCAN + UNLINK)."""
        self.stats["round_trips"] += 1
        try:
            keys = list(self._r.scan_iter(match=f"{self.prefix}{ns}:L*", count=1000))
            keys.append(self._mkey(ns))
            self._r.unlink(*keys)
        except self._redis_mod.RedisError as e:
            raise self._fail("drop_namespace", e) from e

    def count_keys(self, ns: str) -> int:
        """Number of positions stored under *ns*, over all levels (for tests)."""
        keys = list(self._r.scan_iter(match=f"{self.prefix}{ns}:L*", count=1000))
        return sum(int(self._r.hlen(k)) for k in keys)

    def close(self) -> None:
        """Close the connection pool."""
        self._r.close()

    def __repr__(self) -> str:
        return f"RedisStore({_safe(self.url)!r})"


def _safe(url: str) -> str:
    """*url* with any password replaced by ``***`` (for messages).

    >>> _safe("redis://user:secret@h:1/0")
    'redis://user:***@h:1/0'
    """
    scheme, sep, rest = url.partition("://")
    if "@" in rest:
        cred, at, host = rest.rpartition("@")
        user = cred.split(":", 1)[0]
        return f"{scheme}{sep}{user}:***{at}{host}"
    return url


def _as_bytes(v: Any) -> bytes:
    if isinstance(v, str):  # only with decode_responses=True
        return v.encode("utf-8", "surrogateescape")
    return bytes(v)
