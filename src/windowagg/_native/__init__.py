"""windowagg's compiled core: C++20 templates over the monoid, bound with nanobind.

The extension module ``windowagg._native._core`` is built from the sources beside this file
(``include/windowagg/*.hpp``: the algorithms; ``src/*.cpp``: the bindings) by
``pip install .``. Nothing here is public API: choose the backend of an aggregator with its
``backend=`` argument or ``WINDOWAGG_BACKEND`` (see :mod:`windowagg._backend`).
"""

from __future__ import annotations

__all__: list[str] = []
