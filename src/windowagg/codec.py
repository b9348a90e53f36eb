"""The versioned, checksummed binary codec for everything windowagg writes to a store or to Spark.

``dumps(obj) -> bytes`` and ``loads(data) -> obj`` round-trip *plain values* exactly, plus
the types registered with :func:`register`. There is no pickle and no ``eval``: decoding
only ever builds the plain types listed below or calls a ``from_plain`` function that the
program itself registered, so bytes from an untrusted store cannot run code or build
arbitrary classes. Every malformed input raises :class:`~windowagg.errors.CodecError`
naming what is wrong and the byte offset; nothing else is ever raised.

Fact card
---------
==============  =============================================================================
format          magic ``b"WAGC"``, one version byte (``CODEC_VERSION`` = 2), one value, then
                a CRC32 of all bytes before it (big-endian u32); version 1 (no CRC) still reads
values          one tag byte per value, then a fixed-size body or a varint length/count
plain types     None, bool, int (any size), float (bit-exact: nan, ±inf, -0.0), str, bytes,
                tuple, list, dict (any plain keys, insertion order kept), ``NOTHING``,
                datetime (naive or fixed UTC offset), date, timedelta, Decimal
user types      ``register(tag, cls, to_plain, from_plain)``; exact type match, no subclasses;
                the library's own types (``windowagg.BloomSet`` and the sketches) are
                registered on first need, whatever was imported before
integrity       the CRC32 detects every change of up to 4 consecutive bytes and all but
                about 2**-32 of other corruptions, before any value is built
limits          every length and count is checked against the bytes that remain before
                anything is allocated; a value of n bytes decodes in O(n) time and memory
nesting         at most ``MAX_DEPTH`` = 256 nested containers / registered values
time            O(size of the encoding) for both ``dumps`` and ``loads``
spec            ``docs/formats.md`` (complete enough to re-implement the format)
==============  =============================================================================

Byte format (version 2)
-----------------------
``data = b"WAGC" + bytes([2]) + value + crc32(b"WAGC" + bytes([2]) + value)`` with the CRC
(``zlib.crc32``, the IEEE polynomial) as a big-endian u32; nothing else may follow the
value. Version 1 is the same without the CRC. A value is one tag byte and a body: ``N``
None, ``T``/``F`` bools, ``_`` NOTHING, ``i`` int (varint n + n bytes big-endian two's
complement), ``f`` float (8 bytes big-endian), ``s`` str / ``b`` bytes / ``c`` Decimal
(varint n + n bytes), ``t`` tuple / ``l`` list (varint count + values), ``m`` dict (varint
count + key/value pairs), ``D`` datetime, ``d`` date, ``r`` timedelta, ``X`` registered
type (varint n + UTF-8 tag + one value). Varints are unsigned LEB128 of at most 9 bytes.
The complete table, with every field's size and rule, is in ``docs/formats.md``.

Examples
--------
>>> from windowagg import codec
>>> data = codec.dumps((1, 2.5, "a"))
>>> data.hex(" ")
'57 41 47 43 02 74 03 69 01 01 66 40 04 00 00 00 00 00 00 73 01 61 dd 30 de 04'
>>> codec.loads(data)
(1, 2.5, 'a')
>>> codec.loads(data[:-5] + b"b" + data[-4:])
Traceback (most recent call last):
...
windowagg.errors.CodecError: checksum mismatch: the data is corrupted (CRC32 stored 0xdd30de04, computed 0x44398fbe over 22 bytes)
"""

from __future__ import annotations

import datetime as _dt
import struct
import zlib
from decimal import Decimal
from functools import lru_cache
from typing import Any

from windowagg._codec_decode import decoding, loads, loads_bytes, loads_numbers
from windowagg._codec_format import (
    _BY_TYPE,
    _BYTES,
    _CRC_LEN,
    _DATE,
    _DATE_S,
    _DATETIME,
    _DATETIME_S,
    _DECIMAL,
    _DICT,
    _F,
    _FALSE,
    _FLOAT,
    _FLOAT_TAG,
    _HEADER,
    _INT,
    _INT_HEADS,
    _LIST,
    _NONE,
    _NOTHING,
    _OFFSET_S,
    _STR,
    _TIMEDELTA,
    _TIMEDELTA_S,
    _TRUE,
    _TUPLE,
    CODEC_VERSION,
    MAGIC,
    MAX_DEPTH,
    READ_VERSIONS,
    _load_library,
    _put_varint,
    _rows_on_core,
    register,
    registered,
)
from windowagg.errors import CodecError
from windowagg.monoids.builtins import NOTHING

__all__ = [
    "CODEC_VERSION",
    "MAGIC",
    "MAX_DEPTH",
    "READ_VERSIONS",
    "decoding",
    "dumps",
    "dumps_bytes",
    "dumps_numbers",
    "encoded",
    "loads",
    "loads_bytes",
    "loads_numbers",
    "register",
    "registered",
]


# --------------------------------------------------------------------------- encoding


#: A bytes object's tag and one-byte length, by length (under 128 bytes)
_BYTES_HEADS: tuple[bytes, ...] = tuple(bytes((_BYTES, n)) for n in range(0x80))


def _dumps_raw(obj: object) -> bytes:
    out = bytearray(_HEADER)
    _encode(obj, out, 0)
    out += zlib.crc32(out).to_bytes(_CRC_LEN, "big")
    return bytes(out)


def _encode(obj: object, out: bytearray, depth: int) -> None:
    t = type(obj)
    if t is int:
        x: int = obj  # type: ignore[assignment]
        n = (x.bit_length() + 8) >> 3
        if n < 128:
            out += _INT_HEADS[n]
        else:
            out.append(_INT)
            _put_varint(out, n)
        out += x.to_bytes(n, "big", signed=True)
    elif t is float:
        out += _F.pack(_FLOAT_TAG, obj)
    elif t is tuple or t is list:
        seq: tuple[Any, ...] | list[Any] = obj  # type: ignore[assignment]
        out.append(_TUPLE if t is tuple else _LIST)
        count = len(seq)
        if count < 0x80:
            out.append(count)
        else:
            _put_varint(out, count)
        if depth >= MAX_DEPTH:
            _too_deep(depth)
        d = depth + 1
        # The items of tuples/lists are mostly ints and floats: inline them (no call).
        pack = _F.pack
        heads = _INT_HEADS
        for item in seq:
            ti = type(item)
            if ti is float:
                out += pack(_FLOAT_TAG, item)
            elif ti is int:
                n = (item.bit_length() + 8) >> 3
                if n < 128:
                    out += heads[n]
                    out += item.to_bytes(n, "big", signed=True)
                else:
                    _encode(item, out, d)
            else:
                try:
                    _encode(item, out, d)
                except _PathError as e:
                    e.path.append(f"[{_index_of(seq, item)}]")
                    raise
    elif t is str:
        raw = obj.encode("utf-8", "surrogatepass")  # type: ignore[attr-defined]
        out.append(_STR)
        _put_varint(out, len(raw))
        out += raw
    elif obj is None:
        out.append(_NONE)
    elif obj is True:
        out.append(_TRUE)
    elif obj is False:
        out.append(_FALSE)
    elif t is dict:
        mapping: dict[Any, Any] = obj  # type: ignore[assignment]
        out.append(_DICT)
        _put_varint(out, len(mapping))
        if depth >= MAX_DEPTH:
            _too_deep(depth)
        d = depth + 1
        heads, short = _INT_HEADS, _BYTES_HEADS
        for k, v in mapping.items():
            # int keys of bytes (a store's pieces by key, held inline): inlined, no call
            if type(k) is int and type(v) is bytes:
                n = (k.bit_length() + 8) >> 3
                if n < 128:
                    out += heads[n]
                    out += k.to_bytes(n, "big", signed=True)
                    if len(v) < 0x80:  # the tag and a one-byte length in one step
                        out += short[len(v)]
                    else:
                        out.append(_BYTES)
                        _put_varint(out, len(v))
                    out += v
                    continue
            try:
                _encode(k, out, d)
                _encode(v, out, d)
            except _PathError as e:
                e.path.append(f"[{k!r}]")
                raise
    elif t is bytes:
        out.append(_BYTES)
        _put_varint(out, len(obj))  # type: ignore[arg-type]
        out += obj  # type: ignore[arg-type]
    elif obj is NOTHING:
        out.append(_NOTHING)
    elif t is _dt.datetime:
        _encode_datetime(obj, out)  # type: ignore[arg-type]
    elif t is _dt.date:
        out.append(_DATE)
        out += _DATE_S.pack(obj.year, obj.month, obj.day)  # type: ignore[attr-defined]
    elif t is _dt.timedelta:
        out.append(_TIMEDELTA)
        out += _TIMEDELTA_S.pack(obj.days, obj.seconds, obj.microseconds)  # type: ignore[attr-defined]
    elif t is Decimal:
        raw = str(obj).encode("ascii")
        out.append(_DECIMAL)
        _put_varint(out, len(raw))
        out += raw
    elif t is Encoded:
        out += obj.body  # type: ignore[attr-defined]
    else:
        entry = _BY_TYPE.get(t)
        if entry is None and t.__module__.startswith("windowagg.") and _load_library():
            entry = _BY_TYPE.get(t)
        if entry is None:
            raise _PathError(
                f"cannot encode a value of type {t.__qualname__}",
                f"; register it with windowagg.codec.register(tag, {t.__qualname__}, "
                "to_plain, from_plain)",
            )
        _, header, to_plain = entry
        if depth >= MAX_DEPTH:
            _too_deep(depth)
        try:
            plain = to_plain(obj)
        except Exception as exc:
            raise _PathError(
                f"to_plain of registered type {t.__qualname__} failed ({exc!r})", ""
            ) from exc
        out += header
        _encode(plain, out, depth + 1)


def _encode_datetime(v: _dt.datetime, out: bytearray) -> None:
    tz = v.tzinfo
    flags = 1 if v.fold else 0
    offset_us = 0
    name: str | None = None
    if tz is not None:
        if type(tz) is not _dt.timezone:
            raise _PathError(
                f"cannot encode a datetime with tzinfo {tz!r}: only fixed UTC offsets "
                "(datetime.timezone) are supported",
                "; convert it with dt.astimezone(datetime.timezone(dt.utcoffset()))",
            )
        off = tz.utcoffset(None)
        offset_us = (off.days * 86400 + off.seconds) * 1_000_000 + off.microseconds
        flags |= 2
        tzname = tz.tzname(None)
        if tzname != _dt.timezone(off).tzname(None):
            name = tzname
            flags |= 4
    out.append(_DATETIME)
    out += _DATETIME_S.pack(
        v.year, v.month, v.day, v.hour, v.minute, v.second, v.microsecond, flags
    )
    if tz is not None:
        out += _OFFSET_S.pack(offset_us)
    if name is not None:
        raw = name.encode("utf-8", "surrogatepass")
        _put_varint(out, len(raw))
        out += raw


def _index_of(seq: tuple[Any, ...] | list[Any], item: object) -> int:
    for i, x in enumerate(seq):
        if x is item:
            return i
    return -1


class _PathError(Exception):
    """Internal: an encoding error that collects the path to the bad value on its way up."""

    def __init__(self, what: str, hint: str) -> None:
        super().__init__(what)
        self.what = what
        self.hint = hint
        self.path: list[str] = []


def _too_deep(depth: int) -> None:
    raise _PathError(f"value nests deeper than MAX_DEPTH={MAX_DEPTH}", "")


def _dumps_checked(obj: object) -> bytes:
    try:
        return _dumps_raw(obj)
    except _PathError as e:
        path = "$" + "".join(reversed(e.path))
        raise CodecError(f"{e.what} at path {path}{e.hint}") from e.__cause__
    except RecursionError as e:
        raise CodecError(f"value nests too deeply to encode (MAX_DEPTH={MAX_DEPTH})") from e


def dumps(obj: object) -> bytes:
    """Encode *obj* (a plain value or a registered type) as versioned bytes. O(size).

    Raises
    ------
    CodecError
        If *obj* holds a value of an unsupported type (the message names the type and
        the path to it), nests deeper than ``MAX_DEPTH``, or a ``to_plain`` fails.

    Examples
    --------
    >>> from windowagg.codec import dumps, loads
    >>> loads(dumps({"n": 2**70, "x": float("-inf"), "k": (None, True, b"\\x00")}))
    {'n': 1180591620717411303424, 'x': -inf, 'k': (None, True, b'\\x00')}
    >>> dumps([1, {"a": {2, 3}}])
    Traceback (most recent call last):
    ...
    windowagg.errors.CodecError: cannot encode a value of type set at path $[1]['a']; register it with windowagg.codec.register(tag, set, to_plain, from_plain)
    """
    return _dumps_checked(obj)


class Encoded:
    """A value's encoding, made once by :func:`encoded`: :func:`dumps` writes these bytes
    where it meets the object, exactly as it would have encoded the value."""

    __slots__ = ("body",)

    def __init__(self, body: bytes) -> None:
        self.body = body

    def __repr__(self) -> str:
        return f"Encoded({len(self.body)} bytes)"


def encoded(obj: object) -> Encoded:
    """*obj*'s encoding (no header, no checksum), to splice into later :func:`dumps` calls
    byte for byte: a part of a record written many times that never changes (a stream's
    configuration in its metadata record) is encoded once. O(size); raises as :func:`dumps`.

    >>> config = (("size", 60), ("slide", 1))
    >>> dumps((7, encoded(config), None)) == dumps((7, config, None))
    True
    """
    out = bytearray()
    try:
        _encode(obj, out, 1)
    except _PathError as e:
        path = "$" + "".join(reversed(e.path))
        raise CodecError(f"{e.what} at path {path}{e.hint}") from e.__cause__
    return Encoded(bytes(out))


def dumps_numbers(tag: str, rows: list[Any], backend: str | None = None) -> list[bytes]:
    """``dumps((tag, row))`` for every row, byte for byte, in fewer steps where a row is a
    short tuple of floats and ints (a pane's partials: the streaming layouts write many
    per micro-batch); any other row goes through :func:`dumps`. On the compiled core
    (*backend*: ``"auto"``, ``"native"`` or ``"python"``; None: ``$WINDOWAGG_BACKEND``)
    one call writes every row of floats and int64 ints (``_core.dumps_number_rows``), the
    others as here. O(total size).

    >>> rows = [(1.5, -2.0, 3), (0.0, 2**80), ("x",), [1.0]]
    >>> dumps_numbers("p", rows) == [dumps(("p", r)) for r in rows]
    True
    >>> dumps_numbers("p", rows, backend="python") == dumps_numbers("p", rows)
    True
    """
    raw = tag.encode("utf-8", "surrogatepass")
    head = bytearray(_HEADER)
    head += bytes((_TUPLE, 2, _STR))
    _put_varint(head, len(raw))
    head += raw
    h = bytes(head)
    return _rows_on_core(
        backend, "dumps_numbers", "dumps_number_rows", h, rows, lambda r: _numbers_py(tag, h, r)
    )


def _numbers_py(tag: str, head: bytes, rows: list[Any]) -> list[bytes]:
    """:func:`dumps_numbers` of *rows* in Python (*head*: the record's bytes before the
    row, *tag* encoded). O(total size)."""
    start = zlib.crc32(head)
    crc, pack, heads = zlib.crc32, _F.pack, _INT_HEADS
    out: list[bytes] = []
    fast: Any = None  # the first row's own encoder (:func:`_row_encoder`), if it has one
    for row in rows:
        if fast is None and type(row) is tuple and 0 < len(row) < 0x80:
            kinds = tuple(map(type, row))
            if set(kinds) <= {float, int}:
                fast = _row_encoder(tuple(k is float for k in kinds), head)
        if fast is not None:
            got = fast(row)
            if got is not None:
                out.append(got)
                continue
        if type(row) is tuple and len(row) < 0x80:
            b = bytearray((_TUPLE, len(row)))
            for x in row:
                tx = type(x)
                if tx is float:
                    b += pack(_FLOAT_TAG, x)
                elif tx is int:
                    n = (x.bit_length() + 8) >> 3
                    if n >= 128:
                        break
                    b += heads[n]
                    b += x.to_bytes(n, "big", signed=True)
                else:
                    break
            else:
                out.append(head + b + crc(b, start).to_bytes(_CRC_LEN, "big"))
                continue
        out.append(dumps((tag, row)))
    return out


@lru_cache(maxsize=64)
def _row_encoder(floats: tuple[bool, ...], head: bytes) -> Any:
    """:func:`dumps_numbers`'s record of a row whose items are floats (True) and ints
    (False) in the order *floats* says, as one function (*head*: the record's bytes
    before the row): each run of floats by one ``struct`` call, each int by ``to_bytes``;
    it answers None for any other row (another length or types, an int of 128 bytes or
    more), which the general loop writes. Built once per (kinds, head) in a process, from
    the fixed templates here only: no input reaches the code. Byte for byte the loop's
    bytes (one Python call per row instead of a step per item). O(len(floats))."""
    k = len(floats)
    names = [f"x{j}" for j in range(k)]
    checks = " or ".join(
        f"type({x}) is not {'float' if f else 'int'}" for x, f in zip(names, floats, strict=True)
    )
    env: dict[str, Any] = {"crc": zlib.crc32, "heads": _INT_HEADS, "start": zlib.crc32(head)}
    env["head"] = head
    lines = [
        "def enc(row):",
        f"    if type(row) is not tuple or len(row) != {k}:",
        "        return None",
        f"    {', '.join(names)}, = row",
        f"    if {checks}:",
        "        return None",
    ]
    parts = [repr(bytes((_TUPLE, k)))]
    j = 0
    while j < k:
        if floats[j]:  # a run of floats: one pack of (tag, value) pairs
            run = j
            while j < k and floats[j]:
                j += 1
            env[f"s{run}"] = struct.Struct(">" + "Bd" * (j - run))
            items = ", ".join(f"{_FLOAT}, {x}" for x in names[run:j])
            parts.append(f"s{run}.pack({items})")
            continue
        x = names[j]
        lines += [
            f"    n{j} = ({x}.bit_length() + 8) >> 3",
            f"    if n{j} >= 128:",
            "        return None",
        ]
        parts.append(f"heads[n{j}] + {x}.to_bytes(n{j}, 'big', signed=True)")
        j += 1
    lines += [
        f"    b = {' + '.join(parts)}",
        f"    return head + b + crc(b, start).to_bytes({_CRC_LEN}, 'big')",
    ]
    exec("\n".join(lines), env)  # the fixed templates above: no input reaches it
    return env["enc"]


#: :func:`dumps_bytes`'s bytes before a bytes object of each length below 128 (its
#: varint length is one byte).
_SHORT_BYTES: tuple[bytes, ...] = tuple(_HEADER + bytes((_BYTES, n)) for n in range(0x80))


def dumps_bytes(items: list[bytes]) -> list[bytes]:
    """``dumps(b)`` for every bytes object *b*, byte for byte, without the per-value
    dispatch (a pane layout writes a buffer of values per pane, many per micro-batch).
    O(total size).

    >>> items = [b"", b"ab", bytes(300)]
    >>> dumps_bytes(items) == [dumps(b) for b in items]
    True
    """
    crc, size = zlib.crc32, _CRC_LEN
    short = _SHORT_BYTES  # the prefix of a bytes object shorter than 128 bytes, by length
    out: list[bytes] = []
    for b in items:
        if type(b) is not bytes:
            out.append(dumps(b))
            continue
        if len(b) < 0x80:  # a one-byte length: the prefix made once
            d = short[len(b)] + b
            out.append(d + crc(d).to_bytes(size, "big"))
            continue
        data = bytearray(_HEADER)
        data.append(_BYTES)
        _put_varint(data, len(b))
        data += b
        data += crc(data).to_bytes(size, "big")
        out.append(bytes(data))
    return out
