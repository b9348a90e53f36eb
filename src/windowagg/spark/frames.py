"""Row validation under every front end: a frame in, good rows and rejects out.

No pyspark here: the Spark batch adapter (through ``windowagg.pandas.frame_windows``),
Spark streaming (``windowagg.spark.streaming``) and ``windowagg.pandas.window_agg`` all
validate rows with :func:`validate`, and it runs (and is tested) without Spark.

Bad input is never dropped silently. Every input row either contributes to the windows or
comes out in the *rejects* frame with a reason:

==========================  ===========================================================
reason (prefix)             when
==========================  ===========================================================
``malformed record``        the reader flagged the row (a non-null ``_corrupt_record``)
``null key``                a key column is null
``null timestamp``          the event time is null / NaT (e.g. a cancelled flight)
``NaN timestamp``           a numeric event time is NaN or infinite
``unparsable timestamp``    a text event time is not ISO 8601
``timestamp out of range``  an event time outside the years 0001-9999 (Spark's range;
                            e.g. an epoch number past int64 microseconds): never wrapped
``mixed-type timestamp``    the value's type differs from the column's majority type
``null value``              a value column used by an aggregation is null
``not a number``            a value column holds text that is not a number
``bad_value``               a value the aggregation refuses: a non-finite number (NaN,
                            ``inf``, ``-inf``, in a numeric column or as text) in a
                            value column (``bad_value: non-finite value in 'x': inf``),
                            or a value whose monoid ``lift`` raised (``bad_value:
                            ValueError: ...``, the monoid's own error text)
``late``                    older than the key's watermark minus the allowed lateness
                            (streaming; batch with lateness arguments) (``late:
                            2013-02-04T17:59:00Z < lateness bound 2013-02-04T18:00:00Z``,
                            ISO times in UTC, on every front end)
``in no window``            (the engine) a row no window holds: hopping windows with
                            ``size < slide``, count windows' last events or, with
                            ``rows < every``, the events between them (docs/engine.md)
==========================  ===========================================================

Each reject carries the original row (``row``): one flat JSON object of the input's
columns (timestamps as ISO 8601 in UTC with their full precision).

Windows are not computed here: every front end runs the engine
(:mod:`windowagg.windows.engine`) on the rows :func:`validate` lets through.

Examples
--------
>>> import pandas as pd
>>> pdf = pd.DataFrame({"k": ["a", "a", None], "t": ["2024-01-01T00:00:05", "soon", 3],
...                     "v": [1.0, 3.0, 9.0]})
>>> good, micros, values, rej = validate(pdf, ["k"], "t", ["v"])
>>> good.tolist(), rej["reason"].tolist()
([True, False, False], ["unparsable timestamp 'soon'", 'null key k'])
>>> rej["row"].tolist()[0]
'{"k": "a", "t": "soon", "v": 3.0}'
"""

from __future__ import annotations

from collections.abc import Sequence

from windowagg.spark.rejects import (
    CORRUPT_COLUMN,
    REJECT_COLUMNS,
    ROW_COLUMN,
    parse_times,
    validate,
)
from windowagg.spark.spec import Agg

__all__ = [
    "CORRUPT_COLUMN",
    "REJECT_COLUMNS",
    "ROW_COLUMN",
    "parse_times",
    "validate",
    "value_columns",
]


def value_columns(aggs: Sequence[Agg]) -> list[str]:
    """The distinct input columns the aggregations read, in first-use order."""
    return list(dict.fromkeys(a.column for a in aggs if a.column is not None))
