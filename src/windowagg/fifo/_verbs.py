"""Array verbs and state for every FIFO class, with the same semantics as the native twins.

:class:`ArrayVerbs` is mixed into every ``windowagg.fifo`` class (and the native classes
implement the same verbs in C++, ``windowagg/_native/src/fifo_bind.hpp``):

=====================================  ==============================================
``bulk_insert(values)``                ``insert`` each value, in order. O(m) inserts
``slide(values, evict=1, out=None)``   for each value: evict ``evict`` entries (an int,
                                       or one count per value), insert the value,
                                       record ``query()``. O(m) steps
``query_slices(values, lo, hi,         ``query()`` of a fresh window of the same class
out=None)``                            holding ``values[lo[i]:hi[i]]``, for every
                                       window i (``lo``, ``hi`` non-decreasing); the
                                       window itself is neither read nor changed.
                                       O(len(values) + windows) operations
``to_bytes()``                         the window's partials, oldest first, through
                                       :mod:`windowagg.codec`. O(n)
``Cls.from_bytes(data, monoid, ...)``  a window of class ``Cls`` holding those partials
                                       (either backend reads either's bytes). O(n)
=====================================  ==============================================

*values* is any iterable, or a 1-D float64 / int64 buffer (numpy, ``array``,
``memoryview``), whose items are read as Python floats / ints (as the native classes read
them, without a Python object per value). *out* is ``None`` (a list of answers is
returned) or a writable 1-D float64 / int64 buffer with one slot per value, receiving
``float(answer)`` / ``operator.index(answer)``; ``out`` itself is returned.

Every eviction count is checked against the window's size at its step before anything
changes (``EmptyWindowError``). Each call is all-or-nothing, like a single ``insert`` or
``evict``: a ``lift`` or ``combine`` that raises at any step (or an answer that ``out``
refuses) undoes the steps before it, and the call raises that error with the window as it
found it. Nothing is copied for this on the way: ``bulk_insert`` keeps nothing (the
entries it found are a prefix of the window), ``slide`` keeps the entries it evicts (a
list of O(evicted) references, taken before its first step), and only a failure rebuilds
the window from the entries it found (O(n) inserts, on the error path). That rebuild
combines the same entries in another grouping; if it raises too (a ``combine`` that is
not total over entries the window already held: its ``query()`` raised before the call,
or one that refuses some groupings only), the call cannot be undone: it raises
:class:`~windowagg.errors.StateError` (its ``__cause__`` is the first error), and the
window keeps the steps done before the failure, consistent (``_check()`` passes). The
native classes do the same (same combines in the same order, so the same outcome).

State bytes: ``codec.dumps(("windowagg.fifo", 1, class_name, [partials]))``. A partial is
the Python monoid's own partial, so a state written by the native backend reads in the
Python one and back.

>>> from windowagg.fifo import DABA
>>> from windowagg.monoids import Sum
>>> w = DABA(Sum(), backend="python"); w.bulk_insert([1, 2, 3])
>>> w.slide([4, 5], evict=1)
[9, 12]
>>> w2 = DABA.from_bytes(w.to_bytes(), Sum(), backend="python"); list(w2), w2.query()
([3, 4, 5], 12)
"""

from __future__ import annotations

import operator
from collections.abc import Iterable
from itertools import islice
from typing import TYPE_CHECKING, Any

from windowagg import codec
from windowagg.errors import (
    ArgumentError,
    ArgumentTypeError,
    CodecError,
    EmptyWindowError,
    StateError,
)

__all__ = [
    "ArrayVerbs",
    "dump_state",
    "load_state",
    "read_counts",
    "read_slices",
    "read_values",
]

STATE_TAG = "windowagg.fifo"
STATE_VERSION = 1


def _buffer_kind(obj: Any) -> tuple[memoryview, str] | None:
    """``(view, 'd' | 'q')`` for a 1-D float64 / int64 buffer, else None."""
    if isinstance(obj, (bytes, bytearray, str)):
        return None
    try:
        view = memoryview(obj)
    except TypeError:
        return None
    fmt = view.format.lstrip("@=<")
    if view.ndim != 1 or view.itemsize != 8 or fmt not in ("d", "q", "l"):
        return None
    return view, ("d" if fmt == "d" else "q")


def read_values(values: Any, who: str) -> list[Any]:
    """*values* as a list: a float64 / int64 buffer as Python numbers, any iterable as is."""
    got = _buffer_kind(values)
    if got is not None:
        return got[0].tolist()
    if not isinstance(values, Iterable):
        raise ArgumentTypeError(
            f"{who} needs a sequence or a 1-D float64/int64 buffer of values, "
            f"got {type(values).__name__}"
        )
    return list(values)


def _index(x: Any, who: str, what: str = "evict count") -> int:
    if isinstance(x, bool):
        raise ArgumentTypeError(f"{who} needs an integer {what}, got a bool")
    try:
        return operator.index(x)
    except TypeError:
        raise ArgumentTypeError(f"{who} needs an integer {what}, got {type(x).__name__}") from None


def read_counts(evict: Any, n: int, size: int, who: str) -> list[int]:
    """One eviction count per step, each between 0 and the window's size at its step."""
    if isinstance(evict, int):
        counts = [_index(evict, who)] * n
    else:
        got = _buffer_kind(evict)
        if got is not None and got[1] == "d":
            raise ArgumentTypeError(f"{who} needs integer evict counts, got float64")
        raw = read_values(evict, who)
        if len(raw) != n:
            raise ArgumentError(
                f"{who}: {len(raw)} evict counts for {n} values; give one count per value "
                "(or one int for every step)"
            )
        counts = [_index(k, who) for k in raw]
    s = size
    for i, k in enumerate(counts):
        if k < 0 or k > s:
            raise EmptyWindowError(
                f"{who}: step {i} evicts {k} entries from a window of {s}; each count must "
                "be between 0 and len(window) at its step"
            )
        s = s - k + 1
    return counts


def _read_indices(obj: Any, who: str, name: str) -> list[int]:
    got = _buffer_kind(obj)
    if got is not None and got[1] == "d":
        raise ArgumentTypeError(f"{who} needs integer window bounds {name}, got float64")
    return [_index(x, who, "window bound") for x in read_values(obj, who)]


def read_slices(lo: Any, hi: Any, n: int, who: str) -> tuple[list[int], list[int]]:
    """The window bounds of the slice verbs, checked as the native ``Slices`` checks them.

    One ``lo`` and one ``hi`` per window, ``0 <= lo[i] <= hi[i] <= n``, both non-decreasing
    (``ArgumentError`` naming the first window that fails). O(windows).
    """
    los, his = _read_indices(lo, who, "lo"), _read_indices(hi, who, "hi")
    if len(los) != len(his):
        raise ArgumentError(
            f"{who}: {len(los)} lower bounds for {len(his)} upper bounds; give one lo and one "
            "hi per window"
        )
    for i, (a, b) in enumerate(zip(los, his, strict=True)):
        if a < 0 or a > b or b > n:
            raise ArgumentError(
                f"{who}: window {i} is [{a}, {b}) over {n} values; each window needs "
                "0 <= lo <= hi <= len(values)"
            )
        if i and (a < los[i - 1] or b < his[i - 1]):
            raise ArgumentError(
                f"{who}: window {i} is [{a}, {b}) after [{los[i - 1]}, {his[i - 1]}); lo and "
                "hi must be non-decreasing (sort the windows by their ends)"
            )
    return los, his


def out_writer(out: Any, n: int, who: str) -> Any:
    """``put(i, answer)`` into *out* (see :func:`_out_view`), or None when *out* is None."""
    if out is None:
        return None
    got = _out_view(out, n, who)
    view: Any = got[0]
    kind = got[1]

    def put(i: int, ans: Any) -> None:
        if kind == "d":
            view[i] = float(ans)
        else:
            view[i] = operator.index(ans)

    return put


def _out_view(out: Any, n: int, who: str) -> tuple[memoryview, str]:
    try:
        view = memoryview(out)
    except TypeError:
        raise ArgumentTypeError(
            f"{who}: out must be a writable 1-D float64 or int64 buffer (e.g. a numpy array), "
            f"got {type(out).__name__}"
        ) from None
    got = _buffer_kind(out)
    if got is None or view.readonly:
        raise ArgumentTypeError(
            f"{who}: out must be a writable 1-D float64 or int64 buffer, got format "
            f"{view.format!r}{' (read-only)' if view.readonly else ''}"
        )
    if len(view) != n:
        raise ArgumentError(
            f"{who}: out has {len(view)} slots for {n} values; give it exactly one slot per value"
        )
    return got


def dump_state(who: str, partials: list[Any]) -> bytes:
    """The state bytes of a FIFO window of class *who* holding *partials*. O(n)."""
    return codec.dumps((STATE_TAG, STATE_VERSION, who, list(partials)))


def load_state(data: bytes | bytearray | memoryview, who: str) -> tuple[Any, ...]:
    """The partials in state bytes (CodecError for anything else). O(len(data))."""
    obj = codec.loads(data)
    if (
        type(obj) is not tuple
        or len(obj) != 4
        or obj[0] != STATE_TAG
        or type(obj[3]) is not list
        or type(obj[2]) is not str
    ):
        raise CodecError(
            f"{who}.from_bytes: not a windowagg.fifo state (expected what to_bytes() writes)"
        )
    if obj[1] != STATE_VERSION:
        raise CodecError(f"{who}.from_bytes: unknown state version {obj[1]!r}; upgrade windowagg")
    return tuple(obj[3])


class ArrayVerbs:
    """``bulk_insert``, ``slide``, ``to_bytes`` and ``from_bytes`` over a class's own verbs."""

    __slots__ = ()

    if TYPE_CHECKING:

        def insert(self, v: Any) -> None: ...

        def evict(self) -> None: ...

        def bulk_evict(self, count: int) -> None: ...

        def query(self) -> Any: ...

        def __len__(self) -> int: ...

        def __iter__(self) -> Any: ...

        def _load_partials(self, partials: Iterable[Any]) -> None: ...

        def _hold_again(self, partials: list[Any]) -> None: ...

    def _head(self, k: int) -> list[Any]:
        """The *k* oldest partials (a class with an indexable storage overrides this with
        an O(k) form; this one iterates a snapshot)."""
        return list(islice(iter(self), k))

    def _undo(self, verb: str, n0: int, partials: list[Any], exc: BaseException) -> None:
        """Error path of a bulk call: make the window hold *partials* (the *n0* entries it
        found) again, through the class's ``_hold_again`` (O(n) inserts). If that raises too,
        the window is left as the call left it and :class:`StateError` says so."""
        try:
            self._hold_again(partials)
        except Exception:
            raise StateError(
                f"{self._state_who}.{verb}: a {type(exc).__name__} stopped the call part-way, "
                "and the monoid raised again while the call was undone (the entries the "
                "window held, combined in another grouping: its combine is not total over "
                f"them); the call is not undone: the window holds {len(self)} entries (it "
                f"held {n0}) and is consistent. Evict the entries its combine refuses, or "
                "rebuild the window from a state you trust (from_bytes)"
            ) from exc

    @property
    def _state_who(self) -> str:
        """The public class name used in messages and state bytes."""
        who = getattr(self, "_who", None) or getattr(self, "_WHO", None)
        return str(who) if who else type(self).__name__

    def bulk_insert(self, values: Any) -> None:
        """Insert every value of *values*, oldest first. O(m) inserts.

        All or nothing: if a ``lift`` or ``combine`` raises, the values inserted before it
        are taken out again (the window is rebuilt from the entries it found: O(n), on
        that error path only; see the module docstring for a rebuild that raises too).

        >>> from windowagg.fifo import TwoStacksLite
        >>> from windowagg.monoids import Max
        >>> w = TwoStacksLite(Max(), backend="python"); w.bulk_insert([3, 1, 2]); w.query()
        3
        >>> w.bulk_insert([4, float("nan")])
        Traceback (most recent call last):
        ...
        windowagg.errors.MonoidInputError: Max() refuses non-finite value nan: drop or repair the record (a windows policy can route it to the rejects)
        >>> list(w)
        [3, 1, 2]
        """
        vals = read_values(values, f"{self._state_who}.bulk_insert")
        n0 = len(self)
        insert = self.insert  # cached: called m times
        try:
            for v in vals:
                insert(v)
        except BaseException as exc:
            if len(self) != n0:  # the failed insert changed nothing; the ones before did
                self._undo("bulk_insert", n0, self._head(n0), exc)
            raise

    def slide(self, values: Any, evict: Any = 1, out: Any = None) -> Any:
        """For each value: evict *evict* entries, insert the value, record ``query()``.

        O(m) steps, each at the cost of the class's evict, insert and query. Returns the
        answers as a list, or writes them into *out* and returns it (see the module
        docstring). Counts are validated before anything changes. All or nothing: the
        entries the call will evict are listed first (O(their number)); if a step raises,
        the window is rebuilt from the entries it found (O(n), on that error path only)
        and the call raises that error (*out* may hold the answers of the steps before).

        >>> from windowagg.fifo import DABALite
        >>> from windowagg.monoids import Sum
        >>> w = DABALite(Sum(), backend="python"); w.bulk_insert([1, 2])
        >>> w.slide([3, 4, 5]), w.slide([6, 7], evict=[0, 3])
        ([5, 7, 9], [15, 7])
        """
        who = f"{self._state_who}.slide"
        vals = read_values(values, who)
        counts = read_counts(evict, len(vals), len(self), who)
        view: Any = None if out is None else _out_view(out, len(vals), who)
        n0 = len(self)
        head = self._head(min(sum(counts), n0))  # what the call evicts, for the error path
        ev, bulk, ins, query = self.evict, self.bulk_evict, self.insert, self.query
        answers: list[Any] = []
        done = 0  # inserts done
        try:
            for i, (v, k) in enumerate(zip(vals, counts, strict=True)):
                if k == 1:
                    ev()
                elif k:
                    bulk(k)
                ins(v)
                done += 1
                ans = query()
                if view is None:
                    answers.append(ans)
                elif view[1] == "d":
                    view[0][i] = float(ans)
                else:
                    view[0][i] = operator.index(ans)
        except BaseException as exc:
            gone = n0 + done - len(self)  # evictions done (a failed call changed nothing)
            if gone or done:
                # a bulk_evict that could not undo itself raised StateError from the
                # monoid's error: the whole call is undone here instead, if it can be
                orig = exc.__cause__ if isinstance(exc, StateError) and exc.__cause__ else exc
                kept = max(n0 - gone, 0)
                self._undo("slide", n0, [*head[: n0 - kept], *self._head(kept)], orig)
                if orig is not exc:
                    raise orig from None
            raise
        return answers if out is None else out

    def _scratch(self) -> Any:
        """An empty window of the same class and parameters, on the Python backend."""
        fresh = getattr(self, "_fresh", None)
        if fresh is not None:
            return fresh()
        cls: Any = type(self)
        monoid = getattr(self, "monoid")  # noqa: B009 - every FIFO class has one
        extra = {"bulk_after": self._bulk_after} if hasattr(self, "_bulk_after") else {}
        return cls(monoid, **extra)

    def query_slices(self, values: Any, lo: Any, hi: Any, out: Any = None) -> Any:
        """``query()`` of a fresh window holding ``values[lo[i]:hi[i]]``, for every window i.

        ``lo`` and ``hi`` (int64 buffers or sequences of ints) are non-decreasing, with
        ``0 <= lo[i] <= hi[i] <= len(values)``; an empty window answers ``query()`` of an
        empty window. One scratch window of this class slides over the slices: per window
        ``evict()`` (one entry) or ``bulk_evict(k)`` (more) what left, insert what
        entered, query; a window starting at or after the end of what is held starts a
        fresh scratch, so the values between disjoint windows are never inserted. Each
        value is inserted and evicted at most once: O(len(values) + windows) operations.
        This window is neither read nor changed, whatever happens (a bad bound, a ``lift``
        or ``combine`` that raises). Returns a list, or fills *out* (one slot per window,
        as :meth:`slide`) and returns it. The native classes run the same operations in
        the same order (equal answers, floats bit for bit).

        >>> from windowagg.fifo import TwoStacksLite
        >>> from windowagg.monoids import Sum
        >>> w = TwoStacksLite(Sum(), backend="python")
        >>> w.query_slices([1, 2, 3, 4, 5], lo=[0, 1, 1, 4], hi=[2, 3, 4, 4])
        [3, 5, 9, 0]
        """
        who = f"{self._state_who}.query_slices"
        vals = read_values(values, who)
        los, his = read_slices(lo, hi, len(vals), who)
        put = out_writer(out, len(los), who)
        w = self._scratch()
        answers: list[Any] = []
        held_lo = held_hi = 0
        for i, (a, b) in enumerate(zip(los, his, strict=True)):
            if a >= held_hi:
                if held_hi > held_lo:
                    w = self._scratch()
                held_lo = held_hi = a
            elif a > held_lo:
                if a - held_lo == 1:
                    w.evict()
                else:
                    w.bulk_evict(a - held_lo)
                held_lo = a
            if b > held_hi:
                insert = w.insert
                for x in vals[held_hi:b]:
                    insert(x)
                held_hi = b
            ans = w.query()
            if put is None:
                answers.append(ans)
            else:
                put(i, ans)
        return answers if out is None else out

    def to_bytes(self) -> bytes:
        """The window's partials, oldest first, as :mod:`windowagg.codec` bytes. O(n).

        Partials must be encodable by the codec (built-ins are; register your own types
        with :func:`windowagg.codec.register`), else :class:`~windowagg.errors.CodecError`.
        """
        return dump_state(self._state_who, list(self))

    @classmethod
    def from_bytes(
        cls, data: bytes | bytearray | memoryview, monoid: Any, *args: Any, **kwargs: Any
    ) -> Any:
        """A new window over *monoid* holding the partials in *data*. O(n).

        Extra arguments (``backend=``, ...) go to the constructor. The partials are
        appended without ``lift``, so the window aggregates exactly what was saved.
        Partials that *monoid* refuses to combine (state written over another monoid,
        or tampered with) raise :class:`~windowagg.errors.CodecError`, with the monoid's
        error chained, on either backend.

        >>> from windowagg.fifo import AMTA
        >>> from windowagg.monoids import Sum
        >>> AMTA.from_bytes(dump_state("AMTA", [(1,), None]), Sum())  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        windowagg.errors.CodecError: AMTA.from_bytes: the data decodes to an invalid state (...
        """
        name = str(getattr(cls, "_who", cls.__name__))
        who = f"{name}.from_bytes"
        partials = load_state(data, name)
        make: Any = cls
        w = make(monoid, *args, **kwargs)
        with codec.decoding(who):  # the monoid's own error, whatever it is, as CodecError
            w._load_partials(partials)
        return w
