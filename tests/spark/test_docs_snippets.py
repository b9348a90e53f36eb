"""Every ```python block of README.md and docs/*.md runs, so that no snippet can rot.

Blocks written as doctests (``>>>``) are run, and their output checked, by pytest's
``--doctest-glob=*.md``; this module runs the others as scripts, each in a fresh namespace
and a temporary working directory. Blocks that use Spark are marked ``spark`` and run on
the test session's one SparkSession (their own ``session()`` call returns it).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
_BLOCK = re.compile(r"^```python[^\n]*\n(.*?)^```", re.DOTALL | re.MULTILINE)


def _blocks() -> list[Any]:
    params = []
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        text = path.read_text()
        for m in _BLOCK.finditer(text):
            code = m.group(1)
            if code.lstrip().startswith(">>>"):
                continue  # a doctest: --doctest-glob runs it
            line = text.count("\n", 0, m.start()) + 1
            name = f"{path.relative_to(ROOT)}:{line}"
            marks = [pytest.mark.spark] if "windowagg.spark" in code else []
            params.append(pytest.param(name, code, marks=marks, id=name))
    return params


BLOCKS = _blocks()


def test_the_blocks_are_found() -> None:
    names = [p.values[0] for p in BLOCKS]
    assert any(n.startswith("README.md") for n in names)
    assert sum(n.startswith("docs/spark.md") for n in names) >= 3


@pytest.mark.parametrize(("name", "code"), BLOCKS)
def test_snippet_runs(name: str, code: str, request: Any, tmp_path: Path, monkeypatch: Any) -> None:
    if "windowagg.spark" in code:
        request.getfixturevalue("spark")  # the shared session: the snippet's session() gets it
    monkeypatch.chdir(tmp_path)
    exec(compile(code, name, "exec"), {"__name__": "__snippet__"})
