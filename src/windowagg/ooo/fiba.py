"""FiBA: the finger B-tree aggregator, with bulk eviction and bulk insertion.

=================  ==========================================================================
ordering           out-of-order (any insert/evict position; timestamps of one ordered type)
operator needs     monoid (associative, identity); not commutative, no inverse
query              O(1) worst case: 2 combines (``leftFinger ⊗ root ⊗ rightFinger``)
insert / evict     O(log d) amortized, O(log n) worst case; d = distance to the closer end;
                   d = 0 (append youngest, evict oldest) is amortized O(1)
range_query        O(log d_from + log d_to + log n_sub) worst case
bulk_evict(t)      O(log m) amortized, O(log n) worst case; m = entries removed
bulk_insert        O(log d + m (1 + log(d/m))) amortized for a sorted bulk of m entries
                   (plus an O(m log m) stable sort when the bulk is not sorted)
len()              O(1) amortized (see "Size" below)
space              O(n): 2 list slots per entry, one node per 1..2μ-1 entries
paper              Tangwongsan, Hirzel, Schneider, VLDB 2019 (FiBA) and VLDB 2023 (bulk FiBA)
=================  ==========================================================================

The window is a B-tree keyed by timestamp with arity between ``min_arity`` (μ) and
``2μ``; entries live in every node.  Every node stores one *position-aware* partial
aggregate: the root its *inner* aggregate, the non-root nodes of the left spine a *left*
aggregate (their subtree without the first child, then the parent's left aggregate), the
right spine the mirror *right* aggregate, every other node the *up* aggregate of its
subtree.  Fingers point at the leftmost and rightmost leaves, so ``query()`` is
``leftFinger.agg ⊗ root.agg ⊗ rightFinger.agg`` and changes near either end only touch a
short stretch of spine.  See ``docs/fiba.md`` for a diagram and the errata we fixed.

Implementation notes beyond the papers:

* the left finger also keeps the suffix aggregates of its values (``v_i ⊗ … ⊗ parent``),
  so evicting the oldest entry costs no combine until the leaf underflows; appending the
  youngest entry extends the right finger's aggregate with one combine;
* **Size.** ``bulk_evict`` detaches whole subtrees without visiting their entries; they are
  put on a graveyard list and counted (and released) a few nodes per later operation off
  the fast paths (including every split and merge at the fingers), or all at once by
  ``len()``.  So ``bulk_evict`` stays O(log m), ``len()`` is exact, O(1) when nothing is
  pending and amortized O(1) overall (each discarded node is counted once);
* bulk inserts whose timestamps collide with stored ones, at leaves or inner nodes, are
  combined in place (``old ⊗ new``) and the per-level treelets are coalesced by target
  node, which avoids the tree corruption of the authors' C++ (guide §4.8);
* a combine that raises in ``insert``/``bulk_insert`` leaves the window exactly as it was
  and its exception propagates unchanged (as in every other structure; the built-in
  monoids refuse bad values in ``lift`` with ``MonoidInputError``).

This module holds the public class and the d = 0 fast paths of ``insert`` and ``evict``;
the tree machinery is in ``_fiba_tree.py``, the bulk operations in ``_fiba_bulk.py`` and
the invariant check in ``_fiba_check.py`` (bases of ``FiBA`` with empty ``__slots__``).

Examples
--------
>>> from windowagg.monoids import Concat
>>> w = FiBA(Concat(), min_arity=2)
>>> for t in (3, 1, 2, 5): w.insert(t, str(t))
>>> w.insert(2, "b"); w.query()
('1', '2', 'b', '3', '5')
>>> w.range_query(2, 4), w.oldest(), w.youngest(), len(w)
(('2', 'b', '3'), 1, 5, 4)
>>> w.bulk_evict(2); w.query()
('3', '5')
>>> w.bulk_insert([(9, "x"), (4, "y"), (3, "z")]); w.query(), len(w)
(('3', 'z', 'y', '5', 'x'), 4)
"""

from __future__ import annotations

import operator
from collections.abc import Iterable, Iterator
from typing import Any, ClassVar, Generic

from windowagg._backend import Backed, Backend, resolve_backend
from windowagg._time import check_timestamp
from windowagg.errors import ArgumentError, MonoidContractError, TimestampError
from windowagg.fifo._common import hot_ops
from windowagg.monoids.base import In, Monoid, Out, P, declared_kind, require_monoid
from windowagg.ooo._fiba_arrays import FiBAArrays
from windowagg.ooo._fiba_bulk import _FiBABulk
from windowagg.ooo._fiba_check import _FiBACheck
from windowagg.ooo._fiba_tree import _NONE

__all__ = ["FiBA"]

DEFAULT_MIN_ARITY = 8  # benchmarks/bench_ooo.py, docs/performance/ooo.md


def check_args(monoid: Any, min_arity: int | None) -> int:
    """Check FiBA's constructor arguments (either backend); the min_arity to use. O(1)."""
    if isinstance(monoid, type):
        raise MonoidContractError(
            f"ooo.FiBA needs a monoid instance, got the class {monoid.__name__}: "
            f"write FiBA({monoid.__name__}())"
        )
    require_monoid(monoid, "ooo.FiBA")
    if min_arity is None:
        return DEFAULT_MIN_ARITY
    if not isinstance(min_arity, int) or isinstance(min_arity, bool) or min_arity < 2:
        raise ArgumentError(f"ooo.FiBA: min_arity must be an int >= 2, got {min_arity!r}")
    return min_arity


def _zip_bulk(times: Any, values: Any) -> list[tuple[Any, Any]]:
    """``bulk_insert(times, values)``'s pairs (equal lengths checked; buffers as lists)."""
    ts = times.tolist() if hasattr(times, "tolist") else list(times)
    vs = values.tolist() if hasattr(values, "tolist") else list(values)
    if len(ts) != len(vs):
        raise ArgumentError(
            f"ooo.FiBA.bulk_insert(times, values): {len(ts)} and {len(vs)} items; "
            "give sequences of equal length"
        )
    return list(zip(ts, vs, strict=True))


class PyFiBA(FiBAArrays, _FiBABulk, _FiBACheck, Generic[In, P, Out]):
    """The pure-Python reference implementation that ``FiBA(..., backend="python")`` holds."""

    __slots__ = ()  # the state is declared in _FiBATree

    def __init__(
        self,
        monoid: Monoid[In, P, Out],
        min_arity: int | None = None,
    ) -> None:
        min_arity = check_args(monoid, min_arity)
        self._m = monoid
        # the "sum" kind's combine is operator.add: same result without a Python frame.
        self._combine = operator.add if declared_kind(monoid) == "sum" else monoid.combine
        self._lift = monoid.lift
        self._lower = monoid.lower
        # the hot paths skip the identity lift/lower of some built-ins (fifo._common's
        # tables: Sum, Max and Min check their input in lift, so it is always called)
        hlift, _, hlower = hot_ops(monoid)
        comb = self._combine
        # flip(a, b) = b ⊗ a, for the right-to-left suffix scan of the left finger. Only
        # Sum's operator.add skips the flip (a + b and b + a are the same bits); a monoid
        # declared commutative may still tell equal values apart (Max of 0.0 and -0.0, of
        # 3 and 3.0), and the native FiBA always combines in time order.
        self._flip = comb if comb is operator.add else (lambda a, b: comb(b, a))
        self._hlift = hlift  # None: identity, skip the call
        self._hlower = hlower
        self._one = monoid.identity
        self._minarity = min_arity
        self._mink = min_arity - 1  # fewest entries of a non-root node
        self._maxk = 2 * min_arity - 1  # most entries of any node
        self._tcls = None
        self._reset()

    # ------------------------------------------------------------------ properties
    @property
    def monoid(self) -> Monoid[In, P, Out]:
        """The monoid this window aggregates with.

        >>> from windowagg.monoids import Sum
        >>> FiBA(Sum()).monoid
        Sum()
        """
        return self._m

    @property
    def min_arity(self) -> int:
        """μ: every non-root node has between μ and 2μ children.

        >>> from windowagg.monoids import Concat, Sum
        >>> FiBA(Sum()).min_arity, FiBA(Concat(), min_arity=2).min_arity
        (8, 2)
        """
        return self._minarity

    # ------------------------------------------------------------------ single operations
    def insert(self, t: Any, v: In) -> None:
        """Insert ``v`` at time ``t``; at an existing ``t`` store ``old ⊗ lift(v)``.

        Amortized O(log d) (O(1) when ``t`` is the youngest), worst case O(log n).
        Raises TimestampError for a NaN/None/incomparable ``t``; when the monoid's lift or
        combine raises on ``v``, its exception propagates and the window is unchanged.

        >>> from windowagg.monoids import Concat
        >>> w = FiBA(Concat()); w.insert(2, "b"); w.insert(1, "a"); w.insert(2, "c")
        >>> w.query()
        ('a', 'b', 'c')
        """
        if t.__class__ is not int or self._tcls is not int:
            self._validate(t)
        lift = self._hlift
        x = v if lift is None else lift(v)
        rf = self._rf
        times = rf.times
        # d = 0 fast path: append at the right finger (a non-root leaf); its right
        # aggregate is extended with one combine. Both combines run before anything
        # changes, so a raising combine leaves the window as it was.
        if rf is not self._lf and t > times[-1]:
            comb = self._combine
            p = rf.parent
            assert p is not None
            loc = comb(rf.loc, x)
            agg = comb(p.agg, loc) if p.parent is not None else loc
            rf.agg = agg
            rf.loc = loc
            times.append(t)
            rf.vals.append(x)
            self._size += 1
            if len(times) > self._maxk:
                try:
                    self._split_rf(rf)
                except BaseException:  # the split's combines: take the entry out again
                    self._rebuild([e for e in self._entries() if e[0] != t], 1)
                    raise
            return
        self._insert_generic(t, x)  # rolls back itself if a combine raises

    def evict(self, t: Any) -> None:
        """Remove the entry at time ``t``; no-op when absent.

        Amortized O(log d) (O(1) for the oldest entry), worst case O(log n).

        >>> from windowagg.monoids import Sum
        >>> w = FiBA(Sum()); w.insert(1, 5); w.insert(2, 7); w.evict(1); w.evict(3)
        >>> w.query(), len(w)
        (7, 1)
        """
        lf = self._lf
        times = lf.times
        # d = 0 fast path: pop the oldest entry; the new left-finger aggregate is the next
        # suffix aggregate, no combine. No timestamp check needed: t equals a stored
        # timestamp (None and NaN never do).
        if times and times[0] == t:
            v0 = lf.vals[0]
            del times[0]
            del lf.vals[0]
            self._size -= 1
            suf = self._lsuf
            suf.pop()
            if suf:
                lf.agg = suf[-1]
            else:
                p = lf.parent
                lf.agg = p.agg if p is not None and p.parent is not None else self._one
            if len(times) < self._mink and lf.parent is not None:
                try:
                    self._lf_underflow(lf)
                except BaseException:  # the rebalance's combines: put the entry back
                    self._rebuild([(t, v0), *self._entries()], -1)
                    raise
            return
        if t.__class__ is not int or self._tcls is not int:
            if self._root.kids is None and not self._root.times:
                check_timestamp(t, None)
                return
            self._validate(t)
        if not times:
            return  # empty window
        self._evict_general(t)

    # ------------------------------------------------------------------ queries
    def query(self) -> Out:
        """``lower(v1 ⊗ … ⊗ vn)`` in time order; ``lower(identity)`` when empty. O(1).

        >>> from windowagg.monoids import Sum
        >>> w = FiBA(Sum()); w.query()
        0
        """
        root = self._root
        lower = self._hlower
        if root.kids is None:
            res: Out = root.agg if lower is None else lower(root.agg)
            return res
        comb = self._combine
        a = comb(comb(self._lf.agg, root.agg), self._rf.agg)
        res = a if lower is None else lower(a)
        return res

    def oldest(self) -> Any:
        """The smallest timestamp, or None when empty. O(1).

        >>> from windowagg.monoids import Sum
        >>> w = FiBA(Sum()); w.oldest() is None
        True
        """
        times = self._lf.times
        return times[0] if times else None

    def youngest(self) -> Any:
        """The largest timestamp, or None when empty. O(1).

        >>> from windowagg.monoids import Sum
        >>> w = FiBA(Sum()); w.insert(4, 1); w.insert(9, 1); w.youngest()
        9
        """
        times = self._rf.times
        return times[-1] if times else None

    def __len__(self) -> int:
        """Number of distinct timestamps. O(1) amortized (drains the bulk-evict graveyard).

        >>> from windowagg.monoids import Sum
        >>> w = FiBA(Sum()); w.bulk_insert([(t, 1) for t in range(100)]); w.bulk_evict(49)
        >>> len(w)
        50
        """
        if self._dead:
            self._drain(-1)
        return self._size

    def __bool__(self) -> bool:
        """True when the window holds an entry. O(1).

        >>> from windowagg.monoids import Sum
        >>> w = FiBA(Sum()); bool(w), w.insert(1, 1), bool(w)
        (False, None, True)
        """
        return bool(self._lf.times)

    def __iter__(self) -> Iterator[tuple[Any, P]]:
        """``(t, partial)`` pairs in time order. O(n) for the whole iteration.

        >>> from windowagg.monoids import Concat
        >>> w = FiBA(Concat()); w.insert(2, "b"); w.insert(1, "a"); list(w)
        [(1, ('a',)), (2, ('b',))]
        """
        return iter(self.to_partials())

    def to_partials(self) -> list[tuple[Any, P]]:
        """All ``(t, partial)`` pairs in time order (the input of ``from_sorted_partials``). O(n).

        >>> from windowagg.monoids import Sum
        >>> w = FiBA(Sum()); w.insert(3, 1); w.insert(3, 2); w.to_partials()
        [(3, 3)]
        """
        return self._entries()

    def range_query(self, t_from: Any, t_to: Any) -> Out:
        """``lower`` of the entries with ``t_from <= t <= t_to`` in time order.

        Identity (lowered) when ``t_from > t_to`` or nothing is in range. Worst case
        O(log d_from + log d_to + log n_sub) with ``n_sub`` the entries in range.

        >>> from windowagg.monoids import Concat
        >>> w = FiBA(Concat())
        >>> for t in range(10): w.insert(t, t)
        >>> w.range_query(3, 6), w.range_query(6, 3), w.range_query(-5, 1)
        ((3, 4, 5, 6), (), (0, 1))
        """
        if self._lf.times:
            ref = self._lf.times[0]
            check_timestamp(t_from, ref, where="t_from")
            check_timestamp(t_to, ref, where="t_to")
        else:
            check_timestamp(t_from, None, where="t_from")
            check_timestamp(t_to, t_from, where="t_to")
            empty: Out = self._lower(self._one)
            return empty
        if t_to < t_from:
            empty = self._lower(self._one)
            return empty
        a = self._search(t_from)[0]
        b = self._search(t_to)[0]
        # Lowest common ancestor. All leaves are at the same depth, so a node's height is
        # found by descending its first children: O(height) <= O(height of the LCA),
        # never a walk to the root. Lift the lower node, then climb both together.
        ha = hb = 0
        x = a
        while x.kids is not None:
            x = x.kids[0]
            ha += 1
        x = b
        while x.kids is not None:
            x = x.kids[0]
            hb += 1
        while ha < hb:
            a = a.parent  # type: ignore[assignment]
            ha += 1
        while hb < ha:
            b = b.parent  # type: ignore[assignment]
            hb += 1
        while a is not b:
            a = a.parent  # type: ignore[assignment]
            b = b.parent  # type: ignore[assignment]
        res: Out = self._lower(self._rq(a, t_from, False, t_to, False))
        return res

    def bulk_evict(self, t: Any) -> None:
        """Remove every entry with time ``<= t``.

        Amortized O(log m) for m removed entries (worst case O(log n)): it cuts the tree
        along the boundary path instead of visiting the removed entries.

        >>> from windowagg.monoids import Sum
        >>> w = FiBA(Sum(), min_arity=2)
        >>> for t in range(20): w.insert(t, t)
        >>> w.bulk_evict(14); w.query(), w.oldest(), len(w)
        (85, 15, 5)
        """
        self._bulk_evict(t)

    # ------------------------------------------------------------------ bulk insert
    def bulk_insert(self, pairs: Iterable[Any], values: Iterable[Any] | None = None) -> None:
        """Insert every ``(t, v)``; equals inserting them one by one in the given order.

        Timestamps may repeat inside the bulk and may collide with stored ones (stored
        value on the left, then the bulk's values in input order). Everything is validated
        and lifted before the window changes; a combine that raises propagates its exception
        and the window is unchanged. Amortized
        O(log d + m (1 + log(d/m))) for a bulk already sorted by time; an unsorted bulk is
        first sorted stably (O(m log m)).

        >>> from windowagg.monoids import Concat
        >>> w = FiBA(Concat()); w.insert(5, "old")
        >>> w.bulk_insert([(7, "b"), (5, "new"), (1, "a"), (7, "c")]); w.query()
        ('a', 'old', 'new', 'b', 'c')
        """
        if values is not None:
            pairs = _zip_bulk(pairs, values)
        self._bulk_insert(pairs)

    # ------------------------------------------------------------------ O(n) build
    @classmethod
    def from_sorted_partials(
        cls,
        monoid: Monoid[Any, Any, Any],
        pairs: Iterable[tuple[Any, Any]],
        min_arity: int | None = None,
    ) -> PyFiBA[Any, Any, Any]:
        """Build a window from strictly increasing ``(t, partial)`` pairs in O(n).

        The partials are stored as given (they are *not* lifted); this restores the state
        written by ``to_partials()`` (e.g. through ``windowagg.codec``).

        >>> from windowagg.monoids import Concat
        >>> w = FiBA.from_sorted_partials(Concat(), [(1, ("a",)), (4, ("b", "c"))])
        >>> w.query(), len(w)
        (('a', 'b', 'c'), 2)
        """
        w = cls(monoid, min_arity)
        items = pairs if isinstance(pairs, list) else list(pairs)
        if not items:
            return w
        ref = items[0][0]
        check_timestamp(ref, None)
        ts: list[Any] = []
        ps: list[Any] = []
        prev = _NONE
        ints = ref.__class__ is int
        for i, (t, p) in enumerate(items):
            if not ints or t.__class__ is not int:  # int vs int: no NaN, comparable
                check_timestamp(t, ref)
            if prev is not _NONE and not prev < t:
                raise TimestampError(
                    f"from_sorted_partials: timestamps must be strictly increasing; "
                    f"entry {i} ({t!r}) follows {prev!r}"
                )
            prev = t
            ts.append(t)
            ps.append(p)
        w._tcls = type(ref)
        w._build(ts, ps)
        return w

    def __repr__(self) -> str:
        return f"ooo.FiBA({self._m!r}, min_arity={self._minarity}, n={len(self)})"


class FiBA(Backed, Generic[In, P, Out]):
    """Finger B-tree aggregator over an out-of-order window (see the module fact card).

    Parameters
    ----------
    monoid
        Any object with ``identity``, ``lift``, ``combine`` and ``lower`` (an instance:
        ``FiBA(Sum())``, not ``FiBA(Sum)``).
    min_arity
        μ >= 2; nodes have between μ and 2μ children (the root: 2 to 2μ). Default
        (None): 8, chosen by ``benchmarks/bench_ooo.py`` (a node refold costs O(μ)
        combines when data arrives out of order; see ``docs/performance/ooo.md``). For
        expensive operators (e.g. large Bloom filters) with out-of-order data, 2-4 is
        faster.

    Examples
    --------
    >>> from windowagg.monoids import Sum
    >>> w = FiBA(Sum())
    >>> w.insert(10, 1); w.insert(5, 2); w.insert(10, 3); w.query(), len(w)
    (6, 2)
    >>> w.evict(5); w.query(), list(w)
    (4, [(10, 4)])
    """

    _hot: ClassVar[tuple[str, ...]] = (
        "insert",
        "evict",
        "bulk_evict",
        "bulk_insert",
        "query",
        "range_query",
        "oldest",
        "youngest",
    )

    def __init__(
        self,
        monoid: Monoid[In, P, Out],
        min_arity: int | None = None,
        *,
        backend: Backend | None = None,
    ) -> None:
        min_arity = check_args(monoid, min_arity)
        if resolve_backend(backend, "FiBA"):
            from windowagg._native.fiba import make  # the compiled core, below this class

            self._hold(make(monoid, min_arity))
        else:
            self._hold(PyFiBA(monoid, min_arity))

    # The verbs, for subclasses (super().insert(t, v)) and readers; an instance calls the
    # implementation's own methods, bound at construction (Backed._hold).
    def insert(self, t: Any, v: In) -> None:
        """Insert ``v`` at time ``t`` (``old ⊗ lift(v)`` at an existing ``t``)."""
        self._impl.insert(t, v)

    def evict(self, t: Any) -> None:
        """Remove the entry at time ``t``."""
        self._impl.evict(t)

    def bulk_evict(self, t: Any) -> None:
        """Remove every entry at or before time ``t``."""
        self._impl.bulk_evict(t)

    def bulk_insert(self, pairs: Iterable[Any], values: Iterable[Any] | None = None) -> None:
        """Insert every ``(t, v)`` (or ``times``, ``values``), as one by one in order."""
        self._impl.bulk_insert(pairs, values)

    def query(self) -> Out:
        """``lower`` of the aggregate of the whole window, in time order."""
        res: Out = self._impl.query()
        return res

    def range_query(self, t_from: Any, t_to: Any) -> Out:
        """``lower`` of the aggregate of the entries with ``t_from <= t <= t_to``."""
        res: Out = self._impl.range_query(t_from, t_to)
        return res

    def oldest(self) -> Any:
        """The oldest timestamp."""
        return self._impl.oldest()

    def youngest(self) -> Any:
        """The youngest timestamp."""
        return self._impl.youngest()

    @property
    def monoid(self) -> Monoid[In, P, Out]:
        """The monoid this window aggregates with. O(1)."""
        m: Monoid[In, P, Out] = self._impl.monoid
        return m

    @property
    def min_arity(self) -> int:
        """μ: every non-root node has between μ and 2μ children. O(1)."""
        mu: int = self._impl.min_arity
        return mu

    def __bool__(self) -> bool:
        return bool(len(self._impl))

    def __iter__(self) -> Iterator[tuple[Any, P]]:
        return iter(self._impl)

    def to_partials(self) -> list[tuple[Any, P]]:
        """``(t, partial)`` of every entry, oldest first. O(n)."""
        res: list[tuple[Any, P]] = self._impl.to_partials()
        return res

    def to_bytes(self) -> bytes:
        """The window's entries as :mod:`windowagg.codec` bytes (either backend reads them)."""
        data: bytes = self._impl.to_bytes()
        return data

    def _check(self) -> None:
        """The implementation's invariants. O(n)."""
        self._impl._check()

    @classmethod
    def from_sorted_partials(
        cls,
        monoid: Monoid[Any, Any, Any],
        pairs: Iterable[tuple[Any, Any]],
        min_arity: int | None = None,
        *,
        backend: Backend | None = None,
    ) -> FiBA[Any, Any, Any]:
        """Build a window from strictly increasing ``(t, partial)`` pairs in O(n).

        The partials are stored as given (they are *not* lifted); this restores the state
        written by ``to_partials()`` (e.g. through ``windowagg.codec``).

        >>> from windowagg.monoids import Concat
        >>> w = FiBA.from_sorted_partials(Concat(), [(1, ("a",)), (4, ("b", "c"))])
        >>> w.query(), len(w)
        (('a', 'b', 'c'), 2)
        """
        w = cls.__new__(cls)
        if resolve_backend(backend, "FiBA"):
            from windowagg._native.fiba import from_sorted

            w._hold(from_sorted(monoid, pairs, check_args(monoid, min_arity)))
        else:
            w._hold(PyFiBA.from_sorted_partials(monoid, pairs, min_arity))
        return w

    @classmethod
    def from_bytes(
        cls,
        data: bytes | bytearray | memoryview,
        monoid: Any,
        *,
        backend: Backend | None = None,
    ) -> FiBA[Any, Any, Any]:
        """A window over *monoid* holding the entries in *data* (``to_bytes`` of either
        backend), with the saved ``min_arity``. O(n). Any decoding failure is a CodecError."""
        from windowagg import codec
        from windowagg.ooo._fiba_arrays import load_state

        with codec.decoding("FiBA.from_bytes"):
            mu, entries = load_state(data)
            return cls.from_sorted_partials(monoid, entries, min_arity=mu, backend=backend)

    def __reduce__(self) -> tuple[Any, ...]:
        if self.backend == "python":
            return (_unpickle_held, (type(self), self._impl))
        return (_unpickle_bytes, (type(self), self.to_bytes(), self.monoid))


def _unpickle_held(cls: type[FiBA[Any, Any, Any]], impl: Any) -> Any:
    w = cls.__new__(cls)
    w._hold(impl)
    return w


def _unpickle_bytes(cls: type[FiBA[Any, Any, Any]], data: bytes, monoid: Any) -> Any:
    return cls.from_bytes(data, monoid, backend="native")
