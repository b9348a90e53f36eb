"""QDigest: a deterministic, mergeable quantile summary over an integer universe [0, U).

Fact card
---------
=============  ==============================================================================
ordering       any arrival order (the summary is insensitive to order in its guarantee)
input          integer keys in [0, U), real weights > 0 (see ``mapping`` for real values)
update         O(1) amortized (leaf insertion; a full compress every ~2L/eps updates)
compress       O(s + L), s = stored nodes
queries        first query after a mutation O(s log s) (sorts once), later ones O(log s)
merge          O(s1 + s2) node-wise addition, then compress if over the size cap
space          <= 4L/eps + 1 nodes right after compress(), <= 12L/eps + 1 at any time
               (a time/space trade-off: compressing less often halves the update cost)
error          with n the total weight and L = ceil(log2 U):
               rank:   |rank(x) - r(x)| <= eps*n/2, r(x) = weight of items <= x
               range:  |range_count(a, b) - r[a, b]| <= eps*n
               quantile(phi) = q: W(< q) <= (phi + eps)*n and W(<= q) >= phi*n
               heavy hitters: every x with f(x) >= phi*n is reported (phi > eps),
               no x with f(x) < (phi - eps)*n is
merge error    the same bounds with n = n1 + n2, for any merge tree (mergeability)
paper          Shrivastava et al., "Medians and beyond" (SenSys 2004); used as the building
               block of Cormode, Korn, Tirthapura, "Time-decaying aggregates in out-of-order
               streams" (2007), sections 2 and 3; guide ``seed-decay.md`` section 2.1
=============  ==============================================================================

A node is a dyadic range of the universe, named by its heap id: the root is 1, node ``i``
has children ``2i`` and ``2i+1``, the leaf of key ``x`` is ``2**L + x``. Updates add weight
at the leaf; ``compress`` folds a pair of siblings and their parent into the parent whenever
the three hold at most ``eps*n/L`` together. Afterwards no non-leaf node holds more than
``eps*n/L``, so the at most L ancestors of a key (the only nodes whose items may lie on both
sides of it) hold at most ``eps*n``: that is the whole error analysis. Node-wise sums of two
digests keep the property with ``n1 + n2``, which is why digests merge.

The queries, and the slots every digest holds, are in ``_qdigest_queries.py`` (a base of
:class:`QDigest`); the compress kernels and batch checks in ``_qdigest_kernels.py``.

Examples
--------
>>> d = QDigest(universe=1024, eps=0.05)
>>> for x in range(1000):
...     d.update(x)
>>> d.total_weight
1000.0
>>> abs(d.quantile(0.5) - 500) <= 0.05 * 1000
True
>>> QDigest.error_bound(universe=1024, eps=0.05).rank_error
0.025
"""

from __future__ import annotations

import math
import struct
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from windowagg._backend import Backend, resolve_backend
from windowagg._invariants import invariant
from windowagg.errors import ArgumentError, ArgumentTypeError, CodecError
from windowagg.sketches import _format
from windowagg.sketches import _qdigest_kernels as _k
from windowagg.sketches._qdigest_queries import _QDigestQueries

__all__ = ["QDigest", "QDigestBounds"]

_INF = math.inf
_OVERFLOW = "QDigest: the total weight would overflow float64; scale the weights down"
CAP_FACTOR = 12  # updates compress when the digest exceeds CAP_FACTOR * L / eps + 1 nodes


@dataclass(frozen=True)
class QDigestBounds:
    """What a QDigest guarantees for given parameters, known before anything is built.

    Errors are fractions of the total weight n: multiply by n for absolute values.
    """

    universe_bits: int
    """L = ceil(log2 U): the height of the dyadic tree."""
    rank_error: float
    """|rank(x) - r(x)| <= rank_error * n."""
    range_error: float
    """|range_count(a, b) - r[a, b]| <= range_error * n."""
    quantile_error: float
    """quantile(phi) = q has W(< q) <= (phi + e)n and W(<= q) >= (phi - e)n."""
    heavy_hitter_error: float
    """heavy_hitters(phi) reports every f >= phi*n and none with f < (phi - e)n."""
    nodes_after_compress: int
    """Largest node count right after compress()."""
    max_nodes: int
    """Largest node count at any time (updates trigger compress above this)."""
    bytes_per_node: int = 17
    """Serialized size of one node (depth, offset, weight)."""


def _bits(universe: int) -> int:
    return max(1, (universe - 1).bit_length())


class QDigest(_QDigestQueries):
    """q-digest over integers in ``[0, universe)`` with compression parameter *eps*.

    Parameters
    ----------
    universe : int
        U >= 2; keys must be integers in [0, U). L = ceil(log2 U) <= 64.
    eps : float
        Accuracy in (0, 1): rank error <= eps*n/2, quantile error <= eps*n (n = total weight).
    backend : {"auto", "native", "python"}, optional
        The implementation (:mod:`windowagg._backend`): the compiled twin
        (``_native/include/windowagg/qdigest.hpp``, held in ``_nat``) or this class's own
        dict of nodes, the readable reference. Both hold the same nodes and floats, give the
        same answers and write the same bytes; the default follows ``$WINDOWAGG_BACKEND``.

    Notes
    -----
    Mutators (``update``, ``update_many``, ``merge``, ``compress``) return None; queries
    never change the summary; a call that raises changes nothing. Bounds for given
    parameters: :meth:`error_bound`.
    """

    __slots__ = ()  # the state is declared in _QDigestQueries

    def __init__(self, universe: int, eps: float, *, backend: Backend | None = None) -> None:
        if isinstance(universe, bool) or not isinstance(universe, int):
            raise ArgumentTypeError(f"universe must be an int >= 2, got {universe!r}")
        if universe < 2 or universe > 1 << 64:
            raise ArgumentError(f"universe must be in [2, 2**64], got {universe}")
        if not isinstance(eps, (int, float)) or not 0.0 < eps < 1.0:
            raise ArgumentError(f"eps must be a number in (0, 1), got {eps!r}")
        self._U = universe
        self._L = _bits(universe)
        self._eps = float(eps)
        self._base = 1 << self._L
        self._nodes = {}
        self._n = 0.0
        self._cap = math.ceil(CAP_FACTOR * self._L / self._eps) + 1
        self._sorted = None
        self._nat = None  # the compiled twin, when it holds the nodes
        if resolve_backend(backend, "QDigest"):
            from windowagg._native.qdigest import make  # below this class

            self._nat = make(universe - 1, self._eps)

    # ------------------------------------------------------------------ facts
    @staticmethod
    def error_bound(universe: int, eps: float) -> QDigestBounds:
        """Error and space bounds for ``QDigest(universe, eps)``, without building one. O(1).

        >>> b = QDigest.error_bound(2**32, 0.01)
        >>> b.universe_bits, b.quantile_error, b.nodes_after_compress
        (32, 0.01, 12801)
        """
        if universe < 2 or not 0.0 < eps < 1.0:
            raise ArgumentError("need universe >= 2 and 0 < eps < 1")
        L = _bits(universe)
        return QDigestBounds(
            universe_bits=L,
            rank_error=eps / 2,
            range_error=eps,
            quantile_error=eps,
            heavy_hitter_error=eps,
            nodes_after_compress=math.ceil(4 * L / eps) + 1,
            max_nodes=math.ceil(CAP_FACTOR * L / eps) + 1,
        )

    @property
    def backend(self) -> str:
        """The implementation held: ``"native"`` or ``"python"``. O(1)."""
        return "python" if self._nat is None else "native"

    @property
    def universe(self) -> int:
        """U: keys lie in [0, U)."""
        return self._U

    @property
    def eps(self) -> float:
        """The accuracy parameter."""
        return self._eps

    @property
    def universe_bits(self) -> int:
        """L = ceil(log2 U)."""
        return self._L

    @property
    def total_weight(self) -> float:
        """n: the sum of all weights added (exact up to float rounding). O(1)."""
        return self._n if self._nat is None else float(self._nat.n)

    @property
    def size(self) -> int:
        """Number of stored nodes (the paper's space measure). O(1)."""
        return len(self._nodes) if self._nat is None else int(self._nat.size)

    def __len__(self) -> int:
        return self.size

    def threshold(self) -> float:
        """eps*n/L: the largest count a non-leaf node may hold after compress. O(1)."""
        return self._eps * self.total_weight / self._L

    def is_empty(self) -> bool:
        """True when nothing has been added. O(1)."""
        return self.size == 0

    def __repr__(self) -> str:
        return (
            f"QDigest(universe={self._U}, eps={self._eps}, n={self.total_weight:g}, "
            f"nodes={self.size})"
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, QDigest):
            return NotImplemented
        return (
            self._U == other._U
            and self._eps == other._eps
            and self.total_weight == other.total_weight
            and self._items() == other._items()
        )

    __hash__ = None  # type: ignore[assignment]

    def copy(self) -> QDigest:
        """An independent copy. O(s)."""
        d = QDigest.__new__(QDigest)
        d._U, d._L, d._eps, d._base = self._U, self._L, self._eps, self._base
        d._nodes = dict(self._nodes)
        d._n = self._n
        d._cap = self._cap
        d._sorted = self._sorted
        d._nat = None if self._nat is None else self._nat.copy()
        return d

    # --------------------------------------------------------------- updates
    def _bad_key(self, x: Any) -> int:
        if isinstance(x, bool) or not hasattr(x, "__index__"):
            raise ArgumentTypeError(
                f"QDigest key must be an int in [0, {self._U}), got {x!r} "
                f"({type(x).__name__}); map real values with windowagg.sketches.ValueMapper"
            )
        xi = int(x.__index__())
        if not 0 <= xi < self._U:
            raise ArgumentError(f"QDigest key {xi} is outside the universe [0, {self._U})")
        return xi

    @staticmethod
    def _bad_weight(weight: Any) -> float:
        try:
            w = float(weight)
        except OverflowError:  # an int beyond float: not finite
            raise ArgumentError(
                f"weight must be a positive finite number, got {weight!r}"
            ) from None
        except (TypeError, ValueError):
            raise ArgumentTypeError(
                f"weight must be a positive finite number, got {weight!r}"
            ) from None
        if not 0.0 < w < _INF:
            raise ArgumentError(f"weight must be a positive finite number, got {weight!r}")
        return w

    def update(self, x: int, weight: float = 1.0) -> None:
        """Add key *x* with *weight* (> 0, finite). O(1) amortized, O(s) when it compresses.

        Error bounds are unchanged by updates (they hold relative to the new total n).
        Raises TypeError/ValueError (and changes nothing) for a bad key or weight.

        >>> d = QDigest(16, 0.1); d.update(3); d.update(3, 2.5); d.total_weight
        3.5
        """
        if type(x) is not int or not 0 <= x < self._U:
            x = self._bad_key(x)
        if type(weight) is not float or not 0 < weight < _INF:
            weight = self._bad_weight(weight)  # ints too: one beyond float would fail late
        if self._nat is not None:
            self._nat.update(x, weight)
            return
        n = self._n + weight
        if n == _INF:
            raise ArgumentError(_OVERFLOW)
        nodes = self._nodes
        leaf = self._base + x
        nodes[leaf] = nodes.get(leaf, 0.0) + weight
        self._n = n
        self._sorted = None
        if len(nodes) > self._cap:
            self.compress()

    def update_many(self, xs: Iterable[int], weights: Iterable[float] | None = None) -> None:
        """Add many keys at once: the array verb (an int64/uint64 buffer of keys, a float64
        buffer of weights or None for 1 each). Python: O(b log b + s) for b keys; native:
        O(b + s), one hash probe per key (keys of weight 1: appended while the digest cannot
        pass its cap, then counted in one probe each by the batch that may; weighted keys of
        a non-integral digest: appended as pairs, then sorted once by key).

        Same result guarantees as calling :meth:`update` for each key; the node layout may
        differ (it compresses once per call). Both backends add, per distinct key, its
        weights summed in input order, and n the weights summed in input order: the same
        floats. All input is validated before anything changes.

        >>> d = QDigest(100, 0.1); d.update_many([1, 2, 2, 99]); d.total_weight
        4.0
        """
        try:
            import numpy as np
        except ImportError:  # pragma: no cover - numpy is a test dependency
            xs_l = [self._bad_key(x) for x in xs]
            ws_l = [1.0] * len(xs_l) if weights is None else [self._bad_weight(w) for w in weights]
            if len(ws_l) != len(xs_l):
                raise ArgumentError("xs and weights differ in length") from None
            for x, w in zip(xs_l, ws_l, strict=False):
                self.update(x, w)
            return
        a = _k.key_array(np, xs, self._U)
        if a.size == 0:
            return
        wts = None if weights is None else _k.weight_array(np, weights, a.size)
        self._add_checked(a, wts)

    def _add_checked(self, a: Any, wts: Any) -> None:
        """:meth:`update_many` of a batch already checked (:func:`_k.key_array`,
        :func:`_k.weight_array`; ArgumentError, nothing changed, if n would overflow).
        O(b) natively, O(b log b) here."""
        if self._nat is not None:
            self._nat.update_many(a, wts)
            return
        import numpy as np

        uniq, wsum, total = _k.aggregate_keys(np, a, wts)
        if self._n + total == _INF:
            raise ArgumentError(_OVERFLOW)
        nodes = self._nodes
        get = nodes.get  # bound method cached: called once per distinct key
        base = self._base
        for k, v in zip(uniq.tolist(), wsum.tolist(), strict=False):
            leaf = base + k
            nodes[leaf] = get(leaf, 0.0) + v
        self._n += total
        self._sorted = None
        if len(nodes) > self._cap:
            self.compress()

    def merge(self, other: QDigest) -> None:
        """Add *other*'s contents into this digest (other is unchanged). O(s1 + s2).

        The result answers for the union with the same bounds, n = n1 + n2: node-wise sums
        of non-leaf counts stay <= eps*(n1 + n2)/L.

        >>> a = QDigest(8, 0.5); b = QDigest(8, 0.5); a.update(1); b.update(7); a.merge(b)
        >>> a.total_weight, a.quantile(1.0)
        (2.0, 7)
        """
        if not isinstance(other, QDigest):
            raise ArgumentTypeError(f"can only merge a QDigest, got {type(other).__name__}")
        if other._U != self._U or other._eps != self._eps:
            raise ArgumentError(
                f"cannot merge QDigest(universe={other._U}, eps={other._eps}) into "
                f"QDigest(universe={self._U}, eps={self._eps}): parameters must match"
            )
        if self._nat is not None:
            self._nat.merge(other._native_twin())
            return
        if self._n + other.total_weight == _INF:
            raise ArgumentError(_OVERFLOW)
        if other._nat is not None:
            other = other._python_twin()
        elif other is self:
            other = other.copy()
        self._merge_from(other)

    def _native_twin(self) -> Any:
        """The native object holding these nodes (its own, or a new one). O(1) or O(s)."""
        if self._nat is not None:
            return self._nat
        from windowagg._native.qdigest import load

        return load(self._U - 1, self._eps, self._n, *self._body())

    def _python_twin(self) -> QDigest:
        """A Python-backed digest with these nodes and n (a copy when native). O(s)."""
        if self._nat is None:
            return self
        d = self._empty_like()
        d._nodes = self._items()
        d._n = float(self._nat.n)
        return d

    def _items(self) -> dict[int, float]:
        """{heap id: count} of every node (the native twin's read out). O(s)."""
        if self._nat is None:
            return self._nodes
        depths, offs, counts = self._nat.body()
        k = len(depths)
        ids = [(1 << d) + o for d, o in zip(depths, struct.unpack(f">{k}Q", offs), strict=True)]
        return dict(zip(ids, struct.unpack(f">{k}d", counts), strict=True))

    def _body(self) -> tuple[bytes, bytes, bytes]:
        """(depths, big-endian uint64 offsets, big-endian float64 counts) of the nodes in
        heap-id order: the codec's fields, the same bytes on both backends. O(s log s)."""
        if self._nat is not None:
            body: tuple[bytes, bytes, bytes] = self._nat.body()
            return body
        ids = sorted(self._nodes)
        depths = [i.bit_length() - 1 for i in ids]
        offs = [i - (1 << d) for i, d in zip(ids, depths, strict=True)]
        counts = [self._nodes[i] for i in ids]
        k = len(ids)
        return bytes(depths), struct.pack(f">{k}Q", *offs), struct.pack(f">{k}d", *counts)

    def _merge_from(self, other: QDigest) -> None:
        """merge() without the checks (callers guarantee equal parameters). O(s1 + s2)."""
        nodes = self._nodes
        get = nodes.get
        for k, v in other._nodes.items():
            nodes[k] = get(k, 0.0) + v
        self._n += other._n
        self._sorted = None
        if len(nodes) > self._cap:
            self.compress()

    def _empty_like(self, native: bool = False) -> QDigest:
        """An empty digest with the same parameters, without re-validating them; on the
        compiled twin when *native* (the caller resolved the backend). O(1) (native: O(L))."""
        d = QDigest.__new__(QDigest)
        d._U, d._L, d._eps, d._base = self._U, self._L, self._eps, self._base
        d._nodes = {}
        d._n = 0.0
        d._cap = self._cap
        d._sorted = None
        d._nat = None
        if native:
            d._nat = _native_make()(self._U - 1, self._eps)
        return d

    def _add_leaf(self, x: int, weight: float) -> None:
        """update() for an already validated key and weight (the caller checked that n
        stays finite). O(1) amortized."""
        if self._nat is not None:
            self._nat.update(x, weight)
            return
        nodes = self._nodes
        leaf = self._base + x
        nodes[leaf] = nodes.get(leaf, 0.0) + weight
        self._n += weight
        self._sorted = None
        if len(nodes) > self._cap:
            self.compress()

    def compress(self) -> None:
        """Fold sibling pairs into parents bottom-up while their sum <= eps*n/L. O(s + L).

        Afterwards every non-leaf node holds <= eps*n/L and at most 4L/eps + 1 nodes remain.
        """
        if self._nat is not None:
            self._nat.compress()
            return
        self._sorted = None
        nodes = self._nodes
        if not nodes:
            return
        th = self._eps * self._n / self._L
        if len(nodes) > 256 and self._L <= 62:
            try:
                import numpy as np
            except ImportError:  # pragma: no cover
                pass
            else:
                self._nodes = _k.compress_numpy(np, nodes, th, self._L)
                self._after_compress()
                return
        _k.compress_dict(nodes, th, self._L)
        self._after_compress()

    def _after_compress(self) -> None:
        # compress leaves <= 4L/eps + 1 nodes, so >= 8L/eps updates pass before the next one
        # (amortized O(1) update) and the size never exceeds 12L/eps + 1
        self._cap = math.ceil(CAP_FACTOR * self._L / self._eps) + 1

    # ------------------------------------------ scaling (the decayed digests, both backends)
    def _scaled(self, gamma: float) -> QDigest:
        """A copy with every count and n multiplied by gamma > 0 (a valid digest), on this
        backend; ArgumentError (nothing built) if n * gamma overflows. O(s)."""
        if not self.total_weight * gamma < _INF:
            raise ArgumentError(_OVERFLOW)
        d = self.copy()
        if d._nat is not None:
            d._nat.scale(gamma, False)
            return d
        d._nodes = {k: v * gamma for k, v in self._nodes.items()}
        d._n = self._n * gamma
        d._sorted = None
        return d

    def _rescaled_total(self, f: float) -> float:
        """The n :meth:`_rescale` (f) would set; nothing changes. O(s)."""
        if self._nat is not None:
            return float(self._nat.rescaled_total(f))
        return math.fsum(w for w in (v * f for v in self._nodes.values()) if w > 0.0)

    def _rescale(self, f: float) -> None:
        """Every count times 0 < f <= 1, the counts that become 0 dropped, n their exact sum
        (``math.fsum``; the native twin rounds the same sum correctly): a landmark move of
        the decayed digests. O(s)."""
        if self._nat is not None:
            self._nat.scale(f, True)
            return
        self._nodes = {k: w for k, w in ((k, v * f) for k, v in self._nodes.items()) if w > 0.0}
        self._n = math.fsum(self._nodes.values())
        self._sorted = None

    def _add_scaled(self, other: QDigest, gamma: float) -> None:
        """Add gamma * other into self without compressing (query-time combination); one
        addition per node, so the nodes' order cannot change a float. Either backend on
        either side; ArgumentError (nothing changed) if n would overflow. O(s2)."""
        if not self.total_weight + other.total_weight * gamma < _INF:
            raise ArgumentError(_OVERFLOW)
        if self._nat is not None:
            self._nat.add_scaled(other._native_twin(), gamma)
            return
        if other._nat is not None:
            other = other._python_twin()
        nodes = self._nodes
        get = nodes.get
        for k, v in other._nodes.items():
            nodes[k] = get(k, 0.0) + v * gamma
        self._n += other._n * gamma
        self._sorted = None

    def _drop_zeros(self) -> None:
        """Drop the nodes whose count is 0. O(s)."""
        if self._nat is not None:
            self._nat.drop_zeros()
            return
        self._nodes = {k: v for k, v in self._nodes.items() if v > 0.0}
        self._sorted = None

    def _compress_if_full(self) -> None:
        """compress() when the digest holds more than its cap (the rule after a merge). O(s)."""
        if self._nat is not None:
            self._nat.compress_if_full()
        elif len(self._nodes) > self._cap:
            self.compress()

    # --------------------------------------------------------------- checks
    def _check(self) -> None:
        """O(s) invariant check; raises InvariantError naming the broken invariant."""
        if self._nat is not None:
            self._nat._check()
        base = self._base
        total = 0.0
        n = self.total_weight
        for node, c in self._items().items():
            invariant(
                1 <= node < 2 * base,
                "QDigest",
                f"node id {node} outside the tree of {self._L} levels",
            )
            if node >= base:
                invariant(
                    node - base < self._U, "QDigest", f"leaf {node - base} outside the universe"
                )
            invariant(c >= 0 and math.isfinite(c), "QDigest", f"node {node} has bad count {c!r}")
            total += c
        invariant(
            math.isclose(total, n, rel_tol=1e-9, abs_tol=1e-9),
            "QDigest",
            f"sum of node counts {total} != total weight {n}",
        )

    def _check_compressed(self) -> None:
        """Invariants that hold right after compress(): non-leaf counts and size bound."""
        self._check()
        th = self.threshold()
        slack = 1e-9 * max(1.0, self.total_weight)
        nodes = self._items()
        for node, c in nodes.items():
            if node < self._base:
                invariant(
                    c <= th + slack, "QDigest", f"non-leaf node {node} holds {c} > eps*n/L = {th}"
                )
        bound = math.ceil(4 * self._L / self._eps) + 1
        invariant(
            len(nodes) <= bound,
            "QDigest",
            f"{len(nodes)} nodes > 4L/eps + 1 = {bound}",
        )

    # --------------------------------------------------------------- bytes
    def to_bytes(self) -> bytes:
        """Serialize as :mod:`windowagg.codec` bytes (tag ``windowagg.QDigest``; format in
        ``docs/sketches.md``): ``codec.loads`` of them is the digest again. O(s)."""
        return _format.dumps(self)

    def _write_body(self, w: _format.Writer) -> None:
        w.u64(self._U - 1)
        w.f64(self._eps)
        w.f64(self.total_weight)
        for field in self._body():  # node_ids' two fields, then f64s: in heap-id order
            w.blob(field)

    @classmethod
    def from_bytes(cls, data: bytes, *, backend: Backend | None = None) -> QDigest:
        """Rebuild a digest written by :meth:`to_bytes` on either backend (or by windowagg
        before codec version 2, format ``WASK``) on *backend*; CodecError on malformed
        bytes, on both backends. O(s log s).

        >>> d = QDigest(100, 0.1); d.update(42); QDigest.from_bytes(d.to_bytes()) == d
        True
        """
        d = _format.loads(cls, data, _format.KIND_QDIGEST, cls._read_body_default)
        if backend is not None:
            d._become(resolve_backend(backend, "QDigest"))
        return d

    def _become(self, native: bool) -> None:
        """Hold the nodes on the native twin (*native*) or in the dict, in place. O(s)."""
        if native == (self._nat is not None):
            return
        if native:
            self._nat = self._native_twin()
            self._nodes, self._n, self._sorted = {}, 0.0, None
        else:
            py = self._python_twin()
            self._nodes, self._n, self._sorted, self._nat = py._nodes, py._n, None, None

    def _to_codec(self) -> tuple[Any, ...]:
        return _format.to_plain(self._write_body)

    @classmethod
    def _from_codec(cls, plain: Any) -> QDigest:
        return _format.from_plain(plain, _format.KIND_QDIGEST, cls._read_body_default, "QDigest")

    @classmethod
    def _read_body_default(cls, r: _format.Reader) -> QDigest:
        """:meth:`_read_body`, then on the default backend (the native load checks the
        fields again: CodecError for anything it refuses). O(s log s)."""
        native = resolve_backend(None, "QDigest")
        d = cls._read_body_native(r) if native else None
        if d is None:
            d = cls._read_body(r)
            d._become(native)
        return d

    @classmethod
    def _read_body_native(cls, r: _format.Reader) -> QDigest | None:
        """:meth:`_read_body` straight into the compiled twin: the codec's field bytes
        handed to the native load (which checks every node as :meth:`_read_body` does, and
        the counts' sum within the same tolerance of n; the exact sum, ``math.fsum``, is
        checked here too), without a Python object per node. None, the reader back where it
        was, for layout-1 bytes and for bytes the load refuses (:meth:`_read_body` then
        names what is wrong, as before). O(s); the driver's merge of Spark's partial
        summaries spent ~0.07 s per 60k-node part in :meth:`_read_body`."""
        if not isinstance(r, _format.PlainReader):
            return None
        import numpy as np

        from windowagg._native.qdigest import load

        pos = r._pos
        try:
            universe = r.u64() + 1
            eps = r.f64()
            n = r.f64()
            if not (2 <= universe <= 1 << 64 and 0.0 < eps < 1.0 and n >= 0):
                raise CodecError("bad parameters")
            depths = r._array(1)
            offsets = r._offsets(len(depths))
            counts = r._array(8)
            nat = load(universe - 1, eps, n, depths, offsets, counts)
            if not math.isclose(
                math.fsum(np.frombuffer(counts, dtype=">f8").tolist()),
                n,
                rel_tol=1e-9,
                abs_tol=1e-9,
            ):
                raise CodecError("node counts do not sum to the total weight")
        except CodecError:
            r._pos = pos
            return None
        d = cls(universe, eps, backend="python")
        d._nat = nat
        return d

    @classmethod
    def _read_body(cls, r: _format.Reader) -> QDigest:
        universe = r.u64() + 1
        eps = r.f64()
        n = r.f64()
        if universe < 2 or not 0.0 < eps < 1.0 or n < 0:
            raise r.fail(f"bad parameters universe={universe}, eps={eps}, n={n}")
        d = cls(universe, eps, backend="python")
        ids = r.node_ids(d._L)
        counts = r.f64s()
        if len(counts) != len(ids):
            raise r.fail("node ids and counts differ in number")
        if any(c < 0 for c in counts):
            raise r.fail("negative node count")
        for i in ids:
            if i >= d._base and i - d._base >= universe:
                raise r.fail(f"leaf {i - d._base} outside the universe [0, {universe})")
        d._nodes = dict(zip(ids, counts, strict=False))
        d._n = n
        if not math.isclose(math.fsum(counts), n, rel_tol=1e-9, abs_tol=1e-9):
            raise r.fail("node counts do not sum to the total weight")
        d._after_compress()
        return d


_MAKE: list[Any] = []  # windowagg._native.qdigest.make, once imported


def _native_make() -> Any:
    """``windowagg._native.qdigest.make``, imported on first use (``_native`` sits below this
    module) and kept: ValueDivision builds a digest per new interval. O(1)."""
    if not _MAKE:
        from windowagg._native.qdigest import make

        _MAKE.append(make)
    return _MAKE[0]
