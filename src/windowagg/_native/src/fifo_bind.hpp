// bind_fifo_class<Alg>(module, name): one Python class over FifoHandle for the algorithm
// template Alg (TwoStacksLite, DABALite, DABA, AMTA share every verb).
#pragma once

#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>

#include <string>

#include "adapters.hpp"
#include "fast_methods.hpp"
#include "fifo_impl.hpp"
#include "inputs.hpp"
#include "slices.hpp"
#include "windowagg/daba_lite.hpp"
#include "windowagg/two_stacks_lite.hpp"

namespace windowagg::py {

template <template <class> class Alg>
struct FifoObj {
    FifoHandle h;

    std::string who() const { return h.who; }

    // cyclic GC (gc.hpp)
    void traverse(GcVisit& v) const { h.traverse(v); }
    void clear() { h.clear(); }
};

[[noreturn]] inline void empty_window(const std::string& who, const char* op);

// insert / evict / query as plain method descriptors (fast_methods.hpp): the hot path of
// single calls. Same behaviour as the nanobind definitions they replace.
template <template <class> class Alg>
struct FastFifo {
    using Obj = FifoObj<Alg>;
    static PyObject* insert(PyObject* self, PyObject* v) {
        return guarded_call([&]() -> PyObject* {
            Obj* o = self_ptr<Obj>(self);
            if (!o) return nullptr;
            Enter e = o->h.enter(Access::Write, "insert()");
            o->h.run([&](FifoImpl& i) { i.insert(v); });
            Py_RETURN_NONE;
        });
    }
    static PyObject* evict(PyObject* self, PyObject*) {
        return guarded_call([&]() -> PyObject* {
            Obj* o = self_ptr<Obj>(self);
            if (!o) return nullptr;
            Enter e = o->h.enter(Access::Write, "evict()");
            if (!o->h.get().size()) empty_window(o->who(), "evict()");
            o->h.run([&](FifoImpl& i) { i.evict(); });
            Py_RETURN_NONE;
        });
    }
    static PyObject* query(PyObject* self, PyObject*) {
        return guarded_call([&]() -> PyObject* {
            Obj* o = self_ptr<Obj>(self);
            if (!o) return nullptr;
            Enter e = o->h.enter(Access::Read, "query()");
            return o->h.run([&](FifoImpl& i) { return i.query(); }).release().ptr();
        });
    }
    static inline PyMethodDef defs[3] = {
        {"insert", (PyCFunction)insert, METH_O, "insert(v): append lift(v) as the youngest entry."},
        {"evict", (PyCFunction)evict, METH_NOARGS, "evict(): remove the oldest entry (EmptyWindowError when empty)."},
        {"query", (PyCFunction)query, METH_NOARGS, "query(): lower() of the window's aggregate, oldest to youngest."},
    };
};

// Build FifoImplT<Alg, adapter-for-monoid>(extra constructor arguments).
// The algorithms that start Sum, Max and Min on a float64 first stage (sum_f64.hpp,
// minmax_f64.hpp); the others start on the tagged adapters.
template <template <class> class Alg>
inline constexpr bool kF64FirstStage = false;
template <>
inline constexpr bool kF64FirstStage<windowagg::TwoStacksLite> = true;
template <>
inline constexpr bool kF64FirstStage<windowagg::DABALite> = true;

// The algorithm the windows engine slides (TwoStacksLite) keeps Count, Mean, First and
// Last on compile-time adapters; DABA, DABALite and AMTA run them on KindAdapter
// (visit_adapter).
template <template <class> class Alg>
inline constexpr bool kCompileTimeKinds = false;
template <>
inline constexpr bool kCompileTimeKinds<windowagg::TwoStacksLite> = true;

template <template <class> class Alg, class... X>
std::unique_ptr<FifoImpl> make_fifo_impl(nb::handle monoid, X... x) {
    if constexpr (kF64FirstStage<Alg>) {
        PyObject* t = declared_type(monoid);  // the declared kind, not the exact type
        const Builtins& b = builtins();
        if (t == b.Sum) return std::make_unique<FifoImplT<Alg, F64SumAdapter>>(monoid, F64SumAdapter(monoid), x...);
        if (t == b.Max) return std::make_unique<FifoImplT<Alg, F64MaxAdapter>>(monoid, F64MaxAdapter(monoid), x...);
        if (t == b.Min) return std::make_unique<FifoImplT<Alg, F64MinAdapter>>(monoid, F64MinAdapter(monoid), x...);
    }
    return visit_adapter<kCompileTimeKinds<Alg>>(monoid, [&](auto a) -> std::unique_ptr<FifoImpl> {
        using A = decltype(a);
        return std::make_unique<FifoImplT<Alg, A>>(monoid, std::move(a), x...);
    });
}

[[noreturn]] inline void empty_window(const std::string& who, const char* op) {
    raise("EmptyWindowError", who + "." + op + " on an empty window; check len(window) first");
}

// The DeprecationWarning of oldest() / youngest(), worded as windowagg.fifo._common's
// DeprecatedEnds: `end` is "oldest" or "youngest", `extreme` "smallest" or "largest".
inline void deprecated_end(const std::string& who, const char* end, const char* extreme) {
    std::string msg = who + "." + end + "() is renamed " + end + "_partial(): in windowagg, " + end +
                      "() is the " + extreme + " timestamp of an out-of-order window";
    if (PyErr_WarnEx(PyExc_DeprecationWarning, msg.c_str(), 1) < 0) throw nb::python_error();
}

// bulk_evict's count, validated as windowagg.fifo._common.check_count does.
inline std::size_t check_count(nb::handle count, std::size_t n, const std::string& who) {
    PyObject* o = count.ptr();
    if (PyBool_Check(o)) raise("ArgumentTypeError", who + ".bulk_evict(count) needs an integer count, got a bool");
    PyObject* i = PyNumber_Index(o);
    if (!i) {
        PyErr_Clear();
        raise("ArgumentTypeError", who + ".bulk_evict(count) needs an integer count, got " +
                                           std::string(Py_TYPE(o)->tp_name));
    }
    nb::object io = nb::steal(i);
    int overflow = 0;
    long long k = PyLong_AsLongLongAndOverflow(i, &overflow);
    if (overflow || k < 0 || static_cast<unsigned long long>(k) > n)
        raise("EmptyWindowError", who + ".bulk_evict(" + std::string(nb::str(io).c_str()) + ") on a window of " +
                                      std::to_string(n) + " entries; count must be between 0 and len(window)");
    return static_cast<std::size_t>(k);
}

// The bulk verbs are all or nothing, as windowagg.fifo._verbs (the reference): when one
// raises part-way, the window is rebuilt from the entries it found (`pre`, oldest first):
// a fresh implementation of the same algorithm loads them (the same inserts as the
// reference's rebuild, so the same combines), then replaces the window's. O(n), on the
// error path only. If the rebuild raises too, the window stays as the call left it and
// StateError (caused by `first`) says so.
[[noreturn]] inline void undo_failed(FifoHandle& h, const char* verb, std::size_t n0, nb::python_error& first) {
    std::string name = nb::cast<std::string>(nb::handle(first.type()).attr("__name__"));
    std::string msg = std::string(h.who) + "." + verb + ": a " + name +
                      " stopped the call part-way, and the monoid raised again while the call was undone (the "
                      "entries the window held, combined in another grouping: its combine is not total over "
                      "them); the call is not undone: the window holds " +
                      std::to_string(h.get().size()) + " entries (it held " + std::to_string(n0) +
                      ") and is consistent. Evict the entries its combine refuses, or rebuild the window from a "
                      "state you trust (from_bytes)";
    nb::raise_from(first, error_class("StateError"), "%s", msg.c_str());
}

inline void undo_call(FifoHandle& h, const char* verb, std::size_t n0, const nb::list& pre,
                      nb::python_error& first) {
    std::unique_ptr<FifoImpl> fresh = h.get().empty();
    nb::object t = nb::steal(PySequence_Tuple(pre.ptr()));
    if (!t.is_valid()) throw_if_error();
    std::size_t i = 0;
    try {
        for (;;) {
            try {
                if (fresh->load(t, i)) break;
                fresh = fresh->to_generic();
            } catch (const Deopt&) {
                fresh = fresh->to_generic();
            } catch (const DeoptAfter&) {
                fresh = fresh->to_generic();
            }
        }
    } catch (nb::python_error&) {
        undo_failed(h, verb, n0, first);
    }
    h.impl = std::move(fresh);
}

// slide's error path: the steps done are undone from what the call recorded (pr).
inline void undo_slide(FifoHandle& h, const Progress& pr, nb::python_error& first) {
    std::size_t done = pr.i + (pr.inserted ? 1 : 0);  // inserts done
    std::size_t size = h.get().size();
    std::size_t gone = pr.n0 + done - size;  // evictions done
    if (!gone && !done) return;
    std::size_t kept = pr.n0 > gone ? pr.n0 - gone : 0;
    nb::list pre;
    for (std::size_t j = 0; j < pr.n0 - kept; ++j) pre.append(pr.gone[j]);
    nb::list held = h.get().partials();
    for (std::size_t j = 0; j < kept; ++j) pre.append(held[j]);
    undo_call(h, "slide", pr.n0, pre, first);
}

// WithBulkAfter: the constructor takes AMTA's `bulk_after` (a float >= 0, or inf).
template <template <class> class Alg, bool WithBulkAfter = false>
void bind_fifo_class(nb::module_& m, const char* name) {
    using Obj = FifoObj<Alg>;
    nb::class_<Obj> c(m, name, nb::type_slots(gc_slots<Obj>));
    if constexpr (WithBulkAfter) {
        c.def("__init__", [name](Obj* self, nb::handle monoid, double bulk_after) {
            if (!(bulk_after >= 0))
                raise("ArgumentError", "bulk_after must be >= 0 (or math.inf), got " +
                                                    repr_str(nb::steal(PyFloat_FromDouble(bulk_after))));
            new (self) Obj{FifoHandle{make_fifo_impl<Alg>(monoid, bulk_after), nb::borrow(monoid), name}};
        }, nb::arg("monoid").none(), nb::arg("bulk_after") = 1.0);
        c.def("aggregate", [](Obj& o) {
            Enter e = o.h.enter(Access::Read, "aggregate()");
            return o.h.run([&](FifoImpl& i) { return i.aggregate(); });
        },
              "The partial aggregate of the window, R0 (x) R1. O(1), at most one combine.");
        c.def("_amta_state", [](Obj& o) {
            Enter e = o.h.enter(Access::Read, "_amta_state()");
            return o.h.get().amta_state();
        }, "(R0, R1, S) as the twin's partials.");
    } else {
        c.def("__init__", [name](Obj* self, nb::handle monoid) {
            new (self) Obj{FifoHandle{make_fifo_impl<Alg>(monoid), nb::borrow(monoid), name}};
        }, nb::arg("monoid").none());
    }
    c.def("insert", [](Obj& o, nb::handle v) {
        Enter e = o.h.enter(Access::Write, "insert()");
        o.h.run([&](FifoImpl& i) { i.insert(v); });
    }, nb::arg("v").none(),
             "Append lift(v) as the youngest entry.")
        .def("evict", [](Obj& o) {
            Enter e = o.h.enter(Access::Write, "evict()");
            if (!o.h.get().size()) empty_window(o.who(), "evict()");
            o.h.run([&](FifoImpl& i) { i.evict(); });
        }, "Remove the oldest entry (EmptyWindowError when empty).")
        .def("bulk_evict", [](Obj& o, nb::handle count) {
            Enter e = o.h.enter(Access::Write, "bulk_evict()");
            std::size_t n0 = o.h.get().size();
            std::size_t k = check_count(count, n0, o.who());
            std::size_t done = 0;  // resumable: a Deopt keeps the evictions done (see evict_loop)
            try {
                o.h.run([&](FifoImpl& i) { i.bulk_evict(k, done); }, true);
            } catch (UndoFailed& u) {
                undo_failed(o.h, "bulk_evict", n0, u.first);
            }
        }, nb::arg("count").none(), "Remove the count oldest entries.")
        .def("query", [](Obj& o) {
            Enter e = o.h.enter(Access::Read, "query()");
            return o.h.run([&](FifoImpl& i) { return i.query(); });
        },
             "lower() of the window's aggregate, oldest to youngest.")
        .def("oldest_partial", [](Obj& o) {
            Enter e = o.h.enter(Access::Read, "oldest_partial()");
            if (!o.h.get().size()) empty_window(o.who(), "oldest_partial()");
            return o.h.get().oldest();
        }, "The oldest entry's partial (EmptyWindowError when empty). O(1).")
        .def("youngest_partial", [](Obj& o) {
            Enter e = o.h.enter(Access::Read, "youngest_partial()");
            if (!o.h.get().size()) empty_window(o.who(), "youngest_partial()");
            return o.h.get().youngest();
        }, "The youngest entry's partial (EmptyWindowError when empty). O(1).")
        .def("oldest", [](Obj& o) {
            Enter e = o.h.enter(Access::Read, "oldest()");
            deprecated_end(o.who(), "oldest", "smallest");
            if (!o.h.get().size()) empty_window(o.who(), "oldest_partial()");
            return o.h.get().oldest();
        }, "Deprecated alias of oldest_partial() (removed in windowagg 0.3).")
        .def("youngest", [](Obj& o) {
            Enter e = o.h.enter(Access::Read, "youngest()");
            deprecated_end(o.who(), "youngest", "largest");
            if (!o.h.get().size()) empty_window(o.who(), "youngest_partial()");
            return o.h.get().youngest();
        }, "Deprecated alias of youngest_partial() (removed in windowagg 0.3).")
        .def("__len__", [](Obj& o) {
            wait_other_threads(o.h.guard);
            return o.h.get().size();
        })
        .def("__iter__", [](Obj& o) {
            Enter e = o.h.enter(Access::Read, "__iter__()");
            nb::list l = o.h.get().partials();
            return nb::steal(PyObject_GetIter(l.ptr()));
        })
        .def("_check", [](Obj& o) {
            Enter g = o.h.enter(Access::Read, "_check()");
            // a refold in another association can leave int64 (Deopt): verify a generic copy
            std::unique_ptr<FifoImpl> copy;
            std::string e;
            for (;;) {
                try {
                    e = (copy ? *copy : o.h.get()).check();
                    break;
                } catch (const Deopt&) {
                    copy = (copy ? *copy : o.h.get()).to_generic();
                }
            }
            if (!e.empty()) {
                nb::object cls = nb::module_::import_("windowagg.fifo._common").attr("InvariantError");
                PyErr_SetString(cls.ptr(), (o.who() + ": invariant broken: " + e).c_str());
                throw nb::python_error();
            }
        }, "Verify every invariant (O(n)); InvariantError names what broke.")
        .def_prop_ro("monoid", [](Obj& o) {
            wait_other_threads(o.h.guard);
            o.h.get();
            return o.h.monoid;
        })
        .def_prop_ro("_generic", [](Obj& o) {
            wait_other_threads(o.h.guard);
            return o.h.get().generic();
        },
                     "True once the structure runs on the generic (Python-monoid) path.")
        .def("__repr__", [](Obj& o) {
            Enter e = o.h.enter(Access::Read, "__repr__()");
            if (!o.h.impl) return "<fifo." + o.who() + " cleared by the garbage collector>";
            return "fifo." + o.who() + "(" + repr_str(o.h.monoid) + ", n=" + std::to_string(o.h.get().size()) + ")";
        })
        .def("bulk_insert", [](Obj& o, nb::handle values) {
            Enter e = o.h.enter(Access::Write, "bulk_insert()");
            Values v(values, o.who() + ".bulk_insert");
            std::size_t i = 0, n0 = o.h.get().size();
            try {
                o.h.run([&](FifoImpl& impl) { impl.bulk_insert(v, i); }, true);
            } catch (nb::python_error& err) {
                if (o.h.get().size() != n0) {  // all or nothing: the entries found are a prefix
                    nb::list held = o.h.get().partials(), pre;
                    for (std::size_t j = 0; j < n0; ++j) pre.append(held[j]);
                    undo_call(o.h, "bulk_insert", n0, pre, err);
                }
                throw;
            }
        }, nb::arg("values").none(), "insert() every value, in order (all or nothing).")
        .def("slide", [](Obj& o, nb::handle values, nb::handle evict, nb::handle out) -> nb::object {
            Enter e = o.h.enter(Access::Write, "slide()");
            Values v(values, o.who() + ".slide");
            Counts c(evict, v.n, o.who() + ".slide");
            c.validate(o.h.get().size(), v.n, o.who());
            Out res(out, v.n, o.who() + ".slide");  // checked after the counts, as the reference
            Progress pr;
            pr.n0 = o.h.get().size();
            try {
                o.h.run([&](FifoImpl& impl) { impl.slide(v, c, res, pr); }, true);
            } catch (UndoFailed& u) {  // a bulk eviction could not undo itself: undo the call
                undo_slide(o.h, pr, u.first);
                throw u.first;
            } catch (nb::python_error& err) {
                undo_slide(o.h, pr, err);
                throw;
            }
            if (res.kind == Out::LIST) return res.list;
            return nb::borrow(out);
        }, nb::arg("values").none(), nb::arg("evict").none() = 1, nb::arg("out").none() = nb::none(),
           "For each value: evict `evict` entries, insert it, record query().")
        .def("query_slices", [](Obj& o, nb::handle values, nb::handle lo, nb::handle hi, nb::handle out) -> nb::object {
            Enter e = o.h.enter(Access::Read, "query_slices()");
            std::string who = o.who() + ".query_slices";
            Values v(values, who);
            Slices s(lo, hi, v.n, who);
            Out res(out, s.r, who);
            o.h.run([&](FifoImpl& impl) { impl.query_slices(v, s, res); }, true);
            if (res.kind == Out::LIST) return res.list;
            return nb::borrow(out);
        }, nb::arg("values").none(), nb::arg("lo").none(), nb::arg("hi").none(), nb::arg("out").none() = nb::none(),
           "query() of a fresh window of this class holding values[lo[i]:hi[i]], for every window i "
           "(bounds non-decreasing); this window is neither read nor changed.")
        .def("_partials", [](Obj& o) {
            Enter e = o.h.enter(Access::Read, "_partials()");
            return o.h.get().partials();
        })
        .def("to_bytes", [](Obj& o) {
            Enter e = o.h.enter(Access::Read, "to_bytes()");
            return nb::module_::import_("windowagg.fifo._verbs").attr("dump_state")(o.who(), o.h.get().partials());
        }, "The window's partials, oldest first, as windowagg.codec bytes (read by either backend).")
        .def("_load_partials", [](Obj& o, nb::handle partials) {
            Enter e = o.h.enter(Access::Write, "_load_partials()");
            nb::object t = nb::steal(PySequence_Tuple(partials.ptr()));
            if (!t.is_valid()) throw_if_error();
            std::size_t i = 0;
            bool done = false;
            while (!done) {
                o.h.run([&](FifoImpl& impl) { done = impl.load(t, i); }, true);
                if (!done) o.h.deopt();
            }
        }, nb::arg("partials").none(), "Append the twin's partials (no lift).");
    for (PyMethodDef& d : FastFifo<Alg>::defs) install_method(c, &d);
}

}  // namespace windowagg::py
