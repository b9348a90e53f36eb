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

import heapq
import math
from collections.abc import Callable, Iterable
from typing import Any

from windowagg._invariants import invariant
from windowagg.errors import ArgumentError, ArgumentTypeError, EmptyWindowError, TimestampError
from windowagg.sketches import _format
from windowagg.sketches.qdigest import QDigest, _check_phi, _compress_dict

__all__ = ["SlidingWindowCount", "SlidingWindowQDigest"]


class _Level:
    """One fill-then-descend q-digest over time (threshold theta, truncated to kappa nodes)."""

    __slots__ = ("cnt", "exact", "last", "tau", "theta", "val")

    def __init__(self, theta: float, values: bool) -> None:
        self.theta = theta
        self.cnt: dict[int, float] = {}
        self.val: dict[int, dict[int, float]] | None = {} if values else None
        self.tau = -1
        self.exact = True  # built by fill-then-descend alone (not cloned, not merged)
        self.last = 0  # node of the previous placement (a hint; 0 = none)

    def clone(self, theta: float) -> _Level:
        lv = _Level(theta, self.val is not None)
        lv.cnt = dict(self.cnt)
        if self.val is not None:
            lv.val = {k: dict(v) for k, v in self.val.items()}
        lv.tau = self.tau
        lv.exact = False
        return lv


class _SlidingWindowBase:
    __slots__ = (
        "_B",
        "_Bw",
        "_LT",
        "_LU",
        "_U",
        "_W",
        "_cf",
        "_eps",
        "_kappa",
        "_levels",
        "_merged",
        "_n",
        "_tau0",
        "_tbase",
        "_theta0",
        "_tmax",
        "_top_n",
        "_values",
        "_vbase",
        "_vcap",
        "_veps",
    )

    def _init(
        self,
        eps: float,
        time_bits: int,
        max_window: int | None,
        capacity_factor: float,
        theta0: float,
        universe: int | None,
    ) -> None:
        if not isinstance(eps, (int, float)) or not 0.0 < eps < 1.0:
            raise ArgumentError(f"eps must be a number in (0, 1), got {eps!r}")
        if (
            isinstance(time_bits, bool)
            or not isinstance(time_bits, int)
            or not 1 <= time_bits <= 62
        ):
            raise ArgumentError(f"time_bits must be an int in [1, 62], got {time_bits!r}")
        if max_window is not None and (
            isinstance(max_window, bool) or not isinstance(max_window, int) or max_window < 1
        ):
            raise ArgumentError(f"max_window must be None or an int >= 1, got {max_window!r}")
        if not isinstance(capacity_factor, (int, float)) or not capacity_factor > 0:
            raise ArgumentError(f"capacity_factor must be > 0, got {capacity_factor!r}")
        self._eps = float(eps)
        self._LT = time_bits
        self._tbase = 1 << time_bits
        self._cf = float(capacity_factor)
        self._kappa = max(2, math.ceil(capacity_factor * time_bits / eps))
        self._W = max_window
        self._B: list[tuple[int, int, int]] = []
        self._Bw = 0
        self._tau0 = -1
        self._levels: list[_Level] = []
        self._top_n = 0
        self._tmax = -1
        self._n = 0
        self._theta0 = theta0  # theta_j = theta0 * 2**j
        self._values = universe is not None
        self._merged = False
        if universe is not None:
            q = QDigest(universe, eps)  # validates the universe
            self._U = universe
            self._LU = q.universe_bits
            self._vbase = 1 << self._LU
            self._veps = self._eps
            self._vcap = math.ceil(6 * self._LU / self._veps) + 1
        else:
            self._U = 0
            self._LU = 0
            self._vbase = 0
            self._veps = self._eps
            self._vcap = 0

    # ------------------------------------------------------------------ facts
    @property
    def eps(self) -> float:
        """The accuracy parameter."""
        return self._eps

    @property
    def kappa(self) -> int:
        """Buffer size and per-level node capacity: ceil(capacity_factor * time_bits / eps)."""
        return self._kappa

    @property
    def time_bits(self) -> int:
        """LT: timestamps lie in [0, 2**LT)."""
        return self._LT

    @property
    def max_window(self) -> int | None:
        """The largest window a query may ask for (None: unbounded)."""
        return self._W

    @property
    def total_weight(self) -> int:
        """Weight of every item ever added. O(1)."""
        return self._n

    @property
    def num_levels(self) -> int:
        """Materialized levels J. O(1)."""
        return len(self._levels)

    @property
    def size(self) -> int:
        """Stored time nodes + buffered items (+ value nodes for SlidingWindowQDigest). O(J kappa)."""
        s = len(self._B) + sum(len(lv.cnt) for lv in self._levels)
        if self._values:
            for lv in self._levels:
                assert lv.val is not None
                s += sum(len(v) for v in lv.val.values())
        return s

    @property
    def max_timestamp(self) -> int | None:
        """Largest timestamp seen (the default query time), None when empty."""
        return None if self._tmax < 0 else self._tmax

    # ---------------------------------------------------------------- updates
    def _bad_time(self, t: Any) -> int:
        if isinstance(t, bool) or not hasattr(t, "__index__"):
            raise TimestampError(
                f"sliding-window timestamps must be ints in [0, 2**{self._LT}), got {t!r} "
                f"({type(t).__name__}); rebase or scale timestamps to integers"
            )
        ti = int(t.__index__())
        if not 0 <= ti < self._tbase:
            raise TimestampError(
                f"timestamp {ti} outside [0, 2**{self._LT}); raise time_bits or rebase timestamps"
            )
        return ti

    @staticmethod
    def _bad_int_weight(w: Any) -> int:
        if isinstance(w, bool) or not hasattr(w, "__index__"):
            if isinstance(w, float) and w.is_integer() and w >= 1:
                return int(w)
            raise ArgumentTypeError(
                f"sliding-window weights are multiplicities: ints >= 1, got {w!r}"
            )
        wi = int(w.__index__())
        if wi < 1:
            raise ArgumentError(f"sliding-window weights must be ints >= 1, got {wi}")
        return wi

    def _add(self, x: int, t: int, w: int) -> None:
        if t > self._tmax:
            self._tmax = t
        self._n += w
        if t < self._tau0:  # older than an evicted item: it belongs to the levels directly
            self._evict_run([(t, x, w)])
            return
        B = self._B
        heapq.heappush(B, (t, x, w))
        self._Bw += w
        if len(B) > 2 * self._kappa:
            self._flush()

    def _flush(self) -> None:
        """Evict the oldest items until B holds kappa, and hand them to the levels at once.

        B holds between kappa and 2 kappa of the latest items (more than the paper's kappa
        only makes more windows exact); evicting in runs amortizes the level loop.
        """
        B = self._B
        pop = heapq.heappop  # cached: called once per evicted item
        out = [pop(B) for _ in range(len(B) - self._kappa)]
        if not out:
            return
        self._Bw -= sum(w for _, _, w in out)
        if self._tau0 < out[-1][0]:
            self._tau0 = out[-1][0]
        self._evict_run(out)

    def _evict_run(self, items: list[tuple[int, int, int]]) -> None:
        """Hand a run of evicted items (ascending time) to every level, level by level.

        Only levels up to the first one that never discarded are kept (the top level):
        queries never use a level above it. When the top level must discard for the first
        time it is first cloned into the next level, compressed with the doubled threshold
        (the guide's lazy-level note: valid, with a lower fullness until the clone's
        nodes age out). Items at or before ``max_timestamp - max_window`` are dropped.
        """
        W = self._W
        if W is not None:
            cut = self._tmax - W
            items = [it for it in items if it[0] > cut]
            if not items:
                return
        levels = self._levels
        if not levels:
            levels.append(_Level(self._theta0 * 2, self._values))
        two_kappa = 2 * self._kappa
        LT = self._LT
        tbase = self._tbase
        vbase = self._vbase
        vcap = self._vcap
        starts = {0: 0}
        i = 0
        while i < len(levels):
            lv = levels[i]
            # per-level state in locals: this loop is the sliding window's hot path
            cnt = lv.cnt
            val = lv.val
            th = lv.theta
            last = lv.last
            w: float
            for k in range(starts.get(i, 0), len(items)):
                T, x, wi = items[k]
                w = wi
                if lv.tau >= T:
                    continue  # the level no longer represents time T
                # fill-then-descend: add w along the path of leaf T, <= theta per non-leaf
                leaf = tbase + T
                d = last.bit_length() - 1
                if (
                    last
                    and (leaf >> (LT - d)) == last
                    and last in cnt
                    and 2 * last not in cnt
                    and 2 * last + 1 not in cnt
                ):
                    node = last  # the previous placement's node is still the deepest
                elif 1 not in cnt:
                    cnt[1] = 0.0
                    if val is not None:
                        val[1] = {}
                    d = 0
                    node = 1
                else:  # deepest present ancestor: presence is upward-closed along the path
                    lo, hi = 0, LT
                    while lo < hi:
                        mid = (lo + hi + 1) >> 1
                        if (leaf >> (LT - mid)) in cnt:
                            lo = mid
                        else:
                            hi = mid - 1
                    d = lo
                    node = leaf >> (LT - d)
                while True:
                    c = cnt[node]
                    room = th - c
                    if d == LT or room >= w:
                        cnt[node] = c + w
                        last = node
                        if val is not None:
                            vd = val[node]
                            vleaf = vbase + x
                            vd[vleaf] = vd.get(vleaf, 0.0) + w
                            if len(vd) > vcap:
                                _compress_dict(vd, self._veps * (c + w) / self._LU, self._LU)
                        break
                    if room > 0:
                        cnt[node] = th
                        if val is not None:
                            self._vadd(val[node], th, x, room)
                        w -= room
                    d += 1
                    node = leaf >> (LT - d)
                    if node not in cnt:
                        cnt[node] = 0.0
                        if val is not None:
                            val[node] = {}
                if len(cnt) > two_kappa:
                    lv.last = last
                    n_before = len(levels)
                    self._truncate_level(i)
                    if len(levels) > n_before:  # the clone already holds items[: k + 1]
                        starts[i + 1] = k + 1
            lv.last = last
            i += 1
        self._top_n += sum(it[2] for it in items)

    def _vadd(self, vd: dict[int, float], total: float, x: int, w: float) -> None:
        leaf = self._vbase + x
        vd[leaf] = vd.get(leaf, 0.0) + w
        if len(vd) > self._vcap:
            _compress_dict(vd, self._veps * total / self._LU, self._LU)

    def _hi(self, node: int) -> int:
        d = node.bit_length() - 1
        shift = self._LT - d
        return ((node - (1 << d) + 1) << shift) - 1

    def _lo(self, node: int) -> int:
        d = node.bit_length() - 1
        return (node - (1 << d)) << (self._LT - d)

    def _truncate_level(self, i: int) -> None:
        """Truncate level i; if it is the top level, first clone it into level i + 1."""
        levels = self._levels
        lv = levels[i]
        if i == len(levels) - 1:
            if self._W is not None:  # pruning alone may be enough for the top level
                self._drop_upto(lv, self._tmax - self._W)
                if len(lv.cnt) <= 2 * self._kappa:
                    return
            nxt = lv.clone(lv.theta * 2)
            self._compress_level(nxt)
            levels.append(nxt)
        self._truncate(lv)

    def _compress_level(self, lv: _Level) -> None:
        """Fold childless sibling pairs into their parent while the sum <= theta. O(k + LT)."""
        cnt = lv.cnt
        val = lv.val
        th = lv.theta
        by_depth: list[list[int]] = [[] for _ in range(self._LT + 1)]
        for node in cnt:
            by_depth[node.bit_length() - 1].append(node)
        for depth in range(self._LT, 0, -1):
            for node in by_depth[depth]:
                c = cnt.get(node)
                if c is None or 2 * node in cnt or 2 * node + 1 in cnt:
                    continue
                sib = node ^ 1
                sc = cnt.get(sib)
                if sc is not None and (2 * sib in cnt or 2 * sib + 1 in cnt):
                    continue
                par = node >> 1
                tot = cnt[par] + c + (sc or 0.0)
                if tot <= th:
                    cnt[par] = tot
                    del cnt[node]
                    if sc is not None:
                        del cnt[sib]
                    if val is not None:
                        pv = val[par]
                        srcs = [val.pop(node)]
                        if sc is not None:
                            srcs.append(val.pop(sib))
                        for src in srcs:
                            for k, v in src.items():
                                pv[k] = pv.get(k, 0.0) + v
                        if len(pv) > self._vcap:
                            _compress_dict(pv, self._veps * tot / self._LU, self._LU)

    def _truncate(self, lv: _Level) -> None:
        """Keep the kappa most recent ranges (post-order); raise tau to the cut. O(k log k)."""
        cnt = lv.cnt
        LT = self._LT
        keyed = []
        for node in cnt:
            d = node.bit_length() - 1
            shift = LT - d
            keyed.append((((node - (1 << d) + 1) << shift) - 1, shift, node))
        keyed.sort()
        tau = lv.tau
        if len(keyed) > self._kappa:
            tau = max(tau, keyed[len(keyed) - self._kappa - 1][0])
        if self._W is not None:
            tau = max(tau, self._tmax - self._W)
        if tau <= lv.tau:
            return
        lv.tau = tau
        val = lv.val
        for hi, _, node in keyed:  # post-order: every node ending at or before tau comes first
            if hi > tau:
                break
            del cnt[node]
            if val is not None:
                del val[node]

    def _drop_upto(self, lv: _Level, tau: int) -> None:
        """Raise lv.tau to tau and delete every node ending at or before it. O(k)."""
        if tau <= lv.tau:
            return
        cnt = lv.cnt
        lv.tau = tau
        hi_of = self._hi
        dead = [node for node in cnt if hi_of(node) <= tau]
        for node in dead:
            del cnt[node]
            if lv.val is not None:
                del lv.val[node]

    def _update_many_items(self, xs: list[int], ts: list[int], ws: list[int]) -> None:
        """Batch insert (validated input): items older than tau0 go straight to the levels,
        the rest join B at once; B is then trimmed to kappa in one run. O(b log b + J b)."""
        if not ts:
            return
        tau0 = self._tau0
        late = []
        fresh = []
        for x, t, w in zip(xs, ts, ws, strict=True):
            if t < tau0:
                late.append((t, x, w))
            else:
                fresh.append((t, x, w))
        tmax = max(ts)
        if tmax > self._tmax:
            self._tmax = tmax
        self._n += sum(ws)
        if late:
            late.sort()
            self._evict_run(late)
        if fresh:
            B = self._B
            B.extend(fresh)
            heapq.heapify(B)
            self._Bw += sum(w for _, _, w in fresh)
            if len(B) > 2 * self._kappa:
                self._flush()

    # ---------------------------------------------------------------- queries
    def _query_tau(self, w: int, t: int | None) -> tuple[int, int]:
        if t is None:
            t = max(self._tmax, 0)
        elif isinstance(t, bool) or not hasattr(t, "__index__"):
            raise TimestampError(f"query time must be an int, got {t!r}")
        t = int(t)
        if t < self._tmax:
            raise ArgumentError(
                f"query time {t} is before the largest timestamp seen ({self._tmax}); "
                "windows end at or after every item (pass t >= max_timestamp or omit it)"
            )
        if isinstance(w, bool) or not isinstance(w, int) or w < 1:
            raise ArgumentError(f"window size must be an int >= 1, got {w!r}")
        if self._W is not None and w > self._W:
            raise ArgumentError(f"window {w} exceeds max_window={self._W}")
        return t, max(t - w, -1)

    def _pick_level(self, tau: int) -> _Level | None:
        for lv in self._levels:
            if lv.tau <= tau:
                return lv
        return None  # only when nothing reached the levels

    def _window_nodes(self, tau: int) -> tuple[list[int], float, _Level | None]:
        """(time nodes inside (tau, oo), straddling mass, level) for tau < tau0."""
        lv = self._pick_level(tau)
        if lv is None:  # nothing answers (no level yet): all level mass is uncertain
            return [], float(self._top_n), None
        inside = []
        unc = 0.0
        lo_of, hi_of = self._lo, self._hi
        for node, c in lv.cnt.items():
            if lo_of(node) > tau:
                inside.append(node)
            elif hi_of(node) > tau:
                unc += c
        return inside, unc, lv

    def count_bounds(self, w: int, t: int | None = None) -> tuple[float, float]:
        """Certified (lo, hi) around D_w, the weight with timestamps in (t - w, t]. O(space).

        Exact (lo == hi) when t - w >= tau0 (the window lies inside the buffer).
        *t* defaults to the largest timestamp seen; it may not be earlier.
        """
        t, tau = self._query_tau(w, t)
        if tau >= self._tau0:
            s = sum(ww for T, _, ww in self._B if tau < T)
            return float(s), float(s)
        inside, unc, lv = self._window_nodes(tau)
        low = float(self._Bw)
        if lv is not None:
            cnt = lv.cnt
            low += math.fsum(cnt[node] for node in inside)
        return low, low + unc

    def count(self, w: int, t: int | None = None) -> float:
        """Estimate of D_w with |count - D_w| <= eps*D_w (Theorem 1). O(space)."""
        lo, hi = self.count_bounds(w, t)
        return (lo + hi) / 2

    # -------------------------------------------------- Theorem 5: any decay
    def _decayed_pieces(
        self, g: Callable[[float], float], t: int, horizon: int
    ) -> tuple[list[tuple[float, _Level, int]], float]:
        """Per time node weights for the decayed combination of windows 1..horizon.

        Returns ([(weight, level, node)], uncertain mass). Windows w in [w1, w2] together
        carry G(w1) - G(w2 + 1), with G(w) = g(w - 1) for w <= horizon and G(horizon+1) = 0.
        """

        def G(w: int) -> float:
            return g(w - 1) if w <= horizon else 0.0

        out: list[tuple[float, _Level, int]] = []
        unc = 0.0
        tau_low = max(t - horizon, -1)
        tau_high = self._tau0 - 1  # windows with tau >= tau0 are answered from B alone
        if tau_high < tau_low:
            return out, unc
        cuts = sorted({lv.tau for lv in self._levels if tau_low < lv.tau <= tau_high} | {tau_low})
        for i, ta in enumerate(cuts):
            tb = cuts[i + 1] - 1 if i + 1 < len(cuts) else tau_high
            w_hi = horizon if ta == -1 else t - ta
            lv = self._pick_level(ta)
            if lv is None:  # no level answers: the level mass of these windows is uncertain
                unc += self._top_n * (G(t - tb) - G(w_hi + 1))
                continue
            for node, c in lv.cnt.items():
                lo = self._lo(node)
                hi = self._hi(node)
                # inside for tau in [ta, min(tb, lo - 1)]
                top = min(tb, lo - 1)
                if top >= ta:
                    wgt = G(t - top) - G(w_hi + 1)
                    if wgt > 0:
                        out.append((wgt, lv, node))
                # straddling for tau in [max(ta, lo), min(tb, hi - 1)]
                s_lo, s_hi = max(ta, lo), min(tb, hi - 1)
                if s_hi >= s_lo:
                    w1 = t - s_hi
                    w2 = horizon if s_lo == -1 else t - s_lo
                    unc += c * (G(w1) - G(min(w2, horizon) + 1))
        return out, unc

    def _decayed_count_bounds(
        self, g: Callable[[float], float], t: int | None, horizon: int | None
    ) -> tuple[float, float]:
        t, horizon = self._decay_args(g, t, horizon)
        pieces, unc = self._decayed_pieces(g, t, horizon)
        low = math.fsum(wgt * lv.cnt[node] for wgt, lv, node in pieces)
        low += math.fsum(ww * g(t - T) for T, _, ww in self._B if t - T < horizon)
        return low, low + unc

    def _decay_args(
        self, g: Callable[[float], float], t: int | None, horizon: int | None
    ) -> tuple[int, int]:
        if not callable(g):
            raise ArgumentTypeError(f"decay must be a callable g(age), got {g!r}")
        tt, _ = self._query_tau(1, t)
        if horizon is None:
            horizon = self._W if self._W is not None else tt + 1
        if isinstance(horizon, bool) or not isinstance(horizon, int) or horizon < 1:
            raise ArgumentError(f"horizon must be an int >= 1, got {horizon!r}")
        if self._W is not None and horizon > self._W:
            raise ArgumentError(f"horizon {horizon} exceeds max_window={self._W}")
        return tt, horizon

    # ---------------------------------------------------------------- checks
    def _check(self) -> None:
        """O(space) invariants; InvariantError (an AssertionError) names the broken one."""
        B = self._B
        for i in range(1, len(B)):
            invariant(
                B[(i - 1) // 2][0] <= B[i][0],
                "_SlidingWindowBase",
                f"buffer heap order broken at {i}",
            )
        invariant(
            len(B) <= 2 * self._kappa,
            "_SlidingWindowBase",
            f"buffer holds {len(B)} > 2 kappa items",
        )
        invariant(
            self._Bw == sum(w for _, _, w in B), "_SlidingWindowBase", "buffer weight out of sync"
        )
        if self._tau0 >= 0:
            invariant(
                all(self._tau0 <= T for T, _, _ in B),
                "_SlidingWindowBase",
                "buffered item at or before tau0",
            )
        levels_total = self._top_n
        if self._levels:
            never = -1 if self._W is None else max(-1, self._tmax - self._W)
            invariant(
                self._levels[-1].tau <= never,
                "_SlidingWindowBase",
                "the top level has discarded items",
            )
        for j, lv in enumerate(self._levels, start=1):
            invariant(
                lv.theta == self._theta0 * (2 << (j - 1)),
                "_SlidingWindowBase",
                f"level {j} has wrong theta",
            )
            invariant(lv.tau >= -1, "_SlidingWindowBase", f"level {j} tau {lv.tau} < -1")
            invariant(
                len(lv.cnt) <= 2 * self._kappa,
                "_SlidingWindowBase",
                f"level {j} holds {len(lv.cnt)} > 2 kappa nodes",
            )
            for node, c in lv.cnt.items():
                invariant(
                    1 <= node < 2 * self._tbase,
                    "_SlidingWindowBase",
                    f"level {j}: node {node} outside the tree",
                )
                if node > 1:
                    invariant(
                        node >> 1 in lv.cnt,
                        "_SlidingWindowBase",
                        f"level {j}: node {node} present, parent not",
                    )
                invariant(
                    self._hi(node) > lv.tau,
                    "_SlidingWindowBase",
                    f"level {j}: node {node} ends at or before tau",
                )
                invariant(
                    c >= 0, "_SlidingWindowBase", f"level {j}: node {node} has negative count"
                )
                if not self._merged and node < self._tbase:
                    invariant(
                        c <= lv.theta + 1e-9,
                        "_SlidingWindowBase",
                        f"level {j}: non-leaf {node} holds {c} > theta",
                    )
                    if lv.exact and (2 * node in lv.cnt or 2 * node + 1 in lv.cnt):
                        invariant(
                            c >= lv.theta - 1e-9,
                            "_SlidingWindowBase",
                            f"level {j}: node {node} has a child but holds {c} < theta",
                        )
                if lv.val is not None:
                    vd = lv.val[node]
                    tot = math.fsum(vd.values())
                    invariant(
                        math.isclose(tot, c, rel_tol=1e-9, abs_tol=1e-9),
                        "_SlidingWindowBase",
                        f"level {j}: value digest of node {node} holds {tot} != count {c}",
                    )
            invariant(
                math.fsum(lv.cnt.values()) <= levels_total + 1e-9,
                "_SlidingWindowBase",
                f"level {j} holds more weight than was handed to the levels",
            )
            if lv.val is not None:
                invariant(
                    set(lv.val) == set(lv.cnt),
                    "_SlidingWindowBase",
                    f"level {j}: value digests and nodes differ",
                )
        invariant(
            self._n >= self._Bw + self._top_n,
            "_SlidingWindowBase",
            "buffer + levels hold more than was added",
        )
        if self._W is None:
            invariant(
                self._n == self._Bw + self._top_n,
                "_SlidingWindowBase",
                "an item was lost between buffer and levels",
            )

    # ---------------------------------------------------------------- merge
    def _merge_base(self, other: _SlidingWindowBase) -> None:
        if type(other) is not type(self):
            raise ArgumentTypeError(
                f"can only merge a {type(self).__name__}, got {type(other).__name__}"
            )
        if (other._eps, other._LT, other._kappa, other._W, other._U) != (
            self._eps,
            self._LT,
            self._kappa,
            self._W,
            self._U,
        ):
            raise ArgumentError(
                f"cannot merge {type(self).__name__}s with different eps, time_bits, "
                "capacity, max_window or universe"
            )
        if other is self:
            raise ArgumentError("cannot merge a sliding-window summary into itself")
        if other._n == 0:
            return
        self._merged = True
        # levels: tau = max; nodes ending after tau added node-wise
        J = max(len(self._levels), len(other._levels))
        mine = [self._level_or_implicit(j) for j in range(J)]
        theirs = [other._level_or_implicit(j) for j in range(J)]
        new_levels = []
        for a, b in zip(mine, theirs, strict=False):
            lv = _Level(a.theta, self._values)
            lv.exact = False
            lv.tau = max(a.tau, b.tau)
            for src in (a, b):
                for node, c in src.cnt.items():
                    if self._hi(node) <= lv.tau:
                        continue
                    lv.cnt[node] = lv.cnt.get(node, 0.0) + c
                    if lv.val is not None:
                        assert src.val is not None
                        vd = lv.val.setdefault(node, {})
                        for k, v in src.val[node].items():
                            vd[k] = vd.get(k, 0.0) + v
            # presence must stay upward-closed: add missing ancestors with count 0
            for node in list(lv.cnt):
                p = node >> 1
                while p and p not in lv.cnt:
                    lv.cnt[p] = 0.0
                    if lv.val is not None:
                        lv.val[p] = {}
                    p >>= 1
            if lv.val is not None:
                for node, vd in lv.val.items():
                    if len(vd) > self._vcap:
                        _compress_dict(vd, self._veps * lv.cnt[node] / self._LU, self._LU)
            new_levels.append(lv)
        self._levels = new_levels
        self._top_n += other._top_n
        self._n += other._n
        self._tmax = max(self._tmax, other._tmax)
        # buffers: union, keep the kappa latest and nothing before tau0
        B = self._B + list(other._B)
        heapq.heapify(B)
        self._B = B
        self._Bw += other._Bw
        self._tau0 = max(self._tau0, other._tau0)
        run = []
        while B and (len(B) > self._kappa or B[0][0] < self._tau0):
            T, x, w = heapq.heappop(B)
            self._Bw -= w
            if self._tau0 < T:
                self._tau0 = T
            run.append((T, x, w))
        if run:
            self._evict_run(run)
        i = 0
        while i < len(self._levels):
            if len(self._levels[i].cnt) > 2 * self._kappa:
                self._truncate_level(i)
            i += 1

    def _level_or_implicit(self, j: int) -> _Level:
        """Level j, or (above the top level) the top level's contents under theta_j."""
        if j < len(self._levels):
            return self._levels[j]
        theta = self._theta0 * (2 << j)
        if not self._levels:
            return _Level(theta, self._values)
        return self._levels[-1].clone(theta)

    # ---------------------------------------------------------------- bytes
    def _write(self, w: _format.Writer) -> None:
        w.f64(self._eps)
        w.u8(self._LT)
        w.f64(self._cf)
        w.u64(0 if self._W is None else self._W)
        w.u64(self._U)
        w.u8(1 if self._merged else 0)
        w.i64(self._tau0)
        w.i64(self._tmax)
        w.u64(self._n)
        w.u64(self._top_n)
        w.u64(len(self._B))
        w.u64s([T for T, _, _ in self._B])
        w.u64s([x for _, x, _ in self._B])
        w.u64s([ww for _, _, ww in self._B])
        w.u64(len(self._levels))
        for lv in self._levels:
            w.i64(lv.tau)
            w.u8(1 if lv.exact else 0)
            ids = list(lv.cnt)
            w.node_ids(ids)
            w.f64s([lv.cnt[i] for i in ids])
            if lv.val is not None:
                for i in ids:
                    self._write_vdict(w, lv.val[i])

    def _write_vdict(self, w: _format.Writer, vd: dict[int, float]) -> None:
        if not self._values:
            return
        ids = list(vd)
        w.node_ids(ids)
        w.f64s([vd[i] for i in ids])

    def _read_vdict(self, r: _format.Reader) -> dict[int, float]:
        ids = r.node_ids(self._LU)
        cs = r.f64s()
        if len(cs) != len(ids) or any(c < 0 for c in cs):
            raise r.fail("bad value digest")
        for i in ids:
            if i >= self._vbase and i - self._vbase >= self._U:
                raise r.fail("value key outside the universe")
        return dict(zip(ids, cs, strict=False))

    @staticmethod
    def _read_header(r: _format.Reader) -> tuple[float, int, float, int | None, int, int]:
        eps = r.f64()
        LT = r.u8()
        cf = r.f64()
        W = r.u64()
        U = r.u64()
        merged = r.u8()
        if not (0 < eps < 1 and 1 <= LT <= 62 and cf > 0 and merged in (0, 1)):
            raise r.fail(f"bad parameters eps={eps}, time_bits={LT}, capacity_factor={cf}")
        return eps, LT, cf, (W or None), U, merged

    def _read_state(self, r: _format.Reader, merged: int) -> None:
        self._merged = bool(merged)
        self._tau0 = r.i64()
        self._tmax = r.i64()
        self._n = r.u64()
        self._top_n = r.u64()
        nb = r.u64()
        Ts, xs, ws = r.u64s(), r.u64s(), r.u64s()
        if not (len(Ts) == len(xs) == len(ws) == nb):
            raise r.fail("buffer arrays differ in length")
        if any(self._tbase <= T for T in Ts) or any(ww < 1 for ww in ws):
            raise r.fail("buffered item out of range")
        if self._values and any(x >= self._U for x in xs):
            raise r.fail("buffered key outside the universe")
        self._B = list(zip(Ts, xs, ws, strict=False))
        heapq.heapify(self._B)
        self._Bw = sum(ws)
        nl = r.u64()
        if nl > 64:
            raise r.fail(f"{nl} levels")
        self._levels = []
        for j in range(nl):
            lv = _Level(self._theta0 * (2 << j), self._values)
            lv.tau = r.i64()
            exact = r.u8()
            if exact not in (0, 1):
                raise r.fail("bad level flag")
            lv.exact = bool(exact)
            ids = r.node_ids(self._LT)
            cs = r.f64s()
            if len(cs) != len(ids) or any(c < 0 for c in cs):
                raise r.fail("bad level node counts")
            lv.cnt = dict(zip(ids, cs, strict=False))
            if lv.val is not None:
                lv.val = {i: self._read_vdict(r) for i in ids}
            self._levels.append(lv)
        try:
            self._check()
        except AssertionError as e:
            raise r.fail(str(e)) from None


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
    """

    __slots__ = ()

    def __init__(
        self,
        eps: float,
        time_bits: int = 32,
        *,
        max_window: int | None = None,
        capacity_factor: float = 3.0,
    ) -> None:
        self._init(eps, time_bits, max_window, capacity_factor, 1.0, None)

    def __repr__(self) -> str:
        return (
            f"SlidingWindowCount(eps={self._eps}, time_bits={self._LT}, n={self._n}, "
            f"levels={len(self._levels)})"
        )

    def update(self, t: int, weight: int = 1) -> None:
        """Count *weight* (an int >= 1) items at timestamp *t*. O(J log LT) amortized.

        A bad timestamp or weight raises before anything changes.
        """
        if type(t) is not int or not 0 <= t < self._tbase:
            t = self._bad_time(t)
        if type(weight) is not int or weight < 1:
            weight = self._bad_int_weight(weight)
        self._add(0, t, weight)

    def update_many(self, ts: Iterable[int], weights: Iterable[int] | None = None) -> None:
        """:meth:`update` for each timestamp, validated first (nothing changes on error)."""
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
        lo, hi = self._decayed_count_bounds(decay, t, horizon)
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
    def from_bytes(cls, data: bytes) -> SlidingWindowCount:
        """Rebuild from :meth:`to_bytes` (or ``WASK`` bytes); CodecError on malformed bytes. O(space)."""
        return _format.loads(cls, data, _format.KIND_SW_COUNT, cls._read)

    def _to_codec(self) -> tuple[Any, ...]:
        return _format.to_plain(self._write)

    @classmethod
    def _from_codec(cls, plain: Any) -> SlidingWindowCount:
        return _format.from_plain(plain, _format.KIND_SW_COUNT, cls._read, "SlidingWindowCount")

    @classmethod
    def _read(cls, r: _format.Reader) -> SlidingWindowCount:
        eps, LT, cf, W, U, merged = cls._read_header(r)
        if U != 0:
            raise r.fail("a count summary has no universe")
        s = cls(eps, LT, max_window=W, capacity_factor=cf)
        s._read_state(r, merged)
        return s


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
    ) -> None:
        self._init(eps, time_bits, max_window, capacity_factor, 0.5, universe)

    @property
    def universe(self) -> int:
        """U: keys lie in [0, U)."""
        return self._U

    def __repr__(self) -> str:
        return (
            f"SlidingWindowQDigest(universe={self._U}, eps={self._eps}, time_bits={self._LT}, "
            f"n={self._n}, levels={len(self._levels)})"
        )

    def update(self, x: int, t: int, weight: int = 1) -> None:
        """Add key *x* at timestamp *t* with *weight* (int >= 1). O(J (log LT + 1)) amortized.

        A bad key, timestamp or weight raises before anything changes.
        """
        if type(x) is not int or not 0 <= x < self._U:
            x = self._bad_key(x)
        if type(t) is not int or not 0 <= t < self._tbase:
            t = self._bad_time(t)
        if type(weight) is not int or weight < 1:
            weight = self._bad_int_weight(weight)
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
        """:meth:`update` for each (key, timestamp), validated first (nothing changes on error)."""
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
        t, tau = self._query_tau(w, t)
        d = QDigest(self._U, self._veps)
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
        t, horizon = self._decay_args(decay, t, horizon)
        pieces, unc = self._decayed_pieces(decay, t, horizon)
        d = QDigest(self._U, self._veps)
        nodes = d._nodes
        n = 0.0
        vbase = self._vbase
        for T, x, ww in self._B:
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
    def from_bytes(cls, data: bytes) -> SlidingWindowQDigest:
        """Rebuild from :meth:`to_bytes` (or ``WASK`` bytes); CodecError on malformed bytes. O(space)."""
        return _format.loads(cls, data, _format.KIND_SW_QDIGEST, cls._read)

    def _to_codec(self) -> tuple[Any, ...]:
        return _format.to_plain(self._write)

    @classmethod
    def _from_codec(cls, plain: Any) -> SlidingWindowQDigest:
        return _format.from_plain(plain, _format.KIND_SW_QDIGEST, cls._read, "SlidingWindowQDigest")

    @classmethod
    def _read(cls, r: _format.Reader) -> SlidingWindowQDigest:
        eps, LT, cf, W, U, merged = cls._read_header(r)
        if U < 2:
            raise r.fail(f"bad universe {U}")
        s = cls(U, eps, LT, max_window=W, capacity_factor=cf)
        s._read_state(r, merged)
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


def _as_list(xs: Iterable[Any]) -> list[Any]:
    tolist = getattr(xs, "tolist", None)
    if callable(tolist):
        out = tolist()
        assert isinstance(out, list)
        return out
    return list(xs)
