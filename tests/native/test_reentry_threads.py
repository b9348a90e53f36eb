"""Re-entrant calls and threads on the native classes (issue 26, defects 1 and 2).

A user's monoid (or a value's ``<``) runs inside the native operations, so it can call back
into its own window, and the interpreter can switch threads inside it. Each native class
must refuse a change from inside its own callbacks with ``StateError`` and stay as it was,
allow the reads (``query``, ``len``, ``to_bytes``; FiBA: ``len`` only, its tree is
mid-restructuring there), keep every call atomic when the refusal propagates out of the
callback, and serialise two threads (docs/native.md, "Re-entrancy and threads").

The state machines drive a user monoid whose partials are tuples of the inserted values
(a non-commutative monoid: ``query()`` is the window's contents in order), in lockstep with
a list (FIFO), a dict (FiBA) or a sorted list (OrderStatistics), with ``_check()`` after
every step. The thread tests run in a subprocess: a crash fails the test, not the run.
"""

from __future__ import annotations

import functools
import subprocess
import sys
import textwrap
from collections.abc import Callable
from typing import Any, ClassVar

import pytest
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from windowagg import OrderStatistics
from windowagg._backend import native_core
from windowagg.errors import StateError
from windowagg.fifo import AMTA, DABA, DABALite, TwoStacksLite
from windowagg.ooo import FiBA

_core = native_core()
FIFO: dict[str, Any] = {
    "TwoStacksLite": TwoStacksLite,
    "DABALite": DABALite,
    "DABA": DABA,
    **({"AMTA": AMTA} if hasattr(_core, "AMTA") else {}),
}
# bulk_evict loops over single evictions in these; when the monoid refuses again while the
# evictions already done are put back (a refusal that persists), they stay done, as in the
# Python reference (docs/fifo.md, "Failures lose nothing")
LOOPED_EVICT = {"DABA", "DABALite"}


class Plan:
    """What the monoid does at its combines during one outer call.

    From combine number ``delay`` on (once, or at every combine if ``persistent``) it calls
    ``attempt(window)``; a refused change is re-raised out of the combine if ``propagate``.
    Every breach of the rules is appended to ``errors``.
    """

    def __init__(
        self,
        attempt: Callable[[Any], Any],
        write: bool,
        delay: int,
        persistent: bool,
        propagate: bool,
    ) -> None:
        self.attempt, self.write = attempt, write
        self.delay, self.persistent, self.propagate = delay, persistent, propagate
        self.calls = 0
        self.fired = 0
        self.inside = False  # a read's own combines do not fire again
        self.errors: list[str] = []

    def __call__(self, w: Any) -> None:
        self.calls += 1
        if self.inside or self.calls <= self.delay or (self.fired and not self.persistent):
            return
        self.fired += 1
        self.inside = True
        try:
            self.attempt(w)
        except StateError as e:
            if not self.write:
                self.errors.append(f"a read was refused: {e}")
            elif "re-entrant" not in str(e):
                self.errors.append(f"StateError without 're-entrant': {e}")
            if self.propagate:
                raise
        except Exception as e:  # any other error is a breach
            self.errors.append(f"{type(e).__name__}: {e}")
        else:
            if self.write:
                self.errors.append("a re-entrant change was accepted")
        finally:
            self.inside = False


class Tuples:
    """A user monoid (so the generic path): concatenation of tuples, calling a hook."""

    identity: ClassVar[tuple[Any, ...]] = ()

    def __init__(self) -> None:
        self.window: Any = None
        self.plan: Plan | None = None

    def lift(self, v: Any) -> tuple[Any, ...]:
        return (v,)

    def combine(self, a: tuple[Any, ...], b: tuple[Any, ...]) -> tuple[Any, ...]:
        if self.plan is not None and self.window is not None:
            self.plan(self.window)
        return a + b

    def lower(self, a: tuple[Any, ...]) -> tuple[Any, ...]:
        return a


values = st.integers(0, 99)
propagates = st.booleans()


def fifo_attempts(v: int) -> dict[str, tuple[Callable[[Any], Any], bool]]:
    return {
        "insert": (lambda w: w.insert(v), True),
        "evict": (lambda w: w.evict(), True),
        "bulk_insert": (lambda w: w.bulk_insert([v, v]), True),
        "bulk_evict": (lambda w: w.bulk_evict(1), True),
        "slide": (lambda w: w.slide([v], 1), True),
        "load": (lambda w: w._load_partials([(v,)]), True),
        "query": (lambda w: w.query(), False),
        "len": (len, False),
        "to_bytes": (lambda w: w.to_bytes(), False),
        "iter": (list, False),
        "query_slices": (lambda w: w.query_slices([1, 2, 3], [0, 1], [2, 3]), False),
    }


plans = st.tuples(
    st.sampled_from(sorted(fifo_attempts(0))), st.integers(0, 3), st.booleans(), propagates
)


class FifoReentry(RuleBasedStateMachine):
    name: ClassVar[str] = ""

    def __init__(self) -> None:
        super().__init__()
        self.m = Tuples()
        self.w = FIFO[self.name](self.m, backend="native")
        self.m.window = self.w
        self.ref: list[int] = []

    def contents(self) -> list[int]:
        return [p[0] for p in self.w]

    def call(
        self,
        plan: tuple[str, int, bool, bool],
        v: int,
        op: Callable[[], Any],
        states: list[list[int]],
    ) -> Any:
        """Run op() under the plan; states[-1] is the expected result, the others the
        states a raising call may leave (steps of an array verb already done)."""
        verb, delay, persistent, propagate = plan
        attempt, write = fifo_attempts(v)[verb]
        p = Plan(attempt, write, delay, persistent, propagate)
        self.m.plan = p
        try:
            out = op()
            raised = None
        except StateError as e:
            raised = e
            out = None
        finally:
            self.m.plan = None
        assert not p.errors, p.errors
        got = self.contents()
        if raised is None:
            assert got == states[-1]
        else:
            assert propagate and write, raised
            assert got in states[:-1] or got == states[0], (got, states)
        self.ref = got
        return out if raised is None else None

    @rule(v=values, plan=plans)
    def insert(self, v: int, plan: Any) -> None:
        self.call(plan, v, lambda: self.w.insert(v), [self.ref, [*self.ref, v]])

    @rule(plan=plans)
    def evict(self, plan: Any) -> None:
        if self.ref:
            self.call(plan, 0, self.w.evict, [self.ref, self.ref[1:]])

    @rule(k=st.integers(0, 4), plan=plans)
    def bulk_evict(self, k: int, plan: Any) -> None:
        k = min(k, len(self.ref))
        states = (
            [self.ref[j:] for j in range(k + 1)]
            if self.name in LOOPED_EVICT
            else [self.ref, self.ref[k:]]
        )
        self.call(plan, 0, lambda: self.w.bulk_evict(k), states)

    @rule(vs=st.lists(values, max_size=4), plan=plans)
    def bulk_insert(self, vs: list[int], plan: Any) -> None:
        self.call(
            plan, 0, lambda: self.w.bulk_insert(vs), [self.ref + vs[:j] for j in range(len(vs) + 1)]
        )

    @rule(vs=st.lists(values, min_size=1, max_size=3), e=st.integers(0, 2), plan=plans)
    def slide(self, vs: list[int], e: int, plan: Any) -> None:
        if len(self.ref) < e or (e > 1 and len(self.ref) - (e - 1) * (len(vs) - 1) < e):
            return  # every step's count must fit (each step evicts e, inserts 1)
        states, cur, answers = [self.ref], list(self.ref), []
        for x in vs:
            for _ in range(e):  # one state per single eviction (see LOOPED_EVICT)
                cur = cur[1:]
                if self.name in LOOPED_EVICT or e == 1:
                    states.append(cur)
            if e > 1 and self.name not in LOOPED_EVICT:
                states.append(cur)
            cur = [*cur, x]
            states.append(cur)
            answers.append(tuple(cur))
        # a step's query() raising leaves that step's insert done, the last one's included
        out = self.call(plan, 0, lambda: self.w.slide(vs, e), [*states, states[-1]])
        if out is not None:
            assert out == answers

    @rule(plan=plans)
    def query(self, plan: Any) -> None:
        out = self.call(plan, 0, self.w.query, [self.ref])
        if out is not None:
            assert out == tuple(self.ref)

    @invariant()
    def consistent(self) -> None:
        self.w._check()
        assert self.w.query() == tuple(self.ref)
        assert len(self.w) == len(self.ref)


def _fifo_case(name: str) -> Any:
    machine = type(f"FifoReentry_{name}", (FifoReentry,), {"name": name})
    return machine.TestCase


TestFifoReentryTwoStacksLite = _fifo_case("TwoStacksLite")
TestFifoReentryDABALite = _fifo_case("DABALite")
TestFifoReentryDABA = _fifo_case("DABA")
if "AMTA" in FIFO:
    TestFifoReentryAMTA = _fifo_case("AMTA")


def fiba_attempts(t: int, v: int) -> dict[str, tuple[Callable[[Any], Any], bool]]:
    return {
        "insert": (lambda w: w.insert(t, v), True),
        "evict": (lambda w: w.evict(t), True),
        "bulk_insert": (lambda w: w.bulk_insert([t, t + 1], [v, v]), True),
        "bulk_evict": (lambda w: w.bulk_evict(t), True),
        "slide": (lambda w: w.slide([t], [v]), True),
        # the tree is mid-restructuring inside its monoid: only len() (and the ends) read
        "query": (lambda w: w.query(), True),
        "to_bytes": (lambda w: w.to_bytes(), True),
        "len": (len, False),
    }


fiba_plans = st.tuples(
    st.sampled_from(sorted(fiba_attempts(0, 0))), st.integers(0, 4), st.booleans(), propagates
)
times = st.integers(0, 40)


class FibaReentry(RuleBasedStateMachine):
    """ooo.FiBA (min_arity 2: many splits and merges) against a dict of partials."""

    def __init__(self) -> None:
        super().__init__()
        self.m = Tuples()
        self.w = FiBA(self.m, min_arity=2, backend="native")
        self.m.window = self.w
        self.ref: dict[int, tuple[int, ...]] = {}

    def contents(self) -> dict[int, tuple[int, ...]]:
        return dict(self.w.to_partials())

    def call(self, plan: Any, op: Callable[[], Any], after: dict[int, tuple[int, ...]]) -> None:
        verb, delay, persistent, propagate = plan
        attempt, write = fiba_attempts(7, 1)[verb]
        p = Plan(attempt, write, delay, persistent, propagate)
        self.m.plan = p
        try:
            op()
            raised = False
        except StateError:
            raised = True
        finally:
            self.m.plan = None
        assert not p.errors, p.errors
        got = self.contents()
        if raised:  # every FiBA mutator is atomic
            assert propagate and write
            assert got == self.ref
        else:
            assert got == after
        self.ref = got

    @rule(t=times, v=values, plan=fiba_plans)
    def insert(self, t: int, v: int, plan: Any) -> None:
        after = dict(self.ref)
        after[t] = (*after.get(t, ()), v)
        self.call(plan, lambda: self.w.insert(t, v), after)

    @rule(t=times, plan=fiba_plans)
    def evict(self, t: int, plan: Any) -> None:
        self.call(plan, lambda: self.w.evict(t), {k: p for k, p in self.ref.items() if k != t})

    @rule(t=times, plan=fiba_plans)
    def bulk_evict(self, t: int, plan: Any) -> None:
        self.call(plan, lambda: self.w.bulk_evict(t), {k: p for k, p in self.ref.items() if k > t})

    @rule(ts=st.lists(times, max_size=6), plan=fiba_plans)
    def bulk_insert(self, ts: list[int], plan: Any) -> None:
        after = dict(self.ref)
        for t in ts:
            after[t] = (*after.get(t, ()), t)
        self.call(plan, lambda: self.w.bulk_insert(ts, ts), after)

    @invariant()
    def consistent(self) -> None:
        self.w._check()
        expected: tuple[int, ...] = ()
        for t in sorted(self.ref):
            expected += self.ref[t]
        assert self.w.query() == expected
        assert len(self.w) == len(self.ref)


TestFibaReentry = FibaReentry.TestCase


@functools.total_ordering
class Hooked:
    """An ordered non-number whose ``<`` calls a hook (OrderStatistics keeps objects)."""

    hook: ClassVar[Callable[[], None] | None] = None

    def __init__(self, v: int) -> None:
        self.v = v

    def __eq__(self, o: object) -> bool:
        return isinstance(o, Hooked) and self.v == o.v

    def __lt__(self, o: Hooked) -> bool:
        if Hooked.hook is not None:
            Hooked.hook()
        return self.v < o.v

    def __hash__(self) -> int:
        return hash(self.v)

    def __repr__(self) -> str:
        return f"Hooked({self.v})"


def os_attempts(v: int) -> dict[str, tuple[Callable[[Any], Any], bool]]:
    return {
        "insert": (lambda s: s.insert(Hooked(v)), True),
        "evict": (lambda s: s.evict(Hooked(v)), True),
        "bulk_insert": (lambda s: s.bulk_insert([Hooked(v)]), True),
        "rank": (lambda s: s.rank(Hooked(v)), False),
        "len": (len, False),
        "quantile": (lambda s: s.quantile(0.5) if len(s) else None, False),
    }


class OrderStatisticsReentry(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.s = OrderStatistics(backend="native")
        self.ref: list[int] = []

    def call(self, plan: Any, op: Callable[[], Any], after: list[int]) -> None:
        verb, delay, persistent, propagate = plan
        attempt, write = os_attempts(5)[verb]
        p = Plan(attempt, write, delay, persistent, propagate)
        Hooked.hook = lambda: p(self.s)
        try:
            op()
            raised = False
        except StateError:
            raised = True
        finally:
            Hooked.hook = None
        assert not p.errors, p.errors
        got = sorted(h.v for h in self.s)
        if raised:
            assert propagate and write
            assert got == self.ref
        else:
            assert got == after
        self.ref = got

    @rule(
        v=values,
        plan=st.tuples(
            st.sampled_from(sorted(os_attempts(0))), st.integers(0, 3), st.booleans(), propagates
        ),
    )
    def insert(self, v: int, plan: Any) -> None:
        self.call(plan, lambda: self.s.insert(Hooked(v)), sorted([*self.ref, v]))

    @rule(
        i=st.integers(0, 50),
        plan=st.tuples(
            st.sampled_from(sorted(os_attempts(0))), st.integers(0, 3), st.booleans(), propagates
        ),
    )
    def evict(self, i: int, plan: Any) -> None:
        if self.ref:
            v = self.ref[i % len(self.ref)]
            after = list(self.ref)
            after.remove(v)
            self.call(plan, lambda: self.s.evict(Hooked(v)), after)

    @invariant()
    def consistent(self) -> None:
        self.s._check()
        assert len(self.s) == len(self.ref)
        if self.ref:
            assert self.s.kth(0).v == self.ref[0]


TestOrderStatisticsReentry = OrderStatisticsReentry.TestCase


# ------------------------------------------------------------------ the cases


@pytest.mark.parametrize("name", sorted(FIFO))
@pytest.mark.parametrize("verb", ["insert", "evict", "bulk_insert", "slide"])
def test_reentrant_change_is_refused_and_the_window_stays_right(name: str, verb: str) -> None:
    # issue 26: DABA/DABALite crashed, TwoStacksLite/AMTA answered 66 for contents of 67
    holder: list[Any] = []
    seen: list[BaseException] = []

    class Sneaky(Tuples):
        def combine(self, a: Any, b: Any) -> Any:
            if holder:
                w = holder.pop()
                try:
                    fifo_attempts(7)[verb][0](w)
                except StateError as e:
                    seen.append(e)
            return a + b

    w = FIFO[name](Sneaky(), backend="native")
    w.bulk_insert(range(1, 12))
    holder.append(w)
    w.insert(1)
    w.evict()
    assert len(seen) == 1 and f"fifo.{name}.{verb}()" in str(seen[0]), seen
    assert "after the outer call returns" in str(seen[0])
    assert w.query() == tuple([*range(2, 12), 1])
    w._check()


@pytest.mark.parametrize("verb", ["insert", "evict", "bulk_evict", "bulk_insert"])
def test_fiba_refused_reentry_leaves_the_tree_as_it_was(verb: str) -> None:
    # issue 26: after a refused re-entrant call the tree failed _check(); here the monoid
    # refuses every combine while it tries, the putting back included
    trying: list[Any] = []

    class Sneaky(Tuples):
        def combine(self, a: Any, b: Any) -> Any:
            if trying:
                trying[0].evict(3)
            return a + b

    w = FiBA(Sneaky(), min_arity=2, backend="native")
    for t in range(1, 30):
        w.insert(t, t)
    before = w.to_partials()
    trying.append(w)
    with pytest.raises(StateError, match="re-entrant"):
        if verb == "insert":
            w.insert(40, 1)
        elif verb == "evict":
            w.evict(7)
        elif verb == "bulk_evict":
            w.bulk_evict(9)
        else:
            w.bulk_insert([50, 51, 5], [1, 2, 3])
    assert len(w) == 29
    trying.clear()
    assert w.to_partials() == before
    w._check()
    assert w.query() == tuple(range(1, 30))


# ------------------------------------------------------------------ threads

_THREADS = textwrap.dedent(
    """
    import sys, threading
    from windowagg.errors import StateError
    from windowagg.fifo import AMTA, DABA, DABALite, TwoStacksLite
    from windowagg.ooo import FiBA
    from windowagg import OrderStatistics
    from windowagg.monoids import Sum

    name = sys.argv[1]
    sys.setswitchinterval(1e-6)  # switch threads as often as the interpreter can

    class Slow(Sum):  # a user monoid: the generic path, the GIL switches inside combine
        def combine(self, a, b):
            x = 0
            for i in range(3):
                x += i
            return a + b

    class V:  # an ordered non-number: OrderStatistics compares it in Python
        def __init__(self, v):
            self.v = v
        def __lt__(self, o):
            x = 0
            for i in range(3):
                x += i
            return self.v < o.v
        def __eq__(self, o):
            return self.v == o.v
        def __ne__(self, o):
            return self.v != o.v

    cls = {"TwoStacksLite": TwoStacksLite, "DABALite": DABALite, "DABA": DABA, "AMTA": AMTA}
    if name == "FiBA":
        w = FiBA(Slow(), min_arity=2, backend="native")
    elif name == "OrderStatistics":
        w = OrderStatistics(backend="native")
    else:
        w = cls[name](Slow(), backend="native")
    errors, inserted = [], [0, 0]
    N = 1500

    def worker(k):
        base = 1 if k == 0 else 10**6
        try:
            for i in range(N):
                if name == "FiBA":
                    w.insert(2 * i + k, base)
                    w.query()
                    if i % 3 == 2:
                        w.bulk_evict(2 * (i - 20) + k)
                elif name == "OrderStatistics":
                    w.insert(V(base + i))
                    w.rank(V(base))
                    if i % 3 == 2:
                        w.evict(V(base + i))
                else:
                    w.insert(base)
                    w.query()
                    if i % 5 == 4:
                        w.slide([base], 1)
                    if i % 7 == 6:
                        w.bulk_evict(1)
                inserted[k] += 1
        except StateError as e:
            errors.append(str(e))

    ts = [threading.Thread(target=worker, args=(k,)) for k in (0, 1)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    w._check()
    assert not errors, errors[:3]
    if name == "OrderStatistics":
        vals = list(w)
        assert len(w) == len(vals) == 2 * (N - N // 3)
    elif name == "FiBA":
        assert w.query() == sum(p for _, p in w.to_partials())
    else:
        assert w.query() == sum(w), (w.query(), sum(w))
    print("ok", len(w))
    """
)


@pytest.mark.parametrize("name", [*sorted(FIFO), "FiBA", "OrderStatistics"])
def test_two_threads_are_serialised(name: str) -> None:
    # issue 26: two threads on one native DABA / DABALite with a Python monoid segfaulted
    r = subprocess.run(
        [sys.executable, "-c", _THREADS, name], capture_output=True, text=True, timeout=300
    )
    assert r.returncode == 0, (r.returncode, r.stdout[-2000:], r.stderr[-3000:])
    assert r.stdout.startswith("ok"), r.stdout


_WAIT = textwrap.dedent(
    """
    import sys, threading, time
    from windowagg import OrderStatistics
    from windowagg.fifo import AMTA, DABA, DABALite, TwoStacksLite
    from windowagg.monoids import Sum
    from windowagg.ooo import FiBA

    name = sys.argv[1]
    started = threading.Event()
    slow = []

    def pause():
        if slow:
            started.set()
            time.sleep(0.2)  # the GIL is released here: the other thread runs

    class Blocking(Sum):
        def combine(self, a, b):
            pause()
            return a + b

    class V:
        def __init__(self, v):
            self.v = v
        def __lt__(self, o):
            pause()
            return self.v < o.v
        def __eq__(self, o):
            return self.v == o.v

    if name == "OrderStatistics":
        w = OrderStatistics(backend="native")
        w.bulk_insert([V(1), V(2), V(3)])
        insert, read, expected = (lambda: w.insert(V(10))), (lambda: w.rank(V(100))), 4
    elif name == "FiBA":
        w = FiBA(Blocking(), min_arity=2, backend="native")
        w.bulk_insert([1, 2, 3], [1, 2, 3])
        insert, read, expected = (lambda: w.insert(4, 10)), w.query, 16
    else:
        cls = {"TwoStacksLite": TwoStacksLite, "DABALite": DABALite, "DABA": DABA, "AMTA": AMTA}[name]
        w = cls(Blocking(), backend="native")
        w.bulk_insert([1, 2, 3])
        insert, read, expected = (lambda: w.insert(10)), w.query, 16
    answers = []

    def reader():
        started.wait()
        answers.append(read())  # waits for the insert, then answers after it

    t = threading.Thread(target=reader)
    t.start()
    slow.append(1)
    insert()
    slow.clear()
    t.join()
    assert answers == [expected], answers
    print("ok")
    """
)


@pytest.mark.parametrize("name", [*sorted(FIFO), "FiBA", "OrderStatistics"])
def test_a_second_thread_waits_for_the_running_call(name: str) -> None:
    # deterministic: the reader calls while the writer sleeps inside its monoid / comparison
    r = subprocess.run(
        [sys.executable, "-c", _WAIT, name], capture_output=True, text=True, timeout=120
    )
    assert r.returncode == 0 and r.stdout.startswith("ok"), (
        r.returncode,
        r.stdout,
        r.stderr[-3000:],
    )
