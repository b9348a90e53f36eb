// What every float64 first stage (sum_f64.hpp, minmax_f64.hpp) shares: partial = one double
// (8 bytes, no tag); lift takes exact Python floats and float64 buffers, refusing
// non-finite values as the twin does (MonoidInputError), and returns false for anything
// else (an int, None, a bool, ...), so the owner deoptimises to the stage's Tagged adapter;
// lower goes through the stage's own lower_num. The stage D adds its identity, combine,
// lower_num, tagged (the deoptimisation's mapping) and from_py (the twin's partials).
#pragma once

#include <nanobind/nanobind.h>

#include <cmath>
#include <cstdint>

#include "adapters.hpp"

namespace windowagg::py {

template <class D>
struct F64StageBase {
    using partial_type = double;
    static constexpr bool generic = false;
    static constexpr bool nothrow_combine = true;  // a double addition or comparison never throws
    static constexpr bool gil_free = true;         // no Python object (adapters.hpp)
    KernelCtx ctx;
    bool commutative;

    explicit F64StageBase(nb::handle monoid) : commutative(py_commutative(monoid)) { ctx.who = repr_str(monoid); }

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
    nb::object lower(const partial_type& p) const {
        Num n;
        static_cast<const D&>(*this).lower_num(p, n);
        return num_to_py(n);
    }
    nb::object to_py(const partial_type& p) const { return lower(p); }
};

}  // namespace windowagg::py
