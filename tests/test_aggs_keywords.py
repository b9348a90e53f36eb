"""Aggregation strings with keyword arguments (``windowagg.aggs.split_call``) and the
decayed aggregations they build; ``parse_call`` reads decayed aggregations alone (no size)
as each key's whole history."""

from __future__ import annotations

import pytest

from windowagg.aggs import (
    KEYWORD_AGGREGATIONS,
    MAX_DURATION,
    decay_spec,
    parse,
    parse_aggs,
    split_call,
)
from windowagg.call import parse_call
from windowagg.errors import ArgumentError
from windowagg.sketches.forward_decay import ExpDecayed, PolyDecayed


@pytest.mark.parametrize(
    ("text", "alias", "column", "half_life", "what"),
    [
        ("ewm_mean(v, half_life=1h)", "ewm_mean_v", "v", 3_600_000_000, "mean"),
        (
            "EWM_MEAN( dep_delay , half_life = 30 minutes )",
            "ewm_mean_dep_delay",
            "dep_delay",
            1_800_000_000,
            "mean",
        ),
        ("decayed_sum(v, half_life=90) as s", "s", "v", 90_000_000, "sum"),
        ("decayed_count(half_life=1d)", "decayed_count", None, 86_400_000_000, "count"),
        ("decayed_count(*, half_life=500ms)", "decayed_count", None, 500_000, "count"),
        ("decayed_sum(v, decay=exp(2h))", "decayed_sum_v", "v", 7_200_000_000, "sum"),
    ],
)
def test_exponential_strings(text, alias, column, half_life, what):
    (a,) = parse([text])
    assert (a.alias, a.column, a.dtype) == (alias, column, "double")
    assert isinstance(a.monoid, ExpDecayed)
    assert (a.monoid.half_life, a.monoid.what) == (half_life, what)


def test_polynomial_strings():
    a, b = parse_aggs(["decayed_sum(v, decay=poly(2))", "ewm_mean(v, decay=poly(0.5), unit=1h)"])
    assert isinstance(a.monoid, PolyDecayed) and isinstance(b.monoid, PolyDecayed)
    assert (a.monoid.alpha, a.monoid.unit, a.monoid.what) == (2.0, 1_000_000, "sum")
    assert (b.monoid.alpha, b.monoid.unit, b.monoid.what) == (0.5, 3_600_000_000, "mean")


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("ewm_mean(v)", "exactly one decay"),
        ("ewm_mean(v, half_life=1h, decay=poly(2))", "exactly one decay"),
        ("ewm_mean(v, halflife=1h)", "no keyword 'halflife'"),
        ("ewm_mean(half_life=1h)", "needs one column"),
        ("ewm_mean(a, b, half_life=1h)", "needs one column"),
        ("decayed_count(v, half_life=1h)", "reads no column"),
        ("decayed_sum(v, half_life=soon)", "cannot read the half_life"),
        ("decayed_sum(v, half_life=0)", "positive"),
        ("decayed_sum(v, decay=poly(-1))", "positive finite exponent"),
        ("decayed_sum(v, decay=cubic)", "cannot read decay"),
        ("decayed_sum(v, half_life=1h, unit=1s)", "unit= is the age unit"),
        ("max(v, half_life=1h)", "takes no keyword arguments"),
        ("ewm_mean(half_life=1h, v)", "after a keyword argument"),
        ("ewm_mean(v, half_life=1h, half_life=2h)", "given twice"),
        ("decayed_sum(v, decay=poly(2)", "unbalanced parentheses.*close every"),
    ],
)
def test_errors_name_the_string_and_what_to_write(text, match):
    with pytest.raises(ValueError, match=match):
        parse([text])


def test_the_grammar_is_open_to_other_aggregations():
    """A keyword aggregation registered in KEYWORD_AGGREGATIONS gets the parsed call
    (the decayed quantiles and heavy hitters plug in the same way)."""
    from windowagg.aggs import Agg
    from windowagg.monoids import Sum

    seen = []

    def build(parts):
        seen.append((parts.positional, parts.keywords, decay_spec(parts, allowed=["k"])))
        return Agg(parts.alias or "top", Sum(), parts.positional[0])

    KEYWORD_AGGREGATIONS["top_k_test"] = build
    try:
        (a,) = parse(["top_k_test(origin, k=10, half_life=1d) as top"])
    finally:
        del KEYWORD_AGGREGATIONS["top_k_test"]
    assert a.alias == "top"
    assert seen == [(["origin"], {"k": "10", "half_life": "1d"}, ("exp", 86_400_000_000, 0.0, 0))]


def test_split_call_keeps_plain_strings_to_the_old_reader():
    assert split_call("count") is None
    assert split_call("max(v)") == ("max(v)", "max", ["v"], {}, None)
    assert [a.alias for a in parse(["max(v)", "count(*)", "p99(v)", "median(v)"])] == [
        "max_v",
        "count",
        "p99_v",
        "median_v",
    ]


def test_no_size_means_the_whole_history_only_for_decayed_aggregations():
    c = parse_call("k", "t", ["ewm_mean(v, half_life=1h)", "decayed_count(half_life=1h)"])
    assert c.shape.kind == "per_event" and c.shape.size == MAX_DURATION
    with pytest.raises(ValueError, match="exactly one window shape"):
        parse_call("k", "t", ["ewm_mean(v, half_life=1h)", "max(v)"])
    assert (
        parse_call("k", "t", ["ewm_mean(v, half_life=1h)"], size="1h").shape.size == 3_600 * 10**6
    )
    with pytest.raises(ArgumentError):
        parse_call("k", "t", ["ewm_mean(v, half_life=-1h)"])
