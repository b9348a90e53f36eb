"""The codec's fast paths for a store's pieces (issue 37, Spark "no step back"):
``loads_numbers`` (a pane's partials' records read without the general decoder),
``loads_bytes`` (a pane's values for exact quantiles, likewise) and the
dict of int keys and bytes values (a Spark head row's inline pieces) encoded and decoded
inline. Nothing but the speed may change: the same bytes, the same values, and for data
that is not such a record, ``None`` (``loads_numbers``, ``loads_bytes``) or the general
decoder's answer.
"""

from __future__ import annotations

import contextlib
import struct
import zlib
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from windowagg import codec
from windowagg.errors import CodecError

NUMBER = st.one_of(
    st.floats(allow_nan=False),
    st.integers(-(2**80), 2**80),
    st.sampled_from([0, -1, 2**1100, -0.0, float("inf")]),
)
ROW = st.one_of(
    st.tuples(*[NUMBER] * 3),
    st.lists(NUMBER, max_size=6).map(tuple),
    st.lists(st.one_of(NUMBER, st.none(), st.text(max_size=2)), max_size=4).map(tuple),
    st.lists(NUMBER, max_size=3),  # a list, not a tuple: not a row
)


def _mutated(data: bytes, at: int, byte: int, fix_crc: bool) -> bytes:
    b = bytearray(data)
    b[at % len(b)] = byte
    if fix_crc:  # reach the decoder behind the checksum
        body = bytes(b[:-4])
        return body + zlib.crc32(body).to_bytes(4, "big")
    return bytes(b)


@given(
    st.lists(st.tuples(st.sampled_from(["p", "p", "e", "pq"]), ROW), max_size=6),
    st.integers(0, 10**6),
    st.integers(0, 255),
    st.sampled_from(["none", "byte", "byte+crc", "cut"]),
)
def test_loads_numbers_is_loads_where_it_answers(
    recs: list[tuple[str, Any]], at: int, byte: int, hurt: str
) -> None:
    datas = [codec.dumps(r) for r in recs]
    if datas and hurt != "none":
        j = at % len(datas)
        if hurt == "cut":
            datas[j] = datas[j][: at % len(datas[j])]
        else:
            datas[j] = _mutated(datas[j], at, byte, hurt == "byte+crc")
    got = codec.loads_numbers("p", datas)
    assert len(got) == len(datas)
    for data, row in zip(datas, got, strict=True):
        try:
            want = codec.loads(data)
        except CodecError:
            assert row is None
            continue
        if row is None:  # not a numbers record: loads answers it
            continue
        assert type(want) is tuple and want[0] == "p" and type(want[1]) is tuple
        assert repr(row) == repr(want[1])  # -0.0 and 0 told apart
    # every record dumps_numbers writes is read by the fast path
    rows = [r for t, r in recs if t == "p" and type(r) is tuple]
    numeric = [r for r in rows if all(type(x) in (int, float) for x in r)]
    fast = codec.loads_numbers("p", codec.dumps_numbers("p", numeric))
    small = [r for r in numeric if all(type(x) is float or abs(x) < 2**1000 for x in r)]
    assert [repr(r) for r in fast if r is not None] == [repr(r) for r in small]


#: An int of each width 1..9 bytes (its sign too): the layouts a record's ints give it
WIDE = st.integers(1, 9).flatmap(lambda n: st.integers(-(2 ** (8 * n - 1)), 2 ** (8 * n - 1) - 1))
FLOAT = st.one_of(st.floats(), st.sampled_from([-0.0, float("nan")]))


@given(
    st.lists(st.lists(st.booleans(), min_size=1, max_size=4), min_size=1, max_size=3),
    st.data(),
)
def test_loads_numbers_reads_runs_of_one_layout_as_loads(
    kinds: list[list[bool]], data: st.DataObject
) -> None:
    """Runs of records of one layout (per item a float, or an int of 1..9 bytes: read by
    one ``struct`` call once a record of the same layout was read), other layouts between
    them, some damaged where a tag, a length or a value lies (checksum kept or fixed):
    ``loads_numbers`` answers None or exactly ``loads``'s row (a NaN's bits, -0.0), and
    every undamaged record its row."""
    rows = []
    for _ in range(data.draw(st.integers(1, 12))):
        layout = data.draw(st.sampled_from(kinds))
        rows.append(tuple(data.draw(FLOAT if f else WIDE) for f in layout))
    datas = codec.dumps_numbers("p", rows)
    hurt: set[int] = set()
    for j in data.draw(st.lists(st.integers(0, len(datas) - 1), max_size=3)):
        at = data.draw(st.integers(12, len(datas[j]) - 5))  # inside the row, before the CRC
        datas[j] = _mutated(datas[j], at, data.draw(st.integers(0, 255)), data.draw(st.booleans()))
        hurt.add(j)
    got = codec.loads_numbers("p", datas)
    for j, (raw, row) in enumerate(zip(datas, got, strict=True)):
        if j not in hurt:
            assert row is not None and _bits(row) == _bits(rows[j])
        try:
            want = codec.loads(raw)
        except CodecError:
            assert row is None
            continue
        if row is not None:
            assert type(want) is tuple and want[0] == "p" and _bits(row) == _bits(want[1])


def _bits(row: tuple[Any, ...]) -> list[Any]:
    """A row's items as their exact bits (a float's, NaN payloads and -0.0 included)."""
    return [(float, struct.pack(">d", x)) if type(x) is float else (type(x), x) for x in row]


@given(
    st.lists(
        st.one_of(
            st.binary(max_size=20), st.binary(min_size=120, max_size=400), st.text(max_size=3)
        ),
        max_size=6,
    ),
    st.integers(0, 10**6),
    st.integers(0, 255),
    st.sampled_from(["none", "byte", "byte+crc", "cut", "v1", "long"]),
)
def test_loads_bytes_is_loads_where_it_answers(
    items: list[Any], at: int, byte: int, hurt: str
) -> None:
    """Damaged, cut, of version 1 (no checksum), or with an overlong length varint (which
    ``loads`` refuses): ``loads_bytes`` answers None or exactly what ``loads`` does; every
    bytes object ``dumps_bytes`` writes is read back."""
    datas = [codec.dumps(x) for x in items]
    if datas and hurt != "none":
        j = at % len(datas)
        if hurt == "cut":
            datas[j] = datas[j][: at % len(datas[j])]
        elif hurt == "v1":
            datas[j] = b"WAGC\x01" + datas[j][5:-4]
        elif hurt == "long" and type(items[j]) is bytes and len(items[j]) < 0x80:
            body = b"WAGC\x02b" + bytes((len(items[j]) | 0x80, 0)) + items[j]
            datas[j] = body + zlib.crc32(body).to_bytes(4, "big")
        else:
            datas[j] = _mutated(datas[j], at, byte, hurt == "byte+crc")
    got = codec.loads_bytes(datas)
    assert len(got) == len(datas)
    for data, raw in zip(datas, got, strict=True):
        try:
            want = codec.loads(data)
        except CodecError:
            assert raw is None
            continue
        assert raw is None or (type(raw) is bytes and raw == want)
    blobs = [x for x in items if type(x) is bytes]
    assert codec.loads_bytes(codec.dumps_bytes(blobs)) == blobs


def test_loads_bytes_refuses_a_length_byte_that_reads_as_the_rest() -> None:
    """A first length byte >= 0x80 followed by 0 (an overlong varint, refused by ``loads``)
    whose value happens to match the bytes that follow: not read as a length."""
    body = b"WAGC\x02b" + bytes((0x85, 0)) + bytes(0x84)
    data = body + zlib.crc32(body).to_bytes(4, "big")
    assert codec.loads_bytes([data]) == [None]
    with pytest.raises(CodecError, match="overlong varint"):
        codec.loads(data)


def _body(x: Any) -> bytes:
    """One value's encoding, without header and checksum (the general path's)."""
    return codec.dumps(x)[5:-4]


KEY = st.one_of(st.integers(-(2**63), 2**63), st.integers(-300, 300), st.just(2**1100))
VALUE = st.one_of(st.binary(max_size=300), st.integers(), st.none(), st.text(max_size=3))


@given(st.dictionaries(st.one_of(KEY, st.text(max_size=2)), VALUE, max_size=12))
def test_a_dict_of_int_keys_and_bytes_is_encoded_as_its_entries(d: dict[Any, Any]) -> None:
    """A dict's bytes are its entries' own encodings end to end (whatever path each
    entry takes), and decode to the same dict."""
    head = codec.dumps({})[5:-4]  # the dict tag and a zero count
    n = len(d)
    count = bytearray()
    while True:  # the count's varint
        count.append((n & 0x7F) | (0x80 if n > 0x7F else 0))
        n >>= 7
        if not n:
            break
    want = head[:1] + bytes(count) + b"".join(_body(k) + _body(v) for k, v in d.items())
    assert codec.dumps(d)[5:-4] == want
    assert codec.loads(codec.dumps(d)) == d


@given(
    st.dictionaries(KEY, st.binary(max_size=200), min_size=1, max_size=8),
    st.integers(0, 10**6),
    st.integers(0, 255),
    st.integers(0, 10**6),
)
def test_a_damaged_dict_of_pieces_raises_only_codec_errors(
    d: dict[int, bytes], at: int, byte: int, cut: int
) -> None:
    data = codec.dumps((2, b"meta", d))
    for bad in (_mutated(data, at, byte, True), data[: cut % len(data)]):
        with contextlib.suppress(CodecError):  # any other exception fails the test
            codec.loads(bad)
