"""Exact quantiles of a window: an aggregation that is not a monoid.

=================  ==========================================================================
what               the ``num/den`` quantile of the values a window holds, exactly
                   (``"p95(v)"`` is ``ExactQuantile(95, 100)``, ``"p99.9(v)"`` is
                   ``ExactQuantile(999, 1000)``, ``"median(v)"`` is ``ExactQuantile(1, 2)``)
definition         nearest rank: the ``max(1, ceil(num/den * n))``-th smallest of the window's
                   *n* values, ``num/den`` an exact fraction (DuckDB's ``quantile_disc``);
                   null for a window with no values
operator needs     a total order on the values (finite floats); **not a monoid**: the answer
                   needs the window's values, not a fold of partials, so the engine answers it
                   with its order-statistics path (:mod:`windowagg.windows.engine.ranks`), one
                   multiset per column shared by all its quantiles
time               O(log w) per event inserted and evicted and per window and quantile, for
                   windows of w events (native; a sorted list in Python)
space              O(w): the window's values
approximate twin   ``"approx_pNN(v)"`` is a :class:`~windowagg.sketches.QDigestMonoid`, a
                   monoid (rank error at most 1% of n) folded like any other
=================  ==========================================================================

The engine recognises this object by its type (``isinstance``, subclasses too), never by
the aggregation's name: an :class:`~windowagg.aggs.Agg` holding one is an exact quantile
whatever its alias.

Examples
--------
>>> from windowagg.aggs import Agg
>>> q = ExactQuantile(5, 100)
>>> q, q.fraction, q.rank(40)
(ExactQuantile(num=5, den=100), (5, 100), 2)
>>> Agg("slowest_5pct", q, "latency").monoid is q
True
"""

from __future__ import annotations

from dataclasses import dataclass

from windowagg.errors import ArgumentError

__all__ = ["ExactQuantile"]


@dataclass(frozen=True)
class ExactQuantile:
    """The exact ``num/den`` quantile (nearest rank) of a window's values.

    Parameters
    ----------
    num, den
        The quantile as an exact fraction, ``0 < num < den`` (``95, 100`` for p95).

    Examples
    --------
    >>> ExactQuantile(1, 2).rank(5), ExactQuantile(999, 1000).rank(3)
    (3, 3)
    >>> ExactQuantile(100, 100)
    Traceback (most recent call last):
    ...
    windowagg.errors.ArgumentError: ExactQuantile(100, 100) must lie strictly between 0 and 1: give 0 < num < den, e.g. ExactQuantile(95, 100) for p95
    """

    num: int
    den: int

    def __post_init__(self) -> None:
        ok = (
            isinstance(self.num, int)
            and isinstance(self.den, int)
            and not isinstance(self.num, bool)
            and not isinstance(self.den, bool)
            and 0 < self.num < self.den
        )
        if not ok:
            raise ArgumentError(
                f"ExactQuantile({self.num!r}, {self.den!r}) must lie strictly between 0 and "
                "1: give 0 < num < den, e.g. ExactQuantile(95, 100) for p95"
            )

    @property
    def fraction(self) -> tuple[int, int]:
        """``(num, den)``. O(1)."""
        return self.num, self.den

    def rank(self, n: int) -> int:
        """The 1-based rank answered among *n* values: ``max(1, ceil(num/den * n))``. O(1)."""
        return max(1, -((-self.num * n) // self.den))
