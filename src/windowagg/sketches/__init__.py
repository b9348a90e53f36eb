"""Deterministic, mergeable summaries for time-decayed aggregates over out-of-order streams.

Based on Cormode, Korn and Tirthapura, "Time-decaying aggregates in out-of-order streams"
(2007). Every summary takes items in any timestamp order, states its error as an
inequality, merges across partitions and serializes to a versioned binary format
(``to_bytes`` / ``from_bytes``; see docs/sketches.md).

=========================  =============================================================
QDigest                    quantiles, ranks, heavy hitters of integer keys (no decay)
ValueMapper                real values -> keys with a stated resolution
FloatOrderMapper           exact float64 -> key map (universe 2**64)
ExpDecayQDigest            exponential decay: quantiles / ranks / heavy hitters (Thm 3)
ExpDecaySpaceSaving        exponential decay heavy hitters, O(1/eps) counters (Thm 4)
SlidingWindowCount         count over any window of an out-of-order stream (Thm 1)
SlidingWindowQDigest       ranks / quantiles / heavy hitters over any window (Thm 2, Cor 1)
                           and under any decay chosen at query time (Thm 5)
ValueDivision              any smooth decay, e.g. polynomial (Thm 6)
QDigestMonoid              a q-digest as a monoid for FiBA / DABA windows
=========================  =============================================================

Examples
--------
>>> from windowagg.sketches import QDigest
>>> d = QDigest(universe=2**16, eps=0.01)
>>> d.update_many(range(10_000))
>>> abs(d.quantile(0.99) - 9_900) <= 0.01 * 10_000
True
"""

from __future__ import annotations

from windowagg.sketches.decay import (
    ExponentialDecay,
    PolynomialDecay,
    SlidingWindowDecay,
    is_smooth,
)
from windowagg.sketches.exp_qdigest import ExpDecayQDigest
from windowagg.sketches.mapping import FloatOrderMapper, ValueMapper
from windowagg.sketches.monoid import QDigestMonoid
from windowagg.sketches.qdigest import QDigest, QDigestBounds
from windowagg.sketches.sliding_window import SlidingWindowCount, SlidingWindowQDigest
from windowagg.sketches.space_saving import ExpDecaySpaceSaving
from windowagg.sketches.value_division import ValueDivision

__all__ = [
    "ExpDecayQDigest",
    "ExpDecaySpaceSaving",
    "ExponentialDecay",
    "FloatOrderMapper",
    "PolynomialDecay",
    "QDigest",
    "QDigestBounds",
    "QDigestMonoid",
    "SlidingWindowCount",
    "SlidingWindowDecay",
    "SlidingWindowQDigest",
    "ValueDivision",
    "ValueMapper",
    "is_smooth",
]
