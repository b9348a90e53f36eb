"""Row validation under every front end: a frame in, good rows and rejects out.

:func:`validate` splits one key's (or many keys') rows into good rows and rejects with
their reason (the table below); :func:`readable_reason` writes a window's reject reason
with ISO times; :func:`value_columns` names the columns the aggregations read.

No pyspark here: the Spark batch adapter (through ``windowagg.pandas.frame_windows``),
Spark streaming (``windowagg.spark.streaming``) and ``windowagg.pandas.window_agg`` all
validate rows with :func:`validate`, and it runs (and is tested) without Spark.

Bad input is never dropped silently. Every input row either contributes to the windows or
comes out in the *rejects* frame with a reason:

==========================  ===========================================================
reason (prefix)             when
==========================  ===========================================================
``malformed record``        the reader flagged the row (a non-null ``_corrupt_record``)
``null key``                a key column is null
``null timestamp``          the event time is null / NaT (e.g. a cancelled flight)
``NaN timestamp``           a numeric event time is NaN or infinite
``unparsable timestamp``    a text event time is not ISO 8601
``timestamp out of range``  an event time outside the years 0001-9999 (Spark's range;
                            e.g. an epoch number past int64 microseconds): never wrapped
``mixed-type timestamp``    the value's type differs from the column's majority type
``null value``              a value column used by an aggregation is null
``not a number``            a value column holds text that is not a number
``bad_value``               a value the aggregation refuses: a non-finite number (NaN,
                            ``inf``, ``-inf``, in a numeric column or as text) in a
                            value column (``bad_value: non-finite value in 'x': inf``),
                            or a value whose monoid ``lift`` raised (``bad_value:
                            ValueError: ...``, the monoid's own error text)
``late``                    older than the key's watermark minus the allowed lateness
                            (streaming; batch with lateness arguments) (``late:
                            2013-02-04T17:59:00Z < lateness bound 2013-02-04T18:00:00Z``,
                            ISO times in UTC, on every front end)
``in no window``            (the engine) a row no window holds: hopping windows with
                            ``size < slide``, count windows' last events or, with
                            ``rows < every``, the events between them (docs/engine.md)
==========================  ===========================================================

Each reject carries the original row (``row``): one flat JSON object of the input's
columns (timestamps as ISO 8601 in UTC with their full precision).

Windows are not computed here: every front end runs the engine
(:mod:`windowagg.windows.engine`) on the rows :func:`validate` lets through.

Examples
--------
>>> import pandas as pd
>>> pdf = pd.DataFrame({"k": ["a", "a", None], "t": ["2024-01-01T00:00:05", "soon", 3],
...                     "v": [1.0, 3.0, 9.0]})
>>> good, micros, values, rej = validate(pdf, ["k"], "t", ["v"])
>>> good.tolist(), rej["reason"].tolist()
([True, False, False], ["unparsable timestamp 'soon'", 'null key k'])
>>> rej["row"].tolist()[0]
'{"k": "a", "t": "soon", "v": 3.0}'
"""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from windowagg.aggs import MAX_MICROS, MIN_MICROS, Agg
from windowagg.errors import ArgumentError

__all__ = [
    "CORRUPT_COLUMN",
    "MAX_MICROS",
    "MIN_MICROS",
    "NULL_FLAG",
    "REJECT_COLUMNS",
    "ROW_COLUMN",
    "TIME_UNITS",
    "check_time_unit",
    "iso_micros",
    "non_finite_reason",
    "null_flag",
    "parse_times",
    "readable_reason",
    "utc_micros",
    "validate",
    "value_columns",
    "window_bound",
]

#: Column that Spark's CSV/JSON readers fill for rows they could not parse (PERMISSIVE mode).
CORRUPT_COLUMN = "_corrupt_record"
#: Optional input column carrying the original row as JSON (the Spark adapter adds it).
ROW_COLUMN = "_wa_row"
#: Prefix of the columns marking the nulls of numeric value columns (see :func:`null_flag`).
NULL_FLAG = "_wa_null:"
#: Columns of every rejects frame.
REJECT_COLUMNS = ("reason", "event_time", "row")


_EMPTY_REJECTS: list[pd.DataFrame] = []


def _empty_rejects() -> pd.DataFrame:
    if not _EMPTY_REJECTS:  # building the typed empty frame costs ~1 ms: keep one
        _EMPTY_REJECTS.append(_new_empty_rejects())
    return _EMPTY_REJECTS[0].copy()


def _new_empty_rejects() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "reason": pd.Series([], dtype=object),
            "event_time": pd.Series([], dtype="datetime64[us, UTC]"),
            "row": pd.Series([], dtype=object),
        }
    )


def _kind_of(x: Any) -> str:
    if x is None or (isinstance(x, float) and x != x) or x is pd.NaT:
        return "null"
    if isinstance(x, str):
        return "text"
    if isinstance(x, bool | np.bool_):
        return "bool"
    if isinstance(x, int | float | np.integer | np.floating):
        return "number"
    if isinstance(x, pd.Timestamp | np.datetime64) or hasattr(x, "isoformat"):
        return "datetime"
    return type(x).__name__


#: Microseconds per unit of a numeric event time (``time_unit``).
TIME_UNITS = {"s": 1_000_000, "ms": 1_000, "us": 1}
_EPOCH = dt.datetime(1970, 1, 1)
_US = dt.timedelta(microseconds=1)


def check_time_unit(time_unit: Any) -> int:
    """Microseconds per ``time_unit`` (``"s"``, ``"ms"``, ``"us"``); ``ArgumentError``
    otherwise. O(1).

    >>> check_time_unit("ms")
    1000
    >>> check_time_unit("ns")
    Traceback (most recent call last):
    ...
    windowagg.errors.ArgumentError: time_unit='ns' is not a unit of numeric event times; use 's', 'ms' or 'us' (times are microseconds: divide nanosecond epochs by 1000 and pass time_unit='us')
    """
    unit = TIME_UNITS.get(time_unit) if isinstance(time_unit, str) else None
    if unit is None:
        raise ArgumentError(
            f"time_unit={time_unit!r} is not a unit of numeric event times; use 's', 'ms' or "
            "'us' (times are microseconds: divide nanosecond epochs by 1000 and pass "
            "time_unit='us')"
        )
    return unit


def _out_of_range(value: Any, unit: str | None = None) -> str:
    """The reject reason of an event time outside years 0001-9999 (*unit*: of a number)."""
    if isinstance(value, np.generic):  # a numpy scalar: its plain Python value
        value = value.item()
    what = f"{value!r}" if unit is None else f"{value!r} {unit} since the epoch"
    hint = " (check time_unit)" if unit is not None else ""
    return (
        f"timestamp out of range: {what} is outside the years 0001-9999 that windowagg and "
        f"Spark take{hint}"
    )


def _object_micros(x: Any) -> int | None:
    """One datetime-like object (``datetime``, ``date``, ``pandas.Timestamp``,
    ``numpy.datetime64``) or ISO 8601 text as epoch microseconds (UTC; naive read as UTC),
    floored to the microsecond; None if it is not readable. OverflowError if it is outside
    years 0001-9999. O(1), no nanosecond step."""
    if isinstance(x, str):
        try:
            x = dt.datetime.fromisoformat(x.strip())
        except ValueError:
            return None
    elif isinstance(x, np.datetime64):
        if np.isnat(x):
            return None
        unit = np.datetime_data(x.dtype)[0]
        if unit == "ns":  # always inside the range; floor to microseconds
            return int(x.astype(np.int64)) // 1000
        x = x.astype("datetime64[us]").astype(object) if unit in ("s", "ms", "us") else x
        if not isinstance(x, dt.date):
            raise OverflowError("outside the datetime range")
    elif isinstance(x, pd.Timestamp):
        x = x.to_pydatetime(warn=False)  # drops nanoseconds: a floor
    if isinstance(x, dt.datetime):
        if x.tzinfo is not None:
            x = x.astimezone(dt.UTC).replace(tzinfo=None)
    elif isinstance(x, dt.date):
        x = dt.datetime(x.year, x.month, x.day)
    else:
        return None
    us: int = (x - _EPOCH) // _US
    return us


def parse_times(s: pd.Series, time_unit: str = "s") -> tuple[np.ndarray, pd.Series]:
    """Event times as int64 microseconds since the epoch (UTC), and a reason per bad row.

    ``time_unit`` is the unit of *numeric* event times (``"s"``, ``"ms"``, ``"us"``). Naive
    datetimes and text are read as UTC. Times go to microseconds directly, never through
    pandas nanoseconds: every time of the years 0001-9999 (Spark's range) is read, and a
    time outside them is a reject (``timestamp out of range: ...``), never wrapped. Text is
    read by :meth:`datetime.datetime.fromisoformat` (ISO 8601). Returns ``(micros,
    reasons)`` where ``reasons`` is None for good rows (their ``micros`` are meaningful
    only there). O(n).

    >>> us, why = parse_times(pd.Series(["2024-01-01T00:00:01", "soon", 5, None]))
    >>> int(us[0]), why.tolist()
    (1704067201000000, [None, "unparsable timestamp 'soon'", 'mixed-type timestamp: number 5 in a column of text', 'null timestamp'])
    >>> us, why = parse_times(pd.Series(["3000-01-01T00:00:00", "0001-01-01"]))
    >>> us.tolist(), why.tolist()
    ([32503680000000000, -62135596800000000], [None, None])
    >>> parse_times(pd.Series([2**62, 5]))[1].tolist()
    ['timestamp out of range: 4611686018427387904 s since the epoch is outside the years 0001-9999 that windowagg and Spark take (check time_unit)', None]
    """
    n = len(s)
    reasons = np.full(n, None, dtype=object)
    unit = check_time_unit(time_unit)
    if pd.api.types.is_datetime64_any_dtype(s.dtype):
        # the int64 epoch values in the column's unit (UTC for tz-aware columns, wall time
        # read as UTC for naive ones), floored to microseconds as numpy's unit cast does:
        # one array operation instead of four pandas conversions (~1 ms per key and batch)
        i8 = np.asarray(s.array.asi8, dtype=np.int64)
        bad = s.isna().to_numpy()
        micros, inside = _epoch_micros(i8, s.dtype)
        reasons[bad] = "null timestamp"
        m8 = f"datetime64[{_datetime_unit(s.dtype)}]"
        for i in np.flatnonzero(~inside & ~bad).tolist():
            reasons[i] = _out_of_range(str(i8[i : i + 1].view(m8)[0]))
        micros[bad | ~inside] = 0
        return micros, pd.Series(reasons, index=s.index, dtype=object)
    if pd.api.types.is_bool_dtype(s.dtype):
        reasons[:] = "mixed-type timestamp: bool is not a time"
        return np.zeros(n, dtype=np.int64), pd.Series(reasons, index=s.index, dtype=object)
    if pd.api.types.is_numeric_dtype(s.dtype):
        micros = np.zeros(n, dtype=np.int64)
        null = s.isna().to_numpy()
        if pd.api.types.is_integer_dtype(s.dtype):
            np_dtype = s.dtype if isinstance(s.dtype, np.dtype) else s.dtype.numpy_dtype
            raw = s.to_numpy(dtype=np_dtype, na_value=0)
            # the range in the column's own integer type: nothing is cast before the check
            lo, hi = -(-MIN_MICROS // unit), MAX_MICROS // unit
            inside = raw <= hi if raw.dtype.kind == "u" else (raw >= lo) & (raw <= hi)
            ok = inside & ~null
            micros[ok] = raw[ok].astype(np.int64) * unit
            bad_range = ~inside & ~null
        else:
            f = s.to_numpy(dtype=np.float64, na_value=np.nan)
            finite = np.isfinite(f)
            with np.errstate(invalid="ignore", over="ignore"):
                scaled = np.round(f * unit)
                inside = finite & (scaled >= MIN_MICROS) & (scaled <= MAX_MICROS)
            micros[inside] = scaled[inside].astype(np.int64)
            reasons[~finite & ~null] = "NaN timestamp (not finite)"
            bad_range = finite & ~inside
        reasons[null] = "null timestamp"
        for i in np.flatnonzero(bad_range).tolist():
            reasons[i] = _out_of_range(s.iloc[i], time_unit)
        return micros, pd.Series(reasons, index=s.index, dtype=object)
    # object / string columns: classify every value, keep the majority type
    kinds = s.map(_kind_of)
    counts = kinds[kinds != "null"].value_counts()
    major = str(counts.index[0]) if len(counts) else "null"
    micros = np.zeros(n, dtype=np.int64)
    is_null = (kinds == "null").to_numpy()
    reasons[is_null] = "null timestamp"
    other = ~is_null & (kinds != major).to_numpy()
    for i in np.flatnonzero(other).tolist():
        reasons[i] = f"mixed-type timestamp: {kinds.iloc[i]} {s.iloc[i]!r} in a column of {major}"
    ok = (~is_null) & (~other)
    if major == "number":
        pos = np.flatnonzero(ok)
        sub = s[ok].astype(np.float64).to_numpy()
        fin = np.isfinite(sub)
        with np.errstate(invalid="ignore", over="ignore"):
            scaled = np.round(sub * unit)
            inside = fin & (scaled >= MIN_MICROS) & (scaled <= MAX_MICROS)
        micros[pos[inside]] = scaled[inside].astype(np.int64)
        reasons[pos[~fin]] = "NaN timestamp (not finite)"
        for i in pos[fin & ~inside].tolist():
            reasons[i] = _out_of_range(s.iloc[i], time_unit)
    elif major in ("text", "datetime"):
        values = s.to_numpy(dtype=object)
        for i in np.flatnonzero(ok).tolist():
            x = values[i]
            try:
                us = _object_micros(x)
            except OverflowError:
                reasons[i] = _out_of_range(x)
                continue
            if us is None:
                reasons[i] = f"unparsable timestamp {x!r}"
            elif not MIN_MICROS <= us <= MAX_MICROS:  # an offset past year 9999
                reasons[i] = _out_of_range(x)
            else:
                micros[i] = us
    elif major != "null":
        reasons[ok] = f"unsupported timestamp type {major}"
    return micros, pd.Series(reasons, index=s.index, dtype=object)


def non_finite_reason(column: str, value: float) -> str:
    """The reject reason of a non-finite number (NaN, inf, -inf) in a value column.

    One rule for every path (pandas, batch, streaming, CLI): the built-in numeric monoids
    refuse non-finite values in ``lift``, so such a cell is a ``bad_value`` reject.

    >>> non_finite_reason("x", float("-inf"))
    "bad_value: non-finite value in 'x': -inf"
    """
    return f"bad_value: non-finite value in {column!r}: {value!r}"


def null_flag(column: str) -> str:
    """The column in which the Spark adapter marks the nulls of a numeric value column.

    Spark hands null doubles to pandas as NaN; this flag keeps "missing" (a ``null value``
    reject) apart from a NaN cell (a ``bad_value`` reject, as ``inf``).
    """
    return NULL_FLAG + column


def _parse_values(
    s: pd.Series, column: str, nulls: np.ndarray | None = None
) -> tuple[np.ndarray, pd.Series]:
    reasons = np.full(len(s), None, dtype=object)
    if pd.api.types.is_bool_dtype(s.dtype) or pd.api.types.is_numeric_dtype(s.dtype):
        f = s.to_numpy(dtype=np.float64, na_value=np.nan)
        if nulls is not None:
            null = nulls.copy()
        elif isinstance(s.dtype, np.dtype):  # numpy float: NaN is a value (non-finite)
            null = np.zeros(len(s), dtype=bool)
        else:  # nullable extension dtypes (Float64, Int64, boolean): NA is missing
            null = s.isna().to_numpy()
    else:  # text or mixed objects: None / NA is missing, a float NaN object is a value
        null = np.fromiter((x is None or x is pd.NA for x in s), dtype=bool, count=len(s))
        num = pd.to_numeric(s, errors="coerce")
        f = num.to_numpy(dtype=np.float64, na_value=np.nan)
        text = np.isnan(f) & ~null
        for i in np.flatnonzero(text):
            v = s.iloc[i]
            if str(v).strip().lower() in ("nan", "-nan", "+nan"):
                continue  # a NaN written as text: non-finite, below
            reasons[i] = f"not a number in {column!r}: {v!r}"
            null[i] = True  # not a candidate for the non-finite check
    with np.errstate(invalid="ignore"):
        bad = ~np.isfinite(f) & ~null
    for i in np.flatnonzero(bad):
        reasons[i] = non_finite_reason(column, float(f[i]))
    reasons[null & (reasons == None)] = f"null value in {column!r}"  # noqa: E711
    return f, pd.Series(reasons, index=s.index, dtype=object)


def _rows_json(pdf: pd.DataFrame, mask: np.ndarray) -> list[str]:
    """The rows of *pdf* under *mask* as JSON objects (column order; values as
    :func:`_jsonable` writes them), built column by column: numpy numbers, booleans and
    whole-second datetimes are converted as arrays, anything else value by value. O(rows x
    columns)."""
    if ROW_COLUMN in pdf.columns:
        return [str(x) for x in pdf.loc[mask, ROW_COLUMN].tolist()]
    sub = pdf.loc[mask, [c for c in pdf.columns if c != ROW_COLUMN and not c.startswith("_wa_")]]
    return RowsJson(sub)(np.arange(len(sub)))


class RowsJson:
    """``rows(positions) -> list[str]``: rows of *pdf* by position as :func:`_rows_json`
    writes them, each column converted once, at the first call (a stream asks for a few
    rows of a micro-batch, key by key). O(columns x rows) once, then O(columns) per row."""

    __slots__ = ("_columns", "_names", "_pdf")

    def __init__(self, pdf: pd.DataFrame) -> None:
        self._pdf = pdf
        self._names: list[str] = []
        self._columns: list[list[Any]] | None = None

    def __call__(self, positions: Any) -> list[str]:
        pdf = self._pdf
        idx = np.asarray(positions, dtype=np.int64).tolist()
        if ROW_COLUMN in pdf.columns:
            col = pdf[ROW_COLUMN].tolist()
            return [str(col[i]) for i in idx]
        if self._columns is None:
            keep = [
                j
                for j, c in enumerate(pdf.columns)
                if c != ROW_COLUMN and not str(c).startswith("_wa_")
            ]
            self._names = [str(pdf.columns[j]) for j in keep]
            self._columns = [_json_column(pdf.iloc[:, j]) for j in keep]
        names, cols = self._names, self._columns
        return [json.dumps(dict(zip(names, [c[i] for c in cols], strict=True))) for i in idx]


def _json_column(s: pd.Series) -> list[Any]:
    """One column's values as :func:`_jsonable` writes them. O(n)."""
    dtype = s.dtype
    if isinstance(dtype, np.dtype) and dtype.kind in "biuf":
        vals = s.to_numpy().tolist()  # Python bool / int / float
        return [None if v != v else v for v in vals] if dtype.kind == "f" else vals
    if isinstance(dtype, pd.DatetimeTZDtype) or (isinstance(dtype, np.dtype) and dtype.kind == "M"):
        utc = s.dt.tz_convert("UTC").dt.tz_localize(None) if s.dt.tz is not None else s
        a = utc.to_numpy()
        nat = np.isnat(a)
        whole = a.astype("datetime64[s]")
        if not bool(np.all((a == whole) | nat)):  # fractions: Timestamp.isoformat's digits
            # from the UTC values: pandas 2.3 crashes the interpreter (SIGSEGV) iterating a
            # tz-aware column in a zone with transitions (America/New_York) before ~1700
            return [_jsonable(v) for v in utc.tolist()]
        text = np.char.add(np.datetime_as_string(whole, unit="s"), "Z").tolist()
        return [None if n else t for n, t in zip(nat.tolist(), text, strict=True)]
    items: list[Any] = list(s.tolist())
    if all(type(v) is str for v in items):  # text: as it is (what _jsonable gives a str)
        return items
    return [_jsonable(v) for v in items]


_LATE = re.compile(r"^late: (-?\d+) < lateness bound (-?\d+)$")
_GAP = re.compile(
    r"^in no window: (-?\d+) lies between the hopping windows \[(-?\d+), (-?\d+)\) and "
    r"\[(-?\d+), (-?\d+)\)(.*)$"
)


def window_bound(us: Any) -> np.ndarray:
    """Window bounds (int64 epoch microseconds) as every front end outputs them: inside
    the years 0001-9999. A bound past the range (a window starting before 0001-01-01,
    ending after 9999-12-31) is the range's edge, ``MIN_MICROS`` or ``MAX_MICROS``: the
    window holds the same events (no event time lies outside the range), and the edge
    belongs to it (docs/engine.md, "Times"). O(n).

    >>> window_bound(np.array([MIN_MICROS - 5, 0, MAX_MICROS + 1])).tolist() == [
    ...     MIN_MICROS, 0, MAX_MICROS]
    True
    """
    return np.clip(np.asarray(us, dtype=np.int64), MIN_MICROS, MAX_MICROS)


def utc_micros(us: np.ndarray, null: np.ndarray | None = None) -> pd.Series:
    """Epoch microseconds as a ``datetime64[us, UTC]`` Series (NaT where *null*), without a
    nanosecond step: every int64 microsecond is representable. O(n).

    >>> utc_micros(np.array([32503680000000000, 0]), np.array([False, True])).tolist()
    [Timestamp('3000-01-01 00:00:00+0000', tz='UTC'), NaT]
    """
    ev = np.asarray(us, dtype=np.int64).astype("datetime64[us]")
    if null is not None:
        ev[null] = np.datetime64("NaT")
    return pd.Series(ev, dtype="datetime64[us]").dt.tz_localize("UTC")


def iso_micros(us: int) -> str:
    """Microseconds since the epoch as an ISO 8601 UTC time (``Z``; fractions only if any);
    outside years 0001-9999 (a bound far before any event), the microseconds as they are.

    >>> iso_micros(1359998340000000), iso_micros(1_500_000)
    ('2013-02-04T17:19:00Z', '1970-01-01T00:00:01.500000Z')
    """
    try:
        t = _EPOCH + dt.timedelta(microseconds=int(us))
    except OverflowError:
        return f"{int(us)} us"
    return t.isoformat() + "Z"


def readable_reason(reason: str) -> str:
    """An engine's reject reason with its event times (microseconds) written as ISO times,
    as every front end shows them (``late: ...``, ``in no window: ...``).

    >>> readable_reason("late: 1359998340000000 < lateness bound 1360000000000000")
    'late: 2013-02-04T17:19:00Z < lateness bound 2013-02-04T17:46:40Z'
    >>> readable_reason("in no window: 15000000 lies between the hopping windows [0, 10000000) "
    ...                 "and [20000000, 30000000) (size < slide ...)")
    'in no window: 1970-01-01T00:00:15Z lies between the hopping windows [1970-01-01T00:00:00Z, 1970-01-01T00:00:10Z) and [1970-01-01T00:00:20Z, 1970-01-01T00:00:30Z) (size < slide ...)'
    >>> readable_reason("bad_value: ValueError: negative")
    'bad_value: ValueError: negative'
    """
    m = _LATE.match(reason)
    if m is not None:
        t, bound = iso_micros(int(m.group(1))), iso_micros(int(m.group(2)))
        return f"late: {t} < lateness bound {bound}"
    m = _GAP.match(reason)
    if m is not None:
        t, a, b, c, d = (iso_micros(int(m.group(i))) for i in range(1, 6))
        return f"in no window: {t} lies between the hopping windows [{a}, {b}) and [{c}, {d}){m.group(6)}"
    return reason


def _jsonable(v: Any) -> Any:
    if v is None or v is pd.NaT or v is pd.NA:
        return None
    if isinstance(v, float | np.floating):
        return None if v != v else float(v)
    if isinstance(v, np.integer):
        return int(v)
    if isinstance(v, str | int | bool):
        return v
    if isinstance(v, np.bool_):
        return bool(v)
    if isinstance(v, np.datetime64):
        v = pd.Timestamp(v)
    if isinstance(v, dt.datetime):  # UTC, full precision (naive times are read as UTC)
        if v.tzinfo is not None:
            v = v.astimezone(dt.UTC).replace(tzinfo=None)
        return v.isoformat() + "Z"
    if hasattr(v, "isoformat"):
        return v.isoformat()
    return str(v)


_UNIT_TO_MICROS = {"s": -1_000_000, "ms": -1_000, "us": 1, "ns": 1_000}
_NAT = int(np.iinfo(np.int64).min)  # NaT as int64


def _datetime_unit(dtype: Any) -> str:
    """``"s"``, ``"ms"``, ``"us"`` or ``"ns"`` of a numpy datetime64 or a pandas
    ``DatetimeTZDtype`` (without the ``.dt`` accessor, which costs ~15 us per call)."""
    unit = getattr(dtype, "unit", None)  # DatetimeTZDtype
    return str(unit) if unit is not None else str(np.datetime_data(dtype)[0])


def _epoch_micros(i8: np.ndarray, dtype: Any) -> tuple[np.ndarray, np.ndarray]:
    """A datetime64 column's int64 values *i8* (in its *dtype*'s unit) as epoch
    microseconds, floored as numpy's unit cast does (a new array), and the mask of the
    values inside years 0001-9999 (outside it the microseconds are 0; NaT is outside).
    Nothing overflows: seconds and milliseconds are range-checked before scaling. O(n)."""
    scale = _UNIT_TO_MICROS[_datetime_unit(dtype)]
    if scale == 1:
        micros = i8.copy()
    elif scale > 0:
        micros = np.floor_divide(i8, scale)
    else:
        lo, hi = -(MIN_MICROS // scale), MAX_MICROS // -scale  # in the column's unit
        fits = (i8 >= lo) & (i8 <= hi)
        micros = np.where(fits, i8, 0) * -scale
        micros[~fits] = MAX_MICROS + 1  # outside: caught below
    inside = (micros >= MIN_MICROS) & (micros <= MAX_MICROS)
    micros[~inside] = 0
    return micros, inside


def _clean_micros(i8: np.ndarray, dtype: Any) -> np.ndarray | None:
    """:func:`_epoch_micros` of a datetime64 column's int64 values *i8* when every one is
    inside years 0001-9999 and none is NaT, else None: NaT (the smallest int64) and the
    range checked on the smallest and the largest value alone (the map to microseconds is
    monotone), then one numpy pass. O(n)."""
    if not len(i8):
        return i8.copy()
    ends = np.array([i8.min(), i8.max()], dtype=np.int64)
    if ends[0] == _NAT or not _epoch_micros(ends, dtype)[1].all():
        return None
    scale = _UNIT_TO_MICROS[_datetime_unit(dtype)]
    if scale == 1:
        return i8.copy()
    if scale > 0:
        out: np.ndarray = np.floor_divide(i8, scale)
        return out
    return i8 * -scale  # inside the years 0001-9999: no overflow


def _all_good(
    pdf: pd.DataFrame,
    keys: Sequence[str],
    time: str,
    value_columns: Sequence[str],
    time_unit: str = "s",
) -> tuple[np.ndarray, dict[str, np.ndarray]] | None:
    """``(micros, values)`` as :func:`validate` returns them when *pdf* is typed (numpy
    datetime or integer time column, float64 value columns) and no row has a reason; None
    otherwise (the caller then takes the general path, which finds the reasons).

    The common case of a Spark micro-batch: a few numpy checks instead of the general
    path's reason arrays and pandas Series (~1 ms per key and batch). O(n).
    """
    if CORRUPT_COLUMN in pdf.columns and pdf[CORRUPT_COLUMN].notna().to_numpy().any():
        return None
    flags = [null_flag(c) for c in value_columns]
    names = [*keys, time, *value_columns, *(f for f in flags if f in pdf.columns)]
    got = _stored_columns(pdf, names)
    if got is None:
        return None
    arrays = dict(zip(names, got, strict=True))
    for k in keys:
        kc = arrays[k]
        numpy_int = isinstance(kc.dtype, np.dtype) and kc.dtype.kind in "iub"  # no NA there
        if not numpy_int and pd.isna(kc).any():
            return None
    s = arrays[time]
    if isinstance(s.dtype, np.dtype) and s.dtype.kind in "iu":  # numbers in time_unit
        unit = check_time_unit(time_unit)
        raw = np.asarray(s)
        # the range in the column's own integer type: nothing is cast before the check
        if len(raw) and (raw.min() < -(-MIN_MICROS // unit) or raw.max() > MAX_MICROS // unit):
            return None  # times outside years 0001-9999: rejects
        micros = raw.astype(np.int64) * unit if unit != 1 else raw.astype(np.int64, copy=True)
    elif (
        s.dtype.kind == "M"
        if isinstance(s.dtype, np.dtype)
        else isinstance(s.dtype, pd.DatetimeTZDtype)
    ):
        i8 = s.asi8 if hasattr(s, "asi8") else np.asarray(s).view(np.int64)
        clean = _clean_micros(np.asarray(i8, dtype=np.int64), s.dtype)
        if clean is None:  # NaT, or times outside years 0001-9999: rejects
            return None
        micros = clean
    else:
        return None
    values: dict[str, np.ndarray] = {}
    for c, flag in zip(value_columns, flags, strict=True):
        vc = arrays[c]
        if not (isinstance(vc.dtype, np.dtype) and vc.dtype == np.float64):
            return None
        if flag in arrays and np.asarray(arrays[flag], dtype=bool).any():
            return None
        f = np.asarray(vc, dtype=np.float64)
        if not np.isfinite(f).all():
            return None
        values[c] = f
    return micros, values


def _stored_columns(pdf: pd.DataFrame, names: Sequence[str]) -> list[Any] | None:
    """The values of *pdf*'s columns *names* as its blocks store them (numpy arrays or
    pandas extension arrays; read only), without boxing a Series for each (~20 us per
    column of a frame not read yet: most of :func:`_all_good`'s cost per key and
    micro-batch); None when a name is not exactly one column (missing or repeated: the
    general path says what) or pandas has no ``DataFrame._get_column_array`` (a private
    method of pandas 2.x, the versions this package takes). O(names)."""
    column_array = getattr(pdf, "_get_column_array", None)  # pandas 2.x's, not public
    if column_array is None:  # a pandas without it: the general path
        return None
    cols = pdf.columns
    out: list[Any] = []
    for name in names:
        try:
            loc = cols.get_loc(name)
        except KeyError:
            return None
        if type(loc) is not int:
            return None
        out.append(column_array(loc))
    return out


def validate(
    pdf: pd.DataFrame,
    keys: Sequence[str],
    time: str,
    value_columns: Sequence[str],
    *,
    time_unit: str = "s",
    rows: bool = True,
) -> tuple[np.ndarray, np.ndarray, dict[str, np.ndarray], pd.DataFrame]:
    """Split *pdf* into good rows and rejects. O(n).

    ``rows=False`` leaves the rejects' ``row`` null, for a caller that writes the rows
    itself (``windowagg.pandas`` writes them once, for every reject, with its own columns).

    Returns
    -------
    (good, micros, values, rejects)
        ``good`` a boolean mask over *pdf*'s rows; ``micros`` int64 event times (meaningful
        where ``good``); ``values`` float64 arrays per value column; ``rejects`` a frame with
        :data:`REJECT_COLUMNS` (the first reason found per row, checked in the order of the
        table in the module docstring).
    """
    clean = _all_good(pdf, keys, time, value_columns, time_unit)
    if clean is not None:
        return np.ones(len(pdf), dtype=bool), clean[0], clean[1], _empty_rejects()
    return _validate_rows(pdf, keys, time, value_columns, time_unit, rows)


def _validate_rows(
    pdf: pd.DataFrame,
    keys: Sequence[str],
    time: str,
    value_columns: Sequence[str],
    time_unit: str,
    rows: bool = True,
) -> tuple[np.ndarray, np.ndarray, dict[str, np.ndarray], pd.DataFrame]:
    """:func:`validate`'s general path: a reason per row, for any column types. O(n)."""
    n = len(pdf)
    reason = np.full(n, None, dtype=object)
    unset = np.ones(n, dtype=bool)  # rows without a reason yet

    def mark(why: pd.Series) -> None:
        w = why.to_numpy(dtype=object)
        fill = unset & ~pd.isna(w)
        if fill.any():
            reason[fill] = w[fill]
            unset[fill] = False

    def mark_mask(mask: np.ndarray, text: str) -> None:
        fill = unset & mask
        if fill.any():
            reason[fill] = text
            unset[fill] = False

    if CORRUPT_COLUMN in pdf.columns:
        mark_mask(pdf[CORRUPT_COLUMN].notna().to_numpy(), "malformed record")
    for k in keys:
        mark_mask(pdf[k].isna().to_numpy(), f"null key {k}")
    micros, why_t = parse_times(pdf[time], time_unit)
    mark(why_t)
    values: dict[str, np.ndarray] = {}
    for c in value_columns:
        flag = null_flag(c)
        nulls = pdf[flag].to_numpy(dtype=bool) if flag in pdf.columns else None
        values[c], why_v = _parse_values(pdf[c], c, nulls)
        mark(why_v)
    bad = ~unset
    if bad.any():
        rejects = pd.DataFrame(
            {
                "reason": reason[bad],
                "event_time": utc_micros(micros[bad], ~why_t[bad].isna().to_numpy()),
                "row": _rows_json(pdf, bad) if rows else [None] * int(bad.sum()),
            }
        )
    else:
        rejects = _empty_rejects()
    return ~bad, micros, values, rejects


def value_columns(aggs: Sequence[Agg]) -> list[str]:
    """The distinct input columns the aggregations read, in first-use order. O(len(aggs))."""
    return list(dict.fromkeys(a.column for a in aggs if a.column is not None))
