// OrderStatistics: a multiset with rank and k-th smallest, for exact windowed quantiles.
//
//   ordering        any (values, not time: insert and remove in any order)
//   operator needs  a strict weak order `less` on the keys (no monoid)
//   insert(x)       O(log n) expected
//   erase(x)        O(log n) expected (one occurrence)
//   kth(k)          O(log n) expected: the k-th smallest (0-based)
//   rank(x)         O(log n) expected: how many values are < x
//   space           one node per distinct value (a count for duplicates)
//   structure       a treap (Seidel & Aragon, "Randomized search trees", Algorithmica
//                   1996) with subtree sizes (order-statistic tree, CLRS 14.1), nodes in
//                   one pool with a free list
//
// Equal keys (neither less than the other) share one node: the key kept is the first one
// inserted while the node lives (the Python reference does the same). Every comparison of
// an operation happens in `locate`, before any change, and the structural steps (split /
// merge by rank) compare nothing: a `less` that throws leaves the multiset unchanged.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace windowagg {

template <class K, class Less>
class OrderStatistics {
  public:
    explicit OrderStatistics(Less less = Less{}) : less_(std::move(less)) {}

    int64_t size() const { return sz(root_); }
    std::size_t distinct() const { return pool_.size() - free_.size(); }

    // (number of values < x, node index of the key equal to x or -1). Read-only.
    std::pair<int64_t, int32_t> locate(const K& x) const {
        int64_t r = 0;
        int32_t t = root_;
        while (t >= 0) {
            const Node& n = pool_[t];
            if (less_(x, n.key)) {
                t = n.l;
            } else if (less_(n.key, x)) {
                r += sz(n.l) + n.cnt;
                t = n.r;
            } else {
                return {r + sz(n.l), t};
            }
        }
        return {r, -1};
    }
    int64_t rank(const K& x) const { return locate(x).first; }

    void insert(K x) {
        auto [r, node] = locate(x);
        if (node >= 0) {
            add_count(r, +1);
            return;
        }
        int32_t n = alloc(std::move(x));
        auto [a, b] = split(root_, r);
        root_ = merge(merge(a, n), b);
    }

    // Remove one value equal to x; false (nothing changed) when there is none.
    bool erase(const K& x) {
        auto [r, node] = locate(x);
        if (node < 0) return false;
        if (pool_[node].cnt > 1) {
            add_count(r, -1);
            return true;
        }
        auto [a, bc] = split(root_, r);
        auto [b, c] = split(bc, 1);
        release(b);
        root_ = merge(a, c);
        return true;
    }

    // precondition: 0 <= k < size()
    const K& kth(int64_t k) const {
        int32_t t = root_;
        for (;;) {
            const Node& n = pool_[t];
            int64_t ls = sz(n.l);
            if (k < ls) { t = n.l; continue; }
            k -= ls;
            if (k < n.cnt) return n.key;
            k -= n.cnt;
            t = n.r;
        }
    }

    // fn(key, count) for every distinct key, smallest first.
    template <class Fn> void for_each(Fn&& fn) const { walk(root_, fn); }

    void clear() {
        pool_.clear();
        free_.clear();
        root_ = -1;
    }

    // O(n): keys strictly increasing in order, sizes, counts > 0, heap order of priorities.
    std::string check() const {
        std::string err;
        const K* prev = nullptr;
        check_node(root_, prev, err);
        int64_t live = 0;
        count_nodes(root_, live);
        if (err.empty() && static_cast<std::size_t>(live) != distinct())
            err = "node pool: " + std::to_string(distinct()) + " live nodes, " + std::to_string(live) + " in the tree";
        return err;
    }

  private:
    struct Node {
        K key;
        int64_t size;  // values in the subtree (counts included)
        int64_t cnt;   // copies of this key
        uint32_t prio;
        int32_t l, r;
    };
    std::vector<Node> pool_;
    std::vector<int32_t> free_;
    int32_t root_ = -1;
    uint64_t rng_ = 0x9E3779B97F4A7C15ull;
    Less less_;

    int64_t sz(int32_t t) const { return t < 0 ? 0 : pool_[t].size; }
    void pull(int32_t t) {
        Node& n = pool_[t];
        n.size = sz(n.l) + sz(n.r) + n.cnt;
    }
    uint32_t next_prio() {  // xorshift64*
        rng_ ^= rng_ >> 12;
        rng_ ^= rng_ << 25;
        rng_ ^= rng_ >> 27;
        return static_cast<uint32_t>((rng_ * 0x2545F4914F6CDD1Dull) >> 32);
    }
    int32_t alloc(K x) {
        Node n{std::move(x), 1, 1, next_prio(), -1, -1};
        if (!free_.empty()) {
            int32_t i = free_.back();
            pool_[i] = std::move(n);
            free_.pop_back();
            return i;
        }
        pool_.push_back(std::move(n));
        return static_cast<int32_t>(pool_.size() - 1);
    }
    void release(int32_t t) {
        pool_[t].key = K{};
        free_.push_back(t);
    }
    // Add delta to the count of the node holding rank r (and to sizes on its path).
    void add_count(int64_t r, int64_t delta) {
        int32_t t = root_;
        for (;;) {
            Node& n = pool_[t];
            n.size += delta;
            int64_t ls = sz(n.l);
            if (r < ls) { t = n.l; continue; }
            r -= ls;
            if (r < n.cnt) { n.cnt += delta; return; }
            r -= n.cnt;
            t = n.r;
        }
    }
    // (the first k values, the rest); k falls on a node boundary.
    std::pair<int32_t, int32_t> split(int32_t t, int64_t k) {
        if (t < 0) return {-1, -1};
        Node& n = pool_[t];
        int64_t ls = sz(n.l);
        if (k <= ls) {
            auto [a, b] = split(n.l, k);
            pool_[t].l = b;
            pull(t);
            return {a, t};
        }
        auto [a, b] = split(n.r, k - ls - n.cnt);
        pool_[t].r = a;
        pull(t);
        return {t, b};
    }
    int32_t merge(int32_t a, int32_t b) {
        if (a < 0) return b;
        if (b < 0) return a;
        if (pool_[a].prio >= pool_[b].prio) {
            int32_t m = merge(pool_[a].r, b);
            pool_[a].r = m;
            pull(a);
            return a;
        }
        int32_t m = merge(a, pool_[b].l);
        pool_[b].l = m;
        pull(b);
        return b;
    }
    template <class Fn> void walk(int32_t t, Fn& fn) const {
        if (t < 0) return;
        walk(pool_[t].l, fn);
        fn(pool_[t].key, pool_[t].cnt);
        walk(pool_[t].r, fn);
    }
    void count_nodes(int32_t t, int64_t& c) const {
        if (t < 0) return;
        ++c;
        count_nodes(pool_[t].l, c);
        count_nodes(pool_[t].r, c);
    }
    void check_node(int32_t t, const K*& prev, std::string& err) const {
        if (t < 0 || !err.empty()) return;
        const Node& n = pool_[t];
        for (int32_t c : {n.l, n.r})
            if (c >= 0 && pool_[c].prio > n.prio) err = "heap order of priorities broken";
        check_node(n.l, prev, err);
        if (!err.empty()) return;
        if (n.cnt < 1) err = "a node with count " + std::to_string(n.cnt);
        if (prev && !less_(*prev, n.key)) err = "keys not strictly increasing in order";
        if (n.size != sz(n.l) + sz(n.r) + n.cnt) err = "subtree size broken";
        prev = &n.key;
        check_node(n.r, prev, err);
    }
};

}  // namespace windowagg
