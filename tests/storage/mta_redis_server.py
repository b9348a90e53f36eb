"""A throwaway redis-server for the storage tests (one per test process, started lazily).

``redis_url()`` starts ``redis-server`` on a free loopback port in a temporary directory
(with a password, no persistence to the host's dirs) and returns its URL; the server is
terminated at interpreter exit. When the binary is missing, tests are skipped with the
reason -- unless the environment variable ``CI`` is set, where they fail with a clear
message (CI installs redis-server in scripts/test.sh).
"""

from __future__ import annotations

import atexit
import os
import shutil
import socket
import subprocess
import tempfile
import time

import pytest

PASSWORD = "windowagg-test-secret"
_server: dict[str, object] = {}


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def require_redis_server() -> str:
    """Path of redis-server; skip (or fail under CI) when it is not installed."""
    exe = shutil.which("redis-server")
    if exe is None:
        msg = (
            "redis-server is not installed: the Redis backend tests need it "
            "(apt-get install redis-server; scripts/test.sh does this in CI)"
        )
        if os.environ.get("CI"):
            pytest.fail(msg)
        pytest.skip(msg)
    return exe


def start_server(
    exe: str, extra: list[str] | None = None
) -> tuple[subprocess.Popen[bytes], int, str]:
    """Start a redis-server with a password in a temp dir; return (process, port, dir)."""
    d = tempfile.mkdtemp(prefix="windowagg-redis-")
    port = _free_port()
    args = [
        exe,
        "--port",
        str(port),
        "--bind",
        "127.0.0.1",
        "--dir",
        d,
        "--requirepass",
        PASSWORD,
        "--save",
        "",
        "--appendonly",
        "no",
        "--daemonize",
        "no",
        *(extra or []),
    ]
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            err = proc.stderr.read().decode() if proc.stderr else ""
            raise RuntimeError(f"redis-server exited at start: {err}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                break
        except OSError:
            time.sleep(0.05)
    else:
        proc.kill()
        raise RuntimeError("redis-server did not start within 10 s")
    return proc, port, d


def redis_url() -> str:
    """URL (with password) of this process's test server, starting it on first use."""
    exe = require_redis_server()
    if "url" not in _server:
        proc, port, d = start_server(exe)
        _server["url"] = f"redis://:{PASSWORD}@127.0.0.1:{port}/0"

        def stop() -> None:
            proc.terminate()
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
            shutil.rmtree(d, ignore_errors=True)

        atexit.register(stop)
    return str(_server["url"])
