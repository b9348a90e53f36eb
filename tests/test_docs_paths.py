"""The docs and the committed results name no path of the machine they were written on.

Their commands run from the repository root as written (``.venv/bin/python``,
``.venv-flink/bin/python``, ``build/...``), on any clone: a scratch clone under ``/tmp``, a
separate virtual environment under ``/work`` or a home directory is nowhere else.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MACHINE_PATH = re.compile(r"(?<![\w:/.])/(?:work|tmp|root|home)/")
PAGES = sorted(
    [
        ROOT / "README.md",
        *(ROOT / "docs").rglob("*.md"),
        *(ROOT / "benchmarks" / "results").glob("*.md"),
        *(ROOT / "benchmarks" / "results").glob("*.json"),
    ]
)


def test_the_pages_are_found() -> None:
    names = {p.relative_to(ROOT).as_posix() for p in PAGES}
    assert {"README.md", "docs/performance.md", "docs/performance/spark.md"} <= names


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_no_machine_paths(page: Path) -> None:
    hits = [
        f"{page.relative_to(ROOT)}:{n}: {line.strip()}"
        for n, line in enumerate(page.read_text().splitlines(), 1)
        if MACHINE_PATH.search(line)
    ]
    assert not hits, "machine paths (write them relative to the repository root):\n" + "\n".join(
        hits
    )
