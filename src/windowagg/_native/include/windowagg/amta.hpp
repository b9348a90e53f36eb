// AMTA: the Amortized Monoid Tree Aggregator (a forest of level queues), in memory.
//
//   ordering        FIFO (in-order)
//   operator needs  monoid; not commutative, no inverse
//   insert          amortized O(1) combines, O(log n) worst case (binary-counter carry)
//   evict           amortized O(1), O(log n) worst case (left-spine values left stale)
//   bulk_evict(k)   O(min(k, c log n) + log n) combines: after c*floor(log2 n) + 1 single
//                   evictions (c = bulk_after) the rest goes in one forest descent
//                   (popping k pairs is O(1) per level for plain-number partials)
//   query           O(1): R0 (x) R1, one combine
//   space           O(n)
//   paper           "Monoid Tree Aggregator" (MTA) section 4.2, Algorithms 3-7, with the
//                   errata of guides/seed-mta-daba.md A5
//
// The twin of windowagg/fifo/amta.py without a store: level l is a ring of pairs (head pair
// at the front, tail pair at the back; the tail pair of every level is the root of its own
// tree, level l+1 holds the parents of level l's non-tail pairs). R0 aggregates the leftmost
// tree, R1 the others, S the leftmost tree without the first node of each level. Each node
// keeps the index one past its last leaf, so the bulk descent needs no position arithmetic.
//
// The combines are those of the Python reference, in its order (so the same calls raise):
// an insert also combines R0 with the new entry when R1 is the identity, and after trees
// merge R0 with the new R1; the bulk descent combines each full first pair it visits
// (results dropped: checks that refuse entries the monoid cannot combine). The carry of
// an insert runs before any change. With numeric adapters (combine throws only Deopt) a
// Deopt while R0 / R1 / S are being recomputed after a structural change leaves the
// structure right and marks them `dirty`: the binding layer then deoptimises, which
// recomputes them over Python objects (no operation is redone). With any other monoid an
// operation that throws part-way is undone from an undo log of its changes (O(changes),
// kept only for such monoids), so a call that raises leaves the structure as it was.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "windowagg/monoid.hpp"
#include "windowagg/ring.hpp"

namespace windowagg {

// The changes of one operation, each as the closure that puts it back; undo() runs them
// newest first.
class UndoLog {
public:
    void add(std::function<void()> f) { steps_.push_back(std::move(f)); }
    void undo() {
        while (!steps_.empty()) {
            steps_.back()();
            steps_.pop_back();
        }
    }

private:
    std::vector<std::function<void()>> steps_;
};

// True for the binding's numeric adapters (their combine throws Deopt only).
template <class M>
inline constexpr bool deopt_only_v = requires { requires !M::generic; };

template <Monoid M>
struct AMTA {
    using P = typename M::partial_type;
    struct Pair {
        P a{}, b{};
        int64_t ea = 0, eb = 0;  // one past the last leaf under a / b
        bool ha = false, hb = false;
    };
    M m;
    double bulk_after = 1.0;
    std::vector<Ring<Pair>> lv;  // lv[l].front(): head pair, lv[l].back(): tail pair
    std::vector<P> S, scratch;
    P R0, R1;
    bool r0_id = true, r1_id = true;  // R0 / R1 is the identity (the twin's `is identity`)
    int64_t n = 0, leaf_lo = 0, leaf_hi = 0;
    bool dirty = false;
    // Operations keep an undo log, and run the reference's checking combines, unless
    // combine cannot throw or throws only Deopt.
    static constexpr bool logged = !nothrow_combine_v<M> && !deopt_only_v<M>;

    explicit AMTA(M m_, double c = 1.0) : m(std::move(m_)), bulk_after(c), R0(m.identity()), R1(m.identity()) {}

    template <class M2, class F>
    AMTA(M m_, const AMTA<M2>& o, F&& f)
        : m(std::move(m_)), bulk_after(o.bulk_after), R0(f(o.R0)), R1(f(o.R1)), r0_id(o.r0_id),
          r1_id(o.r1_id), n(o.n), leaf_lo(o.leaf_lo), leaf_hi(o.leaf_hi) {
        for (const auto& x : o.S) S.push_back(f(x));
        for (const auto& r : o.lv) {
            lv.emplace_back();
            for (std::size_t i = 0; i < r.size(); ++i) {
                const auto& q = r[i];
                Pair p;
                if (q.ha) p.a = f(q.a);
                if (q.hb) p.b = f(q.b);
                p.ea = q.ea, p.eb = q.eb, p.ha = q.ha, p.hb = q.hb;
                lv.back().push_back(std::move(p));
            }
        }
        if (o.dirty) {
            compute_left();
            compute_right();
        }
    }

    // Whether x is the identity object itself (the reference tests `is identity`): only
    // observable with Python objects, so only the generic path asks.
    bool same_id(const P& x) const {
        if constexpr (logged && requires { x.ptr(); }) return x.ptr() == m.identity().ptr();
        else return false;
    }

    std::size_t size() const { return static_cast<std::size_t>(n); }
    const P& oldest() const { const Pair& p = lv[0].front(); return p.ha ? p.a : p.b; }
    const P& youngest() const { const Pair& p = lv[0].back(); return p.hb ? p.b : p.a; }
    template <class Fn> void for_each(Fn&& fn) const {
        if (lv.empty()) return;
        for (std::size_t i = 0; i < lv[0].size(); ++i) {
            const Pair& p = lv[0][i];
            if (p.ha) fn(p.a);
            if (p.hb) fn(p.b);
        }
    }

    // fn(x) for the monoid and every partial held (both slots of a pair, whether in use or
    // not, and the scratch stack), once each: the binding's garbage-collector traversal. O(n).
    template <class Fn> void for_each_owned(Fn&& fn) const {
        fn(m);
        for (const auto& r : lv)
            r.for_each([&](const Pair& p) {
                fn(p.a);
                fn(p.b);
            });
        for (const P& x : S) fn(x);
        for (const P& x : scratch) fn(x);
        fn(R0);
        fn(R1);
    }

    P agg(const Pair& p) const { return !p.ha ? p.b : (!p.hb ? p.a : m.combine(p.a, p.b)); }
    static Pair single(P v, int64_t end) {
        Pair p;
        p.a = std::move(v);
        p.ea = end;
        p.ha = true;
        return p;
    }

    void reset() {
        lv.clear();
        S.clear();
        R0 = m.identity();
        R1 = m.identity();
        r0_id = r1_id = true;
        dirty = false;
    }

    // S and R0 from the first pair of every level (Alg. 4, fixed). O(log n).
    void compute_left() {
        scratch.clear();
        for (std::size_t l = lv.size(); l-- > 0;) {
            const Pair& f = lv[l].front();
            if (f.ha && f.hb) scratch.push_back(scratch.empty() ? f.b : m.combine(f.b, scratch.back()));
        }
        const Pair& f0 = lv[0].front();
        const P& head = f0.ha ? f0.a : f0.b;
        P r0 = scratch.empty() ? head : m.combine(head, scratch.back());
        S.swap(scratch);
        R0 = std::move(r0);
        r0_id = same_id(R0);
    }
    // R1 from the tails of levels 0 .. top-1, oldest first (Alg. 5, fixed). O(log n).
    void compute_right() {
        bool has = false;
        P r1{};
        for (std::size_t l = 0; l + 1 < lv.size(); ++l) {
            P val = agg(lv[l].back());
            r1 = has ? m.combine(val, r1) : val;
            has = true;
        }
        R1 = has ? r1 : m.identity();
        r1_id = !has || same_id(R1);
    }
    void recompute() {
        if (dirty) return;
        try {
            compute_left();
            compute_right();
        } catch (const Deopt&) {
            dirty = true;
        }
    }

    void insert(P u) {
        ++leaf_hi;
        int64_t end = leaf_hi;  // the new leaf's index is leaf_hi - 1
        try {
            insert_at(std::move(u), end);
        } catch (...) {
            --leaf_hi;
            throw;
        }
    }

    void insert_at(P u, int64_t end) {
        if (lv.empty()) {
            lv.emplace_back();
            lv[0].push_back(single(u, end));
            R0 = std::move(u);
            r0_id = same_id(R0);
            ++n;
            return;
        }
        // every combine of the insert first: R1 (x) u (R0 (x) u when R1 is the identity,
        // result dropped, as the reference), and the carries of full tails
        P r1 = dirty ? R1 : (r1_id ? u : m.combine(R1, u));
        if constexpr (logged)
            if (r1_id) (void)m.combine(R0, u);
        std::size_t top = lv.size() - 1;
        {
            Pair& t0 = lv[0].back();
            if (!t0.hb && top) {  // the common case: fill the leaf tail's free slot
                t0.b = std::move(u);
                t0.eb = end;
                t0.hb = true;
                if (!dirty) R1 = std::move(r1), r1_id = same_id(R1);
                ++n;
                return;
            }
        }
        std::vector<P> carries;  // agg of each full tail the carry passes through
        std::size_t l = 0;
        while (l <= top && lv[l].back().hb) {
            carries.push_back(agg(lv[l].back()));
            ++l;
        }
        for (std::size_t i = 0; i < carries.size() && i < lv.size(); ++i) lv[i].reserve_one();
        if (l > top) lv.reserve(lv.size() + 1);
        // no combine from here until the recompute (logged: undone if it throws)
        UndoLog log;
        if constexpr (logged)
            if (l == top)
                log.add([this, r = R1, id = r1_id, n0 = n, l] {
                    Pair& q = lv[l].back();
                    q.b = P{};
                    q.eb = 0;
                    q.hb = false;
                    for (std::size_t i = 0; i < l; ++i) lv[i].pop_back();
                    R1 = r, r1_id = id, n = n0;
                });
        if (!dirty) R1 = std::move(r1), r1_id = same_id(R1);
        ++n;
        P carry = std::move(u);
        int64_t cend = end;
        for (std::size_t i = 0; i < carries.size(); ++i) {
            int64_t pend = lv[i].back().eb;
            lv[i].push_back(single(std::move(carry), cend));
            carry = std::move(carries[i]);
            cend = pend;
        }
        if (l > top) {  // the old top pair got a parent: a new top level, R0 / S unchanged
            lv.emplace_back();
            lv.back().push_back(single(std::move(carry), cend));
            return;
        }
        Pair& p = lv[l].back();
        p.b = std::move(carry);
        p.eb = cend;
        p.hb = true;
        if (l != top) return;
        // the leftmost tree grew: trees merged
        if constexpr (logged) {
            try {
                recompute_logged(&log);
                if (!r1_id) (void)m.combine(R0, R1);  // the reference's check
            } catch (...) {
                log.undo();
                throw;
            }
        } else {
            recompute();
        }
    }

    // Log helpers: each records how to put back the change the caller makes next.
    void log_clear_a(UndoLog* u, std::size_t l) {
        if (u) u->add([this, l, a = lv[l].front().a] {
            Pair& q = lv[l].front();
            q.a = a;
            q.ha = true;
        });
    }
    void drop_empty_top(UndoLog* u) {
        while (!lv.empty() && lv.back().empty()) {
            lv.pop_back();
            if (u) u->add([this] { lv.emplace_back(); });
        }
    }
    void log_results(UndoLog* u) {
        if (u) u->add([this, s = S, r0 = R0, r1 = R1, a = r0_id, b = r1_id] {
            S = s;
            R0 = r0, R1 = r1, r0_id = a, r1_id = b;
        });
    }
    void recompute_logged(UndoLog* u) {
        if (!u) {
            recompute();
            return;
        }
        log_results(u);
        compute_left();
        compute_right();
    }

    // precondition: size() > 0
    void evict() {
        if constexpr (logged) {
            UndoLog u;
            try {
                evict_step(&u);
            } catch (...) {
                u.undo();
                throw;
            }
        } else {
            evict_step(nullptr);
        }
    }

    // One eviction; with a log u, every change is recorded in it.
    void evict_step(UndoLog* u) {
        if (u) u->add([this, n0 = n, lo = leaf_lo] { n = n0, leaf_lo = lo; });
        --n;
        ++leaf_lo;
        if (!dirty) {
            if (u) u->add([this, r = R0, id = r0_id] { R0 = r, r0_id = id; });
            if (!S.empty()) {
                if (u) u->add([this, x = S.back()] { S.push_back(x); });
                R0 = std::move(S.back());
                S.pop_back();
                r0_id = same_id(R0);
            } else {
                R0 = m.identity();
                r0_id = true;
            }
        }
        Pair& p = lv[0].front();
        if (p.ha && p.hb) {  // keep the pair; ancestors stay stale on purpose
            log_clear_a(u, 0);
            p.a = P{};
            p.ha = false;
            return;
        }
        std::vector<P> heads;  // right nodes of the new full head pairs, bottom first
        std::size_t top = lv.size() - 1;
        for (std::size_t l = 0;;) {
            if (u) u->add([this, l, q = lv[l].front()] { lv[l].push_front(q); });
            lv[l].pop_front();
            if (!lv[l].empty()) {
                const Pair& q = lv[l].front();
                if (q.ha && q.hb) heads.push_back(q.b);
            }
            ++l;
            if (l > top) {  // ran off the top: the leftmost tree vanished
                drop_empty_top(u);
                if (lv.empty()) {
                    log_results(u);
                    reset();
                    return;
                }
                dirty = false;
                recompute_logged(u);
                return;
            }
            Pair& q = lv[l].front();
            if (q.ha && q.hb) {
                log_clear_a(u, l);
                q.a = P{};
                q.ha = false;
                break;
            }
        }
        if (dirty) return;
        try {
            while (!heads.empty()) {
                P y = std::move(heads.back());
                heads.pop_back();
                S.push_back(S.empty() ? y : m.combine(y, S.back()));
                if (u) u->add([this] { S.pop_back(); });
            }
        } catch (const Deopt&) {
            dirty = true;
        }
    }

    double limit(int64_t size) const {
        if (size <= 1) return 1.0;
        return bulk_after * static_cast<double>(std::bit_width(static_cast<uint64_t>(size)) - 1) + 1.0;
    }

    // Remove the first k pairs of level l; how many nodes they held.
    int64_t drop_first(std::size_t l, int64_t k, UndoLog* u) {
        Ring<Pair>& r = lv[l];
        if (u) {
            std::vector<Pair> gone;
            for (int64_t i = 0; i < k; ++i) gone.push_back(r[static_cast<std::size_t>(i)]);
            u->add([this, l, g = std::move(gone)] {
                for (std::size_t i = g.size(); i-- > 0;) lv[l].push_front(g[i]);
            });
        }
        int64_t live = 2 * k - (r.front().ha ? 0 : 1);
        if (static_cast<std::size_t>(k) == r.size() && !r.back().hb) live -= 1;
        r.drop_front(static_cast<std::size_t>(k));
        return live;
    }

    // precondition: k <= size()
    void bulk_evict(std::size_t kk) {
        if constexpr (logged) {
            UndoLog u;
            try {
                bulk_evict_step(kk, &u);
            } catch (...) {
                u.undo();
                throw;
            }
        } else {
            bulk_evict_step(kk, nullptr);
        }
    }

    void bulk_evict_step(std::size_t kk, UndoLog* u) {
        auto k = static_cast<int64_t>(kk);
        if (k == n) {
            if (k) {
                leaf_lo += k;
                n = 0;
                reset();
            }
            return;
        }
        if (static_cast<double>(k) <= limit(n)) {
            for (int64_t i = 0; i < k; ++i) evict_step(u);
            return;
        }
        // one forest descent: whole trees oldest first, then down the first partial one
        if (u) u->add([this, n0 = n, lo = leaf_lo] { n = n0, leaf_lo = lo; });
        int64_t target = leaf_lo + k;
        int64_t rm = 0;
        for (std::size_t l = lv.size(); l-- > 0;) {
            if (rm) rm = drop_first(l, rm, u);
            if (lv[l].empty()) continue;
            Pair& p = lv[l].front();
            if constexpr (logged)  // the reference's aggregate of a whole first pair
                if (p.ha && p.hb) (void)m.combine(p.a, p.b);
            if ((p.hb ? p.eb : p.ea) <= target) {
                rm += p.ha + p.hb;
                drop_first(l, 1, u);
                continue;
            }
            if (p.ha && p.ea <= target) {
                rm += 1;
                if (!p.hb) {
                    drop_first(l, 1, u);
                } else {
                    log_clear_a(u, l);
                    p.a = P{}, p.ha = false;
                }
            }
        }
        n -= k;
        leaf_lo = target;
        drop_empty_top(u);
        if (lv.empty()) {
            log_results(u);
            reset();
            return;
        }
        dirty = false;
        recompute_logged(u);
    }

    static constexpr bool atomic_bulk_evict = true;  // the binding calls bulk_evict (descent)

    P query() const {
        if (r1_id) return R0;
        if (r0_id) return R1;
        return m.combine(R0, R1);
    }

    // O(n): #nodes(l+1) = #pairs(l) - 1, every node off the left spine = agg of its child
    // pair, R0 / R1 = folds of the leftmost / other trees' leaves, S as recomputed.
    template <class Eq>
    WINDOWAGG_COLD std::string check(Eq&& eq) const {
        if (lv.empty()) {
            if (n || !S.empty() || !r0_id || !r1_id) return "empty window with state left";
            return {};
        }
        int64_t leaves = 0;
        for (std::size_t i = 0; i < lv[0].size(); ++i) leaves += lv[0][i].ha + lv[0][i].hb;
        if (leaves != n) return "level 0 holds " + std::to_string(leaves) + " leaves, size is " + std::to_string(n);
        for (std::size_t l = 0; l < lv.size(); ++l) {
            if (lv[l].empty()) return "level " + std::to_string(l) + " is empty";
            if (l + 1 == lv.size()) {
                if (lv[l].size() != 1) return "the top level holds more than one pair";
                break;
            }
            std::vector<const P*> up;
            for (std::size_t i = 0; i < lv[l + 1].size(); ++i) {
                const Pair& q = lv[l + 1][i];
                if (q.ha) up.push_back(&q.a);
                if (q.hb) up.push_back(&q.b);
            }
            if (up.size() + 1 != lv[l].size())
                return "level " + std::to_string(l + 1) + ": " + std::to_string(up.size()) + " nodes for " +
                       std::to_string(lv[l].size()) + " pairs below";
            for (std::size_t i = 1; i < up.size(); ++i)
                if (!eq(*up[i], agg(lv[l][i]))) return "level " + std::to_string(l + 1) + " node " + std::to_string(i);
        }
        // leaves of the trees rooted at the tails of levels 0 .. top-1 are the youngest ones
        int64_t right = 0;
        for (std::size_t l = 0; l + 1 < lv.size(); ++l) right += (int64_t(lv[l].back().ha) + lv[l].back().hb) << l;
        P left_fold = m.identity(), right_fold = m.identity();
        int64_t i = 0;
        for_each([&](const P& x) {
            if (i++ < n - right) left_fold = m.combine(left_fold, x);
            else right_fold = m.combine(right_fold, x);
        });
        if (!dirty && !eq(left_fold, R0)) return "R0 is not the fold of the leftmost tree";
        if (!dirty && !eq(right_fold, R1)) return "R1 is not the fold of the other trees";
        AMTA copy(m, *this, [](const P& x) { return x; });
        copy.compute_left();
        if (copy.S.size() != S.size()) return "stack S has the wrong height";
        for (std::size_t j = 0; j < S.size(); ++j)
            if (!eq(S[j], copy.S[j])) return "stack S entry " + std::to_string(j) + " != recomputed";
        return {};
    }
};

}  // namespace windowagg
