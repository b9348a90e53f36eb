"""A pytest plugin for runs that may die: the node id of the running test, kept in a file.

scripts/test_native_sanitized.sh loads it (``-p pytest_running_test``) with
``WINDOWAGG_RUNNING_TEST`` naming the file. The file holds the test that has started and not
yet finished, and is removed when the session finishes: a process killed by a signal, or
ended by a sanitizer's report, prints no summary (and pytest's output capture swallows what
the test itself wrote), so the script names that test from the file when it is still there.
A test's subprocess (the thread tests) inherits nothing from here.
"""

from __future__ import annotations

import os

import pytest

_PATH = os.environ.get("WINDOWAGG_RUNNING_TEST", "")


def _write(text: str) -> None:
    # a plain write(2): on the disk (page cache) whatever happens to the process next
    fd = os.open(_PATH, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)


def pytest_sessionstart(session: pytest.Session) -> None:
    if _PATH:
        _write("(collection, before the first test)\n")


def pytest_runtest_logstart(nodeid: str, location: tuple[str, int | None, str]) -> None:
    if _PATH:
        _write(nodeid + "\n")


def pytest_runtest_logfinish(nodeid: str, location: tuple[str, int | None, str]) -> None:
    if _PATH:
        _write(f"{nodeid} had finished; the next test had not started\n")


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if _PATH and os.path.exists(_PATH):
        os.unlink(_PATH)
