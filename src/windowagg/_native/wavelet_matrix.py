"""The native ``_core.WaveletMatrix`` that :class:`windowagg.wavelet_matrix.WaveletMatrix`
holds (nothing here imports the public class: ``_native`` sits below it)."""

from __future__ import annotations

from typing import Any

from windowagg.errors import NativeUnavailableError

__all__ = ["make"]


def make(codes: Any, sigma: int) -> Any:
    """A native ``_core.WaveletMatrix`` over int64 *codes* in ``[0, sigma)``."""
    from windowagg._native import _core as core  # built: the backend resolved to native

    if not hasattr(core, "WaveletMatrix"):  # a core built before it
        raise NativeUnavailableError(
            "the compiled core was built before WaveletMatrix existed; rebuild it "
            "(bash scripts/build_native.sh, or pip install -e .) or use backend='python'"
        )
    return core.WaveletMatrix(codes, sigma)
