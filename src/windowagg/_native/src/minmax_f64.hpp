// The first stage for Max() and Min() (FiBA, TwoStacksLite, DABALite): partial = one double
// (8 bytes, no tag), for windows whose values are all exact floats (or float64 buffers).
// Same answers as the tagged MaxAdapter / MinAdapter, bit for bit.
//
// The identity (None) is -inf for Max and +inf for Min. Lift refuses non-finite values
// (MonoidInputError, as the twin) and from_py refuses them too, so no real partial is ever
// infinite: the identity cannot be confused with a value. combine is the twin's rule
// written on doubles: Max keeps the left one unless a < b (so a tie, -0.0 against 0.0
// included, keeps the left one), Min keeps the left one unless b < a; against the identity
// that rule returns the other side, as the twin's `a is None` / `b is None` branches do.
//
// Specialise, then deoptimise: an int, None, a bool or anything else that is not an exact
// float makes lift / from_py return false; the owner then moves the window to the tagged
// adapter (ints and floats mixed as Python compares them), and from there to the generic
// path, with every answer unchanged.
#pragma once

#include <nanobind/nanobind.h>

#include <cmath>
#include <cstdint>
#include <limits>

#include "adapters.hpp"

namespace windowagg::py {

template <bool IsMax>
struct F64ExtremeAdapter {
    using partial_type = double;
    using Tagged = NumAdapter<IsMax ? Kind::MAX : Kind::MIN>;  // the next stage
    static constexpr bool generic = false;
    static constexpr bool nothrow_combine = true;  // a comparison never throws
    KernelCtx ctx;
    bool commutative;

    explicit F64ExtremeAdapter(nb::handle monoid) : commutative(py_commutative(monoid)) { ctx.who = repr_str(monoid); }

    static constexpr double id_value() noexcept {
        return IsMax ? -std::numeric_limits<double>::infinity() : std::numeric_limits<double>::infinity();
    }
    static bool is_id(double x) noexcept { return x == id_value(); }

    partial_type identity() const noexcept { return id_value(); }
    WINDOWAGG_INLINE double combine(double a, double b) const noexcept {
        if constexpr (IsMax) return a < b ? b : a;
        else return b < a ? b : a;
    }
    bool lift(nb::handle x, partial_type& out) const {
        PyObject* o = x.ptr();
        if (!PyFloat_CheckExact(o)) return false;
        return lift_f64(PyFloat_AS_DOUBLE(o), out);
    }
    WINDOWAGG_INLINE bool lift_f64(double x, partial_type& out) const {
        if (!std::isfinite(x)) refuse_non_finite(ctx, x);
        out = x;
        return true;
    }
    bool lift_i64(int64_t, partial_type&) const { return false; }
    WINDOWAGG_INLINE bool lower_num(const partial_type& p, Num& out) const {
        out = is_id(p) ? Num::none() : Num::of_flt(p);
        return true;
    }
    nb::object lower(const partial_type& p) const {
        Num n;
        lower_num(p, n);
        return num_to_py(n);
    }
    nb::object to_py(const partial_type& p) const { return lower(p); }
    // The tagged adapter's partial for p (the deoptimisation's mapping).
    static typename Tagged::partial_type tagged(double p) {
        return {is_id(p) ? Num::none() : Num::of_flt(p)};
    }
    // The twin's partial: a finite float, or None (the identity).
    bool from_py(nb::handle h, partial_type& out) const {
        PyObject* o = h.ptr();
        if (o == Py_None) {
            out = id_value();
            return true;
        }
        if (!PyFloat_CheckExact(o)) return false;
        double d = PyFloat_AS_DOUBLE(o);
        if (!std::isfinite(d)) return false;
        out = d;
        return true;
    }
};

using F64MaxAdapter = F64ExtremeAdapter<true>;
using F64MinAdapter = F64ExtremeAdapter<false>;

}  // namespace windowagg::py
