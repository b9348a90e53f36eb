"""The pandas functions under the Spark adapter: validation (rejects) and the streaming runner.

No pyspark here: these functions are what Spark's workers call (the batch adapter through
``windowagg.pandas.frame_windows``; streaming's ``transformWithStateInPandas`` /
``applyInPandasWithState`` through ``KeyRunner``), and they run (and are tested) without
Spark.

Bad input is never dropped silently. Every input row either contributes to the windows or
comes out in the *rejects* frame with a reason:

==========================  ===========================================================
reason (prefix)             when
==========================  ===========================================================
``malformed record``        the reader flagged the row (a non-null ``_corrupt_record``)
``null key``                a key column is null
``null timestamp``          the event time is null / NaT (e.g. a cancelled flight)
``NaN timestamp``           a numeric event time is NaN or infinite
``unparsable timestamp``    a text event time is not ISO 8601
``mixed-type timestamp``    the value's type differs from the column's majority type
``null value``              a value column used by an aggregation is null
``not a number``            a value column holds text that is not a number
``bad_value``               a value the aggregation refuses: a non-finite number (NaN,
                            ``inf``, ``-inf``, in a numeric column or as text) in a
                            value column (``bad_value: non-finite value in 'x': inf``),
                            or a value whose monoid ``lift`` raised (``bad_value:
                            ValueError: ...``, the monoid's own error text)
``late``                    (streaming) older than the key's watermark minus the
                            allowed lateness (``late: 2013-02-04T17:59:00Z < lateness
                            bound 2013-02-04T18:00:00Z``, ISO times in UTC)
==========================  ===========================================================

Each reject carries the original row (``row``): one flat JSON object of the input's
columns (timestamps as ISO 8601 in UTC with their full precision).

Batch windows are not computed here: ``windowagg.pandas.frame_windows`` (the function
``windowagg.pandas.window_agg`` and the Spark batch adapter run per key) validates with
:func:`validate` and computes windows with the engine (:mod:`windowagg.windows.engine`).
What is left here besides validation is the streaming ``KeyRunner`` and its helpers, until
streaming runs the engine too.

Examples
--------
>>> import pandas as pd
>>> pdf = pd.DataFrame({"k": ["a", "a", None], "t": ["2024-01-01T00:00:05", "soon", 3],
...                     "v": [1.0, 3.0, 9.0]})
>>> good, micros, values, rej = validate(pdf, ["k"], "t", ["v"])
>>> good.tolist(), rej["reason"].tolist()
([True, False, False], ["unparsable timestamp 'soon'", 'null key k'])
>>> rej["row"].tolist()[0]
'{"k": "a", "t": "soon", "v": 3.0}'
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import pandas as pd

from windowagg.spark.rejects import (
    CORRUPT_COLUMN,
    REJECT_COLUMNS,
    ROW_COLUMN,
    _rows_json,
    iso_micros,
    parse_times,
    readable_reason,
    validate,
)
from windowagg.spark.spec import VECTOR_KINDS, Agg, WindowSpec

__all__ = [
    "CORRUPT_COLUMN",
    "REJECT_COLUMNS",
    "ROW_COLUMN",
    "KeyRunner",
    "build_monoid",
    "parse_times",
    "validate",
    "value_columns",
]


# used by KeyRunner (streaming) until it runs the engine
#: Longest per-event window (stored entries + events) for the vectorised per-event path.
_MAX_VECTOR_WINDOW = 4096
# used by KeyRunner (streaming) until it runs the engine
#: Cells of one boolean (events x candidates) block of the vectorised per-event path.
_BLOCK_CELLS = 1 << 20
# used by KeyRunner (streaming) until it runs the engine
#: Events per block of the vectorised per-event path (0: about the window's width).
_EVENT_BLOCK = 0


# used by KeyRunner (streaming) until it runs the engine
_MONOIDS: dict[tuple[int, ...], tuple[tuple[Any, ...], Any]] = {}


# used by KeyRunner (streaming) until it runs the engine
def build_monoid(aggs: Sequence[Agg]) -> Any:
    """One monoid over tuples for all *aggs* (``monoids.Composite``), input = one tuple/event.

    Cached per tuple of component monoids (the streaming operator builds one
    ``KeyRunner`` per key and micro-batch; a ``Composite`` costs ~1 ms to build). O(1)
    when cached.
    """
    from windowagg.monoids import Composite

    comps = tuple(a.monoid for a in aggs)
    key = tuple(id(m) for m in comps)
    hit = _MONOIDS.get(key)
    if hit is not None and all(x is y for x, y in zip(hit[0], comps, strict=True)):
        return hit[1]
    monoid = Composite(*comps)
    if len(_MONOIDS) >= 64:
        _MONOIDS.clear()
    _MONOIDS[key] = (comps, monoid)  # the components are kept alive: ids stay unique
    return monoid


# used by KeyRunner (streaming) until it runs the engine
def _event_tuples(
    aggs: Sequence[Agg], values: dict[str, np.ndarray], idx: np.ndarray
) -> list[tuple[Any, ...]]:
    cols: list[Any] = []
    for a in aggs:
        cols.append(values[a.column][idx].tolist() if a.column is not None else None)
    m = len(idx)
    return list(zip(*[c if c is not None else [None] * m for c in cols], strict=True))


# used by KeyRunner (streaming) until it runs the engine
def _make_windows(aggs: Sequence[Agg], spec: WindowSpec, late: str = "side") -> Any:
    from windowagg import windows

    monoid = build_monoid(aggs)
    if spec.rows is not None:
        return windows.CountWindows(
            monoid,
            spec.rows,
            spec.every,
            max_out_of_orderness=spec.max_out_of_orderness or None,
            allowed_lateness=spec.allowed_lateness,
            late=late,
        )
    return windows.SlidingWindows(
        monoid,
        spec.size,
        spec.slide,
        origin=spec.start_time,
        max_out_of_orderness=spec.max_out_of_orderness,
        allowed_lateness=spec.allowed_lateness,
        late=late,
    )


# used by KeyRunner (streaming) until it runs the engine
def _results_to_columns(
    aggs: Sequence[Agg], results: Iterable[Any]
) -> dict[str, list[Any] | np.ndarray]:
    starts: list[Any] = []
    ends: list[Any] = []
    cols: list[list[Any]] = [[] for _ in aggs]
    for r in results:
        starts.append(r.start)
        ends.append(r.end)
        for j, v in enumerate(r.value):
            cols[j].append(v)
    out: dict[str, list[Any] | np.ndarray] = {"start": starts, "end": ends}
    for a, c in zip(aggs, cols, strict=True):
        out[a.alias] = c
    return out


# used by KeyRunner (streaming) until it runs the engine
def per_event_vectorizable(aggs: Sequence[Agg], spec: WindowSpec) -> bool:
    """True when per-event windows can take the vectorised path (:func:`per_event_vector`)."""
    return (
        spec.size is not None
        and spec.slide is None
        and spec.rows is None
        and all(a.kind in VECTOR_KINDS for a in aggs)
    )


# used by KeyRunner (streaming) until it runs the engine
def max_window(pool_t: np.ndarray, ev_t: np.ndarray, size: int) -> int:
    """Most entries of the sorted *pool_t* inside one window ``(t - size, t]``, t in *ev_t*.

    O(m log n).
    """
    if not len(ev_t):
        return 0
    lo = np.searchsorted(pool_t, ev_t - size, "right")
    hi = np.searchsorted(pool_t, ev_t, "right")
    return int((hi - lo).max())


# used by KeyRunner (streaming) until it runs the engine
def _state_parts(
    entries: Sequence[tuple[Any, tuple[int, tuple[Any, ...]]]], aggs: Sequence[Agg]
) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """Stored ``(t, (count, composite partial))`` entries as arrays per aggregation."""
    t = np.fromiter((e[0] for e in entries), dtype=np.int64, count=len(entries))
    parts: dict[str, np.ndarray] = {}
    for j, a in enumerate(aggs):
        ps = [e[1][1][j] for e in entries]
        if a.kind == "mean":
            parts[a.alias + "#s"] = np.asarray([p[0] for p in ps], dtype=np.float64)
            parts[a.alias + "#c"] = np.asarray([p[1] for p in ps], dtype=np.int64)
        elif a.kind == "count":
            parts[a.alias + "#c"] = np.asarray(ps, dtype=np.int64)
        else:
            parts[a.alias + "#s"] = np.asarray(ps, dtype=np.float64)
    return t, parts


# used by KeyRunner (streaming) until it runs the engine
def per_event_vector(
    state_t: np.ndarray,
    state_parts: dict[str, np.ndarray],
    new_t: np.ndarray,
    new_values: dict[str, np.ndarray],
    aggs: Sequence[Agg],
    size: int,
) -> dict[str, np.ndarray]:
    """Per-event windows ``(t - size, t]`` "as of each event's insertion", vectorised.

    Event i (position in *new_t* = arrival order) sees every stored entry (earlier
    micro-batches: *state_t*, partials from :func:`_state_parts`) and every new event
    j <= i, with a time in its window: exactly what one ``insert`` + ``range_query`` per
    event over FiBA computes, for sum/count/max/min/mean. Events are taken in time order
    in blocks; a block's candidates are a contiguous slice of the time-sorted pool and one
    boolean mask (time range and arrival) selects each window. O(m log m + m · w) numpy
    work for windows of w entries (callers keep w <= 4096). Sums are summed in another
    order than FiBA's combines (equal to rounding).
    """
    m = len(new_t)
    ns = len(state_t)
    pool_t = np.concatenate([state_t, new_t])
    pool_arr = np.concatenate([np.full(ns, -1, dtype=np.int64), np.arange(m, dtype=np.int64)])
    porder = np.argsort(pool_t, kind="stable")
    pool_t = pool_t[porder]
    pool_arr = pool_arr[porder]
    ones = np.ones(m, dtype=np.int64)
    pool: dict[str, np.ndarray] = {}
    for a in aggs:
        if a.kind in ("mean", "count"):
            # counts as float64 for the matrix products: exact below 2**53
            pool[a.alias + "#cf"] = np.concatenate(
                [state_parts.get(a.alias + "#c", ones[:0]), ones]
            )[porder].astype(np.float64)
        if a.kind != "count":
            assert a.column is not None
            x = np.asarray(new_values[a.column], dtype=np.float64)
            pool[a.alias + "#s"] = np.concatenate(
                [state_parts.get(a.alias + "#s", np.empty(0)), x]
            )[porder]
    order = np.argsort(new_t, kind="stable")
    ev_t = new_t[order]
    lo = np.searchsorted(pool_t, ev_t - size, "right")
    hi = np.searchsorted(pool_t, ev_t, "right")
    out: dict[str, np.ndarray] = {}
    for a in aggs:
        out[a.alias] = np.empty(m, dtype=np.int64 if a.kind == "count" else np.float64)
    # block length: about the window's width in entries (fewer wasted mask cells than a
    # fixed 256 when windows are short; the per-block numpy overhead stays amortised)
    width = int((hi - lo).max()) if m else 0
    step = _EVENT_BLOCK if _EVENT_BLOCK else max(32, min(256, width))
    i = 0
    while i < m:
        k = min(i + step, m)
        while k - i > 1 and (k - i) * (hi[k - 1] - lo[i]) > _BLOCK_CELLS:
            k = i + (k - i) // 2
        s0, s1 = int(lo[i]), int(hi[k - 1])
        idx = np.arange(s0, s1)
        ev = order[i:k]
        mask = (
            (idx[None, :] >= lo[i:k, None])
            & (idx[None, :] < hi[i:k, None])
            & (pool_arr[None, s0:s1] <= ev[:, None])
        )
        maskf: np.ndarray | None = None
        for a in aggs:
            kind = a.kind
            if kind in ("count", "sum", "mean"):
                if maskf is None:  # sums as one matrix-vector product (BLAS) per block
                    maskf = mask.astype(np.float64)
                if kind == "count":
                    c = maskf @ pool[a.alias + "#cf"][s0:s1]
                    out[a.alias][ev] = c.astype(np.int64)
                    continue
                sx = maskf @ pool[a.alias + "#s"][s0:s1]
                if kind == "sum":
                    out[a.alias][ev] = sx
                else:  # mean
                    out[a.alias][ev] = sx / (maskf @ pool[a.alias + "#cf"][s0:s1])
                continue
            x = pool[a.alias + "#s"][s0:s1]
            if kind == "max":
                out[a.alias][ev] = np.where(mask, x, -np.inf).max(axis=1)
            else:  # min
                out[a.alias][ev] = np.where(mask, x, np.inf).min(axis=1)
        i = k
    return out


# used by KeyRunner (streaming) until it runs the engine
def range_evaluator(aggs: Sequence[Agg]) -> Any:
    """A ``SlidingWindows.set_range_evaluator`` callable for sum/count/max/min/mean.

    Answers all the window range queries of one emission with numpy over the stored
    entries: windows in blocks, each block one boolean mask (key range) over the contiguous
    slice of entries it spans. O(n + r log n + r · w) for r windows of w entries; the
    results are those of FiBA's ``range_query`` + ``lower`` (sums equal to rounding).
    """

    def evaluate(
        entries: list[tuple[Any, Any]], ranges: list[tuple[Any, Any]]
    ) -> list[tuple[int, Any]]:
        keys, parts = _state_parts(entries, aggs)
        counts = np.fromiter((e[1][0] for e in entries), dtype=np.int64, count=len(entries))
        r = len(ranges)
        lo = np.searchsorted(keys, np.asarray([x for x, _ in ranges], dtype=np.int64), "left")
        hi = np.searchsorted(keys, np.asarray([y for _, y in ranges], dtype=np.int64), "right")
        n_out = np.empty(r, dtype=np.int64)
        cols: dict[str, np.ndarray] = {a.alias: np.empty(r, dtype=np.float64) for a in aggs}
        i = 0
        while i < r:
            k = min(i + 256, r)
            while k - i > 1 and (k - i) * (int(hi[k - 1]) - int(lo[i])) > _BLOCK_CELLS:
                k = i + (k - i) // 2
            s0, s1 = int(lo[i]), int(hi[k - 1])
            idx = np.arange(s0, s1)
            mask = (idx[None, :] >= lo[i:k, None]) & (idx[None, :] < hi[i:k, None])
            n_out[i:k] = np.where(mask, counts[s0:s1], 0).sum(axis=1)
            for a in aggs:
                kind = a.kind
                if kind == "count":
                    cols[a.alias][i:k] = np.where(mask, parts[a.alias + "#c"][s0:s1], 0).sum(1)
                    continue
                x = parts[a.alias + "#s"][s0:s1]
                if kind == "max":
                    cols[a.alias][i:k] = np.where(mask, x, -np.inf).max(axis=1, initial=-np.inf)
                elif kind == "min":
                    cols[a.alias][i:k] = np.where(mask, x, np.inf).min(axis=1, initial=np.inf)
                elif kind == "sum":
                    cols[a.alias][i:k] = np.where(mask, x, 0.0).sum(axis=1)
                else:  # mean
                    c = np.where(mask, parts[a.alias + "#c"][s0:s1], 0).sum(axis=1)
                    with np.errstate(invalid="ignore", divide="ignore"):
                        cols[a.alias][i:k] = np.where(mask, x, 0.0).sum(axis=1) / c
            i = k
        as_lists = [
            cols[a.alias].astype(np.int64).tolist() if a.kind == "count" else cols[a.alias].tolist()
            for a in aggs
        ]
        return list(zip(n_out.tolist(), zip(*as_lists, strict=True), strict=True))

    return evaluate


# used by KeyRunner (streaming) until it runs the engine
def _results_frame(
    keys: Sequence[str],
    key_values: Sequence[Any],
    aggs: Sequence[Agg],
    cols: dict[str, list[Any] | np.ndarray],
) -> pd.DataFrame:
    n = len(cols["end"])
    data: dict[str, Any] = {}
    for k, kv in zip(keys, key_values, strict=True):
        data[k] = np.full(n, kv, dtype=object if isinstance(kv, str) or kv is None else None)
    data["window_start"] = pd.to_datetime(
        np.asarray(cols["start"], dtype=np.int64), unit="us", utc=True
    )
    data["window_end"] = pd.to_datetime(
        np.asarray(cols["end"], dtype=np.int64), unit="us", utc=True
    )
    for a in aggs:
        col = cols[a.alias]
        if a.dtype == "bigint":
            data[a.alias] = np.asarray(col, dtype=np.int64)
        elif a.dtype == "double":
            data[a.alias] = np.asarray(
                [np.nan if v is None else v for v in col] if isinstance(col, list) else col,
                dtype=np.float64,
            )
        else:
            data[a.alias] = list(col)
    return pd.DataFrame(data)


def value_columns(aggs: Sequence[Agg]) -> list[str]:
    """The distinct input columns the aggregations read, in first-use order."""
    return list(dict.fromkeys(a.column for a in aggs if a.column is not None))


class KeyRunner:
    """One key's streaming state: a ``windowagg.windows`` object fed micro-batch by micro-batch.

    ``feed(pdf)`` validates the rows, inserts the good ones as one burst (``insert_many``),
    and returns the windows the key's watermark closed plus the rejects (bad rows and late
    events, with the original row). ``to_bytes()`` is the state to store: the windows'
    versioned codec bytes (``SlidingWindows.to_bytes``), never pickle.
    O(m log m + m log d) per burst of m events (FiBA), plus the emitted windows.
    """

    __slots__ = ("_aggs", "_keys", "_spec", "_time", "_time_unit", "_vector", "_windows")

    def __init__(
        self,
        keys: Sequence[str],
        time: str,
        aggs: Sequence[Agg],
        spec: WindowSpec,
        state: bytes | None = None,
        *,
        time_unit: str = "s",
        vectorized: bool = True,
    ) -> None:
        self._keys = list(keys)
        self._time = time
        self._aggs = list(aggs)
        self._spec = spec
        self._time_unit = time_unit
        # per-event windows of sum/count/max/min/mean: results by numpy (same values)
        self._vector = vectorized and per_event_vectorizable(aggs, spec)
        if state is None:
            self._windows = _make_windows(aggs, spec, late="side")
        else:
            from windowagg import windows

            cls = windows.CountWindows if spec.rows is not None else windows.SlidingWindows
            self._windows = cls.from_bytes(state, build_monoid(aggs))
        if (
            vectorized
            and spec.slide is not None
            and spec.rows is None
            and all(a.kind in VECTOR_KINDS for a in aggs)
        ):
            # hopping windows: the range queries of one emission answered by numpy
            self._windows.set_range_evaluator(range_evaluator(aggs))

    def feed(self, pdf: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
        """Process one micro-batch of this key's rows; return (closed windows, rejects)."""
        cols, key_values, rejects = self.feed_columns(pdf)
        return _results_frame(self._keys, key_values, self._aggs, cols), rejects

    def feed_columns(
        self, pdf: pd.DataFrame
    ) -> tuple[dict[str, list[Any] | np.ndarray], list[Any], pd.DataFrame]:
        """:meth:`feed` before building the results frame: ``(columns, key values, rejects)``.

        ``columns`` holds ``start``/``end`` (int64 microseconds) and one column per
        aggregation alias, as :func:`window_key`; the Spark adapter packs them into arrays.
        """
        good, micros, values, rejects = validate(
            pdf, self._keys, self._time, value_columns(self._aggs), time_unit=self._time_unit
        )
        idx = np.flatnonzero(good)
        key_values = [pdf[k].iloc[0] for k in self._keys] if len(pdf) else []
        if len(idx) == 0:
            return _results_to_columns(self._aggs, []), key_values, rejects
        w = self._windows
        t_list = micros[idx].tolist()
        tuples = _event_tuples(self._aggs, values, idx)
        before = len(w.rejected)
        cols = self._vector_windows(micros[idx], {c: v[idx] for c, v in values.items()}, tuples)
        if cols is None:
            results = list(w.insert_many(list(zip(t_list, tuples, strict=True))))
            cols = _results_to_columns(self._aggs, results)
        late = w.rejected[before:]
        w.rejected.clear()
        if late:
            late_frame = self._late_rows(pdf, idx, t_list, tuples, late)
            rejects = pd.concat([rejects, late_frame]) if len(rejects) else late_frame
        return cols, key_values, rejects.reset_index(drop=True)

    def advance(self, wm: int) -> dict[str, list[Any] | np.ndarray]:
        """Move the key's watermark up to *wm* (int microseconds; no-op if not ahead).

        Returns the windows that closed, as :meth:`feed_columns`' columns (hopping
        windows; per-event windows were emitted with their events, so then only dead
        entries go). Used with Spark's global event-time watermark: before a key's rows (a
        lagging key's own watermark is lower) and from its event-time timer (a key with
        no new rows). O(1) plus the emitted windows.
        """
        return _results_to_columns(self._aggs, self._windows.advance_watermark(wm))

    @property
    def watermark(self) -> int | None:
        """The key's own watermark (microseconds; None before its first event). O(1)."""
        wm: int | None = self._windows.watermark
        return wm

    def deadline(self) -> int | None:
        """When an event-time timer should fire next (microseconds), or None.

        None: no stored event is live, so the key's state can be dropped (see
        :meth:`windowagg.windows.SlidingWindows.next_deadline`). O(1).
        """
        d: int | None = self._windows.next_deadline()
        return d

    def _vector_windows(
        self, t: np.ndarray, values: dict[str, np.ndarray], tuples: list[tuple[Any, ...]]
    ) -> dict[str, list[Any] | np.ndarray] | None:
        """Per-event windows by :func:`per_event_vector`, or None (then: the generic path).

        The windows object judges and stores the events (``accept_many``), so lateness,
        rejects, counters and state are exactly those of the generic path.
        """
        if not self._vector:
            return None
        size = self._spec.size
        assert size is not None
        w = self._windows
        state_t, parts = _state_parts(list(w.aggregator), self._aggs)
        # a superset of the windows the accepted events will see: the bound is cheap
        pool = np.sort(np.concatenate([state_t, t]))
        if max_window(pool, t, size) > _MAX_VECTOR_WINDOW:
            return None
        # validated float64 values (no NaN/null) cannot fail the built-in monoids' lift:
        # trusted_values lifts and stores only the events the burst's eviction keeps
        pairs = list(zip(t.tolist(), tuples, strict=True))
        pos = np.asarray(w.accept_many(pairs, trusted_values=True), dtype=np.int64)
        new_t = t[pos]
        cols = per_event_vector(
            state_t, parts, new_t, {c: v[pos] for c, v in values.items()}, self._aggs, size
        )
        return {"start": new_t - size, "end": new_t, **cols}

    def _late_rows(
        self,
        pdf: pd.DataFrame,
        idx: np.ndarray,
        t_list: list[int],
        tuples: list[tuple[Any, ...]],
        late: Sequence[Any],
    ) -> pd.DataFrame:
        where: dict[tuple[int, tuple[Any, ...]], list[int]] = {}
        for i, (t, v) in enumerate(zip(t_list, tuples, strict=True)):
            where.setdefault((t, v), []).append(int(idx[i]))
        rows = []
        for rj in late:
            hits = where.get((rj.t, tuple(rj.value)))
            rows.append(hits.pop(0) if hits else -1)
        mask = np.zeros(len(pdf), dtype=bool)
        found = [r for r in rows if r >= 0]
        mask[found] = True
        row_json = dict(zip(found, _rows_json(pdf, mask), strict=True)) if found else {}
        return pd.DataFrame(
            {
                # the window's own reason ("late: ...", "bad_value: ...") says why
                "reason": [readable_reason(str(rj.reason)) for rj in late],
                "event_time": pd.to_datetime(
                    np.asarray([rj.t for rj in late], dtype=np.int64), unit="us", utc=True
                ).astype("datetime64[us, UTC]"),
                "row": [
                    row_json.get(r, json.dumps({"event_time": iso_micros(rj.t)}))
                    for r, rj in zip(rows, late, strict=True)
                ],
            }
        )

    def to_bytes(self) -> bytes:
        """The state to store (versioned codec bytes of the windows object). O(n)."""
        data: bytes = self._windows.to_bytes()
        return data
