"""ValueDivision's parts: the interval summary (``_Summary``, with its lazy one-item form)
and the placement of an ``update_many`` batch (``_BatchPlan``). Split from
:mod:`windowagg.sketches.value_division` (the class and its fact card live there) to keep
that module readable; nothing here is public."""

from __future__ import annotations

from itertools import pairwise
from typing import TYPE_CHECKING, Any

from windowagg.sketches.qdigest import QDigest

if TYPE_CHECKING:
    from windowagg.sketches.value_division import ValueDivision

__all__ = ["_BatchPlan", "_Summary", "_one_leaf"]

_new_qdigest = QDigest.__new__


def _one_leaf(proto: QDigest, leaf: int, weight: float, native: bool) -> QDigest:
    """A digest with *proto*'s parameters holding weight at one leaf node (no checks), the
    compiled twin when *native*. O(1) (native: O(L))."""
    if native:
        d = proto._empty_like(True)
        d._nat.update(leaf - proto._base, weight)
        return d
    q = _new_qdigest(QDigest)
    q._U, q._L, q._eps, q._base, q._cap = proto._U, proto._L, proto._eps, proto._base, proto._cap
    q._nodes = {leaf: weight}
    q._n = weight
    q._sorted = None
    q._nat = None
    return q


class _Summary:
    """One time interval's summary. ``_q`` is its QDigest, or, for a summary that has only
    ever held one item, the lightweight ``(proto, leaf node, weight, native)``: most flow
    items open such a singleton that a merge pass folds into a neighbour before it grows, so
    the digest is built only when something reads ``q`` (same contents either way)."""

    __slots__ = ("_q", "end", "start", "tmax", "tmin")

    def __eq__(self, other: object) -> bool:
        """The same state, slot by slot (what the invariant checks compare a stored summary
        with its recomputation by: two merges of the same inputs are equal). O(size)."""
        if type(other) is not type(self):
            return NotImplemented
        return all(getattr(self, a) == getattr(other, a) for a in self.__slots__)

    def __init__(
        self, start: float, end: float, q: QDigest | tuple[QDigest, int, float, bool]
    ) -> None:
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

    @property
    def total(self) -> float:
        """The interval's total weight (a singleton's without building its digest). O(1)."""
        q = self._q
        return q[2] if isinstance(q, tuple) else q.total_weight


class _BatchPlan:
    """Where :meth:`ValueDivision.update_many` puts a checked batch, computed before anything
    changes (the decay runs here): the batch sorted by time, the items inside an interval
    grouped per interval, the others cut into runs of one gap and one age band at the
    batch's latest time, each run marked to extend its left neighbour (0), its right
    neighbour (1) or to open an interval (2). O(b log b + runs)."""

    __slots__ = ("groups", "keys", "runs", "t_now", "times", "weights")

    def __init__(self, vd: ValueDivision, keys: Any, tt: Any, w: Any) -> None:
        import numpy as np

        S = vd._S
        m = len(S)
        T = max(vd._tnow, float(tt.max()))
        order = np.argsort(tt, kind="stable")
        st = tt[order]
        self.t_now = T
        self.times = st
        self.keys = keys[order]
        self.weights = None if w is None else w[order]
        if m:
            idx = np.searchsorted(np.array(vd._starts, dtype=np.float64), st, side="right") - 1
            ends = np.array([s.end for s in S], dtype=np.float64)
            inside = (idx >= 0) & (ends[np.maximum(idx, 0)] >= st)
        else:
            idx = np.full(st.size, -1, dtype=np.int64)
            inside = np.zeros(st.size, dtype=bool)
        self.groups: list[tuple[int, Any]] = []
        ii = np.flatnonzero(inside)
        if ii.size:
            gj = idx[ii]
            o = np.argsort(gj, kind="stable")  # per interval, still in time order
            ii, gj = ii[o], gj[o]
            cuts = [0, *(np.flatnonzero(gj[1:] != gj[:-1]) + 1).tolist(), ii.size]
            for a, z in pairwise(cuts):
                self.groups.append((int(gj[a]), ii[a:z]))
        self.runs: list[tuple[int, int, Any]] = []
        gi = np.flatnonzero(~inside)
        if gi.size:
            bands = vd._bands(T - st[gi])
            gj = idx[gi]
            cut = (gj[1:] != gj[:-1]) | (bands[1:] != bands[:-1])
            cuts = [0, *(np.flatnonzero(cut) + 1).tolist(), gi.size]
            band = vd._band
            for a, z in pairwise(cuts):
                j, bt = int(gj[a]), float(bands[a])
                first = a == 0 or int(gj[a - 1]) != j  # the gap's oldest run
                last = z == gi.size or int(gj[z]) != j  # the gap's youngest run
                how = 2
                if first and j >= 0 and band(T - S[j].start) == bt:
                    how = 0
                elif last and j + 1 < m and band(T - S[j + 1].end) == bt:
                    how = 1
                self.runs.append((j, how, gi[a:z]))

    def spans(self, S: list[_Summary]) -> list[tuple[float, float]]:
        """The (start, end) of every interval :meth:`apply` leaves, computed without
        changing *S* (so a merge pass can be planned before the batch goes in). O(m + runs).
        """
        st = self.times
        spans = [(s.start, s.end) for s in S]
        new_after: dict[int, list[tuple[float, float]]] = {}
        for j, how, sel in self.runs:
            lo, hi = float(st[sel[0]]), float(st[sel[-1]])
            if how == 0:
                spans[j] = (spans[j][0], hi)
            elif how == 1:
                spans[j + 1] = (lo, spans[j + 1][1])
            else:
                new_after.setdefault(j, []).append((lo, hi))
        if not new_after:
            return spans
        out = list(new_after.get(-1, ()))
        for j, span in enumerate(spans):
            out.append(span)
            out.extend(new_after.get(j, ()))
        return out

    def apply(self, vd: ValueDivision) -> None:
        """Place the batch (nothing here raises: the caller checked the total). O(b + m)."""
        S = vd._S
        st, sk, sw = self.times, self.keys, self.weights
        if self.t_now > vd._tnow:
            vd._tnow = self.t_now
        for j, sel in self.groups:
            s = S[j]
            s.q._add_checked(sk[sel], None if sw is None else sw[sel])
            lo, hi = float(st[sel[0]]), float(st[sel[-1]])
            if lo < s.tmin:
                s.tmin = lo
            if hi > s.tmax:
                s.tmax = hi
        new_after: dict[int, list[_Summary]] = {}
        p = vd._proto
        for j, how, sel in self.runs:
            lo, hi = float(st[sel[0]]), float(st[sel[-1]])
            ks, ws = sk[sel], None if sw is None else sw[sel]
            if how == 0:
                s = S[j]
                s.q._add_checked(ks, ws)
                s.end = s.tmax = hi
            elif how == 1:
                s = S[j + 1]
                s.q._add_checked(ks, ws)
                s.start = s.tmin = lo
            else:
                q: QDigest | tuple[QDigest, int, float, bool]
                if sel.size == 1:  # a lazy singleton, as update() opens one
                    w1 = 1.0 if ws is None else float(ws[0])
                    q = (p, p._base + int(ks[0]), 0.0 + w1, vd._native)
                else:
                    q = vd._digest()
                    q._add_checked(ks, ws)
                new_after.setdefault(j, []).append(_Summary(lo, hi, q))
        if new_after:
            out = list(new_after.get(-1, ()))
            for j, s in enumerate(S):
                out.append(s)
                out.extend(new_after.get(j, ()))
            vd._S = out
        vd._starts = [s.start for s in vd._S]
