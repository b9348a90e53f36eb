"""The verbs that run without the GIL read the bounds they checked, not the caller's arrays.

``_core.WaveletMatrix.kth_slices`` and ``_core.decay_slices`` check every window's bounds,
then release the GIL for the kernel. The kernel used to read the caller's ``lo`` / ``hi``
(numpy arrays, shared): another thread, free to run once the GIL was released, could
write a bound past the end after the check, and the kernel then read out of bounds (a
crash, or under ASan a report; issue 36 item 10). Now the bounds are copied before the
check and the kernel reads the copies (``decay_slices``: a block of windows at a time,
each block's copy checked again just before the block is computed).

Each case runs in a subprocess (a crash fails the test, not the run): a writer thread
puts an out-of-range bound into the last window whenever it gets the GIL, the main
thread resets it and calls the verb, again and again. A call whose check passed must
answer from the bounds it checked, whatever the writer did meanwhile.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from windowagg._backend import native_core

_core = native_core()

_PRELUDE = """
import sys, threading
import numpy as np
from windowagg._backend import native_core
from windowagg.errors import WindowaggError

core = native_core()
sys.setswitchinterval(1e-6)
BAD = 1 << 40  # far past any buffer here
state = {"stop": False, "armed": False}

def writer(hi):
    while not state["stop"]:
        if state["armed"]:
            hi[-1] = BAD
            state["armed"] = False

def race(hi, good, call, rounds=300, most=6000):
    # at least *rounds*, then on until both outcomes were seen (a slow build, such as the
    # sanitizers', can lose the first 300 races one way: the CI of 3bd5f49 saw 0 and 0)
    t = threading.Thread(target=writer, args=(hi,))
    t.start()
    checked = moved = 0
    try:
        for i in range(most):
            if i >= rounds and checked and moved:
                break
            hi[-1] = good
            state["armed"] = True
            try:
                call()
            except WindowaggError:
                continue  # the writer ran before the check: refused, as it must be
            checked += 1
            moved += int(hi[-1] == BAD)  # the writer ran during (or just after) the call
    finally:
        state["stop"] = True
        t.join()
    return checked, moved
"""

_WAVELET = """
n, r = 1000, 100_000
codes = np.arange(n, dtype=np.int64) % 7
wm = core.WaveletMatrix(codes, 7)
lo = np.zeros(r, np.int64)
hi = np.full(r, n, np.int64)
ranks = np.full(r, n - 1, np.int64)  # the largest code of the whole sequence: 6
out = np.empty(r, np.int64)

def call():
    out[:] = -1
    wm.kth_slices(lo, hi, ranks, out)
    assert (out == 6).all(), np.unique(out)

checked, moved = race(hi, n, call)
print(checked, moved)
"""

_DECAY = """
n, r = 1000, 100_000
t = np.arange(n, dtype=np.int64)
v = np.ones(n)
lo = np.zeros(r, np.int64)
hi = np.full(r, n, np.int64)
end = np.full(r, n - 1, np.int64)
s = np.empty(r)
w = np.empty(r)

def call():
    core.decay_slices(t, v, lo, hi, end, 10.0, s, w, False)
    assert (w == w[0]).all() and (s == s[0]).all(), (w[0], w[-1])

# the writer aims at the first window: decay_slices copies and checks its bounds a block of
# windows at a time, just before the block is computed, so a write to the last window lands
# before its copy (refused) nearly always; the first window's copy is taken at the start
checked, moved = race(hi[:1], n, call)
print(checked, moved)
"""

_FIFO = """
from windowagg.fifo import TwoStacksLite
from windowagg.monoids import Sum

n, r = 1000, 100_000
agg = TwoStacksLite(Sum(), backend="native")
v = np.ones(n)
lo = np.zeros(r, np.int64)
hi = np.full(r, n, np.int64)
out = np.empty(r)

def call():
    out[:] = -1.0
    agg.query_slices(v, lo, hi, out)
    assert (out == n).all(), np.unique(out)

checked, moved = race(hi, n, call)
print(checked, moved)
"""

_ORDER = """
from windowagg.order_statistics import OrderStatistics

n, r = 1000, 100_000
s = OrderStatistics(backend="native")
v = np.arange(n, dtype=np.float64)
lo = np.zeros(r, np.int64)
hi = np.full(r, n, np.int64)
ranks = np.full((r, 1), n - 1, np.int64)
out = np.empty((r, 1))

def call():
    out[:] = -1.0
    s.kth_slices(v, lo, hi, ranks, out)
    assert (out == n - 1).all(), np.unique(out)

checked, moved = race(hi, n, call)
print(checked, moved)
"""

_CASES = {"wavelet": _WAVELET, "decay": _DECAY, "fifo": _FIFO, "order": _ORDER}


@pytest.mark.parametrize("case", sorted(_CASES))
def test_a_bound_changed_during_the_call_is_not_read(case: str) -> None:
    """The FIFO ``query_slices`` of a built-in numeric monoid over float64 and
    ``OrderStatistics.kth_slices`` over float64 run without the GIL too (issue 40): their
    bounds are ``Slices``' checked copies, as the wavelet's and the decay kernel's are."""
    if case == "decay" and not hasattr(_core, "decay_slices"):
        pytest.skip("a compiled core built before decay_slices")
    body = _CASES[case]
    code = textwrap.dedent(_PRELUDE) + textwrap.dedent(body)
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, (res.returncode, res.stdout[-2000:], res.stderr[-4000:])
    checked, moved = map(int, res.stdout.split())
    # the race was run: some calls passed their check (the others were refused), and in
    # some of those the writer had put its bound in by the time the call returned
    assert checked > 0 and moved > 0, res.stdout


_OVERLAP = """
import sys, threading, time
import numpy as np
from windowagg.fifo import TwoStacksLite
from windowagg.monoids import Sum
from windowagg.order_statistics import OrderStatistics

sys.setswitchinterval(0.001)
n = 3_000_000
v = np.arange(n, dtype=np.float64) % 97
lo = np.maximum(np.arange(n, dtype=np.int64) - 50, 0)
hi = np.arange(1, n + 1, dtype=np.int64)
fifo = TwoStacksLite(Sum(), backend="native")
order = OrderStatistics(backend="native")
ranks = np.zeros((n, 1), np.int64)
calls = {
    "fifo": lambda: fifo.query_slices(v, lo, hi, np.empty(n)),
    "order": lambda: order.kth_slices(v, lo, hi, ranks, np.empty((n, 1))),
    "held": v.tolist,  # HELD: a C loop that keeps the GIL, the reference a verb must beat
}

def rate(call):
    # iterations per second of this thread's loop while another thread is inside call(),
    # and how long the call took
    state = {"in": False, "done": False}
    def work():
        state["t0"] = time.perf_counter()
        state["in"] = True
        call()
        state["t1"] = time.perf_counter()
        state["done"] = True
    t = threading.Thread(target=work)
    count = 0
    t.start()
    while not state["done"]:
        if state["in"]:
            count += 1
    t.join()
    took = state["t1"] - state["t0"]
    return count / took, took

for name, call in calls.items():
    ratios = []
    for _ in range(3):  # the call, then a sleep as long (no GIL held), back to back
        during, took = rate(call)
        asleep, _ = rate(lambda: time.sleep(took))
        ratios.append(during / asleep)
    print(name, max(ratios))
"""


def test_the_slice_verbs_let_other_threads_run() -> None:
    """While a thread runs ``query_slices`` (built-in monoid, float64) or ``kth_slices``
    (float64), another thread runs Python code: its loop's rate during the call is compared
    with its rate during a ``time.sleep`` as long, run right after (a call that holds no
    GIL), so that the load of the machine, which slows both alike, cancels out. The best
    of three such pairs must reach 0.25. Measured (2026-12-07): 0.37-0.67 on a quiet
    machine, 0.44-0.86 beside three busy processes on the 2 cores; a C loop that keeps
    the GIL (``ndarray.tolist`` of the same 3M floats, the HELD reference printed beside)
    0.02-0.14, quiet or loaded, and put in place of the FIFO verb it fails this test. The
    earlier form compared the count with the same verbs over a list of floats and failed
    twice in loaded CI runs (2.6x and 2.7x against its margin of 2-3x)."""
    code = textwrap.dedent(_OVERLAP)
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, (res.returncode, res.stdout[-2000:], res.stderr[-4000:])
    best = {name: float(r) for name, r in (line.split() for line in res.stdout.split("\n") if line)}
    assert set(best) == {"fifo", "order", "held"}, res.stdout
    slow = {name: r for name, r in best.items() if name != "held" and r < 0.25}
    assert not slow, (slow, "a verb's best rate ratio; the GIL-holding reference:", best["held"])
