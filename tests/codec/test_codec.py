"""Tests of windowagg.codec: exact round trips, golden bytes, and malformed input."""

from __future__ import annotations

import contextlib
import datetime as dt
import math
import random
import struct
import zlib
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from windowagg import codec
from windowagg.codec import CODEC_VERSION, MAGIC, MAX_DEPTH, dumps, loads, register
from windowagg.errors import CodecError
from windowagg.monoids import NOTHING

# ----------------------------------------------------------------- strict equality


def same(a: Any, b: Any) -> bool:
    """Equality that also compares types, float bits (nan, -0.0) and tz details."""
    if type(a) is not type(b):
        return False
    if type(a) is float:
        return struct.pack(">d", a) == struct.pack(">d", b)
    if type(a) in (tuple, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if type(a) is dict:
        return len(a) == len(b) and all(
            same(ka, kb) and same(va, vb)
            for (ka, va), (kb, vb) in zip(a.items(), b.items(), strict=True)
        )
    if type(a) is dt.datetime:
        return (
            a.replace(tzinfo=None) == b.replace(tzinfo=None)
            and a.fold == b.fold
            and a.utcoffset() == b.utcoffset()
            and a.tzname() == b.tzname()
        )
    if type(a) is Decimal:
        return str(a) == str(b)
    return bool(a == b)


# ----------------------------------------------------------------- strategies

fixed_tz = st.builds(
    dt.timezone,
    st.timedeltas(
        min_value=dt.timedelta(hours=-23, minutes=-59), max_value=dt.timedelta(hours=23, minutes=59)
    ),
) | st.builds(
    dt.timezone,
    st.timedeltas(min_value=dt.timedelta(hours=-12), max_value=dt.timedelta(hours=12)),
    st.text(min_size=1, max_size=5),
)
datetimes = st.datetimes(timezones=st.none() | fixed_tz | st.just(dt.UTC))
scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.integers(min_value=-(2**300), max_value=2**300)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=20)
    | st.binary(max_size=20)
    | st.just(NOTHING)
    | datetimes
    | st.dates()
    | st.timedeltas()
    | st.decimals(allow_nan=True, allow_infinity=True)
)
hashable_keys = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.text(max_size=8)
    | st.binary(max_size=8)
    | st.dates(),
    lambda inner: st.tuples(inner, inner),
    max_leaves=4,
)
plain_values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=5)
        | st.lists(inner, max_size=5).map(tuple)
        | st.dictionaries(hashable_keys, inner, max_size=5)
    ),
    max_leaves=20,
)


# ----------------------------------------------------------------- round trips


@given(plain_values)
def test_plain_values_round_trip_exactly(value: Any) -> None:
    data = dumps(value)
    assert data[:4] == MAGIC and data[4] == CODEC_VERSION
    back = loads(data)
    assert same(back, value), (value, back)
    assert dumps(back) == data  # deterministic: the same value gives the same bytes


@pytest.mark.parametrize(
    "value",
    [
        0.0,
        -0.0,
        math.inf,
        -math.inf,
        math.nan,
        struct.unpack(">d", bytes.fromhex("7ff8000000000123"))[0],  # a nan with a payload
        5e-324,
        2**64,
        -(2**64),
        2**2000 + 1,
        -(2**1015),
        "",
        "\ud800",  # a lone surrogate
        b"",
        (),
        [],
        {},
        dt.datetime(2026, 11, 21, 12, 0, tzinfo=dt.timezone(dt.timedelta(hours=5, microseconds=7))),
        dt.datetime(2026, 11, 1, 1, 30, fold=1),
        dt.datetime(1, 1, 1, tzinfo=dt.timezone(dt.timedelta(hours=-3), "BRT")),
        dt.datetime.max,
        dt.date.min,
        dt.timedelta.min,
        dt.timedelta.max,
        Decimal("-0.000"),
        Decimal("sNaN"),
        Decimal("-Infinity"),
        Decimal("1.10E+999999"),
        NOTHING,
        {(1, "a"): [None, True, False], None: {}, 2.5: b"x"},
    ],
    ids=repr,
)
def test_edge_values_round_trip(value: Any) -> None:
    assert same(loads(dumps(value)), value)


def test_nothing_stays_the_singleton() -> None:
    assert loads(dumps([NOTHING, (NOTHING,)])) == [NOTHING, (NOTHING,)]
    assert loads(dumps(NOTHING)) is NOTHING


def test_bytes_like_input_is_accepted() -> None:
    data = dumps((1, 2.0))
    assert loads(bytearray(data)) == (1, 2.0)
    assert loads(memoryview(data)) == (1, 2.0)


# ----------------------------------------------------------------- golden bytes


GOLDEN: list[tuple[Any, str]] = [
    (None, "5741474301 4e"),
    (True, "5741474301 54"),
    (False, "5741474301 46"),
    (NOTHING, "5741474301 5f"),
    (0, "5741474301 69 01 00"),
    (-1, "5741474301 69 01 ff"),
    (128, "5741474301 69 02 0080"),
    (-129, "5741474301 69 02 ff7f"),
    (2**64, "5741474301 69 09 010000000000000000"),
    (1.5, "5741474301 66 3ff8000000000000"),
    (-0.0, "5741474301 66 8000000000000000"),
    ("é", "5741474301 73 02 c3a9"),
    (b"\x00\xff", "5741474301 62 02 00ff"),
    ((1, 2.5), "5741474301 74 02 690101 664004000000000000"),
    ([None], "5741474301 6c 01 4e"),
    ({"a": 1}, "5741474301 6d 01 730161 690101"),
    (dt.date(2026, 11, 21), "5741474301 64 07ea 0b 15"),
    (dt.timedelta(days=-1, seconds=5), "5741474301 72 ffffffff 00000005 00000000"),
    (
        dt.datetime(2026, 11, 21, 22, 5, 7, 123456),
        "5741474301 44 07ea 0b 15 16 05 07 0001e240 00",
    ),
    (
        dt.datetime(2026, 11, 21, 22, 5, 7, tzinfo=dt.timezone(dt.timedelta(hours=-2))),
        "5741474301 44 07ea 0b 15 16 05 07 00000000 02 fffffffe52d8b800",
    ),
    (Decimal("1.50"), "5741474301 63 04 312e3530"),
    ("x" * 200, "5741474301 73 c801" + "78" * 200),
]


@pytest.mark.parametrize(("value", "hexdata"), GOLDEN, ids=lambda v: repr(v)[:30])
def test_golden_bytes(value: Any, hexdata: str) -> None:
    """Pins the format: version-1 bytes still read, and version 2 writes the same value bytes
    after version byte 2, closed by the big-endian CRC32 of everything before it."""
    v1 = bytes.fromhex(hexdata.replace(" ", ""))
    assert same(loads(v1), value)
    assert dumps(value) == as_v2(v1)
    assert same(loads(as_v2(v1)), value)


def reseal(v2: bytes, change: Any) -> bytes:
    """Apply *change* to the bytes before the CRC of *v2* and write a matching CRC again, so
    that a test reaches the parser behind the checksum."""
    head = change(v2[:-4])
    return head + zlib.crc32(head).to_bytes(4, "big")


def as_v2(v1: bytes) -> bytes:
    """The version-2 bytes of a value whose version-1 bytes are *v1*."""
    head = b"WAGC\x02" + v1[5:]
    return head + zlib.crc32(head).to_bytes(4, "big")


def test_golden_registered_type() -> None:
    class Pair:
        def __init__(self, a: int, b: int) -> None:
            self.a, self.b = a, b

    register("test.Pair", Pair, lambda p: (p.a, p.b), lambda t: Pair(*t))
    data = dumps(Pair(1, 2))
    assert data == as_v2(
        bytes.fromhex("5741474301 58 09 746573742e50616972 74 02 690101 690102".replace(" ", ""))
    )
    back = loads(data)
    assert type(back) is Pair and (back.a, back.b) == (1, 2)


# ----------------------------------------------------------------- registered types


class Interval:
    __slots__ = ("hi", "lo")

    def __init__(self, lo: int, hi: int) -> None:
        if lo > hi:
            raise ValueError(f"lo {lo} > hi {hi}")
        self.lo, self.hi = lo, hi

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Interval) and (self.lo, self.hi) == (other.lo, other.hi)

    def __hash__(self) -> int:
        return hash((self.lo, self.hi))


def _interval_from_plain(p: Any) -> Interval:
    lo, hi = p
    return Interval(lo, hi)


register("test.Interval", Interval, lambda i: (i.lo, i.hi), _interval_from_plain)


def test_registered_type_round_trips_nested_and_as_key() -> None:
    value = {Interval(1, 2): [Interval(3, 4), (Interval(5, 5),)]}
    assert loads(dumps(value)) == value


def test_registered_from_plain_rejection_is_a_codec_error() -> None:
    data = reseal(
        dumps(Interval(1, 2)),
        lambda b: b.replace(bytes.fromhex("690101690102"), bytes.fromhex("690109690102")),
    )
    with pytest.raises(CodecError, match=r"'test.Interval' rejected its payload at offset 20"):
        loads(data)


def test_unknown_registered_tag() -> None:
    data = reseal(dumps(Interval(1, 2)), lambda b: b.replace(b"test.Interval", b"test.Intervax"))
    with pytest.raises(CodecError, match=r"unknown registered tag 'test.Intervax' at offset 5"):
        loads(data)


def test_register_rules() -> None:
    class A:
        pass

    class B:
        pass

    register("test.A", A, lambda a: None, lambda p: A())
    register("test.A", A, lambda a: None, lambda p: A())  # same pair again: fine
    with pytest.raises(CodecError, match="already registered"):
        register("test.A", B, lambda b: None, lambda p: B())
    with pytest.raises(CodecError, match="already registered"):
        register("test.A2", A, lambda a: None, lambda p: A())
    with pytest.raises(CodecError, match="plain type"):
        register("test.int", int, int, int)
    with pytest.raises(CodecError, match="non-empty"):
        register("", A, int, int)
    register("test.A", B, lambda b: 1, lambda p: B(), replace=True)
    assert type(loads(dumps(B()))) is B
    with pytest.raises(CodecError, match=r"cannot encode a value of type .*A"):
        dumps(A())  # A lost its registration when test.A moved to B
    assert codec.registered()["test.A"] is B


def test_subclasses_are_not_silently_encoded() -> None:
    class MyInt(int):
        pass

    with pytest.raises(CodecError, match=r"type .*MyInt at path \$\[0\]\[1\]"):
        dumps([(1, MyInt(3))])


def test_to_plain_failure_and_non_fixed_tz() -> None:
    class Bad:
        pass

    def boom(_: Bad) -> Any:
        raise RuntimeError("boom")

    register("test.Bad", Bad, boom, lambda p: Bad())
    with pytest.raises(CodecError, match=r"to_plain of registered type .*Bad failed"):
        dumps({"k": Bad()})

    class Tz(dt.tzinfo):
        def utcoffset(self, d: dt.datetime | None) -> dt.timedelta:
            return dt.timedelta(hours=1)

    with pytest.raises(CodecError, match="only fixed UTC offsets"):
        dumps(dt.datetime(2020, 1, 1, tzinfo=Tz()))


# ----------------------------------------------------------------- malformed input


def test_specific_malformed_inputs() -> None:
    cases = {
        b"": "truncated data: header needs 5 bytes, got 0",
        b"WAG": "truncated data: header needs 5 bytes, got 3",
        b"XAGC\x01N": "expected magic b'WAGC' at offset 0",
        b"WAGC\x00N": "unsupported codec version 0 at offset 4",
        b"WAGC\x01": "truncated data: a value needs 1 byte(s) at offset 5",
        b"WAGC\x01Z": "unknown type tag 0x5a at offset 5",
        b"WAGC\x01NN": "trailing data: 1 byte(s) after the value at offset 6",
        b"WAGC\x01f\x00\x00": "truncated data: float needs 8 byte(s) at offset 6, only 2 left",
        b"WAGC\x01t\x05N": "tuple of 5 values needs 5 byte(s) at offset 7",
        b"WAGC\x01s\x80\x00": "overlong varint (str length) at offset 6",
        b"WAGC\x01s\x02\xff\xfe": "invalid UTF-8 in str at offset 7",
        b"WAGC\x01s\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01": "longer than 9 bytes at offset 6",
        b"WAGC\x01m\x01l\x00N": "unhashable dict key of type list at offset 7",
        b"WAGC\x01m\x02NNNN": "duplicate dict key None at offset 9",
        b"WAGC\x01d\x07\xea\x0d\x01": "invalid date at offset 6",
        b"WAGC\x01r\x00\x00\x00\x00\x00\x01\x51\x80\x00\x00\x00\x00": "fields not normalised",
        b"WAGC\x01c\x03abc": "invalid Decimal literal at offset 7",
        b"WAGC\x01c\x03 1 ": "non-canonical Decimal literal ' 1 ' at offset 7",
        b"WAGC\x01c\x031_0": "non-canonical Decimal literal '1_0' at offset 7",
    }
    for data, message in cases.items():
        with pytest.raises(CodecError) as info:
            loads(data)
        assert message in str(info.value), (data, str(info.value))
    with pytest.raises(CodecError, match="loads needs bytes, got str"):
        loads("WAGC")  # type: ignore[arg-type]


def test_nesting_limit_both_ways() -> None:
    deep: Any = None
    for _ in range(MAX_DEPTH):
        deep = [deep]
    assert loads(dumps(deep)) == deep
    with pytest.raises(CodecError, match="deeper than MAX_DEPTH"):
        dumps([deep])
    bomb = b"WAGC\x01" + b"t\x01" * 100_000 + b"N"
    with pytest.raises(CodecError, match="deeper than MAX_DEPTH=256 at offset"):
        loads(bomb)


def _only_codec_errors(data: bytes) -> None:
    with contextlib.suppress(CodecError):
        loads(data)


@given(st.binary(max_size=64))
def test_random_bytes_only_raise_codec_error(tail: bytes) -> None:
    _only_codec_errors(tail)
    _only_codec_errors(MAGIC + bytes([CODEC_VERSION]) + tail)


@given(plain_values, st.data())
def test_truncations_and_corruptions_only_raise_codec_error(
    value: Any, data: st.DataObject
) -> None:
    encoded = dumps(value)
    for cut in range(len(encoded)):  # every proper prefix is invalid
        with pytest.raises(CodecError):
            loads(encoded[:cut])
    with pytest.raises(CodecError, match="checksum mismatch"):
        loads(encoded + b"\x00")
    with pytest.raises(CodecError, match="trailing data"):
        loads(reseal(encoded, lambda b: b + b"\x00"))
    buf = bytearray(encoded[:-4])
    for _ in range(data.draw(st.integers(1, 4))):
        i = data.draw(st.integers(5, len(buf) - 1)) if len(buf) > 5 else 4
        buf[i] = data.draw(st.integers(0, 255))
    _only_codec_errors(bytes(buf) + encoded[-4:])
    _only_codec_errors(reseal(bytes(buf) + encoded[-4:], lambda b: b))


def test_fuzz_mutations_of_a_rich_value() -> None:
    rng = random.Random(1234)
    value = {
        "a": [1, -(2**80), 2.5, math.nan, "é", b"\x00"],
        (1, None): (NOTHING, dt.datetime(2020, 1, 2, tzinfo=dt.UTC), dt.date(2020, 1, 2)),
        "t": dt.timedelta(seconds=-1),
        "d": Decimal("3.14"),
        "i": Interval(1, 2),
    }
    encoded = dumps(value)
    for _ in range(3000):
        buf = bytearray(encoded)
        for _ in range(rng.randint(1, 3)):
            op = rng.randrange(3)
            i = rng.randrange(len(buf))
            if op == 0:
                buf[i] = rng.randrange(256)
            elif op == 1:
                del buf[i]
            else:
                buf.insert(i, rng.randrange(256))
        _only_codec_errors(bytes(buf))
        if len(buf) > 4:  # the same change behind a matching checksum reaches the parser
            _only_codec_errors(reseal(bytes(buf), lambda b: b))
