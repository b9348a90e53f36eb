"""QDigest against exact answers: bounds over random streams, orders and merges."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sketches.sketch_oracle import freq, hh_ok, quantile_ok, total, weight_le
from windowagg.errors import CodecError, EmptyWindowError
from windowagg.sketches import QDigest
from windowagg.sketches._qdigest_kernels import compress_dict as _compress_dict
from windowagg.sketches._qdigest_kernels import compress_numpy as _compress_numpy

EPS = st.sampled_from([0.02, 0.05, 0.1, 0.3])
UNIV = st.sampled_from([2, 3, 16, 1000, 2**20])


@st.composite
def streams(draw, max_size=300):
    U = draw(UNIV)
    eps = draw(EPS)
    skew = draw(st.booleans())
    n = draw(st.integers(1, max_size))
    seed = draw(st.integers(0, 2**32))
    rng = random.Random(seed)
    if skew:
        keys = [min(U - 1, int(rng.paretovariate(1.2))) for _ in range(n)]
    else:
        keys = [rng.randrange(U) for _ in range(n)]
    weighted = draw(st.booleans())
    ws = [rng.choice([0.5, 1.0, 3.0, 10.0]) if weighted else 1.0 for _ in range(n)]
    return U, eps, list(zip(keys, ws, strict=True))


def check_all_bounds(d: QDigest, items: list[tuple[int, float]]) -> None:
    n = total(items)
    eps = d.eps
    tol = 1e-9 * max(1.0, n)
    assert math.isclose(d.total_weight, n, rel_tol=1e-9, abs_tol=1e-9)
    probe = sorted({k for k, _ in items} | {0, d.universe - 1, items[0][0] + 1})
    for x in probe:
        if x >= d.universe:
            continue
        r = weight_le(items, x)
        lo, hi = d.rank_bounds(x)
        assert lo - tol <= r <= hi + tol, (x, lo, r, hi)
        assert hi - lo <= eps * n + tol
        assert abs(d.rank(x) - r) <= eps * n / 2 + tol
    for a, b in [(0, d.universe - 1), (probe[0], probe[len(probe) // 2]), (probe[-1], probe[-1])]:
        true = math.fsum(w for k, w in items if a <= k <= b)
        assert abs(d.range_count(a, b) - true) <= eps * n + tol
    for phi in (0.0, 0.01, 0.25, 0.5, 0.9, 0.99, 1.0):
        ok, msg = quantile_ok(items, d.quantile(phi), phi, eps)
        assert ok, msg
        q = d.quantile(phi)
        assert math.fsum(w for k, w in items if k <= q) >= phi * n - tol  # the sharper side
    for phi in (max(0.05, 1.5 * eps), 0.5):
        hh = [k for k, _ in d.heavy_hitters(phi)]
        ok, msg = hh_ok(items, hh, phi - eps, phi)
        assert ok, msg
        f = freq(items)
        for k, est in d.heavy_hitters(phi):
            assert abs(est - f[k]) <= eps * n / 2 + tol


@given(streams())
def test_bounds_hold_after_every_prefix_kind(case):
    U, eps, items = case
    d = QDigest(U, eps)
    for x, w in items:
        d.update(x, w)
    d._check()
    check_all_bounds(d, items)
    d.compress()
    d._check_compressed()
    check_all_bounds(d, items)


@given(streams(max_size=200), st.integers(0, 2**32))
def test_bounds_hold_for_many_arrival_orders(case, seed):
    U, eps, items = case
    rng = random.Random(seed)
    orders = [items, items[::-1], sorted(items), sorted(items, reverse=True)]
    for _ in range(3):
        p = items[:]
        rng.shuffle(p)
        orders.append(p)
    for order in orders:
        d = QDigest(U, eps)
        for x, w in order:
            d.update(x, w)
            if rng.random() < 0.05:
                d.compress()
                d._check_compressed()
        check_all_bounds(d, items)


@given(streams(max_size=300), st.integers(1, 8), st.integers(0, 2**32))
def test_merge_of_k_partitions_meets_the_single_summary_bounds(case, k, seed):
    U, eps, items = case
    rng = random.Random(seed)
    parts: list[QDigest] = [QDigest(U, eps) for _ in range(k)]
    for x, w in items:
        parts[rng.randrange(k)].update(x, w)
    # a random merge tree
    while len(parts) > 1:
        i, j = sorted(rng.sample(range(len(parts)), 2))
        b = parts.pop(j)
        before = b.to_bytes()
        parts[i].merge(b)
        assert b.to_bytes() == before, "merge changed its argument"
        parts[i]._check()
    d = parts[0]
    check_all_bounds(d, items)
    d.compress()
    d._check_compressed()
    check_all_bounds(d, items)


def test_large_stream_size_bound_and_compress_invariants():
    rng = random.Random(5)
    d = QDigest(2**32, 0.01)
    items = []
    for _ in range(30_000):
        x = rng.randrange(2**32)
        d.update(x)
        items.append((x, 1.0))
    assert d.size <= QDigest.error_bound(2**32, 0.01).max_nodes
    d.compress()
    d._check_compressed()
    xs = sorted(x for x, _ in items)
    for phi in (0.01, 0.5, 0.99):
        q = d.quantile(phi)
        import bisect

        assert bisect.bisect_left(xs, q) <= (phi + 0.01) * len(xs)
        assert bisect.bisect_right(xs, q) >= phi * len(xs)


@given(st.lists(st.integers(0, 2**16 - 1), min_size=1, max_size=3000), EPS)
@settings(max_examples=25)
def test_numpy_compress_equals_pure_python_compress(keys, eps):
    d = QDigest(2**16, eps)
    for x in keys:
        d._nodes[d._base + x] = d._nodes.get(d._base + x, 0.0) + 1.0
    d._n = float(len(keys))
    a, b = dict(d._nodes), dict(d._nodes)
    th = d.threshold()
    _compress_dict(a, th, d.universe_bits)
    b = _compress_numpy(np, b, th, d.universe_bits)
    assert a == b


@given(streams(max_size=400))
def test_update_many_meets_the_same_bounds(case):
    U, eps, items = case
    d = QDigest(U, eps)
    half = len(items) // 2
    d.update_many(
        np.array([x for x, _ in items[:half]], dtype=np.int64), [w for _, w in items[:half]]
    )
    d.update_many([x for x, _ in items[half:]], [w for _, w in items[half:]])
    d._check()
    check_all_bounds(d, items)


def test_error_bound_helper_states_the_bounds_before_building():
    b = QDigest.error_bound(2**32, 0.01)
    assert b.universe_bits == 32
    assert b.rank_error == 0.005 and b.quantile_error == 0.01 and b.range_error == 0.01
    assert b.nodes_after_compress == 12801 and b.max_nodes == 38401
    with pytest.raises(ValueError):
        QDigest.error_bound(1, 0.1)


def test_bad_input_raises_and_changes_nothing():
    d = QDigest(100, 0.1)
    d.update(5)
    before = d.to_bytes()
    for bad in (-1, 100, 2.5, "3", None, True):
        with pytest.raises((TypeError, ValueError)):
            d.update(bad)  # type: ignore[arg-type]
    for w in (0, -1, math.nan, math.inf, "x"):
        with pytest.raises((TypeError, ValueError)):
            d.update(5, w)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        d.update_many([1, 2, 200])
    with pytest.raises(ValueError):
        d.update_many([1, 2], [1.0, -1.0])
    with pytest.raises(TypeError):
        d.update_many([1.5, 2.0])
    with pytest.raises(ValueError):
        d.merge(QDigest(100, 0.2))
    assert d.to_bytes() == before
    with pytest.raises(EmptyWindowError):
        QDigest(10, 0.1).quantile(0.5)
    with pytest.raises(ValueError):
        d.quantile(1.5)
    assert d.update(7) is None and d.compress() is None and d.merge(QDigest(100, 0.1)) is None


def test_queries_never_mutate():
    d = QDigest(1000, 0.05)
    d.update_many(list(range(0, 1000, 3)) * 3)
    before = d.to_bytes()
    d.quantile(0.3), d.rank(500), d.range_count(10, 900), d.heavy_hitters(0.1)
    d.rank_bounds(3), d.frequency_bounds(3), list(d)
    assert d.to_bytes() == before


@given(streams(max_size=200))
@settings(max_examples=20)
def test_round_trip_serialization(case):
    U, eps, items = case
    d = QDigest(U, eps)
    for x, w in items:
        d.update(x, w)
    e = QDigest.from_bytes(d.to_bytes())
    assert e == d
    assert e.quantile(0.5) == d.quantile(0.5)
    e._check()


def test_malformed_bytes_raise_codec_error():
    d = QDigest(1000, 0.1)
    d.update_many(list(range(0, 1000, 7)))
    data = d.to_bytes()
    for cut in range(0, len(data), max(1, len(data) // 60)):
        with pytest.raises(CodecError):
            QDigest.from_bytes(data[:cut])
    with pytest.raises(CodecError):
        QDigest.from_bytes(data + b"\0")
    with pytest.raises(CodecError):
        QDigest.from_bytes(b"XXXX" + data[4:])
    with pytest.raises(CodecError):
        QDigest.from_bytes(data[:4] + b"\x09" + data[5:])  # unknown version
    with pytest.raises(CodecError):
        QDigest.from_bytes(data[:5] + b"\x02" + data[6:])  # another sketch kind
    with pytest.raises(CodecError):
        QDigest.from_bytes("not bytes")  # type: ignore[arg-type]
    rng = random.Random(3)
    bad = 0
    for _ in range(200):
        b = bytearray(data)
        i = rng.randrange(6, len(b))
        b[i] ^= 1 << rng.randrange(8)
        try:
            e = QDigest.from_bytes(bytes(b))
        except CodecError:
            bad += 1
        else:
            e._check()  # a flip that decodes must still give a consistent digest
    assert bad > 0


def test_two_value_universe_and_extremes():
    d = QDigest(2, 0.5)
    for x in (0, 1, 1, 1):
        d.update(x)
    assert d.quantile(0.0) == 0 and d.quantile(1.0) == 1
    assert d.rank(1) == 4.0
    d = QDigest(2**64, 0.1)
    d.update(2**64 - 1)
    d.update(0)
    assert d.quantile(1.0) == 2**64 - 1
    assert QDigest.from_bytes(d.to_bytes()) == d
