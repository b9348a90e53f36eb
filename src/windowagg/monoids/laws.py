"""Executable monoid laws: check any monoid (built-in or your own) on sample values.

Fact card
---------
==============  ========================================================================
checks          lower(identity) is defined; left and right identity; associativity on
                all triples; inverse (for groups); commutativity and idempotence when the
                monoid declares them; combine does not mutate its arguments (for
                partials that ``copy.deepcopy`` can copy)
pool            lift(s) for each sample + combine of neighbouring lifted samples +
                the identity (so partials of several inputs are covered too): p <= 2n values
time            O(p^3) combines (associativity dominates); keep samples small (<= 10)
equality        ``eq`` parameter; :func:`approx` for float partials
==============  ========================================================================

Examples
--------
>>> from windowagg.monoids import Sum, laws
>>> laws.check(Sum(), [1, -2, 5])
>>> class Average2:  # "average of two" is not associative
...     identity = None
...     def lift(self, x): return float(x)
...     def combine(self, a, b): return b if a is None else a if b is None else (a + b) / 2
...     def lower(self, a): return a
>>> laws.check(Average2(), [0, 4, 8])
Traceback (most recent call last):
...
windowagg.errors.MonoidContractError: Average2 breaks associativity: combine(combine(a, b), c) != combine(a, combine(b, c))
  a = 0.0
  b = 0.0
  c = 4.0
  combine(combine(a, b), c) = 2.0
  combine(a, combine(b, c)) = 1.0
"""

from __future__ import annotations

import copy
import itertools
import math
from collections.abc import Callable, Iterable
from typing import Any

from windowagg.errors import MonoidContractError
from windowagg.monoids.base import is_group, require_monoid

__all__ = ["approx", "check", "exact"]

Eq = Callable[[Any, Any], bool]


def exact(a: Any, b: Any) -> bool:
    """Structural ``==`` in which NaN equals NaN (at the same place). O(size).

    >>> exact((1, float("nan")), (1, float("nan"))), exact(0.1 + 0.2, 0.3)
    (True, False)
    """
    if type(a) is float and type(b) is float:
        return a == b or (a != a and b != b)
    if type(a) in (tuple, list) and type(b) is type(a):
        return len(a) == len(b) and all(exact(x, y) for x, y in zip(a, b, strict=True))
    if type(a) is dict and type(b) is dict:
        return a.keys() == b.keys() and all(exact(a[k], b[k]) for k in a)
    try:
        return bool(a == b)
    except Exception:
        return False


def approx(rel: float = 1e-9, abs: float = 1e-12) -> Eq:
    """An equality for float partials: floats match with ``math.isclose(rel, abs)``.

    Tuples, lists and dicts are compared element-wise; ints compare exactly (so counts
    must agree); NaN equals NaN. O(size) per comparison.

    >>> eq = approx(); eq((3, 0.1 + 0.2), (3, 0.3)), eq((3, 0.3), (4, 0.3))
    (True, False)
    """

    def eq(a: Any, b: Any) -> bool:
        if type(a) is float or type(b) is float:
            if not isinstance(a, (int, float)) or not isinstance(b, (int, float)):
                return False
            if a != a or b != b:
                return a != a and b != b
            return math.isclose(a, b, rel_tol=rel, abs_tol=abs)
        if type(a) in (tuple, list) and type(b) is type(a):
            return len(a) == len(b) and all(eq(x, y) for x, y in zip(a, b, strict=True))
        if type(a) is dict and type(b) is dict:
            return a.keys() == b.keys() and all(eq(a[k], b[k]) for k in a)
        return exact(a, b)

    return eq


def _snapshot(a: Any, b: Any) -> tuple[Any, Any] | None:
    """Deep copies of *a* and *b*, or None when a partial cannot be copied (check skipped)."""
    try:
        return copy.deepcopy(a), copy.deepcopy(b)
    except Exception:
        return None


def _show(x: Any) -> str:
    r = repr(x)
    return r if len(r) <= 160 else r[:150] + f"... ({len(r)} chars)"


def check(
    m: Any,
    samples: Iterable[Any],
    *,
    inverse: bool | None = None,
    eq: Eq | None = None,
) -> None:
    """Check the monoid laws of *m* on the lifted *samples*; raise on the first violation.

    Parameters
    ----------
    m : monoid
        Anything with ``identity``, ``lift``, ``combine``, ``lower`` (no base class).
    samples : iterable
        Input values; each is lifted with ``m.lift``. The pool of partials is the
        lifted samples, the combinations of neighbouring lifted samples and the identity.
    inverse : bool or None
        Check ``combine(a, inverse(a)) == identity == combine(inverse(a), a)``: ``None``
        (default) when *m* is a group (:func:`~windowagg.monoids.is_group`), ``True``
        always (then *m* must have ``inverse``), ``False`` never.
    eq : callable, optional
        Equality of partials; default :func:`exact`. Use :func:`approx` for floats.

    Raises
    ------
    MonoidContractError
        Naming the law, the values involved and the two different results (or the
        exception that ``combine``/``lift``/``lower`` raised).

    Notes
    -----
    O(p^3) combines for a pool of p <= 2n partials. Laws that hold on the samples can
    still fail elsewhere; draw samples with Hypothesis to search widely.

    Examples
    --------
    >>> from windowagg.monoids import Max, laws
    >>> laws.check(Max(), [3, 1, 3])
    >>> class BadGeoMean:  # the authors' C++ identity: (1.0, 0) instead of (0.0, 0)
    ...     identity = (1.0, 0)
    ...     def lift(self, x): return (float(x), 1)
    ...     def combine(self, a, b): return (a[0] + b[0], a[1] + b[1])
    ...     def lower(self, a): return a
    >>> laws.check(BadGeoMean(), [2.0])
    Traceback (most recent call last):
    ...
    windowagg.errors.MonoidContractError: BadGeoMean breaks the left identity law: combine(identity, a) != a
      identity = (1.0, 0)
      a = (2.0, 1)
      combine(identity, a) = (3.0, 1)
    """
    who = type(m).__name__
    require_monoid(m, "laws.check")
    same: Eq = eq if eq is not None else exact
    e = m.identity
    comb = m.combine

    def call(what: str, f: Callable[..., Any], *args: Any) -> Any:
        try:
            return f(*args)
        except Exception as exc:
            shown = ", ".join(_show(a) for a in args)
            raise MonoidContractError(f"{who}.{what}({shown}) raised {exc!r}") from exc

    def fail(law: str, statement: str, values: list[tuple[str, Any]]) -> None:
        lines = [f"{who} breaks {law}: {statement}"]
        lines += [f"  {name} = {_show(v)}" for name, v in values]
        raise MonoidContractError("\n".join(lines))

    call("lower", m.lower, e)
    lifted = [call("lift", m.lift, x) for x in samples]
    pool = [*lifted, *(call("combine", comb, a, b) for a, b in itertools.pairwise(lifted)), e]

    for a in pool:
        left = call("combine", comb, e, a)
        if not same(left, a):
            fail(
                "the left identity law",
                "combine(identity, a) != a",
                [("identity", e), ("a", a), ("combine(identity, a)", left)],
            )
        right = call("combine", comb, a, e)
        if not same(right, a):
            fail(
                "the right identity law",
                "combine(a, identity) != a",
                [("identity", e), ("a", a), ("combine(a, identity)", right)],
            )

    commutative = bool(getattr(m, "commutative", False))
    idempotent = bool(getattr(m, "idempotent", False))
    for a in pool:
        if idempotent:
            aa = call("combine", comb, a, a)
            if not same(aa, a):
                fail(
                    "idempotence (it declares idempotent = True)",
                    "combine(a, a) != a",
                    [("a", a), ("combine(a, a)", aa)],
                )
        for b in pool:
            snapshot = _snapshot(a, b)
            ab = call("combine", comb, a, b)
            if snapshot is not None and not (same(a, snapshot[0]) and same(b, snapshot[1])):
                a_before, b_before = snapshot
                fail(
                    "the no-mutation rule",
                    "combine(a, b) changed an argument",
                    [
                        ("a before", a_before),
                        ("a after", a),
                        ("b before", b_before),
                        ("b after", b),
                    ],
                )
            if commutative:
                ba = call("combine", comb, b, a)
                if not same(ab, ba):
                    fail(
                        "commutativity (it declares commutative = True)",
                        "combine(a, b) != combine(b, a)",
                        [("a", a), ("b", b), ("combine(a, b)", ab), ("combine(b, a)", ba)],
                    )
            for c in pool:
                ab_c = call("combine", comb, ab, c)
                a_bc = call("combine", comb, a, call("combine", comb, b, c))
                if not same(ab_c, a_bc):
                    fail(
                        "associativity",
                        "combine(combine(a, b), c) != combine(a, combine(b, c))",
                        [
                            ("a", a),
                            ("b", b),
                            ("c", c),
                            ("combine(combine(a, b), c)", ab_c),
                            ("combine(a, combine(b, c))", a_bc),
                        ],
                    )

    want_inverse = is_group(m) if inverse is None else inverse
    if want_inverse:
        inv = getattr(m, "inverse", None)
        if not callable(inv):
            raise MonoidContractError(f"{who} has no callable inverse, but inverse=True")
        for a in pool:
            ia = call("inverse", inv, a)
            r1 = call("combine", comb, a, ia)
            r2 = call("combine", comb, ia, a)
            if not same(r1, e):
                fail(
                    "the inverse law",
                    "combine(a, inverse(a)) != identity",
                    [("a", a), ("inverse(a)", ia), ("combine(a, inverse(a))", r1), ("identity", e)],
                )
            if not same(r2, e):
                fail(
                    "the inverse law",
                    "combine(inverse(a), a) != identity",
                    [("a", a), ("inverse(a)", ia), ("combine(inverse(a), a)", r2), ("identity", e)],
                )
