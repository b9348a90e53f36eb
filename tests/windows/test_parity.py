"""One engine, several doors: the object API (``SlidingWindows``, ``CountWindows``,
``SessionWindows``, ``SharedWindows``) and ``windowagg.pandas.window_agg`` give the same final
answers and the same rejects for the same out-of-order stream (issue 27).

Streams: a few keys, duplicate times, events behind the watermark (late, or late but allowed,
which revise emitted windows), every shape. A stream is fed to one object-API window per key
in arrival order and closed; its *final* answers are the last revision of every window (a
session of higher revision supersedes the sessions it contains). ``window_agg`` sees the same
rows with the same lateness, judged per key in input order. Every event carries its row
number in its value (``v = row + 1``), so a reject names its row on both sides. The Spark
doors are compared with the same helpers in ``tests/spark/test_parity_spark.py``.
"""

from __future__ import annotations

from typing import Any

import pandas as pd
from hypothesis import given
from hypothesis import strategies as st

from windowagg.monoids import Max, Sum
from windowagg.pandas import window_agg
from windowagg.windows import CountWindows, SessionWindows, SharedWindows, SlidingWindows

#: name -> (window_agg shape arguments, whether times must be distinct per key)
SHAPES: dict[str, tuple[dict[str, int], bool]] = {
    "tumbling": ({"size": 10, "slide": 10}, False),
    "hopping": ({"size": 10, "slide": 4}, False),
    "gaps": ({"size": 3, "slide": 5}, False),
    "per_event": ({"size": 7}, False),
    "count": ({"rows": 3, "every": 2}, True),
    "count1": ({"rows": 2, "every": 1}, True),
    "session": ({"gap": 4}, False),
}
KEYS = ("a", "b", "c")


def object_window(shape: dict[str, int], monoid: Any, ooo: int, lateness: int) -> Any:
    """The object-API window for a ``window_agg`` shape."""
    kw = {"max_out_of_orderness": ooo, "allowed_lateness": lateness}
    if "rows" in shape:
        return CountWindows(monoid, shape["rows"], shape["every"], **kw)
    if "gap" in shape:
        return SessionWindows(monoid, shape["gap"], **kw)
    return SlidingWindows(monoid, shape["size"], shape.get("slide"), **kw)


def final(results: list[Any], session: bool) -> dict[tuple[int, int], tuple[float, int]]:
    """``(start, end) -> (value, count)`` of every window's last revision (by the window's
    ``id``; a session of higher revision supersedes the emitted sessions it contains)."""
    last: dict[int, Any] = {}
    for r in results:
        if session and r.revision:
            for i in [i for i, w in last.items() if r.start <= w.start < r.end]:
                del last[i]
        last[r.id] = r
    return {(r.start, r.end): (float(r.value), int(r.count)) for r in last.values()}


def run_objects(
    rows: list[tuple[str, int]], shape: dict[str, int], ooo: int, lateness: int, agg: str
) -> tuple[dict[Any, tuple[float, int]], set[tuple[int, str]]]:
    """The final answers by ``(key, start, end)`` and the rejects ``(row, code)``."""
    monoid = Sum() if agg == "sum" else Max()
    windows: dict[str, Any] = {}
    emitted: dict[str, list[Any]] = {k: [] for k in KEYS}
    for i, (k, t) in enumerate(rows):
        w = windows.get(k)
        if w is None:
            w = windows[k] = object_window(shape, monoid, ooo, lateness)
        emitted[k] += w.insert(t, i + 1)
    answers: dict[Any, tuple[float, int]] = {}
    rejects: set[tuple[int, str]] = set()
    for k, w in windows.items():
        emitted[k] += w.close()
        for (s, e), v in final(emitted[k], "gap" in shape).items():
            answers[(k, s, e)] = v
        rejects |= {(int(r.value) - 1, r.reason.split(":")[0]) for r in w.rejected}
    return answers, rejects


def frame(rows: list[tuple[str, int]]) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "k": [k for k, _ in rows],
            "t": [t for _, t in rows],
            "v": [float(i + 1) for i in range(len(rows))],
        }
    )


def batch_answers(results: pd.DataFrame, agg: str) -> dict[Any, tuple[float, int]]:
    """``window_agg``'s results as ``(key, start, end) -> (value, count)`` (times in s)."""
    start = results["window_start"].astype("int64") // 10**9
    end = results["window_end"].astype("int64") // 10**9
    col = f"{agg}_v"
    return {
        (k, int(s), int(e)): (float(v), int(n))
        for k, s, e, v, n in zip(
            results["k"], start, end, results[col], results["count"], strict=True
        )
    }


def batch_rejects(rejects: pd.DataFrame) -> set[tuple[int, str]]:
    return {
        (int(i), r.split(":")[0])
        for i, r in zip(rejects["row_index"], rejects["reason"], strict=True)
    }


def run_pandas(
    rows: list[tuple[str, int]], shape: dict[str, int], ooo: int, lateness: int, agg: str
) -> tuple[dict[Any, tuple[float, int]], set[tuple[int, str]]]:
    out = window_agg(
        frame(rows),
        "k",
        "t",
        [f"{agg}(v)", "count"],
        max_out_of_orderness=ooo,
        allowed_lateness=lateness,
        **shape,
    )
    return batch_answers(out.results, agg), batch_rejects(out.rejects)


@st.composite
def streams(draw: Any, distinct: bool) -> list[tuple[str, int]]:
    """Rows ``(key, time)`` in arrival order: a drifting clock with jitter, duplicates
    and stragglers far behind (late, or late but allowed)."""
    n = draw(st.integers(0, 30))
    rows: list[tuple[str, int]] = []
    seen: set[tuple[str, int]] = set()
    clock = 0
    for _ in range(n):
        k = draw(st.sampled_from(KEYS))
        clock += draw(st.integers(0, 3))
        t = clock - draw(st.sampled_from([0, 0, 0, 1, 2, 5, 9, 15]))
        if distinct and (k, t) in seen:
            continue
        seen.add((k, t))
        rows.append((k, t))
    return rows


@given(data=st.data())
def test_object_api_equals_window_agg(data: Any) -> None:
    shape, distinct = SHAPES[data.draw(st.sampled_from(sorted(SHAPES)))]
    rows = data.draw(streams(distinct))
    ooo = data.draw(st.sampled_from([0, 3]))
    lateness = data.draw(st.sampled_from([0, 6, 40]))
    agg = data.draw(st.sampled_from(["sum", "max"]))
    got = run_objects(rows, shape, ooo, lateness, agg)
    want = run_pandas(rows, shape, ooo, lateness, agg)
    assert got[1] == want[1]
    assert got[0] == want[0]
    accepted = {i for i in range(len(rows))} - {i for i, _ in want[1]}
    assert len(accepted) + len(want[1]) == len(rows)  # every row aggregated or rejected


@given(data=st.data())
def test_shared_windows_equal_window_agg_per_size(data: Any) -> None:
    """Each size of ``SharedWindows`` is that size's ``window_agg``."""
    rows = [(k, t) for k, t in data.draw(streams(False)) if k == "a"]
    lateness = data.draw(st.sampled_from([0, 6]))
    w = SharedWindows(Sum(), [8, 4, 12], 4, max_out_of_orderness=2, allowed_lateness=lateness)
    emitted = []
    for i, (_, t) in enumerate(rows):
        emitted += w.insert(t, i + 1)
    emitted += w.close()
    for size in (4, 8, 12):
        mine = final([r for r in emitted if r.end - r.start == size], False)
        want, rejects = run_pandas(rows, {"size": size, "slide": 4}, 2, lateness, "sum")
        assert {("a", s, e): v for (s, e), v in mine.items()} == want
        assert {(int(r.value) - 1, r.reason.split(":")[0]) for r in w.rejected} == rejects
