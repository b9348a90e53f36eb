"""The decayed monoids (``windowagg.sketches.forward_decay``): the monoid laws with float
tolerances, the slide verbs (native and Python) against a naive oracle, their errors."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from windowagg.errors import ArgumentError
from windowagg.sketches.forward_decay import (
    ExpDecayed,
    PolyDecayed,
    _exp_slices_from_python,
    exp_slices,
    poly_slices,
)

EVENTS = st.lists(
    st.tuples(st.integers(-(10**6), 10**6), st.floats(-1e6, 1e6, allow_nan=False)),
    min_size=0,
    max_size=6,
)
HALF_LIVES = st.sampled_from([1.0, 37.5, 1_000.0, 3_600_000_000.0])


def native_core_with_decay():
    """The compiled core, or a skip: not built, or built before ``decay_slices``."""
    core = pytest.importorskip("windowagg._native._core")
    if not hasattr(core, "decay_slices"):
        pytest.skip("the compiled core predates decay_slices: bash scripts/build_native.sh")
    return core


def fold(m, events):
    acc = m.identity
    for e in events:
        acc = m.combine(acc, m.lift(e))
    return acc


def scale(m, events, at):
    """``sum (|v_i| + 1) 2^(-(at - t_i)/h)``: what the rounding errors are relative to."""
    return math.fsum((abs(v) + 1.0) * 2.0 ** ((t - at) / m.half_life) for t, v in events)


@given(EVENTS, EVENTS, EVENTS, HALF_LIVES)
def test_exponential_combine_is_associative_and_commutative(a, b, c, h):
    """(a ⊗ b) ⊗ c and a ⊗ (b ⊗ c) agree on the landmark exactly and on S and W within
    1e-12 of their scale (a few roundings per rescale); a ⊗ b == b ⊗ a bit for bit."""
    m = ExpDecayed(h, "sum")
    pa, pb, pc = fold(m, a), fold(m, b), fold(m, c)
    assert m.combine(pa, pb) == m.combine(pb, pa)
    left = m.combine(m.combine(pa, pb), pc)
    right = m.combine(pa, m.combine(pb, pc))
    if left is None:
        assert right is None and not (a or b or c)
        return
    assert left[0] == right[0] == max(t for t, _ in a + b + c)
    tol = 1e-12 * scale(m, a + b + c, left[0])
    assert abs(left[1] - right[1]) <= tol and abs(left[2] - right[2]) <= tol
    assert m.combine(m.identity, pa) == pa == m.combine(pa, m.identity)


@given(EVENTS, st.integers(0, 10**6), HALF_LIVES)
@example(events=[(0, 2.0)], after=1075, h=1.0)
def test_exponential_answers_match_the_oracle(events, after, h):
    """Folded in any order, the partial answers as of any later time within 1e-12 of the
    naive sums ``sum v_i 2^(-(T - t_i)/h)`` (``math.fsum``)."""
    if not events:
        return
    at = max(t for t, _ in events) + after
    weights = [2.0 ** (-(at - t) / h) for t, _ in events]
    s = math.fsum(w * v for w, (_, v) in zip(weights, events, strict=True))
    w = math.fsum(weights)
    # the oracle's own weights underflow: 2^-1075 rounds to 0 while windowagg's sum of
    # one event v = 2.0 that far back is the exact 2^-1074 (CI found the example), so the
    # tolerance also holds half a subnormal step per |v| + 1 of each term
    tol = 1e-12 * scale(ExpDecayed(h), events, at) + math.ulp(0.0) * math.fsum(
        abs(v) + 1.0 for _, v in events
    )
    for what, want in (("sum", s), ("count", w)):
        m = ExpDecayed(h, what)
        assert abs(m.as_of(fold(m, events), at) - want) <= tol
        assert abs(m.as_of(fold(m, events[::-1]), at) - want) <= tol
    mean = ExpDecayed(h, "mean")
    if w > 0:
        got = mean.as_of(fold(mean, events), at)
        # the mean's oracle with weights relative to the newest event (the ratio does not
        # change): s / w underflows to subnormals long after the mean is exact (one event
        # of 5.9e-288 83 half-lives back: s = 6.1e-313, 3e-12 off)
        newest = max(t for t, _ in events)
        rel = [2.0 ** (-(newest - t) / h) for t, _ in events]
        want_mean = math.fsum(r * v for r, (_, v) in zip(rel, events, strict=True)) / math.fsum(rel)
        assert abs(got - want_mean) <= 1e-12 * max(abs(v) for _, v in events) + 1e-300


@given(EVENTS, EVENTS, st.floats(0.5, 4.0))
def test_polynomial_is_exact_whatever_the_order(a, b, alpha):
    """The bag partial's answer is correctly rounded (``fsum``), so the combine order does
    not change a bit of it."""
    m = PolyDecayed(alpha, "sum", unit=10)
    at = max((t for t, _ in a + b), default=0)
    assert m.as_of(m.combine(fold(m, a), fold(m, b)), at) == m.as_of(
        m.combine(fold(m, b), fold(m, a)), at
    )


def random_windows(rng, n, r):
    lo = np.sort(rng.integers(0, n + 1, r))
    hi = np.maximum(lo, np.sort(rng.integers(0, n + 1, r)))
    hi = np.maximum.accumulate(hi)
    return lo.astype(np.int64), hi.astype(np.int64)


@pytest.mark.parametrize("backend", ["python", "native"])
@pytest.mark.parametrize("what", ["sum", "count", "mean"])
def test_exp_slices_match_the_oracle(backend, what):
    """Non-decreasing windows (some empty, some repeated, fresh starts after gaps) over
    time-sorted events: each answer within 1e-12 of its scale; both backends."""
    if backend == "native":
        native_core_with_decay()
    rng = np.random.default_rng(11)
    n, r = 400, 300
    t = np.sort(rng.integers(0, 5_000, n)).astype(np.int64)
    v = rng.normal(0, 100, n)
    lo, hi = random_windows(rng, n, r)
    end = np.array(
        [t[b - 1] + 7 if b > a else 0 for a, b in zip(lo, hi, strict=False)], dtype=np.int64
    )
    m = ExpDecayed(250.0, what)
    got = exp_slices(m, t, v, lo, hi, end, backend=backend)
    for j in range(r):
        ev = list(zip(t[lo[j] : hi[j]].tolist(), v[lo[j] : hi[j]].tolist(), strict=False))
        if not ev:
            assert np.isnan(got[j]) if what == "mean" else got[j] == 0.0, j
            continue
        ws = [2.0 ** ((x - end[j]) / 250.0) for x, _ in ev]
        s = math.fsum(w * y for w, (_, y) in zip(ws, ev, strict=False))
        want = {"sum": s, "count": math.fsum(ws), "mean": s / math.fsum(ws)}[what]
        tol = 1e-12 * (scale(m, ev, int(end[j])) if what != "mean" else max(abs(y) for _, y in ev))
        assert abs(got[j] - want) <= tol, j


@pytest.mark.parametrize("backend", ["python", "native"])
@pytest.mark.parametrize("what", ["sum", "count", "mean"])
def test_exp_slices_over_histories_and_held_starts(backend, what):
    """Windows that keep their start for a while (each key's whole history, per event;
    then starts that move again) extend the previous answer by the new events: the answers
    stay within 1e-12 of the exact sums, as of each window's newest event or later."""
    if backend == "native":
        native_core_with_decay()
    rng = np.random.default_rng(13)
    n = 300
    t = np.sort(rng.integers(0, 4_000, n)).astype(np.int64)
    v = rng.normal(0, 100, n)
    keys = [0, 90, 200, n]  # three keys' histories, then sliding windows of 25 events
    lo = [a for a, b in itertools.pairwise(keys) for _ in range(a, b)]
    hi = [i + 1 for a, b in itertools.pairwise(keys) for i in range(a, b)]
    lo += [max(i - 25, 200) for i in range(200, n)]
    hi += [i + 1 for i in range(200, n)]
    lo, hi = np.maximum.accumulate(np.array(lo)), np.maximum.accumulate(np.array(hi))
    lo, hi = lo.astype(np.int64), hi.astype(np.int64)
    end = t[hi - 1] + np.where(np.arange(len(lo)) % 3 == 0, 0, 40)  # at the newest or after
    m = ExpDecayed(250.0, what)
    got = exp_slices(m, t, v, lo, hi, end, backend=backend)
    for j in range(len(lo)):
        ev = list(zip(t[lo[j] : hi[j]].tolist(), v[lo[j] : hi[j]].tolist(), strict=False))
        ws = [2.0 ** ((x - end[j]) / 250.0) for x, _ in ev]
        s = math.fsum(w * y for w, (_, y) in zip(ws, ev, strict=False))
        want = {"sum": s, "count": math.fsum(ws), "mean": s / math.fsum(ws)}[what]
        tol = 1e-12 * (scale(m, ev, int(end[j])) if what != "mean" else max(abs(y) for _, y in ev))
        assert abs(got[j] - want) <= tol, j


def test_native_slices_refuse_bad_bounds():
    core = native_core_with_decay()
    t, v = np.arange(3, dtype=np.int64), np.ones(3)
    out = np.empty(2)
    with pytest.raises(ArgumentError, match="non-decreasing"):
        core.decay_slices(
            t, v, np.array([1, 0]), np.array([2, 3]), np.array([2, 2]), 1.0, out, out.copy()
        )
    with pytest.raises(ArgumentError, match="half_life"):
        core.decay_slices(t, v, np.array([0]), np.array([1]), np.array([0]), 0.0, out, out)


def test_native_slices_across_blocks_equal_the_python_fold():
    """The binding slides a block of 4,096 windows at a time (checked copies of their
    bounds), the kernel's state carried from block to block: a key's whole history over
    10,000 events, per event, is the Python monoid's fold one combine per event, bit for
    bit (the same operations); a bad bound past the first block is refused by its index."""
    core = native_core_with_decay()
    rng = np.random.default_rng(17)
    n = 10_000
    t = np.cumsum(rng.integers(0, 50, n)).astype(np.int64)
    v = rng.normal(0, 100, n)
    m = ExpDecayed(400.0, "mean")
    lo, hi = np.zeros(n, dtype=np.int64), np.arange(1, n + 1, dtype=np.int64)
    got = exp_slices(m, t, v, lo, hi, t, backend="native")
    want = _exp_slices_from_python(m, None, t, v, hi, t)
    assert np.array_equal(got, want)
    hi[9_000] = n + 1
    s, w = np.empty(n), np.empty(n)
    with pytest.raises(ArgumentError, match=r"window 9000 has bounds \[0, 10001\)"):
        core.decay_slices(t, v, lo, hi, t, 400.0, s, w, False)


def test_poly_slices_match_as_of():
    rng = np.random.default_rng(12)
    n = 200
    t = np.sort(rng.integers(0, 10_000, n)).astype(np.int64)
    v = rng.normal(size=n)
    lo, hi = random_windows(rng, n, 150)
    end = np.array([t[b - 1] if b > a else 0 for a, b in zip(lo, hi, strict=False)], dtype=np.int64)
    for what in ("sum", "count", "mean"):
        m = PolyDecayed(1.5, what, unit=100)
        got = poly_slices(m, t, v, lo, hi, end)
        for j in range(len(lo)):
            p = tuple(zip(t[lo[j] : hi[j]].tolist(), v[lo[j] : hi[j]].tolist(), strict=False))
            want = m.as_of(p, int(end[j]))
            if want is None:
                assert np.isnan(got[j])
            else:
                assert got[j] == pytest.approx(want, rel=1e-12, abs=1e-12)


@pytest.mark.parametrize(
    ("make", "match"),
    [
        (lambda: ExpDecayed(0.0), "half_life"),
        (lambda: ExpDecayed(float("inf")), "half_life"),
        (lambda: ExpDecayed(1.0, "median"), "what"),
        (lambda: PolyDecayed(-1.0), "alpha"),
        (lambda: PolyDecayed(2.0, unit=0), "unit"),
    ],
)
def test_bad_parameters_say_what_to_give(make, match):
    with pytest.raises(ArgumentError, match=match):
        make()
