"""Issue 13 item 18: the public API is generic over the monoid's types, for mypy users.

Runs mypy (``mypy.api.run``) on small user programs against this checkout's package:
a correct program type-checks under ``--strict``, the answer types are precise
(``DABA(Max()).query()`` is ``float | None``), and misuse such as inserting a string
into a Max window is reported; the same for FiBA, SlidingWindows and CountWindows, whose
``WindowResult.value`` has the monoid's answer type.
"""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

import pytest

import windowagg

api = pytest.importorskip("mypy.api")

SRC = str(Path(windowagg.__file__).resolve().parent.parent)

GOOD = """
from windowagg import CountWindows, SlidingWindows, fifo, ooo
from windowagg.monoids import Count, Max, Mean, Min, Sum

d = fifo.DABA(Max())
d.insert(3.0)
d.insert(4)
best: float | None = d.query()

t = fifo.TwoStacksLite(Sum())
t.insert(2)
total: float = t.query()

b = ooo.BTree(Max[str]())
b.insert(1, "kiwi")
b.bulk_insert([(2, "apple")])
word: str | None = b.query()
first: str | None = b.range_query(1, 2)

c = fifo.FlatFAT(Count())
c.insert(object())
n: int = c.query()

m = fifo.LogMTA(Mean())
m.insert(1.5)
avg: float | None = m.query()

r = ooo.Recalc(Min())
r.insert(1, 2.0)
low: float | None = r.query()

sw = SlidingWindows(Max(), 10, 5)
emitted = sw.insert(1, 2.0) + sw.advance_watermark(20) + sw.close()
top: float | None = emitted[0].value if emitted else None
cw = CountWindows(Sum(), 3)
cw.insert(1, 4)

f = ooo.FiBA(Max(), backend="native")
f.insert(3, 2.5)
f.bulk_insert([(1, 1.0)])
f_top: float | None = f.query()
f_range: float | None = f.range_query(1, 3)

reveal_type(d.query())
reveal_type(t.query())
reveal_type(b.query())
reveal_type(list(d))
reveal_type(sw.insert(2, 3.0))
reveal_type(f.query())
"""

BAD = """
from windowagg import SlidingWindows, fifo, ooo
from windowagg.monoids import Max, Sum

fifo.DABA(Max()).insert("x")
fifo.TwoStacksLite(Sum()).insert([1])
ooo.BTree(Max()).insert(1, "x")
s: str = fifo.DABA(Max()).query()
fifo.FlatFIT(Sum()).insert(None)
SlidingWindows(Max(), 10, 5).insert(1, "x")
v: str = SlidingWindows(Sum(), 10, 5).close()[0].value
ooo.FiBA(Max()).insert(1, "x")
w: str = ooo.FiBA(Sum()).query()
"""


def _mypy(tmp_path: Path, code: str) -> tuple[str, int]:
    f = tmp_path / "user_code.py"
    f.write_text(textwrap.dedent(code))
    old = os.environ.get("MYPYPATH")
    os.environ["MYPYPATH"] = SRC  # this checkout's windowagg, not an installed one
    try:
        out, err, status = api.run(
            [
                "--strict",
                "--no-error-summary",
                "--follow-imports=silent",
                "--cache-dir",
                str(tmp_path / ".mypy_cache"),
                str(f),
            ]
        )
    finally:
        if old is None:
            del os.environ["MYPYPATH"]
        else:
            os.environ["MYPYPATH"] = old
    return out + err, status


@pytest.fixture(scope="module")
def checked(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[str, int]]:
    tmp = tmp_path_factory.mktemp("typing")
    (tmp / "good").mkdir()
    (tmp / "bad").mkdir()
    return {"good": _mypy(tmp / "good", GOOD), "bad": _mypy(tmp / "bad", BAD)}


def test_correct_user_code_type_checks_with_precise_answer_types(
    checked: dict[str, tuple[str, int]],
) -> None:
    out, status = checked["good"]
    assert status == 0, out
    errors = [line for line in out.splitlines() if ": error:" in line]
    assert errors == [], out
    notes = [line.split("Revealed type is ")[1] for line in out.splitlines() if "Revealed" in line]
    assert notes == [
        '"float | None"',
        '"float"',
        '"str | None"',
        '"list[float | None]"',
        '"list[tuple[Any, Any, float | None, int, int, int, '
        'fallback=windowagg.windows._common.WindowResult[float | None]]]"',
        '"float | None"',
    ], out


def test_misuse_is_a_mypy_error(checked: dict[str, tuple[str, int]]) -> None:
    out, status = checked["bad"]
    assert status == 1, out
    lines = {int(line.split(":")[1]) for line in out.splitlines() if ": error:" in line}
    # one error per misuse line of BAD (lines 5-13 of the dedented file)
    assert lines == {5, 6, 7, 8, 9, 10, 11, 12, 13}, out
