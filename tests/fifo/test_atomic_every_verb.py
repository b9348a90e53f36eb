"""Issue 26 defect 4: every mutating verb of every FIFO class, with a combine that raises once.

A ``Bomb`` wraps ``Concat`` (not commutative, so an order slip shows) and raises at the
N-th ``combine`` of a call, N random. After every call that raised: ``_check()`` passes,
and the window is the one the contract promises, compared with the oracle
(:class:`windowagg.fifo.Recalc` over the same partials):

- every verb (``insert``, ``evict``, ``bulk_evict``, ``bulk_insert`` and ``slide``)
  changes nothing (``bulk_insert`` and ``slide`` undo the steps done before the failing
  one: ``windowagg.fifo._verbs``; the combine raises once, so the undo can be done).

Every class runs on the default backend (the native twin where there is one: run this
module again with ``WINDOWAGG_BACKEND=python`` for the pure-Python reference), and
``AMTA`` and ``LogMTA`` also over the in-memory and the SQLite stores, with tiny buffers and
caches so that flushes, refills and misses happen.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest

from windowagg import fifo
from windowagg.monoids import Concat
from windowagg.storage import MemoryStore, SQLiteStore


class Boom(RuntimeError):
    pass


class Bomb:
    """Concat whose combine raises once, at the ``fuse``-th call after ``arm(fuse)``."""

    def __init__(self) -> None:
        self.inner = Concat()
        self.identity = self.inner.identity
        self.fuse: int | None = None
        self.fired = False

    def arm(self, fuse: int) -> None:
        self.fuse, self.fired = fuse, False

    def disarm(self) -> None:
        self.fuse = None

    def lift(self, x: Any) -> Any:
        return self.inner.lift(x)

    def combine(self, a: Any, b: Any) -> Any:
        if self.fuse is not None:
            if self.fuse == 0:
                self.fuse, self.fired = None, True
                raise Boom("combine refused")
            self.fuse -= 1
        return self.inner.combine(a, b)

    def lower(self, a: Any) -> Any:
        return self.inner.lower(a)

    def __repr__(self) -> str:
        return "Bomb()"


_SMALL = {"buffer_size": 3, "cache_size": 4, "refill_below": 2, "page_size": 2}


def _stored(cls: Any, kind: str) -> Any:
    def make(m: Any, tmp: Path) -> Any:
        tmp.mkdir(parents=True, exist_ok=True)
        store = MemoryStore() if kind == "memory" else SQLiteStore(tmp / "w.db")
        return cls(m, store=store, namespace="w", **_SMALL)

    return make


def _plain(cls: Any, **kw: Any) -> Any:
    def make(m: Any, tmp: Path) -> Any:
        return cls(m, **kw)

    return make


CLASSES: dict[str, Any] = {
    "Recalc": _plain(fifo.Recalc),
    "TwoStacks": _plain(fifo.TwoStacks),
    "TwoStacksLite": _plain(fifo.TwoStacksLite),
    "FOA": _plain(fifo.FOA),
    "IOA": _plain(fifo.IOA),
    "DABA": _plain(fifo.DABA),
    "DABAChunked": _plain(fifo.DABAChunked, chunk_size=2),
    "DABALite": _plain(fifo.DABALite),
    "FlatFAT": _plain(fifo.FlatFAT),
    "FlatFIT": _plain(fifo.FlatFIT),
    "LogMTA": _plain(fifo.LogMTA),
    "AMTA": _plain(fifo.AMTA),
    "AMTA-bulk_after0": _plain(fifo.AMTA, bulk_after=0),
    "AMTA@memory": _stored(fifo.AMTA, "memory"),
    "AMTA@sqlite": _stored(fifo.AMTA, "sqlite"),
    "LogMTA@memory": _stored(fifo.LogMTA, "memory"),
    "LogMTA@sqlite": _stored(fifo.LogMTA, "sqlite"),
}


def _oracle(partials: list[Any]) -> Any:
    o = fifo.Recalc(Concat())
    o._load_partials(partials)
    return o.query()


def _whole(w: Any, what: str) -> list[Any]:
    """``_check()`` passes and ``query()`` equals the oracle over the window's partials."""
    w._check()
    got = list(w)
    assert w.query() == _oracle(got), what
    assert len(w) == len(got), what
    return got


def _drive(make: Any, seed: int, tmp: Path, steps: int) -> dict[str, int]:
    rng = random.Random(seed)
    m = Bomb()
    w = make(m, tmp)
    model: list[Any] = []
    raised: dict[str, int] = {}
    nxt = 0
    for step in range(steps):
        n = len(model)
        op = rng.choice(["insert", "insert", "evict", "bulk_evict", "bulk_insert", "slide"])
        if op in ("evict", "slide") and not n:
            op = "insert"
        m.arm(rng.randint(0, 12))
        states = [list(model)]  # the states the steps of a call pass through, oldest first
        try:
            if op == "insert":
                w.insert(nxt)
                model.append((nxt,))
                nxt += 1
            elif op == "evict":
                w.evict()
                del model[0]
            elif op == "bulk_evict":
                k = rng.randint(0, n)
                w.bulk_evict(k)
                del model[:k]
            elif op == "bulk_insert":
                vals = list(range(nxt, nxt + rng.randint(0, 6)))
                nxt += len(vals)
                for v in vals:
                    states.append([*states[-1], (v,)])
                w.bulk_insert(vals)
                model = states[-1]
            else:
                vals = list(range(nxt, nxt + rng.randint(1, 4)))
                nxt += len(vals)
                counts, size = [], n
                for _ in vals:
                    k = rng.randint(0, size)
                    counts.append(k)
                    size += 1 - k
                cur = states[-1]
                for v, k in zip(vals, counts, strict=True):
                    if k:
                        cur = cur[k:]
                        states.append(cur)
                    cur = [*cur, (v,)]
                    states.append(cur)
                w.slide(vals, evict=counts)
                model = states[-1]
        except Boom:
            m.disarm()
            raised[op] = raised.get(op, 0) + 1
            got = _whole(w, f"seed {seed} step {step}: {op} raised")
            assert got == states[0], f"seed {seed} step {step}: a failed {op} changed the window"
            model = states[0]
            continue
        finally:
            m.disarm()
        got = _whole(w, f"seed {seed} step {step}: {op}")
        assert got == model, f"seed {seed} step {step}: {op}"
    return raised


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("name", sorted(CLASSES))
def test_a_combine_that_raises_once_leaves_a_whole_window(
    name: str, seed: int, tmp_path: Path
) -> None:
    raised = _drive(CLASSES[name], seed, tmp_path, steps=150)
    assert raised, "no call raised: the drive tested nothing"


@pytest.mark.parametrize("name", ["AMTA", "AMTA@sqlite", "LogMTA", "DABA", "FlatFAT"])
def test_every_verb_raised_somewhere(name: str, tmp_path: Path) -> None:
    """The driver reaches every verb's failure (else a verb would go untested)."""
    total: dict[str, int] = {}
    for seed in (1, 2, 3):
        # 300 steps: a failed call no longer leaves its first steps done, so windows grow
        # slower, and AMTA's evictions combine only when a level's head runs out
        for k, v in _drive(CLASSES[name], seed, tmp_path / str(seed), steps=300).items():
            total[k] = total.get(k, 0) + v
    assert set(total) == {"insert", "evict", "bulk_evict", "bulk_insert", "slide"}, total
