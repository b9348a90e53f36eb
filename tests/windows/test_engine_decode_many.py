"""Issue 37 ("no step back" on Spark): a restored pane state decodes the pieces a
micro-batch reads together (``Values._decode_many``, ``PaneStream._decode_many``, through
``Pieces.get_many``), where it decoded them one by one. Nothing but the speed may change:
every piece decodes to the same arrays or partials, and a piece the one-by-one decoder
refuses raises the same ``CodecError``, whatever the pieces around it.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from windowagg import codec
from windowagg.errors import CodecError
from windowagg.pandas import parse
from windowagg.windows.engine import Shape
from windowagg.windows.engine.panes import PaneStream, node_key
from windowagg.windows.engine.values import Values, value_key

FINITE = st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False)


def _values(cols: list[str]) -> Values:
    aggs = parse([f"p95({c})" for c in cols])
    ps = PaneStream(aggs, Shape(size=10, slide=5))
    assert ps._values is not None
    return ps._values


@st.composite
def value_pieces(draw: Any, k: int) -> list[bytes]:
    """Encoded value pieces of *k* columns, some of them broken (unsorted, non-finite,
    not a whole row of columns, not bytes)."""
    out: list[bytes] = []
    for _ in range(draw(st.integers(1, 6))):
        n = draw(st.integers(1, 5))
        cols = [sorted(draw(st.lists(FINITE, min_size=n, max_size=n))) for _ in range(k)]
        buf = b"".join(np.asarray(c, "<f8").tobytes() for c in cols)
        flaw = draw(st.sampled_from(["none"] * 6 + ["unsorted", "nan", "short", "object"]))
        if flaw == "unsorted" and n > 1:
            cols[-1] = cols[-1][::-1] if cols[-1][0] != cols[-1][-1] else cols[-1]
            buf = b"".join(np.asarray(c, "<f8").tobytes() for c in cols)
        elif flaw == "nan":
            buf = buf[:-8] + np.asarray([np.nan], "<f8").tobytes()
        elif flaw == "short":
            buf = buf[:-3]
        out.append(codec.dumps(("x", 1) if flaw == "object" else buf))
    return out


def _one_by_one(decode: Any, keys: list[int], datas: list[bytes]) -> Any:
    try:
        return [decode(k, d) for k, d in zip(keys, datas, strict=True)]
    except CodecError as e:
        return ("raises", str(e))


def _together(decode_many: Any, keys: list[int], datas: list[bytes]) -> Any:
    try:
        return decode_many(keys, datas)
    except CodecError as e:
        return ("raises", str(e))


@pytest.mark.parametrize("cols", [["v"], ["v", "w"]])
@given(data=st.data())
def test_values_decode_many_equals_decode_one_by_one(cols: list[str], data: Any) -> None:
    v = _values(cols)
    datas = data.draw(value_pieces(len(cols)))
    keys = [value_key(p) for p in range(len(datas))]
    want = _one_by_one(v._decode, keys, datas)
    got = _together(v._decode_many, keys, datas)
    if isinstance(want, tuple):
        assert got == want
        return
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        assert list(g) == list(w) == cols
        for c in cols:
            assert g[c].dtype == w[c].dtype == np.float64
            assert g[c].tobytes() == w[c].tobytes()


PARTIAL = st.one_of(FINITE, st.integers(-(2**70), 2**70), st.sampled_from([-0.0, 0, 2**1100]))


@given(
    st.lists(
        st.one_of(
            st.tuples(st.just("p"), st.tuples(PARTIAL, PARTIAL, PARTIAL)),  # the common case
            st.tuples(st.just("p"), st.tuples(PARTIAL, PARTIAL)),  # the wrong arity
            st.tuples(st.just("p"), st.tuples(PARTIAL, st.none(), PARTIAL)),
            st.tuples(st.just("x"), st.none()),  # a split node (refused at level 0)
            st.tuples(st.just("q"), st.tuples(PARTIAL, PARTIAL, PARTIAL)),
        ),
        min_size=1,
        max_size=8,
    ),
    st.lists(st.integers(0, 3), min_size=8, max_size=8),
    st.integers(0, 7),
    st.booleans(),
)
def test_pane_decode_many_equals_decode_one_by_one(
    recs: list[Any], levels: list[int], hurt: int, corrupt: bool
) -> None:
    ps = PaneStream(parse(["max(v)", "sum(v)", "count"]), Shape(size=10, slide=5))
    keys = [node_key(levels[j], j) for j in range(len(recs))]
    datas = [codec.dumps(r) for r in recs]
    if corrupt:  # a flipped byte: the checksum refuses it, in either decoder
        j = hurt % len(datas)
        b = bytearray(datas[j])
        b[6] ^= 0x40
        datas[j] = bytes(b)
    assert _together(ps._decode_many, keys, datas) == _one_by_one(ps._decode, keys, datas)
