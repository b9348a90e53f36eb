"""Issue 13 item 13: every error windowagg raises is a WindowaggError and names its cause.

A sweep over the public API with bad arguments and bad values: each call must raise an
exception that derives from :class:`~windowagg.errors.WindowaggError` *and* from the
built-in a caller would catch, and whose message names the structure (or monoid) and,
where there is one, the offending value. Plus the three cases the issue cites.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from decimal import Decimal
from typing import Any

import pytest

from windowagg import codec, fifo, monoids, ooo, sketches
from windowagg.errors import (
    ArgumentTypeError,
    EmptyWindowError,
    MonoidContractError,
    MonoidInputError,
    MonoidTypeError,
    WindowaggError,
)
from windowagg.monoids import Max, Sum
from windowagg.windows import CountWindows, PolicyWindows, SharedWindows, SlidingWindows

FIFO: dict[str, Callable[..., Any]] = {
    "Recalc": fifo.Recalc,
    "SubtractOnEvict": fifo.SubtractOnEvict,
    "TwoStacks": fifo.TwoStacks,
    "TwoStacksLite": fifo.TwoStacksLite,
    "DABA": fifo.DABA,
    "DABAChunked": fifo.DABAChunked,
    "DABALite": fifo.DABALite,
    "FOA": fifo.FOA,
    "IOA": fifo.IOA,
    "FlatFAT": fifo.FlatFAT,
    "FlatFIT": fifo.FlatFIT,
    "LogMTA": fifo.LogMTA,
    "AMTA": fifo.AMTA,
}
OOO: dict[str, Callable[..., Any]] = {"Recalc": ooo.Recalc, "BTree": ooo.BTree, "FiBA": ooo.FiBA}


def _raises(call: Callable[[], Any], builtin: type[BaseException], *names: str) -> None:
    with pytest.raises(WindowaggError) as info:
        call()
    assert isinstance(info.value, builtin), (type(info.value).__mro__, builtin)
    for name in names:
        assert name in str(info.value), (name, str(info.value))


# --------------------------------------------------------------------------- the cited cases


@pytest.mark.parametrize("name", sorted(FIFO))
def test_a_monoid_class_is_refused_at_construction(name: str) -> None:
    """``DABA(Sum)`` (the class) used to be accepted and to fail later."""
    _raises(lambda: FIFO[name](Sum), TypeError, "Sum", "instance")
    _raises(lambda: FIFO[name](object()), TypeError, "lacks")


@pytest.mark.parametrize("name", sorted(OOO))
def test_a_monoid_class_is_refused_by_ooo_and_windows(name: str) -> None:
    _raises(lambda: OOO[name](Sum), TypeError, "Sum", "instance")
    _raises(lambda: SlidingWindows(Max, 10, 5), TypeError, "Max", "instance")


@pytest.mark.parametrize("name", sorted(FIFO))
@pytest.mark.parametrize("count", [True, False, 1.0, "1", None])
def test_bulk_evict_refuses_a_bool_or_non_int_count(name: str, count: Any) -> None:
    """``fifo.Recalc.bulk_evict(True)`` used to be accepted (every other class refused)."""
    w = FIFO[name](Sum())
    w.insert(1)
    w.insert(2)
    _raises(lambda: w.bulk_evict(count), TypeError, "bulk_evict")
    assert len(w) == 2 and w.query() == 3


@pytest.mark.parametrize("name", sorted(FIFO))
@pytest.mark.parametrize("count", [-1, 3])
def test_bulk_evict_out_of_range(name: str, count: int) -> None:
    w = FIFO[name](Sum())
    w.insert(1)
    w.insert(2)
    _raises(lambda: w.bulk_evict(count), IndexError, "bulk_evict", str(count))


@pytest.mark.parametrize("name", sorted(n for n in OOO if n != "FiBA"))
def test_sum_refuses_a_string_in_every_structure(name: str) -> None:
    """``FiBA(Sum()).insert(4, "x")`` raised a bare TypeError (FiBA: see its own branch)."""
    w = OOO[name](Sum())
    w.insert(1, 2)
    _raises(lambda: w.insert(4, "x"), TypeError, "Sum()", "'x'")
    assert list(w) == [(1, 2)]


@pytest.mark.parametrize("name", sorted(FIFO))
def test_sum_and_max_refuse_bad_values_in_every_fifo_class(name: str) -> None:
    for m in (Sum(), Max()):
        w = FIFO[name](m) if name != "SubtractOnEvict" or m.invertible else None
        if w is None:
            continue
        w.insert(1)
        for bad in (math.nan, math.inf):
            _raises(lambda: w.insert(bad), ValueError, type(m).__name__, repr(bad))  # noqa: B023
        assert w.query() == 1 and len(w) == 1
    w = FIFO[name](Sum())
    _raises(lambda: w.insert("x"), TypeError, "Sum()", "'x'")
    if name != "SubtractOnEvict":
        # values of two types that cannot be compared: refused by the first combine,
        # which is the insert's, or the query's for the classes that do not combine
        # on insert (Recalc, FOA, IOA, FlatFIT); either way the window is unchanged
        w = FIFO[name](Max())
        w.insert(3)
        try:
            w.insert("a")
        except MonoidTypeError as e:
            assert "Max()" in str(e) and "'a'" in str(e)
            assert w.query() == 3 and len(w) == 1
        else:
            _raises(w.query, TypeError, "Max()", "'a'")
            assert len(w) == 2


# --------------------------------------------------------------------------- the sweep

SWEEP: list[tuple[str, Callable[[], Any], type[BaseException], tuple[str, ...]]] = [
    ("evict on empty", lambda: fifo.DABA(Sum()).evict(), IndexError, ("DABA",)),
    ("oldest_partial on empty", lambda: fifo.FlatFAT(Sum()).oldest_partial(), IndexError, ()),
    ("group needed", lambda: fifo.SubtractOnEvict(Max()), TypeError, ("SubtractOnEvict",)),
    ("chunk size", lambda: fifo.DABAChunked(Sum(), chunk_size=3), ValueError, ("chunk_size",)),
    ("chunk size bool", lambda: fifo.DABAChunked(Sum(), chunk_size=True), ValueError, ()),
    ("min_arity", lambda: ooo.BTree(Sum(), min_arity=1), ValueError, ("min_arity",)),
    ("min_arity bool", lambda: ooo.BTree(Sum(), min_arity=True), ValueError, ("min_arity",)),
    ("ooo None time", lambda: ooo.BTree(Sum()).insert(None, 1), TypeError, ("None",)),
    ("ooo NaN time", lambda: ooo.Recalc(Sum()).insert(math.nan, 1), TypeError, ("NaN",)),
    ("policy", lambda: fifo.LogMTA(Sum(), policy=3), TypeError, ("policy",)),
    ("bulk_after", lambda: fifo.AMTA(Sum(), bulk_after=-1), ValueError, ("bulk_after",)),
    ("slide count bool", lambda: fifo.DABA(Sum()).slide([1], evict=True), TypeError, ("slide",)),
    (
        "slide count bool (python)",
        lambda: fifo.DABA(Sum(), backend="python").slide([1], evict=True),
        TypeError,
        ("slide",),
    ),
    ("slide out", lambda: fifo.DABA(Sum()).slide([1], 0, out=[0.0]), TypeError, ("out",)),
    (
        "slide out (python)",
        lambda: fifo.DABA(Sum(), backend="python").slide([1], 0, out=[0.0]),
        TypeError,
        ("out",),
    ),
    ("enforce", lambda: fifo.LogMTA(Sum()).enforce(), TypeError, ("policy",)),
    ("CountWindow size", lambda: fifo.CountWindow(-1), ValueError, ("CountWindow", "-1")),
    ("CountWindow bool", lambda: fifo.CountWindow(True), ValueError, ("CountWindow", "True")),
    ("monoid name", lambda: monoids.get("nope"), ValueError, ("nope",)),
    ("ddof", lambda: monoids.Variance(ddof=-1), ValueError, ("ddof",)),
    ("argmax key", lambda: monoids.ArgMax(key=3), TypeError, ("key",)),
    ("geomean", lambda: monoids.GeometricMean().lift(-1), ValueError, ("GeometricMean",)),
    ("argmax pair", lambda: monoids.ArgMax().lift(3), ValueError, ("ArgMax",)),
    ("counting", lambda: monoids.Counting(Sum), TypeError, ("Counting",)),
    ("composite", lambda: monoids.Composite(Sum, Max()), TypeError, ("Sum",)),
    ("laws", lambda: monoids.laws.check(Sum, [1, 2]), TypeError, ("Sum",)),
    ("window size", lambda: SlidingWindows(Sum(), -1, 1), ValueError, ()),
    ("window size bool", lambda: SlidingWindows(Sum(), True, 1), TypeError, ()),
    ("window size str", lambda: SlidingWindows(Sum(), "x", 1), TypeError, ()),
    ("panes without slide", lambda: SlidingWindows(Sum(), 10, panes=True), ValueError, ()),
    ("late option", lambda: SlidingWindows(Sum(), 10, 5, late="nope"), ValueError, ("late",)),
    ("aggregator", lambda: SlidingWindows(Sum(), 10, 5, aggregator="nope"), ValueError, ()),
    ("count windows n", lambda: CountWindows(Sum(), 0), ValueError, ()),
    ("count windows n bool", lambda: CountWindows(Sum(), True), ValueError, ("True",)),
    ("shared sizes", lambda: SharedWindows(Sum(), []), ValueError, ()),
    ("policy windows", lambda: PolicyWindows(Sum(), 3), TypeError, ()),
    ("qdigest eps", lambda: sketches.QDigest(16, 0), ValueError, ("eps",)),
    ("qdigest eps str", lambda: sketches.QDigest(16, "x"), ValueError, ("'x'",)),
    ("qdigest universe", lambda: sketches.QDigest(0, 0.1), ValueError, ("universe",)),
    ("qdigest universe bool", lambda: sketches.QDigest(True, 0.1), TypeError, ()),
    ("qdigest key", lambda: sketches.QDigest(16, 0.1).update(99), ValueError, ("99",)),
    ("qdigest quantile", lambda: sketches.QDigest(16, 0.1).quantile(2), ValueError, ("2",)),
    ("exp decay", lambda: sketches.ExponentialDecay(-1), ValueError, ()),
    ("poly decay", lambda: sketches.PolynomialDecay(-1), ValueError, ()),
    ("space saving", lambda: sketches.ExpDecaySpaceSaving(eps=2), ValueError, ()),
    ("sliding count", lambda: sketches.SlidingWindowCount(0), ValueError, ()),
    ("value mapper", lambda: sketches.ValueMapper(1.0, 0.0, 0.1), ValueError, ()),
    ("codec bytes", lambda: codec.loads(b"garbage"), ValueError, ()),
]


@pytest.mark.parametrize(("label", "call", "builtin", "names"), SWEEP, ids=[s[0] for s in SWEEP])
def test_every_public_error_is_a_windowagg_error(
    label: str, call: Callable[[], Any], builtin: type[BaseException], names: tuple[str, ...]
) -> None:
    _raises(call, builtin, *names)


def test_monoid_errors_are_both_input_and_type_errors() -> None:
    assert issubclass(MonoidTypeError, MonoidInputError)
    assert issubclass(MonoidTypeError, TypeError)
    assert issubclass(ArgumentTypeError, TypeError)
    assert issubclass(MonoidContractError, TypeError)
    assert issubclass(EmptyWindowError, IndexError)


def test_every_name_in_errors_derives_from_windowagg_error() -> None:
    from windowagg import errors

    for name in errors.__all__:
        cls = getattr(errors, name)
        assert issubclass(cls, WindowaggError), name
        assert cls is WindowaggError or len(cls.__mro__) > 3, name  # and from a built-in


@pytest.mark.parametrize("name", ["Recalc", "BTree"])
def test_sum_of_two_number_types_that_do_not_add_names_both(name: str) -> None:
    from decimal import Decimal

    w = OOO[name](Sum())
    w.insert(1, Decimal(1))
    _raises(lambda: w.insert(1, 0.5), TypeError, "Sum()", "Decimal('1')", "0.5")
    assert list(w) == [(1, Decimal(1))]


# -- issue 26 defect 8: structure-level errors that named nothing ----------------------------


def _err(call: Callable[[], Any], builtin: type[BaseException], *names: str) -> BaseException:
    """:func:`_raises`, returning the error."""
    with pytest.raises(WindowaggError) as info:
        call()
    assert isinstance(info.value, builtin), (type(info.value).__mro__, builtin)
    for name in names:
        assert name in str(info.value), (name, str(info.value))
    return info.value


def _python_and_native() -> list[Any]:
    from windowagg import native_available

    marks = [] if native_available() else [pytest.mark.skip(reason="compiled core not built")]
    return ["python", pytest.param("native", marks=marks)]


@pytest.mark.parametrize("op", ["insert", "evict", "rank"])
def test_order_statistics_value_that_does_not_compare_is_named(op: str) -> None:
    """``OrderStatistics.insert('x')`` after floats raised a bare TypeError."""
    from windowagg.order_statistics import OrderStatistics

    s = OrderStatistics(backend="python")
    s.bulk_insert([1.0, 2.5])
    err = _err(lambda: getattr(s, op)("x"), TypeError, "OrderStatistics", op, "'x'", "str", "float")
    assert isinstance(err, ArgumentTypeError)
    assert "one comparable value type" in str(err)
    assert list(s) == [1.0, 2.5]
    s._check()


@pytest.mark.parametrize("held", [[1.0, 2.5], [1, 2.5], [Decimal(1), Decimal("2.5")]])
@pytest.mark.parametrize("op", ["insert", "evict", "rank"])
def test_native_order_statistics_value_that_does_not_compare_is_named(
    op: str, held: list[Any]
) -> None:
    """The native twin let the bare TypeError of ``<`` through; now the Python class's
    error, message and cause, and the multiset as it was (its keys' form included: a float
    multiset stays float keys, not Python objects)."""
    from windowagg import native_available
    from windowagg.order_statistics import OrderStatistics

    if not native_available():
        pytest.skip("compiled core not built")
    ref = OrderStatistics(backend="python")
    s = OrderStatistics(backend="native")
    for w in (ref, s):
        w.bulk_insert(held)
    generic = s._generic
    want = _err(lambda: getattr(ref, op)("x"), TypeError, op)
    err = _err(lambda: getattr(s, op)("x"), TypeError, "OrderStatistics", op, "'x'", "str")
    assert isinstance(err, ArgumentTypeError)
    assert isinstance(err.__cause__, TypeError) and not isinstance(err.__cause__, ArgumentTypeError)

    def shape(e: BaseException) -> str:  # the message without the TypeError's own text
        return str(e).replace(str(e.__cause__), "<err>")

    assert shape(err) == shape(want)
    assert list(s) == list(ref) == held and s._generic == generic
    s._check()
    s.insert(1.5)  # still a working multiset
    assert list(s) == sorted([*held, 1.5])


@pytest.mark.parametrize("backend", _python_and_native())
@pytest.mark.parametrize("structure", ["DABA", "AMTA", "FiBA"])
def test_mean_of_a_number_beyond_float64_is_refused_by_name(structure: str, backend: str) -> None:
    """``Mean`` over ``10**400`` raised a bare OverflowError (from combine or lower)."""
    from windowagg.monoids import Mean

    if structure == "FiBA":
        w: Any = ooo.FiBA(Mean(), backend=backend)
        w.insert(0, 1.5)
        call: Callable[[], Any] = lambda: w.insert(1, 10**400)  # noqa: E731
    else:
        w = getattr(fifo, structure)(Mean(), backend=backend)
        w.insert(1.5)
        call = lambda: w.insert(10**400)  # noqa: E731
    err = _err(call, ValueError, "Mean()", "401 digits", "float64", "scale the values")
    assert isinstance(err, MonoidInputError)
    assert len(w) == 1 and w.query() == 1.5


@pytest.mark.parametrize("backend", _python_and_native())
def test_mean_of_an_int_sum_beyond_float64_meeting_a_float_is_named(backend: str) -> None:
    from windowagg.monoids import Mean

    w = fifo.AMTA(Mean(), backend=backend)
    w.insert(10**308)
    w.insert(10**308)
    err = _err(lambda: w.insert(0.5), ValueError, "Mean()", "float64", "scale the values")
    assert isinstance(err, MonoidInputError)
    assert len(w) == 2 and w.query() == 1e308


def test_variance_of_a_number_beyond_float64_says_so() -> None:
    """It said "non-finite value" for 10**400, which is finite."""
    from windowagg.monoids import Variance

    err = _err(lambda: Variance().lift(10**400), ValueError, "Variance()", "float64")
    assert "non-finite" not in str(err)
