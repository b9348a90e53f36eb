"""One windowing engine for every window shape, over the aggregators and their array verbs.

=================  ==========================================================================
admission          :mod:`.admission` — non-finite values and late events refused, with a
                   reason, by position (identity); events sorted by (key,) time
watermark clock    :mod:`.clock` — per-key event-time watermark and lateness bound
shapes             :mod:`.shapes` — one class per window shape behind one protocol
                   (assignment, first window end, deadline, compaction bound, why a time
                   is in no window): what every layout and front end asks of a shape
assignment         :mod:`.assign` — hopping/tumbling, per-event ``(t - size, t]``, count
                   (``rows``/``every``) and session (``gap``) windows as slices of the
                   sorted events (and key ranges for an out-of-order aggregator), for
                   many keys in one pass
state              :mod:`.state` — one FIFO aggregator per aggregation driven by its
                   ``slide`` verb over the sorted events (every window a new event opens
                   or that only lost events), the rest by insert/evict/query per window;
                   one ``OrderStatistics`` per column for its exact quantiles
                   (:mod:`.ranks`)
emission           :mod:`.emit` — typed columns
batch              :func:`window_groups` (:mod:`.core`) — every key of a frame or a Spark
                   partition in one pass, the function every batch front end calls
                   (:func:`window_key` for one key)
streaming          :class:`~.stream.KeyStream` (:mod:`.stream`) — one key's state across
                   micro-batches (event chunks + metadata as deltas), emitting closed
                   windows and revisions through the same admission, assignment, state;
                   :class:`~.schedule.Schedule` (:mod:`.schedule`) — when a front end that
                   holds a key's arrivals (the object API) must feed them
=================  ==========================================================================

See ``docs/engine.md`` for the data path.

>>> import numpy as np
>>> from windowagg.aggs import parse_aggs
>>> r = window_key(np.array([0, 4, 9]), {"v": np.array([1.0, 3.0, 2.0])},
...                parse_aggs(["sum(v)", "p50(v)"]), Shape(size=5))
>>> r.columns["sum_v"], r.columns["p50_v"].tolist()
(array([1., 4., 2.]), [1.0, 1.0, 2.0])
"""

from __future__ import annotations

from windowagg.windows.engine.admission import Admitted, admit, admit_groups
from windowagg.windows.engine.assign import Windows, assign, assign_groups
from windowagg.windows.engine.clock import WatermarkClock
from windowagg.windows.engine.core import GroupsResult, KeyResult, window_groups, window_key
from windowagg.windows.engine.shapes import Shape
from windowagg.windows.engine.state import Plan, plan
from windowagg.windows.engine.stream import KeyStream

__all__ = [
    "Admitted",
    "GroupsResult",
    "KeyResult",
    "KeyStream",
    "Plan",
    "Shape",
    "WatermarkClock",
    "Windows",
    "admit",
    "admit_groups",
    "assign",
    "assign_groups",
    "plan",
    "window_groups",
    "window_key",
]
