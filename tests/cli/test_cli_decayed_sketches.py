"""``windowagg run`` with the decayed sketches: ``decayed_pNN`` and ``top_k`` (its JSON
text column is written, not drawn) give windowagg.pandas' answers (local engine)."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from click.testing import CliRunner

import windowagg.cli as cli
from windowagg.cli import main
from windowagg.pandas import window_agg


def _no_spark(*args, **kwargs):
    raise AssertionError("the local engine started Spark")


def test_decayed_quantiles_and_top_k_through_the_cli(tmp_path, monkeypatch):
    monkeypatch.setattr(cli, "_spark", _no_spark)
    path = tmp_path / "in.csv"
    path.write_text(
        "k,t,v\na,2024-03-01T01:00:00Z,2\na,2024-03-01T00:00:00Z,1\n"
        "a,2024-03-01T00:30:00Z,2\nb,2024-03-01T00:00:00Z,5\n"
    )
    aggs = ["decayed_p50(v, half_life=1h)", "top_k(v, 2, half_life=1h)"]
    argv = ["run", str(path), "--key", "k", "--time", "t", "--engine", "local"]
    argv += [x for a in aggs for x in ("--agg", a)] + ["--out", str(tmp_path / "o")]
    r = CliRunner().invoke(main, argv)
    assert r.exit_code == 0, r.output
    got = pd.read_parquet(tmp_path / "o" / "results.parquet")
    want = window_agg(pd.read_csv(path), "k", "t", aggs).results
    cols = ["k", "decayed_p50_v", "top_k_v"]
    key = ["k", "window_end"]
    got, want = (x.sort_values(key).reset_index(drop=True)[cols] for x in (got, want))
    pd.testing.assert_frame_equal(got, want, check_dtype=False)
    # exact decayed weights (to a rounding or two: 2^-0.5 may print as ...475 or ...476)
    top = [json.loads(x) for x in got["top_k_v"].tolist()[:3]]
    assert [[x for x, _ in r] for r in top] == [[1.0], [2.0, 1.0], [2.0, 1.0]]
    want_w = [[1.0], [1.0, 2**-0.5], [1 + 2**-0.5, 0.5]]
    for r, w in zip(top, want_w, strict=True):
        assert [y for _, y in r] == pytest.approx(w, rel=1e-15)
