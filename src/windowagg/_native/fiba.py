"""Glue for the native FiBA, ``_core.FiBA`` (the twin of :class:`windowagg.ooo.FiBA`).

``windowagg.ooo.FiBA(..., backend=...)`` calls :func:`make` (and
``FiBA.from_sorted_partials(..., backend=...)`` calls :func:`from_sorted`) when the backend
resolves to native; importing this module registers ``_core.FiBA`` as FiBA's twin for
``isinstance``. Arguments are checked here as the Python class checks them.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from windowagg._backend import native_core, register_native
from windowagg._time import check_timestamp
from windowagg.errors import TimestampError
from windowagg.ooo.fiba import FiBA, check_args

__all__ = ["from_sorted", "make"]

_core = native_core()
if _core is not None:  # pragma: no branch - only imported when the core is built
    register_native(FiBA, _core.FiBA)
    # the class-level builders of the facade, on the native type too (same signatures),
    # so that code holding a window can rebuild one of its own kind: type(w).from_...
    _core.FiBA.from_sorted_partials = classmethod(
        lambda cls, monoid, pairs, min_arity=None, *, backend="native": FiBA.from_sorted_partials(
            monoid, pairs, min_arity, backend=backend
        )
    )
    _core.FiBA.from_bytes = classmethod(
        lambda cls, data, monoid, *, backend="native": FiBA.from_bytes(
            data, monoid, backend=backend
        )
    )


def make(monoid: Any, min_arity: int | None = None) -> Any:
    """A native FiBA over *monoid* (same defaults and checks as the Python class)."""
    min_arity = check_args(monoid, min_arity)
    assert _core is not None  # the backend resolved to native only if the core is built
    return _core.FiBA(monoid, min_arity)


def from_sorted(monoid: Any, pairs: Iterable[tuple[Any, Any]], min_arity: int | None) -> Any:
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
