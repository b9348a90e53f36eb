"""A failing ``lift`` or ``combine`` leaves the window unchanged ("loses nothing").

``lift`` runs before any mutation in every class, and so does every ``combine`` of an
operation (or the operation puts back what it changed), in every class; a ``bulk_evict``
that is a loop of single evictions undoes the evictions done before a failure.
(``test_raising_call_atomic`` checks the same with monoids that refuse some values.)
"""

from __future__ import annotations

import random
from typing import Any

import pytest

from fifo.fifo_family import FAMILY, UnimodularGroup
from windowagg.fifo import Recalc
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


def _drive(cls: Any, m: Flaky, values: list[Any], flag: str, seed: int) -> int:
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
    assert _drive(FAMILY[name], Flaky(inner), values, "fail_lift", seed=1) > 0


@pytest.mark.parametrize("name", sorted(FAMILY))
@pytest.mark.parametrize("seed", [1, 2])
def test_failing_combine_changes_nothing(name: str, seed: int) -> None:
    cls = FAMILY[name]
    if name == "SubtractOnEvict":
        inner: Any = UnimodularGroup()
        values: list[Any] = [(1, 1, 0, 1), (1, 0, 1, 1), (0, -1, 1, 0)]
    else:
        inner, values = Concat(), list(range(50))
    assert _drive(cls, Flaky(inner), values, "fail_combine", seed) > 0
