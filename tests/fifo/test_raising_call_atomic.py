"""Issue 13 item 7: a call that raises leaves the structure exactly as before.

Every FIFO and out-of-order aggregator (FiBA has its own machine) runs random operations
over monoids whose ``combine`` refuses some values *depending on the values* (not a flag):

- ``LooseSum``: ``a + b`` with no lift check, fed ints and strings (``0 + "x"`` raises,
  ``"x" + "y"`` does not);
- ``Picky``: Concat whose combine refuses any result of two or more entries that holds a
  negative number (so a negative entry may sit alone but never be combined).

Before each operation the observable state is taken (``query()`` or the type of its
error, ``len``, iteration, and the outcome of ``_check()``); after an operation that
raises it must be the same. After one that succeeds, iteration must match a list model.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fifo.fifo_family import DEFAULT_BACKEND, NATIVE_CLASSES, native
from windowagg import fifo, ooo


class LooseSum:
    """Sum without input checks: combining an int and a str raises TypeError."""

    identity = 0
    commutative = True

    def lift(self, x: Any) -> Any:
        return x

    def combine(self, a: Any, b: Any) -> Any:
        return a + b

    def lower(self, a: Any) -> Any:
        return a

    def inverse(self, a: Any) -> Any:
        return -a


class Refused(ValueError):
    pass


class Picky:
    """Concat refusing a combined partial of two or more entries with a negative one."""

    identity: tuple[Any, ...] = ()

    def lift(self, x: Any) -> tuple[Any, ...]:
        return (x,)

    def combine(self, a: tuple[Any, ...], b: tuple[Any, ...]) -> tuple[Any, ...]:
        out = a + b
        if len(out) > 1 and any(x < 0 for x in out):
            raise Refused(f"refused {out!r}")
        return out

    def lower(self, a: tuple[Any, ...]) -> tuple[Any, ...]:
        return a


def _outcome(f: Any) -> Any:
    try:
        return ("ok", f())
    except Exception as exc:
        return ("raised", type(exc).__name__)


def snapshot(w: Any) -> Any:
    return (_outcome(w.query), len(w), _outcome(lambda: list(w)), _outcome(w._check))


FIFO: dict[str, Any] = {**DEFAULT_BACKEND, "SubtractOnEvict": fifo.SubtractOnEvict}
OOO: dict[str, Any] = {
    "Recalc": ooo.Recalc,
    "BTree": lambda m: ooo.BTree(m, min_arity=2),
}

loose_values = st.one_of(st.integers(-3, 3), st.sampled_from(["x", "y"]))
picky_values = st.integers(-1, 9)

fifo_ops = st.lists(
    st.one_of(
        st.tuples(st.just("insert"), st.integers(0, 10**6)),
        st.tuples(st.just("evict"), st.just(0)),
        st.tuples(st.just("bulk_evict"), st.integers(0, 4)),
    ),
    max_size=60,
)


def _monoid_and_values(kind: str, name: str) -> tuple[Any, st.SearchStrategy[Any]]:
    if kind == "loose" or name == "SubtractOnEvict":
        return LooseSum(), loose_values
    return Picky(), picky_values


@pytest.mark.parametrize("kind", ["loose", "picky"])
@pytest.mark.parametrize("name", sorted(FIFO))
@given(data=st.data())
def test_fifo_raising_call_changes_nothing(name: str, kind: str, data: Any) -> None:
    m, values = _monoid_and_values(kind, name)
    w = FIFO[name](m)
    model: list[Any] = []
    raised = 0
    for _ in range(data.draw(st.integers(0, 60))):
        op = data.draw(st.sampled_from(["insert", "insert", "evict", "bulk_evict"]))
        before = snapshot(w)
        try:
            if op == "insert":
                v = data.draw(values)
                w.insert(v)
                model.append(m.lift(v))
            elif op == "evict":
                if not model:
                    continue
                w.evict()
                del model[0]
            else:
                k = data.draw(st.integers(0, len(model)))
                w.bulk_evict(k)
                del model[:k]
        except (TypeError, ValueError):
            raised += 1
            assert snapshot(w) == before, (name, op)
            continue
        assert list(w) == model, (name, op)


@pytest.mark.parametrize("kind", ["loose", "picky"])
@pytest.mark.parametrize("name", sorted(OOO))
@given(data=st.data())
def test_ooo_raising_call_changes_nothing(name: str, kind: str, data: Any) -> None:
    m, values = _monoid_and_values(kind, name)
    w = OOO[name](m)
    model: dict[int, Any] = {}
    times = st.integers(0, 12)
    for _ in range(data.draw(st.integers(0, 60))):
        op = data.draw(st.sampled_from(["insert", "insert", "evict", "bulk_evict", "bulk_insert"]))
        before = snapshot(w)
        try:
            if op == "insert":
                t, v = data.draw(times), data.draw(values)
                w.insert(t, v)
                p = m.lift(v)
                model[t] = m.combine(model[t], p) if t in model else p
            elif op == "evict":
                t = data.draw(times)
                w.evict(t)
                model.pop(t, None)
            elif op == "bulk_evict":
                t = data.draw(times)
                w.bulk_evict(t)
                model = {k: p for k, p in model.items() if k > t}
            else:
                pairs = data.draw(st.lists(st.tuples(times, values), max_size=5))
                w.bulk_insert(pairs)
                for t, v in pairs:
                    p = m.lift(v)
                    model[t] = m.combine(model[t], p) if t in model else p
        except (TypeError, ValueError):
            assert snapshot(w) == before, (name, op)
            continue
        assert list(w) == sorted(model.items()), (name, op)


@pytest.mark.parametrize("kind", ["loose", "picky"])
@pytest.mark.parametrize("name", sorted(NATIVE_CLASSES))
@given(data=st.data())
def test_native_raises_where_the_reference_raises(name: str, kind: str, data: Any) -> None:
    """The native twin refuses exactly the calls the Python class refuses (same combines,
    in the same order), and both change nothing when they do."""
    m, values = _monoid_and_values(kind, name)
    ref = NATIVE_CLASSES[name](m, backend="python")
    w = native(NATIVE_CLASSES[name])(m)
    for _ in range(data.draw(st.integers(0, 60))):
        op = data.draw(st.sampled_from(["insert", "insert", "evict", "bulk_evict"]))
        if op == "insert":
            arg = data.draw(values)
        elif op == "evict":
            if not len(ref):
                continue
            arg = None
        else:
            arg = data.draw(st.integers(0, len(ref)))
        outcomes = []
        for x in (ref, w):
            call = getattr(x, op)
            outcomes.append(_outcome(call if arg is None else lambda c=call, a=arg: c(a)))
        assert outcomes[0] == outcomes[1], (name, op, arg)
        assert snapshot(w) == snapshot(ref), (name, op, arg)
