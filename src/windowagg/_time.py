"""Timestamp validation shared by every out-of-order structure.

A timestamp may be of any totally ordered type (int, float, datetime,
pandas.Timestamp, ...). ``None``, NaN (of any kind: float, numpy, ``pandas.NaT``) and
values that cannot be compared with the timestamps already stored are rejected
*before* anything is changed.
"""

from __future__ import annotations

from typing import Any

from windowagg.errors import TimestampError

__all__ = ["check_timestamp"]


def check_timestamp(t: Any, reference: Any = None, *, where: str = "timestamp") -> None:
    """Raise :class:`TimestampError` if *t* is None, NaN or not comparable with *reference*.

    *reference* is any timestamp already in the structure (None when it is empty).
    Costs O(1): one self-comparison and, with a reference, two comparisons.

    >>> check_timestamp(3, 1)
    >>> check_timestamp(float("nan"))
    Traceback (most recent call last):
    ...
    windowagg.errors.TimestampError: timestamp is NaN; drop or repair the record before inserting it
    >>> check_timestamp("3", 1)
    Traceback (most recent call last):
    ...
    windowagg.errors.TimestampError: timestamp '3' (str) cannot be compared with the window's timestamps (int); use one timestamp type per window
    """
    if t is None:
        raise TimestampError(f"{where} is None; every entry needs a timestamp")
    try:
        nan = t != t
    except TypeError:  # e.g. pandas.NaT-like objects whose comparison raises
        nan = True
    if nan is True or (nan is not False and bool(nan)):
        raise TimestampError(f"{where} is NaN; drop or repair the record before inserting it")
    if reference is not None:
        try:
            ok = isinstance(t < reference, bool) and isinstance(reference < t, bool)
        except TypeError:
            ok = False
        if not ok:
            raise TimestampError(
                f"{where} {t!r} ({type(t).__name__}) cannot be compared with the window's "
                f"timestamps ({type(reference).__name__}); use one timestamp type per window"
            )
