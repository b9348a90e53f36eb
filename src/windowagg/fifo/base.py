"""The in-order (FIFO) aggregator interface, and the base its classes share.

:class:`FifoAggregator` is the structural protocol every ``windowagg.fifo`` class meets.
:class:`_FifoBase` holds what the classes really share (the constructor preamble, the
``monoid`` property, ``bulk_evict`` as a loop of evictions, ``repr``);
:class:`_DequeFifo` adds the storage accessors of the classes that keep every partial in
one :class:`collections.deque`. Neither is on a hot path: ``insert``, ``evict`` and
``query`` are defined in each class, so calling them costs what it did before.

Examples
--------
The shared part keeps the ``__slots__`` layout (no instance ``__dict__``) of the Python
implementations:

>>> from windowagg.fifo import DABA, FlatFAT
>>> from windowagg.monoids import Sum
>>> [hasattr(w, "__dict__") for w in (DABA(Sum(), backend="python")._impl, FlatFAT(Sum()))]
[False, False]
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Iterator
from itertools import islice
from typing import TYPE_CHECKING, Any, ClassVar, Generic, Protocol, TypeVar, runtime_checkable

from windowagg._backend import Backed, Backend, resolve_backend
from windowagg.fifo._common import DeprecatedEnds, check_count, empty_error, hot_ops
from windowagg.fifo._verbs import ArrayVerbs
from windowagg.monoids.base import In, Monoid, Out, P, require_monoid

__all__ = ["FifoAggregator"]


_In_contra = TypeVar("_In_contra", contravariant=True)
_P_co = TypeVar("_P_co", covariant=True)
_Out_co = TypeVar("_Out_co", covariant=True)


@runtime_checkable
class FifoAggregator(Protocol[_In_contra, _P_co, _Out_co]):
    """What every ``windowagg.fifo`` class offers.

    ``insert(v)`` lifts ``v`` and appends it as the youngest entry; ``evict()`` removes
    the oldest (:class:`~windowagg.errors.EmptyWindowError` when empty);
    ``bulk_evict(count)`` removes the ``count`` oldest; ``query()`` returns the lowered
    aggregate, oldest to youngest (``lower(identity)`` when empty); ``oldest_partial()`` and
    ``youngest_partial()`` return the partial aggregates at the two ends; iteration yields
    partials oldest to youngest.
    """

    def insert(self, v: _In_contra) -> None: ...

    def evict(self) -> None: ...

    def bulk_evict(self, count: int) -> None: ...

    def query(self) -> _Out_co: ...

    def oldest_partial(self) -> _P_co: ...

    def youngest_partial(self) -> _P_co: ...

    def __len__(self) -> int: ...

    def __iter__(self) -> Iterator[_P_co]: ...

    def _check(self) -> None: ...


class _FifoBase(ArrayVerbs, DeprecatedEnds, Generic[In, P, Out]):
    """What the FIFO classes share; each subclass adds its storage and its algorithm.

    A subclass sets ``_who`` (its public name, used in errors and ``repr``), defines
    ``insert``, ``evict``, ``query``, ``oldest_partial``, ``youngest_partial``, ``__len__``,
    ``__iter__`` and ``_check`` (or inherits the storage accessors from
    :class:`_DequeFifo`), and overrides ``bulk_evict`` where it has a faster form.
    ``_repr_fields`` names the properties ``repr`` shows after ``n``.

    The five slots hold the monoid and its cached operations: ``_lift`` and ``_lower``
    are ``None`` where they are the identity function (see
    :func:`~windowagg.fifo._common.hot_ops`).
    """

    __slots__ = ("_combine", "_identity", "_lift", "_lower", "_m")

    _who: ClassVar[str] = "fifo"
    _repr_fields: ClassVar[tuple[str, ...]] = ()

    if TYPE_CHECKING:  # defined by every subclass; declared here for bulk_evict and repr

        def insert(self, v: In) -> None: ...

        def evict(self) -> None: ...

        def query(self) -> Out: ...

        def __len__(self) -> int: ...

        def __iter__(self) -> Iterator[P]: ...

    def __init__(self, monoid: Monoid[In, P, Out]) -> None:
        require_monoid(monoid, self._who)
        self._m = monoid
        # bound methods cached once: every operation calls them. Partials are Any inside
        # the algorithms (their type is the monoid's business); the public signatures
        # are generic in In, P, Out.
        lift, combine, lower = hot_ops(monoid)
        self._lift: Callable[[In], Any] | None = lift
        self._combine: Callable[[Any, Any], Any] = combine
        self._lower: Callable[[Any], Out] | None = lower
        self._identity: Any = monoid.identity

    @property
    def monoid(self) -> Monoid[In, P, Out]:
        """The monoid this window aggregates with. O(1).

        >>> from windowagg.fifo import DABA
        >>> from windowagg.monoids import Sum
        >>> DABA(Sum()).monoid
        Sum()
        """
        return self._m

    def bulk_evict(self, count: int) -> None:
        """Remove the ``count`` oldest entries, one :meth:`evict` at a time.

        O(count) evictions, each at the class's ``evict`` cost (its fact card states the
        bound; a class with a faster bulk form overrides this). A bad count raises
        ``TypeError`` or :class:`~windowagg.errors.EmptyWindowError` and changes
        nothing; so does a ``combine`` that raises part-way (the evictions already done
        are undone by rebuilding the window from its partials: O(n), on the error path
        only). For ``count > 1`` it first runs one :meth:`query` (O(1) in every class
        that uses this loop): if even that raises, the window holds entries its
        ``combine`` refuses and cannot be rebuilt, so the evictions run on an O(n) copy
        that replaces the window only when all of them succeed. A rebuild that raises
        too (a combine that refuses some groupings only) raises
        :class:`~windowagg.errors.StateError` and keeps the evictions done
        (:mod:`windowagg.fifo._verbs`).

        >>> from windowagg.fifo import DABA
        >>> from windowagg.monoids import Sum
        >>> w = DABA(Sum())
        >>> for x in range(6): w.insert(x)
        >>> w.bulk_evict(4); w.query(), len(w)
        (9, 2)
        """
        k = check_count(count, len(self), self._who)
        if k > 1:
            try:
                self.query()
            except Exception:
                # The window holds entries its combine refuses, so a single eviction may
                # raise part-way and the window cannot be rebuilt from its partials:
                # evict from a copy and keep it only if every eviction succeeds. O(n).
                twin = self._clone()
                evict = twin.evict  # cached: called k times; a failure drops the copy
                for _ in range(k):
                    evict()
                self._adopt(twin)
                return
        self._evict_loop(k)

    def _evict_loop(self, k: int) -> None:
        evict = self.evict  # cached: called k times
        oldest = self.oldest_partial  # cached: the evicted partials, for the error path
        gone: list[Any] = []
        try:
            for _ in range(k):
                gone.append(oldest())
                evict()
        except BaseException as exc:
            gone.pop()  # the failed evict() changed nothing
            if gone:
                self._undo("bulk_evict", len(self) + len(gone), [*gone, *self], exc)
            raise

    def _hold_again(self, partials: list[Any]) -> None:
        """Error path of the bulk calls: hold *partials* instead (:meth:`_refill`)."""
        self._refill(partials)

    def _slots(self) -> Iterator[str]:
        for cls in type(self).__mro__:
            yield from cls.__dict__.get("__slots__", ())

    def _clone(self) -> _FifoBase[In, P, Out]:
        """A copy that shares the partials but no container with this window. O(n)."""
        twin = self._fresh()
        for name in self._slots():
            value = getattr(self, name)
            if isinstance(value, (deque, list)):
                value = value.copy()
            setattr(twin, name, value)
        return twin

    def _adopt(self, other: _FifoBase[In, P, Out]) -> None:
        """Take over the state of *other* (a window of the same class), slot by slot."""
        for name in self._slots():
            setattr(self, name, getattr(other, name))

    def _fresh(self) -> _FifoBase[In, P, Out]:
        """An empty window of the same class and parameters (for :meth:`_refill`)."""
        return type(self)(self._m)

    def _refill(self, partials: list[Any]) -> None:
        """Error path: make this window hold *partials* (already lifted), oldest first.

        A fresh window loads them (:meth:`_load_partials`), then this one takes over its
        state slot by slot. O(n) inserts.
        """
        fresh = self._fresh()
        fresh._load_partials(partials)
        self._adopt(fresh)

    if TYPE_CHECKING:

        def oldest_partial(self) -> P: ...

    def _load_partials(self, partials: Iterable[Any]) -> None:
        """Append *partials* (already lifted) as the youngest entries. O(m) inserts.

        The one way partials enter a window as they are (loading a state, the error path's
        :meth:`_refill`): ``insert`` runs with ``lift`` switched off, which every class's
        ``insert`` honours by skipping lift when ``_lift`` is None. A class whose ``insert``
        inlines its monoid's lift instead (``_TwoStacksLiteSum``) overrides this method.
        """
        saved = self._lift
        self._lift = None  # insert skips lift when it is None: the partials go in as they are
        try:
            insert = self.insert  # cached: called m times
            for p in partials:
                insert(p)
        finally:
            self._lift = saved

    def __repr__(self) -> str:
        extra = "".join(f", {name}={getattr(self, name)!r}" for name in self._repr_fields)
        return f"fifo.{self._who}({self._m!r}, n={len(self)}{extra})"


class _DequeFifo(_FifoBase[In, P, Out]):
    """A :class:`_FifoBase` whose partials all sit in one deque ``_vals``, oldest first.

    Its storage accessors read the two ends of the deque (O(1) worst case in CPython).
    """

    __slots__ = ("_vals",)

    def __init__(self, monoid: Monoid[In, P, Out]) -> None:
        super().__init__(monoid)
        self._vals: deque[Any] = deque()  # every partial, oldest first

    def oldest_partial(self) -> P:
        """The oldest partial (the left end of the deque). O(1). EmptyWindowError when empty.

        >>> from windowagg.fifo import DABA
        >>> from windowagg.monoids import Sum
        >>> w = DABA(Sum())
        >>> for x in (1, 2, 3): w.insert(x)
        >>> w.evict(); w.oldest_partial()
        2
        """
        if not self._vals:
            raise empty_error(self._who, "oldest_partial()")
        res: P = self._vals[0]
        return res

    def youngest_partial(self) -> P:
        """The youngest partial. O(1). EmptyWindowError when empty.

        >>> from windowagg.fifo import DABA
        >>> from windowagg.monoids import Sum
        >>> w = DABA(Sum()); w.insert(1); w.insert(2)
        >>> w.youngest_partial()
        2
        """
        if not self._vals:
            raise empty_error(self._who, "youngest_partial()")
        res: P = self._vals[-1]
        return res

    def __len__(self) -> int:
        """Number of entries. O(1).

        >>> from windowagg.fifo import DABA
        >>> from windowagg.monoids import Sum
        >>> w = DABA(Sum()); w.insert(1); w.insert(2)
        >>> len(w)
        2
        """
        return len(self._vals)

    def __iter__(self) -> Iterator[P]:
        """Partials oldest to youngest (a snapshot). O(n).

        >>> from windowagg.fifo import DABA
        >>> from windowagg.monoids import Sum
        >>> w = DABA(Sum()); w.insert(1); w.insert(2)
        >>> list(w)
        [1, 2]
        """
        return iter(list(self._vals))

    def _head(self, k: int) -> list[Any]:
        """The *k* oldest partials. O(k)."""
        return list(islice(self._vals, k))


class _BackedFifo(Backed, Generic[In, P, Out]):
    """A public FIFO class with a native twin: it holds the native object or the Python
    reference's (``_py``, a :class:`_FifoBase`) as ``_impl`` and forwards to it.

    ``backend=`` (and ``$WINDOWAGG_BACKEND``) choose the implementation
    (:mod:`windowagg._backend`); every verb, error, codec and ``repr`` is the same on both.
    """

    _hot: ClassVar[tuple[str, ...]] = (
        "insert",
        "evict",
        "query",
        "bulk_evict",
        "oldest_partial",
        "youngest_partial",
    )
    _py: ClassVar[type[Any]]
    _who: ClassVar[str]

    def __init__(self, monoid: Monoid[In, P, Out], *, backend: Backend | None = None) -> None:
        if resolve_backend(backend, self._who):
            from windowagg._native.fifo import make  # the compiled core, below this class

            self._hold(make(self._who, monoid))
        else:
            self._hold(self._py(monoid))

    # The verbs, for subclasses (super().insert(v)) and readers; an instance calls the
    # implementation's own methods, bound at construction (Backed._hold).
    def insert(self, v: In) -> None:
        """Append ``lift(v)`` as the youngest entry (the class's fact card: its cost)."""
        self._impl.insert(v)

    def evict(self) -> None:
        """Remove the oldest entry; EmptyWindowError when empty."""
        self._impl.evict()

    def query(self) -> Out:
        """``lower`` of the aggregate, oldest to youngest."""
        res: Out = self._impl.query()
        return res

    def bulk_evict(self, count: int) -> None:
        """Remove the ``count`` oldest entries."""
        self._impl.bulk_evict(count)

    def oldest_partial(self) -> P:
        """The oldest partial; EmptyWindowError when empty."""
        res: P = self._impl.oldest_partial()
        return res

    def youngest_partial(self) -> P:
        """The youngest partial; EmptyWindowError when empty."""
        res: P = self._impl.youngest_partial()
        return res

    @property
    def monoid(self) -> Monoid[In, P, Out]:
        """The monoid this window aggregates with. O(1)."""
        m: Monoid[In, P, Out] = self._impl.monoid
        return m

    def __iter__(self) -> Iterator[P]:
        return iter(self._impl)

    def _check(self) -> None:
        """The implementation's invariants. O(n)."""
        self._impl._check()

    def to_bytes(self) -> bytes:
        """The window's partials, oldest first, as :mod:`windowagg.codec` bytes. O(n)."""
        data: bytes = self._impl.to_bytes()
        return data

    @classmethod
    def from_bytes(
        cls, data: bytes | bytearray | memoryview, monoid: Any, *args: Any, **kwargs: Any
    ) -> Any:
        """A new window over *monoid* holding the partials in *data* (either backend's
        bytes; ``backend=`` and the constructor's other arguments as for the class). O(n).

        Partials that *monoid* refuses raise :class:`~windowagg.errors.CodecError`.
        """
        from windowagg import codec
        from windowagg.fifo._verbs import load_state

        partials = load_state(data, cls._who)
        w = cls(monoid, *args, **kwargs)
        with codec.decoding(f"{cls._who}.from_bytes"):
            w._impl._load_partials(partials)
        return w

    def __reduce__(self) -> tuple[Any, ...]:
        # through the state bytes, on the same backend; a Python window whose partials the
        # codec refuses pickles its implementation as it is
        from windowagg.errors import CodecError

        try:
            data = self.to_bytes()
        except CodecError:
            if self.backend != "python":
                raise
            return (_unpickle_held, (type(self), self._impl))
        return (_unpickle_bytes, (type(self), data, self.monoid, self.backend))


def _unpickle_held(cls: type[_BackedFifo[Any, Any, Any]], impl: Any) -> Any:
    w = cls.__new__(cls)
    w._hold(impl)
    return w


def _unpickle_bytes(
    cls: type[_BackedFifo[Any, Any, Any]], data: bytes, monoid: Any, backend: str
) -> Any:
    return cls.from_bytes(data, monoid, backend=backend)
