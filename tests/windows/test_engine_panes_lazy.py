"""Issue 37 (short windows, many keys): a plan whose windows are all answered from the panes
(numeric kinds, one size), kept in memory without deltas, refreshes the tree nodes above
them only when something reads them (``PaneStream._build``: the pieces, a cover walk,
``_check``) or before the dead panes under a top node that stays go
(``PaneStream._settle_stale``). Nothing but
the speed may change: the same frames, the same deltas byte for byte, the same pieces and
metadata whenever they are read, through restarts, as the eager refresh at every
micro-batch (``panes._LAZY = False``), over values whose float sums depend on the
association (the tree's order is the bytes').
"""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from windowagg.monoids import Concat
from windowagg.pandas import parse
from windowagg.windows.engine import KeyStream, Shape
from windowagg.windows.engine import panes as panes_mod

#: Numeric kinds (lazy), with an exact p95 (lazy, the values' component), a commutative
#: monoid without a kind (eager: answered from the covers), a non-commutative one (eager).
AGGS: list[list[Any]] = [
    ["sum(v)", "count", "max(v)", "min(v)"],
    ["sum(v)", "count", "max(v)", "p95(v)"],
    ["sum(v)", "mean(v)", "variance(v)"],
    ["sum(v)", "count", ("cat_v", Concat(), "v", "array<double>"), "first(v)"],
]
#: Floats whose sums depend on the association: a tree built in another order differs.
VALUES = st.one_of(
    st.sampled_from([0.1, 0.2, 0.3, 1e16, -1e16, 1.0, 3.5]),
    st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False),
)
#: Micro-batches of (time, value) events, times after a base that each micro-batch moves
#: on (panes touched and dead in the same micro-batch, whole top nodes of them), each
#: then: 0 nothing, 1 read the state (pieces, metadata, invariants), 2 restart from it.
BATCHES = st.lists(
    st.tuples(
        st.integers(0, 120),
        st.lists(st.tuples(st.integers(-20, 100), VALUES), max_size=30),
        st.sampled_from([0, 0, 0, 1, 2]),
    ),
    max_size=12,
)


def _stream(aggs: Any, shape: Shape, lazy: bool, **kw: Any) -> KeyStream:
    was = panes_mod._LAZY
    panes_mod._LAZY = lazy
    try:
        return KeyStream(aggs, shape, **kw)
    finally:
        panes_mod._LAZY = was


def _frame(res: Any) -> tuple[Any, ...]:
    """A frame's columns and refusals, exactly (reprs: NaN equals NaN, -0.0 is not 0.0)."""
    cols = {
        k: repr([np.asarray(x).tolist() if isinstance(x, (np.ndarray, list)) else x for x in v])
        for k, v in res.columns.items()
    }
    return cols, res.refused.tolist()


def _state(s: KeyStream) -> tuple[Any, ...]:
    return s.pieces(), s.meta_bytes(), len(s), s._state.deadline()


@given(
    BATCHES,
    st.integers(1, 24),
    st.integers(1, 8),
    st.integers(-5, 5),
    st.integers(0, 6),
    st.integers(0, 30),
    st.sampled_from(range(len(AGGS))),
    st.booleans(),
)
def test_lazy_nodes_give_the_eager_frames_deltas_and_bytes(
    batches: list[tuple[int, list[tuple[int, float]], int]],
    size: int,
    slide: int,
    start: int,
    ooo: int,
    allowed: int,
    which: int,
    deltas: bool,
) -> None:
    aggs = parse(AGGS[which])
    shape = Shape(size=size, slide=slide, start_time=start)
    kw: dict[str, Any] = {"max_out_of_orderness": ooo, "allowed_lateness": allowed}
    lazy = _stream(aggs, shape, True, deltas=deltas, **kw)
    eager = _stream(aggs, shape, False, deltas=deltas, **kw)
    assert lazy.layout == eager.layout == "panes"
    assert lazy._state._lazy == (which < 2 and not deltas)
    assert not eager._state._lazy
    base = 0
    for jump, events, then in batches:
        base += jump
        t = np.asarray([base + x for x, _ in events], dtype=np.int64)
        v = np.asarray([y for _, y in events], dtype=np.float64)
        got, d_got = lazy.feed(t, {"v": v})
        want, d_want = eager.feed(t, {"v": v})
        assert _frame(got) == _frame(want)
        assert d_got == d_want  # the deltas, byte for byte (empty without deltas)
        assert lazy._state.deadline() == eager._state.deadline()
        if then == 1:  # read after micro-batches without a read: the eager bytes
            assert _state(lazy) == _state(eager)
            lazy._check()
        elif then == 2:  # a restart from the state's bytes
            assert _state(lazy) == _state(eager)
            meta = lazy.meta_bytes()
            lazy = KeyStream.restore(meta, lazy.pieces(), aggs, shape, deltas=deltas, **kw)
            eager = KeyStream.restore(meta, eager.pieces(), aggs, shape, deltas=deltas, **kw)
    assert _state(lazy) == _state(eager)
    got, d_got = lazy.advance(10**6)
    want, d_want = eager.advance(10**6)
    assert _frame(got) == _frame(want)
    assert d_got == d_want
    assert _state(lazy) == _state(eager)


def test_a_micro_batch_answered_from_the_panes_leaves_their_nodes_to_the_reads() -> None:
    """Without deltas, the nodes above the panes a micro-batch touched stay unbuilt (the
    panes are noted stale) until the pieces are read; then they are the eager tree's."""
    aggs = parse(["max(v)", "sum(v)", "count"])
    shape = Shape(size=60, slide=1)
    rng = np.random.default_rng(37)
    t = np.sort(rng.integers(0, 300, 200))
    v = rng.random(200)
    lazy = _stream(aggs, shape, True, deltas=False, allowed_lateness=1)
    eager = _stream(aggs, shape, False, deltas=False, allowed_lateness=1)
    for lo in range(0, 200, 50):
        got, _ = lazy.feed(t[lo : lo + 50], {"v": v[lo : lo + 50]})
        want, _ = eager.feed(t[lo : lo + 50], {"v": v[lo : lo + 50]})
        assert _frame(got) == _frame(want)
    state = lazy._state
    assert state._stale  # the last micro-batch's panes, their nodes not built
    nodes = [k for k in state._nodes.stored() if k & 63]
    assert len(nodes) < len([k for k in eager._state._nodes.stored() if k & 63])
    assert lazy.pieces() == eager.pieces()  # the read builds them: the eager tree
    assert not state._stale
    lazy._check()
