"""Two backends, one API: the compiled core or the pure-Python reference.

Every aggregator that has a native twin (``ooo.FiBA``, ``fifo.TwoStacksLite``,
``fifo.DABALite``, ``fifo.DABA``, ``fifo.AMTA``, ...) takes ``backend=``:

=============  ===========================================================================
``"auto"``     the native implementation whenever the extension is built (the default)
``"native"``   the native implementation, for every monoid (the user's own Python monoids
               run on the same native trees through the generic path); an error if the
               extension is not built
``"python"``   the pure-Python reference implementation
=============  ===========================================================================

The environment variable ``WINDOWAGG_BACKEND`` sets the default for ``backend=None``.
A class's native twin is another type (a nanobind class), but ``isinstance`` accepts it:

>>> from windowagg import native_available
>>> isinstance(native_available(), bool)
True
>>> resolve_backend("python", "FiBA")
False
>>> resolve_backend("fast", "FiBA")
Traceback (most recent call last):
...
windowagg.errors.BackendError: FiBA: backend must be 'auto', 'native' or 'python'; got 'fast'
"""

from __future__ import annotations

import os
from types import ModuleType
from typing import Any, Final, Literal

from windowagg.errors import BackendError, NativeUnavailableError

__all__ = [
    "BACKENDS",
    "ENV_VAR",
    "Backend",
    "BackendMeta",
    "default_backend",
    "native_available",
    "native_core",
    "register_native",
    "resolve_backend",
]

Backend = Literal["auto", "native", "python"]
BACKENDS: Final = ("auto", "native", "python")
ENV_VAR: Final = "WINDOWAGG_BACKEND"

_core: ModuleType | None = None
_core_error: str | None = None
_loaded = False


def native_core() -> ModuleType | None:
    """The extension module ``windowagg._native._core``, or None if it is not built. O(1)."""
    global _core, _core_error, _loaded
    if not _loaded:
        _loaded = True
        try:
            from windowagg._native import _core as core
        except ImportError as exc:  # not built, or built for another interpreter
            _core_error = str(exc)
        else:
            _core = core
    return _core


def native_available() -> bool:
    """True if the compiled core is built and importable. O(1) after the first call.

    >>> native_available() in (True, False)
    True
    """
    return native_core() is not None


def default_backend() -> Backend:
    """The backend for ``backend=None``: ``$WINDOWAGG_BACKEND``, else ``"auto"``."""
    value = os.environ.get(ENV_VAR, "auto").strip().lower() or "auto"
    if value not in BACKENDS:
        raise BackendError(
            f"{ENV_VAR}={value!r} is not a backend; set it to 'auto', 'native' or 'python'"
        )
    return value  # type: ignore[return-value]


def resolve_backend(backend: str | None, who: str) -> bool:
    """True if *who* (a class name) should be built on the native core.

    Raises :class:`~windowagg.errors.BackendError` for an unknown name and
    :class:`~windowagg.errors.NativeUnavailableError` for ``"native"`` when the extension
    is not built.
    """
    chosen = default_backend() if backend is None else backend
    if chosen not in BACKENDS:
        raise BackendError(f"{who}: backend must be 'auto', 'native' or 'python'; got {chosen!r}")
    if chosen == "python":
        return False
    if chosen == "auto":
        return native_available()
    if not native_available():
        raise NativeUnavailableError(
            f"{who}: backend='native' but windowagg's compiled core is not built "
            f"({_core_error}); reinstall with a C++20 compiler present (`pip install "
            f"--force-reinstall windowagg`), or use backend='python'"
        )
    return True


class BackendMeta(type):
    """Metaclass of the aggregators that have a native twin.

    ``Cls(*args, backend=...)`` returns the native twin when the backend resolves to it and
    the class itself (not a user's subclass) defines ``_native(*args, **kwargs)``, a static
    factory that builds the twin; otherwise it builds the Python class as usual (whose
    ``__init__`` accepts and ignores ``backend``). ``isinstance(twin, Cls)`` is True.
    """

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        factory = cls.__dict__.get("_native")
        if factory is not None and resolve_backend(kwargs.get("backend"), cls.__name__):
            kwargs.pop("backend", None)
            return factory.__func__(*args, **kwargs)
        if factory is None and kwargs.get("backend") == "native":
            raise NativeUnavailableError(
                f"{cls.__name__} has no native implementation (only the classes named in "
                "docs/native.md do); use backend='python' or 'auto'"
            )
        return super().__call__(*args, **kwargs)

    def __instancecheck__(cls, obj: Any) -> bool:
        if type(obj) in cls.__dict__.get("_native_types", ()):
            return True
        return super().__instancecheck__(obj)


def register_native(cls: type, *native_types: type) -> None:
    """Declare *native_types* as native twins of *cls* (for ``isinstance``)."""
    current: tuple[type, ...] = cls.__dict__.get("_native_types", ())
    type.__setattr__(cls, "_native_types", current + native_types)
