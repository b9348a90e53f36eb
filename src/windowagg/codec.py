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
import importlib
import struct
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from decimal import Decimal, InvalidOperation
from typing import Any, Final

from windowagg.errors import CodecError
from windowagg.monoids.builtins import NOTHING

__all__ = [
    "CODEC_VERSION",
    "MAGIC",
    "MAX_DEPTH",
    "READ_VERSIONS",
    "decoding",
    "dumps",
    "loads",
    "register",
    "registered",
]

CODEC_VERSION: Final = 2
READ_VERSIONS: Final = (1, 2)
MAGIC: Final = b"WAGC"
MAX_DEPTH: Final = 256
_HEADER: Final = MAGIC + bytes([CODEC_VERSION])
_HLEN: Final = len(_HEADER)
_CRC_LEN: Final = 4

# Tag bytes.
_NONE: Final = 0x4E
_TRUE: Final = 0x54
_FALSE: Final = 0x46
_NOTHING: Final = 0x5F
_INT: Final = 0x69
_FLOAT: Final = 0x66
_STR: Final = 0x73
_BYTES: Final = 0x62
_TUPLE: Final = 0x74
_LIST: Final = 0x6C
_DICT: Final = 0x6D
_DATETIME: Final = 0x44
_DATE: Final = 0x64
_TIMEDELTA: Final = 0x72
_DECIMAL: Final = 0x63
_EXT: Final = 0x58

_TAG_NAMES: Final = {
    _NONE: "None",
    _TRUE: "True",
    _FALSE: "False",
    _NOTHING: "NOTHING",
    _INT: "int",
    _FLOAT: "float",
    _STR: "str",
    _BYTES: "bytes",
    _TUPLE: "tuple",
    _LIST: "list",
    _DICT: "dict",
    _DATETIME: "datetime",
    _DATE: "date",
    _TIMEDELTA: "timedelta",
    _DECIMAL: "Decimal",
    _EXT: "registered type",
}

_F: Final = struct.Struct(">cd")  # tag + float in one pack call
_D: Final = struct.Struct(">d")
_unpack_d: Final = _D.unpack_from
_from_bytes: Final = int.from_bytes
_DATETIME_S: Final = struct.Struct(">HBBBBBIB")
_DATE_S: Final = struct.Struct(">HBB")
_TIMEDELTA_S: Final = struct.Struct(">iII")
_OFFSET_S: Final = struct.Struct(">q")
_FLOAT_TAG: Final = b"f"
# "i" followed by a one-byte varint n, for every n < 128 (ints below 2**1015 in magnitude).
_INT_HEADS: Final = tuple(bytes((_INT, n)) for n in range(128))
_UTC_NAMES: Final = "UTC"

_ToPlain = Callable[[Any], Any]
_FromPlain = Callable[[Any], Any]
_BY_TYPE: dict[type, tuple[str, bytes, _ToPlain]] = {}
_BY_TAG: dict[str, tuple[type, _FromPlain]] = {}
_PLAIN_TYPES: Final = frozenset(
    {
        type(None),
        bool,
        int,
        float,
        str,
        bytes,
        tuple,
        list,
        dict,
        type(NOTHING),
        _dt.datetime,
        _dt.date,
        _dt.timedelta,
        Decimal,
    }
)


def register(
    tag: str,
    cls: type,
    to_plain: Callable[[Any], Any],
    from_plain: Callable[[Any], Any],
    *,
    replace: bool = False,
) -> None:
    """Teach the codec a user type: *to_plain* maps an instance to a plain value, *from_plain* back.

    Only instances whose type is exactly *cls* are encoded this way (not subclasses). The
    *tag* is written into the data, so it must stay the same for as long as data written
    with it exists; use a dotted name you own (``"myapp.Sketch"``); ``"windowagg."`` tags
    are the library's. Registering the same *tag* for the same *cls* again replaces its
    functions (as a module reload does); a *tag* already used for another class, or a
    *cls* already registered under another tag, raises unless ``replace=True``. O(1).

    Parameters
    ----------
    tag : str
        Non-empty, at most 255 UTF-8 bytes.
    cls : type
        The exact type to encode; plain types cannot be overridden.
    to_plain, from_plain : callable
        ``from_plain(to_plain(x))`` must equal ``x``. ``from_plain`` receives decoded,
        untrusted plain values: it should check them and raise on nonsense (the codec turns
        any exception into :class:`CodecError`).
    replace : bool
        Allow replacing an existing registration of *tag* or *cls*.

    Examples
    --------
    >>> from windowagg import codec
    >>> class Point:
    ...     def __init__(self, x, y): self.x, self.y = x, y
    ...     def __eq__(self, o): return (self.x, self.y) == (o.x, o.y)
    >>> codec.register("doc.Point", Point, lambda p: (p.x, p.y), lambda t: Point(*t))
    >>> codec.loads(codec.dumps([Point(1, 2)])) == [Point(1, 2)]
    True
    """
    if not isinstance(tag, str) or not tag:
        raise CodecError(f"register: tag must be a non-empty str, got {tag!r}")
    raw = tag.encode("utf-8")
    if len(raw) > 255:
        raise CodecError(f"register: tag {tag[:40]!r}... is longer than 255 UTF-8 bytes")
    if not isinstance(cls, type):
        raise CodecError(f"register: cls must be a type, got {cls!r}")
    if cls in _PLAIN_TYPES:
        raise CodecError(f"register: {cls.__name__} is a plain type and is encoded natively")
    if not callable(to_plain) or not callable(from_plain):
        raise CodecError("register: to_plain and from_plain must be callables")
    if not replace:
        old = _BY_TAG.get(tag)
        if old is not None and old[0] is not cls:
            raise CodecError(
                f"register: tag {tag!r} is already registered for {old[0].__qualname__}; "
                "pass replace=True to replace it"
            )
        old_t = _BY_TYPE.get(cls)
        if old_t is not None and old_t[0] != tag:
            raise CodecError(
                f"register: {cls.__qualname__} is already registered as "
                f"{old_t[0]!r}; pass replace=True to replace it"
            )
    old_type = _BY_TAG.get(tag)
    if old_type is not None and old_type[0] is not cls:
        del _BY_TYPE[old_type[0]]
    old_tag = _BY_TYPE.get(cls)
    if old_tag is not None:
        _BY_TAG.pop(old_tag[0], None)
    header = bytearray((_EXT,))
    _put_varint(header, len(raw))
    header += raw
    _BY_TYPE[cls] = (tag, bytes(header), to_plain)
    _BY_TAG[tag] = (cls, from_plain)


# The library's own registered types: class name -> module; the tag is "windowagg." + the
# class name, the functions the class's ``_to_codec`` / ``_from_codec``. They are
# registered on first need (an encode or decode that misses a ``windowagg.`` type or tag,
# or :func:`registered`), so the registry is complete whatever was imported before and
# importing the codec imports no sketch module.
_LIBRARY: Final = {
    "BloomSet": "windowagg.monoids.bloom",
    "QDigest": "windowagg.sketches.qdigest",
    "ExpDecayQDigest": "windowagg.sketches.exp_qdigest",
    "ExpDecaySpaceSaving": "windowagg.sketches.space_saving",
    "SlidingWindowCount": "windowagg.sketches.sliding_window",
    "SlidingWindowQDigest": "windowagg.sketches.sliding_window",
}
_library_loaded = False


def _load_library() -> bool:
    """Register the library's own types once; True if this call did it. O(1) after the first."""
    global _library_loaded
    if _library_loaded:
        return False
    for name, module in _LIBRARY.items():
        cls = getattr(importlib.import_module(module), name)
        tag = f"windowagg.{name}"
        if tag not in _BY_TAG and cls not in _BY_TYPE:  # a user's own choice wins
            register(tag, cls, cls._to_codec, cls._from_codec)
    _library_loaded = True
    return True


def registered() -> dict[str, type]:
    """The registered tags and their types (a copy). O(number of registrations).

    >>> from windowagg import codec
    >>> codec.registered()["windowagg.BloomSet"]
    <class 'windowagg.monoids.bloom.BloomSet'>
    >>> codec.registered()["windowagg.QDigest"]
    <class 'windowagg.sketches.qdigest.QDigest'>
    """
    _load_library()
    return {tag: cls for tag, (cls, _) in _BY_TAG.items()}


# --------------------------------------------------------------------------- encoding


def _put_varint(out: bytearray, n: int) -> None:
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)


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
        for k, v in mapping.items():
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
    for _ in range(count):
        kpos = p
        key, p = _decode(data, p, d)
        try:
            dup = key in result
        except TypeError:
            raise CodecError(
                f"unhashable dict key of type {type(key).__name__} at offset {kpos}"
            ) from None
        if dup:
            raise CodecError(f"duplicate dict key {key!r} at offset {kpos}")
        value, p = _decode(data, p, d)
        result[key] = value
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
