"""Bloom filter as a monoid: set membership over a window, with false positives only.

Fact card
---------
============  ==========================================================================
partial       ``(m, k, bits)``: m bits, k hash functions, the bitset as a Python int
identity      ``(m, k, 0)``
lift          O(k + m/64): one 128-bit BLAKE2b digest, k positions by double hashing
combine       O(m/64): bitwise or; commutative and idempotent; no inverse
lower         a :class:`BloomSet` (immutable): ``x in s``, ``len(s)`` (set bits),
              ``s.false_positive_rate``, ``s.approx_items``
space         m bits per partial (2^14 bits = 2 KiB by default)
error         no false negatives; P(false positive) ≈ (set bits / m)^k for the actual fill
paper         Bloom (1970); double hashing of Kirsch and Mitzenmacher (2006); used as the
              "expensive operator" in the FiBA experiments (2^14-bit partials)
============  ==========================================================================

Hashing is stable across processes, machines and Python versions (never Python's
randomised ``hash()``): an item is first turned into canonical bytes

- ``str``: ``b"s"`` + UTF-8 (``surrogatepass``);
- ``bytes``/``bytearray``/``memoryview``: ``b"b"`` + the bytes;
- ``int`` (and ``bool``), and ``float`` with an integral value: ``b"i"`` + the minimal
  big-endian two's complement bytes (``(x.bit_length() + 8) // 8`` of them), so that
  ``1``, ``1.0`` and ``True`` are the same member, as they are equal in Python;
- other ``float``: ``b"f"`` + IEEE 754 binary64 big-endian (every NaN as ``7ff8...0``);

then hashed with ``blake2b(data, digest_size=16, person=b"windowagg.bloom1")``. With
``h1``, ``h2`` the little-endian 64-bit halves of the digest and ``h2 |= 1``, the k bit
positions are ``(h1 + i * h2) % m`` for ``i = 0 .. k-1``; bit ``p`` of the filter is
``(bits >> p) & 1``.

Examples
--------
>>> from windowagg.monoids import BloomFilter
>>> bf = BloomFilter(bits=1024, hashes=3)
>>> a = bf.combine(bf.lift("apple"), bf.lift(42))
>>> s = bf.lower(a)
>>> "apple" in s, 42 in s, 42.0 in s, "pear" in s
(True, True, True, False)
>>> len(s) <= 6, s.false_positive_rate < 1e-6
(True, True)
"""

from __future__ import annotations

import math
import struct
from hashlib import blake2b
from typing import Any, Final

from windowagg.errors import ArgumentError, MonoidContractError
from windowagg.monoids.builtins import MonoidInputError

__all__ = ["LEGACY_MAX_BITS", "BloomFilter", "BloomSet", "bloom_positions"]

#: The largest filter read in the pre-version-2 plain form ``(m, k, int)``, which does not
#: carry its size (2**24 bits = 2 MiB; the default filter has 2**14 bits).
LEGACY_MAX_BITS: Final = 2**24

BloomPartial = tuple[int, int, int]

_PERSON: Final = b"windowagg.bloom1"
_NAN_BYTES: Final = b"f" + struct.pack(">d", math.nan)
_pack_d = struct.Struct(">d").pack


def _canonical(x: Any) -> bytes:
    t = type(x)
    if t is str:
        raw: bytes = x.encode("utf-8", "surrogatepass")
        return b"s" + raw
    if t is int or t is bool:
        return b"i" + int(x).to_bytes((x.bit_length() + 8) >> 3, "big", signed=True)
    if t is float:
        if x.is_integer():
            i = int(x)
            return b"i" + i.to_bytes((i.bit_length() + 8) >> 3, "big", signed=True)
        if x != x:
            return _NAN_BYTES
        return b"f" + _pack_d(x)
    if t is bytes or t is bytearray or t is memoryview:
        return b"b" + bytes(x)
    raise MonoidInputError(
        f"BloomFilter accepts str, bytes, int and float items, got {t.__name__} {x!r}"
    )


def bloom_positions(x: Any, m: int, k: int) -> list[int]:
    """The k bit positions of item *x* in an m-bit filter (stable everywhere). O(k).

    >>> bloom_positions("apple", 1024, 3)
    [753, 688, 623]
    """
    d = blake2b(_canonical(x), digest_size=16, person=_PERSON).digest()
    h1 = int.from_bytes(d[:8], "little")
    h2 = int.from_bytes(d[8:], "little") | 1
    return [(h1 + i * h2) % m for i in range(k)]


def _short(x: Any) -> str:
    """A short description of an untrusted, maybe huge, value for an error message. O(1)."""
    if isinstance(x, int) and x.bit_length() > 64:
        return f"a {x.bit_length()}-bit int"
    if isinstance(x, (tuple, list)):
        return f"a {type(x).__name__} of {len(x)} items"
    r = repr(x)
    return r if len(r) <= 80 else r[:77] + "..."


def _check_config(bits: Any, hashes: Any, who: str) -> None:
    if isinstance(bits, bool) or not isinstance(bits, int) or bits < 1:
        raise ArgumentError(f"{who}: bits must be an int >= 1, got {bits!r}")
    if isinstance(hashes, bool) or not isinstance(hashes, int) or not 1 <= hashes <= 64:
        raise ArgumentError(f"{who}: hashes must be an int in 1..64, got {hashes!r}")


class BloomSet:
    """An immutable Bloom filter: what :meth:`BloomFilter.lower` returns.

    Supports ``x in s`` (O(k); never a false negative), ``len(s)`` (the number of set
    bits, O(m/64)), equality and hashing, and the estimates below. It encodes with
    :mod:`windowagg.codec` (tag ``"windowagg.BloomSet"``).

    Parameters
    ----------
    bits : int
        m, the number of bits.
    hashes : int
        k, the number of hash functions.
    value : int
        The bitset, ``0 <= value < 2**bits``.

    Examples
    --------
    >>> s = BloomSet(64, 2, 0)
    >>> "x" in s, len(s), s.false_positive_rate, s.approx_items
    (False, 0, 0.0, 0.0)
    """

    __slots__ = ("_bits", "_hashes", "_value")
    _bits: int
    _hashes: int
    _value: int

    def __init__(self, bits: int, hashes: int, value: int) -> None:
        _check_config(bits, hashes, "BloomSet")
        # bit_length, not ``value < 1 << bits``: that would build a bits-bit int first.
        if (
            isinstance(value, bool)
            or not isinstance(value, int)
            or value < 0
            or value.bit_length() > bits
        ):
            raise ArgumentError(
                f"BloomSet: value must be an int in [0, 2**{bits}), got {_short(value)}"
            )
        setattr_ = object.__setattr__  # the class forbids attribute assignment after this
        setattr_(self, "_bits", bits)
        setattr_(self, "_hashes", hashes)
        setattr_(self, "_value", value)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"BloomSet is immutable; cannot set {name!r}")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"BloomSet is immutable; cannot delete {name!r}")

    @property
    def num_bits(self) -> int:
        """m, the size of the filter in bits. O(1)."""
        return self._bits

    @property
    def num_hashes(self) -> int:
        """k, the number of hash functions. O(1)."""
        return self._hashes

    @property
    def value(self) -> int:
        """The bitset as an int (bit p set means position p is occupied). O(1)."""
        return self._value

    @property
    def bit_count(self) -> int:
        """The number of set bits. O(m/64)."""
        return self._value.bit_count()

    def __len__(self) -> int:
        """The number of set bits (as for a bitset; see :attr:`approx_items`). O(m/64)."""
        return self._value.bit_count()

    def __contains__(self, x: object) -> bool:
        """True if *x* may have been added; False means it certainly was not. O(k)."""
        v = self._value
        return all((v >> p) & 1 for p in bloom_positions(x, self._bits, self._hashes))

    @property
    def false_positive_rate(self) -> float:
        """Estimated probability that an absent item tests present: ``(set bits / m)**k``. O(m/64)."""
        return float((self._value.bit_count() / self._bits) ** self._hashes)

    @property
    def approx_items(self) -> float:
        """Estimated number of distinct items added: ``-m/k * ln(1 - X/m)`` (Swamidass-Baldi).

        ``inf`` when every bit is set. O(m/64).
        """
        x = self._value.bit_count()
        if x == 0:
            return 0.0
        if x >= self._bits:
            return math.inf
        return -self._bits / self._hashes * math.log1p(-x / self._bits)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, BloomSet):
            return NotImplemented
        return (self._bits, self._hashes, self._value) == (
            other._bits,
            other._hashes,
            other._value,
        )

    def __hash__(self) -> int:
        return hash((self._bits, self._hashes, self._value))

    def __repr__(self) -> str:
        return f"BloomSet(bits={self._bits}, hashes={self._hashes}, set_bits={len(self)})"

    def to_plain(self) -> BloomPartial:
        """``(m, k, value)``: the constructor's arguments. O(1).

        >>> s = BloomSet(12, 1, 0b1000_0000_0001); BloomSet(*s.to_plain()) == s
        True
        """
        return (self._bits, self._hashes, self._value)

    @classmethod
    def from_plain(cls, plain: Any) -> BloomSet:
        """Inverse of :meth:`to_plain`; validates its input without allocating. O(m/64)."""
        if type(plain) is not tuple or len(plain) != 3:
            raise ArgumentError(
                f"BloomSet.from_plain needs (bits, hashes, value), got {_short(plain)}"
            )
        return cls(*plain)

    def _to_codec(self) -> tuple[int, int, bytes]:
        """``(m, k, bitmap)``, the plain form :mod:`windowagg.codec` writes. O(m/8).

        *bitmap* holds exactly ``ceil(m / 8)`` bytes, bit p of the filter being bit
        ``p % 8`` of byte ``p // 8`` (little-endian), so that the size the data claims
        is the size it carries: a decoder never builds more bits than it was given.

        >>> BloomSet(12, 1, 0b1000_0000_0001)._to_codec()
        (12, 1, b'\\x01\\x08')
        """
        return (self._bits, self._hashes, self._value.to_bytes((self._bits + 7) >> 3, "little"))

    @classmethod
    def _from_codec(cls, plain: Any) -> BloomSet:
        """Inverse of :meth:`_to_codec` for untrusted decoded data; sizes checked first. O(m/8).

        Also reads the form the codec wrote before its version 2, ``(m, k, value)`` with
        the bitset as an int, for filters of at most ``LEGACY_MAX_BITS`` (2**24) bits:
        that form does not carry its size, so a larger *m* is refused rather than trusted.

        >>> BloomSet._from_codec((2**33, 1, b""))
        Traceback (most recent call last):
        ...
        ValueError: BloomSet: a 8589934592-bit filter needs a 1073741824-byte bitmap, got 0 bytes
        """
        if type(plain) is not tuple or len(plain) != 3:
            raise ValueError(f"BloomSet needs (bits, hashes, bitmap), got {_short(plain)}")
        bits, hashes, raw = plain
        _check_config(bits, hashes, "BloomSet")
        if type(raw) is bytes:
            need = (bits + 7) >> 3
            if len(raw) != need:
                raise ValueError(
                    f"BloomSet: a {bits}-bit filter needs a {need}-byte bitmap, "
                    f"got {len(raw)} bytes"
                )
            return cls(bits, hashes, int.from_bytes(raw, "little"))
        if bits > LEGACY_MAX_BITS:
            raise ValueError(
                f"BloomSet: the version-1 form (bits, hashes, int) is read for at most "
                f"LEGACY_MAX_BITS={LEGACY_MAX_BITS} bits, got bits={bits}: it does not "
                "carry its size, so a larger claim is not trusted"
            )
        return cls(bits, hashes, raw)


class BloomFilter:
    """Bloom-filter monoid over partials ``(m, k, bits)``. Commutative, idempotent, no inverse.

    ===========  ==================================================================
    identity     ``(m, k, 0)``
    lift(x)      ``(m, k, bits)`` with the k positions of *x* set (see the module
                 docstring for the stable hashing); *x* is str, bytes, int or float
    combine      ``(m, k, bits_a | bits_b)``; partials of different (m, k) raise
                 :class:`~windowagg.errors.MonoidContractError`
    lower(a)     ``BloomSet(m, k, bits)``
    ===========  ==================================================================

    Parameters
    ----------
    bits : int
        m, the number of bits (default 2**14, the FiBA papers' setting).
    hashes : int
        k, the number of hash functions (default 4, as in the authors' C++).

    Examples
    --------
    >>> bf = BloomFilter(bits=256, hashes=2)
    >>> a = bf.combine(bf.identity, bf.lift(b"k1"))
    >>> b"k1" in bf.lower(a), bf.combine(a, a) == a
    (True, True)
    >>> bf.combine(a, BloomFilter(bits=128, hashes=2).identity)
    Traceback (most recent call last):
    ...
    windowagg.errors.MonoidContractError: BloomFilter.combine: cannot combine a 256-bit/2-hash filter with a 128-bit/2-hash filter
    """

    __slots__ = ("bits", "hashes", "identity")
    name: Final = "bloom"
    commutative: Final = True
    idempotent: Final = True
    invertible: Final = False

    def __init__(self, bits: int = 2**14, hashes: int = 4) -> None:
        _check_config(bits, hashes, "BloomFilter")
        self.bits = bits
        self.hashes = hashes
        self.identity: BloomPartial = (bits, hashes, 0)

    def lift(self, x: Any) -> BloomPartial:
        m = self.bits
        v = 0
        for p in bloom_positions(x, m, self.hashes):
            v |= 1 << p
        return (m, self.hashes, v)

    def combine(self, a: BloomPartial, b: BloomPartial) -> BloomPartial:
        if a[0] != b[0] or a[1] != b[1]:
            raise MonoidContractError(
                f"BloomFilter.combine: cannot combine a {a[0]}-bit/{a[1]}-hash filter with "
                f"a {b[0]}-bit/{b[1]}-hash filter"
            )
        return (a[0], a[1], a[2] | b[2])

    def lower(self, a: BloomPartial) -> BloomSet:
        return BloomSet(a[0], a[1], a[2])

    def __repr__(self) -> str:
        return f"BloomFilter(bits={self.bits}, hashes={self.hashes})"
