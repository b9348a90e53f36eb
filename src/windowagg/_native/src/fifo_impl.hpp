// The type-erased FIFO aggregator behind _core.TwoStacksLite, DABALite, DABA and AMTA:
// FifoImpl is the interface (one virtual call per operation), FifoImplT<Alg, A> runs the
// algorithm template Alg over adapter A. A numeric adapter that meets a value or result it
// cannot hold throws Deopt before changing anything; the owner (FifoHandle) then replaces
// the implementation by the same algorithm over GenericAdapter, partial for partial and
// with the same layout, and redoes the operation there.
#pragma once

#include <nanobind/nanobind.h>

#include <cmath>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "adapters.hpp"
#include "call_guard.hpp"
#include "inputs.hpp"
#include "minmax_f64.hpp"
#include "slices.hpp"
#include "sum_f64.hpp"

namespace windowagg::py {

// Thrown after an operation completed whose structure is right but whose cached aggregates
// could not be recomputed natively (AMTA's `dirty`): deoptimise, do not redo the operation.
struct DeoptAfter {};

// Progress of an array verb, so that it resumes exactly where a Deopt stopped it.
struct Progress {
    std::size_t i = 0;        // current step
    std::size_t evicted = 0;  // evictions done in step i
    bool inserted = false;    // step i's insert done
    // For the error path (slide is all or nothing): the window's size at the call, the
    // evictions of the steps before i, how many of the window's entries were recorded, and
    // those entries (oldest first, as Python objects: an implementation records them typed
    // and moves them here when anything leaves it, a Deopt included).
    std::size_t n0 = 0, ev_before = 0, recorded = 0;
    nb::list gone;
};

// Thrown by a bulk eviction that raised part-way and whose undo raised too: the window
// keeps the evictions done (consistent); `first` is the error that stopped the evictions.
// The binding raises StateError from it (see fifo_bind.hpp, undo_failed).
struct UndoFailed {
    nb::python_error first;
};

struct FifoImpl {
    virtual ~FifoImpl() = default;
    virtual std::size_t size() const = 0;
    virtual void insert(nb::handle v) = 0;
    virtual void evict() = 0;
    // Evict k entries, `done` of them already evicted (resumable after a Deopt). A Python
    // error changes nothing, `done` included.
    virtual void bulk_evict(std::size_t k, std::size_t& done) = 0;
    virtual nb::object query() const = 0;
    virtual nb::object oldest() const = 0;
    virtual nb::object youngest() const = 0;
    virtual nb::list partials() const = 0;
    virtual nb::object aggregate() const = 0;    // the window's partial aggregate
    virtual nb::object amta_state() const = 0;   // AMTA: (R0, R1, S bottom first)
    virtual std::string check() const = 0;
    virtual bool generic() const = 0;
    virtual std::unique_ptr<FifoImpl> to_generic() const = 0;
    // An empty window of the same algorithm, parameters and adapter (error path: rebuilt).
    virtual std::unique_ptr<FifoImpl> empty() const = 0;
    virtual void bulk_insert(const Values& v, std::size_t& i) = 0;
    virtual void slide(const Values& v, const Counts& c, Out& out, Progress& pr) = 0;
    // query() of a fresh window of the same algorithm holding values[lo[i]:hi[i]], for
    // every window i, into out; this window is neither read nor changed.
    virtual void query_slices(const Values& v, const Slices& s, Out& out) const = 0;
    // Append the twin's partials (no lift); false at the first one this adapter cannot read.
    virtual bool load(nb::handle partials, std::size_t& i) = 0;
    // Visit every Python reference held (gc.hpp); never during an operation.
    virtual void traverse(GcVisit& v) const = 0;
};

template <class Alg>
inline constexpr bool atomic_bulk_evict_v = requires { requires Alg::atomic_bulk_evict; };

// An adapter that declares gil_free (adapters.hpp): its slides over float64 buffers may run
// without the GIL.
template <class A>
concept GilFree = requires { requires A::gil_free; };

// A float64 first stage (F64SumAdapter, F64MaxAdapter, F64MinAdapter): partial = double,
// combine never throws, and the next stage is the tagged adapter A::Tagged.
template <class A>
concept F64Stage = std::is_same_v<typename A::partial_type, double> && nothrow_combine_v<A> &&
                   requires(double p) { A::tagged(p); };

template <template <class> class Alg, class A>
struct FifoImplT final : FifoImpl {
    using P = typename A::partial_type;
    nb::object monoid;
    Alg<A> alg;

    template <class... X>
    FifoImplT(nb::handle m, A a, X&&... x) : monoid(nb::borrow(m)), alg(std::move(a), std::forward<X>(x)...) {}
    FifoImplT(nb::handle m, Alg<A>&& x) : monoid(nb::borrow(m)), alg(std::move(x)) {}

    const A& ad() const { return alg.m; }

    // After a completed mutation: an algorithm left `dirty` asks to be deoptimised now.
    void settle() const {
        if constexpr (requires { alg.dirty; })
            if (alg.dirty) throw DeoptAfter{};
    }

    // Lift x, or (when the adapter cannot) run the twin's lift so that a value it refuses
    // raises here, unchanged and native; a value it accepts deoptimises.
    void lift_or_deopt(nb::handle x, P& p) const {
        if (ad().lift(x, p)) return;
        nb::object probe = GenericAdapter::call1(nb::object(monoid.attr("lift")), x.ptr());
        (void)probe;
        throw Deopt{};
    }

    std::size_t size() const override { return alg.size(); }
    void traverse(GcVisit& v) const override {
        v(monoid);
        alg.for_each_owned(v);
    }
    void insert(nb::handle v) override {
        P p;
        lift_or_deopt(v, p);
        alg.insert(std::move(p));
        settle();
    }
    void evict() override {
        alg.evict();
        settle();
    }
    void bulk_evict(std::size_t k, std::size_t& done) override {
        if constexpr (atomic_bulk_evict_v<Alg<A>>) {
            if (done < k) {
                alg.bulk_evict(k - done);
                done = k;
                settle();
            }
        } else {
            evict_loop(k, done);
        }
    }

    // bulk_evict for an algorithm without an atomic bulk form (DABA, DABALite): single
    // evictions, atomic as windowagg.fifo.base._FifoBase.bulk_evict. A failed evict()
    // changes nothing (every combine runs before its first mutation); the ones done
    // before it are undone by rebuilding the window from the evicted partials and the
    // rest (O(n) combines, on the error path only). As in the reference, more than one
    // eviction first runs query(): if even that raises, the window holds entries its
    // combine refuses and could not be rebuilt, so the evictions run on an O(n) copy that
    // replaces the window only when all of them succeed. A Deopt (a numeric adapter's
    // checked combine) keeps the evictions done so far: the owner deoptimises and
    // resumes at `done`. Only the generic adapter raises Python errors, and a window
    // deoptimised part-way holds numbers that the built-in monoids' Python combines
    // accept, so the evictions undone are always all of them.
    void evict_loop(std::size_t k, std::size_t& done) {
        if (done >= k) return;
        if constexpr (A::generic) {
            if (k - done > 1) {
                bool refused = false;
                try {
                    (void)ad().lower(alg.query());
                } catch (const nb::python_error&) {
                    refused = true;
                }
                if (refused) {
                    Alg<A> twin(alg);
                    for (std::size_t i = done; i < k; ++i) twin.evict();
                    alg = std::move(twin);
                    done = k;
                    return;
                }
            }
        }
        if constexpr (!A::generic) {  // a numeric combine throws only Deopt, before any change
            while (done < k) {
                alg.evict();
                ++done;
                settle();
            }
            return;
        }
        std::vector<P> gone;
        gone.reserve(k - done);
        try {
            while (done < k) {
                P p = alg.oldest();
                alg.evict();
                gone.push_back(std::move(p));
                ++done;
                settle();
            }
        } catch (const Deopt&) {
            throw;
        } catch (const DeoptAfter&) {
            throw;
        } catch (nb::python_error& e) {
            if (!gone.empty()) {
                std::size_t had = gone.size();
                try {
                    Alg<A> fresh(alg.m);
                    for (P& p : gone) fresh.insert(std::move(p));
                    alg.for_each([&](const P& p) { fresh.insert(p); });
                    alg = std::move(fresh);
                } catch (nb::python_error&) {
                    // the rebuild refused too: the evictions stay done (windowagg.fifo._verbs)
                    throw UndoFailed{std::move(e)};
                }
                done -= had;
            }
            throw;
        }
    }
    std::unique_ptr<FifoImpl> empty() const override { return std::make_unique<FifoImplT>(monoid, fresh()); }

    // fn(p) for the k oldest partials, oldest first. O(k).
    template <class Fn>
    void for_head(std::size_t k, Fn&& fn) const {
        if constexpr (requires { alg.vals; }) {
            for (std::size_t j = 0; j < k && j < alg.vals.size(); ++j) fn(alg.vals[j]);
        } else {  // AMTA: the leaves are the pairs of level 0
            if (alg.lv.empty()) return;
            for (std::size_t j = 0; k && j < alg.lv[0].size(); ++j) {
                const auto& p = alg.lv[0][j];
                if (p.ha && k) { fn(p.a); --k; }
                if (p.hb && k) { fn(p.b); --k; }
            }
        }
    }

    nb::object query() const override { return ad().lower(alg.query()); }
    nb::object oldest() const override { return ad().to_py(alg.oldest()); }
    nb::object youngest() const override { return ad().to_py(alg.youngest()); }
    nb::list partials() const override {
        nb::list out;
        alg.for_each([&](const P& p) { out.append(ad().to_py(p)); });
        return out;
    }
    nb::object aggregate() const override { return ad().to_py(alg.query()); }
    nb::object amta_state() const override {
        if constexpr (requires { alg.S; alg.R0; }) {
            nb::list s;
            for (const P& x : alg.S) s.append(ad().to_py(x));
            return nb::make_tuple(ad().to_py(alg.R0), ad().to_py(alg.R1), s);
        } else {
            raise_builtin(PyExc_TypeError, "not an AMTA");
        }
    }
    WINDOWAGG_COLD std::string check() const override {
        // windowagg._invariants.close, as the reference's _check: NaN equals NaN, and a
        // float may differ from a refold in another association by the Slack of the
        // window's partials (4 n 2^-52 (sum |p| + max(|a|, |b|))); ints and other exact
        // values compare with ==.
        nb::module_ inv = nb::module_::import_("windowagg._invariants");
        nb::object close = inv.attr("close"), slack = inv.attr("Slack")(partials());
        auto eq = [&](const P& x, const P& y) {
            nb::object a = ad().to_py(x), b = ad().to_py(y);
            nb::object r = close(a, b, slack);
            int t = PyObject_IsTrue(r.ptr());
            if (t < 0) throw_if_error();
            return t == 1;
        };
        return alg.check(eq);
    }
    bool generic() const override { return A::generic; }
    // The next stage: a float64 first stage -> its tagged adapter -> GenericAdapter, the
    // window copied partial for partial with the same layout (so the same later combines).
    WINDOWAGG_COLD std::unique_ptr<FifoImpl> to_generic() const override {
        if constexpr (F64Stage<A>) {
            using T = typename A::Tagged;
            Alg<T> x(T(monoid), alg, [](double p) { return A::tagged(p); });
            return std::make_unique<FifoImplT<Alg, T>>(monoid, std::move(x));
        }
        GenericAdapter g(monoid);
        const A& a = ad();
        Alg<GenericAdapter> x(g, alg, [&](const P& p) { return a.to_py(p); });
        return std::make_unique<FifoImplT<Alg, GenericAdapter>>(monoid, std::move(x));
    }
    void bulk_insert(const Values& v, std::size_t& i) override {
        while (i < v.n) {
            P p;
            if (!v.lift(ad(), i, p)) lift_or_deopt(v.object(i), p);
            alg.insert(std::move(p));
            ++i;
            settle();
        }
    }
    // The window's entries that step pr.i evicts (e in all) and that no earlier run
    // recorded, into `gone` (O(their number)): the error path rebuilds the window from them.
    void record(std::size_t e, const Progress& pr, std::vector<P>& gone, std::size_t& recorded) const {
        std::size_t front = pr.ev_before + pr.evicted;  // the window's index of the oldest held
        std::size_t upto = std::min(pr.n0, pr.ev_before + e);
        if (upto <= recorded) return;
        std::size_t skip = recorded - front;  // recorded >= front while front < n0
        for_head(upto - front, [&](const P& p) {
            if (skip) --skip;
            else gone.push_back(p);
        });
        recorded = upto;
    }
    void slide(const Values& v, const Counts& c, Out& out, Progress& pr) override {
        if constexpr (F64Stage<A>) {
            if (v.kind == Values::F64 && out.kind == Out::F64 && c.constant && c.k == 1 && !pr.i && !pr.evicted &&
                !pr.inserted) {
                slide_f64(v.f64, out, v.n, pr);
                return;
            }
        }
        std::vector<P> gone;  // the entries this run evicts from the window it found
        std::size_t recorded = pr.recorded;
        try {
            for (; pr.i < v.n; pr.ev_before += static_cast<std::size_t>(c.at(pr.i)), ++pr.i, pr.evicted = 0,
                               pr.inserted = false) {
                auto e = static_cast<std::size_t>(c.at(pr.i));
                if (recorded < pr.n0 && e > pr.evicted) record(e, pr, gone, recorded);
                if (e == 1 && pr.evicted == 0) {  // as the reference: evict(), else bulk_evict(e)
                    alg.evict();
                    pr.evicted = 1;
                    settle();
                } else {
                    bulk_evict(e, pr.evicted);
                }
                if (!pr.inserted) {
                    P p;
                    if (!v.lift(ad(), pr.i, p)) lift_or_deopt(v.object(pr.i), p);
                    alg.insert(std::move(p));
                    pr.inserted = true;
                    settle();
                }
                out.put(ad(), pr.i, alg.query());
            }
        } catch (...) {
            for (const P& p : gone) pr.gone.append(ad().to_py(p));
            pr.recorded = recorded;
            throw;
        }
    }
    // slide(values, 1, out) over float64 buffers on a float64 first stage, from step 0: the
    // loop above with nothing that cannot happen here (no Deopt: lift_f64 accepts every
    // float or raises the twin's MonoidInputError; combine never throws; no per-step count
    // or kind dispatch). Same operations in the same order, so the same answers. Every
    // value is lifted first (a check per value, no store): when one is refused, the entries
    // that the steps before it evict are recorded (pr.gone), those steps run (out holds
    // their answers, as the reference's), and the lift raises; the binding then undoes the
    // steps (all or nothing). Flattened: g++ kept DABALite's insert and evict out of line
    // here (perf, 2026-11-27); inlined into the loop, DABALite's slide of 3M events at
    // w = 10^6 went from 56.5 to 67.4M events/s (Sum) and 60.2 to 68.2M (Max), medians of 5
    // alternating processes.
    WINDOWAGG_NOINLINE WINDOWAGG_FLATTEN void slide_f64(const double* x, Out& out, std::size_t n, Progress& pr) {
        const A& a = ad();
        double* o = out.f64;
        std::size_t stop = 0;
        try {
            for (; stop < n; ++stop) {
                double p;
                a.lift_f64(x[stop], p);
            }
        } catch (nb::python_error&) {
            // error path: lifted again at step `stop` below, where the reference raises
        }
        if (stop < n) {
            std::size_t k = std::min(stop, pr.n0);
            for_head(k, [&](const double& p) { pr.gone.append(a.to_py(p)); });
            pr.recorded = k;
        }
        for (std::size_t i = 0; i < stop; ++i) {
            alg.evict();
            double p;
            a.lift_f64(x[i], p);
            alg.insert(p);
            double q = alg.query();
            if (A::is_id(q)) [[unlikely]]
                out.put(a, i, q);  // not reached (the window holds x[i]); the general rule
            else
                o[i] = q;
        }
        pr.i = stop;
        if (stop < n) {
            double p;
            a.lift_f64(x[stop], p);  // raises (it did above)
        }
    }
    // An empty window of the same algorithm and parameters.
    Alg<A> fresh() const {
        if constexpr (requires { alg.bulk_after; }) return Alg<A>(alg.m, alg.bulk_after);
        else return Alg<A>(alg.m);
    }
    // The windows are slices with non-decreasing bounds, so one scratch window slides over
    // them: per window evict what left (evict() for one, bulk_evict for more, as slide()),
    // insert what entered, query; a window that starts at or after the end of what is held
    // starts a fresh scratch (the events between two disjoint windows are never inserted).
    // The Python reference (windowagg/fifo/_verbs.py) runs the same operations in the same
    // order (the same combines and lowers, tests/fifo/test_query_slices_counts.py), so
    // answers are equal bit for bit. A Deopt (a numeric adapter meeting what it
    // cannot hold, or AMTA's cached aggregates going `dirty`) leaves this window as it was:
    // the owner deoptimises it and the call starts again on the generic path.
    //
    // A gil_free adapter over a float64 buffer into a numeric out buffer first runs the same
    // operations without the GIL (query_slices_nogil: other threads' numpy and native work
    // runs meanwhile, the windows engine's key groups, issue 40); a step that needs Python
    // makes it start over here, with the GIL.
    void query_slices(const Values& v, const Slices& s, Out& out) const override {
        if constexpr (GilFree<A>) {
            if (v.kind == Values::F64 && out.kind != Out::LIST) {
                bool done;
                {
                    nb::gil_scoped_release release;
                    done = query_slices_nogil(v.f64, s, out);
                }
                if (done) return;
            }
        }
        if (out.kind == Out::LIST) out.list = nb::list();  // a restart after a Deopt
        Alg<A> w = fresh();
        auto settle_w = [&w] {
            if constexpr (requires { w.dirty; })
                if (w.dirty) throw Deopt{};
        };
        int64_t held_lo = 0, held_hi = 0;
        for (std::size_t i = 0; i < s.r; ++i) {
            int64_t a = s.lo[i], b = s.hi[i];
            if (a >= held_hi) {
                if (held_hi > held_lo) w = fresh();
                held_lo = held_hi = a;
            } else if (a > held_lo) {
                auto k = static_cast<std::size_t>(a - held_lo);
                if (k == 1) w.evict();
                else if constexpr (atomic_bulk_evict_v<Alg<A>>) w.bulk_evict(k);
                else {
                    // the reference's bulk_evict(k > 1) of DABA / DABALite: one query()
                    // first (its error only chooses where the evictions run), then k
                    // evictions. Only a Python monoid can tell the combine and lower apart.
                    if constexpr (A::generic) {
                        try {
                            (void)ad().lower(w.query());
                        } catch (nb::python_error& e) {
                            if (!e.matches(PyExc_Exception)) throw;
                        }
                    }
                    for (std::size_t j = 0; j < k; ++j) w.evict();
                }
                settle_w();
                held_lo = a;
            }
            for (; held_hi < b; ++held_hi) {
                P p;
                auto at = static_cast<std::size_t>(held_hi);
                if (!v.lift(ad(), at, p)) lift_or_deopt(v.object(at), p);
                w.insert(std::move(p));
                settle_w();
            }
            out.put(ad(), i, w.query());
        }
    }
    // query_slices' loop without the GIL: the same evictions, inserts and queries in the
    // same order (the same answers, bit for bit), for a gil_free adapter. Runs no Python
    // code and touches no Python object: the bounds are Slices' copies (checked), x and
    // out are buffers held for the call (Values, Out), the window is a local. False, with
    // nothing to undo, at the first step that would need Python: a non-finite value (its
    // lift raises MonoidInputError), an answer only Python writes (None into float64, a
    // float into int64, a mean of big ints); the caller starts over with the GIL. A Deopt
    // (int64 overflow of a count) propagates; the GIL is back before it reaches the owner.
    bool query_slices_nogil(const double* x, const Slices& s, Out& out) const {
        Alg<A> w = fresh();
        auto settle_w = [&w] {
            if constexpr (requires { w.dirty; })
                if (w.dirty) throw Deopt{};
        };
        int64_t held_lo = 0, held_hi = 0;
        for (std::size_t i = 0; i < s.r; ++i) {
            int64_t a = s.lo[i], b = s.hi[i];
            if (a >= held_hi) {
                if (held_hi > held_lo) w = fresh();
                held_lo = held_hi = a;
            } else if (a > held_lo) {
                auto k = static_cast<std::size_t>(a - held_lo);
                if (k == 1) w.evict();
                else if constexpr (atomic_bulk_evict_v<Alg<A>>) w.bulk_evict(k);
                else
                    for (std::size_t j = 0; j < k; ++j) w.evict();
                settle_w();
                held_lo = a;
            }
            for (; held_hi < b; ++held_hi) {
                double xi = x[static_cast<std::size_t>(held_hi)];
                P p;
                if (!std::isfinite(xi) || !ad().lift_f64(xi, p)) return false;
                w.insert(std::move(p));
                settle_w();
            }
            Num r;
            if (!ad().lower_num(w.query(), r)) return false;
            if (out.kind == Out::F64 && r.tag != Num::NONE) out.f64[i] = r.as_double();
            else if (out.kind == Out::I64 && r.tag == Num::INT) out.i64[i] = r.i;
            else return false;  // Out::put_num would go through a Python object
        }
        return true;
    }
    bool load(nb::handle partials, std::size_t& i) override {
        std::size_t n = static_cast<std::size_t>(PyTuple_GET_SIZE(partials.ptr()));
        while (i < n) {
            P p;
            if (!ad().from_py(PyTuple_GET_ITEM(partials.ptr(), static_cast<Py_ssize_t>(i)), p)) return false;
            alg.insert(std::move(p));
            ++i;
            settle();
        }
        return true;
    }
};

// Owner of a FifoImpl: runs each operation, deoptimising once when it asks to. impl and
// monoid are null once the garbage collector cleared the window (gc.hpp); `who` names the
// class (static storage). Every entry point holds `guard` (call_guard.hpp) for its whole
// call, taken with enter(): a monoid may call back, or another thread may call, while an
// operation runs.
struct FifoHandle {
    std::unique_ptr<FifoImpl> impl;
    nb::object monoid;
    const char* who = "";
    CallGuard guard{};

    // Hold the guard for one call (see call_guard.hpp); verb names the method for errors.
    Enter enter(Access a, const char* verb) { return Enter(guard, a, who, verb, "fifo."); }

    FifoImpl& get() const {
        if (!impl) [[unlikely]]
            cleared(std::string("fifo.") + who);
        return *impl;
    }
    void traverse(GcVisit& v) const {
        v(monoid);
        if (impl && !guard.depth) impl->traverse(v);
    }
    // Drop every Python reference unless an operation runs; the fields are null before the
    // destructors run Python code.
    void clear() {
        if (guard.depth) return;
        std::unique_ptr<FifoImpl> gone = std::move(impl);
        nb::object m = std::move(monoid);
    }

    void deopt() {
        if (impl->generic()) raise_builtin(PyExc_RuntimeError, "windowagg native core: generic path deoptimised");
        impl = impl->to_generic();
    }
    // Run f(impl), under an Enter of the caller. Deopt: deoptimise and run it again
    // (nothing was changed). DeoptAfter: deoptimise; run again only a resumable f (an array
    // verb that tracks its progress). A read nested in another call of this thread (from a
    // callback) must leave impl in place for the outer call: it runs on a generic copy.
    template <class F>
    auto run(F&& f, bool resumable = false) -> decltype(f(*impl)) {
        using R = decltype(f(*impl));
        get();
        if (guard.depth > 1) [[unlikely]]
            return run_nested(f);
        for (;;) {
            try {
                return f(*impl);
            } catch (const Deopt&) {
                deopt();
            } catch (const DeoptAfter&) {
                deopt();
                if constexpr (std::is_void_v<R>) {
                    if (!resumable) return;
                }
            }
        }
    }
    template <class F>
    auto run_nested(F& f) -> decltype(f(*impl)) {
        std::unique_ptr<FifoImpl> copy;
        for (;;) {
            try {
                return f(copy ? *copy : *impl);
            } catch (const Deopt&) {
                copy = (copy ? *copy : *impl).to_generic();
            } catch (const DeoptAfter&) {
                copy = (copy ? *copy : *impl).to_generic();
            }
        }
    }
};

}  // namespace windowagg::py
