"""Aggregation and window specifications shared by the pandas, batch and streaming paths.

Nothing here imports pandas or pyspark. Timestamps inside the adapter are integers:
**microseconds since the Unix epoch, UTC** (Spark's own timestamp resolution), so window
arithmetic is exact.

Aggregations are written like SQL calls: ``"max(dep_delay)"``, ``"mean(x)"``, ``"count"``
(or ``"count(*)"``), ``"p95(x)"`` / ``"p99.9(x)"`` / ``"median(x)"`` (exact quantiles,
nearest rank: an :class:`~windowagg.exact_quantile.ExactQuantile`; ``"approx_p99(x)"``
through :func:`parse` is the q-digest), optionally ``"... as alias"``; or as :class:`Agg`
objects for user monoids. Aggregations with keyword
arguments read through one small grammar, ``name(col, key=value, ...) [as alias]``
(:func:`split_call`, :data:`KEYWORD_AGGREGATIONS`): the decayed ones,
``ewm_mean(v, half_life=1h)``, ``decayed_sum(v, half_life=30 min)``,
``decayed_count(half_life=1d)``, ``decayed_sum(v, decay=poly(2))``, and the decayed
sketches ``decayed_p99(v, half_life=1h)`` and ``top_k(v, 5, half_life=1d)``
(``docs/decay.md``). The names a string can
use are exactly those that work on a plain numeric column (:data:`COLUMN_AGGREGATIONS`);
monoids that need structured input (``argmax`` takes ``(key, value)`` pairs) or return
structures (``concat``, ``bloom``) go through an :class:`Agg` or a tuple.

Examples
--------
>>> [a.alias for a in parse_aggs(["max(v)", "count", "mean(v) as avg_v"])]
['max_v', 'count', 'avg_v']
>>> [a.alias for a in parse_aggs(["ewm_mean(v, half_life=1h)", "decayed_count(half_life=1d)"])]
['ewm_mean_v', 'decayed_count']
>>> to_micros("10 minutes"), to_micros("3h"), to_micros(1.5)
(600000000, 10800000000, 1500000)
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, NamedTuple

from windowagg.errors import ArgumentError, ArgumentTypeError

__all__ = [
    "COLUMN_AGGREGATIONS",
    "KEYWORD_AGGREGATIONS",
    "MAX_DURATION",
    "MAX_MICROS",
    "MIN_MICROS",
    "QUANTILE_EPS",
    "Agg",
    "CallParts",
    "DecaySpec",
    "decay_spec",
    "keyword_builder",
    "parse",
    "parse_aggs",
    "split_call",
    "to_micros",
]


#: What an aggregation string may name: every aggregation of one plain numeric column
#: (name -> what it computes). ``pNN`` stands for any quantile ``p0 < NN < p100``.
COLUMN_AGGREGATIONS: dict[str, str] = {
    "count": "number of events (count or count(*))",
    "sum": "sum",
    "mean": "arithmetic mean (also: avg)",
    "min": "minimum",
    "max": "maximum",
    "median": "median (= p50)",
    "pNN": "quantile, e.g. p95, p99.9 (exact, nearest rank)",
    "approx_pNN": "q-digest quantile, e.g. approx_p99 (rank error <= 1% of n; "
    "windowagg.pandas and Spark batch)",
    "variance": "sample variance (ddof=0)",
    "stddev": "standard deviation (ddof=0)",
    "geomean": "geometric mean (values > 0)",
    "product": "product",
    "first": "earliest value in event time",
    "last": "latest value in event time",
}
_GENERIC = ("variance", "stddev", "geomean", "product", "first", "last")


def column_aggregations_help() -> str:
    """The aggregation names a string may use, for error messages and ``--help``.

    >>> column_aggregations_help()[:40]
    'count, sum, mean (avg), min, max, median'
    """
    names = [n if n != "mean" else "mean (avg)" for n in COLUMN_AGGREGATIONS]
    return ", ".join(names)


_UNITS = {
    "us": 1,
    "microsecond": 1,
    "microseconds": 1,
    "ms": 1_000,
    "millisecond": 1_000,
    "milliseconds": 1_000,
    "s": 1_000_000,
    "sec": 1_000_000,
    "second": 1_000_000,
    "seconds": 1_000_000,
    "m": 60_000_000,
    "min": 60_000_000,
    "minute": 60_000_000,
    "minutes": 60_000_000,
    "h": 3_600_000_000,
    "hour": 3_600_000_000,
    "hours": 3_600_000_000,
    "d": 86_400_000_000,
    "day": 86_400_000_000,
    "days": 86_400_000_000,
}
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]+)\s*$")


#: The event times every front end takes: Spark's timestamp range, years 0001-9999 (UTC), as
#: int64 microseconds since the epoch (Python's ``datetime`` range too).
MIN_MICROS = -62_135_596_800_000_000  # 0001-01-01T00:00:00Z
MAX_MICROS = 253_402_300_799_999_999  # 9999-12-31T23:59:59.999999Z
#: The longest duration: the span of that range (longer windows hold nothing more).
MAX_DURATION = MAX_MICROS - MIN_MICROS


def to_micros(d: Any, what: str = "duration") -> int:
    """A duration as integer microseconds (windowagg's time resolution). O(1).

    Accepts a :class:`datetime.timedelta`, a number of **seconds** (int or float), or a
    string like ``"10 seconds"``, ``"3 hours"``, ``"10min"``, ``"500ms"`` (Spark's interval
    words, singular or plural). *what* names the argument in errors: a duration that is
    not finite, longer than the years 0001-9999 span, or not zero but under 1 microsecond
    is an ``ArgumentError``.

    >>> to_micros(dt.timedelta(minutes=1)), to_micros("500ms")
    (60000000, 500000)
    >>> to_micros("ten minutes")
    Traceback (most recent call last):
    ...
    windowagg.errors.ArgumentError: cannot read the duration 'ten minutes'; write e.g. '10 minutes', '3h', '500ms' or a timedelta
    >>> to_micros(1e-7, "size")
    Traceback (most recent call last):
    ...
    windowagg.errors.ArgumentError: size=1e-07 s is under windowagg's time resolution of 1 microsecond (it would be 0); give at least 1e-6 s ('1us')
    """
    from windowagg.errors import ArgumentError

    if isinstance(d, dt.timedelta):
        us = (d.days * 86_400 + d.seconds) * 1_000_000 + d.microseconds
        shown, given = repr(d), 0.0  # whole microseconds: nothing rounds to 0
    elif isinstance(d, bool):
        raise ArgumentError(
            f"cannot read the {what} {d!r}; give seconds, '10 minutes' or a timedelta"
        )
    elif isinstance(d, int | float):
        if not math.isfinite(d):
            raise ArgumentError(
                f"{what}={d!r} is not finite; give a finite number of seconds, a text such as "
                "'10 minutes', or a timedelta"
            )
        shown, given = f"{d!r} s", float(d)
        us = round(d * 1_000_000) if abs(d) <= 2 * MAX_DURATION else 2 * MAX_DURATION
    else:
        m = _DURATION.match(d) if isinstance(d, str) else None
        if not (m and m.group(2).lower() in _UNITS):
            raise ArgumentError(
                f"cannot read the {what} {d!r}; write e.g. '10 minutes', '3h', '500ms' or a "
                "timedelta"
            )
        given = float(m.group(1)) * _UNITS[m.group(2).lower()]
        us = round(given) if given <= 2 * MAX_DURATION else 2 * MAX_DURATION
        shown = repr(d)
    if abs(us) > MAX_DURATION:
        raise ArgumentError(
            f"{what}={shown} is longer than the 10,000 years event times can span (years "
            f"0001-9999, {MAX_DURATION} us); give a shorter duration"
        )
    if us == 0 and given != 0:
        raise ArgumentError(
            f"{what}={shown} is under windowagg's time resolution of 1 microsecond (it would "
            "be 0); give at least 1e-6 s ('1us')"
        )
    return int(us)


@dataclass(frozen=True)
class Agg:
    """One output column: ``alias`` = lower(fold of ``monoid`` over ``column``).

    Parameters
    ----------
    alias
        Output column name.
    monoid
        Any windowagg monoid (built-in or user-defined), or an
        :class:`~windowagg.exact_quantile.ExactQuantile` (not a monoid: the engine answers
        it exactly from the window's values, whatever the alias and kind).
    column
        Input column, or None for aggregations that ignore values (``count``).
    dtype
        The output's Spark SQL type (``"double"``, ``"bigint"``, ``"string"`` ...).
    kind
        The built-in name when the monoid is a built-in (``"max"``, ``"p95"`` ...), else None:
        a label (error messages); what is computed follows from ``monoid`` alone. The engine
        tries the ``lift`` of monoids not declaring ``sum/count/max/min/mean`` on every
        value (refusals are rejects).

    Examples
    --------
    >>> from windowagg.exact_quantile import ExactQuantile
    >>> Agg("slowest_5pct", ExactQuantile(95, 100), "latency").kind is None
    True
    """

    alias: str
    monoid: Any
    column: str | None
    dtype: str = "double"
    kind: str | None = None

    def __post_init__(self) -> None:
        from windowagg.exact_quantile import ExactQuantile
        from windowagg.monoids.base import require_monoid

        if not isinstance(self.monoid, ExactQuantile):
            require_monoid(self.monoid, f"aggregation {self.alias!r}")


_CALL = re.compile(
    r"^\s*(?P<name>[A-Za-z_][A-Za-z0-9_.]*)\s*(?:\(\s*(?P<col>[^()]*?)\s*\))?"
    r"(?:\s+as\s+(?P<alias>[A-Za-z_][A-Za-z0-9_]*))?\s*$",
    re.IGNORECASE,
)
_QUANTILE = re.compile(r"^p(\d+(?:\.\d+)?)$", re.IGNORECASE)


def _builtin(name: str) -> tuple[Any, str, str]:
    """The monoid, output type and canonical kind for a built-in aggregation name."""
    from windowagg import monoids

    low = name.lower()
    q = _QUANTILE.match(low)
    if q:
        from windowagg.exact_quantile import ExactQuantile

        kind = "p" + q.group(1)
        num, den = quantile_fraction(kind) or (0, 0)
        return ExactQuantile(num, den), "double", kind
    if low == "median":
        return _builtin("p50")
    if low in ("avg", "mean"):
        return _get_monoid("mean"), "double", "mean"
    if low == "count":
        return monoids.Count(), "bigint", "count"
    if low == "sum":
        return monoids.Sum(), "double", "sum"
    if low == "max":
        return monoids.Max(), "double", "max"
    if low == "min":
        return monoids.Min(), "double", "min"
    if low in _GENERIC:
        return _get_monoid(low), "double", low
    why = "is not an aggregation"
    if low in _structured():
        why = "does not work on a plain column (it needs structured values or returns a structure)"
    raise ArgumentError(
        f"{name!r} {why}; aggregations of a column: {column_aggregations_help()}. "
        "Other monoids: pass (alias, monoid, column, dtype) to windowagg.spark's Python API"
    )


def quantile_fraction(kind: str) -> tuple[int, int] | None:
    """The exact fraction a quantile name reads as: ``"p95"`` -> ``(95, 100)``, ``"p99.9"``
    -> ``(999, 1000)``, ``"median"`` -> ``(1, 2)``; None if *kind* names no quantile. O(1).

    Only the parser reads names: what is computed follows from the
    :class:`~windowagg.exact_quantile.ExactQuantile` it builds.

    >>> quantile_fraction("p99.9"), quantile_fraction("median"), quantile_fraction("max")
    ((999, 1000), (1, 2), None)
    >>> quantile_fraction("p100")
    Traceback (most recent call last):
    ...
    windowagg.errors.ArgumentError: quantile 'p100' must be between p0 and p100 (exclusive)
    """
    low = kind.lower()
    if low == "median":
        return (1, 2)
    m = _QUANTILE.match(low)
    if not m:
        return None
    whole, _, frac = m.group(1).partition(".")
    num, den = int(whole + frac), 100 * 10 ** len(frac)
    if not 0 < num < den:
        raise ArgumentError(f"quantile {kind!r} must be between p0 and p100 (exclusive)")
    return num, den


def _approx_quantile(kind: str) -> Any:
    """The q-digest monoid of ``approx_pNN`` (*kind* is ``pNN``): rank error at most
    ``QUANTILE_EPS * n``."""
    from windowagg.sketches import FloatOrderMapper, QDigestMonoid

    p = float(kind[1:])  # as the name reads (p99.9 -> 99.9 / 100.0)
    return QDigestMonoid(eps=QUANTILE_EPS, mapper=FloatOrderMapper(), quantiles=(p / 100.0,))


def _structured() -> set[str]:
    """Built-in monoid names that a plain numeric column cannot feed."""
    from windowagg import monoids

    return set(monoids.available()) - set(COLUMN_AGGREGATIONS) - {"avg"}


#: q-digest accuracy of the ``approx_pNN`` aggregations: the returned value's rank is within
#: ``QUANTILE_EPS * n`` of the requested one (exact while a window holds fewer distinct
#: values than the digest's size cap, 6 * 64 / eps + 1 nodes).
QUANTILE_EPS = 0.01


def _get_monoid(name: str) -> Any:
    from windowagg import monoids

    getter = getattr(monoids, "get", None)
    if getter is None:  # pragma: no cover - only while the registry is not installed
        raise ArgumentError(f"unknown aggregation {name!r}")
    try:
        return getter(name)
    except (KeyError, LookupError, ValueError) as e:
        raise ArgumentError(f"unknown aggregation {name!r}: {e}") from None


def parse_aggs(aggs: Sequence[str | Agg | tuple[Any, ...]]) -> list[Agg]:
    """Turn aggregation strings, tuples and :class:`Agg` objects into a list of :class:`Agg`.

    Tuples are ``(alias, monoid_or_name, column[, dtype])``. O(len(aggs)).

    >>> a = parse_aggs(["p99(lat)"])[0]; (a.alias, a.column, a.kind)
    ('p99_lat', 'lat', 'p99')
    >>> parse_aggs(["max(a)", "max(a)"])
    Traceback (most recent call last):
    ...
    windowagg.errors.ArgumentError: two aggregations are named 'max_a'; give one an alias ('max(a) as other')
    """
    out: list[Agg] = []
    for a in aggs:
        if isinstance(a, Agg):
            out.append(a)
        elif (
            isinstance(a, str)
            and (parts := split_call(a)) is not None
            and (parts.keywords or keyword_builder(parts.name) is not None)
        ):
            build = keyword_builder(parts.name)
            if build is None:
                raise ArgumentError(
                    f"{parts.name!r} takes no keyword arguments (in {a!r}); aggregations "
                    f"with keywords: {', '.join(sorted(KEYWORD_AGGREGATIONS))}"
                )
            out.append(build(parts))
        elif isinstance(a, str):
            m = _CALL.match(a)
            if not m:
                raise ArgumentError(f"cannot read the aggregation {a!r}; write e.g. 'max(col)'")
            name, col, alias = m.group("name"), m.group("col"), m.group("alias")
            column = None if col in (None, "", "*") else col
            monoid, dtype, kind = _builtin(name)
            if column is None and kind != "count":
                raise ArgumentError(f"aggregation {a!r} needs a column, e.g. '{name}(value)'")
            label = "median" if name.lower() == "median" else kind.replace(".", "_")
            default = kind if column is None else f"{label}_{column}"
            out.append(Agg(alias or default, monoid, column, dtype, kind))
        elif isinstance(a, tuple) and len(a) in (3, 4):
            alias, monoid, column = a[0], a[1], a[2]
            dtype = a[3] if len(a) == 4 else "double"
            if isinstance(monoid, str):
                if monoid.lower() in _structured():  # any built-in by name, with a column
                    m2, dt2, kind2 = _get_monoid(monoid.lower()), "double", monoid.lower()
                else:
                    m2, dt2, kind2 = _builtin(monoid)
                out.append(Agg(alias, m2, column, dtype if len(a) == 4 else dt2, kind2))
            else:
                out.append(Agg(alias, monoid, column, dtype, None))
        else:
            raise ArgumentTypeError(
                f"an aggregation is a string like 'max(col)', an Agg, or a tuple "
                f"(alias, monoid, column[, dtype]); got {a!r}"
            )
    seen: set[str] = set()
    for agg in out:
        if agg.alias in seen:
            raise ArgumentError(
                f"two aggregations are named {agg.alias!r}; give one an alias "
                f"('{agg.kind or 'agg'}({agg.column}) as other')"
            )
        seen.add(agg.alias)
    if not out:
        raise ArgumentError("give at least one aggregation, e.g. ['count', 'max(value)']")
    return out


class CallParts(NamedTuple):
    """An aggregation string read by :func:`split_call`."""

    text: str
    """The whole string (for error messages)."""
    name: str
    positional: list[str]
    """Positional arguments, stripped (``*`` stays ``*``)."""
    keywords: dict[str, str]
    """Keyword arguments, ``key -> value`` text, stripped."""
    alias: str | None


_HEAD = re.compile(
    r"^\s*(?P<name>[A-Za-z_][A-Za-z0-9_.]*)\s*\((?P<args>.*)\)"
    r"(?:\s+as\s+(?P<alias>[A-Za-z_][A-Za-z0-9_]*))?\s*$",
    re.IGNORECASE | re.DOTALL,
)
_BALANCE = "close every '(' once, e.g. 'decayed_sum(v, decay=poly(2))'"
_KEYWORD = re.compile(r"^\s*(?P<key>[A-Za-z_][A-Za-z0-9_]*)\s*=\s*(?P<value>.*?)\s*$", re.DOTALL)


def split_call(text: str) -> CallParts | None:
    """``name(arg, ..., key=value, ...) [as alias]`` split at its top-level commas (values
    may hold parentheses: ``decay=poly(2)``); None if *text* has no argument list.
    O(len(text)).

    >>> split_call("decayed_sum(v, decay=poly(2), unit=1h) as s")
    CallParts(text='decayed_sum(v, decay=poly(2), unit=1h) as s', name='decayed_sum', positional=['v'], keywords={'decay': 'poly(2)', 'unit': '1h'}, alias='s')
    >>> split_call("count") is None
    True
    >>> split_call("ewm_mean(half_life=1h, v)")
    Traceback (most recent call last):
    ...
    windowagg.errors.ArgumentError: positional argument 'v' after a keyword argument in 'ewm_mean(half_life=1h, v)'; write the column first, e.g. 'ewm_mean(v, half_life=1h)'
    """
    m = _HEAD.match(text)
    if m is None:
        return None
    pieces: list[str] = []
    depth = 0
    cur: list[str] = []
    for ch in m.group("args"):
        if ch == "," and depth == 0:
            pieces.append("".join(cur))
            cur = []
            continue
        depth += (ch == "(") - (ch == ")")
        if depth < 0:
            raise ArgumentError(f"unbalanced parentheses in the aggregation {text!r}; {_BALANCE}")
        cur.append(ch)
    if depth:
        raise ArgumentError(f"unbalanced parentheses in the aggregation {text!r}; {_BALANCE}")
    pieces.append("".join(cur))
    if len(pieces) == 1 and not pieces[0].strip():
        pieces = []
    name = m.group("name")
    positional: list[str] = []
    keywords: dict[str, str] = {}
    for piece in pieces:
        kw = _KEYWORD.match(piece)
        if kw is None:
            if keywords:
                raise ArgumentError(
                    f"positional argument {piece.strip()!r} after a keyword argument in "
                    f"{text!r}; write the column first, e.g. '{name}(v, half_life=1h)'"
                )
            if not piece.strip():
                raise ArgumentError(f"an empty argument in the aggregation {text!r}")
            positional.append(piece.strip())
            continue
        key = kw.group("key").lower()
        if key in keywords:
            raise ArgumentError(f"keyword {key!r} given twice in the aggregation {text!r}")
        keywords[key] = kw.group("value")
    return CallParts(text, name, positional, keywords, m.group("alias"))


class DecaySpec(NamedTuple):
    """A decay read from an aggregation's keywords (:func:`decay_spec`)."""

    kind: str
    """``"exp"`` (``half_life=``) or ``"poly"`` (``decay=poly(alpha)``)."""
    half_life: int
    """Exponential: the half-life in microseconds (0 for polynomial)."""
    alpha: float
    """Polynomial: the exponent of ``g(a) = (1 + a/unit)^-alpha`` (0.0 for exponential)."""
    unit: int
    """Polynomial: the unit of age a in microseconds (default 1 second)."""


def _duration_value(value: str, what: str) -> int:
    """A keyword's duration: seconds as a bare number, else text such as ``1h``. O(1)."""
    try:
        seconds = float(value)
    except ValueError:
        return to_micros(value, what)
    return to_micros(seconds, what)


_POLY = re.compile(r"^poly\s*\(\s*(?P<alpha>[^()]*?)\s*\)$", re.IGNORECASE)
_EXP = re.compile(r"^exp\s*\(\s*(?P<h>[^()]*?)\s*\)$", re.IGNORECASE)


def decay_spec(parts: CallParts, allowed: Sequence[str] = ()) -> DecaySpec:
    """The decay of a decayed aggregation: exactly one of ``half_life=<duration>``
    (exponential; also ``decay=exp(<duration>)``) or ``decay=poly(<alpha>)`` (polynomial,
    ages in seconds, or in ``unit=<duration>``). Other keywords are an error unless named
    in *allowed* (for aggregations that take more, e.g. ``k=``). O(1).

    >>> decay_spec(split_call("ewm_mean(v, half_life=90)"))
    DecaySpec(kind='exp', half_life=90000000, alpha=0.0, unit=0)
    >>> decay_spec(split_call("decayed_sum(v, decay=poly(1.5), unit=1 min)"))
    DecaySpec(kind='poly', half_life=0, alpha=1.5, unit=60000000)
    """
    from windowagg.errors import ArgumentError

    kw = parts.keywords
    extra = set(kw) - {"half_life", "decay", "unit", *allowed}
    if extra:
        raise ArgumentError(
            f"{parts.name!r} takes no keyword {sorted(extra)[0]!r} (in {parts.text!r}); give "
            "half_life=<duration> or decay=poly(<alpha>)"
        )
    decay = kw.get("decay")
    exp = _EXP.match(decay) if decay is not None else None
    if ("half_life" in kw) + (decay is not None) != 1 or (exp and "half_life" in kw):
        raise ArgumentError(
            f"{parts.text!r} needs exactly one decay: half_life=<duration> (exponential, e.g. "
            "half_life=1h) or decay=poly(<alpha>) (polynomial, e.g. decay=poly(2))"
        )
    if decay is None or exp is not None:
        h = kw["half_life"] if exp is None else exp.group("h")
        if "unit" in kw:
            raise ArgumentError(
                f"unit= is the age unit of polynomial decay, not of half_life (in {parts.text!r})"
            )
        us = _duration_value(h, "half_life")
        if us <= 0:
            raise ArgumentError(
                f"half_life must be positive (in {parts.text!r}), e.g. half_life=1h"
            )
        return DecaySpec("exp", us, 0.0, 0)
    poly = _POLY.match(decay)
    if poly is None:
        raise ArgumentError(
            f"cannot read decay={decay!r} (in {parts.text!r}); write decay=poly(2) or half_life=1h"
        )
    try:
        alpha = float(poly.group("alpha"))
    except ValueError:
        alpha = math.nan
    if not (math.isfinite(alpha) and alpha > 0):
        raise ArgumentError(
            f"decay=poly({poly.group('alpha')}) needs a positive finite exponent (in "
            f"{parts.text!r}), e.g. decay=poly(2)"
        )
    unit = _duration_value(kw.get("unit", "1"), "unit")
    if unit <= 0:
        raise ArgumentError(f"unit must be positive (in {parts.text!r}), e.g. unit=1s")
    return DecaySpec("poly", 0, alpha, unit)


def _decayed(what: str) -> Callable[[CallParts], Agg]:
    """The builder of ``ewm_mean`` (what ``"mean"``), ``decayed_sum`` or ``decayed_count``."""
    name = {"mean": "ewm_mean", "sum": "decayed_sum", "count": "decayed_count"}[what]

    def build(parts: CallParts) -> Agg:
        from windowagg.errors import ArgumentError
        from windowagg.sketches.forward_decay import ExpDecayed, PolyDecayed

        pos = [p for p in parts.positional if p != "*"]
        if what == "count" and pos:
            raise ArgumentError(
                f"{name} counts events and reads no column (in {parts.text!r}); write "
                f"'{name}(half_life=1h)'"
            )
        if what != "count" and len(pos) != 1:
            raise ArgumentError(
                f"{name} needs one column (in {parts.text!r}), e.g. '{name}(v, half_life=1h)'"
            )
        spec = decay_spec(parts)
        monoid: Any = (
            ExpDecayed(spec.half_life, what)
            if spec.kind == "exp"
            else PolyDecayed(spec.alpha, what, unit=spec.unit)
        )
        column = pos[0] if pos else None
        default = name if column is None else f"{name}_{column}"
        return Agg(parts.alias or default, monoid, column, "double", name)

    return build


def _eps_value(parts: CallParts) -> float:
    """The ``eps=`` keyword of a decayed sketch aggregation (default 0.01). O(1)."""
    from windowagg.errors import ArgumentError
    from windowagg.sketches.decayed_aggs import DEFAULT_EPS

    text = parts.keywords.get("eps")
    if text is None:
        return DEFAULT_EPS
    try:
        eps = float(text)
    except ValueError:
        eps = math.nan
    if not 0 < eps < 1:
        raise ArgumentError(
            f"eps={text} must be a number in (0, 1) (in {parts.text!r}), e.g. eps=0.01"
        )
    return eps


_DECAYED_QUANTILE = re.compile(r"^decayed_p(\d+(?:\.\d+)?)$", re.IGNORECASE)


def _decayed_quantile(parts: CallParts) -> Agg:
    """``decayed_pNN(v, half_life=... | decay=poly(a)[, eps=...])``: a
    :class:`~windowagg.sketches.decayed_aggs.DecayedQuantile` (docs/decay.md)."""
    from windowagg.errors import ArgumentError
    from windowagg.sketches.decayed_aggs import DecayedQuantile

    m = _DECAYED_QUANTILE.match(parts.name)
    assert m is not None
    p = Fraction(m.group(1)) / 100  # exact: decayed_p99.9 is phi = 0.999, not 0.99900...01
    if not 0 < p < 1:
        raise ArgumentError(
            f"{parts.name!r} must name a quantile between p0 and p100 (exclusive), e.g. decayed_p99"
        )
    pos = [x for x in parts.positional if x != "*"]
    if len(pos) != 1:
        raise ArgumentError(
            f"{parts.name} needs one column (in {parts.text!r}), e.g. "
            f"'{parts.name}(v, half_life=1h)'"
        )
    spec = decay_spec(parts, allowed=("eps",))
    eps = _eps_value(parts)
    monoid = (
        DecayedQuantile(float(p), spec.half_life, eps=eps)
        if spec.kind == "exp"
        else DecayedQuantile(float(p), alpha=spec.alpha, unit=spec.unit, eps=eps)
    )
    kind = "decayed_p" + m.group(1)
    return Agg(parts.alias or f"{kind.replace('.', '_')}_{pos[0]}", monoid, pos[0], "double", kind)


def _top_k(parts: CallParts) -> Agg:
    """``top_k(col, k, half_life=...[, eps=...])``: a
    :class:`~windowagg.sketches.decayed_aggs.DecayedTopK`, answered as JSON text."""
    from windowagg.errors import ArgumentError
    from windowagg.sketches.decayed_aggs import DecayedTopK

    pos = [x for x in parts.positional if x != "*"]
    k_text = parts.keywords.get("k")
    if k_text is not None and len(pos) == 1:
        pos.append(k_text)
    elif k_text is not None:
        raise ArgumentError(
            f"top_k: give k once (in {parts.text!r}), e.g. top_k(v, 5, half_life=1d)"
        )
    if len(pos) != 2:
        raise ArgumentError(
            f"top_k needs a column and k (in {parts.text!r}), e.g. 'top_k(v, 5, half_life=1d)'"
        )
    try:
        k = int(pos[1])
    except ValueError:
        k = 0
    if k < 1:
        raise ArgumentError(
            f"top_k's k={pos[1]!r} must be a whole number >= 1 (in {parts.text!r}), e.g. "
            "top_k(v, 5, half_life=1d)"
        )
    spec = decay_spec(parts, allowed=("eps", "k"))
    if spec.kind != "exp":
        raise ArgumentError(
            f"top_k decays exponentially only (in {parts.text!r}): give half_life=<duration>; "
            "decayed quantiles take decay=poly(alpha) (decayed_p99(v, decay=poly(2)))"
        )
    monoid = DecayedTopK(k, spec.half_life, eps=_eps_value(parts))
    return Agg(parts.alias or f"top_k_{pos[0]}", monoid, pos[0], "string", "top_k")


#: Aggregations read with keyword arguments (:func:`split_call`): name -> builder of its
#: :class:`Agg` from the :class:`CallParts`; ``decayed_pNN`` (any quantile) is read by
#: :func:`keyword_builder`.
KEYWORD_AGGREGATIONS: dict[str, Callable[[CallParts], Agg]] = {
    "ewm_mean": _decayed("mean"),
    "decayed_sum": _decayed("sum"),
    "decayed_count": _decayed("count"),
    "top_k": _top_k,
}


def keyword_builder(name: str) -> Callable[[CallParts], Agg] | None:
    """The builder of the keyword aggregation *name* (:data:`KEYWORD_AGGREGATIONS`, or
    ``decayed_pNN``), None if it takes no keywords. O(1).

    >>> keyword_builder("decayed_p99.9") is not None, keyword_builder("max")
    (True, None)
    """
    low = name.lower()
    if _DECAYED_QUANTILE.match(low):
        return _decayed_quantile
    return KEYWORD_AGGREGATIONS.get(low)


_SPECIAL = re.compile(
    r"^\s*(?P<name>median|approx_p\d+(?:\.\d+)?)\s*\(\s*(?P<col>[^()]*?)\s*\)"
    r"(?:\s+as\s+(?P<alias>[A-Za-z_][A-Za-z0-9_]*))?\s*$",
    re.IGNORECASE,
)


def parse(aggs: Sequence[str | Agg | tuple[Any, ...]]) -> list[Agg]:
    """:func:`parse_aggs`, plus ``median(x)`` and ``approx_pNN(x)``.

    ``pNN`` and ``median`` are exact quantiles (an
    :class:`~windowagg.exact_quantile.ExactQuantile`); ``approx_pNN`` is the q-digest
    (a :class:`~windowagg.sketches.QDigestMonoid`). O(len(aggs)).

    >>> [(a.alias, a.kind) for a in parse(["median(v)", "approx_p99(v)", "p95(v)"])]
    [('median_v', 'median'), ('approx_p99_v', 'approx_p99'), ('p95_v', 'p95')]
    >>> [type(a.monoid).__name__ for a in parse(["median(v)", "approx_p99(v)", "p95(v)"])]
    ['ExactQuantile', 'QDigestMonoid', 'ExactQuantile']
    """
    out: list[Agg] = []
    for a in aggs:
        m = _SPECIAL.match(a) if isinstance(a, str) else None
        if m is None:
            out.extend(parse_aggs([a]))
            continue
        name, col, alias = m.group("name").lower(), m.group("col"), m.group("alias")
        if not col or col == "*":
            raise ArgumentError(f"aggregation {a!r} needs a column, e.g. '{name}(value)'")
        q = "p50" if name == "median" else name[len("approx_") :]
        kind = name
        (base,) = parse_aggs([f"{q}({col})"])
        if name != "median":  # approx_pNN: the q-digest, a monoid folded like any other
            base = dataclasses.replace(base, monoid=_approx_quantile(q))
        out.append(
            dataclasses.replace(base, alias=alias or f"{kind.replace('.', '_')}_{col}", kind=kind)
        )
    seen: set[str] = set()
    for agg in out:
        if agg.alias in seen:
            raise ArgumentError(f"two aggregations are named {agg.alias!r}; give one an alias")
        seen.add(agg.alias)
    return out
