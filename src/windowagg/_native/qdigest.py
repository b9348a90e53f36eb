"""The native ``_core.QDigest`` that :class:`windowagg.sketches.qdigest.QDigest` holds
(nothing here imports the public class: ``_native`` sits below it)."""

from __future__ import annotations

from typing import Any

from windowagg.errors import NativeUnavailableError

__all__ = ["load", "make"]


def _core() -> Any:
    from windowagg._native import _core as core  # built: the backend resolved to native

    if not hasattr(core, "QDigest"):  # a core built before it
        raise NativeUnavailableError(
            "the compiled core was built before QDigest existed; rebuild it "
            "(bash scripts/build_native.sh, or pip install -e .) or use backend='python'"
        )
    return core


_QDigest: Any = None  # _core.QDigest, once found (make() is called per interval by ValueDivision)


def make(umax: int, eps: float) -> Any:
    """An empty native ``_core.QDigest`` over keys ``[0, umax]``. O(L)."""
    global _QDigest
    if _QDigest is None:
        _QDigest = _core().QDigest
    return _QDigest(umax, eps)


def load(umax: int, eps: float, n: float, depths: bytes, offsets: bytes, counts: bytes) -> Any:
    """A native ``_core.QDigest`` from its codec fields (CodecError if invalid). O(s)."""
    return _core().QDigest.load(umax, eps, n, depths, offsets, counts)
