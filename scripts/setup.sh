#!/usr/bin/env bash
# Set up windowagg on a fresh machine: a virtual environment in .venv with the package and
# every extra installed from PyPI (pinned by constraints.txt), and Java 17+ for PySpark.
# Usage: bash scripts/setup.sh   (idempotent; re-running only fills in what is missing)
#
# A second run is a no-op: the install writes .venv/.setup-stamp, a hash of what it was made
# from (pyproject.toml, constraints.txt, CMakeLists.txt, the C++ sources, the names of the
# Python files, this script, the interpreter's version); while the hash still matches and the
# compiled core imports, pip is not run at all. When something changed, the package is
# reinstalled without build isolation (scikit-build-core and nanobind live in .venv), so the
# build directory build/{wheel_tag} keeps its paths and Ninja recompiles only what changed.
set -euo pipefail
cd "$(dirname "$0")/.."

PY=${PYTHON:-python3}
if ! "$PY" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else 1)'; then
  echo "windowagg needs Python >= 3.11; $PY is $("$PY" --version 2>&1)" >&2
  exit 1
fi
[ -x .venv/bin/python ] || "$PY" -m venv .venv
VPY=.venv/bin/python

inputs_hash() {
  {
    "$VPY" --version 2>&1
    find pyproject.toml constraints.txt CMakeLists.txt scripts/setup.sh \
      src/windowagg/_native/src src/windowagg/_native/include -type f -print0 \
      | LC_ALL=C sort -z | xargs -0 sha256sum
    find src/windowagg -name '*.py' -o -name '*.pyi' -o -name 'py.typed' | LC_ALL=C sort
  } | sha256sum | cut -d' ' -f1
}
stamp=.venv/.setup-stamp
want=$(inputs_hash)
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && "$VPY" -c 'import windowagg._native._core' 2>/dev/null; then
  echo "setup: .venv is up to date with the sources (remove $stamp to reinstall)"
else
  rm -f "$stamp"
  "$VPY" -m pip install --quiet --upgrade pip
  # The build requirements into .venv (as pyproject.toml pins them), then three installs side
  # by side: PySpark (a large download, and a wheel build on a cold cache), the other
  # dependencies of every extra, and the package itself (--no-deps), whose compiled core
  # takes both cores; a single pip would download everything first, then build one thing
  # after the other. The three sets are disjoint (PySpark needs only py4j).
  mapfile -t build_reqs < <("$VPY" -c 'import tomllib; print(*tomllib.load(open("pyproject.toml", "rb"))["build-system"]["requires"], sep="\n")')
  command -v cmake >/dev/null 2>&1 || build_reqs+=(cmake)
  command -v ninja >/dev/null 2>&1 || build_reqs+=(ninja)
  "$VPY" -m pip install --quiet -c constraints.txt "${build_reqs[@]}"
  mapfile -t deps < <("$VPY" - <<'PY'
import re
import tomllib

project = tomllib.load(open("pyproject.toml", "rb"))["project"]
extras, todo, seen, reqs = project["optional-dependencies"], ["all", "test"], set(), []
while todo:
    name = todo.pop()
    if name not in seen:
        seen.add(name)
        for req in extras[name]:
            own = re.fullmatch(r"windowagg\[(.*)\]", req)
            todo += own.group(1).split(",") if own else []
            reqs += [] if own else [req]
print(*dict.fromkeys(project["dependencies"] + reqs), sep="\n")
PY
  )
  spark=() others=()
  for r in "${deps[@]}"; do
    case "$r" in pyspark*) spark+=("$r") ;; *) others+=("$r") ;; esac
  done
  logs=$(mktemp -d)
  pids=()
  trap 'kill "${pids[@]}" 2>/dev/null || true; rm -rf "$logs"' EXIT
  "$VPY" -m pip install --quiet -c constraints.txt --no-build-isolation --no-deps -e . >"$logs/package" 2>&1 &
  pids+=($!)
  # --no-compile: Python compiles a module to bytecode when it is first imported, not every
  # file of PySpark, pandas, matplotlib... at install time (CPU the build needs).
  "$VPY" -m pip install --quiet --no-compile -c constraints.txt "${spark[@]}" >"$logs/spark" 2>&1 &
  pids+=($!)
  "$VPY" -m pip install --quiet --no-compile -c constraints.txt "${others[@]}" >"$logs/others" 2>&1 &
  pids+=($!)
  failed=0
  for pid in "${pids[@]}"; do
    wait "$pid" || failed=1
  done
  pids=()
  cat "$logs/package" "$logs/spark" "$logs/others" >&2
  [ "$failed" = 0 ] || { echo "setup: a pip install above failed; fix what it says and re-run" >&2; exit 1; }
  "$VPY" -m pip check >&2 || echo "setup: pip check found the conflicts above (the install went on)" >&2
  echo "$want" >"$stamp"
fi

# PySpark 4.x needs Java 17 or newer.
java_major() { java -version 2>&1 | sed -n 's/.*version "\([0-9]*\).*/\1/p' | head -n1; }
if ! command -v java >/dev/null 2>&1 || [ "$(java_major)" -lt 17 ]; then
  echo "Java 17+ not found; installing openjdk-17-jre-headless from Debian's packages" >&2
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openjdk-17-jre-headless >/dev/null
fi
java -version 2>&1 | head -n1
echo "setup done: $("$VPY" --version), windowagg $("$VPY" -c 'import windowagg; print(windowagg.__version__)')"
