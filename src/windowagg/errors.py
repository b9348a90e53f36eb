"""The one exception hierarchy of windowagg.

Every error derives from :class:`WindowaggError` and from the built-in exception a
caller would naturally catch (``TypeError``, ``ValueError``, ``IndexError``,
``ImportError``), and every message says what to do about it.

An exception raised by a *user* monoid's own ``lift``, ``combine`` or ``lower``
propagates unchanged (as :func:`sorted` propagates its key's), and the structure that
called it is left exactly as before the call. The built-in monoids check their input in
``lift`` and raise :class:`MonoidInputError` / :class:`MonoidTypeError`.

Examples
--------
>>> from windowagg.errors import EmptyWindowError, WindowaggError
>>> issubclass(EmptyWindowError, IndexError) and issubclass(EmptyWindowError, WindowaggError)
True
"""

from __future__ import annotations

__all__ = [
    "AggregationError",
    "ArgumentError",
    "ArgumentTypeError",
    "BackendError",
    "CodecError",
    "EmptyWindowError",
    "InvariantError",
    "LateEventError",
    "MissingExtraError",
    "MissingValueError",
    "MonoidContractError",
    "MonoidInputError",
    "MonoidSpecError",
    "MonoidTypeError",
    "NativeUnavailableError",
    "OutOfOrderError",
    "StateError",
    "StorageError",
    "TimestampError",
    "ValueOrderError",
    "WeightOverflowError",
    "WindowaggError",
]


class WindowaggError(Exception):
    """Base class of every error raised by windowagg."""


class ArgumentError(WindowaggError, ValueError):
    """An argument outside its allowed range: a negative size, an error bound not in
    (0, 1), an unknown option. The message names the structure, the argument and the value.
    """


class ArgumentTypeError(ArgumentError, TypeError):
    """An argument of the wrong type: a bool where a count is needed, a string where a
    number is. The message names the structure, the argument and the value.

    An :class:`ArgumentError` (so one ``except ArgumentError`` catches every bad
    argument) and a ``TypeError``, the built-in Python raises for a wrong type.

    >>> issubclass(ArgumentTypeError, ArgumentError) and issubclass(ArgumentTypeError, TypeError)
    True
    """


class WeightOverflowError(ArgumentError, OverflowError):
    """A decayed weight or total past float64 at the time asked: under exponential decay a
    query time far before the events weighs each by ``exp(lam * (t_i - t))``. The message
    names the structure, the time and the times that can be asked.

    An :class:`ArgumentError` (the time is the bad argument) and an ``OverflowError``, the
    built-in ``math.exp`` raises for the same overflow.

    >>> issubclass(WeightOverflowError, ArgumentError)
    True
    >>> issubclass(WeightOverflowError, OverflowError)
    True
    """


class MonoidContractError(WindowaggError, TypeError):
    """A monoid lacks a required member, or breaks associativity, identity or inverse laws."""


class MonoidInputError(WindowaggError, ValueError):
    """An input value that a monoid cannot lift (NaN or ±inf for a numeric built-in, a
    non-positive geometric-mean input). Catch this one class to route refused values."""


class MonoidTypeError(MonoidInputError, TypeError):
    """An input of a type the monoid cannot lift (``Sum().lift("x")``).

    A :class:`MonoidInputError` (so one ``except`` routes every refused value) and a
    ``TypeError``, the built-in Python raises for ``0 + "x"``.

    >>> issubclass(MonoidTypeError, MonoidInputError) and issubclass(MonoidTypeError, TypeError)
    True
    """


class InvariantError(WindowaggError, AssertionError):
    """``_check()`` found a broken invariant; the message says which and where.

    An ``AssertionError`` too, because it reports a bug in windowagg (or a monoid that
    breaks its laws), not bad input. Every structure's ``_check()`` raises this class.
    """


class MonoidSpecError(WindowaggError, ValueError):
    """An unknown monoid name, or parameters the named monoid does not take."""


class TimestampError(WindowaggError, TypeError):
    """A timestamp is NaN, None, or not comparable with the timestamps already in the window."""


class OutOfOrderError(WindowaggError, ValueError):
    """An in-order (FIFO) structure was given an event older than its youngest one."""


class EmptyWindowError(WindowaggError, IndexError):
    """An operation that needs at least one entry was called on an empty window."""


class LateEventError(WindowaggError, ValueError):
    """An event arrived later than the window's allowed lateness (with ``late='raise'``)."""


class CodecError(WindowaggError, ValueError):
    """Bytes could not be encoded or decoded by the versioned state codec."""


class StorageError(WindowaggError, RuntimeError):
    """A key-value store backend failed or holds state that does not match the window."""


class MissingExtraError(WindowaggError, ImportError):
    """An optional dependency is not installed; the message names the extra to install."""

    @classmethod
    def for_extra(cls, package: str, extra: str, feature: str) -> MissingExtraError:
        """Build the error for a missing optional *package* needed by *feature*.

        >>> str(MissingExtraError.for_extra("pyspark", "spark", "windowagg.spark"))
        "windowagg.spark needs the optional package 'pyspark': pip install 'windowagg[spark]'"
        """
        return cls(
            f"{feature} needs the optional package {package!r}: pip install 'windowagg[{extra}]'"
        )


class BackendError(WindowaggError, ValueError):
    """An unknown backend name (``backend=`` or ``$WINDOWAGG_BACKEND``)."""


class NativeUnavailableError(WindowaggError, ImportError):
    """``backend='native'`` was asked for, but the compiled core is not built or has no twin."""


class MissingValueError(WindowaggError, ValueError):
    """A value to evict from an order-statistics multiset is not in it."""


class ValueOrderError(WindowaggError, ValueError):
    """A value has no place in an order (NaN, or any value not equal to itself)."""


class StateError(WindowaggError, RuntimeError):
    """A call the structure cannot take in its present state: a re-entrant call (its own
    monoid calling back into the same native window), or a native object the garbage
    collector cleared because it was part of an unreachable reference cycle."""


class AggregationError(WindowaggError, RuntimeError):
    """A user monoid raised while a window was computed by ``window_agg`` (any front end):
    the message names the aggregation, the key and the window, and the monoid's own
    exception is chained as ``__cause__``.

    ``alias`` is the aggregation, ``window`` the index of the failing window among those
    computed (None if unknown), ``key`` its key (the engine: the key's index; a front end:
    its values) and ``reason`` the monoid's ``"<error type>: <message>"``.
    """

    def __init__(
        self,
        message: str,
        *,
        alias: str | None = None,
        window: int | None = None,
        key: object = None,
        reason: str | None = None,
    ) -> None:
        super().__init__(message)
        self.alias = alias
        self.window = window
        self.key = key
        self.reason = reason
