"""The KVStore protocol on every backend: MemoryStore, SQLiteStore, RedisStore."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from storage.mta_redis_server import PASSWORD, redis_url
from windowagg import codec
from windowagg.errors import StorageError
from windowagg.fifo.amta import AMTA
from windowagg.fifo.log_mta import LogMTA
from windowagg.monoids import Sum
from windowagg.storage import KVStore, MemoryStore, RedisStore, SQLiteStore, open_store
from windowagg.storage.levels import EMPTY, decode_pair, encode_pair


@pytest.fixture(params=["memory", "sqlite", "redis"])
def store(request: Any, tmp_path: Path) -> Iterator[KVStore]:
    s: Any
    if request.param == "memory":
        s = MemoryStore()
    elif request.param == "sqlite":
        s = SQLiteStore(tmp_path / "kv.db")
    else:
        s = RedisStore(redis_url(), prefix=f"kvtest-{uuid.uuid4().hex}:")
    yield s
    s.close()


def test_protocol_round_trip(store: KVStore) -> None:
    assert isinstance(store, KVStore)
    ns = "w"
    assert store.get(ns, (0, 0)) is None and store.get_meta(ns) is None
    store.put(ns, (0, 0), b"a")
    store.multi_put(ns, [((0, 1), b"b"), ((0, 2), b"c"), ((1, 0), b"d"), ((0, 9), b"\x00\xff")])
    assert store.multi_get(ns, [(0, 2), (0, 0), (1, 0), (3, 3), (0, 9)]) == [
        b"c",
        b"a",
        b"d",
        None,
        b"\x00\xff",
    ]
    assert store.multi_get(ns, []) == []
    store.delete(ns, (0, 0))
    store.delete_range(ns, 0, 1, 3)
    assert store.multi_get(ns, [(0, 0), (0, 1), (0, 2), (0, 9)]) == [None, None, None, b"\x00\xff"]
    store.delete_range(ns, 0, 5, 5)  # empty range is fine
    store.commit(ns, [((2, 0), b"e"), ((0, 9), b"f")], [(1, 0, 1)], b"meta1")
    assert store.get(ns, (2, 0)) == b"e" and store.get(ns, (1, 0)) is None
    assert store.get(ns, (0, 9)) == b"f" and store.get_meta(ns) == b"meta1"
    assert store.get("other", (2, 0)) is None  # namespaces are separate
    store.drop_namespace(ns)
    assert store.get(ns, (2, 0)) is None and store.get_meta(ns) is None
    assert store.stats["round_trips"] > 0 and store.stats["keys_written"] >= 7


def test_positions_lists_a_level_ascending(store: KVStore) -> None:
    ns = "w"
    assert store.positions(ns, 3) == []
    store.commit(ns, [((3, 7), b"a"), ((3, -1), b"h"), ((3, 2), b"b"), ((4, 0), b"c")], [], None)
    assert store.positions(ns, 3) == [-1, 2, 7] and store.positions(ns, 4) == [0]
    store.commit(ns, [], [(3, 2, 3)], None)
    assert store.positions(ns, 3) == [-1, 7] and store.positions("other", 3) == []


def test_large_ranges_and_many_keys(store: KVStore) -> None:
    items = [((0, p), codec.dumps(p)) for p in range(2500)]
    store.multi_put("big", items)
    got = store.multi_get("big", [(0, p) for p in range(0, 2500, 7)])
    assert [codec.loads(g) for g in got if g is not None] == list(range(0, 2500, 7))
    store.delete_range("big", 0, 0, 2400)
    assert store.multi_get("big", [(0, 2399), (0, 2400)]) == [None, codec.dumps(2400)]
    store.drop_namespace("big")


def test_sqlite_commit_is_atomic(tmp_path: Path) -> None:
    s = SQLiteStore(tmp_path / "a.db")
    s.commit("w", [((0, 0), b"x")], [], b"m0")

    class Boom:
        def __iter__(self) -> Iterator[tuple[int, int, int]]:
            yield (0, 0, 1)
            raise RuntimeError("disk on fire")

    with pytest.raises(RuntimeError):
        s.commit("w", [((0, 1), b"y")], Boom(), b"m1")  # type: ignore[arg-type]
    assert s.get("w", (0, 0)) == b"x" and s.get("w", (0, 1)) is None
    assert s.get_meta("w") == b"m0"
    s.close()


def test_sqlite_errors_are_storage_errors(tmp_path: Path) -> None:
    with pytest.raises(StorageError, match="cannot open"):
        SQLiteStore(tmp_path / "missing-dir" / "x.db")
    with pytest.raises(ValueError):
        SQLiteStore(tmp_path / "x.db", synchronous="SOMETIMES")
    s = SQLiteStore(tmp_path / "x.db")
    s.close()
    with pytest.raises(StorageError, match="get"):
        s.get("w", (0, 0))


def test_open_store_urls(tmp_path: Path) -> None:
    assert isinstance(open_store("memory://"), MemoryStore)
    s = open_store(f"sqlite://{tmp_path / 'u.db'}")
    assert isinstance(s, SQLiteStore) and s.path == str(tmp_path / "u.db")
    s.close()
    with pytest.raises(ValueError):
        open_store("sqlite://")
    with pytest.raises(ValueError, match="unknown store URL"):
        open_store("s3://bucket")
    r = open_store(redis_url())
    assert isinstance(r, RedisStore)
    r.close()


def test_redis_password_required_and_url_errors() -> None:
    url = redis_url()
    bare = url.replace(f":{PASSWORD}@", "")
    with pytest.raises(StorageError, match="cannot reach Redis") as e:
        RedisStore(bare)
    assert PASSWORD not in str(e.value)
    with pytest.raises(StorageError) as e2:
        RedisStore(bare, password="wrong-password")
    assert "wrong-password" not in str(e2.value)
    ok = RedisStore(bare, password=PASSWORD)
    ok.put("w", (0, 0), b"x")
    assert ok.get("w", (0, 0)) == b"x"
    ok.drop_namespace("w")
    ok.close()
    with pytest.raises(ValueError, match="rediss://"):
        RedisStore(bare, ssl_ca_certs="/nonexistent")
    with pytest.raises(ValueError):
        RedisStore("http://localhost:6379")


def test_redis_tls(tmp_path: Path) -> None:
    """rediss:// with a CA certificate, against a redis-server with a TLS port."""
    import shutil
    import subprocess

    from storage.mta_redis_server import require_redis_server, start_server

    exe = require_redis_server()
    openssl = shutil.which("openssl")
    if openssl is None:  # pragma: no cover - openssl ships with the CI image
        pytest.skip("openssl is needed to make a test certificate")
    key, crt = tmp_path / "k.pem", tmp_path / "c.pem"
    subprocess.run(
        [openssl, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key),
         "-out", str(crt), "-days", "1", "-subj", "/CN=localhost",
         "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"],
        check=True, capture_output=True,
    )  # fmt: skip
    import socket

    with socket.socket() as sk:
        sk.bind(("127.0.0.1", 0))
        tls_port = sk.getsockname()[1]
    try:
        proc, _port, d = start_server(
            exe,
            ["--tls-port", str(tls_port), "--tls-cert-file", str(crt),
             "--tls-key-file", str(key), "--tls-ca-cert-file", str(crt),
             "--tls-auth-clients", "no"],
        )  # fmt: skip
    except RuntimeError as e:
        if "tls" in str(e).lower() or "TLS" in str(e):
            pytest.skip(f"this redis-server was built without TLS: {e}")
        raise
    try:
        s = RedisStore(f"rediss://127.0.0.1:{tls_port}/0", password=PASSWORD, ssl_ca_certs=str(crt))
        w = AMTA(Sum(), store=s, namespace="tls", buffer_size=4, cache_size=4, refill_below=2)
        for i in range(50):
            w.insert(i)
        w.bulk_evict(20)
        w.flush(token=50)
        assert w.query() == sum(range(20, 50))
        again = AMTA(Sum(), store=s, namespace="tls", buffer_size=4, cache_size=4, refill_below=2)
        assert again.query() == sum(range(20, 50)) and again.checkpoint_token == 50
        again._check()
        s.close()
        with pytest.raises(StorageError):
            RedisStore(f"rediss://127.0.0.1:{tls_port}/0", password=PASSWORD)  # unverified CA
    finally:
        proc.terminate()
        proc.wait(timeout=5)
        shutil.rmtree(d, ignore_errors=True)


def test_pair_codec_and_corruption_detected() -> None:
    for pair in ([1, EMPTY], [EMPTY, (2, 3)], ["a", "b"], [None, 0]):
        assert list(decode_pair(encode_pair(pair))) == pair
    with pytest.raises(StorageError):
        decode_pair(b"garbage")
    with pytest.raises(StorageError):
        decode_pair(codec.dumps((9, 1)))


@pytest.mark.parametrize("cls", [LogMTA, AMTA])
def test_missing_or_corrupt_store_data_is_a_storage_error(cls: Any) -> None:
    store = MemoryStore()
    kw: dict[str, Any] = {"buffer_size": 2, "cache_size": 2, "refill_below": 1, "page_size": 2}
    w = cls(Sum(), store=store, namespace="w", **kw)
    for i in range(64):
        w.insert(i)
    w.flush()
    fresh = cls(Sum(), store=store, namespace="w", **kw)
    store.drop_namespace("w")
    store.commit("w", [], [], codec.dumps({"format": 1}))
    with pytest.raises(StorageError):
        cls(Sum(), store=store, namespace="w", **kw)
    with pytest.raises(StorageError, match="missing"):
        fresh.bulk_evict(10)
        fresh.evict()
        list(fresh)
    store2 = MemoryStore()
    store2.commit("w", [], [], b"not a codec record")
    with pytest.raises(StorageError, match="decode"):
        cls(Sum(), store=store2, namespace="w")


def test_redis_missing_binary_message(monkeypatch: pytest.MonkeyPatch) -> None:
    from storage import mta_redis_server

    monkeypatch.setattr(mta_redis_server.shutil, "which", lambda name: None)
    monkeypatch.setenv("CI", "1")
    with pytest.raises(pytest.fail.Exception, match="redis-server is not installed"):
        mta_redis_server.require_redis_server()
    monkeypatch.delenv("CI")
    with pytest.raises(pytest.skip.Exception, match="redis-server is not installed"):
        mta_redis_server.require_redis_server()
    assert os.environ.get("CI") is None


class FlakyStore(MemoryStore):
    """A MemoryStore whose writes fail while ``down`` is set (a store outage)."""

    down = False

    def multi_put(self, ns: str, items: Any) -> None:
        if self.down:
            raise StorageError("store is down (test)")
        super().multi_put(ns, items)

    def commit(self, ns: str, puts: Any, delete_ranges: Any, meta: Any) -> None:
        if self.down:
            raise StorageError("store is down (test)")
        super().commit(ns, puts, delete_ranges, meta)


@pytest.mark.parametrize("cls", [LogMTA, AMTA])
def test_store_outage_and_bad_values_leave_the_window_unchanged(cls: Any) -> None:
    from windowagg.fifo.recalc import Recalc
    from windowagg.monoids import Concat

    store = FlakyStore()
    kw: dict[str, Any] = {"buffer_size": 4, "cache_size": 4, "refill_below": 2, "page_size": 2}
    w = cls(Concat(), store=store, namespace="w", **kw)
    ref = Recalc(Concat())
    failures = 0
    for i in range(300):
        store.down = i % 7 in (3, 4)
        try:
            w.insert(i)
        except StorageError:
            failures += 1  # nothing changed: the reference does not get it either
        else:
            ref.insert(i)
        store.down = False
        if i % 5 == 4:
            w.bulk_evict(len(w) // 3)
            ref.bulk_evict(len(ref) // 3)
        assert list(w) == list(ref) and w.query() == ref.query()
        w._check()
    assert failures > 0
    store.down = True
    with pytest.raises(StorageError):
        w.flush(token=1)
    store.down = False
    w.flush(token=2)
    again = cls(Concat(), store=store, namespace="w", **kw)
    assert list(again) == list(ref) and again.checkpoint_token == 2
    with pytest.raises(StorageError, match="not encodable"):
        w.insert(object())
    assert list(w) == list(ref)
    w._check()


@pytest.mark.parametrize("seed", range(0, 40))
def test_crash_and_reopen_cycles(seed: int) -> None:
    """Random inserts / bulk evictions / flush+reopen / crash+reopen (no flush) with pages
    of 2: a reopened window must hold exactly the contents of its last flush, also when
    the dead process had already written pages beyond that checkpoint (regression: such
    entries made an open page look complete and the next flush dropped a pair)."""
    import random
    from collections import deque

    from windowagg.fifo.recalc import Recalc
    from windowagg.monoids import Concat

    rnd = random.Random(seed)
    m = Concat()
    store = MemoryStore()
    kw: dict[str, Any] = {"buffer_size": 3, "cache_size": 4, "refill_below": 2, "page_size": 2}
    specs = [(LogMTA, "a"), (AMTA, "b")]
    wins = [cls(m, store=store, namespace=ns, **kw) for cls, ns in specs]
    ref = Recalc(m)
    vals: deque[int] = deque()
    saved: list[int] = []
    c = 0
    for _ in range(150):
        op = rnd.random()
        if op < 0.5:
            for w in wins:
                w.insert(c)
            ref.insert(c)
            vals.append(c)
            c += 1
        elif op < 0.7 and len(ref):
            k = rnd.randint(0, len(ref))
            for w in wins:
                w.bulk_evict(k)
            ref.bulk_evict(k)
            for _ in range(k):
                vals.popleft()
        elif op < 0.85:
            for i, (cls, ns) in enumerate(specs):
                wins[i].flush(token=len(vals))
                wins[i] = cls(m, store=store, namespace=ns, **kw)
            saved = list(vals)
        else:
            wins = [cls(m, store=store, namespace=ns, **kw) for cls, ns in specs]
            ref = Recalc(m)
            for v in saved:
                ref.insert(v)
            vals = deque(saved)
        for w in wins:
            w._check()
            assert list(w) == list(ref)
