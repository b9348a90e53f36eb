"""The native ``_core.SlidingWindowCount`` that
:class:`windowagg.sketches.SlidingWindowCount` holds (nothing here imports the public class:
``_native`` sits below it)."""

from __future__ import annotations

from typing import Any

from windowagg.errors import NativeUnavailableError

__all__ = ["load", "make"]


def _core() -> Any:
    from windowagg._native import _core as core  # built: the backend resolved to native

    if not hasattr(core, "SlidingWindowCount"):  # a core built before it
        raise NativeUnavailableError(
            "the compiled core was built before SlidingWindowCount existed; rebuild it "
            "(bash scripts/build_native.sh, or pip install -e .) or use backend='python'"
        )
    return core


def make(eps: float, time_bits: int, max_window: int, capacity_factor: float, kappa: int) -> Any:
    """An empty native ``_core.SlidingWindowCount`` (max_window 0: none). O(1)."""
    return _core().SlidingWindowCount(eps, time_bits, max_window, capacity_factor, kappa)


def load(params: tuple[float, int, int, float, int], fields: tuple[Any, ...]) -> Any:
    """A native summary from its parameters and codec fields (CodecError if invalid). O(s)."""
    return _core().SlidingWindowCount.load(*params, *fields)
