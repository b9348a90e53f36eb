"""SQLiteStore: an embedded, persistent key-value store backend (``sqlite3``, no server).

=================  ===========================================================
durability         every ``commit`` / ``multi_put`` is one SQLite transaction;
                   with the default ``synchronous="NORMAL"`` in WAL mode a
                   committed transaction survives the process being killed
                   (SIGKILL); ``synchronous="FULL"`` also survives power loss
get / put          O(log N) per key (a B-tree on ``(ns, level, pos)``)
delete_range       one ``DELETE ... WHERE pos >= ? AND pos < ?``, O(k + log N)
commit             atomic (``BEGIN IMMEDIATE`` ... ``COMMIT``)
=================  ===========================================================

Why SQLite and not LMDB: it ships with Python (no extra dependency), its transactions
give exactly the atomic checkpoint the aggregators need, and range deletes are one
statement. The layout is one ``WITHOUT ROWID`` table clustered on ``(ns, level, pos)``
plus a metadata table.

Examples
--------
>>> import tempfile, os
>>> d = tempfile.mkdtemp()
>>> s = SQLiteStore(os.path.join(d, "w.db"))
>>> s.multi_put("w", [((0, 0), b"a"), ((0, 1), b"b")])
>>> s.commit("w", [], [(0, 0, 1)], b"m")
>>> s.multi_get("w", [(0, 0), (0, 1)]), s.get_meta("w")
([None, b'b'], b'm')
>>> s.close()
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence
from pathlib import Path

from windowagg.errors import StorageError
from windowagg.storage.base import Key, Stats, new_stats

__all__ = ["SQLiteStore"]

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS kv (ns TEXT NOT NULL, level INTEGER NOT NULL, "
    "pos INTEGER NOT NULL, value BLOB NOT NULL, PRIMARY KEY (ns, level, pos)) WITHOUT ROWID",
    "CREATE TABLE IF NOT EXISTS meta (ns TEXT PRIMARY KEY, value BLOB NOT NULL)",
)
_CHUNK = 400  # parameters per IN (...) query, well below SQLite's limit


class SQLiteStore:
    """A key-value store in one SQLite database file.

    Parameters
    ----------
    path
        Database file (created if absent). ``":memory:"`` works too (not durable).
    synchronous
        SQLite's ``PRAGMA synchronous``: ``"NORMAL"`` (default; durable against process
        crashes in WAL mode) or ``"FULL"`` (also against power loss).
    timeout
        Seconds to wait on a lock held by another connection.
    """

    def __init__(self, path: str | Path, *, synchronous: str = "NORMAL", timeout: float = 30.0):
        if synchronous.upper() not in ("OFF", "NORMAL", "FULL", "EXTRA"):
            raise ValueError(f"synchronous must be OFF, NORMAL, FULL or EXTRA, not {synchronous!r}")
        self.path = str(path)
        try:
            self._db = sqlite3.connect(self.path, timeout=timeout, isolation_level=None)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute(f"PRAGMA synchronous={synchronous.upper()}")
            for stmt in _SCHEMA:
                self._db.execute(stmt)
        except sqlite3.Error as e:
            raise StorageError(f"cannot open SQLite store at {self.path!r}: {e}") from e
        self.stats: Stats = new_stats()

    def _fail(self, what: str, e: Exception) -> StorageError:
        return StorageError(f"SQLite store {self.path!r}: {what} failed: {e}")

    def get(self, ns: str, key: Key) -> bytes | None:
        """One value or None. O(log N)."""
        self.stats["round_trips"] += 1
        self.stats["keys_read"] += 1
        try:
            row = self._db.execute(
                "SELECT value FROM kv WHERE ns=? AND level=? AND pos=?", (ns, key[0], key[1])
            ).fetchone()
        except sqlite3.Error as e:
            raise self._fail("get", e) from e
        return None if row is None else bytes(row[0])

    def multi_get(self, ns: str, keys: Sequence[Key]) -> list[bytes | None]:
        """Values of *keys* in order; one query per level and 400 keys. O(k log N)."""
        self.stats["round_trips"] += 1
        self.stats["keys_read"] += len(keys)
        found: dict[Key, bytes] = {}
        by_level: dict[int, list[int]] = {}
        for lv, pos in keys:
            by_level.setdefault(lv, []).append(pos)
        try:
            for lv, poss in by_level.items():
                for i in range(0, len(poss), _CHUNK):
                    part = poss[i : i + _CHUNK]
                    q = (
                        "SELECT pos, value FROM kv WHERE ns=? AND level=? AND pos IN ("
                        + ",".join("?" * len(part))
                        + ")"
                    )
                    for pos, value in self._db.execute(q, (ns, lv, *part)):
                        found[(lv, pos)] = bytes(value)
        except sqlite3.Error as e:
            raise self._fail("multi_get", e) from e
        return [found.get(k) for k in keys]

    def put(self, ns: str, key: Key, value: bytes) -> None:
        """Write one value (one transaction). O(log N)."""
        self.multi_put(ns, [(key, value)])

    def multi_put(self, ns: str, items: Iterable[tuple[Key, bytes]]) -> None:
        """Write many values in one transaction. O(k log N)."""
        self.commit(ns, items, (), None)

    def delete(self, ns: str, key: Key) -> None:
        """Remove one key. O(log N)."""
        self.commit(ns, (), [(key[0], key[1], key[1] + 1)], None)

    def delete_range(self, ns: str, level: int, lo: int, hi: int) -> None:
        """Remove positions ``lo <= pos < hi`` of *level*. O(k + log N)."""
        self.commit(ns, (), [(level, lo, hi)], None)

    def positions(self, ns: str, level: int) -> list[int]:
        """The positions *level* holds, ascending (one index range scan). O(k + log N)."""
        self.stats["round_trips"] += 1
        try:
            rows = self._db.execute(
                "SELECT pos FROM kv WHERE ns=? AND level=? ORDER BY pos", (ns, level)
            ).fetchall()
        except sqlite3.Error as e:
            raise self._fail("positions", e) from e
        return [int(r[0]) for r in rows]

    def get_meta(self, ns: str) -> bytes | None:
        """The metadata record of *ns* or None."""
        self.stats["round_trips"] += 1
        try:
            row = self._db.execute("SELECT value FROM meta WHERE ns=?", (ns,)).fetchone()
        except sqlite3.Error as e:
            raise self._fail("get_meta", e) from e
        return None if row is None else bytes(row[0])

    def commit(
        self,
        ns: str,
        puts: Iterable[tuple[Key, bytes]],
        delete_ranges: Iterable[tuple[int, int, int]],
        meta: bytes | None,
    ) -> None:
        """Apply puts, deletes and the metadata record in one SQLite transaction (atomic)."""
        self.stats["round_trips"] += 1
        rows = [(ns, lv, pos, value) for (lv, pos), value in puts]
        dels = [(ns, lv, lo, hi) for lv, lo, hi in delete_ranges if hi > lo]
        db = self._db
        try:
            db.execute("BEGIN IMMEDIATE")
            try:
                if rows:
                    db.executemany(
                        "INSERT OR REPLACE INTO kv (ns, level, pos, value) VALUES (?,?,?,?)", rows
                    )
                deleted = 0
                for d in dels:
                    deleted += db.execute(
                        "DELETE FROM kv WHERE ns=? AND level=? AND pos>=? AND pos<?", d
                    ).rowcount
                if meta is not None:
                    db.execute("INSERT OR REPLACE INTO meta (ns, value) VALUES (?, ?)", (ns, meta))
                db.execute("COMMIT")
            except BaseException:
                db.execute("ROLLBACK")
                raise
        except sqlite3.Error as e:
            raise self._fail("commit", e) from e
        self.stats["keys_written"] += len(rows)
        self.stats["keys_deleted"] += deleted

    def drop_namespace(self, ns: str) -> None:
        """Remove every key and the metadata of *ns* (one transaction)."""
        self.stats["round_trips"] += 1
        try:
            self._db.execute("BEGIN IMMEDIATE")
            self._db.execute("DELETE FROM kv WHERE ns=?", (ns,))
            self._db.execute("DELETE FROM meta WHERE ns=?", (ns,))
            self._db.execute("COMMIT")
        except sqlite3.Error as e:
            raise self._fail("drop_namespace", e) from e

    def count_keys(self, ns: str) -> int:
        """Number of keys stored under *ns* (for tests and introspection). O(N)."""
        row = self._db.execute("SELECT COUNT(*) FROM kv WHERE ns=?", (ns,)).fetchone()
        return int(row[0])

    def close(self) -> None:
        """Close the database connection."""
        self._db.close()

    def __repr__(self) -> str:
        return f"SQLiteStore({self.path!r})"
