"""The pandas functions under the Spark adapter: one key's frame in, windows and rejects out.

No pyspark here: these functions are what Spark's ``applyInPandas`` /
``transformWithStateInPandas`` / ``applyInPandasWithState`` call on the workers, and they
run (and are tested) without Spark.

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

Examples
--------
>>> import pandas as pd
>>> from windowagg.spark.spec import WindowSpec, parse_aggs
>>> pdf = pd.DataFrame({"k": ["a", "a", "a", None],
...                     "t": pd.to_datetime(["2024-01-01 00:00:05", "2024-01-01 00:00:12",
...                                          None, "2024-01-01 00:00:01"]),
...                     "v": [1.0, 3.0, 2.0, 9.0]})
>>> res, rej = window_frame(pdf, ["k"], "t", parse_aggs(["max(v)", "count"]),
...                         WindowSpec(size=10_000_000, slide=10_000_000))
>>> res["window_end"].dt.strftime("%H:%M:%S").tolist(), res["max_v"].tolist(), res["count"].tolist()
(['00:00:10', '00:00:20'], [1.0, 3.0], [1, 1])
>>> rej["reason"].tolist()
['null timestamp', 'null key k']
>>> rej["row"].tolist()[0]
'{"k": "a", "t": null, "v": 2.0}'
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import pandas as pd

from windowagg.spark.panes import dense_span, quantile_cost, sliding_panes
from windowagg.spark.rejects import (
    CORRUPT_COLUMN,
    REJECT_COLUMNS,
    ROW_COLUMN,
    _rows_json,
    parse_times,
    validate,
)
from windowagg.spark.spec import VECTOR_KINDS, Agg, WindowSpec

__all__ = [
    "CORRUPT_COLUMN",
    "REJECT_COLUMNS",
    "ROW_COLUMN",
    "build_monoid",
    "parse_times",
    "validate",
    "window_frame",
    "window_groups",
    "window_key",
]


#: Largest dense pane layout per key, as a multiple of the key's events, for the vector path.
_MAX_PANES_PER_EVENT = 64
#: Longest window (in events) for which batch quantiles use exact selection.
_MAX_EXACT_QUANTILE_WINDOW = 2048
#: Longest per-event window (stored entries + events) for the vectorised per-event path.
_MAX_VECTOR_WINDOW = 4096
#: Cells of one boolean (events x candidates) block of the vectorised per-event path.
_BLOCK_CELLS = 1 << 20
#: Events per block of the vectorised per-event path (0: about the window's width).
_EVENT_BLOCK = 0


_MONOIDS: dict[tuple[int, ...], tuple[tuple[Any, ...], Any]] = {}


def build_monoid(aggs: Sequence[Agg]) -> Any:
    """One monoid over tuples for all *aggs* (``monoids.Composite``), input = one tuple/event.

    Cached per tuple of component monoids (a ``Composite`` costs ~1 ms to build). O(1)
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


def _event_tuples(
    aggs: Sequence[Agg], values: dict[str, np.ndarray], idx: np.ndarray
) -> list[tuple[Any, ...]]:
    cols: list[Any] = []
    for a in aggs:
        cols.append(values[a.column][idx].tolist() if a.column is not None else None)
    m = len(idx)
    return list(zip(*[c if c is not None else [None] * m for c in cols], strict=True))


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


def _is_quantile(kind: str | None) -> bool:
    return kind is not None and kind.startswith("p") and kind[1:].replace(".", "", 1).isdigit()


def vectorizable(aggs: Sequence[Agg], spec: WindowSpec) -> bool:
    """True when the batch can take the vectorised pane path (:mod:`windowagg.spark.panes`)."""
    return spec.slide is not None and all(
        a.kind in VECTOR_KINDS or _is_quantile(a.kind) for a in aggs
    )


def per_event_vectorizable(aggs: Sequence[Agg], spec: WindowSpec) -> bool:
    """True when per-event windows can take the vectorised path (:func:`per_event_vector`)."""
    return (
        spec.size is not None
        and spec.slide is None
        and spec.rows is None
        and all(a.kind in VECTOR_KINDS for a in aggs)
    )


def max_window(pool_t: np.ndarray, ev_t: np.ndarray, size: int) -> int:
    """Most entries of the sorted *pool_t* inside one window ``(t - size, t]``, t in *ev_t*.

    O(m log n).
    """
    if not len(ev_t):
        return 0
    lo = np.searchsorted(pool_t, ev_t - size, "right")
    hi = np.searchsorted(pool_t, ev_t, "right")
    return int((hi - lo).max())


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


def window_key(
    micros: np.ndarray,
    values: dict[str, np.ndarray],
    aggs: Sequence[Agg],
    spec: WindowSpec,
    *,
    vectorized: bool = True,
    refused: list[tuple[int, str]] | None = None,
) -> dict[str, list[Any] | np.ndarray]:
    """All windows of one key's (validated) events, in batch (every event is on time).

    Returns columns ``start``, ``end`` (int64 microseconds) and one per aggregation alias.
    Events whose value a monoid refuses (its ``lift`` raised) are in no window: their
    positions in *micros* and reasons (``bad_value: <error>``) are appended to *refused*
    (a list the caller turns into reject rows; None: raise ValueError if there are any,
    so that no event can vanish).
    Uses the vectorised pane path when possible (and ``vectorized``), else
    ``windowagg.windows`` over a ``Composite`` monoid: ``insert_many`` of the sorted events,
    then ``close()``. O(n log n + L) vectorised; O(n log n + windows · query) generic.
    """
    if len(micros) and vectorized and vectorizable(aggs, spec):
        assert spec.size is not None and spec.slide is not None
        span = dense_span(int(micros.min()), int(micros.max()), spec.size, spec.slide, spec.origin)
        if any(_is_quantile(a.kind) for a in aggs):
            longest = quantile_cost(np.sort(micros), spec.size)
            # exact selection costs O(events per window) per window; past this, the
            # q-digest (generic path) is cheaper and its error is stated
            small = longest <= _MAX_EXACT_QUANTILE_WINDOW
        else:
            small = True
        if small and span <= _MAX_PANES_PER_EVENT * len(micros) + 4096:
            out = sliding_panes(
                micros,
                values,
                [(a.alias, str(a.kind), a.column) for a in aggs],
                size=spec.size,
                slide=spec.slide,
                origin=spec.origin,
            )
            ends = out.pop("end")
            return {"start": ends - spec.size, "end": ends, **out}
    order = np.argsort(micros, kind="stable")
    if len(micros) and vectorized and per_event_vectorizable(aggs, spec):
        assert spec.size is not None
        t_sorted = micros[order]
        if max_window(t_sorted, t_sorted, spec.size) <= _MAX_VECTOR_WINDOW:
            # sorted input: each event's arrival is its position in time order
            cols = per_event_vector(
                np.empty(0, np.int64),
                {},
                t_sorted,
                {c: v[order] for c, v in values.items()},
                aggs,
                spec.size,
            )
            return {"start": t_sorted - spec.size, "end": t_sorted, **cols}
    w = _make_windows(aggs, spec, late="raise")
    tuples = _event_tuples(aggs, values, order)
    events = list(zip(micros[order].tolist(), tuples, strict=True))
    results = list(w.insert_many(events))
    close = getattr(w, "close", None)  # count windows emit as they go: nothing to close
    if close is not None:
        results.extend(close())
    if w.rejected:  # every event is on time: these are the values a monoid refused
        where = {id(v): int(i) for v, i in zip(tuples, order, strict=True)}
        bad = [(where[id(r.value)], str(r.reason)) for r in w.rejected]
        if refused is None:
            raise ValueError(f"window_key: {len(bad)} values were refused: {bad[0][1]}")
        refused.extend(bad)
    return _results_to_columns(aggs, results)


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


def window_frame(
    pdf: pd.DataFrame,
    keys: Sequence[str],
    time: str,
    aggs: Sequence[Agg],
    spec: WindowSpec,
    *,
    time_unit: str = "s",
    vectorized: bool = True,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Batch windows per key of *pdf* (one or many keys), and the rejected rows.

    Parameters
    ----------
    pdf
        Rows with the key columns, the event-time column and the aggregations' columns
        (other columns are ignored, except ``_corrupt_record`` and ``_wa_row``).
    keys, time, aggs, spec
        Grouping columns, event-time column, :func:`~windowagg.spark.spec.parse_aggs`
        output, :class:`~windowagg.spark.spec.WindowSpec`.

    Returns
    -------
    (results, rejects)
        ``results``: keys, ``window_start``, ``window_end`` (UTC timestamps) and one column
        per aggregation, ordered by key then window end; ``rejects``: ``reason``,
        ``event_time``, ``row`` (the original row as JSON).

    Complexity: O(n log n) validation and grouping plus :func:`window_key` per key.
    """
    groups, rejects = window_groups(
        pdf, keys, time, aggs, spec, time_unit=time_unit, vectorized=vectorized
    )
    frames = [_results_frame(keys, kvals, aggs, cols) for kvals, cols in groups]
    if frames:
        results = pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0]
    else:
        empty: dict[str, list[Any] | np.ndarray] = {"start": [], "end": []}
        empty.update({a.alias: [] for a in aggs})
        results = _results_frame(keys, [None] * len(keys), aggs, empty)
    return results, rejects


def window_groups(
    pdf: pd.DataFrame,
    keys: Sequence[str],
    time: str,
    aggs: Sequence[Agg],
    spec: WindowSpec,
    *,
    time_unit: str = "s",
    vectorized: bool = True,
) -> tuple[list[tuple[tuple[Any, ...], dict[str, list[Any] | np.ndarray]]], pd.DataFrame]:
    """:func:`window_frame` before building frames: ``[(key values, columns)]`` and rejects.

    The columns are those of :func:`window_key` (``start``/``end`` as int64 microseconds);
    the Spark adapter turns them into Arrow directly. Same complexity as
    :func:`window_frame`.
    """
    good, micros, values, rejects = validate(
        pdf, keys, time, value_columns(aggs), time_unit=time_unit
    )
    out: list[tuple[tuple[Any, ...], dict[str, list[Any] | np.ndarray]]] = []
    bad_rows: list[int] = []
    bad_why: list[str] = []
    idx = np.flatnonzero(good)
    if not len(idx):
        return out, rejects
    if not keys:
        groups: dict[Any, np.ndarray] = {(): np.arange(len(idx))}
    elif (
        len(keys) == 1
        and pdf[keys[0]].iloc[idx[0]] == pdf[keys[0]].iloc[idx[-1]]
        and (pdf[keys[0]].iloc[idx] == pdf[keys[0]].iloc[idx[0]]).all()
    ):
        groups = {pdf[keys[0]].iloc[idx[0]]: np.arange(len(idx))}  # one key (Spark's groups)
    else:
        groups = pdf.iloc[idx].groupby(list(keys), sort=True, dropna=True).indices
    for kv, pos in groups.items():
        kvals = kv if isinstance(kv, tuple) else (kv,)
        rows = idx[pos]
        refused: list[tuple[int, str]] = []
        cols = window_key(
            micros[rows],
            {c: v[rows] for c, v in values.items()},
            aggs,
            spec,
            vectorized=vectorized,
            refused=refused,
        )
        out.append((kvals, cols))
        for i, why in refused:
            bad_rows.append(int(rows[i]))
            bad_why.append(why)
    if bad_rows:
        rejects = _concat_rejects(rejects, _refused_rows(pdf, micros, bad_rows, bad_why))
    return out, rejects


def _refused_rows(
    pdf: pd.DataFrame, micros: np.ndarray, rows: list[int], reasons: list[str]
) -> pd.DataFrame:
    """Reject rows for the *rows* of *pdf* whose values a monoid refused. O(len(rows))."""
    mask = np.zeros(len(pdf), dtype=bool)
    mask[rows] = True
    row_json = dict(zip(np.flatnonzero(mask).tolist(), _rows_json(pdf, mask), strict=True))
    return pd.DataFrame(
        {
            "reason": reasons,
            "event_time": pd.to_datetime(micros[rows], unit="us", utc=True).astype(
                "datetime64[us, UTC]"
            ),
            "row": [row_json[r] for r in rows],
        }
    )


def _concat_rejects(a: pd.DataFrame, b: pd.DataFrame) -> pd.DataFrame:
    if not len(a):
        return b.reset_index(drop=True)
    return pd.concat([a, b], ignore_index=True)
