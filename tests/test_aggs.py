"""The aggregation strings name exactly what works on a plain numeric column (issue 13 #3)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from windowagg import monoids
from windowagg.aggs import COLUMN_AGGREGATIONS, parse_aggs
from windowagg.pandas import window_agg


def _names() -> list[str]:
    return [n.replace("pNN", "p90") for n in COLUMN_AGGREGATIONS] + ["avg", "p99.9"]


@pytest.mark.parametrize("name", _names())
@pytest.mark.parametrize("slide", [30_000_000, None])
def test_every_listed_aggregation_works_on_a_plain_column(name: str, slide: int | None) -> None:
    n = 200
    pdf = pd.DataFrame(
        {
            "k": ["a", "b"] * (n // 2),
            "t": pd.date_range("2024-01-01", periods=n, freq="7s", tz="UTC"),
            "v": np.arange(1, n + 1, dtype=np.float64),
        }
    )
    agg = "count" if name == "count" else f"{name}(v)"
    spec = {"size": "1 minute", "slide": None if slide is None else f"{slide} us"}
    out = window_agg(pdf, ["k"], "t", [agg], **spec)
    res, rej = out.results, out.rejects
    assert len(rej) == 0 and len(res) > 0
    col = res.iloc[:, -1]
    assert np.isfinite(col.to_numpy(dtype=np.float64)).all()


def test_median_is_p50_named_median() -> None:
    (a,) = parse_aggs(["median(x)"])
    assert (a.alias, a.kind) == ("median_x", "p50")


@pytest.mark.parametrize("name", sorted(set(monoids.available()) - set(COLUMN_AGGREGATIONS)))
def test_monoids_that_cannot_take_a_plain_column_are_refused_with_the_list(name: str) -> None:
    with pytest.raises(ValueError, match=r"does not work on a plain column.*count, sum, mean"):
        parse_aggs([f"{name}(x)"])


def test_structured_monoids_by_name_in_a_tuple_still_work() -> None:
    (a,) = parse_aggs([("who", "argmax", "pair")])
    assert type(a.monoid).__name__ == "ArgMax" and a.column == "pair"
