"""``windowagg follow FOLDER``: windowagg.stream over the files arriving in a folder.

The outputs of a follow over files written with increasing modification times (the last
revision of every window, and every reject) equal ``window_agg`` on the files'
concatenation; a follow killed with SIGKILL and restarted writes the same outputs as one
that ran through (nothing lost, nothing twice); SIGTERM stops it after a committed file;
bad files and bad rows are rejects with reasons.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

import windowagg
from windowagg.cli import main
from windowagg.pandas import window_agg

WINDOWS: dict[str, list[str]] = {
    "hopping": ["--size", "10 s", "--slide", "5 s"],
    "count": ["--rows", "3", "--every", "2"],
}
KW: dict[str, dict[str, Any]] = {
    "hopping": {"size": "10 s", "slide": "5 s"},
    "count": {"rows": 3, "every": 2},
}
LATENESS = ["--max-out-of-orderness", "3 s", "--allowed-lateness", "4 s"]


def _batch(i: int) -> pd.DataFrame:
    """File *i*: 40 events of 4 keys, out of order, some late."""
    rng = np.random.default_rng(i)
    return pd.DataFrame(
        {
            "k": rng.choice(["a", "b", "c", "d"], 40),
            "t": i * 20 + rng.integers(-8, 20, 40),
            "v": rng.integers(0, 50, 40).astype(np.float64),
        }
    )


def _put(folder: Path, i: int, frame: pd.DataFrame | None = None, name: str = "") -> Path:
    """Write file *i* into *folder* (a hidden name, then a rename) with mtime i seconds
    after a fixed moment: files arrive in order."""
    f = folder / (name or f"b{i:02d}.parquet")
    tmp = folder / f".{f.name}"
    if f.suffix == ".csv":
        assert frame is None
        tmp.write_text(_BAD_CSV)
    else:
        (_batch(i) if frame is None else frame).to_parquet(tmp, index=False)
    os.replace(tmp, f)
    at = 1_700_000_000_000_000_000 + i * 1_000_000_000
    os.utime(f, ns=(at, at))
    return f


def _args(folder: Path, tmp: Path, shape: str, *extra: str) -> list[str]:
    return [
        "follow", str(folder), "--key", "k", "--time", "t", "--agg", "sum(v)", "--agg",
        "count", *WINDOWS[shape], *LATENESS, "--state", str(tmp / "state.db"), "--out",
        str(tmp / "out"), "--poll", "0.05", *extra,
    ]  # fmt: skip


def _outputs(out: Path) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Every results and rejects file of *out*, in name order (the end's last)."""

    def read(kind: str) -> pd.DataFrame:
        files = [*sorted(out.glob(f"{kind}-b*.parquet")), out / f"{kind}-_end.parquet"]
        return pd.concat([pd.read_parquet(f) for f in files], ignore_index=True)

    return read("results"), read("rejects")


def _final(results: pd.DataFrame, shape: str) -> pd.DataFrame:
    """The last revision of every window (count windows: every window, see the call)."""
    ident = ["k", "window_start", "window_end"]
    if shape == "hopping":
        top = results.groupby(ident)["revision"].transform("max")
        results = results[results["revision"] == top]
    return results.drop(columns="revision").sort_values(ident).reset_index(drop=True)


@pytest.mark.parametrize("shape", ["hopping", "count"])
def test_follow_equals_window_agg_on_the_concatenation(tmp_path: Path, shape: str) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    for i in range(4):
        _put(folder, i)
    late = ["--allowed-lateness", "0 s"] if shape == "count" else []  # see _final
    got = CliRunner().invoke(main, [*_args(folder, tmp_path, shape, "--idle", "0"), *late])
    assert got.exit_code == 0, got.output
    assert "the input ended" in got.output
    results, rejects = _outputs(tmp_path / "out")
    whole = pd.concat([_batch(i) for i in range(4)], ignore_index=True)
    kw = dict(KW[shape], max_out_of_orderness="3 s", allowed_lateness="4 s")
    if shape == "count":
        kw["allowed_lateness"] = "0 s"
    want = window_agg(whole, "k", "t", ["sum(v)", "count"], row_columns="*", **kw)
    pd.testing.assert_frame_equal(
        _final(results, shape),
        want.results.sort_values(["k", "window_start", "window_end"]).reset_index(drop=True),
        check_dtype=False,
    )
    # the same rejects (rows are unique here: a row's JSON names it), reasons included
    key = ["row", "reason"]
    assert sorted(map(tuple, rejects[key].values.tolist())) == sorted(
        map(tuple, want.rejects[key].values.tolist())
    )
    assert len(want.rejects) and (shape != "count" or rejects["reason"].str.startswith(
        "in no window: one of its key's last").any())  # fmt: skip


def _follow(folder: Path, tmp: Path, *extra: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "windowagg.cli", *_args(folder, tmp, "hopping", *extra)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "COLUMNS": "200"},
    )


def _wait_for(path: Path, proc: subprocess.Popen[str], seconds: float = 120) -> None:
    end = time.monotonic() + seconds
    while not path.exists():
        assert proc.poll() is None, proc.communicate()[0]
        assert time.monotonic() < end, f"{path} never came"
        time.sleep(0.05)


def test_a_killed_follow_resumes_exactly_once(tmp_path: Path) -> None:
    ref, run = tmp_path / "ref", tmp_path / "run"
    for d in (ref, run):
        (d / "in").mkdir(parents=True)
    for i in range(6):
        _put(ref / "in", i)
    got = CliRunner().invoke(main, _args(ref / "in", ref, "hopping", "--idle", "0"))
    assert got.exit_code == 0, got.output
    for i in range(3):
        _put(run / "in", i)
    proc = _follow(run / "in", run)  # no --idle: polls until killed
    _wait_for(run / "out" / "rejects-b01.parquet", proc)
    proc.send_signal(signal.SIGKILL)  # inside file 2, its writes or its commit, or polling
    proc.wait(timeout=60)
    for i in range(3, 6):
        _put(run / "in", i)
    got = CliRunner().invoke(main, _args(run / "in", run, "hopping", "--idle", "0"))
    assert got.exit_code == 0, got.output
    for kind in ("results", "rejects"):
        names = sorted(p.name for p in (ref / "out").glob(f"{kind}-*.parquet"))
        assert names == sorted(p.name for p in (run / "out").glob(f"{kind}-*.parquet"))
        for n in names:
            pd.testing.assert_frame_equal(
                pd.read_parquet(run / "out" / n), pd.read_parquet(ref / "out" / n)
            )
    # a closed state refuses to go on
    again = CliRunner().invoke(main, _args(run / "in", run, "hopping"))
    assert again.exit_code != 0 and "ended" in again.output


def test_sigterm_stops_after_a_committed_file(tmp_path: Path) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    _put(folder, 0)
    proc = _follow(folder, tmp_path)
    _wait_for(tmp_path / "out" / "rejects-b00.parquet", proc)
    proc.send_signal(signal.SIGTERM)
    output, _ = proc.communicate(timeout=60)
    assert proc.returncode == 0, output
    assert "SIGTERM: stopped" in output
    # the file is committed: the stream follow made resumes after it
    s = windowagg.stream(
        "k", "t", ["sum(v)", "count"], size="10 s", slide="5 s", max_out_of_orderness="3 s",
        allowed_lateness="4 s", row_columns="*", store=tmp_path / "state.db",
        namespace="windowagg.follow",
    )  # fmt: skip
    assert s.checkpoint_token == ((folder / "b00.parquet").stat().st_mtime_ns, "b00.parquet")


def test_bad_files_and_rows_are_rejects_with_reasons(tmp_path: Path) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    _put(folder, 0)
    (folder / "b01.parquet").write_text("not parquet")
    os.utime(folder / "b01.parquet", ns=(1_700_000_001_000_000_000,) * 2)
    _put(folder, 2, frame=pd.DataFrame({"k": ["a"], "t": [45]}))  # no column v
    _put(folder, 3, name="b03.csv")
    (folder / "_ignored.parquet").write_text("skipped: a name starting with _")
    got = CliRunner().invoke(main, _args(folder, tmp_path, "hopping", "--idle", "0"))
    assert got.exit_code == 0, got.output
    out = tmp_path / "out"
    bad = pd.read_parquet(out / "rejects-b01.parquet")
    assert bad["reason"].iloc[0].startswith("unreadable file: ")
    assert bad["row"].tolist() == [json.dumps({"file": "b01.parquet"})]
    assert bad["row_index"].tolist() == [-1]
    missing = pd.read_parquet(out / "rejects-b02.parquet")
    assert "column 'v' is not in the micro-batch" in missing["reason"].iloc[0]
    rows = pd.read_parquet(out / "rejects-b03.csv.parquet")
    assert rows["row_index"].tolist() == [1, 2]
    assert rows["reason"].iloc[0].startswith("unparsable timestamp")
    assert rows["reason"].iloc[1].startswith("not a number in 'v'")
    assert json.loads(rows["row"].iloc[1])["v"] == "x"
    assert not (out / "results-_ignored.parquet").exists()
    assert "unreadable file" in got.output


_BAD_CSV = "k,t,v\na,1970-01-01T00:01:10Z,1.0\na,soon,2.0\na,1970-01-01T00:01:11Z,x\n"
