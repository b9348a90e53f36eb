// _core.FiBA: the native twin of windowagg.ooo.FiBA (same verbs, errors and state), over
// include/windowagg/fiba.hpp. See fiba_impl.hpp for the specialise-then-deoptimise scheme.
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>

#include <string>

#include "adapters.hpp"
#include "fast_methods.hpp"
#include "fiba_impl.hpp"
#include "inputs.hpp"

namespace nb = nanobind;
using namespace windowagg::py;

namespace {

struct FiBAObj {
    FibaHandle h;
    nb::object monoid;
    int mu;

    // cyclic GC (gc.hpp)
    void traverse(GcVisit& v) const {
        v(monoid);
        h.traverse(v);
    }
    void clear() {
        if (h.busy) return;
        h.clear();
        nb::object m = std::move(monoid);
    }
    const nb::object& live_monoid() const {
        h.get();
        return monoid;
    }
};

const char* kWho = "ooo.FiBA";

int check_mu(nb::handle m) {
    PyObject* o = m.ptr();
    if (!PyLong_Check(o) || PyBool_Check(o))
        raise_builtin(PyExc_ValueError, std::string("ooo.FiBA: min_arity must be an int >= 2, got ") + repr_str(m));
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
    if (overflow || v < 2)
        raise_builtin(PyExc_ValueError, std::string("ooo.FiBA: min_arity must be an int >= 2, got ") + repr_str(m));
    if (v > 1 << 14)
        raise_builtin(PyExc_ValueError, std::string("ooo.FiBA: min_arity ") + repr_str(m) +
                                            " is too large for the native backend (at most 16384); use backend='python'");
    return static_cast<int>(v);
}

void same_length(const Values& a, const Values& b, const char* what) {
    if (a.n != b.n)
        raise_builtin(PyExc_ValueError, std::string(kWho) + "." + what + ": " + std::to_string(a.n) + " and " +
                                            std::to_string(b.n) + " items; give sequences of equal length");
}

// A buffer that is not C-contiguous (a numpy slice with a step) as its .tolist(): Python
// numbers, as the reference reads it (numpy scalars would not compare as timestamps).
nb::object plain(nb::handle h) {
    PyObject* o = h.ptr();
    if (!PyObject_CheckBuffer(o) || PyBytes_Check(o) || PyByteArray_Check(o)) return nb::borrow(h);
    Py_buffer view;
    if (PyObject_GetBuffer(o, &view, PyBUF_FORMAT | PyBUF_C_CONTIGUOUS) == 0) {
        PyBuffer_Release(&view);
        return nb::borrow(h);
    }
    PyErr_Clear();
    if (!PyObject_HasAttrString(o, "tolist")) return nb::borrow(h);
    return h.attr("tolist")();
}


// insert / evict / query / range_query as plain method descriptors (fast_methods.hpp):
// the hot path of single calls, without nanobind's general dispatch. Positional or keyword
// arguments, as the nanobind definitions they replace (and the reference's signatures).
bool fiba_args(const char* fn, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames, const char* const* names,
               Py_ssize_t want, PyObject** out) {
    if (!kwnames && nargs == want) {
        for (Py_ssize_t i = 0; i < want; ++i) out[i] = args[i];
        return true;
    }
    if (nargs > want) {
        PyErr_Format(PyExc_TypeError, "%s() takes %zd positional arguments but %zd were given", fn, want, nargs);
        return false;
    }
    for (Py_ssize_t i = 0; i < want; ++i) out[i] = i < nargs ? args[i] : nullptr;
    Py_ssize_t nk = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    for (Py_ssize_t j = 0; j < nk; ++j) {
        PyObject* key = PyTuple_GET_ITEM(kwnames, j);
        Py_ssize_t i = 0;
        for (; i < want; ++i)
            if (PyUnicode_CompareWithASCIIString(key, names[i]) == 0) break;
        if (i == want) {
            PyErr_Format(PyExc_TypeError, "%s() got an unexpected keyword argument '%U'", fn, key);
            return false;
        }
        if (out[i]) {
            PyErr_Format(PyExc_TypeError, "%s() got multiple values for argument '%s'", fn, names[i]);
            return false;
        }
        out[i] = args[nargs + j];
    }
    for (Py_ssize_t i = 0; i < want; ++i)
        if (!out[i]) {
            PyErr_Format(PyExc_TypeError, "%s() missing required argument '%s'", fn, names[i]);
            return false;
        }
    return true;
}

struct FastFiba {
    static PyObject* insert(PyObject* self, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
        static const char* const names[] = {"t", "v"};
        PyObject* a[2];
        if (!fiba_args("insert", args, nargs, kwnames, names, 2, a)) return nullptr;
        return guarded_call([&]() -> PyObject* {
            FiBAObj* o = self_ptr<FiBAObj>(self);
            if (!o) return nullptr;
            o->h.run([&](FibaImpl& i) { i.insert(a[0], a[1]); });
            Py_RETURN_NONE;
        });
    }
    static PyObject* evict(PyObject* self, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
        static const char* const names[] = {"t"};
        PyObject* a[1];
        if (!fiba_args("evict", args, nargs, kwnames, names, 1, a)) return nullptr;
        return guarded_call([&]() -> PyObject* {
            FiBAObj* o = self_ptr<FiBAObj>(self);
            if (!o) return nullptr;
            o->h.run([&](FibaImpl& i) { i.evict(a[0]); });
            Py_RETURN_NONE;
        });
    }
    static PyObject* query(PyObject* self, PyObject*) {
        return guarded_call([&]() -> PyObject* {
            FiBAObj* o = self_ptr<FiBAObj>(self);
            if (!o) return nullptr;
            return o->h.run([&](FibaImpl& i) { return i.query(); }).release().ptr();
        });
    }
    static PyObject* range_query(PyObject* self, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
        static const char* const names[] = {"t_from", "t_to"};
        PyObject* a[2];
        if (!fiba_args("range_query", args, nargs, kwnames, names, 2, a)) return nullptr;
        return guarded_call([&]() -> PyObject* {
            FiBAObj* o = self_ptr<FiBAObj>(self);
            if (!o) return nullptr;
            return o->h.run([&](FibaImpl& i) { return i.range_query(a[0], a[1]); }).release().ptr();
        });
    }
};

PyMethodDef fast_defs[4] = {
    {"insert", (PyCFunction)(void (*)())FastFiba::insert, METH_FASTCALL | METH_KEYWORDS,
     "insert(t, v): add lift(v) at timestamp t (combined into the partial already there, if any)."},
    {"evict", (PyCFunction)(void (*)())FastFiba::evict, METH_FASTCALL | METH_KEYWORDS,
     "evict(t): remove the entry at timestamp t (nothing when there is none)."},
    {"query", (PyCFunction)FastFiba::query, METH_NOARGS, "query(): lower() of the aggregate of every entry, in time order."},
    {"range_query", (PyCFunction)(void (*)())FastFiba::range_query, METH_FASTCALL | METH_KEYWORDS,
     "range_query(t_from, t_to): lower() of the aggregate of the entries with t_from <= t <= t_to."},
};

}  // namespace

void bind_fiba(nb::module_& m) {
    auto cls = nb::class_<FiBAObj>(m, "FiBA", nb::type_slots(gc_slots<FiBAObj>));
    cls
        .def("__init__", [](FiBAObj* self, nb::handle monoid, nb::handle min_arity) {
            int mu = check_mu(min_arity);
            new (self) FiBAObj{FibaHandle{make_fiba_impl(monoid, mu, false, false)}, nb::borrow(monoid), mu};
        }, nb::arg("monoid").none(), nb::arg("min_arity").none())
        .def("bulk_evict", [](FiBAObj& o, nb::handle t) { o.h.run([&](FibaImpl& i) { i.bulk_evict(t); }); },
             nb::arg("t").none())
        .def("bulk_insert", [](FiBAObj& o, nb::handle a, nb::handle b) {
            nb::object times = nb::borrow(a), values = nb::borrow(b);
            if (b.is_none()) {  // bulk_insert(pairs)
                nb::object seq = nb::steal(PySequence_Fast(a.ptr(), "ooo.FiBA.bulk_insert needs an iterable of (t, v) pairs"));
                if (!seq.is_valid()) throw_if_error();
                Py_ssize_t n = PySequence_Fast_GET_SIZE(seq.ptr());
                nb::object ts = nb::steal(PyTuple_New(n)), vs = nb::steal(PyTuple_New(n));
                for (Py_ssize_t i = 0; i < n; ++i) {
                    PyObject* item = PySequence_Fast_GET_ITEM(seq.ptr(), i);
                    nb::object pair = nb::steal(PySequence_Tuple(item));
                    if (!pair.is_valid()) {
                        PyErr_Clear();
                        raise_builtin(PyExc_TypeError, std::string("cannot unpack non-iterable ") +
                                                           Py_TYPE(item)->tp_name + " object");
                    }
                    if (PyTuple_GET_SIZE(pair.ptr()) != 2)
                        raise_builtin(PyExc_ValueError, "ooo.FiBA.bulk_insert: each item must be a (t, v) pair, got " +
                                                            std::to_string(PyTuple_GET_SIZE(pair.ptr())) + " values");
                    PyObject* t = PyTuple_GET_ITEM(pair.ptr(), 0);
                    PyObject* v = PyTuple_GET_ITEM(pair.ptr(), 1);
                    Py_INCREF(t);
                    Py_INCREF(v);
                    PyTuple_SET_ITEM(ts.ptr(), i, t);
                    PyTuple_SET_ITEM(vs.ptr(), i, v);
                }
                times = ts;
                values = vs;
            }
            Values ts(plain(times), "ooo.FiBA.bulk_insert");
            Values vs(plain(values), "ooo.FiBA.bulk_insert");
            same_length(ts, vs, "bulk_insert(times, values)");
            o.h.run([&](FibaImpl& i) { i.bulk_insert(ts, vs); });
        }, nb::arg("pairs").none(), nb::arg("values").none() = nb::none(),
           "Insert every (t, v) pair, or times[i] -> values[i]; same as one insert each, in order.")
        .def("to_bytes", [](FiBAObj& o) {
            nb::list entries = o.h.run([&](FibaImpl& i) { return i.partials(); });
            return nb::module_::import_("windowagg.ooo._fiba_arrays").attr("dump_state")(o.mu, entries);
        }, "The window's (t, partial) entries as windowagg.codec bytes (read by either backend).")
        .def("range_query_many", [](FiBAObj& o, nb::handle lo, nb::handle hi, nb::handle out) {
            Values a(plain(lo), "ooo.FiBA.range_query_many");
            Values b(plain(hi), "ooo.FiBA.range_query_many");
            same_length(a, b, "range_query_many(t_from, t_to)");
            Out res(out, a.n, "ooo.FiBA.range_query_many");
            o.h.run([&](FibaImpl& i) {
                if (res.kind == Out::LIST) res.list = nb::list();
                i.range_query_many(a, b, res);
            });
            return out.is_none() ? nb::object(res.list) : nb::borrow(out);
        }, nb::arg("t_from").none(), nb::arg("t_to").none(), nb::arg("out").none() = nb::none())
        .def("slide", [](FiBAObj& o, nb::handle times, nb::handle values, nb::handle evict_upto, nb::handle out) {
            Values ts(plain(times), "ooo.FiBA.slide");
            Values vs(plain(values), "ooo.FiBA.slide");
            same_length(ts, vs, "slide(times, values)");
            std::unique_ptr<Values> up;
            if (!evict_upto.is_none()) {
                up = std::make_unique<Values>(plain(evict_upto), "ooo.FiBA.slide");
                same_length(ts, *up, "slide(times, evict_upto)");
            }
            Out res(out, ts.n, "ooo.FiBA.slide");
            SlideProgress pr;
            o.h.run([&](FibaImpl& i) { i.slide(ts, vs, up.get(), res, pr); });
            return out.is_none() ? nb::object(res.list) : nb::borrow(out);
        }, nb::arg("times").none(), nb::arg("values").none(), nb::arg("evict_upto").none() = nb::none(),
           nb::arg("out").none() = nb::none())
        .def("oldest", [](FiBAObj& o) { return o.h.get().oldest(); })
        .def("youngest", [](FiBAObj& o) { return o.h.get().youngest(); })
        .def("__len__", [](FiBAObj& o) { return o.h.get().size(); })
        .def("__bool__", [](FiBAObj& o) { return o.h.get().size() != 0; })
        .def("to_partials", [](FiBAObj& o) { return o.h.run([&](FibaImpl& i) { return i.partials(); }); })
        .def("__iter__", [](FiBAObj& o) {
            nb::list l = o.h.run([&](FibaImpl& i) { return i.partials(); });
            return nb::iter(l);
        })
        .def("_check", [](FiBAObj& o) { o.h.run([&](FibaImpl& i) { i.check(); }); })
        .def("_load", [](FiBAObj& o, nb::tuple ts, nb::tuple ps) {
            // strictly increasing (t, partial) entries, validated by the glue
            if (ts.size() != ps.size()) raise_builtin(PyExc_ValueError, "ooo.FiBA._load: lengths differ");
            o.h.run([&](FibaImpl& i) {
                if (i.load(ts, ps)) return;
                bool obj_keys = false;
                for (nb::handle t : ts) {
                    int64_t k;
                    if (!exact_i64(t.ptr(), k)) { obj_keys = true; break; }
                }
                if (obj_keys) throw DeoptKeys{};
                throw Deopt{};
            });
        })
        .def_prop_ro("monoid", [](FiBAObj& o) { return o.live_monoid(); })
        .def_prop_ro("min_arity", [](FiBAObj& o) { return o.mu; })
        .def_prop_ro("backend", [](FiBAObj&) { return "native"; })
        .def_prop_ro("_path", [](FiBAObj& o) {
            std::string s = o.h.get().int_keys() ? "int64 keys" : "object keys";
            return s + (o.h.get().generic() ? ", generic" : ", native monoid");
        })
        .def_prop_ro("_node_bytes", [](FiBAObj& o) { return o.h.get().node_bytes(); })
        .def("__repr__", [](FiBAObj& o) {
            if (!o.h.impl) return std::string("<ooo.FiBA cleared by the garbage collector, backend='native'>");
            return "ooo.FiBA(" + repr_str(o.monoid) + ", min_arity=" + std::to_string(o.mu) +
                   ", n=" + std::to_string(o.h.get().size()) + ", backend='native')";
        });
    for (PyMethodDef& d : fast_defs) install_method(cls, &d);
}
