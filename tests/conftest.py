"""Shared test configuration: Hypothesis profiles, the backend twins, the Spark marker.

Hypothesis profiles (select with HYPOTHESIS_PROFILE; CI=true selects ``ci``):

- ``dev`` (default): quick local runs.
- ``ci``: bounded so the whole suite stays well inside CI's limit on 2 cores, and
  derandomized: each test's examples are drawn from a seed of the test's own source, so the
  CI of a commit runs the examples a local ``CI=true`` run of that commit ran (a red CI is
  reproducible and a green local run predicts it; a test that changes draws new examples).
  Random exploration is ``dev``'s (every local run) and ``thorough``'s (a night run); an
  example either finds is kept with ``@example`` beside the fix.
- ``thorough``: many more examples and longer state-machine runs, for a night run.

Backends: each test runs on each backend where its result can depend on it
---------------------------------------------------------------------------
``WINDOWAGG_BACKEND`` (``windowagg._backend``) only chooses what ``backend=None`` means for
the classes that have a compiled twin (``fifo.TwoStacksLite``, ``DABALite``, ``DABA``,
``AMTA``, ``ooo.FiBA``, ``OrderStatistics``, and whatever builds them: the windows engine,
``windowagg.pandas``, the CLI's local engine). So, when ``WINDOWAGG_BACKEND`` is unset or
``auto``, every test (except the Spark tests and the doctests) is collected twice by the
autouse fixture ``each_backend``, as ``[native]`` then ``[python]``: the fixture sets
``WINDOWAGG_BACKEND`` for the test. While the ``[native]`` twin runs, the fixture watches
whether any object was built on the compiled core *because of the default* (a
``backend=None`` that resolved to native: an ``AMTA`` with a store never reads the default,
since the native side has no store, so it does not count). If none was, the test's result
cannot depend on the backend and the ``[python]`` twin is skipped with that reason (one line
of ``-rs``); otherwise it runs on the pure-Python reference. New tests in any directory are
picked up with no list to keep: a test that passes ``backend=`` itself (``tests/native``,
the ``@native`` labels of ``tests/fifo/fifo_family.py``, ``fiba_backend``) runs once, a test
that builds through the default runs on both. The ``[python]`` twin always runs when its
``[native]`` twin did not run first (native not built, ``-k python``, a reordering plugin).

- ``WINDOWAGG_BACKEND=python pytest ...`` (or ``=native``): no twins; every test runs once,
  with the default set to that backend, as before (a developer checking the reference).
- ``pytest -k native`` / ``-k python``: one twin of each backend-aware test.
- A module-scoped fixture that builds an aggregator through the default is built once, on
  the backend of the first test that needs it: pass ``backend=`` there.
- Under pytest-xdist with ``--dist loadgroup`` (``scripts/test.sh`` runs ``-n 2 --dist
  loadgroup``) both twins of a test are one work unit (``pytest_xdist_make_scheduler`` below),
  so the ``[native]`` twin runs first, on the same worker; with another ``--dist`` a
  ``[python]`` twin may run before its ``[native]`` one and then simply runs.

Threads: ``WINDOWAGG_THREADS`` is pinned to 2 unless set (the engine's ``threads=None``).

Spark: a test that requests the session-scoped ``spark`` fixture is marked ``spark`` here
(whether or not it says so), so ``-m spark`` / ``-m "not spark"`` split the suite exactly and
an xdist run of ``not spark`` never starts a SparkSession per worker.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

import windowagg._backend as _backend

settings.register_profile(
    "dev",
    max_examples=60,
    stateful_step_count=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile(
    "ci",
    max_examples=40,
    stateful_step_count=40,
    deadline=None,
    derandomize=True,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile(
    "thorough",
    max_examples=1000,
    stateful_step_count=200,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
_default = "ci" if os.environ.get("CI") else "dev"
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", _default))

# The batch engine's threads (issue 40): ``threads=None`` means $WINDOWAGG_THREADS, else the
# machine's cores. Pinned here so that no test depends on the cores of the machine it runs
# on; every engine test gives the same output with any value (``WINDOWAGG_THREADS=1 pytest``
# runs them on one thread; tests/windows/test_engine_threads.py compares 1 with 2 and 3).
os.environ.setdefault("WINDOWAGG_THREADS", "2")


# --- backend twins ------------------------------------------------------------------------

TWINS = ("native", "python")  # in this order: the [native] twin decides for the [python] one
_TWIN_KEY = pytest.StashKey[str]()
_UNITTEST_BACKEND = pytest.StashKey[str]()
_SKIP_REASON = (
    "python twin: its [native] twin built nothing on the compiled core through "
    "WINDOWAGG_BACKEND, so the result does not depend on the backend"
)


def _explicit_backend() -> str | None:
    """The backend named by ``$WINDOWAGG_BACKEND`` ("python" / "native"), else None."""
    value = os.environ.get(_backend.ENV_VAR, "").strip().lower()
    return value if value in ("python", "native") else None


class _Probe:
    """Counts objects built on the compiled core because ``backend=None`` meant native."""

    count = 0


def _install_probe() -> None:
    default_backend = _backend.default_backend

    def probed_default_backend() -> _backend.Backend:
        chosen = default_backend()
        if chosen == "native" or (chosen == "auto" and _backend.native_available()):
            _Probe.count += 1
        return chosen

    # resolve_backend (every caller: the public classes' constructors,
    # FiBA.from_sorted_partials, ...) reads the default through this module attribute; a
    # call the native side cannot serve (an AMTA with a store) does not read it.
    _backend.default_backend = probed_default_backend  # type: ignore[assignment]


_install_probe()
_native_by_default: dict[str, bool] = {}  # twin key -> the [native] twin built native


def _twinned(definition: Any, fixturenames: list[str]) -> bool:
    return (
        _explicit_backend() is None
        and "each_backend" in fixturenames
        and "spark" not in fixturenames
        and definition.get_closest_marker("spark") is None
    )


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if _twinned(metafunc.definition, metafunc.fixturenames):
        metafunc.parametrize("each_backend", TWINS, indirect=True)


@pytest.hookimpl(tryfirst=True)
def pytest_pycollect_makeitem(collector: pytest.Collector, name: str, obj: object) -> Any:
    """A unittest.TestCase (the Hypothesis state machines) is collected once per backend."""
    import inspect
    import unittest

    if not isinstance(obj, type) or not issubclass(obj, unittest.TestCase):
        return None
    if inspect.isabstract(obj):
        return None
    if _explicit_backend() is not None or collector.get_closest_marker("spark") is not None:
        return None
    from _pytest.unittest import UnitTestCase

    twins = []
    for backend in TWINS:
        node = UnitTestCase.from_parent(collector, name=f"{name}[{backend}]")
        node.obj = obj  # the class itself: the module has no attribute of the twin's name
        node.stash[_UNITTEST_BACKEND] = backend
        twins.append(node)
    return twins


def _twin_key(item: pytest.Item) -> str | None:
    callspec = getattr(item, "callspec", None)
    if callspec is not None and "each_backend" in callspec.params:
        # the twin's other parameters (the same objects in both twins; indices differ)
        others = sorted((k, repr(v)) for k, v in callspec.params.items() if k != "each_backend")
        digest = hashlib.sha1(repr(others).encode()).hexdigest()[:16]
        return f"{item.nodeid.split('[', 1)[0]}[{digest}]"
    cls_node = item.parent
    if cls_node is not None and _UNITTEST_BACKEND in cls_node.stash:
        base = cls_node.nodeid.rsplit("[", 1)[0]
        return f"{base}::{item.name}"
    return None


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if "spark" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.spark)
        key = _twin_key(item)
        if key is not None:
            item.stash[_TWIN_KEY] = key


# "t.py::test[native-3]" -> "t.py::test[3]", "t.py::TestM[python]::runTest" -> "t.py::TestM[]::runTest"
_TWIN_ID = re.compile(r"\[(?:native|python)(?:-|(?=\]))")


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """``--dist loadgroup``: both twins of a test are one work unit, so the [native] twin runs
    first and on the same worker as its [python] twin. (xdist's own ``xdist_group`` marks
    rename node ids through an attribute that pytest 9.2 no longer reads, so they group
    nothing; this scheduler reads the twins from the node ids instead.)"""
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class TwinScheduling(LoadScopeScheduling):  # type: ignore[misc]
        def _split_scope(self, nodeid: str) -> str:
            return _TWIN_ID.sub("[", nodeid, count=1)

    return TwinScheduling(config, log)


def _twin_backend(item: pytest.Item) -> str | None:
    callspec = getattr(item, "callspec", None)
    if callspec is not None and "each_backend" in callspec.params:
        return str(callspec.params["each_backend"])
    if item.parent is not None:
        return item.parent.stash.get(_UNITTEST_BACKEND, None)
    return None


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    # skipped here, not in the fixture, so that ``-rs`` folds every such skip into one line
    key = item.stash.get(_TWIN_KEY, None)
    if key is None:
        return
    backend = _twin_backend(item)
    if backend == "native" and not _backend.native_available():
        pytest.skip("windowagg's compiled core is not built (bash scripts/build_native.sh)")
    if backend == "python" and _native_by_default.get(key) is False:
        pytest.skip(_SKIP_REASON)


@pytest.fixture(autouse=True)
def each_backend(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """The backend of this twin ("native" / "python"), set as ``$WINDOWAGG_BACKEND``; when the
    test is not twinned, the default backend's name (``WINDOWAGG_BACKEND`` as it is)."""
    key = request.node.stash.get(_TWIN_KEY, None)
    backend = _twin_backend(request.node)
    if backend is None or key is None:
        yield _backend.default_backend()
        return
    monkeypatch.setenv(_backend.ENV_VAR, backend)
    _Probe.count = 0
    yield backend
    if backend == "native":
        _native_by_default[key] = _Probe.count > 0
