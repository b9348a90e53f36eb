"""A failing ``lift`` or ``combine`` leaves the window unchanged ("loses nothing").

``lift`` runs before any mutation in every class. For ``combine`` the guarantee is made by
DABA, DABALite, TwoStacks, TwoStacksLite, SubtractOnEvict and FlatFIT (every combine of an
operation runs before its first mutation). DABA's and DABALite's ``bulk_evict`` is a loop
of single evictions: a failure part-way keeps the evictions already done (the window stays
consistent). FOA, IOA, DABAChunked and FlatFAT require a total ``combine`` (the monoid
contract) and are only tested for failing ``lift``.
"""

from __future__ import annotations

import random
from typing import Any

import pytest

from fifo.fifo_family import FAMILY, UnimodularGroup, native, python
from windowagg.fifo import (
    DABA,
    DABALite,
    FlatFIT,
    Recalc,
    SubtractOnEvict,
    TwoStacks,
    TwoStacksLite,
)
from windowagg.monoids import Concat


class Boom(RuntimeError):
    pass


class Flaky:
    """Wraps a monoid; ``lift``/``combine`` raise while the matching flag is set."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.identity = inner.identity
        self.fail_lift = False
        self.fail_combine = False

    def lift(self, x: Any) -> Any:
        if self.fail_lift:
            raise Boom("lift")
        return self.inner.lift(x)

    def combine(self, a: Any, b: Any) -> Any:
        if self.fail_combine:
            raise Boom("combine")
        return self.inner.combine(a, b)

    def lower(self, a: Any) -> Any:
        return self.inner.lower(a)

    def inverse(self, a: Any) -> Any:
        return self.inner.inverse(a)


LOOPING = {"DABA", "DABALite", "DABA@native", "DABALite@native"}


def op_kind(r: float, bias: float) -> str:
    if r < bias:
        return "i"
    if r < 0.8:
        return "e"
    if r < 0.93:
        return "q"
    return "b"


def _drive(
    cls: Any, m: Flaky, values: list[Any], flag: str, seed: int, looping: bool = False
) -> int:
    rng = random.Random(seed)
    w, o = cls(m), Recalc(m.inner)
    failures = 0
    for step in range(600):
        fail = rng.random() < 0.25
        r = rng.random()
        bias = 0.6 if (step // 150) % 2 == 0 else 0.35
        before = list(w)
        setattr(m, flag, fail)
        try:
            if r < bias:
                v = values[step % len(values)]
                w.insert(v)
                op: Any = ("i", v)
            elif r < 0.8:
                if not len(o):
                    continue
                w.evict()
                op = ("e", None)
            elif r < 0.93:
                # FlatFIT's query path-compresses: a failing combine must not corrupt it
                setattr(m, flag, False)
                v = values[step % len(values)]
                w.insert(v)
                o.insert(v)
                before = list(w)
                setattr(m, flag, True)
                w.query()
                op = ("q", None)
            else:
                k = rng.randint(0, len(o))
                w.bulk_evict(k)
                op = ("b", k)
        except Boom:
            failures += 1
            setattr(m, flag, False)
            w._check()
            done = len(before) - len(w)
            if done and op_kind(r, bias) == "b" and looping:
                # a looping bulk_evict keeps the single evictions done before the failure
                assert list(w) == before[done:], (cls, step)
                o.bulk_evict(done)
            else:
                assert list(w) == before, (cls, step)
            assert w.query() == o.query()
            continue
        finally:
            setattr(m, flag, False)
        if op[0] == "i":
            o.insert(op[1])
        elif op[0] == "e":
            o.evict()
        elif op[0] == "q":
            pass
        else:
            o.bulk_evict(op[1])
        w._check()
        assert w.query() == o.query() and list(w) == list(o)
    return failures


@pytest.mark.parametrize("name", sorted(FAMILY))
def test_failing_lift_changes_nothing(name: str) -> None:
    inner: Any = UnimodularGroup() if name == "SubtractOnEvict" else Concat()
    values: list[Any] = (
        [(1, 1, 0, 1), (1, 0, 1, 1), (0, -1, 1, 0)]
        if name == "SubtractOnEvict"
        else list(range(50))
    )
    assert (
        _drive(FAMILY[name], Flaky(inner), values, "fail_lift", seed=1, looping=name in LOOPING) > 0
    )


COMBINE_ATOMIC: dict[str, Any] = {
    "DABA": python(DABA),
    "DABALite": python(DABALite),
    "TwoStacks": TwoStacks,
    "TwoStacksLite": python(TwoStacksLite),
    "FlatFIT": FlatFIT,
    "SubtractOnEvict": SubtractOnEvict,
    "DABA@native": native(DABA),
    "DABALite@native": native(DABALite),
    "TwoStacksLite@native": native(TwoStacksLite),
}


@pytest.mark.parametrize("name", sorted(COMBINE_ATOMIC))
@pytest.mark.parametrize("seed", [1, 2])
def test_failing_combine_changes_nothing(name: str, seed: int) -> None:
    cls = COMBINE_ATOMIC[name]
    if cls is SubtractOnEvict:
        inner: Any = UnimodularGroup()
        values: list[Any] = [(1, 1, 0, 1), (1, 0, 1, 1), (0, -1, 1, 0)]
    else:
        inner, values = Concat(), list(range(50))
    assert _drive(cls, Flaky(inner), values, "fail_combine", seed, looping=name in LOOPING) > 0
