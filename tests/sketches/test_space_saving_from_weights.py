"""ExpDecaySpaceSaving.from_weights (the summary of exact decayed weights, as
``windowagg.spark.decayed_summary``'s exact top_k builds it): every invariant holds, the
keys held answer their exact weights with no overestimate, a key not held is bounded by
the floor, the summary merges with summaries built by updates under their bounds, and the
native and Python backends hold the same state and write the same bytes. Bad arguments
raise and build nothing."""

from __future__ import annotations

import math
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from windowagg import native_available
from windowagg.errors import ArgumentError, ArgumentTypeError, TimestampError
from windowagg.sketches import ExpDecaySpaceSaving

BACKENDS = ["python", *(["native"] if native_available() else [])]
LAM = math.log(2.0) / 10.0


@st.composite
def exact_streams(draw: st.DrawFn) -> tuple[int, list[tuple[str | int, float]], float]:
    """(k, events (key, time), as of): a stream whose exact weights the test computes."""
    k = draw(st.integers(1, 8))
    rng = random.Random(draw(st.integers(0, 2**32)))
    keys: list[str | int] = [*range(draw(st.integers(1, 3 * k))), "a", "b", "é"]
    events = [
        (rng.choice(keys[: rng.randint(1, len(keys))]), float(rng.randrange(0, 200)))
        for _ in range(draw(st.integers(0, 80)))
    ]
    as_of = max((t for _, t in events), default=0.0) + draw(st.sampled_from([0.0, 5.0, 300.0]))
    return k, events, as_of


def exact(events: list[tuple[str | int, float]], as_of: float) -> dict[str | int, float]:
    w: dict[str | int, list[float]] = {}
    for x, t in events:
        w.setdefault(x, []).append(math.exp(-LAM * (as_of - t)))
    return {x: math.fsum(v) for x, v in w.items()}


@settings(max_examples=150, deadline=None)
@given(exact_streams(), st.sampled_from(BACKENDS))
def test_the_keys_held_are_exact_and_every_bound_holds(
    case: tuple[int, list[tuple[str | int, float]], float], backend: str
) -> None:
    k, events, as_of = case
    w = exact(events, as_of)
    total = math.fsum(w.values())
    s = ExpDecaySpaceSaving.from_weights(list(w.items()), total, as_of, k=k, lam=LAM,
                                         backend=backend)  # fmt: skip
    s._check()
    assert s.backend == backend
    assert s.decayed_count(as_of) == pytest.approx(total, rel=1e-12, abs=1e-300)
    ranked = sorted(w.items(), key=lambda p: -p[1])
    held = dict(s.heavy_hitters(0.0, as_of))
    assert len(held) == min(k, sum(1 for v in w.values() if v > 0))
    floor = ranked[k][1] if len(ranked) > k else 0.0
    for x, f in w.items():
        lo, hi = s.frequency_bounds(x, as_of)
        if x in held:  # no overestimate: both bounds are the exact weight
            assert lo == pytest.approx(f, rel=1e-12) and hi == pytest.approx(f, rel=1e-12)
        else:
            assert lo == 0.0 and f <= hi * (1 + 1e-12) and hi == pytest.approx(floor)
    # the same summary on the other backend: same bytes; through bytes: same state
    for other in BACKENDS:
        o = ExpDecaySpaceSaving.from_weights(list(w.items()), total, as_of, k=k, lam=LAM,
                                             backend=other)  # fmt: skip
        assert o.to_bytes() == s.to_bytes()
    assert ExpDecaySpaceSaving.from_bytes(s.to_bytes()) == s


@settings(max_examples=60, deadline=None)
@given(exact_streams(), exact_streams(), st.sampled_from(BACKENDS))
def test_it_merges_with_a_summary_of_updates_within_their_bounds(
    a: tuple[int, list[tuple[str | int, float]], float],
    b: tuple[int, list[tuple[str | int, float]], float],
    backend: str,
) -> None:
    k, ev_a, _ = a
    _, ev_b, _ = b
    as_of = max((t for _, t in ev_a + ev_b), default=0.0)
    w = exact(ev_a, as_of)
    s = ExpDecaySpaceSaving.from_weights(list(w.items()), math.fsum(w.values()), as_of, k=k,
                                         lam=LAM, backend=backend)  # fmt: skip
    u = ExpDecaySpaceSaving(lam=LAM, k=k, backend=backend)
    for x, t in ev_b:
        u.update(x, t)
    s.merge(u)
    s._check()
    both = exact(ev_a + ev_b, as_of)
    d = math.fsum(both.values())
    assert s.decayed_count(as_of) == pytest.approx(d, rel=1e-9, abs=1e-300)
    for x, f in both.items():  # Space-Saving's bounds for the union
        lo, hi = s.frequency_bounds(x, as_of)
        assert lo - 1e-9 * d <= f <= hi + 1e-9 * d
        assert hi - lo <= d / k + 1e-9 * d


@pytest.mark.parametrize("backend", BACKENDS)
def test_bad_arguments_raise_and_name_the_value(backend: str) -> None:
    def build(pairs: list[tuple[object, float]], total: float = 10.0, at: object = 0.0) -> None:
        ExpDecaySpaceSaving.from_weights(pairs, total, at, k=2, lam=LAM, backend=backend)  # type: ignore[arg-type]

    with pytest.raises(ArgumentError, match="given twice"):
        build([("a", 1.0), ("a", 2.0)])
    with pytest.raises(ArgumentError, match=r"weight of 'a' is -1\.0"):
        build([("a", -1.0)])
    with pytest.raises(ArgumentError, match="weight of 'a' is nan"):
        build([("a", math.nan)])
    with pytest.raises(ArgumentError, match=r"add up to more than the total 2\.0"):
        build([("a", 1.5), ("b", 1.5)], total=2.0)
    with pytest.raises(ArgumentError, match="total=inf"):
        build([("a", 1.0)], total=math.inf)
    with pytest.raises(ArgumentTypeError, match="bool keys"):
        build([(True, 1.0)])
    with pytest.raises(TimestampError, match="finite"):
        build([("a", 1.0)], at=math.nan)
    with pytest.raises(ArgumentError, match="k must be"):
        ExpDecaySpaceSaving.from_weights([], 0.0, 0.0, k=0, lam=LAM, backend=backend)


def test_no_weights_is_the_empty_summary() -> None:
    s = ExpDecaySpaceSaving.from_weights([], 0.0, 5.0, k=3, lam=LAM)
    assert s == ExpDecaySpaceSaving(lam=LAM, k=3)
    assert s.to_bytes() == ExpDecaySpaceSaving(lam=LAM, k=3).to_bytes()
