"""Windows end to end, for one key or many at once: admission, assignment, the
aggregators, emission.

This is the function every batch front end calls: ``windowagg.pandas.window_agg`` with all
the keys of the input, ``windowagg.spark.window_agg`` with all the keys of each
``mapInArrow`` partition (``docs/engine.md``). The keys' events are laid end to end and
go through each stage in one pass: a fixed number of numpy calls and one aggregator verb
per aggregation, however many keys (window bounds never cross a key).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np

from windowagg.errors import AggregationError
from windowagg.windows.engine.admission import admit_groups
from windowagg.windows.engine.assign import assign_groups
from windowagg.windows.engine.emit import columns
from windowagg.windows.engine.parallel import check_threads, key_runs, run_all
from windowagg.windows.engine.shapes import Shape, count_tail_reason
from windowagg.windows.engine.sizes import evaluate_sizes, sized_aggs
from windowagg.windows.engine.state import Factory, Plan, evaluate, plan

__all__ = ["GroupsResult", "KeyResult", "count_tail_reason", "window_groups", "window_key"]


class GroupsResult(NamedTuple):
    """The output of :func:`window_groups`: every key's windows, end to end."""

    columns: dict[str, Any]
    """``start``, ``end`` (int64) and one column per aggregation alias (with
    ``shape.sizes``: per aggregation and size, :func:`~.sizes.sized_aggs`); key by key."""
    sizes: np.ndarray
    """The number of windows of every key (int64)."""
    refused: np.ndarray
    """Positions (into the caller's arrays) of the events refused at admission."""
    reasons: list[str]
    """One reason per refused position."""


class KeyResult(NamedTuple):
    """One key's output: window columns, and the refused positions with reasons."""

    columns: dict[str, Any]
    """``start``, ``end`` (int64) and one column per aggregation alias."""
    refused: np.ndarray
    """Positions (into the caller's arrays) of the events refused at admission."""
    reasons: list[str]
    """One reason per refused position."""


def window_groups(
    t: np.ndarray,
    values: Mapping[str, np.ndarray],
    starts: np.ndarray,
    aggs: Sequence[Any],
    shape: Shape,
    *,
    lateness: tuple[int, int] | None = None,
    factory: Factory | None = None,
    planned: Plan | None = None,
    threads: int = 1,
    rows: np.ndarray | None = None,
) -> GroupsResult:
    """All windows of many keys' events and the events refused, in one pass (or in runs
    of consecutive keys on *threads* threads).

    Parameters
    ----------
    t
        int64 event times of every key, end to end: key g's in ``t[starts[g]:starts[g+1]]``,
        each key's in arrival order.
    values
        float64 value columns, aligned with *t*.
    starts
        Where each key's events begin (non-decreasing, from 0 to ``len(t)``).
    aggs
        ``Agg``-like objects (alias, monoid, column, kind, dtype).
    shape
        The windows to compute.
    lateness
        ``(max_out_of_orderness, allowed_lateness)``: judge each key's events in arrival
        order with a clock of its own (None: every valid event is on time, as in batch).
    factory
        ``monoid -> FIFO aggregator`` (default ``fifo.TwoStacksLite``).
    planned
        ``plan(aggs)`` computed once by a caller that calls again.
    threads
        Threads to compute the keys on (:mod:`.parallel`): the keys cut into at most
        *threads* runs of balanced event counts, each run one pass on a pool thread, the
        outputs concatenated in key order (the same output as ``threads=1``, which runs
        one pass on the calling thread).
    rows
        Where the events are in *t* and *values* (int64 positions, key by key as *starts*
        says): the engine reads ``t[rows]`` (each run its own part, on its thread); None:
        *t* and *values* are key by key already. Refused positions index ``rows`` then.

    Returns
    -------
    GroupsResult
        Windows key by key, each key's ordered by end (per-event windows: one per admitted
        event, in time order, ties in arrival order); refused positions ascending.

    Complexity: O(n log n) admission + O(n + windows + keys) assignment + the aggregators'
    verbs (amortized O(1) per event and per window) + O(log w) per event and per window
    for each column with exact quantiles.

    Examples
    --------
    >>> from windowagg.aggs import parse_aggs
    >>> r = window_groups(np.array([3, 1, 12, 4]), {"v": np.array([2.0, 5.0, 1.0, 7.0])},
    ...                   np.array([0, 3, 4]), parse_aggs(["max(v)", "count"]),
    ...                   Shape(size=10, slide=10))
    >>> r.sizes.tolist(), r.columns["end"].tolist(), r.columns["max_v"].tolist()
    ([2, 1], [10, 20, 10], [5.0, 1.0, 7.0])
    """
    p = planned if planned is not None else plan(aggs)
    threads = check_threads(threads)
    runs = key_runs(np.asarray(starts, dtype=np.int64), threads) if threads > 1 else []
    if len(runs) <= 2:
        return _one_pass(_take(t, values, rows), starts, aggs, shape, lateness, factory, p)
    return _in_runs(t, values, rows, starts, aggs, shape, lateness, factory, p, runs, threads)


def _take(
    t: np.ndarray, values: Mapping[str, np.ndarray], rows: np.ndarray | slice | None
) -> tuple[np.ndarray, Mapping[str, np.ndarray]]:
    """``(t[rows], {c: v[rows]})`` (positions, or a slice: views), or ``(t, values)``
    without *rows*. O(len(rows))."""
    if rows is None:
        return t, values
    return np.asarray(t)[rows], {c: np.asarray(v)[rows] for c, v in values.items()}


def _one_pass(
    events: tuple[np.ndarray, Mapping[str, np.ndarray]],
    starts: np.ndarray,
    aggs: Sequence[Any],
    shape: Shape,
    lateness: tuple[int, int] | None,
    factory: Factory | None,
    p: Plan,
) -> GroupsResult:
    """:func:`window_groups` in one pass over every key (*events*: ``(t, values)`` key by
    key), on the calling thread."""
    t, values = events
    a = admit_groups(t, values, starts, lateness, p.probes, shape)
    if a.in_order:  # sorted and whole already: the events as they are, no gather
        ts = np.asarray(t, dtype=np.int64)
        sorted_values = {c: np.asarray(v, dtype=np.float64) for c, v in values.items()}
    else:
        ts = np.asarray(t, dtype=np.int64)[a.order]
        sorted_values = {c: np.asarray(v, dtype=np.float64)[a.order] for c, v in values.items()}
    if len(a.refused):  # admitted events per key (a.order is sorted by key)
        key = np.repeat(np.arange(len(starts) - 1, dtype=np.int64), np.diff(starts))
        admitted = np.bincount(key[a.order], minlength=len(starts) - 1)
        new_starts = np.concatenate([[0], np.cumsum(admitted)]).astype(np.int64)
    else:  # every event admitted: the keys begin where they did
        new_starts = np.asarray(starts, dtype=np.int64)
    w, sizes = assign_groups(shape, ts, new_starts)
    out_aggs = aggs
    try:
        if shape.sizes:  # several sizes over the largest's windows: one slide per size
            out_aggs = sized_aggs(aggs, shape.sizes)
            results = evaluate_sizes(
                p, w, sizes, ts, new_starts, sorted_values, shape, aggs, factory
            )
        else:
            results = evaluate(p, w, sorted_values, factory, times=ts)
    except AggregationError as e:
        raise _with_key(e, sizes) from e.__cause__
    refused, reasons = a.refused, a.reasons
    # events no window holds (count windows' by position): rejects, never dropped
    refused, reasons = shape.unassigned(w, new_starts, a.order, refused, reasons)
    return GroupsResult(columns(w, results, out_aggs), sizes, refused, reasons)


def _in_runs(
    t: np.ndarray,
    values: Mapping[str, np.ndarray],
    rows: np.ndarray | None,
    starts: np.ndarray,
    aggs: Sequence[Any],
    shape: Shape,
    lateness: tuple[int, int] | None,
    factory: Factory | None,
    p: Plan,
    runs: list[int],
    threads: int,
) -> GroupsResult:
    """:func:`window_groups` as one pass per run of keys (``runs``: :func:`.key_runs`) on
    *threads* threads, concatenated in key order. A run that raised makes the single pass
    run on the calling thread, which raises its own error (the one ``threads=1`` raises).
    O(one pass) + O(runs) concatenations."""
    starts = np.asarray(starts, dtype=np.int64)
    t = np.asarray(t)

    def task(g0: int, g1: int) -> Callable[[], GroupsResult]:
        s0, s1 = int(starts[g0]), int(starts[g1])
        part = slice(s0, s1) if rows is None else rows[s0:s1]  # a slice: views, no copy

        def run() -> GroupsResult:  # the run's events gathered on its own thread
            events = _take(t, values, part)
            return _one_pass(events, starts[g0 : g1 + 1] - s0, aggs, shape, lateness, factory, p)

        return run

    tasks = [task(g0, g1) for g0, g1 in itertools.pairwise(runs)]
    got = run_all(tasks, threads)
    failed = [r for r in got if isinstance(r, BaseException)]
    if failed:  # the single pass raises its own error: the one threads=1 raises
        _one_pass(_take(t, values, rows), starts, aggs, shape, lateness, factory, p)
        raise failed[0]  # the single pass went through: a monoid that fails at random
    done = [r for r in got if not isinstance(r, BaseException)]
    offsets = [int(starts[g]) for g in runs[:-1]]
    refused = np.concatenate(
        [np.empty(0, np.int64)]
        + [r.refused.astype(np.int64) + o for r, o in zip(done, offsets, strict=True)]
    )
    out = {k: _concat([r.columns[k] for r in done]) for k in done[0].columns}
    return GroupsResult(
        out,
        np.concatenate([r.sizes for r in done]).astype(np.int64),
        refused,
        [why for r in done for why in r.reasons],
    )


def _concat(parts: list[Any]) -> Any:
    """One output column from the runs' (numpy arrays end to end, else one list). O(n)."""
    if all(isinstance(c, np.ndarray) for c in parts):
        return np.concatenate(parts)
    return [x for c in parts for x in (c.tolist() if isinstance(c, np.ndarray) else c)]


def _with_key(e: AggregationError, sizes: np.ndarray) -> AggregationError:
    """*e* (a window index among all keys' windows) with its key's index. O(keys)."""
    if e.window is None:
        return e
    g = int(np.searchsorted(np.cumsum(sizes), e.window, "right"))
    return AggregationError(
        f"{e} (key #{g} in key order)", alias=e.alias, window=e.window, key=g, reason=e.reason
    )


def window_key(
    t: np.ndarray,
    values: Mapping[str, np.ndarray],
    aggs: Sequence[Any],
    shape: Shape,
    *,
    lateness: tuple[int, int] | None = None,
    factory: Factory | None = None,
    planned: Plan | None = None,
) -> KeyResult:
    """:func:`window_groups` for one key's events (arrival order).

    >>> from windowagg.aggs import parse_aggs
    >>> r = window_key(np.array([3, 1, 12]), {"v": np.array([2.0, 5.0, 1.0])},
    ...                parse_aggs(["max(v)", "count"]), Shape(size=10, slide=10))
    >>> r.columns["end"].tolist(), r.columns["max_v"].tolist(), r.columns["count"].tolist()
    ([10, 20], [5.0, 1.0], [2, 1])
    """
    starts = np.array([0, len(t)], dtype=np.int64)
    r = window_groups(
        t, values, starts, aggs, shape, lateness=lateness, factory=factory, planned=planned
    )
    return KeyResult(r.columns, r.refused, r.reasons)
