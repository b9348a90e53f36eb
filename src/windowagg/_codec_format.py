"""The codec's format constants, its varint, and the registry of user types.

Shared by the encoder (:mod:`windowagg.codec`) and the decoder
(:mod:`windowagg._codec_decode`); the byte format itself is described in
:mod:`windowagg.codec` and ``docs/formats.md``. ``register`` and ``registered`` are public
as ``windowagg.codec.register`` / ``windowagg.codec.registered``.
"""

from __future__ import annotations

import datetime as _dt
import importlib
import struct
from collections.abc import Callable
from decimal import Decimal
from typing import Any, Final

from windowagg._backend import native_verb
from windowagg.errors import CodecError
from windowagg.monoids.builtins import NOTHING

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


def _put_varint(out: bytearray, n: int) -> None:
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)


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


def _rows_on_core(
    backend: str | None,
    who: str,
    verb: str,
    head: bytes,
    items: Any,
    python: Callable[[Any], list[Any]],
) -> list[Any]:
    """:func:`~windowagg.codec.dumps_numbers` / ``loads_numbers``' one path: the compiled
    core's *verb* over *items* (*head*: a record's bytes before its row) where *backend*
    resolves to it (:func:`~windowagg._backend.native_verb`), and ``python(items)`` for
    every item it answers None for (or for all of them, on the Python side). O(total
    size): a C-level scan for the misses, a Python step per miss only."""
    core = native_verb(backend, who, verb)
    if core is None:
        return python(items)
    items = items if type(items) is list else [*items]
    out: list[Any] = getattr(core, verb)(head, items)
    if None in out:  # identity first: a C-level scan, no Python step per item
        missed = [i for i, x in enumerate(out) if x is None]
        for i, x in zip(missed, python([items[i] for i in missed]), strict=True):
            out[i] = x
    return out
