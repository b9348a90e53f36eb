"""Add up the closing lines of several pytest runs into one closing line.

scripts/test.sh and .ci/run run pytest more than once (the suite but Spark under xdist, the
Spark tests in one process, the sanitized core); each run's output is appended to a log, and
this prints one line in pytest's own form, e.g.
``===== 4321 passed, 2100 skipped, 3 deselected in 812.40s (3 pytest runs) =====``, so that the
log's last line counts every test of every run. It exits 1 if no closing line is found.

Usage: python scripts/pytest_totals.py LOG [LOG ...]
"""

from __future__ import annotations

import re
import sys

# pytest's closing line: "12 passed, 3 skipped in 4.56s" or "= 1 failed, 2 passed in 3.0s (0:00:03) ="
_LINE = re.compile(r"^=*\s*((?:\d+ [a-z]+(?:, )?)+) in ([0-9.]+)s\b")
_COUNT = re.compile(r"(\d+) ([a-z]+)")
_ORDER = ("failed", "passed", "skipped", "deselected", "xfailed", "xpassed", "warnings", "errors")


def main(paths: list[str]) -> int:
    totals: dict[str, int] = {}
    seconds = 0.0
    runs = 0
    for path in paths:
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                if "pytest runs) =" in line:
                    continue  # a total printed by this script: its runs are in the log too
                m = _LINE.match(line.strip())
                if m is None:
                    continue
                runs += 1
                seconds += float(m.group(2))
                for n, word in _COUNT.findall(m.group(1)):
                    word = {"warning": "warnings", "error": "errors"}.get(word, word)
                    totals[word] = totals.get(word, 0) + int(n)
    if runs == 0:
        print(f"no pytest closing line in {', '.join(paths)}", file=sys.stderr)
        return 1
    words = sorted(totals, key=lambda w: _ORDER.index(w) if w in _ORDER else len(_ORDER))
    counts = ", ".join(f"{totals[w]} {w}" for w in words)
    print(f"===== {counts} in {seconds:.2f}s ({runs} pytest runs) =====")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
