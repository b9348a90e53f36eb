"""FiBA's fast paths in lockstep with Recalc: in-order rounds on deep trees, failing combines.

The general lockstep machine (test_fiba_machine.py) draws operations uniformly, so the
d = 0 paths (append at the right finger, pop at the left finger, and the splits and
merges they trigger at both fingers) run only a little, on small trees. Here:

* a Hypothesis machine biased to in-order rounds (evict oldest, insert youngest, query)
  on windows that start with up to 120 entries (trees of height 3-5 at small
  min_arity), mixed with inserts/evicts at a distance, collisions and bulk operations,
  ``_check()`` and a comparison with Recalc after every mutation. The monoid is Sum over
  ints (now and then a float or a bool among them), Sum over dyadic floats (exact in any
  order, so compared exactly), Concat and the 2x2 matrix product (non-commutative);
* deterministic FIFO runs on deep trees for every min_arity 2..8 (and 16, 32);
* a raising combine on the append fast path and off it leaves the window unchanged, and
  wrappers such as Counting(Sum()) count every combine.
"""

from __future__ import annotations

import random
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from windowagg.errors import MonoidTypeError
from windowagg.monoids import Concat, Counting, MatMul2x2, Sum
from windowagg.ooo import FiBA, Recalc

# these tests read the pure-Python reference's internals (tests/native/ covers the native twin)
pytestmark = pytest.mark.usefixtures("python_backend")

MONOIDS: dict[str, Any] = {
    "sum_int": Sum(),
    "sum_dyadic": Sum(),
    "concat": Concat(),
    "matmul2x2": MatMul2x2(),
}


def _value(name: str, i: int) -> Any:
    if name == "sum_int":
        return i % 201 - 100
    if name == "sum_dyadic":
        return (i % 161 - 80) / 8  # small dyadic floats: every sum is exact in any order
    if name == "concat":
        return f"v{i}"
    return (1, i % 7 + 1, 0, 1) if i % 2 else (1, 0, i % 5 + 1, 1)


def _low(keys: list[Any]) -> int:
    """The low end of a drawn time: other rules insert below -5 too (at a distance from the
    oldest key), so the range reaches past both ends of what is stored and is never empty."""
    return min(-5, keys[0] - 5) if keys else -5


class InOrderMachine(RuleBasedStateMachine):
    """FiBA vs Recalc, mostly d = 0 rounds, with every other kind of operation mixed in."""

    def __init__(self) -> None:
        super().__init__()
        self.w: FiBA
        self.r: Recalc
        self.name = "sum_int"
        self.i = 0

    @initialize(
        name=st.sampled_from(sorted(MONOIDS)),
        mu=st.integers(2, 8),
        n=st.sampled_from([0, 5, 40, 120]),
        restored=st.booleans(),
    )
    def setup(self, name: str, mu: int, n: int, restored: bool) -> None:
        self.name = name
        m = MONOIDS[name]
        self.r = Recalc(m)
        pairs = [(3 * t, self._next()) for t in range(n)]
        if restored:  # packed nodes
            self.w = FiBA.from_sorted_partials(m, [(t, m.lift(v)) for t, v in pairs], mu)
        else:  # grown by appends: half-full leaves
            self.w = FiBA(m, min_arity=mu)
            for t, v in pairs:
                self.w.insert(t, v)
        for t, v in pairs:
            self.r.insert(t, v)
        self.w._check()

    def _next(self) -> Any:
        self.i += 1
        return _value(self.name, self.i)

    def _do(self, method: str, *args: Any) -> None:
        getattr(self.r, method)(*args)
        getattr(self.w, method)(*args)
        self.w._check()
        assert self.w.query() == self.r.query(), (method, args)

    def _keys(self) -> list[Any]:
        return [t for t, _ in self.r]

    @rule(k=st.integers(1, 30), gap=st.integers(1, 3), evict_first=st.booleans())
    def rounds(self, k: int, gap: int, evict_first: bool) -> None:
        for _ in range(k):
            y = self.r.youngest()
            t = 0 if y is None else y + gap
            if evict_first and self.r.oldest() is not None:
                self._do("evict", self.r.oldest())
            self._do("insert", t, self._next())
            if not evict_first and self.r.oldest() is not None:
                self._do("evict", self.r.oldest())

    @rule(k=st.integers(1, 30))
    def grow(self, k: int) -> None:
        for _ in range(k):
            y = self.r.youngest()
            self._do("insert", 0 if y is None else y + 1, self._next())

    @rule(k=st.integers(1, 30))
    def shrink(self, k: int) -> None:
        for _ in range(k):
            o = self.r.oldest()
            if o is None:
                return
            self._do("evict", o)

    @precondition(lambda self: len(self.r) > 0)
    @rule(d=st.integers(0, 200), collide=st.booleans(), k=st.integers(1, 12))
    def insert_at_distance(self, d: int, collide: bool, k: int) -> None:
        for _ in range(k):
            keys = self._keys()
            if not keys:
                return
            t = keys[max(0, len(keys) - 1 - d)]
            self._do("insert", t if collide else t - 1, self._next())

    @precondition(lambda self: len(self.r) > 0)
    @rule(d=st.integers(0, 200), from_young=st.booleans(), k=st.integers(1, 12))
    def evict_at_distance(self, d: int, from_young: bool, k: int) -> None:
        for _ in range(k):
            keys = self._keys()
            if not keys:
                return
            j = min(d, len(keys) - 1)
            self._do("evict", keys[-1 - j] if from_young else keys[j])

    @rule(data=st.data())
    def bulk_insert(self, data: st.DataObject) -> None:
        keys = self._keys()
        lo = _low(keys)
        hi = max(lo, (keys[-1] if keys else 0) + 20)
        ts = (
            st.integers(lo, hi)
            if not keys
            else st.one_of(st.integers(lo, hi), st.sampled_from(keys))
        )
        times = data.draw(st.lists(ts, max_size=40), label="times")
        self._do("bulk_insert", [(t, self._next()) for t in times])

    @rule(data=st.data())
    def bulk_evict(self, data: st.DataObject) -> None:
        keys = self._keys()
        if keys and data.draw(st.booleans()):
            t = keys[data.draw(st.integers(0, min(len(keys) - 1, 60)))]
        else:
            lo = _low(keys)
            t = data.draw(st.integers(lo, max(lo, (keys[-1] if keys else 0) + 5)))
        self._do("bulk_evict", t)

    @precondition(lambda self: self.name == "sum_int" and len(self.r) > 0)
    @rule(data=st.data(), kind=st.sampled_from(["float", "bool"]))
    def mixed_numbers(self, data: st.DataObject, kind: str) -> None:
        keys = self._keys()
        t = data.draw(st.sampled_from([*keys, keys[-1] + 1, keys[0] - 1]))
        self._do("insert", t, 0.5 if kind == "float" else True)

    @invariant()
    def agree(self) -> None:
        if not hasattr(self, "w"):
            return
        w, r = self.w, self.r
        assert (len(w), w.oldest(), w.youngest()) == (len(r), r.oldest(), r.youngest())
        assert list(w) == list(r)


TestInOrder = InOrderMachine.TestCase
# The fast paths' main evidence: 3x the profile's examples, 2x its steps (a few seconds
# under HYPOTHESIS_PROFILE=ci)
TestInOrder.settings = settings(
    max_examples=3 * settings.default.max_examples,
    stateful_step_count=2 * settings.default.stateful_step_count,
)


def _fifo_run(mu: int, n: int, rounds: int, seed: int, name: str) -> None:
    rnd = random.Random(seed)
    m = MONOIDS[name]
    w, r = FiBA(m, min_arity=mu), Recalc(m)
    for t in range(n):
        v = _value(name, t)
        w.insert(t, v)
        r.insert(t, v)
    nxt = n
    for i in range(rounds):
        w.evict(r.oldest())
        r.evict(r.oldest())
        v = _value(name, nxt + i)
        if rnd.random() < 0.1:  # now and then an insert at a distance (a collision or not)
            keys = [t for t, _ in r]
            t = keys[-1 - rnd.randrange(len(keys))] - rnd.randrange(2)
        else:
            t = nxt
            nxt += 1
        w.insert(t, v)
        r.insert(t, v)
        w._check()
        assert w.query() == r.query(), (mu, i)
    assert list(w) == list(r)


@pytest.mark.parametrize("mu", [*range(2, 9), 16, 32])
def test_fifo_on_deep_trees_int_sum(mu: int) -> None:
    # n = 120 at mu = 2 is a tree of height 5-6; 3 turnovers of the window. For 16 and 32
    # a smaller, wider tree and more rounds, so the root's children split and merge too
    if mu <= 8:
        _fifo_run(mu, n=40 * mu if mu > 2 else 120, rounds=360, seed=mu, name="sum_int")
    else:
        _fifo_run(mu, n=20 * mu, rounds=1200, seed=mu, name="sum_int")


@pytest.mark.parametrize("name", ["sum_dyadic", "concat"])
@pytest.mark.parametrize("mu", [2, 3, 5])
def test_fifo_on_deep_trees_generic(mu: int, name: str) -> None:
    _fifo_run(mu, n=100, rounds=250, seed=10 + mu, name=name)


def test_non_number_into_a_sum_window_raises_and_changes_nothing() -> None:
    w = FiBA(Sum(), min_arity=2)
    for t in range(40):
        w.insert(t, t)
    before = (w.query(), len(w), list(w))
    # the append fast path, a collision (the combine runs before the store), and a new
    # entry off the fast path (met by a combine in its leaf, then rolled back)
    for t in (100, 20, 39):
        with pytest.raises(MonoidTypeError, match=r"Sum\(\) needs a number, got str 'x'"):
            w.insert(t, "x")  # refused by Sum's lift before anything changes
        w._check()
        assert (w.query(), len(w), list(w)) == before
    w.insert(40, 1)  # still usable
    assert w.query() == before[0] + 1


def test_a_value_the_monoid_refuses_is_refused_by_an_empty_window() -> None:
    # issue 13 item 13: no other combine would meet a lone entry before a query
    w = FiBA(Sum())
    with pytest.raises(MonoidTypeError, match="'x'"):
        w.insert(4, "x")
    w._check()
    assert (len(w), w.query(), list(w)) == (0, 0, [])
    w.insert(4, 2)
    assert (len(w), w.query()) == (1, 2)


def test_a_refused_bulk_changes_nothing() -> None:
    w = FiBA(Sum(), min_arity=2)
    w.bulk_insert([(t, 1) for t in range(30)])
    before = (w.query(), len(w), list(w))
    with pytest.raises(MonoidTypeError, match="'y'"):
        w.bulk_insert([(100, 1), (7, "y"), (3, 2)])
    w._check()
    assert (w.query(), len(w), list(w)) == before


def test_raising_combine_on_the_append_path_changes_nothing() -> None:
    class Bomb(Concat):
        armed = False

        def combine(self, a: Any, b: Any) -> Any:
            if self.armed:
                raise ValueError("boom")
            return super().combine(a, b)

    m = Bomb()
    w = FiBA(m, min_arity=2)
    for t in range(0, 40, 2):
        w.insert(t, str(t))
    before = (w.query(), len(w), list(w))
    m.armed = True
    with pytest.raises(ValueError, match="boom"):  # the monoid's own error, unchanged
        w.insert(100, "x")
    m.armed = False
    w._check()
    assert (w.query(), len(w), list(w)) == before


@pytest.mark.parametrize("mu", [2, 8])
def test_counting_sum_counts_every_combine(mu: int) -> None:
    # Counting(Sum()) is not of type Sum (whose combine FiBA calls as operator.add):
    # every combine goes through the wrapper
    m = Counting(Sum())
    w = FiBA(m, min_arity=mu)
    for t in range(500):
        w.insert(t, 1)
    m.reset()
    for t in range(500, 1000):
        w.evict(t - 500)
        w.insert(t, 1)
        w.query()
    assert m.combines >= 500 * 3  # at least the append's and the query's combines


@pytest.mark.parametrize("d", [3, 40])
@pytest.mark.parametrize("mu", [2, 3, 4, 8])
def test_the_papers_distance_generator(mu: int, d: int) -> None:
    # every insert lands d entries before the youngest, right after the previous insert
    n, big = 150, 10**6
    m = Sum()
    pairs = [(t, t % 7 + 1) for t in range(n - d)] + [(big + t, 1) for t in range(d)]
    w, r = FiBA.from_sorted_partials(m, pairs, min_arity=mu), Recalc(m)
    r.bulk_insert(pairs)
    for i in range(300):
        for method, *args in (("evict", i), ("insert", n - d + i, i % 11 - 5)):
            getattr(w, method)(*args)
            getattr(r, method)(*args)
            w._check()
            assert w.query() == r.query() and len(w) == len(r), (i, method)
    assert list(w) == list(r)


class _Picky:
    """Concat that refuses to combine a partial holding "!" (a monoid rejecting a value)."""

    identity: tuple[Any, ...] = ()
    commutative = False

    def lift(self, x: Any) -> tuple[Any, ...]:
        return (x,)

    def combine(self, a: tuple[Any, ...], b: tuple[Any, ...]) -> tuple[Any, ...]:
        if "!" in a or "!" in b:
            raise ValueError("picky: refuses '!'")
        return a + b

    def lower(self, a: tuple[Any, ...]) -> tuple[Any, ...]:
        return a


@settings(max_examples=60)
@given(
    st.integers(2, 8),
    st.lists(st.integers(0, 300), min_size=1, max_size=120),
    st.lists(st.tuples(st.integers(-10, 320), st.booleans()), min_size=1, max_size=25),
)
def test_a_refused_value_leaves_the_window_exactly_as_it_was(
    mu: int, start: list[int], tries: list[tuple[int, bool]]
) -> None:
    """A refused value never leaves the window half-changed. A monoid (Sum given a str,
    or one that refuses "!") can only refuse when a combine meets the value: where one
    does during the insert (the fast path, a repair off it), insert raises and the window
    is exactly as before (rolled back); where none does yet (a lone entry in a new leaf),
    the value is stored (as Recalc would) and taken out again here, so that the
    comparison goes on."""
    for monoid, good, bad in ((Sum(), 1, "x"), (_Picky(), "a", "!")):
        w = FiBA(monoid, min_arity=mu)
        oracle = Recalc(monoid)
        for t in start:
            w.insert(t, good)
            oracle.insert(t, good)
        for t, refuse in tries:
            if refuse:
                present = any(k == t for k, _ in oracle)
                try:
                    w.insert(t, bad)
                except (TypeError, ValueError):  # Sum's lift, or _Picky's combine
                    pass
                else:
                    assert not present
                    w.evict(t)  # stored without a combine: take the poison out again
            else:
                w.insert(t, good)
                oracle.insert(t, good)
            w._check()
            assert w.query() == oracle.query() and list(w) == list(oracle)
            assert len(w) == len(oracle)


@settings(max_examples=60)
@given(
    st.integers(2, 8),
    st.lists(st.integers(0, 300), min_size=1, max_size=120),
    st.lists(st.tuples(st.integers(-10, 320), st.booleans()), min_size=1, max_size=30),
    st.integers(0, 10**6),
)
def test_a_refused_bulk_leaves_the_window_exactly_as_it_was(
    mu: int, start: list[int], bulk: list[tuple[int, bool]], seed: int
) -> None:
    """bulk_insert is atomic: a bulk whose refused value (Sum given a str, or "!") meets a
    stored timestamp (a combine must meet it there) raises and leaves the window exactly
    as before; a clean bulk goes in."""
    rng = random.Random(seed)
    for monoid, good, bad in ((Sum(), 1, "x"), (_Picky(), "a", "!")):
        w = FiBA(monoid, min_arity=mu)
        oracle = Recalc(monoid)
        for t in start:
            w.insert(t, good)
            oracle.insert(t, good)
        stored = sorted({t for t, _ in oracle})
        pairs = [(t, bad if refuse else good) for t, refuse in bulk]
        poisoned = any(refuse for _, refuse in bulk)
        if poisoned:
            pairs.insert(rng.randrange(len(pairs) + 1), (rng.choice(stored), bad))
        if poisoned:
            with pytest.raises((TypeError, ValueError)):
                w.bulk_insert(pairs)
        else:
            w.bulk_insert(pairs)
            oracle.bulk_insert(pairs)
        w._check()
        assert list(w) == list(oracle) and w.query() == oracle.query()
        assert len(w) == len(oracle)
