"""QDigestMonoid: a q-digest as the partial aggregate of any windowagg aggregator.

Fact card
---------
=============  ==============================================================================
operator       commutative monoid (not idempotent, not invertible): identity = empty digest,
               lift(x) = digest of one value, combine = merge into a NEW digest,
               lower = the requested quantile(s) (mapped back through the mapper)
combine        O(s1 + s2) (copies the larger operand, adds the smaller), plus a compress
               when the result exceeds 6L/eps + 1 nodes; never mutates its arguments
lift           O(1); lower O(s log s) for the first quantile of a digest
error          the quantile of any combination (any window, any tree of combines, any order)
               of digests satisfies W(< q) <= (phi + eps) n and W(<= q) >= phi n over the
               mapped keys; with a ValueMapper add resolution/2 of value error
space          <= 6L/eps + 1 nodes per partial (L = ceil(log2 U))
paper          mergeability of the q-digest (Shrivastava et al. 2004; Cormode, Korn,
               Tirthapura 2007, section 7.1)
=============  ==============================================================================

Partials are treated as immutable values: the aggregators never mutate them, and users
must not either (``combine`` may return one of its arguments when the other is empty).

Examples
--------
>>> from windowagg.ooo import Recalc
>>> from windowagg.sketches import ValueMapper
>>> m = QDigestMonoid(eps=0.01, mapper=ValueMapper(-100.0, 1500.0, 1.0), quantiles=(0.5, 0.95))
>>> w = Recalc(m)
>>> for t, delay in enumerate([3.0, -5.0, 12.0, 40.0, 7.0, 0.0, 95.0, 2.0, 15.0, 1.0]):
...     w.insert(t, delay)
>>> w.query()
(3.0, 95.0)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from windowagg.errors import ArgumentError
from windowagg.sketches._qdigest_queries import _check_phi
from windowagg.sketches.mapping import FloatOrderMapper, ValueMapper
from windowagg.sketches.qdigest import QDigest

__all__ = ["QDigestMonoid"]


class QDigestMonoid:
    """Monoid of q-digests: pass it to FiBA, DABA, Recalc, ... for windowed quantiles.

    Parameters
    ----------
    universe : int, optional
        Key universe when values are already ints in [0, universe); taken from *mapper*
        otherwise.
    eps : float
        q-digest accuracy.
    mapper : ValueMapper or FloatOrderMapper, optional
        Maps real values to keys and quantiles back to values.
    quantiles : sequence of float
        What ``lower`` returns: one value for one quantile, else a tuple. None for an empty
        window.
    """

    name = "QDigest"
    commutative = True
    idempotent = False
    invertible = False

    __slots__ = ("_base", "_cap", "_identity", "eps", "mapper", "quantiles", "universe")

    def __init__(
        self,
        universe: int | None = None,
        eps: float = 0.01,
        mapper: ValueMapper | FloatOrderMapper | None = None,
        quantiles: Sequence[float] = (0.95,),
    ) -> None:
        if universe is None:
            if mapper is None:
                raise ArgumentError("give a universe (int keys) or a mapper (real values)")
            universe = mapper.universe
        elif mapper is not None and mapper.universe != universe:
            raise ArgumentError(f"universe {universe} differs from the mapper's {mapper.universe}")
        self._identity = QDigest(universe, eps, backend="python")
        self.universe = universe
        self.eps = float(eps)
        self.mapper = mapper
        self.quantiles = tuple(_check_phi(p) for p in quantiles)
        if not self.quantiles:
            raise ArgumentError("give at least one quantile")
        self._base = self._identity._base
        self._cap = math.ceil(6 * self._identity.universe_bits / self.eps) + 1

    def __repr__(self) -> str:
        return (
            f"QDigestMonoid(universe={self.universe}, eps={self.eps}, mapper={self.mapper!r}, "
            f"quantiles={self.quantiles})"
        )

    @property
    def identity(self) -> QDigest:
        """The empty digest (shared; never mutated)."""
        return self._identity

    def lift(self, x: Any) -> QDigest:
        """Digest of the single value *x*. O(1)."""
        key = self.mapper.to_key(x) if self.mapper is not None else x
        d = QDigest.__new__(QDigest)
        proto = self._identity
        d._U, d._L, d._eps, d._base = proto._U, proto._L, proto._eps, proto._base
        if type(key) is not int or not 0 <= key < d._U:
            key = proto._bad_key(key)
        d._nodes = {d._base + key: 1.0}
        d._n = 1.0
        d._cap = proto._cap
        d._sorted = None
        d._nat = None
        return d

    def combine(self, a: QDigest, b: QDigest) -> QDigest:
        """A new digest of both operands (neither is changed). O(s1 + s2)."""
        if a._nat is not None:  # decoded on the native backend (codec): read its nodes
            a = a._python_twin()
        if b._nat is not None:
            b = b._python_twin()
        if not b._nodes:
            return a
        if not a._nodes:
            return b
        if len(a._nodes) < len(b._nodes):
            a, b = b, a
        d = QDigest.__new__(QDigest)
        d._U, d._L, d._eps, d._base = a._U, a._L, a._eps, a._base
        nodes = dict(a._nodes)
        get = nodes.get  # bound method cached: called once per node of the smaller operand
        for k, v in b._nodes.items():
            nodes[k] = get(k, 0.0) + v
        d._nodes = nodes
        d._n = a._n + b._n
        d._cap = self._cap
        d._sorted = None
        d._nat = None
        if len(nodes) > self._cap:
            d.compress()
            d._cap = self._cap  # keep partials small: compress again above the base cap
        return d

    def lower(self, a: QDigest) -> Any:
        """The configured quantile(s) of *a* (values if a mapper is set); None when empty."""
        if a.is_empty():
            return None
        keys = [a.quantile(p) for p in self.quantiles]
        vals: list[Any] = keys if self.mapper is None else [self.mapper.to_value(k) for k in keys]
        return vals[0] if len(vals) == 1 else tuple(vals)
