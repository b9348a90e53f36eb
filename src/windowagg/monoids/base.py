"""The monoid contract: what every aggregator in windowagg is parameterised by.

A *monoid* is any object with

- ``identity``: the partial aggregate of nothing (an attribute or a property);
- ``lift(x)``: turns one input value into a partial aggregate;
- ``combine(a, b)``: associative, ``combine(identity, a) == a == combine(a, identity)``;
  it need **not** be commutative, and it must not mutate its arguments;
- ``lower(a)``: turns a partial aggregate into the answer the user sees.

A *group* additionally has ``inverse(a)`` with ``combine(a, inverse(a)) == identity``;
:class:`~windowagg.fifo.SubtractOnEvict` needs one. Users never have to inherit from
anything: the protocols below are structural (duck-typed), and
:func:`windowagg.monoids.laws.check` verifies the laws on sample values.

Examples
--------
>>> class Longest:
...     identity = ""
...     def lift(self, x): return str(x)
...     def combine(self, a, b): return a if len(a) >= len(b) else b
...     def lower(self, a): return a
>>> is_monoid(Longest()), is_group(Longest())
(True, False)
"""

from __future__ import annotations

import re
import weakref
from typing import Any, Final, Generic, Protocol, TypeVar, runtime_checkable

from windowagg.errors import MonoidContractError

__all__ = [
    "Counting",
    "Group",
    "Monoid",
    "declared_builtin",
    "declared_kind",
    "is_group",
    "is_monoid",
    "monoid_identity",
    "require_group",
    "require_monoid",
]

In_contra = TypeVar("In_contra", contravariant=True)
P = TypeVar("P")
Out_co = TypeVar("Out_co", covariant=True)
In = TypeVar("In")
Out = TypeVar("Out")


@runtime_checkable
class Monoid(Protocol[In_contra, P, Out_co]):
    """Structural type of a monoid with lift and lower (see the module docstring)."""

    @property
    def identity(self) -> P: ...

    def lift(self, x: In_contra, /) -> P: ...

    def combine(self, a: P, b: P, /) -> P: ...

    def lower(self, a: P, /) -> Out_co: ...


@runtime_checkable
class Group(Monoid[In_contra, P, Out_co], Protocol):
    """A monoid whose every partial aggregate has an inverse."""

    def inverse(self, a: P, /) -> P: ...


_MONOID_MEMBERS = ("identity", "lift", "combine", "lower")


def is_monoid(m: object) -> bool:
    """True if *m* has ``identity``, ``lift``, ``combine`` and ``lower`` (laws are not checked).

    A class is not a monoid, an instance of it is:

    >>> from windowagg.monoids import Sum
    >>> is_monoid(Sum), is_monoid(Sum())
    (False, True)
    """
    if isinstance(m, type):
        return False
    return all(hasattr(m, name) for name in _MONOID_MEMBERS) and all(
        callable(getattr(m, name)) for name in _MONOID_MEMBERS[1:]
    )


def is_group(m: object) -> bool:
    """True if *m* is a monoid with a callable ``inverse``.

    A built-in monoid may expose ``invertible = False`` to say that its ``inverse`` is
    not total (for example, :class:`~windowagg.monoids.Product` over zeros).
    """
    return (
        is_monoid(m)
        and callable(getattr(m, "inverse", None))
        and bool(getattr(m, "invertible", True))
    )


def require_monoid(m: object, who: str) -> None:
    """Raise :class:`MonoidContractError` naming what *m* lacks, for the class *who*.

    >>> require_monoid(object(), "FiBA")
    Traceback (most recent call last):
    ...
    windowagg.errors.MonoidContractError: FiBA needs a monoid with identity, lift, combine and lower; object lacks identity, lift, combine, lower
    >>> from windowagg.monoids import Sum
    >>> require_monoid(Sum, "DABA")
    Traceback (most recent call last):
    ...
    windowagg.errors.MonoidContractError: DABA needs a monoid instance, got the class Sum: write DABA(Sum()), not DABA(Sum)
    """
    if isinstance(m, type):
        raise MonoidContractError(
            f"{who} needs a monoid instance, got the class {m.__name__}: "
            f"write {who}({m.__name__}()), not {who}({m.__name__})"
        )
    missing = [
        name
        for name in _MONOID_MEMBERS
        if not hasattr(m, name) or (name != "identity" and not callable(getattr(m, name)))
    ]
    if missing:
        raise MonoidContractError(
            f"{who} needs a monoid with identity, lift, combine and lower; "
            f"{type(m).__name__} lacks {', '.join(missing)}"
        )


def require_group(m: object, who: str) -> None:
    """Like :func:`require_monoid`, and also require an ``inverse`` (a group)."""
    require_monoid(m, who)
    if not is_group(m):
        raise MonoidContractError(
            f"{who} needs a group (a monoid with inverse); {type(m).__name__} has no usable "
            "inverse. Use TwoStacks, DABA or another monoid-only aggregator instead."
        )


#: The members a ``native_kind`` speaks for: a subclass that redefines one of them (or an
#: instance that shadows one) computes something else, and loses the kind's fast paths.
KIND_MEMBERS: Final = ("identity", "lift", "combine", "lower", "inverse")

# per class; weak, so that a user's monoid class (and what its methods' globals hold, such
# as a window in __main__) is not kept alive by the cache
_kinds: weakref.WeakKeyDictionary[type, tuple[str, type] | None] = weakref.WeakKeyDictionary()


def _kind_of_class(cls: type) -> tuple[str, type] | None:
    """``(kind, declaring class)`` for instances of *cls*, or None. Cached per class."""
    try:
        return _kinds[cls]
    except KeyError:
        pass
    got: tuple[str, type] | None = None
    owner = next((c for c in cls.__mro__ if "native_kind" in c.__dict__), None)
    kind = owner.__dict__["native_kind"] if owner is not None else None
    if (
        isinstance(kind, str)
        and owner is not None
        and owner.__module__.startswith("windowagg.")
        and all(getattr(cls, n, None) is getattr(owner, n, None) for n in KIND_MEMBERS)
    ):
        got = (kind, owner)
    _kinds[cls] = got
    return got


def declared_kind(m: object) -> str | None:
    """The fast-path kind *m* may take (``"sum"``, ``"max"``, ...), or None. O(1).

    A monoid class declares ``native_kind`` (a class attribute, beside ``commutative``,
    ``idempotent`` and ``invertible``): the engine, the FIFO and out-of-order aggregators and
    the native core then replace calls to its ``lift``/``combine``/``lower`` by their own code
    for that kind (``Sum``: ``+`` inline, a float64 tree natively). The declaration holds for
    a subclass as long as it redefines none of :data:`KIND_MEMBERS`; one that does (or an
    instance that shadows one) gets its own methods called, on the generic path. Only
    windowagg's own classes declare kinds: a kind declared elsewhere is ignored.

    >>> from windowagg.monoids import Sum, Counting
    >>> class Tally(Sum):
    ...     pass
    >>> class Doubled(Sum):
    ...     def combine(self, a, b): return 2 * (a + b)
    >>> [declared_kind(m) for m in (Sum(), Tally(), Doubled(), Counting(Sum()))]
    ['sum', 'sum', None, None]
    """
    got = _kind_of_class(type(m))
    if got is None:
        return None
    shadowed = getattr(m, "__dict__", None)
    if shadowed and any(n in shadowed for n in KIND_MEMBERS):
        return None
    return got[0]


def declared_builtin(m: object) -> type | None:
    """The windowagg class whose ``native_kind`` *m* may take, or None. O(1).

    The native core dispatches on this class (not on ``type(m)``), so a subclass of a
    built-in that keeps its members keeps the built-in's native path.

    >>> from windowagg.monoids import Max
    >>> class Highest(Max):
    ...     pass
    >>> declared_builtin(Highest()) is Max, declared_builtin(object())
    (True, None)
    """
    got = _kind_of_class(type(m))
    if got is None:
        return None
    shadowed = getattr(m, "__dict__", None)
    if shadowed and any(n in shadowed for n in KIND_MEMBERS):
        return None
    return got[1]


class Counting(Generic[In, P, Out]):
    """Wrap a monoid and count its ``combine`` (and ``lift``/``lower``) calls.

    Used by the tests and benchmarks to turn complexity claims into numbers.

    Examples
    --------
    >>> from windowagg.monoids import Sum
    >>> m = Counting(Sum())
    >>> m.combine(m.lift(1), m.lift(2)), m.combines
    (3, 1)
    >>> m.reset(); m.combines
    0
    """

    __slots__ = ("_inner", "combines", "lifts", "lowers")

    def __init__(self, inner: Monoid[In, P, Out]) -> None:
        require_monoid(inner, "Counting")
        self._inner = inner
        self.combines = 0
        self.lifts = 0
        self.lowers = 0

    @property
    def inner(self) -> Monoid[In, P, Out]:
        """The wrapped monoid."""
        return self._inner

    @property
    def identity(self) -> P:
        return self._inner.identity

    def lift(self, x: In, /) -> P:
        self.lifts += 1
        return self._inner.lift(x)

    def combine(self, a: P, b: P, /) -> P:
        self.combines += 1
        return self._inner.combine(a, b)

    def lower(self, a: P, /) -> Out:
        self.lowers += 1
        return self._inner.lower(a)

    def inverse(self, a: P, /) -> P:
        inv: Any = getattr(self._inner, "inverse", None)
        if inv is None:
            raise MonoidContractError(f"{type(self._inner).__name__} has no inverse")
        result: P = inv(a)
        return result

    @property
    def invertible(self) -> bool:
        return is_group(self._inner)

    def reset(self) -> None:
        """Set every counter back to zero."""
        self.combines = 0
        self.lifts = 0
        self.lowers = 0


_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")


def monoid_identity(m: object) -> str:
    """A stable text identity of the monoid *m*, stored with state and checked on reopening.

    - windowagg's own monoids: their ``repr``, parameters included (``"Sum()"``,
      ``"BloomFilter(bits=1024, hashes=3)"``); this is what stores held before, so those
      stores still open;
    - a windowagg wrapper whose ``repr`` would show a memory address (a ``Composite`` or
      ``Counting`` over a user monoid): the same form built from its parts' identities;
    - any other monoid: ``module.QualifiedClassName``, followed by ``[name=..., version=...]``
      when the monoid has a ``name`` (str) and/or ``version`` (str or int) attribute. Give
      your monoid a ``version`` and change it when the meaning of its partials changes:
      a store written with another version then refuses to open instead of mixing them.

    Never contains a memory address, so it is the same in every process. O(size of repr).

    Examples
    --------
    >>> from windowagg.monoids import BloomFilter, Composite, Sum
    >>> monoid_identity(Sum()), monoid_identity(BloomFilter(bits=64, hashes=2))
    ('Sum()', 'BloomFilter(bits=64, hashes=2)')
    >>> class Longest:
    ...     identity = ""
    ...     version = 2
    ...     def lift(self, x): return x
    ...     def combine(self, a, b): return a if len(a) >= len(b) else b
    ...     def lower(self, a): return a
    >>> monoid_identity(Longest())
    'windowagg.monoids.base.Longest[version=2]'
    >>> monoid_identity(Composite(Sum(), Longest()))
    'Composite(Sum(), windowagg.monoids.base.Longest[version=2])'
    """
    t = type(m)
    ours = t.__module__ == "windowagg" or t.__module__.startswith("windowagg.")
    if ours:
        r = repr(m)
        if not _ADDRESS.search(r):
            return r
        comps = getattr(m, "components", None)
        if isinstance(comps, tuple):
            parts = [monoid_identity(c) for c in comps]
            names = getattr(m, "names", None)
            if isinstance(names, tuple) and len(names) == len(parts):
                parts = [f"{n}={p}" for n, p in zip(names, parts, strict=True)]
            if getattr(m, "fan_out", False) is True:
                parts.append("fan_out=True")
            return f"{t.__name__}({', '.join(parts)})"
        inner = getattr(m, "inner", None)
        if inner is not None:
            return f"{t.__name__}({monoid_identity(inner)})"
    extra = []
    name = getattr(m, "name", None)
    if isinstance(name, str):
        extra.append(f"name={name!r}")
    version = getattr(m, "version", None)
    if isinstance(version, (str, int)) and not isinstance(version, bool):
        extra.append(f"version={version!r}")
    label = f"{t.__module__}.{t.__qualname__}"
    return label + (f"[{', '.join(extra)}]" if extra else "")
