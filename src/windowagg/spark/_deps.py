"""Guarded imports of the optional Spark dependencies (never at ``import windowagg``)."""

from __future__ import annotations

import importlib

from windowagg.errors import MissingExtraError

__all__ = ["require_connect", "require_pandas", "require_pyspark"]


def require_pyspark(feature: str) -> None:
    """Raise :class:`MissingExtraError` naming ``windowagg[spark]`` if pyspark is missing."""
    for package in ("pyspark", "pandas", "pyarrow"):
        try:
            importlib.import_module(package)
        except ImportError:
            raise MissingExtraError.for_extra(package, "spark", feature) from None


def require_connect(feature: str = "windowagg.spark.session(remote=...)") -> None:
    """Raise :class:`MissingExtraError` naming ``windowagg[connect]`` if a package of
    PySpark's Spark Connect client is missing (PySpark's own error names only the first)."""
    for package, module in (
        ("grpcio", "grpc"),
        ("grpcio-status", "grpc_status"),
        ("googleapis-common-protos", "google.rpc"),
        ("zstandard", "zstandard"),
    ):
        try:
            importlib.import_module(module)
        except ImportError:
            raise MissingExtraError.for_extra(package, "connect", feature) from None


def require_pandas(feature: str) -> None:
    """Raise :class:`MissingExtraError` naming ``windowagg[pandas]`` if pandas is missing."""
    for package in ("pandas", "numpy"):
        try:
            importlib.import_module(package)
        except ImportError:
            raise MissingExtraError.for_extra(package, "pandas", feature) from None
