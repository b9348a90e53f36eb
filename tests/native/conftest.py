"""tests/native: the compiled core against its Python twins (skipped if it is not built)."""

from __future__ import annotations

import pytest

from windowagg import native_available

if not native_available():  # pragma: no cover - CI builds the core
    pytest.skip(
        "windowagg's compiled core is not built (bash scripts/build_native.sh)",
        allow_module_level=True,
    )
