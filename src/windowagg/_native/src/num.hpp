// Num: a Python int (within int64) or float, or "nothing", with Python's own arithmetic
// and comparisons (an int against a float compared exactly, never rounded), and its
// conversions from and to Python objects. The numeric adapters (adapters.hpp) and the
// order-statistics keys hold it.
#pragma once

#include <nanobind/nanobind.h>

#include <cmath>
#include <cstdint>

#include "py_errors.hpp"           // throw_if_error, Deopt
#include "windowagg/ring.hpp"  // WINDOWAGG_INLINE / WINDOWAGG_NOINLINE

namespace windowagg::py {

namespace nb = nanobind;

// ------------------------------------------------------------------------- Num

// A Python int (within int64) or float, or "nothing" (None / NOTHING, the identity of
// Max, Min, First and Last). Arithmetic and comparisons follow Python's exactly.
struct Num {
    enum Tag : uint8_t { NONE = 0, INT = 1, FLT = 2 };
    union {
        int64_t i;
        double d;
    };
    Tag tag;

    static Num none() { Num n; n.i = 0; n.tag = NONE; return n; }
    static Num of_int(int64_t v) { Num n; n.i = v; n.tag = INT; return n; }
    static Num of_flt(double v) { Num n; n.d = v; n.tag = FLT; return n; }
    double as_double() const { return tag == FLT ? d : static_cast<double>(i); }
};

// Python's int(a) < float(b), exactly (no rounding of the int). NaN compares false.
inline bool int_lt_flt(int64_t a, double b) {
    if (std::isnan(b)) return false;
    if (b >= 0x1p63) return true;
    if (b < -0x1p63) return false;
    double t = std::trunc(b);
    auto ti = static_cast<int64_t>(t);
    if (a != ti) return a < ti;
    return t < b;
}

// Python's float(a) < int(b), exactly.
inline bool flt_lt_int(double a, int64_t b) {
    if (std::isnan(a)) return false;
    if (a >= 0x1p63) return false;
    if (a < -0x1p63) return true;
    double t = std::trunc(a);
    auto ti = static_cast<int64_t>(t);
    if (ti != b) return ti < b;
    return a < t;
}

// a < b for two numbers (neither NONE).
WINDOWAGG_INLINE bool num_lt(const Num& a, const Num& b) {
    if (a.tag == Num::INT) return b.tag == Num::INT ? a.i < b.i : int_lt_flt(a.i, b.d);
    return b.tag == Num::FLT ? a.d < b.d : flt_lt_int(a.d, b.i);
}

[[noreturn]] WINDOWAGG_NOINLINE inline void throw_deopt() { throw Deopt{}; }

// r = a + b; true on int64 overflow (r unspecified). GCC / Clang builtin, portable elsewhere.
WINDOWAGG_INLINE bool add_overflows(int64_t a, int64_t b, int64_t* r) {
#if defined(__GNUC__) || defined(__clang__)
    return __builtin_add_overflow(a, b, r);
#else
    if ((b > 0 && a > INT64_MAX - b) || (b < 0 && a < INT64_MIN - b)) return true;
    *r = a + b;
    return false;
#endif
}

// a + b as Python computes it; int64 overflow throws Deopt (Python would make a big int).
WINDOWAGG_INLINE Num num_add(const Num& a, const Num& b) {
    if (a.tag == Num::INT && b.tag == Num::INT) {
        int64_t r;
        if (add_overflows(a.i, b.i, &r)) [[unlikely]]
            throw_deopt();
        return Num::of_int(r);
    }
    return Num::of_flt(a.as_double() + b.as_double());
}

WINDOWAGG_INLINE int64_t checked_add(int64_t a, int64_t b) {
    int64_t r;
    if (add_overflows(a, b, &r)) [[unlikely]]
        throw_deopt();
    return r;
}

// An exact Python int (not bool, within int64) or exact float into a Num; false otherwise.
inline bool num_from_py(PyObject* o, Num& out) {
    if (PyLong_CheckExact(o)) {
        int overflow = 0;
        long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
        if (overflow) return false;
        if (v == -1 && PyErr_Occurred()) throw_if_error();
        out = Num::of_int(v);
        return true;
    }
    if (PyFloat_CheckExact(o)) {
        out = Num::of_flt(PyFloat_AS_DOUBLE(o));
        return true;
    }
    return false;
}

// A Num as the Python object it stands for (NONE -> `none`, a borrowed object).
inline nb::object num_to_py(const Num& n, PyObject* none = Py_None) {
    switch (n.tag) {
        case Num::INT: return nb::steal(PyLong_FromLongLong(n.i));
        case Num::FLT: return nb::steal(PyFloat_FromDouble(n.d));
        default: return nb::borrow(none);
    }
}

}  // namespace windowagg::py
