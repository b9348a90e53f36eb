"""The codec's decoder: ``loads`` and the ``decoding`` context (public in :mod:`windowagg.codec`).

Every length and count is checked against the bytes that remain before anything is
allocated; every malformed input raises :class:`~windowagg.errors.CodecError` naming what is
wrong and the byte offset. The format is described in :mod:`windowagg.codec`.
"""

from __future__ import annotations

import datetime as _dt
import struct
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from decimal import Decimal, InvalidOperation
from functools import lru_cache
from operator import itemgetter
from typing import Any, NamedTuple

from windowagg._codec_format import (
    _BY_TAG,
    _BYTES,
    _CRC_LEN,
    _D,
    _DATE,
    _DATE_S,
    _DATETIME,
    _DATETIME_S,
    _DECIMAL,
    _DICT,
    _EXT,
    _FALSE,
    _FLOAT,
    _HEADER,
    _HLEN,
    _INT,
    _LIST,
    _NONE,
    _NOTHING,
    _OFFSET_S,
    _STR,
    _TIMEDELTA,
    _TIMEDELTA_S,
    _TRUE,
    _TUPLE,
    MAGIC,
    MAX_DEPTH,
    READ_VERSIONS,
    _from_bytes,
    _load_library,
    _rows_on_core,
    _unpack_d,
)
from windowagg.errors import CodecError
from windowagg.monoids.builtins import NOTHING

# --------------------------------------------------------------------------- decoding


def loads(data: bytes | bytearray | memoryview) -> Any:
    """Decode bytes written by :func:`dumps`. O(len(data)).

    Raises
    ------
    CodecError
        For anything but one complete, well-formed value of a version in
        ``READ_VERSIONS``: wrong magic, unknown version, a checksum that does not match
        (version 2), unknown tag or registered tag, truncated data, trailing bytes,
        invalid UTF-8, out-of-range dates, unhashable or duplicate dict keys, nesting
        deeper than ``MAX_DEPTH``, or a ``from_plain`` that rejects its payload. The
        message says what and at which byte offset. Nothing else is ever raised.

    Examples
    --------
    >>> from windowagg.codec import dumps, loads
    >>> loads(dumps([1, -0.0, "é"]))
    [1, -0.0, 'é']
    >>> loads(b"WAGC\\x01N")                  # version 1: no checksum
    >>> loads(b"WAGC\\x03N")
    Traceback (most recent call last):
    ...
    windowagg.errors.CodecError: unsupported codec version 3 at offset 4 (this windowagg reads versions 1, 2); upgrade windowagg
    >>> loads(b"WAGC\\x01s\\x03ab")
    Traceback (most recent call last):
    ...
    windowagg.errors.CodecError: truncated data: str needs 3 byte(s) at offset 7, only 2 left
    """
    if type(data) is not bytes:
        if isinstance(data, (bytes, bytearray, memoryview)):
            data = bytes(data)
        else:
            raise CodecError(f"loads needs bytes, got {type(data).__name__}")
    size = len(data)
    if size < _HLEN or data[:4] != MAGIC:
        if MAGIC.startswith(data[:4]) and size < _HLEN:
            raise CodecError(f"truncated data: header needs {_HLEN} bytes, got {size}")
        raise CodecError(
            f"not windowagg codec data: expected magic {MAGIC!r} at offset 0, got {data[:4]!r}"
        )
    version = data[4]
    if version not in READ_VERSIONS:
        raise CodecError(
            f"unsupported codec version {version} at offset 4 (this windowagg reads "
            f"versions {', '.join(map(str, READ_VERSIONS))}); upgrade windowagg"
        )
    if version >= 2:  # a CRC32 of everything before it closes the data
        if size < _HLEN + 1 + _CRC_LEN:
            raise CodecError(
                f"truncated data: version {version} needs at least {_HLEN + 1 + _CRC_LEN} "
                f"bytes, got {size}"
            )
        stored = int.from_bytes(data[-_CRC_LEN:], "big")
        data = data[:-_CRC_LEN]
        size -= _CRC_LEN
        actual = zlib.crc32(data)
        if actual != stored:
            raise CodecError(
                f"checksum mismatch: the data is corrupted (CRC32 stored 0x{stored:08x}, "
                f"computed 0x{actual:08x} over {size} bytes)"
            )
    try:
        obj, pos = _decode(data, _HLEN, 0)
    except CodecError:
        raise
    except RecursionError as e:
        raise CodecError(f"data nests too deeply (MAX_DEPTH={MAX_DEPTH})") from e
    except Exception as e:  # a guard: every failure mode should be caught above
        raise CodecError(f"malformed data ({e!r})") from e
    if pos != size:
        raise CodecError(f"trailing data: {size - pos} byte(s) after the value at offset {pos}")
    return obj


def loads_numbers(
    tag: str, datas: list[bytes], backend: str | None = None
) -> list[tuple[Any, ...] | None]:
    """The row of ``loads(data) == (tag, row)`` for every *data* written as
    :func:`~windowagg.codec.dumps_numbers` writes a row of floats and ints (the current
    version, one-byte counts and lengths, its checksum matching), read without the general
    decoder's dispatch; None for any other data (``loads`` answers it, or raises). A
    restored pane state reads tens of such records per key and micro-batch. On the compiled
    core (*backend*: ``"auto"``, ``"native"`` or ``"python"``; None: ``$WINDOWAGG_BACKEND``)
    one call reads every record whose ints have at most 8 bytes
    (``_core.loads_number_rows``), the others as here. O(total size).

    >>> from windowagg.codec import dumps, dumps_numbers
    >>> rows = [(1.5, -2.0, 3), (0.0, 2**80), ()]
    >>> loads_numbers("p", dumps_numbers("p", rows)) == rows
    True
    >>> good = dumps(("p", (1.0,)))
    >>> loads_numbers("p", [good[:-1] + bytes([good[-1] ^ 1]), dumps(("q", (1.0,))),
    ...                     dumps(("p", ("x",))), dumps(("p", [1.0])), good[:-5] + good[-4:]])
    [None, None, None, None, None]
    """
    raw = tag.encode("utf-8", "surrogatepass")
    if len(raw) >= 0x80:
        return [None] * len(datas)
    head = _HEADER + bytes((_TUPLE, 2, _STR, len(raw))) + raw
    return _rows_on_core(
        backend, "loads_numbers", "loads_number_rows", head, datas, lambda d: _numbers_py(head, d)
    )


def _numbers_py(head: bytes, datas: list[bytes]) -> list[tuple[Any, ...] | None]:
    """:func:`loads_numbers` of *datas* in Python (*head*: a record's bytes before its
    row). O(total size)."""
    h = len(head)
    crc, from_bytes, unpack = zlib.crc32, _from_bytes, _unpack_d
    out: list[tuple[Any, ...] | None] = []
    fast: _RowReader | None = None  # the last row's layout, read in one struct call
    for data in datas:
        row: tuple[Any, ...] | None = None
        end = len(data) - _CRC_LEN
        if (
            fast is not None
            and end == fast.end
            and type(data) is bytes
            and data.startswith(fast.prefix)
        ):
            got = fast.unpack(data, h + 2)  # its fields, then the stored checksum
            if fast.tags(got) == fast.want and crc(memoryview(data)[:end]) == got[-1]:
                out.append(fast.row(got))  # the same layout: the loop's items
                continue
        if (
            type(data) is bytes
            and end >= h + 2
            and data.startswith(head)
            and data[h] == _TUPLE
            and data[h + 1] < 0x80
            and crc(memoryview(data)[:end]) == from_bytes(data[end:], "big")
        ):
            p = h + 2
            items: list[Any] = []
            layout: list[int] = []  # per item: -1 a float, n an int of n bytes
            for _ in range(data[h + 1]):
                t = data[p] if p < end else -1
                if t == _FLOAT and p + 9 <= end:
                    items.append(unpack(data, p + 1)[0])
                    layout.append(-1)
                    p += 9
                elif t == _INT and p + 1 < end and data[p + 1] < 0x80:
                    q = p + 2 + data[p + 1]
                    if q > end:
                        break
                    items.append(from_bytes(data[p + 2 : q], "big", signed=True))
                    layout.append(q - p - 2)
                    p = q
                else:
                    break
            else:
                if p == end:
                    row = tuple(items)
                    if layout and 0 not in layout and max(layout) <= 8:
                        fast = _row_reader(head, tuple(layout))
        out.append(row)
    return out


class _RowReader(NamedTuple):
    """How :func:`loads_numbers` reads a record of one layout in one call."""

    prefix: bytes  # the record's bytes before its first item (header, tag, tuple, count)
    end: int  # where its checksum starts
    unpack: Any  # struct unpack_from: per item its tag (an int's length), its value; the CRC
    tags: Any  # the tags and lengths among unpack's fields, as a tuple
    want: tuple[int, ...]  # ... as the layout has them
    row: Any  # the items among unpack's fields, as a tuple


#: struct's big-endian signed integers, by size: an int of 1, 2, 4 or 8 bytes in one field
_SIGNED = {1: "b", 2: "h", 4: "i", 8: "q"}


@lru_cache(maxsize=64)
def _row_reader(head: bytes, layout: tuple[int, ...]) -> _RowReader:
    """The reader of the records ``(tag, row)`` whose row has *layout* (per item: -1 a
    float, ``n`` in 1..8 an int of ``n`` bytes; *head*: the bytes before the row's
    tuple), built once per layout in a process: one ``struct`` call reads every tag,
    length and value (the ints of 3, 5, 6 or 7 bytes as bytes, converted by
    ``from_bytes`` as the loop converts them). O(len(layout))."""
    fmt = [">"]
    tags: list[int] = []
    want: list[int] = []
    vals: list[int] = []
    odd: list[int] = []  # items read as bytes (an int of 3, 5, 6 or 7 bytes)
    at = 0  # the next field
    for n in layout:
        if n < 0:
            fmt.append("Bd")
            tags.append(at)
            want.append(_FLOAT)
            vals.append(at + 1)
            at += 2
            continue
        code = _SIGNED.get(n)
        if code is None:
            odd.append(len(vals))
        fmt.append("BB" + (code or f"{n}s"))
        tags += [at, at + 1]
        want += [_INT, n]
        vals.append(at + 2)
        at += 3
    s = struct.Struct("".join(fmt) + "I")  # the checksum: 4 bytes, big-endian
    get_tags = _getter(tags)
    get_vals = _getter(vals)
    if odd:
        from_bytes = _from_bytes

        def row(fields: tuple[Any, ...]) -> tuple[Any, ...]:
            items = list(get_vals(fields))
            for j in odd:
                items[j] = from_bytes(items[j], "big", signed=True)
            return tuple(items)

    else:
        row = get_vals
    prefix = head + bytes((_TUPLE, len(layout)))
    end = len(prefix) + s.size - _CRC_LEN
    return _RowReader(prefix, end, s.unpack_from, get_tags, tuple(want), row)


def _getter(at: list[int]) -> Any:
    """``fields -> tuple(fields[j] for j in at)`` in one C call where it can (*at* not empty)."""
    if len(at) > 1:
        return itemgetter(*at)
    j = at[0]
    return lambda fields: (fields[j],)


def loads_bytes(datas: list[bytes]) -> list[bytes | None]:
    """``loads(data)`` for every *data* written as :func:`~windowagg.codec.dumps_bytes`
    writes a bytes object (the current version, a length of one or two varint bytes, its
    checksum matching), read without the general decoder's dispatch; None for any other
    data (``loads`` answers it, or raises). A restored pane state reads tens of such
    pieces per key and micro-batch (a pane's values for exact quantiles). O(total size).

    >>> from windowagg.codec import dumps, dumps_bytes
    >>> items = [b"", b"ab", bytes(range(200))]
    >>> loads_bytes(dumps_bytes(items)) == items
    True
    >>> good = dumps(b"ab")
    >>> loads_bytes([good[:-1] + bytes([good[-1] ^ 1]), dumps("ab"), good[:-5] + good[-4:],
    ...              b"WAGC\x01b\x02ab", good + b"x"])
    [None, None, None, None, None]
    """
    head = _HEADER + bytes((_BYTES,))
    h = len(head)
    crc, from_bytes = zlib.crc32, _from_bytes
    out: list[bytes | None] = []
    for data in datas:
        got: bytes | None = None
        end = len(data) - _CRC_LEN
        if type(data) is bytes and end > h and data.startswith(head):
            n, p = data[h], h + 1
            if n >= 0x80 and p < end and 0 < data[p] < 0x80:  # two varint bytes, canonical
                n, p = (n & 0x7F) | data[p] << 7, p + 1
            if (
                (n < 0x80 or p == h + 2)
                and p + n == end
                and crc(memoryview(data)[:end]) == from_bytes(data[end:], "big")
            ):
                got = data[p:end]
        out.append(got)
    return out


def _truncated(what: str, need: int, pos: int, size: int) -> CodecError:
    return CodecError(
        f"truncated data: {what} needs {need} byte(s) at offset {pos}, only {size - pos} left"
    )


def _read_varint(data: bytes, pos: int, what: str) -> tuple[int, int]:
    size = len(data)
    result = 0
    shift = 0
    start = pos
    while True:
        if pos >= size:
            raise _truncated(f"{what} length", 1, pos, size)
        b = data[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            if b == 0 and pos - start > 1:
                raise CodecError(f"overlong varint ({what} length) at offset {start}")
            return result, pos
        shift += 7
        if shift >= 63:
            raise CodecError(f"varint ({what} length) longer than 9 bytes at offset {start}")


def _decode(data: bytes, pos: int, depth: int) -> tuple[Any, int]:
    size = len(data)
    if pos >= size:
        raise _truncated("a value", 1, pos, size)
    tag = data[pos]
    p = pos + 1
    if tag == _INT:
        if p < size and data[p] < 0x80:
            n = data[p]
            p += 1
        else:
            n, p = _read_varint(data, p, "int")
        end = p + n
        if end > size:
            raise _truncated("int", n, p, size)
        return int.from_bytes(data[p:end], "big", signed=True), end
    if tag == _FLOAT:
        if p + 8 > size:
            raise _truncated("float", 8, p, size)
        return _D.unpack_from(data, p)[0], p + 8
    if tag in (_TUPLE, _LIST):
        return _decode_seq(data, pos, depth, tag == _TUPLE)
    if tag == _STR:
        n, p = _read_varint(data, p, "str")
        end = p + n
        if end > size:
            raise _truncated("str", n, p, size)
        try:
            return data[p:end].decode("utf-8", "surrogatepass"), end
        except UnicodeDecodeError as e:
            raise CodecError(f"invalid UTF-8 in str at offset {p + e.start}") from None
    if tag == _NONE:
        return None, p
    if tag == _TRUE:
        return True, p
    if tag == _FALSE:
        return False, p
    if tag == _DICT:
        return _decode_dict(data, pos, depth)
    if tag == _BYTES:
        n, p = _read_varint(data, p, "bytes")
        end = p + n
        if end > size:
            raise _truncated("bytes", n, p, size)
        return data[p:end], end
    if tag == _NOTHING:
        return NOTHING, p
    if tag == _DATETIME:
        return _decode_datetime(data, p)
    if tag == _DATE:
        if p + _DATE_S.size > size:
            raise _truncated("date", _DATE_S.size, p, size)
        try:
            return _dt.date(*_DATE_S.unpack_from(data, p)), p + _DATE_S.size
        except ValueError as e:
            raise CodecError(f"invalid date at offset {p}: {e}") from None
    if tag == _TIMEDELTA:
        if p + _TIMEDELTA_S.size > size:
            raise _truncated("timedelta", _TIMEDELTA_S.size, p, size)
        days, secs, micros = _TIMEDELTA_S.unpack_from(data, p)
        if secs >= 86400 or micros >= 1_000_000:
            raise CodecError(f"invalid timedelta at offset {p}: fields not normalised")
        try:
            return _dt.timedelta(days, secs, micros), p + _TIMEDELTA_S.size
        except OverflowError as e:
            raise CodecError(f"invalid timedelta at offset {p}: {e}") from None
    if tag == _DECIMAL:
        n, p = _read_varint(data, p, "Decimal")
        end = p + n
        if end > size:
            raise _truncated("Decimal", n, p, size)
        try:
            text = data[p:end].decode("ascii")
            value = Decimal(text)
        except (UnicodeDecodeError, InvalidOperation, ValueError):
            raise CodecError(f"invalid Decimal literal at offset {p}") from None
        if str(value) != text:  # only the canonical str() form: one encoding per value
            raise CodecError(f"non-canonical Decimal literal {text!r} at offset {p}")
        return value, end
    if tag == _EXT:
        return _decode_ext(data, pos, depth)
    raise CodecError(f"unknown type tag 0x{tag:02x} at offset {pos}")


def _decode_seq(data: bytes, pos: int, depth: int, as_tuple: bool) -> tuple[Any, int]:
    size = len(data)
    p = pos + 1
    if p < size and data[p] < 0x80:  # one-byte count: the common case, no call
        count = data[p]
        p += 1
    else:
        count, p = _read_varint(data, p, "tuple" if as_tuple else "list")
    if count > size - p:  # every value takes at least one byte
        what = "tuple" if as_tuple else "list"
        raise _truncated(f"{what} of {count} values", count, p, size)
    if depth >= MAX_DEPTH:
        raise CodecError(f"data nests deeper than MAX_DEPTH={MAX_DEPTH} at offset {pos}")
    d = depth + 1
    items: list[Any] = []
    append = items.append  # cached: called once per item in the hot loop
    for _ in range(count):
        # Items are mostly ints, floats and small tuples: decode them inline (no call).
        # Tag bytes are literals here (0x66 float, 0x69 int, 0x74 tuple) to skip global lookups.
        if p < size:
            tag = data[p]
            if tag == 0x66:
                if p + 9 <= size:
                    append(_unpack_d(data, p + 1)[0])
                    p += 9
                    continue
            elif tag == 0x69:
                if p + 1 < size:
                    n = data[p + 1]
                    end = p + 2 + n
                    if n < 0x80 and end <= size:
                        append(_from_bytes(data[p + 2 : end], "big", signed=True))
                        p = end
                        continue
            elif tag == 0x74:  # rows of tuples: skip one dispatch level
                item, p = _decode_seq(data, p, d, True)
                append(item)
                continue
        item, p = _decode(data, p, d)
        append(item)
    return (tuple(items) if as_tuple else items), p


def _decode_dict(data: bytes, pos: int, depth: int) -> tuple[Any, int]:
    size = len(data)
    count, p = _read_varint(data, pos + 1, "dict")
    if 2 * count > size - p:
        raise _truncated(f"dict of {count} entries", 2 * count, p, size)
    if depth >= MAX_DEPTH:
        raise CodecError(f"data nests deeper than MAX_DEPTH={MAX_DEPTH} at offset {pos}")
    d = depth + 1
    result: dict[Any, Any] = {}
    tag_int, tag_bytes, from_bytes = _INT, _BYTES, _from_bytes  # locals: the hot loop's
    for _ in range(count):
        kpos = p
        # int keys of bytes values (a store's pieces by key): read inline where complete,
        # as _decode reads them; anything else (or a truncated one: its error) by _decode
        if (
            p + 1 < size
            and data[p] == tag_int
            and (n := data[p + 1]) < 0x80
            and (end := p + 2 + n) <= size
        ):
            key = from_bytes(data[p + 2 : end], "big", signed=True)
            p = end
            if key in result:  # an int: hashable
                raise CodecError(f"duplicate dict key {key!r} at offset {kpos}")
        else:
            key, p = _decode(data, p, d)
            try:
                dup = key in result
            except TypeError:
                raise CodecError(
                    f"unhashable dict key of type {type(key).__name__} at offset {kpos}"
                ) from None
            if dup:
                raise CodecError(f"duplicate dict key {key!r} at offset {kpos}")
        if (
            p + 1 < size
            and data[p] == tag_bytes
            and (n := data[p + 1]) < 0x80
            and (end := p + 2 + n) <= size
        ):
            result[key] = data[p + 2 : end]
            p = end
        else:
            result[key], p = _decode(data, p, d)
    return result, p


def _decode_datetime(data: bytes, p: int) -> tuple[Any, int]:
    size = len(data)
    start = p
    if p + _DATETIME_S.size > size:
        raise _truncated("datetime", _DATETIME_S.size, p, size)
    year, month, day, hour, minute, second, micro, flags = _DATETIME_S.unpack_from(data, p)
    p += _DATETIME_S.size
    if flags & ~7 or (flags & 4 and not flags & 2):
        raise CodecError(f"invalid datetime flags 0x{flags:02x} at offset {p - 1}")
    tz: _dt.tzinfo | None = None
    if flags & 2:
        if p + 8 > size:
            raise _truncated("datetime UTC offset", 8, p, size)
        (offset_us,) = _OFFSET_S.unpack_from(data, p)
        p += 8
        name: str | None = None
        if flags & 4:
            n, p = _read_varint(data, p, "tz name")
            end = p + n
            if end > size:
                raise _truncated("tz name", n, p, size)
            try:
                name = data[p:end].decode("utf-8", "surrogatepass")
            except UnicodeDecodeError:
                raise CodecError(f"invalid UTF-8 in tz name at offset {p}") from None
            p = end
        try:
            off = _dt.timedelta(microseconds=offset_us)
            tz = _dt.timezone(off) if name is None else _dt.timezone(off, name)
        except (ValueError, OverflowError) as e:
            raise CodecError(f"invalid UTC offset at offset {start}: {e}") from None
    try:
        value = _dt.datetime(
            year, month, day, hour, minute, second, micro, tzinfo=tz, fold=flags & 1
        )
    except (ValueError, OverflowError) as e:
        raise CodecError(f"invalid datetime at offset {start}: {e}") from None
    return value, p


def _decode_ext(data: bytes, pos: int, depth: int) -> tuple[Any, int]:
    size = len(data)
    n, p = _read_varint(data, pos + 1, "registered tag")
    end = p + n
    if end > size:
        raise _truncated("registered tag", n, p, size)
    try:
        tag = data[p:end].decode("utf-8")
    except UnicodeDecodeError:
        raise CodecError(f"invalid UTF-8 in registered tag at offset {p}") from None
    entry = _BY_TAG.get(tag)
    if entry is None and tag.startswith("windowagg.") and _load_library():
        entry = _BY_TAG.get(tag)
    if entry is None:
        raise CodecError(
            f"unknown registered tag {tag!r} at offset {pos}; register it with "
            "windowagg.codec.register before calling loads"
        )
    if depth >= MAX_DEPTH:
        raise CodecError(f"data nests deeper than MAX_DEPTH={MAX_DEPTH} at offset {pos}")
    plain, q = _decode(data, end, depth + 1)
    cls, from_plain = entry
    try:
        value = from_plain(plain)
    except Exception as e:
        raise CodecError(
            f"registered type {tag!r} rejected its payload at offset {end}: {e}"
        ) from e
    if type(value) is not cls:
        raise CodecError(
            f"from_plain of registered type {tag!r} returned {type(value).__qualname__}, "
            f"not {cls.__qualname__} (payload at offset {end})"
        )
    return value, q


@contextmanager
def decoding(who: str) -> Iterator[None]:
    """Turn any exception raised while rebuilding an object from decoded data into a CodecError.

    Decoders (``from_bytes``, ``from_plain``) wrap the step that builds their object from
    untrusted, decoded values: a corrupted field that slips past the format checks and
    makes a constructor raise ``ValueError``, ``OverflowError``, ``TimestampError``, ...
    surfaces as :class:`CodecError` (the original chained as ``__cause__``), so callers
    need to catch one type. A ``CodecError`` passes through unchanged.

    >>> from windowagg import codec
    >>> with codec.decoding("Demo.from_bytes"):
    ...     int("x")
    Traceback (most recent call last):
    ...
    windowagg.errors.CodecError: Demo.from_bytes: the data decodes to an invalid state (ValueError: invalid literal for int() with base 10: 'x'); it is corrupted or was not written by this type
    """
    try:
        yield
    except CodecError:
        raise
    except Exception as e:
        raise CodecError(
            f"{who}: the data decodes to an invalid state ({type(e).__name__}: {e}); "
            "it is corrupted or was not written by this type"
        ) from e
