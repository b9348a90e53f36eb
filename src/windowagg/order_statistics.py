"""OrderStatistics: a multiset with rank, k-th smallest and exact quantiles.

=================  ==========================================================================
ordering           any: values are inserted and evicted in any order (a window's contents)
operator needs     a total order ``<`` on the values (no monoid: quantiles are not one)
insert(x)          Python: O(log n) search + O(n) shift; native: O(log n) worst case
evict(x)           same (removes one value equal to ``x``)
bulk_insert(xs)    m inserts; ``bulk_evict(xs)``: m evictions, all or nothing (a missing
                   value puts back what the call evicted); one call for a float64 buffer
kth(k), rank(x)    Python: O(1) / O(log n); native: O(log n) worst case
quantile(q)        one ``kth``; ``q`` may be a sequence (one ``kth`` each)
slide(...)         per step: one insert, the given evictions (per-step sequences, or one
                   float64/int64 array of one or k values per step), the quantiles
kth_slices(...)    per window ``values[lo[i]:hi[i]]`` (bounds non-decreasing): the given
                   0-based rank(s), from one scratch multiset slid over the windows (each
                   value inserted and removed at most once); ``quantile_slices`` the same
                   with quantiles. O((len(values) + windows · ranks) log w) natively
space              O(n)
structure          Python: one sorted list (``bisect``), the readable reference; native
                   (``backend="native"``): a counted B+ tree, fanout 64 (an
                   order-statistic tree, CLRS 14.1, with B+ tree nodes;
                   ``_native/include/windowagg/order_statistics.hpp``)
=================  ==========================================================================

Quantiles use the *nearest rank*: ``quantile(q)`` is the value at index
``max(ceil(q * n) - 1, 0)`` of the sorted values (``q * n`` in float64), which equals
DuckDB's ``quantile_disc`` (tests/native/test_order_statistics.py compares them). Exact,
unlike a sketch: windowed medians and percentiles over a count or time window keep the
window's values here and evict what leaves it.

Equal values (neither ``<`` the other, such as ``1`` and ``1.0``) are interchangeable:
the multiset keeps the one inserted first while any equal value remains, and ``kth``
returns it. A value not equal to itself (NaN) is refused with
:class:`~windowagg.errors.ValueOrderError`; evicting an absent value raises
:class:`~windowagg.errors.MissingValueError` and changes nothing; a value that ``<`` cannot
compare with the values held (``'x'`` among floats) raises
:class:`~windowagg.errors.ArgumentTypeError` (a ``TypeError``) naming both types, and
changes nothing.

The native twin keeps int64/float64 values in place and switches once, for good, to
Python objects compared with ``<`` when any other value arrives (a str, a Decimal, a
bool, an int beyond int64): same answers and errors.

Examples
--------
>>> s = OrderStatistics(backend="python")
>>> s.bulk_insert([5, 1, 4, 1, 3])
>>> s.kth(0), s.rank(4), s.quantile(0.5), s.quantile([0.0, 0.9, 1.0])
(1, 3, 3, [1, 5, 5])
>>> s.evict(1); list(s)
[1, 3, 4, 5]
>>> s.slide([9, 2], evict=[[5], [1, 3]], q=[0.5, 1.0])
[[3, 9], [4, 9]]
>>> import numpy as np
>>> s.slide(np.array([7.0, 8.0]), evict=np.array([2.0, 4.0]), q=0.5)  # one per step
[7.0, 8.0]
"""

from __future__ import annotations

import math
import operator
from bisect import bisect_left
from collections.abc import Iterator
from typing import Any, ClassVar

from windowagg._backend import Backed, Backend, resolve_backend
from windowagg.errors import (
    ArgumentError,
    ArgumentTypeError,
    EmptyWindowError,
    MissingValueError,
    ValueOrderError,
)
from windowagg.fifo._common import invariant
from windowagg.fifo._verbs import _index, _out_view, read_slices, read_values

__all__ = ["OrderStatistics", "nearest_rank"]

_WHO = "OrderStatistics"


def nearest_rank(q: float, n: int) -> int:
    """The index of quantile *q* among *n* sorted values: ``max(ceil(q * n) - 1, 0)``.

    >>> [nearest_rank(q, 10) for q in (0.0, 0.1, 0.15, 0.5, 1.0)]
    [0, 0, 1, 4, 9]
    """
    return max(math.ceil(q * n) - 1, 0)


def _unordered(a: list[Any], x: Any, op: str, err: TypeError) -> ArgumentTypeError:
    """The error for a value *x* that ``<`` cannot compare with the values held in *a*."""
    held = ", ".join(sorted({type(v).__name__ for v in (a[0], a[-1])})) if a else "none"
    return ArgumentTypeError(
        f"{_WHO}.{op}({x!r:.60}): a {type(x).__name__} cannot be ordered among the values "
        f"held ({held}; {err}); keep one comparable value type per multiset: convert the "
        "values first (e.g. float(x)) or route the record to the rejects"
    )


def _check_q(q: Any) -> float:
    try:
        x = float(q)
    except (TypeError, ValueError):
        raise TypeError(
            f"{_WHO}.quantile needs q as a real number in [0, 1] (or a sequence of them), "
            f"got {type(q).__name__}"
        ) from None
    if not 0.0 <= x <= 1.0:
        raise ValueError(f"{_WHO}.quantile needs 0 <= q <= 1, got {q!r}")
    return x


def _read_qs(q: Any) -> tuple[list[float], bool]:
    if isinstance(q, (int, float)):
        return [_check_q(q)], True
    return [_check_q(x) for x in read_values(q, f"{_WHO}.quantile")], False


def _flat(out: Any) -> Any:
    """*out* (any C-contiguous shape) seen as one flat memoryview of its items."""
    mv: Any = memoryview(out)
    fmt: Any = mv.format.lstrip("@=<") or "B"
    if mv.ndim == 1:
        return mv
    if not mv.nbytes:  # numpy's (0, m): nothing to write, but the format still counts
        return memoryview(bytearray()).cast(fmt) if not mv.readonly else mv
    return mv.cast("B").cast(fmt)


def _put(view: Any, start: int, answers: list[Any]) -> None:
    """Write one step's *answers* into the flat ``_out_view`` *view* from *start*. O(len)."""
    items, kind = view
    for j, ans in enumerate(answers):
        items[start + j] = float(ans) if kind == "d" else operator.index(ans)


def _evict_sets(evict: Any, steps: int, who: str) -> list[Any]:
    """:meth:`OrderStatistics.slide`'s *evict* as one sequence (or None) per step: a
    C-contiguous float64 / int64 buffer of shape ``(steps,)`` is one value per step, of
    shape ``(steps, k)`` k values per step; anything else is a sequence of per-step ones."""
    mv: Any = None
    if not isinstance(evict, (bytes, bytearray, str)):
        try:
            mv = memoryview(evict)
        except TypeError:
            mv = None
    if (
        mv is not None
        and mv.ndim in (1, 2)
        and mv.itemsize == 8
        and mv.c_contiguous
        and mv.format.lstrip("@=<") in ("d", "q", "l")
    ):
        rows: list[Any] = mv.tolist()
        sets = [[x] for x in rows] if mv.ndim == 1 else rows
    else:
        try:
            sets = list(evict)
        except TypeError:
            raise TypeError(
                f"{who}: evict must be a sequence with one sequence of values per step, or a "
                "float64/int64 array of shape (steps,) or (steps, k)"
            ) from None
    if len(sets) != steps:
        raise ValueError(f"{who}: {len(sets)} evict sets for {steps} values; give one per value")
    return sets


def _read_ranks(ranks: Any, r: int, who: str) -> tuple[list[list[int]], bool]:
    """The ranks of :meth:`OrderStatistics.kth_slices` as one row per window, and whether
    they came as rows (answers are then lists)."""
    try:
        mv: Any = memoryview(ranks)
    except TypeError:
        mv = None
    if mv is not None:
        fmt = mv.format.lstrip("@=<")
        if fmt not in ("q", "l") or mv.itemsize != 8 or mv.ndim not in (1, 2) or len(mv) != r:
            raise ArgumentTypeError(
                f"{who} needs ranks as an int64 array of shape (windows,) or (windows, m) "
                f"with one row per window ({r})"
            )
        flat = mv.tolist()
        if mv.ndim == 1:
            return [[k] for k in flat], False
        return [list(row) for row in flat], True
    try:
        items = list(ranks)
    except TypeError:
        raise ArgumentTypeError(
            f"{who} needs ranks as a sequence or an int64 array, got {type(ranks).__name__}"
        ) from None
    if len(items) != r:
        raise ArgumentError(
            f"{who}: {len(items)} rows of ranks for {r} windows; give one per window"
        )
    rows: list[list[int]] = []
    nested = False
    for i, x in enumerate(items):
        if isinstance(x, int) or hasattr(x, "__index__"):
            if nested:
                raise ArgumentError(f"{who}: rank row {i} is a number among sequences")
            rows.append([_index(x, who, "rank")])
            continue
        row = [_index(k, who, "rank") for k in read_values(x, who)]
        if i == 0:
            nested = True
        if not nested or len(row) != len(rows[0] if rows else row):
            raise ArgumentError(
                f"{who}: rank row {i} has {len(row)} ranks; give every window the same number"
            )
        rows.append(row)
    return rows, nested


class PyOrderStatistics:
    """The pure-Python reference implementation that ``OrderStatistics(backend="python")``
    holds."""

    __slots__ = ("_a",)

    def __init__(self) -> None:
        self._a: list[Any] = []  # every value, sorted; equal values are one object

    def insert(self, x: Any) -> None:
        """Add *x*. O(log n) comparisons, O(n) shift.

        >>> s = OrderStatistics(backend="python"); s.insert(1.0); s.insert(1); list(s)
        [1.0, 1.0]
        """
        if x != x:
            raise ValueOrderError(
                f"{_WHO} refuses {x!r}: it is not equal to itself (NaN), so it has no place "
                "in the order; drop or repair the record first"
            )
        a = self._a
        try:
            i = bisect_left(a, x)
            if i < len(a) and not x < a[i]:  # an equal value is there: keep its object
                x = a[i]
        except TypeError as e:  # x and the values held do not compare: nothing changed
            raise _unordered(a, x, "insert", e) from e
        a.insert(i, x)

    def evict(self, x: Any) -> None:
        """Remove one value equal to *x*; MissingValueError (nothing changes) if none, and
        ValueOrderError for NaN (equal to nothing; bisecting for it would find the smallest
        value). O(n)."""
        if x != x:
            raise ValueOrderError(
                f"{_WHO} refuses {x!r}: it is not equal to itself (NaN), so it has no place "
                "in the order; drop or repair the record first"
            )
        a = self._a
        try:
            i = bisect_left(a, x)
            absent = i == len(a) or x < a[i]
        except TypeError as e:
            raise _unordered(a, x, "evict", e) from e
        if absent:
            raise MissingValueError(
                f"{_WHO}.evict: {x!r} is not in the multiset; evict only values that were inserted"
            )
        del a[i]

    def rank(self, x: Any) -> int:
        """How many values are ``< x``. O(log n).

        >>> s = OrderStatistics(backend="python"); s.bulk_insert([3, 1, 2]); s.rank(2.5)
        2
        """
        if x != x:
            raise ValueOrderError(
                f"{_WHO} refuses {x!r}: it is not equal to itself (NaN), so it has no place "
                "in the order; drop or repair the record first"
            )
        try:
            return bisect_left(self._a, x)
        except TypeError as e:
            raise _unordered(self._a, x, "rank", e) from e

    def kth(self, k: int) -> Any:
        """The *k*-th smallest value, 0-based. O(1) here, O(log n) natively."""
        i = _index(k, f"{_WHO}.kth", "index")
        n = len(self._a)
        if not 0 <= i < n:
            raise EmptyWindowError(
                f"{_WHO}.kth({i}) on {n} values; k must be between 0 and len - 1"
            )
        return self._a[i]

    def quantile(self, q: Any) -> Any:
        """The nearest-rank quantile *q* (a list for a sequence of them). O(m).

        Equals DuckDB's ``quantile_disc``. EmptyWindowError when empty.

        >>> s = OrderStatistics(backend="python"); s.bulk_insert(range(1, 11))
        >>> s.quantile(0.5), s.quantile([0.25, 0.75])
        (5, [3, 8])
        """
        qs, scalar = _read_qs(q)
        a = self._a
        n = len(a)
        if not n:
            raise EmptyWindowError(f"{_WHO}.quantile() on an empty multiset; insert values first")
        if scalar:
            return a[nearest_rank(qs[0], n)]
        return [a[nearest_rank(x, n)] for x in qs]

    def bulk_insert(self, values: Any) -> None:
        """``insert`` every value (a sequence or a float64/int64 buffer). O(m) inserts."""
        insert = self.insert  # cached: called m times
        for x in read_values(values, f"{_WHO}.bulk_insert"):
            insert(x)

    def bulk_evict(self, values: Any) -> None:
        """``evict`` every value (a sequence or a float64/int64 buffer), all or nothing: a
        value that is missing or cannot be ordered puts back what the call evicted, then
        raises as ``evict``. O(m) evictions.

        >>> s = OrderStatistics(backend="python"); s.bulk_insert([3, 1, 2, 1])
        >>> s.bulk_evict([1, 3]); list(s)
        [1, 2]
        """
        done: list[Any] = []
        evict = self.evict  # cached: called m times
        try:
            for x in read_values(values, f"{_WHO}.bulk_evict"):
                evict(x)
                done.append(x)
        except BaseException:
            for x in done:
                self.insert(x)
            raise

    def slide(self, values: Any, evict: Any, q: Any, out: Any = None) -> Any:
        """Per step ``i``: insert ``values[i]``, evict every value of ``evict[i]`` (a
        sequence, or None), record the quantile(s) *q*. O(m) steps.

        *evict* may also be a C-contiguous float64 / int64 array (read in place natively,
        with no per-step Python object): shape ``(steps,)`` evicts one value per step,
        shape ``(steps, k)`` the k values of row ``i`` at step ``i``.

        Returns one answer per step (a list of answers per step when *q* is a sequence),
        or fills *out*: a writable float64/int64 buffer with ``steps * len(q)`` slots (any
        C-contiguous shape, e.g. ``(steps, len(q))``). A step that evicts an absent value
        is undone and raises MissingValueError; the steps before it stay done.
        """
        who = f"{_WHO}.slide"
        vals = read_values(values, who)
        gone_sets = _evict_sets(evict, len(vals), who)
        qs, scalar = _read_qs(q)
        m = len(qs)
        view: Any = None
        if out is not None:
            view = _out_view(_flat(out), len(vals) * m, who)
        a = self._a
        rows: list[Any] = []
        for i, (x, gone) in enumerate(zip(vals, gone_sets, strict=True)):
            self.insert(x)
            done: list[Any] = []
            for y in [] if gone is None else read_values(gone, who):
                try:
                    self.evict(y)
                except Exception as e:  # absent, NaN, or a comparison that raised
                    for z in done:  # undo this step
                        self.insert(z)
                    self.evict(x)
                    if not isinstance(e, MissingValueError):
                        raise
                    raise MissingValueError(
                        f"{_WHO}.slide (step {i}): {y!r} is not in the multiset; evict only "
                        "values that were inserted"
                    ) from None
                done.append(y)
            n = len(a)
            if not n:
                raise EmptyWindowError(f"{who}: step {i} leaves the multiset empty")
            answers = [a[nearest_rank(p, n)] for p in qs]
            if view is None:
                rows.append(answers[0] if scalar else answers)
                continue
            _put(view, i * m, answers)
        return rows if out is None else out

    def kth_slices(self, values: Any, lo: Any, hi: Any, ranks: Any, out: Any = None) -> Any:
        """Per window i, the ``ranks[i]``-th smallest (0-based) of ``values[lo[i]:hi[i]]``.

        ``lo`` and ``hi`` as :meth:`windowagg.fifo.TwoStacksLite.query_slices` (int64
        buffers or sequences, non-decreasing, ``0 <= lo <= hi <= len(values)``).
        *ranks*: one int per window (an int64 array of shape ``(windows,)``), or a row of
        m ints per window (shape ``(windows, m)``, or a sequence of sequences), each
        between 0 and the window's size - 1 (``EmptyWindowError`` otherwise), all checked
        before anything runs. Returns one answer per window (a list per window for rows),
        or fills *out* (``windows * m`` slots, any C-contiguous shape) and returns it. One
        scratch multiset slides over the windows (a window starting at or after the end of
        what is held starts afresh); this multiset is neither read nor changed. A value
        that is not equal to itself (NaN) raises ValueOrderError.

        >>> s = OrderStatistics(backend="python")
        >>> s.kth_slices([5, 1, 4, 2, 3], lo=[0, 0, 2], hi=[2, 5, 5], ranks=[0, 2, 2])
        [1, 3, 4]
        >>> s.kth_slices([5, 1, 4], lo=[0, 1], hi=[2, 3], ranks=[[0, 1], [1, 1]]), len(s)
        ([[1, 5], [4, 4]], 0)
        """
        who = f"{_WHO}.kth_slices"
        vals = read_values(values, who)
        los, his = read_slices(lo, hi, len(vals), who)
        rows, nested = _read_ranks(ranks, len(los), who)
        for i, (row, a, b) in enumerate(zip(rows, los, his, strict=True)):
            for k in row:
                if not 0 <= k < b - a:
                    raise EmptyWindowError(
                        f"{who}: window {i} holds {b - a} values and has no rank {k}; ranks "
                        "must be between 0 and its size - 1"
                    )
        per = len(rows[0]) if rows else 1
        return self._select(vals, los, his, lambda i, n: rows[i], per, nested, out, who)

    def quantile_slices(self, values: Any, lo: Any, hi: Any, q: Any, out: Any = None) -> Any:
        """Per window i, the nearest-rank quantile(s) *q* of ``values[lo[i]:hi[i]]``.

        As :meth:`kth_slices` with the ranks of :meth:`quantile` (``q`` one number or a
        sequence; an empty window raises EmptyWindowError). O(windows · len(q)) ranks.

        >>> s = OrderStatistics(backend="python")
        >>> s.quantile_slices([5, 1, 4, 2, 3], lo=[0, 1], hi=[5, 5], q=0.5)
        [3, 2]
        """
        who = f"{_WHO}.quantile_slices"
        vals = read_values(values, who)
        los, his = read_slices(lo, hi, len(vals), who)
        qs, scalar = _read_qs(q)
        for i, (a, b) in enumerate(zip(los, his, strict=True)):
            if a == b:
                raise EmptyWindowError(
                    f"{who}: window {i} ([{a}, {b})) holds no value; it has no quantile"
                )

        def ranks(i: int, n: int) -> list[int]:
            return [nearest_rank(p, n) for p in qs]

        return self._select(vals, los, his, ranks, len(qs), not scalar, out, who)

    @staticmethod
    def _select(
        vals: list[Any],
        los: list[int],
        his: list[int],
        ranks: Any,
        per: int,
        nested: bool,
        out: Any,
        who: str,
    ) -> Any:
        """The slice verbs' loop: a scratch multiset slid over the windows."""
        view: Any = None
        if out is not None:
            view = _out_view(_flat(out), len(los) * per, who)
        w = PyOrderStatistics()
        answers: list[Any] = []
        held_lo = held_hi = 0
        for i, (a, b) in enumerate(zip(los, his, strict=True)):
            if a >= held_hi:
                if held_hi > held_lo:
                    w = PyOrderStatistics()
                held_lo = held_hi = a
            for x in vals[held_hi:b]:
                w.insert(x)
            held_hi = max(held_hi, b)
            for x in vals[held_lo:a]:
                w.evict(x)
            held_lo = a
            got = [w._a[k] for k in ranks(i, b - a)]
            if view is None:
                answers.append(got if nested else got[0])
                continue
            _put(view, i * per, got)
        return answers if out is None else out

    def __len__(self) -> int:
        """Number of values. O(1)."""
        return len(self._a)

    def __iter__(self) -> Iterator[Any]:
        """The values, smallest first (a snapshot). O(n)."""
        return iter(list(self._a))

    def _check(self) -> None:
        """O(n): the values are sorted, and equal neighbours are one object."""
        a = self._a
        for i in range(1, len(a)):
            invariant(not a[i] < a[i - 1], _WHO, f"values {i - 1} and {i} out of order")
            if not a[i - 1] < a[i]:
                invariant(a[i] is a[i - 1], _WHO, f"equal values {i - 1} and {i} differ")

    def __repr__(self) -> str:
        return f"{_WHO}(n={len(self)})"


class OrderStatistics(Backed):
    """A multiset of ordered values: ``insert``, ``evict``, ``kth``, ``rank``, ``quantile``.

    The fact card opens the module docstring: ``help(windowagg.order_statistics)``.

    Parameters
    ----------
    backend : {"auto", "native", "python"}, optional
        The implementation (see :mod:`windowagg._backend`); the default follows
        ``$WINDOWAGG_BACKEND``, else the native one when it is built.
    """

    _hot: ClassVar[tuple[str, ...]] = ("insert", "evict", "rank", "kth", "quantile")

    def __init__(self, *, backend: Backend | None = None) -> None:
        if resolve_backend(backend, "OrderStatistics"):
            from windowagg._native.order_statistics import make  # below this class

            self._hold(make())
        else:
            self._hold(PyOrderStatistics())

    # The verbs, for subclasses and readers; an instance calls the implementation's own
    # methods, bound at construction (Backed._hold).
    def insert(self, x: Any) -> None:
        """Add *x*."""
        self._impl.insert(x)

    def evict(self, x: Any) -> None:
        """Remove one value equal to *x*."""
        self._impl.evict(x)

    def rank(self, x: Any) -> int:
        """The number of held values less than *x*."""
        r: int = self._impl.rank(x)
        return r

    def kth(self, k: int) -> Any:
        """The value of rank *k* (0-based)."""
        return self._impl.kth(k)

    def quantile(self, q: Any) -> Any:
        """The exact *q*-quantile of the held values."""
        return self._impl.quantile(q)

    def _check(self) -> None:
        """The implementation's invariants. O(n)."""
        self._impl._check()
