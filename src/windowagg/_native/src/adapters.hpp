// Adapters: from a Python monoid (windowagg.monoids) to a native one, and back.
//
// An adapter is a Monoid (include/windowagg/monoid.hpp) that the algorithms store, plus the
// Python glue the bindings need:
//
//   using partial_type = ...;
//   partial_type identity() const;
//   partial_type combine(const partial_type&, const partial_type&) const;  // may throw Deopt
//   bool lift(nb::handle x, partial_type& out) const;   // false: "not for me" (deoptimise);
//                                                       // raises where the twin would
//   bool lift_f64(double, partial_type&) const;         // numeric buffers, no Python objects
//   bool lift_i64(int64_t, partial_type&) const;
//   nb::object lower(const partial_type&) const;        // == twin.lower(to_py(p))
//   bool lower_num(const partial_type&, Num&) const;    // the lowered answer as a plain
//                                                       // number (false: use lower())
//   nb::object to_py(const partial_type&) const;        // the twin's partial, exactly
//   bool from_py(nb::handle p, partial_type&) const;    // inverse of to_py; false: deoptimise
//   static constexpr bool generic;                      // true only for GenericAdapter
//   static constexpr bool gil_free;                     // optional, true: the adapter and its
//                                                       // partials hold no Python object, and
//                                                       // lift_f64 of a finite double, combine
//                                                       // and lower_num run no Python code, so
//                                                       // a slide over float64 buffers may run
//                                                       // without the GIL (fifo_impl.hpp)
//   bool commutative;                                   // the monoid declares it (Python attr)
//
// Specialise, then deoptimise: numeric adapters hold int64 / float64 (a tagged Num where the
// Python twin mixes ints and floats). Whatever they cannot represent exactly as the twin
// would (a bool, an int beyond int64, a str into Max, int64 overflow in a combine) makes
// lift/from_py return false or combine throw Deopt; the binding layer then rebuilds the
// structure over GenericAdapter (the twin's own Python methods) and redoes the operation,
// so results never differ from the pure-Python reference.
//
// visit_adapter(py_monoid, f) calls f(adapter) with the adapter for the kind the Python
// monoid declares (declared_type: Sum, Count, Max, Min, First, Last, Mean, Variance, StdDev, ArgMax, ArgMin,
// Composite of the numeric ones), else f(GenericAdapter).
//
// Non-finite rule (issue 13 item 11): Sum, Max, Min, Mean, Variance and StdDev refuse NaN
// and +-inf at lift with windowagg.errors.MonoidInputError. ArgMax/ArgMin refuse a NaN key
// (as their Python lift does); Count, First and Last take any value.
#pragma once

#include <nanobind/nanobind.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <string>
#include <utility>

#include "gc.hpp"
#include "num.hpp"
#include "py_errors.hpp"
#include "windowagg/monoid.hpp"
#include "windowagg/ring.hpp"  // WINDOWAGG_INLINE / WINDOWAGG_NOINLINE

namespace windowagg::py {

namespace nb = nanobind;

// ------------------------------------------------------------------------- Python types

// The built-in monoid classes, looked up once (dispatch in visit_adapter), and
// windowagg.monoids.base.declared_builtin (see declared_type).
struct Builtins {
    PyObject *Sum, *Count, *Max, *Min, *First, *Last, *Mean, *Variance, *StdDev, *ArgMax,
        *ArgMin, *Composite, *NOTHING, *declared;
};

inline const Builtins& builtins() {
    static const Builtins b = [] {
        nb::module_ mb = nb::module_::import_("windowagg.monoids.builtins");
        nb::module_ mc = nb::module_::import_("windowagg.monoids.composite");
        nb::module_ mbase = nb::module_::import_("windowagg.monoids.base");
        auto get = [](nb::module_& m, const char* n) { return nb::object(m.attr(n)).release().ptr(); };
        return Builtins{get(mb, "Sum"),      get(mb, "Count"),  get(mb, "Max"),
                        get(mb, "Min"),      get(mb, "First"),  get(mb, "Last"),
                        get(mb, "Mean"),     get(mb, "Variance"), get(mb, "StdDev"),
                        get(mb, "ArgMax"),   get(mb, "ArgMin"), get(mc, "Composite"),
                        get(mb, "NOTHING"),
                        get(mbase, "declared_builtin")};
    }();
    return b;
}

// The windowagg class whose native_kind the monoid `m` declares (the Python
// windowagg.monoids.base.declared_builtin), or nullptr. Every dispatch on a monoid reads
// this, never Py_TYPE(m): a subclass of a built-in that keeps its identity, lift, combine,
// lower and inverse keeps the built-in's native path; one that redefines any of them gets
// the generic path (its own methods). Borrowed: the class lives in its module. Called once
// per structure built, never per operation.
inline PyObject* declared_type(nb::handle m) {
    PyObject* r = PyObject_CallOneArg(builtins().declared, m.ptr());
    if (!r) throw nb::python_error();
    Py_DECREF(r);
    return r == Py_None ? nullptr : r;
}

// ------------------------------------------------------------------------- numeric kernels

// One numeric monoid as operations on `cells(K)` consecutive Nums. NumAdapter (Sum, Count,
// Max, Min, First, Last, Mean) calls them with a constant kind; KindAdapter (Variance and
// StdDev) and the composite adapter with a kind they hold.
enum class Kind : uint8_t { SUM, COUNT, MAX, MIN, FIRST, LAST, MEAN, VARIANCE, STDDEV };

constexpr int cells(Kind k) {
    return k == Kind::MEAN ? 2 : (k == Kind::VARIANCE || k == Kind::STDDEV) ? 3 : 1;
}

// What a kernel needs from its Python monoid: its repr (for error messages) and ddof.
struct KernelCtx {
    std::string who;  // repr of the monoid, e.g. "Max()" or "Variance(ddof=1)"
    int64_t ddof = 0;
};

[[noreturn]] inline void refuse_non_finite(const KernelCtx& c, double v) {
    nb::object f = nb::steal(PyFloat_FromDouble(v));
    raise("MonoidInputError", c.who + " refuses non-finite value " + repr_str(f) +
                                  ": drop or repair the record (a windows policy can route it to the rejects)");
}

// GCC 12 reports reads and writes past a 2-cell composite partial in the kernels below
// (-Warray-bounds, -Wstringop-overflow, -Wmaybe-uninitialized) when CompositeAdapterT<2>
// inlines them: the kinds that use a second or third cell never sit where they would not
// fit (supports() checks it; assume_fits says it to the compiler, which loses it through the
// kind switch). The sanitizer build checks it at run time.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Warray-bounds"
#pragma GCC diagnostic ignored "-Wstringop-overflow"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
inline void k_identity(Kind k, Num* p) {
    switch (k) {
        case Kind::SUM: case Kind::COUNT: p[0] = Num::of_int(0); break;
        case Kind::MAX: case Kind::MIN: case Kind::FIRST: case Kind::LAST: p[0] = Num::none(); break;
        case Kind::MEAN: p[0] = Num::of_int(0); p[1] = Num::of_int(0); break;
        case Kind::VARIANCE: case Kind::STDDEV:
            p[0] = Num::of_int(0); p[1] = Num::of_flt(0.0); p[2] = Num::of_flt(0.0); break;
    }
}

// out = a (x) b; out may not alias a or b. May throw Deopt (int64 overflow).
inline void k_combine(Kind k, const Num* a, const Num* b, Num* out) {
    switch (k) {
        case Kind::SUM: out[0] = num_add(a[0], b[0]); break;
        case Kind::COUNT: out[0] = Num::of_int(checked_add(a[0].i, b[0].i)); break;
        case Kind::MAX:  // the left one unless a < b (None is the identity)
            out[0] = a[0].tag == Num::NONE ? b[0]
                     : (b[0].tag == Num::NONE || !num_lt(a[0], b[0])) ? a[0] : b[0];
            break;
        case Kind::MIN:
            out[0] = a[0].tag == Num::NONE ? b[0]
                     : (b[0].tag == Num::NONE || !num_lt(b[0], a[0])) ? a[0] : b[0];
            break;
        case Kind::FIRST: out[0] = a[0].tag == Num::NONE ? b[0] : a[0]; break;
        case Kind::LAST: out[0] = b[0].tag == Num::NONE ? a[0] : b[0]; break;
        case Kind::MEAN:
            out[0] = num_add(a[0], b[0]);
            out[1] = Num::of_int(checked_add(a[1].i, b[1].i));
            break;
        case Kind::VARIANCE: case Kind::STDDEV: {
            // Chan, Golub, LeVeque, written operation for operation as the Python twin
            int64_t na = a[0].i, nb_ = b[0].i;
            if (!nb_) { out[0] = a[0]; out[1] = a[1]; out[2] = a[2]; break; }
            if (!na) { out[0] = b[0]; out[1] = b[1]; out[2] = b[2]; break; }
            int64_t n = checked_add(na, nb_);
            double ma = a[1].d, mb = b[1].d, qa = a[2].d, qb = b[2].d;
            double dn = static_cast<double>(n);
            double delta = mb - ma;
            double mean = ma + (delta * static_cast<double>(nb_)) / dn;
            double m2 = (qa + qb) +
                        (((delta * delta) * static_cast<double>(na)) * static_cast<double>(nb_)) / dn;
            out[0] = Num::of_int(n); out[1] = Num::of_flt(mean); out[2] = Num::of_flt(m2);
            break;
        }
    }
}

// Lift one number (already a Num). Raises for non-finite input where the rule says so.
inline void k_lift_num(Kind k, const KernelCtx& c, const Num& x, Num* out) {
    switch (k) {
        case Kind::COUNT: out[0] = Num::of_int(1); return;
        case Kind::FIRST: case Kind::LAST: out[0] = x; return;
        default: break;
    }
    if (x.tag == Num::FLT && !std::isfinite(x.d)) refuse_non_finite(c, x.d);
    switch (k) {
        case Kind::SUM: case Kind::MAX: case Kind::MIN: out[0] = x; break;
        case Kind::MEAN: out[0] = x; out[1] = Num::of_int(1); break;
        default:  // VARIANCE, STDDEV: (1, float(x), 0.0)
            out[0] = Num::of_int(1); out[1] = Num::of_flt(x.as_double()); out[2] = Num::of_flt(0.0);
    }
}

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

// Lift a Python value; false: not representable here (deoptimise).
inline bool k_lift(Kind k, const KernelCtx& c, PyObject* x, Num* out) {
    if (k == Kind::COUNT) { out[0] = Num::of_int(1); return true; }
    if ((k == Kind::MAX || k == Kind::MIN) && x == Py_None) { out[0] = Num::none(); return true; }
    Num v;
    if (!num_from_py(x, v)) {
        // Variance of an int beyond int64: float(x) as the twin does (or let it raise)
        if ((k == Kind::VARIANCE || k == Kind::STDDEV) && PyLong_CheckExact(x)) {
            double d = PyLong_AsDouble(x);
            if (d == -1.0 && PyErr_Occurred()) { PyErr_Clear(); return false; }
            v = Num::of_flt(d);
        } else {
            return false;
        }
    }
    k_lift_num(k, c, v, out);
    return true;
}

// twin.lower(partial) as a Num when it is a plain number (or None: tag NONE); false when
// only Python can compute it exactly (a big int mean).
inline bool k_lower_num(Kind k, const KernelCtx& c, const Num* p, Num& out) {
    switch (k) {
        case Kind::SUM: case Kind::COUNT: case Kind::MAX: case Kind::MIN:
        case Kind::FIRST: case Kind::LAST: out = p[0]; return true;
        case Kind::MEAN: {
            int64_t n = p[1].i;
            if (!n) { out = Num::none(); return true; }
            if (p[0].tag == Num::FLT) { out = Num::of_flt(p[0].d / static_cast<double>(n)); return true; }
            int64_t s = p[0].i;
            const int64_t lim = int64_t(1) << 53;  // exact in a double: Python divides floats
            if (s > lim || s < -lim || n > lim || n < -lim) return false;
            out = Num::of_flt(static_cast<double>(s) / static_cast<double>(n));
            return true;
        }
        default: {
            int64_t dof = p[0].i - c.ddof;
            if (dof <= 0) { out = Num::none(); return true; }
            double v = p[2].d / static_cast<double>(dof);
            out = Num::of_flt(k == Kind::STDDEV ? std::sqrt(v) : v);
            return true;
        }
    }
}

inline nb::object k_lower(Kind k, const KernelCtx& c, const Num* p) {
    Num r;
    if (k_lower_num(k, c, p, r)) return num_to_py(r);
    // Mean of ints beyond 2**53: Python's exact int true division
    nb::object s = num_to_py(p[0]), n = num_to_py(p[1]);
    PyObject* q = PyNumber_TrueDivide(s.ptr(), n.ptr());
    if (!q) throw_if_error();
    return nb::steal(q);
}

inline nb::object k_to_py(Kind k, const Num* p) {
    switch (k) {
        case Kind::FIRST: case Kind::LAST: return num_to_py(p[0], builtins().NOTHING);
        case Kind::MEAN: return nb::make_tuple(num_to_py(p[0]), num_to_py(p[1]));
        case Kind::VARIANCE: case Kind::STDDEV:
            return nb::make_tuple(num_to_py(p[0]), num_to_py(p[1]), num_to_py(p[2]));
        default: return num_to_py(p[0]);
    }
}

// Read the twin's partial; false (deoptimise) for anything the native form cannot hold
// exactly, including values its lift would have refused (validated: fed by decoded bytes).
inline bool k_from_py(Kind k, PyObject* o, Num* out) {
    auto tuple_of = [&](Py_ssize_t n) { return PyTuple_CheckExact(o) && PyTuple_GET_SIZE(o) == n; };
    auto finite = [](const Num& v) { return v.tag == Num::INT || std::isfinite(v.d); };
    switch (k) {
        case Kind::SUM: return num_from_py(o, out[0]) && finite(out[0]);
        case Kind::COUNT: return num_from_py(o, out[0]) && out[0].tag == Num::INT;
        case Kind::MAX: case Kind::MIN:
            if (o == Py_None) { out[0] = Num::none(); return true; }
            return num_from_py(o, out[0]) && finite(out[0]);
        case Kind::FIRST: case Kind::LAST:
            if (o == builtins().NOTHING) { out[0] = Num::none(); return true; }
            return num_from_py(o, out[0]);
        case Kind::MEAN:
            return tuple_of(2) && num_from_py(PyTuple_GET_ITEM(o, 0), out[0]) && finite(out[0]) &&
                   num_from_py(PyTuple_GET_ITEM(o, 1), out[1]) && out[1].tag == Num::INT;
        default:
            return tuple_of(3) && num_from_py(PyTuple_GET_ITEM(o, 0), out[0]) &&
                   out[0].tag == Num::INT && out[0].i >= 0 &&
                   num_from_py(PyTuple_GET_ITEM(o, 1), out[1]) && out[1].tag == Num::FLT &&
                   std::isfinite(out[1].d) && num_from_py(PyTuple_GET_ITEM(o, 2), out[2]) &&
                   out[2].tag == Num::FLT && std::isfinite(out[2].d) && out[2].d >= 0.0;
    }
}

// ------------------------------------------------------------------------- adapters

// Sum, Count, Max, Min, First, Last and Mean (K): the kind a template argument, so that
// their combines inline into the algorithms' loops and their partials hold cells(K) Nums
// (16 bytes a cell). Sum, Max and Min are the benchmarked hot paths (the next stage of the
// float64 first stages of sum_f64.hpp and minmax_f64.hpp); Count, Mean, First and Last are
// on the windows engine's (`count`, `mean`, `first(v)`, `last(v)` columns run
// TwoStacksLite, and FiBA for per-event streaming windows), where a kind held in a field
// measured 1.5-6.6x slower (results/setup-2026-11-28); DABA, DABALite and AMTA run these
// four on KindAdapter (build time).
template <Kind K>
struct NumAdapter {
    static_assert(K != Kind::VARIANCE && K != Kind::STDDEV,
                  "Variance and StdDev run on KindAdapter (their kind a run-time field)");
    using partial_type = std::array<Num, cells(K)>;
    static constexpr bool generic = false;
    static constexpr bool gil_free = true;  // no Python object: see the comment on gil_free
    KernelCtx ctx;
    bool commutative;

    explicit NumAdapter(nb::handle monoid) : commutative(py_commutative(monoid)) { ctx.who = repr_str(monoid); }
    partial_type identity() const { partial_type p; k_identity(K, p.data()); return p; }
    // The one-number kinds are written out here (if constexpr), so that the compiler
    // inlines them into the algorithms' loops instead of calling the general switch (which,
    // with K a constant, folds to Mean's two additions).
    WINDOWAGG_INLINE partial_type combine(const partial_type& a, const partial_type& b) const {
        partial_type r;
        if constexpr (K == Kind::SUM) {
            r[0] = num_add(a[0], b[0]);
        } else if constexpr (K == Kind::MAX) {
            r[0] = a[0].tag == Num::NONE ? b[0] : (b[0].tag == Num::NONE || !num_lt(a[0], b[0])) ? a[0] : b[0];
        } else if constexpr (K == Kind::MIN) {
            r[0] = a[0].tag == Num::NONE ? b[0] : (b[0].tag == Num::NONE || !num_lt(b[0], a[0])) ? a[0] : b[0];
        } else {
            k_combine(K, a.data(), b.data(), r.data());
        }
        return r;
    }
    bool lift(nb::handle x, partial_type& out) const {
        if constexpr (K == Kind::SUM || K == Kind::MAX || K == Kind::MIN) {
            PyObject* o = x.ptr();
            if (PyFloat_CheckExact(o)) {
                double d = PyFloat_AS_DOUBLE(o);
                if (!std::isfinite(d)) refuse_non_finite(ctx, d);
                out[0] = Num::of_flt(d);
                return true;
            }
        }
        return k_lift(K, ctx, x.ptr(), out.data());
    }
    WINDOWAGG_INLINE bool lift_f64(double x, partial_type& out) const {
        if constexpr (K == Kind::SUM || K == Kind::MAX || K == Kind::MIN) {
            if (!std::isfinite(x)) refuse_non_finite(ctx, x);
            out[0] = Num::of_flt(x);
        } else {
            k_lift_num(K, ctx, Num::of_flt(x), out.data());
        }
        return true;
    }
    WINDOWAGG_INLINE bool lift_i64(int64_t x, partial_type& out) const {
        if constexpr (K == Kind::SUM || K == Kind::MAX || K == Kind::MIN) out[0] = Num::of_int(x);
        else k_lift_num(K, ctx, Num::of_int(x), out.data());
        return true;
    }
    nb::object lower(const partial_type& p) const { return k_lower(K, ctx, p.data()); }
    WINDOWAGG_INLINE bool lower_num(const partial_type& p, Num& out) const {
        if constexpr (cells(K) == 1) {
            out = p[0];
            return true;
        } else {
            return k_lower_num(K, ctx, p.data(), out);
        }
    }
    nb::object to_py(const partial_type& p) const { return k_to_py(K, p.data()); }
    bool from_py(nb::handle o, partial_type& out) const { return k_from_py(K, o.ptr(), out.data()); }
};

using SumAdapter = NumAdapter<Kind::SUM>;
using CountAdapter = NumAdapter<Kind::COUNT>;
using MaxAdapter = NumAdapter<Kind::MAX>;
using MinAdapter = NumAdapter<Kind::MIN>;
using FirstAdapter = NumAdapter<Kind::FIRST>;
using LastAdapter = NumAdapter<Kind::LAST>;
using MeanAdapter = NumAdapter<Kind::MEAN>;

// Variance and StdDev: one adapter, the kind a run-time field (as CompositeAdapterT runs
// its components), so that FiBA compiles one tree and each FIFO algorithm one class for
// the two (build time). Both kinds are three cells wide either way and their combine is a
// dozen floating-point operations, so the kind switch costs them little: within noise on
// TwoStacksLite and FiBA (the windows engine's), 0.8-0.95 of the compile-time kind's speed
// on DABA, DABALite and AMTA (results/setup-2026-11-28). The one- and two-cell kinds, whose
// combine is one or two additions, lost 1.5-6.6x on it: they are on NumAdapter where the
// windows engine slides them (TwoStacksLite, FiBA) and on this adapter in DABA, DABALite
// and AMTA (visit_adapter's CompileTimeKinds). The same kernels: the same partials,
// answers, errors and combines.
struct KindAdapter {
    using partial_type = std::array<Num, 3>;
    static constexpr bool generic = false;
    static constexpr bool gil_free = true;
    Kind kind;
    KernelCtx ctx;
    bool commutative;

    KindAdapter(nb::handle monoid, Kind k) : kind(k), commutative(py_commutative(monoid)) {
        ctx.who = repr_str(monoid);
        if (k == Kind::VARIANCE || k == Kind::STDDEV) ctx.ddof = nb::cast<int64_t>(monoid.attr("ddof"));
    }
    partial_type identity() const {
        partial_type p{};
        k_identity(kind, p.data());
        return p;
    }
    partial_type combine(const partial_type& a, const partial_type& b) const {
        partial_type r{};
        k_combine(kind, a.data(), b.data(), r.data());
        return r;
    }
    bool lift(nb::handle x, partial_type& out) const {
        partial_type p{};
        if (!k_lift(kind, ctx, x.ptr(), p.data())) return false;
        out = p;
        return true;
    }
    bool lift_f64(double x, partial_type& out) const {
        partial_type p{};
        k_lift_num(kind, ctx, Num::of_flt(x), p.data());
        out = p;
        return true;
    }
    bool lift_i64(int64_t x, partial_type& out) const {
        partial_type p{};
        k_lift_num(kind, ctx, Num::of_int(x), p.data());
        out = p;
        return true;
    }
    nb::object lower(const partial_type& p) const { return k_lower(kind, ctx, p.data()); }
    bool lower_num(const partial_type& p, Num& out) const { return k_lower_num(kind, ctx, p.data(), out); }
    nb::object to_py(const partial_type& p) const { return k_to_py(kind, p.data()); }
    bool from_py(nb::handle o, partial_type& out) const {
        partial_type p{};
        if (!k_from_py(kind, o.ptr(), p.data())) return false;
        out = p;
        return true;
    }
};

// Any monoid, through its own Python methods: partial = the Python object itself.
struct GenericAdapter {
    using partial_type = nb::object;
    static constexpr bool generic = true;
    nb::object monoid, id, lift_fn, combine_fn, lower_fn;
    bool commutative;

    explicit GenericAdapter(nb::handle m)
        : monoid(nb::borrow(m)), id(m.attr("identity")), lift_fn(m.attr("lift")),
          combine_fn(m.attr("combine")), lower_fn(m.attr("lower")), commutative(py_commutative(m)) {}
    void gc_traverse(GcVisit& v) const {
        v(monoid), v(id), v(lift_fn), v(combine_fn), v(lower_fn);
    }

    static nb::object call1(const nb::object& f, PyObject* a) {
        PyObject* r = PyObject_CallOneArg(f.ptr(), a);
        if (!r) throw_if_error();
        return nb::steal(r);
    }
    partial_type identity() const { return id; }
    partial_type combine(const partial_type& a, const partial_type& b) const {
        PyObject* args[2] = {a.ptr(), b.ptr()};
        PyObject* r = PyObject_Vectorcall(combine_fn.ptr(), args, 2, nullptr);
        if (!r) throw_if_error();
        return nb::steal(r);
    }
    bool lift(nb::handle x, partial_type& out) const { out = call1(lift_fn, x.ptr()); return true; }
    bool lift_f64(double x, partial_type& out) const {
        nb::object v = nb::steal(PyFloat_FromDouble(x));
        return lift(v, out);
    }
    bool lift_i64(int64_t x, partial_type& out) const {
        nb::object v = nb::steal(PyLong_FromLongLong(x));
        return lift(v, out);
    }
    nb::object lower(const partial_type& p) const { return call1(lower_fn, p.ptr()); }
    bool lower_num(const partial_type&, Num&) const { return false; }
    nb::object to_py(const partial_type& p) const { return p; }
    bool from_py(nb::handle o, partial_type& out) const { out = nb::borrow(o); return true; }
};

// ArgMax / ArgMin over int/float keys: partial = the twin's (key, value) tuple (None for
// the identity) with its key as a Num for native comparisons. One adapter for both (which
// one a field, as KindAdapter's kind): each algorithm is compiled once for the two.
struct ArgAdapter {
    struct partial_type {
        Num key;          // NONE: the identity (None)
        nb::object pair;  // the twin's partial: a (key, value) tuple
        void gc_traverse(GcVisit& v) const { v(pair); }
    };
    static constexpr bool generic = false;
    nb::object key_fn;  // None, or the monoid's key function
    std::string who;
    bool is_max;
    bool commutative;

    ArgAdapter(nb::handle m, bool max)
        : key_fn(m.attr("key")), who(max ? "ArgMax" : "ArgMin"), is_max(max), commutative(py_commutative(m)) {}
    void gc_traverse(GcVisit& v) const { v(key_fn); }
    partial_type identity() const { return {Num::none(), nb::none()}; }
    partial_type combine(const partial_type& a, const partial_type& b) const {
        if (a.key.tag == Num::NONE) return b;
        if (b.key.tag == Num::NONE) return a;
        bool take_b = is_max ? num_lt(a.key, b.key) : num_lt(b.key, a.key);
        return take_b ? b : a;
    }
    bool lift(nb::handle x, partial_type& out) const {
        nb::object pair;
        if (key_fn.is_none()) {
            if (PyTuple_CheckExact(x.ptr()) && PyTuple_GET_SIZE(x.ptr()) == 2) {
                pair = nb::borrow(x);
            } else if (PyList_CheckExact(x.ptr()) && PyList_GET_SIZE(x.ptr()) == 2) {
                pair = nb::make_tuple(nb::handle(PyList_GET_ITEM(x.ptr(), 0)),
                                      nb::handle(PyList_GET_ITEM(x.ptr(), 1)));
            } else {
                return false;  // the twin raises its own message
            }
        } else {
            nb::object k = GenericAdapter::call1(key_fn, x.ptr());
            pair = nb::make_tuple(k, x);
        }
        Num key;
        if (!num_from_py(PyTuple_GET_ITEM(pair.ptr(), 0), key)) return false;
        if (key.tag == Num::FLT && std::isnan(key.d)) {
            raise("MonoidInputError", who + ".lift got an unordered value nan (NaN)");
        }
        out = {key, std::move(pair)};
        return true;
    }
    bool lift_f64(double x, partial_type& out) const {
        nb::object v = nb::steal(PyFloat_FromDouble(x));
        return lift(v, out);
    }
    bool lift_i64(int64_t x, partial_type& out) const {
        nb::object v = nb::steal(PyLong_FromLongLong(x));
        return lift(v, out);
    }
    nb::object lower(const partial_type& p) const {
        if (p.key.tag == Num::NONE) return nb::none();
        return nb::borrow(PyTuple_GET_ITEM(p.pair.ptr(), 1));
    }
    bool lower_num(const partial_type& p, Num& out) const {
        if (p.key.tag == Num::NONE) { out = Num::none(); return true; }
        return num_from_py(PyTuple_GET_ITEM(p.pair.ptr(), 1), out);
    }
    nb::object to_py(const partial_type& p) const { return p.key.tag == Num::NONE ? nb::none() : p.pair; }
    bool from_py(nb::handle o, partial_type& out) const {
        if (o.is_none()) { out = identity(); return true; }
        if (!PyTuple_CheckExact(o.ptr()) || PyTuple_GET_SIZE(o.ptr()) != 2) return false;
        Num key;
        if (!num_from_py(PyTuple_GET_ITEM(o.ptr(), 0), key)) return false;
        if (key.tag == Num::FLT && std::isnan(key.d)) return false;
        out = {key, nb::borrow(o)};
        return true;
    }
};

// Composite(...) of numeric built-ins (positional or named, fan_out or not): one native
// partial of up to kMaxCells Nums, combined component by component. Cells is the partial's
// capacity: CompositeAdapter (8) everywhere; FiBA also stores a composite that needs at
// most 2 cells (e.g. Composite(Max(), Sum())) in a 2-cell partial (32 instead of 128
// bytes per entry and per combine), same code otherwise.
template <int Cells>
struct CompositeAdapterT {
    static constexpr int kMaxCells = Cells;
    static constexpr int kMaxParts = Cells;
    using partial_type = std::array<Num, kMaxCells>;
    static constexpr bool generic = false;

    int nparts = 0, ncells = 0;
    std::array<Kind, kMaxParts> kinds{};
    std::array<int, kMaxParts> offs{};
    std::array<KernelCtx, kMaxParts> ctx;
    bool fan_out = false;
    nb::object names;  // None, or a tuple of str
    bool commutative = false;

    // The kind of a component, or false when it has no native kernel.
    static bool kind_of(nb::handle m, Kind& k) {
        const Builtins& b = builtins();
        PyObject* t = declared_type(m);
        if (t == nullptr) return false;
        if (t == b.Sum) k = Kind::SUM;
        else if (t == b.Count) k = Kind::COUNT;
        else if (t == b.Max) k = Kind::MAX;
        else if (t == b.Min) k = Kind::MIN;
        else if (t == b.First) k = Kind::FIRST;
        else if (t == b.Last) k = Kind::LAST;
        else if (t == b.Mean) k = Kind::MEAN;
        else if (t == b.Variance) k = Kind::VARIANCE;
        else if (t == b.StdDev) k = Kind::STDDEV;
        else return false;
        return true;
    }
    // True when every component of the Composite `m` has a kernel and the cells fit.
    static bool supports(nb::handle m) {
        nb::tuple comps = nb::borrow<nb::tuple>(m.attr("components"));
        if (comps.size() > (size_t)kMaxParts) return false;
        int total = 0;
        for (nb::handle c : comps) {
            Kind k;
            if (!kind_of(c, k)) return false;
            total += cells(k);
        }
        return total <= kMaxCells;
    }
    void gc_traverse(GcVisit& v) const { v(names); }
    explicit CompositeAdapterT(nb::handle m)
        : fan_out(nb::cast<bool>(m.attr("fan_out"))), names(m.attr("names")), commutative(py_commutative(m)) {
        nb::tuple comps = nb::borrow<nb::tuple>(m.attr("components"));
        for (nb::handle c : comps) {
            Kind k = Kind::SUM;
            kind_of(c, k);
            kinds[nparts] = k;
            offs[nparts] = ncells;
            ctx[nparts].who = repr_str(c);
            if (k == Kind::VARIANCE || k == Kind::STDDEV) ctx[nparts].ddof = nb::cast<int64_t>(c.attr("ddof"));
            ncells += cells(k);
            ++nparts;
        }
    }
    // Every component's cells lie inside the partial (supports() checked it); said to the
    // compiler, which cannot see it through the kind switch of the kernels.
    WINDOWAGG_INLINE void assume_fits(int j) const {
#if defined(__GNUC__) || defined(__clang__)
        if (offs[j] + cells(kinds[j]) > kMaxCells) __builtin_unreachable();
#else
        (void)j;
#endif
    }
    WINDOWAGG_INLINE Num* at(partial_type& p, int j) const {
        assume_fits(j);
        return p.data() + offs[j];
    }
    WINDOWAGG_INLINE const Num* at(const partial_type& p, int j) const {
        assume_fits(j);
        return p.data() + offs[j];
    }
    partial_type identity() const {
        partial_type p{};
        for (int j = 0; j < nparts; ++j) {
            assume_fits(j);
            k_identity(kinds[j], p.data() + offs[j]);
        }
        return p;
    }
    partial_type combine(const partial_type& a, const partial_type& b) const {
        partial_type r{};
        for (int j = 0; j < nparts; ++j) {
            assume_fits(j);
            k_combine(kinds[j], a.data() + offs[j], b.data() + offs[j], r.data() + offs[j]);
        }
        return r;
    }
    bool lift(nb::handle x, partial_type& out) const {
        partial_type p{};
        if (fan_out) {
            for (int j = 0; j < nparts; ++j)
                if (!k_lift(kinds[j], ctx[j], x.ptr(), at(p, j))) return false;
            out = p;
            return true;
        }
        PyObject* o = x.ptr();
        if (!names.is_none() && PyDict_CheckExact(o)) {
            if (PyDict_GET_SIZE(o) != nparts) return false;  // the twin raises
            for (int j = 0; j < nparts; ++j) {
                PyObject* v = PyDict_GetItemWithError(o, PyTuple_GET_ITEM(names.ptr(), j));
                if (!v) { if (PyErr_Occurred()) throw_if_error(); return false; }
                if (!k_lift(kinds[j], ctx[j], v, at(p, j))) return false;
            }
            out = p;
            return true;
        }
        bool is_tuple = PyTuple_CheckExact(o);
        if (!is_tuple && !PyList_CheckExact(o)) return false;
        if (Py_SIZE(o) != nparts) return false;
        for (int j = 0; j < nparts; ++j) {
            PyObject* v = is_tuple ? PyTuple_GET_ITEM(o, j) : PyList_GET_ITEM(o, j);
            if (!k_lift(kinds[j], ctx[j], v, at(p, j))) return false;
        }
        out = p;
        return true;
    }
    bool lift_f64(double x, partial_type& out) const {
        if (!fan_out) return false;
        partial_type p{};
        for (int j = 0; j < nparts; ++j) k_lift_num(kinds[j], ctx[j], Num::of_flt(x), at(p, j));
        out = p;
        return true;
    }
    bool lift_i64(int64_t x, partial_type& out) const {
        if (!fan_out) return false;
        partial_type p{};
        for (int j = 0; j < nparts; ++j) k_lift_num(kinds[j], ctx[j], Num::of_int(x), at(p, j));
        out = p;
        return true;
    }
    nb::object lower(const partial_type& p) const {
        if (names.is_none()) {
            nb::object t = nb::steal(PyTuple_New(nparts));
            for (int j = 0; j < nparts; ++j)
                PyTuple_SET_ITEM(t.ptr(), j, k_lower(kinds[j], ctx[j], at(p, j)).release().ptr());
            return t;
        }
        nb::dict d;
        for (int j = 0; j < nparts; ++j)
            d[nb::handle(PyTuple_GET_ITEM(names.ptr(), j))] = k_lower(kinds[j], ctx[j], at(p, j));
        return d;
    }
    bool lower_num(const partial_type&, Num&) const { return false; }
    nb::object to_py(const partial_type& p) const {
        nb::object t = nb::steal(PyTuple_New(nparts));
        for (int j = 0; j < nparts; ++j)
            PyTuple_SET_ITEM(t.ptr(), j, k_to_py(kinds[j], at(p, j)).release().ptr());
        return t;
    }
    bool from_py(nb::handle o, partial_type& out) const {
        if (!PyTuple_CheckExact(o.ptr()) || PyTuple_GET_SIZE(o.ptr()) != nparts) return false;
        partial_type p{};
        for (int j = 0; j < nparts; ++j)
            if (!k_from_py(kinds[j], PyTuple_GET_ITEM(o.ptr(), j), at(p, j))) return false;
        out = p;
        return true;
    }
};

using CompositeAdapter = CompositeAdapterT<8>;

// ------------------------------------------------------------------------- dispatch

// Call f(adapter) with the adapter for the kind `monoid` declares (declared_type).
// f must be callable with every adapter type (a generic lambda); returns what f returns.
// CompileTimeKinds: Count, Mean, First and Last on their NumAdapter<Kind> (the structures
// the windows engine slides: TwoStacksLite and FiBA); without it, on KindAdapter, as
// Variance and StdDev always are: the same answers and partials, a kind read at run time
// (1.5-4x slower slides), and four instantiations of the algorithm fewer to compile
// (DABA, DABALite and AMTA; results/setup-2026-11-28).
template <bool CompileTimeKinds = true, class F>
decltype(auto) visit_adapter(nb::handle monoid, F&& f) {
    const Builtins& b = builtins();
    PyObject* t = declared_type(monoid);  // nullptr: no declared kind, generic
    if (t == b.Sum) return f(SumAdapter(monoid));
    if (t == b.Max) return f(MaxAdapter(monoid));
    if (t == b.Min) return f(MinAdapter(monoid));
    if constexpr (CompileTimeKinds) {
        if (t == b.Count) return f(CountAdapter(monoid));
        if (t == b.Mean) return f(MeanAdapter(monoid));
        if (t == b.First) return f(FirstAdapter(monoid));
        if (t == b.Last) return f(LastAdapter(monoid));
    } else {
        if (t == b.Count) return f(KindAdapter(monoid, Kind::COUNT));
        if (t == b.Mean) return f(KindAdapter(monoid, Kind::MEAN));
        if (t == b.First) return f(KindAdapter(monoid, Kind::FIRST));
        if (t == b.Last) return f(KindAdapter(monoid, Kind::LAST));
    }
    if (t == b.Variance) return f(KindAdapter(monoid, Kind::VARIANCE));
    if (t == b.StdDev) return f(KindAdapter(monoid, Kind::STDDEV));
    if (t == b.ArgMax) return f(ArgAdapter(monoid, true));
    if (t == b.ArgMin) return f(ArgAdapter(monoid, false));
    if (t == b.Composite && CompositeAdapter::supports(monoid)) return f(CompositeAdapter(monoid));
    return f(GenericAdapter(monoid));
}

}  // namespace windowagg::py
