from __future__ import annotations

import pytest

from windowagg.errors import EmptyWindowError
from windowagg.fifo import Recalc
from windowagg.monoids import Concat


def test_fifo_recalc_basic() -> None:
    w = Recalc(Concat())
    assert w.query() == ()
    with pytest.raises(EmptyWindowError):
        w.evict()
    for x in range(5):
        w.insert(x)
    w.bulk_evict(2)
    assert w.query() == (2, 3, 4) and len(w) == 3
    assert w.oldest_partial() == (2,) and w.youngest_partial() == (4,)
    with pytest.raises(EmptyWindowError):
        w.bulk_evict(4)
    assert list(w) == [(2,), (3,), (4,)]
