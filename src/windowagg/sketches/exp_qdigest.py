"""ExpDecayQDigest: quantiles, ranks and heavy hitters under exponential decay (Theorem 3).

Fact card
---------
=============  ==============================================================================
ordering       out-of-order: any arrival order; a late item just gets a smaller weight
input          integer keys in [0, U), timestamps (finite numbers), weights > 0
update         O(1) amortized (a q-digest leaf insertion of weight w*exp(lam*(t - landmark)))
queries        as QDigest: O(log s) after a sort; decayed count D(t) exact (up to rounding)
space          as QDigest(U, eps): <= 4L/eps + 1 nodes after compress(), <= 12L/eps + 1
               at any time (the same as without decay)
error          D(t) = sum_i w_i exp(-lam (t - t_i)), L = ceil(log2 U):
               rank:     |rank(x, t) - r_t(x)| <= eps*D(t)/2
               quantile: W_t(< q) <= (phi + eps) D(t), W_t(<= q) >= (phi - eps) D(t);
                         the same q for every query time t (uniform scaling)
               heavy hitters: all x with f_t(x) >= phi D(t) (phi > eps), none below
               (phi - eps) D(t)
merge          the same bounds for the union, any merge tree (landmarks are aligned first)
backends       ``backend=``: the held QDigest is the compiled twin or the Python reference;
               same nodes, floats, answers and codec bytes on both
paper          Cormode, Korn, Tirthapura 2007, section 4.1, Theorem 3; guide section 2.5
=============  ==============================================================================

Weights are kept relative to a *landmark* time L0 (forward decay): an item (x, t_i, w) is
stored with weight ``w * exp(lam * (t_i - L0))``, which never changes afterwards; a query at
time t multiplies everything by ``exp(-lam * (t - L0))``. When a timestamp runs more than
``300/lam`` past the landmark, the landmark moves forward and every stored weight is
multiplied by ``exp(-lam * shift)`` (a uniform rescale keeps the digest valid), so the
stored weights never overflow however long the stream runs. Items older than ~745/lam
before the landmark underflow to weight 0; they are counted nowhere, which is within float
precision of their true decayed weight relative to anything at the landmark.

Examples
--------
>>> d = ExpDecayQDigest(universe=1000, eps=0.01, lam=0.1)
>>> for t in range(100):
...     d.update(t % 10, t)
>>> d.update(999, 20)                      # a late item: weighted by its own timestamp
>>> round(d.decayed_count(99), 6)
10.508226
>>> d.quantile(0.5)                      # exact decayed median: 6
6
"""

from __future__ import annotations

import math
import sys
from collections.abc import Iterable
from typing import Any

from windowagg._backend import Backend, resolve_backend
from windowagg._invariants import invariant
from windowagg.errors import (
    ArgumentError,
    ArgumentTypeError,
    EmptyWindowError,
    TimestampError,
    WeightOverflowError,
)
from windowagg.sketches import _format
from windowagg.sketches._qdigest_queries import _check_phi
from windowagg.sketches.qdigest import _OVERFLOW, QDigest, QDigestBounds

__all__ = ["ExpDecayQDigest"]

_INF = math.inf
_FMAX = sys.float_info.max  # the finite floats; an int past it is not a finite time or weight
_exp = math.exp


def _weight_overflow(who: str, t: float, lm: float, lam: float, tmax: float) -> WeightOverflowError:
    """The error of *who*'s query at time *t* whose decayed total is past float64 (the
    native ExpDecaySpaceSaving writes the same text). O(1)."""
    return WeightOverflowError(
        f"{who}: at query time t={t!r} the decayed weights overflow float64 "
        f"(t is {lm - t!r} before the landmark {lm!r} and each weight grows as "
        f"exp({lam!r} * (landmark - t))); ask at a time nearer the events, e.g. "
        f"t={float(tmax)!r} (the largest timestamp seen, the default)"
    )


def _scale(
    who: str, lm: float | None, lam: float, tmax: float, total: float, t: float | None
) -> float:
    """The factor ``exp(-lam (t - lm))`` from landmark units to decayed weights at time *t*
    (None: *tmax*, the largest timestamp seen) of *who*, a summary with landmark *lm*
    (None: empty, 0.0) holding *total* in landmark units. WeightOverflowError when the
    factor or the decayed total at *t* is past float64 (a time far before the events).
    O(1)."""
    if lm is None:
        return 0.0
    tt = _bad_time(tmax if t is None else t)
    try:
        s = _exp(-lam * (tt - lm))
    except OverflowError:
        s = math.inf
    if s == math.inf or total * s == math.inf:
        raise _weight_overflow(who, tt, lm, lam, tmax)
    return s


def _bad_time(t: Any) -> float:
    if isinstance(t, bool) or not isinstance(t, (int, float)):
        try:
            t = float(t)
        except (TypeError, ValueError):
            raise TimestampError(
                f"timestamp must be a finite number, got {t!r} ({type(t).__name__})"
            ) from None
    try:
        finite = math.isfinite(t)
    except OverflowError:  # an int past float64
        finite = False
    if not finite:
        raise TimestampError(f"timestamp must be a finite number, got {t!r}")
    return float(t)


class ExpDecayQDigest:
    """q-digest under exponential decay g(a) = exp(-lam * a) (Theorem 3).

    Parameters
    ----------
    universe, eps : as :class:`QDigest`.
    lam : float
        Decay rate per time unit (> 0).
    backend : {"auto", "native", "python"}, optional
        The :class:`QDigest` held (:mod:`windowagg._backend`): the compiled twin or the
        Python reference. The landmark arithmetic is this class's on both; the digest's
        nodes, floats, answers and bytes are the same on both (a state written by one is
        read by the other). The default follows ``$WINDOWAGG_BACKEND``.
    """

    __slots__ = ("_horizon", "_lam", "_lm", "_q", "_tmax")

    def __eq__(self, other: object) -> bool:
        """The same state, slot by slot (what the invariant checks compare a stored summary
        with its recomputation by: two merges of the same inputs are equal). O(size)."""
        if type(other) is not type(self):
            return NotImplemented
        return all(getattr(self, a) == getattr(other, a) for a in self.__slots__)

    def __init__(
        self, universe: int, eps: float, lam: float, *, backend: Backend | None = None
    ) -> None:
        if not isinstance(lam, (int, float)) or not (math.isfinite(lam) and lam > 0):
            raise ArgumentError(f"lam must be a positive finite number, got {lam!r}")
        self._q = QDigest(universe, eps, backend=backend)
        self._lam = float(lam)
        self._lm: float | None = None
        self._horizon = 300.0 / self._lam
        self._tmax = -_INF

    @staticmethod
    def error_bound(universe: int, eps: float) -> QDigestBounds:
        """Bounds (fractions of D(t)) and space, as :meth:`QDigest.error_bound`. O(1)."""
        return QDigest.error_bound(universe, eps)

    @property
    def backend(self) -> str:
        """The digest held: ``"native"`` or ``"python"``. O(1)."""
        return self._q.backend

    @property
    def lam(self) -> float:
        """The decay rate."""
        return self._lam

    @property
    def landmark(self) -> float | None:
        """Current landmark L0 (None before the first update)."""
        return self._lm

    @property
    def size(self) -> int:
        """Stored nodes. O(1)."""
        return self._q.size

    @property
    def max_timestamp(self) -> float | None:
        """Largest timestamp seen (the default query time), None when empty."""
        return None if self._tmax == -_INF else self._tmax

    def __repr__(self) -> str:
        return (
            f"ExpDecayQDigest(universe={self._q.universe}, eps={self._q.eps}, lam={self._lam}, "
            f"nodes={self._q.size})"
        )

    def _move_to(self, new_lm: float) -> float | None:
        """The factor exp(-lam (new_lm - landmark)) that moving the landmark forward to
        *new_lm* rescales every weight by, None when it does not move. O(1)."""
        lm = self._lm
        if lm is None or not new_lm > lm:
            return None
        return _exp(-self._lam * (new_lm - lm))

    def _check_total(self, f: float | None, add: float) -> None:
        """ArgumentError unless the total weight after a landmark move by *f* plus *add*
        stays a float64 (checked before anything changes). O(1), O(s) when f is given."""
        q = self._q
        n = q._rescaled_total(f) if f is not None else q.total_weight
        if not (add < _INF and n + add < _INF):
            raise ArgumentError(_OVERFLOW)

    def update(self, x: int, t: float, weight: float = 1.0) -> None:
        """Add key *x* observed at time *t* with *weight*. O(1) amortized.

        Errors (TypeError/ValueError/TimestampError, ArgumentError when the stored total
        would overflow) leave the summary unchanged.

        >>> d = ExpDecayQDigest(16, 0.1, lam=1.0); d.update(3, 0.0); d.update(4, 1.0)
        >>> round(d.decayed_count(1.0), 6)
        1.367879
        """
        q = self._q
        if (type(t) is not int and type(t) is not float) or not -_FMAX <= t <= _FMAX:
            t = _bad_time(t)
        if type(x) is not int or not 0 <= x < q._U:
            x = q._bad_key(x)
        if (type(weight) is not int and type(weight) is not float) or not 0 < weight <= _FMAX:
            weight = q._bad_weight(weight)
        lm = self._lm
        f = None
        if lm is None:
            lm = float(t)
        elif t - lm > self._horizon:
            f = self._move_to(float(t))
            lm = float(t)
        w = weight * _exp(self._lam * (t - lm))
        nat = q._nat
        if f is not None or not (w < _INF and q.total_weight + w < _INF):
            self._check_total(f, w)
        # checked: from here on nothing raises
        if f is not None:
            q._rescale(f)
        self._lm = lm
        if t > self._tmax:
            self._tmax = t
        if w <= 0.0:  # underflow: the item is negligible next to the landmark's scale
            return
        if nat is not None:
            nat.update(x, w)
            return
        nodes = q._nodes
        leaf = q._base + x
        nodes[leaf] = nodes.get(leaf, 0.0) + w
        q._n += w
        q._sorted = None
        if len(nodes) > q._cap:
            q.compress()

    def update_many(self, xs: Any, ts: Any, weights: Any = None) -> None:
        """Add many (key, time[, weight]) at once: the array verb (numpy arrays are
        fastest; the weights are computed with numpy and added by the held digest's
        ``update_many``, one native call). O(b log b + s) Python, O(b + s) native.

        Everything is validated before anything changes.
        """
        import numpy as np

        t = np.asarray(ts, dtype=float).reshape(-1)
        if t.size == 0:
            return
        tmin, tmax = float(t.min()), float(t.max())  # NaN if any is: min and max propagate it
        if not (math.isfinite(tmin) and math.isfinite(tmax)):
            raise TimestampError("timestamps must be finite numbers (found NaN or inf)")
        w = None if weights is None else np.asarray(weights, dtype=float).reshape(-1)
        if w is not None and w.size != t.size:
            raise ArgumentError(f"{t.size} timestamps but {w.size} weights")
        if w is not None and not (np.all(np.isfinite(w)) and np.all(w > 0)):
            raise ArgumentError("weights must be positive finite numbers")
        keys = np.asarray(xs).reshape(-1)
        if keys.size != t.size:
            raise ArgumentError(f"{keys.size} keys but {t.size} timestamps")
        from windowagg.sketches._qdigest_kernels import key_array

        keys = key_array(np, keys, self._q.universe)  # validates keys, changes nothing
        lm = self._lm
        f = None
        if lm is None:
            lm = tmin
            if tmax - lm > self._horizon:  # nothing stored yet: the landmark just starts late
                lm = tmax
        elif tmax - lm > self._horizon:
            f = self._move_to(tmax)
            lm = tmax
        with np.errstate(over="ignore"):  # an infinite weight is refused below
            ww = t - lm  # in place from here: the same floats as w * exp(lam * (t - lm))
            ww *= self._lam
            np.exp(ww, out=ww)
            if w is not None:
                ww = w * ww
        if not ww.min() > 0:  # some weight underflowed to 0 (none is NaN: t, w finite)
            keep = ww > 0
            keys, ww = keys[keep], ww[keep]
        with np.errstate(over="ignore"):
            total = float(np.cumsum(ww)[-1]) if ww.size else 0.0
        if not np.all(np.isfinite(ww)):
            raise ArgumentError(_OVERFLOW)
        self._check_total(f, total)
        # checked: from here on nothing raises
        if f is not None:
            self._q._rescale(f)
        self._lm = lm
        if tmax > self._tmax:
            self._tmax = tmax
        if keys.size:  # keys checked by key_array, weights finite > 0: no second check
            self._q._add_checked(keys, ww)

    def merge(self, other: ExpDecayQDigest) -> None:
        """Add *other* (same universe, eps, lam; either backend) into this summary.
        O(s1 + s2).

        The landmarks are aligned (the later one wins) and counts added node-wise; the
        bounds hold for the union with D = D1 + D2. Nothing changes when it raises.
        """
        if not isinstance(other, ExpDecayQDigest):
            raise ArgumentTypeError(
                f"can only merge an ExpDecayQDigest, got {type(other).__name__}"
            )
        if other._lam != self._lam:
            raise ArgumentError(f"cannot merge lam={other._lam} into lam={self._lam}")
        if other._q.universe != self._q.universe or other._q.eps != self._q.eps:
            raise ArgumentError("cannot merge ExpDecayQDigests with different universe or eps")
        if other._lm is None:
            return
        if self._lm is None:
            self._q.merge(other._q)
            self._lm = other._lm
            self._tmax = other._tmax
            return
        f = self._move_to(other._lm)
        lm = self._lm if f is None else other._lm
        gamma = _exp(-self._lam * (lm - other._lm))
        self._check_total(f, other._q.total_weight * gamma)
        # checked: from here on nothing raises
        q = self._q
        if f is not None:
            q._rescale(f)
        self._lm = lm
        q._add_scaled(other._q, gamma)
        q._drop_zeros()
        self._tmax = max(self._tmax, other._tmax)
        q._compress_if_full()

    def merge_many(self, others: Iterable[ExpDecayQDigest]) -> None:
        """:meth:`merge` of each summary in turn (the array verb: all checked first). The
        result is the left-to-right fold, the same nodes and bytes as merging one by one.
        O(sum of sizes).
        """
        items = list(others)
        for o in items:
            if not isinstance(o, ExpDecayQDigest):
                raise ArgumentTypeError(
                    f"can only merge an ExpDecayQDigest, got {type(o).__name__}"
                )
            if o._lam != self._lam:
                raise ArgumentError(f"cannot merge lam={o._lam} into lam={self._lam}")
            if o._q.universe != self._q.universe or o._q.eps != self._q.eps:
                raise ArgumentError("cannot merge ExpDecayQDigests with different universe or eps")
        before = self.copy()
        try:
            for o in items:
                self.merge(o)
        except BaseException:
            self._q, self._lm, self._tmax = before._q, before._lm, before._tmax
            raise

    def compress(self) -> None:
        """Compress the underlying digest. O(s + L)."""
        self._q.compress()

    def copy(self) -> ExpDecayQDigest:
        """An independent copy on the same backend (for fold-style aggregation, e.g.
        Spark). O(s)."""
        d = ExpDecayQDigest.__new__(ExpDecayQDigest)
        d._q = self._q.copy()
        d._lam, d._lm, d._horizon, d._tmax = self._lam, self._lm, self._horizon, self._tmax
        return d

    # ---------------------------------------------------------------- queries
    def _scale(self, t: float | None) -> float:
        """The factor from landmark units to decayed weights at time *t*: :func:`_scale`."""
        return _scale("ExpDecayQDigest", self._lm, self._lam, self._tmax, self._q.total_weight, t)

    def decayed_count(self, t: float | None = None) -> float:
        """D(t) = sum_i w_i exp(-lam (t - t_i)), exact up to float rounding. O(1).

        *t* defaults to the largest timestamp seen.
        """
        return self._q.total_weight * self._scale(t)

    def rank(self, x: int, t: float | None = None) -> float:
        """Decayed weight of keys <= x at time t, error <= eps*D(t)/2. O(L + log s)."""
        return self._q.rank(x) * self._scale(t)

    def rank_bounds(self, x: int, t: float | None = None) -> tuple[float, float]:
        """Certified (lo, hi) around the decayed weight of keys <= x. O(L + log s)."""
        lo, hi = self._q.rank_bounds(x)
        s = self._scale(t)
        return lo * s, hi * s

    def range_count(self, lo: int, hi: int, t: float | None = None) -> float:
        """Decayed weight of keys in [lo, hi], error <= eps*D(t). O(L + log s)."""
        return self._q.range_count(lo, hi) * self._scale(t)

    def quantile(self, phi: float) -> int:
        """Decayed phi-quantile; the same for every query time (Theorem 3). O(log s).

        W_t(< q) <= (phi + eps) D(t) and W_t(<= q) >= (phi - eps) D(t).
        """
        if self._q.is_empty():
            raise EmptyWindowError("quantile of an empty ExpDecayQDigest; add values first")
        return self._q.quantile(phi)

    def quantiles(self, phis: Iterable[float]) -> list[int]:
        """:meth:`quantile` of each phi (the array verb: one native call), every phi checked
        first. O(s log s + k log s).

        >>> d = ExpDecayQDigest(100, 0.01, lam=0.5); d.update_many(range(100), [0.0] * 100)
        >>> d.quantiles([0.25, 0.5])
        [24, 49]
        """
        ps = [_check_phi(p) for p in phis]
        if ps and self._q.is_empty():
            raise EmptyWindowError("quantile of an empty ExpDecayQDigest; add values first")
        return self._q.quantiles(ps)

    def heavy_hitters(self, phi: float, t: float | None = None) -> list[tuple[int, float]]:
        """(key, decayed weight estimate at t), heaviest first. O(s L).

        All keys with f_t(x) >= phi D(t) (phi > eps), none with f_t(x) < (phi - eps) D(t);
        estimates within eps*D(t)/2.
        """
        _check_phi(phi)
        s = self._scale(t)
        return [(k, v * s) for k, v in self._q.heavy_hitters(phi)]

    def digest(self, t: float | None = None) -> QDigest:
        """A plain QDigest of the decayed weights at time t (a copy). O(s)."""
        return self._q._scaled(self._scale(t))

    def _check(self) -> None:
        """O(s) invariants: the inner digest's, and weights finite under the landmark."""
        self._q._check()
        if self._lm is None:
            invariant(self._q.is_empty(), "ExpDecayQDigest", "items stored without a landmark")
        else:
            invariant(
                self._tmax - self._lm <= self._horizon + 1e-9,
                "ExpDecayQDigest",
                "landmark fell too far behind",
            )

    # ---------------------------------------------------------------- bytes
    def to_bytes(self) -> bytes:
        """Serialize as :mod:`windowagg.codec` bytes (tag ``windowagg.ExpDecayQDigest``;
        see docs/sketches.md). O(s)."""
        return _format.dumps(self)

    def _write(self, w: _format.Writer) -> None:
        w.f64(self._lam)
        w.u8(0 if self._lm is None else 1)
        w.f64(0.0 if self._lm is None else self._lm)
        w.f64(self._tmax if self._lm is not None else 0.0)
        self._q._write_body(w)

    @classmethod
    def from_bytes(cls, data: bytes, *, backend: Backend | None = None) -> ExpDecayQDigest:
        """Rebuild from :meth:`to_bytes` of either backend (or ``WASK`` bytes) on *backend*;
        CodecError on malformed bytes, on both backends. O(s log s).

        >>> d = ExpDecayQDigest(16, 0.1, lam=1.0); d.update(3, 0.0)
        >>> ExpDecayQDigest.from_bytes(d.to_bytes(), backend="python") == d
        True
        """
        d = _format.loads(cls, data, _format.KIND_EXP_QDIGEST, cls._read)
        if backend is not None:
            d._q._become(resolve_backend(backend, "ExpDecayQDigest"))
        return d

    def _to_codec(self) -> tuple[Any, ...]:
        return _format.to_plain(self._write)

    @classmethod
    def _from_codec(cls, plain: Any) -> ExpDecayQDigest:
        return _format.from_plain(plain, _format.KIND_EXP_QDIGEST, cls._read, "ExpDecayQDigest")

    @classmethod
    def _read(cls, r: _format.Reader) -> ExpDecayQDigest:
        lam = r.f64()
        has = r.u8()
        lm = r.f64()
        tmax = r.f64()
        q = QDigest._read_body_native(r) if resolve_backend(None, "ExpDecayQDigest") else None
        if q is None:
            q = QDigest._read_body(r)
        if not 0 < lam < _INF or has not in (0, 1):
            raise r.fail(f"bad parameters lam={lam}, flag={has}")
        if has and not (math.isfinite(lm) and math.isfinite(tmax)):
            raise r.fail(f"landmark {lm} and largest timestamp {tmax} must be finite")
        d = cls(q.universe, q.eps, lam, backend="python")
        d._q = q
        if has:
            d._lm, d._tmax = lm, tmax
            if tmax - lm > d._horizon + 1e-9:
                raise r.fail("largest timestamp is too far past the landmark")
        elif not q.is_empty():
            raise r.fail("items without a landmark")
        # the default backend (the native load checks the nodes again: CodecError; a no-op
        # when _read_body_native loaded them)
        q._become(resolve_backend(None, "ExpDecayQDigest"))
        return d
