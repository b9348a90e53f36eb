"""QDigestMonoid: the monoid laws, no mutation, and quantiles inside windowagg windows."""

from __future__ import annotations

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sketches.sketch_oracle import quantile_ok
from windowagg.fifo import Recalc as FifoRecalc
from windowagg.monoids import Counting, is_monoid
from windowagg.ooo import Recalc as OooRecalc
from windowagg.sketches import QDigest, QDigestMonoid, ValueMapper


def test_is_a_monoid_and_identity_laws():
    m = QDigestMonoid(1000, 0.05)
    assert is_monoid(m)
    a = m.lift(7)
    assert m.combine(m.identity, a) == a == m.combine(a, m.identity)
    assert m.lower(m.identity) is None
    assert m.identity.is_empty()


@given(st.lists(st.lists(st.integers(0, 999), min_size=0, max_size=200), min_size=3, max_size=3))
def test_associativity_of_answers_and_no_mutation(groups):
    m = QDigestMonoid(1000, 0.05, quantiles=(0.1, 0.5, 0.9))
    parts = []
    for g in groups:
        p = m.identity
        for x in g:
            p = m.combine(p, m.lift(x))
        parts.append(p)
    snaps = [p.to_bytes() for p in parts]
    left = m.combine(m.combine(parts[0], parts[1]), parts[2])
    right = m.combine(parts[0], m.combine(parts[1], parts[2]))
    assert [p.to_bytes() for p in parts] == snaps, "combine mutated an argument"
    assert left.total_weight == right.total_weight
    items = [(x, 1.0) for g in groups for x in g]
    if items:
        for d in (left, right):
            for phi, q in zip((0.1, 0.5, 0.9), m.lower(d), strict=True):
                ok, msg = quantile_ok(items, q, phi, 0.05)
                assert ok, msg


def test_p95_in_a_sliding_window_with_a_mapper():
    mapper = ValueMapper(-100.0, 1500.0, 1.0)
    m = QDigestMonoid(eps=0.01, mapper=mapper, quantiles=(0.95,))
    counting = Counting(m)
    w = FifoRecalc(counting)
    rng = random.Random(1)
    vals: list[float] = []
    for _ in range(600):
        v = round(rng.lognormvariate(2, 1.2), 1) - 5
        v = min(v, 1500.0)
        w.insert(v)
        vals.append(v)
        if len(vals) > 200:
            w.evict()
            vals.pop(0)
        p95 = w.query()
        items = [(mapper.to_key(v), 1.0) for v in vals]
        ok, msg = quantile_ok(items, mapper.to_key(p95), 0.95, 0.01)
        assert ok, msg
    assert counting.combines > 0


def test_out_of_order_window_and_validation():
    m = QDigestMonoid(64, 0.1)
    w = OooRecalc(m)
    for t in (5, 1, 3, 2, 4):
        w.insert(t, t * 10)
    assert w.query() == 50
    with pytest.raises(ValueError):
        m.lift(64)
    with pytest.raises(ValueError):
        QDigestMonoid()
    with pytest.raises(ValueError):
        QDigestMonoid(10, 0.1, mapper=ValueMapper(0.0, 100.0, 1.0))


def test_combine_keeps_partials_bounded():
    m = QDigestMonoid(2**20, 0.05)
    acc = m.identity
    rng = random.Random(2)
    for _ in range(50):
        part = QDigest(2**20, 0.05)
        part.update_many([rng.randrange(2**20) for _ in range(500)])
        acc = m.combine(acc, part)
        assert acc.size <= QDigest.error_bound(2**20, 0.05).max_nodes
    acc._check()


def test_p95_over_sliding_windows_in_fiba_and_daba():
    """The issue's use case: p95 departure delay over a sliding window, out of order."""
    from windowagg.fifo import DABA
    from windowagg.ooo import FiBA

    mapper = ValueMapper(-100.0, 1500.0, 1.0, clip=True)
    m = QDigestMonoid(eps=0.02, mapper=mapper, quantiles=(0.5, 0.95))
    counting = Counting(m)
    fiba = FiBA(counting, min_arity=4)
    daba = DABA(m)
    rng = random.Random(7)
    n, width = 1500, 300
    times = list(range(n))
    delays = {t: round(rng.lognormvariate(2.0, 1.1) - 5.0, 1) for t in times}
    arrival = sorted(times, key=lambda t: t + rng.uniform(0, 40))  # up to 40 late
    live: dict[int, float] = {}
    for t in arrival:
        fiba.insert(t, delays[t])
        live[t] = delays[t]
        newest = max(live)
        for old in [s for s in live if s <= newest - width]:
            fiba.evict(old)
            del live[old]
        if len(live) % 37 == 0:
            items = [(mapper.to_key(v), 1.0) for v in live.values()]
            p50, p95 = fiba.query()
            for phi, q in ((0.5, p50), (0.95, p95)):
                ok, msg = quantile_ok(items, mapper.to_key(q), phi, 0.02)
                assert ok, msg
    for t in times:  # in order through DABA: a count-based window of `width` items
        daba.insert(delays[t])
        if t >= width:
            daba.evict()
        if t % 50 == 0 and t:
            window = [delays[s] for s in range(max(0, t - width + 1), t + 1)]
            items = [(mapper.to_key(v), 1.0) for v in window]
            p50, p95 = daba.query()
            ok, msg = quantile_ok(items, mapper.to_key(p95), 0.95, 0.02)
            assert ok, msg
    assert counting.combines > 0
