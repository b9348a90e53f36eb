"""A ``transformWithStateInPandas`` task's output, handed to Spark in few frames.

PySpark 4.3's TWS worker converts every frame a ``StatefulProcessor`` yields to Arrow on
its own (``PandasToArrowConversion.convert``: a pandas ``Series`` and a converter per
column), a fixed ~2.5 ms per frame for windowagg's 11-column packed rows, whatever their
size: with one frame per key that was ~0.25 s of a 100-key micro-batch, the largest cost
above Spark's own floor for the operator (issue 28's layers, benchmarks/results). So the
processor keeps each key's packed rows here and hands them over as one frame:

===============  ==========================================================================
when             after the task's last key: the processor runs in Spark's ``EventTime``
                 mode, and the first key that leaves output here registers an event-time
                 timer at the current watermark, which Spark fires in the same task after
                 every key's rows (``handleExpiredTimer``), where :meth:`Outbox.flush`
                 hands the frames over; earlier, from a key's own call, once
                 :data:`FLUSH_KEYS` keys wait (memory stays bounded by that)
no timers        a processor in ``timeMode="None"`` sees a watermark of -1: its rows go out
                 per key, as before (:meth:`Outbox.add` returns them)
loss             none: a task that ends with rows still waiting raises ``StateError`` in
                 ``close`` (Spark then fails the task and retries it from the last
                 committed state), never drops them
===============  ==========================================================================

>>> import pandas as pd
>>> class Handle:  # Spark's StatefulProcessorHandle, registering timers
...     def __init__(self): self.timers = []
...     def registerTimer(self, ms): self.timers.append(ms)
>>> h = Handle(); box = Outbox(h)
>>> box.add((1,), [pd.DataFrame({"k": [1], "reason": [None]})], 0), h.timers  # kept; the flush timer set
([], [0])
>>> box.add((2,), [pd.DataFrame({"k": [2], "reason": [None]})], 0), h.timers  # kept; no second timer
([], [0])
>>> [f["k"].tolist() for f in box.flush()], box.flush()
([[1, 2]], [])
>>> box.fired((2,), 0), box.fired((1,), 0), box.fired((1,), 0)  # the flush timer: once
(False, True, False)
>>> [f["k"].tolist() for f in Outbox(h).add((3,), [pd.DataFrame({"k": [3]})], -1)]
[[3]]
>>> late = pd.DataFrame({"k": [4, None], "reason": [None, "late"]})  # windows and a reject
>>> box.add((4,), [late], 0), box.add((5,), [pd.DataFrame({"k": [5], "reason": [None]})], 0)
([], [])
>>> [f["reason"].tolist() for f in box.flush()]  # the window rows, then those with rejects
[[None], [None, 'late']]
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd

from windowagg.errors import StateError

__all__ = ["FLUSH_KEYS", "Outbox"]

#: Keys whose output may wait before it is handed over from a key's own call
FLUSH_KEYS = 512


class Outbox:
    """One task's output frames, kept until :meth:`flush` (see the module docstring).

    *handle* is the task's ``StatefulProcessorHandle`` (its ``registerTimer``).
    """

    __slots__ = ("_frames", "_handle", "_keys", "_timer")

    def __init__(self, handle: Any) -> None:
        self._handle = handle
        self._frames: list[pd.DataFrame] = []
        self._keys = 0
        #: (key, expiry ms) of the flush timer this task registered, None before
        self._timer: tuple[tuple[Any, ...], int] | None = None

    def add(
        self, key: tuple[Any, ...], frames: Sequence[pd.DataFrame], watermark_ms: int
    ) -> list[pd.DataFrame]:
        """Keep *key*'s output *frames*; returns the frames to hand over now: all of them
        when there are no timers (*watermark_ms* < 0), every waiting one once
        :data:`FLUSH_KEYS` keys wait, else none. The first key that leaves frames here
        registers the flush timer at *watermark_ms*. O(frames)."""
        if watermark_ms < 0:
            return list(frames)
        if not frames:
            return []
        if self._timer is None:
            self._handle.registerTimer(watermark_ms)
            self._timer = (tuple(key), int(watermark_ms))
        self._frames += frames
        self._keys += 1
        return self.flush() if self._keys >= FLUSH_KEYS else []

    def fired(self, key: tuple[Any, ...], expiry_ms: int) -> bool:
        """Whether the expired timer (*key*, *expiry_ms*) is the flush timer :meth:`add`
        registered (it carries no deadline of the key's own); if so, the next key that
        leaves frames registers a new one. O(1)."""
        if self._timer is None or self._timer != (tuple(key), int(expiry_ms)):
            return False
        self._timer = None
        return True

    def flush(self) -> list[pd.DataFrame]:
        """The waiting frames as few frames (none if nothing waits): the one-row window
        frames (one pandas object block each) in one, the frames with rejects (typed
        columns) in another. O(rows)."""
        frames, self._frames, self._keys = self._frames, [], 0
        if len(frames) <= 1:
            return frames
        plain: list[pd.DataFrame] = []
        mixed: list[pd.DataFrame] = []
        for f in frames:
            # a key's windows are one row without a reason (packed.pack); read that cell
            # alone (a column Series and its isna per frame cost ~0.1 ms each)
            if len(f) == 1:
                one = bool(pd.isna(f.iat[0, f.columns.get_loc("reason")]))
            else:
                one = bool(f["reason"].isna().all())
            (plain if one else mixed).append(f)
        return [pd.concat(g, ignore_index=True) for g in (plain, mixed) if g]

    def close(self) -> None:
        """Refuse to end the task with output still waiting (it would be lost)."""
        if self._frames:
            n = sum(len(f) for f in self._frames)
            self._frames, self._keys = [], 0
            raise StateError(
                f"windowagg's transformWithStateInPandas operator: {n} output rows were "
                "still waiting when the task closed (the flush timer did not fire): the "
                "task fails so that Spark retries it; report this with the Spark version"
            )
