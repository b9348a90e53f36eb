"""windowagg._stream_store: a stream's keys in a key-value store, their pieces in rows.

A row's bytes decode to the pieces they were made of; bytes that are not a row of that
position are a ``CodecError`` naming the row, never a misread state; a micro-batch of the
pane layout writes a few rows per key, not a row per piece; a stream resumed from rows
goes on with the same answers; a commit that fails keeps the rows in memory as they were.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

import windowagg
from support import FlakyStore
from windowagg import codec
from windowagg._stream_store import HEAD, decode_row, encode_row
from windowagg.errors import CodecError, StorageError
from windowagg.storage import MemoryStore, SQLiteStore
from windowagg.windows.engine.panes import node_key, store_rows
from windowagg.windows.engine.values import value_key


def _by8(keys: np.ndarray) -> np.ndarray:
    return np.asarray(keys, dtype=np.int64) >> 3


@given(
    st.integers(-(2**40), 2**40),
    st.dictionaries(st.integers(0, 7), st.binary(max_size=20), min_size=1, max_size=8),
)
def test_a_row_round_trips(row: int, pieces: dict[int, bytes]) -> None:
    mine = {(row << 3) | k: v for k, v in pieces.items()}
    assert decode_row(encode_row(mine), row, _by8, "row") == mine


@pytest.mark.parametrize(
    ("data", "match"),
    [
        (codec.dumps(b"x"), "not a row"),
        (codec.dumps((b"", b"", b"")), "not a row"),
        (codec.dumps((np.int64(8).tobytes(), np.int64(3).tobytes(), b"ab")), "add up"),
        (codec.dumps((np.int64(8).tobytes(), np.int64(-1).tobytes(), b"")), "add up"),
        (
            codec.dumps((np.array([9, 8]).tobytes(), np.array([0, 0]).tobytes(), b"")),
            "ascending",
        ),
        (codec.dumps((np.int64(16).tobytes(), np.int64(0).tobytes(), b"")), "not one of row 1"),
        (codec.dumps((np.int64(HEAD).tobytes(), np.int64(0).tobytes(), b"")), "head"),
        (encode_row({8: b"ab"})[:-1], "row 1 of key"),
    ],
)
def test_bytes_not_a_row_are_a_codec_error(data: bytes, match: str) -> None:
    with pytest.raises(CodecError, match=match):
        decode_row(data, 1, _by8, "row 1 of key 0")


def test_pane_pieces_go_to_the_row_of_their_first_pane() -> None:
    keys = [node_key(0, 31), node_key(0, 32), node_key(5, 1), node_key(6, 1), value_key(-1)]
    assert store_rows(np.array(keys)).tolist() == [0, 1, 1, 2, -1]


_KW: dict[str, Any] = dict(
    keys="k", time="t", aggs=["p90(v)", "max(v)", "count"], size="1 hour", slide="1 minute"
)


def _minutes(k: str, lo: int, hi: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    t = np.arange(lo, hi) * 60_000_000 + rng.integers(0, 60_000_000, hi - lo)
    return pd.DataFrame(
        {"k": k, "t": pd.to_datetime(t, unit="us"), "v": rng.normal(size=hi - lo).round(3)}
    )


def test_a_micro_batch_writes_a_few_rows_per_key_not_a_row_per_piece() -> None:
    store = MemoryStore()
    s = windowagg.stream(store=store, **_KW)
    s.feed(_minutes("a", 0, 120, 1), token=1)
    before = dict(store.stats)
    s.feed(_minutes("a", 120, 240, 2), token=2)  # 120 new panes, 120 windows emitted
    ks = s._live[("a",)]
    pieces = len(ks.pieces())
    written = store.stats["keys_written"] - before["keys_written"]
    deleted = store.stats["keys_deleted"] - before["keys_deleted"]
    # the head and the metadata, the rows of panes 120..239 (4 of 32 panes, and the
    # tree's higher nodes in them), the rows left empty by the panes that died
    assert pieces > 120 and written <= 10 and deleted <= 5


def test_a_stream_resumed_from_rows_gives_the_uninterrupted_answers(tmp_path: Path) -> None:
    batches = [_minutes(k, lo, lo + 90, lo) for lo in (0, 90, 180) for k in ("a", "b")]
    whole = windowagg.stream(**_KW)
    want = pd.concat([whole.feed(b).results for b in batches] + [whole.close().results])
    db = tmp_path / "s.db"
    got = []
    for i, b in enumerate(batches):
        s = windowagg.stream(store=SQLiteStore(db), **_KW)  # a new process per batch
        assert s.checkpoint_token == (i - 1 if i else None)
        got.append(s.feed(b, token=i).results)
    got.append(windowagg.stream(store=SQLiteStore(db), **_KW).close().results)
    pd.testing.assert_frame_equal(
        pd.concat(got).reset_index(drop=True), want.reset_index(drop=True)
    )


def test_a_corrupted_row_is_a_codec_error_naming_it(tmp_path: Path) -> None:
    store = MemoryStore()
    s = windowagg.stream(store=store, **_KW)
    s.feed(_minutes("a", 0, 60, 3), token=1)
    ns = "windowagg.stream"
    row = next(p for p in store.positions(ns, 1) if p != HEAD)
    store.commit(ns, [((1, row), b"not a row")], (), None)
    again = windowagg.stream(store=store, **_KW)
    with pytest.raises(CodecError, match=rf"row {row} of key 0 .*drop the namespace"):
        again.feed(_minutes("a", 60, 61, 4), token=2)


def test_a_failed_commit_keeps_the_rows_as_they_were() -> None:
    store = FlakyStore()
    s = windowagg.stream(store=store, **_KW)
    s.feed(_minutes("a", 0, 60, 5), token=1)
    nxt = _minutes("a", 60, 100, 6)
    store.fail = True
    with pytest.raises(StorageError):
        s.feed(nxt, token=2)
    store.fail = False
    got = s.feed(nxt, token=2).results
    ref = windowagg.stream(**_KW)
    ref.feed(_minutes("a", 0, 60, 5))
    pd.testing.assert_frame_equal(got, ref.feed(nxt).results)
    resumed = windowagg.stream(store=store, **_KW).close().results
    pd.testing.assert_frame_equal(resumed, ref.close().results)
