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
