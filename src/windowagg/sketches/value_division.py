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
"""

from __future__ import annotations

import math
from bisect import bisect_right
from collections.abc import Callable

from windowagg._invariants import invariant
from windowagg.errors import ArgumentError, ArgumentTypeError, CodecError, EmptyWindowError
from windowagg.sketches import _format
from windowagg.sketches.decay import ExponentialDecay, PolynomialDecay, neg_log_of
from windowagg.sketches.exp_qdigest import _bad_time
from windowagg.sketches.qdigest import QDigest, _check_phi

__all__ = ["ValueDivision"]

_INF = math.inf
_TAG = "windowagg.ValueDivision"  # first item of the codec tuple to_bytes writes
_new_qdigest = QDigest.__new__


def _one_leaf(proto: QDigest, leaf: int, weight: float) -> QDigest:
    """A digest with *proto*'s parameters holding weight at one leaf node (no checks). O(1)."""
    q = _new_qdigest(QDigest)
    q._U, q._L, q._eps, q._base, q._cap = proto._U, proto._L, proto._eps, proto._base, proto._cap
    q._nodes = {leaf: weight}
    q._n = weight
    q._sorted = None
    q._nat = None
    return q


class _Summary:
    """One time interval's summary. ``_q`` is its QDigest, or, for a summary that has only
    ever held one item, the lightweight ``(proto, leaf node, weight)``: most flow items open
    such a singleton that a merge pass folds into a neighbour before it grows, so the digest
    is built only when something reads ``q`` (same contents either way)."""

    __slots__ = ("_q", "end", "start", "tmax", "tmin")

    def __eq__(self, other: object) -> bool:
        """The same state, slot by slot (what the invariant checks compare a stored summary
        with its recomputation by: two merges of the same inputs are equal). O(size)."""
        if type(other) is not type(self):
            return NotImplemented
        return all(getattr(self, a) == getattr(other, a) for a in self.__slots__)

    def __init__(self, start: float, end: float, q: QDigest | tuple[QDigest, int, float]) -> None:
        self.start = start
        self.end = end
        self.tmin = start
        self.tmax = end
        self._q = q

    @property
    def q(self) -> QDigest:
        """The interval's QDigest (built on first access for a singleton). O(1)."""
        q = self._q
        if isinstance(q, tuple):
            q = self._q = _one_leaf(*q)
        return q


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
        "_nl",
        "_poly",
        "_proto",
        "_starts",
        "_theta",
        "_tnow",
    )

    def __eq__(self, other: object) -> bool:
        """The same state, slot by slot (what the invariant checks compare a stored summary
        with its recomputation by: two merges of the same inputs are equal). O(size)."""
        if type(other) is not type(self):
            return NotImplemented
        return all(getattr(self, a) == getattr(other, a) for a in self.__slots__)

    def __init__(
        self, universe: int, decay: Callable[[float], float], theta: float, beta: float
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

    def _band(self, age: float) -> float:
        """Index of the age band: largest i with g(b_i) = (1+theta)^-i >= g(age)."""
        if self._poly:
            return math.floor(math.log1p(age) * self._poly + 1e-12)
        if self._expo:
            return math.floor(age * self._expo + 1e-12)
        v = self._nl(age)
        return math.floor(v * self._inv_ln1t + 1e-12) if v < _INF else _INF

    def _fits(self, start: float, end: float) -> bool:
        """True if the timestamps [start, end] lie in one age band at t_now."""
        tn = self._tnow
        return self._band(tn - end) == self._band(tn - start)

    def update(self, x: int, t: float, weight: float = 1.0) -> None:
        """Add key *x* observed at time *t* with *weight*. O(log m) amortized + merges.

        Bad input raises before anything changes.
        """
        if (type(t) is not int and type(t) is not float) or not -_INF < t < _INF:
            t = _bad_time(t)
        if type(x) is not int or not 0 <= x < self._U:
            x = self._proto._bad_key(x)
        if (type(weight) is not int and type(weight) is not float) or not 0 < weight < _INF:
            weight = QDigest._bad_weight(weight)
        S = self._S
        if t > self._tnow:
            self._tnow = t
        starts = self._starts
        i = bisect_right(starts, t) - 1
        if i >= 0 and S[i].end >= t:
            s = S[i]
            s.q._add_leaf(x, weight)
            if t < s.tmin:
                s.tmin = t
            if t > s.tmax:
                s.tmax = t
        else:
            # extend a neighbour when the union stays inside one band, else a new singleton
            tn = self._tnow
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
                S.insert(i + 1, _Summary(t, t, (p, p._base + x, 0.0 + weight)))
                starts.insert(i + 1, t)
        if len(S) > 2 * self._m_after_pass + 8:
            self.merge_pass()

    def merge_pass(self) -> None:
        """Merge neighbours whose union lies inside one age band at t_now. O(m + merges).

        Runs automatically whenever m doubles; merging only ever lowers space (each merge
        keeps the (1 + theta) weight-ratio guarantee because g is smooth).
        """
        S = self._S
        if not S:
            return
        tn = self._tnow
        ps = self._poly
        band = self._band  # the polynomial closed form is inlined in the loop below
        log1p = math.log1p
        floor = math.floor
        a = S[0]
        out = [a]
        append = out.append  # bound method cached: one call per summary
        b_start = band(tn - a.start)  # band of the oldest timestamp of a = out[-1]
        q: QDigest | None = None  # a.q, fetched on a's first merge (a may be a lazy singleton)
        nodes: dict[int, float] = {}
        for s in S[1:]:
            if ps:
                same = floor(log1p(tn - s.end) * ps + 1e-12) == b_start
            else:
                same = band(tn - s.end) == b_start
            if same:
                # q._merge_from(s.q) inlined (same node sums, n, and compress rule)
                if q is None:
                    q = a.q
                    nodes = q._nodes
                sq = s._q
                if isinstance(sq, tuple):  # a lazy singleton: add its one leaf
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
                b_start = floor(log1p(tn - s.start) * ps + 1e-12) if ps else band(tn - s.start)
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
        d = QDigest(self._U, self._beta, backend="python")
        for s in self._S:
            gamma = g(tt - s.tmax)
            if gamma > 0:
                d._add_scaled(s.q, gamma)
        d._nodes = {k: v for k, v in d._nodes.items() if v > 0}
        if len(d._nodes) > d._cap:
            d.compress()
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
        return math.fsum(self._g(tt - s.tmax) * s.q.total_weight for s in self._S)

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
        self._tnow = max(self._tnow, other._tnow)
        mine = self._S
        theirs = [_Summary(s.start, s.end, s.q.copy()) for s in other._S]
        for a, b in zip(theirs, other._S, strict=False):
            a.tmin, a.tmax = b.tmin, b.tmax
        allS = sorted(mine + theirs, key=lambda s: (s.start, s.end))
        out: list[_Summary] = []
        for s in allS:
            if out and self._fits(min(out[-1].start, s.start), max(out[-1].end, s.end)):
                a = out[-1]
                a.q.merge(s.q)
                a.start = min(a.start, s.start)
                a.end = max(a.end, s.end)
                a.tmin = min(a.tmin, s.tmin)
                a.tmax = max(a.tmax, s.tmax)
            else:
                out.append(s)
        self._S = out
        self._starts = [s.start for s in out]
        self._m_after_pass = len(out)

    def _check(self) -> None:
        """O(m s) invariants: sorted starts, tmin/tmax inside intervals, ratio <= 1 + theta."""
        invariant(
            self._starts == [s.start for s in self._S], "ValueDivision", "start index out of sync"
        )
        for i, s in enumerate(self._S):
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
    def from_bytes(cls, data: bytes, decay: Callable[[float], float]) -> ValueDivision:
        """Rebuild from :meth:`to_bytes` (or ``WASK`` bytes) with the same *decay*;
        CodecError on bad bytes. O(m s)."""
        from windowagg import codec

        def read(r: _format.Reader) -> ValueDivision:
            return cls._read(r, decay)

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
    def _read(cls, r: _format.Reader, decay: Callable[[float], float]) -> ValueDivision:
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
        vd = cls(U, decay, theta, beta)
        for _ in range(m):
            start, end, tmin, tmax = r.f64(), r.f64(), r.f64(), r.f64()
            q = QDigest._read_body(r)
            if q.universe != U or q.eps != beta:
                raise r.fail("inner digest parameters differ")
            s = _Summary(start, end, q)
            s.tmin, s.tmax = tmin, tmax
            vd._S.append(s)
        vd._starts = [s.start for s in vd._S]
        vd._tnow = tnow if has else -_INF
        vd._m_after_pass = len(vd._S)
        try:
            vd._check()
        except AssertionError as e:
            raise r.fail(str(e)) from None
        return vd
