"""Crash test of :func:`windowagg.stream`: SIGKILL at random points, resume, replay.

A worker process (``stream_crash_worker.py``) runs a consumer loop over SQLite or a Redis
server started here: feed a micro-batch, write its output under its token, commit, next.
The test kills it with SIGKILL at random moments (while it imports, feeds, writes or
commits), starts it again until it finishes, and checks that the outputs, token by token,
equal an uninterrupted in-process run's: nothing missing, nothing twice.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pandas as pd
import pytest

import stream_crash_worker as worker
from storage.mta_redis_server import redis_url
from windowagg.storage import MemoryStore

WORKER = Path(__file__).with_name("stream_crash_worker.py")


def _outputs(outdir: Path) -> list[tuple[pd.DataFrame, pd.DataFrame]]:
    names = [f"{i}.pkl" for i in range(worker.BATCHES)] + ["end.pkl"]
    return [pd.read_pickle(outdir / n) for n in names]


@pytest.mark.parametrize("layout", ["panes", "events", "sessions", "count", "history", "trailing"])
@pytest.mark.parametrize("backend", ["sqlite", "redis"])
def test_sigkill_then_resume_is_exactly_once(backend: str, layout: str, tmp_path: Path) -> None:
    ref_dir = tmp_path / "ref"
    ref_dir.mkdir()
    worker.run(MemoryStore(), "ref", str(ref_dir), layout)  # uninterrupted, in process
    url = f"sqlite://{tmp_path / 's.db'}" if backend == "sqlite" else redis_url()
    ns = f"crash-{uuid.uuid4().hex}"
    outdir = tmp_path / "out"
    outdir.mkdir()
    rnd = random.Random(f"{backend}-{layout}")
    kills = 0
    for _attempt in range(12):
        proc = subprocess.Popen(
            [sys.executable, str(WORKER), url, ns, str(outdir), layout],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1", "CRASH_STEPS": "1"},
        )
        assert proc.stdin is not None and proc.stdout is not None
        if kills < 3:
            # the worker runs one micro-batch per go-ahead: let it acknowledge a random
            # number of them (0-3), then give one more go-ahead and kill it a random moment
            # later (inside that feed, the sink's write or the commit, or during start-up);
            # at most 4 of the 17 steps an attempt, so every kill lands before the end
            for _ in range(rnd.randint(0, 3)):
                proc.stdin.write("go\n")
                proc.stdin.flush()
                if not proc.stdout.readline():
                    break
            proc.stdin.write("go\n")
            proc.stdin.flush()
            time.sleep(rnd.uniform(0.0, 0.02))
            if proc.poll() is None:
                proc.send_signal(signal.SIGKILL)
                kills += 1
        else:
            proc.stdin.close()  # EOF: run freely to the end
        proc.wait(timeout=120)
        if proc.returncode == 0:
            break
        assert proc.returncode == -signal.SIGKILL, proc.stderr.read() if proc.stderr else ""
    else:
        pytest.fail("the worker never finished")
    assert kills == 3
    got, want = _outputs(outdir), _outputs(ref_dir)
    for (gr, gj), (wr, wj) in zip(got, want, strict=True):
        pd.testing.assert_frame_equal(gr, wr)
        pd.testing.assert_frame_equal(gj, wj)
    assert sum(len(r) for r, _ in got) > 100 and sum(len(j) for _, j in got) > 0
    if layout == "trailing":  # per-event windows of monoids: the FiBA layout
        from windowagg.pandas import parse
        from windowagg.windows.engine import KeyStream, Shape

        assert KeyStream(parse(worker.AGGS[layout]), Shape(size=300)).layout == "trailing"
    if layout == "count":  # the keys' last events, rejected once, at the end
        tail = got[-1][1]
        assert len(tail) and tail["reason"].str.startswith("in no window").all()
