"""windowagg benchmarks: ``python -m benchmarks SUITE [--quick]`` (see docs/performance.md)."""

import os

# numpy's OpenBLAS keeps its worker threads spinning for a while after each call it
# threads: 5.8% of a FiBA benchmark's `perf` samples (2026-11-26), and 103% CPU against 99%
# for `native_fiba --quick` (2026-11-27). On 2 shared cores that is time taken from the
# contender beside it, and no benchmark here needs threaded BLAS. Set before numpy is
# imported (every suite, the probes and the Spark and Flink processes they start inherit
# it); a value already in the environment wins.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
