// Cyclic-GC support of the native classes: their tp_traverse and tp_clear slots.
//
// A native object owns Python references (its monoid, the adapter's bound methods, and on
// the generic path every stored partial and object key), so a cycle through it (a monoid
// class defined in __main__, whose methods' __globals__ hold the window) is collected only if
// the type takes part in the cyclic GC. Obj provides
//   void traverse(GcVisit&) const;  // visit each reference it owns once; while an operation
//                                   // runs (a monoid method called back into Python, which may
//                                   // collect), only the references that cannot change
//   void clear();                   // drop every reference; later calls raise `cleared`
// Visiting a subset is safe (the GC then keeps the object), visiting a reference twice is
// not (it could free a live object). Traversal is O(n), as a Python list's.
#pragma once

#include <nanobind/nanobind.h>

#include <string>
#include <type_traits>

namespace windowagg::py {

namespace nb = nanobind;

// visit(x) for each Python reference x owns: an nb::object, or anything with
// gc_traverse(GcVisit&) (an adapter, ArgMax's partial); numbers own none. The first
// non-zero result of the visitproc is kept in rc and stops the later visits.
struct GcVisit {
    visitproc visit;
    void* arg;
    int rc = 0;

    void obj(PyObject* o) {
        if (o && !rc) rc = visit(o, arg);
    }
    template <class T>
    void operator()(const T& x) {
        if constexpr (std::is_base_of_v<nb::handle, T>) obj(x.ptr());
        else if constexpr (requires { x.gc_traverse(*this); }) x.gc_traverse(*this);
    }
};

[[noreturn]] inline void raise(const char* cls, const std::string& msg);  // adapters.hpp

// The error of any call on an object that tp_clear emptied: windowagg.errors.StateError.
[[noreturn]] inline void cleared(const std::string& who, const char* what = "aggregator") {
    raise("StateError", who + ": this " + what +
                            " was cleared by the garbage collector (it was part of an unreachable reference cycle); "
                            "build a new one");
}

template <class Obj>
int gc_traverse(PyObject* self, visitproc visit, void* arg) {
#if PY_VERSION_HEX >= 0x03090000
    Py_VISIT(Py_TYPE(self));  // a heap type's instances own a reference to it
#endif
    if (!nb::inst_ready(self)) return 0;
    GcVisit v{visit, arg};
    nb::inst_ptr<Obj>(self)->traverse(v);
    return v.rc;
}

template <class Obj>
int gc_clear(PyObject* self) {
    if (nb::inst_ready(self)) nb::inst_ptr<Obj>(self)->clear();
    return 0;
}

// nb::class_<Obj>(m, name, nb::type_slots(gc_slots<Obj>))
template <class Obj>
inline PyType_Slot gc_slots[] = {
    {Py_tp_traverse, (void*)gc_traverse<Obj>},
    {Py_tp_clear, (void*)gc_clear<Obj>},
    {0, nullptr},
};

}  // namespace windowagg::py
