from __future__ import annotations

import pytest

from windowagg.errors import MonoidContractError
from windowagg.monoids import Counting, Max, Sum, is_group, is_monoid, require_group


def test_counting_counts_combines() -> None:
    m = Counting(Sum())
    acc = m.identity
    for x in range(10):
        acc = m.combine(acc, m.lift(x))
    assert m.lower(acc) == 45
    assert (m.combines, m.lifts, m.lowers) == (10, 10, 1)


def test_require_group_names_the_alternative() -> None:
    with pytest.raises(MonoidContractError, match="DABA"):
        require_group(Max(), "SubtractOnEvict")


def test_duck_typed_monoid_needs_no_base_class() -> None:
    class Mul:
        identity = 1

        def lift(self, x: int) -> int:
            return x

        def combine(self, a: int, b: int) -> int:
            return a * b

        def lower(self, a: int) -> int:
            return a

    assert is_monoid(Mul()) and not is_group(Mul())
    assert not is_monoid(object())
