"""MTA: the paper's worked examples, combine-count complexity probes, bad input.

Complexity is asserted by counting monoid combines (``Counting``), never by wall time.
"""

from __future__ import annotations

import math
import random
from typing import Any

import pytest

from windowagg.errors import EmptyWindowError, MonoidContractError, StorageError
from windowagg.fifo.amta import AMTA
from windowagg.fifo.log_mta import LogMTA
from windowagg.fifo.recalc import Recalc
from windowagg.fifo.wsp import CountWindow, TimeWindow, enforce_policy
from windowagg.monoids import Composite, Concat, Count, Counting, Last, Max, Sum
from windowagg.storage import MemoryStore

CLASSES = [LogMTA, AMTA]


# -- the paper's examples ---------------------------------------------------------------
def test_fig4_amta_result_pair_and_stack() -> None:
    w = AMTA(Sum())
    for x in [1, 2, 1, 2, 1, 2, 1, 2]:
        w.insert(x)
    assert w.result_pair == (6, 6) and w.stack == [3, 5]
    w._check()
    w.insert(1)
    assert w.result_pair[1] == 7
    w.evict()  # "evicting the head moves 5 into R0"
    assert w.result_pair[0] == 5
    w._check()


def test_fig5_amta_single_evictions() -> None:
    w = AMTA(Sum())
    for x in [1, 3, 2, 1, 2, 1, 1, 0, 3, 1]:
        w.insert(x)
    assert w.query() == 15 and w.result_pair == (7, 8) and w.stack == [3, 6]
    w.evict()
    assert w.query() == 14 and w.result_pair[0] == 6
    w.evict()
    assert w.query() == 11 and w.result_pair[0] == 3 and w.stack[-1] == 1
    w._check()


def test_fig1_log_mta_levels() -> None:
    w = LogMTA(Sum())
    for x in [1, 2, 1, 2, 1, 2]:
        w.insert(x)
    # our convention: the top level holds exactly one pair (guide A3 [fix])
    assert [list(p) for p in w._first] == [[1, 2], [3, 3], [6, 3]]
    assert w.query() == 9 and w.height == 3
    w._check()


@pytest.mark.parametrize("cls", CLASSES)
def test_fig2_time_window_evicts_all_but_newest(cls: Any) -> None:
    w = cls(Max(), policy=TimeWindow(4, time=lambda a: a))
    for t in [1, 2, 3, 4]:
        w.insert_and_enforce(t)
    assert len(w) == 4
    w.insert_and_enforce(8)
    assert list(w) == [8]
    w._check()


@pytest.mark.parametrize("cls", CLASSES)
def test_running_example_sum_bound_max_result(cls: Any) -> None:
    # §3.2: keep the newest suffix with sum <= 10, report max; [2,2,3,3] + 4 -> [3,3,4]
    m = Composite(Max(), Sum(), Last(), fan_out=True)
    w = cls(m, policy=lambda tot, pre: tot[1] - pre[1] + pre[2] > 10)
    for x in [2, 2, 3, 3]:
        w.insert_and_enforce(x)
    assert w.query()[0] == 3
    w.insert_and_enforce(4)
    assert [e[0] for e in w] == [3, 3, 4] and w.query()[0] == 4


@pytest.mark.parametrize("cls", CLASSES)
def test_listing3_count_window_with_size_in_the_data(cls: Any) -> None:
    # Listings 2/3: (count, maxSize) with maxSize = the newest element's (Last)
    m = Composite(Count(), Last())
    policy = lambda tot, pre: tot[0] - pre[0] >= tot[1]  # noqa: E731
    w, r = cls(m, policy=policy), Recalc(m)
    sizes = [5] * 20 + [2] + [8] * 10 + [1]
    for i, size in enumerate(sizes):
        w.insert((i, size))
        r.insert((i, size))
        n0 = len(w)
        w.enforce()
        assert n0 - len(w) == enforce_policy(r, policy)
        assert len(w) == min(size, i + 1) if size != 8 else len(w) <= 8
        assert w.query() == r.query()


# -- complexity probes (combine counts) --------------------------------------------------
def _filled(cls: Any, n: int, **kw: Any) -> tuple[Any, Counting[Any, Any, Any]]:
    m = Counting(Sum())
    w = cls(m, **kw)
    for i in range(n):
        w.insert(i)
    return w, m


@pytest.mark.parametrize("k", [10, 12, 14])
def test_log_mta_bulk_eviction_costs_log_n_combines(k: int) -> None:
    n = 2**k
    for evict in [1, 2 ** (k - 1), n - 1, 12345 % n]:
        w, m = _filled(LogMTA, n)
        m.reset()
        w.bulk_evict(evict)
        assert m.combines <= 2 * (k + 2), (evict, m.combines)
        assert len(w) == n - evict and w.query() == sum(range(evict, n))
        assert w.height <= k + 1


@pytest.mark.parametrize("k", [10, 12, 14])
def test_amta_bulk_eviction_costs_log_n_combines(k: int) -> None:
    n = 2**k
    for evict in [2 ** (k - 1), n - 1, n // 3 + 7]:
        w, m = _filled(AMTA, n)
        m.reset()
        w.bulk_evict(evict)
        # at most c*log2(n)+1 single evictions (<= 1 combine each, amortized), then one
        # descent (no combines) and the R0 / R1 / S rebuild (O(log n))
        assert m.combines <= 6 * (k + 2), (evict, m.combines)
        assert w.query() == sum(range(evict, n))


@pytest.mark.parametrize("cls", CLASSES)
def test_policy_enforcement_costs_log_n_combines(cls: Any) -> None:
    k = 13
    n = 2**k
    m = Counting(Composite(Max(), Sum()))
    # the O(log n) policy descent is the Python class's (the native AMTA enforces a policy
    # in O(k), docs/native.md)
    w = cls(m, backend="python") if cls is AMTA else cls(m)
    for i in range(n):
        w.insert((i, i))
    m.reset()
    w.enforce(TimeWindow(5, time=0))  # evicts n - 5 entries
    assert len(w) == 5
    assert m.combines <= 8 * (k + 2), m.combines
    w._check()


def test_amta_amortized_constant_combines_per_round() -> None:
    rnd = random.Random(7)
    for n in [64, 1024, 8192]:
        w, m = _filled(AMTA, n)
        m.reset()
        worst = 0
        rounds = 4 * n
        for i in range(rounds):
            before = m.combines
            w.insert(i)
            w.evict()
            worst = max(worst, m.combines - before)
            if i % (n // 2) == rnd.randrange(2):
                saved = m.combines
                w._check()  # its folds go through the counting monoid too
                m.combines = saved
        mean = m.combines / rounds
        assert mean <= 4.5, (n, mean)
        assert worst <= 4 * math.log2(n) + 8, (n, worst)


def test_log_mta_per_operation_log_n_combines() -> None:
    for n in [64, 4096]:
        w, m = _filled(LogMTA, n)
        for i in range(2 * n):
            m.reset()
            w.insert(i)
            w.evict()
            assert m.combines <= 3 * (math.log2(n) + 3)


@pytest.mark.parametrize("cls", CLASSES)
def test_height_stays_logarithmic_for_a_sliding_window(cls: Any) -> None:
    # without height control a window of 3 reaches height log2(inserts)
    w = cls(Sum(), policy=CountWindow(3))
    for i in range(50_000):
        w.insert_and_enforce(i)
        assert w.height <= 3
    w._check()


@pytest.mark.parametrize("cls", CLASSES)
def test_native_count_window_equals_count_field_and_generic_loop(cls: Any) -> None:
    m = Composite(Count(), Concat())
    rnd = random.Random(3)
    a = cls(m)
    b = cls(m)
    r = Recalc(m)
    for i in range(600):
        for w in (a, b, r):
            w.insert((None, i))
        size = rnd.choice([1, 5, 40])
        ka, kb = len(a), len(b)
        a.enforce(CountWindow(size))
        b.enforce(CountWindow(size, count=0))
        kr = enforce_policy(r, CountWindow(size, count=0))
        assert ka - len(a) == kb - len(b) == kr
        assert a.query() == b.query() == r.query()


# -- bad input: clear errors, nothing changed -----------------------------------------------
@pytest.mark.parametrize("cls", CLASSES)
def test_errors_leave_the_window_unchanged(cls: Any) -> None:
    w = cls(Concat())
    with pytest.raises(EmptyWindowError):
        w.evict()
    with pytest.raises(EmptyWindowError):
        w.oldest()
    with pytest.raises(EmptyWindowError):
        w.youngest()
    assert w.query() == () and len(w) == 0 and list(w) == []
    for x in "abc":
        w.insert(x)
    for bad in (-1, 4):
        with pytest.raises(EmptyWindowError):
            w.bulk_evict(bad)
    with pytest.raises(TypeError):
        w.bulk_evict(1.5)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        w.bulk_evict(True)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="needs a policy"):
        w.enforce()
    with pytest.raises(TypeError, match="policy="):
        w.insert_and_enforce("d")
    assert w.query() == ("a", "b", "c")
    w._check()
    with pytest.raises(MonoidContractError):
        cls(object())
    with pytest.raises(TypeError):
        cls(Sum(), policy=3)


def test_policy_constructors_reject_bad_parameters() -> None:
    for bad in (-1, 1.5, None, True):
        with pytest.raises(ValueError):
            CountWindow(bad)  # type: ignore[arg-type]
    for bad in (-1, float("nan"), None, "x"):
        with pytest.raises(ValueError):
            TimeWindow(bad)
    with pytest.raises(TypeError):
        TimeWindow(3, time=2.5)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="count="):
        CountWindow(3)((1,), (1,))
    with pytest.raises(MonoidContractError, match="timestamp"):
        TimeWindow(3, time=0)((None,), (None,))


def test_amta_bulk_after_validated_and_modes_agree() -> None:
    with pytest.raises(ValueError):
        AMTA(Sum(), bulk_after=-1)
    rnd = random.Random(11)
    ws = [AMTA(Concat(), bulk_after=c) for c in (0, 0.5, 1, 2, math.inf)]
    r = Recalc(Concat())
    for i in range(2000):
        for w in (*ws, r):
            w.insert(i)
        if rnd.random() < 0.3:
            k = rnd.randint(0, len(r))
            for w in (*ws, r):
                w.bulk_evict(k)
        if i % 97 == 0:
            for w in ws:
                w._check()
        assert all(w.query() == r.query() for w in ws)


@pytest.mark.parametrize("cls", CLASSES)
def test_reopen_checks_kind_and_monoid(cls: Any) -> None:
    store = MemoryStore()
    w = cls(Sum(), store=store, namespace="w")
    w.insert(1)
    w.flush(token=1)
    other = AMTA if cls is LogMTA else LogMTA
    with pytest.raises(StorageError, match="window"):
        other(Sum(), store=store, namespace="w")
    with pytest.raises(StorageError, match="monoid"):
        cls(Max(), store=store, namespace="w")
    with pytest.raises(StorageError, match="already"):
        cls(Sum(), store=store, namespace="w", on_existing="error")
    fresh = cls(Sum(), store=store, namespace="w", on_existing="overwrite")
    assert len(fresh) == 0 and fresh.checkpoint_token is None
    with pytest.raises(ValueError):
        cls(Sum(), on_existing="maybe")
    with pytest.raises(StorageError, match="codec"):
        w.flush(token=object())
