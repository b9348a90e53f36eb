"""The native ``_core.ExpDecaySpaceSaving`` that
:class:`windowagg.sketches.space_saving.ExpDecaySpaceSaving` holds (nothing here imports
the public class: ``_native`` sits below it)."""

from __future__ import annotations

from typing import Any

from windowagg.errors import NativeUnavailableError

__all__ = ["load", "make"]


def _core() -> Any:
    from windowagg._native import _core as core  # built: the backend resolved to native

    if not hasattr(core, "ExpDecaySpaceSaving"):  # a core built before it
        raise NativeUnavailableError(
            "the compiled core was built before ExpDecaySpaceSaving existed; rebuild it "
            "(bash scripts/build_native.sh, or pip install -e .) or use backend='python'"
        )
    return core


def make(k: int, lam: float) -> Any:
    """An empty native ``_core.ExpDecaySpaceSaving`` with *k* counters. O(1)."""
    return _core().ExpDecaySpaceSaving(k, lam)


def load(
    k: int, lam: float, has: int, lm: float, tmax: float, floor: float, n: float, items: Any
) -> Any:
    """A native summary from its codec fields (CodecError if invalid). O(k)."""
    return _core().ExpDecaySpaceSaving.load(k, lam, has, lm, tmax, floor, n, items)
