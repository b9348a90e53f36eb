"""The out-of-order aggregator interface shared by Recalc, BTree and FiBA."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any, Protocol, TypeVar, runtime_checkable

__all__ = ["OutOfOrderAggregator"]

_In_contra = TypeVar("_In_contra", contravariant=True)
_P_co = TypeVar("_P_co", covariant=True)
_Out_co = TypeVar("_Out_co", covariant=True)


@runtime_checkable
class OutOfOrderAggregator(Protocol[_In_contra, _P_co, _Out_co]):
    """What every ``windowagg.ooo`` class offers (see ``ooo.FiBA`` for full semantics).

    Entries are ``(t, partial)`` with distinct timestamps kept in time order;
    ``insert(t, v)`` lifts ``v`` and combines it *after* an existing value at ``t``.
    ``oldest()`` / ``youngest()`` are the smallest / largest timestamps (None when empty).
    Generic in the monoid's input, partial and answer types.
    """

    def insert(self, t: Any, v: _In_contra) -> None: ...

    def evict(self, t: Any) -> None: ...

    def bulk_insert(self, pairs: Iterable[tuple[Any, _In_contra]]) -> None: ...

    def bulk_evict(self, t: Any) -> None: ...

    def query(self) -> _Out_co: ...

    def range_query(self, t_from: Any, t_to: Any) -> _Out_co: ...

    def oldest(self) -> Any: ...

    def youngest(self) -> Any: ...

    def __len__(self) -> int: ...

    def __iter__(self) -> Iterator[tuple[Any, _P_co]]: ...

    def _check(self) -> None: ...
