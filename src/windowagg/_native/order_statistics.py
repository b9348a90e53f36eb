"""Glue for ``_core.OrderStatistics``, the native twin of
:class:`windowagg.order_statistics.OrderStatistics` (importing this registers it)."""

from __future__ import annotations

from typing import Any

from windowagg._backend import native_core, register_native
from windowagg.order_statistics import OrderStatistics

__all__ = ["make"]

_core = native_core()
if _core is not None:  # pragma: no branch - only imported when the core is built
    register_native(OrderStatistics, _core.OrderStatistics)


def make() -> Any:
    """A new, empty native ``_core.OrderStatistics``."""
    assert _core is not None  # the backend resolved to native only if the core is built
    return _core.OrderStatistics()
