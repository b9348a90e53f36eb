"""Decayed quantiles and heavy hitters (``decayed_pNN``, ``top_k``): within their stated
bounds against exact decayed answers on adversarial streams (bursty, reversed, all late),
through the summaries in arrival order, through ``windowagg.pandas.window_agg``, and after
merging split streams in any tree (mergeability)."""

from __future__ import annotations

import json
import math
import random

import numpy as np
import pandas as pd
import pytest

from windowagg.aggs import parse_aggs
from windowagg.errors import ArgumentError
from windowagg.pandas import window_agg
from windowagg.sketches.decayed_aggs import DecayedQuantile, DecayedTopK

HOUR = 3_600_000_000
SLACK = 1e-9  # relative: float rounding of the decayed weights


def stream(shape: str, n: int, seed: int, distinct: int | None = None) -> list[tuple[int, float]]:
    """``(t, v)`` events in arrival order, times over ten hours (microseconds).

    bursty: half the events in three bursts of one time each, one value dominating each
    burst; reversed: strictly newest first; all_late: the newest event first, then every
    other event older than it, in random order; random: shuffled."""
    rng = random.Random(seed)

    def value() -> float:
        if distinct is not None:
            return float(rng.randrange(distinct))
        return rng.lognormvariate(0.0, 2.0) * rng.choice((-1.0, 1.0))

    times = sorted(rng.randrange(10 * HOUR) for _ in range(n))
    events = [(t, value()) for t in times]
    if shape == "bursty":
        for j in range(n // 2):
            burst = (j % 3 + 1) * 3 * HOUR
            v = float(j % 3) if rng.random() < 0.8 else value()
            events[j] = (burst, v)
        events.sort()
    if shape == "reversed":
        events.reverse()
    elif shape == "all_late":
        events = [events[-1], *rng.sample(events[:-1], n - 1)]
    elif shape == "random":
        rng.shuffle(events)
    return events


SHAPES = ["bursty", "reversed", "all_late", "random"]


def weights(events, at, m) -> np.ndarray:
    t = np.array([e[0] for e in events], dtype=np.float64)
    if getattr(m, "alpha", None) is not None:
        return (1.0 + np.maximum(at - t, 0) / m._unit) ** -m.alpha
    return 2.0 ** (-(at - t) / m.half_life)


def check_quantile(m: DecayedQuantile, events, at: int, q: float) -> None:
    """``W(< q) <= (phi + eps) D`` and ``W(<= q) >= (phi - eps) D`` (exact weights)."""
    w = weights(events, at, m)
    v = np.array([e[1] for e in events])
    d = math.fsum(w)
    below, upto = math.fsum(w[v < q]), math.fsum(w[v <= q])
    assert below <= (m.phi + m.rank_error) * d * (1 + SLACK), (below / d, m.phi)
    assert upto >= (m.phi - m.rank_error) * d * (1 - SLACK), (upto / d, m.phi)


def check_top_k(m: DecayedTopK, events, at: int, answer: str) -> None:
    """Each reported weight w(x): ``f(x) <= w(x) <= f(x) + D/m``; each value not reported:
    ``f <= max(the k-th weight, D/m)``; k reported unless fewer values exist."""
    w = weights(events, at, m)
    exact: dict[float, float] = {}
    for (_, v), wi in zip(events, w, strict=True):
        exact[v] = exact.get(v, 0.0) + wi
    d = math.fsum(w)
    got = json.loads(answer)
    assert len(got) == min(m.k, len(exact))
    tol = SLACK * d
    reported = set()
    for x, wx in got:
        reported.add(x)
        assert exact[x] - tol <= wx <= exact[x] + m.weight_error * d + tol, (x, wx, exact[x])
    floor = max(got[-1][1], m.weight_error * d)
    for x, f in exact.items():
        if x not in reported:
            assert f <= floor + tol, (x, f, floor)


def arrival_fold(m, events):
    """One summary updated in arrival order (the paper's out-of-order stream)."""
    s = m._new()
    for t, v in events:
        m._add(s, t, v)
    return s


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize(
    "m",
    [
        DecayedQuantile(0.99, HOUR, eps=0.05),
        DecayedQuantile(0.5, HOUR / 4, eps=0.05),
        DecayedQuantile(0.9, alpha=2.0, unit=HOUR / 10, eps=0.05),
    ],
    ids=["p99-exp", "p50-exp", "p90-poly"],
)
def test_quantile_within_bound_on_adversarial_streams(shape, m):
    events = stream(shape, 3000, seed=hash(shape) % 1000)
    s = arrival_fold(m, events)
    newest = max(t for t, _ in events)
    for at in (newest, newest + HOUR):
        check_quantile(m, events, at, m.as_of(s, at))


@pytest.mark.parametrize("shape", SHAPES)
def test_top_k_within_bound_on_adversarial_streams(shape):
    m = DecayedTopK(5, HOUR, eps=0.05)  # 20 counters over 200 values: evictions happen
    events = stream(shape, 3000, seed=7, distinct=200)
    s = arrival_fold(m, events)
    newest = max(t for t, _ in events)
    for at in (newest, newest + 3 * HOUR):
        check_top_k(m, events, at, m.as_of(s, at))


def merge_tree(m, parts, rng):
    """The partials of *parts* combined in a random binary tree."""
    ps = [arrival_fold(m, p) for p in parts]
    while len(ps) > 1:
        i = rng.randrange(len(ps) - 1)
        ps[i : i + 2] = [m.combine(ps[i], ps[i + 1])]
    return ps[0]


@pytest.mark.parametrize("shape", SHAPES)
def test_merged_split_streams_stay_within_the_bound(shape):
    """A stream split into 7 pieces (by arrival; the pieces overlap in time), summarised
    apart and combined in a random tree: the single-summary bounds with D = the total."""
    rng = random.Random(3)
    events = stream(shape, 2400, seed=11, distinct=150)
    cuts = sorted(rng.sample(range(1, len(events)), 6))
    parts = [events[a:b] for a, b in zip([0, *cuts], [*cuts, len(events)], strict=True)]
    newest = max(t for t, _ in events)
    for m in (
        DecayedQuantile(0.95, HOUR, eps=0.05),
        DecayedQuantile(0.5, alpha=1.5, unit=HOUR / 10, eps=0.05),
    ):
        check_quantile(m, events, newest, m.as_of(merge_tree(m, parts, rng), newest))
    top = DecayedTopK(4, HOUR, eps=0.05)
    check_top_k(top, events, newest, top.as_of(merge_tree(top, parts, rng), newest))
    combined = top.combine(top.identity, arrival_fold(top, parts[0]))
    assert combined is not None  # the identity is neutral


@pytest.mark.parametrize("shape", ["bursty", "reversed", "all_late"])
def test_window_agg_answers_within_the_bound(shape):
    """Through ``windowagg.pandas.window_agg`` (rows in the stream's arrival order): every
    window of two keys, hopping (2 h every 1 h) and per event over the whole history."""
    events = stream(shape, 800, seed=5, distinct=60)
    keys = [i % 2 for i in range(len(events))]
    df = pd.DataFrame({"k": keys, "t": pd.to_datetime([t for t, _ in events], unit="us", utc=True)})
    df["v"] = [v for _, v in events]
    aggs = ["decayed_p90(v, half_life=1h, eps=0.05)", "top_k(v, 3, half_life=1h, eps=0.05)"]
    q, top = (a.monoid for a in parse_aggs(aggs))
    for kw in ({"size": "2h", "slide": "1h"}, {}):
        r = window_agg(df, "k", "t", aggs, **kw)
        assert len(r.rejects) == 0 and len(r.results)
        for row in r.results.itertuples(index=False):
            end = row.window_end.value // 1000
            start = row.window_start.value // 1000
            inside = [
                e
                for e, k in zip(events, keys, strict=True)
                if k == row.k and (start <= e[0] < end if kw else e[0] <= end)
            ]
            check_quantile(q, inside, end, row.decayed_p90_v)
            check_top_k(top, inside, end, row.top_k_v)


def test_strings_build_the_summaries():
    q, p, top = parse_aggs(
        [
            "decayed_p99.9(lat, half_life=30 min)",
            "decayed_p50(lat, decay=poly(2), unit=1h, eps=0.02) as med",
            "top_k(origin, k=3, half_life=1d)",
        ]
    )
    assert (q.alias, q.kind, q.monoid.phi, q.monoid.half_life) == (
        "decayed_p99_9_lat",
        "decayed_p99.9",
        0.999,
        1800e6,
    )
    assert (p.alias, p.monoid.alpha, p.monoid._unit, p.monoid.eps) == ("med", 2.0, 3600e6, 0.02)
    assert (top.alias, top.dtype, top.monoid.k, top.monoid.counters) == (
        "top_k_origin",
        "string",
        3,
        100,
    )


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("top_k(v, 3, decay=poly(2))", "exponentially only"),
        ("top_k(v, half_life=1h)", "needs a column and k"),
        ("top_k(v, 0, half_life=1h)", "k='0' must be a whole number"),
        ("decayed_p100(v, half_life=1h)", "between p0 and p100"),
        ("decayed_p99(half_life=1h)", "needs one column"),
        ("decayed_p99(v, half_life=1h, eps=2)", "eps=2 must be a number in (0, 1)"),
        ("decayed_p99(v)", "needs exactly one decay"),
    ],
)
def test_bad_strings_say_what_to_write(text, says):
    with pytest.raises(ArgumentError, match=None) as e:
        parse_aggs([text])
    assert says in str(e.value)


@pytest.mark.parametrize(
    "m",
    [DecayedQuantile(0.5, 10), DecayedQuantile(0.5, alpha=1.0, unit=10), DecayedTopK(1, 10)],
    ids=["exp", "poly", "top_k"],
)
def test_lower_answers_as_of_the_newest_event(m):
    p = m.combine(m.lift((0, 1.0)), m.combine(m.lift((30, 2.0)), m.lift((20, 1.0))))
    assert m.lower(p) == m.as_of(p, 30)
    assert m.lower(m.identity) is None and m.as_of(m.identity, 5) is None


@pytest.mark.parametrize(
    "shape", [{"size": 60_000_000, "slide": 20_000_000}, {"size": 315_537_897_599_999_999}]
)
def test_stream_final_answers_equal_the_batch(shape):
    """The streaming engine (``KeyStream``: the event log for a size, the whole history's
    fold with none) fed out-of-order micro-batches: each window's last revision equals the
    batch answer (Spark streaming runs this per key). Batch answers exactly
    (``sketches.exact_decay``); the whole history streams through the summaries, exact
    while they hold fewer values than their capacity (6 here): top_k's weights agree to
    rounding (another order of summation)."""
    from windowagg.windows.engine import KeyStream, Shape, window_key

    rng = np.random.default_rng(9)
    t = (np.sort(rng.integers(0, 200, 120)) + rng.integers(-4, 4, 120)) * 1_000_000
    v = rng.integers(0, 6, 120).astype(float)
    aggs = parse_aggs(
        [
            "decayed_p90(v, half_life=9)",
            "decayed_p50(v, decay=poly(2), unit=1) as pm",
            "top_k(v, 2, half_life=30)",
        ]
    )
    names = ["decayed_p90_v", "pm", "top_k_v"]
    s = KeyStream(aggs, Shape(**shape), max_out_of_orderness=10_000_000)
    outs = [s.feed(t[p], {"v": v[p]})[0].columns for p in np.array_split(np.arange(120), 6)]
    outs.append(s.advance(10**12)[0].columns)
    last = {}
    for o in outs:
        for i in range(len(o.get("end", ()))):
            last[(int(o["start"][i]), int(o["end"][i]))] = tuple(o[c][i] for c in names)
    batch = window_key(t, {"v": v}, aggs, Shape(**shape)).columns
    want = {
        (int(a), int(b)): tuple(batch[c][i] for c in names)
        for i, (a, b) in enumerate(zip(batch["start"], batch["end"], strict=True))
    }
    assert last.keys() == want.keys() and len(want) > 5
    for w, (dq, pm, top) in want.items():  # the quantiles equal; top_k's weights to rounding
        got = last[w]
        assert (got[0], got[1]) == (dq, pm), w
        assert [x for x, _ in json.loads(got[2])] == [x for x, _ in json.loads(top)], w
        np.testing.assert_allclose(
            [y for _, y in json.loads(got[2])], [y for _, y in json.loads(top)], rtol=1e-12
        )


def test_a_user_factory_gives_the_default_answers():
    """With ``factory=`` the engine folds the monoid's partials in that aggregator (not the
    ``slices`` verb): the same answers, top_k's JSON text kept as text."""
    from windowagg import fifo

    events = stream("all_late", 300, seed=2, distinct=8)
    df = pd.DataFrame({"k": 1, "t": [t for t, _ in events], "v": [v for _, v in events]})
    df["t"] = pd.to_datetime(df["t"], unit="us", utc=True)
    aggs = ["top_k(v, 3, half_life=1h)", "decayed_p90(v, half_life=1h)"]
    for kw in ({"size": "2h", "slide": "1h"}, {}):
        want = window_agg(df, "k", "t", aggs, **kw).results
        got = window_agg(df, "k", "t", aggs, factory=fifo.TwoStacks, **kw).results
        assert got["decayed_p90_v"].tolist() == want["decayed_p90_v"].tolist()
        for g, w in zip(got["top_k_v"], want["top_k_v"], strict=True):
            assert [x for x, _ in json.loads(g)] == [x for x, _ in json.loads(w)]
            np.testing.assert_allclose(
                [y for _, y in json.loads(g)], [y for _, y in json.loads(w)], rtol=1e-9
            )
