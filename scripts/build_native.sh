#!/usr/bin/env bash
# Build windowagg's compiled core in place, for development: src/windowagg/_native/_core*.so
# next to the sources, so `PYTHONPATH=src python ...` picks it up without a reinstall.
#   bash scripts/build_native.sh              optimised build (as `pip install .` makes it)
#   bash scripts/build_native.sh --sanitize   ASan + UBSan build (run Python with libasan
#                                             preloaded; see scripts/test_native_sanitized.sh)
# PYTHON selects the interpreter (default .venv/bin/python); it needs nanobind installed.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-.venv/bin/python}
mode=release
[ "${1:-}" = "--sanitize" ] && mode=sanitize
"$PY" -c 'import nanobind' 2>/dev/null || "$PY" -m pip install --quiet nanobind==3.1.0
bdir=build/native-$mode
args=(-DCMAKE_BUILD_TYPE=Release)
[ "$mode" = sanitize ] && args=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DWINDOWAGG_SANITIZE=ON)
gen=()
command -v ninja >/dev/null 2>&1 && gen=(-G Ninja)
cmake -S . -B "$bdir" "${gen[@]}" -DPython_EXECUTABLE="$("$PY" -c 'import sys; print(sys.executable)')" "${args[@]}" >/dev/null
cmake --build "$bdir"
so=$(ls "$bdir"/_core*.so)
if [ "$mode" = release ]; then
  # copy then rename: a running Python that has the old module mapped keeps its inode
  dest=src/windowagg/_native/$(basename "$so")
  cp "$so" "$dest.tmp" && mv -f "$dest.tmp" "$dest"
  echo "built $(basename "$so") into src/windowagg/_native/"
  # An editable install (scripts/setup.sh) maps windowagg._native._core to its own copy in
  # site-packages, which wins over src/: refresh that copy too, or Python keeps the old one.
  mapped=$("$PY" -c 'import importlib.util as u; s = u.find_spec("windowagg._native._core"); print(s.origin if s else "")' 2>/dev/null || true)
  if [ -n "$mapped" ] && [ "$mapped" != "$PWD/$dest" ] && [ "$(basename "$mapped")" = "$(basename "$so")" ]; then
    cp "$so" "$mapped.tmp" && mv -f "$mapped.tmp" "$mapped"
    echo "refreshed the editable install's copy: $mapped"
  fi
else
  echo "built $so (sanitized)"
fi
