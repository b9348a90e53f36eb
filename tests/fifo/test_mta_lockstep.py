"""LogMTA and AMTA in lockstep with fifo.Recalc, over every storage backend.

Two Hypothesis state machines, each run once per backend (in process, MemoryStore,
SQLite in a temp dir, Redis on a throwaway server) with tiny buffer / cache / page sizes
so that every store path (flushes, refills, misses, page merges) is exercised:

- ``PlainMachine``: insert, bursts of inserts, evict, bulk_evict (any count, bursty),
  invalid bulk_evict (must raise and change nothing), over the monoid matrix
  (non-commutative Concat / First / Last / MatMul2x2, idempotent Max, Sum);
- ``PolicyMachine``: a composite monoid (Max timestamp, Count, Sum, Last, and Concat or
  MatMul2x2) with count-, time- and custom-policy windows and bursty timestamps; the
  native O(log n) enforcement of both MTAs must evict exactly what the generic loop
  (``enforce_policy``) evicts on Recalc.

``_check()`` runs after every step.
"""

from __future__ import annotations

import math
import os
import tempfile
import uuid
from collections import deque
from typing import Any

import pytest
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
)

from storage.mta_redis_server import redis_url
from support import MONOID_MATRIX, values_for
from windowagg.errors import EmptyWindowError
from windowagg.fifo.amta import AMTA
from windowagg.fifo.log_mta import LogMTA
from windowagg.fifo.recalc import Recalc
from windowagg.fifo.wsp import CountWindow, TimeWindow, enforce_policy
from windowagg.monoids import Composite, Concat, Count, Last, MatMul2x2, Max, Sum
from windowagg.storage import MemoryStore, RedisStore, SQLiteStore

_TMP = tempfile.mkdtemp(prefix="windowagg-mta-")
BACKENDS = ["local", "memory", "sqlite", "redis"]


def make_store_kwargs(backend: str) -> tuple[dict[str, Any], Any]:
    """Aggregator keyword arguments for *backend* (tiny sizes) and the store (or None)."""
    if backend == "local":
        return {}, None
    small: dict[str, Any] = {"buffer_size": 3, "cache_size": 4, "refill_below": 2}
    ns = uuid.uuid4().hex
    store: Any
    if backend == "memory":
        store = MemoryStore()
        small["page_size"] = 1
    elif backend == "sqlite":
        store = SQLiteStore(os.path.join(_TMP, ns + ".db"))
        small["page_size"] = 2
    else:
        store = RedisStore(redis_url(), prefix="t:")
        small["page_size"] = 3
    return {"store": store, "namespace": ns, **small}, store


def close_store(store: Any, namespaces: list[str]) -> None:
    if store is None:
        return
    for ns in namespaces:
        store.drop_namespace(ns)
    store.close()


class _Base(RuleBasedStateMachine):
    backend = "local"

    def __init__(self) -> None:
        super().__init__()
        self.ref: Any = None
        self.wins: list[Any] = []
        self.stores: list[tuple[Any, str]] = []
        self.specs: list[tuple[Any, dict[str, Any]]] = []
        self.values: deque[Any] = deque()  # the raw inputs in the window, oldest first
        self.saved: list[Any] = []  # ... at the last flush

    def _build(self, monoid: Any, bulk_after: float, **extra: Any) -> None:
        self.monoid = monoid
        self.ref = Recalc(monoid)
        for cls, kw in ((LogMTA, {}), (AMTA, {"bulk_after": bulk_after})):
            skw, store = make_store_kwargs(self.backend)
            self.specs.append((cls, {**skw, **kw, **extra}))
            self.wins.append(cls(monoid, **skw, **kw, **extra))
            if store is not None:
                self.stores.append((store, skw["namespace"]))

    def _evicted(self, k: int) -> None:
        for _ in range(k):
            self.values.popleft()

    @precondition(lambda self: self.ref is not None and self.backend != "local")
    @rule()
    def flush_and_reopen(self) -> None:
        """Checkpoint, then continue on a new aggregator object built from the store."""
        token = ("t", len(self.values))
        for i, (cls, kw) in enumerate(self.specs):
            self.wins[i].flush(token=token)
            self.wins[i] = cls(self.monoid, **kw)
            assert self.wins[i].checkpoint_token == token
        self.saved = list(self.values)

    @precondition(lambda self: self.ref is not None and self.backend != "local")
    @rule()
    def crash_and_reopen(self) -> None:
        """Lose the process state: a new aggregator resumes at the last flush."""
        for i, (cls, kw) in enumerate(self.specs):
            self.wins[i] = cls(self.monoid, **kw)
        self.ref = Recalc(self.monoid)
        for v in self.saved:
            self.ref.insert(v)
        self.values = deque(self.saved)

    def teardown(self) -> None:
        for store, ns in self.stores:
            close_store(store, [ns])

    def _agree(self) -> None:
        ref = self.ref
        if ref is None:
            return
        expect = ref.query()
        n = len(ref)
        entries = list(ref)
        for w in self.wins:
            w._check()
            assert len(w) == n, (type(w).__name__, len(w), n)
            assert w.query() == expect, (type(w).__name__, w.query(), expect)
            assert list(w) == entries
            if n:
                assert w.oldest_partial() == ref.oldest_partial()
                assert w.youngest_partial() == ref.youngest_partial()
            else:
                with pytest.raises(EmptyWindowError):
                    w.oldest_partial()


class PlainMachine(_Base):
    @initialize(name=st.sampled_from(sorted(MONOID_MATRIX)), c=st.sampled_from([0, 1, 2, math.inf]))
    def setup(self, name: str, c: float) -> None:
        self.name = name
        self._build(MONOID_MATRIX[name], c)

    @rule(data=st.data())
    def insert(self, data: st.DataObject) -> None:
        v = data.draw(values_for(self.name))
        self.ref.insert(v)
        self.values.append(v)
        for w in self.wins:
            w.insert(v)

    @rule(data=st.data(), k=st.integers(1, 40))
    def insert_burst(self, data: st.DataObject, k: int) -> None:
        vs = data.draw(st.lists(values_for(self.name), min_size=k, max_size=k))
        for v in vs:
            self.ref.insert(v)
            self.values.append(v)
            for w in self.wins:
                w.insert(v)

    @precondition(lambda self: self.ref is not None and len(self.ref) > 0)
    @rule()
    def evict(self) -> None:
        self.ref.evict()
        self._evicted(1)
        for w in self.wins:
            w.evict()

    @precondition(lambda self: self.ref is not None)
    @rule(frac=st.sampled_from([0.0, 0.25, 0.5, 0.9, 1.0]) | st.floats(0, 1))
    def bulk_evict(self, frac: float) -> None:
        k = round(frac * len(self.ref))
        self.ref.bulk_evict(k)
        self._evicted(k)
        for w in self.wins:
            w.bulk_evict(k)

    @precondition(lambda self: self.ref is not None)
    @rule(extra=st.integers(1, 3))
    def bulk_evict_too_many(self, extra: int) -> None:
        k = len(self.ref) + extra
        for w in self.wins:
            with pytest.raises(EmptyWindowError):
                w.bulk_evict(k)
            with pytest.raises(EmptyWindowError):
                w.bulk_evict(-extra)

    @precondition(lambda self: self.ref is not None and len(self.ref) == 0)
    @rule()
    def evict_empty(self) -> None:
        for w in self.wins:
            with pytest.raises(EmptyWindowError):
                w.evict()

    @invariant()
    def agree(self) -> None:
        self._agree()


# (ts: Max, count: Count, sum: Sum, last: Last, payload: Concat or MatMul2x2)
def composite(inner: Any) -> Composite:
    return Composite(Max(), Count(), Sum(), Last(), inner)


def sum_bound(bound: int) -> Any:
    """MTA §3.2: keep the newest suffix with sum <= bound (prefix-monotone for sums >= 0)."""

    def policy(total: Any, prefix: Any) -> bool:
        return bool(total[2] - prefix[2] + prefix[3] > bound)

    return policy


POLICIES = {
    "time": lambda p: TimeWindow(p, time=0),
    "time0": lambda p: TimeWindow(0, time=0),
    "count_field": lambda p: CountWindow(p, count=1),
    "count_native": lambda p: CountWindow(p),
    "sum_bound": lambda p: sum_bound(3 * p),
}


class PolicyMachine(_Base):
    @initialize(
        inner=st.sampled_from(["concat", "matmul2x2"]),
        kind=st.sampled_from(sorted(POLICIES)),
        param=st.integers(1, 12),
        c=st.sampled_from([0, 1, math.inf]),
    )
    def setup(self, inner: str, kind: str, param: int, c: float) -> None:
        self.inner = inner
        self.policy = POLICIES[kind](param)
        self.t = 0
        self.i = 0
        self._build(
            composite(Concat() if inner == "concat" else MatMul2x2()), c, policy=self.policy
        )

    def _value(self, dt: int, s: int) -> tuple[Any, ...]:
        self.t += dt
        self.i += 1
        payload = self.i if self.inner == "concat" else (1, self.i % 5, 0, 1)
        return (self.t, None, s, s, payload)

    def _enforce_all(self) -> None:
        before = len(self.ref)
        k = enforce_policy(self.ref, self.policy)
        self._evicted(k)
        for w in self.wins:
            n0 = len(w)
            assert n0 == before
            w.enforce()
            assert n0 - len(w) == k, (type(w).__name__, n0 - len(w), k)

    @rule(dt=st.sampled_from([0, 0, 1, 1, 2, 5, 20]), s=st.integers(0, 9))
    def insert_and_enforce(self, dt: int, s: int) -> None:
        v = self._value(dt, s)
        self.ref.insert(v)
        self.values.append(v)
        for w in self.wins:
            w.insert(v)
        self._enforce_all()

    @rule(steps=st.lists(st.tuples(st.sampled_from([0, 0, 1, 3]), st.integers(0, 9)), max_size=30))
    def burst_then_enforce(self, steps: list[tuple[int, int]]) -> None:
        for dt, s in steps:
            v = self._value(dt, s)
            self.ref.insert(v)
            self.values.append(v)
            for w in self.wins:
                w.insert(v)
        self._enforce_all()

    @rule(dt=st.integers(0, 3), s=st.integers(0, 9))
    def pipeline(self, dt: int, s: int) -> None:
        v = self._value(dt, s)
        self.ref.insert(v)
        self.values.append(v)
        k = enforce_policy(self.ref, self.policy)
        self._evicted(k)
        for w in self.wins:
            n0 = len(w) + 1
            w.insert_and_enforce(v)
            assert n0 - len(w) == k

    @invariant()
    def agree(self) -> None:
        self._agree()


def _testcase(machine: type[RuleBasedStateMachine], backend: str) -> Any:
    cls = type(f"{machine.__name__}_{backend}", (machine,), {"backend": backend})
    return cls.TestCase


TestPlainLocal = _testcase(PlainMachine, "local")
TestPlainMemory = _testcase(PlainMachine, "memory")
TestPlainSQLite = _testcase(PlainMachine, "sqlite")
TestPlainRedis = _testcase(PlainMachine, "redis")
TestPolicyLocal = _testcase(PolicyMachine, "local")
TestPolicyMemory = _testcase(PolicyMachine, "memory")
TestPolicySQLite = _testcase(PolicyMachine, "sqlite")
TestPolicyRedis = _testcase(PolicyMachine, "redis")
