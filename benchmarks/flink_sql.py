"""Flink SQL contenders for the streaming benchmarks, run in PyFlink's own interpreter.

PyFlink pins older pandas, pyarrow and py4j than windowagg's, so it lives in a virtual
environment of its own and this script imports nothing of windowagg's::

    python3 -m venv .venv-flink && .venv-flink/bin/pip install apache-flink
    .venv-flink/bin/python benchmarks/flink_sql.py --csv events.csv --query hop \\
        --state hashmap --repeats 3

The events file is CSV without a header: ``k`` (string), ``ts`` (int64 microseconds since the
epoch), ``v`` (double), in arrival order. Flink reads it as a bounded stream with an
event-time watermark ``ts - max_out_of_orderness`` (``--delay-s``) and runs:

``hop``   ``HOP`` window table function, ``size`` / ``slide`` seconds, ``MAX/SUM/COUNT/AVG``
          of ``v`` per key and window (windowagg's hopping ``window_agg``)
``over``  ``MAX(v), SUM(v), COUNT(*) OVER (PARTITION BY k ORDER BY rt RANGE BETWEEN
          INTERVAL size PRECEDING AND CURRENT ROW)`` (per-event trailing windows, emitted when
          the watermark passes each row; ``RANGE`` includes both ends, ``[t - size, t]``)

Rows go to Flink's ``blackhole`` sink (nothing is printed or collected), and the script
prints one JSON line per repetition: ``{"query", "state", "seconds", "rows"}`` where
``seconds`` is the job's wall time from submission to completion (the JVM and the table
environment are started before the clock starts) and ``rows`` the input row count.
``--count-output`` runs the query once more into a counting sink and adds ``output_rows``.
``--sample-mod M`` (``over`` only) runs it once more, untimed, and prints the output rows whose
``ts`` is a multiple of *M* as JSON lines ``{"sample": [k, ts, max, sum, count]}``, for
checking the answers against another engine.
"""

from __future__ import annotations

import argparse
import json
import os
import time


def _env(state: str, parallelism: int):  # type: ignore[no-untyped-def]
    from pyflink.table import EnvironmentSettings, TableEnvironment

    t_env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode())
    conf = t_env.get_config()
    conf.set("parallelism.default", str(parallelism))
    conf.set("state.backend.type", state)
    # emit window results as soon as the watermark passes (no mini-batching delay)
    conf.set("table.exec.source.idle-timeout", "1 s")
    return t_env


def _source(t_env, csv: str, delay_s: float) -> None:  # type: ignore[no-untyped-def]
    t_env.execute_sql("DROP TABLE IF EXISTS events")
    t_env.execute_sql(
        f"""
        CREATE TABLE events (
            k STRING,
            ts BIGINT,
            v DOUBLE,
            rt AS TO_TIMESTAMP_LTZ(ts / 1000, 3),
            WATERMARK FOR rt AS rt - INTERVAL '{delay_s:.3f}' SECOND
        ) WITH (
            'connector' = 'filesystem',
            'path' = '{os.path.abspath(csv)}',
            'format' = 'csv'
        )
        """
    )


def _interval(seconds: int) -> str:
    """A Flink SQL interval literal (a leading field has at most 2 digits by default, and
    Flink plans no leading precision above 3, so others are written ``DAY TO SECOND``:
    ``INTERVAL '0 02:46:40' DAY TO SECOND`` for 10,000 s)."""
    if seconds <= 0:
        raise SystemExit(f"an interval must be positive, got {seconds} s")
    for unit, n in (("DAY", 86_400), ("HOUR", 3_600), ("MINUTE", 60), ("SECOND", 1)):
        if seconds % n == 0 and seconds // n < 100:
            return f"INTERVAL '{seconds // n}' {unit}"
    d, rest = divmod(seconds, 86_400)
    if d >= 100:
        raise SystemExit(f"{seconds} s is 100 days or more: not a Flink SQL interval literal")
    h, rest = divmod(rest, 3_600)
    return f"INTERVAL '{d} {h:02d}:{rest // 60:02d}:{rest % 60:02d}' DAY TO SECOND"


def _query(name: str, size_s: int, slide_s: int) -> str:
    if name == "hop":
        return f"""
            SELECT k, window_start, window_end, MAX(v), SUM(v), COUNT(*), AVG(v)
            FROM TABLE(HOP(TABLE events, DESCRIPTOR(rt), {_interval(slide_s)},
                           {_interval(size_s)}))
            GROUP BY k, window_start, window_end
        """
    if name == "over":
        return f"""
            SELECT k, ts, MAX(v) OVER w, SUM(v) OVER w, COUNT(*) OVER w
            FROM events
            WINDOW w AS (PARTITION BY k ORDER BY rt
                         RANGE BETWEEN {_interval(size_s)} PRECEDING AND CURRENT ROW)
        """
    raise SystemExit(f"unknown query {name!r}: use hop or over")


def _sink(t_env, name: str, connector: str) -> str:  # type: ignore[no-untyped-def]
    t_env.execute_sql(f"DROP TABLE IF EXISTS {name}")
    if name.startswith("hop"):
        cols = (
            "k STRING, ws TIMESTAMP(3), we TIMESTAMP(3), mx DOUBLE, sm DOUBLE, n BIGINT, av DOUBLE"
        )
    else:
        cols = "k STRING, ts BIGINT, mx DOUBLE, sm DOUBLE, n BIGINT"
    t_env.execute_sql(f"CREATE TABLE {name} ({cols}) WITH ('connector' = '{connector}')")
    return name


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--csv", required=True)
    p.add_argument("--query", choices=["hop", "over"], required=True)
    p.add_argument("--state", choices=["hashmap", "rocksdb"], default="hashmap")
    p.add_argument("--size-s", type=int, default=600)
    p.add_argument("--slide-s", type=int, default=10)
    p.add_argument("--delay-s", type=float, default=5.0)
    p.add_argument("--parallelism", type=int, default=2)
    p.add_argument("--repeats", type=int, default=1)
    p.add_argument("--count-output", action="store_true")
    p.add_argument("--sample-mod", type=int, default=0)
    a = p.parse_args()
    with open(a.csv, "rb") as f:
        rows = sum(1 for _ in f)
    t_env = _env(a.state, a.parallelism)
    _source(t_env, a.csv, a.delay_s)
    select = _query(a.query, a.size_s, a.slide_s)
    sink = _sink(t_env, f"{a.query}_sink", "blackhole")
    for _ in range(a.repeats):
        t0 = time.perf_counter()
        t_env.execute_sql(f"INSERT INTO {sink} {select}").wait()
        seconds = time.perf_counter() - t0
        print(json.dumps({"query": a.query, "state": a.state, "seconds": seconds, "rows": rows}))
    if a.count_output:
        with t_env.execute_sql(f"SELECT k FROM ({select})").collect() as results:
            n = sum(1 for _ in results)
        print(json.dumps({"query": a.query, "state": a.state, "output_rows": n, "rows": rows}))
    if a.sample_mod and a.query == "over":
        sampled = f"SELECT * FROM ({select}) WHERE MOD(ts, {a.sample_mod}) = 0"
        with t_env.execute_sql(sampled).collect() as results:
            for r in results:
                print(json.dumps({"sample": [str(r[0]), int(r[1]), r[2], r[3], int(r[4])]}))


if __name__ == "__main__":
    main()
