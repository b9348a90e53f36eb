// FiBA's timestamps on the native side: int64 keys while every timestamp is a Python int
// in range (not a bool), Python-object keys compared with `<` after that. Validation and
// messages are windowagg._time.check_timestamp's (called for anything off the int fast path).
#pragma once

#include <nanobind/nanobind.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

#include "adapters.hpp"

namespace windowagg::py {

// Thrown when a timestamp needs Python-object keys: the owner rebuilds the tree with object
// keys (and the generic adapter) and redoes the operation.
struct DeoptKeys {};

// Python-object keys, ordered by Python's `<` (a raising comparison propagates).
struct PyLess {
    bool operator()(const nb::object& a, const nb::object& b) const {
        PyObject* x = a.ptr();
        PyObject* y = b.ptr();
        if (PyFloat_CheckExact(x) && PyFloat_CheckExact(y)) return PyFloat_AS_DOUBLE(x) < PyFloat_AS_DOUBLE(y);
        int r = PyObject_RichCompareBool(x, y, Py_LT);
        if (r < 0) throw nb::python_error();
        return r == 1;
    }
};

// windowagg._time.check_timestamp(t, ref, where=where); ref may be null (empty window).
inline void check_timestamp(nb::handle t, nb::handle ref, const char* where) {
    // one reference kept for the process lifetime (never released after finalisation)
    static PyObject* fn = nb::object(nb::module_::import_("windowagg._time").attr("check_timestamp")).release().ptr();
    nb::handle call(fn);
    call(t, ref.ptr() ? ref : nb::none(), nb::arg("where") = where);
}

// An exact Python int within int64 (never a bool).
inline bool exact_i64(PyObject* o, int64_t& out) {
    if (!PyLong_CheckExact(o)) return false;
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
    if (overflow) return false;
    out = v;
    return true;
}

inline nb::object key_to_py(int64_t k) { return nb::steal(PyLong_FromLongLong(k)); }
inline nb::object key_to_py(const nb::object& k) { return k; }

// A validated bound (comparable with the int keys) as an int64 for the int-key tree:
// want_floor: the largest int64 <= t, else the smallest int64 >= t. Returns 0 (out set),
// -1 (below every int64) or +1 (above every int64); 2 when t is of a type only Python
// comparisons can place (the caller deoptimises the keys). `exact` tells whether t equals
// `out` (for evict).
inline int int_bound(PyObject* t, bool want_floor, int64_t& out, bool& exact) {
    exact = false;
    if (PyLong_Check(t)) {  // int or bool
        int overflow = 0;
        long long v = PyLong_AsLongLongAndOverflow(t, &overflow);
        if (overflow) return overflow;
        out = v;
        exact = true;
        return 0;
    }
    if (PyFloat_Check(t)) {
        double d = PyFloat_AS_DOUBLE(t);
        if (std::isinf(d)) return d < 0 ? -1 : 1;
        double r = want_floor ? std::floor(d) : std::ceil(d);
        if (r < -0x1p63) return -1;
        if (r >= 0x1p63) return 1;
        out = static_cast<int64_t>(r);
        exact = r == d;
        return 0;
    }
    PyObject* i = PyNumber_Index(t);  // numpy integers and the like
    if (!i) {
        PyErr_Clear();
        return 2;
    }
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(i, &overflow);
    Py_DECREF(i);
    if (overflow) return overflow;
    out = v;
    exact = true;
    return 0;
}

}  // namespace windowagg::py
