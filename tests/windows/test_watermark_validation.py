"""Issue 13 item 8: a bad watermark raises TimestampError and changes nothing.

Each case builds a window, feeds it events, and compares everything observable (the
watermark, the lateness bound, ``next_deadline()``, the state bytes, and the windows
that a later good watermark and ``close()`` emit) with a twin that never saw the bad
watermark.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from windowagg import SlidingWindows
from windowagg.errors import TimestampError, WindowaggError
from windowagg.monoids import Sum

DAY = timedelta(days=1)

CASES = [
    # (size, slide, events, bad watermark)
    (10, 5, [(1, 1), (7, 2)], float("inf")),
    (10, 5, [(1, 1), (7, 2)], float("-inf")),
    (10, None, [(1, 1), (7, 2)], float("inf")),
    (10, 5, [(1, 1), (7, 2)], 2.5),
    (10, 5, [(1, 1), (7, 2)], 10**400),
    (10, None, [(1, 1), (7, 2)], 10**400),
    (10, 5, [(1, 1), (7, 2)], "x"),
    (10, 5, [], float("inf")),
    (10, 5, [], "x"),
    (DAY, DAY, [(datetime(2024, 1, 1), 1)], 12),
    (DAY, DAY, [(datetime(2024, 1, 1), 1)], datetime(2024, 1, 2, tzinfo=UTC)),
]


def _observe(w: Any) -> Any:
    return (w.watermark, w.lateness_bound, w.next_deadline(), w.late_count)


@pytest.mark.parametrize(("size", "slide", "events", "bad"), CASES)
def test_bad_watermark_changes_nothing(size: Any, slide: Any, events: Any, bad: Any) -> None:
    w = SlidingWindows(Sum(), size, slide)
    twin = SlidingWindows(Sum(), size, slide)
    for t, v in events:
        w.insert(t, v)
        twin.insert(t, v)
    with pytest.raises(TimestampError) as info:
        w.advance_watermark(bad)
    assert isinstance(info.value, WindowaggError) and isinstance(info.value, TypeError)
    assert _observe(w) == _observe(twin)
    assert w.to_bytes() == twin.to_bytes()
    good = datetime(2024, 1, 3) if isinstance(size, timedelta) else 12
    assert w.advance_watermark(good) == twin.advance_watermark(good)
    assert w.close() == twin.close()


def test_infinite_watermark_message_says_what_to_do() -> None:
    w = SlidingWindows(Sum(), 10, 5)
    w.insert(1, 1)
    with pytest.raises(TimestampError, match=r"close\(\)"):
        w.advance_watermark(float("inf"))
