// TwoStacksLite: Two-Stacks with one running aggregate for the whole back stack.
//
//   ordering        FIFO (in-order)
//   operator needs  monoid; neither commutative nor invertible
//   insert          O(1) worst case: 1 combine
//   evict           amortized O(1); worst case O(n): a flip costs n - 1 combines
//   query           O(1) worst case: at most 1 combine
//   bulk_evict(k)   O(k) pops, plus a flip of the survivors when k passes the front
//   space           n partials + at most n front aggregates + 1
//   paper           Tangwongsan, Hirzel, Schneider, "In-order sliding-window aggregation
//                   in worst-case constant time", VLDB Journal 2021 (Two-Stacks Lite)
//
// The twin of windowagg/fifo/two_stacks_lite.py, combine for combine (same operands in the
// same order, so float results are equal bit for bit): a monoid that declares itself
// commutative folds a flip as acc (x) older, any other as older (x) acc. Strong exception
// guarantee: a flip is computed into a scratch stack before it replaces the front.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "windowagg/fold_check.hpp"
#include "windowagg/monoid.hpp"
#include "windowagg/ring.hpp"

namespace windowagg {

template <Monoid M>
struct TwoStacksLite {
    using P = typename M::partial_type;
    M m;
    bool comm;
    Ring<P> vals;              // every partial, oldest first
    std::vector<P> front;      // front aggregates, the oldest (whole front) on top (back)
    std::vector<P> scratch;    // a flip is built here, then swapped in
    P agg_b;                   // fold of the back stack (the vals not covered by front)

    explicit TwoStacksLite(M m_) : m(std::move(m_)), comm(is_commutative(m)), agg_b(m.identity()) {}

    // A copy over another monoid, every stored partial mapped through f (same layout).
    template <class M2, class F>
    TwoStacksLite(M m_, const TwoStacksLite<M2>& o, F&& f)
        : m(std::move(m_)), comm(is_commutative(m)), vals(Ring<typename M2::partial_type>::template map<P>(o.vals, f)),
          agg_b(f(o.agg_b)) {
        front.reserve(o.front.size());
        for (const auto& x : o.front) front.push_back(f(x));
    }

    std::size_t size() const { return vals.size(); }
    const P& oldest() const { return vals.front(); }
    const P& youngest() const { return vals.back(); }
    template <class Fn> void for_each(Fn&& fn) const {
        for (std::size_t i = 0; i < vals.size(); ++i) fn(vals[i]);
    }
    // fn(x) for the monoid and every partial held (scratch included), once each: the
    // binding's garbage-collector traversal. O(n).
    template <class Fn> void for_each_owned(Fn&& fn) const {
        fn(m);
        vals.for_each(fn);
        for (const P& x : front) fn(x);
        for (const P& x : scratch) fn(x);
        fn(agg_b);
    }

    void insert(P p) {
        vals.reserve_one();
        P nb = m.combine(agg_b, p);
        agg_b = std::move(nb);
        vals.push_back(std::move(p));
    }

    // Front aggregates of the youngest `count` partials into scratch (youngest first).
    void build_front(std::size_t count) {
        scratch.clear();
        scratch.reserve(count);
        std::size_t n = vals.size();
        for (std::size_t j = 0; j < count; ++j) {
            const P& older = vals[n - 1 - j];
            if (j == 0) scratch.push_back(older);
            else scratch.push_back(comm ? m.combine(scratch.back(), older) : m.combine(older, scratch.back()));
        }
    }

    // precondition: size() > 0
    void evict() {
        if (front.empty()) {
            build_front(vals.size());
            front.swap(scratch);
            scratch.clear();
            agg_b = m.identity();
        }
        front.pop_back();
        vals.discard_front();
    }

    // precondition: k <= size()
    void bulk_evict(std::size_t k) {
        if (k == 0) return;
        std::size_t nf = front.size();
        if (k > nf) {
            build_front(vals.size() - k);  // the survivors' aggregates, before any change
            for (std::size_t i = 0; i < k; ++i) vals.discard_front();
            front.swap(scratch);
            scratch.clear();
            agg_b = m.identity();
            return;
        }
        for (std::size_t i = 0; i < k; ++i) vals.discard_front();
        front.resize(nf - k);
    }

    P query() const { return front.empty() ? agg_b : m.combine(front.back(), agg_b); }

    static constexpr bool atomic_bulk_evict = true;  // bulk_evict changes nothing if it throws

    template <class Eq>
    WINDOWAGG_COLD std::string check(Eq&& eq) const {
        std::size_t nf = front.size(), n = vals.size();
        if (nf > n) return std::to_string(nf) + " front aggregates for only " + std::to_string(n) + " partials";
        P acc = m.identity();
        for (std::size_t d = 0; d < nf; ++d) {
            const P& older = vals[nf - 1 - d];
            acc = d == 0 ? older : (comm ? m.combine(acc, older) : m.combine(older, acc));
            if (!eq(front[d], acc)) return "front agg at depth " + std::to_string(d);
        }
        if (!eq(agg_b, fold_range(m, vals, nf, n))) return "agg_b != fold of the back stack";
        return {};
    }
};

}  // namespace windowagg
