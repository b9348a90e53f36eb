"""Exact quantiles of a pane layout's windows: pane values in pieces, one multiset at a cursor.

=================  ==========================================================================
component          the pane layout's (:mod:`.panes`) part for exact quantiles (``p95(v)``,
                   ``median``, ``pNN``: an :class:`~windowagg.exact_quantile.ExactQuantile`
                   in the monoid slot), beside its partials, over the same pane numbering
                   (pane ``p`` = ``[start_time + p*g, start_time + (p+1)*g)``, window ``k``
                   = panes ``k*s .. k*s + w - 1``)
pieces             one per stored pane, key ``(p << 6) | 63`` (:func:`value_key`; tags
                   ``0..top`` are the tree's levels): per quantile column the pane's values,
                   sorted float64, the columns' buffers end to end (one codec bytes
                   object); written when events land in the pane, deleted with the pane
                   (its last window settled)
in memory          per column one :class:`~windowagg.order_statistics.OrderStatistics`
                   (natively a counted B+ tree) holding the values of the panes
                   ``held = (a, b)``: the *cursor*. Emitting window k moves it to ``(k*s,
                   k*s + w - 1)``: the panes entering are inserted (``bulk_insert``), those
                   leaving evicted (``bulk_evict``), one call per pane and column, then one
                   ``kth`` per quantile (the nearest rank, exact integers, as
                   :func:`~.ranks.nearest_rank`). Events landing in a held pane
                   are inserted at once. The cursor is a cache of the pieces: restored
                   states and rolled-back steps start it empty
ordering           any: a multiset needs no order of arrival (late events are inserts)
operator needs     a total order on the values (finite floats: admission refuses NaN and
                   +-inf, as :func:`windowagg.pandas.window_agg` does)
time               per micro-batch: O((values entering or leaving the cursor + events
                   landing in held panes) log n) multiset operations + one ``kth`` per
                   emitted window and quantile; windows are emitted in ascending order, so
                   the cursor moves forward by the new windows' span, and back and forth by
                   the revised windows' span (bounded by the lateness). Nothing is re-sorted
                   or rebuilt, except a cursor that jumps past every held pane (it is
                   dropped, O(1), and refilled) and a restored one (O(window values): the
                   cost of an exact quantile over state read from a store, see
                   ``docs/engine.md``)
space              O(window + lateness) values per column: an exact quantile needs them
paper              panes: Li et al., SIGMOD Record 2005; the multiset: an order-statistic
                   tree (CLRS 14.1) with B+ tree nodes
=================  ==========================================================================

Examples
--------
>>> import numpy as np
>>> v = Values({"v": [("p75_v", 3, 4)]}, width=3, step=1, present=lambda a, b: range(a, b + 1))
>>> v.add([0, 1, 2, 3], np.array([0, 1, 3, 4]), np.array([1, 3, 4, 5]),
...       {"v": np.array([5.0, 1.0, 4.0, 2.0, 3.0])})
>>> v.answers([0])["p75_v"].tolist(), v.answers([1])["p75_v"].tolist()  # 0..2, 1..3
([4.0], [3.0])
>>> v.held, v.inserted, v.evicted  # pane 3 entered, pane 0 left
((1, 3), 5, 1)
>>> v.answers([0, 1])["p75_v"].tolist(), v.scratch  # two short windows: a scratch slide
([4.0, 3.0], 5)
>>> sorted(k >> 6 for k in v.flush(True)[0])  # one piece per pane written
[0, 1, 2, 3]
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from windowagg import codec
from windowagg.errors import CodecError
from windowagg.windows.engine.pieces import Pieces
from windowagg.windows.engine.ranks import nearest_rank, slide_select

__all__ = ["VALUE_TAG", "Values", "value_key"]

#: The low 6 bits of a value piece's key (the pane tree's levels use 0..top <= 62).
VALUE_TAG = 63
_BITS = 6
#: Up to this many panes and values per emitted window, a micro-batch's windows are
#: answered by sliding a scratch multiset over their span (one native call per column)
#: instead of stepping the cursor window by window in Python: the same answers, a
#: constant factor (short windows, many keys: ~1 value per pane); not an algorithm choice
#: by size, the cursor's work bound holds either way (the scratch slide costs at most this
#: many values per window).
_PER_WINDOW = 16


def value_key(pane: int) -> int:
    """The piece key of pane *pane*'s values.

    >>> value_key(0), value_key(2), value_key(-1)
    (63, 191, -1)
    """
    return (pane << _BITS) | VALUE_TAG


def is_value_key(key: int) -> bool:
    """Whether *key* is a value piece's (:func:`value_key`). O(1)."""
    return key & ((1 << _BITS) - 1) == VALUE_TAG


def _default_multiset() -> Any:
    from windowagg.order_statistics import OrderStatistics

    return OrderStatistics()


class Values:
    """The values of one key's panes for its exact quantiles (see the module docstring).

    *quantiles*: per column ``(alias, num, den)`` (:attr:`~.state.Plan.quantiles`);
    *width* and *step*: panes per window (w) and per slide (s); *present(a, b)*: the
    stored panes in ``a..b``, ascending (the pane tree knows them); *store*: the key's
    stored pieces (None: a new state); *multiset*: makes an empty order-statistics
    structure (``bulk_insert``, ``bulk_evict``, ``kth``, ``len``).
    """

    __slots__ = (
        "_chunks",
        "_cols",
        "_cursors",
        "_make",
        "_present",
        "_qs",
        "_s",
        "_w",
        "evicted",
        "inserted",
        "scratch",
    )

    def __init__(
        self,
        quantiles: Mapping[str, Sequence[tuple[str, int, int]]],
        *,
        width: int,
        step: int,
        present: Callable[[int, int], Iterable[int]],
        store: Mapping[int, bytes] | None = None,
        multiset: Callable[[], Any] | None = None,
    ) -> None:
        self._qs = {c: list(q) for c, q in quantiles.items()}
        self._cols = list(self._qs)
        self._w, self._s = int(width), int(step)
        self._present = present
        self._make = multiset or _default_multiset
        self._chunks = Pieces(self._decode, store)
        # per window width (panes; several sizes: one each), the cursor: the held panes
        # (a, b) and per column the multiset of their values
        self._cursors: dict[int, tuple[tuple[int, int], dict[str, Any]]] = {}
        self.inserted = 0
        """Values inserted into the multisets (all columns), since construction."""
        self.evicted = 0
        """Values evicted from the multisets (all columns), since construction."""
        self.scratch = 0
        """Values slid through scratch multisets (short windows), since construction."""

    # ------------------------------------------------------------------ bytes
    def _encode(self, key: int, rec: dict[str, np.ndarray]) -> bytes:
        # one buffer, the columns end to end in the configuration's order (the stored
        # configuration names them): a single codec object per piece
        return codec.dumps(b"".join(rec[c].astype("<f8").tobytes() for c in self._cols))

    def _decode(self, key: int, data: bytes) -> dict[str, np.ndarray]:
        with codec.decoding("a windowagg pane's values"):
            raw = codec.loads(data)
        k = len(self._cols)
        if not isinstance(raw, bytes) or not raw or len(raw) % (8 * k):
            raise CodecError(
                f"piece {key}: not a windowagg pane's values of columns {self._cols} (float64 "
                "buffers end to end): the checkpoint belongs to another query or is corrupted; "
                "use a new one"
            )
        a = np.frombuffer(raw, dtype="<f8").astype(np.float64).reshape(k, -1)
        out: dict[str, np.ndarray] = {}
        for c, col in zip(self._cols, a, strict=True):
            if not np.isfinite(col).all() or (np.diff(col) < 0).any():
                raise CodecError(f"piece {key}: column {c!r} is not sorted finite values")
            out[c] = col
        return out

    def piece(self, pane: int) -> bytes:
        """The stored bytes of pane *pane*'s values. O(piece)."""
        return self._chunks.raw(value_key(pane), self._encode)

    def stored(self) -> list[int]:
        """The panes with stored values, ascending. O(stored pieces)."""
        return [k >> _BITS for k in self._chunks.stored() if is_value_key(k)]

    def flush(self, encode: bool) -> tuple[dict[int, bytes], tuple[int, ...]]:
        """The pieces put and deleted since the last flush (*encode* False: ``({}, ())``)."""
        return self._chunks.flush(self._encode if encode else None)

    @property
    def reads(self) -> tuple[int, int]:
        """Store look-ups and the bytes they returned. O(1)."""
        return self._chunks.reads, self._chunks.read_bytes

    # ------------------------------------------------------------------ undo (records.atomic)
    def begin(self) -> None:
        self._chunks.begin()

    def rollback(self) -> None:
        """Undo the pieces' changes; the multisets may hold values of the undone step, so
        the cursor is dropped (refilled from the pieces by the next window). O(changes)."""
        self._chunks.rollback()
        self._drop_cursor()

    def commit(self) -> None:
        self._chunks.commit()

    def _drop_cursor(self) -> None:
        self._cursors = {}

    @property
    def held(self) -> tuple[int, int] | None:
        """The panes the cursor of the windows' own width holds (None: none). O(1)."""
        got = self._cursors.get(self._w)
        return None if got is None else got[0]

    # ------------------------------------------------------------------ the verbs
    def add(
        self,
        panes: Sequence[int],
        lo: Sequence[int] | np.ndarray,
        hi: Sequence[int] | np.ndarray,
        values: Mapping[str, np.ndarray] | Mapping[str, list[float]],
    ) -> None:
        """Add the admitted events' values: ``values[c][lo[j]:hi[j]]`` land in pane
        ``panes[j]``. Each pane's piece is merged (sorted) and put; a held pane's new
        values go into the multisets. O(m log m + touched pieces)."""
        cursors = list(self._cursors.values())
        cols = {c: values[c] for c in self._cols}
        plain = {c: isinstance(v, list) for c, v in cols.items()}  # a few events: no numpy
        keys = [value_key(p) for p in panes]
        olds = self._chunks.get_many(keys)
        puts: list[tuple[int, dict[str, np.ndarray]]] = []
        for p, key, old, a, b in zip(
            panes, keys, olds, np.asarray(lo).tolist(), np.asarray(hi).tolist(), strict=True
        ):
            rec: dict[str, np.ndarray] = {}
            for c, v in cols.items():
                if plain[c]:
                    part = v[a:b]
                    merged = sorted(part) if old is None else sorted([*old[c].tolist(), *part])
                    rec[c] = np.array(merged, dtype=np.float64)
                else:
                    both = v[a:b] if old is None else np.concatenate([old[c], v[a:b]])
                    rec[c] = np.sort(np.asarray(both, dtype=np.float64))
            puts.append((key, rec))
            for (a0, b0), sets in cursors:  # a held pane's new values: into the multisets
                if a0 <= p <= b0:
                    self._insert(
                        sets, {c: np.asarray(v[a:b], dtype=np.float64) for c, v in cols.items()}
                    )
        self._chunks.put_many(puts)

    def answers(self, ks: Iterable[int]) -> dict[str, np.ndarray]:
        """Every quantile of the windows *ks* (ascending numbers, each holding a stored
        pane), moving the cursor window by window. O(moves log n + windows x quantiles)."""
        return self.answers_at([int(k) * self._s for k in ks], self._w)

    def answers_at(self, starts: Iterable[int], width: int) -> dict[str, np.ndarray]:
        """Every quantile of the windows of *width* panes starting at pane *starts*
        (ascending, each window holding a stored pane), moving that width's cursor window
        by window (several sizes: one cursor per size). O(moves log n + windows x
        quantiles)."""
        starts = [int(a) for a in starts]
        few = self._few(starts, width)
        if few is not None:
            return self._scratch(starts, width, *few)
        out = {
            alias: np.empty(len(starts), np.float64) for qs in self._qs.values() for alias, *_ in qs
        }
        for j, a in enumerate(starts):
            sets = self._move(width, a, a + width - 1)
            for c, qs in self._qs.items():
                ms = sets[c]
                n = len(ms)
                if not n:
                    raise AssertionError(f"Values: the window at pane {a} holds no value of {c!r}")
                for alias, num, den in qs:
                    out[alias][j] = ms.kth(nearest_rank(num, den, n) - 1)
        return out

    def _few(
        self, starts: list[int], width: int
    ) -> tuple[list[int], list[dict[str, np.ndarray]]] | None:
        """The stored panes and their values over the windows' whole span when it holds
        at most :data:`_PER_WINDOW` values per window (short windows: the cursor's Python
        step per window would cost more than sliding a scratch multiset over the span);
        else None. O(windows) when the span is too wide, O(its panes) otherwise."""
        r = len(starts)
        if r < 2 or starts[-1] + width - starts[0] > _PER_WINDOW * r:
            return None
        get = self._chunks.get  # every pane of the span (<= _PER_WINDOW per window)
        span = range(starts[0], starts[-1] + width)
        found = [(p, rec) for p in span if (rec := get(value_key(p))) is not None]
        panes = [p for p, _ in found]
        recs = [rec for _, rec in found]
        c0 = self._cols[0]
        if sum(len(rec[c0]) for rec in recs) > _PER_WINDOW * r:
            return None
        return panes, recs

    def _scratch(
        self, starts: list[int], width: int, panes: list[int], recs: list[dict[str, np.ndarray]]
    ) -> dict[str, np.ndarray]:
        """:meth:`answers_at` by one scratch multiset slid over the span's values in pane
        order (:func:`~.ranks.slide_select`, one native ``kth_slices`` call per column):
        the same nearest ranks; the cursors are not touched (still their panes' values).
        O(span values log w + windows x quantiles)."""
        c0 = self._cols[0]
        cum = np.concatenate([[0], np.cumsum([len(rec[c0]) for rec in recs])]).astype(np.int64)
        ids = np.asarray(panes, dtype=np.int64)
        a = np.asarray(starts, dtype=np.int64)
        lo = cum[np.searchsorted(ids, a, "left")]
        hi = cum[np.searchsorted(ids, a + width - 1, "right")]
        out: dict[str, np.ndarray] = {}
        for c, qs in self._qs.items():
            vals = np.concatenate([rec[c] for rec in recs]) if recs else np.empty(0)
            got = slide_select(vals, lo, hi, [(num, den) for _, num, den in qs])
            out.update({alias: col for (alias, _, _), col in zip(qs, got, strict=True)})
        self.scratch += int(cum[-1]) * len(self._cols)
        return out

    def drop(self, panes: Iterable[int]) -> None:
        """Delete the values of the dead panes *panes* (evicted from the cursor first).
        O(dropped pieces + held values among them)."""
        gone = sorted(panes)
        for width, ((a, b), sets) in list(self._cursors.items()):
            inside = [p for p in gone if a <= p <= b]
            if inside and inside[-1] >= b:
                del self._cursors[width]
            elif inside:
                for p in inside:
                    self._evict(sets, p)
                self._cursors[width] = ((inside[-1] + 1, b), sets)
        self._chunks.delete_many([value_key(p) for p in gone])

    # ------------------------------------------------------------------ the cursors
    def _insert(self, sets: dict[str, Any], rec: Mapping[str, np.ndarray]) -> None:
        for c in self._cols:
            sets[c].bulk_insert(rec[c])
        self.inserted += len(rec[self._cols[0]]) * len(self._cols)

    def _fill(self, sets: dict[str, Any], p: int) -> None:
        rec = self._chunks.get(value_key(p))
        if rec is not None:
            self._insert(sets, rec)

    def _evict(self, sets: dict[str, Any], p: int) -> None:
        rec = self._chunks.get(value_key(p))
        if rec is None:
            return
        for c in self._cols:
            sets[c].bulk_evict(rec[c])  # one call per pane and column
        self.evicted += len(rec[self._cols[0]]) * len(self._cols)

    def _move(self, width: int, a2: int, b2: int) -> dict[str, Any]:
        """Have the cursor of *width* hold the panes ``a2..b2``: insert those entering,
        evict those leaving; returns its multisets. A cursor disjoint from the target is
        dropped and refilled. O(moved values log n)."""
        present = self._present
        got = self._cursors.get(width)
        if got is None or b2 < got[0][0] or a2 > got[0][1]:
            sets = {c: self._make() for c in self._cols}
            for p in present(a2, b2):
                self._fill(sets, p)
            self._cursors[width] = ((a2, b2), sets)
            return sets
        (a, b), sets = got
        if a2 > a:
            for p in present(a, a2 - 1):
                self._evict(sets, p)
        if b2 < b:
            for p in present(b2 + 1, b):
                self._evict(sets, p)
        if a2 < a:
            for p in present(a2, a - 1):
                self._fill(sets, p)
        if b2 > b:
            for p in present(b + 1, b2):
                self._fill(sets, p)
        self._cursors[width] = ((a2, b2), sets)
        return sets

    def _check(self, panes: Iterable[int]) -> None:
        """Invariants (O(stored values)): a piece per stored pane *panes* and no other;
        the multisets hold exactly the held panes' values."""
        want = sorted(panes)
        if self.stored() != want:
            raise AssertionError(f"Values: pieces of panes {self.stored()}, not of {want}")
        for width, ((a, b), sets) in self._cursors.items():
            inside = [p for p in want if a <= p <= b]
            for c in self._cols:
                expect = sorted(
                    x for p in inside for x in self._chunks.get(value_key(p))[c].tolist()
                )
                if list(sets[c]) != expect:
                    raise AssertionError(
                        f"Values: the multiset of {c!r} (width {width}) is not its panes'"
                    )
