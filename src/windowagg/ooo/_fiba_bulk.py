"""FiBA's bulk operations: ``bulk_evict`` (VLDB 2023 §4) and ``bulk_insert`` (§5).

A base of :class:`windowagg.ooo.FiBA` (public methods, costs and the fact card in
``ooo/fiba.py``; the tree machinery in ``ooo/_fiba_tree.py``).

* ``bulk_evict(t)`` searches the boundary path of ``t`` with a finger, cuts every node on
  it (the subtrees left of the path go to the graveyard uncounted), repairs underflows
  along the path by batch moves or merges with the right neighbour, marks the new left
  spine and repairs the aggregates: O(log m) amortized for m removed entries.
* ``bulk_insert`` sorts the bulk stably, finds every entry's place with a finger search
  (step 1; timestamps already stored are combined in place), then interleaves and splits
  level by level, coalescing the treelets by target node (step 2), and repairs the spines
  (step 3). A bulk younger than the window skips the search (O(m)); a bulk into an empty
  window is built bottom-up (O(m)). Both are atomic under a raising ``combine``.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from windowagg._time import check_timestamp
from windowagg.ooo._fiba_tree import _FIRST, _NONE, _FiBATree, _Node


class _FiBABulk(_FiBATree):
    """Bulk eviction and bulk insertion (a base of :class:`windowagg.ooo.FiBA`)."""

    __slots__ = ()

    if TYPE_CHECKING:  # defined by FiBA (ooo/fiba.py): the single evict, d = 0 fast path

        def evict(self, t: Any) -> None: ...

    # ------------------------------------------------------------------ bulk evict
    def _bulk_evict(self, t: Any) -> None:
        """``bulk_evict`` (the public method states the cost)."""
        root = self._root
        if root.kids is None and not root.times:
            check_timestamp(t, None)
            return
        self._validate(t)
        lt = self._lf.times
        if t < lt[0]:
            return
        if len(lt) >= 2 and t < lt[1]:
            # only the oldest entry goes (a sliding window's usual step): the single evict,
            # as the native FiBA does; both must leave the same shape, since the shape
            # fixes how floats are associated
            self.evict(lt[0])
            return
        # Atomic: the entries that go are either cut off whole (the graveyard keeps them
        # until drained) or deleted in place (recorded in _cut), and every move and merge
        # finishes before its combines; if a combine raises, the window is rebuilt from
        # them and the tree's entries (O(n), only on that error path).
        ndead = len(self._dead)
        cut: list[tuple[Any, Any]] = []
        self._cut = cut
        try:
            self._bulk_evict_cut(t)
        except BaseException:
            gone = list(cut)
            stack = self._dead[ndead:]  # cut-off subtrees (a kids list may be emptied)
            while stack:
                y = stack.pop()
                gone.extend(zip(y.times, y.vals, strict=True))
                stack.extend(y.kids or ())
            self._cut = None
            # the count still holds the cut-off entries and no longer the deleted ones;
            # entries above the failing level may still be <= t, so sort all (two runs)
            pairs = sorted([*self._entries(), *sorted(gone, key=_FIRST)], key=_FIRST)
            self._rebuild(pairs, -len(gone))
            raise
        finally:
            self._cut = None

    def _bulk_evict_cut(self, t: Any) -> None:
        """The cut of ``bulk_evict(t)`` (*t* valid, the window not empty)."""
        levels = self._boundary(t)
        mink = self._mink
        skip_until: _Node | None = None
        top: _Node | None = None
        first = True
        for node, nb, anc in reversed(levels):
            if nb is not None and not first:
                self._fix_if_up(nb)
            if skip_until is None or skip_until is node:
                skip_until = None
                self._evict_prefix(node, t)
                if nb is None:  # node is the root or on the right spine
                    self._make_root(node, first)
                    top = self._root
                    break
                if node.parent is None or len(node.times) >= mink:
                    top = node
                else:
                    assert anc is not None
                    deficit = mink - len(node.times)
                    surplus = len(nb.times) - mink
                    if deficit <= surplus:
                        self._move_batch(node, nb, anc, deficit)
                    elif node.parent is anc:
                        ak = anc.kids
                        assert ak is not None
                        self._merge(anc, ak.index(node))
                    else:
                        self._merge_not_sibling(node, nb, anc)
                        skip_until = anc
                    top = anc
            survivor = node if skip_until is None else nb
            assert survivor is not None
            self._mark_left(survivor, first)
            first = False
        assert top is not None
        if top.parent is None:
            hit_l = hit_r = True
            if top.kids is not None and not top.times:
                self._height_decrease()
                top = self._root
        elif len(top.times) >= mink:
            hit_l, hit_r = top.ls, top.rs
        else:
            top, hit_l, hit_r = self._rebalance_evict(top, None)
        self._repair(top, hit_l, hit_r)

    def _boundary(self, t: Any) -> list[tuple[_Node, _Node | None, _Node | None]]:
        """Boundary search: (node, right neighbour, their common ancestor) per level."""
        node = self._root
        if node.kids is not None:
            rt = node.times
            if t < rt[0]:
                node = self._lf
                while node.parent is not None and node.times[-1] < t:
                    node = node.parent
            elif t > rt[-1]:
                node = self._rf
                while node.parent is not None and t < node.times[0]:
                    node = node.parent
        nb: _Node | None
        anc = node.parent
        if anc is None:
            nb = None
        else:
            ak = anc.kids
            assert ak is not None
            j = ak.index(node)
            nb = ak[j + 1] if j < len(ak) - 1 else None
        levels: list[tuple[_Node, _Node | None, _Node | None]] = [(node, nb, anc)]
        while node.kids is not None:
            times = node.times
            i = bisect_left(times, t)
            if i < len(times) and times[i] == t:
                break
            if i == len(times):
                if nb is not None:
                    nbk = nb.kids
                    assert nbk is not None
                    nb = nbk[0]
            else:
                anc, nb = node, node.kids[i + 1]
            node = node.kids[i]
            levels.append((node, nb, anc))
        return levels

    def _evict_prefix(self, y: _Node, t: Any) -> None:
        """Drop y's entries <= t and the children left of them."""
        times = y.times
        k = bisect_left(times, t)
        if k < len(times) and times[k] == t:
            k += 1
        if k:
            if self._cut is not None:
                self._cut.extend(zip(times[:k], y.vals[:k], strict=True))
            kids = y.kids
            if kids is not None:
                self._discard(kids[:k])
                del kids[:k]
            del times[:k]
            del y.vals[:k]
            self._size -= k
        self._fix_if_up(y)

    def _mark_left(self, y: _Node, down_to_leaf: bool) -> None:
        if y.parent is not None:
            y.ls = True
        if down_to_leaf:
            while y.kids is not None:
                y = y.kids[0]
                y.ls = True
            self._lf = y

    def _make_root(self, node: _Node, first: bool) -> None:
        new = node
        if node.kids is not None and not node.times:
            new = node.kids[0]
        if new is not self._root:
            p = new.parent
            assert p is not None and p.kids is not None and p.kids[-1] is new
            p.kids.pop()
            self._discard([self._root])
        new.parent = None
        new.ls = new.rs = False
        self._root = new
        self._mark_left(new, first)
        if new.kids is None:
            self._rf = new
        self._fix(new)

    def _move_batch(self, node: _Node, nb: _Node, anc: _Node, k: int) -> None:
        """node takes k entries (and k children) from its right neighbour nb via anc."""
        a = bisect_left(anc.times, nb.times[0]) - 1
        node.times.append(anc.times[a])
        node.times.extend(nb.times[: k - 1])
        node.vals.append(anc.vals[a])
        node.vals.extend(nb.vals[: k - 1])
        if node.kids is not None:
            assert nb.kids is not None
            moved = nb.kids[:k]
            del nb.kids[:k]
            for c in moved:
                c.parent = node
            node.kids.extend(moved)
        anc.times[a] = nb.times[k - 1]
        anc.vals[a] = nb.vals[k - 1]
        del nb.times[:k]
        del nb.vals[:k]
        self._fix_if_up(node)
        self._fix_if_up(nb)

    def _merge_not_sibling(self, node: _Node, nb: _Node, anc: _Node) -> None:
        """Prepend node (the last child of its parent) and the separator to nb."""
        a = bisect_left(anc.times, nb.times[0]) - 1
        nb.times[:0] = [*node.times, anc.times[a]]
        nb.vals[:0] = [*node.vals, anc.vals[a]]
        if nb.kids is not None:
            assert node.kids is not None
            for c in node.kids:
                c.parent = nb
            nb.kids[:0] = node.kids
            node.kids = None
        p = node.parent
        assert p is not None and p.kids is not None and p.kids[-1] is node
        p.kids.pop()
        node.parent = None
        ak = anc.kids
        assert ak is not None
        if self._cut is not None:  # anc's entries before the separator go
            self._cut.extend(zip(anc.times[:a], anc.vals[:a], strict=True))
        self._discard(ak[: a + 1])
        self._size -= a  # anc's entries before the separator; the separator moved to nb
        del ak[: a + 1]
        del anc.times[: a + 1]
        del anc.vals[: a + 1]
        self._fix_if_up(nb)

    # ------------------------------------------------------------------ bulk insert
    def _bulk_insert(self, pairs: Iterable[tuple[Any, Any]]) -> None:
        """``bulk_insert`` (the public method states the cost)."""
        items = pairs if isinstance(pairs, list) else list(pairs)
        if not items:
            return
        root = self._root
        empty = root.kids is None and not root.times
        ref = items[0][0] if empty else self._lf.times[0]
        if empty:
            check_timestamp(ref, None)
        lift = self._hlift
        ts: list[Any] = []
        ps: list[Any] = []
        ordered = True
        prev = items[0][0]
        ints = ref.__class__ is int and (empty or self._tcls is int)
        for t, v in items:
            if not ints or t.__class__ is not int:  # int vs int: no NaN, comparable
                check_timestamp(t, ref)
            if t < prev:
                ordered = False
            prev = t
            ts.append(t)
            ps.append(v if lift is None else lift(v))
        if not ordered:
            order = sorted(range(len(ts)), key=ts.__getitem__)  # stable
            ts = [ts[i] for i in order]
            ps = [ps[i] for i in order]
        if empty:
            ts, ps = self._coalesce(ts, ps)  # combines only the bulk's own values
            self._tcls = type(ref)
            try:
                self._build(ts, ps)
            except BaseException:
                self._rebuild([], len(ts))  # it was empty
                raise
        else:
            self._bulk_insert_sorted(ts, ps)  # leaves the window as it was if a combine raises
        if self._dead:
            self._drain(2 * len(ts))

    def _coalesce(self, ts: list[Any], ps: list[Any]) -> tuple[list[Any], list[Any]]:
        """Combine runs of equal timestamps (sorted input) in order. O(m)."""
        comb = self._combine
        out_t: list[Any] = []
        out_p: list[Any] = []
        last = _NONE
        for t, p in zip(ts, ps, strict=True):
            if last is not _NONE and t == last:
                out_p[-1] = comb(out_p[-1], p)
            else:
                out_t.append(t)
                out_p.append(p)
                last = t
        return out_t, out_p

    def _bulk_insert_sorted(self, ts: list[Any], ps: list[Any]) -> None:
        """Bulk insertion of time-sorted entries (equal times allowed, combined in order).

        Atomic: if a ``combine`` raises, the window is left exactly as before (step 1
        undoes its in-place combines; after it, a rebuild without the new keys, O(n) on
        that error path only).
        """
        rf = self._rf
        if rf.times and ts[0] > rf.times[-1]:
            # Streaming case: the whole bulk is younger than the window. No search: the
            # right finger takes every entry, then splits into pieces as needed. O(m).
            ts, ps = self._coalesce(ts, ps)
            youngest = rf.times[-1]
            self._size += len(ts)
            pre_nxt: list[list[Any]] = []
            try:
                pieces = self._place(rf, rf.times + ts, rf.vals + ps, None, pre_nxt)
                self._pass_up([], [{}], pieces, pre_nxt)
            except BaseException:  # a combine refused a new value: take them all out
                self._rebuild([e for e in self._entries() if e[0] <= youngest], len(ts))
                raise
            return
        # Step 1: insertion-site search with a finger, climbing only to the common ancestor.
        groups: list[list[Any]] = []  # [leaf, members] in time order, members: (t, v, None)
        recomp: list[dict[int, _Node]] = [{}]  # per level: nodes whose aggregate must be redone
        stack: list[tuple[_Node, Any, int]] = []  # (node, exclusive upper bound or _NONE, level)
        node = self._rf
        level = 0
        t0 = ts[0]
        while node.parent is not None and t0 < node.times[0]:
            node = node.parent
            level += 1
        stack.append((node, _NONE, level))
        # (t, value before the bulk) of every stored entry the bulk combines into, in time
        # order: the only changes step 1 makes, undone if a combine raises
        undo: list[tuple[Any, Any]] = []
        try:
            self._bulk_step1(ts, ps, stack, groups, recomp, undo)
        except BaseException:
            for t, old in reversed(undo):
                node, i, _ = self._search(t)
                node.vals[i] = old
            raise
        added = sum(len(g[1]) for g in groups)
        self._size += added
        try:
            self._pass_up(groups, recomp, [], [])
        except BaseException:
            # new entries are placed and aggregates half-repaired: rebuild without the new
            # keys, with the old values of the stored keys the bulk combined into
            new_ts = [m[0] for g in groups for m in g[1]]
            undo_ts = [t for t, _ in undo]
            kept: list[tuple[Any, Any]] = []
            for t, p in self._entries():
                j = bisect_left(new_ts, t)
                if j < len(new_ts) and new_ts[j] == t:
                    continue
                j = bisect_left(undo_ts, t)
                kept.append((t, undo[j][1] if j < len(undo_ts) and undo_ts[j] == t else p))
            self._rebuild(kept, added)
            raise

    def _bulk_step1(
        self,
        ts: list[Any],
        ps: list[Any],
        stack: list[tuple[_Node, Any, int]],
        groups: list[list[Any]],
        recomp: list[dict[int, _Node]],
        undo: list[tuple[Any, Any]],
    ) -> None:
        """Step 1 of a bulk insertion: find every entry's place with a finger search.

        A timestamp already stored is combined in place (its old value goes to *undo*,
        once); a new one joins its leaf's group. Aggregates are not touched here.
        """
        comb = self._combine
        last_t = _NONE
        last_member: list[Any] | None = None  # [t, v] of the previous new entry
        node, _, level = stack[-1]
        found_at: tuple[_Node, int] = (node, 0)  # where the previous stored entry was found
        for idx in range(len(ts)):
            t = ts[idx]
            v = ps[idx]
            if last_t is not _NONE and t == last_t:
                # duplicate inside the bulk: combine with what the previous one produced
                if last_member is not None:
                    last_member[1] = comb(last_member[1], v)
                else:
                    node, i = found_at
                    node.vals[i] = comb(node.vals[i], v)  # its old value is in undo already
                continue
            last_t = t
            while True:
                hi = stack[-1][1]
                if hi is _NONE or t < hi:
                    break
                stack.pop()
            node, hi, level = stack[-1]
            while True:
                times = node.times
                i = bisect_left(times, t)
                if i < len(times) and times[i] == t:
                    old_v = node.vals[i]
                    node.vals[i] = comb(old_v, v)
                    undo.append((t, old_v))
                    found_at = (node, i)
                    last_member = None
                    while len(recomp) <= level:
                        recomp.append({})
                    recomp[level][id(node)] = node
                    break
                kids = node.kids
                if kids is None:
                    last_member = [t, v]
                    if groups and groups[-1][0] is node:
                        groups[-1][1].append(last_member)
                    else:
                        groups.append([node, [last_member]])
                    break
                node = kids[i]
                if i < len(times):
                    hi = times[i]
                level -= 1
                stack.append((node, hi, level))

    def _pass_up(
        self,
        groups: list[list[Any]],
        recomp: list[dict[int, _Node]],
        pre_changed: list[_Node],
        pre_nxt: list[list[Any]],
    ) -> None:
        """Steps 2 and 3 of bulk insertion: interleave/split level by level, then the spines.

        *groups* are the level-0 targets with their new members; *pre_changed* and
        *pre_nxt* carry a level-0 node that was already given its entries (append path).
        """
        # Step 2a: level-by-level pass up (interleave, split), coalescing by target node.
        # Structure only, no combine: the keys are whole before any combine runs, so an
        # error path can read every entry back from the tree (bulk_insert's atomicity).
        pieces: list[list[_Node]] = []  # per level: the nodes that absorbed members
        level = 0
        cur = groups
        while cur or (level == 0 and pre_changed):
            nxt: list[list[Any]] = pre_nxt if level == 0 else []
            changed: list[_Node] = list(pre_changed) if level == 0 else []
            for y, members in cur:
                changed.extend(self._absorb(y, members, nxt))
            pieces.append(changed)
            cur = nxt
            level += 1
        # Step 2b: the aggregates, bottom-up: the changed nodes, and the parents of every
        # node whose aggregate changed (spine nodes wait for step 3).
        top_l: _Node | None = None
        top_r: _Node | None = None
        root_touched = False
        level = 0
        while level < len(pieces) or level < len(recomp):
            todo: dict[int, _Node] = {}
            for y in pieces[level] if level < len(pieces) else ():
                todo[id(y)] = y
            if level < len(recomp):
                todo.update(recomp[level])
            if not todo and not any(recomp[level:]) and level >= len(pieces):
                break
            if len(recomp) <= level + 1:
                recomp.append({})
            up_rc = recomp[level + 1]
            for y in todo.values():
                p = y.parent
                if p is None:
                    root_touched = True
                elif y.ls or y.rs:
                    if y.ls:
                        top_l = y
                    if y.rs:
                        top_r = y
                else:
                    self._fix(y)
                    up_rc[id(p)] = p
            level += 1
        # Step 3: pass down the spines that were touched.
        fix = self._fix
        root = self._root
        if root_touched:
            fix(root)
        for top, side in ((top_l, 0), (top_r, -1)):
            if top is not None and top.parent is not None:
                n = top
                fix(n)
                while n.kids is not None:
                    n = n.kids[side]
                    fix(n)

    def _absorb(self, y: _Node, members: list[list[Any]], nxt: list[list[Any]]) -> list[_Node]:
        """Interleave members (t, v[, child]) into y; split into pieces if it overflows.

        Promoted separators become members of y's parent in *nxt*. Returns the pieces.
        """
        times, vals, kids = y.times, y.vals, y.kids
        nt: list[Any] = []
        nv: list[Any] = []
        nk: list[_Node] | None = None if kids is None else [kids[0]]
        n = len(times)
        i = 0
        for m in members:
            t = m[0]
            while i < n and times[i] < t:
                nt.append(times[i])
                nv.append(vals[i])
                if nk is not None:
                    assert kids is not None
                    nk.append(kids[i + 1])
                i += 1
            nt.append(t)
            nv.append(m[1])
            if nk is not None:
                nk.append(m[2])
        nt.extend(times[i:])
        nv.extend(vals[i:])
        if nk is not None:
            assert kids is not None
            nk.extend(kids[i + 1 :])
        return self._place(y, nt, nv, nk, nxt)

    def _place(
        self,
        y: _Node,
        nt: list[Any],
        nv: list[Any],
        nk: list[_Node] | None,
        nxt: list[list[Any]],
    ) -> list[_Node]:
        """Give y the merged entries; bulk-split it into pieces when they overflow it."""
        maxk = self._maxk
        if len(nt) <= maxk:
            y.times, y.vals = nt, nv
            if nk is not None:
                for c in nk:
                    c.parent = y
                y.kids = nk
            return [y]
        # bulkSplit: pieces of arity μ+1 while the rest exceeds 2μ; the rest is μ..2μ.
        mu = self._minarity
        if y.parent is None:
            self._height_increase()
        p = y.parent
        assert p is not None
        was_rs = y.rs
        y.rs = False
        pieces: list[_Node] = []
        pos = 0
        total = len(nt)
        cur = y
        while total - pos > maxk:
            self._fill(cur, nt[pos : pos + mu], nv[pos : pos + mu], nk, pos, mu + 1)
            pieces.append(cur)
            new = _Node([], [], None, p)
            member = [nt[pos + mu], nv[pos + mu], new]
            if nxt and nxt[-1][0] is p:
                nxt[-1][1].append(member)
            else:
                nxt.append([p, [member]])
            cur = new
            pos += mu + 1
        self._fill(cur, nt[pos:], nv[pos:], nk, pos, total - pos + 1)
        pieces.append(cur)
        if was_rs:
            cur.rs = True
        if self._rf is y:
            self._rf = cur
        return pieces

    @staticmethod
    def _fill(
        y: _Node, nt: list[Any], nv: list[Any], nk: list[_Node] | None, pos: int, arity: int
    ) -> None:
        y.times = nt
        y.vals = nv
        if nk is not None:
            ks = nk[pos : pos + arity]
            for c in ks:
                c.parent = y
            y.kids = ks
