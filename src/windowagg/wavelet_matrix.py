"""WaveletMatrix: the k-th smallest value of any range of a fixed sequence.

=================  ==========================================================================
ordering           static: built once over a sequence; ranges ``values[lo:hi]`` in any order
operator needs     a total order on the values: int64 or float64 (no NaN)
build              O(n log n) (one ``numpy.argsort``) + O(n log n) for the levels (one level
                   per bit of a position, ``ceil(log2 n)`` of them)
kth(lo, hi, k)     the k-th smallest (0-based) of ``values[lo:hi]``: O(log n) worst case
kth_slices(...)    the same for every window and rank at once (vectorised over windows in
                   Python; one native loop): O(windows · ranks · log n)
space              O(n) values + n bits per level (natively 2 bits per bit with the ranks)
structure          a wavelet matrix (Claude, Navarro and Ordóñez, "The wavelet matrix",
                   Information Systems 47, 2015) over the values' positions in sorted order
                   (their dense ranks, ties broken by position); the range quantile query of
                   Gagie, Navarro and Puglisi (TCS 426, 2012) descends it one level per bit
=================  ==========================================================================

Where :class:`~windowagg.order_statistics.OrderStatistics` slides one multiset over windows
whose bounds only grow (each value inserted and evicted once, O(log w) each), a wavelet
matrix is built once and then answers any range, in any order: several window sizes over the
same events share one matrix, and each size costs only its queries
(:mod:`windowagg.windows.engine.ranks`).

Equal values are interchangeable (``0.0`` and ``-0.0``): the answer is one of the window's
values equal to the k-th smallest. A NaN is refused with
:class:`~windowagg.errors.ValueOrderError`; a rank outside a window raises
:class:`~windowagg.errors.EmptyWindowError`; bounds outside the sequence raise
:class:`~windowagg.errors.ArgumentError`; all checked before anything is computed.

The public class turns the values into codes (their positions in sorted order) and back;
the levels live in the implementation it holds: :class:`PyWaveletMatrix` (numpy, the
reference) or the compiled ``_core.WaveletMatrix``
(``_native/include/windowagg/wavelet_matrix.hpp``).

Examples
--------
>>> import numpy as np
>>> w = WaveletMatrix([5, 1, 4, 1, 3], backend="python")
>>> w.kth(0, 5, 0), w.kth(0, 5, 4), w.kth(1, 4, 1), len(w)
(1, 5, 1, 5)
>>> w.kth_slices([0, 2, 1], [2, 5, 5], [1, 0, 3]).tolist()
[5, 1, 4]
>>> w.kth_slices([0, 2], [5, 4], [[0, 4], [0, 1]]).tolist()
[[1, 5], [1, 4]]
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from windowagg._backend import Backed, Backend, resolve_backend
from windowagg.errors import (
    ArgumentError,
    ArgumentTypeError,
    EmptyWindowError,
    InvariantError,
    ValueOrderError,
)

__all__ = ["PyWaveletMatrix", "WaveletMatrix"]

_WHO = "WaveletMatrix"


def _i64(obj: Any, who: str, what: str, two_d: bool = False, writable: bool = False) -> Any:
    """*obj* as an int64 ndarray sharing its memory, with the native twin's rules: a
    C-contiguous int64 buffer of one dimension (or two, with *two_d*; any, for *writable*
    ``out``). ArgumentTypeError otherwise. O(1)."""
    want = (" int64 array of shape (windows,) or (windows, m)" if two_d else " 1-D int64 array") + (
        ", writable" if writable else ""
    )
    try:
        mv = memoryview(obj)
    except TypeError:
        raise ArgumentTypeError(
            f"{who} needs {what} as a C-contiguous{want}, got {type(obj).__name__}"
        ) from None
    fmt = mv.format.lstrip("@=<")
    ndim_ok = mv.ndim == 1 or (two_d and mv.ndim == 2) or (writable and mv.ndim >= 1)
    if (
        fmt not in ("q", "l")
        or mv.itemsize != 8
        or not mv.c_contiguous
        or not ndim_ok
        or (writable and mv.readonly)
    ):
        raise ArgumentTypeError(f"{who} needs {what} as a C-contiguous{want}")
    return np.asarray(mv)


def _check_windows(lo: Any, hi: Any, n: int, who: str) -> None:
    """0 <= lo <= hi <= n for every window (ArgumentError naming the first that is not). O(r)."""
    bad = (lo < 0) | (lo > hi) | (hi > n)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ArgumentError(
            f"{who}: window {i} is [{int(lo[i])}, {int(hi[i])}) over {n} codes; each window "
            "needs 0 <= lo <= hi <= len"
        )


def _check_ranks(ranks: Any, sizes: Any, who: str) -> None:
    """0 <= rank < size for every window's ranks (EmptyWindowError naming the first one,
    in the native twin's order: window by window, rank by rank). O(r · m)."""
    bad = (ranks < 0) | (ranks >= sizes[:, None])
    if bad.any():
        i, j = (int(x) for x in np.argwhere(bad)[0])
        raise EmptyWindowError(
            f"{who}: window {i} holds {int(sizes[i])} values and has no rank "
            f"{int(ranks[i, j])}; ranks must be between 0 and its size - 1"
        )


class PyWaveletMatrix:
    """The pure-Python (numpy) reference that ``WaveletMatrix(backend="python")`` holds: a
    wavelet matrix over int64 *codes* in ``[0, sigma)``, answering codes.

    Level ``l`` holds bit ``levels - 1 - l`` of every code, the codes ordered by a stable
    partition on the bits above it (zeros first); ``_zeros[l][i]`` counts the zero bits
    before position ``i``, so a range of level ``l`` maps to level ``l + 1`` in O(1).
    O(n · levels) to build, O(levels) per query.

    >>> import numpy as np
    >>> w = PyWaveletMatrix(np.array([3, 0, 2, 0, 1]), 4)
    >>> w.levels, w.kth(0, 5, 2), w.kth(2, 5, 2)
    (2, 1, 2)
    """

    __slots__ = ("_n", "_nz", "_sigma", "_zeros")

    def __init__(self, codes: Any, sigma: int) -> None:
        who = f"{_WHO}(codes, sigma)"
        c = _i64(codes, who, "codes")
        if sigma < 0:
            raise ArgumentError(f"{who}: sigma must be >= 0, got {sigma}")
        bad = (c < 0) | (c >= sigma)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise ArgumentError(
                f"{who}: code {i} is {int(c[i])}; every code must lie in [0, sigma) = [0, {sigma})"
            )
        n = len(c)
        levels = (sigma - 1).bit_length() if sigma > 1 else 0
        count = np.int32 if n < 2**31 else np.int64  # half the memory when it fits
        self._n, self._sigma = n, sigma
        self._zeros: list[np.ndarray] = []
        self._nz: list[int] = []
        cur = c.copy()
        for bit in range(levels - 1, -1, -1):
            one = ((cur >> bit) & 1).astype(bool)
            zeros = np.zeros(n + 1, dtype=count)
            np.cumsum(~one, out=zeros[1:])
            self._zeros.append(zeros)
            self._nz.append(int(zeros[-1]))
            cur = np.concatenate((cur[~one], cur[one]))  # stable: zeros first

    def __len__(self) -> int:
        """The number of codes. O(1)."""
        return self._n

    @property
    def levels(self) -> int:
        """Bits per code: ``ceil(log2 sigma)``. O(1)."""
        return len(self._zeros)

    @property
    def sigma(self) -> int:
        """Codes lie in ``[0, sigma)``. O(1)."""
        return self._sigma

    def kth(self, lo: int, hi: int, k: int) -> int:
        """The *k*-th smallest (0-based) code of ``codes[lo:hi]``. O(levels)."""
        who = f"{_WHO}.kth"
        a, b, r = np.array([lo]), np.array([hi]), np.array([[k]])
        _check_windows(a, b, self._n, who)
        _check_ranks(r, b - a, who)
        return int(self._select(a, b, r[0])[0])

    def kth_slices(self, lo: Any, hi: Any, ranks: Any, out: Any) -> None:
        """Per window i and rank j the ``ranks[i, j]``-th smallest code of
        ``codes[lo[i]:hi[i]]``, into *out* (int64, windows · m items, any C-contiguous
        shape). Bounds in any order; everything is checked before anything is written.
        O(windows · m · levels), vectorised over the windows."""
        who = f"{_WHO}.kth_slices"
        a, b = _i64(lo, who, "lo"), _i64(hi, who, "hi")
        rk = _i64(ranks, who, "ranks", two_d=True)
        dst = _i64(out, who, "out", two_d=True, writable=True)
        r = len(a)
        if len(b) != r or len(rk) != r:
            raise ArgumentError(
                f"{who}: {r} lo, {len(b)} hi and {len(rk)} rows of ranks; give one of each "
                "per window"
            )
        m = rk.shape[1] if rk.ndim == 2 else 1
        if dst.size != r * m:
            raise ArgumentError(
                f"{who}: out holds {dst.size} items for {r * m} answers; give one slot per "
                "window and rank"
            )
        rk = rk.reshape(r, m)
        _check_windows(a, b, self._n, who)
        _check_ranks(rk, b - a, who)
        got = self._select(np.repeat(a, m), np.repeat(b, m), rk.reshape(-1))
        dst.reshape(-1)[:] = got

    def _select(self, lo: Any, hi: Any, k: Any) -> Any:
        """The descent for checked ranges and ranks (int64 arrays of one length). O(levels)
        numpy operations over them."""
        lo = lo.astype(np.int64)
        hi = hi.astype(np.int64)
        k = k.astype(np.int64)
        code = np.zeros(len(lo), dtype=np.int64)
        levels = len(self._zeros)
        for level, (zeros, nz) in enumerate(zip(self._zeros, self._nz, strict=True)):
            zl, zh = zeros[lo], zeros[hi]
            zc = zh - zl
            one = k >= zc
            k = np.where(one, k - zc, k)
            code |= one.astype(np.int64) << (levels - 1 - level)
            lo = np.where(one, nz + lo - zl, zl)
            hi = np.where(one, nz + hi - zh, zh)
        return code

    def _check(self) -> None:
        """O(n · levels): every level's zero counts start at 0, grow by 0 or 1 per
        position, and end at the level's zero total."""
        for level, (zeros, nz) in enumerate(zip(self._zeros, self._nz, strict=True)):
            steps = np.diff(zeros)
            if zeros[0] != 0 or not np.all((steps == 0) | (steps == 1)) or zeros[-1] != nz:
                raise InvariantError(f"{_WHO}: level {level}: zero counts are not a prefix count")

    def __repr__(self) -> str:
        return f"PyWaveletMatrix(n={self._n}, sigma={self._sigma})"


def _read_values(values: Any) -> Any:
    """*values* as a 1-D int64 or float64 ndarray (ArgumentTypeError / ArgumentError
    saying what to give; ValueOrderError for NaN). O(n)."""
    try:
        a = np.asarray(values)
    except (TypeError, ValueError) as e:
        raise ArgumentTypeError(f"{_WHO} needs a 1-D sequence of numbers ({e})") from None
    if a.ndim != 1:
        raise ArgumentError(f"{_WHO} needs a 1-D sequence of values, got shape {a.shape}")
    kind = a.dtype.kind
    if kind == "u" and a.size and int(a.max()) > np.iinfo(np.int64).max:
        kind = "O"
    if kind in ("i", "u"):
        return a.astype(np.int64)
    if kind == "f":
        v = a.astype(np.float64)
        nan = np.isnan(v)
        if nan.any():
            i = int(np.flatnonzero(nan)[0])
            raise ValueOrderError(
                f"{_WHO} refuses the NaN at position {i}: it is not equal to itself, so it has "
                "no place in the order; drop or repair the record first"
            )
        return v
    if a.size == 0:
        return np.empty(0, dtype=np.float64)
    raise ArgumentTypeError(
        f"{_WHO} needs int64 or float64 values, got {a.dtype} ({a.dtype.kind!r}: bools, "
        "ints beyond int64, mixed objects); convert them first, or slide "
        "OrderStatistics.kth_slices over them (any ordered Python values)"
    )


class WaveletMatrix(Backed):
    """The k-th smallest value of any range ``values[lo:hi]`` of a fixed sequence.

    The fact card opens the module docstring: ``help(windowagg.wavelet_matrix)``.

    Parameters
    ----------
    values : 1-D sequence or array of int64 or float64 numbers
        The sequence (copied); other integer dtypes become int64, float32 becomes float64.
        NaN raises ValueOrderError. O(n log n).
    backend : {"auto", "native", "python"}, optional
        The implementation of the levels (see :mod:`windowagg._backend`); the default
        follows ``$WINDOWAGG_BACKEND``, else the native one when it is built.

    Examples
    --------
    >>> w = WaveletMatrix([2**60 + 1, 2**60, 7], backend="python")
    >>> w.kth(0, 3, 2) - 2**60, w.kth(0, 2, 0) - 2**60
    (1, 0)
    """

    _hot: ClassVar[tuple[str, ...]] = ()

    def __init__(self, values: Any, *, backend: Backend | None = None) -> None:
        vals = _read_values(values)
        n = len(vals)
        order = np.argsort(vals)
        codes = np.empty(n, dtype=np.int64)  # each value's position in sorted order
        codes[order] = np.arange(n, dtype=np.int64)
        self._sorted = vals[order]
        if resolve_backend(backend, _WHO):
            from windowagg._native.wavelet_matrix import make  # below this class

            self._hold(make(codes, n))
        else:
            self._hold(PyWaveletMatrix(codes, n))

    def __len__(self) -> int:
        """The number of values. O(1)."""
        return len(self._sorted)

    def kth(self, lo: int, hi: int, k: int) -> Any:
        """The *k*-th smallest (0-based) of ``values[lo:hi]``: a Python int or float.
        EmptyWindowError unless ``0 <= k < hi - lo``. O(log n).

        >>> WaveletMatrix([3.0, 1.0, 2.0], backend="python").kth(1, 3, 1)
        2.0
        """
        code = self._impl.kth(_index(lo, "lo"), _index(hi, "hi"), _index(k, "k"))
        return self._sorted[code].item()

    def kth_slices(self, lo: Any, hi: Any, ranks: Any) -> Any:
        """Per window i, the ``ranks[i]``-th smallest (0-based) of ``values[lo[i]:hi[i]]``.

        *lo*, *hi*: one bound per window (int64 arrays or sequences of ints), in any order,
        ``0 <= lo <= hi <= len``; *ranks*: one int per window (shape ``(windows,)``) or a
        row of m per window (shape ``(windows, m)``), each between 0 and the window's size
        - 1. All checked before anything runs. Returns an array of the values' dtype shaped
        like *ranks*. O(windows · m · log n).

        >>> WaveletMatrix([4, 1, 3, 2], backend="python").kth_slices([0, 1], [4, 3], [1, 0])
        array([2, 1])
        """
        who = f"{_WHO}.kth_slices"
        a = _ints(lo, who, "lo")
        b = _ints(hi, who, "hi")
        rk = _ints(ranks, who, "ranks", two_d=True)
        codes = np.empty(rk.shape, dtype=np.int64)
        self._impl.kth_slices(a, b, rk, codes)
        return self._sorted[codes]

    def _check(self) -> None:
        """The implementation's invariants, and the values sorted. O(n log n)."""
        s = self._sorted
        if len(s) > 1 and np.any(s[1:] < s[:-1]):
            raise InvariantError(f"{_WHO}: the sorted values are out of order")
        self._impl._check()


def _index(x: Any, what: str) -> int:
    """*x* as a Python int (ArgumentTypeError for a float, a bool or a non-number). O(1)."""
    if isinstance(x, bool) or not hasattr(x, "__index__"):
        raise ArgumentTypeError(
            f"{_WHO}.kth needs an integer {what}, got {type(x).__name__} {x!r:.40}"
        )
    v = int(x.__index__())
    if not -(2**63) <= v < 2**63:
        raise ArgumentError(f"{_WHO}.kth: {what} {v} is beyond int64; no sequence is that long")
    return v


def _ints(x: Any, who: str, what: str, two_d: bool = False) -> Any:
    """*x* (an int64 array or a sequence of ints) as a C-contiguous int64 ndarray of one
    dimension (or two, with *two_d*). ArgumentTypeError for floats or other things. O(len)."""
    try:
        a = np.asarray(x)
    except (TypeError, ValueError):
        a = np.asarray(None)
    if a.dtype.kind not in ("i", "u") and not (a.size == 0 and a.dtype.kind == "f"):
        raise ArgumentTypeError(
            f"{who} needs {what} as integers (an int64 array or a sequence of ints), got "
            f"{a.dtype if a.ndim else type(x).__name__}"
        )
    if a.ndim != 1 and not (two_d and a.ndim == 2):
        shape = "(windows,) or (windows, m)" if two_d else "(windows,)"
        raise ArgumentError(f"{who} needs {what} of shape {shape}, got shape {a.shape}")
    return np.ascontiguousarray(a, dtype=np.int64)
