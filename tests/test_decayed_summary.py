"""The whole-stream decayed summary without Spark (``windowagg.decayed_summary``): Arrow
batches split into partitions in adversarial orders, summarised apart, shipped as codec
bytes and merged: within the bound of the exact decayed answer; every row counted or
rejected with a reason."""

from __future__ import annotations

import itertools
import math
import random

import numpy as np
import pyarrow as pa
import pytest

from windowagg.decayed_summary import SummarySpec, merge_parts, summarize
from windowagg.errors import ArgumentError

HOUR = 3_600_000_000


def events(order: str, n: int = 4000) -> tuple[np.ndarray, list[float]]:
    rng = random.Random(17)
    t = sorted(rng.randrange(48 * HOUR) for _ in range(n))
    t[: n // 3] = [40 * HOUR] * (n // 3)  # a burst
    v = [
        float(rng.choice([1, 1, 2, 3, 5, 8, 13])) if rng.random() < 0.7 else rng.random() for _ in t
    ]
    idx = list(range(n))
    if order == "reversed":
        idx.sort(key=lambda i: -t[i])
    elif order == "all_late":
        newest = max(idx, key=lambda i: t[i])
        idx.remove(newest)
        rng.shuffle(idx)
        idx.insert(0, newest)
    return np.array([t[i] for i in idx], dtype=np.int64), [v[i] for i in idx]


def parts_of(t, v, spec, pieces=5):
    cuts = np.linspace(0, len(t), pieces + 1).astype(int)
    out = []
    for a, b in itertools.pairwise(cuts):
        batch = pa.record_batch(
            {"t": pa.array(t[a:b], pa.timestamp("us")), "v": pa.array(v[a:b], pa.float64())}
        )
        out.append(summarize([batch.slice(0, 100), batch.slice(100)], "t", "v", spec))
    return out


@pytest.mark.parametrize("order", ["bursty", "reversed", "all_late"])
def test_merged_partitions_within_the_bound(order):
    t, v = events(order)
    at = int(t.max()) + HOUR
    w = 2.0 ** (-(at - t) / (5 * HOUR))
    d = math.fsum(w)
    top = SummarySpec("top_k", 5 * HOUR, k=4, eps=0.1, as_of=at)
    r = merge_parts(top, parts_of(t, v, top))
    assert r.rows == len(t) and r.rejects == {} and abs(r.total - d) <= 1e-9 * d
    exact: dict[float, float] = {}
    for x, wi in zip(v, w, strict=True):
        exact[x] = exact.get(x, 0.0) + wi
    assert len(r.answer) == 4 and all(isinstance(x, float) for x, _ in r.answer)
    for x, est in r.answer:
        assert exact[x] - 1e-9 * d <= est <= exact[x] + r.error + 1e-9 * d
    kth = max(r.answer[-1][1], r.error)
    assert all(f <= kth + 1e-9 * d for x, f in exact.items() if x not in dict(r.answer))
    qs = SummarySpec("quantiles", 5 * HOUR, quantiles=(0.1, 0.5, 0.99), eps=0.05, as_of=at)
    q = merge_parts(qs, parts_of(t, v, qs))
    va = np.array(v)
    for phi, x in q.answer.items():
        assert math.fsum(w[va < x]) <= (phi + 0.05) * d * (1 + 1e-9)
        assert math.fsum(w[va <= x]) >= (phi - 0.05) * d * (1 - 1e-9)


def test_every_row_is_counted_or_rejected():
    batch = pa.record_batch(
        {
            "t": pa.array([0, None, 5, 10, 99], pa.timestamp("us")),
            "v": pa.array([1.0, 2.0, None, float("inf"), 3.0]),
        }
    )
    part = summarize([batch], "t", "v", SummarySpec("quantiles", 10, as_of=50))
    assert part.rows == 1
    assert part.rejects == {
        "null event time": 1,
        "null value in 'v'": 1,
        "bad_value: non-finite value in 'v': inf": 1,
        "event time after as_of": 1,
    }
    text = pa.record_batch({"t": pa.array([0, 0], pa.timestamp("us")), "o": ["s:x", "f:1.0"]})
    r = merge_parts(
        SummarySpec("top_k", 10, k=2), [summarize([text], "t", "o", SummarySpec("top_k", 10, k=2))]
    )
    assert sorted(x for x, _ in r.answer) == ["f:1.0", "s:x"]  # text stays text
    empty = merge_parts(
        SummarySpec("top_k", 10), [summarize([], "t", "o", SummarySpec("top_k", 10))]
    )
    assert (empty.answer, empty.rows, empty.summary) == ([], 0, None)


@pytest.mark.parametrize(
    ("spec", "says"),
    [
        (SummarySpec("median", 10), "is not one of"),
        (SummarySpec("top_k", 0), "half_life=0 must be a positive duration"),
        (SummarySpec("top_k", 10, k=0), "k=0 must be a whole number"),
        (SummarySpec("quantiles", 10, quantiles=(1.0,)), "strictly between 0 and 1"),
    ],
)
def test_bad_specs_say_what_to_give(spec, says):
    with pytest.raises(ArgumentError) as e:
        spec.check()
    assert says in str(e.value)


@pytest.mark.parametrize("vtype", [pa.float64(), pa.int32()])
def test_plain_batches_give_the_general_paths_summary(vtype):
    """A quantiles batch without nulls in microseconds takes summarize's plain path (no
    masks, no copies); the same batches with a null row added to each (the general path,
    which rejects it) give the same summary bytes, weights and all."""
    rng = np.random.default_rng(3)
    n = 5000
    t = (rng.integers(0, 30 * 86_400, n) * 1_000_000).tolist()
    v = (rng.normal(10.0, 5.0, n) if vtype == pa.float64() else rng.integers(-50, 50, n)).tolist()
    spec = SummarySpec("quantiles", 86_400_000_000, eps=0.01)

    def batch(ts, vs):
        return pa.record_batch(
            {"t": pa.array(ts, pa.timestamp("us", tz="UTC")), "v": pa.array(vs, vtype)}
        )

    plain = [batch(t[:3000], v[:3000]), batch(t[3000:], v[3000:])]
    general = [batch([*t[:3000], None], [*v[:3000], 1]), batch([*t[3000:], 0], [*v[3000:], None])]
    a, b = summarize(plain, "t", "v", spec), summarize(general, "t", "v", spec)
    assert a.rows == b.rows == n
    assert b.rejects == {"null event time": 1, "null value in 'v'": 1}
    assert a.summary == b.summary
