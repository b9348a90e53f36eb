"""The demo's "late but accepted" count equals a brute-force replay of the streaming
runner: per micro-batch, the accepted events older than the key's watermark, and the
already emitted windows that contain them."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd

from windowagg.spark.flights import late_touched_windows
from windowagg.spark.frames import KeyRunner
from windowagg.spark.spec import WindowSpec, parse_aggs

SIZE, SLIDE, OOO, LATE = 60_000_000, 10_000_000, 20_000_000, 15_000_000


def test_late_touched_windows_equals_a_replay_of_the_runner() -> None:
    rng = np.random.default_rng(13)
    n = 3_000
    arrival = np.sort(rng.integers(0, 3_600_000_000, n))
    t = arrival - rng.exponential(12_000_000, n).astype(np.int64)  # out of order
    pdf = pd.DataFrame(
        {
            "k": rng.choice(["a", "b"], n),
            "t": pd.to_datetime(t, unit="us", utc=True),
            "v": rng.normal(size=n),
            "id": np.arange(n),
            "batch": arrival // 120_000_000,  # one micro-batch per 2 minutes of arrivals
        }
    )
    spec = WindowSpec(size=SIZE, slide=SLIDE, max_out_of_orderness=OOO, allowed_lateness=LATE)
    aggs = parse_aggs(["count"])
    results, rejected, n_late, touched = [], set(), 0, 0
    for _key, g in pdf.groupby("k"):
        state, emitted = None, []
        hit: set[int] = set()
        for _b, chunk in g.groupby("batch", sort=True):
            runner = KeyRunner(["k"], "t", aggs, spec, state, time_unit="us")
            wm = runner.watermark
            res, rej = runner.feed(chunk.drop(columns=["batch"]).reset_index(drop=True))
            state = runner.to_bytes()
            bad = {json.loads(r)["id"] for r in rej["row"]}
            rejected |= bad
            ok = chunk[~chunk["id"].isin(bad)]
            ends = np.asarray(emitted, dtype=np.int64)
            for ti in ok["t"].astype("datetime64[us, UTC]").astype("int64"):
                if wm is not None and ti < wm:
                    n_late += 1
                    hit.update(ends[(ends > ti) & (ends - SIZE <= ti)].tolist())
            emitted += res["window_end"].astype("datetime64[us, UTC]").astype("int64").tolist()
            results.append(res)
        touched += len(hit)
    assert n_late >= 10 and touched >= 10 and rejected  # the data has all three cases
    accepted = pdf[~pdf["id"].isin(rejected)]
    got = late_touched_windows(
        accepted,
        pd.concat(results, ignore_index=True),
        key="k",
        time="t",
        batch="batch",
        size_us=SIZE,
        max_out_of_orderness_us=OOO,
    )
    assert got == (n_late, touched)
