"""``run --engine local``'s reader (pyarrow): every row read or a reject at its position,
no field-size limit, Spark's types; the plot from arrays with bounded labels."""

from __future__ import annotations

import csv
import io
import json
import re

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

import windowagg._cli_demo as _cli_demo
import windowagg.cli as cli
from windowagg._cli_local import read_local
from windowagg.cli import main

LONG = 200_000  # over the csv module's field limit (131,072)


def _py(s):
    """A column's values with None for every null (pandas shows NA in nullable columns)."""
    return [None if x is pd.NA else x for x in s.tolist()]


def _no_spark(*args, **kwargs):
    raise AssertionError("the local engine started Spark")


def _run_local(path, out, *extra):
    argv = ["run", str(path), "--key", "k", "--time", "t", "--agg", "max(v)", "--agg", "count"]
    argv += ["--size", "1 minute", "--out", str(out), "--engine", "local", *extra]
    return CliRunner().invoke(main, argv)


def test_a_field_over_the_csv_modules_limit_is_a_value_not_a_failed_run(tmp_path, monkeypatch):
    monkeypatch.setattr(cli, "_spark", _no_spark)
    path = tmp_path / "long.csv"
    rows = ["k,t,v,note", "a,2024-03-01T00:00:01,1.5," + "n" * LONG]
    rows += ["b,2024-03-01T00:00:02," + "x" * LONG + ",", "k" * LONG + ",2024-03-01T00:00:03,2.5,"]
    path.write_text("\n".join(rows) + "\n")
    r = _run_local(path, tmp_path / "out")
    assert r.exit_code == 0, r.output
    assert "Error" not in r.output
    res = pd.read_parquet(tmp_path / "out" / "results.parquet")
    rej = pd.read_parquet(tmp_path / "out" / "rejects.parquet")
    assert sorted(res["k"].str.len()) == [1, LONG] and res["count"].sum() == 2
    assert rej["row_index"].tolist() == [1]
    assert rej["reason"][0] == "not a number in 'v': '" + "x" * LONG + "'"
    assert "not a number in 'v'" in " ".join(r.output.split())  # the class, not the value


def test_a_row_longer_than_a_reader_block_is_read(tmp_path):
    path = tmp_path / "big.csv"
    big = "y" * (5 << 20)  # over the first block of 4 MiB
    path.write_text(f"k,t,v\na,1,1\n{big},2,2\na,3,\n")
    df = read_local(str(path), "csv")
    assert _py(df["k"]) == ["a", big, "a"] and df["v"].isna().tolist() == [False] * 2 + [True]
    jpath = tmp_path / "big.jsonl"
    jpath.write_text(json.dumps({"k": big, "t": 1}) + "\n" + json.dumps({"k": "a", "t": 2}) + "\n")
    assert _py(read_local(str(jpath), "jsonl")["k"]) == [big, "a"]


def test_malformed_rows_are_rejects_at_their_position_with_their_raw_text(tmp_path):
    path = tmp_path / "bad.csv"
    text = (
        "\ufeffk , t,v\r\n"  # BOM, spaces around names, CRLF
        "a,1,1\r\n"
        "\r\n"  # a blank line is no row
        'b,2,"two\r\nlines"\r\n'  # a quoted field may hold a newline
        "c,3\r\n"  # too few fields
        "d,4,4,extra\r\n"  # too many
        'e,"5",""\r\n'  # quoted empty: null
        '"f,6\r\n'  # an unterminated quote takes the rest of the file
    )
    path.write_bytes(text.encode())
    df = read_local(str(path), "csv")
    assert list(df.columns) == ["k", "t", "v", "_corrupt_record"]
    assert _py(df["_corrupt_record"]) == [None, None, "c,3", "d,4,4,extra", None, '"f,6']
    assert _py(df["k"]) == ["a", "b", None, None, "e", None]
    assert _py(df["t"]) == [1, 2, None, None, 5, None]
    assert _py(df["v"]) == ["1", "two\r\nlines", None, None, None, None]


def test_types_are_sparks_infer_schema(tmp_path):
    path = tmp_path / "types.csv"
    path.write_text(
        "i,f,s,h,n,big\n1,1.5,x,0x10,,1\n-2,NaN,2,7,,99999999999999999999\n+3,inf,y,8,,3\n,,,,,\n"
    )
    df = read_local(str(path), "csv")
    assert [str(t) for t in df.dtypes] == [
        "Int64",
        "Float64",
        "object",
        "object",
        "Int64",
        "Float64",
    ]
    assert _py(df["i"])[:3] == [1, -2, 3] and df["i"].isna().tolist() == [False] * 3 + [True]
    f = df["f"]  # a NaN cell is a value (a bad_value reject), an empty field a null
    assert f.isna().tolist() == [False, False, False, True] and np.isnan(f[1]) and f[2] == np.inf
    assert _py(df["h"]) == ["0x10", "7", "8", None]  # hex is text, as in Spark


def test_iso_times_are_read_as_utc_timestamps_and_other_times_as_text(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("k,t,u\na,2024-03-01T00:00:01,2024-03-01 01:00:00+01:00\nb,,x\n")
    df = read_local(str(path), "csv", times=["t", "u"])
    assert str(df["t"].dtype) == "datetime64[us, UTC]" and df["t"].isna().tolist() == [False, True]
    assert df["t"][0] == pd.Timestamp("2024-03-01T00:00:01Z")
    assert _py(df["u"]) == ["2024-03-01 01:00:00+01:00", "x"]  # not every value a time
    assert _py(read_local(str(path), "csv")["t"])[0] == "2024-03-01T00:00:01"


def test_parquet_nulls_are_nulls_not_nan(tmp_path, monkeypatch):
    monkeypatch.setattr(cli, "_spark", _no_spark)
    path = tmp_path / "in.parquet"
    t = pa.table(
        {
            "k": ["a", "a", "a"],
            "t": pa.array([1, 2, 3], pa.timestamp("s")),
            "v": pa.array([1.0, None, float("nan")]),
        }
    )
    pq.write_table(t, path)
    r = _run_local(path, tmp_path / "out")
    assert r.exit_code == 0, r.output
    rej = pd.read_parquet(tmp_path / "out" / "rejects.parquet")
    assert rej["reason"].tolist() == [
        "null value in 'v'",
        "bad_value: non-finite value in 'v': nan",
    ]
    assert rej["row_index"].tolist() == [1, 2]


def test_json_lines_that_are_not_objects_are_malformed_at_their_position(tmp_path):
    path = tmp_path / "in.jsonl"
    lines = ['{"k": "a", "t": 1, "v": 1}', "[1, 2]", "", '{"k": "b", "t": 2, "v": "x"}', "nope"]
    path.write_text("\n".join(lines) + "\n")
    df = read_local(str(path), "jsonl")
    assert _py(df["_corrupt_record"]) == [None, "[1, 2]", None, "nope"]
    assert _py(df["k"]) == ["a", None, "b", None] and _py(df["v"]) == [1, None, "x", None]
    good = tmp_path / "good.jsonl"
    good.write_text('{"k": "a", "t": 1, "v": 1.5}\n{"k": null, "t": 2, "v": null}\n')
    df = read_local(str(good), "jsonl")
    assert _py(df["k"]) == ["a", None] and df["v"].isna().tolist() == [False, True]


# ----------------------------------------------------------------- against the csv module

_INT = re.compile(r"[+-]?[0-9]+")
_FLOAT_TEXT = re.compile(r"[+-]?(inf|infinity|nan)", re.IGNORECASE)


def _oracle_type(cells):
    """Spark's inferSchema on the csv module's fields: int, else float, else text."""
    present = [c for c in cells if c is not None]
    if all(_INT.fullmatch(c) for c in present):
        return "int"
    try:  # floats as Spark writes them: no spaces, no underscores
        for c in present:
            if not c.isascii() or any(x.isspace() or x == "_" for x in c):
                raise ValueError(c)
            float(c)
    except ValueError:
        return "text"
    return "float"


_field = st.text(alphabet='ab1.-e,"\n ', max_size=6)


@given(
    width=st.integers(1, 3),
    rows=st.lists(st.lists(_field, min_size=0, max_size=4), max_size=8),
)
def test_csv_reader_agrees_with_the_csv_module(tmp_path_factory, width, rows):
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow([f"c{j}" for j in range(width)])
    for r in rows:
        w.writerow(r)
    path = tmp_path_factory.mktemp("csv") / "h.csv"
    path.write_text(buf.getvalue())
    records = [r for r in csv.reader(io.StringIO(buf.getvalue()))][1:]
    records = [r for r in records if r]  # a blank line is no row
    df = read_local(str(path), "csv")
    assert len(df) == len(records)
    bad = [len(r) != width for r in records]
    if any(bad):
        assert df["_corrupt_record"].notna().tolist() == bad
    else:
        assert "_corrupt_record" not in df.columns
    for j in range(width):
        cells = [None if b else (r[j] or None) for r, b in zip(records, bad, strict=True)]
        got = df[f"c{j}"]
        kind = _oracle_type(cells)
        assert {"int": "Int64", "float": "Float64", "text": "object"}[kind] == str(got.dtype)
        want = [
            None if c is None else int(c) if kind == "int" else float(c) if kind == "float" else c
            for c in cells
        ]
        have = [None if x is pd.NA else x for x in got.tolist()]
        for a, b in zip(have, want, strict=True):
            same = a == b or (isinstance(a, float) and np.isnan(a) and np.isnan(b))
            assert same, (j, have, want)


# ---------------------------------------------------------------------------- the plot


def test_plot_labels_are_short_whatever_the_key(tmp_path, monkeypatch):
    import matplotlib.figure

    seen: list[str] = []
    save = matplotlib.figure.Figure.savefig

    def spy(self, *args, **kwargs):
        for ax in self.axes:
            if ax.get_legend() is not None:
                seen.extend(t.get_text() for t in ax.get_legend().get_texts())
        return save(self, *args, **kwargs)

    monkeypatch.setattr(matplotlib.figure.Figure, "savefig", spy)
    ends = pd.to_datetime(["2024-03-01T00:01:00Z", "2024-03-01T00:02:00Z"] * 2)
    pdf = pd.DataFrame({"k": ["a", "a", "k" * 5_000, "k" * 5_000], "window_end": ends})
    pdf["max_v"] = [1.0, 2.0, 3.0, None]
    cli._plot(pdf, ["k"], ["max_v"], tmp_path / "p.png", "t")
    assert seen == ["a", "k" * 39 + "\u2026"]
    assert (tmp_path / "p.png").stat().st_size > 1_000


def test_demo_plot_finds_the_worst_day_when_origins_end_on_different_days(tmp_path, monkeypatch):
    import matplotlib.figure

    titles: list[str] = []
    save = matplotlib.figure.Figure.savefig

    def spy(self, *args, **kwargs):
        titles.extend(ax.get_title() for ax in self.axes)
        return save(self, *args, **kwargs)

    monkeypatch.setattr(matplotlib.figure.Figure, "savefig", spy)
    frames = []
    for origin, days in (("EWR", 6), ("JFK", 6), ("LGA", 5)):  # LGA lacks the last day
        ends = pd.date_range("2013-01-01", periods=days * 144, freq="10min", tz="UTC")
        p95 = np.where(ends.day == 3, 300.0, 10.0)  # the worst day: 2013-01-03
        frames.append(
            pd.DataFrame(
                {
                    "origin": origin,
                    "window_end": ends.astype("datetime64[us, UTC]"),
                    "p95_dep_delay": p95,
                    "mean_dep_delay": p95 / 3,
                }
            )
        )
    _cli_demo._demo_plot(pd.concat(frames, ignore_index=True), tmp_path / "demo.png")
    assert "every 10-min window around the worst day (2013-01-03)" in titles


def test_repeated_size_gives_one_column_per_aggregation_and_size(tmp_path, monkeypatch):
    monkeypatch.setattr(cli, "_spark", _no_spark)
    path = tmp_path / "sizes.csv"
    rows = ["k,t,v", "a,2024-03-01T00:00:10,1.0", "a,2024-03-01T00:01:30,5.0"]
    path.write_text("\n".join([*rows, "a,2024-03-01T00:00:20,3.0"]) + "\n")
    r = _run_local(path, tmp_path / "out", "--size", "10 s", "--slide", "10 s")
    assert r.exit_code == 0, r.output
    res = pd.read_parquet(tmp_path / "out" / "results.parquet")
    cols = ["max_v_1m", "max_v_10s", "count_1m", "count_10s"]
    assert list(res.columns[-4:]) == cols
    one = pd.read_parquet(tmp_path / "out" / "results.parquet", columns=["window_end", *cols])
    end = one["window_end"].dt.strftime("%M:%S").tolist()
    # the 1 min windows' ends: 00:20-01:20 (00:10, 00:20) and 01:40-02:30 (01:30)
    assert end[:3] == ["00:20", "00:30", "00:40"] and len(one) == 13 and "01:30" not in end
    assert one["count_10s"].tolist()[:3] == [1, 1, 0] and one["count_1m"].tolist()[:3] == [1, 2, 2]
    assert one["max_v_10s"].tolist()[:2] == [1.0, 3.0] and np.isnan(one["max_v_10s"][2])
    bad = _run_local(path, tmp_path / "bad", "--size", "25 s", "--slide", "10 s")
    said = " ".join(bad.output.split())
    assert bad.exit_code != 0 and "multiples of the slide" in said, said
    assert "size=['1 minute', '25 s'] with slide='10 s'" in said and "000000" not in said, said


def test_decayed_aggregations_alone_need_no_window(tmp_path, monkeypatch):
    """``--agg 'ewm_mean(v, half_life=1h)'`` with no --size: one answer per row over its
    key's history, as windowagg.pandas gives; with another aggregation a window is needed."""
    monkeypatch.setattr(cli, "_spark", _no_spark)
    path = tmp_path / "in.csv"
    path.write_text(
        "k,t,v\na,2024-03-01T02:00:00,3\na,2024-03-01T00:00:00,1\na,2024-03-01T01:00:00,2\n"
    )
    base = ["run", str(path), "--key", "k", "--time", "t", "--engine", "local"]
    argv = [*base, "--agg", "ewm_mean(v, half_life=1h)", "--out", str(tmp_path / "o")]
    r = CliRunner().invoke(main, argv)
    assert r.exit_code == 0, r.output
    res = pd.read_parquet(tmp_path / "o" / "results.parquet")
    assert res["ewm_mean_v"].round(6).tolist() == [1.0, 1.666667, 2.428571]
    argv = [*base, "--agg", "ewm_mean(v, half_life=1h)", "--agg", "count", "--out", "o2"]
    r = CliRunner().invoke(main, argv)
    assert r.exit_code != 0 and "decayed aggregations alone" in " ".join(r.output.split())


def test_decayed_mean_with_two_sizes_in_one_run_equals_windowagg_pandas(tmp_path, monkeypatch):
    """``--agg 'ewm_mean(v, half_life=1 day)' --size '1 hour' --size '1 day'`` (the spelling
    README and docs/cli.md show): the decayed mean as of each window's end, per size, equal
    to windowagg.pandas with the same call."""
    from windowagg.pandas import window_agg

    monkeypatch.setattr(cli, "_spark", _no_spark)
    rng = np.random.default_rng(30)
    t = pd.Timestamp("2024-03-01", tz="UTC") + pd.to_timedelta(rng.integers(0, 3 * 86400, 60), "s")
    df = pd.DataFrame({"k": rng.choice(["a", "b"], 60), "t": t, "v": rng.normal(10, 5, 60)})
    path = tmp_path / "in.csv"
    df.assign(t=df["t"].dt.strftime("%Y-%m-%dT%H:%M:%S")).to_csv(path, index=False)
    agg = "ewm_mean(v, half_life=1 day)"
    argv = ["run", str(path), "--key", "k", "--time", "t", "--agg", agg, "--agg", "count"]
    argv += ["--size", "1 hour", "--size", "1 day", "--slide", "1 hour", "--engine", "local"]
    r = CliRunner().invoke(main, [*argv, "--out", str(tmp_path / "o")])
    assert r.exit_code == 0, r.output
    got = pd.read_parquet(tmp_path / "o" / "results.parquet")
    want = window_agg(df, "k", "t", [agg, "count"], size=["1 hour", "1 day"], slide="1 hour")
    cols = ["ewm_mean_v_1h", "ewm_mean_v_1d", "count_1h", "count_1d"]
    assert list(got.columns[-4:]) == cols and len(got) == len(want.results) > 0
    for c in cols:
        np.testing.assert_allclose(got[c].to_numpy(float), want.results[c].to_numpy(float))


def test_demo_batch_stage_counts_every_flight_and_finds_the_busiest_hour():
    """The demo's in-process stage on a few made-up flights: each flight a decayed answer
    or a reject (no departure time), the busiest hour and day counted as a brute force
    count does, the decayed mean at the year's end that of the last flight's history."""
    t = pd.to_datetime(
        ["2013-01-01 05:10", "2013-01-01 05:50", "2013-01-01 05:55", "2013-01-02 09:00", None]
    ).tz_localize("UTC")
    flights = pd.DataFrame({"origin": ["EWR", "EWR", "EWR", "EWR", "JFK"], "dep_ts": t,
                            "dep_delay": [10.0, 20.0, 30.0, 40.0, 5.0]})  # fmt: skip
    b = _cli_demo._batch_stage(flights)
    assert b.facts["decayed_rows"] + b.facts["rejects"] == len(flights) == 5
    assert list(b.facts["origins"]) == ["EWR"]  # JFK's only flight has no departure time
    ewr = b.facts["origins"]["EWR"]
    assert ewr["busiest_hour"] == 3 and ewr["busiest_day"] == 3
    w = [2.0 ** (-(t[3] - x).total_seconds() / 86400) for x in t[:4]]
    assert ewr["decayed_mean_year_end"] == pytest.approx(
        sum(wi * v for wi, v in zip(w, [10, 20, 30, 40], strict=True)) / sum(w), rel=1e-12
    )
    assert "ewm_mean(dep_delay, half_life=1 day)" in b.markdown[0]


def test_threads_give_the_same_files_and_bad_threads_are_refused(tmp_path, monkeypatch):
    """``--threads``: the keys on N threads, the same results and rejects as one thread;
    0 is refused by click naming the option; with the Spark engine it is a usage error."""
    monkeypatch.setattr(cli, "_spark", _no_spark)
    path = tmp_path / "keys.csv"
    rows = ["k,t,v"]
    for i in range(300):
        v = "oops" if i % 37 == 0 else f"{(i * 7919) % 101 / 7:.4f}"
        rows.append(f"k{i % 23},2024-03-01T00:{(i * 13) % 60:02d}:{i % 60:02d},{v}")
    path.write_text("\n".join(rows) + "\n")
    files = {}
    for threads in ("1", "3"):
        r = _run_local(path, tmp_path / threads, "--slide", "10 s", "--threads", threads)
        assert r.exit_code == 0, r.output
        files[threads] = [
            pd.read_parquet(tmp_path / threads / f) for f in ("results.parquet", "rejects.parquet")
        ]
    for one, three in zip(files["1"], files["3"], strict=True):
        pd.testing.assert_frame_equal(one, three, check_exact=True)
    assert len(files["1"][0]) and len(files["1"][1]) == 9
    bad = _run_local(path, tmp_path / "bad", "--threads", "0")
    assert bad.exit_code == 2 and "--threads" in bad.output and "0" in bad.output, bad.output
    argv = ["run", str(path), "--key", "k", "--time", "t", "--agg", "count", "--size", "1 minute"]
    spark = CliRunner().invoke(main, [*argv, "--out", str(tmp_path / "s"), "--threads", "2"])
    assert spark.exit_code == 2 and "--engine local" in spark.output, spark.output
