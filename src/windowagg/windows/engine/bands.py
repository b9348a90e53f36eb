"""A rank band: the k-th smallest of a changing multiset from the values near rank k.

=================  ==========================================================================
idea               to answer one quantile of a sliding window exactly, only the values whose
                   rank is near the quantile's need an order: the band keeps the values in
                   ``[lo, hi]`` in an order-statistics multiset and, of the others, only
                   how many lie below ``lo`` and above ``hi``. The k-th smallest is
                   ``multiset.kth(k - below)`` while ``below <= k < below + len(multiset)``
                   (every value below ``lo`` sorts before every value in the band, equal
                   values included: ``below`` counts ``< lo``, ``above`` counts ``> hi``);
                   outside, the band is rebuilt from all the values
moves              values entering or leaving arrive sorted (a pane's values): two binary
                   searches split them into below / band / above; only the band's part
                   touches the multiset (a fraction ~ band / n of them)
build              from all the values (any order): ``lo`` and ``hi`` are the values of
                   ranks ``k - margin`` and ``k + margin`` (one ``numpy.partition``; -inf /
                   +inf where that runs off the ends, so a margin >= n is the whole
                   multiset). ``margin = max(MARGIN, n / 64) * 2**doublings``: a rebuild
                   before n / 2 values have moved since the last doubles it. A band that has
                   grown with the multiset past 4 margins is rebuilt (narrower) once n / 2
                   values have moved since its build
ordering           any: a multiset needs no order of arrival
operator needs     a total order on finite floats (the engine's admission refuses NaN, inf)
time               a move of m sorted values: O(log m) searches + O(b log B) multiset
                   operations for the b of them inside the band (B values held in it);
                   ``kth`` O(log B); a build O(n) (partition) + O(B log B). Amortized: a
                   build is paid by the >= n / 2 values moved since the last one, or
                   doubles the margin, which happens at most log2(n / MARGIN) times before
                   the band holds everything: at most that many unpaid builds in a band's
                   life
space              O(B) values, B <= n
paper              the order-statistic tree (CLRS 14.1) restricted to a rank interval;
                   selection by partition (Hoare's FIND, CACM 1961) for the rebuild
=================  ==========================================================================

Examples
--------
>>> import numpy as np
>>> from windowagg.order_statistics import OrderStatistics
>>> b = RankBand(OrderStatistics, margin=1)
>>> b.build(np.array([5.0, 1.0, 4.0, 2.0, 3.0, 9.0, 8.0]), 4)  # 1 2 3 [4 5 8] 9
3
>>> b.kth(4), b.kth(3), b.kth(5), b.kth(0), b.n
(5.0, 4.0, 8.0, None, 7)
>>> b.move(np.array([0.5, 4.5, 10.0]), 1)  # one below, one inside, one above
1
>>> b.kth(5), b.n
(4.5, 10)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

__all__ = ["MARGIN", "RankBand"]

#: The least margin (ranks each side of k) a band is built with.
MARGIN = 256


class RankBand:
    """The values of a multiset near one rank (see the module docstring).

    *make* makes an empty order-statistics structure (``bulk_insert``, ``bulk_evict``,
    ``kth``, ``len``); *margin* is the least margin (None: :data:`MARGIN`). A new band
    is not built: :meth:`move` ignores values until :meth:`build`.
    """

    __slots__ = ("_least", "_make", "above", "below", "doublings", "hi", "lo", "moved", "ms")

    def __init__(self, make: Callable[[], Any], margin: int | None = None) -> None:
        self._make = make
        self._least = MARGIN if margin is None else int(margin)
        self.ms: Any = None
        """The multiset of the values in ``[lo, hi]`` (None: not built)."""
        self.lo = -np.inf
        self.hi = np.inf
        self.below = 0
        """Values ``< lo``."""
        self.above = 0
        """Values ``> hi``."""
        self.moved = 0
        """Values moved in or out since the last build."""
        self.doublings = 0
        """Builds that came before n / 2 values moved (each doubles the margin)."""

    @property
    def built(self) -> bool:
        """Whether the band holds its values (else :meth:`build` first). O(1)."""
        return self.ms is not None

    @property
    def n(self) -> int:
        """How many values the multiset holds (a built band). O(1)."""
        return self.below + len(self.ms) + self.above

    @property
    def whole(self) -> bool:
        """Whether the band is the whole multiset (never rebuilt). O(1)."""
        return self.lo == -np.inf and self.hi == np.inf

    def build(self, values: np.ndarray, k: int) -> int:
        """Hold *values* (every value of the multiset, any order, float64) around rank *k*
        (0-based, ``0 <= k < n``). Returns the values put in the multiset. O(n + B log B)."""
        n = len(values)
        if self.ms is not None and 2 * self.moved < n:  # not paid for: a wider band
            self.doublings += 1
        margin = self._margin(n)
        r_lo, r_hi = k - margin, k + margin
        picks = [r for r in (r_lo, r_hi) if 0 < r < n - 1]
        part = np.partition(values, picks) if picks else values
        self.lo = float(part[r_lo]) if 0 < r_lo < n - 1 else -np.inf
        self.hi = float(part[r_hi]) if 0 < r_hi < n - 1 else np.inf
        if self.whole:
            mid = values
            self.below = self.above = 0
        else:
            inside = (values >= self.lo) & (values <= self.hi)
            mid = values[inside]
            self.below = int(np.count_nonzero(values < self.lo))
            self.above = n - self.below - len(mid)
        self.ms = self._make()
        self.ms.bulk_insert(np.ascontiguousarray(mid, dtype=np.float64))
        self.moved = 0
        return len(mid)

    def move(self, values: np.ndarray, sign: int) -> int:
        """Insert (*sign* +1) or evict (-1) *values* (sorted float64) of a built band.
        Returns the values the multiset took or gave. O(log m + b log B)."""
        self.moved += len(values)
        if self.whole:
            mid = values
        else:
            i = int(np.searchsorted(values, self.lo, "left"))
            j = int(np.searchsorted(values, self.hi, "right"))
            self.below += sign * i
            self.above += sign * (len(values) - j)
            mid = values[i:j]
        if len(mid):
            if sign > 0:
                self.ms.bulk_insert(mid)
            else:
                self.ms.bulk_evict(mid)
        return len(mid)

    def _margin(self, n: int) -> int:
        return max(self._least, n >> 6) << self.doublings

    def kth(self, k: int) -> Any:
        """The *k*-th smallest value (0-based), or None when rank *k* is outside the band,
        or the band holds more than 4 margins of values and n / 2 values have moved since
        its build (it grew with the multiset: rebuild it, narrower). O(log B)."""
        i = k - self.below
        size = len(self.ms)
        if not 0 <= i < size:
            return None
        n = self.below + size + self.above
        if size > 4 * self._margin(n) and 2 * self.moved >= n:
            return None
        return self.ms.kth(i)

    def check(self, values: np.ndarray) -> None:
        """Invariant (O(n log n)): the band holds exactly *values* (all of the multiset's):
        the counts below and above, the band's values in the multiset."""
        v = np.sort(np.asarray(values, dtype=np.float64))
        below = int(np.count_nonzero(v < self.lo))
        above = int(np.count_nonzero(v > self.hi))
        mid = v[(v >= self.lo) & (v <= self.hi)].tolist()
        if (below, above) != (self.below, self.above) or list(self.ms) != mid:
            raise AssertionError(
                f"RankBand [{self.lo}, {self.hi}]: holds {self.below} below, "
                f"{len(self.ms)} inside, {self.above} above; the values have {below}, "
                f"{len(mid)}, {above}"
            )
