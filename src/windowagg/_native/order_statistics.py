"""The native ``_core.OrderStatistics`` that :class:`windowagg.order_statistics.OrderStatistics`
holds (nothing here imports the public class: ``_native`` sits below it)."""

from __future__ import annotations

from typing import Any

__all__ = ["make"]


def make() -> Any:
    """A new, empty native ``_core.OrderStatistics``."""
    from windowagg._native import _core as core  # built: the backend resolved to native

    return core.OrderStatistics()
