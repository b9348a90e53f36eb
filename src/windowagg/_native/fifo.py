"""Glue for the native FIFO classes: ``_core.TwoStacksLite``, ``DABALite``, ``DABA``, ``AMTA``.

The public classes (``windowagg.fifo.DABA``, ...) call :func:`make` from their ``_native``
factory when the backend resolves to native; importing this module registers the native
types as their twins for ``isinstance``.
"""

from __future__ import annotations

from typing import Any

from windowagg._backend import native_core, register_native
from windowagg.fifo.amta import AMTA
from windowagg.fifo.daba import DABA
from windowagg.fifo.daba_lite import DABALite
from windowagg.fifo.two_stacks_lite import TwoStacksLite
from windowagg.monoids.base import require_monoid

__all__ = ["make"]

_core = native_core()
if _core is not None:  # pragma: no branch - only imported when the core is built
    register_native(TwoStacksLite, _core.TwoStacksLite)
    register_native(DABALite, _core.DABALite)
    register_native(DABA, _core.DABA)
    if hasattr(_core, "AMTA"):
        register_native(AMTA, _core.AMTA)


def make(name: str, monoid: Any, *args: Any) -> Any:
    """A native ``_core.<name>`` over *monoid* (checked as the Python class checks it)."""
    require_monoid(monoid, name)
    assert _core is not None  # the backend resolved to native only if the core is built
    return getattr(_core, name)(monoid, *args)


# AMTA's extra verbs on the native class, over its native primitives (same results as the
# Python class: result_pair and stack read the native R0, R1 and S).
def _result_pair(self: Any) -> tuple[Any, Any]:
    """``(R0, R1)``: aggregates of the leftmost tree and of the other trees. O(1)."""
    r0, r1, _ = self._amta_state()
    return (r0, r1)


def _stack(self: Any) -> list[Any]:
    """A copy of the stack S, bottom first. O(log n)."""
    return list(self._amta_state()[2])


def _enforce(self: Any, policy: Any = None) -> None:
    """Evict the longest prefix that *policy* selects (see ``AMTA.enforce``).

    The native AMTA has no constructor policy (one given there builds the Python class),
    so *policy* is required. ``CountWindow(n)`` without ``count=`` is one ``bulk_evict``
    (O(log n) by the forest descent); any other policy is asked about one growing prefix
    per evicted entry: O(k) policy calls and combines for k evictions.
    """
    from windowagg.fifo.wsp import CountWindow

    if policy is None:
        raise TypeError("AMTA.enforce() needs a policy: pass one here (the native AMTA has none)")
    if isinstance(policy, CountWindow) and policy.count is None:
        k = len(self) - policy.size
        if k > 0:
            self.bulk_evict(k)
        return
    if not len(self):
        return
    total = self.aggregate()
    if policy(total, total):
        self.bulk_evict(len(self))
        return
    combine = self.monoid.combine
    acc: Any = None
    first = True
    while len(self):
        head = self.oldest_partial()
        cand = head if first else combine(acc, head)
        if not policy(total, cand):
            return
        self.evict()
        acc, first = cand, False


def _insert_and_enforce(self: Any, v: Any) -> None:
    """The reactive step needs a constructor policy, which builds the Python class."""
    raise TypeError("AMTA.insert_and_enforce() needs policy= at construction")


if _core is not None and hasattr(_core, "AMTA"):  # pragma: no branch
    _core.AMTA.result_pair = property(_result_pair)
    _core.AMTA.stack = property(_stack)
    _core.AMTA.enforce = _enforce
    _core.AMTA.insert_and_enforce = _insert_and_enforce
