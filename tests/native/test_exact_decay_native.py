"""The exact decayed kernels of the compiled core (``_core.decayed_prefix_quantiles``,
``decayed_window_quantiles``, ``decayed_prefix_top_k``, ``decayed_window_top_k``): bad
buffers, bounds, ranks and values raise before any work (the kernels index with them, without the GIL),
and random windows give the Python twins' answers (run under the sanitizer build too)."""

from __future__ import annotations

import numpy as np
import pytest

from windowagg._backend import native_core
from windowagg.errors import ArgumentError, ArgumentTypeError
from windowagg.sketches import exact_decay as xd

core = native_core()
pytestmark = pytest.mark.skipif(core is None, reason="the compiled core is not built")


def events(n: int, seed: int) -> tuple[np.ndarray, ...]:
    rng = np.random.default_rng(seed)
    t = np.sort(rng.integers(0, 40_000, n)).astype(np.int64)
    v = rng.integers(0, 9, n).astype(np.float64)
    m, e = xd.exponents(t, 10.0)
    order = np.argsort(v, kind="stable").astype(np.int64)
    rank = np.empty(n, dtype=np.int64)
    rank[order] = np.arange(n)
    return t, v, m, e, order, rank


def test_native_kernels_refuse_bad_bounds_and_buffers() -> None:
    _, v, m, e, _, rank = events(20, 1)
    lo, hi = np.array([0, 5], dtype=np.int64), np.array([4, 21], dtype=np.int64)  # 21 > n
    out = np.empty(2, dtype=np.int64)
    with pytest.raises(ArgumentError, match="window 1 has bounds"):
        core.decayed_prefix_quantiles(rank, m, e, lo, hi, 0.5, xd.SNAP, xd.RESCALE, out)
    with pytest.raises(ArgumentError, match="window 1 has bounds"):
        core.decayed_window_quantiles(v, m, e, lo, hi, 0.5, xd.SNAP, out)
    me, ee = m[:2].copy(), e[:2].copy()
    with pytest.raises(ArgumentError, match="window 1 has bounds"):
        core.decayed_prefix_top_k(v, m, e, lo, hi, me, ee, 2, xd.RESCALE)
    with pytest.raises(ArgumentError, match="window 1 has bounds"):
        core.decayed_window_top_k(v, m, e, lo, hi, me, ee, 2)
    hi[1] = 20
    with pytest.raises(ArgumentError, match="not a position"):
        core.decayed_prefix_quantiles(rank - 100, m, e, lo, hi, 0.5, xd.SNAP, xd.RESCALE, out)
    with pytest.raises(ArgumentTypeError, match="int64"):
        core.decayed_prefix_quantiles(rank, m, e, lo.astype(np.float64), hi, 0.5, xd.SNAP, 960, out)
    with pytest.raises(ArgumentError, match="equal lengths"):
        core.decayed_window_top_k(v, m, e, lo, hi, me[:1], ee, 2)
    with pytest.raises(ArgumentError, match="phi"):
        core.decayed_window_quantiles(v, m, e, lo, hi, 1.0, xd.SNAP, out)
    vn = v.copy()
    vn[0] = np.nan
    with pytest.raises(ArgumentError, match="not finite"):
        core.decayed_prefix_top_k(vn, m, e, lo, hi, me, ee, 2, xd.RESCALE)
    with pytest.raises(ArgumentError, match="not finite"):
        core.decayed_window_quantiles(vn, m, e, lo, hi, 0.5, xd.SNAP, out)


@pytest.mark.parametrize("seed", range(4))
def test_native_kernels_answer_as_their_python_twins(seed: int) -> None:
    t, v, m, e, _, _ = events(3000, seed)
    rng = np.random.default_rng(seed)
    lo = np.sort(rng.integers(0, 3000, 400)).astype(np.int64)
    hi = np.maximum(np.sort(rng.integers(0, 3001, 400)), lo + 1).astype(np.int64)
    hi = np.minimum(np.maximum.accumulate(hi), 3000)
    lo = np.minimum(lo, hi - 1)
    end = t[hi - 1] + rng.integers(0, 30, 400)
    me, ee = xd.exponents(end, 10.0)
    for phi in (0.5, 0.99):
        got = np.empty(400, dtype=np.int64)
        core.decayed_window_quantiles(v, m, e, lo, hi, phi, xd.SNAP, got)
        want = xd.quantile_slices(t, v, lo, hi, phi, 10.0, backend="python")
        ones = ~xd._runs(lo, hi)  # the twin answers these windows by its matrices
        np.testing.assert_array_equal(v[got][ones], want[ones])
    args = (v, m, e, lo, hi, me, ee, 3)
    assert core.decayed_window_top_k(*args) == xd._window_top_k(*args)
