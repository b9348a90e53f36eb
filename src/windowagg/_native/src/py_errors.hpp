// Python glue every binding needs: windowagg.errors raised as C++ exceptions (the binding
// layer turns them back into the Python error), a monoid's `commutative` flag, repr, and the
// Deopt signal of the numeric adapters. No algorithm here.
#pragma once

#include <nanobind/nanobind.h>

#include <string>
#include <unordered_map>

#include "windowagg/monoid.hpp"  // windowagg::Deopt

namespace windowagg::py {

namespace nb = nanobind;

// ------------------------------------------------------------------------- errors

// The class `name` of windowagg.errors (looked up once, kept for the process lifetime).
inline PyObject* error_class(const char* name) {
    static std::unordered_map<std::string, PyObject*> cache;
    auto it = cache.find(name);
    if (it != cache.end()) return it->second;
    nb::object cls = nb::module_::import_("windowagg.errors").attr(name);
    PyObject* p = cls.release().ptr();  // one reference kept forever (module lifetime)
    cache.emplace(name, p);
    return p;
}

// Raise windowagg.errors.<cls>(msg) as a C++ exception (nb::python_error).
[[noreturn]] inline void raise(const char* cls, const std::string& msg) {
    PyErr_SetString(error_class(cls), msg.c_str());
    throw nb::python_error();
}

// Raise a built-in exception type (PyExc_TypeError, ...).
[[noreturn]] inline void raise_builtin(PyObject* type, const std::string& msg) {
    PyErr_SetString(type, msg.c_str());
    throw nb::python_error();
}

[[noreturn]] inline void throw_if_error() { throw nb::python_error(); }

// `getattr(m, "commutative", False) is True`, as windowagg.fifo._common.flip_op reads it:
// the FIFO algorithms fold a flip as acc (x) older for such a monoid (same floats as the twin).
inline bool py_commutative(nb::handle m) {
    PyObject* v = PyObject_GetAttrString(m.ptr(), "commutative");
    if (!v) { PyErr_Clear(); return false; }
    bool r = v == Py_True;
    Py_DECREF(v);
    return r;
}

inline std::string repr_str(nb::handle h) {
    nb::str s = nb::repr(h);
    return std::string(s.c_str());
}

// Thrown by a numeric adapter's combine when the result leaves what it can represent
// (int64 overflow): the algorithm keeps its structure unchanged (strong guarantee) and the
// binding layer deoptimises to GenericAdapter, then redoes the operation. (One type for the
// headers and the bindings: windowagg::Deopt of include/windowagg/monoid.hpp.)
using Deopt = windowagg::Deopt;

}  // namespace windowagg::py
