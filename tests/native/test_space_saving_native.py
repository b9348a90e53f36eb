"""The native ExpDecaySpaceSaving's entry points fuzzed: its decoder
(``_core.ExpDecaySpaceSaving.load`` and ``ExpDecaySpaceSaving.from_bytes(..., backend="native")``)
with random fields and random and mutated bytes, its array verb with buffers of every wrong
kind; and the lockstep tests of tests/sketches, so that the sanitizer build
(scripts/test_native_sanitized.sh runs tests/native) runs them too."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sketches.test_space_saving_backends import (  # noqa: F401  (collected here as well)
    test_a_key_the_twin_does_not_hold_moves_auto_to_python,
    test_bad_bytes_fail_alike_on_both_backends,
    test_lockstep_state_bytes_and_answers_after_every_step,
    test_long_zipf_stream_with_ties_same_state,
    test_random_merge_trees,
)
from windowagg._native import _core
from windowagg.errors import ArgumentError, ArgumentTypeError, CodecError, TimestampError
from windowagg.sketches import ExpDecaySpaceSaving

keys_st = st.one_of(
    st.integers(-(2**64), 2**64),
    st.text(max_size=6),
    st.binary(max_size=6),
    st.floats(),
    st.booleans(),
    st.none(),
)
num_st = st.one_of(st.floats(), st.integers(-5, 5))
item_st = st.one_of(
    st.tuples(keys_st, st.floats(), st.floats()),
    st.tuples(keys_st, num_st, num_st),
    st.tuples(keys_st),
    st.lists(st.floats(), max_size=3),
    st.none(),
)


@settings(max_examples=300, deadline=None)
@given(
    k=st.integers(0, 2**33),
    lam=st.floats(),
    has=st.integers(-1, 3),
    lm=st.floats(),
    tmax=st.floats(),
    floor=st.floats(),
    n=st.floats(),
    items=st.lists(item_st, max_size=8),
)
def test_load_fuzz_raises_only_codec_errors(
    k: int, lam: float, has: int, lm: float, tmax: float, floor: float, n: float, items: Any
) -> None:
    try:
        s = _core.ExpDecaySpaceSaving.load(k, lam, has, lm, tmax, floor, n, items)
    except CodecError:
        return
    except (TypeError, OverflowError):  # the binding's own argument conversion (k, has)
        assert k > 2**64 - 1 or k < 0 or abs(has) > 2**31
        return
    s._check()
    assert [x for x, _, _ in s.items()] == [it[0] for it in items]
    s.update(1, 0.0)
    s.update("z", 1.0)
    s._check()
    assert len(s.heap()) == s.size


@settings(max_examples=300, deadline=None)
@given(data=st.binary(max_size=200))
def test_random_bytes_raise_codec_error(data: bytes) -> None:
    for backend in ("native", "python", "auto"):
        with pytest.raises(CodecError):
            ExpDecaySpaceSaving.from_bytes(data, backend=backend)


def _valid() -> ExpDecaySpaceSaving:
    s = ExpDecaySpaceSaving(lam=0.05, k=6, backend="native")
    s.update_many(np.array([1, 2, 3, 1, 1, -9, 2**62], dtype=np.int64), np.arange(7.0))
    s.update_many(["a", "é", "a"], [3.0, 1.0, 9.0], [2.0, 0.5, 1.0])
    s.update(b"\x00\xff", 4.0)
    return s


@settings(max_examples=300, deadline=None)
@given(pos=st.integers(0, 10**6), byte=st.integers(0, 255), cut=st.booleans())
def test_mutated_bytes_raise_codec_error_or_load_the_same_on_both(
    pos: int, byte: int, cut: bool
) -> None:
    data = bytearray(_valid().to_bytes())
    pos %= len(data)
    if cut:
        del data[pos:]
    else:
        data[pos] = byte
    got = []
    for backend in ("native", "python"):
        try:
            got.append(ExpDecaySpaceSaving.from_bytes(bytes(data), backend=backend)._state())
        except CodecError:
            got.append(None)
        except ArgumentTypeError:  # a float key came out of a mutated tag: Python only
            got.append("not native")
    assert got[0] == got[1] or got[0] == "not native"


def test_update_many_refuses_bad_buffers_and_changes_nothing() -> None:
    s = _valid()
    nat = s._nat
    before = s._state()
    t = np.arange(3.0)
    bad: list[tuple[Any, Any, Any, type[Exception]]] = [
        (np.arange(3, dtype=np.int64), t.astype(np.float32), None, ArgumentTypeError),
        (np.arange(3, dtype=np.int64), t[::2], None, ArgumentTypeError),
        (np.arange(3, dtype=np.int64), np.zeros((3, 1)), None, ArgumentTypeError),
        (np.arange(3, dtype=np.int64), t, np.ones(2), ArgumentError),
        (np.arange(2, dtype=np.int64), t, None, ArgumentError),
        (np.arange(3, dtype=np.int32), t, None, ArgumentTypeError),
        ({1, 2, 3}, t, None, ArgumentTypeError),
        ([1, 2], t, None, ArgumentError),
        (np.arange(3, dtype=np.int64), np.array([0.0, math.nan, 1.0]), None, TimestampError),
        (np.arange(3, dtype=np.int64), t, np.array([1.0, -1.0, 1.0]), ArgumentError),
        (np.arange(3, dtype=np.int64), t, np.array([1.0, math.inf, 1.0]), ArgumentError),
        ("abc", t, None, ArgumentTypeError),
    ]
    for keys, times, weights, err in bad:
        with pytest.raises(err):
            nat.update_many(keys, times, weights)
    assert nat.update_many([1, 2.5, 3], t, None) is False  # a key not held: unchanged
    assert nat.update(2.5, 1.0) is False
    with pytest.raises(TimestampError):
        nat.update(1, math.inf)
    with pytest.raises(ArgumentError):
        nat.update(1, 1.0, 0.0)
    with pytest.raises(ArgumentError):
        nat.heavy_hitters(-0.1)
    with pytest.raises(ArgumentError):
        nat.merge(_core.ExpDecaySpaceSaving(6, 0.5))
    with pytest.raises(ArgumentError):
        _core.ExpDecaySpaceSaving(0, 0.5)
    with pytest.raises(ArgumentError):
        _core.ExpDecaySpaceSaving(3, math.nan)
    assert s._state() == before
    s._check()


def test_load_refuses_a_total_or_time_that_is_not_finite() -> None:
    """Found by the load fuzz (k=1, n=inf, no landmark): both decoders took a non-finite
    total (and floor, landmark, largest time), and the summary's invariant broke at its
    first update. CodecError now, on both backends."""
    inf, nan = float("inf"), float("nan")
    cases = [
        ("_n", 0, 0.0, 0.0, 0.0, inf),
        ("_n", 1, 0.0, 0.0, 0.0, nan),
        ("_floor", 1, 0.0, 0.0, inf, inf),
        ("_lm", 1, inf, 0.0, 0.0, 1.0),
        ("_tmax", 1, 0.0, nan, 0.0, 1.0),
    ]
    for field, has, lm, tmax, floor, n in cases:
        with pytest.raises(CodecError, match="finite"):
            _core.ExpDecaySpaceSaving.load(1, 746.0, has, lm, tmax, floor, n, [])
        s = ExpDecaySpaceSaving(lam=0.5, k=2, backend="python")
        s.update(1, 0.0)
        setattr(s, field, {"_n": n, "_floor": floor, "_lm": lm, "_tmax": tmax}[field])
        data = s.to_bytes()  # bytes holding the bad field, as a corrupted store would
        for backend in ("native", "python"):
            with pytest.raises(CodecError, match="finite"):
                ExpDecaySpaceSaving.from_bytes(data, backend=backend)
