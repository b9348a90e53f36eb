"""The in-order (FIFO) aggregator interface shared by every ``windowagg.fifo`` class."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Protocol, runtime_checkable

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
