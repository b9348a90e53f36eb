"""ValueDivision's lazy one-item summaries behave exactly like eagerly built digests."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from windowagg.sketches import ExponentialDecay, PolynomialDecay, ValueDivision

items = st.lists(
    st.tuples(
        st.integers(0, 255),
        st.integers(0, 400),
        st.sampled_from([1, 1.0, 2.5]),
    ),
    max_size=300,
)


@given(items, st.sampled_from(["poly", "exp"]))
@settings(max_examples=40)
def test_lazy_singletons_match_eager_digests(
    stream: list[tuple[int, int, float]], kind: str
) -> None:
    g = PolynomialDecay(2.0) if kind == "poly" else ExponentialDecay(0.05)
    lazy = ValueDivision(256, g, 0.05, 0.05)
    eager = ValueDivision(256, g, 0.05, 0.05)
    for x, t, w in stream:
        lazy.update(x, t, w)
        eager.update(x, t, w)
        for s in eager._S:  # build every digest now: the representation the lazy one defers
            _ = s.q
        eager._check()
    lazy._check()
    assert lazy.to_bytes() == eager.to_bytes()
    if stream:
        assert lazy.digest().to_bytes() == eager.digest().to_bytes()
        assert lazy.decayed_count() == eager.decayed_count()


def test_singletons_are_lazy_until_read() -> None:
    vd = ValueDivision(1 << 16, PolynomialDecay(2.0), 0.05, 0.05)
    for t in range(0, 40, 3):  # young ages: one band per time unit, so one summary per item
        vd.update(t, t)
    lazy = [s for s in vd._S if isinstance(s._q, tuple)]
    assert lazy, "recent one-item summaries should not build a digest"
    assert all(s.q.total_weight == 1.0 for s in lazy)
    assert not any(isinstance(s._q, tuple) for s in lazy)
    vd._check()
