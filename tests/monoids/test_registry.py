"""windowagg.monoids.get / available: built-ins by name for the Spark and CLI layers."""

from __future__ import annotations

import pytest

from windowagg.monoids import (
    ArgMax,
    BloomFilter,
    MonoidSpecError,
    StdDev,
    Variance,
    available,
    get,
    is_monoid,
)

EXPECTED = {
    "sum", "count", "mean", "variance", "stddev", "min", "max", "min_count", "max_count",
    "argmin", "argmax", "geomean", "product", "first", "last", "concat", "bloom", "matmul2x2",
}  # fmt: skip


def test_available_lists_every_builtin() -> None:
    assert set(available()) == EXPECTED
    assert available() == sorted(available())


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_every_name_builds_a_fresh_monoid_with_that_name(name: str) -> None:
    m = get(name)
    assert is_monoid(m) and m.name == name
    assert get(name) is not m


def test_parameters_are_passed_and_checked() -> None:
    assert get("variance", ddof=1).ddof == 1 and type(get("variance")) is Variance
    assert type(get("stddev", ddof=1)) is StdDev
    assert get("argmax", key=len).key is len and type(get("argmax")) is ArgMax
    bf = get("bloom", bits=1024, hashes=2)
    assert type(bf) is BloomFilter and (bf.bits, bf.hashes) == (1024, 2)
    assert type(get(" Max-Count ")).__name__ == "MaxCount"
    with pytest.raises(MonoidSpecError, match="monoid 'bloom' takes bits, hashes, got size"):
        get("bloom", size=3)
    with pytest.raises(MonoidSpecError, match="monoid 'max' takes no parameters, got ddof"):
        get("max", ddof=1)
    with pytest.raises(
        MonoidSpecError, match="monoid 'variance': Variance: ddof must be an int >= 0"
    ):
        get("variance", ddof=-2)


def test_unknown_names_list_the_valid_ones() -> None:
    with pytest.raises(MonoidSpecError) as info:
        get("median")
    assert str(info.value) == "unknown monoid 'median'; available: " + ", ".join(sorted(EXPECTED))
    assert isinstance(info.value, ValueError)
    with pytest.raises(MonoidSpecError, match="must be a str"):
        get(3)  # type: ignore[arg-type]
