"""A store-backed LogMTA/AMTA remembers its monoid by a stable identity (issue 13, item 10):
a user monoid's store reopens in another process or with another instance; another monoid
is refused with both identities named."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from windowagg.errors import StorageError
from windowagg.fifo import AMTA, LogMTA
from windowagg.monoids import BloomFilter, Composite, Sum
from windowagg.storage import MemoryStore, SQLiteStore

KW: dict[str, Any] = {"buffer_size": 2, "cache_size": 2, "refill_below": 1, "page_size": 2}


class Longest:
    """A user monoid without a stable repr (the default one holds a memory address)."""

    identity = ""

    def lift(self, x: str) -> str:
        return x

    def combine(self, a: str, b: str) -> str:
        return a if len(a) >= len(b) else b

    def lower(self, a: str) -> str:
        return a


class Shortest(Longest):
    def combine(self, a: str, b: str) -> str:
        return b if not a else a if len(a) <= len(b) else b


class LongestV2(Longest):
    name = "longest"
    version = 2


class LongestV3(LongestV2):
    version = 3


def _filled(cls: type, monoid: Any, store: Any) -> Any:
    w = cls(monoid, store=store, namespace="w", **KW)
    for s in ("a", "bbb", "cc", "dddd", "e"):
        w.insert(s)
    w.flush(5)
    return w


@pytest.mark.parametrize("cls", [LogMTA, AMTA])
def test_user_monoid_store_reopens_with_another_instance(cls: type) -> None:
    store = MemoryStore()
    _filled(cls, Longest(), store)
    again = cls(Longest(), store=store, namespace="w", **KW)  # a new object, a new address
    assert again.query() == "dddd" and again.checkpoint_token == 5


@pytest.mark.parametrize("cls", [LogMTA, AMTA])
def test_another_monoid_is_refused_naming_both(cls: type) -> None:
    store = MemoryStore()
    _filled(cls, Longest(), store)
    with pytest.raises(StorageError) as info:
        cls(Shortest(), store=store, namespace="w", **KW)
    msg = str(info.value)
    assert f"{__name__}.Longest" in msg and f"{__name__}.Shortest" in msg
    assert "on_existing='overwrite'" in msg


@pytest.mark.parametrize("cls", [LogMTA, AMTA])
def test_version_attribute_is_part_of_the_identity(cls: type) -> None:
    store = MemoryStore()
    _filled(cls, LongestV2(), store)
    assert cls(LongestV2(), store=store, namespace="w", **KW).query() == "dddd"
    with pytest.raises(StorageError, match=r"version=2.*version=3"):
        cls(LongestV3(), store=store, namespace="w", **KW)


def test_builtin_parameters_are_part_of_the_identity() -> None:
    store = MemoryStore()
    w = LogMTA(BloomFilter(bits=64, hashes=2), store=store, namespace="w", **KW)
    w.insert("x")
    w.flush()
    with pytest.raises(StorageError, match=r"BloomFilter\(bits=64, hashes=2\)"):
        LogMTA(BloomFilter(bits=128, hashes=2), store=store, namespace="w", **KW)


def test_identity_rules() -> None:
    from windowagg.monoids.base import monoid_identity

    assert monoid_identity(Sum()) == "Sum()"
    assert monoid_identity(Longest()) == f"{__name__}.Longest"
    assert monoid_identity(LongestV2()) == f"{__name__}.LongestV2[name='longest', version=2]"
    assert monoid_identity(Composite(a=Sum(), b=Longest())) == (
        f"Composite(a=Sum(), b={__name__}.Longest)"
    )
    assert " at 0x" not in monoid_identity(Composite(Sum(), Longest()))


def test_user_monoid_store_reopens_in_another_process(tmp_path: Path) -> None:
    """The issue's case: the reopening process has another address for everything."""
    db = tmp_path / "mta.sqlite"
    mod = tmp_path / "user_monoids.py"
    mod.write_text(
        "class Longest:\n"
        "    identity = ''\n"
        "    def lift(self, x): return x\n"
        "    def combine(self, a, b): return a if len(a) >= len(b) else b\n"
        "    def lower(self, a): return a\n"
    )
    src = str(Path(__file__).resolve().parents[2] / "src")
    code = (
        "import sys\n"
        "from user_monoids import Longest\n"
        "from windowagg.fifo import LogMTA\n"
        "from windowagg.storage import SQLiteStore\n"
        f"s = SQLiteStore({str(db)!r})\n"
        "w = LogMTA(Longest(), store=s, namespace='w', page_size=2)\n"
        "if sys.argv[1] == 'write':\n"
        "    [w.insert(x) for x in ('a', 'bbb', 'cc')]\n"
        "    w.flush(3)\n"
        "print(w.query(), w.checkpoint_token)\n"
        "s.close()\n"
    )
    env = {"PYTHONPATH": f"{src}:{tmp_path}", "PATH": "/usr/bin:/bin"}
    for step, expected in (("write", "bbb 3"), ("read", "bbb 3")):
        r = subprocess.run(
            [sys.executable, "-c", code, step], capture_output=True, text=True, env=env, timeout=120
        )
        assert r.returncode == 0, r.stderr
        assert r.stdout.strip() == expected
    SQLiteStore(db).close()
