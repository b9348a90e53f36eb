"""Exact quantiles of a pane layout's windows: pane values in pieces, rank bands at a cursor.

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
in memory          per column and quantile one :class:`~.bands.RankBand` over the values
                   of the panes ``held = (a, b)``: the *cursor*. A band keeps the values near
                   its quantile's rank in an
                   :class:`~windowagg.order_statistics.OrderStatistics` (natively a counted
                   B+ tree) and only counts those below and above it. Emitting window k
                   moves the cursor to ``(k*s, k*s + w - 1)``: the values of the panes
                   entering and leaving (sorted pieces) are split by two binary searches
                   per band, and only those inside a band touch its multiset; then one
                   ``kth`` per quantile (the nearest rank, exact integers, as
                   :func:`~.ranks.nearest_rank`). A band whose rank leaves it is rebuilt
                   from the held panes' values (one partition). Events landing in a held
                   pane move in at once. The cursor is a cache of the pieces: restored
                   states and rolled-back steps start it empty; a new cursor's bands are
                   built at its first window. Several overlapping windows with no cursor
                   over the first (a restored state's micro-batch) are answered by one
                   scratch slide over their span instead (the same values read), the
                   cursor left at the last window, built when it next moves
ordering           any: a multiset needs no order of arrival (late events are inserts)
operator needs     a total order on the values (finite floats: admission refuses NaN and
                   +-inf, as :func:`windowagg.pandas.window_agg` does)
time               per micro-batch: O(panes entering or leaving the cursor x log pane +
                   their values inside the bands x log band) + one ``kth`` per emitted
                   window and quantile, plus the bands' rebuilds: O(window values) each,
                   paid for by window / 2 values moved since the last one except at most
                   log2(window / 256) times per band (see :mod:`.bands`); windows are
                   emitted in ascending order, so the cursor moves forward by the new
                   windows' span, and back and forth by the revised windows' span (bounded
                   by the lateness). A cursor that jumps past every held pane is dropped,
                   O(1), and its bands rebuilt at the next window (O(window values): also
                   the cost of an exact quantile over state read from a store, see
                   ``docs/engine.md``)
space              O(window + lateness) values per column: an exact quantile needs them
paper              panes: Li et al., SIGMOD Record 2005; the bands' multisets: an
                   order-statistic tree (CLRS 14.1) with B+ tree nodes
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
from itertools import accumulate, compress, pairwise, repeat
from operator import is_not, itemgetter
from typing import Any

import numpy as np

from windowagg import codec
from windowagg.errors import CodecError
from windowagg.windows.engine.bands import RankBand
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
#: Whether a micro-batch's windows whose cursor is not built yet (a restored state's) are
#: answered by one scratch slide over their span, the cursor then left at the last window
#: (see :meth:`Values._few`); False: the cursor steps window by window (tests compare both).
_FRESH_SLIDE = True


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
    structure for the cursor's bands (``bulk_insert``, ``bulk_evict``, ``kth``, ``len``).
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
        "gathered",
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
        self._chunks = Pieces(self._decode, store, self._decode_many)
        # per window width (panes; several sizes: one each), the cursor: the held panes
        # (a, b) and per column one rank band of their values per quantile
        self._cursors: dict[int, tuple[tuple[int, int], dict[str, list[RankBand]]]] = {}
        self.inserted = 0
        """Values inserted into the bands' multisets (all columns), since construction."""
        self.evicted = 0
        """Values evicted from the bands' multisets (all columns), since construction."""
        self.gathered = 0
        """Values read to build (or rebuild) a band, since construction."""
        self.scratch = 0
        """Values slid through scratch multisets (short windows, fresh cursors), since
        construction."""

    # ------------------------------------------------------------------ bytes
    def _encode(self, key: int, rec: dict[str, np.ndarray]) -> bytes:
        # one buffer, the columns end to end in the configuration's order (the stored
        # configuration names them): a single codec object per piece
        return codec.dumps(self._buffer(rec))

    def _buffer(self, rec: dict[str, np.ndarray]) -> bytes:
        cols = self._cols
        if len(cols) == 1:
            return np.ascontiguousarray(rec[cols[0]], "<f8").tobytes()
        return b"".join(np.ascontiguousarray(rec[c], "<f8").tobytes() for c in cols)

    def _encode_many(self, keys: list[int], recs: list[dict[str, np.ndarray]]) -> list[bytes]:
        """:meth:`_encode` of every piece, byte for byte, through
        :func:`~windowagg.codec.dumps_bytes`: the pieces' buffers cut from one buffer of
        all their values (one numpy copy, not one per piece). O(pieces' bytes)."""
        if not recs:
            return []
        cols = self._cols
        parts = [rec[c] for rec in recs for c in cols]  # each piece's columns end to end
        data = np.concatenate(parts).astype("<f8", copy=False).tobytes()  # one copy for all
        ends = np.cumsum(np.fromiter(map(len, parts), np.int64, len(parts)) * 8)
        ends = ends[len(cols) - 1 :: len(cols)].tolist()  # where each piece's bytes end
        bufs = [data[a:b] for a, b in zip([0, *ends[:-1]], ends, strict=True)]
        return codec.dumps_bytes(bufs)

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

    def _decode_many(self, keys: list[int], datas: list[bytes]) -> list[dict[str, np.ndarray]]:
        """:meth:`_decode` of every piece: the same arrays (each a view of its own span of
        one decoded buffer), checked finite and sorted by one numpy pass over all of them
        (numpy's fixed cost per call was most of a piece's decode: a restored window reads
        its ~60 panes' values every micro-batch). Anything :meth:`_decode` would refuse is
        decoded piece by piece, which raises its error. O(total size)."""
        k = len(self._cols)
        # the buffers, read without the general decoder (None: not one, or not this version)
        raws = [r for r in codec.loads_bytes(datas) if r]
        if len(raws) < len(datas) or any(len(r) % (8 * k) for r in raws):
            return [self._decode(key, d) for key, d in zip(keys, datas, strict=True)]
        a = np.frombuffer(b"".join(raws), dtype="<f8").astype(np.float64)
        per = [len(r) // (8 * k) for r in raws]  # values per column, piece by piece
        ends = np.repeat(np.asarray(per, dtype=np.int64), k).cumsum()  # column runs' ends
        falls = a[1:] < a[:-1]  # where the values fall: allowed only where a run starts
        falls[ends[:-1] - 1] = False
        if not np.isfinite(a).all() or falls.any():
            return [self._decode(key, d) for key, d in zip(keys, datas, strict=True)]
        cols = self._cols
        if k == 1:  # one column: a slice per piece, cut in one C-level pass
            c0 = cols[0]
            cuts = [0, *accumulate(per)]
            return [{c0: v} for v in map(a.__getitem__, map(slice, cuts, cuts[1:]))]
        out: list[dict[str, np.ndarray]] = []
        at = 0
        for n in per:
            out.append({c: a[at + j * n : at + (j + 1) * n] for j, c in enumerate(cols)})
            at += n * k
        return out

    def piece(self, pane: int) -> bytes:
        """The stored bytes of pane *pane*'s values. O(piece)."""
        return self._chunks.raw(value_key(pane), self._encode)

    def stored(self) -> list[int]:
        """The panes with stored values, ascending. O(stored pieces)."""
        return [k >> _BITS for k in self._chunks.stored() if is_value_key(k)]

    def flush(self, encode: bool) -> tuple[dict[int, bytes], tuple[int, ...]]:
        """The pieces put and deleted since the last flush (*encode* False: ``({}, ())``)."""
        if not encode:
            return self._chunks.flush(None)
        return self._chunks.flush(self._encode, self._encode_many)

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
        ``panes[j]``. Each column is sorted within the panes' runs at once (one
        ``lexsort``); each pane's piece is merged and put; a held pane's new values move
        into the cursors' bands. O(m log m + touched pieces)."""
        cursors = list(self._cursors.values())
        los, his = np.asarray(lo).tolist(), np.asarray(hi).tolist()
        if not los:
            return
        runs = los[1:] == his[:-1]  # the panes' runs end to end (the engine's callers)
        # each column's values sorted within each pane's run, in one sort
        seg = np.repeat(np.arange(len(los)), np.subtract(his, los)) if runs else None
        cols: dict[str, np.ndarray] = {}
        for c in self._cols:
            arr = np.asarray(values[c], dtype=np.float64)
            if seg is not None:
                part = arr[los[0] : his[-1]]
                cols[c] = part[np.lexsort((part, seg))]
            else:  # each pane's run on its own
                cols[c] = np.concatenate([np.sort(arr[a:b]) for a, b in zip(los, his, strict=True)])
        ends = np.cumsum(np.subtract(his, los)).tolist()
        spans = list(zip([0, *ends[:-1]], ends, strict=True))
        if len(cols) == 1:  # one column (the usual case): one dict per pane, no inner loop
            ((c1, v1),) = cols.items()
            news = [{c1: v1[a:b]} for a, b in spans]  # sorted
        else:
            news = [{c: v[a:b] for c, v in cols.items()} for a, b in spans]
        keys = [(p << _BITS) | VALUE_TAG for p in panes]  # value_key, inline
        olds = self._chunks.get_many(keys)
        self._chunks.put_many(
            [
                (key, new)
                if old is None
                else (key, {c: np.sort(np.concatenate([old[c], v])) for c, v in new.items()})
                for key, old, new in zip(keys, olds, news, strict=True)
            ]
        )
        for (a0, b0), sets in cursors:  # a held pane's new values: into the bands
            for p, new in zip(panes, news, strict=True):
                if a0 <= p <= b0:
                    self._shift(sets, new, 1)

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
            panes, recs, fresh = few
            out = self._scratch(starts, width, panes, recs)
            if fresh:  # the cursor left at the last window, its bands built when it next moves
                last = starts[-1]
                self._cursors[width] = ((last, last + width - 1), self._bands())
            return out
        return self._walk(starts, width)

    def _walk(self, starts: list[int], width: int) -> dict[str, np.ndarray]:
        """:meth:`answers_at` by the cursor of *width*, moved window by window. O(moves log
        n + windows x quantiles), plus a band's (re)build where it is not built or its rank
        left it."""
        out = {
            alias: np.empty(len(starts), np.float64) for qs in self._qs.values() for alias, *_ in qs
        }
        for j, a in enumerate(starts):
            sets = self._move(width, a, a + width - 1)
            for c, qs in self._qs.items():
                everything: np.ndarray | None = None  # the window's values, if a band needs them
                for (alias, num, den), band in zip(qs, sets[c], strict=True):
                    got = None
                    if band.built:
                        got = band.kth(nearest_rank(num, den, band.n) - 1)
                    if got is None:  # not built yet, or the rank left the band: (re)build
                        if everything is None:
                            everything = self._gather(width, c)
                        n = len(everything)
                        if not n:
                            raise AssertionError(
                                f"Values: the window at pane {a} holds no value of {c!r}"
                            )
                        k = nearest_rank(num, den, n) - 1
                        self.gathered += n
                        self.inserted += band.build(everything, k)
                        got = band.kth(k)
                    out[alias][j] = got
        return out

    def _few(
        self, starts: list[int], width: int
    ) -> tuple[list[int], list[dict[str, np.ndarray]], bool] | None:
        """The stored panes and their values over the windows' whole span, to slide a
        scratch multiset over (:meth:`_scratch`), and whether the cursor is then left at the
        last window (a fresh one); else None (the cursor steps window by window).

        Two cases take the slide. Short windows: at most :data:`_PER_WINDOW` values per
        window over the span (the cursor's Python step per window would cost more than
        the slide; the cursor is not touched). A *fresh* cursor: several windows, each
        overlapping the next, and no cursor of *width* overlapping the first window (a
        restored state's, every micro-batch): the cursor would build its bands from the
        first window's values and then take in every later pane of the span, i.e. read the
        same values the slide does, with a Python step per window; the slide answers them
        in one native call per column. The cursor is then left at the last window, its
        bands not built: a state kept in memory builds them when it next moves (once: an
        overlapping cursor takes the window-by-window step), a restored one never pays
        for them. O(windows) when neither case holds, O(the span's panes) otherwise."""
        r = len(starts)
        if r < 2:
            return None
        short = starts[-1] + width - starts[0] <= _PER_WINDOW * r
        fresh = _FRESH_SLIDE and self._fresh(starts, width)
        if not (short or fresh):
            return None
        a0 = starts[0]  # every pane of the span, one look-up each
        got = self._chunks.get_many(
            list(range(value_key(a0), value_key(starts[-1] + width), 1 << _BITS))
        )
        at = list(compress(range(len(got)), map(is_not, got, repeat(None))))
        recs = [rec for rec in got if rec is not None]
        if short:  # the values too, else the slide only for a fresh cursor
            short = sum(map(len, map(itemgetter(self._cols[0]), recs))) <= _PER_WINDOW * r
        if not (short or fresh):
            return None
        return [a0 + j for j in at], recs, not short

    def _fresh(self, starts: list[int], width: int) -> bool:
        """Whether the windows at *starts* (ascending, several) each overlap the next and
        no cursor of *width* overlaps the first (the cursor would build its bands there).
        O(windows)."""
        if any(b - a >= width for a, b in pairwise(starts)):
            return False
        got = self._cursors.get(width)
        if got is None:
            return True
        a, b = got[0]
        return starts[0] + width - 1 < a or starts[0] > b  # disjoint: dropped at the first

    def _scratch(
        self, starts: list[int], width: int, panes: list[int], recs: list[dict[str, np.ndarray]]
    ) -> dict[str, np.ndarray]:
        """:meth:`answers_at` by one scratch multiset slid over the span's values in pane
        order (:func:`~.ranks.slide_select`, one native ``kth_slices`` call per column):
        the same nearest ranks; the cursors are not touched (still their panes' values).
        O(span values log w + windows x quantiles)."""
        c0 = self._cols[0]
        firsts = [rec[c0] for rec in recs]
        cum = np.zeros(len(recs) + 1, np.int64)  # where each pane's values start
        np.cumsum(np.fromiter(map(len, firsts), np.int64, len(recs)), out=cum[1:])
        ids = np.asarray(panes, dtype=np.int64)
        a = np.asarray(starts, dtype=np.int64)
        lo = cum[np.searchsorted(ids, a, "left")]
        hi = cum[np.searchsorted(ids, a + (width - 1), "right")]
        out: dict[str, np.ndarray] = {}
        for c, qs in self._qs.items():  # bounds non-decreasing, every window holds a value
            vals = np.concatenate(firsts if c == c0 else [rec[c] for rec in recs])
            got = slide_select(vals, lo, hi, [(n, d) for _, n, d in qs], checked=False)
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
                    self._leave(sets, p)
                self._cursors[width] = ((inside[-1] + 1, b), sets)
        self._chunks.delete_many([(p << _BITS) | VALUE_TAG for p in gone])  # value_key

    # ------------------------------------------------------------------ the cursors
    def _bands(self) -> dict[str, list[RankBand]]:
        """A new cursor's bands: one per column and quantile, not built. O(quantiles)."""
        return {c: [RankBand(self._make) for _ in qs] for c, qs in self._qs.items()}

    def _shift(
        self, sets: dict[str, list[RankBand]], rec: Mapping[str, np.ndarray], sign: int
    ) -> None:
        """Move a pane's values (sorted, per column) into (*sign* +1) or out of (-1) the
        built bands. O(log pane + values inside the bands)."""
        for c in self._cols:
            col = rec[c]
            took = 0
            for band in sets[c]:
                if band.built:
                    took += band.move(col, sign)
            if sign > 0:
                self.inserted += took
            else:
                self.evicted += took

    def _enter(self, sets: dict[str, list[RankBand]], p: int) -> None:
        rec = self._chunks.get(value_key(p))
        if rec is not None:
            self._shift(sets, rec, 1)

    def _leave(self, sets: dict[str, list[RankBand]], p: int) -> None:
        rec = self._chunks.get(value_key(p))
        if rec is not None:
            self._shift(sets, rec, -1)

    def _gather(self, width: int, c: str) -> np.ndarray:
        """Column *c*'s values of the panes the cursor of *width* holds (to build a band).
        O(their values)."""
        (a, b), _ = self._cursors[width]
        held = self._chunks.get_many([value_key(p) for p in self._present(a, b)])  # one decode
        parts = [rec[c] for rec in held]
        return np.concatenate(parts) if parts else np.empty(0, np.float64)

    def _move(self, width: int, a2: int, b2: int) -> dict[str, list[RankBand]]:
        """Have the cursor of *width* hold the panes ``a2..b2``: the values of those
        entering and leaving move through its bands; returns its bands. A cursor disjoint
        from the target is replaced by one whose bands are built at their first window.
        O(panes moved x (log pane + values inside the bands))."""
        present = self._present
        got = self._cursors.get(width)
        if got is None or b2 < got[0][0] or a2 > got[0][1]:
            sets = self._bands()
            self._cursors[width] = ((a2, b2), sets)
            return sets
        (a, b), sets = got
        if any(band.built for bands in sets.values() for band in bands):
            if a2 > a:
                for p in present(a, a2 - 1):
                    self._leave(sets, p)
            if b2 < b:
                for p in present(b2 + 1, b):
                    self._leave(sets, p)
            if a2 < a:
                for p in present(a2, a - 1):
                    self._enter(sets, p)
            if b2 > b:
                for p in present(b + 1, b2):
                    self._enter(sets, p)
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
                held = [self._chunks.get(value_key(p))[c] for p in inside]
                expect = np.concatenate(held) if held else np.empty(0, np.float64)
                for band in sets[c]:
                    if band.built:
                        try:
                            band.check(expect)
                        except AssertionError as e:
                            raise AssertionError(
                                f"Values: a band of {c!r} (width {width}) is not its panes': {e}"
                            ) from e
