"""Untrusted bytes (issue 13, items 4-6): limits before allocating, one error type, a checksum,
one byte format for sketches, a registry that does not depend on import order, and bytes
written by the code before all this still reading (``fixtures/legacy_v1.json``)."""

from __future__ import annotations

import contextlib
import functools
import importlib.util
import json
import struct
import subprocess
import sys
import time
import tracemalloc
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from windowagg import codec
from windowagg.errors import CodecError, StorageError
from windowagg.fifo import AMTA, LogMTA
from windowagg.monoids import BloomSet, Sum
from windowagg.sketches import (
    ExpDecayQDigest,
    ExpDecaySpaceSaving,
    PolynomialDecay,
    QDigest,
    SlidingWindowCount,
    SlidingWindowQDigest,
    ValueDivision,
)
from windowagg.storage import MemoryStore
from windowagg.windows import CountWindows, SlidingWindows

FIXTURES = Path(__file__).with_name("fixtures")
LEGACY: dict[str, Any] = json.loads((FIXTURES / "legacy_v1.json").read_text())


def _builders() -> Any:
    spec = importlib.util.spec_from_file_location("make_legacy", FIXTURES / "make_legacy.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


B = _builders()
SKETCHES: dict[str, Any] = {
    "QDigest": QDigest,
    "ExpDecayQDigest": ExpDecayQDigest,
    "ExpDecaySpaceSaving": ExpDecaySpaceSaving,
    "SlidingWindowCount": SlidingWindowCount,
    "SlidingWindowQDigest": SlidingWindowQDigest,
}


def reseal(data: bytes, change: Callable[[bytes], bytes] = lambda b: b) -> bytes:
    """Change the bytes before a version-2 CRC and write a matching CRC: reaches the parser."""
    head = change(data[:-4])
    return head + zlib.crc32(head).to_bytes(4, "big")


def small_and_fast(
    fn: Callable[[], Any], *, peak_bytes: int = 1 << 20, error: type = CodecError
) -> None:
    """*fn* raises *error* within 0.5 s and never holds more than *peak_bytes*."""
    tracemalloc.start()
    t0 = time.perf_counter()
    try:
        with pytest.raises(error):
            fn()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert time.perf_counter() - t0 < 0.5
    assert peak < peak_bytes, f"decoding a tiny payload peaked at {peak} bytes"


# ------------------------------------------------------------------ item 4: limits


def _bloom_v1(bits: int, value_bytes: bytes = b"") -> bytes:
    """A version-1 payload: BloomSet (bits, 1, value) in the old int form."""
    n = (bits.bit_length() + 8) // 8
    return (
        b"WAGC\x01X\x12windowagg.BloomSett\x03"
        + b"i"
        + bytes([n])
        + bits.to_bytes(n, "big")
        + b"i\x01\x01"
        + b"i"
        + bytes([len(value_bytes)])
        + value_bytes
    )


@pytest.mark.parametrize("bits", [2**33, 2**36])
def test_tiny_bloom_payload_is_refused_before_allocating(bits: int) -> None:
    """The issue's attack: ~40 bytes claiming a 2**33-bit filter (1 GiB); 2**36 is 8 GiB."""
    legacy = _bloom_v1(bits)
    assert len(legacy) <= 40
    small_and_fast(lambda: codec.loads(legacy))
    # The version-2 form carries its bitmap, so a claim without the bytes is refused too.
    n = (bits.bit_length() + 8) // 8
    head = (
        b"WAGC\x02X\x12windowagg.BloomSett\x03i"
        + bytes([n])
        + bits.to_bytes(n, "big")
        + b"i\x01\x01b\x00"
    )
    small_and_fast(lambda: codec.loads(head + zlib.crc32(head).to_bytes(4, "big")))


def test_bloom_value_check_does_not_build_the_bound() -> None:
    """BloomSet(bits, k, value) compares bit lengths instead of building 2**bits."""
    small_and_fast(lambda: BloomSet(64, 1, 2**64), error=ValueError)
    small_and_fast(lambda: BloomSet._from_codec((2**33, 1, b"")), error=ValueError)
    small_and_fast(lambda: BloomSet.from_plain((2**33, 1, -1)), error=ValueError)
    tracemalloc.start()
    try:
        s = BloomSet(2**33, 1, 5)  # used to build 2**(2**33) (1 GiB) just to compare
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert s.value == 5 and s.num_bits == 2**33 and peak < 1 << 16


def test_bloom_round_trip_writes_the_sized_bitmap() -> None:
    s = B.build_bloomset()
    plain = s._to_codec()
    assert plain[:2] == (256, 3) and plain[2] == s.value.to_bytes(32, "little")
    assert BloomSet(*s.to_plain()) == s
    assert codec.loads(codec.dumps(s)) == s
    with pytest.raises(CodecError, match="needs a 32-byte bitmap"):
        codec.loads(reseal(codec.dumps(s), lambda b: b.replace(b"b\x20", b"b\x1f")[:-1]))


@pytest.mark.parametrize(
    "head",
    [
        b"WAGC\x01s\xff\xff\xff\xff\x0f",  # str of 4 GiB
        b"WAGC\x01b\xff\xff\xff\xff\xff\xff\xff\x7f",  # bytes of 2**56
        b"WAGC\x01l\xff\xff\xff\xff\x0f",  # list of 4 G items
        b"WAGC\x01m\xff\xff\xff\xff\x0f",  # dict of 4 G entries
        b"WAGC\x01i\xff\xff\xff\xff\x0f",  # int of 4 GiB
        b"WAGC\x01c\xff\xff\xff\xff\x0f",  # Decimal of 4 GiB
    ],
)
def test_codec_counts_are_checked_against_the_payload(head: bytes) -> None:
    small_and_fast(lambda: codec.loads(head + b"\x00" * 16))


def test_sketch_array_lengths_are_checked_against_the_payload() -> None:
    """Layout 1 (WASK): a u64 count of 2**60 doubles with 8 bytes behind it."""
    d = QDigest(100, 0.1)
    d.update(3)
    legacy = bytes.fromhex(LEGACY["sketches"]["QDigest"])
    # magic, version, kind, U-1, eps, n: the node-depth count follows at offset 30.
    bomb = legacy[:30] + struct.pack("<Q", 2**60) + b"\x00" * 8
    small_and_fast(lambda: QDigest.from_bytes(bomb))


# ------------------------------------------------------------------ item 5: one error type


def _legacy_qdigest_with_eps(eps: float) -> bytes:
    raw = bytearray(bytes.fromhex(LEGACY["sketches"]["QDigest"]))
    raw[14:22] = struct.pack("<d", eps)  # after magic, version, kind and u64 U-1
    return bytes(raw)


@pytest.mark.parametrize("eps", [5e-324, 1e-320])
def test_corrupted_sketch_eps_is_a_codec_error(eps: float) -> None:
    """Used to raise OverflowError (ceil(4 L / eps) of an infinite float)."""
    with pytest.raises(CodecError) as info:
        QDigest.from_bytes(_legacy_qdigest_with_eps(eps))
    assert info.value.__cause__ is not None or "corrupt" in str(info.value)


@pytest.mark.parametrize(
    ("name", "field"),
    [
        ("ExpDecayQDigest", 5 + 1 + 3),  # version, lam, flag, landmark, tmax, U-1, eps
        ("SlidingWindowCount", 1),  # version, eps
        ("SlidingWindowQDigest", 1),
    ],
)
def test_corrupted_sketch_fields_are_codec_errors(name: str, field: int) -> None:
    """A tiny eps behind a valid checksum: the sketch's constructor overflows."""
    cls = SKETCHES[name]
    good = cls.from_bytes(bytes.fromhex(LEGACY["sketches"][name]))
    plain = list(good._to_codec())
    if name == "ExpDecayQDigest":
        field = 6  # (2, lam, flag, landmark, tmax, U-1, eps, ...)
    assert isinstance(plain[field], float)
    plain[field] = 5e-324
    tag = f"windowagg.{name}".encode()
    head = b"WAGC\x02X" + bytes([len(tag)]) + tag + codec.dumps(tuple(plain))[5:-4]
    with pytest.raises(CodecError):
        cls.from_bytes(head + zlib.crc32(head).to_bytes(4, "big"))


def _window_state_with(change: Callable[[list[Any]], None]) -> bytes:
    w = B.build_sliding_sum()
    state = list(codec.loads(w.to_bytes()))
    change(state)
    return codec.dumps(tuple(state))


def _replace(seq: Any, i: int, v: Any) -> Any:
    out = list(seq)
    out[i] = v
    return type(seq)(out)


@pytest.mark.parametrize(
    ("change", "cause"),
    [
        (lambda s: s.__setitem__(7, 75), TypeError),  # counters
        (lambda s: s.__setitem__(8, [(1,)]), TypeError),  # the side output
        (lambda s: s.__setitem__(5, 5), TypeError),  # the time types
    ],
)
def test_corrupted_window_state_is_a_codec_error(
    change: Callable[[list[Any]], None], cause: type
) -> None:
    """States that pass the codec but not the window raise CodecError, the cause chained."""
    with pytest.raises(CodecError) as info:
        SlidingWindows.from_bytes(_window_state_with(change), Sum(), 10, 5, max_out_of_orderness=4)
    assert "cannot restore a windowagg sliding state" in str(info.value)
    assert isinstance(info.value.__cause__, cause)


# ------------------------------------------------------------------ item 6: checksum, fuzz


@functools.cache
def states() -> dict[str, bytes]:
    cw = CountWindows(Sum(), 3)
    cw.insert_many([(1, 1), (2, 5), (4, 2)])
    out = {
        "sliding_sum": B.build_sliding_sum().to_bytes(),
        "sliding_qdigest": B.build_sliding_qdigest().to_bytes(),
        "count": cw.to_bytes(),
        "value_division": B.build_value_division().to_bytes(),
        "bloom": codec.dumps(B.build_bloomset()),
    }
    out.update({k: v.to_bytes() for k, v in B.build_sketches().items()})
    return out


STATE_NAMES = sorted(
    ["sliding_sum", "sliding_qdigest", "count", "value_division", "bloom", *SKETCHES]
)


def _decode(name: str, data: bytes) -> Any:
    if name.startswith("sliding_"):
        m = Sum() if name == "sliding_sum" else B.qdigest_monoid()
        return SlidingWindows.from_bytes(data, m, 10, 5, max_out_of_orderness=4)
    if name == "count":
        return CountWindows.from_bytes(data, Sum(), 3)
    if name == "value_division":
        return ValueDivision.from_bytes(data, PolynomialDecay(1.0))
    if name == "bloom":
        return codec.loads(data)
    return SKETCHES[name].from_bytes(data)


def test_every_state_round_trips_and_is_checksummed() -> None:
    for name, data in states().items():
        assert data[:5] == b"WAGC\x02", name
        assert int.from_bytes(data[-4:], "big") == zlib.crc32(data[:-4]), name
        assert _decode(name, _decode_then_encode(name, data)) is not None


def _decode_then_encode(name: str, data: bytes) -> bytes:
    obj = _decode(name, data)
    out = codec.dumps(obj) if name == "bloom" else obj.to_bytes()
    assert out == data, f"{name} does not re-encode to the same bytes"
    return out


mutations = st.lists(st.tuples(st.integers(0, 10**9), st.integers(1, 255)), min_size=1, max_size=3)


def _mutate(data: bytes, muts: list[tuple[int, int]]) -> bytes:
    buf = bytearray(data)
    for pos, flip in muts:
        buf[pos % len(buf)] ^= flip  # xor with 1..255: the byte always changes
    return bytes(buf)


@given(st.sampled_from(STATE_NAMES), mutations)
def test_every_1_to_3_byte_mutation_is_detected(name: str, muts: list[tuple[int, int]]) -> None:
    data = _mutate(states()[name], muts)
    if data == states()[name]:  # two flips of the same byte cancelled out
        return
    with pytest.raises(CodecError):
        _decode(name, data)


def test_mutation_detection_rate_is_100_percent() -> None:
    """Every single-byte change of every state, and a fixed sample of 2- and 3-byte ones."""
    import random

    rng = random.Random(13)
    tried = detected = 0
    for name, data in states().items():
        cases = [[(i, 0xA5)] for i in range(len(data))]
        cases += [
            [(rng.randrange(len(data)), rng.randrange(1, 256)) for _ in range(rng.choice((2, 3)))]
            for _ in range(200)
        ]
        for muts in cases:
            bad = _mutate(data, muts)
            if bad == data:
                continue
            tried += 1
            try:
                _decode(name, bad)
            except CodecError:
                detected += 1
    assert detected == tried, f"{tried - detected} of {tried} mutations decoded silently"


@given(st.sampled_from(STATE_NAMES), st.binary(max_size=200))
def test_random_bytes_only_raise_codec_error(name: str, raw: bytes) -> None:
    for data in (raw, b"WAGC\x02" + raw, b"WAGC\x01" + raw, b"WASK\x01" + raw):
        try:
            out = _decode(name, data)
        except CodecError:
            continue
        # Only version 1 (no checksum) can hold a valid value by chance, and only the
        # generic decoder (``codec.loads``, the "bloom" state) takes any value: b"WAGC\x01T"
        # is True. Every typed decoder must refuse it.
        assert name == "bloom" and data.startswith(b"WAGC\x01"), (name, data, out)
        assert codec.loads(data) == out  # and it decodes the same way every time


@given(st.sampled_from(STATE_NAMES), st.data())
def test_mutations_behind_a_valid_checksum_only_raise_codec_error(
    name: str, data: st.DataObject
) -> None:
    """The parser and every rebuild behind the checksum: CodecError or a valid object."""
    good = states()[name]
    muts = data.draw(mutations)
    bad = reseal(good, lambda b: _mutate(b, muts))
    with contextlib.suppress(CodecError):
        _decode(name, bad)


def _mta_store(cls: type, monoid: Any = None) -> tuple[MemoryStore, dict[str, Any]]:
    store = MemoryStore()
    kw: dict[str, Any] = {"buffer_size": 2, "cache_size": 2, "refill_below": 1, "page_size": 2}
    w = cls(monoid or Sum(), store=store, namespace="w", **kw)
    for i in range(40):
        w.insert(i)
    w.flush("t")
    return store, kw


@pytest.mark.parametrize("cls", [LogMTA, AMTA])
@given(mutations, st.integers(0, 10**6))
def test_mta_record_mutations_are_detected(
    cls: type, muts: list[tuple[int, int]], which: int
) -> None:
    """A corrupted checkpoint record or page fails on reopening or reading (StorageError with
    the codec's CodecError as its cause), never decodes silently."""
    store, kw = _mta_store(cls)
    records = [(lv, pos) for lv, d in sorted(store._data["w"].items()) for pos in sorted(d)]
    k = which % (len(records) + 1)
    if k == len(records):
        meta = store.get_meta("w")
        assert meta is not None
        store._meta["w"] = bad = _mutate(meta, muts)
        changed = bad != meta
    else:
        lv, pos = records[k]
        old = store._data["w"][lv][pos]
        store._data["w"][lv][pos] = bad = _mutate(old, muts)
        changed = bad != old
    if not changed:  # two flips of the same byte cancelled out
        return
    with pytest.raises(StorageError) as info:
        w = cls(Sum(), store=store, namespace="w", **kw)
        list(w)
        w._check()
    assert isinstance(info.value.__cause__, CodecError), info.value


# ------------------------------------------------------------------ one format, old bytes


def test_sketch_bytes_are_codec_bytes() -> None:
    for name, sk in B.build_sketches().items():
        data = sk.to_bytes()
        assert data[:4] == codec.MAGIC
        back = codec.loads(data)
        assert type(back) is type(sk) and back.to_bytes() == data, name
        assert type(sk).from_bytes(codec.dumps(sk)).to_bytes() == data
    d = QDigest(100, 0.1)
    with pytest.raises(CodecError, match="hold a QDigest, not a SlidingWindowCount"):
        SlidingWindowCount.from_bytes(d.to_bytes())


def test_legacy_plain_and_bloom_bytes_still_read() -> None:
    assert codec.loads(bytes.fromhex(LEGACY["plain"])) == B.plain_value()
    assert codec.loads(bytes.fromhex(LEGACY["bloomset"])) == B.build_bloomset()


@pytest.mark.parametrize("name", sorted(SKETCHES))
def test_legacy_sketch_bytes_still_read(name: str) -> None:
    old = bytes.fromhex(LEGACY["sketches"][name])
    assert old[:4] == b"WASK"
    back = SKETCHES[name].from_bytes(old)
    assert back.to_bytes() == B.build_sketches()[name].to_bytes()


def test_legacy_value_division_still_reads() -> None:
    old = bytes.fromhex(LEGACY["value_division"])
    back = ValueDivision.from_bytes(old, PolynomialDecay(1.0))
    assert back.to_bytes() == B.build_value_division().to_bytes()


def test_legacy_window_states_are_refused_with_what_to_do() -> None:
    # by design (issue 27): the object API runs on the windows engine; state written by its
    # own FiBA engine (version 1) is a CodecError saying to rebuild, never a wrong window
    for name, m in (("sliding_sum", Sum()), ("sliding_qdigest", B.qdigest_monoid())):
        old = bytes.fromhex(LEGACY[name])
        assert old[:5] == b"WAGC\x01"
        with pytest.raises(CodecError, match="rebuild it"):
            SlidingWindows.from_bytes(old, m, 10, 5, max_out_of_orderness=4)


def test_legacy_mta_store_still_opens() -> None:
    """A store written with repr(monoid) as its identity (built-in Sum) reopens."""
    store = MemoryStore()
    rec = LEGACY["mta_store"]
    store.commit("w", [((lv, pos), bytes.fromhex(h)) for lv, pos, h in rec["kv"]], [], None)
    store.commit("w", [], [], bytes.fromhex(rec["meta"]))
    w = LogMTA(
        Sum(), store=store, namespace="w", buffer_size=4, cache_size=4, refill_below=2, page_size=2
    )
    assert w.checkpoint_token == "tok"
    assert list(w) == list(range(6, 40)) and w.query() == sum(range(6, 40))
    w.insert(40)
    w.flush("tok2")
    assert store.get_meta("w")[:5] == b"WAGC\x02"  # type: ignore[index]


# ------------------------------------------------------------------ the registry


def test_registry_is_complete_without_importing_spark() -> None:
    """Fresh interpreter: a window over q-digests encodes and decodes, spark never imported."""
    src = str(Path(__file__).resolve().parents[2] / "src")
    code = (
        "import sys\n"
        "from windowagg.sketches import QDigestMonoid\n"
        "from windowagg.windows import SlidingWindows\n"
        "m = QDigestMonoid(universe=64, eps=0.1)\n"
        "w = SlidingWindows(m, 10, 5); w.insert_many([(1, 3), (7, 9)])\n"
        "w2 = SlidingWindows.from_bytes(w.to_bytes(), m, 10, 5)\n"
        "assert w2.close() == w.close(), 'round trip'\n"
        "from windowagg import codec\n"
        "assert 'windowagg.QDigest' in codec.registered()\n"
        "assert not any(k.startswith('windowagg.spark') for k in sys.modules), 'spark imported'\n"
        "print('ok')\n"
    )
    env = {"PYTHONPATH": src, "PATH": "/usr/bin:/bin"}
    r = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120
    )
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr


def test_decoding_a_library_tag_first_needs_no_import() -> None:
    """Decoding (not only encoding) loads the library's types on first need."""
    src = str(Path(__file__).resolve().parents[2] / "src")
    data = QDigest(10, 0.5).to_bytes().hex()
    code = (
        "from windowagg import codec\n"
        f"d = codec.loads(bytes.fromhex({data!r}))\n"
        "print(type(d).__name__)\n"
    )
    r = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env={"PYTHONPATH": src, "PATH": "/usr/bin:/bin"},
        timeout=120,
    )
    assert r.returncode == 0 and r.stdout.strip() == "QDigest", r.stderr
