"""Fixtures of the out-of-order tests: FiBA's backends."""

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


@pytest.fixture(params=["python", "native"])
def each_backend(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Run the test once per backend: every FiBA built without ``backend=`` uses it."""
    if request.param == "native" and not native_available():
        pytest.skip("windowagg's compiled core is not built")
    monkeypatch.setenv("WINDOWAGG_BACKEND", str(request.param))
    return str(request.param)
