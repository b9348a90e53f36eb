"""Test support shared by every test module: the monoid matrix and value strategies, and a
store whose commits fail on demand (``FlakyStore``).

Every aggregator is run in lockstep against an oracle over ``MONOID_MATRIX``, which holds
a group (Sum), idempotent monoids (Max, MaxCount's max part) and non-commutative ones
(Concat, First, Last, 2x2 integer matrix product, ArgMax with its older-wins ties). Values are drawn per monoid by ``values_for(name)``.
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from windowagg.errors import StorageError
from windowagg.monoids import ArgMax, Concat, First, Last, MatMul2x2, Max, MaxCount, Sum
from windowagg.storage import MemoryStore


def _mod3(x: int) -> int:
    """ArgMax's key in the matrix: few distinct keys, so ties (older wins) are frequent."""
    return x % 3


MONOID_MATRIX: dict[str, Any] = {
    "sum": Sum(),
    "max": Max(),
    "concat": Concat(),
    "first": First(),
    "last": Last(),
    "matmul2x2": MatMul2x2(),
    "argmax": ArgMax(key=_mod3),
    "max_count": MaxCount(),
}

_small_int = st.integers(min_value=-9, max_value=9)
_VALUES: dict[str, st.SearchStrategy[Any]] = {
    "sum": st.integers(min_value=-1000, max_value=1000),
    "max": st.integers(min_value=-1000, max_value=1000),
    "concat": st.integers(min_value=0, max_value=99),
    "first": st.integers(min_value=0, max_value=99),
    "last": st.integers(min_value=0, max_value=99),
    "matmul2x2": st.tuples(_small_int, _small_int, _small_int, _small_int),
    "argmax": st.integers(min_value=0, max_value=99),
    "max_count": st.integers(min_value=0, max_value=3),
}

monoid_names = st.sampled_from(sorted(MONOID_MATRIX))


def values_for(name: str) -> st.SearchStrategy[Any]:
    """The strategy of input values for the monoid called *name* in ``MONOID_MATRIX``."""
    return _VALUES[name]


def value_at(name: str, i: int) -> Any:
    """The *i*-th input value for the monoid *name*: distinct per index (for matmul2x2, a
    non-commuting shear), so that a dropped or reordered entry changes the result."""
    if name == "matmul2x2":
        return (1, i % 7 + 1, 0, 1) if i % 2 else (1, 0, i % 5 + 1, 1)
    return i


_counter = iter(range(10**12))


def unique_value(name: str) -> Any:
    """A value no other call returns, so that a dropped or reordered entry is visible."""
    return value_at(name, next(_counter))


class FlakyStore(MemoryStore):
    """A :class:`~windowagg.storage.MemoryStore` whose ``commit`` raises ``StorageError``
    (writing nothing) while ``fail`` is set: a store that goes down between micro-batches."""

    fail = False

    def commit(self, ns: str, puts: Any, delete_ranges: Any, meta: Any) -> None:
        if self.fail:
            raise StorageError("store down")
        super().commit(ns, puts, delete_ranges, meta)
