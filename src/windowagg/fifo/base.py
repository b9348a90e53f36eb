"""The in-order (FIFO) aggregator interface, and the base its classes share.

:class:`FifoAggregator` is the structural protocol every ``windowagg.fifo`` class meets.
:class:`_FifoBase` holds what the classes really share (the constructor preamble, the
``monoid`` property, ``bulk_evict`` as a loop of evictions, ``repr``);
:class:`_DequeFifo` adds the storage accessors of the classes that keep every partial in
one :class:`collections.deque`. Neither is on a hot path: ``insert``, ``evict`` and
``query`` are defined in each class, so calling them costs what it did before.

Examples
--------
The shared part keeps the ``__slots__`` layout (no instance ``__dict__``):

>>> from windowagg.fifo import DABA, FlatFAT
>>> from windowagg.monoids import Sum
>>> [hasattr(cls(Sum()), "__dict__") for cls in (DABA, FlatFAT)]
[False, False]
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, runtime_checkable

from windowagg.fifo._common import check_count, empty_error, hot_ops
from windowagg.fifo._verbs import ArrayVerbs
from windowagg.monoids.base import Monoid, require_monoid

__all__ = ["FifoAggregator"]


@runtime_checkable
class FifoAggregator(Protocol):
    """What every ``windowagg.fifo`` class offers.

    ``insert(v)`` lifts ``v`` and appends it as the youngest entry; ``evict()`` removes
    the oldest (:class:`~windowagg.errors.EmptyWindowError` when empty);
    ``bulk_evict(count)`` removes the ``count`` oldest; ``query()`` returns the lowered
    aggregate, oldest to youngest (``lower(identity)`` when empty); ``oldest()`` and
    ``youngest()`` return the partial aggregates at the two ends; iteration yields
    partials oldest to youngest.
    """

    def insert(self, v: Any) -> None: ...

    def evict(self) -> None: ...

    def bulk_evict(self, count: int) -> None: ...

    def query(self) -> Any: ...

    def oldest(self) -> Any: ...

    def youngest(self) -> Any: ...

    def __len__(self) -> int: ...

    def __iter__(self) -> Iterator[Any]: ...

    def _check(self) -> None: ...


class _FifoBase(ArrayVerbs):
    """What the FIFO classes share; each subclass adds its storage and its algorithm.

    A subclass sets ``_who`` (its public name, used in errors and ``repr``), defines
    ``insert``, ``evict``, ``query``, ``oldest``, ``youngest``, ``__len__``,
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

        def evict(self) -> None: ...

        def __len__(self) -> int: ...

    def __init__(self, monoid: Monoid[Any, Any, Any]) -> None:
        require_monoid(monoid, self._who)
        self._m = monoid
        # bound methods cached once: every operation calls them
        self._lift, self._combine, self._lower = hot_ops(monoid)
        self._identity = monoid.identity

    @property
    def monoid(self) -> Monoid[Any, Any, Any]:
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
        nothing; a ``combine`` that raises part-way keeps the evictions already done.

        >>> from windowagg.fifo import DABA
        >>> from windowagg.monoids import Sum
        >>> w = DABA(Sum())
        >>> for x in range(6): w.insert(x)
        >>> w.bulk_evict(4); w.query(), len(w)
        (9, 2)
        """
        k = check_count(count, len(self), self._who)
        evict = self.evict  # cached: called k times
        for _ in range(k):
            evict()

    def _load_partials(self, partials: Iterable[Any]) -> None:
        """Append *partials* (already lifted) as the youngest entries. O(m) inserts."""
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


class _DequeFifo(_FifoBase):
    """A :class:`_FifoBase` whose partials all sit in one deque ``_vals``, oldest first.

    Its storage accessors read the two ends of the deque (O(1) worst case in CPython).
    """

    __slots__ = ("_vals",)

    def __init__(self, monoid: Monoid[Any, Any, Any]) -> None:
        super().__init__(monoid)
        self._vals: deque[Any] = deque()  # every partial, oldest first

    def oldest(self) -> Any:
        """The oldest partial (the left end of the deque). O(1). EmptyWindowError when empty.

        >>> from windowagg.fifo import DABA
        >>> from windowagg.monoids import Sum
        >>> w = DABA(Sum())
        >>> for x in (1, 2, 3): w.insert(x)
        >>> w.evict(); w.oldest()
        2
        """
        if not self._vals:
            raise empty_error(self._who, "oldest()")
        return self._vals[0]

    def youngest(self) -> Any:
        """The youngest partial. O(1). EmptyWindowError when empty.

        >>> from windowagg.fifo import DABA
        >>> from windowagg.monoids import Sum
        >>> w = DABA(Sum()); w.insert(1); w.insert(2)
        >>> w.youngest()
        2
        """
        if not self._vals:
            raise empty_error(self._who, "youngest()")
        return self._vals[-1]

    def __len__(self) -> int:
        """Number of entries. O(1).

        >>> from windowagg.fifo import DABA
        >>> from windowagg.monoids import Sum
        >>> w = DABA(Sum()); w.insert(1); w.insert(2)
        >>> len(w)
        2
        """
        return len(self._vals)

    def __iter__(self) -> Iterator[Any]:
        """Partials oldest to youngest (a snapshot). O(n).

        >>> from windowagg.fifo import DABA
        >>> from windowagg.monoids import Sum
        >>> w = DABA(Sum()); w.insert(1); w.insert(2)
        >>> list(w)
        [1, 2]
        """
        return iter(list(self._vals))
