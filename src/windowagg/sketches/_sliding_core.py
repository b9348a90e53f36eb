"""The core of the sliding-window summaries: the buffer, the levels, queries.

Shared by :class:`~windowagg.sketches.SlidingWindowCount` and
:class:`~windowagg.sketches.SlidingWindowQDigest` (fact card: ``sliding_window.py``);
invariants, merge and the codec are in ``_sliding_state.py``.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable, Iterable
from typing import Any

from windowagg.errors import ArgumentError, ArgumentTypeError, TimestampError
from windowagg.sketches._qdigest_kernels import compress_dict as _compress_dict
from windowagg.sketches.qdigest import QDigest

MAX_WEIGHT = 1 << 53  # an item's weight is exact in a float64 count
MAX_TOTAL = (1 << 64) - 1  # the total weight is a u64 field of the codec
MAX_KAPPA = 1 << 62  # the buffer's capacity kappa: a u64 of the compiled core, checked there too


def kappa_of(capacity_factor: float, time_bits: int, eps: float) -> int | None:
    """The buffer's capacity ``max(2, ceil(capacity_factor * time_bits / eps))``, or None
    when it is past :data:`MAX_KAPPA` (or not finite: a tiny eps, a huge factor). O(1)."""
    q = capacity_factor * time_bits / eps
    if not q <= MAX_KAPPA:  # inf and nan too
        return None
    return max(2, math.ceil(q))


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


class _SlidingCore:
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
        "_nat",
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
        self._nat: Any = None  # the compiled twin, when it holds the state (SlidingWindowCount)
        self._eps = float(eps)
        self._LT = time_bits
        self._tbase = 1 << time_bits
        self._cf = float(capacity_factor)
        kappa = kappa_of(float(capacity_factor), time_bits, float(eps))
        if kappa is None:
            raise ArgumentError(
                f"{type(self).__name__}: capacity_factor * time_bits / eps = "
                f"{capacity_factor} * {time_bits} / {eps} is past 2**62 items of buffer; "
                "give a larger eps or a smaller capacity_factor"
            )
        self._kappa = kappa
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
            q = QDigest(universe, eps, backend="python")  # validates the universe
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
    def backend(self) -> str:
        """The implementation held: ``"native"`` or ``"python"``. O(1)."""
        return "python" if self._nat is None else "native"

    @property
    def total_weight(self) -> int:
        """Weight of every item ever added. O(1)."""
        if self._nat is not None:
            n: int = self._nat.n
            return n
        return self._n

    @property
    def num_levels(self) -> int:
        """Materialized levels J. O(1)."""
        if self._nat is not None:
            j: int = self._nat.num_levels
            return j
        return len(self._levels)

    @property
    def size(self) -> int:
        """Stored time nodes + buffered items (+ value nodes for SlidingWindowQDigest). O(J kappa)."""
        if self._nat is not None:
            size: int = self._nat.size
            return size
        s = len(self._B) + sum(len(lv.cnt) for lv in self._levels)
        if self._values:
            for lv in self._levels:
                assert lv.val is not None
                s += sum(len(v) for v in lv.val.values())
        return s

    @property
    def max_timestamp(self) -> int | None:
        """Largest timestamp seen (the default query time), None when empty."""
        tmax = self._tmax_now()
        return None if tmax < 0 else tmax

    def _tmax_now(self) -> int:
        if self._nat is not None:
            tmax: int = self._nat.tmax
            return tmax
        return self._tmax

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
            if isinstance(w, float) and w.is_integer() and 1 <= w <= MAX_WEIGHT:
                return int(w)
            raise ArgumentTypeError(
                f"sliding-window weights are multiplicities: ints >= 1, got {w!r}"
            )
        wi = int(w.__index__())
        if not 1 <= wi <= MAX_WEIGHT:
            raise ArgumentError(
                f"sliding-window weights must be ints in [1, 2**53], got {wi}; split a larger "
                "multiplicity into several updates"
            )
        return wi

    def _check_total(self, w: int) -> None:
        """ArgumentError (nothing changed) when the total weight would pass 2**64 - 1. O(1)."""
        if self.total_weight + w > MAX_TOTAL:
            raise ArgumentError(
                f"{type(self).__name__}: the total weight would pass 2**64 - 1 (the codec's "
                "u64); split the stream over several summaries"
            )

    def _add(self, x: int, t: int, w: int) -> None:
        self._check_total(w)
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
                    for j in range(n_before, len(levels)):  # clones hold items[: k + 1]
                        starts[j] = k + 1
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
        """Truncate level i; if it is the top level, first clone it into level i + 1 (and
        that clone in turn while it holds more than 2 kappa nodes)."""
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
            if len(nxt.cnt) > 2 * self._kappa:  # still over (a small kappa, heavy items):
                self._truncate_level(i + 1)  # truncated in turn, cloned first
        self._truncate(lv)

    def _compress_level(self, lv: _Level) -> None:
        """Fold childless sibling pairs into their parent while the sum <= theta. O(k + LT)."""
        cnt = lv.cnt
        val = lv.val
        th = lv.theta
        by_depth: list[list[int]] = [[] for _ in range(self._LT + 1)]
        for node in sorted(cnt):  # ascending ids: the sums' order is the canonical one
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
        total = sum(ws)
        self._check_total(total)
        tmax = max(ts)
        if tmax > self._tmax:
            self._tmax = tmax
        self._n += total
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
        tmax = self._tmax_now()
        if t is None:
            t = max(tmax, 0)
        elif isinstance(t, bool) or not hasattr(t, "__index__"):
            raise TimestampError(f"query time must be an int, got {t!r}")
        t = int(t)
        if t < tmax:
            raise ArgumentError(
                f"query time {t} is before the largest timestamp seen ({tmax}); "
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
        straddling = []
        lo_of, hi_of = self._lo, self._hi
        for node, c in lv.cnt.items():
            if lo_of(node) > tau:
                inside.append(node)
            elif hi_of(node) > tau:
                straddling.append(c)
        return inside, math.fsum(straddling), lv  # fsum: the same float in any node order

    def count_bounds(self, w: int, t: int | None = None) -> tuple[float, float]:
        """Certified (lo, hi) around D_w, the weight with timestamps in (t - w, t]. O(space).

        Exact (lo == hi) when t - w >= tau0 (the window lies inside the buffer).
        *t* defaults to the largest timestamp seen; it may not be earlier.
        """
        t, tau = self._query_tau(w, t)
        if self._nat is not None:
            lo, hi = self._nat.count_bounds(tau)
            return lo, hi
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
            for node, c in sorted(lv.cnt.items()):  # canonical order: the floats' sums
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


def _as_list(xs: Iterable[Any]) -> list[Any]:
    tolist = getattr(xs, "tolist", None)
    if callable(tolist):
        out = tolist()
        assert isinstance(out, list)
        return out
    return list(xs)
