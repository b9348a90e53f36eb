"""Every built-in monoid's partials (lifted, combined, identity) and answers round-trip the codec."""

from __future__ import annotations

import struct
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from windowagg.codec import dumps, loads
from windowagg.monoids import Composite, Count, Max, Mean, Variance, available, get

small = st.integers(-5, 5)
INPUTS: dict[str, st.SearchStrategy[Any]] = {
    "sum": st.integers() | st.floats(allow_nan=False, allow_infinity=False),
    "count": st.none() | st.text(max_size=3),
    "mean": st.integers() | st.floats(-1e9, 1e9),
    "variance": st.floats(-1e9, 1e9),
    "stddev": st.floats(-1e9, 1e9),
    "min": st.text(max_size=3),
    "max": st.dates(),
    "min_count": small,
    "max_count": small,
    "argmin": st.tuples(small, st.text(max_size=3)),
    "argmax": st.tuples(small, st.integers()),
    "geomean": st.floats(1e-300, 1e300),
    "product": st.integers(-5, 5),
    "first": st.integers() | st.none(),
    "last": st.text(max_size=4),
    "concat": st.integers() | st.floats() | st.none(),
    "matmul2x2": st.tuples(small, small, small, small),
    "bloom": st.text(max_size=4) | st.integers(),
}


def bits_equal(a: Any, b: Any) -> bool:
    """Equality that tells -0.0 from 0.0 and matches NaN with NaN."""
    if type(a) is not type(b):
        return False
    if type(a) is float:
        return struct.pack(">d", a) == struct.pack(">d", b)
    if type(a) in (tuple, list):
        return len(a) == len(b) and all(bits_equal(x, y) for x, y in zip(a, b, strict=True))
    if type(a) is dict:
        return list(a) == list(b) and all(bits_equal(a[k], b[k]) for k in a)
    return bool(a == b)


def test_every_builtin_has_inputs() -> None:
    assert set(INPUTS) == set(available())


@pytest.mark.parametrize("name", sorted(INPUTS))
@given(data=st.data())
def test_partials_and_answers_round_trip(name: str, data: st.DataObject) -> None:
    m = get(name, bits=512) if name == "bloom" else get(name)
    xs = data.draw(st.lists(INPUTS[name], max_size=6), label="xs")
    acc = m.identity
    partials = [acc]
    for x in xs:
        p = m.lift(x)
        acc = m.combine(acc, p)
        partials += [p, acc]
    for p in partials:
        back = loads(dumps(p))
        assert bits_equal(back, p)
        assert bits_equal(m.combine(back, back), m.combine(p, p))
    answer = m.lower(acc)
    if name == "bloom":
        assert loads(dumps(answer)) == answer
    else:
        assert bits_equal(loads(dumps(answer)), answer)
    # a whole window's state: a list of (timestamp, partial) pairs
    state = list(enumerate(partials))
    assert bits_equal(loads(dumps(state)), state)


def test_composite_partials_round_trip() -> None:
    c = Composite(n=Count(), hi=Max(), avg=Mean(), var=Variance(), fan_out=True)
    acc = c.identity
    for x in (3.5, -1.0, 7.25):
        acc = c.combine(acc, c.lift(x))
    assert loads(dumps(acc)) == acc
    assert loads(dumps(c.lower(acc))) == c.lower(acc)


_NUMBERS = st.floats(allow_nan=True) | st.integers() | st.integers(-(2**2000), 2**2000)
_ROWS = st.tuples(_NUMBERS, _NUMBERS, _NUMBERS) | st.lists(_NUMBERS, max_size=200).map(tuple)


@given(
    st.text(max_size=5),
    st.lists(_ROWS | st.lists(_NUMBERS, max_size=3) | st.none() | st.tuples(st.text()), max_size=6),
)
def test_dumps_numbers_writes_what_dumps_writes(tag: str, rows: list[Any]) -> None:
    """The pane layout's fast path for ("p", partials) records: the same bytes as dumps,
    byte for byte (NaN, -0.0, huge ints, long tuples and other rows included)."""
    from windowagg.codec import dumps_numbers

    assert dumps_numbers(tag, rows) == [dumps((tag, r)) for r in rows]


@given(st.lists(st.binary(max_size=300) | st.integers() | st.none(), max_size=6))
def test_dumps_bytes_writes_what_dumps_writes(items: list[Any]) -> None:
    """The pane layout's fast path for its value pieces (one bytes buffer each): the same
    bytes as dumps, byte for byte (lengths across varint sizes; other values by dumps)."""
    from windowagg.codec import dumps_bytes

    assert dumps_bytes(items) == [dumps(b) for b in items]


@given(
    st.lists(st.booleans(), min_size=1, max_size=6),
    st.data(),
)
def test_dumps_numbers_row_encoder_writes_what_dumps_writes(floats: list[bool], data: Any) -> None:
    """The encoder compiled for the first row's kinds (floats and ints, in order) writes
    every row of those kinds as dumps does (ints across byte widths, huge ones, NaN,
    -0.0), and leaves any other row (another length or kinds, a bool) to the loop."""
    from windowagg.codec import dumps_numbers

    ints = st.integers(-(2**70), 2**70) | st.integers(-300, 300) | st.integers(-(2**1020), 2**1020)
    item = {True: st.floats(allow_nan=True), False: ints}
    row = st.tuples(*[item[f] for f in floats])
    other = st.tuples(st.booleans()) | st.tuples(*[item[not f] for f in floats]) | st.none()
    rows = data.draw(st.lists(row | other, max_size=40))
    rows = [data.draw(row), *rows]
    assert dumps_numbers("p", rows) == [dumps(("p", r)) for r in rows]
