// The type-erased FiBA behind _core.FiBA: FibaImpl is the interface (one virtual call per
// operation), FibaImplT<A, K> runs windowagg::FiBA over adapter A with keys K (int64_t, or
// nb::object ordered by Python's `<`). Specialise, then deoptimise: a value the adapter
// cannot hold throws Deopt (values -> GenericAdapter), a timestamp that is not an int64
// throws DeoptKeys (keys -> Python objects, values -> GenericAdapter); the owner
// (FibaHandle) rebuilds the tree once and redoes the operation, which the tree allows since
// every mutator is atomic.
#pragma once

#include <nanobind/nanobind.h>

#include <windowagg/fiba.hpp>

#include <algorithm>
#include <memory>
#include <numeric>
#include <string>
#include <type_traits>
#include <vector>

#include "adapters.hpp"
#include "call_guard.hpp"
#include "fiba_keys.hpp"
#include "inputs.hpp"
#include "composite_f64.hpp"
#include "minmax_f64.hpp"
#include "sum_f64.hpp"

namespace windowagg::py {

using ObjKey = nb::object;

template <class K>
using LessFor = std::conditional_t<std::is_same_v<K, int64_t>, std::less<int64_t>, PyLess>;

struct SlideProgress {
    std::size_t i = 0;
    bool evicted = false;
    bool inserted = false;
};

struct FibaImpl {
    virtual ~FibaImpl() = default;
    virtual std::size_t size() const = 0;
    virtual void insert(nb::handle t, nb::handle v) = 0;
    virtual void evict(nb::handle t) = 0;
    virtual void bulk_evict(nb::handle t) = 0;
    virtual nb::object query() const = 0;
    virtual nb::object range_query(nb::handle lo, nb::handle hi) const = 0;
    virtual nb::object oldest() const = 0;
    virtual nb::object youngest() const = 0;
    virtual nb::list partials() const = 0;
    virtual void check() const = 0;
    // After an error path whose rebuild met a raising combine: aggregates to recompute
    // (windowagg::FiBA::stale); refresh() does it or raises, still stale.
    virtual bool stale() const = 0;
    virtual void refresh() = 0;
    virtual bool generic() const = 0;
    virtual bool int_keys() const = 0;
    virtual std::size_t node_bytes() const = 0;
    virtual std::unique_ptr<FibaImpl> to_generic(bool object_keys) const = 0;
    virtual void bulk_insert(const Values& ts, const Values& vs) = 0;
    virtual void range_query_many(const Values& lo, const Values& hi, Out& out) const = 0;
    virtual void slide(const Values& ts, const Values& vs, const Values* upto, Out& out, SlideProgress& pr) = 0;
    // Replace the contents by the twin's strictly increasing (t, partial) entries (tuples of
    // two equal-length tuples); false: this adapter/key type cannot hold them (deoptimise).
    virtual bool load(nb::handle ts, nb::handle ps) = 0;
    // Visit every Python reference held (gc.hpp); never during an operation.
    virtual void traverse(GcVisit& v) const = 0;
};

// The tree for `monoid`: its native adapter with int64 keys, or (generic) GenericAdapter with
// int64 keys, or (object_keys) GenericAdapter with Python-object keys.
std::unique_ptr<FibaImpl> make_fiba_impl(nb::handle monoid, int mu, bool generic, bool object_keys);

template <class A, class K>
struct FibaImplT final : FibaImpl {
    using P = typename A::partial_type;
    using Tree = windowagg::FiBA<A, K, LessFor<K>>;
    static constexpr bool kIntKeys = std::is_same_v<K, int64_t>;
    nb::object monoid;
    int mu;
    Tree tree;

    // A MatMul2x2 (its declared kind, monoids.base.declared_kind) on the generic path: its lift and lower return their
    // argument, so they are skipped (as the Python reference skips them).
    bool ident = false;

    FibaImplT(nb::handle m, A a, int mu_) : monoid(nb::borrow(m)), mu(mu_), tree(std::move(a), mu_) {
        if constexpr (A::generic) {
            static PyObject* mm = nb::object(nb::module_::import_("windowagg.monoids.builtins").attr("MatMul2x2"))
                                      .release()
                                      .ptr();
            ident = declared_type(m) == mm;
        }
    }

    const A& ad() const { return tree.monoid(); }
    nb::object lower(const P& p) const {
        if constexpr (A::generic) {
            if (ident) return p;
        }
        return ad().lower(p);
    }

    void lift_or_deopt(nb::handle x, P& p) const {
        if constexpr (A::generic) {
            if (ident) {
                p = nb::borrow(x);
                return;
            }
        }
        if (ad().lift(x, p)) return;
        nb::object probe = GenericAdapter::call1(nb::object(monoid.attr("lift")), x.ptr());
        (void)probe;
        throw Deopt{};
    }
    nb::object ref() const { return tree.empty() ? nb::object() : key_to_py(tree.oldest()); }

    // The key of a timestamp to store; validated as check_timestamp does.
    void store_key(nb::handle t, K& out, nb::handle reference = nb::handle(), const char* where = "timestamp") const {
        if constexpr (kIntKeys) {
            if (exact_i64(t.ptr(), out)) return;
            nb::object r = reference.ptr() ? nb::borrow(reference) : ref();
            check_timestamp(t, r, where);
            throw DeoptKeys{};
        } else {
            nb::object r = reference.ptr() ? nb::borrow(reference) : ref();
            PyObject* o = t.ptr();
            bool fast = r.ptr() && ((PyLong_CheckExact(o) && PyLong_CheckExact(r.ptr())) ||
                                    (PyFloat_CheckExact(o) && PyFloat_CheckExact(r.ptr()) &&
                                     !std::isnan(PyFloat_AS_DOUBLE(o))));
            if (!fast) check_timestamp(t, r, where);
            out = nb::borrow(t);
        }
    }

    std::size_t size() const override { return tree.size(); }
    bool generic() const override { return A::generic; }
    bool stale() const override { return tree.stale(); }
    void refresh() override { tree.refresh(); }
    bool int_keys() const override { return kIntKeys; }
    std::size_t node_bytes() const override { return tree.node_bytes(); }
    void traverse(GcVisit& v) const override {
        v(monoid);
        tree.for_each_owned(v);
    }

    void insert(nb::handle t, nb::handle v) override {
        K k;
        store_key(t, k);
        P p;
        lift_or_deopt(v, p);
        tree.insert(k, std::move(p));
    }

    void evict(nb::handle t) override {
        if constexpr (kIntKeys) {
            int64_t k;
            if (exact_i64(t.ptr(), k)) {
                tree.evict(k);
                return;
            }
            if (tree.empty()) {
                check_timestamp(t, nb::handle(), "timestamp");
                return;
            }
            check_timestamp(t, ref(), "timestamp");
            bool exact;
            int r = int_bound(t.ptr(), true, k, exact);
            if (r == 2) throw DeoptKeys{};
            if (r == 0 && exact) tree.evict(k);
        } else {
            if (tree.empty()) {
                check_timestamp(t, nb::handle(), "timestamp");
                return;
            }
            K k;
            store_key(t, k);
            tree.evict(k);
        }
    }

    void bulk_evict(nb::handle t) override {
        if (tree.empty()) {
            check_timestamp(t, nb::handle(), "timestamp");
            return;
        }
        if constexpr (kIntKeys) {
            int64_t k;
            if (!exact_i64(t.ptr(), k)) {
                check_timestamp(t, ref(), "timestamp");
                bool exact;
                int r = int_bound(t.ptr(), true, k, exact);
                if (r == 2) throw DeoptKeys{};
                if (r < 0) return;
                if (r > 0) k = std::numeric_limits<int64_t>::max();
            }
            tree.bulk_evict(k);
        } else {
            K k;
            store_key(t, k);
            tree.bulk_evict(k);
        }
    }

    nb::object query() const override { return lower(tree.query()); }

    // The range [lo, hi] as keys; false: empty range. Validated as the reference does.
    bool bounds(nb::handle lo, nb::handle hi, K& a, K& b) const {
        if constexpr (kIntKeys) {
            if (exact_i64(lo.ptr(), a) && exact_i64(hi.ptr(), b)) return !tree.empty() && a <= b;
        }
        if (tree.empty()) {
            check_timestamp(lo, nb::handle(), "t_from");
            check_timestamp(hi, lo, "t_to");
            return false;
        }
        nb::object r = ref();
        check_timestamp(lo, r, "t_from");
        check_timestamp(hi, r, "t_to");
        if constexpr (kIntKeys) {
            bool exact;
            int ra = int_bound(lo.ptr(), false, a, exact);
            int rb = int_bound(hi.ptr(), true, b, exact);
            if (ra == 2 || rb == 2) throw DeoptKeys{};
            if (ra > 0 || rb < 0) return false;
            if (ra < 0) a = std::numeric_limits<int64_t>::min();
            if (rb > 0) b = std::numeric_limits<int64_t>::max();
            return a <= b;
        } else {
            a = nb::borrow(lo);
            b = nb::borrow(hi);
            return !tree.less()(b, a);
        }
    }

    nb::object range_query(nb::handle lo, nb::handle hi) const override {
        K a, b;
        if (!bounds(lo, hi, a, b)) return lower(ad().identity());
        return lower(tree.range_query(a, b));
    }
    nb::object oldest() const override { return tree.empty() ? nb::none() : key_to_py(tree.oldest()); }
    nb::object youngest() const override { return tree.empty() ? nb::none() : key_to_py(tree.youngest()); }
    nb::list partials() const override {
        nb::list out;
        tree.for_each([&](const K& k, const P& p) { out.append(nb::make_tuple(key_to_py(k), ad().to_py(p))); });
        return out;
    }
    WINDOWAGG_COLD void check() const override {
        auto eq = [&](const P& x, const P& y) {
            nb::object a = ad().to_py(x), b = ad().to_py(y);
            if (a.ptr() == b.ptr()) return true;
            int r = PyObject_RichCompareBool(a.ptr(), b.ptr(), Py_EQ);
            if (r < 0) throw nb::python_error();
            if (r == 1) return true;
            // as the reference's check: windowagg._invariants.same (NaN equals NaN, also
            // inside tuples), e.g. a Sum of inf and -inf
            static PyObject* same = nb::object(nb::module_::import_("windowagg._invariants").attr("same")).release().ptr();
            return nb::cast<bool>(nb::handle(same)(a, b));
        };
        try {
            tree.check(eq);
        } catch (const windowagg::invariant_error& e) {
            raise("WindowaggError", e.what());
        }
    }

    // The next stage: a float64 first stage (F64SumAdapter, F64MaxAdapter, F64MinAdapter,
    // F64Composite2Adapter) -> its tagged adapter (int64 keys) -> GenericAdapter (int64 or
    // Python-object keys). The tree is copied node for node (assign_mapped), so its shape,
    // hence the order of every later combine, is what it would have been without the change.
    WINDOWAGG_COLD std::unique_ptr<FibaImpl> to_generic(bool object_keys) const override {
        if constexpr (requires { typename A::Tagged; }) {  // a float64 first stage
            if (!object_keys) {
                using T = typename A::Tagged;
                auto s = std::make_unique<FibaImplT<T, int64_t>>(monoid, T(monoid), mu);
                s->tree.assign_mapped(tree, [](int64_t k) { return k; }, [this](const P& p) {
                    if constexpr (requires { A::tagged(p); }) return A::tagged(p);
                    else return A::tagged_of(ad(), p);
                });
                return s;
            }
        }
        auto to_py = [this](const P& p) { return ad().to_py(p); };
        auto g_obj = [&] {
            auto g = std::make_unique<FibaImplT<GenericAdapter, ObjKey>>(monoid, GenericAdapter(monoid), mu);
            g->tree.assign_mapped(tree, [](const K& k) { return key_to_py(k); }, to_py);
            return std::unique_ptr<FibaImpl>(std::move(g));
        };
        if constexpr (!kIntKeys) {
            return g_obj();
        } else {
            if (object_keys) return g_obj();
            auto g = std::make_unique<FibaImplT<GenericAdapter, int64_t>>(monoid, GenericAdapter(monoid), mu);
            g->tree.assign_mapped(tree, [](int64_t k) { return k; }, to_py);
            return g;
        }
    }

    bool load(nb::handle ts_obj, nb::handle ps_obj) override {
        PyObject* ts = ts_obj.ptr();
        PyObject* ps = ps_obj.ptr();
        std::size_t n = static_cast<std::size_t>(PyTuple_GET_SIZE(ts));
        std::vector<K> keys;
        std::vector<P> parts;
        keys.reserve(n);
        parts.reserve(n);
        for (std::size_t i = 0; i < n; ++i) {
            PyObject* t = PyTuple_GET_ITEM(ts, static_cast<Py_ssize_t>(i));
            K k;
            if constexpr (kIntKeys) {
                if (!exact_i64(t, k)) return false;
            } else {
                k = nb::borrow(t);
            }
            P p;
            if (!ad().from_py(PyTuple_GET_ITEM(ps, static_cast<Py_ssize_t>(i)), p)) return false;
            keys.push_back(std::move(k));
            parts.push_back(std::move(p));
        }
        tree.assign_sorted(std::move(keys), std::move(parts));
        return true;
    }

    // Key i of a times argument (buffer or sequence), validated against `r`.
    void key_at(const Values& ts, std::size_t i, K& k, nb::handle r) const {
        if constexpr (kIntKeys) {
            if (ts.kind == Values::I64) { k = ts.i64[i]; return; }
            if (ts.kind == Values::SEQ && exact_i64(ts.item(i), k)) return;
        }
        store_key(ts.object(i), k, r);
    }

    void bulk_insert(const Values& ts, const Values& vs) override {
        const std::size_t n = ts.n;
        if (!n) return;
        nb::object r = ref();
        if (!r.ptr()) {
            r = ts.object(0);
            check_timestamp(r, nb::handle(), "timestamp");
        }
        std::vector<K> keys(n);
        std::vector<P> parts(n);
        bool sorted = true;
        for (std::size_t i = 0; i < n; ++i) {
            key_at(ts, i, keys[i], r);
            if (!vs.lift(ad(), i, parts[i])) lift_or_deopt(vs.object(i), parts[i]);
            if (i && sorted && tree.less()(keys[i], keys[i - 1])) sorted = false;
        }
        if (!sorted) {
            std::vector<std::size_t> order(n);
            std::iota(order.begin(), order.end(), std::size_t{0});
            std::stable_sort(order.begin(), order.end(),
                             [&](std::size_t a, std::size_t b) { return tree.less()(keys[a], keys[b]); });
            std::vector<K> k2;
            std::vector<P> p2;
            k2.reserve(n);
            p2.reserve(n);
            for (std::size_t j : order) {
                k2.push_back(std::move(keys[j]));
                p2.push_back(std::move(parts[j]));
            }
            keys.swap(k2);
            parts.swap(p2);
        }
        tree.bulk_insert_sorted(keys, parts);
    }

    void range_query_many(const Values& lo, const Values& hi, Out& out) const override {
        for (std::size_t i = 0; i < lo.n; ++i) {
            if constexpr (kIntKeys) {
                if (lo.kind == Values::I64 && hi.kind == Values::I64) {
                    int64_t a = lo.i64[i], b = hi.i64[i];
                    out.put(ad(), i, a <= b ? tree.range_query(a, b) : ad().identity());
                    continue;
                }
            }
            K a, b;
            nb::object l = lo.object(i), h = hi.object(i);
            if (!bounds(l, h, a, b)) {
                out.put(ad(), i, ad().identity());
                continue;
            }
            out.put(ad(), i, tree.range_query(a, b));
        }
    }

    void slide(const Values& ts, const Values& vs, const Values* upto, Out& out, SlideProgress& pr) override {
        const std::size_t n = ts.n;
        if constexpr (kIntKeys && !A::generic) {
            if (ts.kind == Values::I64 && vs.kind != Values::SEQ && (!upto || upto->kind == Values::I64)) {
                // numeric buffers: a first pass only validates (lifting is deterministic),
                // the second lifts again as it goes; no per-event allocation
                for (std::size_t i = pr.i; i < n; ++i) {
                    P p;
                    if (!vs.lift(ad(), i, p)) lift_or_deopt(vs.object(i), p);
                }
                for (; pr.i < n; ++pr.i, pr.evicted = false, pr.inserted = false) {
                    if (upto && !pr.evicted) {
                        tree.bulk_evict(upto->i64[pr.i]);
                        pr.evicted = true;
                    }
                    if (!pr.inserted) {
                        P p{};
                        vs.lift(ad(), pr.i, p);
                        tree.insert(ts.i64[pr.i], std::move(p));
                        pr.inserted = true;
                    }
                    out.put(ad(), pr.i, tree.query());
                }
                return;
            }
        }
        // validate every timestamp and lift every value before anything changes
        nb::object r = ref();
        if (!r.ptr() && pr.i < n) {
            r = ts.object(pr.i);
            check_timestamp(r, nb::handle(), "timestamp");
        }
        std::vector<K> keys(n - pr.i);
        std::vector<P> parts(n - pr.i);
        std::vector<K> ups(upto ? n - pr.i : 0);
        std::vector<int> up_kind(upto ? n - pr.i : 0);  // 0 key, -1 nothing, +1 everything
        for (std::size_t i = pr.i; i < n; ++i) {
            key_at(ts, i, keys[i - pr.i], r);
            if (!vs.lift(ad(), i, parts[i - pr.i])) lift_or_deopt(vs.object(i), parts[i - pr.i]);
            if (upto) {
                K& u = ups[i - pr.i];
                if constexpr (kIntKeys) {
                    if (upto->kind == Values::I64) { u = upto->i64[i]; continue; }
                    if (upto->kind == Values::SEQ && exact_i64(upto->item(i), u)) continue;
                    nb::object o = upto->object(i);
                    check_timestamp(o, r, "timestamp");
                    bool exact;
                    int rc = int_bound(o.ptr(), true, u, exact);
                    if (rc == 2) throw DeoptKeys{};
                    if (rc != 0) up_kind[i - pr.i] = rc;
                } else {
                    store_key(upto->object(i), u, r);
                }
            }
        }
        for (; pr.i < n; ++pr.i, pr.evicted = false, pr.inserted = false) {
            std::size_t j = pr.i - (n - keys.size());
            if (upto && !pr.evicted) {
                if (up_kind[j] == 0) tree.bulk_evict(ups[j]);
                else if (up_kind[j] > 0 && !tree.empty()) tree.bulk_evict(tree.youngest());
                pr.evicted = true;
            }
            if (!pr.inserted) {
                tree.insert(keys[j], parts[j]);
                pr.inserted = true;
            }
            out.put(ad(), pr.i, tree.query());
        }
    }
};

// The 17 trees are compiled in three translation units of similar cost, so that the two
// cores of a small machine build them side by side: fiba_trees_f64.cpp, fiba_trees_num.cpp,
// fiba_trees_other.cpp each hold the explicit instantiations of their share (`template
// struct FibaImplT<...>`); every other file, bind_fiba.cpp included, only refers to them.
// A tree added to make_fiba_impl or to_generic needs a line here and one in a fiba_trees_*.cpp
// (without it the module fails to import: undefined symbol).
extern template struct FibaImplT<F64SumAdapter, int64_t>;  // fiba_trees_f64.cpp
extern template struct FibaImplT<F64MaxAdapter, int64_t>;
extern template struct FibaImplT<F64MinAdapter, int64_t>;
extern template struct FibaImplT<F64Composite2Adapter, int64_t>;
extern template struct FibaImplT<CompositeAdapterT<2>, int64_t>;
extern template struct FibaImplT<SumAdapter, int64_t>;  // fiba_trees_num.cpp
extern template struct FibaImplT<MaxAdapter, int64_t>;
extern template struct FibaImplT<MinAdapter, int64_t>;
extern template struct FibaImplT<CountAdapter, int64_t>;
extern template struct FibaImplT<MeanAdapter, int64_t>;
extern template struct FibaImplT<KindAdapter, int64_t>;
extern template struct FibaImplT<FirstAdapter, int64_t>;  // fiba_trees_other.cpp
extern template struct FibaImplT<LastAdapter, int64_t>;
extern template struct FibaImplT<ArgAdapter, int64_t>;
extern template struct FibaImplT<CompositeAdapter, int64_t>;
extern template struct FibaImplT<GenericAdapter, int64_t>;
extern template struct FibaImplT<GenericAdapter, ObjKey>;

inline std::unique_ptr<FibaImpl> make_fiba_impl(nb::handle monoid, int mu, bool generic, bool object_keys) {
    if (object_keys) return std::make_unique<FibaImplT<GenericAdapter, ObjKey>>(monoid, GenericAdapter(monoid), mu);
    if (generic) return std::make_unique<FibaImplT<GenericAdapter, int64_t>>(monoid, GenericAdapter(monoid), mu);
    const Builtins& b = builtins();
    PyObject* t = declared_type(monoid);  // the declared kind, not the exact type
    if (t == b.Sum)  // first stage: floats only
        return std::make_unique<FibaImplT<F64SumAdapter, int64_t>>(monoid, F64SumAdapter(monoid), mu);
    if (t == b.Max)
        return std::make_unique<FibaImplT<F64MaxAdapter, int64_t>>(monoid, F64MaxAdapter(monoid), mu);
    if (t == b.Min)
        return std::make_unique<FibaImplT<F64MinAdapter, int64_t>>(monoid, F64MinAdapter(monoid), mu);
    if (t == b.Composite && F64Composite2Adapter::supports(monoid))
        return std::make_unique<FibaImplT<F64Composite2Adapter, int64_t>>(monoid, F64Composite2Adapter(monoid), mu);
    if (t == b.Composite && CompositeAdapterT<2>::supports(monoid))
        return std::make_unique<FibaImplT<CompositeAdapterT<2>, int64_t>>(monoid, CompositeAdapterT<2>(monoid), mu);
    return visit_adapter(monoid, [&](auto a) -> std::unique_ptr<FibaImpl> {
        using A = decltype(a);
        return std::make_unique<FibaImplT<A, int64_t>>(monoid, std::move(a), mu);
    });
}

// Owner of a FibaImpl: runs each operation, deoptimising (values, then keys) as asked.
// impl is null once the garbage collector cleared the window (gc.hpp). Every call through
// run() holds `guard` (call_guard.hpp): the tree is mid-restructuring while its monoid's
// methods run, so any call from inside them on the same thread raises StateError (reads
// too, except len() and the ends, which read no aggregate), and a call from another thread
// waits for the running one. `busy` is true while run() runs (the GC slots read it).
struct FibaHandle {
    std::unique_ptr<FibaImpl> impl;
    bool busy = false;
    mutable CallGuard guard{};

    // The tree, for a read that runs no Python code (len, the ends): after the call that
    // another thread is running, if any.
    FibaImpl& get() const {
        wait_other_threads(guard);
        if (!impl) [[unlikely]]
            cleared("ooo.FiBA");
        return *impl;
    }
    void traverse(GcVisit& v) const {
        if (impl && !busy) impl->traverse(v);
    }
    // Drop the tree (and with it every Python reference) unless an operation runs; the
    // pointer is null before the tree's destructor runs Python code.
    void clear() {
        if (busy) return;
        std::unique_ptr<FibaImpl> gone = std::move(impl);
    }

    template <class F>
    decltype(auto) run(F&& f) {
        if (guard.depth && guard.owner == this_thread())
            raise("StateError",
                  "ooo.FiBA: re-entrant call (a monoid method or a timestamp's comparison called back into the "
                  "same window, which is mid-restructuring there); do not use the window from inside its own "
                  "monoid: collect what to do and do it after the outer call returns");
        Enter e(guard, Access::Write, "FiBA", "call", "ooo.");
        get();
        struct Guard {
            bool& b;
            ~Guard() { b = false; }
        } busy_guard{busy};
        busy = true;
        for (;;) {
            try {
                if (impl->stale()) [[unlikely]]
                    impl->refresh();
                return f(*impl);
            } catch (const Deopt&) {
                if (impl->generic())
                    raise_builtin(PyExc_RuntimeError, "windowagg native core: generic FiBA deoptimised");
                impl = impl->to_generic(false);
            } catch (const DeoptKeys&) {
                if (!impl->int_keys())
                    raise_builtin(PyExc_RuntimeError, "windowagg native core: object-key FiBA deoptimised");
                impl = impl->to_generic(true);
            }
        }
    }
};

}  // namespace windowagg::py
