// DABA: the De-Amortized Banker's Aggregator.
//
//   ordering        FIFO (in-order)
//   operator needs  monoid; neither commutative nor invertible
//   insert          O(1) worst case: at most 4 combines (amortized O(1) ring growth)
//   evict           O(1) worst case: at most 3 combines
//   query           O(1) worst case: at most 1 combine
//   bulk_evict(k)   O(k) worst case: k evictions, at most 3k combines
//   space           3n partials (a value and an aggregate per entry, plus the partial kept
//                   for oldest/youngest/iteration)
//   paper           Tangwongsan, Hirzel, Schneider, "Low-Latency Sliding-Window Aggregation
//                   in Worst-Case Constant Time", DEBS 2017, section 4, Figs. 9-10
//
// The twin of windowagg/fifo/daba.py, step for step, with one ring per sublist:
//
//   front portion  fa[i] = v[i] (x) ... (x) v[B-1]    l_L  la[i] = v[i] (x) ... (x) v[R-1]
//   l_R            ra[i] = v[R] (x) ... (x) v[i]  (values rv)
//   l_A            aa[i] = v[i] (x) ... (x) v[B-1]    l_B  ba[i] = v[B] (x) ... (x) v[i] (values bv)
//
// Identity operands (an empty l_A or l_B) are skipped, never combined. Every combine of an
// operation runs before its first mutation: a combine that throws changes nothing.
#pragma once

#include <cstddef>
#include <string>

#include "windowagg/fold_check.hpp"
#include "windowagg/monoid.hpp"
#include "windowagg/ring.hpp"

namespace windowagg {

template <Monoid M>
struct DABA {
    using P = typename M::partial_type;
    M m;
    Ring<P> vals, fa, la, rv, ra, aa, bv, ba;

    explicit DABA(M m_) : m(std::move(m_)) {}

    template <class M2, class F>
    DABA(M m_, const DABA<M2>& o, F&& f) : m(std::move(m_)) {
        using R2 = Ring<typename M2::partial_type>;
        vals = R2::template map<P>(o.vals, f);
        fa = R2::template map<P>(o.fa, f);
        la = R2::template map<P>(o.la, f);
        rv = R2::template map<P>(o.rv, f);
        ra = R2::template map<P>(o.ra, f);
        aa = R2::template map<P>(o.aa, f);
        bv = R2::template map<P>(o.bv, f);
        ba = R2::template map<P>(o.ba, f);
    }

    std::size_t size() const { return vals.size(); }
    const P& oldest() const { return vals.front(); }
    const P& youngest() const { return vals.back(); }
    template <class Fn> void for_each(Fn&& fn) const {
        for (std::size_t i = 0; i < vals.size(); ++i) fn(vals[i]);
    }
    // fn(x) for the monoid and every partial held, once each (garbage-collector traversal). O(n).
    template <class Fn> void for_each_owned(Fn&& fn) const {
        fn(m);
        for (const Ring<P>* r : {&vals, &fa, &la, &rv, &ra, &aa, &bv, &ba}) r->for_each(fn);
    }

    void reserve_all() {
        vals.reserve_one(); fa.reserve_one(); la.reserve_one(); rv.reserve_one(); ra.reserve_one();
        aa.reserve_one(); bv.reserve_one(); ba.reserve_one();
    }

    // The shrink's two new aggregates: Σ_L (x) Σ_R (x) Σ_A and v[A-1] (x) Σ_A.
    void shrink_aggs(P& new_f, P& new_a) const {
        if (!aa.empty()) {
            const P& s_a = aa.front();
            new_f = m.combine(m.combine(la.front(), ra.back()), s_a);
            new_a = m.combine(rv.back(), s_a);
        } else {
            new_f = m.combine(la.front(), ra.back());
            new_a = rv.back();
        }
    }

    void insert(P p) {
        reserve_all();
        P agg = ba.empty() ? p : m.combine(ba.back(), p);
        if (!la.empty()) {  // shrink
            P new_f, new_a;
            shrink_aggs(new_f, new_a);
            la.discard_front();
            ra.discard_back();
            rv.discard_back();
            vals.push_back(p);
            ba.push_back(std::move(agg));
            bv.push_back(std::move(p));
            fa.push_back(std::move(new_f));
            aa.push_front(std::move(new_a));
            return;
        }
        if (!aa.empty()) {  // shift
            vals.push_back(p);
            ba.push_back(std::move(agg));
            bv.push_back(std::move(p));
            fa.push_back(aa.pop_front());
            return;
        }
        if (fa.empty()) {  // singleton
            vals.push_back(p);
            fa.push_back(std::move(p));
            return;
        }
        // flip (front portion -> l_L, l_B -> l_R), then the shrink
        P new_f = m.combine(fa.front(), agg);
        vals.push_back(p);
        fa.discard_front();
        fa.swap(la);  // l_L = rest of the front portion; fa = an empty ring
        fa.push_back(std::move(new_f));
        ra.swap(ba);  // l_R aggregates = old l_B aggregates; ba = empty
        rv.swap(bv);  // l_R values = old l_B values; bv = empty
        aa.push_front(std::move(p));
    }

    // precondition: size() > 0
    void evict() {
        reserve_all();
        if (!la.empty()) {  // shrink
            P new_f, new_a;
            shrink_aggs(new_f, new_a);
            la.discard_front();
            ra.discard_back();
            rv.discard_back();
            vals.discard_front();
            fa.discard_front();
            fa.push_back(std::move(new_f));
            aa.push_front(std::move(new_a));
            return;
        }
        if (!aa.empty()) {  // shift
            vals.discard_front();
            fa.discard_front();
            fa.push_back(aa.pop_front());
            return;
        }
        if (fa.size() == 1) {  // singleton or empty: l_B becomes the front portion
            vals.discard_front();
            fa.discard_front();
            fa.swap(ba);
            bv.clear();
            return;
        }
        // flip, then the shrink (l_B is not empty here: Lemma 4.1)
        P new_f = m.combine(fa[1], ba.back());
        vals.discard_front();
        fa.discard_front();
        fa.discard_front();
        fa.swap(la);
        fa.push_back(std::move(new_f));
        ba.discard_back();
        ra.swap(ba);
        rv.swap(bv);
        aa.push_front(rv.pop_back());
    }

    void bulk_evict(std::size_t k) {
        for (std::size_t i = 0; i < k; ++i) evict();
    }

    P query() const {
        if (fa.empty()) return m.identity();
        return ba.empty() ? fa.front() : m.combine(fa.front(), ba.back());
    }

    template <class Eq>
    WINDOWAGG_COLD std::string check(Eq&& eq) const {
        std::size_t nfp = fa.size(), nl = la.size(), nr = rv.size(), na = aa.size(), nb = bv.size();
        if (nfp + nl + nr + na + nb != vals.size()) return "sublist sizes do not add up to the partials";
        if (ra.size() != nr) return "l_R: values and aggregates differ in number";
        if (ba.size() != nb) return "l_B: values and aggregates differ in number";
        if (vals.empty()) return {};
        std::size_t nf = nfp + nl + nr + na;
        std::string e = check_lemma_4_1(nl, nr, na, nf, nb);
        if (!e.empty()) return e;
        std::size_t L = nfp, R = L + nl, A = R + nr, B = nf;
        if (!(e = check_suffixes(m, vals, fa, 0, L, B, "front portion", eq)).empty()) return e;
        if (!(e = check_suffixes(m, vals, la, L, R, R, "l_L", eq)).empty()) return e;
        if (!(e = check_prefixes(m, vals, ra, R, A, "l_R", eq)).empty()) return e;
        if (!(e = check_suffixes(m, vals, aa, A, B, B, "l_A", eq)).empty()) return e;
        if (!(e = check_prefixes(m, vals, ba, B, vals.size(), "l_B", eq)).empty()) return e;
        for (std::size_t i = 0; i < nr; ++i)
            if (!eq(rv[i], vals[R + i])) return "l_R value " + std::to_string(i) + " is not the partial";
        for (std::size_t i = 0; i < nb; ++i)
            if (!eq(bv[i], vals[B + i])) return "l_B value " + std::to_string(i) + " is not the partial";
        return {};
    }
};

}  // namespace windowagg
