"""A whole-stream (all keys) decayed summary from Arrow batches: one mergeable summary per
partition, merged into one answer (the door-free half of ``windowagg.spark.decayed_summary``).

==================  ==========================================================================
kinds               ``"top_k"``: the k heaviest values by exponentially decayed count
                    (``ExpDecaySpaceSaving``, Theorem 4); ``"quantiles"``: decayed quantiles
                    of a numeric column (``ExpDecayQDigest``, Theorem 3)
per partition       :func:`summarize` folds its Arrow batches into one summary and returns
                    the summary's codec bytes (``to_bytes``: the versioned windowagg codec,
                    no pickle), the rows it counted and the rejected rows' reasons
merge               :func:`merge_parts` rebuilds each summary (``from_bytes``) and merges them
                    pairwise in a balanced tree (log2 P rounds for P partitions); the
                    summaries' merges keep their bounds with D = the union's decayed total
answer              :func:`answer_of` (called by :func:`merge_parts`), as of ``as_of`` (default: the newest event)
error               top_k: a reported weight w(x) has ``f(x) <= w(x) <= f(x) + eps D``; a
                    value not reported ``f <= max(the k-th weight, eps D)``; quantiles:
                    ``W(< q) <= (phi + eps) D``, ``W(<= q) >= (phi - eps) D``
time                O(n) updates per partition (O(1) amortized each), O(P s) to merge
space               one summary per partition: ceil(1/eps) counters, or <= 12 L / eps + 1
                    q-digest nodes (L = 64)
rows                every row is counted or rejected with a reason: a null event time, a
                    null value, a non-finite number (quantiles), an event after ``as_of``
paper               Cormode, Korn, Tirthapura 2007, sections 4.1 and 6 (mergeability)
==================  ==========================================================================

Examples
--------
>>> import pyarrow as pa
>>> spec = SummarySpec("top_k", half_life=3_600_000_000, k=2)
>>> batch = pa.record_batch({"t": pa.array([0, 3_600_000_000, 3_600_000_000], pa.timestamp("us")),
...                          "o": ["JFK", "EWR", "EWR"]})
>>> part = summarize([batch], "t", "o", spec)
>>> part.rows, part.rejects
(3, {})
>>> r = merge_parts(spec, [part])
>>> r.answer, r.total
([('EWR', 2.0), ('JFK', 0.5)], 2.5)
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple

from windowagg.errors import ArgumentError
from windowagg.sketches.decayed_aggs import DEFAULT_EPS
from windowagg.sketches.exp_qdigest import ExpDecayQDigest
from windowagg.sketches.mapping import FloatOrderMapper
from windowagg.sketches.space_saving import ExpDecaySpaceSaving

__all__ = ["KINDS", "Part", "Summary", "SummarySpec", "answer_of", "merge_parts", "summarize"]

#: What :func:`summarize` can build.
KINDS = ("top_k", "quantiles")
_MAPPER = FloatOrderMapper()
# top_k keys travel through the codec (int, str, bytes): floats as "f:" + repr, text as
# "s:" + text, ints and bytes as they are; answer_of reads them back
_FLOAT, _TEXT = "f:", "s:"


class SummarySpec(NamedTuple):
    """What to summarise: *kind* (``"top_k"`` or ``"quantiles"``), the half-life in
    microseconds, ``k`` (top_k), ``quantiles`` (fractions in (0, 1)), ``eps`` and an
    optional ``as_of`` (int microseconds; events after it are rejected)."""

    kind: str
    half_life: int
    k: int = 10
    quantiles: tuple[float, ...] = (0.5, 0.9, 0.99)
    eps: float = DEFAULT_EPS
    as_of: int | None = None

    def check(self) -> SummarySpec:
        """This spec, or an ``ArgumentError`` saying what to give. O(len(quantiles))."""
        if self.kind not in KINDS:
            raise ArgumentError(
                f"kind={self.kind!r} is not one of {KINDS}; give 'top_k' or 'quantiles'"
            )
        if not (isinstance(self.half_life, int) and self.half_life > 0):
            raise ArgumentError(
                f"half_life={self.half_life!r} must be a positive duration, e.g. '1 day'"
            )
        if isinstance(self.k, bool) or not isinstance(self.k, int) or self.k < 1:
            raise ArgumentError(f"k={self.k!r} must be a whole number >= 1, e.g. k=10")
        if not self.quantiles or not all(0 < q < 1 for q in self.quantiles):
            raise ArgumentError(
                f"quantiles={self.quantiles!r} must be fractions strictly between 0 and 1, "
                "e.g. (0.5, 0.99)"
            )
        if not 0 < self.eps < 1:
            raise ArgumentError(f"eps={self.eps!r} must be a number in (0, 1), e.g. 0.01")
        return self

    def new(self) -> Any:
        """An empty summary of this spec. O(1)."""
        lam = math.log(2.0) / self.half_life
        if self.kind == "top_k":
            return ExpDecaySpaceSaving(lam=lam, k=max(self.k, math.ceil(1.0 / self.eps)))
        return ExpDecayQDigest(_MAPPER.universe, self.eps, lam)

    def load(self, data: bytes) -> Any:
        """A summary from its codec bytes. O(s)."""
        cls = ExpDecaySpaceSaving if self.kind == "top_k" else ExpDecayQDigest
        return cls.from_bytes(data)


class Part(NamedTuple):
    """One partition's summary: its codec bytes (None: no row counted), the rows counted,
    and ``reason -> rows`` of the rejected ones."""

    summary: bytes | None
    rows: int
    rejects: dict[str, int]


def summarize(batches: Iterable[Any], time: str, value: str, spec: SummarySpec) -> Part:
    """One summary of the rows of *batches* (``pyarrow.RecordBatch``; *time* a timestamp
    column, *value* the column summarised). O(n) updates.

    >>> import pyarrow as pa
    >>> b = pa.record_batch({"t": pa.array([0, None], pa.timestamp("us")), "v": [1.5, 2.0]})
    >>> summarize([b], "t", "v", SummarySpec("quantiles", 60_000_000)).rejects
    {'null event time': 1}
    """
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    from windowagg.rejects import non_finite_reason

    spec.check()
    s = spec.new()
    rejects: Counter[str] = Counter()
    rows = 0
    for batch in batches:
        tcol, vcol = batch.column(time), batch.column(value)
        if not pa.types.is_timestamp(tcol.type):
            raise ArgumentError(
                f"the event time {time!r} is {tcol.type}, not a timestamp; cast it first "
                "(F.col(time).cast('timestamp'))"
            )
        if spec.kind == "quantiles" and _plain_quantiles(tcol, vcol, spec):
            # no null, no as_of, microseconds, numbers: nothing to reject but non-finite
            # values; the columns as numpy without a copy (float64 values, int64 times)
            f = np.asarray(vcol.cast(pa.float64()).to_numpy(), dtype=np.float64)
            if math.isfinite(float(f.min())) and math.isfinite(float(f.max())):
                t = tcol.view(pa.int64()).to_numpy()
                s.update_many(_MAPPER.to_keys(f), t.astype(np.float64))
                rows += len(f)
                continue
        t_null = np.asarray(tcol.is_null())
        t = np.asarray(pc.cast(tcol.cast(pa.timestamp("us")), pa.int64()).fill_null(0))
        v_null = np.asarray(vcol.is_null()) & ~t_null
        rejects["null event time"] += int(t_null.sum())
        rejects[f"null value in {value!r}"] += int(v_null.sum())
        ok = ~(t_null | v_null)
        if spec.as_of is not None:
            late = ok & (t > spec.as_of)
            rejects["event time after as_of"] += int(late.sum())
            ok &= ~late
        if spec.kind == "quantiles":
            if not (pa.types.is_integer(vcol.type) or pa.types.is_floating(vcol.type)):
                raise ArgumentError(
                    f"quantiles need a numeric column; {value!r} is {vcol.type} (use "
                    "kind='top_k' for categories)"
                )
            f = np.asarray(vcol.cast(pa.float64()).fill_null(0.0), dtype=np.float64)
            bad = ok & ~np.isfinite(f)
            for i in np.flatnonzero(bad):
                rejects[non_finite_reason(value, float(f[i]))] += 1
            ok &= ~bad
            if ok.any():
                s.update_many(_MAPPER.to_keys(f[ok]), t[ok].astype(np.float64))
        else:
            keys = _keys(vcol.filter(pa.array(ok)))
            update = s.update  # bound method: hot loop
            for x, ti in zip(keys, t[ok].tolist(), strict=True):
                update(x, ti)
        rows += int(ok.sum())
    return Part(s.to_bytes() if rows else None, rows, {r: c for r, c in rejects.items() if c})


def _plain_quantiles(tcol: Any, vcol: Any, spec: SummarySpec) -> bool:
    """Whether a quantiles batch takes :func:`summarize`'s plain path: no null time or
    value, no ``as_of``, times in microseconds (read as they are stored) and a numeric,
    non-empty value column. O(1)."""
    import pyarrow as pa

    return (
        spec.as_of is None
        and isinstance(tcol, pa.Array)
        and len(vcol) > 0
        and tcol.null_count == 0
        and vcol.null_count == 0
        and tcol.type.unit == "us"
        and (pa.types.is_floating(vcol.type) or pa.types.is_integer(vcol.type))
    )


def _keys(col: Any) -> list[Any]:
    """A column's values as Space-Saving keys (int, str or bytes for the codec): ints and
    bytes as they are, floats as ``"f:" + repr``, anything else as ``"s:" + text``; read
    back by :func:`answer_of`. O(n)."""
    import pyarrow as pa

    values: list[Any] = col.to_pylist()
    if pa.types.is_floating(col.type):
        return [_FLOAT + repr(float(x)) for x in values]
    if pa.types.is_integer(col.type) or pa.types.is_binary(col.type):
        return values
    return [_TEXT + str(x) for x in values]


def _value(x: Any) -> Any:
    """A Space-Saving key of :func:`_keys` as the column's value. O(1)."""
    if isinstance(x, str):
        return float(x[len(_FLOAT) :]) if x.startswith(_FLOAT) else x[len(_TEXT) :]
    return x


def merge_parts(spec: SummarySpec, parts: Sequence[Part]) -> Summary:
    """:func:`answer_of` the merge of *parts*: the summaries rebuilt from their codec bytes
    and merged pairwise in a balanced tree (log2 P rounds), rows and rejects summed.
    O(P s)."""
    level = [spec.load(p.summary) for p in parts if p.summary is not None]
    while len(level) > 1:
        nxt = []
        for i in range(0, len(level) - 1, 2):
            level[i].merge(level[i + 1])
            nxt.append(level[i])
        if len(level) % 2:
            nxt.append(level[-1])
        level = nxt
    rejects: Counter[str] = Counter()
    for p in parts:
        rejects.update(p.rejects)
    return answer_of(level[0] if level else None, spec, sum(p.rows for p in parts), dict(rejects))


class Summary(NamedTuple):
    """A whole-stream decayed summary's answer."""

    answer: Any
    """top_k: ``[(value, weight), ...]`` heaviest first; quantiles: ``{phi: value}``."""
    as_of: int | None
    """The time answered, int microseconds (None: no event)."""
    total: float
    """D: the decayed weight of every counted event as of ``as_of``."""
    error: float
    """The additive bound, ``eps * D`` (see the module docstring)."""
    rows: int
    rejects: dict[str, int]
    summary: Any
    """The merged sketch (``ExpDecaySpaceSaving`` or ``ExpDecayQDigest``), None if empty."""
    method: str = "summary"
    """What answered: ``"summary"`` (the sketches' bounds: ``error``) or ``"exact"``
    (``windowagg.spark.decayed_summary``'s top_k by a Spark aggregation: ``error`` 0)."""


def answer_of(
    s: Any, spec: SummarySpec, rows: int = 0, rejects: dict[str, int] | None = None
) -> Summary:
    """The answer of the merged summary *s* as of ``spec.as_of`` (default: its newest
    event). O(k log k) or O(s log s)."""
    rejects = rejects or {}
    if s is None or s.max_timestamp is None:
        empty: Any = [] if spec.kind == "top_k" else {q: None for q in spec.quantiles}
        return Summary(empty, spec.as_of, 0.0, 0.0, rows, rejects, None)
    at = spec.as_of if spec.as_of is not None else int(s.max_timestamp)
    total = s.decayed_count(at)
    if spec.kind == "top_k":
        pairs = sorted(s.heavy_hitters(0.0, at), key=lambda p: (-p[1], str(p[0])))[: spec.k]
        ans: Any = [(_value(x), w) for x, w in pairs]
        eps = 1.0 / s.k
    else:
        ans = {q: _MAPPER.to_value(s.quantile(q)) for q in spec.quantiles}
        eps = spec.eps
    return Summary(ans, at, total, eps * total, rows, rejects, s)


def parts_json(part: Part) -> str:
    """A :class:`Part`'s rejects as JSON text (the Spark side's column). O(reasons)."""
    return json.dumps(part.rejects, sort_keys=True)
