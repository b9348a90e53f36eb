"""Sliding-window summaries of out-of-order streams (Theorems 1, 2, 5; Corollary 1).

Fact card
---------
===================  ===========================================================================
ordering             out-of-order: items arrive in any timestamp order; the window is chosen at
                     query time (any size w >= 1, up to ``max_window`` if one is set)
input                integer timestamps in [0, 2**time_bits); integer weights >= 1
                     (multiplicities); SlidingWindowQDigest also takes keys in [0, U)
structure            an exact buffer B of the latest items (kappa .. 2 kappa of them, kappa =
                     ceil(c*LT/eps); it evicts in runs), and levels j = 1, 2, ... of
                     fill-then-descend q-digests over time with node threshold theta_j (2**j
                     for counts, 2**(j-1) for ranges), truncated to the kappa latest ranges
                     when they exceed 2*kappa nodes; only levels up to the first one that never
                     discarded are kept (the next is cloned from it on its first discard); in
                     SlidingWindowQDigest every time node also holds a value q-digest (the
                     paper's "defer-merge" variant)
update               O(J log LT) for SlidingWindowCount, O(J (log LT + 1)) amortized for the
                     value version, J = number of levels = O(log(eps N / LT))
queries              O(space): count / window digest / decayed digest
space                O(J kappa) time nodes (count); O(J kappa LU/eps) value nodes (ranges)
error (Thm 1)        D_w = weight of items with t - w < t_i <= t:
                     count_bounds(w) = (lo, hi) with lo <= D_w <= hi (certified, always);
                     |count(w) - D_w| <= eps * D_w   (Theorem 1; c = 3 as in the paper)
error (Thm 2/Cor 1)  rank: |rank(x, w) - r_w(x)| <= eps * D_w; quantile(phi, w) = q with
                     W_w(< q) <= (phi + eps) D_w and W_w(<= q) >= (phi - eps) D_w;
                     heavy_hitters: all f_w(x) >= (phi + eps) D_w, none < (phi - eps) D_w
error (Thm 5)        any decay g (even chosen at query time): decayed rank/count error
                     <= eps * D_g, D_g = sum_i g(t - t_i) over ages < horizon
merge                level-wise node sums; the certified bounds stay exact, the eps guarantee
                     degrades to about k*eps for a k-way merge (see docs/sketches.md)
paper                Cormode, Korn, Tirthapura 2007, section 3 (Alg. 3.1-3.3 with the errata
                     of guide seed-decay.md section 7), section 5.1; guide sections 2.2-2.4, 2.7
===================  ===========================================================================

The eps guarantees rest on the paper's capacity constant c = 3 (``capacity_factor``); the
guide shows a worst-case proof needs c ~ 8, while c = 3 held on every stream tried. The
certified bounds (``count_bounds``, the ``uncertain`` mass returned with window digests)
hold for every c, order and merge tree.

Examples
--------
>>> sw = SlidingWindowCount(eps=0.1, time_bits=16)
>>> for t in reversed(range(5000)):          # the whole stream arrives newest-first
...     sw.update(t)
>>> lo, hi = sw.count_bounds(1000)
>>> lo <= 1000 <= hi, abs(sw.count(1000) - 1000) <= 0.1 * 1000
(True, True)
>>> q = SlidingWindowQDigest(universe=256, eps=0.1, time_bits=16)
>>> for t in range(3000):
...     q.update(t % 256, t)
>>> abs(q.quantile(0.5, 512) - 127) <= 0.1 * 256
True
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from windowagg._backend import Backend, resolve_backend
from windowagg.errors import ArgumentError
from windowagg.sketches import _format
from windowagg.sketches._sliding_core import MAX_WEIGHT, _as_list
from windowagg.sketches._sliding_state import _SlidingWindowBase
from windowagg.sketches.sliding_qdigest import SlidingWindowQDigest

__all__ = ["SlidingWindowCount", "SlidingWindowQDigest"]


class SlidingWindowCount(_SlidingWindowBase):
    """Approximate count of an out-of-order stream over any window (Theorem 1).

    Parameters
    ----------
    eps : float
        Relative accuracy in (0, 1): |count(w) - D_w| <= eps * D_w.
    time_bits : int
        LT: timestamps are ints in [0, 2**LT) (rebase epoch timestamps to shrink it).
    max_window : int, optional
        Largest window a query may use; older items are dropped and their nodes pruned.
    capacity_factor : float
        c in kappa = ceil(c * LT / eps) (the paper's 3; ~8 for the worst-case proof).
    backend : {"auto", "native", "python"}, optional
        The implementation (:mod:`windowagg._backend`): the compiled twin
        (``_native/include/windowagg/sliding_window.hpp``, held in ``_nat``) or this
        class's own buffer and dicts, the readable reference. Both hold the same items,
        nodes and floats, give the same answers and write the same bytes; the default
        follows ``$WINDOWAGG_BACKEND``. The decayed queries read the twin's state into the
        reference (O(space), as the queries themselves).
    """

    __slots__ = ()

    def __init__(
        self,
        eps: float,
        time_bits: int = 32,
        *,
        max_window: int | None = None,
        capacity_factor: float = 3.0,
        backend: Backend | None = None,
    ) -> None:
        self._init(eps, time_bits, max_window, capacity_factor, 1.0, None)
        self._make_native(backend)

    def __repr__(self) -> str:
        return (
            f"SlidingWindowCount(eps={self._eps}, time_bits={self._LT}, n={self.total_weight}, "
            f"levels={self.num_levels})"
        )

    def update(self, t: int, weight: int = 1) -> None:
        """Count *weight* (an int >= 1) items at timestamp *t*. O(J log LT) amortized.

        A bad timestamp or weight raises before anything changes.
        """
        if type(t) is not int or not 0 <= t < self._tbase:
            t = self._bad_time(t)
        if type(weight) is not int or not 1 <= weight <= MAX_WEIGHT:
            weight = self._bad_int_weight(weight)
        if self._nat is not None:
            self._nat.update(t, weight)  # checks the total first
            return
        self._add(0, t, weight)

    def update_many(self, ts: Iterable[int], weights: Iterable[int] | None = None) -> None:
        """:meth:`update` for each timestamp, validated first (nothing changes on error).

        The array verb: numpy integer arrays of timestamps (and weights) go to the native
        twin in one call, which runs without the GIL. O(b log b + J b).
        """
        if self._nat is not None and self._update_many_native(
            ((ts, 0, self._tbase - 1), (weights, 1, MAX_WEIGHT))
        ):
            return
        tl = [
            self._bad_time(t) if type(t) is not int or not 0 <= t < self._tbase else t
            for t in _as_list(ts)
        ]
        wl = (
            [1] * len(tl)
            if weights is None
            else [self._bad_int_weight(w) for w in _as_list(weights)]
        )
        if len(wl) != len(tl):
            raise ArgumentError(f"{len(tl)} timestamps but {len(wl)} weights")
        if self._nat is not None:
            import numpy as np

            self._nat.update_many(
                np.array(tl, dtype=np.int64), None if weights is None else np.array(wl, np.int64)
            )
            return
        self._update_many_items([0] * len(tl), tl, wl)

    def merge(self, other: SlidingWindowCount) -> None:
        """Add *other* (same parameters). O(space). Certified bounds stay valid; the eps
        guarantee degrades to about k*eps for a k-way merge (see docs/sketches.md)."""
        self._merge_base(other)

    def decayed_count(
        self, decay: Callable[[float], float], t: int | None = None, horizon: int | None = None
    ) -> float:
        """sum_i g(t - t_i) over ages < horizon, for any non-increasing g (Theorem 5).

        Error <= eps * D_g; ``decayed_count_bounds`` gives certified bounds. O(space).
        """
        lo, hi = self.decayed_count_bounds(decay, t, horizon)
        return (lo + hi) / 2

    def decayed_count_bounds(
        self, decay: Callable[[float], float], t: int | None = None, horizon: int | None = None
    ) -> tuple[float, float]:
        """Certified (lo, hi) around the decayed count (Theorem 5). O(space)."""
        return self._decayed_count_bounds(decay, t, horizon)

    def to_bytes(self) -> bytes:
        """Serialize as :mod:`windowagg.codec` bytes (tag ``windowagg.SlidingWindowCount``). O(space)."""
        return _format.dumps(self)

    @classmethod
    def from_bytes(cls, data: bytes, *, backend: Backend | None = None) -> SlidingWindowCount:
        """Rebuild from :meth:`to_bytes` of either backend (or layout 2 / ``WASK`` bytes) on
        *backend*; CodecError on malformed bytes, on both backends. O(space log space)."""
        s = _format.loads(cls, data, _format.KIND_SW_COUNT, cls._read)
        if backend is not None:
            s._become(resolve_backend(backend, "SlidingWindowCount"))
        return s

    def _to_codec(self) -> tuple[Any, ...]:
        return _format.to_plain(self._write, _format.SLIDING_VERSION)

    @classmethod
    def _from_codec(cls, plain: Any) -> SlidingWindowCount:
        return _format.from_plain(
            plain, _format.KIND_SW_COUNT, cls._read, "SlidingWindowCount", _format.SLIDING_LAYOUTS
        )

    @classmethod
    def _read(cls, r: _format.Reader) -> SlidingWindowCount:
        eps, LT, cf, W, U, merged = cls._read_header(r)
        if U != 0:
            raise r.fail("a count summary has no universe")
        s = cls(eps, LT, max_window=W, capacity_factor=cf, backend="python")
        s._read_state(r, merged)
        s._become(resolve_backend(None, "SlidingWindowCount"))  # the twin checks it again
        return s
