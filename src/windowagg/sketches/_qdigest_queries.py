"""The q-digest's state and its queries: rank, range count, quantiles, frequencies, heavy hitters.

A base of :class:`windowagg.sketches.QDigest` (its fact card, the error analysis and the
updates, merge, compress and codec live in ``qdigest.py``): the slots every digest holds
and the read side over them, on both backends. Queries never change the summary (the
Python reference caches one sort of its nodes until the next mutation).

Fact card
---------
=============  ==============================================================================
state          ``_nodes`` {heap id: count} (or the compiled twin ``_nat``), n, L, U, eps, the
               size cap, the cached post-order of the nodes (``_sorted``)
rank           ``rank_bounds``/``rank``/``range_count``: O(L + log s); the first query after
               a mutation sorts the nodes once, O(s log s) (natively as well)
quantile       O(log s) after that sort; ``quantiles(phis)``: one native call, O(k log s)
frequency      ``frequency_bounds``: O(L); ``heavy_hitters``: O(s L)
error          n the total weight: |rank(x) - r(x)| <= eps*n/2, hi - lo <= eps*n for every
               bounds pair; quantile(phi) = q: W(<= q) >= phi*n, W(< q) <= (phi + eps)*n;
               heavy hitters: every f(x) >= phi*n, none below (phi - eps)*n
paper          Shrivastava et al., "Medians and beyond" (SenSys 2004), section 4 (queries);
               guide ``seed-decay.md`` section 2.1
=============  ==============================================================================
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable, Iterator
from typing import Any

from windowagg.errors import ArgumentError, ArgumentTypeError, EmptyWindowError
from windowagg.sketches import _qdigest_kernels as _k
from windowagg.sketches.exact_decay import SNAP

__all__ = ["_QDigestQueries", "_check_phi"]

_U64_MAX = (1 << 64) - 1


class _QDigestQueries:
    """The state of a q-digest and its queries (a base of :class:`~windowagg.sketches.QDigest`)."""

    __slots__ = ("_L", "_U", "_base", "_cap", "_eps", "_n", "_nat", "_nodes", "_sorted")
    _L: int  # ceil(log2 U): the tree's height
    _U: int  # the universe: keys in [0, U)
    _base: int  # 2**L: the heap id of key 0's leaf
    _cap: int  # updates compress past this many nodes
    _eps: float
    _n: float  # the total weight (the Python reference's)
    _nat: Any  # the compiled twin, when it holds the nodes
    _nodes: dict[int, float]  # {heap id: count} (the Python reference's)
    _sorted: tuple[list[int], list[float], list[int]] | None  # cached _post_order()

    def _range_of(self, node: int) -> tuple[int, int]:
        d = node.bit_length() - 1
        shift = self._L - d
        lo = (node - (1 << d)) << shift
        return lo, lo + (1 << shift) - 1

    def _post_order(self) -> tuple[list[int], list[float], list[int]]:
        """(his, prefix sums, ids) of the nodes sorted by (hi, range size)."""
        if self._sorted is None:
            L = self._L
            keyed = []
            for node in self._nodes:
                d = node.bit_length() - 1
                shift = L - d
                hi = ((node - (1 << d) + 1) << shift) - 1
                keyed.append((hi, shift, node))
            keyed.sort()
            his = [k[0] for k in keyed]
            ids = [k[2] for k in keyed]
            pref = []
            acc = 0.0
            nodes = self._nodes
            for node in ids:
                acc += nodes[node]
                pref.append(acc)
            self._sorted = (his, pref, ids)
        return self._sorted

    def _low_le(self, x: int) -> float:
        """Sum of counts of nodes lying entirely <= x (a certified lower bound on r(x))."""
        if x < 0:
            return 0.0
        his, pref, _ = self._post_order()
        i = bisect_right(his, x)
        return pref[i - 1] if i else 0.0

    def _straddle_le(self, x: int) -> float:
        """Sum of counts of nodes with lo <= x < hi (proper ancestors of leaf x). O(L)."""
        if x < 0 or x >= self._base - 1:
            return 0.0
        nodes = self._nodes
        get = nodes.get
        node = (self._base + x) >> 1
        s = 0.0
        L = self._L
        depth = L - 1
        while node:
            # the ancestor at `depth` ends after x unless x is the last key of its range
            if ((x + 1) >> (L - depth)) == (x >> (L - depth)):
                s += get(node, 0.0)
            node >>= 1
            depth -= 1
        return s

    def rank_bounds(self, x: int) -> tuple[float, float]:
        """(lo, hi) with lo <= r(x) <= hi and hi - lo <= eps*n; r(x) = weight of keys <= x.

        Certified: holds for every input order and merge tree. O(L + log s) after the
        first query following a mutation (that one sorts: O(s log s)).
        """
        x = self._query_key(x)
        if self._nat is not None:
            if x < 0:
                return 0.0, 0.0
            b: tuple[float, float] = self._nat.rank_bounds(min(x, _U64_MAX))
            return b
        lo = self._low_le(x)
        return lo, lo + self._straddle_le(x)

    def rank(self, x: int) -> float:
        """Estimated weight of keys <= x, with |rank(x) - r(x)| <= eps*n/2. O(L + log s).

        >>> from windowagg.sketches import QDigest
        >>> d = QDigest(16, 0.1); d.update_many(range(16)); d.rank(7)
        8.0
        """
        lo, hi = self.rank_bounds(x)
        return (lo + hi) / 2

    def range_count(self, lo: int, hi: int) -> float:
        """Estimated weight of keys in [lo, hi] (inclusive), error <= eps*n. O(L + log s).

        Returns 0.0 when lo > hi.
        """
        lo = self._query_key(lo)
        hi = self._query_key(hi)
        if lo > hi:
            return 0.0
        a_lo, a_hi = self.rank_bounds(hi)
        if lo == 0:
            return (a_lo + a_hi) / 2
        b_lo, b_hi = self.rank_bounds(lo - 1)
        return max(0.0, ((a_lo - b_hi) + (a_hi - b_lo)) / 2)

    def quantile(self, phi: float) -> int:
        """An eps-approximate phi-quantile q: W(< q) <= (phi+eps)n and W(<= q) >= (phi-eps)n.

        More precisely W(<= q) >= phi*n (q is the smallest node end whose certified rank
        reaches phi*n, so an uncompressed digest answers exactly) and W(< q) <= (phi+eps)n,
        up to a slack of ``2**-40`` relative (``exact_decay.SNAP``) that absorbs the float
        rounding of the sums: a rank that ties phi*n resolves the same way whatever the
        order of summation, and as the exact decayed quantile resolves it.
        Raises EmptyWindowError when the digest is empty. O(log s) after the first query
        following a mutation.

        >>> from windowagg.sketches import QDigest
        >>> d = QDigest(1000, 0.01); d.update_many(range(1000)); d.quantile(0.9)
        899
        """
        phi = _check_phi(phi)
        if self._nat is not None:
            q: int = self._nat.quantile(phi)
            return q
        if not self._nodes:
            raise EmptyWindowError("quantile of an empty QDigest; add values first")
        his, pref, _ = self._post_order()
        n = self._n
        target = phi * n * SNAP  # a rank tying phi*n resolves alike whatever the summing
        if target <= 0:
            # phi = 0: the first node with positive count; W(< q) <= eps*n
            for h, p in zip(his, pref, strict=False):
                if p > 0:
                    return h
            return his[-1]
        # smallest hi whose prefix reaches the target (float slack: never past the end)
        i = _k.first_reaching(pref, target)
        return his[min(i, len(his) - 1)]

    def quantiles(self, phis: Iterable[float]) -> list[int]:
        """:meth:`quantile` for each phi (the array verb: one native call); every phi is
        checked before the first answer. O(s log s + k log s).

        >>> from windowagg.sketches import QDigest
        >>> d = QDigest(1000, 0.01); d.update_many(range(1000)); d.quantiles([0.1, 0.5])
        [99, 499]
        """
        ps = [_check_phi(p) for p in phis]
        if self._nat is not None:
            qs: list[int] = self._nat.quantiles(ps)
            return qs
        return [self.quantile(p) for p in ps]

    def frequency_bounds(self, x: int) -> tuple[float, float]:
        """(lo, hi) with lo <= f(x) <= hi and hi - lo <= eps*n (f = weight of key x). O(L).

        A key outside the universe has none: (0.0, 0.0)."""
        x = self._query_key(x)
        if not 0 <= x < self._U:
            return 0.0, 0.0
        if self._nat is not None:
            b: tuple[float, float] = self._nat.frequency_bounds(x)
            return b
        nodes = self._nodes
        leaf = self._base + x
        lo = nodes.get(leaf, 0.0)
        s = 0.0
        node = leaf >> 1
        while node:
            s += nodes.get(node, 0.0)
            node >>= 1
        return lo, lo + s

    def heavy_hitters(self, phi: float) -> list[tuple[int, float]]:
        """Keys that may hold >= phi of the weight, as (key, estimate), heaviest first.

        Every key with f(x) >= phi*n is reported (when phi > eps) and no key with
        f(x) < (phi - eps)*n is; |estimate - f(x)| <= eps*n/2. O(s * L).

        >>> from windowagg.sketches import QDigest
        >>> d = QDigest(64, 0.05); d.update_many([5] * 50 + list(range(50)))
        >>> [k for k, _ in d.heavy_hitters(0.3)]
        [5]
        """
        phi = _check_phi(phi)
        if self._nat is not None:
            hh: list[tuple[int, float]] = self._nat.heavy_hitters(phi)
            return hh
        out = []
        thr = phi * self._n
        nodes = self._nodes
        base = self._base
        anc_cache: dict[int, float] = {}
        for node, c in nodes.items():
            if node < base:
                continue
            # sum of counts of the proper ancestors, memoized along shared paths
            p = node >> 1
            path = []
            while p and p not in anc_cache:
                path.append(p)
                p >>= 1
            acc = anc_cache.get(p, 0.0) if p else 0.0
            for q in reversed(path):
                acc += nodes.get(q, 0.0)
                anc_cache[q] = acc
            s = anc_cache[node >> 1] if node >> 1 else 0.0
            if c + s >= thr:
                out.append((node - base, c + s / 2))
        out.sort(key=lambda kv: (-kv[1], kv[0]))
        return out

    def _query_key(self, x: Any) -> int:
        if type(x) is int:
            return x
        if isinstance(x, bool) or not hasattr(x, "__index__"):
            raise ArgumentTypeError(f"query key must be an int, got {x!r}")
        return int(x.__index__())

    def __iter__(self) -> Iterator[tuple[int, int, float]]:
        """(lo, hi, count) of every stored node in post-order (children before parents)."""
        if self._nat is not None:
            yield from self._nat.post_nodes()
            return
        _his, _, ids = self._post_order()
        nodes = self._nodes
        for node in ids:
            lo, hi = self._range_of(node)
            yield lo, hi, nodes[node]


def _check_phi(phi: float) -> float:
    if not isinstance(phi, (int, float)) or isinstance(phi, bool) or not 0.0 <= phi <= 1.0:
        raise ArgumentError(f"phi must be a number in [0, 1], got {phi!r}")
    return float(phi)
