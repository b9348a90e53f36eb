"""The native ExpDecayQDigest's entry points fuzzed: its decoder
(``ExpDecayQDigest.from_bytes(..., backend="native")``, which ends in ``_core.QDigest.load``)
with random and mutated bytes, the scaling verbs the decayed digests add to ``_core.QDigest``
with any factor; and the lockstep tests of tests/sketches, so that the sanitizer build
(scripts/test_native_sanitized.sh runs tests/native) runs them too."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from sketches.test_exp_qdigest_backends import (  # noqa: F401  (collected here as well)
    test_a_call_that_raises_changes_nothing_on_both_backends,
    test_bad_bytes_are_codec_errors_on_both_backends,
    test_landmark_sum_is_math_fsum,
    test_lockstep_same_bytes_and_answers_after_every_step,
    test_merged_in_random_trees,
)
from windowagg._native import _core
from windowagg.errors import ArgumentError, CodecError
from windowagg.sketches import ExpDecayQDigest


def _valid() -> ExpDecayQDigest:
    d = ExpDecayQDigest(1000, 0.1, 0.05, backend="native")
    d.update_many(np.arange(0, 1000, 3), np.arange(0, 1000, 3) / 10.0)
    d.update(999, 120.0, 2.5)
    return d


@settings(max_examples=200, deadline=None)
@given(data=st.binary(max_size=160))
def test_random_bytes_raise_only_codec_errors(data: bytes) -> None:
    try:
        d = ExpDecayQDigest.from_bytes(data, backend="native")
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
        d = ExpDecayQDigest.from_bytes(bytes(good), backend="native")
    except CodecError:
        return
    d._check()
    d.update(3, 200.0)  # a decoded state keeps working
    d.compress()
    d._check()


def test_a_rescaled_total_past_float64_is_inf_not_nan() -> None:
    """Found by the CI's Hypothesis run: a factor of 1.655e304 overflowed the exact sum's
    partials (inf - inf) and rescaled_total answered NaN, which every check let through."""
    q = _valid()._q._nat
    assert q.rescaled_total(1.65513805459594e304) == math.inf
    assert q.rescaled_total(1.0) > 0


@settings(max_examples=200, deadline=None)
@given(
    f=st.floats(),
    rebase=st.booleans(),
    gamma=st.floats(),
)
def test_scaling_verbs_take_any_factor(f: float, rebase: bool, gamma: float) -> None:
    """scale / rescaled_total / add_scaled: a factor that is not a finite number >= 0, or a
    total past float64, is ArgumentError and changes nothing; otherwise the digest stays
    whole."""
    q = _valid()._q._nat
    o = _valid()._q._nat
    before = q.body()
    ok_f = f >= 0 and math.isfinite(f)
    try:
        total = q.rescaled_total(f)
    except ArgumentError:
        assert not ok_f
    else:
        assert ok_f and total >= 0
    try:
        q.scale(f, rebase)
    except ArgumentError:
        assert q.body() == before
    else:
        assert ok_f
        q._check()
    mid = q.body()
    try:
        q.add_scaled(o, gamma)
    except ArgumentError:
        assert q.body() == mid
    else:
        q.drop_zeros()
        q.compress_if_full()
        q._check()
    if q.n * 2 < math.inf:
        q.add_scaled(q, 1.0)  # itself: a copy is added
        q._check()
    try:
        q.add_scaled(_core.QDigest(999, 0.2), 1.0)
    except ArgumentError:
        pass
    else:
        raise AssertionError("parameters differ: must raise")
