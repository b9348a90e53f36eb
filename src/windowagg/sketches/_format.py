"""The compact, versioned binary format shared by every sketch's ``to_bytes``/``from_bytes``.

Layout of every blob (little-endian; documented in ``docs/sketches.md``)::

    magic    4 bytes   b"WASK"
    version  u8        FORMAT_VERSION (1)
    kind     u8        which sketch (KIND_* below)
    body     ...       kind-specific fields written with :class:`Writer`

Everything read back goes through :class:`Reader`, which raises
:class:`~windowagg.errors.CodecError` on truncation, trailing bytes, non-finite floats where
finite ones are required, or out-of-range integers. No pickle anywhere.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Sequence

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
    "Reader",
    "Writer",
]

MAGIC = b"WASK"
FORMAT_VERSION = 1
KIND_QDIGEST = 1
KIND_EXP_QDIGEST = 2
KIND_EXP_SPACE_SAVING = 3
KIND_SW_COUNT = 4
KIND_SW_QDIGEST = 5
KIND_VALUE_DIVISION = 6

_KIND_NAMES = {
    KIND_QDIGEST: "QDigest",
    KIND_EXP_QDIGEST: "ExpDecayQDigest",
    KIND_EXP_SPACE_SAVING: "ExpDecaySpaceSaving",
    KIND_SW_COUNT: "SlidingWindowCount",
    KIND_SW_QDIGEST: "SlidingWindowQDigest",
    KIND_VALUE_DIVISION: "ValueDivision",
}


class Writer:
    """Appends typed fields to a bytearray (O(1) amortized per field)."""

    __slots__ = ("_buf",)

    def __init__(self, kind: int) -> None:
        self._buf = bytearray(MAGIC)
        self._buf += struct.pack("<BB", FORMAT_VERSION, kind)

    def u8(self, v: int) -> None:
        self._buf += struct.pack("<B", v)

    def u64(self, v: int) -> None:
        self._buf += struct.pack("<Q", v)

    def i64(self, v: int) -> None:
        self._buf += struct.pack("<q", v)

    def f64(self, v: float) -> None:
        self._buf += struct.pack("<d", v)

    def blob(self, b: bytes) -> None:
        self.u64(len(b))
        self._buf += b

    def text(self, s: str) -> None:
        self.blob(s.encode("utf-8"))

    def f64s(self, vs: Sequence[float]) -> None:
        self.u64(len(vs))
        self._buf += struct.pack(f"<{len(vs)}d", *vs)

    def u64s(self, vs: Sequence[int]) -> None:
        self.u64(len(vs))
        self._buf += struct.pack(f"<{len(vs)}Q", *vs)

    def u8s(self, vs: Sequence[int]) -> None:
        self.u64(len(vs))
        self._buf += bytes(vs)

    def node_ids(self, ids: Sequence[int]) -> None:
        """Heap ids of a dyadic tree of up to 64 levels: (depth u8, offset u64) pairs."""
        depths = [i.bit_length() - 1 for i in ids]
        self.u8s(depths)
        self._buf += struct.pack(
            f"<{len(ids)}Q", *[i - (1 << d) for i, d in zip(ids, depths, strict=False)]
        )

    def getvalue(self) -> bytes:
        return bytes(self._buf)


class Reader:
    """Reads the fields written by :class:`Writer`; every failure is a CodecError."""

    __slots__ = ("_data", "_pos", "_what", "kind")

    def __init__(self, data: bytes, expected_kind: int) -> None:
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise CodecError(f"expected bytes, got {type(data).__name__}")
        self._data = bytes(data)
        self._pos = 0
        self._what = _KIND_NAMES.get(expected_kind, "sketch")
        if self._data[:4] != MAGIC:
            raise CodecError(f"not a windowagg sketch (bad magic {self._data[:4]!r})")
        self._pos = 4
        version, kind = self.u8(), self.u8()
        if version != FORMAT_VERSION:
            raise CodecError(
                f"sketch format version {version} is not supported (this library reads "
                f"version {FORMAT_VERSION}); upgrade windowagg"
            )
        if kind != expected_kind:
            got = _KIND_NAMES.get(kind, f"unknown kind {kind}")
            raise CodecError(f"these bytes hold a {got}, not a {self._what}")
        self.kind = kind

    def _unpack(self, fmt: str) -> tuple[object, ...]:
        size = struct.calcsize(fmt)
        if self._pos + size > len(self._data):
            raise CodecError(f"truncated {self._what}: needed {size} more bytes at {self._pos}")
        out = struct.unpack_from(fmt, self._data, self._pos)
        self._pos += size
        return out

    def u8(self) -> int:
        v = self._unpack("<B")[0]
        assert isinstance(v, int)
        return v

    def u64(self) -> int:
        v = self._unpack("<Q")[0]
        assert isinstance(v, int)
        return v

    def i64(self) -> int:
        v = self._unpack("<q")[0]
        assert isinstance(v, int)
        return v

    def f64(self, *, finite: bool = True) -> float:
        v = self._unpack("<d")[0]
        assert isinstance(v, float)
        if finite and not math.isfinite(v):
            raise CodecError(f"corrupt {self._what}: non-finite number {v!r} at {self._pos - 8}")
        return v

    def _length(self, item_size: int) -> int:
        n = self.u64()
        if n * item_size > len(self._data) - self._pos:
            raise CodecError(f"truncated {self._what}: length {n} exceeds the remaining bytes")
        return n

    def blob(self) -> bytes:
        n = self._length(1)
        b = self._data[self._pos : self._pos + n]
        self._pos += n
        return b

    def text(self) -> str:
        try:
            return self.blob().decode("utf-8")
        except UnicodeDecodeError as e:
            raise CodecError(f"corrupt {self._what}: invalid UTF-8 text") from e

    def f64s(self, *, finite: bool = True) -> list[float]:
        n = self._length(8)
        vs = list(struct.unpack_from(f"<{n}d", self._data, self._pos))
        self._pos += 8 * n
        if finite and not all(math.isfinite(v) for v in vs):
            raise CodecError(f"corrupt {self._what}: non-finite number in an array")
        return vs

    def u64s(self) -> list[int]:
        n = self._length(8)
        vs = list(struct.unpack_from(f"<{n}Q", self._data, self._pos))
        self._pos += 8 * n
        return vs

    def u8s(self) -> list[int]:
        n = self._length(1)
        vs = list(self._data[self._pos : self._pos + n])
        self._pos += n
        return vs

    def node_ids(self, max_depth: int) -> list[int]:
        depths = self.u8s()
        n = len(depths)
        if 8 * n > len(self._data) - self._pos:
            raise CodecError(f"truncated {self._what}: node offsets missing")
        offs = struct.unpack_from(f"<{n}Q", self._data, self._pos)
        self._pos += 8 * n
        out = []
        for d, o in zip(depths, offs, strict=False):
            if d > max_depth or o >= (1 << d):
                raise CodecError(f"corrupt {self._what}: node (depth {d}, offset {o}) out of range")
            out.append((1 << d) + o)
        if len(set(out)) != len(out):
            raise CodecError(f"corrupt {self._what}: duplicate node ids")
        return out

    def done(self) -> None:
        if self._pos != len(self._data):
            raise CodecError(
                f"corrupt {self._what}: {len(self._data) - self._pos} trailing bytes after the end"
            )

    def fail(self, why: str) -> CodecError:
        return CodecError(f"corrupt {self._what}: {why}")
