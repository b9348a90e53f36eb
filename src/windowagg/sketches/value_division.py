"""ValueDivision: quantiles and heavy hitters under any smooth decay (Theorem 6).

Fact card
---------
=============  ==============================================================================
ordering       out-of-order: a late item joins the summary whose time interval covers it
decay          any smooth (log-convex) g, e.g. PolynomialDecay(alpha), ExponentialDecay(lam)
input          integer keys in [0, U), timestamps (finite numbers), weights > 0
structure      disjoint time intervals, each with a QDigest(U, beta); two neighbours are
               merged when their union lies inside one age band [b_i, b_{i+1}), where
               g(b_i) = (1 + theta)**-i
update         O(log m) to find the interval (m = number of summaries) + a q-digest update;
               a merge pass, O(m) plus merges, runs when m has doubled since the last pass
space          m = O((1/theta) ln(1/g(t_now - t_oldest))) summaries of O(LU/beta) nodes
query          merge of all summaries, each scaled by g(age of its youngest item): O(m s)
error          every item's weight is overestimated by a factor <= 1 + theta, so with
               D = sum_i w_i g(t - t_i):
               rank:     |rank(x, t) - r_t(x)| <= (theta + beta/2) D
               quantile: W(< q) <= (phi + theta + beta) D and W(<= q) >= (phi - beta) D
               heavy hitters: all f >= (phi + theta) D (phi > beta), none < (phi - theta - beta) D
               ``effective_theta(t)`` reports the actual largest ratio (often << theta)
merge          summaries of partitions merge when they share decay, theta and beta; the same
               bounds hold (straddling summaries are kept apart, so size may grow)
update_many    b items in one call: O(b log b) numpy grouping (by interval, then by age band
               at the batch's latest time) and one q-digest ``update_many`` per group
backends       ``backend=`` picks the QDigest each interval holds (compiled twin or Python
               reference); the interval logic is this class's on both, so both hold the
               same intervals, nodes and floats, answer alike and write the same bytes
paper          Cormode, Korn, Tirthapura 2007, section 4.3, Theorem 6, Lemma 1;
               guide seed-decay.md section 2.8 and errata 7.9
=============  ==============================================================================

Examples
--------
>>> from windowagg.sketches.decay import PolynomialDecay
>>> vd = ValueDivision(universe=1000, decay=PolynomialDecay(1.0), theta=0.05, beta=0.02)
>>> for t in range(2000):
...     vd.update(t % 1000, t)
>>> vd.num_summaries < 2000
True
>>> d = vd.digest()
>>> 0 <= d.quantile(0.5) < 1000
True

The array verb and the two backends (the same bytes):

>>> import numpy as np
>>> xs, ts = np.arange(500) % 100, np.arange(500.0)
>>> a = ValueDivision(100, PolynomialDecay(1.0), 0.05, 0.02, backend="python")
>>> a.update_many(xs, ts)
>>> b = ValueDivision.from_bytes(a.to_bytes(), PolynomialDecay(1.0))
>>> b.to_bytes() == a.to_bytes() and b.quantiles([0.5, 0.9]) == a.quantiles([0.5, 0.9])
True
"""

from __future__ import annotations

import math
import sys
from bisect import bisect_right
from collections.abc import Callable, Iterable
from typing import Any

from windowagg._backend import Backend, resolve_backend
from windowagg._invariants import invariant
from windowagg.errors import (
    ArgumentError,
    ArgumentTypeError,
    CodecError,
    EmptyWindowError,
    TimestampError,
)
from windowagg.sketches import _format
from windowagg.sketches import _qdigest_kernels as _k
from windowagg.sketches._qdigest_queries import _check_phi
from windowagg.sketches._value_division_parts import _BatchPlan, _Summary
from windowagg.sketches.decay import ExponentialDecay, PolynomialDecay, neg_log_of
from windowagg.sketches.exp_qdigest import _bad_time
from windowagg.sketches.qdigest import _OVERFLOW as _QD_OVERFLOW
from windowagg.sketches.qdigest import QDigest

__all__ = ["ValueDivision"]

_INF = math.inf
_FMAX = sys.float_info.max  # the finite floats; an int past it is not a finite time or weight
_TAG = "windowagg.ValueDivision"  # first item of the codec tuple to_bytes writes
# The total weight's ceiling: below it no sum of the summaries' totals (a merge pass, a
# merge, a query's digest) can reach float64's overflow, so those never raise mid-way.
_WMAX = 2.0**1023
_OVERFLOW = (
    "ValueDivision: the total weight would pass 2**1023 (float64's range, with room for the "
    "sums of its summaries); scale the weights down"
)


class ValueDivision:
    """Value division over q-digests for a smooth decay g (Theorem 6).

    Parameters
    ----------
    universe : int
        Keys are ints in [0, universe).
    decay : callable
        g(age), smooth (log-convex) and non-increasing with g(0) = 1. ``PolynomialDecay`` and
        ``ExponentialDecay`` also give ``-ln g`` directly.
    theta : float
        Multiplicative weight error (> 0): each weight is overestimated by <= 1 + theta.
    beta : float
        The inner q-digests' eps (additive rank error <= beta*D/2).
    backend : {"auto", "native", "python"}, optional
        The QDigest each interval holds (:mod:`windowagg._backend`): the compiled twin or the
        Python reference. The intervals, nodes, floats, answers and bytes are the same on
        both (a state written by one is read by the other). The default follows
        ``$WINDOWAGG_BACKEND``.

    Notes
    -----
    Mutators (``update``, ``update_many``, ``merge``, ``merge_pass``, ``compress``) return
    None; queries never change the state; a call that raises changes nothing.
    """

    __slots__ = (
        "_S",
        "_U",
        "_beta",
        "_expo",
        "_g",
        "_inv_ln1t",
        "_ln1t",
        "_m_after_pass",
        "_n",
        "_native",
        "_nl",
        "_poly",
        "_proto",
        "_starts",
        "_theta",
        "_tnow",
    )

    def __eq__(self, other: object) -> bool:
        """The same state, slot by slot (what the invariant checks compare a stored summary
        with its recomputation by: two merges of the same inputs are equal); ``_n``, the
        running total the overflow guard reads, is a sum of the same weights in another
        order and is left out. O(size)."""
        if type(other) is not type(self):
            return NotImplemented
        return all(getattr(self, a) == getattr(other, a) for a in self.__slots__ if a != "_n")

    def __init__(
        self,
        universe: int,
        decay: Callable[[float], float],
        theta: float,
        beta: float,
        *,
        backend: Backend | None = None,
    ) -> None:
        if not callable(decay):
            raise ArgumentTypeError(f"decay must be a callable g(age), got {decay!r}")
        if not isinstance(theta, (int, float)) or not 0 < theta < _INF:
            raise ArgumentError(f"theta must be a positive number, got {theta!r}")
        self._proto = QDigest(universe, beta, backend="python")  # validates universe and beta
        self._U = universe
        self._g = decay
        self._nl = neg_log_of(decay)
        self._theta = float(theta)
        self._ln1t = math.log1p(self._theta)
        self._inv_ln1t = 1.0 / self._ln1t
        # band(age) in closed form for the two built-in decays (the update's hot path):
        # polynomial floor(log1p(age) * alpha / ln(1+theta)), exponential floor(age * ...)
        self._poly = decay.alpha * self._inv_ln1t if type(decay) is PolynomialDecay else 0.0
        self._expo = decay.lam * self._inv_ln1t if type(decay) is ExponentialDecay else 0.0
        self._beta = float(beta)
        self._S: list[_Summary] = []
        self._starts: list[float] = []
        self._tnow = -_INF
        self._m_after_pass = 0
        self._n = 0.0  # the weights added, summed as they came: the overflow guard's
        self._native = resolve_backend(backend, "ValueDivision")

    @property
    def backend(self) -> str:
        """The QDigest the intervals hold: ``"native"`` or ``"python"``. O(1)."""
        return "native" if self._native else "python"

    @property
    def num_summaries(self) -> int:
        """Number of interval summaries m. O(1)."""
        return len(self._S)

    @property
    def size(self) -> int:
        """Total q-digest nodes over all summaries (the paper's space measure). O(m)."""
        return sum(s.q.size for s in self._S)

    @property
    def theta(self) -> float:
        return self._theta

    @property
    def beta(self) -> float:
        return self._beta

    @property
    def t_now(self) -> float | None:
        """Largest timestamp seen (merges are decided at this time). None when empty."""
        return None if self._tnow == -_INF else self._tnow

    def __repr__(self) -> str:
        return (
            f"ValueDivision(universe={self._U}, decay={self._g!r}, theta={self._theta}, "
            f"beta={self._beta}, summaries={len(self._S)})"
        )

    def _digest(self) -> QDigest:
        """An empty QDigest(U, beta) on this summary's backend. O(1) (native: O(L))."""
        return self._proto._empty_like(self._native)

    def _band(self, age: float) -> float:
        """Index of the age band: largest i with g(b_i) = (1+theta)^-i >= g(age)."""
        if self._poly:
            return math.floor(math.log1p(age) * self._poly + 1e-12)
        if self._expo:
            return math.floor(age * self._expo + 1e-12)
        v = self._nl(age)
        return math.floor(v * self._inv_ln1t + 1e-12) if v < _INF else _INF

    def _bands(self, ages: Any) -> Any:
        """:meth:`_band` of every age of a float64 array (numpy's log1p for polynomial
        decay: it may differ from math.log1p in the last bit, which moves a band's edge by
        that bit, far inside the bounds' slack). O(b)."""
        import numpy as np

        if self._poly:
            return np.floor(np.log1p(ages) * self._poly + 1e-12)
        if self._expo:
            return np.floor(ages * self._expo + 1e-12)
        band = self._band
        return np.array([band(a) for a in ages.tolist()], dtype=np.float64)

    def _fits(self, start: float, end: float) -> bool:
        """True if the timestamps [start, end] lie in one age band at t_now."""
        tn = self._tnow
        return self._band(tn - end) == self._band(tn - start)

    def update(self, x: int, t: float, weight: float = 1.0) -> None:
        """Add key *x* observed at time *t* with *weight*. O(log m) amortized + merges.

        Bad input raises before anything changes.
        """
        if (type(t) is not int and type(t) is not float) or not -_FMAX <= t <= _FMAX:
            t = _bad_time(t)
        if type(x) is not int or not 0 <= x < self._U:
            x = self._proto._bad_key(x)
        if (type(weight) is not int and type(weight) is not float) or not 0 < weight <= _FMAX:
            weight = QDigest._bad_weight(weight)
        n = self._n + weight
        if n > _WMAX:
            raise ArgumentError(_OVERFLOW)
        S = self._S
        tn = t if t > self._tnow else self._tnow
        starts = self._starts
        i = bisect_right(starts, t) - 1
        if i >= 0 and S[i].end >= t:
            self._n = n
            self._tnow = tn
            s = S[i]
            s.q._add_leaf(x, weight)
            if t < s.tmin:
                s.tmin = t
            if t > s.tmax:
                s.tmax = t
        else:
            # extend a neighbour when the union stays inside one band, else a new singleton
            # (the bands first: a user's decay may raise, and then nothing has changed)
            ps = self._poly
            bt: float
            if ps:  # the closed-form band of _band(), inlined for polynomial decay
                log1p = math.log1p
                floor = math.floor
                bt = floor(log1p(tn - t) * ps + 1e-12)
                ok_left = i >= 0 and floor(log1p(tn - S[i].start) * ps + 1e-12) == bt
                ok_right = (
                    not ok_left
                    and i + 1 < len(S)
                    and floor(log1p(tn - S[i + 1].end) * ps + 1e-12) == bt
                )
            else:
                band = self._band
                bt = band(tn - t)
                ok_left = i >= 0 and band(tn - S[i].start) == bt
                ok_right = not ok_left and i + 1 < len(S) and band(tn - S[i + 1].end) == bt
            plan = None
            if len(S) + (not ok_left and not ok_right) > 2 * self._m_after_pass + 8:
                # the merge pass this insert sets off, planned on the intervals it leaves
                spans = [(r.start, r.end) for r in S]
                if ok_left:
                    spans[i] = (spans[i][0], t)
                elif ok_right:
                    spans[i + 1] = (t, spans[i + 1][1])
                else:
                    spans.insert(i + 1, (t, t))
                plan = self._merge_plan(spans, tn)
            self._n = n
            self._tnow = tn
            if ok_left:
                s = S[i]
                s.q._add_leaf(x, weight)
                s.end = t
                s.tmax = t
            elif ok_right:
                s = S[i + 1]
                s.q._add_leaf(x, weight)
                s.start = t
                s.tmin = t
                starts[i + 1] = t
            else:
                # a lazy one-item summary (the flow data's most common case): its digest, the
                # state _empty_like() + _add_leaf() would give, is built only if it is read
                p = self._proto
                S.insert(i + 1, _Summary(t, t, (p, p._base + x, 0.0 + weight, self._native)))
                starts.insert(i + 1, t)
            if plan is not None:
                self._merge_apply(plan)

    def update_many(self, xs: Any, ts: Any, weights: Any = None) -> None:
        """Add ``(xs[i], ts[i], weights[i])`` for every i: the array verb. *xs*: integer keys
        in [0, U) (a numpy array or a sequence), *ts* finite times (held as float64),
        *weights* positive finite (None: 1 each). O(b log b) numpy work plus one q-digest
        ``update_many`` per group, plus a merge pass when m has doubled.

        The batch is placed as of its latest time T = max(t_now, max ts): an item inside an
        interval joins it (one ``update_many`` per interval, items in time order); the items
        in a gap between two intervals, sorted by time, are cut into runs of one age band at
        T, and each run extends its left neighbour (the gap's oldest run, when the union
        lies in one band), else its right neighbour (the youngest run, likewise), else opens
        an interval of its own. Every interval stays inside one band, so the bounds of the
        fact card hold as for :meth:`update`; the intervals may differ from b
        :meth:`update` calls (fewer: a run opens one interval, not one per item). Both
        backends run this same placement: the same intervals, nodes, floats and bytes.
        Everything is checked before anything changes.

        >>> from windowagg.sketches.decay import PolynomialDecay
        >>> vd = ValueDivision(64, PolynomialDecay(1.0), 0.1, 0.05)
        >>> vd.update_many([1, 2, 3, 2], [0.0, 5.0, 9.0, 9.5], [1.0, 2.0, 1.0, 1.0])
        >>> vd.decayed_count(9.5) > 0, vd.t_now
        (True, 9.5)
        """
        import numpy as np

        keys = _k.key_array(np, xs, self._U)
        try:
            tt = np.ascontiguousarray(np.asarray(ts, dtype=np.float64).reshape(-1))
        except (TypeError, ValueError, OverflowError):
            raise TimestampError(
                f"ValueDivision.update_many: times must be finite numbers, got {ts!r}"
            ) from None
        if tt.size != keys.size:
            raise ArgumentError(
                f"ValueDivision.update_many: {keys.size} keys but {tt.size} times; give one "
                "time per key"
            )
        if not np.isfinite(tt).all():
            raise TimestampError(
                "ValueDivision.update_many: times must be finite numbers, got "
                f"{float(tt[~np.isfinite(tt)][0])!r}"
            )
        w = None if weights is None else _k.weight_array(np, weights, keys.size)
        b = int(keys.size)
        if b == 0:
            return
        if w is None:
            total = float(b)
        else:
            with np.errstate(over="ignore"):
                total = float(np.cumsum(w)[-1])
        n = self._n + total
        if not n <= _WMAX:
            raise ArgumentError(_OVERFLOW)
        plan = _BatchPlan(self, keys, tt, w)  # the decay runs here: may raise, nothing changed
        spans = plan.spans(self._S)
        passed = None  # the merge pass the batch sets off, planned on the intervals it leaves
        if len(spans) > 2 * self._m_after_pass + 8:
            passed = self._merge_plan(spans, max(self._tnow, plan.t_now))
        # checked: from here on nothing raises (the total stays below _WMAX)
        self._n = n
        plan.apply(self)
        if passed is not None:
            self._merge_apply(passed)

    def merge_pass(self) -> None:
        """Merge neighbours whose union lies inside one age band at t_now. O(m + merges).

        Runs automatically whenever m doubles; merging only ever lowers space (each merge
        keeps the (1 + theta) weight-ratio guarantee because g is smooth). The bands are
        all computed before anything changes: a user's decay that raises leaves the
        summary as it was.
        """
        if self._S:
            self._merge_apply(self._merge_plan([(s.start, s.end) for s in self._S], self._tnow))

    def _merge_plan(self, spans: list[tuple[float, float]], tn: float) -> list[bool]:
        """Which intervals a merge pass at *tn* folds into the group before them: entry
        i - 1 for interval i of *spans* (its (start, end), in order), True when its end lies
        in the band of its group's oldest start. Runs the decay; changes nothing. O(m)."""
        ps = self._poly
        band = self._band  # the polynomial closed form is inlined below
        log1p = math.log1p
        floor = math.floor
        start0 = spans[0][0]
        b_start = floor(log1p(tn - start0) * ps + 1e-12) if ps else band(tn - start0)
        plan: list[bool] = []
        append = plan.append
        for start, end in spans[1:]:
            if ps:
                same = floor(log1p(tn - end) * ps + 1e-12) == b_start
            else:
                same = band(tn - end) == b_start
            append(same)
            if not same:
                b_start = floor(log1p(tn - start) * ps + 1e-12) if ps else band(tn - start)
        return plan

    def _merge_apply(self, plan: list[bool]) -> None:
        """Fold the intervals as *plan* (:meth:`_merge_plan` of the current intervals) says.
        Nothing here raises. O(m + merges)."""
        S = self._S
        a = S[0]
        out = [a]
        append = out.append  # bound method cached: one call per summary
        q: QDigest | None = None  # a.q, fetched on a's first merge (a may be a lazy singleton)
        nodes: dict[int, float] = {}
        native = self._native
        base = self._proto._base
        for s, same in zip(S[1:], plan, strict=True):
            if same:
                if q is None:
                    q = a.q
                    nodes = q._nodes
                sq = s._q
                if native:
                    # the twin's update / merge: the same leaf or node sums, n, and compress
                    # rule as the Python lines below (the twins hold the same nodes)
                    if isinstance(sq, tuple):
                        q._nat.update(sq[1] - base, sq[2])
                    else:
                        q._nat.merge(sq._nat)
                # q._merge_from(s.q) inlined (same node sums, n, and compress rule)
                elif isinstance(sq, tuple):  # a lazy singleton: add its one leaf
                    k, v = sq[1], sq[2]
                    nodes[k] = nodes.get(k, 0.0) + v
                    q._n += v
                else:
                    get = nodes.get
                    for k, v in sq._nodes.items():
                        nodes[k] = get(k, 0.0) + v
                    q._n += sq._n
                q._sorted = None
                if len(nodes) > q._cap:
                    q.compress()
                    nodes = q._nodes
                if s.end > a.end:
                    a.end = s.end
                if s.tmin < a.tmin:
                    a.tmin = s.tmin
                if s.tmax > a.tmax:
                    a.tmax = s.tmax
            else:
                append(s)
                a = s
                q = None
        self._S = out
        self._starts = [s.start for s in out]
        self._m_after_pass = len(out)

    def compress(self) -> None:
        """Run a merge pass, then compress every inner q-digest. O(m s)."""
        self.merge_pass()
        for s in self._S:
            s.q.compress()

    # ---------------------------------------------------------------- queries
    def _query_time(self, t: float | None) -> float:
        if t is None:
            return self._tnow
        tt = _bad_time(t)
        if tt < self._tnow:
            raise ArgumentError(
                f"query time {t} is before the largest timestamp seen ({self._tnow}); value "
                "division only answers at or after t_now"
            )
        return tt

    def digest(
        self, t: float | None = None, decay: Callable[[float], float] | None = None
    ) -> QDigest:
        """QDigest of the decayed weights at time t (each summary scaled by g of its youngest
        item's age; *decay* may be another smooth g', see :meth:`effective_theta`). O(m s).
        """
        g = self._g if decay is None else decay
        tt = self._query_time(t)
        d = self._digest()
        if self._native:
            add = d._nat.add_scaled  # bound once: one native call per summary
            n = 0.0  # the total the digest reaches, summed as the twin adds it
            for s in self._S:
                gamma = g(tt - s.tmax)
                if gamma > 0:
                    q = s._q
                    nat = s.q._nat if isinstance(q, tuple) else q._nat
                    n = n + nat.n * gamma
                    if not n < _INF:  # (a user's g above 1) the reference's check and text
                        raise ArgumentError(_QD_OVERFLOW)
                    add(nat, gamma)
        else:
            for s in self._S:
                gamma = g(tt - s.tmax)
                if gamma > 0:
                    d._add_scaled(s.q, gamma)
        d._drop_zeros()
        d._compress_if_full()
        return d

    def effective_theta(
        self, t: float | None = None, decay: Callable[[float], float] | None = None
    ) -> float:
        """Largest g(t - tmax)/g(t - tmin) - 1 over the summaries: the actual weight error.

        With a different smooth decay g' this is Lemma 1's theta'. O(m).
        """
        g = self._g if decay is None else decay
        nl = neg_log_of(g)
        tt = self._query_time(t)
        worst = 0.0
        for s in self._S:
            r = nl(tt - s.tmin) - nl(tt - s.tmax)
            if r == _INF:
                continue
            worst = max(worst, math.expm1(r))
        return worst

    def decayed_count(self, t: float | None = None) -> float:
        """Decayed total, overestimated by a factor <= 1 + theta. O(m)."""
        tt = self._query_time(t)
        return math.fsum(self._g(tt - s.tmax) * s.total for s in self._S)

    def rank(self, x: int, t: float | None = None) -> float:
        """Decayed weight of keys <= x; error <= (theta + beta/2) D. O(m s)."""
        return self.digest(t).rank(x)

    def quantile(self, phi: float, t: float | None = None) -> int:
        """Decayed phi-quantile: W(< q) <= (phi+theta+beta)D, W(<= q) >= (phi-beta)D. O(m s)."""
        phi = _check_phi(phi)
        d = self.digest(t)
        if d.is_empty():
            raise EmptyWindowError("quantile of an empty ValueDivision; add values first")
        return d.quantile(phi)

    def quantiles(self, phis: Iterable[float], t: float | None = None) -> list[int]:
        """:meth:`quantile` of each phi from one digest at time t (the array verb), every phi
        checked first. O(m s + k log s)."""
        ps = [_check_phi(p) for p in phis]
        d = self.digest(t)
        if ps and d.is_empty():
            raise EmptyWindowError("quantile of an empty ValueDivision; add values first")
        return d.quantiles(ps)

    def heavy_hitters(self, phi: float, t: float | None = None) -> list[tuple[int, float]]:
        """All keys with f >= (phi+theta)D (phi > beta), none < (phi-theta-beta)D. O(m s)."""
        phi = _check_phi(phi)
        return self.digest(t).heavy_hitters(phi)

    # ---------------------------------------------------------------- merge
    def merge(self, other: ValueDivision) -> None:
        """Add *other* (same universe, decay, theta, beta). O(m1 + m2 + merges).

        Both are brought to the later t_now; intervals are re-sorted and neighbours merged
        where the union fits one band. Overlapping summaries that straddle a band boundary
        stay separate (correct; space may grow, as the paper notes).
        """
        if not isinstance(other, ValueDivision):
            raise ArgumentTypeError(f"can only merge a ValueDivision, got {type(other).__name__}")
        if (other._U, other._theta, other._beta) != (self._U, self._theta, self._beta) or (
            other._g is not self._g and repr(other._g) != repr(self._g)
        ):
            raise ArgumentError("cannot merge ValueDivisions with different parameters or decay")
        if other is self:
            raise ArgumentError("cannot merge a ValueDivision into itself")
        n = self._n + other._n
        if n > _WMAX:
            raise ArgumentError(_OVERFLOW)
        tn = max(self._tnow, other._tnow)
        theirs = []
        for b in other._S:
            c = b.q.copy()
            c._become(self._native)  # other's summaries on this backend
            a = _Summary(b.start, b.end, c)
            a.tmin, a.tmax = b.tmin, b.tmax
            theirs.append(a)
        # the plan first (the decay runs here, and may raise): runs of neighbours whose
        # union lies in one band at the later t_now
        band = self._band
        groups: list[list[_Summary]] = []
        lo = hi = 0.0
        for s in sorted(self._S + theirs, key=lambda s: (s.start, s.end)):
            if groups and band(tn - max(hi, s.end)) == band(tn - min(lo, s.start)):
                groups[-1].append(s)
                lo, hi = min(lo, s.start), max(hi, s.end)
            else:
                groups.append([s])
                lo, hi = s.start, s.end
        # checked: from here on nothing raises (the total stays below _WMAX)
        self._n = n
        self._tnow = tn
        out: list[_Summary] = []
        for grp in groups:
            a = grp[0]
            for s in grp[1:]:
                a.q.merge(s.q)
                a.start = min(a.start, s.start)
                a.end = max(a.end, s.end)
                a.tmin = min(a.tmin, s.tmin)
                a.tmax = max(a.tmax, s.tmax)
            out.append(a)
        self._S = out
        self._starts = [s.start for s in out]
        self._m_after_pass = len(out)

    def _check(self) -> None:
        """O(m s) invariants: sorted starts, tmin/tmax inside intervals, every digest on this
        backend, the running total, ratio <= 1 + theta."""
        invariant(
            self._starts == [s.start for s in self._S], "ValueDivision", "start index out of sync"
        )
        for i, s in enumerate(self._S):
            sq = s._q
            held = sq[3] if isinstance(sq, tuple) else sq.backend == "native"
            invariant(
                held == self._native,
                "ValueDivision",
                f"summary {i}: a {'native' if held else 'python'} digest in a {self.backend} "
                "ValueDivision",
            )
            invariant(
                s.start <= s.tmin <= s.tmax <= s.end, "ValueDivision", f"summary {i}: bad interval"
            )
            if i:
                invariant(
                    self._S[i - 1].start <= s.start,
                    "ValueDivision",
                    f"summary {i}: starts not sorted",
                )
            s.q._check()
        tot = math.fsum(s.total for s in self._S)
        invariant(
            self._n <= _WMAX and math.isclose(self._n, tot, rel_tol=1e-9, abs_tol=1e-300),
            "ValueDivision",
            f"running total {self._n} differs from the summaries' total {tot}",
        )
        if self._S:
            eff = self.effective_theta()
            invariant(
                eff <= self._theta * (1 + 1e-9) + 1e-12,
                "ValueDivision",
                f"weight ratio {1 + eff} exceeds 1 + theta = {1 + self._theta}",
            )

    # ---------------------------------------------------------------- bytes
    def to_bytes(self) -> bytes:
        """Serialize as :mod:`windowagg.codec` bytes holding ``("windowagg.ValueDivision",
        fields...)``. The decay is NOT stored: pass the same one to :meth:`from_bytes` (its
        repr is stored and checked). O(m s)."""
        w = _format.Writer()
        self._write(w)
        return _format.dumps((_TAG, *w.plain()))

    def _write(self, w: _format.Writer) -> None:
        w.text(repr(self._g))
        w.f64(self._theta)
        w.f64(self._beta)
        w.u64(self._U - 1)
        w.u8(0 if self._tnow == -_INF else 1)
        w.f64(0.0 if self._tnow == -_INF else self._tnow)
        w.u64(len(self._S))
        for s in self._S:
            w.f64(s.start)
            w.f64(s.end)
            w.f64(s.tmin)
            w.f64(s.tmax)
            s.q._write_body(w)

    @classmethod
    def from_bytes(
        cls,
        data: bytes,
        decay: Callable[[float], float],
        *,
        backend: Backend | None = None,
    ) -> ValueDivision:
        """Rebuild from :meth:`to_bytes` of either backend (or ``WASK`` bytes) with the same
        *decay*, on *backend*; CodecError on bad bytes, on both backends. O(m s)."""
        from windowagg import codec

        def read(r: _format.Reader) -> ValueDivision:
            return cls._read(r, decay, backend)

        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise CodecError(f"ValueDivision.from_bytes needs bytes, got {type(data).__name__}")
        data = bytes(data)
        if data[:4] == _format.MAGIC:
            return _format.loads(cls, data, _format.KIND_VALUE_DIVISION, read)
        plain = codec.loads(data)
        if type(plain) is not tuple or not plain or plain[0] != _TAG:
            raise CodecError("ValueDivision.from_bytes: these bytes do not hold a ValueDivision")
        return _format.from_plain(
            plain[1:], _format.KIND_VALUE_DIVISION, read, "ValueDivision.from_bytes"
        )

    @classmethod
    def _read(
        cls, r: _format.Reader, decay: Callable[[float], float], backend: Backend | None
    ) -> ValueDivision:
        name = r.text()
        theta, beta = r.f64(), r.f64()
        U = r.u64() + 1
        has = r.u8()
        tnow = r.f64()
        m = r.u64()
        if name != repr(decay):
            raise r.fail(f"stored decay {name!r} differs from the given {decay!r}")
        if not (theta > 0 and 0 < beta < 1 and U >= 2 and has in (0, 1)):
            raise r.fail("bad parameters")
        vd = cls(U, decay, theta, beta, backend=backend)
        for _ in range(m):
            start, end, tmin, tmax = r.f64(), r.f64(), r.f64(), r.f64()
            q = QDigest._read_body(r)
            if q.universe != U or q.eps != beta:
                raise r.fail("inner digest parameters differ")
            q._become(vd._native)  # the native load checks the fields again (CodecError)
            s = _Summary(start, end, q)
            s.tmin, s.tmax = tmin, tmax
            vd._S.append(s)
        vd._n = math.fsum(s.total for s in vd._S)
        if not vd._n <= _WMAX:
            raise r.fail("the summaries' total weight is past 2**1023")
        vd._starts = [s.start for s in vd._S]
        vd._tnow = tnow if has else -_INF
        vd._m_after_pass = len(vd._S)
        try:
            vd._check()
        except AssertionError as e:
            raise r.fail(str(e)) from None
        return vd
