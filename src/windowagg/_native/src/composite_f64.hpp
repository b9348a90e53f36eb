// FiBA's first stage for a Composite of two float components among Sum(), Max() and Min()
// (e.g. Composite(Max(), Sum())): partial = two doubles (16 bytes, no tags), for windows
// whose values are all exact floats. Same answers as CompositeAdapterT<2>, bit for bit:
// each component is F64SumAdapter's or F64ExtremeAdapter's rule (identity = Sum's private
// NaN, -inf for Max, +inf for Min), chosen by a per-component kind that is the same at
// every combine (a branch the processor predicts).
//
// Specialise, then deoptimise: a value that is not an exact float (an int, None, a dict
// for a named Composite, ...) makes lift / from_py return false; the owner then moves the
// window to CompositeAdapterT<2> (tagged numbers), node for node, and from there to the
// generic path, with every answer unchanged.
#pragma once

#include <nanobind/nanobind.h>

#include <array>
#include <cmath>

#include "adapters.hpp"
#include "minmax_f64.hpp"
#include "sum_f64.hpp"

namespace windowagg::py {

struct F64Composite2Adapter {
    using partial_type = std::array<double, 2>;
    using Tagged = CompositeAdapterT<2>;  // the next stage
    static constexpr bool generic = false;
    static constexpr bool nothrow_combine = true;
    std::array<Kind, 2> kinds{};
    std::array<KernelCtx, 2> ctx;
    bool fan_out = false;
    nb::object names;
    bool commutative = false;

    // Two components, each Sum(), Max() or Min().
    static bool supports(nb::handle m) {
        nb::tuple comps = nb::borrow<nb::tuple>(m.attr("components"));
        if (comps.size() != 2) return false;
        for (nb::handle c : comps) {
            Kind k;
            if (!Tagged::kind_of(c, k) || (k != Kind::SUM && k != Kind::MAX && k != Kind::MIN)) return false;
        }
        return true;
    }
    void gc_traverse(GcVisit& v) const { v(names); }
    explicit F64Composite2Adapter(nb::handle m)
        : fan_out(nb::cast<bool>(m.attr("fan_out"))), names(m.attr("names")), commutative(py_commutative(m)) {
        nb::tuple comps = nb::borrow<nb::tuple>(m.attr("components"));
        for (int j = 0; j < 2; ++j) {
            nb::handle c = comps[static_cast<std::size_t>(j)];
            Tagged::kind_of(c, kinds[j]);
            ctx[j].who = repr_str(c);
        }
    }

    static double id_of(Kind k) noexcept {
        return k == Kind::SUM ? F64SumAdapter::id_value()
                              : (k == Kind::MAX ? F64MaxAdapter::id_value() : F64MinAdapter::id_value());
    }
    bool is_id(int j, double x) const noexcept {
        return kinds[j] == Kind::SUM ? F64SumAdapter::is_id(x) : x == id_of(kinds[j]);
    }
    partial_type identity() const noexcept { return {id_of(kinds[0]), id_of(kinds[1])}; }
    WINDOWAGG_INLINE static double one(Kind k, double a, double b) noexcept {
        if (k == Kind::SUM) {
            double r = a + b;
            if (!std::isnan(r)) [[likely]]
                return r;
            return F64SumAdapter::combine_nan(a, b);
        }
        if (k == Kind::MAX) return a < b ? b : a;
        return b < a ? b : a;
    }
    WINDOWAGG_INLINE partial_type combine(const partial_type& a, const partial_type& b) const noexcept {
        return {one(kinds[0], a[0], b[0]), one(kinds[1], a[1], b[1])};
    }

    // One component's value: an exact finite float (non-finite: the twin's error).
    bool take(int j, PyObject* o, double& out) const {
        if (!PyFloat_CheckExact(o)) return false;
        return take_f64(j, PyFloat_AS_DOUBLE(o), out);
    }
    bool take_f64(int j, double x, double& out) const {
        if (!std::isfinite(x)) refuse_non_finite(ctx[j], x);
        out = x;
        return true;
    }
    bool lift(nb::handle x, partial_type& out) const {
        PyObject* o = x.ptr();
        partial_type p;
        if (fan_out) {
            if (!PyFloat_CheckExact(o)) return false;
            if (!take(0, o, p[0]) || !take(1, o, p[1])) return false;
        } else {
            // a tuple or list of two floats (a dict for a named Composite: next stage)
            bool is_tuple = PyTuple_CheckExact(o);
            if (!is_tuple && !PyList_CheckExact(o)) return false;
            if (Py_SIZE(o) != 2) return false;
            for (int j = 0; j < 2; ++j)
                if (!take(j, is_tuple ? PyTuple_GET_ITEM(o, j) : PyList_GET_ITEM(o, j), p[j])) return false;
        }
        out = p;
        return true;
    }
    bool lift_f64(double x, partial_type& out) const {
        if (!fan_out) return false;
        partial_type p;
        take_f64(0, x, p[0]);
        take_f64(1, x, p[1]);
        out = p;
        return true;
    }
    bool lift_i64(int64_t, partial_type&) const { return false; }

    // Component j as the tagged partial's cell (the int 0 / None identities).
    Num cell(int j, double x) const {
        if (!is_id(j, x)) return Num::of_flt(x);
        return kinds[j] == Kind::SUM ? Num::of_int(0) : Num::none();
    }
    static Tagged::partial_type tagged_of(const F64Composite2Adapter& a, const partial_type& p) {
        Tagged::partial_type t{};
        t[0] = a.cell(0, p[0]);
        t[1] = a.cell(1, p[1]);
        return t;
    }
    nb::object lower(const partial_type& p) const {
        if (names.is_none()) {
            nb::object t = nb::steal(PyTuple_New(2));
            for (int j = 0; j < 2; ++j) PyTuple_SET_ITEM(t.ptr(), j, num_to_py(cell(j, p[j])).release().ptr());
            return t;
        }
        nb::dict d;
        for (int j = 0; j < 2; ++j) d[nb::handle(PyTuple_GET_ITEM(names.ptr(), j))] = num_to_py(cell(j, p[j]));
        return d;
    }
    bool lower_num(const partial_type&, Num&) const { return false; }
    nb::object to_py(const partial_type& p) const {
        nb::object t = nb::steal(PyTuple_New(2));
        for (int j = 0; j < 2; ++j) PyTuple_SET_ITEM(t.ptr(), j, num_to_py(cell(j, p[j])).release().ptr());
        return t;
    }
    // The twin's partial: a tuple of two finite floats or identities (int 0 for Sum, None).
    bool from_py(nb::handle h, partial_type& out) const {
        PyObject* o = h.ptr();
        if (!PyTuple_CheckExact(o) || PyTuple_GET_SIZE(o) != 2) return false;
        partial_type p;
        for (int j = 0; j < 2; ++j) {
            PyObject* c = PyTuple_GET_ITEM(o, j);
            if (PyFloat_CheckExact(c) && std::isfinite(PyFloat_AS_DOUBLE(c))) {
                p[j] = PyFloat_AS_DOUBLE(c);
            } else if (kinds[j] == Kind::SUM && PyLong_CheckExact(c)) {
                int overflow = 0;
                long long v = PyLong_AsLongLongAndOverflow(c, &overflow);
                if (overflow || v != 0) return false;
                p[j] = id_of(Kind::SUM);
            } else if (kinds[j] != Kind::SUM && c == Py_None) {
                p[j] = id_of(kinds[j]);
            } else {
                return false;
            }
        }
        out = p;
        return true;
    }
};

}  // namespace windowagg::py
