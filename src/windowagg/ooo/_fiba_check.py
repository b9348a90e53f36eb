"""FiBA's invariant check: ``_check()``, O(n), for tests (never on a hot path).

A base of :class:`windowagg.ooo.FiBA`. It recomputes every stored aggregate with the
position-aware formulas of ``_FiBATree._fix`` (exact comparison: the same left folds, so
float aggregates agree bit for bit) and verifies the size without draining the graveyard.
"""

from __future__ import annotations

from typing import Any

from windowagg._invariants import same
from windowagg.errors import InvariantError
from windowagg.ooo._fiba_tree import _NONE, _FiBATree, _Node


class _FiBACheck(_FiBATree):
    """The O(n) invariant check (a base of :class:`windowagg.ooo.FiBA`)."""

    __slots__ = ()

    # ------------------------------------------------------------------ invariants
    def _check(self) -> None:
        """Verify every invariant in O(n); raise InvariantError naming the first broken one.

        Checks: leaf depth, arity bounds, key order (within nodes and across subtrees),
        parent pointers, spine flags, fingers, every stored aggregate against its
        position-aware formula, the left finger's suffix aggregates, and the size.

        >>> from windowagg.monoids import Sum
        >>> from windowagg.ooo import FiBA
        >>> w = FiBA(Sum(), min_arity=2)
        >>> for t in range(50): w.insert(t, 1)
        >>> w._check()
        """
        root = self._root
        if root.parent is not None:
            raise InvariantError("FiBA: root has a parent")
        if root.ls or root.rs:
            raise InvariantError("FiBA: root carries a spine flag")
        # the live entries, from the count minus what the graveyard still holds; len()
        # would drain the graveyard and hide a miscount of the pending entries
        count = self._size - self._pending()
        leaf_depth: list[int] = []
        seen = [0]
        mink, maxk = self._mink, self._maxk

        def walk(y: _Node, depth: int, lo: Any, hi: Any, ls: bool, rs: bool) -> None:
            where = f"node {y.times!r} at depth {depth}"
            k = len(y.times)
            if len(y.vals) != k:
                raise InvariantError(f"FiBA: {where}: times and vals differ in length")
            if y.parent is not None and not (mink <= k <= maxk):
                raise InvariantError(f"FiBA: {where}: {k} entries, allowed {mink}..{maxk}")
            if y.parent is None and k > maxk:
                raise InvariantError(f"FiBA: root {where}: {k} entries > {maxk}")
            if y.parent is None and y.kids is not None and k < 1:
                raise InvariantError("FiBA: inner root without entries")
            for i in range(1, k):
                if not y.times[i - 1] < y.times[i]:
                    raise InvariantError(f"FiBA: {where}: keys not increasing at {i}")
            if k and lo is not _NONE and not lo < y.times[0]:
                raise InvariantError(f"FiBA: {where}: key {y.times[0]!r} not above {lo!r}")
            if k and hi is not _NONE and not y.times[-1] < hi:
                raise InvariantError(f"FiBA: {where}: key {y.times[-1]!r} not below {hi!r}")
            if y.ls != ls or y.rs != rs:
                raise InvariantError(
                    f"FiBA: {where}: spine flags ls={y.ls} rs={y.rs}, expected ls={ls} rs={rs}"
                )
            seen[0] += k
            if y.kids is None:
                leaf_depth.append(depth)
            else:
                if len(y.kids) != k + 1:
                    raise InvariantError(f"FiBA: {where}: {len(y.kids)} children for {k} keys")
                top = y.parent is None
                for i, c in enumerate(y.kids):
                    if c.parent is not y:
                        raise InvariantError(f"FiBA: child {i} of {where} has a wrong parent")
                    walk(
                        c,
                        depth + 1,
                        y.times[i - 1] if i > 0 else lo,
                        y.times[i] if i < k else hi,
                        i == 0 and (top or ls),
                        i == k and (top or rs),
                    )
            saved = self._lsuf
            old, old_loc = y.agg, y.loc
            self._fix(y)
            new, new_loc = y.agg, y.loc
            recomputed_suffix = self._lsuf
            y.agg, y.loc = old, old_loc
            self._lsuf = saved
            spine_inner = y.parent is not None and y.ls != y.rs and (y.kids is not None or y.rs)
            if spine_inner and not (old_loc is new_loc or same(old_loc, new_loc)):
                raise InvariantError(f"FiBA: {where}: stored spine part {old_loc!r} != {new_loc!r}")
            if not (old is new or same(old, new)):
                raise InvariantError(f"FiBA: {where}: stored aggregate {old!r} != {new!r}")
            if y is self._lf and not same(recomputed_suffix, saved):
                raise InvariantError(
                    f"FiBA: left finger suffix aggregates {saved!r} != {recomputed_suffix!r}"
                )

        walk(root, 0, _NONE, _NONE, False, False)
        if len(set(leaf_depth)) > 1:
            raise InvariantError(f"FiBA: leaves at different depths {sorted(set(leaf_depth))}")
        lf = root
        while lf.kids is not None:
            lf = lf.kids[0]
        rf = root
        while rf.kids is not None:
            rf = rf.kids[-1]
        if self._lf is not lf:
            raise InvariantError("FiBA: left finger is not the leftmost leaf")
        if self._rf is not rf:
            raise InvariantError("FiBA: right finger is not the rightmost leaf")
        if seen[0] != count:
            raise InvariantError(f"FiBA: size {count} but the tree holds {seen[0]} entries")
