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
The public class holds its implementation (:class:`Backed`): a native-backed ``fifo.DABA``
is a ``fifo.DABA``, whose ``_impl`` is the nanobind object.

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
from collections.abc import Iterator
from types import ModuleType
from typing import Any, ClassVar, Final, Literal

from windowagg.errors import BackendError, NativeUnavailableError

__all__ = [
    "BACKENDS",
    "ENV_VAR",
    "Backed",
    "Backend",
    "default_backend",
    "native_available",
    "native_core",
    "native_verb",
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


def _env_backend() -> Backend:
    value = os.environ.get(ENV_VAR, "auto").strip().lower() or "auto"
    if value not in BACKENDS:
        raise BackendError(
            f"{ENV_VAR}={value!r} is not a backend; set it to 'auto', 'native' or 'python'"
        )
    return value  # type: ignore[return-value]


def default_backend() -> Backend:
    """The backend for ``backend=None``: ``$WINDOWAGG_BACKEND``, else ``"auto"``."""
    return _env_backend()


def resolve_backend(backend: str | None, who: str, lacks: str | None = None) -> bool:
    """True if *who* (a class name) should be built on the native core.

    *lacks* names what the native implementation lacks for this call (``"store="``): then
    ``backend="native"`` raises :class:`~windowagg.errors.BackendError` naming it, and the
    default (``None``, whatever ``$WINDOWAGG_BACKEND`` says) and ``"auto"`` pick the Python
    implementation, openly (docs/native.md). Raises BackendError for an unknown name and
    :class:`~windowagg.errors.NativeUnavailableError` for ``"native"`` when the extension
    is not built.

    >>> resolve_backend("auto", "AMTA", lacks="store=")
    False
    >>> resolve_backend("native", "AMTA", lacks="store=")
    Traceback (most recent call last):
    ...
    windowagg.errors.BackendError: AMTA: the native implementation has no store=; use backend='python' or 'auto' (which picks the Python implementation for it)
    """
    if backend is None and lacks is not None:
        _env_backend()  # checked, but the native side cannot serve this call
        return False
    chosen = default_backend() if backend is None else backend
    if chosen not in BACKENDS:
        raise BackendError(f"{who}: backend must be 'auto', 'native' or 'python'; got {chosen!r}")
    if chosen == "python":
        return False
    if lacks is not None:
        if chosen == "native":
            raise BackendError(
                f"{who}: the native implementation has no {lacks}; use backend='python' or "
                "'auto' (which picks the Python implementation for it)"
            )
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


def native_verb(backend: str | None, who: str, verb: str) -> ModuleType | None:
    """The compiled core if *backend* resolves to it for *who* (:func:`resolve_backend`)
    and the core has the function *verb*, else None (the Python twin answers).
    ``backend="native"`` (or its default) with a core built before *verb* raises
    :class:`~windowagg.errors.NativeUnavailableError` naming the rebuild; ``"auto"`` takes
    the Python twin then. O(1).

    >>> native_verb("python", "decayed_pNN", "decayed_window_quantiles") is None
    True
    """
    core = native_core() if resolve_backend(backend, who) else None
    if core is not None and not hasattr(core, verb):  # a core built before it
        if (backend or default_backend()) == "native":
            raise NativeUnavailableError(
                f"{who}: backend='native' but the compiled core was built before {verb} "
                "existed; rebuild it (bash scripts/build_native.sh, or pip install "
                "--force-reinstall windowagg), or use backend='python'"
            )
        return None  # "auto": native when built, and this core has no such verb
    return core


class Backed:
    """Base of the public classes that have a native twin: they *hold* an implementation.

    ``self._impl`` is the native object (``windowagg._native._core``) or the pure-Python
    reference class's object (polars' ``self._df`` pattern); the public object is an
    instance of the public class whichever it holds. A public class sets ``_hot``: the verbs
    bound from ``_impl`` onto the instance at construction (one attribute lookup, then the
    implementation's own method: no extra Python frame on the hot path), except where a
    subclass overrides the verb (its method then runs, and reaches the implementation
    through ``super()``). Any other attribute is read from ``_impl`` (its state, its
    ``_check()``, the Python reference's internals for the tests).
    """

    _hot: ClassVar[tuple[str, ...]] = ()
    _impl: Any
    _publics: ClassVar[dict[type, type]] = {}

    def _hold(self, impl: Any) -> None:
        """Hold *impl* and bind its hot verbs (those not overridden by a subclass). O(1)."""
        self._impl = impl
        cls = type(self)
        public = Backed._publics.get(cls)
        if public is None:  # the class that declares _hot, below any user subclass
            public = next(c for c in cls.__mro__ if "_hot" in c.__dict__)
            Backed._publics[cls] = public
        d = self.__dict__
        for name in cls._hot:
            if getattr(cls, name) is getattr(public, name):
                d[name] = getattr(impl, name)

    @property
    def backend(self) -> Literal["native", "python"]:
        """The implementation held: ``"native"`` or ``"python"``. O(1)."""
        native = type(self._impl).__module__.startswith("windowagg._native")
        return "native" if native else "python"

    def __getattr__(self, name: str) -> Any:
        # only reached when normal lookup fails: never on a hot path
        if name == "_impl" or (name.startswith("__") and name.endswith("__")):
            raise AttributeError(name)
        return getattr(self._impl, name)

    def __len__(self) -> int:
        return len(self._impl)

    def __iter__(self) -> Iterator[Any]:
        return iter(self._impl)

    def __repr__(self) -> str:
        return repr(self._impl)
