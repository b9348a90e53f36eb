"""One engine, four doors (issue 27): the object API, ``windowagg.pandas.window_agg``, Spark
batch and Spark streaming give the same final answers and the same rejects for the same
out-of-order stream, on the shared local SparkSession.

A few fixed streams (generated once): 2 keys, datetimes, duplicate times, and per file
(one streaming micro-batch) a few stragglers 1-6 minutes behind, placed *first* in the file,
so that Spark's per-micro-batch lateness (every row against the key's bound before the
batch) and the per-arrival lateness of the other doors judge every row alike: some are late
(rejects), the others revise emitted windows. Streaming emits a window when the key's
watermark passes its end, so the object API is compared without ``close()`` and the batch
doors on the windows that watermark closed; every door's rejects are compared as
``(key, event time, reason code)``.
"""

from __future__ import annotations

import os
from collections import Counter
from datetime import datetime, timedelta
from typing import Any

import numpy as np
import pandas as pd
import pytest

pytestmark = pytest.mark.spark

pyspark = pytest.importorskip("pyspark")

FILES = 3
OOO, LATENESS = timedelta(seconds=30), timedelta(minutes=2)
SHAPES: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {
    # name: (window_agg's shape arguments, the object API's)
    "hopping": (
        {"size": "10 minutes", "slide": "5 minutes"},
        {"size": timedelta(minutes=10), "slide": timedelta(minutes=5)},
    ),
    "per_event": ({"size": "2 minutes"}, {"size": timedelta(minutes=2)}),
    "session": ({"gap": "1 minute"}, {"gap": timedelta(minutes=1)}),
}
EPOCH = datetime(1970, 1, 1)


def stream(seed: int = 11) -> pd.DataFrame:
    """Rows ``key, t (datetime), value, file`` in arrival order (see the module docstring)."""
    rng = np.random.default_rng(seed)
    rows = []
    for f in range(FILES):
        for key in (1, 2):
            late = [] if not f else (f * 600 - rng.integers(60, 360, 3)).tolist()
            times = sorted(rng.integers(f * 600, f * 600 + 600, 30).tolist())  # duplicates
            rows += [(key, t, f) for t in late + times]
    return pd.DataFrame(
        {
            "key": np.array([k for k, _, _ in rows], dtype="int32"),
            "t": [EPOCH + timedelta(seconds=int(t)) for _, t, _ in rows],
            "value": [float(rng.integers(1, 100)) for _ in rows],
            "file": [f for _, _, f in rows],
        }
    )


def _secs(x: Any) -> int:
    return int((pd.Timestamp(x).tz_localize(None) - pd.Timestamp(EPOCH)) // pd.Timedelta(seconds=1))


def _final(res: pd.DataFrame, session: bool) -> dict[Any, tuple[float, int]]:
    """``(key, start, end) -> (sum, count)`` of each window's last revision."""
    res = res.sort_values(["key", "window_end", "revision"], kind="stable")
    out: dict[Any, tuple[float, int]] = {}
    for k, s, e, v, n, r in zip(
        res["key"], res["window_start"], res["window_end"], res["sum_value"], res["count"],
        res["revision"], strict=True,
    ):  # fmt: skip
        k, s, e = int(k), _secs(s), _secs(e)
        if session and r:
            for w in [w for w in out if w[0] == k and s <= w[1] < e]:
                del out[w]
        out[(k, s, e)] = (float(v), int(n))
    return out


def _objects(pdf: pd.DataFrame, shape: dict[str, Any]) -> tuple[dict[Any, Any], Counter[Any]]:
    from windowagg.monoids import Sum
    from windowagg.windows import SessionWindows, SlidingWindows

    kw = {"max_out_of_orderness": OOO, "allowed_lateness": LATENESS}
    windows: dict[int, Any] = {}
    rows = []
    for k, t, v in zip(pdf["key"], pdf["t"], pdf["value"], strict=True):
        w = windows.get(int(k))
        if w is None:
            w = windows[int(k)] = (
                SessionWindows(Sum(), shape["gap"], **kw)
                if "gap" in shape
                else SlidingWindows(Sum(), shape["size"], shape.get("slide"), **kw)
            )
        for r in w.insert(t, v):
            rows.append((int(k), r.start, r.end, r.value, r.count, r.revision))
    res = pd.DataFrame(
        rows, columns=["key", "window_start", "window_end", "sum_value", "count", "revision"]
    )
    rejects: Counter[Any] = Counter()
    for k, w in windows.items():
        rejects.update((k, _secs(r.t), r.reason.split(":")[0]) for r in w.rejected)
    return _final(res, "gap" in shape), rejects


def _watermarks(pdf: pd.DataFrame) -> dict[int, int]:
    return {int(k): _secs(t) - 30 for k, t in pdf.groupby("key")["t"].max().items()}


def _open_sessions(res: pd.DataFrame, pdf: pd.DataFrame) -> list[tuple[int, int, int]]:
    """The batch sessions the final watermark has not closed."""
    wm = _watermarks(pdf)
    full = _final(res.assign(revision=0), False)
    return [w for w in full if w[2] > wm[w[0]]]


def _not_pending(final: dict[Any, Any], open_: list[tuple[int, int, int]]) -> dict[Any, Any]:
    """A stream's emitted sessions minus those a late event merged into a session still
    open: the merged session supersedes them when it closes (a stream never closes)."""
    return {
        w: v for w, v in final.items() if not any(k == w[0] and s <= w[1] < e for k, s, e in open_)
    }


def _batch(res: pd.DataFrame, rej: pd.DataFrame, pdf: pd.DataFrame) -> tuple[dict, Counter]:
    """Batch results restricted to the windows each key's final watermark closed."""
    wm = _watermarks(pdf)
    res = res.assign(revision=0)
    full = _final(res, False)
    closed = {w: v for w, v in full.items() if w[2] <= wm[w[0]]}
    rejects: Counter[Any] = Counter(
        (int(json_key(r)), _secs(t), reason.split(":")[0])
        for r, t, reason in zip(rej["row"], rej["event_time"], rej["reason"], strict=True)
    )
    return closed, rejects


def json_key(row: str) -> int:
    import json

    return int(json.loads(row)["key"])


@pytest.fixture(scope="module")
def data() -> pd.DataFrame:
    return stream()


@pytest.mark.parametrize("name", sorted(SHAPES))
def test_four_doors_give_the_same_answers_and_rejects(
    spark: Any, tmp_path: Any, data: Any, name: str
) -> None:
    from windowagg.pandas import window_agg as local
    from windowagg.spark import split, stream_window_agg, window_agg

    shape, obj_shape = SHAPES[name]
    pdf = data
    lateness = {"max_out_of_orderness": "30 seconds", "allowed_lateness": "2 minutes"}
    aggs = ["sum(value)", "count"]
    frame = pdf.drop(columns="file").assign(t=pd.to_datetime(pdf["t"]).dt.tz_localize("UTC"))

    # the object API and window_agg (in-process)
    obj, obj_rej = _objects(pdf, obj_shape)
    want = local(frame, "key", "t", aggs, **lateness, **shape)
    pandas_res, pandas_rej = _batch(want.results, want.rejects, pdf)
    open_ = _open_sessions(want.results, pdf) if "gap" in shape else []
    obj = _not_pending(obj, open_)
    assert sum(c for (_, _, code), c in obj_rej.items() if code == "late") > 0
    assert obj == pandas_res and len(obj) >= 5
    assert obj_rej == pandas_rej

    # Spark batch: every window, and the same rejects
    sdf = spark.createDataFrame(frame)
    out = window_agg(sdf, "key", "t", aggs, **lateness, **shape)
    res, rej = split(out.output)
    spark_res, spark_rej = _batch(res.toPandas(), rej.toPandas(), pdf)
    assert spark_res == pandas_res and spark_rej == pandas_rej
    all_windows = _final(res.toPandas().assign(revision=0), False)
    assert all_windows == _final(want.results.assign(revision=0), False)

    # Spark streaming: one parquet file per micro-batch, in arrival order
    folder = str(tmp_path / "in")
    os.makedirs(folder)
    for f, part in pdf.groupby("file"):
        p = os.path.join(folder, f"part-{f:03d}.parquet")
        part.drop(columns="file").assign(t=pd.to_datetime(part["t"])).to_parquet(
            p, index=False, coerce_timestamps="us"
        )
        os.utime(p, (1_000_000 + f, 1_000_000 + f))
    sin = (
        spark.readStream.schema("key int, t timestamp, value double")
        .option("maxFilesPerTrigger", 1)
        .parquet(folder)
    )
    q = (
        stream_window_agg(sin, "key", "t", aggs, **lateness, **shape)
        .writeStream.format("parquet")
        .outputMode("append")
        .option("path", str(tmp_path / "out"))
        .option("checkpointLocation", str(tmp_path / "ck"))
        .trigger(availableNow=True)
        .start()
    )
    q.awaitTermination()
    assert q.exception() is None
    sres, srej = split(spark.read.parquet(str(tmp_path / "out")))
    sres_p, srej_p = sres.toPandas(), srej.toPandas()
    assert _not_pending(_final(sres_p, "gap" in shape), open_) == obj
    stream_rej: Counter[Any] = Counter(
        (json_key(r), _secs(t), reason.split(":")[0])
        for r, t, reason in zip(srej_p["row"], srej_p["event_time"], srej_p["reason"], strict=True)
    )
    assert stream_rej == obj_rej
