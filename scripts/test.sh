#!/usr/bin/env bash
# Set up and run every check: type check, lint, and the whole test suite (with Spark and Redis).
# Usage: bash scripts/test.sh [extra pytest args]
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh

# The Redis backend's tests start a real redis-server on a free loopback port.
if ! command -v redis-server >/dev/null 2>&1; then
  echo "redis-server not found; installing it from Debian's packages" >&2
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server >/dev/null
fi
redis-server --version

export PYSPARK_PYTHON="$PWD/.venv/bin/python"
export PYSPARK_DRIVER_PYTHON="$PWD/.venv/bin/python"
export HYPOTHESIS_PROFILE="${HYPOTHESIS_PROFILE:-ci}"

echo "== mypy --strict src/"
.venv/bin/mypy --strict src/windowagg
echo "== ruff"
.venv/bin/ruff check src tests benchmarks
.venv/bin/ruff format --check src tests benchmarks
# Both backends pass the whole suite: first the default (the compiled core wherever it has a
# twin), then the pure-Python reference implementations.
.venv/bin/python -c 'import windowagg, sys; sys.exit(0 if windowagg.native_available() else "the compiled core did not build")'
echo "== pytest, backend auto = native (Hypothesis profile: $HYPOTHESIS_PROFILE)"
.venv/bin/python -m pytest -q -rs --timeout=900 "$@"
echo "== pytest, backend python (WINDOWAGG_BACKEND=python)"
WINDOWAGG_BACKEND=python .venv/bin/python -m pytest -q -rs --timeout=900 "$@"
