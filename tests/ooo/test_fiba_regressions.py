"""Regression tests for every bug class found in the authors' C++ (reference-bug-classes.md).

Each test names its class (B1..B11) and the scenario of guide seed-fiba.md §7 it encodes.
Aggregates are compared with a naive fold (Recalc) after every operation, with the
non-commutative Concat so that omissions, duplicates and reorderings all show.
"""

from __future__ import annotations

import math
import random
from typing import Any

import pytest

from windowagg.errors import MonoidContractError, WindowaggError
from windowagg.monoids import Concat, Counting, First, GeometricMean, Last, Max, Sum
from windowagg.ooo import BTree, FiBA, Recalc

# these tests read the pure-Python reference's internals (tests/native/ covers the native twin)
pytestmark = pytest.mark.usefixtures("python_backend")

CLASSES = [FiBA, BTree]
MUS = [2, 3, 4, 8]


def _same(w: Any, r: Recalc) -> None:
    w._check()
    assert w.query() == r.query()
    assert len(w) == len(r)
    assert list(w) == list(r)
    assert (w.oldest(), w.youngest()) == (r.oldest(), r.youngest())


# B1: a rebalance that touches a left-spine sibling must repair the left spine -------------
@pytest.mark.parametrize("cls", CLASSES)
def test_b1_issue77_vector(cls: type) -> None:
    w = cls(Sum(), min_arity=2)
    for t in (1, 2, 3, 4):
        w.insert(t, t)
    out = []
    for t in (4, 3, 2, 1):
        w.evict(t)
        w._check()
        out.append(w.query())
    assert out == [6, 3, 1, 0]


@pytest.mark.parametrize("mu", MUS)
def test_b1_lifo_evict_every_size_up_to_64(mu: int) -> None:
    for n in range(1, 65):
        w = FiBA(Concat(), min_arity=mu)
        for t in range(n):
            w.insert(t, t)
        for t in reversed(range(n)):
            w.evict(t)
            w._check()
            assert w.query() == tuple(range(t)), (mu, n, t)


@pytest.mark.parametrize("mu", MUS)
def test_b1_mixed_ends_small_windows(mu: int) -> None:
    rnd = random.Random(mu)
    w, r = FiBA(Concat(), min_arity=mu), Recalc(Concat())
    lo, hi = 0, 0
    for step in range(1500):
        op = rnd.random()
        if op < 0.3:
            hi += 1
            w.insert(hi, step)
            r.insert(hi, step)
        elif op < 0.45:
            lo -= 1
            w.insert(lo, step)
            r.insert(lo, step)
        elif op < 0.7 and len(r):
            t = r.youngest()
            w.evict(t)
            r.evict(t)
        elif len(r):
            t = r.oldest()
            w.evict(t)
            r.evict(t)
        assert w.query() == r.query()
        if step % 25 == 0:
            _same(w, r)
    _same(w, r)


# B2: identity must be neutral; empty-window query lowers the identity -----------------
@pytest.mark.parametrize("cls", CLASSES)
@pytest.mark.parametrize("m", [Sum(), Max(), Concat(), First(), Last(), GeometricMean()])
def test_b2_empty_window_query_and_refill(cls: type, m: Any) -> None:
    w = cls(m, min_arity=2)
    assert w.query() == m.lower(m.identity)
    assert w.range_query(0, 10) == m.lower(m.identity)
    for t in range(30):
        w.insert(t, t + 1)
    w.bulk_evict(29)
    w._check()
    assert len(w) == 0 and w.query() == m.lower(m.identity)


# B3: sawtooth fill to W and drain to 0; bulk_evict at every kind of boundary -------------
@pytest.mark.parametrize("cls", CLASSES)
@pytest.mark.parametrize("mu", [2, 4])
def test_b3_sawtooth_drains_to_empty(cls: type, mu: int) -> None:
    w, r = cls(Concat(), min_arity=mu), Recalc(Concat())
    t = 0
    for width in (1, 2, 19, 97, 5):
        for _ in range(width):
            w.insert(t, t)
            r.insert(t, t)
            t += 1
            assert w.query() == r.query()
        while len(r):
            o = r.oldest()
            w.evict(o)
            r.evict(o)
            assert w.query() == r.query()
        _same(w, r)
        assert w.oldest() is None and w.youngest() is None
    w.evict(5)  # evict on an empty window is a no-op
    _same(w, r)


@pytest.mark.parametrize("cls", CLASSES)
def test_b3_bulk_evict_boundaries(cls: type) -> None:
    def fresh() -> tuple[Any, Recalc]:
        w, r = cls(Concat(), min_arity=2), Recalc(Concat())
        for t in range(0, 200, 2):
            w.insert(t, t)
            r.insert(t, t)
        return w, r

    for t in (-1, 0, 1, 57, 58, 197, 198, 199, 10**6):
        w, r = fresh()
        w.bulk_evict(t)
        r.bulk_evict(t)
        _same(w, r)
        for s in (t + 1, t + 3, 1000):  # then keep using the emptied or cut window
            w.insert(s, s)
            r.insert(s, s)
            _same(w, r)
        o = r.oldest()
        w.evict(o)
        r.evict(o)
        _same(w, r)
    empty = cls(Concat())
    empty.bulk_evict(3)
    assert len(empty) == 0


# B4: len() after bulk operations and duplicate timestamps ------------------------------
@pytest.mark.parametrize("cls", CLASSES)
def test_b4_len_after_bulk_ops(cls: type) -> None:
    w = cls(Sum(), min_arity=2)
    for t in range(100):
        w.insert(t, 1)
    w.bulk_evict(49)
    assert len(w) == 50
    w.bulk_insert([(t, 1) for t in range(200, 220)])
    assert len(w) == 70
    w.bulk_insert([(t, 1) for t in range(200, 220)])  # all collide: size unchanged
    assert len(w) == 70 and w.query() == 90
    w.insert(60, 5)
    assert len(w) == 70
    w.bulk_evict(10**9)
    assert len(w) == 0
    w._check()


def test_b4_len_is_exact_while_graveyard_drains() -> None:
    w, r = FiBA(Sum(), min_arity=2), Recalc(Sum())
    w.bulk_insert([(t, 1) for t in range(5000)])
    r.bulk_insert([(t, 1) for t in range(5000)])
    for step in range(50):
        t = 100 * step + 37
        w.bulk_evict(t)
        r.bulk_evict(t)
        w.insert(5000 + step, 1)  # each insert releases a few discarded nodes
        r.insert(5000 + step, 1)
        if step % 7 == 0:
            assert len(w) == len(r)
    _same(w, r)


# Issue 13 item 9: a bulk_evict that empties the window leaves its discarded nodes on the
# graveyard (their entries still counted); a bulk_insert into the empty window used to
# reset the count while the graveyard still held them, so later drains subtracted them twice.
def test_b4_len_after_bulk_evict_empties_and_bulk_insert_refills() -> None:
    w = FiBA(Sum(), min_arity=2)
    for t in range(1, 5):
        w.insert(t, 1)
    w.bulk_evict(4)
    w.bulk_insert([(100, 1)])
    w._check()
    assert len(w) == 1 and w.query() == 1 and list(w) == [(100, 1)]


@pytest.mark.parametrize("mu", [2, 3, 4, 8])
def test_b4_len_after_a_bulk_built_window_is_emptied_and_refilled(mu: int) -> None:
    w = FiBA(Max(), min_arity=mu)
    w.bulk_insert([(t, t) for t in range(40)])
    w.bulk_evict(39)
    w.bulk_insert([(t, t) for t in range(100, 140)])
    assert len(w) == 40 and w.query() == 139
    w._check()


@pytest.mark.parametrize("mu", [2, 3, 4, 8])
def test_check_verifies_the_size_without_draining_the_graveyard(mu: int) -> None:
    w, r = FiBA(Max(), min_arity=mu), Recalc(Max())
    for lo in (0, 100, 200):
        w.bulk_insert([(t, t) for t in range(lo, lo + 40)])
        r.bulk_insert([(t, t) for t in range(lo, lo + 40)])
        w._check()  # the size check must not count (drain) the graveyard itself
        assert len(w) == len(r) == 40
        w.bulk_evict(lo + 39)
        r.bulk_evict(lo + 39)
        w._check()
    _same(w, r)


# B5: duplicates inside a bulk, collisions with stored leaf and inner-node times ---------
@pytest.mark.parametrize("cls", CLASSES)
def test_b5_bulk_duplicates_and_collisions(cls: type) -> None:
    w, r = cls(Concat(), min_arity=2), Recalc(Concat())
    for t in range(10, 130, 10):
        w.insert(t, f"s{t}")
        r.insert(t, f"s{t}")
    inner = list(range(10, 130, 10))  # some are in inner nodes, some in leaves
    bulk = [(t, f"b{i}") for i, t in enumerate([*inner, 15, 15, 60, 15, 125, 5, 5])]
    random.Random(1).shuffle(bulk)
    w.bulk_insert(bulk)
    r.bulk_insert(bulk)
    _same(w, r)


@pytest.mark.parametrize("mu", [2, 3])
def test_guide_4_8_reference_corruption_vector(mu: int) -> None:
    # The authors' bulkInsert corrupted the tree here: 60 is a root key.
    w, r = FiBA(Concat(), min_arity=mu), Recalc(Concat())
    for t in range(10, 130, 10):
        w.insert(t, t)
        r.insert(t, t)
    bulk = [(16, "a"), (17, "b"), (60, "c"), (102, "d")]
    w.bulk_insert(bulk)
    r.bulk_insert(bulk)
    _same(w, r)


def test_b5_unsorted_bulk_equals_one_by_one() -> None:
    rnd = random.Random(5)
    for _ in range(30):
        w, r = FiBA(Concat(), min_arity=2), FiBA(Concat(), min_arity=2)
        base = [(rnd.randrange(100), i) for i in range(rnd.randrange(60))]
        w.bulk_insert(base)
        for t, v in base:
            r.insert(t, v)
        bulk = [(rnd.randrange(120), 1000 + i) for i in range(rnd.randrange(80))]
        w.bulk_insert(bulk)
        for t, v in bulk:
            r.insert(t, v)
        w._check()
        assert list(w) == list(r)


# B6: bulk inserts that overflow the root, land far right, far left, or straddle ----------
@pytest.mark.parametrize("mu", [2, 3, 4])
@pytest.mark.parametrize("where", ["left", "right", "straddle", "into-empty", "huge"])
def test_b6_bulk_insert_spines_and_root(mu: int, where: str) -> None:
    w, r = FiBA(Concat(), min_arity=mu), Recalc(Concat())
    if where != "into-empty":
        for t in range(1000, 1100, 3):
            w.insert(t, t)
            r.insert(t, t)
    bulk = {
        "left": [(t, t) for t in range(0, 500, 7)],
        "right": [(t, t) for t in range(2000, 2600, 5)],
        "straddle": [(t, t) for t in range(900, 1200, 2)],
        "into-empty": [(t, t) for t in range(300)],
        "huge": [(t, t) for t in range(0, 5000)],
    }[where]
    w.bulk_insert(bulk)
    r.bulk_insert(bulk)
    _same(w, r)
    # keep operating at both ends: fingers and spine flags must be sane
    for i in range(40):
        y, o = r.youngest(), r.oldest()
        w.insert(y + 1, i)
        r.insert(y + 1, i)
        w.evict(o)
        r.evict(o)
        w.insert(o - 1, i)
        r.insert(o - 1, i)
    _same(w, r)


def test_b6_many_keys_into_one_leaf() -> None:
    w, r = FiBA(Concat(), min_arity=2), Recalc(Concat())
    for t in range(0, 100, 10):
        w.insert(t, t)
        r.insert(t, t)
    bulk = [(40 + i / 100, i) for i in range(1, 90)]  # p >> 2μ into the leaf (40, 50)
    w.bulk_insert(bulk)
    r.bulk_insert(bulk)
    _same(w, r)


# B7: bulk_evict at every boundary of trees of several heights ---------------------------
@pytest.mark.parametrize("mu", [2, 3, 5, 8])
def test_b7_bulk_evict_every_boundary(mu: int) -> None:
    rnd = random.Random(mu)
    keys = sorted(rnd.sample(range(0, 3000), 400))
    for grow in ("bulk", "mixed"):
        boundaries = sorted({k for k in keys[::7]} | {k + 1 for k in keys[::11]} | {-1, 4000})
        for t in boundaries:
            w, r = FiBA(Concat(), min_arity=mu), Recalc(Concat())
            if grow == "bulk":
                w.bulk_insert([(k, k) for k in keys])
            else:
                for k in keys:
                    w.insert(k, k)
                for k in keys[5::13]:
                    w.evict(k)
            for k, v in w:
                r.insert(k, v[0])
            w.bulk_evict(t)
            r.bulk_evict(t)
            _same(w, r)
            # interleave with single operations afterwards
            w.insert(3001, 1)
            r.insert(3001, 1)
            o = r.oldest()
            w.evict(o)
            r.evict(o)
            w.bulk_evict(t + 50)
            r.bulk_evict(t + 50)
            _same(w, r)


# B9: float partials: _check compares each node with its own formula, so a different
# association order than a left fold never makes it fail; results agree within tolerance.
def test_b9_float_aggregates_check_is_not_spurious() -> None:
    m = GeometricMean()
    w, r = FiBA(m, min_arity=2), Recalc(m)
    rnd = random.Random(9)
    for i in range(2000):
        t = rnd.randrange(500)
        if rnd.random() < 0.6:
            v = rnd.uniform(0.5, 3.0)
            w.insert(t, v)
            r.insert(t, v)
        else:
            w.evict(t)
            r.evict(t)
        if i % 50 == 0:
            w._check()
            a, b = w.query(), r.query()
            assert (a is None and b is None) or math.isclose(a, b, rel_tol=1e-9)


# B11: no invariant check or other super-linear work on the hot path --------------------
def test_b11_operations_do_not_run_checks() -> None:
    m = Counting(Sum())
    w = FiBA(m, min_arity=4)
    w.bulk_insert([(t, 1) for t in range(10**4)])
    m.reset()
    for i in range(10**4, 10**4 + 2000):
        w.evict(i - 10**4)
        w.insert(i, 1)
        w.query()
    assert m.combines / 2000 < 20  # a check would cost ~10^4 combines per operation


def test_check_reports_what_broke() -> None:
    w = FiBA(Sum(), min_arity=2)
    for t in range(20):
        w.insert(t, 1)
    w._root.agg = 999
    with pytest.raises(WindowaggError, match="stored aggregate"):
        w._check()
    w2 = FiBA(Sum(), min_arity=2)
    for t in range(20):
        w2.insert(t, 1)
    w2._impl._size = 3  # the Python implementation the public class holds
    with pytest.raises(WindowaggError, match="size"):
        w2._check()
    b = BTree(Sum(), min_arity=2)
    for t in range(20):
        b.insert(t, 1)
    b._root.times[0] = 10**6
    with pytest.raises(WindowaggError, match="key"):
        b._check()


def test_a_monoid_class_is_refused_at_construction() -> None:
    # issue 13 item 13: FiBA(Sum) (the class) would take Sum.combine as an unbound function
    with pytest.raises(MonoidContractError, match=r"FiBA\(Sum\(\)\)"):
        FiBA(Sum)  # type: ignore[arg-type]


def test_min_arity_is_validated() -> None:
    for bad in (1, 0, 2.5, True):
        with pytest.raises(ValueError, match="min_arity"):
            FiBA(Sum(), min_arity=bad)  # type: ignore[arg-type]
        with pytest.raises(ValueError, match="min_arity"):
            BTree(Sum(), min_arity=bad)  # type: ignore[arg-type]
