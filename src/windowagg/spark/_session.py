"""A local (or cluster) SparkSession configured for windowagg's Spark adapter.

What it sets, and why (see docs/spark.md):

- ``PYSPARK_PYTHON`` (when unset) to this interpreter, so that Python workers find pandas,
  pyarrow and windowagg (otherwise Spark runs whatever ``python3`` is on PATH);
- the RocksDB state store provider, which ``transformWithStateInPandas`` requires;
- session time zone UTC, so timestamps mean the same on the driver and the workers;
- Parquet timestamps written as ``TIMESTAMP_MICROS`` adjusted to UTC, so that pandas reads
  results back tz-aware in UTC (``datetime64[us, UTC]``), as ``windowagg.pandas`` returns them;
- ``createDataFrame(pandas_df)`` (or an Arrow table) above 1 MB as a distributed
  DataFrame: below ``spark.sql.execution.arrow.localRelationThreshold`` (Spark's default
  48 MB) Spark keeps the rows in the plan (a ``LocalRelation``), and every job that reads
  the frame, cached or not, serialises every row into its tasks again: ~2.5 s per job for
  1M rows of three columns on ``local[2]``, which F.window and windowagg both paid
  (docs/performance/spark.md);
- for local masters, one shuffle partition per local core (``local[2]`` -> 2): every
  partition of a stateful streaming query is one task per micro-batch, with its own
  Python worker round trip and state store commit, and Spark's default of 200 would
  pay that 200 times per micro-batch on 2 cores. (A streaming query keeps the number of
  partitions of its first run in its checkpoint.)

Nothing here is needed on a cluster whose configuration already does this; every setting
can be overridden through ``conf``.

Spark Connect (``remote=``): ``remote="local[N]"`` starts a local Spark Connect server in
this process (PySpark's ``SparkSession.builder.remote("local[N]")``), whose Python workers
get the same ``PYSPARK_PYTHON`` and the same settings. A server elsewhere
(``remote="sc://host:15002"``) runs its workers with its own Python, which this client
cannot choose: start that server with a Python that has windowagg (``--conf
spark.pyspark.python=...``, or ``PYSPARK_PYTHON`` in its environment), else every windowagg
call fails in its workers with ``No module named 'windowagg'``; of the settings above, only
the SQL settings a session may change reach it (the others are ignored).
"""

from __future__ import annotations

import os
import re
import sys
from typing import Any

from windowagg.errors import ArgumentError
from windowagg.spark._deps import require_connect, require_pyspark

__all__ = ["LOCAL_RELATION_THRESHOLD", "ROCKSDB_PROVIDER", "local_cores", "session"]

ROCKSDB_PROVIDER = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"
#: Bytes of Arrow data up to which ``createDataFrame`` keeps a pandas frame's rows in the
#: plan (Spark's ``spark.sql.execution.arrow.localRelationThreshold``; its default is 48 MB).
LOCAL_RELATION_THRESHOLD = "1m"


def local_cores(master: str) -> int:
    """The cores of a local master: ``local`` -> 1, ``local[N]``/``local[N, F]`` -> N,
    ``local[*]`` -> this machine's CPUs. O(1).

    >>> local_cores("local"), local_cores("local[2]"), local_cores("local[3,2]")
    (1, 2, 3)
    >>> local_cores("local[*]") == (os.cpu_count() or 1)
    True
    """
    m = re.fullmatch(r"local(?:\[\s*(\*|\d+)\s*(?:,\s*\d+\s*)?\])?", master.strip())
    if m is None:  # local-cluster[...] and anything else: not a plain local master
        return os.cpu_count() or 1
    if m.group(1) is None:
        return 1
    if m.group(1) == "*":
        return os.cpu_count() or 1
    return max(1, int(m.group(1)))


def session(
    master: str | None = "local[*]",
    app_name: str = "windowagg",
    *,
    shuffle_partitions: int | None = None,
    driver_memory: str | None = "4g",
    conf: dict[str, str] | None = None,
    remote: str | None = None,
) -> Any:
    """Get or create a SparkSession ready for :mod:`windowagg.spark`. O(1) (JVM start ~6 s).

    Parameters
    ----------
    master
        ``"local[*]"`` by default; ``None`` leaves the master to ``spark-submit`` / the
        cluster's configuration.
    app_name
        The Spark application name.
    shuffle_partitions
        ``spark.sql.shuffle.partitions``; by default the number of local cores for local
        masters (``local[4]`` -> 4, ``local[*]`` -> all cores), left alone otherwise.
    driver_memory
        ``spark.driver.memory`` (effective only when this call starts the JVM).
    conf
        More settings; they override the defaults above.
    remote
        A Spark Connect session instead of a classic one: ``"local[N]"`` (a local Spark
        Connect server, with the settings of a local master) or a server's URL
        (``"sc://host:15002"``: its workers' Python is the server's; see the module
        docstring). Leave ``master`` at its default (or None) with it. Needs
        ``windowagg[connect]`` (PySpark's Connect client: grpcio, grpcio-status,
        googleapis-common-protos, zstandard).

    Returns
    -------
    pyspark.sql.SparkSession
        A ``pyspark.sql.connect.session.SparkSession`` with ``remote``.
    """
    require_pyspark("windowagg.spark.session")
    from pyspark.sql import SparkSession

    if remote is not None:
        if master not in (None, "local[*]"):
            raise ArgumentError(
                f"session: give master={master!r} or remote={remote!r}, not both (remote "
                "'local[N]' starts a local Spark Connect server; master then stays unset)"
            )
        require_connect()
        master = remote if remote.startswith("local") else None
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = SparkSession.builder.appName(app_name)
    if remote is not None:
        builder = builder.remote(remote)
    settings: dict[str, str] = {
        "spark.sql.session.timeZone": "UTC",
        "spark.sql.streaming.stateStore.providerClass": ROCKSDB_PROVIDER,
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.execution.arrow.pyspark.enabled": "true",
        # above 1 MB, createDataFrame(pandas_df) ships Arrow batches to the executors once
        # (one partition per batch) instead of embedding the rows in every job's tasks
        "spark.sql.execution.arrow.localRelationThreshold": LOCAL_RELATION_THRESHOLD,
        # Parquet timestamps as instants (isAdjustedToUTC): pandas and pyarrow read them
        # back tz-aware in UTC, as the pandas path returns them (Spark's default, INT96,
        # reads back naive)
        "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS",
    }
    if master is not None:
        if remote is None:
            builder = builder.master(master)
        if master.startswith("local"):
            settings["spark.ui.enabled"] = "false"
            if shuffle_partitions is None:
                shuffle_partitions = local_cores(master)
            if driver_memory:
                settings["spark.driver.memory"] = driver_memory
    if shuffle_partitions is not None:
        settings["spark.sql.shuffle.partitions"] = str(shuffle_partitions)
    settings.update(conf or {})
    for k, v in settings.items():
        builder = builder.config(k, v)
    return builder.getOrCreate()
