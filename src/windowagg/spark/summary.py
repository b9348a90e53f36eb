"""A whole-stream (all keys) decayed summary on Spark: one summary per partition, merged.

=================  ==========================================================================
Spark operator     ``select(time, value).mapInArrow(f, schema)``: no shuffle; each partition
                   folds its Arrow batches into one summary
                   (:func:`windowagg.decayed_summary.summarize`) and yields one row: the
                   summary's codec bytes (the versioned windowagg codec, no pickle), the
                   rows it counted and its rejects' reasons (JSON)
driver             collects P small rows (one per partition: <= ceil(1/eps) counters or
                   <= 12 L / eps + 1 q-digest nodes each) and merges them in a balanced tree
                   (:func:`windowagg.decayed_summary.merge_parts`)
error              the summaries' bounds after any merge tree, with D = the whole stream's
                   decayed total: top_k weights within ``eps D`` above the true ones,
                   quantiles' ranks within ``eps D`` (docs/decay.md)
=================  ==========================================================================

Examples
--------
>>> from windowagg.spark import decayed_summary                     # doctest: +SKIP
>>> r = decayed_summary(flights, "event_time", "origin", half_life="1 day", k=3)  # doctest: +SKIP
>>> r.answer                                                        # doctest: +SKIP
[('EWR', 41.3...), ('JFK', 37.9...), ('LGA', 33.0...)]
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterator, Sequence
from typing import Any

from windowagg.spark._deps import require_pyspark

require_pyspark("windowagg.spark.decayed_summary")

import pyarrow as pa  # noqa: E402
from pyspark.sql import DataFrame  # noqa: E402
from pyspark.sql import types as T  # noqa: E402

from windowagg.aggs import to_micros  # noqa: E402
from windowagg.decayed_summary import (  # noqa: E402
    Part,
    Summary,
    SummarySpec,
    merge_parts,
    summarize,
)
from windowagg.errors import ArgumentError  # noqa: E402
from windowagg.sketches.decayed_aggs import DEFAULT_EPS  # noqa: E402

__all__ = ["decayed_summary"]

_SCHEMA = T.StructType(
    [
        T.StructField("summary", T.BinaryType(), True),
        T.StructField("rows", T.LongType(), False),
        T.StructField("rejects", T.StringType(), False),
    ]
)
_ARROW = pa.schema(
    [("summary", pa.binary()), ("rows", pa.int64(), False), ("rejects", pa.string(), False)]
)
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


def _as_of_micros(as_of: Any) -> int | None:
    """*as_of* (a datetime, naive = UTC, or int microseconds since the epoch) as int
    microseconds. O(1)."""
    if as_of is None:
        return None
    if isinstance(as_of, dt.datetime):
        aware = as_of if as_of.tzinfo is not None else as_of.replace(tzinfo=dt.UTC)
        return (aware - _EPOCH) // dt.timedelta(microseconds=1)
    if isinstance(as_of, int) and not isinstance(as_of, bool):
        return as_of
    raise ArgumentError(
        f"as_of={as_of!r} is not a time; give a datetime (naive means UTC) or int "
        "microseconds since the epoch"
    )


def decayed_summary(
    df: DataFrame,
    time: str,
    value: str,
    *,
    half_life: Any,
    kind: str = "top_k",
    k: int = 10,
    quantiles: Sequence[float] = (0.5, 0.9, 0.99),
    eps: float = DEFAULT_EPS,
    as_of: Any = None,
) -> Summary:
    """The decayed heavy hitters (``kind="top_k"``) or quantiles (``kind="quantiles"``) of
    *value* over every row of *df* (all keys), as of *as_of* (default: the newest event).

    Parameters
    ----------
    df
        Any DataFrame; *time* must be a timestamp column.
    half_life
        Exponential decay: ``"1 day"``, seconds, or a timedelta.
    k, quantiles, eps
        top_k reports the k heaviest values with ``max(k, ceil(1/eps))`` counters;
        quantiles' rank error is ``eps`` of the decayed total.
    as_of
        The time answered; events after it are rejected (``"event time after as_of"``).

    Returns
    -------
    Summary
        ``answer`` (top_k: ``[(value, weight), ...]`` heaviest first; quantiles:
        ``{phi: value}``), ``as_of``, ``total`` (the decayed weight D), ``error`` (``eps *
        D``), ``rows`` counted, ``rejects`` (reason -> rows) and the merged ``summary``.

    One pass over *df* without a shuffle (``mapInArrow``), P summaries collected and
    merged on the driver: O(n) updates on the executors, O(P s) on the driver.
    """
    spec = SummarySpec(
        kind,
        to_micros(half_life, "half_life"),
        k,
        tuple(float(q) for q in quantiles),
        float(eps),
        _as_of_micros(as_of),
    ).check()
    fields = {f.name: f.dataType for f in df.schema.fields}
    for name in (time, value):
        if name not in fields:
            raise ArgumentError(f"no column {name!r} in the DataFrame (columns: {sorted(fields)})")
    if not isinstance(fields[time], T.TimestampType | T.TimestampNTZType):
        raise ArgumentError(
            f"the event time {time!r} is {fields[time].simpleString()}, not a timestamp; cast "
            f"it first (F.col({time!r}).cast('timestamp'))"
        )

    def per_partition(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        part = summarize(batches, time, value, spec)
        yield pa.record_batch(
            [
                pa.array([part.summary], pa.binary()),
                pa.array([part.rows], pa.int64()),
                pa.array([json.dumps(part.rejects, sort_keys=True)], pa.string()),
            ],
            schema=_ARROW,
        )

    rows = df.select(time, value).mapInArrow(per_partition, schema=_SCHEMA).collect()
    parts = [Part(r["summary"], r["rows"], json.loads(r["rejects"])) for r in rows]
    return merge_parts(spec, parts)
