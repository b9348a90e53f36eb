// DABALite: DABA with one aggregate per entry and two running aggregates.
//
//   ordering        FIFO (in-order)
//   operator needs  monoid; neither commutative nor invertible
//   insert          O(1) worst case: at most 3 combines (amortized O(1) ring growth)
//   evict           O(1) worst case: at most 2 combines
//   query           O(1) worst case: at most 1 combine
//   bulk_evict(k)   O(k) worst case: k evictions, at most 2k combines
//   space           n partials + n slots + 2 aggregates
//   paper           Tangwongsan, Hirzel, Schneider, "In-order sliding-window aggregation
//                   in worst-case constant time", VLDB Journal 2021 (DABA Lite); DABA is
//                   DEBS 2017, section 4
//
// The twin of windowagg/fifo/daba_lite.py, step for step: the sublists front portion,
// l_L, l_R, l_A and l_B are five rings; a flip or a singleton relabelling swaps rings.
//
//   front  front[i] = v[i] (x) ... (x) v[B-1]      l_L  ll[i] = v[i] (x) ... (x) v[R-1]
//   l_R    raw partials                           l_A  aa[i] = v[i] (x) ... (x) v[B-1]
//   l_B    raw partials; agg_ra = fold(l_R ++ l_A) (while l_L is non-empty); agg_b = fold(l_B)
//
// Every combine of an operation runs before its first mutation (and rings grow before
// it), so a combine that throws leaves the window unchanged.
#pragma once

#include <cstddef>
#include <string>

#include "windowagg/fold_check.hpp"
#include "windowagg/monoid.hpp"
#include "windowagg/ring.hpp"

namespace windowagg {

template <Monoid M>
struct DABALite {
    using P = typename M::partial_type;
    M m;
    Ring<P> vals, front, ll, rr, aa, bb;
    P agg_ra, agg_b;

    explicit DABALite(M m_) : m(std::move(m_)), agg_ra(m.identity()), agg_b(m.identity()) {}

    template <class M2, class F>
    DABALite(M m_, const DABALite<M2>& o, F&& f) : m(std::move(m_)), agg_ra(f(o.agg_ra)), agg_b(f(o.agg_b)) {
        using R2 = Ring<typename M2::partial_type>;
        vals = R2::template map<P>(o.vals, f);
        front = R2::template map<P>(o.front, f);
        ll = R2::template map<P>(o.ll, f);
        rr = R2::template map<P>(o.rr, f);
        aa = R2::template map<P>(o.aa, f);
        bb = R2::template map<P>(o.bb, f);
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
        for (const Ring<P>* r : {&vals, &front, &ll, &rr, &aa, &bb}) r->for_each(fn);
        fn(agg_ra);
        fn(agg_b);
    }

    void insert(P p) {
        vals.reserve_one(); front.reserve_one(); aa.reserve_one(); bb.reserve_one(); ll.reserve_one();
        P nb = bb.empty() ? p : m.combine(agg_b, p);
        if (!ll.empty()) {  // shrink
            P new_f = m.combine(ll.front(), agg_ra);
            P new_a = aa.empty() ? rr.back() : m.combine(rr.back(), aa.front());
            ll.discard_front();
            rr.discard_back();
            vals.push_back(p);
            bb.push_back(std::move(p));
            agg_b = std::move(nb);
            front.push_back(std::move(new_f));
            aa.push_front(std::move(new_a));
            return;
        }
        if (!aa.empty()) {  // shift
            vals.push_back(p);
            bb.push_back(std::move(p));
            agg_b = std::move(nb);
            front.push_back(aa.pop_front());
            return;
        }
        if (front.empty()) {  // singleton
            vals.push_back(p);
            front.push_back(std::move(p));
            return;
        }
        // flip, then the shrink (front portion -> l_L, l_B -> l_R, the new entry -> l_A)
        P new_f = m.combine(front.front(), nb);
        vals.push_back(p);
        front.discard_front();
        front.swap(ll);   // l_L = the rest of the front portion; front = the empty l_L
        front.push_back(std::move(new_f));
        bb.swap(rr);      // l_R = old l_B; l_B = the empty l_R
        agg_ra = std::move(nb);
        agg_b = m.identity();
        aa.push_front(std::move(p));
    }

    // precondition: size() > 0
    void evict() {
        front.reserve_one(); aa.reserve_one(); ll.reserve_one();
        if (!ll.empty()) {  // shrink
            P new_f = m.combine(ll.front(), agg_ra);
            P new_a = aa.empty() ? rr.back() : m.combine(rr.back(), aa.front());
            ll.discard_front();
            rr.discard_back();
            vals.discard_front();
            front.discard_front();
            front.push_back(std::move(new_f));
            aa.push_front(std::move(new_a));
            return;
        }
        if (!aa.empty()) {  // shift
            vals.discard_front();
            front.discard_front();
            front.push_back(aa.pop_front());
            return;
        }
        if (front.size() == 1) {  // singleton or empty: l_B becomes the front portion
            vals.discard_front();
            front.discard_front();
            front.swap(bb);
            agg_b = m.identity();
            return;
        }
        // flip, then the shrink
        P new_f = m.combine(front[1], agg_b);
        vals.discard_front();
        front.discard_front();
        front.discard_front();
        front.swap(ll);
        front.push_back(std::move(new_f));
        bb.swap(rr);
        agg_ra = std::move(agg_b);
        agg_b = m.identity();
        aa.push_front(rr.pop_back());
    }

    void bulk_evict(std::size_t k) {
        for (std::size_t i = 0; i < k; ++i) evict();
    }

    P query() const {
        if (front.empty()) return m.identity();
        return bb.empty() ? front.front() : m.combine(front.front(), agg_b);
    }

    template <class Eq>
    WINDOWAGG_COLD std::string check(Eq&& eq) const {
        std::size_t nfp = front.size(), nl = ll.size(), nr = rr.size(), na = aa.size(), nb = bb.size();
        if (nfp + nl + nr + na + nb != vals.size()) return "sublist sizes do not add up to the partials";
        if (vals.empty()) return {};
        std::size_t nf = nfp + nl + nr + na;
        std::string e = check_lemma_4_1(nl, nr, na, nf, nb);
        if (!e.empty()) return e;
        std::size_t c1 = nfp, c2 = nfp + nl, c3 = c2 + nr, c4 = nf, c5 = vals.size();
        if (!(e = check_suffixes(m, vals, front, 0, c1, c4, "front portion", eq)).empty()) return e;
        if (!(e = check_suffixes(m, vals, ll, c1, c2, c2, "l_L", eq)).empty()) return e;
        if (!(e = check_suffixes(m, vals, aa, c3, c4, c4, "l_A", eq)).empty()) return e;
        for (std::size_t i = 0; i < nr; ++i)
            if (!eq(rr[i], vals[c2 + i])) return "l_R entry " + std::to_string(i) + " is not the raw partial";
        for (std::size_t i = 0; i < nb; ++i)
            if (!eq(bb[i], vals[c4 + i])) return "l_B entry " + std::to_string(i) + " is not the raw partial";
        if (nl && !eq(agg_ra, fold_range(m, vals, c2, c4))) return "agg_ra != fold(l_R ++ l_A)";
        if (!eq(agg_b, fold_range(m, vals, c4, c5))) return "agg_b != fold(l_B)";
        return {};
    }
};

}  // namespace windowagg
