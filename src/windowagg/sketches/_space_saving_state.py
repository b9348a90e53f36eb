"""ExpDecaySpaceSaving's state: its slots, its two backends, its invariants and bytes layout.

A base of :class:`windowagg.sketches.ExpDecaySpaceSaving` (its fact card, the update verbs,
merge, queries and the codec's readers live in ``space_saving.py``): the counters as the
Python reference holds them, the moves of the whole state between the compiled twin
(``_native/include/windowagg/space_saving.hpp``, held in ``_nat``) and the reference, the
O(k) invariant check, and the fields the codec writes, with the key tags.

Fact card
---------
=============  ==============================================================================
state          k, lam, the landmark ``_lm`` and largest time ``_tmax``, counts ``_c`` and
               overestimates ``_over`` in landmark units (insertion order), the floor, the
               decayed total n in landmark units, the heap of (count, seq, key) and seq
moves          native -> Python (a key the twin does not hold): O(k); Python -> native: O(k)
equality       ``==`` compares the state slot by slot, the heap as its sorted entries:
               O(k log k)
check          ``_check``: c - over <= f <= c, f <= floor off the counters, floor <= min c,
               sum c + (k - m) floor <= n: O(k)
bytes          u64 k, f64 lam, u8 has-landmark, f64 landmark, tmax, floor, n, u64 m, then per
               counter u8 key tag (0 int, 1 str, 2 bytes, 3 float), blob key, f64 count,
               f64 overestimate (``docs/sketches.md``): O(k)
paper          Cormode, Korn, Tirthapura 2007, section 4.2 (Theorem 4); Metwally et al. 2005
=============  ==============================================================================
"""

from __future__ import annotations

import math
import struct
from collections.abc import Hashable
from typing import Any

from windowagg._invariants import invariant
from windowagg.errors import ArgumentTypeError
from windowagg.sketches import _format

__all__ = ["_I64_MAX", "_SpaceSavingState", "_key_from", "_key_tag"]

_INF = math.inf
_I64_MIN, _I64_MAX = -(1 << 63), (1 << 63) - 1


class _SpaceSavingState:
    """The state of an exponentially decayed Space-Saving summary on its two backends (a
    base of :class:`~windowagg.sketches.ExpDecaySpaceSaving`)."""

    __slots__ = (
        "_c",
        "_floor",
        "_heap",
        "_horizon",
        "_k",
        "_lam",
        "_lm",
        "_n",
        "_nat",
        "_native_only",
        "_over",
        "_seq",
        "_tmax",
    )
    _c: dict[Hashable, float]  # counts in landmark units, in insertion order
    _floor: float  # no key off the counters weighs more (landmark units)
    _heap: list[tuple[float, int, Hashable]]  # (count, seq, key), refreshed lazily
    _horizon: float  # the landmark moves when an item is this far past it
    _k: int
    _lam: float
    _lm: float | None  # the landmark, None before the first item
    _n: float  # the decayed total in landmark units
    _nat: Any  # the compiled twin, when it holds the state
    _native_only: bool  # backend="native" asked for: no move to Python
    _over: dict[Hashable, float]  # overestimates in landmark units
    _seq: int
    _tmax: float  # the largest timestamp seen, -inf before the first

    def __eq__(self, other: object) -> bool:
        """The same state, slot by slot (what the invariant checks compare a stored summary
        with its recomputation by: two merges of the same inputs are equal). O(size)."""
        if type(other) is not type(self):
            return NotImplemented
        return self._state() == other._state()

    __hash__ = None  # type: ignore[assignment]

    def _state(self) -> tuple[Any, ...]:
        """(k, lam, landmark, tmax, floor, n, counts, overestimates, heap entries sorted,
        seq): the whole state, read out of the native twin when it holds it. The heap's
        layout is not state: its entries (count, seq, key) have unique seqs, so the minimum,
        and every choice update makes, depends on the entries alone. O(k log k)."""
        nat = self._nat
        if nat is None:
            return (
                self._k,
                self._lam,
                self._lm,
                self._tmax,
                self._floor,
                self._n,
                self._c,
                self._over,
                sorted(self._heap),
                self._seq,
            )
        items = nat.items()
        return (
            self._k,
            self._lam,
            nat.landmark,
            nat.tmax,
            nat.floor,
            nat.n,
            {x: c for x, c, _ in items},
            {x: o for x, _, o in items},
            nat.heap(),
            nat.seq,
        )

    # ------------------------------------------------------------ the two backends
    def _leave_native(self, x: Any) -> None:
        """Key *x* is not held by the compiled twin: move the whole state (heap and
        sequence number included) to the Python implementation, or, under
        ``backend="native"``, raise ArgumentTypeError (nothing changed). O(k)."""
        if self._native_only:
            raise self._refusal(x)
        nat = self._nat
        items = nat.items()
        self._c = {y: c for y, c, _ in items}
        self._over = {y: o for y, _, o in items}
        self._heap = nat.heap()
        self._seq = int(nat.seq)
        self._lm, self._tmax = nat.landmark, nat.tmax
        self._floor, self._n = nat.floor, nat.n
        self._nat = None

    @staticmethod
    def _refusal(x: Any) -> ArgumentTypeError:
        return ArgumentTypeError(
            f"ExpDecaySpaceSaving(backend='native') holds int keys in int64, str and "
            f"bytes keys; got {x!r} ({type(x).__name__}): convert the keys, or use "
            "backend='auto' (which moves to the Python implementation at such a key) or "
            "backend='python'"
        )

    @staticmethod
    def _native_key(x: Any) -> bool:
        """True if the compiled twin holds key *x* (exact int in int64, str, bytes). O(1)."""
        tx = type(x)
        if tx is int:
            return bool(_I64_MIN <= x <= _I64_MAX)
        if tx is str:
            try:
                x.encode("utf-8")
            except UnicodeEncodeError:
                return False
            return True
        return tx is bytes

    def _native_twin(self) -> Any:
        """A native object holding this state (its own, or a new one), None if a key is
        not held natively. O(k)."""
        if self._nat is not None:
            return self._nat
        if not all(self._native_key(x) for x in self._c):
            return None
        from windowagg._native.space_saving import load

        return load(self._k, self._lam, *self._fields())

    def _fields(self) -> tuple[Any, ...]:
        """(has a landmark, landmark, tmax, floor, n, [(key, count, overestimate)] in
        order): the codec's fields. O(k)."""
        nat = self._nat
        if nat is None:
            lm = 0.0 if self._lm is None else self._lm
            tmax = 0.0 if self._lm is None else self._tmax
            items = [(x, c, self._over[x]) for x, c in self._c.items()]
            return int(self._lm is not None), lm, tmax, self._floor, self._n, items
        lm = nat.landmark
        return (
            int(lm is not None),
            0.0 if lm is None else lm,
            0.0 if lm is None else nat.tmax,
            nat.floor,
            nat.n,
            nat.items(),
        )

    def _become(self, native: bool, strict: bool) -> None:
        """Hold the state on the native twin (*native*) or in the dicts, in place; with
        *strict* (backend="native" asked for) a key the twin cannot hold raises. O(k)."""
        if native == (self._nat is not None):
            self._native_only = native and strict
            return
        if not native:
            self._native_only = False
            self._leave_native(None)
            return
        nat = self._native_twin()
        if nat is None:
            if strict:
                raise self._refusal(next(x for x in self._c if not self._native_key(x)))
            return
        self._nat, self._native_only = nat, strict
        self._c, self._over, self._heap, self._seq = {}, {}, [], 0
        self._lm, self._tmax, self._floor, self._n = None, -_INF, 0.0, 0.0

    # ---------------------------------------------------------------- checks
    def _check(self) -> None:
        """O(k) invariants (see the module docstring)."""
        if self._nat is not None:
            self._nat._check()
            return
        invariant(
            len(self._c) <= self._k,
            "ExpDecaySpaceSaving",
            f"{len(self._c)} counters > k = {self._k}",
        )
        invariant(
            set(self._c) == set(self._over),
            "ExpDecaySpaceSaving",
            "counts and overestimates name different keys",
        )
        slack = 1e-9 * max(1.0, self._n)
        for x, c in self._c.items():
            invariant(
                c >= self._floor - slack,
                "ExpDecaySpaceSaving",
                f"count of {x!r} ({c}) below the floor {self._floor}",
            )
            invariant(
                0 <= self._over[x] <= c + slack,
                "ExpDecaySpaceSaving",
                f"overestimate of {x!r} out of range",
            )
        m = len(self._c)
        lhs = math.fsum(self._c.values()) + (self._k - m) * self._floor
        invariant(
            lhs <= self._n + slack,
            "ExpDecaySpaceSaving",
            f"sum of counts {lhs} exceeds the total {self._n}",
        )

    # ---------------------------------------------------------------- bytes
    def _write(self, w: _format.Writer) -> None:
        has, lm, tmax, floor, n, items = self._fields()
        w.u64(self._k)
        w.f64(self._lam)
        w.u8(has)
        w.f64(lm)
        w.f64(tmax)
        w.f64(floor)
        w.f64(n)
        w.u64(len(items))
        for x, c, over in items:
            w.u8(_key_tag(x))
            w.blob(_key_bytes(x))
            w.f64(c)
            w.f64(over)


def _key_tag(x: Any) -> int:
    if isinstance(x, bool):
        raise ArgumentTypeError("bool keys cannot be serialized; use int")
    if isinstance(x, int):
        return 0
    if isinstance(x, str):
        return 1
    if isinstance(x, bytes):
        return 2
    if isinstance(x, float):
        return 3
    raise ArgumentTypeError(
        f"only int, float, str and bytes keys can be serialized, got {type(x).__name__}"
    )


def _key_bytes(x: Any) -> bytes:
    if isinstance(x, int):
        return str(x).encode()
    if isinstance(x, str):
        return x.encode("utf-8")
    if isinstance(x, float):  # top_k of a float column: bit-exact, big-endian binary64
        return struct.pack(">d", x)
    assert isinstance(x, bytes)
    return x


def _key_from(tag: int, b: bytes, r: _format.Reader) -> Hashable:
    try:
        if tag == 0:
            return int(b.decode("ascii"))
        if tag == 1:
            return b.decode("utf-8")
        if tag == 2:
            return b
        if tag == 3 and len(b) == 8:
            x: float = struct.unpack(">d", b)[0]
            return x
    except (UnicodeDecodeError, ValueError):
        raise r.fail("malformed key") from None
    raise r.fail(f"unknown key tag {tag}")
