"""``_core.dumps_number_rows``, the compiled twin of ``codec.dumps_numbers`` for rows of floats
and ints: the same bytes as the Python codec on every row it takes, None on every other (which
the Python codec then writes), nothing else. Here so that the sanitizer build
(scripts/test_native_sanitized.sh runs tests/native) runs it too; ``tests/codec`` checks
``dumps_numbers`` against ``dumps`` on both backends."""

from __future__ import annotations

import struct
import threading
import zlib
from collections import namedtuple
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from windowagg._backend import native_core
from windowagg._codec_decode import _numbers_py as _numbers_py_read
from windowagg.codec import _numbers_py, dumps, dumps_numbers, loads_numbers

_core: Any = native_core()
pytestmark = pytest.mark.skipif(
    _core is None or not hasattr(_core, "dumps_number_rows"),
    reason="a compiled core with dumps_number_rows (bash scripts/build_native.sh)",
)

HEAD = dumps(("p", None))[:-5]  # the record's bytes before the row (its "N" and CRC cut)

_INT64 = st.integers(-(2**63), 2**63 - 1)
_EDGES = st.sampled_from([0, -1, 1, 127, 128, -128, -129, 255, 256, 2**63 - 1, -(2**63)])
_PAST = st.sampled_from([2**63, -(2**63) - 1, 2**100, -(2**1000)])
_NANS = st.integers(0, 2**52 - 1).map(
    lambda m: struct.unpack(">d", struct.pack(">Q", 0x7FF0000000000001 | m))[0]
)
_FLOATS = st.floats(allow_nan=True) | _NANS | st.sampled_from([-0.0, 0.0, float("inf")])
_ITEM = _FLOATS | _INT64 | _EDGES


class _F(float):
    pass


class _I(int):
    pass


Pair = namedtuple("Pair", "a b")
_OTHER = (
    st.tuples(st.booleans())
    | st.tuples(_FLOATS, _PAST)
    | st.tuples(st.text(max_size=2))
    | st.lists(_ITEM, max_size=3)
    | st.none()
    | st.lists(_ITEM, min_size=128, max_size=130).map(tuple)
)
_ROWS = st.lists(_ITEM, max_size=127).map(tuple) | st.tuples(_ITEM, _ITEM, _ITEM)


def test_the_head_is_a_record_prefix() -> None:
    assert dumps(("p", (1.5,))).startswith(HEAD)
    assert _core.dumps_number_rows(HEAD, [(1.5,)]) == [dumps(("p", (1.5,)))]


@settings(max_examples=300, deadline=None)
@given(st.lists(_ROWS | _OTHER, max_size=30))
def test_the_rows_it_takes_are_the_python_codecs_bytes(rows: list[Any]) -> None:
    """Every row of floats and int64 ints: the Python codec's bytes (NaN payloads, -0.0,
    ints across byte widths up to int64's edges, empty and 127-item tuples); every other
    row (a bool, an int past int64, a list, 128 items or more, another
    type): None."""
    got = _core.dumps_number_rows(HEAD, rows)
    assert len(got) == len(rows)
    for row, b in zip(rows, got, strict=True):
        takes = (
            type(row) is tuple
            and len(row) < 128
            and all(type(x) is float or (type(x) is int and -(2**63) <= x < 2**63) for x in row)
        )
        if takes:
            assert b == dumps(("p", row)) == _numbers_py("p", HEAD, [row])[0]
        else:
            assert b is None
    assert dumps_numbers("p", rows, backend="native") == [dumps(("p", r)) for r in rows]
    assert dumps_numbers("p", rows, backend="native") == dumps_numbers("p", rows, backend="python")


def test_subclasses_are_left_to_the_python_codec() -> None:
    """A float or int subclass, a bool, a namedtuple: None (the Python codec decides)."""
    assert (
        _core.dumps_number_rows(HEAD, [(_F(1.0),), (_I(2),), (True,), (1.0, False), Pair(1.0, 2)])
        == [None] * 5
    )


def test_bad_arguments_are_type_errors() -> None:
    with pytest.raises(TypeError):
        _core.dumps_number_rows(HEAD, ((1.0,),))  # a tuple, not a list
    with pytest.raises(TypeError):
        _core.dumps_number_rows("p", [(1.0,)])  # the head is bytes
    assert _core.dumps_number_rows(b"", []) == []

    # a list subclass is not taken by the core; dumps_numbers copies it into a list
    class Rows(list):  # type: ignore[type-arg]
        pass

    with pytest.raises(TypeError):
        _core.dumps_number_rows(HEAD, Rows([(1.0,)]))
    assert dumps_numbers("p", Rows([(1.0, 2)]), backend="native") == [dumps(("p", (1.0, 2)))]


def test_two_threads_and_a_mutating_one() -> None:
    """Two threads encode one shared list while a third replaces its rows: every answer is
    one of the rows' encodings (the GIL is held through each call; nothing crashes, which
    the sanitizer build checks)."""
    rows: list[Any] = [(float(i), i) for i in range(2000)]
    good = {dumps(("p", (float(i), i))) for i in range(2000)} | {dumps(("p", (0.5, -1)))}
    stop = threading.Event()
    bad: list[Any] = []

    def encode() -> None:
        while not stop.is_set():
            for b in _core.dumps_number_rows(HEAD, rows):
                if b not in good:
                    bad.append(b)

    def mutate() -> None:
        i = 0
        while not stop.is_set():
            rows[i % 2000] = (0.5, -1) if i % 2 else (float(i % 2000), i % 2000)
            i += 1

    threads = [threading.Thread(target=f) for f in (encode, encode, mutate)]
    for t in threads:
        t.start()
    stop.wait(1.0)
    stop.set()
    for t in threads:
        t.join()
    assert not bad


def _bits(row: tuple[Any, ...] | None) -> Any:
    """A row's items as their exact bits (a float's NaN payload and -0.0 included)."""
    if row is None:
        return None
    return [(float, struct.pack(">d", x)) if type(x) is float else (type(x), x) for x in row]


def _hurt(data: bytes, at: int, byte: int, how: str) -> bytes:
    if how == "cut":
        return data[: at % (len(data) + 1)]
    b = bytearray(data)
    b[at % len(b)] = byte
    if how == "byte+crc":  # reach the reader behind the checksum
        body = bytes(b[:-4])
        return body + zlib.crc32(body).to_bytes(4, "big")
    return bytes(b)


_WIDE = st.integers(0, 10).flatmap(
    lambda n: st.integers(-(2 ** max(8 * n - 1, 0)), 2 ** max(8 * n - 1, 0))
)


@settings(max_examples=400, deadline=None)
@given(
    st.lists(st.lists(_FLOATS | _WIDE | _EDGES, max_size=6).map(tuple), max_size=8),
    st.lists(
        st.tuples(
            st.integers(0, 10**6), st.integers(0, 255), st.sampled_from(["byte", "byte+crc", "cut"])
        ),
        max_size=4,
    ),
    st.lists(st.binary(max_size=40), max_size=3),
)
def test_the_reader_answers_what_the_python_reader_answers(
    rows: list[tuple[Any, ...]], hurts: list[tuple[int, int, str]], noise: list[bytes]
) -> None:
    """Records of floats and ints of 0-10 bytes, some damaged (a byte changed with or
    without its checksum mended, a cut) and random bytes: where the compiled reader answers
    a row it is the Python reader's, bit for bit; where it answers None the Python reader
    answers None or a row holding an int of more than 8 bytes (left to it); and
    ``loads_numbers`` answers the same on both backends."""
    datas: list[Any] = [dumps(("p", r)) for r in rows] + noise
    for at, byte, how in hurts:
        if datas:
            j = at % len(datas)
            if datas[j]:
                datas[j] = _hurt(datas[j], at, byte, how)
    datas += [bytearray(b"x"), "text"]  # not bytes: None, the Python reader's too
    got = _core.loads_number_rows(HEAD, datas)
    want = _numbers_py_read(HEAD, datas)
    assert len(got) == len(datas)
    for g, w in zip(got, want, strict=True):
        if g is not None:
            assert _bits(g) == _bits(w)
        else:
            assert (
                w is None
                or any(type(x) is int and not -(2**63) <= x < 2**63 for x in w)
                or (
                    any(type(x) is int for x in w)  # an int written in more than 8 bytes
                )
            )
    both = [_bits(r) for r in loads_numbers("p", datas, backend="native")]
    assert both == [_bits(r) for r in loads_numbers("p", datas, backend="python")]


def test_the_reader_refuses_bad_arguments() -> None:
    with pytest.raises(TypeError):
        _core.loads_number_rows(HEAD, (dumps(("p", (1.0,))),))  # a tuple, not a list
    assert _core.loads_number_rows(HEAD, []) == []
    assert _core.loads_number_rows(b"", [b""]) == [None]
