"""ExpDecaySpaceSaving: heavy hitters under exponential decay with k = ceil(1/eps) counters.

Fact card
---------
=============  ==============================================================================
ordering       out-of-order: any arrival order (a late item carries a smaller weight)
input          any hashable keys (serialization: int, str, bytes), timestamps, weights > 0
update         O(1) for a monitored key; O(log k) amortized to replace the minimum counter
space          k = ceil(1/eps) counters (plus the exact decayed total)
error          D(t) = sum_i w_i exp(-lam (t - t_i)); f_t(x) the decayed weight of key x:
               estimate(x) - eps*D(t) <= c - over <= f_t(x) <= c = estimate(x)
               heavy_hitters(phi): every x with f_t(x) >= phi D(t) (phi > eps); no x with
               f_t(x) < (phi - eps) D(t)
merge          the same bounds for the union under any merge tree (Misra-Gries style merge of
               Agarwal et al. 2012: add lower bounds, subtract the (k+1)-th largest)
paper          Cormode, Korn, Tirthapura 2007, section 4.2, Theorem 4 (Fig. 3, with the decay
               typo fixed); Metwally et al. 2005 (Space-Saving); guide section 2.6
=============  ==============================================================================

Counts are kept in landmark units (see :mod:`windowagg.sketches.exp_qdigest`): every
counter decays by the same factor, so comparing stored counts compares decayed counts at
any common time, and the minimum is found with a lazily refreshed heap.

Two backends (``backend=``, :mod:`windowagg._backend`): the compiled twin
(``_native/include/windowagg/space_saving.hpp``, held in ``_nat``) or this class's own dicts,
the readable reference. Both hold the same counters in the same order with the same floats,
evict the same key on ties (the heap holds the same entries on both), give the
same answers and write the same bytes. The compiled twin holds int keys in int64, str and
bytes keys. Any other key (float, bool, an int past int64, a tuple, ...) is the Python
implementation's: with ``backend="native"`` passed to the class it raises
:class:`~windowagg.errors.ArgumentTypeError` and changes nothing; otherwise (``"auto"``, or
the default ``backend=None`` whatever ``$WINDOWAGG_BACKEND`` says, which is what the library's
own callers use) the summary moves its whole state, heap included, to the Python
implementation at the first such key and goes on there (``backend`` then says
``"python"``), so the answers and bytes are those of the reference either way. The twin
holds times as float64: an int timestamp past 2**53 is its float there (``max_timestamp``),
as the bytes write it on both.

Invariants (checked by ``_check``): for a monitored key, ``c - over <= f <= c``; for any
other key, ``f <= floor``; ``floor <= min c``; ``sum c + (k - m) floor <= n`` (m monitored
keys, n the total), which gives ``floor <= n/k <= eps n`` after any sequence of updates and
merges.

The slots, the moves of the state between the backends, ``_check`` and the fields the codec
writes are in ``_space_saving_state.py`` (a base of :class:`ExpDecaySpaceSaving`).

Examples
--------
>>> ss = ExpDecaySpaceSaving(eps=0.1, lam=0.01)
>>> for t in range(1000):
...     ss.update("hot" if t % 3 == 0 else f"cold{t}", t)
>>> [k for k, _ in ss.heavy_hitters(0.2)]
['hot']
"""

from __future__ import annotations

import heapq
import math
import sys
from collections.abc import Hashable
from typing import Any

from windowagg._backend import Backend, resolve_backend
from windowagg.errors import (
    ArgumentError,
    ArgumentTypeError,
    TimestampError,
)
from windowagg.sketches import _format
from windowagg.sketches._qdigest_queries import _check_phi
from windowagg.sketches._space_saving_state import _I64_MAX, _key_from, _key_tag, _SpaceSavingState
from windowagg.sketches.exp_qdigest import _bad_time, _scale
from windowagg.sketches.qdigest import QDigest

__all__ = ["ExpDecaySpaceSaving"]

_INF = math.inf
_FMAX = sys.float_info.max  # the finite floats; an int past it is not a finite time or weight
_exp = math.exp


class ExpDecaySpaceSaving(_SpaceSavingState):
    """Space-Saving with k counters under exponential decay exp(-lam * age) (Theorem 4).

    Parameters
    ----------
    eps : float, optional
        Accuracy in (0, 1); k = ceil(1/eps) counters.
    lam : float
        Decay rate (> 0).
    k : int, optional
        Number of counters instead of eps (then eps = 1/k).
    backend : {"auto", "native", "python"}, optional
        The implementation: the compiled twin or the pure-Python reference (same state,
        answers and bytes; the module docstring says which keys each holds). The default
        follows ``$WINDOWAGG_BACKEND``.

    Notes
    -----
    Mutators (``update``, ``update_many``, ``merge``) return None; queries never change the
    summary; a call that raises changes nothing.
    """

    __slots__ = ()  # the state is declared in _SpaceSavingState

    def __init__(
        self,
        eps: float | None = None,
        lam: float = 0.0,
        *,
        k: int | None = None,
        backend: Backend | None = None,
    ) -> None:
        if k is None:
            if eps is None or not isinstance(eps, (int, float)) or not 0 < eps < 1:
                raise ArgumentError(f"eps must be a number in (0, 1), got {eps!r}")
            k = math.ceil(1.0 / eps)
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise ArgumentError(f"k must be an int >= 1, got {k!r}")
        if not isinstance(lam, (int, float)) or not (math.isfinite(lam) and lam > 0):
            raise ArgumentError(f"lam must be a positive finite number, got {lam!r}")
        self._k = k
        self._lam = float(lam)
        self._lm = None
        self._horizon = 300.0 / self._lam
        self._tmax = -_INF
        self._c = {}
        self._over = {}
        self._floor = 0.0
        self._n = 0.0
        self._heap = []
        self._seq = 0
        self._nat = None  # the compiled twin, when it holds the state
        self._native_only = False  # backend="native" asked for: no move to Python
        if resolve_backend(backend, "ExpDecaySpaceSaving"):
            from windowagg._native.space_saving import make  # below this class

            self._nat = make(k, self._lam)
            self._native_only = backend == "native"

    @property
    def backend(self) -> str:
        """The implementation holding the state: ``"native"`` or ``"python"``. O(1)."""
        return "python" if self._nat is None else "native"

    @property
    def k(self) -> int:
        """Number of counters."""
        return self._k

    @property
    def eps(self) -> float:
        """1/k: the error as a fraction of the decayed total."""
        return 1.0 / self._k

    @property
    def size(self) -> int:
        """Monitored keys (<= k). O(1)."""
        return len(self._c) if self._nat is None else int(self._nat.size)

    @property
    def max_timestamp(self) -> float | None:
        """Largest timestamp seen (the default query time), None when empty. O(1)."""
        tmax = self._tmax if self._nat is None else self._nat.tmax
        return None if tmax == -_INF else tmax

    def __repr__(self) -> str:
        return f"ExpDecaySpaceSaving(k={self._k}, lam={self._lam}, monitored={self.size})"

    # ------------------------------------------------------------ the two backends
    # (the moves of the state between them: _space_saving_state.py)
    def _python_view(self) -> ExpDecaySpaceSaving:
        """This summary on the Python implementation (itself, or a copy read out of the
        native twin). O(k)."""
        if self._nat is None:
            return self
        s = self.copy()
        s._native_only = False
        s._leave_native(None)
        return s

    def _relandmark(self, new_lm: float) -> None:
        assert self._lm is not None
        f = _exp(-self._lam * (new_lm - self._lm))
        self._c = {x: v * f for x, v in self._c.items()}
        self._over = {x: v * f for x, v in self._over.items()}
        self._floor *= f
        self._n *= f
        self._lm = new_lm
        self._rebuild_heap()

    def _rebuild_heap(self) -> None:
        h = []
        for i, (x, v) in enumerate(self._c.items()):
            h.append((v, i, x))
        heapq.heapify(h)
        self._heap = h
        self._seq = len(h)

    def update(self, x: Hashable, t: float, weight: float = 1.0) -> None:
        """Count key *x* seen at time *t* with *weight*. O(1), or O(log k) amortized.

        Bad timestamps or weights raise before anything changes.
        """
        nat = self._nat
        if nat is not None:
            # the twin checks t and weight itself (and changes nothing when it refuses);
            # anything it refuses or does not hold goes through the reference's checks below
            try:
                if nat.update(x, t, weight):
                    return
            except (TypeError, ValueError):
                pass
        if (type(t) is not int and type(t) is not float) or not -_FMAX <= t <= _FMAX:
            t = _bad_time(t)
        if (type(weight) is not int and type(weight) is not float) or not 0 < weight <= _FMAX:
            weight = QDigest._bad_weight(weight)
        if nat is not None:
            if nat.update(x, t, weight):
                return
            hash(x)  # unhashable keys fail here, before any change
            self._leave_native(x)
        hash(x)  # unhashable keys fail here, before any change
        lm = self._lm
        if lm is None:
            lm = self._lm = float(t)
        a = t - lm
        if a > self._horizon:
            self._relandmark(float(t))
            a = 0.0
        if t > self._tmax:
            self._tmax = t
        w = weight * _exp(self._lam * a)
        if w <= 0.0:
            return
        self._n += w
        counts = self._c
        c = counts.get(x)
        if c is not None:
            counts[x] = c + w
            return
        heap = self._heap
        if len(counts) < self._k:
            fl = self._floor
            counts[x] = fl + w
            self._over[x] = fl
            self._seq += 1
            heapq.heappush(heap, (fl + w, self._seq, x))
            return
        # replace the minimum counter; heap entries are refreshed lazily (counts only grow)
        while True:
            c0, _, y = heap[0]
            cy = counts.get(y)
            if cy is None:
                heapq.heappop(heap)
            elif cy != c0:
                self._seq += 1
                heapq.heapreplace(heap, (cy, self._seq, y))
            else:
                break
        heapq.heappop(heap)
        del counts[y]
        del self._over[y]
        if c0 > self._floor:
            self._floor = c0
        counts[x] = c0 + w
        self._over[x] = c0
        self._seq += 1
        heapq.heappush(heap, (c0 + w, self._seq, x))
        if len(heap) > 4 * self._k + 16:
            self._rebuild_heap()

    def update_many(self, keys: Any, times: Any, weights: Any = None) -> None:
        """:meth:`update` of each ``(keys[i], times[i], weights[i])`` in order: the array
        verb. *keys*: an integer numpy array (held as int64) or any sequence of keys; *times*
        and *weights* (None: 1 each): float64 arrays or sequences of the same length.
        O(b) plus O(log k) per eviction; natively one hash probe and one exp per item.

        The same state as the :meth:`update` calls one by one, on both backends. Everything
        is checked before anything changes (TimestampError for a time that is not finite,
        ArgumentError for a weight that is not positive and finite, TypeError for an
        unhashable key).

        >>> ss = ExpDecaySpaceSaving(k=2, lam=0.1)
        >>> ss.update_many(["a", "b", "a"], [0.0, 1.0, 2.0])
        >>> round(ss.estimate("a"), 4)
        1.8187
        """
        import numpy as np

        try:
            ts = np.ascontiguousarray(times, dtype=np.float64)
        except (TypeError, ValueError):
            raise TimestampError(
                f"ExpDecaySpaceSaving.update_many: times must be finite numbers, got {times!r}"
            ) from None
        if ts.ndim != 1 or not np.isfinite(ts).all():
            raise TimestampError(
                "ExpDecaySpaceSaving.update_many: times must be a 1-D array of finite numbers"
            )
        ws = None
        if weights is not None:
            try:
                ws = np.ascontiguousarray(weights, dtype=np.float64)
            except (TypeError, ValueError):
                raise ArgumentTypeError(
                    "ExpDecaySpaceSaving.update_many: weights must be positive finite numbers"
                ) from None
            if ws.shape != ts.shape or not ((ws > 0) & (ws < _INF)).all():
                raise ArgumentError(
                    "ExpDecaySpaceSaving.update_many: weights must be positive finite numbers, "
                    f"one per time ({ts.size} times)"
                )
        ka: Any = None  # int64 keys, when they all fit
        integral = isinstance(keys, np.ndarray) and keys.ndim == 1 and keys.dtype.kind in "iu"
        if integral and (keys.dtype.kind == "i" or keys.size == 0 or int(keys.max()) <= _I64_MAX):
            ka = np.ascontiguousarray(keys, dtype=np.int64)
        if ka is not None:
            kl: list[Any] | None = None
            nkeys = ka.size
        else:
            kl = keys.tolist() if isinstance(keys, np.ndarray) else list(keys)
            nkeys = len(kl)
        if nkeys != ts.size:
            raise ArgumentError(
                f"ExpDecaySpaceSaving.update_many: {nkeys} keys but {ts.size} times"
            )
        nat = self._nat
        if nat is not None:
            if nat.update_many(ka if kl is None else kl, ts, ws):
                return
            assert kl is not None
            for x in kl:
                hash(x)  # unhashable keys fail here, before any change
            self._leave_native(next(x for x in kl if not self._native_key(x)))
        if kl is None:
            kl = ka.tolist()
        for x in kl:
            hash(x)  # unhashable keys fail here, before any change
        up = self.update  # bound once: called per item
        wl = [1.0] * len(kl) if ws is None else ws.tolist()
        for x, t, w in zip(kl, ts.tolist(), wl, strict=True):
            up(x, t, w)

    def merge(self, other: ExpDecaySpaceSaving) -> None:
        """Add *other* (same k and lam) into this summary. O(k log k).

        Lower bounds c - floor are added, the (k+1)-th largest sum is subtracted from all and
        only positive ones kept (Agarwal et al. 2012); the invariants, hence the bounds, hold
        for the union with D = D1 + D2.
        """
        if not isinstance(other, ExpDecaySpaceSaving):
            raise ArgumentTypeError(
                f"can only merge an ExpDecaySpaceSaving, got {type(other).__name__}"
            )
        if other._k != self._k or other._lam != self._lam:
            raise ArgumentError(
                f"cannot merge k={other._k}, lam={other._lam} into k={self._k}, lam={self._lam}"
            )
        if self._nat is not None:
            onat = other._native_twin()
            if onat is not None:
                self._nat.merge(onat)
                return
            self._leave_native(next(x for x in other._c if not self._native_key(x)))
        other = other._python_view()
        if other._lm is None:
            return
        if other is self:
            other = self.copy()
        olm = other._lm
        assert olm is not None
        if self._lm is None:
            self._lm = olm
        if olm > self._lm:
            self._relandmark(olm)
        assert self._lm is not None
        g = _exp(-self._lam * (self._lm - olm))
        f1, f2 = self._floor, other._floor * g
        lb: dict[Hashable, float] = {x: c - f1 for x, c in self._c.items()}
        for x, c in other._c.items():
            lb[x] = lb.get(x, 0.0) + (c * g - f2)
        delta = 0.0
        if len(lb) > self._k:
            vals = sorted(lb.values(), reverse=True)
            delta = vals[self._k]
        F = f1 + f2 + delta
        self._c = {x: v - delta + F for x, v in lb.items() if v - delta > 0}
        self._over = {x: F for x in self._c}
        self._floor = F
        self._n += other._n * g
        self._tmax = max(self._tmax, other._tmax)
        self._rebuild_heap()

    def copy(self) -> ExpDecaySpaceSaving:
        """An independent copy. O(k)."""
        s = ExpDecaySpaceSaving(lam=self._lam, k=self._k, backend="python")
        s._native_only = self._native_only
        if self._nat is not None:
            s._nat = self._nat.copy()
            return s
        s._lm, s._tmax = self._lm, self._tmax
        s._c, s._over = dict(self._c), dict(self._over)
        s._floor, s._n = self._floor, self._n
        s._heap, s._seq = list(self._heap), self._seq
        return s

    # ---------------------------------------------------------------- queries
    def _scale(self, t: float | None) -> float:
        """The factor from landmark units to decayed weights at time *t* (as the native
        twin computes it): :func:`~windowagg.sketches.exp_qdigest._scale`. O(1)."""
        return _scale("ExpDecaySpaceSaving", self._lm, self._lam, self._tmax, self._n, t)

    def _nat_time(self, t: Any) -> float | None:
        """*t* for the native twin: checked as :meth:`_scale` checks it. O(1)."""
        if t is None or self._nat.landmark is None:
            return None
        return _bad_time(t)

    def decayed_count(self, t: float | None = None) -> float:
        """D(t), exact up to rounding; t defaults to the largest timestamp seen. O(1)."""
        if self._nat is not None:
            d: float = self._nat.decayed_count(self._nat_time(t))
            return d
        return self._n * self._scale(t)

    def estimate(self, x: Hashable, t: float | None = None) -> float:
        """Upper bound on f_t(x), at most eps*D(t) too high. O(1)."""
        if self._nat is not None:
            e = self._nat.estimate(x, self._nat_time(t))
            if e is not None:
                return float(e)
            return self._python_view().estimate(x, t)  # a key of another type: O(k)
        c = self._c.get(x)
        return (self._floor if c is None else c) * self._scale(t)

    def frequency_bounds(self, x: Hashable, t: float | None = None) -> tuple[float, float]:
        """(lo, hi) with lo <= f_t(x) <= hi and hi - lo <= eps*D(t). O(1)."""
        if self._nat is not None:
            b = self._nat.frequency_bounds(x, self._nat_time(t))
            if b is not None:
                return float(b[0]), float(b[1])
            return self._python_view().frequency_bounds(x, t)  # a key of another type: O(k)
        s = self._scale(t)
        c = self._c.get(x)
        if c is None:
            return 0.0, self._floor * s
        return (c - self._over[x]) * s, c * s

    def heavy_hitters(self, phi: float, t: float | None = None) -> list[tuple[Hashable, float]]:
        """(key, estimate at t), heaviest first: all f >= phi D (phi > eps), none < (phi-eps) D.

        O(k log k).
        """
        phi = _check_phi(phi)
        if self._nat is not None:
            hh: list[tuple[Hashable, float]] = self._nat.heavy_hitters(phi, self._nat_time(t))
            return hh
        thr = phi * self._n
        s = self._scale(t)
        out = [(x, c * s) for x, c in self._c.items() if c >= thr and c > 0]
        out.sort(key=lambda kv: -kv[1])
        return out

    # ---------------------------------------------------------------- bytes
    def to_bytes(self) -> bytes:
        """Serialize as :mod:`windowagg.codec` bytes (tag ``windowagg.ExpDecaySpaceSaving``);
        keys must be int, float, str or bytes. O(k)."""
        for x in self._c:  # (the native twin holds only keys that can be written)
            _key_tag(x)  # raises TypeError for a key that cannot be written
        return _format.dumps(self)

    @classmethod
    def from_bytes(cls, data: bytes, *, backend: Backend | None = None) -> ExpDecaySpaceSaving:
        """Rebuild from :meth:`to_bytes` of either backend (or ``WASK`` bytes) on *backend*;
        CodecError on malformed bytes. O(k)."""
        s = _format.loads(cls, data, _format.KIND_EXP_SPACE_SAVING, cls._read)
        if backend is not None:
            s._become(resolve_backend(backend, "ExpDecaySpaceSaving"), backend == "native")
        return s

    @classmethod
    def from_weights(
        cls,
        weights: Any,
        total: float,
        at: float,
        *,
        k: int,
        lam: float,
        backend: Backend | None = None,
    ) -> ExpDecaySpaceSaving:
        """The summary of a stream whose exact decayed weights as of *at* are known: the
        ``k`` heaviest of *weights* (``(key, weight)`` pairs, distinct keys, any order)
        held with no overestimate, the floor the ``(k + 1)``-th weight, the total *total*
        (every key's weight, held or not). Every invariant of the module docstring holds
        (a key not held weighs at most the floor, which no held count is below), so it
        merges and answers as any summary, with bounds that are 0 for the keys held.
        ``windowagg.spark.decayed_summary``'s exact top_k builds its summary so. O(m log m)
        for m pairs.

        >>> s = ExpDecaySpaceSaving.from_weights([("a", 3.0), ("b", 1.0), ("c", 2.0)], 6.5,
        ...                                      100.0, k=2, lam=0.1)
        >>> s.heavy_hitters(0.0), s.frequency_bounds("b"), s.decayed_count()
        ([('a', 3.0), ('c', 2.0)], (0.0, 1.0), 6.5)
        """
        s = cls(lam=lam, k=k, backend="python")  # checks k and lam
        pairs = sorted(((float(w), i, x) for i, (x, w) in enumerate(weights)), reverse=True)
        if not (isinstance(total, (int, float)) and math.isfinite(total) and total >= 0):
            raise ArgumentError(
                f"ExpDecaySpaceSaving.from_weights: total={total!r} must be "
                "a finite number >= 0 (the decayed weight of every key)"
            )
        at = _bad_time(at)
        for w, _, x in pairs:
            _key_tag(x)  # a key the codec can write (ArgumentTypeError otherwise)
            if not (math.isfinite(w) and w >= 0):
                raise ArgumentError(
                    f"ExpDecaySpaceSaving.from_weights: the weight of {x!r} is {w!r}; give "
                    "finite decayed weights >= 0"
                )
        held = pairs[:k]
        if len({x for _, _, x in pairs}) != len(pairs):
            raise ArgumentError(
                "ExpDecaySpaceSaving.from_weights: a key is given twice; "
                "give each key's whole weight once"
            )
        slack = 1e-9 * max(1.0, float(total))
        if math.fsum(w for w, _, _ in held) > total + slack:
            raise ArgumentError(
                f"ExpDecaySpaceSaving.from_weights: the weights held add up to more than the "
                f"total {total!r}; give the total of every key's weight"
            )
        s._c = {x: w for w, _, x in held}
        s._over = dict.fromkeys(s._c, 0.0)
        s._floor = pairs[k][0] if len(pairs) > k else 0.0
        s._n = float(total)
        if pairs or total > 0:
            s._lm, s._tmax = at, at
        s._rebuild_heap()
        s._check()
        s._become(resolve_backend(backend, "ExpDecaySpaceSaving"), backend == "native")
        return s

    def _to_codec(self) -> tuple[Any, ...]:
        return _format.to_plain(self._write)

    @classmethod
    def _from_codec(cls, plain: Any) -> ExpDecaySpaceSaving:
        s = _format.from_plain(
            plain, _format.KIND_EXP_SPACE_SAVING, cls._read, "ExpDecaySpaceSaving"
        )
        s._become(resolve_backend(None, "ExpDecaySpaceSaving"), False)
        return s

    @classmethod
    def _read(cls, r: _format.Reader) -> ExpDecaySpaceSaving:
        k = r.u64()
        lam = r.f64()
        has = r.u8()
        lm, tmax, floor, n = r.f64(), r.f64(), r.f64(), r.f64()
        m = r.u64()
        if not (1 <= k <= 1 << 32) or not lam > 0 or has not in (0, 1) or m > k:
            raise r.fail(f"bad parameters k={k}, lam={lam}, monitored={m}")
        if not (math.isfinite(floor) and math.isfinite(n) and floor >= 0 and n >= 0):
            raise r.fail("floor and total must be finite and >= 0")
        if has and not (math.isfinite(lm) and math.isfinite(tmax)):
            raise r.fail("landmark and largest timestamp must be finite")
        s = cls(lam=lam, k=k, backend="python")
        for _ in range(m):
            tag = r.u8()
            x = _key_from(tag, r.blob(), r)
            c, over = r.f64(), r.f64()
            if x in s._c:
                raise r.fail(f"duplicate key {x!r}")
            s._c[x], s._over[x] = c, over
        if has:
            s._lm, s._tmax = lm, tmax
        s._floor, s._n = floor, n
        s._rebuild_heap()
        try:
            s._check()
        except AssertionError as e:
            raise r.fail(str(e)) from None
        return s
