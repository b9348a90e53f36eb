"""Run one benchmark suite: ``python -m benchmarks SUITE [options]``; no SUITE lists them."""

from __future__ import annotations

import importlib
import pkgutil
import sys
from pathlib import Path


def suites() -> list[str]:
    here = Path(__file__).resolve().parent
    return sorted(
        m.name.removeprefix("bench_")
        for m in pkgutil.iter_modules([str(here)])
        if m.name.startswith("bench_")
    )


def main(argv: list[str]) -> int:
    names = suites()
    if not argv or argv[0] in ("-h", "--help"):
        print("usage: python -m benchmarks SUITE [--quick] [suite options]")
        print("suites: " + ", ".join(names))
        return 0 if argv else 2
    suite, rest = argv[0], argv[1:]
    if suite not in names:
        print(f"unknown suite {suite!r}; choose one of: {', '.join(names)}", file=sys.stderr)
        return 2
    mod = importlib.import_module(f"benchmarks.bench_{suite}")
    return int(mod.main(rest))


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
