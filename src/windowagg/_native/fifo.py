"""The native FIFO classes: ``_core.TwoStacksLite``, ``DABALite``, ``DABA``, ``AMTA``.

The public classes (``windowagg.fifo.DABA``, ...) hold what :func:`make` builds when the
backend resolves to native (``Backed._hold``). Nothing here imports the public classes:
``_native`` sits below them.
"""

from __future__ import annotations

from typing import Any

from windowagg.monoids.base import require_monoid

__all__ = ["make"]


def make(name: str, monoid: Any, *args: Any) -> Any:
    """A native ``_core.<name>`` over *monoid* (checked as the Python class checks it)."""
    require_monoid(monoid, name)
    from windowagg._native import _core as core  # built: the backend resolved to native

    return getattr(core, name)(monoid, *args)
