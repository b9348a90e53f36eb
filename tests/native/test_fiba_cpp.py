"""The Python-free FiBA header (include/windowagg/fiba.hpp) under its standalone C++ test,
built with AddressSanitizer and UndefinedBehaviorSanitizer when a C++20 compiler is there."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "tests" / "native" / "cpp" / "test_fiba.cpp"
INCLUDE = ROOT / "src" / "windowagg" / "_native" / "include"


@pytest.mark.slow
def test_fiba_header_against_a_map_oracle(tmp_path: Path) -> None:
    cxx = shutil.which("g++") or shutil.which("clang++")
    if cxx is None:
        pytest.skip("no C++ compiler")
    exe = tmp_path / "test_fiba"
    flags = ["-std=c++20", "-O1", "-g", "-Wall", "-Wextra", "-Werror"]
    flags += ["-fsanitize=address,undefined", "-fno-sanitize-recover=undefined"]
    subprocess.run([cxx, *flags, f"-I{INCLUDE}", str(SRC), "-o", str(exe)], check=True)
    run = subprocess.run([str(exe), "2"], capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-4000:]
    assert run.stdout.strip() == "ok"
