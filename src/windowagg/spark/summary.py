"""A whole-stream (all keys) decayed summary on Spark: exact decayed heavy hitters by Spark's
own aggregation, or one summary per partition, merged.

=================  ==========================================================================
methods            ``"exact"``: top_k's default (values of atomic types): Spark computes every
                   value's decayed weight, no Python worker, error 0 (:func:`_exact_top_k`);
                   ``"summary"``: quantiles (an exact quantile would sort every row), and
                   top_k on request: the rows below
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
                   quantiles' ranks within ``eps D`` (docs/decay.md); ``"exact"``: 0 (float
                   sums; -0.0 and 0.0 are one value there, as Spark groups them)
space              ``"summary"``: the summaries; ``"exact"``: Spark's aggregation state, one
                   partial sum per value and bucket of 512 half-lives (spilled as Spark does)
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
    method: str | None = None,
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
    method
        ``"exact"`` (top_k's default where the value column is a number, text, bytes, a
        bool, a date or a decimal): every value's decayed weight computed by one Spark
        aggregation, no Python worker, error 0; ``"summary"`` (quantiles', and top_k's for
        other types): one mergeable summary per partition through ``mapInArrow``, with
        the summaries' bounds. ``Summary.method`` says which answered.

    Returns
    -------
    Summary
        ``answer`` (top_k: ``[(value, weight), ...]`` heaviest first; quantiles:
        ``{phi: value}``), ``as_of``, ``total`` (the decayed weight D), ``error`` (``eps *
        D``; 0 when exact), ``rows`` counted, ``rejects`` (reason -> rows), the merged
        ``summary`` and ``method``.

    ``"summary"``: one pass over *df* without a shuffle (``mapInArrow``), P summaries
    collected and merged on the driver: O(n) updates on the executors, O(P s) on the
    driver. ``"exact"``: one aggregation by (value, time bucket) with a shuffle of its
    partial sums, then two small ones over its result (:func:`_exact_top_k`).
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

    method = _method(method, spec.kind, fields[value])
    if method == "exact":
        return _exact_top_k(df, time, value, spec, isinstance(fields[time], T.TimestampNTZType))

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


#: The value types whose Spark values are the keys ``summarize`` makes of their Arrow values
#: (``_keys``): an exact top_k answers them as the summary path does
_EXACT_TYPES = (
    T.IntegralType,
    T.StringType,
    T.BinaryType,
    T.BooleanType,
    T.FloatType,
    T.DoubleType,
    T.DateType,
    T.DecimalType,
)
#: A time bucket of the exact top_k spans 512 half-lives: a weight relative to its bucket's
#: start is in [1, 2^512], and a sum of 2^31 of them stays finite
_BUCKET_HALF_LIVES = 512
#: Below every time windowagg reads (years 0001-9999 are within +-2^58 microseconds): the
#: exact top_k's rejected rows are grouped under _CODE + 1, 2, 3 instead of a bucket start
_CODE = -(2**63)


def _method(method: str | None, kind: str, value_type: Any) -> str:
    """The method answering: *method* checked, or the default of *kind* for *value_type*
    (the module docstring). O(1)."""
    if method is None:
        exact = kind == "top_k" and isinstance(value_type, _EXACT_TYPES)
        return "exact" if exact else "summary"
    if method not in ("exact", "summary"):
        raise ArgumentError(f"method={method!r} is not 'exact' or 'summary'")
    if method == "exact" and kind != "top_k":
        raise ArgumentError(
            "method='exact' answers kind='top_k' only; decayed quantiles over the whole "
            "stream are answered by the summary (method='summary', the default)"
        )
    if method == "exact" and not isinstance(value_type, _EXACT_TYPES):
        raise ArgumentError(
            f"method='exact' takes a value column of numbers, text, bytes, bools, dates or "
            f"decimals, not {value_type.simpleString()}; use method='summary'"
        )
    return method


def _micros(df: DataFrame, time: str, naive: bool) -> Any:
    """The event time as int microseconds since the epoch, as ``summarize`` reads it from
    Arrow: a timestamp's instant, a ``timestamp_ntz``'s wall clock read as UTC (from its
    parts: a cast through the session's time zone would shift it). O(1) (a column)."""
    from pyspark.sql import functions as F

    c = df[time]
    if not naive:
        return F.unix_micros(c)
    return (
        F.unix_date(c.cast("date")).cast("long") * F.lit(86_400_000_000)
        + F.hour(c).cast("long") * F.lit(3_600_000_000)
        + F.minute(c).cast("long") * F.lit(60_000_000)
        + (F.extract(F.lit("SECOND"), c) * F.lit(1_000_000)).cast("long")
    )


def _exact_top_k(df: DataFrame, time: str, value: str, spec: SummarySpec, naive: bool) -> Summary:
    """``decayed_summary(kind="top_k", method="exact")``: each value's decayed weight as of
    ``as_of`` (default: the newest event), ``sum 2^-((as_of - t_i) / h)``, by Spark alone.

    One aggregation by (reject reason, value, bucket of ``512 h``) sums each row's weight
    relative to its bucket's start (in [1, 2^512]: nothing overflows, whatever the span)
    and keeps each group's rows and newest time; cached, it gives the rejects, the rows
    and the newest time (one small aggregation), then each value's weight as of ``as_of``
    (its buckets' sums scaled by ``2^-((as_of - start) / h)``), the heaviest
    ``max(k, ceil(1/eps)) + 1`` and the total (one more). The answer and the ``summary``
    (:meth:`ExpDecaySpaceSaving.from_weights`: the heaviest held exactly, the floor the
    next weight) are exact up to float rounding: ``error`` is 0. O(n) on the executors,
    O(values x buckets) after the first aggregation."""
    import math

    from pyspark.sql import functions as F

    from windowagg.decayed_summary import _FLOAT, _TEXT, answer_of
    from windowagg.sketches.space_saving import ExpDecaySpaceSaving

    h = spec.half_life
    span = _BUCKET_HALF_LIVES * h
    t = _micros(df, time, naive)
    # the group key: (value, bucket start) of a counted row, (null, a code below every
    # time: -2^63 + 1, 2, 3) of a rejected one: no text column in the key
    reasons = {_CODE + 1: "null event time", _CODE + 2: f"null value in {value!r}"}
    code = F.when(df[time].isNull(), F.lit(_CODE + 1)).when(df[value].isNull(), F.lit(_CODE + 2))
    if spec.as_of is not None:
        reasons[_CODE + 3] = "event time after as_of"
        code = code.when(t > F.lit(spec.as_of), F.lit(_CODE + 3))
    start = t - F.pmod(t, F.lit(span))
    ln2_h = F.lit(math.log(2.0) / h)
    groups = (
        df.select(
            t.alias("t"),
            F.when(code.isNull(), df[value]).alias("x"),
            F.coalesce(code.cast("long"), start).alias("b"),
            F.when(code.isNull(), F.exp((t - start) * ln2_h)).alias("w"),  # in [1, 2^512]
        )
        .groupBy("x", "b")
        .agg(
            F.sum("w").alias("s"),
            F.count(F.lit(1)).alias("n"),
            F.max("t").alias("newest"),
        )
        .cache()
    )
    ok = F.col("b") > F.lit(_CODE + 3)  # a bucket start, not a reject's code
    good = groups.where(ok)
    if spec.as_of is None:  # as of the newest event: one row joined to every group
        good = good.crossJoin(good.agg(F.max("newest").alias("at")))
        at: Any = F.col("at")
    else:
        at = F.lit(spec.as_of)
    weights = good.groupBy("x").agg(
        F.sum(F.col("s") * F.exp((F.col("b") - at) * ln2_h)).alias("w"), F.max(at).alias("at")
    )
    held = max(spec.k, math.ceil(1.0 / spec.eps))
    parts = [  # one job: the heaviest, the total, then the rows counted and rejected by code
        weights.orderBy(F.desc("w"), F.asc("x")).limit(held + 1).withColumn("part", F.lit(0)),
        weights.agg(F.sum("w").alias("w"), F.max("at").alias("at")).withColumn("part", F.lit(1)),
        groups.groupBy(F.when(ok, F.lit(None)).otherwise(F.col("b")).alias("code"))
        .agg(F.sum("n").alias("n"))
        .withColumn("part", F.lit(2)),
    ]
    try:
        both = parts[0].unionByName(parts[1], allowMissingColumns=True)
        got = both.unionByName(parts[2], allowMissingColumns=True).collect()
    finally:
        groups.unpersist()

    top = [r for r in got if r["part"] == 0]
    rejects = {reasons[r["code"]]: int(r["n"]) for r in got if r["part"] == 2 and r["code"]}
    counted = sum(int(r["n"]) for r in got if r["part"] == 2 and r["code"] is None)
    if not counted:
        return answer_of(None, spec, 0, rejects)._replace(method="exact")
    (total_row,) = [r for r in got if r["part"] == 1]
    total, at_us = float(total_row["w"]), int(total_row["at"])

    def key(x: Any) -> Any:  # summarize's _keys, from a Spark value
        if isinstance(x, bool) or not isinstance(x, (int, float, bytes, bytearray)):
            return _TEXT + str(x)
        if isinstance(x, float):
            return _FLOAT + repr(x)
        return bytes(x) if isinstance(x, bytearray) else x

    lam = math.log(2.0) / h
    pairs = [(key(r["x"]), float(r["w"])) for r in top]
    s = ExpDecaySpaceSaving.from_weights(pairs, max(total, 0.0), at_us, k=held, lam=lam)
    return answer_of(s, spec, counted, rejects)._replace(error=0.0, method="exact")
