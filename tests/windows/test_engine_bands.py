"""RankBand (windows.engine.bands) against a sorted list: random moves, builds and ranks.

The band answers ``kth`` exactly or says it cannot (None: the rank left the band, or the
band grew past its margins); after a rebuild it answers. Its invariant (counts below and
above, the band's values) is checked after every step; the work it does is counted.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from windowagg.order_statistics import OrderStatistics
from windowagg.windows.engine import bands as bands_module
from windowagg.windows.engine.bands import RankBand

VALUE = st.one_of(st.integers(-6, 6).map(float), st.floats(-1e3, 1e3))
BATCH = st.lists(VALUE, max_size=12)


@given(
    st.lists(VALUE, min_size=1, max_size=40),
    st.lists(st.tuples(st.booleans(), BATCH, st.floats(0, 1)), max_size=30),
    st.integers(0, 5),
)
def test_kth_is_the_sorted_lists_or_none_and_a_rebuild_answers(
    first: list[float], steps: list[tuple[bool, list[float], float]], margin: int
) -> None:
    held = sorted(first)
    band = RankBand(OrderStatistics, margin=margin)
    assert not band.built
    band.build(np.asarray(first, np.float64), len(held) // 2)
    band.check(np.asarray(held))
    for insert, batch, q in steps:
        if insert:
            band.move(np.sort(np.asarray(batch, np.float64)), 1)
            held = sorted(held + batch)
        else:  # evict some held values (a pane leaving: its values, sorted)
            out = held[: len(batch)]
            band.move(np.asarray(out, np.float64), -1)
            held = held[len(out) :]
        band.check(np.asarray(held))
        assert band.n == len(held)
        if not held:
            continue
        k = min(int(q * len(held)), len(held) - 1)
        got = band.kth(k)
        if got is None:  # outside the band, or grown: rebuilt around k, it answers
            band.build(np.asarray(held[::-1], np.float64), k)
            band.check(np.asarray(held))
            got = band.kth(k)
        assert got == held[k]


def test_a_narrow_band_moves_only_its_share_of_the_values() -> None:
    """100,000 uniform values, a band of +-1,000 ranks around the 95th percentile: moving
    a sorted block of 1,000 values in and one out touches the multiset for about 2% of
    them, and the k-th stays exact."""
    rng = np.random.default_rng(5)
    v = rng.random(100_000)
    band = RankBand(OrderStatistics, margin=1_000)
    k = 95_000
    band.build(v, k)
    assert len(band.ms) <= 2 * 1_000 + 1 + 2 * (100_000 >> 6)
    held = v
    touched = 0
    for step in range(20):
        new = np.sort(rng.random(1_000))
        old = np.sort(held[:1_000])
        touched += band.move(new, 1) + band.move(old, -1)
        held = np.concatenate([held[1_000:], new])
        got = band.kth(k)
        assert got is not None and got == np.sort(held)[k], step
    assert touched < 0.1 * 20 * 2_000
    band.check(held)


def test_builds_not_paid_for_double_the_margin() -> None:
    """A band rebuilt before n / 2 values moved widens (doublings + 1); after enough
    doublings it is the whole multiset."""
    v = np.arange(1_000, dtype=np.float64)
    band = RankBand(OrderStatistics, margin=4)
    band.build(v, 500)
    width = len(band.ms)
    for _ in range(12):
        band.build(v, 500)  # nothing moved: unpaid
    assert band.doublings == 12 and band.whole and len(band.ms) == 1_000 > width
    assert bands_module.MARGIN >= 1


class _Counting:
    made = 0

    def __init__(self) -> None:
        _Counting.made += 1
        self._ms = OrderStatistics()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._ms, name)

    def __len__(self) -> int:
        return len(self._ms)

    def __iter__(self) -> Any:
        return iter(self._ms)


def test_a_band_grown_with_the_multiset_is_narrowed_once_paid() -> None:
    """Built on 100 values with margin 256 the band is everything; filled to 20,000
    values it still answers, until n / 2 values have moved: then kth says rebuild, and
    the rebuilt band is narrow."""
    rng = np.random.default_rng(9)
    band = RankBand(_Counting)
    held = rng.random(100)
    band.build(held, 95)
    assert band.whole
    narrowed = False
    for _ in range(200):
        new = np.sort(rng.random(100))
        band.move(new, 1)
        held = np.concatenate([held, new])
        k = int(0.95 * len(held))
        got = band.kth(k)
        if got is None:
            band.build(held, k)
            narrowed = True
            got = band.kth(k)
        assert got == np.sort(held)[k]
    assert narrowed and not band.whole and len(band.ms) < len(held) // 4
