"""The state half of the time windows: ``to_bytes``, restoring, and ``_check``.

A mixin of :class:`windowagg.windows.sliding._TimeWindows`; the format is the versioned
codec of docs/windows.md §9 (no pickle). ``_from_bytes`` (behind the subclasses'
``from_bytes``) builds the object from the state's config and calls ``_restore``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from windowagg import codec
from windowagg.errors import InvariantError
from windowagg.monoids.base import Monoid
from windowagg.windows._common import (
    AggregatorSpec,
    Counted,
    LoadedState,
    Rejected,
    dump_state,
    load_state,
    restore_aggregator,
)


class _State:
    """State codec and invariants of ``_TimeWindows``."""

    _m: Monoid[Any, Any, Any]
    _cm: Counted
    _spec: AggregatorSpec
    _agg: Any
    _sizes: tuple[Any, ...]
    _S: Any
    _slide: Any
    _origin: Any
    _ooo: Any
    _L: Any
    _late: str
    _bad: str
    _panes: bool
    _A: Any
    _B: dict[Any, Any]
    _E0: Any
    _ref: Any
    _max: Any
    _wm: Any
    _bound: Any
    _j_open: Any
    _next_end: Any
    _open_start: Any
    _has_witness: bool
    _witness: Any
    _closed: bool
    _counts: dict[str, int]
    _n_accepted: int
    rejected: list[Rejected]

    if TYPE_CHECKING:  # provided by _TimeWindows

        @property
        def counters(self) -> dict[str, int]: ...
        def _end(self, j: int) -> Any: ...
        def _init_time(self, t: Any) -> None: ...
        def _flush(self) -> None: ...

    _CONFIG_KEYS = (
        "sizes",
        "slide",
        "origin",
        "max_out_of_orderness",
        "allowed_lateness",
        "late",
        "panes",
        "bad_value",
    )
    #: the watermark clock's fields, in the order of the state's ``dyn`` tuple
    _DYN_FIELDS = (
        "_E0",
        "_ref",
        "_max",
        "_wm",
        "_bound",
        "_j_open",
        "_next_end",
        "_has_witness",
        "_witness",
        "_closed",
    )
    _N_DYN = len(_DYN_FIELDS)

    def _config(self) -> tuple[Any, ...]:
        return (
            list(self._sizes),
            self._slide,
            self._origin,
            self._ooo,
            self._L,
            self._late,
            self._panes,
            self._bad,
        )

    def to_bytes(self) -> bytes:
        """The window's full state as versioned codec bytes (no pickle). O(n).

        Holds the configuration, watermark, counters, side output and the stored
        ``(key, count, partial)`` entries in key order (format: ``docs/windows.md`` §9);
        the monoid is not stored (pass it to :meth:`from_bytes`), only its name, which is
        checked on restore. Rejected records whose timestamp or value the codec cannot
        encode are stored with their ``repr`` instead (and say so in the reason).

        >>> from windowagg.monoids import Sum
        >>> from windowagg.windows import SlidingWindows
        >>> w = SlidingWindows(Sum(), 10, 5, aggregator="recalc"); _ = w.insert(3, 4)
        >>> data = w.to_bytes(); data[:4], len(data) < 200      # about 130 bytes
        (b'WAGC', True)
        """
        self._flush()
        dyn = tuple(getattr(self, name) for name in self._DYN_FIELDS)
        return dump_state(
            type(self).__name__,
            self._m,
            self._spec,
            self._config(),
            dyn,
            self.counters,
            self.rejected,
            self._agg,
        )

    @classmethod
    def _load_state(cls, data: bytes, monoid: Monoid[Any, Any, Any]) -> dict[str, Any]:
        n_counters = 7
        st = load_state(
            data,
            cls.__name__,
            monoid,
            len(cls._CONFIG_KEYS),
            cls._N_DYN,
            n_counters,
            config_defaults=("side",),  # bad_value: state written before the policy existed
        )
        return {"config": dict(zip(cls._CONFIG_KEYS, st.config, strict=True)), "loaded": st}

    @classmethod
    def _from_bytes(
        cls,
        data: bytes,
        monoid: Monoid[Any, Any, Any],
        aggregator: AggregatorSpec,
        sizes: Callable[[list[Any]], Any],
    ) -> Any:
        """``from_bytes`` of the subclasses: the window of the state's config, restored.

        *sizes* maps the config's list of sizes to the class's positional size argument
        (``SlidingWindows``: its one size; ``SharedWindows``: the list). O(n).
        """
        with codec.decoding(f"{cls.__name__}.from_bytes"):
            state = cls._load_state(data, monoid)
            cfg = state["config"]
            make: Any = cls
            w = make(
                monoid,
                sizes(cfg["sizes"]),
                cfg["slide"],
                origin=cfg["origin"],
                max_out_of_orderness=cfg["max_out_of_orderness"],
                allowed_lateness=cfg["allowed_lateness"],
                late=cfg["late"],
                aggregator=aggregator,
                panes=cfg["panes"],
                bad_value=cfg["bad_value"],
            )
            w._restore(state)
            return w

    def _restore(self, state: dict[str, Any]) -> None:
        st: LoadedState = state["loaded"]
        for name, value in zip(self._DYN_FIELDS, st.dyn, strict=True):
            setattr(self, name, value)
        if self._ref is not None:
            ref, self._ref = self._ref, None
            self._init_time(ref)
        elif self._E0 is not None:
            self._init_time(self._E0)
            self._ref = None
        if self._next_end is not None:
            self._open_start = self._next_end - self._S
        self._counts.update(zip(self._counts, st.counters, strict=True))
        self._n_accepted = self._counts["accepted"]
        self.rejected = st.rejected
        self._agg = restore_aggregator(self._spec, self._cm, self._agg, st.pairs)

    def _check(self) -> None:
        """O(n): aggregator invariants, counts positive, nothing stored before the open windows."""
        self._flush()
        self._agg._check()
        for k, (c, _) in self._agg:
            if not (isinstance(c, int) and c > 0):
                raise InvariantError(f"windows: entry at {k!r} has count {c!r}")
        if self._slide is not None and self._j_open is not None:
            o = self._agg.oldest()
            lo = (
                self._j_open * self._A - self._B[self._S]
                if self._panes
                else self._end(self._j_open) - self._S
            )
            if o is not None and o < lo:
                raise InvariantError(
                    f"windows: entry at {o!r} is older than the oldest open window start {lo!r}"
                )
        if self._next_end is not None and self._open_start != self._next_end - self._S:
            raise InvariantError("windows: cached start of the oldest open window is stale")
        if self._wm is not None and self._max is not None and self._wm < self._max - self._ooo:
            raise InvariantError("windows: watermark is behind max event time - out-of-orderness")
