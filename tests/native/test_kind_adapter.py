"""Variance and StdDev share one native adapter (``KindAdapter`` in
src/windowagg/_native/src/adapters.hpp), whose kind (and ddof) is a field of each structure,
not of its class, as Count, First, Last and Mean do in DABA, DABALite and AMTA; in
TwoStacksLite and FiBA (the windows engine's) those four and Sum have a compile-time adapter
each (``NumAdapter<Kind>``). Every structure below lives beside structures of the other kinds,
the same inputs go to all of them in turn, and each answers as its Python twin does,
partial for partial, on every native class (the four FIFO algorithms and FiBA), without
leaving the native path.
"""

from __future__ import annotations

import math
import random
from typing import Any

import pytest

from fifo.fifo_family import NATIVE_CLASSES
from windowagg.monoids import Count, First, Last, Mean, StdDev, Sum, Variance
from windowagg.ooo import FiBA


def _monoids() -> list[Any]:
    return [Count(), First(), Last(), Mean(), Variance(), StdDev(ddof=1), Sum(), Variance(ddof=2)]


def _values(rng: random.Random, n: int) -> list[Any]:
    # ints and floats mixed: the tagged numbers each kind keeps or converts
    return [rng.randint(-50, 50) if rng.random() < 0.5 else rng.uniform(-9, 9) for _ in range(n)]


@pytest.mark.parametrize("cls_name", sorted(NATIVE_CLASSES))
def test_six_kinds_side_by_side_in_a_fifo_class(cls_name: str) -> None:
    cls = NATIVE_CLASSES[cls_name]
    rng = random.Random(29)
    pairs = [(cls(m, backend="native"), cls(m, backend="python")) for m in _monoids()]
    for step in range(120):
        v = _values(rng, 1)[0]
        batch = _values(rng, rng.randint(1, 4))
        for w, o in pairs:
            if step % 7 == 6:
                k = min(2, len(o))
                w.bulk_evict(k)
                o.bulk_evict(k)
            elif step % 5 == 4:
                k = 1 if len(o) else 0
                assert w.slide(batch, evict=k) == o.slide(batch, evict=k)
            else:
                w.insert(v)
                o.insert(v)
                if len(o) > 6:
                    w.evict()
                    o.evict()
        for w, o in pairs:
            a, b = w.query(), o.query()
            assert a == b and type(a) is type(b), (o.monoid, a, b)
            assert list(w) == list(o), o.monoid
            assert not w._generic, o.monoid


def _close(a: Any, b: Any) -> bool:
    """Equal; floats up to rounding (a FiBA's Variance may round differently in the last
    bit from the reference's, as tests/native/test_fiba_native.py allows)."""
    if isinstance(a, float) and isinstance(b, float):
        return math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-12)
    if isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)) and len(a) == len(b):
        return type(a) is type(b) and all(_close(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b) and type(a) is type(b)


def test_six_kinds_side_by_side_in_fiba() -> None:
    rng = random.Random(30)
    pairs = [
        (FiBA(m, min_arity=2, backend="native"), FiBA(m, min_arity=2, backend="python"))
        for m in _monoids()
    ]
    t = 0
    for step in range(150):
        t += rng.randint(1, 3)
        at = t - rng.randint(0, 8)  # out of order; an existing time combines into its entry
        v = _values(rng, 1)[0]
        for w, o in pairs:
            w.insert(at, v)
            o.insert(at, v)
            if step % 9 == 8:
                w.bulk_evict(t - 12)
                o.bulk_evict(t - 12)
        for w, o in pairs:
            assert _close(w.query(), o.query()), o.monoid
            assert _close(w.range_query(t - 10, t - 2), o.range_query(t - 10, t - 2)), o.monoid
            assert _close(list(w), list(o)), o.monoid
            assert w._path == "int64 keys, native monoid", o.monoid
            w._check()
