"""The ``transformWithStateInPandas`` handler's own CPU per micro-batch, without Spark.

``WindowAggProcessor.handleInputRows`` fed as Spark's worker feeds it, over a dict standing
in for each key's ``MapState`` (the same calls: one scan and one ``updateValue`` per key and
micro-batch on this query, counted and printed): the data of
:mod:`benchmarks.bench_spark_stream` (``write_files``'s generator, 100 keys), hopping 1 hour
/ 1 minute, max, sum, count and exact p95, micro-batches of ``--batch`` events grouped by
key as Spark groups them. Every key's state is restored from its rows every micro-batch, as
on Spark (the in-process ``stream_state`` benchmark keeps its ``KeyStream``s decoded, so it
cannot see what a restore costs). Printed: CPU per micro-batch (median and mean after
``--skip`` untimed ones), the state calls and bytes per micro-batch, and a hash of every
output frame and of every state row written (equal across commits that answer alike and
write the same bytes). ``--profile FILE``: cProfile of the
timed micro-batches (cumulative and internal time printed).

Run: ``python -m benchmarks.probe_tws_handler --events 200000 --skip 5`` (with the Spark
extra installed: the processor imports PySpark).
"""

from __future__ import annotations

import argparse
import cProfile
import hashlib
import pstats
import sys
import time
from collections.abc import Iterator
from typing import Any

import numpy as np
import pandas as pd

KEYS = 100


class _Calls:
    """State calls and bytes, by call name."""

    def __init__(self) -> None:
        self.calls: dict[str, int] = {}
        self.bytes: dict[str, int] = {}
        self.rows = hashlib.sha256()  # every state row written, in order

    def add(self, name: str, n: int = 1, size: int = 0) -> None:
        self.calls[name] = self.calls.get(name, 0) + n
        self.bytes[name] = self.bytes.get(name, 0) + size


class _MapState:
    """One key's ``MapState`` (``bigint`` -> ``binary``) as a dict, counting its calls."""

    def __init__(self, count: _Calls) -> None:
        self.rows: dict[int, bytes] = {}
        self._count = count

    def iterator(self) -> Iterator[tuple[tuple[int], tuple[bytes]]]:
        self._count.add("scan", 1, sum(len(v) for v in self.rows.values()))
        return iter([((k,), (v,)) for k, v in self.rows.items()])

    def keys(self) -> Iterator[tuple[int]]:
        self._count.add("keys")
        return iter([(k,) for k in self.rows])

    def getValue(self, k: tuple[int]) -> tuple[bytes] | None:
        self._count.add("getValue")
        v = self.rows.get(k[0])
        return None if v is None else (v,)

    def containsKey(self, k: tuple[int]) -> bool:
        self._count.add("containsKey")
        return k[0] in self.rows

    def updateValue(self, k: tuple[int], v: tuple[bytes]) -> None:
        self._count.add("updateValue", 1, len(v[0]))
        self._count.rows.update(k[0].to_bytes(8, "little", signed=True) + v[0])
        self.rows[k[0]] = v[0]

    def removeKey(self, k: tuple[int]) -> None:
        self._count.add("removeKey")
        self.rows.pop(k[0], None)

    def clear(self) -> None:
        self.rows.clear()


class _ValueState:
    """The layout-1 ``ValueState`` (never written: always empty)."""

    def get(self) -> None:
        return None

    def clear(self) -> None:
        pass


class _Handle:
    """A ``StatefulProcessorHandle`` whose ``MapState`` is the current key's."""

    def __init__(self, count: _Calls) -> None:
        self.states: dict[Any, _MapState] = {}
        self.key: Any = None
        self._count = count

    def getValueState(self, name: str, schema: Any) -> _ValueState:
        return _ValueState()

    def getMapState(self, name: str, key_schema: Any, value_schema: Any) -> Any:
        handle = self

        class Current:
            def __getattr__(self, attr: str) -> Any:
                key = handle.key
                if key not in handle.states:
                    handle.states[key] = _MapState(handle._count)
                return getattr(handle.states[key], attr)

        return Current()

    def registerTimer(self, ms: int) -> None:
        pass


class _TimerValues:
    def getCurrentWatermarkInMs(self) -> int:
        return -1  # timers off: the output leaves per key


def events(n: int, seed: int = 7) -> pd.DataFrame:
    """:func:`benchmarks.bench_spark_stream.write_files`'s events (arrival order)."""
    rng = np.random.default_rng(seed)
    arrival = np.sort(rng.uniform(0, n * 10 / KEYS, n))
    t = np.round(arrival + rng.uniform(-20, 20, n), 3)
    return pd.DataFrame(
        {
            "key": rng.integers(0, KEYS, n).astype("int32"),
            "event_time": pd.to_datetime(
                (t * 1e6).astype("int64") + pd.Timestamp("2024-01-01").value // 1000, unit="us"
            ),
            "value": rng.gamma(2.0, 10.0, n),
        }
    )


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--events", type=int, default=200_000)
    ap.add_argument("--batch", type=int, default=10_000)
    ap.add_argument("--skip", type=int, default=5, help="micro-batches run untimed first")
    ap.add_argument("--profile", default=None, help="cProfile the timed micro-batches here")
    args = ap.parse_args(argv)
    from windowagg.call import parse_call
    from windowagg.rejects import null_flag
    from windowagg.spark.streaming import NULL_KEYS_COLUMN, WindowAggProcessor

    aggs = ["max(value)", "sum(value)", "count", "p95(value)"]
    wc = parse_call(
        "key", "event_time", aggs, size="1 hour", slide="1 minute",
        max_out_of_orderness="30 seconds",
    )  # fmt: skip
    ooo, late = wc.lateness or (0, 0)
    pdf = events(args.events)
    pdf[null_flag("value")] = False
    pdf[NULL_KEYS_COLUMN] = 0
    proc = WindowAggProcessor(
        wc.keys, "event_time", wc.aggs, wc.shape, "us", columns=list(pdf.columns),
        max_out_of_orderness=ooo, allowed_lateness=late,
    )  # fmt: skip
    count = _Calls()
    handle = _Handle(count)
    proc.init(handle)  # type: ignore[arg-type]
    tv = _TimerValues()
    prof = cProfile.Profile() if args.profile else None
    out: list[pd.DataFrame] = []
    cpu: list[float] = []
    for j, lo in enumerate(range(0, len(pdf), args.batch)):
        mb = pdf.iloc[lo : lo + args.batch]
        groups = [(k, g.reset_index(drop=True)) for k, g in mb.groupby(["key", NULL_KEYS_COLUMN])]
        if j == args.skip:
            count.calls.clear()
            count.bytes.clear()
        t0 = time.process_time()
        if prof is not None and j >= args.skip:
            prof.enable()
        for k, g in groups:
            handle.key = k
            out.extend(proc.handleInputRows(tuple(int(x) for x in k), iter([g]), tv))
        if prof is not None:
            prof.disable()
        cpu.append(time.process_time() - t0)
    timed = np.array(cpu[args.skip :])
    if not len(timed):
        ap.error("--skip leaves no micro-batch to time")
    frames = pd.concat([f for f in out if len(f)], ignore_index=True).astype(str)
    digest = hashlib.sha256(pd.util.hash_pandas_object(frames, index=False).values.tobytes())
    print(
        f"{args.events:,} events, {KEYS} keys, micro-batches of {args.batch:,}: handler CPU per "
        f"micro-batch median {np.median(timed) * 1000:.0f} ms, mean {timed.mean() * 1000:.0f} "
        f"ms over {len(timed)}; output rows {len(frames)}, hash {digest.hexdigest()[:16]}"
    )
    n = len(timed)
    print("state calls per micro-batch:", {k: round(v / n, 1) for k, v in count.calls.items()})
    print("state bytes per micro-batch:", {k: round(v / n) for k, v in count.bytes.items()})
    print(f"state rows written (every micro-batch, in order): hash {count.rows.hexdigest()[:16]}")
    if prof is not None:
        prof.dump_stats(args.profile)
        stats = pstats.Stats(args.profile)
        stats.sort_stats("cumulative").print_stats(40)
        stats.sort_stats("tottime").print_stats(25)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
