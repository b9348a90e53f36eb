"""Every built-in monoid obeys its laws on Hypothesis-drawn samples, and computes the right thing."""

from __future__ import annotations

import math
import statistics
from decimal import Decimal
from fractions import Fraction
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from windowagg.errors import MonoidContractError
from windowagg.monoids import (
    NOTHING,
    ArgMax,
    ArgMin,
    BloomFilter,
    Concat,
    Count,
    First,
    GeometricMean,
    Last,
    MatMul2x2,
    Max,
    MaxCount,
    Mean,
    Min,
    MinCount,
    MonoidInputError,
    Product,
    StdDev,
    Sum,
    Variance,
    available,
    get,
    is_group,
    laws,
)

ints = st.integers(-1000, 1000)
tiny = st.integers(-2, 2)
floats = st.floats(-1e6, 1e6, allow_nan=False)
positive = st.floats(1e-3, 1e3)
small = st.integers(-9, 9)
float_eq = laws.approx(rel=1e-7, abs=1e-6)

# name -> (monoid, input strategy, equality for the laws)
CASES: dict[str, tuple[Any, st.SearchStrategy[Any], laws.Eq | None]] = {
    "sum": (Sum(), ints, None),
    "sum_float": (Sum(), floats, float_eq),
    "count": (Count(), st.none() | ints | st.text(max_size=3), None),
    "mean": (Mean(), ints, None),
    "mean_float": (Mean(), floats, float_eq),
    "variance": (Variance(), floats, float_eq),
    "variance_ddof1": (Variance(ddof=1), tiny, float_eq),
    "stddev": (StdDev(ddof=1), floats, float_eq),
    "min": (Min(), ints, None),
    "max": (Max(), ints, None),
    "min_count": (MinCount(), tiny, None),
    "max_count": (MaxCount(), tiny, None),
    "argmin": (ArgMin(), st.tuples(tiny, ints), None),
    "argmax": (ArgMax(), st.tuples(tiny, ints), None),
    "argmax_key": (ArgMax(key=abs), ints, None),
    "geomean": (GeometricMean(), positive, float_eq),
    "product": (Product(), small, None),
    "first": (First(), ints, None),
    "last": (Last(), ints, None),
    "concat": (Concat(), ints, None),
    "matmul2x2": (MatMul2x2(), st.tuples(small, small, small, small), None),
    "bloom": (
        BloomFilter(bits=256, hashes=3),
        st.text(max_size=4) | ints | st.binary(max_size=4),
        None,
    ),
}


def test_every_registered_name_has_a_law_case() -> None:
    covered = {type(m).name for m, _, _ in CASES.values()}
    assert covered == set(available())


@pytest.mark.parametrize("case", sorted(CASES))
@given(data=st.data())
def test_laws_hold_on_drawn_samples(case: str, data: st.DataObject) -> None:
    monoid, values, eq = CASES[case]
    samples = data.draw(st.lists(values, min_size=1, max_size=5), label="samples")
    laws.check(monoid, samples, eq=eq)


@pytest.mark.parametrize("case", sorted(CASES))
@given(data=st.data())
def test_fold_matches_any_bracketing(case: str, data: st.DataObject) -> None:
    """A left fold equals a random binary bracketing (associativity over whole windows)."""
    monoid, values, eq = CASES[case]
    same = eq or laws.exact
    xs = data.draw(st.lists(values, max_size=12), label="xs")
    parts = [monoid.lift(x) for x in xs]
    left = monoid.identity
    for p in parts:
        left = monoid.combine(left, p)
    while len(parts) > 1:
        i = data.draw(st.integers(0, len(parts) - 2))
        parts[i : i + 2] = [monoid.combine(parts[i], parts[i + 1])]
    tree = parts[0] if parts else monoid.identity
    assert same(left, tree)


def test_declared_flags_match_the_group_protocol() -> None:
    for name in available():
        m = get(name)
        assert is_group(m) == m.invertible, name
        assert isinstance(m.commutative, bool) and isinstance(m.idempotent, bool)
    assert [n for n in available() if get(n).invertible] == ["count", "geomean", "mean", "sum"]


# ------------------------------------------------------------------ what they compute


def fold(m: Any, xs: list[Any]) -> Any:
    a = m.identity
    for x in xs:
        a = m.combine(a, m.lift(x))
    return m.lower(a)


@given(st.lists(floats, min_size=2, max_size=30))
def test_variance_and_stddev_match_statistics(xs: list[float]) -> None:
    for ddof, var, sd in (
        (0, statistics.pvariance, statistics.pstdev),
        (1, statistics.variance, statistics.stdev),
    ):
        assert math.isclose(fold(Variance(ddof=ddof), xs), var(xs), rel_tol=1e-7, abs_tol=1e-6)
        assert math.isclose(fold(StdDev(ddof=ddof), xs), sd(xs), rel_tol=1e-7, abs_tol=1e-4)


def test_variance_is_stable_with_a_large_offset() -> None:
    """The Chan merge keeps precision where the sum-of-squares form loses all of it."""
    xs = [1e9 + d for d in (4.0, 7.0, 13.0, 16.0)] * 50
    v = Variance(ddof=1)
    parts = [v.lift(x) for x in xs]
    while len(parts) > 1:  # merge pairwise, as a tree aggregator would
        parts = [
            v.combine(*parts[i : i + 2]) if i + 1 < len(parts) else parts[i]
            for i in range(0, len(parts), 2)
        ]
    got = v.lower(parts[0])
    want = statistics.variance(xs)
    assert math.isclose(got, want, rel_tol=1e-9)
    n, s, q = len(xs), sum(xs), sum(x * x for x in xs)
    naive = (q - s * s / n) / (n - 1)
    assert not math.isclose(naive, want, rel_tol=1e-3)  # the naive form is wrong here


def test_empty_and_too_small_windows_lower_to_none() -> None:
    assert Mean().lower(Mean().identity) is None
    assert GeometricMean().lower(GeometricMean().identity) is None
    assert Variance().lower(Variance().identity) is None
    assert Variance(ddof=1).lower(Variance().lift(3.0)) is None
    assert StdDev(ddof=1).lower(StdDev().lift(3.0)) is None
    assert Variance().lower(Variance().lift(3.0)) == 0.0
    assert MaxCount().lower(MaxCount().identity) == (None, 0)
    assert MinCount().lower(MinCount().identity) == (None, 0)
    assert ArgMax().lower(ArgMax().identity) is None
    assert First().lower(NOTHING) is None


@given(st.lists(positive, min_size=1, max_size=30))
def test_geometric_mean_matches_statistics(xs: list[float]) -> None:
    assert math.isclose(fold(GeometricMean(), xs), statistics.geometric_mean(xs), rel_tol=1e-9)


def test_geometric_mean_identity_is_neutral_and_inputs_are_checked() -> None:
    g = GeometricMean()
    assert g.identity == (0.0, 0)
    a = g.lift(8.0)
    assert g.combine(g.identity, a) == a == g.combine(a, g.identity)
    for bad in (0, -1.5, math.nan, math.inf, "3", None, True):
        with pytest.raises(
            MonoidInputError, match=r"GeometricMean\(\) (needs a|refuses non-finite)"
        ):
            g.lift(bad)
    assert math.isclose(g.lower(g.combine(g.lift(Decimal("2")), g.lift(Fraction(8)))), 4.0)


def test_mean_and_geomean_inverses_undo_a_combine() -> None:
    m = Mean()
    a = m.combine(m.lift(2), m.lift(10))
    assert m.combine(a, m.inverse(m.lift(10))) == m.lift(2)
    g = GeometricMean()
    b = g.combine(g.lift(2.0), g.lift(10.0))
    assert math.isclose(g.lower(g.combine(b, g.inverse(g.lift(10.0)))), 2.0)


@given(st.lists(tiny, max_size=20))
def test_min_and_max_count(xs: list[int]) -> None:
    hi = fold(MaxCount(), xs)
    lo = fold(MinCount(), xs)
    if xs:
        assert hi == (max(xs), xs.count(max(xs)))
        assert lo == (min(xs), xs.count(min(xs)))
    else:
        assert hi == lo == (None, 0)


def test_max_count_is_the_papers_running_example() -> None:
    m = MaxCount()
    assert fold(m, [4, 5, 4]) == (5, 1)
    assert fold(m, [4, 4]) == (4, 2)  # after evicting the unique maximum 5, recomputed


@given(st.lists(st.tuples(tiny, ints), max_size=20))
def test_argmax_and_argmin_pick_the_oldest_on_ties(pairs: list[tuple[int, int]]) -> None:
    got_max = fold(ArgMax(), pairs)
    got_min = fold(ArgMin(), pairs)
    if not pairs:
        assert got_max is None and got_min is None
        return
    best = max(k for k, _ in pairs)
    worst = min(k for k, _ in pairs)
    assert got_max == next(v for k, v in pairs if k == best)
    assert got_min == next(v for k, v in pairs if k == worst)


def test_argmax_is_not_commutative_on_ties() -> None:
    m = ArgMax()
    a, b = m.lift((1, "a")), m.lift((1, "b"))
    assert m.combine(a, b) != m.combine(b, a)
    assert m.commutative is False


def test_argmax_input_checks() -> None:
    with pytest.raises(MonoidInputError, match=r"\(key, value\) pair"):
        ArgMax().lift(3)
    with pytest.raises(MonoidInputError, match="non-finite value nan"):
        ArgMin().lift((math.nan, "x"))
    with pytest.raises(MonoidInputError, match="non-finite value nan"):
        MaxCount().lift(math.nan)
    with pytest.raises(TypeError, match="key must be callable"):
        ArgMax(key=3)  # type: ignore[arg-type]
    assert ArgMin(key=len).lower(ArgMin(key=len).lift("abc")) == "abc"
    assert ArgMax().lift([2, "v"]) == (2, "v")
    with pytest.raises(MonoidInputError, match=r"\(key, value\) pair"):
        ArgMax().lift((1, 2, 3))


def test_product_has_no_inverse_because_of_zero() -> None:
    p = Product()
    assert fold(p, [2, 0, 5]) == 0
    assert not hasattr(p, "inverse") and not is_group(p)
    assert fold(p, []) == 1


def test_variance_rejects_bad_inputs_and_parameters() -> None:
    with pytest.raises(MonoidInputError, match=r"Variance\(\) needs a real number"):
        Variance().lift("1.5")
    with pytest.raises(MonoidInputError, match=r"StdDev\(\) needs a real number"):
        StdDev().lift(None)
    with pytest.raises(ValueError, match="ddof must be an int >= 0"):
        Variance(ddof=-1)
    assert repr(StdDev(ddof=1)) == "StdDev(ddof=1)"


def test_monoid_contract_error_is_a_type_error() -> None:
    assert issubclass(MonoidContractError, TypeError)
    assert issubclass(MonoidInputError, ValueError)
