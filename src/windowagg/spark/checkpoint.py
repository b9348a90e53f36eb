"""Whether windowagg can restart a streaming checkpoint, and why not, before Spark says so.

Spark checks a checkpoint against the restarted query before any windowagg code runs, so
a checkpoint of an earlier windowagg layout fails there with Spark's own words (``There
are [2] sources in the checkpoint offsets and now there are [1] sources requested by the
query``, or a state schema error) instead of windowagg's. :func:`check_checkpoint` reads
the checkpoint's files and raises windowagg's :class:`~windowagg.errors.CodecError`
naming what it found and what to do. (What windowagg reads itself, each key's state, it
checks at every restore: another state version, layout or configuration is a
``CodecError`` from the first micro-batch.)

=================  ==========================================================================
reads              ``offsets/<latest>`` (one line per source after the version and the
                   metadata), and per stateful operator ``state/<id>/_metadata/**`` and
                   ``state/<id>/_stateSchema/**`` (the operator's name and its state schemas)
windowagg's        an operator whose state schema holds windowagg's state: the
operators          ``transformWithStateInPandas`` ``MapState`` of pieces (``piece: bigint``
                   -> ``bytes: binary``) or the ``applyInPandasWithState`` value
                   (``state: binary``)
refused            such an operator whose grouping key has no :data:`NULL_KEYS_COLUMN`:
                   windowagg before 2026-11-28 (evening), which read the source twice (a
                   second branch for the null keys: two sources) and grouped by the keys
                   alone
files              local paths with Python; any other URL (``hdfs://``, ``s3a://``) through
                   ``spark.read`` (give *spark*)
=================  ==========================================================================
"""

from __future__ import annotations

import re
from collections import defaultdict
from pathlib import Path
from typing import Any

from windowagg.errors import ArgumentError, CodecError

__all__ = ["NULL_KEYS_COLUMN", "check_checkpoint"]

#: The grouping column :func:`~windowagg.spark.stream_window_agg` adds beside the keys
#: (the same name as ``windowagg.spark.streaming.NULL_KEYS_COLUMN``; this module imports
#: no pyspark)
NULL_KEYS_COLUMN = "_wa_null_keys"

_TWS_PIECES = re.compile(r'"name":"piece","type":"long".*?"name":"bytes","type":"binary"', re.S)
_APWS_STATE = re.compile(r'\{"type":"struct","fields":\[\{"name":"state","type":"binary"')
_RELATIVE = re.compile(r"/(offsets/[^/]+|state/\d+/(?:_metadata|_stateSchema)/.+)$")
#: What ``spark.read`` reads: globs of files (Spark's file index leaves out a path whose
#: own name starts with "_", such as ``_metadata``), v1 and v2 operator metadata
_SPARK_GLOBS = (
    "offsets/*",
    "state/*/_metadata/*",
    "state/*/_metadata/*/*",
    "state/*/_stateSchema/*/*",
)
_OPERATOR = re.compile(r"^state/(\d+)/(?:_metadata|_stateSchema)/")


def _local(location: str) -> Path | None:
    """The local directory of *location* (a path or a ``file:`` URL), else None."""
    if location.startswith("file:"):
        return Path(re.sub(r"^file:(//)?", "", location))
    if re.match(r"^[A-Za-z][A-Za-z0-9+.-]*://", location):
        return None
    return Path(location)


def _files(location: str, spark: Any) -> dict[str, str]:
    """The checkpoint's offsets and operator metadata files, by path relative to it (their
    text; binary schema files keep their JSON parts readable): with *spark* through
    ``spark.read`` (any file system Spark reads, Spark Connect too), else from a local
    directory. O(those files)."""
    if spark is None:
        root = _local(location)
        if root is None:
            raise ArgumentError(
                f"check_checkpoint: {location!r} is not a local path: give the SparkSession "
                "that can read it, check_checkpoint(location, spark)"
            )
        return {
            p.relative_to(root).as_posix(): p.read_bytes().decode("utf-8", "replace")
            for pattern in ("offsets/*", "state/*/_metadata/**/*", "state/*/_stateSchema/**/*")
            for p in root.glob(pattern)
            if p.is_file() and not p.name.endswith(".crc")
        }
    from pyspark.sql import functions as F

    base = location.rstrip("/")
    out: dict[str, str] = {}
    for files in _SPARK_GLOBS:
        try:
            rows = (
                spark.read.text(f"{base}/{files}", wholetext=True)
                .select(F.col("_metadata.file_path").alias("path"), "value")
                .collect()
            )
        except Exception as e:  # a folder that is not there (a new query): nothing to read
            if "PATH_NOT_FOUND" in str(e) or "does not exist" in str(e):
                continue
            raise
        for r in rows:
            m = _RELATIVE.search(str(r["path"]))
            if m and not m.group(1).endswith(".crc"):
                out[m.group(1)] = str(r["value"])
    return out


def check_checkpoint(location: str, spark: Any = None) -> None:
    """Raise ``CodecError`` if *location* is a windowagg streaming checkpoint that this
    windowagg cannot restart (see the module docstring); return None otherwise (a new or
    empty location, a query without windowagg's operator, or one of this layout).
    O(the checkpoint's metadata files).

    Call it before ``writeStream...option("checkpointLocation", location).start()``.

    >>> check_checkpoint("no-such-checkpoint")  # nothing there yet: a new query
    """
    files = _files(location, spark)
    by_op: dict[str, list[str]] = defaultdict(list)
    for rel, text in files.items():
        m = _OPERATOR.match(rel)
        if m:
            by_op[m.group(1)].append(text)
    offsets = [rel for rel in files if re.fullmatch(r"offsets/\d+", rel)]
    sources = None
    if offsets:
        latest = max(offsets, key=lambda rel: int(rel.split("/")[1]))
        sources = max(0, len(files[latest].strip().splitlines()) - 2)
    for op, texts in sorted(by_op.items()):
        text = "\n".join(texts)
        api = (
            "transformWithStateInPandas"
            if _TWS_PIECES.search(text)
            else "applyInPandasWithState"
            if _APWS_STATE.search(text)
            else None
        )
        if api is None or f'"name":"{NULL_KEYS_COLUMN}"' in text:
            continue
        read = f" and its query read {sources} sources" if sources is not None else ""
        raise CodecError(
            f"checkpoint {location!r} was written by windowagg before 2026-11-28 (evening): "
            f"its {api} operator (state/{op}) groups by the keys alone, without "
            f"{NULL_KEYS_COLUMN!r}{read} (a second branch for null keys), and Spark refuses "
            "to restart it under this layout (e.g. 'There are [2] sources in the checkpoint "
            "offsets ...'): start a new checkpoint location (with an output path of its "
            "own), or finish the query with the windowagg version that wrote it"
        )
