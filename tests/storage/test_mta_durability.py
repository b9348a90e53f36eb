"""Durability: a store-backed window survives SIGKILL of its process and resumes exactly.

A worker process (``mta_durability_worker.py``, run with this interpreter) feeds a
deterministic bursty stream into a LogMTA / AMTA backed by SQLite or Redis, flushing
every few hundred items and printing ``ACK n`` after each flush. The test kills it with
SIGKILL in the middle of the stream, reopens the window in this process, and checks:

- the window resumes at a checkpoint at or after the last acknowledged flush (nothing
  acknowledged is lost), with exactly the contents a never-interrupted run had there;
- feeding the rest of the stream gives results identical to an uninterrupted in-process
  run, item by item.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

from storage import mta_durability_worker as worker
from storage.mta_redis_server import redis_url
from windowagg.fifo.amta import AMTA
from windowagg.fifo.log_mta import LogMTA

WORKER = Path(__file__).with_name("mta_durability_worker.py")
TOTAL = 12_000
FLUSH = 331


def _reference(cls: Any) -> tuple[list[Any], list[list[Any]]]:
    """Per item: query() and (every FLUSH items) the window contents, uninterrupted."""
    w = cls(worker.monoid(), policy=worker.policy())
    results, contents = [], []
    for item in worker.stream(TOTAL):
        w.insert_and_enforce(item)
        results.append(w.query())
        contents.append(list(w) if len(results) % 50 == 0 else [])
    return results, contents


@pytest.mark.parametrize("backend", ["sqlite", "redis"])
@pytest.mark.parametrize("cls", [LogMTA, AMTA])
def test_sigkill_mid_stream_then_resume(cls: Any, backend: str, tmp_path: Path) -> None:
    url = f"sqlite://{tmp_path / 'w.db'}" if backend == "sqlite" else redis_url()
    ns = f"dur-{uuid.uuid4().hex}"
    proc = subprocess.Popen(
        [sys.executable, str(WORKER), cls.__name__, url, ns, str(TOTAL), str(FLUSH)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    acked = 0
    assert proc.stdout is not None
    for line in proc.stdout:
        if line.startswith("ACK"):
            acked = int(line.split()[1])
            if acked >= 3 * FLUSH:
                proc.send_signal(signal.SIGKILL)  # mid-stream: it keeps inserting meanwhile
                break
        if line.startswith("DONE"):
            break
    proc.wait(timeout=60)
    assert proc.returncode == -signal.SIGKILL, proc.stderr.read() if proc.stderr else ""
    assert 0 < acked < TOTAL

    results, contents = _reference(cls)
    w = worker.make(cls.__name__, url, ns)
    token = w.checkpoint_token
    assert token is not None and token >= acked, (token, acked)
    assert token % FLUSH == 0
    if token:
        assert w.query() == results[token - 1]
    w._check()
    items = worker.stream(TOTAL)
    for i in range(token, TOTAL):
        w.insert_and_enforce(items[i])
        assert w.query() == results[i], i
        if contents[i]:
            assert list(w) == contents[i], i
    w._check()
    assert w.store is not None
    w.store.drop_namespace(ns)
    w.store.close()
