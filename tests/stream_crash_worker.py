"""A consumer loop over :func:`windowagg.stream` with a store, for the SIGKILL test.

``python stream_crash_worker.py URL NAMESPACE OUTDIR LAYOUT``: resumes from the store's
``checkpoint_token`` (None: from the start), then for each micro-batch *i* of
:func:`batch`: feed it with ``commit=False``, write its output to ``OUTDIR/i.pkl``
(atomically: a temporary file renamed), commit, print ``ACK i``. Last, the windows left
(``advance`` past every time) under the token ``"end"``. A sink that overwrites by token
and a commit after the sink: exactly once, whatever moment the process is killed at.
"""

from __future__ import annotations

import os
import sys
from typing import Any

import numpy as np
import pandas as pd

import windowagg

BATCHES = 16
ROWS = 200
KEYS = 12
AGGS = {
    "panes": ["max(v)", "sum(v)", "count"],
    "events": ["p95(v)", "max(v)", "count"],
    "sessions": ["max(v)", "sum(v)", "count", "first(v)"],
    "count": ["max(v)", "sum(v)", "count"],
    # no size: each key's whole history, its frozen partial and revisable events
    "history": ["ewm_mean(v, half_life=2 min)", "decayed_sum(v, half_life=10 min) as s"],
    "trailing": ["max(v)", "sum(v)", "count", "first(v)"],
}
#: The windows of each layout's stream (``count``: the event log's count windows).
SHAPES: dict[str, dict[str, Any]] = {
    "panes": {"size": "5 min", "slide": "1 min"},
    "events": {"size": "5 min", "slide": "1 min"},
    "sessions": {"gap": "10 s"},
    "count": {"rows": 20, "every": 5},
    "history": {},
    "trailing": {"size": "5 min", "slide": None},  # per-event windows on a FiBA
}


def batch(i: int) -> pd.DataFrame:
    """Micro-batch *i*: ROWS events of KEYS keys, some out of order, some late."""
    rng = np.random.default_rng(1000 + i)
    t = i * 60 + rng.integers(-90, 60, ROWS)  # seconds; up to 150 s behind
    return pd.DataFrame(
        {
            "k": rng.integers(0, KEYS, ROWS).astype(str),
            "t": t,
            "v": rng.integers(0, 100, ROWS).astype(np.float64),
        }
    )


def open_stream(store: Any, ns: str, layout: str) -> windowagg.Stream:
    return windowagg.stream(
        "k",
        "t",
        AGGS[layout],
        **SHAPES[layout],
        max_out_of_orderness="30 s",
        allowed_lateness="1 min",
        store=store,
        namespace=ns,
    )


def _write(out: Any, path: str) -> None:
    tmp = path + ".tmp"
    pd.to_pickle((out.results, out.rejects), tmp)
    os.replace(tmp, path)


def _step() -> None:
    """Under the test (``CRASH_STEPS=1``), wait for its go-ahead on stdin before each
    micro-batch, so that the worker is never more than one micro-batch ahead of the moment
    the test chose to kill it (EOF: run freely to the end)."""
    if os.environ.get("CRASH_STEPS") == "1":
        sys.stdin.readline()


def run(store: Any, ns: str, outdir: str, layout: str) -> None:
    s = open_stream(store, ns, layout)
    tok = s.checkpoint_token
    if tok == "end":
        return
    for i in range(0 if tok is None else tok + 1, BATCHES):
        _step()
        out = s.feed(batch(i), token=i, commit=False)
        _write(out, os.path.join(outdir, f"{i}.pkl"))
        s.commit()
        print(f"ACK {i}", flush=True)
    _step()
    out = s.advance(float("inf"), token="end", commit=False)
    _write(out, os.path.join(outdir, "end.pkl"))
    s.commit()
    print("DONE", flush=True)


if __name__ == "__main__":
    url, ns, outdir, layout = sys.argv[1:5]
    run(url, ns, outdir, layout)
