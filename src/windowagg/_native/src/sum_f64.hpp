// The first stage for Sum() (FiBA, TwoStacksLite, DABALite): partial = one double (8 bytes,
// no tag), for windows whose values are all exact floats (or float64 buffers). Same answers
// as the tagged SumAdapter, bit for bit: every partial is a float or the identity (the int 0), and Python computes
// `a + b` of two floats as one IEEE addition, `0 + x` as `0.0 + x`.
//
// The identity (int 0) is a quiet NaN with a private payload (kIdBits). Lifted values are
// finite (non-finite ones are refused) and arithmetic only makes the default NaN, so no
// real partial has that bit pattern; combine adds, and only when the sum is a NaN checks
// for the identity (then computes as Python would: 0 + 0 is the int 0, 0 + x is 0.0 + x).
//
// Specialise, then deoptimise: an int, a bool or anything else that is not an exact float
// makes lift / from_py return false; the owner (FibaHandle, FifoHandle) then moves the window to the
// tagged SumAdapter (ints within int64, floats, overflow checks), and from there to the
// generic path, with every answer unchanged.
#pragma once

#include <nanobind/nanobind.h>

#include <bit>
#include <cmath>
#include <cstdint>

#include "adapters.hpp"
#include "f64_stage.hpp"

namespace windowagg::py {

struct F64SumAdapter : F64StageBase<F64SumAdapter> {
    using Tagged = SumAdapter;  // the next stage
    static constexpr std::uint64_t kIdBits = 0x7FF80000DEAD5E1DULL;

    using F64StageBase::F64StageBase;

    static double id_value() noexcept { return std::bit_cast<double>(kIdBits); }
    static bool is_id(double x) noexcept { return std::bit_cast<std::uint64_t>(x) == kIdBits; }

    partial_type identity() const noexcept { return id_value(); }
    WINDOWAGG_INLINE double combine(double a, double b) const noexcept {
        double r = a + b;
        if (!std::isnan(r)) [[likely]]
            return r;
        return combine_nan(a, b);
    }
    // A NaN sum: one side is the identity (int 0), or a real NaN (inf + -inf) propagates.
    static WINDOWAGG_NOINLINE double combine_nan(double a, double b) noexcept {
        bool ia = is_id(a), ib = is_id(b);
        if (ia && ib) return id_value();
        return (ia ? 0.0 : a) + (ib ? 0.0 : b);
    }
    WINDOWAGG_INLINE bool lower_num(const partial_type& p, Num& out) const {
        out = is_id(p) ? Num::of_int(0) : Num::of_flt(p);
        return true;
    }
    // The tagged adapter's partial for p (the deoptimisation's mapping).
    static SumAdapter::partial_type tagged(double p) { return {is_id(p) ? Num::of_int(0) : Num::of_flt(p)}; }
    // The twin's partial: a finite float, or the int 0 (the identity, which behaves as it).
    bool from_py(nb::handle h, partial_type& out) const {
        PyObject* o = h.ptr();
        if (PyFloat_CheckExact(o)) {
            double d = PyFloat_AS_DOUBLE(o);
            if (!std::isfinite(d)) return false;
            out = d;
            return true;
        }
        if (PyLong_CheckExact(o)) {
            int overflow = 0;
            long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
            if (overflow || v != 0) return false;
            out = id_value();
            return true;
        }
        return false;
    }
};

}  // namespace windowagg::py
