"""The one exception hierarchy of windowagg.

Every error derives from :class:`WindowaggError` and from the built-in exception a
caller would naturally catch (``TypeError``, ``ValueError``, ``IndexError``,
``ImportError``), and every message says what to do about it.

Examples
--------
>>> from windowagg.errors import EmptyWindowError, WindowaggError
>>> issubclass(EmptyWindowError, IndexError) and issubclass(EmptyWindowError, WindowaggError)
True
"""

from __future__ import annotations

__all__ = [
    "BackendError",
    "CodecError",
    "EmptyWindowError",
    "LateEventError",
    "MissingExtraError",
    "MissingValueError",
    "MonoidContractError",
    "MonoidInputError",
    "MonoidSpecError",
    "NativeUnavailableError",
    "OutOfOrderError",
    "StorageError",
    "TimestampError",
    "ValueOrderError",
    "WindowaggError",
]


class WindowaggError(Exception):
    """Base class of every error raised by windowagg."""


class MonoidContractError(WindowaggError, TypeError):
    """A monoid lacks a required member, or breaks associativity, identity or inverse laws."""


class MonoidInputError(WindowaggError, ValueError):
    """An input value that a monoid cannot lift (a NaN key, a non-positive geometric-mean input)."""


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
