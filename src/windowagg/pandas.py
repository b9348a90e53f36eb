"""``window_agg`` in-process, for pandas and polars DataFrames and pyarrow Tables.

The same call, semantics and output columns as :func:`windowagg.spark.window_agg`,
computed by the windows engine (:mod:`windowagg.windows.engine`) without Spark:

=================  ==========================================================================
input              a pandas or polars DataFrame, or a pyarrow Table (results and rejects
                   come back of the same kind)
aggregations       ``"max(v)"``, ``"min(v)"``, ``"sum(v)"``, ``"mean(v)"``, ``"count"``,
                   ``"pNN(v)"`` / ``"median(v)"`` (**exact**, nearest rank: DuckDB's
                   ``quantile_disc``), ``"approx_pNN(v)"`` (q-digest, rank error at most
                   ``QUANTILE_EPS * n``), any registered monoid name, ``Agg`` objects or
                   ``(alias, monoid, column[, type])`` tuples
windows            ``size`` + ``slide`` (hopping/tumbling, Spark's ``F.window``); ``size``
                   alone (one window ``(t - size, t]`` per event, including every event at
                   ``t``); ``rows`` + ``every`` (count windows); ``gap`` (sessions: an event
                   at most ``gap`` after the previous one joins its session;
                   ``window_end`` = last event + ``gap``); ``size=["5 min", "1 h", "1 d"]``
                   (a list, with one ``slide`` or none): several sizes in one pass, one row
                   per window end of the largest size, columns ``<alias>_<size>``
                   (``max_v_5m`` ...; ``window_start`` is the largest size's, each size's
                   window ends at ``window_end``; a size with no event there gives the
                   aggregation's empty answer: 0 for ``count``/``sum``, null otherwise)
rejects            every input row is aggregated or rejected: ``reason``, ``event_time``,
                   ``row`` (the original row as JSON) and ``row_index`` (its position in
                   the input: rows are carried by identity, never matched by value); rows
                   in no window (hopping ``size < slide``, count windows' gaps and last
                   events) are rejects ``in no window: ...``
times              int64 microseconds of the years 0001-9999 end to end (others are
                   rejects); ``window_start`` / ``window_end`` are ``datetime64[ns, UTC]``
                   when every bound fits in nanoseconds (1677-2262), else
                   ``datetime64[us, UTC]``, a bound past the range clamped to its edge
                   (docs/engine.md); rejects' ``event_time`` ``datetime64[us, UTC]``
names              an output column named as a key or ``window_start`` / ``window_end``
                   (``"max(v) as k"``) is an ``ArgumentError``, as is every bad window
                   argument (naming it and the value as given)
lateness           none by default (batch: every valid row is on time); with
                   ``max_out_of_orderness`` / ``allowed_lateness`` the rows are judged in
                   input order per key, as a stream would judge them, and late rows are
                   rejected (``late: ...``)
threads            ``threads=N`` computes runs of keys on N threads (default: the cores
                   this process may use; ``1``: one thread); results and rejects are the
                   same for every N (:mod:`windowagg.windows.engine.parallel`)
=================  ==========================================================================

Examples
--------
>>> import pandas as pd
>>> df = pd.DataFrame({"k": ["a", "a", "b", None], "t": [1, 7, 3, 4],
...                    "v": [2.0, 5.0, 1.0, 9.0]})
>>> out = window_agg(df, "k", "t", ["max(v)", "count"], size=10, slide=10)
>>> out.results[["k", "max_v", "count"]].values.tolist()
[['a', 5.0, 2], ['b', 1.0, 1]]
>>> out.rejects[["reason", "row_index"]].values.tolist()
[['null key k', 3]]

Two sizes in one call (seconds; one row per 5 s window end, per key):

>>> two = window_agg(df, "k", "t", ["max(v)"], size=[5, 10], slide=5)
>>> two.results[["k", "max_v_5s", "max_v_10s"]].values.tolist()
[['a', 2.0, 2.0], ['a', 5.0, 5.0], ['a', nan, 5.0], ['b', 1.0, 1.0], ['b', nan, 1.0]]
"""

from __future__ import annotations

import contextlib
import re
from collections import Counter
from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np
import pandas as pd

from windowagg.aggs import Agg, parse
from windowagg.call import WindowCall, parse_call
from windowagg.errors import AggregationError, ArgumentError
from windowagg.rejects import (
    CORRUPT_COLUMN,
    _rows_json,
    iso_micros,
    readable_reason,
    utc_micros,
    validate,
    value_columns,
    window_bound,
)
from windowagg.windows.engine import Shape, window_groups
from windowagg.windows.engine.parallel import check_threads
from windowagg.windows.engine.sizes import sized_aggs
from windowagg.windows.engine.state import aggregation_message

__all__ = [
    "FrameWindows",
    "Groups",
    "WindowAgg",
    "frame_windows",
    "group_rows",
    "grouped_windows",
    "parse",
    "run_call",
    "window_agg",
]


class WindowAgg(NamedTuple):
    """``results`` (keys, ``window_start``, ``window_end``, one column per aggregation) and
    ``rejects`` (``reason``, ``event_time``, ``row``, ``row_index``), of the input's kind."""

    results: Any
    rejects: Any


def _to_pandas(df: Any) -> tuple[pd.DataFrame, str]:
    if isinstance(df, pd.DataFrame):
        return df, "pandas"
    mod = type(df).__module__.split(".")[0]
    if mod == "pyarrow":
        return df.to_pandas(), "arrow"
    if mod == "polars":
        return df.to_pandas(), "polars"
    raise TypeError(
        f"window_agg takes a pandas or polars DataFrame or a pyarrow Table; got {type(df).__name__}"
    )


def _from_pandas(pdf: pd.DataFrame, kind: str) -> Any:
    if kind == "pandas":
        return pdf
    if kind == "arrow":
        import pyarrow as pa

        return pa.Table.from_pandas(pdf, preserve_index=False)
    import polars as pl

    return pl.from_pandas(pdf)


def window_agg(
    df: Any,
    keys: str | Sequence[str],
    time: str,
    aggs: Sequence[str | Agg | tuple[Any, ...]],
    *,
    size: Any = None,
    slide: Any = None,
    rows: int | None = None,
    every: int = 1,
    gap: Any = None,
    start_time: Any = 0,
    time_unit: str = "s",
    max_out_of_orderness: Any = None,
    allowed_lateness: Any = None,
    row_columns: Sequence[str] | str | None = None,
    factory: Any = None,
    threads: int | None = None,
) -> WindowAgg:
    """Sliding-window aggregation per key, in-process (see the module docstring).

    Parameters
    ----------
    df
        pandas or polars DataFrame, or pyarrow Table.
    keys
        Grouping column(s) (``[]`` for one group); rows with a null key are rejected.
    time
        Event-time column: timestamps, ISO 8601 text, or numbers in ``time_unit``.
    aggs
        See :func:`parse`.
    size, slide, rows, every, gap, start_time
        The window shape, as :func:`windowagg.spark.window_agg` (durations as text,
        seconds or timedeltas), plus ``gap`` for session windows. ``size`` may be a list
        of durations: every size in one pass, one column per aggregation and size
        (``max_v_5m``, ``max_v_1h``; see the module docstring).
    max_out_of_orderness, allowed_lateness
        Judge rows late in input order per key (default: no lateness).
    row_columns
        ``"*"`` or column names for the rejects' ``row`` JSON (default: the columns the
        aggregation reads).
    factory
        ``monoid -> FIFO aggregator`` for the engine (default ``fifo.TwoStacksLite``);
        with ``threads`` > 1 it is called on the pool's threads and must return a new
        aggregator per call (a class does).
    threads
        Threads the keys are computed on (default None: the cores this process may use;
        ``1``: every key on the calling thread). The keys are cut into runs of about
        equal event counts, one per thread; the output is the same for every value
        (:mod:`windowagg.windows.engine.parallel`).

    Returns
    -------
    WindowAgg
        ``results`` ordered by key then window end, ``rejects`` ordered by ``row_index``.

    Complexity: O(n log n) validation and grouping, then
    :func:`windowagg.windows.engine.window_groups` over every key in one pass.
    """
    call = parse_call(
        keys,
        time,
        aggs,
        size=size,
        slide=slide,
        rows=rows,
        every=every,
        gap=gap,
        start_time=start_time,
        time_unit=time_unit,
        max_out_of_orderness=max_out_of_orderness,
        allowed_lateness=allowed_lateness,
    )
    return run_call(df, call, row_columns=row_columns, factory=factory, threads=threads)


def run_call(
    df: Any,
    call: WindowCall,
    *,
    row_columns: Sequence[str] | str | None = None,
    factory: Any = None,
    threads: int | None = None,
) -> WindowAgg:
    """:func:`window_agg` for a call already read by :func:`windowagg.call.parse_call`
    (a front end over this one, such as ``windowagg run --engine local``, reads its
    arguments once and hands the engine the :class:`~windowagg.call.WindowCall`).

    >>> import pandas as pd
    >>> df = pd.DataFrame({"k": ["a", "a"], "t": [1, 7], "v": [2.0, 5.0]})
    >>> call = parse_call("k", "t", ["max(v)"], size=10, slide=10)
    >>> run_call(df, call).results["max_v"].tolist()
    [5.0]

    Complexity: as :func:`window_agg`.
    """
    key_list, agg_list, shape, lateness = call.keys, call.aggs, call.shape, call.lateness
    time, time_unit = call.time, call.time_unit
    n_threads = check_threads(threads)  # before any work: a bad value changes nothing
    pdf, kind = _to_pandas(df)
    value_cols = value_columns(agg_list)
    needed = list(dict.fromkeys([*key_list, time, *value_cols]))
    for c in needed:
        if c not in pdf.columns:
            raise ArgumentError(
                f"column {c!r} is not in the DataFrame (columns: {list(pdf.columns)})"
            )
    if row_columns is None:
        row_cols = needed
    elif row_columns == "*":
        row_cols = [str(c) for c in pdf.columns]
    else:
        row_cols = list(row_columns)
    _check_unique(pdf, [*needed, *row_cols])
    extra = [CORRUPT_COLUMN] if CORRUPT_COLUMN in pdf.columns else []
    sub = _columns(pdf, list(dict.fromkeys([*needed, *extra])))
    if not (isinstance(sub.index, pd.RangeIndex) and sub.index.start == 0 and sub.index.step == 1):
        sub = sub.reset_index(drop=True)  # positions are the rows' identity: 0, 1, ...
    fw = frame_windows(
        sub,
        key_list,
        time,
        agg_list,
        shape,
        time_unit=time_unit,
        lateness=lateness,
        factory=factory,
        threads=n_threads,
    )
    results = _results(sub, key_list, call.outputs, fw)
    rejects = _rejects(pdf, fw, row_cols)
    return WindowAgg(_from_pandas(results, kind), _from_pandas(rejects, kind))


def _columns(pdf: pd.DataFrame, names: list[Any]) -> pd.DataFrame:
    """The columns *names* of *pdf* as a frame that shares their memory (read only here:
    validation copies the times it keeps, the engine gathers the rows), not ``pdf[names]``,
    which copies every column (~7 ms for three columns of a million rows). A name that
    is not one column (a level of a MultiIndex): ``pdf[names]``, as before. O(columns)."""
    cols = [pdf[c] for c in names]
    if not all(isinstance(c, pd.Series) for c in cols):
        return pdf[names]
    sub = pd.DataFrame(dict(enumerate(cols)), copy=False)
    sub.columns = pd.Index(names, dtype=object, tupleize_cols=False)
    return sub


def _check_unique(pdf: pd.DataFrame, used: Sequence[Any]) -> None:
    """``ArgumentError`` if a column the call reads appears more than once. O(columns)."""
    counts = Counter(pdf.columns)
    for c in dict.fromkeys(used):
        if counts.get(c, 0) > 1:
            raise ArgumentError(
                f"column {c!r} appears {int(counts[c])} times in the DataFrame; give each "
                "column a unique name (e.g. df.columns = [...]) before calling window_agg"
            )


class FrameWindows(NamedTuple):
    """What :func:`frame_windows` computes for one frame (any number of keys)."""

    keys: list[tuple[Any, ...]]
    """The key values of every group, in key order."""
    firsts: list[int]
    """A row position (in the frame) of every group: where its key values are."""
    columns: dict[str, Any]
    """The engine's columns (``start``, ``end`` int64 us, one per alias), group by group."""
    sizes: np.ndarray
    """The number of windows of every group (int64), in ``columns``' order."""
    rejected: np.ndarray
    """Positions (in the frame) of the rejected rows, ascending: their identity."""
    reasons: list[str]
    """One reason per rejected row."""
    event_time: np.ndarray
    """int64 microseconds per rejected row (meaningless where ``event_time_null``)."""
    event_time_null: np.ndarray
    """True where a rejected row's event time could not be read."""


def frame_windows(
    sub: pd.DataFrame,
    keys: Sequence[str],
    time: str,
    aggs: Sequence[Agg],
    shape: Shape,
    *,
    time_unit: str = "s",
    lateness: tuple[int, int] | None = None,
    factory: Any = None,
    threads: int = 1,
) -> FrameWindows:
    """Validate the rows of *sub*, group them by key and run the engine on every key
    (on *threads* threads: :func:`windowagg.windows.engine.window_groups`).

    The one function between a frame and the window columns: ``window_agg`` calls it on
    the whole input, ``windowagg.spark.window_agg`` on each partition's rows (as pandas).
    Row positions are the rows' identity: a rejected row is reported by its position in
    *sub* (validation rejects first, then those the engine refused), never found again by
    value. *lateness* = ``(max_out_of_orderness, allowed_lateness)`` in microseconds
    judges the rows in *sub*'s order per key (None: nothing is late).

    Complexity: O(n log n) validation and grouping, then
    :func:`windowagg.windows.engine.window_groups` over every key in one pass.
    """
    value_cols = value_columns(aggs)
    # the rejects' rows are written once, by window_agg, for every reject
    good, micros, values, bad = validate(
        sub, keys, time, value_cols, time_unit=time_unit, rows=False
    )
    # validate lists the bad rows in input order: their positions are their identity
    bad_rows = np.flatnonzero(~good)
    bad_ev = bad["event_time"]
    return grouped_windows(
        group_rows(sub, keys, np.flatnonzero(good)),
        micros,
        values,
        aggs,
        shape,
        lateness=lateness,
        factory=factory,
        threads=threads,
        bad=(
            bad_rows,
            bad["reason"].tolist(),
            bad_ev.dt.tz_localize(None).to_numpy(dtype="datetime64[us]").astype(np.int64)
            if len(bad_rows)
            else np.empty(0, np.int64),
            bad_ev.isna().to_numpy(),
        ),
    )


def grouped_windows(
    groups: Groups,
    micros: np.ndarray,
    values: dict[str, np.ndarray],
    aggs: Sequence[Agg],
    shape: Shape,
    *,
    lateness: tuple[int, int] | None = None,
    factory: Any = None,
    bad: tuple[np.ndarray, list[str], np.ndarray, np.ndarray] | None = None,
    threads: int = 1,
) -> FrameWindows:
    """The engine over validated rows, every group in one pass: the second half of
    :func:`frame_windows`.

    *groups* are the rows by key (:func:`group_rows`); *micros* and *values*
    the validated event times and value columns of every row; *bad* the rows validation
    rejected (positions, reasons, event times, event time unreadable). The Spark adapter
    calls it directly, without pandas, for a partition's Arrow rows that validation would
    pass whole (no nulls, a timestamp event time, finite doubles). The groups' rows go
    end to end through :func:`windowagg.windows.engine.window_groups`. O(n log n) +
    the engine's O(n + windows + groups).
    """
    rows = groups.rows
    try:
        res = window_groups(
            micros,
            values,
            groups.starts,
            aggs,
            shape,
            lateness=lateness,
            factory=factory,
            threads=threads,
            rows=rows,  # gathered by the engine: each run its own events, on its thread
        )
    except AggregationError as err:
        named = sized_aggs(aggs, shape.sizes) if shape.sizes else aggs
        raise _named(err, groups, named) from err.__cause__
    refused = rows[res.refused]
    refused_why = [readable_reason(r) for r in res.reasons]
    if bad is None:
        e = np.empty(0, np.int64)
        bad = (e, [], e, np.empty(0, bool))
    bad_rows, bad_why, bad_ev, bad_ev_null = bad
    rejected = np.concatenate([bad_rows, refused]).astype(np.int64)
    reasons = [*bad_why, *refused_why]
    ev = np.concatenate([bad_ev, micros[refused]])
    ev_null = np.concatenate([bad_ev_null, np.zeros(len(refused), bool)])
    order = np.argsort(rejected, kind="stable")
    return FrameWindows(
        groups.keys,
        rows[groups.starts[:-1]].tolist(),
        res.columns,
        res.sizes,
        rejected[order],
        [reasons[i] for i in order.tolist()],
        ev[order],
        ev_null[order],
    )


def _named(e: AggregationError, groups: Groups, aggs: Sequence[Agg]) -> AggregationError:
    """*e* with its key's values and its window in ISO times (the engine knows the key's
    index and the window's microseconds). O(1)."""
    if not isinstance(e.key, int) or e.window is None or e.alias is None:
        return e
    key = groups.keys[e.key]
    monoid = next(a.monoid for a in aggs if a.alias == e.alias)
    m = re.search(r" in the window \(window_start (-?\d+), window_end (-?\d+)\)", str(e))
    window = ""
    if m is not None:
        start, end = iso_micros(int(m.group(1))), iso_micros(int(m.group(2)))
        window = f" (window_start {start}, window_end {end})"
    return AggregationError(
        aggregation_message(
            e.alias, monoid, e.reason or "", f" in the window{window} of key {key!r}"
        ),
        alias=e.alias,
        window=e.window,
        key=key,
        reason=e.reason,
    )


class Groups(NamedTuple):
    """Rows grouped by key: :func:`group_rows`."""

    keys: list[tuple[Any, ...]]
    """The key values of every group, in key order."""
    rows: np.ndarray
    """Row positions (int64), group by group, ascending within a group."""
    starts: np.ndarray
    """Where each group begins in ``rows`` (int64, ``len(keys) + 1`` entries)."""


def group_rows(sub: pd.DataFrame, keys: Sequence[str], idx: np.ndarray) -> Groups:
    """The rows *idx* of *sub* (distinct positions, ascending) grouped by key, groups
    ordered by key. O(n log n).

    As ``groupby(keys, sort=True).indices``: each key column factorized in sorted order,
    the codes combined, one stable sort.

    >>> g = group_rows(pd.DataFrame({"k": ["b", "a", "b"]}), ["k"], np.arange(3))
    >>> g.keys, g.rows.tolist(), g.starts.tolist()
    ([('a',), ('b',)], [1, 0, 2], [0, 1, 3])
    """
    idx = np.asarray(idx, dtype=np.int64)
    if not len(idx):
        return Groups([], idx, np.zeros(1, dtype=np.int64))
    if not keys:
        return Groups([()], idx, np.array([0, len(idx)], dtype=np.int64))
    every = len(idx) == len(sub)  # idx is ascending and distinct: then it is every row
    code = np.zeros(len(idx), dtype=np.int64)
    uniques = []
    for k in keys:
        column = sub[k].to_numpy() if every else sub[k].to_numpy()[idx]
        # hashed in first-seen order, then the few uniques sorted and the codes renamed
        # (half the time of factorize(sort=True), which hashes the values twice)
        seen, uniq_k = pd.factorize(column, sort=False)
        try:
            by_value = np.argsort(uniq_k, kind="stable")
            uniq_k = uniq_k[by_value]
        except TypeError:  # mixed types: pandas' order (numbers, then text), if any
            by_value = np.arange(len(uniq_k))
            with contextlib.suppress(TypeError):  # values that never compare: first-seen
                seen, uniq_k = pd.factorize(column, sort=True)
        rank = np.empty(len(uniq_k), dtype=np.int64)
        rank[by_value] = np.arange(len(uniq_k), dtype=np.int64)
        if len(keys) == 1:  # group g is the g-th smallest value: its rank is its code
            return _one_key(seen, rank, by_value, uniq_k, idx, every)
        codes_k = rank[seen]
        uniques.append((codes_k, uniq_k))
        code = code * len(uniq_k) + codes_k
        code, _ = pd.factorize(code, sort=True)  # compact: no overflow with many keys
    # few groups fit 16 bits, where numpy's stable sort is a radix sort (same order)
    small = code.astype(np.int16) if int(code.max()) < 2**15 else code
    order = np.argsort(small, kind="stable")
    counts = np.bincount(code)  # every code in 0..max is used: no empty group
    starts = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    firsts = order[starts[:-1]]
    columns = [list(uniq[codes[firsts]]) for codes, uniq in uniques]
    return Groups(list(zip(*columns, strict=True)), order if every else idx[order], starts)


def _one_key(
    seen: np.ndarray,
    rank: np.ndarray,
    by_value: np.ndarray,
    uniq: Any,
    idx: np.ndarray,
    every: bool,
) -> Groups:
    """:func:`group_rows` of one key column: *seen* its codes in first-seen order, *rank*
    each first-seen code's rank by value, *by_value* the inverse, *uniq* the values sorted.
    The ranks are gathered straight into 16 bits when the groups fit (numpy's stable sort
    is then a radix sort; 2 bytes a row, not an int64 array and a narrowed copy), the
    counts taken on the first-seen codes. O(n)."""
    narrow = rank.astype(np.int16) if len(rank) <= 2**15 else rank
    order = np.argsort(narrow[seen], kind="stable")
    counts = np.bincount(seen, minlength=len(rank))[by_value]  # every value has a row
    starts = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    return Groups([(u,) for u in list(uniq)], order if every else idx[order], starts)


def _results(
    sub: pd.DataFrame, keys: Sequence[str], aggs: Sequence[Agg], fw: FrameWindows
) -> pd.DataFrame:
    """The results frame: the engine's columns as they are; the key columns repeat a row of
    each key (its values and dtype, no Python object per window). O(windows)."""
    data: dict[str, Any] = {}
    for k in keys:
        data[k] = sub[k].take(fw.firsts).array.repeat(fw.sizes)  # values only: no index built
    # years 0001-9999 (window_bound's fresh arrays, which _utc scales in place)
    data["window_start"] = _utc(window_bound(fw.columns["start"]))
    data["window_end"] = _utc(window_bound(fw.columns["end"]))
    for a in aggs:
        col = fw.columns[a.alias]
        if a.dtype == "bigint":
            data[a.alias] = np.asarray(col, dtype=np.int64)
        elif a.dtype == "double":
            data[a.alias] = np.asarray(col, dtype=np.float64)
        elif (
            getattr(a.monoid, "answers_text", False)
            and isinstance(col, np.ndarray)
            and col.dtype.kind == "O"
        ):
            # declared text (str or None per window): the engine's object array as it is,
            # the same column as from a list (pandas infers nothing else from strings)
            data[a.alias] = col
        else:
            data[a.alias] = list(col)
    return pd.DataFrame(data, copy=False)  # the columns are fresh arrays: no copy


_NS_LIMIT = np.iinfo(np.int64).max // 1000


def _utc(us: np.ndarray) -> Any:
    """Microseconds since the epoch as a UTC datetime index: ``datetime64[ns, UTC]`` when
    every value fits in nanoseconds (years 1677-2262), else ``datetime64[us, UTC]`` (every
    int64 microsecond fits), never a conversion error. *us* is the caller's own int64
    array (``window_bound``'s fresh one): scaled to nanoseconds in place. O(n)."""
    if len(us) and (int(us.max()) > _NS_LIMIT or int(us.min()) < -_NS_LIMIT):
        return pd.DatetimeIndex(us.astype("datetime64[us]")).tz_localize("UTC")
    ns = np.multiply(us, 1000, out=us)  # no third array per column
    return pd.DatetimeIndex(ns.view("datetime64[ns]")).tz_localize("UTC")


def _rejects(pdf: pd.DataFrame, fw: FrameWindows, row_cols: list[str]) -> pd.DataFrame:
    """The rejects frame, ordered by ``row_index`` (the rows' positions in *pdf*)."""
    if not len(fw.rejected):  # the common case: a typed empty frame, built once
        if not _NO_REJECTS:
            _NO_REJECTS.append(
                _rejects_frame([], utc_micros(np.empty(0, np.int64)), [], fw.rejected)
            )
        return _NO_REJECTS[0].copy()
    event_time = utc_micros(fw.event_time, fw.event_time_null)
    mask = np.zeros(len(pdf), dtype=bool)
    mask[fw.rejected] = True
    rows = _rows_json(pdf[row_cols].reset_index(drop=True), mask) if mask.any() else []
    return _rejects_frame(fw.reasons, event_time, rows, fw.rejected)


#: :func:`_rejects` of no row (the typed empty frame costs ~1 ms to build: kept, copied).
_NO_REJECTS: list[pd.DataFrame] = []


def _rejects_frame(
    reasons: Sequence[str], event_time: pd.Series, rows: Sequence[str], index: np.ndarray
) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "reason": np.asarray(reasons, dtype=object),
            "event_time": event_time,
            "row": np.asarray(rows, dtype=object),
            "row_index": np.asarray(index, dtype=np.int64),
        }
    )
