"""Shared definitions for the in-order family tests (not a test module itself).

``FAMILY`` maps a label to a factory for every ``windowagg.fifo`` class under test;
DABAChunked appears with tiny chunks so that chunk boundaries are crossed all the time.
``UnimodularGroup`` is a non-commutative *group* (2x2 integer matrices of determinant 1),
so that SubtractOnEvict is tested on order-sensitive inverses too.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hypothesis import strategies as st

from windowagg.fifo import (
    DABA,
    FOA,
    IOA,
    DABAChunked,
    DABALite,
    FlatFAT,
    FlatFIT,
    SubtractOnEvict,
    TwoStacks,
    TwoStacksLite,
)
from windowagg.monoids import MatMul2x2


class UnimodularGroup(MatMul2x2):
    """MatMul2x2 restricted to SL(2, Z): every element has an integer inverse."""

    __slots__ = ()
    invertible = True  # type: ignore[assignment]

    def inverse(self, a: tuple[int, int, int, int]) -> tuple[int, int, int, int]:
        a0, a1, a2, a3 = a
        return (a3, -a1, -a2, a0)

    def __repr__(self) -> str:
        return "UnimodularGroup()"


SL2_GENERATORS = [(1, 1, 0, 1), (1, -1, 0, 1), (1, 0, 1, 1), (1, 0, -1, 1), (0, -1, 1, 0)]
sl2_values = st.sampled_from(SL2_GENERATORS)

MONOID_ONLY: dict[str, Callable[[Any], Any]] = {
    "TwoStacks": TwoStacks,
    "TwoStacksLite": TwoStacksLite,
    "FOA": FOA,
    "IOA": IOA,
    "DABA": DABA,
    "DABAChunked2": lambda m: DABAChunked(m, chunk_size=2),
    "DABAChunked4": lambda m: DABAChunked(m, chunk_size=4),
    "DABALite": DABALite,
    "FlatFAT": FlatFAT,
    "FlatFIT": FlatFIT,
}
GROUP_ONLY: dict[str, Callable[[Any], Any]] = {"SubtractOnEvict": SubtractOnEvict}
FAMILY: dict[str, Callable[[Any], Any]] = {**MONOID_ONLY, **GROUP_ONLY}
