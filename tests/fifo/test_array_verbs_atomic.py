"""Issue 26: ``slide`` and ``bulk_insert`` are all-or-nothing, like every single call.

The same steps as the loop of single calls ``evict()`` / ``bulk_evict(k)``, ``insert(v)``,
``query()``; when one of them raises, the array verb raises the same error and leaves the
window exactly as it found it (``windowagg.fifo._verbs``): same partials, same ``query()``,
a window that passes ``_check()``. On success, the same answers and window as the loop.
Run on each backend (the twins of tests/conftest.py), and the native twin against the
Python reference over the same calls. (``Picky`` refuses by value, never by grouping, so
every undo here can be done; tests/fifo/test_bulk_all_or_nothing.py has the rest.)
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fifo.fifo_family import NATIVE_CLASSES, native
from windowagg import fifo


class Picky:
    """Concat refusing a combined partial of two or more entries with a negative one."""

    identity: tuple[Any, ...] = ()

    def lift(self, x: Any) -> tuple[Any, ...]:
        if x == -9:
            raise ValueError("lift refuses -9")
        return (x,)

    def combine(self, a: tuple[Any, ...], b: tuple[Any, ...]) -> tuple[Any, ...]:
        out = a + b
        if len(out) > 1 and any(x < 0 for x in out):
            raise ArithmeticError(f"refused {out!r}")
        return out

    def lower(self, a: tuple[Any, ...]) -> tuple[Any, ...]:
        return a


FIFO: dict[str, Any] = {
    "TwoStacks": fifo.TwoStacks,
    "TwoStacksLite": fifo.TwoStacksLite,
    "FOA": fifo.FOA,
    "DABA": fifo.DABA,
    "DABALite": fifo.DABALite,
    "FlatFAT": fifo.FlatFAT,
    "LogMTA": fifo.LogMTA,
    "AMTA": fifo.AMTA,
}


def _outcome(f: Any) -> Any:
    try:
        return ("ok", f())
    except Exception as exc:
        return ("raised", type(exc).__name__)


def _snapshot(w: Any) -> Any:
    return _outcome(w.query), len(w), _outcome(lambda: list(w)), _outcome(w._check)


def _loop_slide(w: Any, values: list[Any], counts: list[int]) -> list[Any]:
    """``slide`` as single calls (evict, insert, query per value)."""
    answers = []
    for v, k in zip(values, counts, strict=True):
        if k == 1:
            w.evict()
        elif k:
            w.bulk_evict(k)
        w.insert(v)
        answers.append(w.query())
    return answers


def _loop_insert(w: Any, values: list[Any]) -> None:
    for v in values:
        w.insert(v)


values_st = st.lists(st.integers(-9, 9), max_size=8)


@st.composite
def _case(draw: Any) -> tuple[list[int], list[int], list[int]]:
    """Values to fill the window first, then values and valid eviction counts to slide."""
    first = draw(st.lists(st.integers(0, 9), max_size=6))
    values = draw(values_st)
    counts, size = [], len(first)
    for _ in values:
        k = draw(st.integers(0, size))
        counts.append(k)
        size += 1 - k
    return first, values, counts


def _run(make: Any, first: list[int], values: list[int], counts: list[int], verb: str) -> Any:
    """The array verb and the loop of single calls, each on a window filled with *first*.

    Returns (outcome, snapshot) of the array verb, asserting the loop gives the same, except
    that where the loop raises the verb leaves the window as it found it."""
    got = []
    for how in ("verb", "loop"):
        w = make(Picky())
        for x in first:
            w.insert(x)
        before = _snapshot(w)
        if verb == "slide" and how == "verb":
            outcome = _outcome(lambda w=w: w.slide(values, evict=counts))
        elif verb == "slide":
            outcome = _outcome(lambda w=w: _loop_slide(w, values, counts))
        elif how == "verb":
            outcome = _outcome(lambda w=w: w.bulk_insert(values))
        else:
            outcome = _outcome(lambda w=w: _loop_insert(w, values))
        got.append((outcome, before if outcome[0] == "raised" and how == "loop" else _snapshot(w)))
    assert got[0] == got[1]
    return got[0]


@pytest.mark.parametrize("verb", ["slide", "bulk_insert"])
@pytest.mark.parametrize("name", sorted(FIFO))
@given(case=_case())
def test_a_raising_array_verb_changes_nothing(
    name: str, verb: str, case: tuple[list[int], list[int], list[int]]
) -> None:
    first, values, counts = case
    _run(FIFO[name], first, values, counts, verb)


@pytest.mark.parametrize("verb", ["slide", "bulk_insert"])
@pytest.mark.parametrize("name", sorted(NATIVE_CLASSES))
@given(case=_case())
def test_native_array_verbs_agree_with_the_reference(
    name: str, verb: str, case: tuple[list[int], list[int], list[int]]
) -> None:
    first, values, counts = case
    cls = NATIVE_CLASSES[name]
    ref = _run(lambda m: cls(m, backend="python"), first, values, counts, verb)
    assert _run(native(cls), first, values, counts, verb) == ref
