"""Explicit backends (issue 27): the public class holds its implementation, no faked
``isinstance``, no silent fallback, subclasses keep their overrides on both backends."""

from __future__ import annotations

import pickle
from typing import Any

import pytest

from windowagg import OrderStatistics, native_available
from windowagg.errors import BackendError
from windowagg.fifo import AMTA, DABA, DABALite, TwoStacksLite
from windowagg.monoids import Sum
from windowagg.ooo import FiBA
from windowagg.storage import MemoryStore

BACKENDS = [
    "python",
    pytest.param(
        "native", marks=pytest.mark.skipif(not native_available(), reason="core not built")
    ),
]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("cls", [TwoStacksLite, DABALite, DABA, AMTA], ids=lambda c: c.__name__)
def test_the_public_class_is_the_type_and_pickles(cls: Any, backend: str) -> None:
    w = cls(Sum(), backend=backend)
    assert type(w) is cls and w.backend == backend
    for x in (1, 2, 3):
        w.insert(x)
    w.evict()
    back = pickle.loads(pickle.dumps(w))
    assert type(back) is cls and back.backend == backend
    assert back.query() == 5 and list(back) == list(w) and len(back) == 2
    back._check()


@pytest.mark.parametrize("backend", BACKENDS)
def test_fiba_and_order_statistics_hold_their_implementation(backend: str) -> None:
    f = FiBA(Sum(), backend=backend)
    f.insert(5, 1)
    f.insert(2, 2)
    assert type(f) is FiBA and f.backend == backend
    back = pickle.loads(pickle.dumps(f))
    assert back.query() == 3 and back.backend == backend
    s = OrderStatistics(backend=backend)
    s.insert(3.0)
    assert type(s) is OrderStatistics and s.backend == backend and s.kth(0) == 3.0


def test_no_silent_fallback_for_what_the_native_side_lacks() -> None:
    with pytest.raises(BackendError, match="store="):
        AMTA(Sum(), store=MemoryStore(), backend="native")
    w = AMTA(Sum(), store=MemoryStore(), backend="auto")  # openly the Python implementation
    assert w.backend == "python"


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_subclass_keeps_its_override(backend: str) -> None:
    class Logged(DABA[Any, Any, Any]):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self.seen: list[Any] = []

        def insert(self, v: Any) -> None:
            self.seen.append(v)
            super().insert(v)

    w = Logged(Sum(), backend=backend)
    w.insert(4)
    w.insert(5)
    w.evict()  # not overridden: the implementation's own method
    assert w.seen == [4, 5] and w.query() == 5 and w.backend == backend
