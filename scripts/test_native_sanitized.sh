#!/usr/bin/env bash
# The compiled core under AddressSanitizer + UndefinedBehaviorSanitizer: build it with
# `build_native.sh --sanitize`, then run tests/native and the native-parametrized FIFO tests
# against THAT build. The CI venv's editable install would import the release module
# whatever PYTHONPATH says, so the tests run in a small separate venv (.venv-asan: pytest,
# hypothesis, numpy) on a copy of src/ that holds the sanitized module, and the script
# asserts that `_core.sanitized` is True before running anything.
#
# A run that dies says why, in this script's own output (CI's log). pytest captures each
# test's file descriptors 1 and 2, so a sanitizer report written to stderr inside a test
# went down with the process: a dying run used to print its progress dots and nothing else.
# Now pytest captures at the sys level only (--capture=sys: a test's print() is still
# captured, a C-level write to fd 2 is not), so a report lands in this output where it
# happens; ASan also writes its reports to build/sanitizer-logs/ (log_path, one file per
# process that reported, the thread tests' subprocesses included; UBSan's standalone runtime
# ignores log_path and always writes to stderr); both abort after a report (abort_on_error,
# so Python's faulthandler, enabled by pytest on the real stderr, prints every thread's
# Python traceback: the test is named there), and the plugin
# scripts/pytest_running_test.py keeps the running test's node id in a file. After pytest,
# this script prints every report and, if pytest ended without finishing (a report, a
# signal such as the OOM killer's SIGKILL, a crash), which test was running, the exit
# status or signal, and the kernel's out-of-memory lines if it can read them. An ASan report
# file fails the run, even one from a subprocess of a test that passed.
# Usage: bash scripts/test_native_sanitized.sh [extra pytest args]
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-.venv/bin/python}

PYTHON="$PY" bash scripts/build_native.sh --sanitize
so=$(ls build/native-sanitize/_core*.so)
rm -rf build/asan-src
mkdir -p build/asan-src
cp -r src/windowagg build/asan-src/
rm -f build/asan-src/windowagg/_native/_core*.so
cp "$so" build/asan-src/windowagg/_native/

if [ ! -x .venv-asan/bin/python ]; then
  "$("$PY" -c 'import sys; print(sys._base_executable)')" -m venv .venv-asan
fi
.venv-asan/bin/python -m pip install --quiet -c constraints.txt pytest hypothesis numpy

logs="$PWD/build/sanitizer-logs"
rm -rf "$logs"
mkdir -p "$logs"
export LD_PRELOAD="$(g++ -print-file-name=libasan.so) $(g++ -print-file-name=libubsan.so)"
# detect_leaks=0: CPython itself leaks at exit
export ASAN_OPTIONS="detect_leaks=0:abort_on_error=1:log_path=$logs/asan"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:abort_on_error=1"
export PYTHONPATH="$PWD/build/asan-src:$PWD/scripts"
export WINDOWAGG_RUNNING_TEST="$logs/running-test"
.venv-asan/bin/python - <<'PY'
import windowagg._native._core as core
assert core.sanitized, f"{core.__file__} is not the sanitized build"
print(f"sanitized core: {core.__file__}")
PY
rc=0
.venv-asan/bin/python -X faulthandler -m pytest -q -p no:cacheprovider -p pytest_running_test --capture=sys \
  -o addopts="--import-mode=importlib" -o faulthandler_timeout=1200 \
  tests/native tests/fifo -k "native or Native" "$@" || rc=$?

reports=$(find "$logs" -name 'asan.*' | sort)
for f in $reports; do
  echo "== sanitizer report ($(basename "$f"): the process of that pid) =="
  cat "$f"
done
if [ -f "$WINDOWAGG_RUNNING_TEST" ]; then
  how="exit status $rc"
  [ "$rc" -gt 128 ] && how="killed by signal $((rc - 128)) (SIG$(kill -l $((rc - 128)) 2>/dev/null || echo '?'))"
  echo "== the sanitized pytest run died ($how) without finishing; the test running then:"
  echo "   $(cat "$WINDOWAGG_RUNNING_TEST")"
  [ "$rc" -eq 134 ] && [ -n "$reports" ] && echo "   (SIGABRT: the sanitizer aborts after its report, printed above)"
  [ "$rc" -eq 137 ] && echo "   (SIGKILL is what the kernel's out-of-memory killer sends)"
  oom=$(dmesg 2>/dev/null | grep -i -E 'out of memory|oom-kill|killed process' | tail -n 5 || true)
  [ -n "$oom" ] && printf '   the kernel'"'"'s out-of-memory lines:\n%s\n' "$oom"
  [ -n "$reports" ] || echo "   (no report file; a report on stderr (UBSan's) and a Python traceback, if any, are above)"
  [ "$rc" -ne 0 ] || rc=1
fi
if [ -n "$reports" ] && [ "$rc" -eq 0 ]; then
  echo "== the tests passed, but a sanitizer reported (above): failing the run"
  rc=1
fi
exit "$rc"
