"""One windowing engine for every window shape, over the aggregators and their array verbs.

=================  ==========================================================================
admission          :mod:`.admission` — non-finite values and late events refused, with a
                   reason, by position (identity); events sorted by time
watermark clock    :mod:`.clock` — per-key event-time watermark and lateness bound
assignment         :mod:`.assign` — hopping/tumbling, per-event ``(t - size, t]``, count
                   (``rows``/``every``) and session (``gap``) windows as slices of the
                   sorted events (and key ranges for an out-of-order aggregator)
state              :mod:`.state` — one FIFO aggregator per aggregation driven by its
                   ``slide`` verb over the sorted events (every window a new event opens
                   or that only lost events), the rest by insert/evict/query per window;
                   one ``OrderStatistics`` per column for its exact quantiles
                   (:mod:`.ranks`)
emission           :mod:`.emit` — typed columns per key
per key            :func:`window_key` (:mod:`.core`) — the function every front end calls
streaming          :class:`~.stream.KeyStream` (:mod:`.stream`) — one key's state across
                   micro-batches (event chunks + metadata as deltas), emitting closed
                   windows and revisions through the same admission, assignment, state
=================  ==========================================================================

See ``docs/engine.md`` for the data path.

>>> import numpy as np
>>> from windowagg.spark.spec import parse_aggs
>>> r = window_key(np.array([0, 4, 9]), {"v": np.array([1.0, 3.0, 2.0])},
...                parse_aggs(["sum(v)", "p50(v)"]), Shape(size=5))
>>> r.columns["sum_v"], r.columns["p50_v"].tolist()
(array([1., 4., 2.]), [1.0, 1.0, 2.0])
"""

from __future__ import annotations

from windowagg.windows.engine.admission import Admitted, admit
from windowagg.windows.engine.assign import Shape, Windows, assign
from windowagg.windows.engine.clock import WatermarkClock
from windowagg.windows.engine.core import KeyResult, window_key
from windowagg.windows.engine.state import Plan, plan, quantile_fraction
from windowagg.windows.engine.stream import KeyStream

__all__ = [
    "Admitted",
    "KeyResult",
    "KeyStream",
    "Plan",
    "Shape",
    "WatermarkClock",
    "Windows",
    "admit",
    "assign",
    "plan",
    "quantile_fraction",
    "window_key",
]
