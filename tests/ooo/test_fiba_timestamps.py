"""Timestamps of any ordered type; bad timestamps raise and leave the window unchanged.

Also: the O(n) build ``FiBA.from_sorted_partials`` and its round trip through
``to_partials`` and the versioned codec (the Spark state path).
"""

from __future__ import annotations

import datetime as dt
import math
from typing import Any

import pytest

from windowagg import codec
from windowagg.errors import TimestampError
from windowagg.monoids import BloomFilter, Concat, GeometricMean, MatMul2x2, Sum
from windowagg.ooo import BTree, FiBA, Recalc

# these tests read the pure-Python reference's internals (tests/native/ covers the native twin)
pytestmark = pytest.mark.usefixtures("python_backend")

CLASSES = [FiBA, BTree]


def _snapshot(w: Any) -> tuple[Any, ...]:
    return (w.query(), len(w), w.oldest(), w.youngest(), list(w))


@pytest.mark.parametrize("cls", CLASSES)
def test_bad_timestamps_raise_and_change_nothing(cls: type) -> None:
    w = cls(Concat(), min_arity=2)
    for t in range(40):
        w.insert(t, t)
    before = _snapshot(w)
    for bad in (math.nan, None, "7", dt.datetime(2020, 1, 1), float("nan"), (1,)):
        with pytest.raises(TimestampError):
            w.insert(bad, "x")
        with pytest.raises(TimestampError):
            w.evict(bad)
        with pytest.raises(TimestampError):
            w.bulk_evict(bad)
        with pytest.raises(TimestampError):
            w.range_query(bad, 5)
        with pytest.raises(TimestampError):
            w.range_query(1, bad)
        # the bad entry is last: nothing of the bulk may have been applied
        with pytest.raises(TimestampError):
            w.bulk_insert([(100, "a"), (3, "b"), (bad, "c")])
        assert _snapshot(w) == before
        w._check()


@pytest.mark.parametrize("cls", CLASSES)
def test_bad_first_timestamp_into_empty_window(cls: type) -> None:
    w = cls(Sum())
    for bad in (math.nan, None):
        with pytest.raises(TimestampError):
            w.insert(bad, 1)
        with pytest.raises(TimestampError):
            w.bulk_insert([(bad, 1)])
    with pytest.raises(TimestampError):
        w.bulk_insert([(1, 1), ("x", 2)])  # mixed types inside one bulk
    assert len(w) == 0 and w.query() == 0
    w._check()


def test_lift_failure_in_bulk_changes_nothing() -> None:
    w = FiBA(MatMul2x2(), min_arity=2)
    for t in range(20):
        w.insert(t, (1, t, 0, 1))
    before = _snapshot(w)

    class Boom(Exception):
        pass

    class Bad:
        def __iter__(self) -> Any:
            yield (30, (1, 0, 0, 1))
            raise Boom

    with pytest.raises(Boom):
        w.bulk_insert(Bad())  # type: ignore[arg-type]
    assert _snapshot(w) == before


def test_timestamp_type_can_change_after_the_window_empties() -> None:
    w = FiBA(Sum(), min_arity=2)
    w.insert(1, 1)
    w.evict(1)
    w.insert(dt.date(2020, 1, 1), 2)
    with pytest.raises(TimestampError):
        w.insert(5, 1)  # int into a date window
    w.bulk_evict(dt.date(2021, 1, 1))
    w.insert(2.5, 3)
    w.insert(3, 4)  # int and float compare fine
    assert w.query() == 7 and len(w) == 2
    w._check()


@pytest.mark.parametrize("cls", CLASSES)
def test_datetime_window(cls: type) -> None:
    base = dt.datetime(2024, 3, 1, 12, 0)
    w, r = cls(Concat(), min_arity=2), Recalc(Concat())
    times = [base + dt.timedelta(seconds=(7 * i) % 101) for i in range(300)]
    for i, t in enumerate(times):
        w.insert(t, i)
        r.insert(t, i)
    cut = base + dt.timedelta(seconds=40)
    w.bulk_evict(cut)
    r.bulk_evict(cut)
    w._check()
    assert list(w) == list(r) and w.query() == r.query()
    lo, hi = base + dt.timedelta(seconds=50), base + dt.timedelta(seconds=70)
    assert w.range_query(lo, hi) == r.range_query(lo, hi)
    aware = dt.datetime(2024, 3, 1, 12, 0, tzinfo=dt.UTC)
    with pytest.raises(TimestampError):
        w.insert(aware, 1)  # naive and aware datetimes do not compare
    assert list(w) == list(r)


@pytest.mark.parametrize("cls", CLASSES)
def test_pandas_timestamp_window(cls: type) -> None:
    pd = pytest.importorskip("pandas")
    w, r = cls(Sum(), min_arity=3), Recalc(Sum())
    ts = pd.date_range("2024-01-01", periods=200, freq="min")
    pairs = [(ts[(i * 37) % 200], i) for i in range(200)]
    w.bulk_insert(pairs)
    r.bulk_insert(pairs)
    w.bulk_evict(ts[50])
    r.bulk_evict(ts[50])
    w._check()
    assert w.query() == r.query() and len(w) == len(r)
    for bad in (pd.NaT, None):
        with pytest.raises(TimestampError):
            w.insert(bad, 1)
    assert w.query() == r.query()


def test_from_sorted_partials_round_trip() -> None:
    for mu in (2, 3, 4, 8):
        for n in (0, 1, 5, 64, 1000):
            src = FiBA(Concat(), min_arity=mu)
            for i in range(n):
                src.insert((i * 7919) % (n + 13), i)
            pairs = src.to_partials()
            w = FiBA.from_sorted_partials(Concat(), pairs, min_arity=mu)
            w._check()
            assert list(w) == pairs and w.query() == src.query() and len(w) == len(src)
            w.insert(-1, "x")
            w.bulk_evict(n // 2)
            w._check()


def test_from_sorted_partials_through_the_codec() -> None:
    for monoid, values in ((GeometricMean(), [1.5, 2.0, 0.25]), (BloomFilter(), ["a", "b", "c"])):
        w = FiBA(monoid, min_arity=2)
        for i in range(300):
            w.insert((i * 13) % 211, values[i % 3])
        data = codec.dumps([[t, p] for t, p in w])
        restored = FiBA.from_sorted_partials(
            monoid, [(t, p) for t, p in codec.loads(data)], min_arity=2
        )
        restored._check()
        assert list(restored) == list(w)
        assert restored.query() == w.query()
        assert restored.range_query(20, 90) == w.range_query(20, 90)


def test_from_sorted_partials_rejects_unsorted_or_bad() -> None:
    with pytest.raises(TimestampError, match="strictly increasing"):
        FiBA.from_sorted_partials(Sum(), [(1, 1), (1, 2)])
    with pytest.raises(TimestampError, match="strictly increasing"):
        FiBA.from_sorted_partials(Sum(), [(2, 1), (1, 2)])
    with pytest.raises(TimestampError):
        FiBA.from_sorted_partials(Sum(), [(1, 1), (math.nan, 2)])
