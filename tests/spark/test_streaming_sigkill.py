"""Exactly-once across a crash: the Spark driver is killed with SIGKILL mid-stream, a new
driver restarts from the same checkpoint, and the committed output holds every window of
the batch answer exactly once (none missing, none duplicated)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from windowagg.pandas import window_agg

pytestmark = pytest.mark.spark

N_FILES = 6
SIZE_US, SLIDE_US, OOO_US = 600_000_000, 60_000_000, 120_000_000
AGGS = ["max(v)", "sum(v)", "count"]

DRIVER = textwrap.dedent(
    """
    import sys
    from windowagg.spark import session, stream_window_agg

    src, sink, ckpt, mode, api = sys.argv[1:6]
    spark = session("local[2]", "windowagg-sigkill", driver_memory="1g")
    spark.sparkContext.setLogLevel("ERROR")
    sdf = (spark.readStream.schema("k string, t timestamp, v double")
           .option("maxFilesPerTrigger", 1).parquet(src))
    out = stream_window_agg(sdf, "k", "t", {aggs!r}, size="{size} us", slide="{slide} us",
                            max_out_of_orderness="{ooo} us", api=api)
    w = (out.writeStream.format("parquet").outputMode("append")
         .option("path", sink).option("checkpointLocation", ckpt))
    w = w.trigger(availableNow=True) if mode == "finish" else w
    q = w.start()
    print("started", flush=True)
    q.awaitTermination()
    """
).format(aggs=AGGS, size=SIZE_US, slide=SLIDE_US, ooo=OOO_US)


def _inputs(folder: Path) -> pd.DataFrame:
    """N_FILES Parquet files, each 20 minutes of events (shuffled inside), mtimes increasing."""
    rng = np.random.default_rng(19)
    folder.mkdir()
    parts = []
    base = time.time() - 10_000
    for i in range(N_FILES):
        n = 300
        t = pd.Timestamp("2024-03-01", tz="UTC") + pd.to_timedelta(
            i * 1_200_000_000 + rng.integers(0, 1_200_000_000, n), unit="us"
        )
        part = pd.DataFrame({"k": rng.choice(["a", "b", "c"], n), "t": t, "v": rng.normal(size=n)})
        p = folder / f"part-{i:03d}.parquet"
        part.to_parquet(p, index=False, coerce_timestamps="us")
        os.utime(p, (base + i, base + i))  # the file source takes files in mtime order
        parts.append(part)
    return pd.concat(parts, ignore_index=True)


def _driver(script: Path, args: list[str]) -> subprocess.Popen[str]:
    env = dict(os.environ)
    src = str(Path(__file__).resolve().parents[2] / "src")
    env["PYTHONPATH"] = os.pathsep.join([src, env.get("PYTHONPATH", "")])
    env.setdefault("PYSPARK_PYTHON", sys.executable)
    return subprocess.Popen(
        [sys.executable, str(script), *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,  # its own process group: the JVM and workers die with it
    )


def _commits(ckpt: Path) -> int:
    d = ckpt / "commits"
    return len([f for f in d.iterdir() if f.name.isdigit()]) if d.exists() else 0


def _files_read(ckpt: Path) -> set[str]:
    """Every input file the file source logged in the checkpoint (its ``sources/0`` log).

    How many micro-batches it took depends on where the kill fell (a batch planned but not
    committed is re-planned), so the test counts the files, not the commits."""
    d = ckpt / "sources" / "0"
    names: set[str] = set()
    for f in d.iterdir() if d.exists() else ():
        if f.name.split(".")[0].isdigit():
            for line in f.read_text().splitlines()[1:]:
                names.add(json.loads(line)["path"].rsplit("/", 1)[-1])
    return names


@pytest.mark.parametrize("api", ["applyInPandasWithState", "transformWithStateInPandas"])
def test_sigkill_mid_stream_then_restart_loses_and_repeats_nothing(
    spark: Any, tmp_path: Path, api: str
):
    data = _inputs(tmp_path / "in")
    script = tmp_path / "driver.py"
    script.write_text(DRIVER)
    sink, ckpt = tmp_path / "out", tmp_path / "ckpt"
    args = [str(tmp_path / "in"), str(sink), str(ckpt)]
    first = _driver(script, [*args, "run", api])
    deadline = time.monotonic() + 300  # generous: the machine may be loaded
    while _commits(ckpt) < 2:
        assert first.poll() is None, first.communicate()[0][-3000:]
        assert time.monotonic() < deadline, "the first driver committed too few micro-batches"
        time.sleep(0.2)
    os.killpg(first.pid, signal.SIGKILL)  # the driver and its JVM, mid-stream
    first.wait()
    assert first.returncode == -signal.SIGKILL
    done_at_kill = _commits(ckpt)
    assert done_at_kill < N_FILES, "the stream finished before the kill: nothing was tested"

    second = _driver(script, [*args, "finish", api])
    log = second.communicate(timeout=300)[0]
    assert second.returncode == 0, log[-3000:]
    assert _files_read(ckpt) == {f"part-{i:03d}.parquet" for i in range(N_FILES)}

    from windowagg.spark import split

    results, rejects = split(spark.read.parquet(str(sink)))  # committed files only
    got = results.toPandas()  # toPandas gives naive UTC times (session time zone UTC)
    got["window_start"] = got["window_start"].dt.tz_localize("UTC")
    assert rejects.count() == 0
    key = ["k", "window_start"]
    assert not got.duplicated(key).any(), "a window was emitted twice"
    want = window_agg(data, ["k"], "t", AGGS, size=f"{SIZE_US} us", slide=f"{SLIDE_US} us").results
    # what streaming emits: the windows every key's watermark (its max time - OOO) closed
    wm = data.groupby("k")["t"].max() - pd.Timedelta(microseconds=OOO_US)
    want = want[want["window_end"] <= want["k"].map(wm)]
    got = got.sort_values(key).reset_index(drop=True)
    want = want.sort_values(key).reset_index(drop=True)
    assert len(got) == len(want), "a window is missing"
    assert (got["window_start"] == want["window_start"]).all()
    assert (got["count"].to_numpy() == want["count"].to_numpy()).all()
    assert np.allclose(got["max_v"], want["max_v"]) and np.allclose(got["sum_v"], want["sum_v"])
