"""The field layout shared by every sketch's ``to_bytes``/``from_bytes`` (both byte formats).

Since layout version 2 a sketch's bytes are :mod:`windowagg.codec` bytes (``WAGC``,
big-endian, CRC32; ``docs/formats.md``) holding the sketch as a registered type, e.g.
``windowagg.QDigest``, whose plain form is the tuple ``(2, field, field, ...)`` written by
:class:`Writer`. The fields are codec values: ``u8``/``u64``/``i64`` ints, ``f64`` floats,
``text`` str, ``blob`` bytes, and the arrays ``f64s``/``u64s`` as bytes of big-endian
binary64 / uint64 values, ``u8s`` as bytes, ``node_ids`` as two bytes values (depths, then
big-endian uint64 offsets). ``ValueDivision`` cannot be rebuilt without its decay function,
so it is not a registered type: its bytes hold ``("windowagg.ValueDivision", 2, ...)``.
The sliding-window summaries write layout 3 (:data:`SLIDING_VERSION`): layout 2's fields in
a canonical order.

Layout version 1, written before the codec carried sketches, is still read::

    magic    4 bytes   b"WASK"
    version  u8        1
    kind     u8        which sketch (KIND_* below)
    body     ...       the same fields, little-endian, lengths as u64 counts

Every reader (:class:`PlainReader` for versions 2 and 3, :class:`LegacyReader` for version 1)
checks each field's type and range and every count against the data actually present
before allocating, and raises :class:`~windowagg.errors.CodecError`; :func:`loads` and
:func:`from_plain` turn any other failure of a sketch's rebuild into one too.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Callable, Sequence
from typing import Any, Final, TypeVar

from windowagg.errors import CodecError

__all__ = [
    "FORMAT_VERSION",
    "KIND_EXP_QDIGEST",
    "KIND_EXP_SPACE_SAVING",
    "KIND_QDIGEST",
    "KIND_SW_COUNT",
    "KIND_SW_QDIGEST",
    "KIND_VALUE_DIVISION",
    "MAGIC",
    "SLIDING_LAYOUTS",
    "SLIDING_VERSION",
    "LegacyReader",
    "PlainReader",
    "Reader",
    "Writer",
    "dumps",
    "from_plain",
    "loads",
]

MAGIC: Final = b"WASK"
LEGACY_VERSION: Final = 1
FORMAT_VERSION: Final = 2
# SlidingWindowCount / SlidingWindowQDigest write layout 3: the fields of layout 2 in one
# canonical order (buffer sorted by (t, key, weight), every node list by ascending heap id),
# so a state's bytes do not depend on the order its dicts and heap were built in and both
# backends write the same bytes; layouts 1 and 2 (any order) are still read.
SLIDING_VERSION: Final = 3
SLIDING_LAYOUTS: Final = (FORMAT_VERSION, SLIDING_VERSION)
KIND_QDIGEST: Final = 1
KIND_EXP_QDIGEST: Final = 2
KIND_EXP_SPACE_SAVING: Final = 3
KIND_SW_COUNT: Final = 4
KIND_SW_QDIGEST: Final = 5
KIND_VALUE_DIVISION: Final = 6

_KIND_NAMES: Final = {
    KIND_QDIGEST: "QDigest",
    KIND_EXP_QDIGEST: "ExpDecayQDigest",
    KIND_EXP_SPACE_SAVING: "ExpDecaySpaceSaving",
    KIND_SW_COUNT: "SlidingWindowCount",
    KIND_SW_QDIGEST: "SlidingWindowQDigest",
    KIND_VALUE_DIVISION: "ValueDivision",
}
_U64_MAX: Final = (1 << 64) - 1
_I64_MIN: Final = -(1 << 63)
_I64_MAX: Final = (1 << 63) - 1

T = TypeVar("T")


class Writer:
    """Collects typed fields as codec-plain values (O(1) amortized per field, O(n) per array)."""

    __slots__ = ("_items",)

    def __init__(self, version: int = FORMAT_VERSION) -> None:
        self._items: list[Any] = [version]

    def u8(self, v: int) -> None:
        self._items.append(int(v))

    def u64(self, v: int) -> None:
        self._items.append(int(v))

    def i64(self, v: int) -> None:
        self._items.append(int(v))

    def f64(self, v: float) -> None:
        self._items.append(float(v))

    def blob(self, b: bytes) -> None:
        self._items.append(bytes(b))

    def text(self, s: str) -> None:
        self._items.append(s)

    def f64s(self, vs: Sequence[float]) -> None:
        self._items.append(struct.pack(f">{len(vs)}d", *vs))

    def u64s(self, vs: Sequence[int]) -> None:
        self._items.append(struct.pack(f">{len(vs)}Q", *vs))

    def u8s(self, vs: Sequence[int]) -> None:
        self._items.append(bytes(vs))

    def node_ids(self, ids: Sequence[int]) -> None:
        """Heap ids of a dyadic tree of up to 64 levels: depths, then offsets in the level."""
        depths = [i.bit_length() - 1 for i in ids]
        self._items.append(bytes(depths))
        self._items.append(
            struct.pack(f">{len(ids)}Q", *[i - (1 << d) for i, d in zip(ids, depths, strict=True)])
        )

    def plain(self) -> tuple[Any, ...]:
        """The fields as one tuple, layout version first. O(number of fields)."""
        return tuple(self._items)


class Reader:
    """The checks shared by both readers; subclasses supply the raw field access.

    ``layout`` is the layout version being read (1 for ``WASK`` bytes).
    """

    __slots__ = ("_what",)

    def __init__(self, what: str) -> None:
        self._what = what

    @property
    def layout(self) -> int:
        """The layout version of the fields being read. O(1)."""
        return LEGACY_VERSION

    # -- raw access (per format) ---------------------------------------------------------
    def _int(self, lo: int, hi: int, what: str) -> int:
        raise NotImplementedError

    def _float(self) -> float:
        raise NotImplementedError

    def blob(self) -> bytes:
        raise NotImplementedError

    def _array(self, item_size: int) -> bytes:
        """The raw bytes of an array of fixed-size big-endian items (count checked)."""
        raise NotImplementedError

    def _array_order(self) -> str:
        return ">"

    def done(self) -> None:
        raise NotImplementedError

    # -- typed fields ----------------------------------------------------------------------
    def u8(self) -> int:
        return self._int(0, 255, "u8")

    def u64(self) -> int:
        return self._int(0, _U64_MAX, "u64")

    def universe(self) -> int:
        """A u64 field that holds a universe size, which may be 2**64 itself (a universe
        of every 64-bit key: the codec's ints hold it; a layout-1 field never did). O(1)."""
        return self._int(0, 1 << 64, "u64")

    def i64(self) -> int:
        return self._int(_I64_MIN, _I64_MAX, "i64")

    def f64(self, *, finite: bool = True) -> float:
        v = self._float()
        if finite and not math.isfinite(v):
            raise self.fail(f"non-finite number {v!r}")
        return v

    def text(self) -> str:
        try:
            return self.blob().decode("utf-8")
        except UnicodeDecodeError as e:
            raise self.fail("invalid UTF-8 text") from e

    def f64s(self, *, finite: bool = True) -> list[float]:
        raw = self._array(8)
        vs = list(struct.unpack(f"{self._array_order()}{len(raw) // 8}d", raw))
        if finite and not all(math.isfinite(v) for v in vs):
            raise self.fail("non-finite number in an array")
        return vs

    def u64s(self) -> list[int]:
        raw = self._array(8)
        return list(struct.unpack(f"{self._array_order()}{len(raw) // 8}Q", raw))

    def u8s(self) -> list[int]:
        return list(self._array(1))

    def node_ids(self, max_depth: int) -> list[int]:
        depths = self.u8s()
        raw = self._offsets(len(depths))
        offs = struct.unpack(f"{self._array_order()}{len(depths)}Q", raw)
        out = []
        for d, o in zip(depths, offs, strict=True):
            if d > max_depth or o >= (1 << d):
                raise self.fail(f"node (depth {d}, offset {o}) out of range")
            out.append((1 << d) + o)
        if len(set(out)) != len(out):
            raise self.fail("duplicate node ids")
        return out

    def _offsets(self, n: int) -> bytes:
        raise NotImplementedError

    def fail(self, why: str) -> CodecError:
        return CodecError(f"corrupt {self._what}: {why}")


class PlainReader(Reader):
    """Reads the fields of layout version 2 from the decoded plain tuple."""

    __slots__ = ("_items", "_pos", "version")

    def __init__(
        self, plain: Any, kind: int, versions: tuple[int, ...] = (FORMAT_VERSION,)
    ) -> None:
        super().__init__(_KIND_NAMES.get(kind, "sketch"))
        if type(plain) is not tuple or not plain:
            raise self.fail(f"expected a non-empty tuple of fields, got {type(plain).__name__}")
        if type(plain[0]) is not int or plain[0] not in versions:
            known = ", ".join(str(v) for v in (LEGACY_VERSION, *versions))
            raise CodecError(
                f"{self._what} layout version {plain[0]!r} is not supported (this library "
                f"reads versions {known}); upgrade windowagg"
            )
        self.version: int = plain[0]
        self._items = plain
        self._pos = 1

    @property
    def layout(self) -> int:
        return self.version

    def _next(self, typ: type, what: str) -> Any:
        if self._pos >= len(self._items):
            raise self.fail(f"truncated: field {self._pos} ({what}) is missing")
        v = self._items[self._pos]
        if type(v) is not typ:
            raise self.fail(f"field {self._pos} should be a {what}, got {type(v).__name__}")
        self._pos += 1
        return v

    def _int(self, lo: int, hi: int, what: str) -> int:
        v: int = self._next(int, what)
        if not lo <= v <= hi:
            raise self.fail(f"field {self._pos - 1} ({what}) out of range")
        return v

    def _float(self) -> float:
        v: float = self._next(float, "f64")
        return v

    def blob(self) -> bytes:
        v: bytes = self._next(bytes, "bytes")
        return v

    def text(self) -> str:
        v: str = self._next(str, "str")
        return v

    def _array(self, item_size: int) -> bytes:
        raw = self.blob()
        if len(raw) % item_size:
            raise self.fail(f"array of {len(raw)} bytes is not a multiple of {item_size}")
        return raw

    def _offsets(self, n: int) -> bytes:
        raw = self.blob()
        if len(raw) != 8 * n:
            raise self.fail(f"{n} node depths but {len(raw)} bytes of offsets")
        return raw

    def done(self) -> None:
        if self._pos != len(self._items):
            raise self.fail(f"{len(self._items) - self._pos} extra fields after the end")


class LegacyReader(Reader):
    """Reads layout version 1 (``WASK``, little-endian); every count checked before reading."""

    __slots__ = ("_data", "_pos")

    def __init__(self, data: bytes, expected_kind: int) -> None:
        super().__init__(_KIND_NAMES.get(expected_kind, "sketch"))
        self._data = bytes(data)
        if self._data[:4] != MAGIC:
            raise CodecError(f"not a windowagg sketch (bad magic {self._data[:4]!r})")
        self._pos = 4
        version, kind = self.u8(), self.u8()
        if version != LEGACY_VERSION:
            raise CodecError(
                f"sketch format version {version} is not supported (this library reads "
                f"version {LEGACY_VERSION} of {MAGIC!r} and codec data); upgrade windowagg"
            )
        if kind != expected_kind:
            got = _KIND_NAMES.get(kind, f"unknown kind {kind}")
            raise CodecError(f"these bytes hold a {got}, not a {self._what}")

    def _array_order(self) -> str:
        return "<"

    def _take(self, size: int) -> bytes:
        if size > len(self._data) - self._pos:
            raise self.fail(f"truncated: needed {size} more bytes at {self._pos}")
        out = self._data[self._pos : self._pos + size]
        self._pos += size
        return out

    def _int(self, lo: int, hi: int, what: str) -> int:
        fmt = {"u8": "<B", "u64": "<Q", "i64": "<q"}[what]
        v: int = struct.unpack(fmt, self._take(struct.calcsize(fmt)))[0]
        return v

    def _float(self) -> float:
        v: float = struct.unpack("<d", self._take(8))[0]
        return v

    def _length(self, item_size: int) -> int:
        n = self.u64()
        if n * item_size > len(self._data) - self._pos:
            raise self.fail(f"truncated: length {n} exceeds the remaining bytes")
        return n

    def blob(self) -> bytes:
        return self._take(self._length(1))

    def _array(self, item_size: int) -> bytes:
        return self._take(item_size * self._length(item_size))

    def _offsets(self, n: int) -> bytes:
        return self._take(8 * n)

    def done(self) -> None:
        if self._pos != len(self._data):
            raise self.fail(f"{len(self._data) - self._pos} trailing bytes after the end")


# ----------------------------------------------------------------------------- entry points


def dumps(plain_or_obj: object) -> bytes:
    """Codec bytes of a registered sketch (or of ValueDivision's tagged tuple). O(size)."""
    from windowagg import codec

    return codec.dumps(plain_or_obj)


def loads(cls: type[T], data: Any, kind: int, read: Callable[[Reader], T]) -> T:
    """``cls.from_bytes``: codec bytes of a registered *cls*, or layout-1 ``WASK`` bytes.

    Any failure is a :class:`CodecError` (the original exception chained). O(len(data)).
    """
    from windowagg import codec

    who = f"{cls.__name__}.from_bytes"
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise CodecError(f"{who} needs bytes, got {type(data).__name__}")
    data = bytes(data)
    if data[:4] == MAGIC:
        return _read_legacy(data, kind, read, who)
    obj = codec.loads(data)
    if type(obj) is not cls:
        raise CodecError(f"{who}: these bytes hold a {type(obj).__name__}, not a {cls.__name__}")
    return obj


def _read_legacy(data: bytes, kind: int, read: Callable[[Reader], T], who: str) -> T:
    from windowagg import codec

    with codec.decoding(who):
        r = LegacyReader(data, kind)
        obj = read(r)
        r.done()
    return obj


def from_plain(
    plain: Any,
    kind: int,
    read: Callable[[Reader], T],
    who: str,
    versions: tuple[int, ...] = (FORMAT_VERSION,),
) -> T:
    """A registered sketch's ``from_plain``: a layout tuple of one of *versions*, or layout-1
    ``WASK`` bytes (what ``windowagg.spark`` stored before the library registered its
    sketches). O(size)."""
    from windowagg import codec

    if type(plain) is bytes:
        if plain[:4] != MAGIC:
            raise CodecError(f"{who}: a bytes payload must be {MAGIC!r} (layout 1) data")
        return _read_legacy(plain, kind, read, who)
    with codec.decoding(who):
        r = PlainReader(plain, kind, versions)
        obj = read(r)
        r.done()
    return obj


def to_plain(write: Callable[[Writer], None], version: int = FORMAT_VERSION) -> tuple[Any, ...]:
    """The plain tuple (layout *version*) of a sketch whose ``_write`` is *write*. O(size)."""
    w = Writer(version)
    write(w)
    return w.plain()
