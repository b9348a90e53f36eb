"""Invariants, merge and the versioned codec of the sliding-window summaries.

``_SlidingWindowBase`` = ``_SlidingCore`` (``_sliding_core.py``) + these; the format is
documented in docs/sketches.md (no pickle; limits checked before allocating).
"""

from __future__ import annotations

import copy
import heapq
import math
import struct
from collections.abc import Callable
from typing import Any

from windowagg._backend import Backend, resolve_backend
from windowagg._invariants import invariant
from windowagg.errors import ArgumentError, ArgumentTypeError
from windowagg.sketches import _format
from windowagg.sketches._qdigest_kernels import compress_dict as _compress_dict
from windowagg.sketches._sliding_core import MAX_WEIGHT, _Level, _SlidingCore, kappa_of


class _SlidingWindowBase(_SlidingCore):
    __slots__ = ()

    # ---------------------------------------------------------------- checks
    def _check(self) -> None:
        """O(space) invariants; InvariantError (an AssertionError) names the broken one."""
        if self._nat is not None:  # the twin's own check, then the reference's on its state
            self._nat._check()
            self._python_twin()._check()
            return
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
        if self._nat is not None:  # the twin checks the total before it changes anything
            self._nat.merge(other._native_twin())
            return
        if other._nat is not None:
            other = other._python_twin()
        if other._n == 0:
            return
        self._check_total(other._n)
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
    # ------------------------------------------------------------- backends
    def _fields(self) -> tuple[Any, ...]:
        """The state's codec fields in layout 3's canonical order, the same on both backends:
        (merged, tau0, tmax, n, top_n, buffer times, keys, weights as big-endian uint64 bytes,
        [(tau, exact, node depths, offsets, counts) per level]). O(space log space)."""
        if self._nat is not None:
            return tuple(self._nat.fields())
        B = sorted(self._B)
        k = len(B)
        levels: list[tuple[Any, ...]] = []
        for lv in self._levels:
            ids = sorted(lv.cnt)
            fields: tuple[Any, ...] = (lv.tau, lv.exact, *_node_fields(lv.cnt, ids))
            if lv.val is not None:
                val = lv.val
                fields += ([_node_fields(val[i], sorted(val[i])) for i in ids],)
            levels.append(fields)
        return (
            self._merged,
            self._tau0,
            self._tmax,
            self._n,
            self._top_n,
            struct.pack(f">{k}Q", *[T for T, _, _ in B]),
            struct.pack(f">{k}Q", *[x for _, x, _ in B]),
            struct.pack(f">{k}Q", *[ww for _, _, ww in B]),
            levels,
        )

    def _set_fields(self, fields: tuple[Any, ...]) -> None:
        """The Python state from :meth:`_fields` (checked ones: a twin's). O(space)."""
        merged, tau0, tmax, n, top_n, Ts, xs, ws, levels = fields
        k = len(Ts) // 8
        wl = struct.unpack(f">{k}Q", ws)
        self._merged = bool(merged)
        self._tau0, self._tmax, self._n, self._top_n = tau0, tmax, n, top_n
        self._B = list(
            zip(struct.unpack(f">{k}Q", Ts), struct.unpack(f">{k}Q", xs), wl, strict=True)
        )  # sorted: already a heap
        self._Bw = sum(wl)
        self._levels = []
        for j, (tau, exact, *nodes) in enumerate(levels):
            lv = _Level(self._theta0 * (2 << j), self._values)
            lv.tau, lv.exact = tau, bool(exact)
            lv.cnt = _node_dict(*nodes[:3])
            if lv.val is not None:
                lv.val = {i: _node_dict(*f) for i, f in zip(lv.cnt, nodes[3], strict=True)}
            self._levels.append(lv)

    def _params(self) -> tuple[float, int, int, float, int, int]:
        W = 0 if self._W is None else self._W
        return (self._eps, self._LT, W, self._cf, self._kappa, self._U)

    def _make_native(self, backend: Backend | None) -> None:
        """Hold an empty native twin when *backend* resolves to native (at construction).
        A universe past the twin's 2**62 stays on the reference unless native was asked
        for by name (ArgumentError). O(1)."""
        name = type(self).__name__
        if not resolve_backend(backend, name):
            return
        from windowagg._native.sliding_window import MAX_UNIVERSE, make  # below this class

        if self._U > MAX_UNIVERSE:
            if backend == "native":
                raise ArgumentError(
                    f"{name}: the compiled twin takes a universe up to 2**62, got {self._U}; "
                    "use backend='python' (or 'auto') for a larger one"
                )
            return
        self._nat = make(self._values, self._params())

    def _decayed_count_bounds(
        self, g: Callable[[float], float], t: int | None, horizon: int | None
    ) -> tuple[float, float]:
        if self._nat is not None:  # O(space), as the query: on the reference's state
            ref: _SlidingWindowBase = self._python_twin()
            return ref._decayed_count_bounds(g, t, horizon)
        return super()._decayed_count_bounds(g, t, horizon)

    def _update_many_native(self, arrays: tuple[tuple[Any, int, int], ...]) -> bool:
        """The native batch when every (array, lo, hi) of *arrays* is a 1-D numpy integer
        array of values in [lo, hi] (None: the weights, 1 each) and the lengths agree: True
        when done. False sends the batch through the reference's checks, so a bad batch
        raises the reference's error. O(b)."""
        try:
            import numpy as np
        except ImportError:  # pragma: no cover - numpy is a test dependency
            return False
        out: list[Any] = []
        for a, lo, hi in arrays:
            if a is None:
                out.append(None)
                continue
            if not isinstance(a, np.ndarray) or a.ndim != 1 or a.dtype.kind not in "iu":
                return False
            if a.size and (int(a.min()) < lo or int(a.max()) > hi):
                return False
            out.append(np.ascontiguousarray(a, dtype=np.int64))
        if len({a.size for a in out if a is not None}) > 1:
            return False
        self._nat.update_many(*out)  # checks the total first
        return True

    def _native_twin(self) -> Any:
        """The native object holding this state (its own, or a new one). O(1) or O(space)."""
        if self._nat is not None:
            return self._nat
        from windowagg._native.sliding_window import load  # below this class

        return load(self._values, self._params(), self._fields())

    def _python_twin(self) -> Any:
        """A Python-backed summary with this state (a copy when native). O(space)."""
        if self._nat is None:
            return self
        twin = copy.copy(self)
        twin._nat = None
        twin._set_fields(self._fields())
        return twin

    def _become(self, native: bool) -> None:
        """Hold the state on the native twin (*native*; a universe past 2**62 stays on the
        reference) or in Python, in place. O(space)."""
        from windowagg._native.sliding_window import MAX_UNIVERSE  # below this class

        native = native and self._U <= MAX_UNIVERSE
        if native == (self._nat is not None):
            return
        if native:
            self._nat = self._native_twin()
            self._B, self._levels, self._Bw, self._n, self._top_n = [], [], 0, 0, 0
        else:
            fields = self._fields()
            self._nat = None
            self._set_fields(fields)

    # ---------------------------------------------------------------- bytes
    def _write(self, w: _format.Writer) -> None:
        """The fields of layout 3: layout 2's, in the canonical order (the buffer sorted by
        (t, key, weight), every node list by ascending heap id). O(space log space)."""
        w.f64(self._eps)
        w.u8(self._LT)
        w.f64(self._cf)
        w.u64(0 if self._W is None else self._W)
        w.u64(self._U)
        merged, tau0, tmax, n, top_n, Ts, xs, ws, levels = self._fields()
        w.u8(1 if merged else 0)
        w.i64(tau0)
        w.i64(tmax)
        w.u64(n)
        w.u64(top_n)
        w.u64(len(Ts) // 8)
        for arr in (Ts, xs, ws):  # u64s
            w.blob(arr)
        w.u64(len(levels))
        for tau, exact, *nodes in levels:
            w.i64(tau)
            w.u8(1 if exact else 0)
            for part in nodes[:3]:  # node_ids, then f64s
                w.blob(part)
            if self._values:  # one value digest per node, in the same order
                for vd in nodes[3]:
                    for part in vd:
                        w.blob(part)

    def _read_vdict(self, r: _format.Reader) -> dict[int, float]:
        ids = r.node_ids(self._LU)
        _canonical_ids(r, ids)
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
        U = r.universe()  # up to 2**64 (a universe of every 64-bit key)
        merged = r.u8()
        if not (0 < eps < 1 and 1 <= LT <= 62 and cf > 0 and merged in (0, 1)):
            raise r.fail(f"bad parameters eps={eps}, time_bits={LT}, capacity_factor={cf}")
        if kappa_of(cf, LT, eps) is None:
            raise r.fail(
                f"capacity_factor * time_bits / eps = {cf} * {LT} / {eps} is past 2**62 "
                "items of buffer"
            )
        return eps, LT, cf, (W or None), U, merged

    def _read_state(self, r: _format.Reader, merged: int) -> None:
        self._merged = bool(merged)
        self._tau0 = r.i64()
        self._tmax = r.i64()
        if not (-1 <= self._tau0 < self._tbase and -1 <= self._tmax < self._tbase):
            raise r.fail("bad tau0 or max_timestamp")
        self._n = r.u64()
        self._top_n = r.u64()
        nb = r.u64()
        Ts, xs, ws = r.u64s(), r.u64s(), r.u64s()
        if not (len(Ts) == len(xs) == len(ws) == nb):
            raise r.fail("buffer arrays differ in length")
        if any(self._tbase <= T for T in Ts) or any(not 1 <= ww <= MAX_WEIGHT for ww in ws):
            raise r.fail("buffered item out of range")
        if any(x >= self._U for x in xs) if self._values else any(xs):
            raise r.fail("buffered key outside the universe")
        self._B = list(zip(Ts, xs, ws, strict=False))
        if r.layout >= _format.SLIDING_VERSION and any(
            self._B[i] > self._B[i + 1] for i in range(len(self._B) - 1)
        ):
            raise r.fail("buffer not in (t, key, weight) order")
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
            _canonical_ids(r, ids)
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


def _canonical_ids(r: _format.Reader, ids: list[int]) -> None:
    """Layout 3 lists nodes by ascending heap id (layouts 1 and 2: any order). O(k)."""
    if r.layout >= _format.SLIDING_VERSION and any(
        ids[i] > ids[i + 1] for i in range(len(ids) - 1)
    ):
        raise r.fail("nodes not in ascending heap-id order")


def _node_fields(nodes: dict[int, float], ids: list[int]) -> tuple[bytes, bytes, bytes]:
    """(depths, big-endian uint64 offsets, big-endian float64 counts) of *ids* (sorted). O(k)."""
    depths = [i.bit_length() - 1 for i in ids]
    offs = [i - (1 << d) for i, d in zip(ids, depths, strict=True)]
    k = len(ids)
    return (
        bytes(depths),
        struct.pack(f">{k}Q", *offs),
        struct.pack(f">{k}d", *[nodes[i] for i in ids]),
    )


def _node_dict(depths: bytes, offs: bytes, counts: bytes) -> dict[int, float]:
    """The inverse of :func:`_node_fields`. O(k)."""
    k = len(depths)
    ids = [(1 << d) + o for d, o in zip(depths, struct.unpack(f">{k}Q", offs), strict=True)]
    return dict(zip(ids, struct.unpack(f">{k}d", counts), strict=True))
