"""Helpers shared by the ``windowagg.fifo`` classes (argument checks and error messages).

None of these run inside a hot loop more than once per public call.

>>> check_count(2, 3, "DABA")
2
"""

from __future__ import annotations

import operator
from typing import Any

from windowagg.errors import EmptyWindowError

__all__ = ["InvariantError", "check_count", "empty_error", "invariant"]


class InvariantError(AssertionError):
    """Raised by ``_check()`` when a structure's invariant is broken; says which and where."""


def invariant(ok: bool, who: str, what: str) -> None:
    """Raise :class:`InvariantError` ``"<who>: <what>"`` unless *ok*.

    >>> invariant(True, "DABA", "never shown")
    """
    if not ok:
        raise InvariantError(f"{who}: invariant broken: {what}")


def empty_error(who: str, op: str) -> EmptyWindowError:
    """The error for *op* on an empty window of class *who*.

    >>> str(empty_error("DABA", "evict()"))
    'DABA.evict() on an empty window; check len(window) first'
    """
    return EmptyWindowError(f"{who}.{op} on an empty window; check len(window) first")


def check_count(count: Any, n: int, who: str) -> int:
    """Validate a ``bulk_evict`` count against the window size *n*; return it as an int.

    Raises ``TypeError`` for a non-integer count and
    :class:`~windowagg.errors.EmptyWindowError` (an ``IndexError``) when it is negative
    or larger than the window, so that a failed call leaves the window unchanged.

    >>> check_count(4, 3, "DABA")
    Traceback (most recent call last):
    ...
    windowagg.errors.EmptyWindowError: DABA.bulk_evict(4) on a window of 3 entries; count must be between 0 and len(window)
    """
    if isinstance(count, bool):
        raise TypeError(f"{who}.bulk_evict(count) needs an integer count, got a bool")
    try:
        k = operator.index(count)
    except TypeError:
        raise TypeError(
            f"{who}.bulk_evict(count) needs an integer count, got {type(count).__name__}"
        ) from None
    if k < 0 or k > n:
        raise EmptyWindowError(
            f"{who}.bulk_evict({k}) on a window of {n} entries; "
            "count must be between 0 and len(window)"
        )
    return k
