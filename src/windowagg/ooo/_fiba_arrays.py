"""FiBA's array verbs and state bytes, shared by the pure-Python ``ooo.FiBA`` (a mixin) and
its native twin (which calls :func:`dump_state` / reads through :func:`load_state`).

===================  ========================================================================
``range_query_many``  ``range_query(t_from[i], t_to[i])`` for every i; a list, or written into
                      ``out`` (a 1-D float64/int64 buffer, e.g. numpy) which is returned
``slide``             for each i: ``bulk_evict(evict_upto[i])`` (when given), then
                      ``insert(times[i], values[i])``, record ``query()``; every timestamp is
                      validated and every value lifted before the window changes
``to_bytes``          the window's ``(t, partial)`` entries as :mod:`windowagg.codec` bytes,
                      read by either backend (``FiBA.from_bytes(data, monoid, backend=...)``)
===================  ========================================================================

>>> from windowagg.ooo import FiBA
>>> from windowagg.monoids import Sum
>>> w = FiBA(Sum(), backend="python")
>>> w.slide([1, 2, 3, 4], [10, 20, 30, 40], evict_upto=[0, 0, 1, 2])
[10, 30, 50, 70]
>>> w.range_query_many([3, 0], [4, 3])
[70, 30]
>>> FiBA.from_bytes(w.to_bytes(), Sum(), backend="python").query()
70
"""

from __future__ import annotations

import operator
from typing import TYPE_CHECKING, Any, Final

from windowagg import codec
from windowagg._time import check_timestamp
from windowagg.errors import CodecError

__all__ = ["STATE_TAG", "STATE_VERSION", "FiBAArrays", "dump_state", "load_state"]

STATE_TAG: Final = "windowagg.ooo.FiBA"
STATE_VERSION: Final = 1


def dump_state(min_arity: int, entries: list[tuple[Any, Any]]) -> bytes:
    """State bytes of a FiBA with *min_arity* holding ``(t, partial)`` *entries*. O(n)."""
    times = [t for t, _ in entries]
    partials = [p for _, p in entries]
    return codec.dumps((STATE_TAG, STATE_VERSION, min_arity, times, partials))


def load_state(data: bytes | bytearray | memoryview) -> tuple[int, list[tuple[Any, Any]]]:
    """``(min_arity, entries)`` from state bytes; CodecError for anything else. O(len(data)).

    The entries are not yet checked for order: ``from_sorted_partials`` does that.
    """
    obj = codec.loads(data)
    if (
        type(obj) is not tuple
        or len(obj) != 5
        or obj[0] != STATE_TAG
        or type(obj[2]) is not int
        or type(obj[3]) is not list
        or type(obj[4]) is not list
        or len(obj[3]) != len(obj[4])
    ):
        raise CodecError("ooo.FiBA.from_bytes: not a FiBA state (expected what to_bytes() writes)")
    if obj[1] != STATE_VERSION:
        raise CodecError(
            f"ooo.FiBA.from_bytes: unknown state version {obj[1]!r}; upgrade windowagg"
        )
    if obj[2] < 2:
        raise CodecError(f"ooo.FiBA.from_bytes: min_arity {obj[2]!r} in the state is below 2")
    return obj[2], list(zip(obj[3], obj[4], strict=True))


def _items(x: Any, who: str) -> list[Any]:
    """A sequence or 1-D buffer as a list of Python objects."""
    tolist = getattr(x, "tolist", None)
    if tolist is not None and getattr(x, "ndim", 1) == 1:
        return list(tolist())
    try:
        return list(x)
    except TypeError:
        raise TypeError(f"{who} needs a sequence or a 1-D buffer, got {type(x).__name__}") from None


def _out_view(out: Any, n: int, who: str) -> tuple[Any, str]:
    try:
        view = memoryview(out)
    except TypeError:
        raise TypeError(
            f"{who}: out must be a writable 1-D float64 or int64 buffer (e.g. a numpy array), "
            f"got {type(out).__name__}"
        ) from None
    fmt = view.format.lstrip("@=<")
    if view.readonly or view.ndim != 1 or fmt not in ("d", "q", "l") or view.itemsize != 8:
        raise TypeError(f"{who}: out must be a writable 1-D float64 or int64 buffer")
    if len(view) != n:
        raise ValueError(
            f"{who}: out has {len(view)} slots for {n} values; give it exactly one slot per value"
        )
    return view, "d" if fmt == "d" else "q"


def _put(view: tuple[Any, str], i: int, ans: Any) -> None:
    if view[1] == "d":
        view[0][i] = float(ans)
    else:
        view[0][i] = operator.index(ans)


def _same_length(a: list[Any], b: list[Any], what: str) -> None:
    if len(a) != len(b):
        raise ValueError(
            f"ooo.FiBA.{what}: {len(a)} and {len(b)} items; give sequences of equal length"
        )


class FiBAArrays:
    """The array verbs and state of the pure-Python FiBA, over its own single verbs."""

    __slots__ = ()

    if TYPE_CHECKING:

        def insert(self, t: Any, v: Any) -> None: ...

        def bulk_evict(self, t: Any) -> None: ...

        def query(self) -> Any: ...

        def range_query(self, t_from: Any, t_to: Any) -> Any: ...

        def oldest(self) -> Any: ...

        def to_partials(self) -> list[tuple[Any, Any]]: ...

        @property
        def min_arity(self) -> int: ...

        @property
        def monoid(self) -> Any: ...

    def range_query_many(self, t_from: Any, t_to: Any, out: Any = None) -> Any:
        """``range_query(t_from[i], t_to[i])`` for every i. O(m) range queries.

        Returns a list, or writes float/int answers into *out* and returns it.
        """
        lo = _items(t_from, "ooo.FiBA.range_query_many")
        hi = _items(t_to, "ooo.FiBA.range_query_many")
        _same_length(lo, hi, "range_query_many(t_from, t_to)")
        view = None if out is None else _out_view(out, len(lo), "ooo.FiBA.range_query_many")
        rq = self.range_query
        answers = [rq(a, b) for a, b in zip(lo, hi, strict=True)]
        if view is None:
            return answers
        for i, ans in enumerate(answers):
            _put(view, i, ans)
        return out

    def slide(self, times: Any, values: Any, evict_upto: Any = None, out: Any = None) -> Any:
        """For each i: ``bulk_evict(evict_upto[i])`` if given, ``insert(times[i], values[i])``,
        record ``query()``. O(m) steps at the cost of those verbs.

        Every timestamp is validated and every value lifted before the window changes (a
        combine that raises at step i leaves steps before i applied). Returns a list, or
        writes the answers into *out* and returns it.
        """
        ts = _items(times, "ooo.FiBA.slide")
        vs = _items(values, "ooo.FiBA.slide")
        _same_length(ts, vs, "slide(times, values)")
        ups = None if evict_upto is None else _items(evict_upto, "ooo.FiBA.slide")
        if ups is not None:
            _same_length(ts, ups, "slide(times, evict_upto)")
        view = None if out is None else _out_view(out, len(ts), "ooo.FiBA.slide")
        ref = self.oldest()
        if ref is None and ts:
            ref = ts[0]
            check_timestamp(ref, None)
        for t in ts:
            check_timestamp(t, ref)
        for u in ups or ():
            check_timestamp(u, ref)
        lift = self.monoid.lift
        for v in vs:  # a value the monoid refuses raises here, before any change
            lift(v)
        ins, bev, query = self.insert, self.bulk_evict, self.query
        answers: list[Any] = []
        for i, (t, v) in enumerate(zip(ts, vs, strict=True)):
            if ups is not None:
                bev(ups[i])
            ins(t, v)
            ans = query()
            if view is None:
                answers.append(ans)
            else:
                _put(view, i, ans)
        return answers if view is None else out

    @classmethod
    def from_bytes(
        cls,
        data: bytes | bytearray | memoryview,
        monoid: Any,
        *,
        backend: str | None = None,
    ) -> Any:
        """A window over *monoid* holding the entries in *data* (``to_bytes`` of either
        backend), with the saved ``min_arity``. O(n). Any decoding failure is a CodecError
        (malformed bytes, disordered or invalid timestamps, partials the monoid cannot
        combine: the original error chained as ``__cause__``)."""
        with codec.decoding("FiBA.from_bytes"):
            mu, entries = load_state(data)
            more = {} if backend is None else {"backend": backend}
            return cls.from_sorted_partials(  # type: ignore[attr-defined]
                monoid, entries, min_arity=mu, **more
            )

    def to_bytes(self) -> bytes:
        """The window's ``(t, partial)`` entries as :mod:`windowagg.codec` bytes. O(n).

        Read by either backend with ``FiBA.from_bytes``. Timestamps and partials must be
        encodable by the codec (register your own types with
        :func:`windowagg.codec.register`), else :class:`~windowagg.errors.CodecError`.
        """
        return dump_state(self.min_arity, self.to_partials())
