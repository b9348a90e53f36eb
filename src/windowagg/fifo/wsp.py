"""Window Slide Policies (WSP): which prefix of a FIFO window has left the window.

=================  ==========================================================================
contract           ``policy(total, prefix) -> bool``: *total* is the window's partial
                   aggregate after the insertion (before any eviction this round), *prefix*
                   the partial aggregate of a candidate non-empty prefix (oldest entries)
semantics          evict the **longest** non-empty prefix P with ``policy(total, agg(P))``
monotonicity       a policy must be **prefix-monotone**: if it holds for a prefix it holds
                   for every shorter non-empty prefix; MTA's O(log n) bulk eviction is a
                   descent that relies on it (other policies give implementation-defined
                   evictions)
built-ins          :class:`CountWindow` (last n entries), :class:`TimeWindow` (last w time
                   units); any callable with the signature above is a policy
enforcement        ``LogMTA.enforce`` / ``AMTA.enforce``: O(log n) whatever is evicted;
                   :func:`enforce_policy`: the generic loop for any FIFO aggregator with
                   ``oldest()`` / ``evict()``, O(k) for k evictions (k + 1 combines)
paper              MTA §4.1.3 (Listings 1-3); semantics fixed in guides/seed-mta-daba.md C2
=================  ==========================================================================

Time windows read a timestamp dimension of the aggregate: use a composite monoid whose
timestamp component is :class:`~windowagg.monoids.Max`, so that a prefix's timestamp is the
newest timestamp in it (Listing 1). ``TimeWindow(w)`` evicts a prefix when
``t(total) - t(prefix) >= w``: it keeps exactly the entries with ``t > newest - w``.

Examples
--------
>>> from windowagg.fifo.recalc import Recalc
>>> from windowagg.monoids import Composite, Max, Sum
>>> w = Recalc(Composite(Max(), Sum()))     # (timestamp, value)
>>> for t, v in [(1, 10), (2, 20), (5, 50)]: w.insert((t, v))
>>> enforce_policy(w, TimeWindow(3, time=0))  # keeps t > 5 - 3
2
>>> w.query()
(5, 50)
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable
from typing import Any

from windowagg.errors import ArgumentError, ArgumentTypeError, MonoidContractError

__all__ = ["CountWindow", "Policy", "TimeWindow", "enforce_policy", "window_total"]

Policy = Callable[[Any, Any], bool]
"""A window slide policy: ``policy(total, prefix) -> bool`` (see the module docstring)."""


def _accessor(spec: int | str | Callable[[Any], Any], what: str) -> Callable[[Any], Any]:
    if callable(spec):
        return spec
    if isinstance(spec, int | str) and not isinstance(spec, bool):
        return operator.itemgetter(spec)
    raise ArgumentTypeError(f"{what} must be a tuple index, a key, or a callable; got {spec!r}")


class CountWindow:
    """Keep the newest *size* entries (MTA Listings 2 and 3).

    With ``count=None`` (default) the aggregator's own entry count is used: the MTA
    classes and :func:`enforce_policy` evict ``len(window) - size`` entries directly in
    O(log n) / O(k). With ``count`` (a tuple index, key or callable reading a
    :class:`~windowagg.monoids.Count` dimension of the aggregate) it is an ordinary
    policy: evict the prefix when ``count(total) - count(prefix) >= size``.

    >>> p = CountWindow(2, count=0)
    >>> p((5, "..."), (3, "...")), p((5, "..."), (4, "..."))
    (True, False)
    """

    __slots__ = ("_get", "count", "size")

    def __init__(self, size: int, *, count: int | str | Callable[[Any], Any] | None = None):
        if isinstance(size, bool) or not isinstance(size, int) or size < 0:
            raise ArgumentError(f"CountWindow size must be an int >= 0, got {size!r}")
        self.size = size
        self.count = count
        self._get = None if count is None else _accessor(count, "CountWindow count")

    def __call__(self, total: Any, prefix: Any) -> bool:
        """True if *prefix* has left the window. O(1)."""
        get = self._get
        if get is None:
            raise ArgumentTypeError(
                "CountWindow(size) without count= is enforced from the window size; pass it "
                "to enforce()/enforce_policy(), or give count= to read a Count dimension"
            )
        return bool(get(total) - get(prefix) >= self.size)

    def __repr__(self) -> str:
        extra = "" if self.count is None else f", count={self.count!r}"
        return f"CountWindow({self.size}{extra})"


class TimeWindow:
    """Keep the entries of the last *width* time units (MTA Listing 1).

    ``time`` reads the newest timestamp of a partial aggregate (a tuple index, a key, or
    a callable) -- a :class:`~windowagg.monoids.Max` dimension. A prefix is evicted when
    ``time(total) - time(prefix) >= width``: entries with ``t > newest - width`` stay.
    ``width`` may be a number or a ``timedelta`` (with datetime timestamps); ``width=0``
    evicts everything but the entries at the newest timestamp... and those too, since
    ``t - t >= 0``: a zero-width window is empty after every enforcement.

    >>> p = TimeWindow(10, time=0)
    >>> p((25, None), (15, None)), p((25, None), (16, None))
    (True, False)
    """

    __slots__ = ("_get", "time", "width")

    def __init__(self, width: Any, *, time: int | str | Callable[[Any], Any] = 0):
        if width is None or (isinstance(width, float) and math.isnan(width)):
            raise ArgumentError(f"TimeWindow width must be a number or timedelta, got {width!r}")
        try:
            negative = width < width - width
        except TypeError:
            raise ArgumentError(
                f"TimeWindow width must be a number or timedelta, got {width!r}"
            ) from None
        if negative:
            raise ArgumentError(f"TimeWindow width must be >= 0, got {width!r}")
        self.width = width
        self.time = time
        self._get = _accessor(time, "TimeWindow time")

    def __call__(self, total: Any, prefix: Any) -> bool:
        """True if *prefix* has left the window. O(1)."""
        get = self._get
        t_total, t_prefix = get(total), get(prefix)
        if t_total is None or t_prefix is None:
            raise MonoidContractError(
                "TimeWindow found no timestamp in the aggregate: the time dimension must be "
                "a Max of the entries' timestamps"
            )
        return bool(t_total - t_prefix >= self.width)

    def __repr__(self) -> str:
        return f"TimeWindow({self.width!r}, time={self.time!r})"


def window_total(window: Any) -> Any:
    """The partial aggregate of the whole window.

    Uses ``window.aggregate()`` when the aggregator has it (O(1) for the MTA classes),
    otherwise folds ``iter(window)`` with ``window.monoid`` (O(n)).
    """
    agg = getattr(window, "aggregate", None)
    if callable(agg):
        return agg()
    m = window.monoid
    acc = m.identity
    for p in window:
        acc = m.combine(acc, p)
    return acc


def enforce_policy(window: Any, policy: Policy, *, total: Any = None) -> int:
    """Evict the longest prefix of *window* that *policy* selects; return how many.

    The generic enforcement for any FIFO aggregator with ``oldest()``, ``evict()``,
    ``__len__`` and ``monoid`` (guide C1): one combine and one policy call per evicted
    entry, plus one for the first entry that stays: O(k) for k evictions, plus
    :func:`window_total` when *total* is not given.

    MTA §3.2's running example keeps the newest suffix whose sum is <= 10: entry d_i
    leaves when ``sum(d_i..d_n) > 10``, so a prefix P leaves when
    ``total - sum(P) + last(P) > 10`` (a (Sum, Last) composite):

    >>> from windowagg.fifo.recalc import Recalc
    >>> from windowagg.monoids import Composite, Last, Sum
    >>> w = Recalc(Composite(Sum(), Last(), fan_out=True))
    >>> for x in [2, 2, 3, 3, 4]: w.insert(x)
    >>> enforce_policy(w, lambda tot, pre: tot[0] - pre[0] + pre[1] > 10)
    2
    >>> w.query()
    (10, 4)
    """
    n = len(window)
    if n == 0:
        return 0
    if isinstance(policy, CountWindow) and policy.count is None:
        k = max(0, n - policy.size)
        if k:
            window.bulk_evict(k)
        return k
    if total is None:
        total = window_total(window)
    combine = window.monoid.combine
    acc: Any = None
    k = 0
    while k < n:
        head = window.oldest_partial()
        cand = head if k == 0 else combine(acc, head)
        if not policy(total, cand):
            break
        window.evict()
        acc = cand
        k += 1
    return k
