"""Brute-force reference for the windows engine: loops over each shape's definition."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd
from hypothesis import strategies as st

AGGS = ["sum(v)", "count", "max(v)", "min(v)", "mean(v)", "p50(v)", "p95(v)", "median(v)"]
COLUMNS = ["sum_v", "count", "max_v", "min_v", "mean_v", "p50_v", "p95_v", "median_v"]

#: Every window shape, as ``window_agg`` keyword arguments (small sizes: many collisions).
SHAPES = st.one_of(
    st.builds(
        lambda size, slide, start: {"size": size, "slide": slide, "start_time": start},
        st.integers(1, 12),
        st.integers(1, 12),
        st.integers(-5, 5),
    ),
    st.builds(lambda size: {"size": size}, st.integers(1, 15)),
    st.builds(lambda r, e: {"rows": r, "every": e}, st.integers(1, 6), st.integers(1, 4)),
    st.builds(lambda g: {"gap": g}, st.integers(1, 8)),
)


def nearest(vals: list[float], num: int, den: int) -> float:
    s = sorted(vals)
    return s[max(1, math.ceil(num * len(s) / den)) - 1]


def summary(vals: list[float]) -> list[Any]:
    return [
        sum(vals),
        len(vals),
        max(vals),
        min(vals),
        sum(vals) / len(vals),
        nearest(vals, 1, 2),
        nearest(vals, 95, 100),
        nearest(vals, 1, 2),
    ]


def valid_rows(df: pd.DataFrame) -> list[int]:
    out = []
    for i in range(len(df)):
        k, v = df["k"].iloc[i], df["v"].iloc[i]
        if k is None or v is None or not math.isfinite(v):
            continue
        out.append(i)
    return out


def late_rows(df: pd.DataFrame, rows: list[int], ooo: int, allowed: int) -> set[int]:
    """Rows judged late in input order per key (times in seconds)."""
    top: dict[Any, int] = {}
    late = set()
    for i in rows:
        k, t = df["k"].iloc[i], int(df["t"].iloc[i])
        if k in top and t < top[k] - ooo - allowed:
            late.add(i)
            continue
        top[k] = max(top.get(k, t), t)
    return late


def hopping_gaps(df: pd.DataFrame, shape: dict[str, int], rows: list[int]) -> set[int]:
    """Rows whose time lies in no hopping window (``size < slide``: between two windows)."""
    if "slide" not in shape or shape.get("slide") is None or shape["size"] >= shape["slide"]:
        return set()
    size, slide, st = shape["size"], shape["slide"], shape.get("start_time", 0)
    out = set()
    for i in rows:
        t = int(df["t"].iloc[i])
        # no k with st + k * slide <= t < st + k * slide + size
        if not any(st + kk * slide <= t < st + kk * slide + size for kk in range(-50, 50)):
            out.add(i)
    return out


def count_gaps(df: pd.DataFrame, shape: dict[str, int], rows: list[int]) -> set[int]:
    """Rows that no count window holds: each key's last events after its last window
    (fewer than ``every``) and, with ``rows < every``, those between windows."""
    if "rows" not in shape:
        return set()
    n, every = shape["rows"], shape["every"]
    by_key: dict[Any, list[tuple[int, int]]] = {}
    for i in rows:
        by_key.setdefault(df["k"].iloc[i], []).append((int(df["t"].iloc[i]), i))
    out = set()
    for ev in by_key.values():
        ev.sort()  # by time, then input position
        held = set()
        for j in range(len(ev)):
            if (j + 1) % every == 0:
                held.update(range(max(0, j - n + 1), j + 1))
        out.update(ev[j][1] for j in range(len(ev)) if j not in held)
    return out


def reference(df: pd.DataFrame, shape: dict[str, int], admitted: list[int]) -> pd.DataFrame:
    """One row per window: k, start, end (seconds) and the COLUMNS, by key then end."""
    rows: list[list[Any]] = []
    by_key: dict[Any, list[tuple[int, int, float]]] = {}
    for i in admitted:
        by_key.setdefault(df["k"].iloc[i], []).append(
            (int(df["t"].iloc[i]), i, float(df["v"].iloc[i]))
        )
    for k in sorted(by_key):
        ev = sorted(by_key[k])  # by time, then input position
        ts = [e[0] for e in ev]
        if "gap" in shape:
            gap = shape["gap"]
            sessions: list[list[tuple[int, int, float]]] = []
            for e in ev:
                if sessions and e[0] - sessions[-1][-1][0] <= gap:
                    sessions[-1].append(e)
                else:
                    sessions.append([e])
            for s in sessions:
                rows.append([k, s[0][0], s[-1][0] + gap, *summary([e[2] for e in s])])
        elif "rows" in shape:
            n, every = shape["rows"], shape["every"]
            for j in range(len(ev)):
                if (j + 1) % every == 0:
                    w = ev[max(0, j - n + 1) : j + 1]
                    rows.append([k, w[0][0], w[-1][0], *summary([e[2] for e in w])])
        elif shape.get("slide") is None:
            size = shape["size"]
            for t, _, _ in ev:
                w = [e for e in ev if t - size < e[0] <= t]
                rows.append([k, t - size, t, *summary([e[2] for e in w])])
        else:
            size, slide, st = shape["size"], shape["slide"], shape.get("start_time", 0)
            k_lo = (min(ts) - st - size) // slide - 1
            k_hi = (max(ts) - st) // slide + 1
            for kk in range(k_lo, k_hi + 1):
                a = st + kk * slide
                w = [e for e in ev if a <= e[0] < a + size]
                if w:
                    rows.append([k, a, a + size, *summary([e[2] for e in w])])
    return pd.DataFrame(rows, columns=["k", "start", "end", *COLUMNS])


def superseded_sessions_dropped(
    df: pd.DataFrame, start: str, end: str, by: list[str] | None = None
) -> pd.DataFrame:
    """The emitted sessions that no session of a higher revision (of the same *by* group)
    contains: a late event bridging two sessions supersedes them with the merged one."""
    keep = []
    for _, r in df.iterrows():
        over = (df[start] <= r[start]) & (df[end] >= r[end])
        for c in by or []:
            over &= df[c] == r[c]
        keep.append(not (df.loc[over, "revision"] > r["revision"]).any())
    return df[np.asarray(keep, dtype=bool)]


class Fussy:
    """A sum whose ``combine`` raises above 100 and whose ``lower`` raises on exactly 50;
    ``lift`` accepts every value, so admission lets them all in."""

    identity = 0.0

    def __init__(self, commutative: bool) -> None:
        self.commutative = commutative

    def lift(self, x: float) -> float:
        return x

    def combine(self, a: float, b: float) -> float:
        if a + b > 100:
            raise OverflowError(f"{a} + {b} is too much")
        return a + b

    def lower(self, a: float) -> float:
        if a == 50:
            raise ValueError("fifty")
        return a
