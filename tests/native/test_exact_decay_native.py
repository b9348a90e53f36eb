"""The exact decayed kernels of the compiled core (``_core.decayed_prefix_quantiles``,
``decayed_window_quantiles``, ``decayed_prefix_top_k``, ``decayed_window_top_k``): bad
buffers, bounds, ranks and values raise before any work (the kernels index with them, without the GIL),
and random windows give the Python twins' answers (run under the sanitizer build too)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

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
    texts, at = np.full(2, None, dtype=object), np.arange(2, dtype=np.int64)
    with pytest.raises(ArgumentError, match="window 1 has bounds"):
        core.decayed_prefix_top_k(v, m, e, lo, hi, me, ee, 2, xd.RESCALE, texts, at)
    with pytest.raises(ArgumentError, match="window 1 has bounds"):
        core.decayed_window_top_k(v, m, e, lo, hi, me, ee, 2, texts, at)
    hi[1] = 20
    with pytest.raises(ArgumentError, match="not a position"):
        core.decayed_prefix_quantiles(rank - 100, m, e, lo, hi, 0.5, xd.SNAP, xd.RESCALE, out)
    with pytest.raises(ArgumentTypeError, match="int64"):
        core.decayed_prefix_quantiles(rank, m, e, lo.astype(np.float64), hi, 0.5, xd.SNAP, 960, out)
    with pytest.raises(ArgumentError, match="equal lengths"):
        core.decayed_window_top_k(v, m, e, lo, hi, me[:1], ee, 2, texts, at)
    with pytest.raises(ArgumentError, match=r"at\[1\] = 2 is not a position of out"):
        core.decayed_window_top_k(v, m, e, lo, hi, me, ee, 2, texts, at + 1)
    with pytest.raises(ArgumentError, match="one position per window"):
        core.decayed_prefix_top_k(v, m, e, lo, hi, me, ee, 2, xd.RESCALE, texts, at[:1])
    with pytest.raises(ArgumentTypeError, match="object array"):
        core.decayed_window_top_k(v, m, e, lo, hi, me, ee, 2, np.zeros(2), at)
    with pytest.raises(ArgumentTypeError, match="object array"):
        core.decayed_prefix_top_k(
            v, m, e, lo, hi, me, ee, 2, xd.RESCALE, np.repeat(texts, 2)[::2], at
        )
    assert texts.tolist() == [None, None]  # refused calls wrote nothing
    with pytest.raises(ArgumentError, match="phi"):
        core.decayed_window_quantiles(v, m, e, lo, hi, 1.0, xd.SNAP, out)
    vn = v.copy()
    vn[0] = np.nan
    with pytest.raises(ArgumentError, match="not finite"):
        core.decayed_prefix_top_k(vn, m, e, lo, hi, me, ee, 2, xd.RESCALE, texts, at)
    with pytest.raises(ArgumentError, match="not finite"):
        core.decayed_window_quantiles(vn, m, e, lo, hi, 0.5, xd.SNAP, out)


def test_an_overflowed_top_k_weight_is_refused_on_both_backends() -> None:
    """A window ending far before its events: each weight as of the end overflows
    float64. The Python twin's ``2**x`` raises OverflowError; the native writer raised
    nothing and wrote the text of ``inf`` as if it were digits (reading past what
    ``to_chars`` wrote): it refuses it the same way now, on every window's path."""
    t, v = np.array([0, 5], dtype=np.int64), np.array([1.0, 2.0])
    lo, hi, end = np.array([0, 0]), np.array([1, 2]), np.array([-(10**7), 5])
    for backend in ("python", "native"):
        with pytest.raises(OverflowError):
            xd.top_k_slices(t, v, lo, hi, end, 1, 1.0, backend=backend)
    with pytest.raises(OverflowError):  # the per-event path's kernel (windows sharing a start)
        xd.top_k_slices(
            t,
            v,
            np.array([0, 0]),
            np.array([1, 2]),
            np.array([-(10**7), -(10**7)]),
            1,
            1.0,
            backend="native",
        )


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
    texts = np.full(400, None, dtype=object)
    core.decayed_window_top_k(*args, texts, np.arange(400, dtype=np.int64))
    assert texts.tolist() == xd._window_top_k(*args)


@pytest.mark.parametrize("k", [1, 3, 12])
def test_texts_cross_the_kernels_chunks_in_place(k: int) -> None:
    """Thousands of windows (the bindings make strings 4,096 windows at a time), written to
    scattered positions of an object array, the references they replace released: the
    Python twins' texts, window for window, for both kernels (-0.0 and 0.0 both seen)."""
    n, r = 3000, 9000
    t, v, m, e, _, _ = events(n, 7)
    v = np.where(v == 0.0, np.where(np.arange(n) % 2, -0.0, 0.0), v * 1.5 - 3)
    rng = np.random.default_rng(k)
    lo = np.sort(rng.integers(0, n, r)).astype(np.int64)
    lo[: r // 2] = lo[0]  # one long run: the prefix pass across chunks
    hi = np.maximum(np.sort(rng.integers(1, n + 1, r)), lo + 1).astype(np.int64)
    hi = np.maximum.accumulate(hi)
    me, ee = xd.exponents(t[hi - 1] + rng.integers(0, 30, r), 10.0)
    at = rng.permutation(r + 5)[:r].astype(np.int64)
    placeholder = object()
    for kernel in ("prefix", "window"):
        texts = np.full(r + 5, placeholder, dtype=object)
        if kernel == "prefix":
            core.decayed_prefix_top_k(v, m, e, lo, hi, me, ee, k, xd.RESCALE, texts, at)
            want = np.full(r, None, dtype=object)
            xd._prefix_top_k(v, m, e, lo, hi, me, ee, k, want, np.arange(r), "python")
        else:
            core.decayed_window_top_k(v, m, e, lo, hi, me, ee, k, texts, at)
            want = np.asarray(xd._window_top_k(v, m, e, lo, hi, me, ee, k), dtype=object)
        assert texts[at].tolist() == want.tolist()
        untouched = np.setdiff1d(np.arange(r + 5), at)
        assert all(x is placeholder for x in texts[untouched])
        assert all(type(x) is str and x.isascii() for x in texts[at])


@settings(max_examples=200, deadline=None)
@given(
    data=st.data(),
    k=st.integers(1, 6),
    values=st.lists(
        st.sampled_from([0.0, -0.0, 1.0, -2.5, 1e-5, 0.1, 3e16, 123456789.0, -7.0]),
        min_size=1,
        max_size=5,
        unique_by=str,
    ),
)
def test_both_kernels_write_their_twins_text(
    data: st.DataObject, k: int, values: list[float]
) -> None:
    """Random streams straight into the kernels (no -0.0 normalised away, bursts of equal
    times: equal weights, ties broken by the text; spans of thousands of half-lives: rebased):
    the prefix kernel on windows sharing starts, the window kernel on any windows, each the
    text of its Python twin byte for byte."""
    n = data.draw(st.integers(1, 60))
    h = data.draw(st.sampled_from([1.0, 7.0, 2.5]))
    steps = data.draw(st.lists(st.sampled_from([0, 0, 1, 3, 5000]), min_size=n, max_size=n))
    t = np.cumsum(np.asarray(steps, dtype=np.int64))
    v = np.asarray(data.draw(st.lists(st.sampled_from(values), min_size=n, max_size=n)))
    m, e = xd.exponents(t, h)
    r = data.draw(st.integers(1, 20))
    lo = np.asarray(data.draw(st.lists(st.integers(0, n - 1), min_size=r, max_size=r)))
    size = np.asarray(data.draw(st.lists(st.integers(1, n), min_size=r, max_size=r)))
    hi = np.minimum(lo + size, n).astype(np.int64)
    late = np.asarray(data.draw(st.lists(st.integers(0, 20), min_size=r, max_size=r)))
    me, ee = xd.exponents(t[hi - 1] + late, h)
    at = np.arange(r, dtype=np.int64)
    got = np.full(r, None, dtype=object)
    core.decayed_window_top_k(v, m, e, lo.astype(np.int64), hi, me, ee, k, got, at)
    assert got.tolist() == xd._window_top_k(v, m, e, lo, hi, me, ee, k)
    lo, hi = np.sort(lo).astype(np.int64), np.sort(hi)
    if data.draw(st.booleans()):
        lo[:] = lo[0]  # one run
    hi = np.maximum.accumulate(np.maximum(hi, lo + 1))
    me, ee = xd.exponents(t[hi - 1] + late, h)
    got = np.full(r, None, dtype=object)
    want = np.full(r, None, dtype=object)
    core.decayed_prefix_top_k(v, m, e, lo, hi, me, ee, k, xd.RESCALE, got, at)
    xd._prefix_top_k(v, m, e, lo, hi, me, ee, k, want, at, "python")
    assert got.tolist() == want.tolist()
