"""The Python-free headers (include/windowagg/fiba.hpp, order_statistics.hpp,
wavelet_matrix.hpp, qdigest.hpp, space_saving.hpp) under their standalone C++ tests, built with AddressSanitizer and
UndefinedBehaviorSanitizer when a C++20 compiler is there."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CPP = ROOT / "tests" / "native" / "cpp"
INCLUDE = ROOT / "src" / "windowagg" / "_native" / "include"


@pytest.mark.slow
@pytest.mark.parametrize(
    ("source", "scale"),
    [
        ("test_fiba.cpp", "2"),  # against a std::map oracle
        ("test_order_statistics.cpp", "1"),  # against a std::multiset oracle
        ("test_wavelet_matrix.cpp", "1"),  # against sorted ranges
        ("test_qdigest.cpp", "1"),  # hash levels vs std::unordered_map; top-down vs bottom-up
        ("test_space_saving.cpp", "2"),  # against brute-force decayed frequencies
    ],
)
def test_header_against_an_stl_oracle(tmp_path: Path, source: str, scale: str) -> None:
    cxx = shutil.which("g++") or shutil.which("clang++")
    if cxx is None:
        pytest.skip("no C++ compiler")
    exe = tmp_path / source.removesuffix(".cpp")
    flags = ["-std=c++20", "-O1", "-g", "-Wall", "-Wextra", "-Werror"]
    flags += ["-fsanitize=address,undefined", "-fno-sanitize-recover=undefined"]
    subprocess.run([cxx, *flags, f"-I{INCLUDE}", str(CPP / source), "-o", str(exe)], check=True)
    run = subprocess.run([str(exe), scale], capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-4000:]
    assert run.stdout.strip() == "ok"
