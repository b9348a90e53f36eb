"""SlidingWindowQDigest: ranks, quantiles and heavy hitters over any window of an
out-of-order stream (Theorem 2, Corollary 1, section 5.1). Fact card: ``sliding_window.py``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from windowagg._backend import Backend, resolve_backend
from windowagg.errors import ArgumentError, ArgumentTypeError, EmptyWindowError
from windowagg.sketches import _format
from windowagg.sketches._qdigest_queries import _check_phi
from windowagg.sketches._sliding_core import MAX_WEIGHT, _as_list
from windowagg.sketches._sliding_state import _SlidingWindowBase
from windowagg.sketches.qdigest import QDigest

__all__ = ["SlidingWindowQDigest"]


class SlidingWindowQDigest(_SlidingWindowBase):
    """Ranks, quantiles and heavy hitters over any window of an out-of-order stream.

    Theorem 2 / Corollary 1 (defer-merge), plus any decay via Theorem 5.

    Parameters
    ----------
    universe : int
        Keys are ints in [0, universe) (see ``ValueMapper`` for real values).
    eps : float
        Accuracy (see the fact card for the bounds).
    time_bits, max_window, capacity_factor : as :class:`SlidingWindowCount`.
    backend : {"auto", "native", "python"}, optional
        As :class:`SlidingWindowCount`: the compiled twin or the reference, the same state,
        answers and bytes. The twin takes universes up to 2**62 (a larger one stays on the
        reference unless ``"native"`` is asked for: ArgumentError). The window and decayed
        queries read the twin's state into the reference (O(space), as the queries).
    """

    __slots__ = ()

    def __init__(
        self,
        universe: int,
        eps: float,
        time_bits: int = 32,
        *,
        max_window: int | None = None,
        capacity_factor: float = 3.0,
        backend: Backend | None = None,
    ) -> None:
        self._init(eps, time_bits, max_window, capacity_factor, 0.5, universe)
        self._make_native(backend)

    @property
    def universe(self) -> int:
        """U: keys lie in [0, U)."""
        return self._U

    def __repr__(self) -> str:
        return (
            f"SlidingWindowQDigest(universe={self._U}, eps={self._eps}, time_bits={self._LT}, "
            f"n={self.total_weight}, levels={self.num_levels})"
        )

    def update(self, x: int, t: int, weight: int = 1) -> None:
        """Add key *x* at timestamp *t* with *weight* (int >= 1). O(J (log LT + 1)) amortized.

        A bad key, timestamp or weight raises before anything changes.
        """
        if type(x) is not int or not 0 <= x < self._U:
            x = self._bad_key(x)
        if type(t) is not int or not 0 <= t < self._tbase:
            t = self._bad_time(t)
        if type(weight) is not int or not 1 <= weight <= MAX_WEIGHT:
            weight = self._bad_int_weight(weight)
        if self._nat is not None:
            self._nat.update(x, t, weight)  # checks the total first
            return
        self._add(x, t, weight)

    def _bad_key(self, x: Any) -> int:
        if isinstance(x, bool) or not hasattr(x, "__index__"):
            raise ArgumentTypeError(f"key must be an int in [0, {self._U}), got {x!r}")
        xi = int(x.__index__())
        if not 0 <= xi < self._U:
            raise ArgumentError(f"key {xi} is outside the universe [0, {self._U})")
        return xi

    def update_many(
        self, xs: Iterable[int], ts: Iterable[int], weights: Iterable[int] | None = None
    ) -> None:
        """:meth:`update` for each (key, timestamp), validated first (nothing changes on error).

        The array verb: numpy integer arrays go to the native twin in one call, which runs
        without the GIL. O(b log b + J b).
        """
        if self._nat is not None and self._update_many_native(
            ((xs, 0, self._U - 1), (ts, 0, self._tbase - 1), (weights, 1, MAX_WEIGHT))
        ):
            return
        xl = [
            self._bad_key(x) if type(x) is not int or not 0 <= x < self._U else x
            for x in _as_list(xs)
        ]
        tl = [
            self._bad_time(t) if type(t) is not int or not 0 <= t < self._tbase else t
            for t in _as_list(ts)
        ]
        wl = (
            [1] * len(tl)
            if weights is None
            else [self._bad_int_weight(w) for w in _as_list(weights)]
        )
        if not len(xl) == len(tl) == len(wl):
            raise ArgumentError("keys, timestamps and weights differ in length")
        if self._nat is not None:
            import numpy as np

            self._nat.update_many(
                np.array(xl, np.int64),
                np.array(tl, np.int64),
                None if weights is None else np.array(wl, np.int64),
            )
            return
        self._update_many_items(xl, tl, wl)

    def merge(self, other: SlidingWindowQDigest) -> None:
        """Add *other* (same parameters). O(space). See :meth:`SlidingWindowCount.merge`."""
        self._merge_base(other)

    def count_bounds(self, w: int, t: int | None = None) -> tuple[float, float]:
        """Certified (lo, hi) around D_w. O(space). (Time error here is <= eps*D_w/2.)"""
        return super().count_bounds(w, t)

    def window_digest(self, w: int, t: int | None = None) -> tuple[QDigest, float]:
        """(digest of the items surely inside window w, uncertain mass). O(space).

        The digest holds every item of the window except those charged to time nodes that
        straddle the window's start; their total weight is the second value (<= eps*D_w/2).
        """
        if self._nat is not None:  # O(space), as the query: on the reference's state
            ref: SlidingWindowQDigest = self._python_twin()
            return ref.window_digest(w, t)
        t, tau = self._query_tau(w, t)
        d = QDigest(self._U, self._veps, backend="python")
        nodes = d._nodes
        vbase = self._vbase
        n = 0.0
        if tau >= self._tau0:
            for T, x, ww in self._B:
                if tau < T:
                    nodes[vbase + x] = nodes.get(vbase + x, 0.0) + ww
                    n += ww
            d._n = n
            return d, 0.0
        for _, x, ww in self._B:
            nodes[vbase + x] = nodes.get(vbase + x, 0.0) + ww
            n += ww
        inside, unc, lv = self._window_nodes(tau)
        if lv is not None:
            assert lv.val is not None
            for node in inside:
                for k, v in lv.val[node].items():
                    nodes[k] = nodes.get(k, 0.0) + v
                n += lv.cnt[node]
        d._n = n
        if len(nodes) > d._cap:
            d.compress()
        return d, unc

    def rank(self, x: int, w: int, t: int | None = None) -> float:
        """Estimated weight of window items with key <= x; error <= eps*D_w. O(space)."""
        lo, hi = self.rank_bounds(x, w, t)
        return (lo + hi) / 2

    def rank_bounds(self, x: int, w: int, t: int | None = None) -> tuple[float, float]:
        """Certified (lo, hi) around the window weight of keys <= x. O(space)."""
        d, unc = self.window_digest(w, t)
        lo, hi = d.rank_bounds(x)
        return lo, hi + unc

    def range_count(self, lo: int, hi: int, w: int, t: int | None = None) -> float:
        """Estimated window weight of keys in [lo, hi]; error <= 2 eps D_w. O(space)."""
        d, unc = self.window_digest(w, t)
        return d.range_count(lo, hi) + unc / 2

    def quantile(self, phi: float, w: int, t: int | None = None) -> int:
        """phi-quantile q of window w: W_w(< q) <= (phi+eps)D_w, W_w(<= q) >= (phi-eps)D_w.

        Raises EmptyWindowError when the window holds nothing certain. O(space).
        """
        phi = _check_phi(phi)
        d, _ = self.window_digest(w, t)
        if d.is_empty():
            raise EmptyWindowError(f"window {w} holds no items; widen it or add items")
        return d.quantile(phi)

    def heavy_hitters(self, phi: float, w: int, t: int | None = None) -> list[tuple[int, float]]:
        """(key, estimate) for window w: all f >= (phi+eps)D_w, none < (phi-eps)D_w. O(space)."""
        phi = _check_phi(phi)
        d, unc = self.window_digest(w, t)
        return _hh_with_uncertainty(d, unc, phi)

    # -------------------------------------------------- Theorem 5: any decay
    def decayed_digest(
        self, decay: Callable[[float], float], t: int | None = None, horizon: int | None = None
    ) -> tuple[QDigest, float]:
        """(digest of decayed weights g(t - t_i) over ages < horizon, uncertain mass).

        Any non-increasing g with g(0) = 1, even one chosen now (Theorem 5): the decayed sum
        is a non-negative combination of window sums. Ranks, quantiles and heavy hitters of
        the digest are within eps * D_g of the decayed truth. O(space).
        """
        if self._nat is not None:  # O(space), as the query: on the reference's state
            ref: SlidingWindowQDigest = self._python_twin()
            return ref.decayed_digest(decay, t, horizon)
        t, horizon = self._decay_args(decay, t, horizon)
        pieces, unc = self._decayed_pieces(decay, t, horizon)
        d = QDigest(self._U, self._veps, backend="python")
        nodes = d._nodes
        n = 0.0
        vbase = self._vbase
        for T, x, ww in sorted(self._B):  # canonical order: the floats' sums
            a = t - T
            if a < horizon:
                g = ww * decay(a)
                if g > 0:
                    nodes[vbase + x] = nodes.get(vbase + x, 0.0) + g
                    n += g
        for wgt, lv, node in pieces:
            assert lv.val is not None
            vd = lv.val[node]
            c = lv.cnt[node]
            for k, v in vd.items():
                nodes[k] = nodes.get(k, 0.0) + v * wgt
            n += c * wgt
        d._n = n
        if len(nodes) > d._cap:
            d.compress()
        return d, unc

    def decayed_count(
        self, decay: Callable[[float], float], t: int | None = None, horizon: int | None = None
    ) -> float:
        """D_g = sum_i g(t - t_i) over ages < horizon, error <= eps*D_g (Theorem 5). O(space)."""
        lo, hi = self._decayed_count_bounds(decay, t, horizon)
        return (lo + hi) / 2

    def decayed_quantile(
        self,
        phi: float,
        decay: Callable[[float], float],
        t: int | None = None,
        horizon: int | None = None,
    ) -> int:
        """Decayed phi-quantile: W_g(< q) <= (phi+eps)D_g, W_g(<= q) >= (phi-eps)D_g. O(space)."""
        phi = _check_phi(phi)
        d, _ = self.decayed_digest(decay, t, horizon)
        if d.is_empty():
            raise EmptyWindowError("no item carries positive decayed weight")
        return d.quantile(phi)

    def decayed_heavy_hitters(
        self,
        phi: float,
        decay: Callable[[float], float],
        t: int | None = None,
        horizon: int | None = None,
    ) -> list[tuple[int, float]]:
        """Decayed heavy hitters: all f_g >= (phi+eps)D_g, none < (phi-eps)D_g. O(space)."""
        phi = _check_phi(phi)
        d, unc = self.decayed_digest(decay, t, horizon)
        return _hh_with_uncertainty(d, unc, phi)

    def to_bytes(self) -> bytes:
        """Serialize as :mod:`windowagg.codec` bytes (tag ``windowagg.SlidingWindowQDigest``). O(space)."""
        return _format.dumps(self)

    @classmethod
    def from_bytes(cls, data: bytes, *, backend: Backend | None = None) -> SlidingWindowQDigest:
        """Rebuild from :meth:`to_bytes` of either backend (or layout 2 / ``WASK`` bytes) on
        *backend*; CodecError on malformed bytes, on both backends. O(space log space)."""
        s = _format.loads(cls, data, _format.KIND_SW_QDIGEST, cls._read)
        if backend is not None:
            s._become(resolve_backend(backend, "SlidingWindowQDigest"))
        return s

    def _to_codec(self) -> tuple[Any, ...]:
        return _format.to_plain(self._write, _format.SLIDING_VERSION)

    @classmethod
    def _from_codec(cls, plain: Any) -> SlidingWindowQDigest:
        return _format.from_plain(
            plain,
            _format.KIND_SW_QDIGEST,
            cls._read,
            "SlidingWindowQDigest",
            _format.SLIDING_LAYOUTS,
        )

    @classmethod
    def _read(cls, r: _format.Reader) -> SlidingWindowQDigest:
        eps, LT, cf, W, U, merged = cls._read_header(r)
        if U < 2:
            raise r.fail(f"bad universe {U}")
        s = cls(U, eps, LT, max_window=W, capacity_factor=cf, backend="python")
        s._read_state(r, merged)
        s._become(resolve_backend(None, "SlidingWindowQDigest"))  # the twin checks it again
        return s


def _hh_with_uncertainty(d: QDigest, unc: float, phi: float) -> list[tuple[int, float]]:
    """Report x when its midpoint frequency reaches phi times the midpoint total."""
    if d.is_empty():
        return []
    nodes = d._nodes
    base = d._base
    d_hat = d.total_weight + unc / 2
    out = []
    for node, c in nodes.items():
        if node < base:
            continue
        s = 0.0
        p = node >> 1
        while p:
            s += nodes.get(p, 0.0)
            p >>= 1
        f_hat = c + (s + unc) / 2
        if f_hat >= phi * d_hat:
            out.append((node - base, f_hat))
    out.sort(key=lambda kv: (-kv[1], kv[0]))
    return out
