// Arguments of the array verbs: input values (a Python sequence or a 1-D float64/int64
// buffer), per-step counts, and the output (a list, or a writable 1-D float64/int64
// buffer). Shared by every binding; Python-only glue, no algorithm here.
#pragma once

#include <nanobind/nanobind.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "adapters.hpp"
#include "windowagg/ring.hpp"  // WINDOWAGG_INLINE

namespace windowagg::py {

// The element kind of a 1-D C-contiguous buffer: 'd' (float64), 'q' (int64), or 0.
inline char buffer_kind(const Py_buffer& v, bool any_ndim = false) {
    if ((v.ndim != 1 && !any_ndim) || v.ndim < 1 || v.itemsize != 8) return 0;
    const char* f = v.format ? v.format : "B";
    if (*f == '@' || *f == '=' || *f == '<') ++f;  // native / little-endian (this build)
    if (f[0] == 0 || f[1] != 0) return 0;
    if (f[0] == 'd') return 'd';
    if (f[0] == 'q' || f[0] == 'l') return 'q';
    return 0;
}

// Input values: a float64 / int64 buffer read in place, or any other iterable as a tuple.
struct Values {
    enum Kind { SEQ, F64, I64 } kind = SEQ;
    std::size_t n = 0;
    nb::object tuple;              // SEQ: a tuple snapshot (immune to the caller's changes)
    const double* f64 = nullptr;
    const int64_t* i64 = nullptr;
    Py_buffer view{};
    bool has_view = false;

    Values(nb::handle obj, const std::string& who) {
        PyObject* o = obj.ptr();
        if (PyObject_CheckBuffer(o) && !PyBytes_Check(o) && !PyByteArray_Check(o)) {
            if (PyObject_GetBuffer(o, &view, PyBUF_FORMAT | PyBUF_C_CONTIGUOUS) == 0) {
                has_view = true;
                char k = buffer_kind(view);
                if (k) {
                    n = static_cast<std::size_t>(view.shape ? view.shape[0] : view.len / 8);
                    if (k == 'd') { kind = F64; f64 = static_cast<const double*>(view.buf); }
                    else { kind = I64; i64 = static_cast<const int64_t*>(view.buf); }
                    return;
                }
                PyBuffer_Release(&view);
                has_view = false;
            } else {
                PyErr_Clear();
            }
        }
        PyObject* t = PySequence_Tuple(o);
        if (!t) {
            PyErr_Clear();
            raise("ArgumentTypeError", who + " needs a sequence or a 1-D float64/int64 buffer of values, got " +
                                               std::string(Py_TYPE(o)->tp_name));
        }
        tuple = nb::steal(t);
        n = static_cast<std::size_t>(PyTuple_GET_SIZE(t));
    }
    ~Values() {
        if (has_view) PyBuffer_Release(&view);
    }
    Values(const Values&) = delete;
    Values& operator=(const Values&) = delete;
    PyObject* item(std::size_t i) const { return PyTuple_GET_ITEM(tuple.ptr(), static_cast<Py_ssize_t>(i)); }

    // Lift value i with adapter a; false: deoptimise (the caller probes the twin's lift).
    template <class A>
    bool lift(const A& a, std::size_t i, typename A::partial_type& out) const {
        if (kind == F64) return a.lift_f64(f64[i], out);
        if (kind == I64) return a.lift_i64(i64[i], out);
        return a.lift(item(i), out);
    }
    // Value i as a Python object (for the twin's lift).
    nb::object object(std::size_t i) const {
        if (kind == F64) return nb::steal(PyFloat_FromDouble(f64[i]));
        if (kind == I64) return nb::steal(PyLong_FromLongLong(i64[i]));
        return nb::borrow(item(i));
    }
};

// An integer count as Python's operator.index reads it (bools refused), for `what`.
inline int64_t index_arg(PyObject* o, const std::string& who, const char* what) {
    if (PyBool_Check(o)) raise("ArgumentTypeError", who + " needs an integer " + what + ", got a bool");
    PyObject* i = PyNumber_Index(o);
    if (!i) {
        PyErr_Clear();
        raise("ArgumentTypeError", who + " needs an integer " + what + ", got " + std::string(Py_TYPE(o)->tp_name));
    }
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(i, &overflow);
    Py_DECREF(i);
    if (overflow) v = overflow > 0 ? INT64_MAX : INT64_MIN;  // out of range anyway
    return v;
}

// The per-step eviction counts of slide(): one int for every step, or one per step.
struct Counts {
    bool constant = true;
    int64_t k = 1;
    std::vector<int64_t> ks;
    int64_t at(std::size_t i) const { return constant ? k : ks[i]; }

    Counts(nb::handle obj, std::size_t n, const std::string& who) {
        PyObject* o = obj.ptr();
        if (PyLong_Check(o) || PyBool_Check(o)) {
            k = index_arg(o, who, "evict count");
            return;
        }
        constant = false;
        Values v(obj, who);
        if (v.n != n)
            raise("ArgumentError", who + ": " + std::to_string(v.n) + " evict counts for " + std::to_string(n) +
                                                " values; give one count per value (or one int for every step)");
        ks.resize(n);
        for (std::size_t i = 0; i < n; ++i) {
            if (v.kind == Values::I64) ks[i] = v.i64[i];
            else if (v.kind == Values::F64) raise("ArgumentTypeError", who + " needs integer evict counts, got float64");
            else ks[i] = index_arg(v.item(i), who, "evict count");
        }
    }

    // Every count is between 0 and the window's size at its step (checked before anything
    // changes): EmptyWindowError names the first step that fails.
    void validate(std::size_t size, std::size_t n, const std::string& who) const {
        int64_t s = static_cast<int64_t>(size);
        for (std::size_t i = 0; i < n; ++i) {
            int64_t e = at(i);
            if (e < 0 || e > s)
                raise("EmptyWindowError", who + ".slide: step " + std::to_string(i) + " evicts " + std::to_string(e) +
                                              " entries from a window of " + std::to_string(s) +
                                              "; each count must be between 0 and len(window) at its step");
            s = s - e + 1;
        }
    }
};

// Where slide() writes its answers: a new list, or a writable 1-D float64/int64 buffer.
struct Out {
    enum Kind { LIST, F64, I64 } kind = LIST;
    nb::list list;
    double* f64 = nullptr;
    int64_t* i64 = nullptr;
    Py_buffer view{};
    bool has_view = false;

    // any_ndim: a C-contiguous buffer of any shape with n slots in all (e.g. (steps, m)).
    Out(nb::handle obj, std::size_t n, const std::string& who, bool any_ndim = false) {
        if (obj.is_none()) return;
        if (PyObject_GetBuffer(obj.ptr(), &view, PyBUF_WRITABLE | PyBUF_FORMAT | PyBUF_C_CONTIGUOUS) != 0) {
            PyErr_Clear();
            raise("ArgumentTypeError", who + ": out must be a writable 1-D float64 or int64 buffer (e.g. a numpy "
                                                 "array), got " + std::string(Py_TYPE(obj.ptr())->tp_name));
        }
        has_view = true;
        char k = buffer_kind(view, any_ndim);
        if (!k)
            raise("ArgumentTypeError", who + ": out must be a writable 1-D float64 or int64 buffer, got format '" +
                                               std::string(view.format ? view.format : "B") + "'");
        std::size_t len = static_cast<std::size_t>(view.len / 8);
        if (len != n)
            raise("ArgumentError", who + ": out has " + std::to_string(len) + " slots for " + std::to_string(n) +
                                                " values; give it exactly one slot per value");
        if (k == 'd') { kind = F64; f64 = static_cast<double*>(view.buf); }
        else { kind = I64; i64 = static_cast<int64_t*>(view.buf); }
    }
    ~Out() {
        if (has_view) PyBuffer_Release(&view);
    }
    Out(const Out&) = delete;
    Out& operator=(const Out&) = delete;

    // Slot i = the lowered answer, as float(x) (float64) or operator.index(x) (int64).
    void put_object(std::size_t i, nb::handle x) {
        if (kind == LIST) { list.append(x); return; }
        if (kind == F64) {
            PyObject* f = PyNumber_Float(x.ptr());
            if (!f) throw_if_error();
            f64[i] = PyFloat_AS_DOUBLE(f);
            Py_DECREF(f);
            return;
        }
        PyObject* ix = PyNumber_Index(x.ptr());
        if (!ix) throw_if_error();
        long long v = PyLong_AsLongLong(ix);
        Py_DECREF(ix);
        if (v == -1 && PyErr_Occurred()) throw_if_error();
        i64[i] = v;
    }
    // The same for an answer the adapter lowered to a plain number (no Python object
    // unless the conversion would raise).
    WINDOWAGG_INLINE void put_num(std::size_t i, const Num& x) {
        if (kind == F64 && x.tag != Num::NONE) { f64[i] = x.as_double(); return; }
        if (kind == I64 && x.tag == Num::INT) { i64[i] = x.i; return; }
        put_object(i, num_to_py(x));
    }
    template <class A>
    WINDOWAGG_INLINE void put(const A& a, std::size_t i, const typename A::partial_type& q) {
        if (kind != LIST) {
            Num r;
            if (a.lower_num(q, r)) { put_num(i, r); return; }
        }
        put_object(i, a.lower(q));
    }
};

}  // namespace windowagg::py
