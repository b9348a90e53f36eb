"""Shared definitions for the in-order family tests (not a test module itself).

``FAMILY`` maps a label to a factory for every ``windowagg.fifo`` class under test;
DABAChunked appears with tiny chunks so that chunk boundaries are crossed all the time.
``UnimodularGroup`` is a non-commutative *group* (2x2 integer matrices of determinant 1),
so that SubtractOnEvict is tested on order-sensitive inverses too.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import strategies as st

from windowagg import native_available
from windowagg.fifo import (
    AMTA,
    DABA,
    FOA,
    IOA,
    DABAChunked,
    DABALite,
    FlatFAT,
    FlatFIT,
    LogMTA,
    Recalc,
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


def python(cls: Any) -> Callable[..., Any]:
    """*cls* on the pure-Python backend (the reference), whatever the default is."""

    def make(m: Any, **kw: Any) -> Any:
        return cls(m, backend="python", **kw)

    return make


def native(cls: Any) -> Callable[..., Any]:
    """*cls* on the native backend; skips the test when the compiled core is not built."""

    def make(m: Any, **kw: Any) -> Any:
        if not native_available():
            pytest.skip("windowagg's compiled core is not built (bash scripts/build_native.sh)")
        return cls(m, backend="native", **kw)

    return make


NATIVE_CLASSES: dict[str, Any] = {
    "TwoStacksLite": TwoStacksLite,
    "DABALite": DABALite,
    "DABA": DABA,
    "AMTA": AMTA,
}
# every class with a native twin, on the native backend (labels end in "@native")
NATIVE: dict[str, Callable[..., Any]] = {
    f"{k}@native": native(c) for k, c in NATIVE_CLASSES.items()
}

MONOID_ONLY: dict[str, Callable[[Any], Any]] = {
    "TwoStacks": TwoStacks,
    "TwoStacksLite": python(TwoStacksLite),
    "FOA": FOA,
    "IOA": IOA,
    "DABA": python(DABA),
    "DABAChunked2": lambda m: DABAChunked(m, chunk_size=2),
    "DABAChunked4": lambda m: DABAChunked(m, chunk_size=4),
    "DABALite": python(DABALite),
    "FlatFAT": FlatFAT,
    "FlatFIT": FlatFIT,
    **NATIVE,
}
GROUP_ONLY: dict[str, Callable[[Any], Any]] = {"SubtractOnEvict": SubtractOnEvict}
# every class that takes any monoid, on the default backend (the backend twin fixture of
# tests/conftest.py picks it): the atomicity and non-finite tests' set
DEFAULT_BACKEND: dict[str, Callable[[Any], Any]] = {
    "Recalc": Recalc,
    "TwoStacks": TwoStacks,
    "TwoStacksLite": TwoStacksLite,
    "FOA": FOA,
    "IOA": IOA,
    "DABA": DABA,
    "DABAChunked": lambda m: DABAChunked(m, chunk_size=2),
    "DABALite": DABALite,
    "FlatFAT": FlatFAT,
    "FlatFIT": FlatFIT,
    "LogMTA": LogMTA,
    "AMTA": AMTA,
}
FAMILY: dict[str, Callable[[Any], Any]] = {**MONOID_ONLY, **GROUP_ONLY}
