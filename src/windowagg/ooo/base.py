"""The out-of-order aggregator interface shared by Recalc, BTree and FiBA."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any, Protocol, runtime_checkable

__all__ = ["OutOfOrderAggregator"]


@runtime_checkable
class OutOfOrderAggregator(Protocol):
    """What every ``windowagg.ooo`` class offers (see ``ooo.FiBA`` for full semantics).

    Entries are ``(t, partial)`` with distinct timestamps kept in time order;
    ``insert(t, v)`` lifts ``v`` and combines it *after* an existing value at ``t``.
    """

    def insert(self, t: Any, v: Any) -> None: ...

    def evict(self, t: Any) -> None: ...

    def bulk_insert(self, pairs: Iterable[tuple[Any, Any]]) -> None: ...

    def bulk_evict(self, t: Any) -> None: ...

    def query(self) -> Any: ...

    def range_query(self, t_from: Any, t_to: Any) -> Any: ...

    def oldest(self) -> Any: ...

    def youngest(self) -> Any: ...

    def __len__(self) -> int: ...

    def __iter__(self) -> Iterator[tuple[Any, Any]]: ...

    def _check(self) -> None: ...
