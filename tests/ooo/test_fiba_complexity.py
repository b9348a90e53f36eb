"""Complexity claims of FiBA shown by counting ``combine`` calls (monoids.Counting).

No wall-clock time here: every figure is a deterministic count of monoid combines.

* d = 0 (FIFO: insert youngest, evict oldest, query): amortized combines per round stay
  flat as the window grows from 10^3 to 10^5 (the classic B-tree grows with log n);
* out-of-order distance d: cost grows about logarithmically in d and does not depend on n;
* bulk_evict of m entries: O(log m)-shaped, far below m;
* bulk_insert of m sorted entries: O(m) when appended, never more than m single inserts.
"""

from __future__ import annotations

import math

import pytest

from windowagg.monoids import Counting, Sum
from windowagg.ooo import BTree, FiBA

# both backends: on the native one, Counting (a Python monoid) runs on the generic path,
# so the counts are the native tree's own combines
pytestmark = pytest.mark.usefixtures("each_backend")

ROUNDS = 2000


def _fifo_cost(n: int, mu: int, cls: type = FiBA) -> float:
    m = Counting(Sum())
    w = cls(m, min_arity=mu)
    for t in range(n):  # grow the window by appends, as a stream does
        w.insert(t, 1)
    for i in range(n, n + ROUNDS):  # warm-up: reach the FIFO steady state
        w.evict(i - n)
        w.insert(i, 1)
        w.query()
    m.reset()
    for i in range(n + ROUNDS, n + 2 * ROUNDS):
        w.evict(i - n)
        w.insert(i, 1)
        w.query()
    assert len(w) == n
    return m.combines / ROUNDS


def _distance_cost(n: int, d: int, mu: int) -> float:
    """The paper's adversarial generator: every insert lands exactly d before the youngest."""
    m = Counting(Sum())
    w = FiBA(m, min_arity=mu)
    big = 10**9
    w.bulk_insert([(t, 1) for t in range(n - d)] + [(big + t, 1) for t in range(d)])
    old, nxt = 0, n - d
    for phase in range(2):
        if phase:
            m.reset()
        for _ in range(ROUNDS):
            w.evict(old)
            w.insert(nxt, 1)
            w.query()
            old += 1
            nxt += 1
    assert len(w) == n
    return m.combines / ROUNDS


@pytest.mark.parametrize("mu", [2, 4, 8])
def test_fifo_cost_is_flat_in_window_size(mu: int) -> None:
    small, large = _fifo_cost(10**3, mu), _fifo_cost(10**5, mu)
    assert large <= small * 1.15 + 0.5, (small, large)
    assert large < 6 * mu + 10  # a small constant: no log n term


def test_btree_fifo_cost_grows_with_log_n_and_fiba_beats_it() -> None:
    b_small, b_large = _fifo_cost(10**3, 4, BTree), _fifo_cost(10**4, 4, BTree)
    assert b_large > b_small * 1.1  # one more level of repairs
    assert _fifo_cost(10**4, 4) * 3 < b_large


@pytest.mark.parametrize("mu", [2, 4])
def test_out_of_order_cost_grows_logarithmically_in_d(mu: int) -> None:
    n = 2**15
    c0, c64, c4096 = (_distance_cost(n, d, mu) for d in (0, 64, 4096))
    assert c0 < c64 < c4096
    # log2(4096) / log2(64) = 2: the extra cost should roughly double, not grow 64-fold
    ratio = (c4096 - c0) / (c64 - c0)
    assert 1.2 < ratio < 4.5, (c0, c64, c4096)
    assert c4096 < c0 + 8 * mu * math.log2(4096)


def test_out_of_order_cost_does_not_depend_on_n() -> None:
    a, b = _distance_cost(2**12, 256, 2), _distance_cost(2**16, 256, 2)
    assert abs(a - b) <= 0.2 * max(a, b), (a, b)


def _bulk_evict_cost(n: int, m_: int, mu: int, reps: int = 12) -> float:
    m = Counting(Sum())
    w = FiBA(m, min_arity=mu)
    w.bulk_insert([(t, 1) for t in range(n)])
    m.reset()
    cut = 0
    for _ in range(reps):
        cut += m_
        w.bulk_evict(cut - 1)
    assert len(w) == n - reps * m_
    return m.combines / reps


@pytest.mark.parametrize("mu", [2, 4])
def test_bulk_evict_cost_is_logarithmic_in_m(mu: int) -> None:
    n = 2**16
    c16, c256, c4096 = (_bulk_evict_cost(n, m_, mu) for m_ in (16, 256, 4096))
    assert c4096 < 4096 / 10  # nowhere near one combine per evicted entry
    assert c16 < c256 < c4096
    assert c4096 < 8 * c16, (c16, c256, c4096)  # m grew 256-fold, the cost ~log m
    # a bounded number of combines per doubling of m (per level of the boundary path)
    assert (c4096 - c16) / math.log2(4096 / 16) < 4 * mu, (c16, c256, c4096)


def test_bulk_insert_is_linear_and_cheaper_than_a_loop() -> None:
    n, m_ = 2**14, 1024
    for d in (0, 64, 4096):
        costs = []
        for bulk in (True, False):
            m = Counting(Sum())
            w = FiBA(m, min_arity=4)
            w.bulk_insert([(2 * t, 1) for t in range(n)])
            m.reset()
            start = 2 * (n - d) + 1  # odd times: interleave with the d youngest entries
            items = [(start + 2 * i if 2 * i < 2 * d else 2 * n + i, 1) for i in range(m_)]
            if bulk:
                w.bulk_insert(items)
            else:
                for t, v in items:
                    w.insert(t, v)
            costs.append(m.combines)
            w._check()  # after counting: the check recomputes every aggregate
        bulk_cost, loop_cost = costs
        assert bulk_cost <= loop_cost, (d, bulk_cost, loop_cost)
        if d == 0:
            assert bulk_cost < 3 * m_
