"""Emission: window results (one key's, or many keys' end to end) as typed columns.

``start`` / ``end`` stay int64 (the caller's time unit); each aggregation becomes an int64
array (``bigint``), a float64 array (``double``; an empty answer, ``None``, becomes NaN)
or a list (any other type, e.g. a user monoid's tuples). O(windows) per column.

>>> import numpy as np
>>> from windowagg.windows.engine.assign import assign
>>> from windowagg.windows.engine.shapes import Shape
>>> from windowagg.aggs import parse_aggs
>>> w = assign(Shape(size=10, slide=10), np.array([1, 12]))
>>> c = columns(w, {"count": [1, 1], "max_v": [4.0, None]}, parse_aggs(["count", "max(v)"]))
>>> c["end"].tolist(), c["count"].dtype.name, c["max_v"].tolist()
([10, 20], 'int64', [4.0, nan])
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from windowagg.windows.engine.assign import Windows

__all__ = ["columns"]


def columns(
    w: Windows, results: Mapping[str, Sequence[Any]], aggs: Sequence[Any] | None
) -> dict[str, Any]:
    """``{"start", "end", alias...}`` from :func:`~windowagg.windows.engine.state.evaluate`.

    *aggs* gives each alias its output type (``Agg.dtype``); without it the columns are
    returned as computed.
    """
    out: dict[str, Any] = {
        "start": np.asarray(w.start, np.int64),
        "end": np.asarray(w.end, np.int64),
    }
    dtypes = {a.alias: getattr(a, "dtype", None) for a in aggs} if aggs is not None else {}
    for alias, col in results.items():
        dtype = dtypes.get(alias)
        if isinstance(col, np.ndarray):
            out[alias] = col.astype(np.int64) if dtype == "bigint" else col
        elif dtype == "bigint":
            out[alias] = np.asarray(col, dtype=np.int64)
        elif dtype == "double":
            out[alias] = np.asarray([np.nan if v is None else v for v in col], dtype=np.float64)
        else:
            out[alias] = list(col)
    return out
