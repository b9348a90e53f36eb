"""Type stubs of windowagg._native._core, the compiled core (see docs/native.md)."""

debug_build: bool
sanitized: bool
