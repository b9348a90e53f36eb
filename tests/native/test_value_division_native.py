"""The native ValueDivision's decoder fuzzed (``ValueDivision.from_bytes(..., backend="native")``,
which ends in a ``_core.QDigest.load`` per interval) with random and mutated bytes; and the
lockstep tests of tests/sketches, so that the sanitizer build
(scripts/test_native_sanitized.sh runs tests/native) runs them too."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from sketches.test_value_division_backends import (  # noqa: F401  (collected here as well)
    test_a_call_that_raises_changes_nothing_on_both_backends,
    test_bad_bytes_are_codec_errors_on_both_backends,
    test_lockstep_same_bytes_and_answers_after_every_step,
    test_merged_in_random_trees,
    test_update_many_keeps_the_bounds,
)
from windowagg.errors import CodecError
from windowagg.sketches import PolynomialDecay, ValueDivision

G = PolynomialDecay(1.0)


def _valid() -> ValueDivision:
    d = ValueDivision(1000, G, 0.1, 0.1, backend="native")
    d.update_many(np.arange(0, 1000, 3), np.arange(0, 1000, 3) / 10.0)
    d.update(999, 120.0, 2.5)
    d.update(5, 12.0, 0.5)
    return d


@settings(max_examples=200, deadline=None)
@given(data=st.binary(max_size=200))
def test_random_bytes_raise_only_codec_errors(data: bytes) -> None:
    try:
        d = ValueDivision.from_bytes(data, G, backend="native")
    except CodecError:
        return
    d._check()


@settings(max_examples=300, deadline=None)
@given(
    edits=st.lists(st.tuples(st.integers(0, 10**6), st.integers(0, 255)), min_size=1, max_size=6),
    cut=st.integers(0, 10**6),
    truncate=st.booleans(),
)
def test_mutated_bytes_raise_only_codec_errors(
    edits: list[tuple[int, int]], cut: int, truncate: bool
) -> None:
    good = bytearray(_valid().to_bytes())
    for at, v in edits:
        good[at % len(good)] = v
    if truncate:
        good = good[: cut % len(good)]
    try:
        d = ValueDivision.from_bytes(bytes(good), G, backend="native")
    except CodecError:
        return
    assert d.backend == "native"
    d._check()
    assert ValueDivision.from_bytes(d.to_bytes(), G, backend="python").to_bytes() == d.to_bytes()
