"""Every in-order aggregator in lockstep with ``fifo.Recalc`` (Hypothesis state machines).

Monoids: non-commutative (Concat, MatMul2x2), idempotent (Max), group (Sum); SubtractOnEvict
only gets groups (Sum and the non-commutative SL(2, Z) group). Rules cover single and
burst inserts, evictions (also on an empty window), drains to empty followed by regrowth,
bulk evictions of any valid size, and invalid bulk evictions that must change nothing.
``_check()`` runs after every mutation; the invariant compares query, len, iteration and
both ends after every rule.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule, run_state_machine_as_test

from fifo.fifo_family import GROUP_ONLY, MONOID_ONLY, UnimodularGroup, sl2_values
from support import MONOID_MATRIX, values_for
from windowagg.errors import EmptyWindowError
from windowagg.fifo import Recalc

LOCKSTEP_MONOIDS = ["concat", "matmul2x2", "max", "sum"]


def make_machine(factory: Any, monoid: Any, values: st.SearchStrategy[Any]) -> type:
    class Lockstep(RuleBasedStateMachine):
        def __init__(self) -> None:
            super().__init__()
            self.w = factory(monoid)
            self.o = Recalc(monoid)

        def _same(self) -> None:
            assert len(self.w) == len(self.o)
            assert self.w.query() == self.o.query()

        @rule(v=values)
        def insert(self, v: Any) -> None:
            self.w.insert(v)
            self.o.insert(v)
            self.w._check()

        @rule(vs=st.lists(values, min_size=2, max_size=24))
        def insert_burst(self, vs: list[Any]) -> None:
            for v in vs:
                self.w.insert(v)
                self.o.insert(v)
                self.w._check()
                self._same()

        @rule()
        def evict(self) -> None:
            if not len(self.o):
                with pytest.raises(EmptyWindowError):
                    self.w.evict()
                self.w._check()
                return
            self.w.evict()
            self.o.evict()
            self.w._check()

        @rule()
        def drain_and_regrow(self) -> None:
            while len(self.o):
                self.w.evict()
                self.o.evict()
                self.w._check()
                self._same()
            with pytest.raises(EmptyWindowError):
                self.w.evict()
            assert self.w.query() == monoid.lower(monoid.identity)

        @rule(data=st.data())
        def bulk_evict(self, data: st.DataObject) -> None:
            k = data.draw(st.integers(min_value=0, max_value=len(self.o)), label="k")
            self.w.bulk_evict(k)
            self.o.bulk_evict(k)
            self.w._check()

        @rule(extra=st.integers(min_value=1, max_value=3), negative=st.booleans())
        def bad_bulk_evict(self, extra: int, negative: bool) -> None:
            before = list(self.w)
            k = -extra if negative else len(self.o) + extra
            with pytest.raises(EmptyWindowError):
                self.w.bulk_evict(k)
            self.w._check()
            assert list(self.w) == before

        @invariant()
        def agree(self) -> None:
            self._same()
            assert list(self.w) == list(self.o)
            if len(self.o):
                assert self.w.oldest_partial() == self.o.oldest_partial()
                assert self.w.youngest_partial() == self.o.youngest_partial()
            else:
                with pytest.raises(EmptyWindowError):
                    self.w.oldest_partial()
                with pytest.raises(EmptyWindowError):
                    self.w.youngest_partial()

    return Lockstep


@pytest.mark.parametrize("monoid_name", LOCKSTEP_MONOIDS)
@pytest.mark.parametrize("cls_name", sorted(MONOID_ONLY))
def test_lockstep_monoid(cls_name: str, monoid_name: str) -> None:
    machine = make_machine(
        MONOID_ONLY[cls_name], MONOID_MATRIX[monoid_name], values_for(monoid_name)
    )
    run_state_machine_as_test(machine)


@pytest.mark.parametrize("group_name", ["sum", "sl2z"])
@pytest.mark.parametrize("cls_name", sorted(GROUP_ONLY))
def test_lockstep_group(cls_name: str, group_name: str) -> None:
    if group_name == "sum":
        monoid, values = MONOID_MATRIX["sum"], values_for("sum")
    else:
        monoid, values = UnimodularGroup(), sl2_values
    run_state_machine_as_test(make_machine(GROUP_ONLY[cls_name], monoid, values))
