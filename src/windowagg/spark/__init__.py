"""windowagg on PySpark: batch and streaming sliding windows per key (optional extra).

Install with ``pip install 'windowagg[spark]'``. Importing :mod:`windowagg` never imports
pyspark; this package imports it only when one of its Spark entry points is used, and
raises :class:`~windowagg.errors.MissingExtraError` (an ``ImportError``) naming the extra
when pyspark, pandas or pyarrow is missing.

Entry points
------------
``window_agg(df, keys, time, aggs, size=, slide=)``
    batch, per key, through ``repartition(keys).mapInArrow``: the windows engine, as
    ``windowagg.pandas.window_agg`` (:mod:`windowagg.spark.batch`).
``stream_window_agg(sdf, keys, time, aggs, size=, slide=, api=)``
    Structured Streaming through ``transformWithStateInPandas`` (RocksDB state store) or
    ``applyInPandasWithState``; state is the windows' versioned codec bytes
    (:mod:`windowagg.spark.streaming`).
``decayed_summary(df, time, value, half_life=, kind="top_k"|"quantiles")``
    a whole-stream (all keys) decayed summary: one mergeable summary per partition
    (``mapInArrow``, codec bytes), merged on the driver (:mod:`windowagg.spark.summary`).
``check_checkpoint(location)``
    whether windowagg can restart a streaming checkpoint, and why not, before Spark
    refuses it in its own words (:mod:`windowagg.spark.checkpoint`).
``session()``
    a SparkSession configured for both (:func:`windowagg.spark.session`; the code lives in
    the private module ``windowagg.spark._session``, so that no submodule named
    ``session`` can shadow the function).

Nothing else lives here: the aggregation vocabulary (:mod:`windowagg.aggs`), row validation
and rejects (:mod:`windowagg.rejects`) and the engine (:mod:`windowagg.windows.engine`,
through :mod:`windowagg.pandas`) are the library's, need no pyspark and run without Spark.
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = [
    "WindowAgg",
    "WindowAggProcessor",
    "check_checkpoint",
    "decayed_summary",
    "session",
    "split",
    "stream_window_agg",
    "window_agg",
]

_WHERE = {
    "WindowAgg": "windowagg.spark.batch",
    "window_agg": "windowagg.spark.batch",
    "split": "windowagg.spark.batch",
    "stream_window_agg": "windowagg.spark.streaming",
    "WindowAggProcessor": "windowagg.spark.streaming",
    "session": "windowagg.spark._session",
    "decayed_summary": "windowagg.spark.summary",
    "check_checkpoint": "windowagg.spark.checkpoint",
}


def __getattr__(name: str) -> Any:
    """Import the Spark entry points lazily (pyspark loads only when one is used)."""
    if name in _WHERE:
        module = importlib.import_module(_WHERE[name])
        value = getattr(module, name)
        globals()[name] = value  # later lookups skip __getattr__
        return value
    raise AttributeError(f"module 'windowagg.spark' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*__all__, "batch", "checkpoint", "streaming", "summary"])
