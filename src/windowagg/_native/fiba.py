"""The native FiBA, ``_core.FiBA``, that :class:`windowagg.ooo.FiBA` holds.

``windowagg.ooo.FiBA(..., backend=...)`` holds what :func:`make` builds (and
``FiBA.from_sorted_partials(..., backend=...)`` what :func:`from_sorted` builds) when the
backend resolves to native. Nothing here imports ``windowagg.ooo``: ``_native`` sits below it.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from windowagg._time import check_timestamp
from windowagg.errors import TimestampError

__all__ = ["from_sorted", "make"]


def make(monoid: Any, min_arity: int) -> Any:
    """A native FiBA over *monoid* (its arguments checked by ``ooo.FiBA`` already)."""
    from windowagg._native import _core as core  # built: the backend resolved to native

    return core.FiBA(monoid, min_arity)


def from_sorted(monoid: Any, pairs: Iterable[tuple[Any, Any]], min_arity: int) -> Any:
    """A native FiBA holding strictly increasing ``(t, partial)`` *pairs* (not lifted). O(n).

    Validated as ``FiBA.from_sorted_partials`` validates (it is fed decoded, untrusted
    bytes): TimestampError for a bad or out-of-order timestamp; partials the native monoid
    cannot hold move the window to the generic path.
    """
    w = make(monoid, min_arity)
    items = pairs if isinstance(pairs, list) else list(pairs)
    if not items:
        return w
    ts: list[Any] = []
    ps: list[Any] = []
    ref = items[0][0]
    check_timestamp(ref, None)
    ints = ref.__class__ is int
    prev: Any = None
    for i, (t, p) in enumerate(items):
        if not ints or t.__class__ is not int:  # int vs int: no NaN, comparable
            check_timestamp(t, ref)
        if i and not prev < t:
            raise TimestampError(
                f"from_sorted_partials: timestamps must be strictly increasing; "
                f"entry {i} ({t!r}) follows {prev!r}"
            )
        prev = t
        ts.append(t)
        ps.append(p)
    w._load(tuple(ts), tuple(ps))
    return w
