#!/usr/bin/env bash
# The compiled core under AddressSanitizer + UndefinedBehaviorSanitizer: build it with
# `build_native.sh --sanitize`, then run tests/native and the native-parametrized FIFO tests
# against THAT build. The CI venv's editable install would import the release module
# whatever PYTHONPATH says, so the tests run in a small separate venv (.venv-asan: pytest,
# hypothesis, numpy) on a copy of src/ that holds the sanitized module, and the script
# asserts that `_core.sanitized` is True before running anything.
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

export LD_PRELOAD="$(g++ -print-file-name=libasan.so) $(g++ -print-file-name=libubsan.so)"
export ASAN_OPTIONS=detect_leaks=0  # CPython itself leaks at exit
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
export PYTHONPATH="$PWD/build/asan-src"
.venv-asan/bin/python - <<'PY'
import windowagg._native._core as core
assert core.sanitized, f"{core.__file__} is not the sanitized build"
print(f"sanitized core: {core.__file__}")
PY
.venv-asan/bin/python -m pytest -q -p no:cacheprovider -o addopts="--import-mode=importlib" \
  tests/native tests/fifo -k "native or Native" "$@"
