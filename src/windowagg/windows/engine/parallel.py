"""Key groups on a thread pool: the batch engine's keys split into runs of balanced size.

=================  ==========================================================================
why                every key's windows are independent (no window crosses a key), the
                   native verbs take whole arrays and release the GIL while they slide
                   (FIFO ``query_slices`` of the built-in numeric monoids, order statistics'
                   ``kth_slices``, the wavelet matrix, the decayed kernels), and numpy
                   releases it in its kernels: runs of keys computed on several threads
                   overlap
split              :func:`key_runs`: the keys (sorted, end to end) cut into at most
                   ``threads`` runs of consecutive keys with about ``n / threads`` events
                   each; a key is never split
order              the runs' outputs are concatenated in key order: the same columns, row
                   for row, as one pass over every key (a key's windows are computed from
                   its own events only, by an aggregator that starts empty at its first
                   window), and the same refused positions, ascending
errors             every run finishes; if one raised, the single pass runs again on the
                   calling thread and raises what it raises (the error path pays one more
                   pass, so the error is the one ``threads=1`` raises, word for word)
threads            :func:`check_threads`: a positive int, or None for
                   ``WINDOWAGG_THREADS`` if set, else the cores this process may use
                   (:func:`default_threads`); ``1`` runs the single pass, unchanged
=================  ==========================================================================

Python monoids (a user's) run under the GIL as they always do: their runs interleave but
never run Python code at the same time. Nothing here depends on the number of cores for
its answers: only the number of runs changes, and every run count gives the same output
(``tests/windows/test_engine_threads.py``).
"""

from __future__ import annotations

import numbers
import os
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

import numpy as np

from windowagg.errors import ArgumentError

__all__ = ["check_threads", "default_threads", "key_runs", "run_all"]

_T = TypeVar("_T")


def default_threads() -> int:
    """``threads=None``: the environment variable ``WINDOWAGG_THREADS`` when set (a
    positive int: a test suite or a job pins it), else the cores this process may run on
    (``os.process_cpu_count()`` where Python has it, else the scheduler's affinity mask,
    else ``os.cpu_count()``; at least 1). O(1)."""
    pinned = os.environ.get("WINDOWAGG_THREADS", "").strip()
    if pinned:
        if not pinned.isdigit() or int(pinned) < 1:
            raise ArgumentError(
                f"WINDOWAGG_THREADS={pinned!r}: give a positive whole number of threads, or "
                "unset it for the cores this process may use"
            )
        return int(pinned)
    count = getattr(os, "process_cpu_count", None)
    if count is not None:
        got = count()
    elif hasattr(os, "sched_getaffinity"):
        got = len(os.sched_getaffinity(0))
    else:
        got = os.cpu_count()
    return max(1, int(got or 1))


def check_threads(threads: Any) -> int:
    """*threads* as a positive int (None: :func:`default_threads`), or an
    :class:`~windowagg.errors.ArgumentError` naming the value. O(1).

    >>> check_threads(2)
    2
    >>> check_threads(0)
    Traceback (most recent call last):
    ...
    windowagg.errors.ArgumentError: threads=0: give a positive whole number of threads (1 computes every key on the calling thread), or None for the cores this process may use
    """
    if threads is None:
        return default_threads()
    if isinstance(threads, bool) or not isinstance(threads, numbers.Integral) or threads < 1:
        raise ArgumentError(
            f"threads={threads!r}: give a positive whole number of threads (1 computes every "
            "key on the calling thread), or None for the cores this process may use"
        )
    return int(threads)


def key_runs(starts: np.ndarray, parts: int) -> list[int]:
    """Where the runs of consecutive keys begin: key indices ``[0, ..., len(starts) - 1]``,
    at most *parts* runs, each cut at the first key boundary at or past ``i * n / parts``
    events (a key is never split; a key bigger than a share makes its run longer and the
    run count smaller). O(parts log keys).

    >>> key_runs(np.array([0, 5, 10, 15, 20]), 2)
    [0, 2, 4]
    >>> key_runs(np.array([0, 18, 19, 20]), 2)  # one big key: one run holds it alone
    [0, 1, 3]
    >>> key_runs(np.array([0, 3]), 4)
    [0, 1]
    """
    keys = len(starts) - 1
    n = int(starts[-1]) - int(starts[0]) if keys > 0 else 0
    if keys <= 1 or parts <= 1 or n == 0:
        return [0, max(keys, 0)]
    targets = int(starts[0]) + (np.arange(1, parts, dtype=np.int64) * n) // parts
    cuts = np.searchsorted(np.asarray(starts, dtype=np.int64), targets, "left")
    bounds = sorted({0, keys, *(int(c) for c in cuts if 0 < c < keys)})
    return bounds


def run_all(tasks: Sequence[Callable[[], _T]], threads: int) -> list[_T | BaseException]:
    """Every task on a pool of *threads* threads, each task's result or the exception it
    raised, in the tasks' order (every task runs to its end, whatever the others do). O(1)
    besides the tasks."""
    if threads <= 1 or len(tasks) <= 1:
        return [_outcome(t) for t in tasks]
    with ThreadPoolExecutor(max_workers=min(threads, len(tasks))) as pool:
        futures = [pool.submit(_outcome, t) for t in tasks]
        return [f.result() for f in futures]


def _outcome(task: Callable[[], _T]) -> _T | BaseException:
    try:
        return task()
    except Exception as e:  # handed to the caller, which decides what to raise
        return e
