"""Issue 37 (the pane layout's constant): ``Pieces`` batches its bookkeeping (``put_many``,
``delete_many``, ``get_many``, ``stored_among`` in set and dict operations) and, without a
store and with a cache about as large as a step's changes, journals a step by one copy of
the cache instead of a note per key. Nothing but the speed may change: against a plain
dict model, every read, every flush and every rollback or commit (nested) is the same, with
a store behind the pieces or without, whichever journal ``begin`` picks.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from windowagg.windows.engine.pieces import Pieces

KEYS = st.integers(0, 12)
OPS = st.lists(
    st.one_of(
        st.tuples(st.just("put"), st.lists(st.tuples(KEYS, st.integers(0, 99)), max_size=6)),
        st.tuples(st.just("delete"), st.lists(KEYS, max_size=6)),
        st.tuples(st.just("put1"), st.tuples(KEYS, st.integers(0, 99))),
        st.tuples(st.just("delete1"), KEYS),
        st.tuples(st.just("read"), st.lists(KEYS, max_size=8)),
        st.tuples(st.just("begin"), st.none()),
        st.tuples(st.just("commit"), st.none()),
        st.tuples(st.just("rollback"), st.none()),
        st.tuples(st.just("flush"), st.none()),
    ),
    max_size=40,
)


def _decode(key: int, data: bytes) -> Any:
    return ("v", int(data))


def _encode(key: int, piece: Any) -> bytes:
    return str(piece[1]).encode()


def _decode_many(keys: list[int], datas: list[bytes]) -> list[Any]:
    return [("v", int(d)) for d in datas]


@given(st.dictionaries(KEYS, st.integers(0, 99), max_size=8), st.booleans(), st.booleans(), OPS)
def test_pieces_equal_a_dict_through_journals_and_flushes(
    initial: dict[int, int], with_store: bool, many: bool, ops: list[tuple[str, Any]]
) -> None:
    store = {k: str(v).encode() for k, v in initial.items()} if with_store else None
    p = Pieces(_decode, store, _decode_many if many else None)
    model: dict[int, Any] = {k: ("v", v) for k, v in initial.items()} if with_store else {}
    dirty: dict[int, Any] = {}  # pending puts
    gone: set[int] = set()  # pending deletes (of keys the flush has not written yet)
    saved: list[tuple[dict[int, Any], dict[int, Any], set[int]]] = []  # per open begin
    for op, arg in ops:
        if op == "put":
            p.put_many([(k, ("v", v)) for k, v in arg])
            for k, v in arg:
                model[k] = dirty[k] = ("v", v)
                gone.discard(k)
        elif op == "put1":
            p.put(arg[0], ("v", arg[1]))
            model[arg[0]] = dirty[arg[0]] = ("v", arg[1])
            gone.discard(arg[0])
        elif op in ("delete", "delete1"):
            keys = arg if op == "delete" else [arg]
            if op == "delete":
                p.delete_many(keys)
            else:
                p.delete(arg)
            for k in keys:
                model.pop(k, None)
                dirty.pop(k, None)
                gone.add(k)
        elif op == "read":
            want = [model.get(k) for k in arg]
            assert p.get_many(arg) == want
            assert p.stored_among(arg) == [k for k in arg if k in model]
            assert [p.get(k) for k in arg] == want
            assert [p.contains(k) for k in arg] == [k in model for k in arg]
        elif op == "begin":
            p.begin()
            saved.append((dict(model), dict(dirty), set(gone)))
        elif op == "commit":
            p.commit()
            if saved:
                saved.pop()
        elif op == "rollback":
            p.rollback()
            if saved:
                model, dirty, gone = saved.pop()
                model, dirty, gone = dict(model), dict(dirty), set(gone)
        else:
            put, deleted = p.flush(_encode)
            assert put == {k: _encode(k, v) for k, v in sorted(dirty.items())}
            assert deleted == tuple(sorted(gone))
            dirty, gone = {}, set()
        assert sorted(p.stored()) == sorted(model)
        assert p.in_memory == (store is None)


def test_begin_copies_a_small_cache_and_notes_keys_in_a_large_one() -> None:
    """A cache no larger than 8x the last flush's changes is journalled by one copy (over
    a store too: a restored state's empty cache); a larger one key by key: both undo
    alike."""
    p = Pieces(_decode)
    p.put_many([(k, ("v", k)) for k in range(4)])
    p.flush(_encode)  # 4 changes: a cache of up to 32 keys is copied
    p.begin()
    assert p._journal[-1][2] is None  # the copy
    p.put_many([(k, ("v", -k)) for k in range(40)])
    p.delete(2)
    p.rollback()
    assert [p.get(k) for k in range(5)] == [("v", 0), ("v", 1), ("v", 2), ("v", 3), None]
    p.put_many([(k, ("v", k)) for k in range(100)])
    p.flush(_encode)  # 100 changes
    p.put_many([(k, ("v", k)) for k in range(100, 1000)])
    p.flush(_encode)  # 900 changes, a cache of 1000: copied
    p.put(5, ("v", 5))
    p.flush(_encode)  # 1 change, a cache of 1000: noted key by key
    p.begin()
    assert p._journal[-1][2] == {}
    p.begin()  # nested: the inner one is noted too (the cache did not change)
    p.delete_many([1, 2, 3])
    p.commit()
    p.put(7, ("v", 70))
    p.rollback()  # undoes the committed inner step as well
    assert [p.get(k) for k in (1, 2, 3, 7)] == [("v", 1), ("v", 2), ("v", 3), ("v", 7)]
    assert p._noting == [] and p._journal == []
    restored = Pieces(_decode, {1: b"1", 2: b"2"})  # over a store, nothing read yet
    restored.begin()
    assert restored._journal[-1][2] is None  # the (empty) cache copied
    assert restored.get(1) == ("v", 1)
    restored.put(1, ("v", 10))
    restored.delete(2)
    restored.rollback()
    assert restored.get_many([1, 2]) == [("v", 1), ("v", 2)]
    assert restored.flush(_encode) == ({}, ())


def test_get_many_decodes_its_misses_in_one_call_and_a_raise_caches_nothing() -> None:
    """With a ``decode_many``, :meth:`Pieces.get_many` reads each missing key once, hands
    the present ones to one call (in first-asked order) and answers as ``get`` would; when
    that call raises, nothing is cached: the same keys are read again, and raise again."""
    calls: list[list[int]] = []

    def many(keys: list[int], datas: list[bytes]) -> list[Any]:
        calls.append(keys)
        if b"bad" in datas:
            raise ValueError("bad piece")
        return [("v", int(d)) for d in datas]

    p = Pieces(_decode, {1: b"1", 2: b"2", 4: b"4"}, many)
    assert p.get(2) == ("v", 2)
    assert p.get_many([4, 1, 3, 2, 4]) == [("v", 4), ("v", 1), None, ("v", 2), ("v", 4)]
    assert calls == [[4, 1]]  # 2 was cached, 3 is absent, 4 asked twice
    assert (p.reads, p.read_bytes) == (4, 4 * 8 + 3)
    assert p.get_many([3, 1]) == [None, ("v", 1)] and len(calls) == 1  # all cached
    q = Pieces(_decode, {1: b"1", 2: b"bad"}, many)
    for _ in range(2):
        try:
            q.get_many([1, 2])
        except ValueError:
            pass
        else:
            raise AssertionError("the bad piece was not refused")
    assert calls[-2:] == [[1, 2], [1, 2]]  # read again: the first raise cached nothing
    assert q.cached() == 0
