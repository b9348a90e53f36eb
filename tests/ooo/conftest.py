"""Fixtures of the out-of-order tests: FiBA's backends (the twins: tests/conftest.py)."""

from __future__ import annotations

import pytest

from windowagg._backend import native_available


@pytest.fixture(params=["python", "native"])
def fiba_backend(request: pytest.FixtureRequest) -> str:
    """Each FiBA backend; "native" is skipped when the compiled core is not built."""
    if request.param == "native" and not native_available():
        pytest.skip("windowagg's compiled core is not built")
    return str(request.param)


@pytest.fixture
def python_backend(monkeypatch: pytest.MonkeyPatch) -> None:
    """Build every FiBA of the test on the pure-Python reference (tests of its internals)."""
    monkeypatch.setenv("WINDOWAGG_BACKEND", "python")


# ``each_backend`` (every test once per backend, the default set for it) is tests/conftest.py's
# autouse fixture: a test here may still name it (``usefixtures("each_backend")``).
