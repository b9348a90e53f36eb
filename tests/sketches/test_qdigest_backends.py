"""QDigest's two backends in lockstep: the same bytes and answers after every step of random
streams (out of order, bursty, weighted, batched, merged in random trees), state written by
one read by the other, the paper's bounds against brute force on the native one, and calls
that raise change nothing. Skipped without the compiled core."""

from __future__ import annotations

import math
import random
import threading
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sketches.sketch_oracle import quantile_ok, weight_le
from windowagg import native_available
from windowagg.errors import ArgumentError, ArgumentTypeError, CodecError, EmptyWindowError
from windowagg.sketches import FloatOrderMapper, QDigest

pytestmark = pytest.mark.skipif(not native_available(), reason="the compiled core is not built")

UNIVERSES = [2, 3, 1000, 2**20, 2**32, 2**63 + 5, 2**64]
PHIS = [0.0, 0.01, 0.1, 0.25, 0.5, 0.75, 0.9, 0.99, 1.0]


def pair(universe: int, eps: float) -> tuple[QDigest, QDigest]:
    return QDigest(universe, eps, backend="native"), QDigest(universe, eps, backend="python")


def same(a: QDigest, b: QDigest, probes: list[int]) -> None:
    """Identical state and answers (native a, python b)."""
    assert a.backend == "native" and b.backend == "python"
    assert a.to_bytes() == b.to_bytes()
    assert a == b and b == a
    assert (a.total_weight, a.size, a.threshold()) == (b.total_weight, b.size, b.threshold())
    assert list(a) == list(b)
    for x in probes:
        assert a.rank_bounds(x) == b.rank_bounds(x)
        assert a.frequency_bounds(x) == b.frequency_bounds(x)
    if b.is_empty():
        with pytest.raises(EmptyWindowError):
            a.quantile(0.5)
        return
    assert a.quantiles(PHIS) == b.quantiles(PHIS) == [b.quantile(p) for p in PHIS]
    for phi in (0.01, 0.1, 0.5):
        assert a.heavy_hitters(phi) == b.heavy_hitters(phi)


@st.composite
def streams(draw: Any) -> tuple[int, float, list[tuple[str, Any]]]:
    """(universe, eps, steps): single updates, bursts of one key, batches with and
    without weights, explicit compress calls; keys in any order."""
    universe = draw(st.sampled_from(UNIVERSES))
    eps = draw(st.sampled_from([0.05, 0.1, 0.3, 0.7]))
    rng = random.Random(draw(st.integers(0, 2**32)))
    hot = [rng.randrange(universe) for _ in range(3)]

    def key() -> int:
        r = rng.random()
        if r < 0.3:
            return rng.choice(hot)  # bursts and heavy hitters
        if r < 0.4:
            return rng.choice([0, universe - 1])
        return rng.randrange(universe)

    steps: list[tuple[str, Any]] = []
    for _ in range(draw(st.integers(1, 25))):
        kind = draw(st.sampled_from(["one", "burst", "batch", "wbatch", "compress"]))
        if kind == "one":
            steps.append(("one", (key(), rng.choice([1.0, 0.5, 3.25, 1e-3, 7]))))
        elif kind == "burst":
            steps.append(("burst", (key(), rng.randrange(1, 40))))
        elif kind in ("batch", "wbatch"):
            b = rng.randrange(0, 120)
            keys = [key() for _ in range(b)]
            ws = [rng.choice([0.1, 1.0, 2.5, 1e6]) for _ in range(b)] if kind == "wbatch" else None
            steps.append((kind, (keys, ws)))
        else:
            steps.append(("compress", None))
    return universe, eps, steps


def apply(d: QDigest, step: tuple[str, Any]) -> None:
    kind, arg = step
    if kind == "one":
        d.update(*arg)
    elif kind == "burst":
        for _ in range(arg[1]):
            d.update(arg[0])
    elif kind in ("batch", "wbatch"):
        keys, ws = arg
        big = max(keys, default=0) >= 2**63
        a = np.array(keys, dtype=np.uint64 if big else np.int64)
        d.update_many(a, None if ws is None else np.array(ws))
    else:
        d.compress()


def probes_of(universe: int, steps: list[tuple[str, Any]]) -> list[int]:
    keys = {0, universe - 1, universe // 2, -1, universe, 2**64 + 3}
    for kind, arg in steps:
        if kind in ("one", "burst"):
            keys.add(arg[0])
        elif kind in ("batch", "wbatch"):
            keys.update(arg[0][:3])
    return sorted(keys)


@settings(max_examples=60, deadline=None)
@given(s=streams())
def test_lockstep_same_bytes_and_answers_after_every_step(
    s: tuple[int, float, list[tuple[str, Any]]],
) -> None:
    universe, eps, steps = s
    a, b = pair(universe, eps)
    probes = probes_of(universe, steps)
    for step in steps:
        apply(a, step)
        apply(b, step)
        same(a, b, probes)
        a._check()
    # the bytes cross backends both ways, and the digests keep going in lockstep
    a2 = QDigest.from_bytes(b.to_bytes(), backend="native")
    b2 = QDigest.from_bytes(a.to_bytes(), backend="python")
    same(a2, b2, probes)
    for step in steps[:3]:
        apply(a2, step)
        apply(b2, step)
    same(a2, b2, probes)


@settings(max_examples=40, deadline=None)
@given(
    s=streams(),
    shape=st.lists(st.integers(0, 2**16), min_size=1, max_size=12),
    mixed=st.booleans(),
)
def test_merged_in_random_trees(
    s: tuple[int, float, list[tuple[str, Any]]], shape: list[int], mixed: bool
) -> None:
    """Each step fills its own digest; they merge in a random binary tree, the same tree on
    both backends (with *mixed*, every merge takes the other backend's operand)."""
    universe, eps, steps = s
    parts = []
    for step in steps:
        a, b = pair(universe, eps)
        apply(a, step)
        apply(b, step)
        parts.append((a, b))
    rng = random.Random(sum(shape))
    while len(parts) > 1:
        i = rng.randrange(len(parts))
        x = parts.pop(i)
        j = rng.randrange(len(parts))
        y = parts[j]
        if mixed:
            y[0].merge(x[1])
            y[1].merge(x[0])
        else:
            y[0].merge(x[0])
            y[1].merge(x[1])
        if rng.random() < 0.2:
            y[0].merge(y[0])
            y[1].merge(y[1])
    a, b = parts[0]
    same(a, b, probes_of(universe, steps))
    a._check()


@settings(max_examples=30, deadline=None)
@given(
    values=st.lists(
        st.floats(allow_nan=False, width=64) | st.sampled_from([0.0, -0.0, 1.0, -1.0]),
        min_size=1,
        max_size=400,
    ),
    eps=st.sampled_from([0.01, 0.05, 0.2]),
)
def test_native_meets_the_papers_bounds_on_real_values(values: list[float], eps: float) -> None:
    """The native digest over FloatOrderMapper keys (universe 2**64, L = 64) against brute
    force: rank error <= eps*n/2 and the quantile guarantee, for every key held."""
    m = FloatOrderMapper()
    keys = m.to_keys(np.array(values))
    d = QDigest(m.universe, eps, backend="native")
    d.update_many(keys[: len(keys) // 2])
    for k in keys[len(keys) // 2 :].tolist():
        d.update(k)
    items = [(int(k), 1.0) for k in keys.tolist()]
    n = len(items)
    tol = 1e-9 * n
    for x in sorted({k for k, _ in items})[:60]:
        lo, hi = d.rank_bounds(x)
        r = weight_le(items, x)
        assert lo - tol <= r <= hi + tol
        assert abs(d.rank(x) - r) <= eps * n / 2 + tol
    for phi, q in zip(PHIS, d.quantiles(PHIS), strict=True):
        ok, msg = quantile_ok(items, q, phi, eps)
        assert ok, msg
    assert d.size <= QDigest.error_bound(m.universe, eps).max_nodes


@pytest.mark.parametrize(
    "call",
    [
        lambda d: d.update(-1),
        lambda d: d.update(1000),
        lambda d: d.update(1.5),
        lambda d: d.update(3, float("nan")),
        lambda d: d.update(3, -1.0),
        lambda d: d.update(3, 10**400),
        lambda d: d.update_many(np.array([1, 2, 1000])),
        lambda d: d.update_many(np.array([1, -2, 3])),
        lambda d: d.update_many(np.array([1.0, 2.0])),
        lambda d: d.update_many([1, 2, 3], [1.0, float("nan"), 1.0]),
        lambda d: d.update_many([1, 2, 3], [1.0, 1.0]),
        lambda d: d.update_many([1, 2], [1e308, 1e308]),
        lambda d: d.merge(QDigest(1001, 0.1)),
        lambda d: d.quantile(1.5),
        lambda d: d.quantiles([0.5, -0.1]),
        lambda d: d.heavy_hitters(float("nan")),
    ],
)
def test_a_call_that_raises_changes_nothing_on_both_backends(call: Any) -> None:
    a, b = pair(1000, 0.1)
    for d in (a, b):
        d.update_many(np.arange(0, 1000, 7))
        d.update(5, 2.5)
    before = a.to_bytes()
    errors = []
    for d in (a, b):
        with pytest.raises((ArgumentError, ArgumentTypeError)) as e:
            call(d)
        errors.append((type(e.value), str(e.value)))
        assert d.to_bytes() == before
        d._check()
    assert errors[0] == errors[1]


def test_huge_counts_stay_finite() -> None:
    a, b = pair(2**64, 0.01)
    for d in (a, b):
        d.update_many(np.array([1, 2**63, 2**64 - 1], dtype=np.uint64), np.array([1e307] * 3))
        d.update(7, 1e307)
        d.merge(d.copy())
        d._check()
    same(a, b, [0, 7, 2**63, 2**64 - 1])
    assert math.isfinite(a.total_weight)
    for d in (a, b):  # past float64: refused, nothing changed
        before = d.to_bytes()
        big = QDigest(2**64, 0.01, backend=d.backend)
        big.update(5, 1e308)
        calls = (
            lambda d=d: d.update(3, 1.7e308),
            lambda d=d: d.update_many([3], [1e308]),
            lambda d=d, big=big: d.merge(big),
        )
        for call in calls:
            with pytest.raises(ArgumentError, match="overflow float64"):
                call()
            assert d.to_bytes() == before


def test_empty_digest_answers_alike() -> None:
    a, b = pair(16, 0.1)
    same(a, b, [-5, 0, 15, 99])
    for d in (a, b):
        with pytest.raises(EmptyWindowError):
            d.quantiles([0.5])
        assert d.quantiles([]) == [] and d.heavy_hitters(0.5) == []


def test_two_threads_on_one_native_digest() -> None:
    """Two threads' calls are serialised (each atomic): the digest stays whole and holds
    every weight."""
    d = QDigest(2**32, 0.01, backend="native")
    rng = np.random.default_rng(7)
    batches = [rng.integers(0, 2**32, 5000) for _ in range(40)]

    def work(bs: list[Any]) -> None:
        for x in bs:
            d.update_many(x)
            d.quantiles([0.5, 0.9])

    ts = [threading.Thread(target=work, args=(batches[i::2],)) for i in range(2)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    d._check()
    assert d.total_weight == 40 * 5000


def test_bad_bytes_are_codec_errors_on_both_backends() -> None:
    d = QDigest(1000, 0.1, backend="python")
    d.update_many(np.arange(0, 1000, 3))
    good = d.to_bytes()
    rng = random.Random(5)
    for _ in range(300):
        bad = bytearray(good)
        for _ in range(rng.randrange(1, 4)):
            bad[rng.randrange(len(bad))] = rng.randrange(256)
        outcomes = []
        for backend in ("native", "python"):
            try:
                r = QDigest.from_bytes(bytes(bad), backend=backend)
            except CodecError:
                outcomes.append(None)
            else:
                r._check()
                outcomes.append(r.to_bytes())
        assert outcomes[0] == outcomes[1]


@pytest.mark.parametrize("eps", [0.02, 0.2])
def test_large_compresses_same_nodes(eps: float) -> None:
    """Compresses of tens of thousands of leaves (the native one radix-sorts them): the same
    nodes as the Python kernel's, on float keys (top bytes nearly constant) and on keys
    spread over the whole universe, weighted and not."""
    rng = np.random.default_rng(39)
    m = FloatOrderMapper()
    a, b = pair(m.universe, eps)
    for i in range(6):
        if i % 2:
            keys = rng.integers(0, 2**64 - 1, 20_000, dtype=np.uint64, endpoint=True)
        else:
            keys = m.to_keys(rng.lognormal(0.0, 2.0, 20_000))
        ws = None if i < 3 else rng.choice([0.5, 1.0, 3.25], keys.size)
        for d in (a, b):
            d.update_many(keys, ws)
            d.compress()
        same(a, b, [0, 2**63, int(keys[0]), 2**64 - 1])
    a._check()


@pytest.mark.parametrize("light", [1.0, 0.5])
def test_sibling_leaves_keep_their_keys_at_64_bits(light: float) -> None:
    """Two sibling leaves (keys 2k, 2k + 1) that stay apart when the universe is 2**64: the
    native compress wrote them at keys 0 and 1 (the shift of a depth-63 parent was treated as
    one past 63). Integral counts (the top-down compress) and fractional (the bottom-up)."""
    a, b = pair(2**64, 0.5)
    for d in (a, b):
        for k in (10, 11, 2**40, 2**64 - 2, 2**64 - 1):
            d.update(k, 1000.0)
        d.update(5, light)
        d.compress()
    same(a, b, [0, 1, 5, 10, 11, 2**40, 2**64 - 1])
    assert [(lo, hi) for lo, hi, _ in a][:2] == [(10, 10), (11, 11)]
    a._check()


@settings(max_examples=40, deadline=None)
@given(
    universe=st.sampled_from([3, 1000, 2**32, 2**64]),
    eps=st.sampled_from([0.02, 0.1, 0.3]),
    seed=st.integers(0, 2**32),
    looks=st.sets(st.integers(0, 29), max_size=4),
)
def test_weighted_batches_held_back_give_the_same_nodes(
    universe: int, eps: float, seed: int, looks: set[int]
) -> None:
    """Many weighted batches in a row (the native digest holds their (key, weight) pairs
    back while they cannot pass the cap, then sums them per key in one sort): the same
    bytes as the Python reference's batch-by-batch sums, with keys repeated within and
    across batches, weights whose sums depend on their order (0.1, 1/3, lognormal), an
    integral start (weight-1 batches) and a look at the state only at the steps in *looks*
    (reading settles the pairs)."""
    rng = np.random.default_rng(seed)
    a, b = pair(universe, eps)
    hot = rng.integers(0, universe, 3, dtype=np.uint64, endpoint=False)
    for step in range(30):
        size = int(rng.integers(1, 4000))
        mode = step % 4
        if mode == 0:
            keys = rng.integers(0, universe, size, dtype=np.uint64, endpoint=False)
        elif mode == 1:
            keys = rng.choice(hot, size)
        elif mode == 2:
            keys = rng.integers(0, min(universe, 300), size, dtype=np.uint64, endpoint=False)
        else:
            keys = FloatOrderMapper().to_keys(rng.lognormal(0.0, 2.0, size)) % np.uint64(
                universe - 1 if universe < 2**64 else 2**64 - 1
            )
        pick = rng.integers(0, 3, size)
        ws = np.where(pick == 0, 0.1, np.where(pick == 1, 1.0 / 3.0, rng.lognormal(0, 3, size)))
        for d in (a, b):
            d.update_many(keys, None if step < 2 else ws)
        if step in looks:
            same(a, b, [0, int(hot[0]), universe - 1])
    a._check()
    same(a, b, [0, int(hot[0]), int(hot[1]), universe - 1])


@pytest.mark.parametrize("look_each", [False, True])
@pytest.mark.parametrize("universe", [1000, 2**32, 2**64])
def test_weighted_batches_at_the_cap(universe: int, look_each: bool) -> None:
    """Weighted batches steered (by the reference's node count) to bring the digest to
    its cap - 2, cap - 1, cap, cap + 1 nodes one key at a time, three compresses over: the
    native digest, which holds pairs back while nodes + pairs + batch <= cap, compresses
    exactly when the reference does (same bytes), whether or not its state is read after
    every batch."""
    a, b = pair(universe, 0.3)
    cap = b._cap
    rng = np.random.default_rng(universe % 1009)
    compresses = 0
    for _ in range(20 * cap):
        if compresses >= 3:
            break
        before = len(b._nodes)
        size = max(1, cap - 3 - before)
        keys = rng.integers(0, universe, size, dtype=np.uint64, endpoint=False)
        ws = rng.choice([0.1, 1.0 / 3.0, 2.5], size)
        for d in (a, b):
            d.update_many(keys, ws)
        compresses += len(b._nodes) < before
        if look_each:
            same(a, b, [0, universe - 1])
    assert compresses == 3
    a._check()
    same(a, b, [0, universe // 2, universe - 1])
