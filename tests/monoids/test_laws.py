"""laws.check catches broken monoids with a message naming the law, the values and the results."""

from __future__ import annotations

import re
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from windowagg.errors import MonoidContractError
from windowagg.monoids import Concat, GeometricMean, Max, Sum, laws


class AuthorsGeoMean(GeometricMean):
    """The authors' C++ bug: identity (1.0, 0) while combine adds logs."""

    __slots__ = ()
    identity = (1.0, 0)  # type: ignore[misc]


class AverageOfTwo:
    identity = None

    def lift(self, x: float) -> float:
        return float(x)

    def combine(self, a: float | None, b: float | None) -> float | None:
        if a is None:
            return b
        if b is None:
            return a
        return (a + b) / 2

    def lower(self, a: float | None) -> float | None:
        return a


def test_authors_geomean_identity_bug_is_caught() -> None:
    with pytest.raises(MonoidContractError) as info:
        laws.check(AuthorsGeoMean(), [2.0, 3.0], eq=laws.approx())
    msg = str(info.value)
    assert msg.startswith("AuthorsGeoMean breaks the left identity law: combine(identity, a) != a")
    assert "identity = (1.0, 0)" in msg
    assert "a = (0.69314718" in msg and "combine(identity, a) = (1.69314718" in msg


def test_the_fixed_geomean_passes() -> None:
    laws.check(GeometricMean(), [2.0, 3.0, 0.5], eq=laws.approx())


def test_average_of_two_is_not_associative() -> None:
    with pytest.raises(MonoidContractError, match=r"AverageOfTwo breaks associativity") as info:
        laws.check(AverageOfTwo(), [0, 4, 8])
    msg = str(info.value)
    for line in (
        "a = ",
        "b = ",
        "c = ",
        "combine(combine(a, b), c) = ",
        "combine(a, combine(b, c)) = ",
    ):
        assert "\n  " + line in msg


@given(st.lists(st.integers(-5, 5), min_size=2, max_size=5, unique=True))
def test_subtraction_is_caught_for_any_distinct_samples(xs: list[int]) -> None:
    class Minus:
        identity = 0

        def lift(self, x: int) -> int:
            return x

        def combine(self, a: int, b: int) -> int:
            return a - b

        def lower(self, a: int) -> int:
            return a

    with pytest.raises(MonoidContractError, match="Minus breaks"):
        laws.check(Minus(), xs)


def test_false_commutativity_claim_is_caught() -> None:
    class ClaimsCommutative(Concat):
        __slots__ = ()
        commutative = True  # type: ignore[misc]

    with pytest.raises(
        MonoidContractError, match=r"commutativity \(it declares commutative = True\)"
    ):
        laws.check(ClaimsCommutative(), [1, 2])


def test_false_idempotence_claim_is_caught() -> None:
    class ClaimsIdempotent(Sum):
        __slots__ = ()
        idempotent = True  # type: ignore[misc]

    with pytest.raises(
        MonoidContractError, match=r"idempotence .*\n  a = 1\n  combine\(a, a\) = 2"
    ):
        laws.check(ClaimsIdempotent(), [1])


def test_wrong_inverse_is_caught() -> None:
    class BadInverse(Sum):
        __slots__ = ()

        def inverse(self, a: Any) -> Any:
            return a

    with pytest.raises(
        MonoidContractError, match=r"the inverse law: combine\(a, inverse\(a\)\) != identity"
    ):
        laws.check(BadInverse(), [3])
    laws.check(BadInverse(), [3], inverse=False)  # skipped on request


def test_inverse_true_needs_an_inverse() -> None:
    with pytest.raises(MonoidContractError, match="no callable inverse"):
        laws.check(Max(), [1], inverse=True)


def test_mutating_combine_is_caught() -> None:
    class Appender:
        identity: tuple[()] = ()

        def lift(self, x: int) -> list[int]:
            return [x]

        def combine(self, a: Any, b: Any) -> Any:
            if not a:
                return b
            if not b:
                return a
            a.extend(b)  # the bug: mutates its left argument
            return a

        def lower(self, a: Any) -> Any:
            return a

    with pytest.raises(
        MonoidContractError,
        match=r"Appender breaks the no-mutation rule: combine\(a, b\) changed an argument",
    ):
        laws.check(Appender(), [1, 2])


def test_exceptions_inside_the_monoid_are_reported_with_their_arguments() -> None:
    class NoEmptyMean:
        identity = (0, 0)

        def lift(self, x: int) -> tuple[int, int]:
            return (x, 1)

        def combine(self, a: tuple[int, int], b: tuple[int, int]) -> tuple[int, int]:
            return (a[0] + b[0], a[1] + b[1])

        def lower(self, a: tuple[int, int]) -> float:
            return a[0] / a[1]  # the authors' pre-fix Mean: divides by zero when empty

    with pytest.raises(
        MonoidContractError, match=re.escape("NoEmptyMean.lower((0, 0)) raised ZeroDivisionError")
    ):
        laws.check(NoEmptyMean(), [1])


def test_not_a_monoid_and_user_monoids_without_flags() -> None:
    with pytest.raises(MonoidContractError, match="lacks"):
        laws.check(object(), [1])

    class Longest:
        identity = ""

        def lift(self, x: str) -> str:
            return x

        def combine(self, a: str, b: str) -> str:
            return a if len(a) >= len(b) else b

        def lower(self, a: str) -> str:
            return a

    laws.check(Longest(), ["a", "bb", "cc", ""])


def test_float_sums_need_approx() -> None:
    xs = [0.1, 0.2, 0.3, 1e16, -1e16]
    with pytest.raises(MonoidContractError, match="associativity"):
        laws.check(Sum(), xs)
    laws.check(Sum(), xs, eq=laws.approx(rel=1e-9, abs=4.0))


def test_long_reprs_are_shortened() -> None:
    class BigBad(Sum):
        __slots__ = ()
        identity = 10**400  # type: ignore[misc]

    with pytest.raises(MonoidContractError, match=r"\.\.\. \(401 chars\)"):
        laws.check(BigBad(), [1])


def test_equalities() -> None:
    eq = laws.approx()
    assert eq({"a": (1, 1.0)}, {"a": (1, 1.0 + 1e-12)})
    assert not eq({"a": 1}, {"b": 1})
    assert not eq((1,), [1])
    assert not eq(1.0, "1.0")
    assert eq(float("nan"), float("nan")) and not eq(float("nan"), 1.0)
    assert laws.exact([1, {"x": float("nan")}], [1, {"x": float("nan")}])
    assert not laws.exact((1, 2), (1, 2, 3))


def test_partials_that_cannot_be_copied_skip_only_the_mutation_check() -> None:
    import threading

    lock = threading.Lock()

    class Locked:
        identity = (0, lock)

        def lift(self, x: int) -> tuple[int, Any]:
            return (x, lock)

        def combine(self, a: tuple[int, Any], b: tuple[int, Any]) -> tuple[int, Any]:
            return (a[0] + b[0], lock)

        def lower(self, a: tuple[int, Any]) -> int:
            return a[0]

    laws.check(Locked(), [1, 2])

    class LockedMinus(Locked):
        def combine(self, a: tuple[int, Any], b: tuple[int, Any]) -> tuple[int, Any]:
            return (a[0] - b[0], lock)

    with pytest.raises(MonoidContractError, match="LockedMinus breaks"):
        laws.check(LockedMinus(), [1, 2])
