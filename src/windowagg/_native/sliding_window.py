"""The native ``_core.SlidingWindowCount`` / ``_core.SlidingWindowQDigest`` that
:class:`windowagg.sketches.SlidingWindowCount` / ``SlidingWindowQDigest`` hold (nothing here
imports the public classes: ``_native`` sits below them)."""

from __future__ import annotations

from typing import Any

from windowagg.errors import NativeUnavailableError

__all__ = ["MAX_UNIVERSE", "load", "make"]

MAX_UNIVERSE = 1 << 62  # the twin's value leaves 2**LU + x are uint64 heap ids, LU <= 62


def _cls(values: bool) -> Any:
    from windowagg._native import _core as core  # built: the backend resolved to native

    name = "SlidingWindowQDigest" if values else "SlidingWindowCount"
    if not hasattr(core, name):  # a core built before it
        raise NativeUnavailableError(
            f"the compiled core was built before {name} existed; rebuild it "
            "(bash scripts/build_native.sh, or pip install -e .) or use backend='python'"
        )
    return getattr(core, name)


def make(values: bool, params: tuple[float, int, int, float, int, int]) -> Any:
    """An empty native summary: params = (eps, time_bits, max_window (0: none),
    capacity_factor, kappa, universe (0 for the count)). O(1)."""
    return _cls(values)(*params)


def load(
    values: bool, params: tuple[float, int, int, float, int, int], fields: tuple[Any, ...]
) -> Any:
    """A native summary from its parameters and codec fields (CodecError if invalid). O(s)."""
    return _cls(values).load(*params, *fields)
