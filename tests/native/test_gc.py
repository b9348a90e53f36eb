"""Cyclic garbage collection of the native classes (their tp_traverse and tp_clear).

A native window owns Python objects (its monoid and the monoid's bound methods; on the
generic path every partial, and FiBA's timestamps once they are not int64; a key function;
OrderStatistics' values once they are not numbers), so a reference cycle through it must be
visible to the collector: else it is never freed, and at exit nanobind reports the window as
"leaked". The traversal must also never visit a reference twice (the collector would then
free live objects), which the stress test below checks by collecting inside the monoid's own
methods, in the middle of operations, with the Python backend as the oracle.
"""

from __future__ import annotations

import ctypes
import functools
import gc
import os
import random
import subprocess
import sys
import textwrap
import weakref
from collections.abc import Callable
from typing import Any, ClassVar

import pytest

import windowagg
from windowagg import OrderStatistics
from windowagg._backend import native_core
from windowagg.errors import StateError
from windowagg.fifo import AMTA, DABA, DABALite, TwoStacksLite
from windowagg.monoids import ArgMax
from windowagg.ooo import FiBA

_core = native_core()
WINDOWS = ["FiBA", "TwoStacksLite", "DABALite", "DABA"] + (
    ["AMTA"] if hasattr(_core, "AMTA") else []
)
CLASSES = [*WINDOWS, "OrderStatistics"]
FIFO: dict[str, Any] = {
    "TwoStacksLite": TwoStacksLite,
    "DABALite": DABALite,
    "DABA": DABA,
    "AMTA": AMTA,
}


def window(name: str, monoid: Any, backend: str = "native") -> Any:
    if name == "FiBA":
        return FiBA(monoid, min_arity=2, backend=backend)
    return FIFO[name](monoid, backend=backend)


def put(w: Any, name: str, t: Any, v: Any) -> None:
    if name == "FiBA":
        w.insert(t, v)
    else:
        w.insert(v)


class Lists:
    """A user monoid (so the generic path): concatenation of lists, partials are new lists."""

    __slots__ = ("__weakref__", "back", "calls", "collect_every")

    identity: ClassVar[list[Any]] = []

    def __init__(self, collect_every: int = 0) -> None:
        self.back: Any = None
        self.calls = 0
        self.collect_every = collect_every

    def lift(self, v: Any) -> list[Any]:
        return [v]

    def combine(self, a: list[Any], b: list[Any]) -> list[Any]:
        self.calls += 1
        if self.collect_every and self.calls % self.collect_every == 0:
            gc.collect()  # the window is in the middle of an operation here
        return a + b

    def lower(self, a: list[Any]) -> tuple[Any, ...]:
        return tuple(a)


class Holder:
    """A value that refers back to a window (a cycle through a stored partial)."""

    __slots__ = ("__weakref__", "w")

    def __init__(self, w: Any) -> None:
        self.w = w


class Key:
    """ArgMax's key function, holding a reference back to the window."""

    __slots__ = ("__weakref__", "w")

    def __init__(self) -> None:
        self.w: Any = None

    def __call__(self, x: Any) -> Any:
        return x


@functools.total_ordering
class Val:
    """An ordered non-number (OrderStatistics keeps it as a Python object)."""

    __slots__ = ("__weakref__", "back", "v")

    def __init__(self, v: int, back: Any = None) -> None:
        self.v = v
        self.back = back

    def __eq__(self, o: object) -> bool:
        return isinstance(o, Val) and self.v == o.v

    def __lt__(self, o: Val) -> bool:
        return self.v < o.v

    def __hash__(self) -> int:
        return hash(self.v)

    def __repr__(self) -> str:
        return f"Val({self.v})"


def collected(ref: weakref.ref[Any]) -> bool:
    gc.collect()
    return ref() is None


@pytest.mark.parametrize("name", WINDOWS)
def test_a_cycle_through_the_monoid_is_collected(name: str) -> None:
    m = Lists()
    w = window(name, m)
    m.back = w
    for i in range(40):  # several levels of FiBA nodes, DABA's rings grown
        put(w, name, i, i)
    if name != "FiBA":
        for _ in range(7):
            w.evict()
    assert w.backend == "native" and type(w._impl).__module__ == "windowagg._native._core"
    ref = weakref.ref(m)
    del m, w
    assert collected(ref)


@pytest.mark.parametrize("name", WINDOWS)
def test_a_cycle_through_a_stored_partial_is_collected(name: str) -> None:
    w = window(name, Lists())
    h = Holder(w)
    for i in range(30):
        put(w, name, i / 2, h if i == 11 else i)  # FiBA: float timestamps, object keys
    if name == "FiBA":
        assert w._path == "object keys, generic"
    ref = weakref.ref(h)
    del h, w
    assert collected(ref)


@pytest.mark.parametrize("name", WINDOWS)
def test_a_cycle_through_a_key_function_on_the_numeric_path_is_collected(name: str) -> None:
    k = Key()
    w = window(name, ArgMax(key=k))
    k.w = w
    for i in range(30):
        put(w, name, i, float(i % 7))
    if name == "FiBA":
        assert w._path == "int64 keys, native monoid"
    else:
        assert not w._generic
    ref = weakref.ref(k)
    del k, w
    assert collected(ref)


def test_a_cycle_through_order_statistics_values_is_collected() -> None:
    s = OrderStatistics(backend="native")
    vals = [Val(i, s) for i in range(300)]  # several levels of the counted B+ tree
    for v in vals:
        s.insert(v)
    for v in vals[::3]:
        s.evict(v)
    assert s._generic
    ref = weakref.ref(vals[1])
    del s, vals, v
    assert collected(ref)


@pytest.mark.parametrize("name", WINDOWS)
def test_the_referents_include_the_monoid(name: str) -> None:
    m = Lists()
    w = window(name, m)
    put(w, name, 1, 5)
    refs = gc.get_referents(w._impl)  # the native object the public class holds
    assert m in refs and type(w._impl) in refs
    assert [5] in refs  # a stored partial (the generic path)


def test_the_referents_of_order_statistics_include_its_object_values() -> None:
    s = OrderStatistics(backend="native")._impl  # the native object
    assert gc.get_referents(s) == [type(s)]  # float keys: no Python object held
    v = Val(3)
    s.insert(v)
    assert v in gc.get_referents(s)


# ------------------------------------------------------------------ tp_clear

Py_tp_clear = 51  # Include/typeslots.h


def tp_clear(obj: Any) -> None:
    """What the collector does to each object of an unreachable cycle."""
    get_slot = ctypes.pythonapi.PyType_GetSlot
    get_slot.restype = ctypes.c_void_p
    get_slot.argtypes = [ctypes.py_object, ctypes.c_int]
    fn = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.py_object)(get_slot(type(obj), Py_tp_clear))
    assert fn(obj) == 0


CLEARED = "cleared by the garbage collector"


def calls(name: str) -> list[Callable[[Any], Any]]:
    if name == "OrderStatistics":
        return [
            lambda s: s.insert(1.0),
            lambda s: s.evict(Val(1)),
            lambda s: s.quantile(0.5),
            lambda s: s.rank(Val(2)),
            len,
            lambda s: s.bulk_insert([1.0]),
            lambda s: list(s),
            lambda s: s._check(),
        ]
    common: list[Callable[[Any], Any]] = [
        lambda w: w.query(),
        len,
        lambda w: w.monoid,
        lambda w: w.to_bytes(),
    ]
    if name == "FiBA":
        return [
            *common,
            lambda w: w.insert(1, [1]),
            lambda w: w.evict(1),
            lambda w: w.range_query(0, 9),
            lambda w: w.bulk_insert([(1, [2])]),
            lambda w: w.bulk_evict(3),
            lambda w: w.oldest(),
            lambda w: w.slide([5], [[1]]),
            lambda w: list(w),
        ]
    return [
        *common,
        lambda w: w.insert([1]),
        lambda w: w.evict(),
        lambda w: w.bulk_evict(1),
        lambda w: w.oldest_partial(),
        lambda w: w.slide([[1]]),
        lambda w: w.bulk_insert([[1]]),
        lambda w: list(w),
    ]


@pytest.mark.parametrize("name", CLASSES)
def test_a_cleared_object_raises_on_every_call(name: str) -> None:
    if name == "OrderStatistics":
        obj: Any = OrderStatistics(backend="native")
        for i in range(100):
            obj.insert(Val(i))
    else:
        obj = window(name, Lists())
        for i in range(20):
            put(obj, name, i, i)
    tp_clear(obj._impl)  # the native object the public class holds
    assert CLEARED in repr(obj)
    for call in calls(name):
        with pytest.raises(StateError, match=CLEARED):
            call(obj)
    assert gc.get_referents(obj._impl) == [type(obj._impl)]
    tp_clear(obj._impl)  # twice: nothing left to drop


# ------------------------------------------------------------------ the exit report

LEAK_SCRIPT = {
    "FiBA": "from windowagg.ooo import FiBA\nw = FiBA(M(), min_arity=4, backend='native')\nw.insert(1, (1, 0, 0, 1))",
    **{
        n: f"from windowagg.fifo import {n}\nw = {n}(M(), backend='native')\nw.insert((1, 0, 0, 1))"
        for n in ["TwoStacksLite", "DABALite", "DABA", "AMTA"]
    },
    "OrderStatistics": (
        "from windowagg import OrderStatistics\nw = OrderStatistics(backend='native')\n"
        "class V(float):\n    def __lt__(self, o): return float(self) < float(o)\nw.insert(V(1.0))"
    ),
}


@pytest.mark.parametrize("name", CLASSES)
def test_a_module_global_window_with_a_main_monoid_is_not_reported_leaked(name: str) -> None:
    # __main__.__dict__ -> w -> M() -> M -> M.combine -> __globals__ is __main__.__dict__
    script = (
        textwrap.dedent(
            """
        from windowagg.monoids import MatMul2x2
        class M(MatMul2x2):
            __slots__ = ()
            def combine(self, a, b): return MatMul2x2.combine(self, a, b)
        """
        )
        + LEAK_SCRIPT[name]
    )
    src = os.path.dirname(os.path.dirname(windowagg.__file__))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([src, os.environ.get("PYTHONPATH", "")])}
    r = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120
    )
    assert r.returncode == 0, r.stderr
    assert "leaked" not in r.stderr, r.stderr


# ------------------------------------------------------------------ no over-visiting


def lockstep_with_collections(name: str, seed: int) -> list[weakref.ref[Any]]:
    """Random operations on native windows and their Python twins, collecting inside the
    monoid's combine (in the middle of operations) and between them; windows in cycles are
    made and dropped meanwhile. Every value refers back to its native window, so a partial
    that a traversal visited twice would make CPython take the window for reachable (or free
    live objects). Returns weak references to the monoids of the native windows, every one
    of them in a cycle by the time this returns."""
    rnd = random.Random(seed)
    pairs = []
    monoids: list[weakref.ref[Any]] = []
    for _ in range(6):
        m = Lists(collect_every=53)
        nat = window(name, m)
        m.back = nat
        pairs.append((nat, window(name, Lists(), "python"), Holder(nat)))
        monoids.append(weakref.ref(m))
    for step in range(500):
        nat, ref, h = pairs[rnd.randrange(len(pairs))]
        op = rnd.random()
        if name == "FiBA":
            t = rnd.randrange(60) if step % 2 else rnd.randrange(60) / 4  # int, then object keys
            v: Any = [step, (step, h)]
            for w in (nat, ref):
                if op < 0.6:
                    w.insert(t, v)
                elif op < 0.85:
                    w.evict(t)
                else:
                    w.bulk_evict(t)
            assert nat.range_query(5, 40) == ref.range_query(5, 40)
        else:
            v = [step, {"s": step, "h": h}]
            k = rnd.randrange(len(ref) + 1)
            for w in (nat, ref):
                if op < 0.6 or not len(ref):
                    w.insert(v)
                elif op < 0.9:
                    w.evict()
                else:
                    w.bulk_evict(k)
        assert nat.query() == ref.query() and len(nat) == len(ref), (name, step)
        if step % 25 == 0:  # a window in a cycle, dropped: the collector clears it meanwhile
            m = Lists(collect_every=5)
            g = window(name, m)
            m.back = g
            hg = Holder(g)
            for i in range(12):
                put(g, name, i, [i, hg])
            monoids.append(weakref.ref(m))
        if step % 100 == 0:
            gc.collect()
    for nat, ref, _ in pairs:
        nat._check()
        assert list(nat) == list(ref)
    return monoids


@pytest.mark.parametrize("name", WINDOWS)
@pytest.mark.parametrize("seed", [1, 2])
def test_collecting_inside_operations_keeps_every_answer(name: str, seed: int) -> None:
    monoids = lockstep_with_collections(name, seed)
    gc.collect()
    assert all(r() is None for r in monoids)


def order_statistics_with_collections(seed: int) -> weakref.ref[Any]:
    """As lockstep_with_collections, for OrderStatistics over values that refer back to it
    (collecting inside their comparisons); returns a weak reference to one of them."""

    class Collecting(Val):
        __slots__ = ()

        def __lt__(self, o: Val) -> bool:
            if random.random() < 0.006:
                gc.collect()  # in the middle of an insert or an evict
            return self.v < o.v

    rnd = random.Random(seed)
    random.seed(seed)
    nat, ref = OrderStatistics(backend="native"), OrderStatistics(backend="python")
    held: list[Val] = []
    for step in range(1500):
        if rnd.random() < 0.6 or not held:
            v = Collecting(rnd.randrange(200), nat)
            held.append(v)
            nat.insert(v)
            ref.insert(v)
        else:
            v = held.pop(rnd.randrange(len(held)))
            nat.evict(v)
            ref.evict(v)
        if held:
            assert nat.quantile(0.3) == ref.quantile(0.3), step
        if step % 300 == 0:
            gc.collect()
    nat._check()
    assert list(nat) == list(ref)
    return weakref.ref(held[0])


@pytest.mark.parametrize("seed", [1, 2])
def test_collecting_inside_order_statistics_keeps_every_answer(seed: int) -> None:
    r = order_statistics_with_collections(seed)
    gc.collect()
    assert r() is None
