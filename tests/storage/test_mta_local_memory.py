"""Local memory of store-backed MTAs stays O(log n) while the window grows to 10^6.

What is measured is ``local_entries()``: the pairs and partials the aggregator holds in
process (head and tail pairs, write buffer, head caches, open pages, AMTA's stack and
result pair) -- not wall time, and not the store's own memory (the 10^6 run uses the
in-memory backend object only to stay fast).
"""

from __future__ import annotations

import math
from typing import Any

import pytest

from windowagg.fifo.amta import AMTA
from windowagg.fifo.log_mta import LogMTA
from windowagg.monoids import Sum
from windowagg.storage import MemoryStore

SIZES = {"buffer_size": 64, "cache_size": 32, "refill_below": 16, "page_size": 16}


def bound(height: int) -> int:
    b, c, p = SIZES["buffer_size"], SIZES["cache_size"], SIZES["page_size"]
    return b + height * (c + p + 2) + height + 2


@pytest.mark.parametrize(("cls", "n"), [(AMTA, 10**6), (LogMTA, 2 * 10**5)])
def test_local_entries_logarithmic_while_growing(cls: Any, n: int) -> None:
    store = MemoryStore()
    w = cls(Sum(), store=store, namespace="big", **SIZES)
    seen = []
    for i in range(1, n + 1):
        w.insert(i)
        if i & (i - 1) == 0 or i == n:  # powers of two and the end
            h = w.height
            assert h <= math.floor(math.log2(i)) + 2
            local = w.local_entries()
            assert local <= bound(h), (i, local, bound(h))
            seen.append((i, local))
    assert w.query() == n * (n + 1) // 2 and len(w) == n
    # the store holds the rest: about n pairs at level 0 plus n above, in pages of 16
    assert len(store) >= (n // 2) // SIZES["page_size"]
    # logarithmic, not linear: 10^6 entries, a few hundred held locally
    assert seen[-1][1] <= bound(math.floor(math.log2(n)) + 2) < 2000
    # evicting most of it in one call keeps it small and correct
    w.bulk_evict(n - 1000)
    assert len(w) == 1000 and w.query() == sum(range(n - 999, n + 1))
    assert w.local_entries() <= bound(w.height)
    for i in range(5000):  # slide: the caches refill from the store
        w.insert(i)
        w.evict()
        assert w.local_entries() <= bound(w.height)
    w._check()


def test_in_process_variant_holds_everything() -> None:
    w = AMTA(Sum(), backend="python")  # the Python class's level storage
    for i in range(10_000):
        w.insert(i)
    assert w.local_entries() >= 10_000  # ~n pairs over all levels, all in process
