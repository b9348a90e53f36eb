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
#include "f64_stage.hpp"

namespace windowagg::py {

template <bool IsMax>
struct F64ExtremeAdapter : F64StageBase<F64ExtremeAdapter<IsMax>> {
    using Base = F64StageBase<F64ExtremeAdapter<IsMax>>;
    using typename Base::partial_type;
    using Tagged = NumAdapter<IsMax ? Kind::MAX : Kind::MIN>;  // the next stage

    using Base::Base;

    static constexpr double id_value() noexcept {
        return IsMax ? -std::numeric_limits<double>::infinity() : std::numeric_limits<double>::infinity();
    }
    static bool is_id(double x) noexcept { return x == id_value(); }

    partial_type identity() const noexcept { return id_value(); }
    WINDOWAGG_INLINE double combine(double a, double b) const noexcept {
        if constexpr (IsMax) return a < b ? b : a;
        else return b < a ? b : a;
    }
    WINDOWAGG_INLINE bool lower_num(const partial_type& p, Num& out) const {
        out = is_id(p) ? Num::none() : Num::of_flt(p);
        return true;
    }
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
