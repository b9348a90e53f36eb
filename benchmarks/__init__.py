"""windowagg benchmarks: ``python -m benchmarks SUITE [--quick]`` (see benchmarks/README.md)."""
