"""The shared interface, errors that change nothing, DABA's trace and its chunked queue."""

from __future__ import annotations

import math
from typing import Any

import pytest

from fifo.fifo_family import FAMILY, MONOID_ONLY, UnimodularGroup
from windowagg.errors import ArgumentError, EmptyWindowError, MonoidContractError
from windowagg.fifo import DABA, DABAChunked, FifoAggregator, Recalc, SubtractOnEvict
from windowagg.monoids import Concat, Max, Sum


def _make(name: str) -> Any:
    return FAMILY[name](Sum())


@pytest.mark.parametrize("name", sorted(FAMILY))
def test_protocol_and_empty_window(name: str) -> None:
    w = _make(name)
    assert isinstance(w, FifoAggregator)
    assert len(w) == 0 and list(w) == [] and w.query() == 0
    for op in (w.evict, w.oldest_partial, w.youngest_partial):
        with pytest.raises(EmptyWindowError, match="empty window"):
            op()
    w.bulk_evict(0)
    w._check()
    # built-in fast paths are private subclasses: the repr names the public class
    public = next(c for c in type(w).__mro__ if not c.__name__.startswith("_"))
    assert public.__name__ in repr(w)


@pytest.mark.parametrize("name", sorted(FAMILY))
@pytest.mark.parametrize("fill", ["_load_partials", "_refill"])
def test_partials_go_in_as_they_are(name: str, fill: str) -> None:
    """Loading partials (a state) and the error path's refill take them as they are, the
    built-in fast classes included: ``Sum.lift`` refuses inf, a partial a state may hold."""
    w = _make(name)
    if not hasattr(w, fill):
        pytest.skip(f"{name} has no {fill}")
    w.insert(2)
    getattr(w, fill)([1.5, math.inf])
    held = [1.5, math.inf] if fill == "_refill" else [2, 1.5, math.inf]
    assert list(w) == held and len(w) == len(held)
    assert w.query() == math.inf
    w._check()


@pytest.mark.parametrize("name", sorted(FAMILY))
def test_deprecated_ends_warn_and_alias_the_partials(name: str) -> None:
    w = _make(name)
    for v in (5, 6, 7):
        w.insert(v)
    who = type(w).__name__  # the warning names the class as the reference does
    for end, extreme in (("oldest", "smallest"), ("youngest", "largest")):
        msg = (
            f"{who}.{end}() is renamed {end}_partial(): in windowagg, {end}() is the "
            f"{extreme} timestamp of an out-of-order window"
        )
        with pytest.warns(DeprecationWarning) as caught:
            got = getattr(w, end)()
        assert [str(c.message) for c in caught] == [msg]
        assert caught[0].filename == __file__  # attributed to the caller
        assert got == getattr(w, f"{end}_partial")() == (5 if end == "oldest" else 7)
    w.bulk_evict(3)
    with pytest.warns(DeprecationWarning), pytest.raises(EmptyWindowError, match="oldest_partial"):
        w.oldest()


@pytest.mark.parametrize("name", sorted(FAMILY))
@pytest.mark.parametrize("bad", [-1, 4, 100])
def test_bad_bulk_evict_changes_nothing(name: str, bad: int) -> None:
    w = _make(name)
    for v in (5, 6, 7):
        w.insert(v)
    w.query()
    with pytest.raises(EmptyWindowError, match=r"bulk_evict\(.*count must be between 0"):
        w.bulk_evict(bad)
    assert list(w) == [5, 6, 7] and w.query() == 18
    w._check()


@pytest.mark.parametrize("name", sorted(FAMILY))
@pytest.mark.parametrize("bad", [1.0, "2", True, None])
def test_non_integer_bulk_evict_is_a_type_error(name: str, bad: Any) -> None:
    w = _make(name)
    w.insert(1)
    with pytest.raises(TypeError, match="integer count"):
        w.bulk_evict(bad)
    assert list(w) == [1]


def test_subtract_on_evict_needs_a_group_and_names_alternatives() -> None:
    with pytest.raises(MonoidContractError, match="TwoStacks, DABA"):
        SubtractOnEvict(Max())  # type: ignore[arg-type]
    w = SubtractOnEvict(UnimodularGroup())
    a, b, c = (1, 1, 0, 1), (1, 0, 1, 1), (0, -1, 1, 0)
    for x in (a, b, c):
        w.insert(x)
    w.evict()  # non-commutative: inverse(a) ⊗ (a b c) = b c
    assert w.query() == UnimodularGroup().combine(b, c)


@pytest.mark.parametrize("name", sorted(MONOID_ONLY))
def test_not_a_monoid_is_rejected(name: str) -> None:
    with pytest.raises(MonoidContractError, match="needs a monoid"):
        MONOID_ONLY[name](object())


@pytest.mark.parametrize("size", [0, 3, 6, -2, 2.0, True, 2**21, 2**40, 2**64])
def test_daba_chunk_size_validated(size: Any) -> None:
    # 2**40 allocated its first chunk before any limit: a bare MemoryError (issue 36 item 10)
    with pytest.raises(ArgumentError, match=f"power of two from 2 to {2**20}, got {size!r}"):
        DABAChunked(Sum(), chunk_size=size)


def test_daba_largest_chunk_size_is_accepted() -> None:
    w = DABAChunked(Sum(), chunk_size=2**20)
    w.insert(1)
    assert w.query() == 1 and w.chunk_size == 2**20


def test_daba_regression_trace() -> None:
    """The guide's trace (Max; absolute positions, F from 0): pointers, aggs, queries."""
    w = DABAChunked(Max(), chunk_size=2)
    d = DABA(Max(), backend="python")  # the trace reads the Python class's sublists
    for x in (2, 6, 3, 5):
        w.insert(x)
        d.insert(x)
    assert w._pointers() == (0, 1, 2, 3, 4, 4)
    steps: list[tuple[str, int | None, tuple[int, ...], int]] = [
        ("i", 3, (0, 2, 2, 2, 4, 5), 6),
        ("e", None, (1, 3, 3, 3, 4, 5), 6),
        ("i", 1, (1, 4, 4, 4, 4, 6), 6),
        ("e", None, (2, 3, 4, 5, 6, 6), 5),  # flip + shrink in one fixup
        ("i", 4, (2, 4, 4, 4, 6, 7), 5),
        ("e", None, (3, 5, 5, 5, 6, 7), 5),
        ("i", 2, (3, 6, 6, 6, 6, 8), 5),
        ("e", None, (4, 5, 6, 7, 8, 8), 4),
    ]
    for kind, v, pointers, q in steps:
        if kind == "i":
            w.insert(v)
            d.insert(v)
        else:
            w.evict()
            d.evict()
        w._check()
        d._check()
        assert w._pointers() == pointers
        f, lp, r, a, b, e = pointers  # the deque layout has the same sublist sizes
        assert d._sizes() == (lp - f, r - lp, a - r, b - a, e - b)
        assert w.query() == q == d.query()


def _chain_length(w: DABAChunked) -> int:
    c, k = w._fc, 0
    while c is not None:
        c, k = c[-2], k + 1
    return k


def test_daba_chunks_are_freed_and_allocated_at_boundaries() -> None:
    w = DABAChunked(Concat(), chunk_size=4)
    o = Recalc(Concat())
    for v in range(103):  # crosses 25 chunk boundaries; E's chunk always exists
        w.insert(v)
        o.insert(v)
        assert _chain_length(w) == len(w) // 4 + 1
    assert w._fc[-1] is None  # the oldest chunk has no prev link
    for _ in range(103):
        w.evict()
        o.evict()
        w._check()
        assert w.query() == o.query()
        assert _chain_length(w) == (w._e // 4) - (w._f // 4) + 1
    assert _chain_length(w) == 1 and len(w) == 0
    for v in range(9):  # regrowth from an empty window in the middle of a chunk
        w.insert(v)
        o.insert(v)
        w._check()
    assert w.query() == o.query() and w.youngest_partial() == (8,)


@pytest.mark.parametrize("name", sorted(FAMILY))
def test_long_adversarial_lockstep(name: str) -> None:
    """Grow to 120, drain to empty, regrow, oscillate, bulk-evict: _check every step."""
    monoid: Any = UnimodularGroup() if name == "SubtractOnEvict" else Concat()
    w, o = FAMILY[name](monoid), Recalc(monoid)

    def val(i: int) -> Any:
        return (
            [(1, 1, 0, 1), (1, 0, 1, 1), (0, -1, 1, 0)][i % 3] if name == "SubtractOnEvict" else i
        )

    script: list[tuple[str, int]] = []
    script += [("i", i) for i in range(120)] + [("e", 0)] * 120
    script += [("i", i) for i in range(40)]
    for i in range(80):
        script += [("e", 0), ("i", 1000 + i)]
    script += [("b", 17), ("b", 0), ("i", 5), ("b", 24)] + [("i", i) for i in range(30)]
    for kind, i in script:
        if kind == "i":
            w.insert(val(i))
            o.insert(val(i))
        elif kind == "e":
            w.evict()
            o.evict()
        else:
            w.bulk_evict(i)
            o.bulk_evict(i)
        w._check()
        assert w.query() == o.query() and len(w) == len(o)
    assert list(w) == list(o)
