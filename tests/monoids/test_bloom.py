"""BloomFilter: no false negatives, stable hashing across processes, honest error estimates."""

from __future__ import annotations

import math
import os
import subprocess
import sys
import zlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from windowagg import codec
from windowagg.errors import MonoidContractError
from windowagg.monoids import BloomFilter, BloomSet, MonoidInputError
from windowagg.monoids.bloom import bloom_positions

items = st.text(max_size=6) | st.integers() | st.binary(max_size=6) | st.floats(allow_nan=False)


def build(bf: BloomFilter, xs: list[object]) -> BloomSet:
    a = bf.identity
    for x in xs:
        a = bf.combine(a, bf.lift(x))
    return bf.lower(a)


@given(st.lists(items, max_size=40))
def test_no_false_negatives(xs: list[object]) -> None:
    s = build(BloomFilter(bits=512, hashes=3), xs)
    assert all(x in s for x in xs)
    assert len(s) <= 3 * len(xs) and s.bit_count == len(s)


def test_equal_numbers_are_the_same_member() -> None:
    s = build(BloomFilter(), [1, 2.5, -0.0])
    assert 1.0 in s and True in s and 0 in s and 2.5 in s
    assert bloom_positions(2**60, 2**14, 4) == bloom_positions(float(2**60), 2**14, 4)


def test_positions_are_pinned() -> None:
    """Golden positions: a change here breaks every stored filter, so it must be deliberate."""
    assert bloom_positions("apple", 1024, 3) == [753, 688, 623]
    assert bloom_positions(b"apple", 2**14, 4) != bloom_positions("apple", 2**14, 4)
    assert bloom_positions(-1, 2**14, 2) == bloom_positions(-1.0, 2**14, 2)
    assert bloom_positions(float("nan"), 64, 2) == bloom_positions(-float("nan"), 64, 2)


def test_hashing_is_stable_across_processes() -> None:
    code = (
        "from windowagg.monoids.bloom import bloom_positions;"
        "print([bloom_positions(x, 2**14, 4) for x in ('a', b'a', 7, 2.5, 'é')])"
    )
    outs = set()
    for seed in ("1", "2", "random"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        outs.add(
            subprocess.run(
                [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
            ).stdout
        )
    local = str([bloom_positions(x, 2**14, 4) for x in ("a", b"a", 7, 2.5, "é")]) + "\n"
    assert outs == {local}


def test_false_positive_rate_estimate_is_honest() -> None:
    bf = BloomFilter(bits=2048, hashes=4)
    s = build(bf, [f"in-{i}" for i in range(300)])
    probes = [f"out-{i}" for i in range(20000)]
    observed = sum(p in s for p in probes) / len(probes)
    assert s.false_positive_rate == (len(s) / 2048) ** 4
    assert abs(observed - s.false_positive_rate) < 0.25 * s.false_positive_rate + 0.002
    assert abs(s.approx_items - 300) < 30


def test_full_and_empty_filters() -> None:
    full = BloomSet(8, 1, 0xFF)
    assert full.approx_items == math.inf and full.false_positive_rate == 1.0 and "anything" in full
    empty = BloomFilter(bits=8, hashes=1).lower(BloomFilter(bits=8, hashes=1).identity)
    assert len(empty) == 0 and empty.approx_items == 0.0 and "x" not in empty


def test_different_configurations_do_not_combine() -> None:
    a = BloomFilter(bits=256, hashes=3)
    b = BloomFilter(bits=256, hashes=2)
    with pytest.raises(
        MonoidContractError, match="256-bit/3-hash filter with a 256-bit/2-hash filter"
    ):
        a.combine(a.lift("x"), b.lift("x"))


def test_bad_items_and_parameters() -> None:
    bf = BloomFilter(bits=64)
    for bad in (None, (1,), [1], object()):
        with pytest.raises(MonoidInputError, match="accepts str, bytes, int and float items"):
            bf.lift(bad)
    for kwargs in ({"bits": 0}, {"bits": 1.5}, {"hashes": 0}, {"hashes": 65}, {"bits": True}):
        with pytest.raises(ValueError, match="must be an int"):
            BloomFilter(**kwargs)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"value must be an int in \[0, 2\*\*8\)"):
        BloomSet(8, 1, 256)
    assert bf.lift(bytearray(b"k")) == bf.lift(b"k") == bf.lift(memoryview(b"k"))


def test_bloom_set_is_immutable_hashable_and_encodes() -> None:
    s = build(BloomFilter(bits=128, hashes=2), ["a", "b"])
    with pytest.raises(AttributeError, match="immutable"):
        s._value = 0  # type: ignore[misc]
    with pytest.raises(AttributeError, match="immutable"):
        del s._bits  # type: ignore[misc]
    assert {s: 1}[BloomSet(*s.to_plain())] == 1
    assert s != "a" and repr(s).startswith("BloomSet(bits=128, hashes=2, set_bits=")
    back = codec.loads(codec.dumps(s))
    assert back == s and type(back) is BloomSet
    with pytest.raises(ValueError, match="needs \\(bits, hashes, value\\)"):
        BloomSet.from_plain([128, 2, 0])
    bitmap = s.value.to_bytes(16, "little")  # the codec's form carries the bitmap's bytes
    head = codec.dumps(s)[:-4].replace(
        codec.dumps((128, 2, bitmap))[5:-4], codec.dumps((128, 0, bitmap))[5:-4]
    )
    bad = head + zlib.crc32(head).to_bytes(4, "big")  # a valid checksum: reach from_plain
    with pytest.raises(codec.CodecError, match=r"'windowagg\.BloomSet' rejected its payload"):
        codec.loads(bad)
