"""ooo.Recalc is the oracle, so it is tested against a plain dict-of-lists model."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from windowagg.errors import TimestampError
from windowagg.monoids import Concat
from windowagg.ooo import Recalc

ops = st.lists(
    st.tuples(st.sampled_from(["ins", "ev", "bev"]), st.integers(0, 20), st.integers(0, 99)),
    max_size=60,
)


@given(ops)
def test_recalc_matches_sorted_dict_model(script: list[tuple[str, int, int]]) -> None:
    w = Recalc(Concat())
    model: dict[int, tuple[int, ...]] = {}
    for op, t, v in script:
        if op == "ins":
            w.insert(t, v)
            model[t] = (*model.get(t, ()), v)
        elif op == "ev":
            w.evict(t)
            model.pop(t, None)
        else:
            w.bulk_evict(t)
            model = {k: x for k, x in model.items() if k > t}
        w._check()
        expect = tuple(x for k in sorted(model) for x in model[k])
        assert w.query() == expect
        assert len(w) == len(model)
        assert w.range_query(5, 12) == tuple(
            x for k in sorted(model) if 5 <= k <= 12 for x in model[k]
        )


def test_bad_timestamps_leave_window_unchanged() -> None:
    w = Recalc(Concat())
    w.insert(1, "a")
    for bad in (math.nan, None, "x"):
        with pytest.raises(TimestampError):
            w.insert(bad, "b")
        with pytest.raises(TimestampError):
            w.bulk_insert([(2, "c"), (bad, "d")])
    assert w.query() == ("a",) and len(w) == 1
