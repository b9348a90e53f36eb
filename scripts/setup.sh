#!/usr/bin/env bash
# Set up windowagg on a fresh machine: a virtual environment in .venv with the package and
# every extra installed from PyPI (pinned by constraints.txt), and Java 17+ for PySpark.
# Usage: bash scripts/setup.sh   (idempotent; re-running only fills in what is missing)
set -euo pipefail
cd "$(dirname "$0")/.."

PY=${PYTHON:-python3}
if ! "$PY" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else 1)'; then
  echo "windowagg needs Python >= 3.11; $PY is $("$PY" --version 2>&1)" >&2
  exit 1
fi
[ -x .venv/bin/python ] || "$PY" -m venv .venv
.venv/bin/python -m pip install --quiet --upgrade pip
.venv/bin/python -m pip install --quiet -c constraints.txt -e '.[all,test]'

# PySpark 4.x needs Java 17 or newer.
java_major() { java -version 2>&1 | sed -n 's/.*version "\([0-9]*\).*/\1/p' | head -n1; }
if ! command -v java >/dev/null 2>&1 || [ "$(java_major)" -lt 17 ]; then
  echo "Java 17+ not found; installing openjdk-17-jre-headless from Debian's packages" >&2
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openjdk-17-jre-headless >/dev/null
fi
java -version 2>&1 | head -n1
echo "setup done: $(.venv/bin/python --version), windowagg $(.venv/bin/python -c 'import windowagg; print(windowagg.__version__)')"
