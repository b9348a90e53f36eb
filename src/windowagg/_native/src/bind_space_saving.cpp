// _core.ExpDecaySpaceSaving: the compiled twin that
// windowagg.sketches.space_saving.ExpDecaySpaceSaving holds (include/windowagg/space_saving.hpp).
// Keys held here: int in int64 (exact type int), str, bytes. A key of any other type is not
// an error at this level: update/update_many return False and change nothing, and the public
// class decides (its Python implementation under backend="auto", a clear error under
// "native"); queries return None for such a key, and the public class answers them from
// items(). Times and weights arrive checked by the public class; every entry point checks
// them again (a caller may reach _core directly) before anything changes. No call runs
// Python code or releases the GIL, so each call is atomic.
#include <nanobind/nanobind.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "py_errors.hpp"
#include "windowagg/space_saving.hpp"

namespace nb = nanobind;
using namespace windowagg::py;
using SS = windowagg::SpaceSavingCore;
using windowagg::SSKey;

namespace {

constexpr const char* WHO = "ExpDecaySpaceSaving";

void check_params(uint64_t k, double lam, const char* cls) {
    if (k < 1 || k > (1ull << 32)) raise(cls, std::string(WHO) + ": k must be an int in [1, 2**32], got " + std::to_string(k));
    if (!(lam > 0.0 && lam < INFINITY)) raise(cls, std::string(WHO) + ": lam must be a positive finite number, got " + std::to_string(lam));
}

void check_time(double t) {
    if (!std::isfinite(t)) raise("TimestampError", "timestamp must be a finite number, got " + std::to_string(t));
}

void check_weight(double w) {
    if (!(w > 0.0 && w < INFINITY)) raise("ArgumentError", "weight must be a positive finite number, got " + std::to_string(w));
}

// The key held natively, or false (nothing raised) for a type this side does not hold.
bool to_key(PyObject* o, SSKey& k) {
    if (PyLong_CheckExact(o)) {
        int overflow = 0;
        long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
        if (overflow || (v == -1 && PyErr_Occurred())) {
            PyErr_Clear();
            return false;
        }
        k.tag = 0;
        k.i = v;
        k.s.clear();
        return true;
    }
    if (PyUnicode_CheckExact(o)) {
        Py_ssize_t n = 0;
        const char* p = PyUnicode_AsUTF8AndSize(o, &n);
        if (!p) {  // lone surrogates: not UTF-8, and not writable by the codec either
            PyErr_Clear();
            return false;
        }
        k.tag = 1;
        k.i = 0;
        k.s.assign(p, static_cast<std::size_t>(n));
        return true;
    }
    if (PyBytes_CheckExact(o)) {
        k.tag = 2;
        k.i = 0;
        k.s.assign(PyBytes_AS_STRING(o), static_cast<std::size_t>(PyBytes_GET_SIZE(o)));
        return true;
    }
    return false;
}

nb::object from_key(const SSKey& k) {
    if (k.tag == 0) return nb::steal(PyLong_FromLongLong(k.i));
    if (k.tag == 1) {
        PyObject* s = PyUnicode_DecodeUTF8(k.s.data(), static_cast<Py_ssize_t>(k.s.size()), "strict");
        if (!s) throw nb::python_error();
        return nb::steal(s);
    }
    return nb::bytes(k.s.data(), k.s.size());
}

// A 1-D C-contiguous buffer of 8-byte items of one of `kinds` ('q' int64, 'd' float64), or
// not a buffer at all (ok == false, nothing raised) when `soft`.
struct Buf {
    Py_buffer view{};
    bool ok = false;
    std::size_t n = 0;
    Buf(nb::handle o, const char* what, char kind, bool soft) {
        if (!PyObject_CheckBuffer(o.ptr()) || PyObject_GetBuffer(o.ptr(), &view, PyBUF_FORMAT | PyBUF_C_CONTIGUOUS) != 0) {
            PyErr_Clear();
            if (soft) return;
            raise("ArgumentTypeError", std::string(WHO) + ".update_many needs " + what +
                                           " as a 1-D C-contiguous buffer, got " + Py_TYPE(o.ptr())->tp_name);
        }
        const char* f = view.format ? view.format : "B";
        if (*f == '@' || *f == '=' || *f == '<') ++f;
        char k = (f[0] && !f[1]) ? f[0] : 0;
        if (k == 'l') k = 'q';
        if (view.ndim != 1 || view.itemsize != 8 || k != kind) {
            PyBuffer_Release(&view);
            if (soft) return;
            raise("ArgumentTypeError", std::string(WHO) + ".update_many needs " + what + " as a 1-D " +
                                           (kind == 'd' ? "float64" : "int64") + " buffer");
        }
        ok = true;
        n = static_cast<std::size_t>(view.shape[0]);
    }
    ~Buf() {
        if (ok) PyBuffer_Release(&view);
    }
    Buf(const Buf&) = delete;
    Buf& operator=(const Buf&) = delete;
    const void* ptr() const { return view.buf; }
};

std::optional<double> opt_time(nb::handle t) {
    if (t.is_none()) return std::nullopt;
    double v = nb::cast<double>(t);
    return v;
}

std::string py_repr(double x) { return repr_str(nb::float_(x)); }

// The factor from landmark units to decayed weights at t (None: the largest timestamp);
// WeightOverflowError, with the reference's text (exp_qdigest._weight_overflow), when the decayed
// total at t is past float64: a time far before the events.
double scale_at(const SS& s, nb::handle t) {
    std::optional<double> tt;
    if (s.has_landmark()) {
        tt = opt_time(t);
        if (tt) check_time(*tt);
    }
    double sc = s.scale(tt.has_value(), tt.value_or(0.0));
    if (std::isinf(sc) || std::isinf(s.n() * sc)) {
        double at = tt.value_or(s.tmax()), lm = s.landmark();
        raise("WeightOverflowError", std::string(WHO) + ": at query time t=" + py_repr(at) +
                                         " the decayed weights overflow float64 (t is " + py_repr(lm - at) +
                                         " before the landmark " + py_repr(lm) + " and each weight grows as exp(" +
                                         py_repr(s.lam()) + " * (landmark - t))); ask at a time nearer the events, "
                                         "e.g. t=" + py_repr(s.tmax()) + " (the largest timestamp seen, the default)");
    }
    return sc;
}

// update_many: keys (an int64 buffer, or a list/tuple of keys), times and weights float64
// buffers of the same length, all checked before the summary changes; False (unchanged) if
// a key is of a type this side does not hold.
bool update_many(SS& s, nb::handle keys, nb::handle times, nb::handle weights) {
    Buf tb(times, "times", 'd', false);
    const double* tp = static_cast<const double*>(tb.ptr());
    std::size_t n = tb.n;
    std::optional<Buf> wb;
    const double* wp = nullptr;
    if (!weights.is_none()) {
        wb.emplace(weights, "weights", 'd', false);
        if (wb->n != n)
            raise("ArgumentError", std::string(WHO) + ".update_many: times has " + std::to_string(n) + " entries but weights has " + std::to_string(wb->n));
        wp = static_cast<const double*>(wb->ptr());
    }
    Buf kb(keys, "keys", 'q', true);
    std::vector<SSKey> objs;
    const int64_t* kp = nullptr;
    if (kb.ok) {
        if (kb.n != n)
            raise("ArgumentError", std::string(WHO) + ".update_many: keys has " + std::to_string(kb.n) + " entries but times has " + std::to_string(n));
        kp = static_cast<const int64_t*>(kb.ptr());
    } else {
        if (!PyList_CheckExact(keys.ptr()) && !PyTuple_CheckExact(keys.ptr()))
            raise("ArgumentTypeError", std::string(WHO) + ".update_many needs keys as an int64 buffer or a list, got " + Py_TYPE(keys.ptr())->tp_name);
        std::size_t m = static_cast<std::size_t>(PySequence_Fast_GET_SIZE(keys.ptr()));
        if (m != n)
            raise("ArgumentError", std::string(WHO) + ".update_many: keys has " + std::to_string(m) + " entries but times has " + std::to_string(n));
        PyObject** items = PySequence_Fast_ITEMS(keys.ptr());
        objs.resize(n);
        for (std::size_t i = 0; i < n; ++i)
            if (!to_key(items[i], objs[i])) return false;
    }
    for (std::size_t i = 0; i < n; ++i) check_time(tp[i]);
    if (wp)
        for (std::size_t i = 0; i < n; ++i) check_weight(wp[i]);
    SSKey k;
    for (std::size_t i = 0; i < n; ++i) {
        double w = wp ? wp[i] : 1.0;
        if (kp) {
            k.i = kp[i];
            s.update(k, k.hash(), tp[i], w);
        } else {
            s.update(objs[i], objs[i].hash(), tp[i], w);
        }
    }
    return true;
}

SS* load(uint64_t k, double lam, int has, double lm, double tmax, double floor, double n, nb::handle items) {
    auto fail = [](const std::string& why) { raise("CodecError", std::string("corrupt ExpDecaySpaceSaving: ") + why); };
    if (k < 1 || k > (1ull << 32) || !(lam > 0.0 && lam < INFINITY) || (has != 0 && has != 1))
        fail("bad parameters k=" + std::to_string(k) + ", lam=" + std::to_string(lam));
    if (!PyList_CheckExact(items.ptr())) fail("items must be a list");
    std::size_t m = static_cast<std::size_t>(PyList_GET_SIZE(items.ptr()));
    if (m > k) fail("more monitored keys than k");
    std::vector<SS::Slot> slots(m);
    for (std::size_t i = 0; i < m; ++i) {
        PyObject* it = PyList_GET_ITEM(items.ptr(), static_cast<Py_ssize_t>(i));
        if (!PyTuple_CheckExact(it) || PyTuple_GET_SIZE(it) != 3) fail("an item is not (key, count, overestimate)");
        if (!to_key(PyTuple_GET_ITEM(it, 0), slots[i].key)) fail("a key the compiled core does not hold (int64, str, bytes)");
        PyObject* c = PyTuple_GET_ITEM(it, 1);
        PyObject* o = PyTuple_GET_ITEM(it, 2);
        if (!PyFloat_CheckExact(c) || !PyFloat_CheckExact(o)) fail("a count is not a float");
        slots[i].c = PyFloat_AS_DOUBLE(c);
        slots[i].over = PyFloat_AS_DOUBLE(o);
    }
    auto s = std::make_unique<SS>(k, lam);
    std::string why = s->load(has == 1, lm, tmax, floor, n, std::move(slots));
    if (!why.empty()) fail(why);
    return s.release();
}

}  // namespace

void bind_space_saving(nb::module_& m) {
    nb::class_<SS>(m, "ExpDecaySpaceSaving",
                   "Space-Saving under exponential decay (windowagg.sketches.space_saving.ExpDecaySpaceSaving holds it).")
        .def("__init__", [](SS* self, uint64_t k, double lam) {
            check_params(k, lam, "ArgumentError");
            new (self) SS(k, lam);
        }, nb::arg("k"), nb::arg("lam"))
        .def_prop_ro("k", &SS::k)
        .def_prop_ro("lam", &SS::lam)
        .def_prop_ro("size", &SS::size)
        .def_prop_ro("n", &SS::n)
        .def_prop_ro("floor", &SS::floor)
        .def_prop_ro("tmax", &SS::tmax)
        .def_prop_ro("seq", &SS::seq)
        .def_prop_ro("landmark", [](const SS& s) -> std::optional<double> {
            if (!s.has_landmark()) return std::nullopt;
            return s.landmark();
        })
        .def("__len__", &SS::size)
        .def("copy", [](const SS& s) { return new SS(s); })
        .def("update", [](SS& s, nb::handle x, double t, double w) {
            check_time(t);
            check_weight(w);
            SSKey k;
            if (!to_key(x.ptr(), k)) return false;
            s.update(k, k.hash(), t, w);
            return true;
        }, nb::arg("x"), nb::arg("t"), nb::arg("weight") = 1.0,
           "Count key x at time t with weight; False (and nothing changed) for a key type not held here. O(1), O(log k) to evict.")
        .def("update_many", &update_many, nb::arg("keys"), nb::arg("times"), nb::arg("weights").none() = nb::none(),
             "update() of each (key, time, weight) in order, all checked first; False (nothing changed) if a key's type "
             "is not held here. O(b log k).")
        .def("merge", [](SS& s, const SS& o) {
            if (o.k() != s.k() || o.lam() != s.lam())
                raise("ArgumentError", "cannot merge k=" + std::to_string(o.k()) + ", lam=" + std::to_string(o.lam()) +
                                           " into k=" + std::to_string(s.k()) + ", lam=" + std::to_string(s.lam()));
            if (&o == &s) {
                SS copy(o);
                s.merge(copy);
            } else {
                s.merge(o);
            }
        })
        .def("decayed_count", [](const SS& s, nb::handle t) { return s.n() * scale_at(s, t); },
             nb::arg("t").none() = nb::none())
        .def("estimate", [](const SS& s, nb::handle x, nb::handle t) -> std::optional<double> {
            SSKey k;
            if (!to_key(x.ptr(), k)) return std::nullopt;
            double sc = scale_at(s, t);
            const SS::Slot* sl = s.lookup(k);
            return (sl ? sl->c : s.floor()) * sc;
        }, nb::arg("x"), nb::arg("t").none() = nb::none())
        .def("frequency_bounds", [](const SS& s, nb::handle x, nb::handle t) -> std::optional<std::pair<double, double>> {
            SSKey k;
            if (!to_key(x.ptr(), k)) return std::nullopt;
            double sc = scale_at(s, t);
            const SS::Slot* sl = s.lookup(k);
            if (!sl) return std::pair<double, double>{0.0, s.floor() * sc};
            return std::pair<double, double>{(sl->c - sl->over) * sc, sl->c * sc};
        }, nb::arg("x"), nb::arg("t").none() = nb::none())
        .def("scale", [](const SS& s, nb::handle t) { return scale_at(s, t); }, nb::arg("t").none() = nb::none())
        .def("heavy_hitters", [](const SS& s, double phi, nb::handle t) {
            if (!(phi >= 0.0 && phi <= 1.0)) raise("ArgumentError", "phi must be a number in [0, 1], got " + std::to_string(phi));
            double sc = scale_at(s, t);
            nb::list out;
            for (auto [i, v] : s.heavy_hitters(phi, sc)) out.append(nb::make_tuple(from_key(s.slot(i).key), v));
            return out;
        }, nb::arg("phi"), nb::arg("t").none() = nb::none())
        .def("items", [](const SS& s) {
            nb::list out;
            s.for_each([&](uint32_t, const SS::Slot& sl) { out.append(nb::make_tuple(from_key(sl.key), sl.c, sl.over)); });
            return out;
        }, "(key, count, overestimate) of every monitored key, in the reference's dict order.")
        .def("heap", [](const SS& s) {
            std::vector<SS::Entry> es(s.heap());
            std::sort(es.begin(), es.end(), [](const SS::Entry& a, const SS::Entry& b) {
                return a.v == b.v ? a.seq < b.seq : a.v < b.v;
            });
            nb::list out;
            for (const SS::Entry& e : es) out.append(nb::make_tuple(e.v, e.seq, from_key(s.slot(e.slot).key)));
            return out;
        }, "The heap's entries (count, seq, key) sorted: the reference's heapq entries, as a valid heapq list.")
        .def_static("load", &load, nb::arg("k"), nb::arg("lam"), nb::arg("has"), nb::arg("lm"), nb::arg("tmax"),
                    nb::arg("floor"), nb::arg("n"), nb::arg("items"),
                    "A summary from its codec fields and items [(key, count, overestimate)]; CodecError for anything invalid.")
        .def("_check", [](const SS& s) {
            std::string broken = s.check();
            if (!broken.empty()) raise("InvariantError", std::string(WHO) + ": " + broken);
        });
}
