// FiBA: the finger B-tree aggregator, with bulk eviction and bulk insertion (C++ core).
//
// =================  ==========================================================================
// ordering           out-of-order (any insert/evict position; keys totally ordered by Less)
// operator needs     monoid (associative, identity); not commutative, no inverse
// query              O(1) worst case: 2 combines (leftFinger ⊗ root ⊗ rightFinger)
// insert / evict     O(log d) amortized, O(log n) worst case; d = distance to the closer end;
//                    d = 0 (append youngest, evict oldest) is amortized O(1), no allocation
// range_query        O(log d_from + log d_to + log n_sub) worst case
// bulk_evict(t)      O(log m) amortized (cuts whole subtrees), O(log n) worst case
// bulk_insert        O(log d + m (1 + log(d/m))) amortized for a sorted bulk of m entries
// space              O(n): one allocation per node (keys, partials and, for inner nodes,
//                    child pointers in one block of capacity 2μ); leaves hold no child array;
//                    up to 16 freed blocks of each kind are kept for the next split
// paper              Tangwongsan, Hirzel, Schneider, VLDB 2019 (FiBA) and VLDB 2023 (bulk FiBA)
// =================  ==========================================================================
//
// A line-by-line twin of the pure-Python reference src/windowagg/ooo/fiba.py (same
// position-aware aggregates, same rebalancing choices, same combine order, so float results
// agree bit for bit), without its int-sum shortcuts. Every node stores one partial
// aggregate: the root its inner aggregate, left-spine nodes a left aggregate, right-spine
// nodes a right aggregate, all others the up aggregate of their subtree; spine nodes also
// keep their own part (`loc`). The left finger keeps the suffix aggregates of its values so
// evicting the oldest entry costs no combine until the leaf underflows.
//
// Strong exception guarantee: when M::combine throws (a Python monoid's combine raising),
// every mutator leaves the tree exactly as before the call; the error path rebuilds from the
// entries in O(n) (only there). Discarded nodes are freed at the end of an operation, never
// in the middle of one (destroying a partial may run user code).
//
// Split by concern: fiba.hpp (tree, single operations, queries), fiba_rebalance.hpp (split,
// merge, move, rebalancing), fiba_bulk.hpp (bulk evict and bulk insert, the O(n) build),
// fiba_check.hpp (the O(n) invariant check).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <new>
#include <stdexcept>
#include <type_traits>
#include <string>
#include <utility>
#include <vector>

#include "monoid.hpp"
#include "spare_blocks.hpp"

namespace windowagg {

// Raised by FiBA::check() naming the broken invariant.
struct invariant_error : std::logic_error {
    using std::logic_error::logic_error;
};

template <Monoid M, class K, class Less = std::less<K>>
class FiBA {
  public:
    using P = typename M::partial_type;
    static constexpr bool kNothrow = nothrow_combine_v<M>;
    // Keys and partials with nothing to release (numbers): slots past a node's entries are
    // neither zeroed nor cleared, and no slot past n is read before it is written.
    static constexpr bool kPlainSlots =
        std::is_trivially_destructible_v<K> && std::is_trivially_destructible_v<P>;

    struct Node {
        Node* parent;
        P agg;
        P loc;  // spine nodes only: their own part (without the parent's aggregate)
        std::uint32_t n;  // entries
        bool leaf;
        bool ls;
        bool rs;
    };

    FiBA(M m, int min_arity, Less less = Less())
        : m_(std::move(m)), less_(std::move(less)), mu_(min_arity), mink_(min_arity - 1),
          maxk_(2 * min_arity - 1), cap_(2 * min_arity) {
        if (min_arity < 2 || min_arity > 1 << 14) throw std::invalid_argument("min_arity out of range");
        off_keys_ = round_up(sizeof(Node), alignof(K));
        off_vals_ = round_up(off_keys_ + cap_ * sizeof(K), alignof(P));
        off_kids_ = round_up(off_vals_ + cap_ * sizeof(P), alignof(Node*));
        leaf_bytes_ = round_up(off_kids_, alignof(std::max_align_t));
        inner_bytes_ = round_up(off_kids_ + (cap_ + 1) * sizeof(Node*), alignof(std::max_align_t));
        spare_leaves_.set_bytes(leaf_bytes_);
        spare_inner_.set_bytes(inner_bytes_);
        root_ = lf_ = rf_ = new_node(true, nullptr);
        root_->agg = m_.identity();
        lsuf_.reserve(cap_ + 1);
        suf_scratch_.reserve(cap_ + 1);
    }
    FiBA(const FiBA&) = delete;
    FiBA& operator=(const FiBA&) = delete;
    ~FiBA() {
        free_subtree(root_);
        flush();
    }

    // ------------------------------------------------------------------ facts
    int min_arity() const { return mu_; }
    std::size_t size() const { return size_; }
    bool empty() const { return lf_->n == 0; }
    const M& monoid() const { return m_; }
    const K& oldest() const { return keys(lf_)[0]; }  // precondition: !empty()
    const K& youngest() const { return keys(rf_)[rf_->n - 1]; }
    const Less& less() const { return less_; }
    // True after an error path whose rebuild met a combine that raised too (a monoid that
    // keeps refusing, e.g. one calling back into its own window): every entry is in place,
    // but some stored aggregates are not recomputed. refresh() recomputes them all (O(n)
    // combines; on a raise the tree stays stale); the binding runs it before any other call.
    bool stale() const { return stale_; }
    WINDOWAGG_COLD void refresh();
    // Bytes held by the nodes (the allocator's own overhead not included). O(n).
    std::size_t node_bytes() const { return bytes_of(root_); }

    P query() const {
        if (root_->leaf) return root_->agg;
        return m_.combine(m_.combine(lf_->agg, root_->agg), rf_->agg);
    }

    template <class F>
    void for_each(F&& f) const { walk(root_, f); }

    // fn(x) for the monoid and every key and partial held: each node's aggregates and all its
    // slots (past n: a default or moved-from value; for numbers, whatever was last there),
    // the finger suffixes, scratch and, after an error, the saved entries and discarded
    // nodes; once each, for the binding's garbage-collector traversal. O(n). Not during an
    // operation (nodes move).
    template <class Fn>
    void for_each_owned(Fn&& fn) const {
        fn(m_);
        owned(root_, fn);
        for (Node* y : graveyard_) owned(y, fn);
        for (const P& x : lsuf_) fn(x);
        for (const P& x : suf_scratch_) fn(x);
        for (const auto& e : saved_) fn(e.first), fn(e.second);
    }

    std::vector<std::pair<K, P>> to_partials() const {
        std::vector<std::pair<K, P>> out;
        out.reserve(size_);
        for_each([&](const K& k, const P& p) { out.emplace_back(k, p); });
        return out;
    }

    // ------------------------------------------------------------------ insert / evict
    // Insert the partial v at key t (combined in place, old ⊗ v, when t is stored).
    void insert(const K& t, P v) {
        Node* rf = rf_;
        if (rf != lf_ && less_(keys(rf)[rf->n - 1], t)) {
            // d = 0 fast path: append at the right finger (a non-root leaf); its right
            // aggregate grows by one combine, computed before anything changes.
            Node* p = rf->parent;
            P loc = m_.combine(rf->loc, v);
            P agg = p->parent ? m_.combine(p->agg, loc) : loc;
            keys(rf)[rf->n] = t;
            vals(rf)[rf->n] = std::move(v);
            ++rf->n;
            rf->loc = std::move(loc);
            rf->agg = std::move(agg);
            ++size_;
            if (rf->n > static_cast<std::uint32_t>(maxk_)) guarded_new_key(t, [&] { split_rf(rf); });
            return;
        }
        auto [node, i, found] = search(t);
        if (found) {
            P old = vals(node)[i];
            P nv = m_.combine(old, v);  // throws before any change
            vals(node)[i] = std::move(nv);
            guarded([&] {
                fix_if_up(node);
                auto [top, hl, hr] = rebalance_insert(node);
                repair(top, hl, hr);
            }, [&](std::vector<std::pair<K, P>>& es) { restore_value(es, t, old); });
            return;
        }
        insert_new(node, i, t, std::move(v));
    }

    // Remove the entry at key t; returns false (nothing changed) when t is not stored.
    bool evict(const K& t) {
        Node* lf = lf_;
        if (lf->n && !less_(t, keys(lf)[0]) && !less_(keys(lf)[0], t)) {
            // d = 0 fast path: pop the oldest entry; the new aggregate is the next suffix
            // aggregate, no combine until the leaf underflows.
            if constexpr (kNothrow) {
                erase_entries(lf, 0, 1);
            } else {
                saved_.clear();
                saved_.emplace_back(std::move(keys(lf)[0]), std::move(vals(lf)[0]));
                erase_entries(lf, 0, 1);
            }
            --size_;
            lsuf_.pop_back();
            // the leaf's right sibling takes part in its coming underflow (merge or move):
            // load it ahead (a window of 10^6 entries lives far outside the caches)
            if (Node* p = lf->parent) prefetch_node(kids(p)[1]);
            if (!lsuf_.empty()) {
                lf->agg = lsuf_.back();
            } else {
                Node* p = lf->parent;
                lf->agg = (p && p->parent) ? p->agg : m_.identity();
            }
            if (lf->n < static_cast<std::uint32_t>(mink_) && lf->parent) {
                guarded([&] {
                    auto [top, hl, hr] = rebalance_evict(lf, nullptr);
                    repair(top, hl, hr);
                }, [&](std::vector<std::pair<K, P>>& es) { restore_saved(es); });
            }
            return true;
        }
        if (!lf->n) return false;
        auto [node, i, found] = search(t);
        if (!found) return false;
        if constexpr (!kNothrow) {
            saved_.clear();
            saved_.emplace_back(keys(node)[i], vals(node)[i]);
        }
        --size_;
        guarded([&] {
            if (node->leaf) {
                erase_entries(node, i, 1);
                fix_if_up(node);
                auto [top, hl, hr] = rebalance_evict(node, nullptr);
                repair(top, hl, hr);
            } else {
                auto [top, hl, hr] = evict_inner(node, i);
                repair(top, hl, hr);
            }
        }, [&](std::vector<std::pair<K, P>>& es) { restore_saved(es); });
        return true;
    }

    // ------------------------------------------------------------------ range query
    // Aggregate of the entries with lo <= t <= hi in key order (identity if none).
    P range_query(const K& lo, const K& hi) const {
        if (!lf_->n || less_(hi, lo)) return m_.identity();
        // Start at a node whose subtree holds every stored key in [lo, hi]: the root, or,
        // for a range left (right) of the root's keys, the first node up from the left
        // (right) finger whose keys reach hi (lo). rq from an ancestor of the lowest
        // common node makes the same combines in the same order (the levels above it add
        // one child's result and no entry), so no search for the two ends is needed.
        Node* y = root_;
        if (!y->leaf) {
            const K* rt = keys(y);
            if (less_(hi, rt[0])) {
                y = lf_;
                while (y->parent && less_(keys(y)[y->n - 1], hi)) y = y->parent;
            } else if (less_(rt[y->n - 1], lo)) {
                y = rf_;
                while (y->parent && less_(lo, keys(y)[0])) y = y->parent;
            }
        }
        return rq(y, lo, false, hi, false);
    }

    // ------------------------------------------------------------------ O(n) build
    // Replace the contents by strictly increasing entries (the caller validated the order).
    // Basic guarantee only if combine throws: the tree is then empty.
    void assign_sorted(std::vector<K>&& ts, std::vector<P>&& ps) {
        clear();
        if (ts.empty()) return;
        try {
            build(std::move(ts), std::move(ps));
        } catch (...) {
            clear();
            throw;
        }
        flush();
    }

    void clear() {
        graveyard_.push_back(root_);
        root_ = lf_ = rf_ = new_node(true, nullptr);
        root_->agg = m_.identity();
        lsuf_.clear();
        size_ = 0;
        stale_ = false;
        flush();
    }

    // Replace the contents by a copy of `o` (any monoid and key type) with the same shape:
    // every key, partial, stored aggregate and spine part converted by ck / cp. A change of
    // representation (fiba_mapped.hpp) that keeps every later combine in the same order.
    template <Monoid M2, class K2, class L2, class CK, class CP>
    WINDOWAGG_COLD void assign_mapped(const FiBA<M2, K2, L2>& o, CK&& ck, CP&& cp);

    // bulk operations (fiba_bulk.hpp)
    std::size_t bulk_evict(const K& t);
    void bulk_insert_sorted(std::vector<K>& ts, std::vector<P>& ps);
    // invariant check (fiba_check.hpp); eq compares partials
    template <class Eq>
    WINDOWAGG_COLD void check(Eq&& eq) const;

  private:
    template <Monoid, class, class>
    friend class FiBA;

    struct Found {
        Node* node;
        std::uint32_t i;
        bool found;
    };
    struct Top {
        Node* top;
        bool hl;
        bool hr;
    };

    static std::size_t round_up(std::size_t x, std::size_t a) { return (x + a - 1) / a * a; }

    K* keys(Node* y) const { return reinterpret_cast<K*>(reinterpret_cast<char*>(y) + off_keys_); }
    P* vals(Node* y) const { return reinterpret_cast<P*>(reinterpret_cast<char*>(y) + off_vals_); }
    Node** kids(Node* y) const {
        return reinterpret_cast<Node**>(reinterpret_cast<char*>(y) + off_kids_);
    }

    // node storage (fiba_nodes.hpp)
    Node* new_node(bool leaf, Node* parent);
    void prefetch_node(const Node* y) const {
#if defined(__GNUC__) || defined(__clang__)
        const char* c = reinterpret_cast<const char*>(y);
        for (std::size_t off = 0; off < leaf_bytes_; off += 64) __builtin_prefetch(c + off);
#else
        (void)y;
#endif
    }
    void delete_node(Node* y);
    void free_subtree(Node* y);  // discarded subtrees (entries already subtracted)
    std::size_t count_subtree(Node* y) const;
    WINDOWAGG_COLD std::size_t bytes_of(Node* y) const;
    void discard(Node* y);
    void flush();

    template <class F>
    void walk(Node* y, F& f) const;  // f(key, partial) in key order; nothing for null
    template <class F>
    void owned(Node* y, F& f) const;  // f(x) for every aggregate, key and partial slot

    bool eq(const K& a, const K& b) const { return !less_(a, b) && !less_(b, a); }
    std::uint32_t lower(Node* y, const K& t) const {
        const K* ks = keys(y);
        return static_cast<std::uint32_t>(std::lower_bound(ks, ks + y->n, t, less_) - ks);
    }
    std::uint32_t child_index(Node* p, Node* c) const {
        Node** ks = kids(p);
        if (ks[p->n] == c) return p->n;
        std::uint32_t j = 0;
        while (ks[j] != c) ++j;
        return j;
    }
    int height_below(Node* y) const {
        int h = 0;
        while (!y->leaf) { y = kids(y)[0]; ++h; }
        return h;
    }

    // array helpers, no combine, no throw (fiba_nodes.hpp)
    void insert_entry(Node* y, std::uint32_t i, K t, P v);
    void erase_entries(Node* y, std::uint32_t i, std::uint32_t c);
    void clear_slots(Node* y, std::uint32_t b, std::uint32_t e);
    void insert_kid(Node* y, std::uint32_t i, Node* c, std::uint32_t count_before);
    void erase_kids(Node* y, std::uint32_t i, std::uint32_t c, std::uint32_t count_before);

    // ------------------------------------------------------------------ aggregates
    template <class It>
    P fold(It b, It e) const {
        if (b == e) return m_.identity();
        P acc = *b;
        for (++b; b != e; ++b) acc = m_.combine(acc, *b);
        return acc;
    }
    // Left fold of an inner node's sequence c_first v_first ... (children's aggregates and
    // values interleaved), from child index c0 (or value if !with_first_kid) up to the last
    // value (with_last_kid: then the last child). k >= 1 assumed by callers that need it.
    P fold_inner(Node* y, bool with_first_kid, bool with_last_kid) const {
        const std::uint32_t k = y->n;
        Node** cs = kids(y);
        P* vs = vals(y);
        if (k == 0) {
            if (with_first_kid || with_last_kid) return cs[0]->agg;
            return m_.identity();
        }
        P acc = with_first_kid ? m_.combine(cs[0]->agg, vs[0]) : vs[0];
        for (std::uint32_t i = 1; i < k; ++i) {
            acc = m_.combine(acc, cs[i]->agg);
            acc = m_.combine(acc, vs[i]);
        }
        if (with_last_kid) acc = m_.combine(acc, cs[k]->agg);
        return acc;
    }

    // The left finger's suffix aggregates: suf[j] = v_{k-1-j} ⊗ … ⊗ v_{k-1} ⊗ tail.
    void suffixes(Node* y, const P* tail, std::vector<P>& suf) const {
        suf.clear();
        P* vs = vals(y);
        for (std::uint32_t j = y->n; j-- > 0;) {
            if (suf.empty())
                suf.push_back(tail ? m_.combine(vs[j], *tail) : vs[j]);
            else
                suf.push_back(m_.combine(vs[j], suf.back()));
        }
    }

    // y's position-aware aggregate (and spine part) from its entries, children and parent,
    // without changing anything; for the left finger also its suffix aggregates.
    void compute(Node* y, P& agg, P& loc, std::vector<P>* suf) const {
        Node* p = y->parent;
        if (y->leaf) {
            if (y == lf_ && suf) {
                const P* tail = (p && p->parent) ? &p->agg : nullptr;
                suffixes(y, tail, *suf);
                agg = !suf->empty() ? suf->back() : (tail ? *tail : m_.identity());
                return;
            }
            P* vs = vals(y);
            if (p && y->rs && !y->ls) {
                loc = fold(vs, vs + y->n);
                agg = p->parent ? m_.combine(p->agg, loc) : loc;
            } else if (p && y->ls && !y->rs && p->parent) {
                agg = m_.combine(fold(vs, vs + y->n), p->agg);
            } else {
                agg = fold(vs, vs + y->n);
            }
            return;
        }
        if (!p || (y->ls && y->rs)) {
            agg = fold_inner(y, false, false);
        } else if (y->ls) {
            loc = fold_inner(y, false, true);
            agg = p->parent ? m_.combine(loc, p->agg) : loc;
        } else if (y->rs) {
            loc = fold_inner(y, true, false);
            agg = p->parent ? m_.combine(p->agg, loc) : loc;
        } else {
            agg = fold_inner(y, true, true);
        }
    }

    void fix(Node* y) {
        P agg, loc = y->loc;
        if (y == lf_ && y->leaf) {
            compute(y, agg, loc, &suf_scratch_);
            lsuf_.swap(suf_scratch_);
        } else {
            compute(y, agg, loc, nullptr);
        }
        y->agg = std::move(agg);
        y->loc = std::move(loc);
    }
    void fix_if_up(Node* y) {
        if (y->parent && !y->ls && !y->rs) fix(y);
    }

    void repair(Node* top, bool hit_l, bool hit_r) {
        if (top->parent && !top->ls && !top->rs) {
            while (top->parent && !top->ls && !top->rs) {
                top = top->parent;
                fix(top);
            }
            // only an up-subtree changed: spine nodes below top keep their own parts
            Node* n = top;
            if (top->ls) {
                while (true) {
                    Node* c = kids(n)[0];
                    if (c->leaf) {
                        fix(c);
                        return;
                    }
                    c->agg = m_.combine(c->loc, n->agg);
                    n = c;
                }
            } else if (top->rs) {
                while (!n->leaf) {
                    Node* c = kids(n)[n->n];
                    c->agg = m_.combine(n->agg, c->loc);
                    n = c;
                }
            }
            return;
        }
        fix(top);
        bool root = !top->parent;
        if (top->ls || (root && hit_l)) {
            Node* n = top;
            while (!n->leaf) {
                n = kids(n)[0];
                fix(n);
            }
        }
        if (top->rs || (root && hit_r)) {
            Node* n = top;
            while (!n->leaf) {
                n = kids(n)[n->n];
                fix(n);
            }
        }
    }

    // ------------------------------------------------------------------ search
    Found search(const K& t) const {
        Node* node = root_;
        if (!node->leaf) {
            const K* rt = keys(node);
            if (less_(t, rt[0])) {
                node = lf_;
                while (node->parent && less_(keys(node)[node->n - 1], t)) node = node->parent;
            } else if (less_(rt[node->n - 1], t)) {
                node = rf_;
                while (node->parent && less_(t, keys(node)[0])) node = node->parent;
            }
        }
        while (true) {
            std::uint32_t i = lower(node, t);
            if (i < node->n && !less_(t, keys(node)[i])) return {node, i, true};
            if (node->leaf) return {node, i, false};
            node = kids(node)[i];
        }
    }

    // ------------------------------------------------------------------ restructuring
    void height_increase() {
        Node* old = root_;
        Node* r = new_node(false, nullptr);
        kids(r)[0] = old;
        old->parent = r;
        old->ls = old->rs = true;
        root_ = r;
    }
    void height_decrease() {
        Node* old = root_;
        Node* c = kids(old)[0];
        c->parent = nullptr;
        c->ls = c->rs = false;
        kids(old)[0] = nullptr;
        root_ = c;
        graveyard_.push_back(old);  // no entries left; freed at the end of the operation
        fix(c);
    }

    void split(Node* y);
    Node* merge(Node* p, std::uint32_t k);
    // Rotate `count` entries (and children) from sibling giv_i to sibling rec_i via p.
    void move(Node* p, std::uint32_t rec_i, std::uint32_t giv_i, std::uint32_t count);
    Top rebalance_insert(Node* node);
    Top rebalance_evict(Node* node, Node* to_repair);
    Top evict_inner(Node* node, std::uint32_t i);
    // Split the overflowing right finger after an append (the d = 0 insert path): the
    // parent's inner/right aggregate ends with its last entry, so adding the old finger as a
    // middle child and the separator extends it with two combines.
    void split_rf(Node* rf);

    void insert_new(Node* node, std::uint32_t i, const K& t, P v) {
        std::uint32_t n = node->n;
        insert_entry(node, i, t, std::move(v));
        ++size_;
        guarded_new_key(t, [&] {
            if (node->parent && !node->ls && !node->rs) {
                // appended at the end, a leaf's up-aggregate extends with one combine (the
                // same left fold as a recomputation, so float results agree exactly)
                if (i == n)
                    node->agg = m_.combine(node->agg, vals(node)[i]);
                else
                    fix(node);
            }
            auto [top, hl, hr] = rebalance_insert(node);
            repair(top, hl, hr);
        });
    }

    // P range: aggregate of y's subtree restricted to [lo, hi]; *_inf: unbounded side.
    P rq(Node* y, const K& lo, bool lo_inf, const K& hi, bool hi_inf) const {
        if (lo_inf && hi_inf && y->parent && !y->ls && !y->rs) return y->agg;
        bool have = false;
        P acc{};
        auto add = [&](const P& x) {
            if (have) {
                acc = m_.combine(acc, x);
            } else {
                acc = x;
                have = true;
            }
        };
        const std::uint32_t n = y->n;
        const K* ts = keys(y);
        const P* vs = vals(y);
        for (std::uint32_t i = 0; i <= n; ++i) {
            if (!y->leaf) {
                bool below = i < n && !lo_inf && !less_(lo, ts[i]);
                bool above = i > 0 && !hi_inf && !less_(ts[i - 1], hi);
                if (!below && !above) {
                    bool cl = lo_inf || (i > 0 && !less_(ts[i - 1], lo));
                    bool ch = hi_inf || (i < n && !less_(hi, ts[i]));
                    add(rq(kids(y)[i], lo, cl, hi, ch));
                }
            }
            if (i < n && (lo_inf || !less_(ts[i], lo)) && (hi_inf || !less_(hi, ts[i]))) add(vs[i]);
        }
        return have ? acc : m_.identity();
    }

    // Bottom-up packing of strictly increasing entries (as ooo._pack.pack_levels), then the
    // aggregates: up-aggregates level by level, the root, both spines. O(n).
    void build(std::vector<K>&& ts, std::vector<P>&& ps);

    // ------------------------------------------------------------------ error paths
    // Run f; if it throws, rebuild from the entries after `edit` adjusted them (O(n)).
    template <class F, class E>
    void guarded(F&& f, E&& edit) {
        if constexpr (kNothrow) {
            f();
            flush();
        } else {
            try {
                f();
            } catch (...) {
                recover(edit);
                throw;
            }
            flush();
        }
    }
    template <class E>
    WINDOWAGG_COLD void recover(E& edit) {
        auto es = to_partials_any();
        edit(es);
        rebuild(es);
    }
    template <class F>
    void guarded_new_key(const K& t, F&& f) {
        guarded(std::forward<F>(f), [&](std::vector<std::pair<K, P>>& es) {
            es.erase(std::remove_if(es.begin(), es.end(),
                                    [&](const std::pair<K, P>& e) { return eq(e.first, t); }),
                     es.end());
        });
    }
    void restore_value(std::vector<std::pair<K, P>>& es, const K& t, const P& old) {
        for (auto& e : es)
            if (eq(e.first, t)) e.second = old;
    }
    WINDOWAGG_COLD void restore_saved(std::vector<std::pair<K, P>>& es) {
        for (auto& e : saved_) {
            es.erase(std::remove_if(es.begin(), es.end(),
                                    [&](const std::pair<K, P>& x) { return eq(x.first, e.first); }),
                     es.end());
            es.push_back(std::move(e));
        }
        saved_.clear();
        sort_entries(es);
    }
    WINDOWAGG_COLD void sort_entries(std::vector<std::pair<K, P>>& es) const {
        std::stable_sort(es.begin(), es.end(), [&](const std::pair<K, P>& a, const std::pair<K, P>& b) {
            return less_(a.first, b.first);
        });
    }
    // In-order entries of a tree that may be mid-restructuring (keys still in order).
    WINDOWAGG_COLD std::vector<std::pair<K, P>> to_partials_any() const {
        std::vector<std::pair<K, P>> out;
        auto f = [&](const K& k, const P& p) { out.emplace_back(k, p); };
        walk(root_, f);
        return out;
    }
    WINDOWAGG_COLD void rebuild(std::vector<std::pair<K, P>>& es) {
        std::vector<K> ts;
        std::vector<P> ps;
        ts.reserve(es.size());
        ps.reserve(es.size());
        for (auto& e : es) {
            ts.push_back(std::move(e.first));
            ps.push_back(std::move(e.second));
        }
        graveyard_.push_back(root_);
        root_ = lf_ = rf_ = new_node(true, nullptr);
        root_->agg = m_.identity();
        lsuf_.clear();
        size_ = 0;
        stale_ = false;
        if (!ts.empty()) {
            try {
                build(std::move(ts), std::move(ps));
            } catch (...) {
                // a combine raised again while the aggregates were being recomputed: every
                // entry is in place and stale_ is set; the caller rethrows its own error
            }
        }
        flush();
    }

    // bulk helpers (fiba_bulk.hpp)
    struct Member {
        K t;
        P v;
        Node* child;
    };
    struct Group {
        Node* node;
        std::vector<Member> members;
    };
    struct Level {
        Node* node;
        Node* nb;
        Node* anc;
    };
    std::size_t bulk_evict_impl(const K& t);
    std::vector<Level> boundary(const K& t);
    void evict_prefix(Node* y, const K& t);
    void mark_left(Node* y, bool down_to_leaf);
    void make_root(Node* node, bool first);
    void move_batch(Node* node, Node* nb, Node* anc, std::uint32_t k);
    void merge_not_sibling(Node* node, Node* nb, Node* anc);
    void coalesce(std::vector<K>& ts, std::vector<P>& ps);
    void bulk_step1(std::vector<K>& ts, std::vector<P>& ps, std::vector<Group>& groups,
                    std::vector<std::vector<Node*>>& recomp, std::vector<std::pair<K, P>>& undo);
    void pass_up(std::vector<Group>& groups, std::vector<std::vector<Node*>>& recomp,
                 std::vector<Node*> pre_changed, std::vector<Group> pre_nxt);
    void absorb(Node* y, std::vector<Member>& members, std::vector<Group>& nxt,
                std::vector<Node*>& changed);
    void place(Node* y, std::vector<K>& nt, std::vector<P>& nv, std::vector<Node*>* nk,
               std::vector<Group>& nxt, std::vector<Node*>& changed);
    void fill(Node* y, std::vector<K>& nt, std::vector<P>& nv, std::size_t from, std::size_t cnt,
              std::vector<Node*>* nk);
    template <class Eq>
    WINDOWAGG_COLD void check_node(Eq& eq, Node* y, int depth, const K* lo, const K* hi, bool ls, bool rs,
                    std::vector<int>& depths, std::size_t& seen) const;

    M m_;
    Less less_;
    int mu_, mink_, maxk_;
    std::uint32_t cap_;
    std::size_t off_keys_ = 0, off_vals_ = 0, off_kids_ = 0, leaf_bytes_ = 0, inner_bytes_ = 0;
    SpareBlocks spare_leaves_, spare_inner_;  // freed node blocks, reused by new_node
    Node* root_ = nullptr;
    Node* lf_ = nullptr;
    Node* rf_ = nullptr;
    std::vector<P> lsuf_;
    std::vector<P> suf_scratch_;
    std::size_t size_ = 0;
    std::size_t nodes_ = 0;
    bool stale_ = false;  // see stale()
    std::vector<Node*> graveyard_;
    std::vector<std::pair<K, P>> saved_;  // error path: entries taken out by the operation
};

}  // namespace windowagg

#include "fiba_nodes.hpp"
#include "fiba_rebalance.hpp"
#include "fiba_bulk.hpp"
#include "fiba_check.hpp"
#include "fiba_mapped.hpp"
