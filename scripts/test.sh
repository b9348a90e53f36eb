#!/usr/bin/env bash
# Set up and run every check: type check, lint, and the whole test suite (with Spark and Redis).
# Usage: bash scripts/test.sh [extra pytest args, given to both pytest runs]
#
# Layout (CI runs this, then scripts/test_native_sanitized.sh: see .ci/run):
#   1. setup.sh (idempotent), redis-server, mypy --strict src/, ruff check + format --check
#   2. pytest, everything but Spark, on 2 xdist workers (-n 2 --dist loadgroup): tests/,
#      the doctests of src/, docs/ and README.md. Backend twins (tests/conftest.py): with
#      WINDOWAGG_BACKEND unset, each test is collected as [native] and [python]; the
#      [python] twin runs where the [native] one built the compiled core through the default
#      backend (its result can differ), and is skipped, with one folded `-rs` line, where it
#      did not. Tests that choose their backends themselves (tests/native, the @native fifo
#      labels, fiba_backend) run once; the doctests run once, on the default (native).
#      WINDOWAGG_BACKEND=python (or native) bash scripts/test.sh runs everything on that one.
#   3. pytest -m spark, one process: the one local SparkSession of tests/spark/conftest.py,
#      shared by tests/spark and tests/cli (any test that requests `spark` is marked spark).
#      Spark starts its own Python workers, so these run once, on the default backend; the
#      engine they drive is covered on both backends by step 2.
#   4. one closing line adding up both runs (scripts/pytest_totals.py).
# Times (2-core machine shared with other sessions, so every figure is inflated; issue 29's
# report has the commands). Before, each pass ran the whole suite and CI ran two: tests/fifo
# + tests/ooo took 419 s + 234 s for ONE pass at load 4-12 (1306 s for CI's two); in this
# layout (step 2's command on those two directories) they take 641 s in all at load 14-17,
# the 59 [python] twins that run costing 113 s of 1202 s of test time (645 are skipped).
# Spark, the CLI's Spark tests and the doctests now run once instead of twice. Expected on an
# idle 2-core machine: step 2 about 6-8 min, step 3 about 4 min, step 1 about 1 min once the
# venv exists (a fresh clone adds the set-up and the compiled core's build).
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
.venv/bin/python -c 'import windowagg, sys; sys.exit(0 if windowagg.native_available() else "the compiled core did not build")'

log_dir=$(mktemp -d)
trap 'rm -rf "$log_dir"' EXIT
# run_pytest NAME ARGS...: one pytest run, its output kept for the closing line. Exit 5 (no
# test selected) is an error, except when the caller's own arguments narrowed the run.
run_pytest() {
  local name=$1 rc=0
  shift
  .venv/bin/python -m pytest -q -rs --timeout=900 "$@" 2>&1 | tee "$log_dir/$name.log" || rc=$?
  if [ "$rc" -eq 5 ] && [ "$n_user_args" -gt 0 ]; then
    echo "(no test of the '$name' run matches the arguments given)"
    return 0
  fi
  return "$rc"
}
n_user_args=$#

status=0
echo "== pytest 1/2: all but Spark, 2 xdist workers, backend twins (WINDOWAGG_BACKEND=${WINDOWAGG_BACKEND:-unset}; Hypothesis profile: $HYPOTHESIS_PROFILE)"
run_pytest not-spark -n 2 --dist loadgroup -m "not spark" "$@" || status=$?
echo "== pytest 2/2: the Spark tests, one process, one SparkSession"
run_pytest spark -p no:xdist -m spark "$@" || status=$?
.venv/bin/python scripts/pytest_totals.py "$log_dir"/*.log
exit "$status"
