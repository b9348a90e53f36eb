// OrderStatistics: a multiset with rank and k-th smallest, for exact windowed quantiles.
//
//   ordering        any (values, not time: insert and remove in any order)
//   operator needs  a strict weak order `less` on the keys (no monoid)
//   insert(x, c)    O(log n) worst case: O(B log_B n) with fanout B = 64 (c copies of x)
//   erase(x)        O(log n) worst case (one occurrence)
//   kth(k)          O(log n) worst case: the k-th smallest (0-based)
//   rank(x)         O(log n) worst case: how many values are < x
//   space           O(n): one slot per distinct value (a count for duplicates); every node
//                   but the root holds at least B/4 slots
//   structure       a counted B+ tree: an order-statistic tree (CLRS 14.1) with the wide
//                   nodes of a B+ tree (Bayer & McCreight 1972), so a search touches a few
//                   cache-resident arrays instead of ~2 log2 n scattered nodes; searches
//                   inside a node are branchless (Khuong & Morin, "Array layouts for
//                   comparison-based searching", 2017): random keys mispredict every
//                   branch of a binary search
//
// Leaves hold sorted distinct keys with their counts; inner nodes hold, per child, the number
// of values below it, and separators sep[i] with keys(child i) < sep[i] <= keys(child i+1).
// Equal keys (neither less than the other) share one slot: the key kept is the first one
// inserted while the slot lives (the Python reference does the same). Every comparison of an
// operation happens on the way down, before any change, and new nodes are allocated before
// anything moves: a `less` that throws (or a failed allocation) leaves the multiset unchanged.
// A node that an erase leaves with fewer than B/4 slots takes slots from a neighbour, or is
// merged with it when both fit in 3B/4 (the parent may then underflow in turn), so a tree
// that shrinks gets smaller and shallower with it. A full leaf with a neighbour of at most
// 3B/4 slots shares its slots with it instead of splitting (a B*-tree's overflow, Knuth
// 6.2.4). Neither compares nor allocates, so insert and erase still change nothing until
// their search is over. A window's churn (10^5 random doubles, 2 * 10^6 rounds of insert
// one, erase the oldest) leaves 2,419 leaves 65% full, where a tree without both had
// thinned out to 3,231 leaves 48% full and kept growing.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <utility>

namespace windowagg {

template <class K, class Less, int Fanout = 64>
class OrderStatistics {
  public:
    static constexpr int B = Fanout;     // slots per node (tests use small ones: deep trees)
    static constexpr int kMin = B / 4;   // slots of every node but the root
    static constexpr int kMerge = 3 * B / 4;  // two neighbours this small become one node
    static_assert(B >= 8, "a node must be able to split into two nodes of at least B/4 slots");

    explicit OrderStatistics(Less less = Less{}) : less_(std::move(less)) {}
    ~OrderStatistics() { free_tree(root_); }
    OrderStatistics(const OrderStatistics&) = delete;
    OrderStatistics& operator=(const OrderStatistics&) = delete;
    OrderStatistics(OrderStatistics&& o) noexcept : less_(std::move(o.less_)) { swap(o); }
    OrderStatistics& operator=(OrderStatistics&& o) noexcept {
        swap(o);
        return *this;
    }

    int64_t size() const { return total_; }

    int64_t rank(const K& x) const {
        int64_t r = 0;
        const Node* t = root_;
        if (!t) return 0;
        while (!t->leaf) {
            int i = child_of(t, x);
            for (int j = 0; j < i; ++j) r += t->cnt[j];
            t = kids(t)[i];
        }
        int j = lower(t, x);
        for (int u = 0; u < j; ++u) r += t->cnt[u];
        return r;
    }

    // Add `copies` (>= 1) values equal to x.
    void insert(K x, int64_t copies = 1) {
        if (!root_) {
            Node* n = make_node(true);
            n->keys[0] = std::move(x);
            n->cnt[0] = copies;
            n->n = 1;
            root_ = n;
            total_ = copies;
            return;
        }
        Path path;
        Node* leaf = descend(x, path);
        int j = lower(leaf, x);
        if (j < leaf->n && !less_(x, leaf->keys[j])) {  // an equal key: one more copy
            leaf->cnt[j] += copies;
            bump(path, copies);
            return;
        }
        // A full leaf shares its slots with a neighbour that has room (a B*-tree's overflow,
        // Knuth 6.2.4) instead of splitting: leaves stay about 3/4 full, not 1/2
        if (leaf->n == B - 1 && path.depth > 0) {
            Node* p = path.node[path.depth - 1];
            int i = path.idx[path.depth - 1];
            int li = -1;  // the pair (li, li + 1) to even out: the leaf and its emptier neighbour
            if (i > 0 && kids(p)[i - 1]->n <= kMerge) li = i - 1;
            if (i + 1 < p->n && kids(p)[i + 1]->n <= kMerge && (li < 0 || kids(p)[i + 1]->n < kids(p)[i - 1]->n))
                li = i;
            if (li >= 0) {
                bump(path, copies);
                insert_slot(leaf, j, std::move(x), copies);
                even_out(p, li);
                return;
            }
        }
        // the nodes a split cascade needs, allocated before anything changes
        // (a node holds at most B - 1 slots between operations; reaching B means a split)
        int splits = 0;
        if (leaf->n == B - 1) {
            splits = 1;
            for (int d = path.depth - 1; d >= 0 && path.node[d]->n == B - 1; --d) ++splits;
        }
        Spare spare;
        for (int s = 0; s < splits; ++s) spare.add(s == 0);
        if (splits > path.depth) spare.add(false);  // a new root
        // from here on nothing compares and nothing allocates
        bump(path, copies);
        insert_slot(leaf, j, std::move(x), copies);
        if (splits == 0) return;
        int next = 0;
        Node* left = leaf;
        Node* right = split(left, spare.take(next++));
        for (int d = path.depth - 1;; --d) {
            K sep = first_key(right);
            if (d < 0) {  // the root split: a new root above both halves
                Node* r = spare.take(next++);
                kids(r)[0] = left;
                kids(r)[1] = right;
                r->cnt[0] = weight(left);
                r->cnt[1] = weight(right);
                r->keys[0] = std::move(sep);
                r->n = 2;
                root_ = r;
                return;
            }
            Node* p = path.node[d];
            int i = path.idx[d];
            insert_child(p, i, std::move(sep), right, weight(left), weight(right));
            if (p->n < B) return;
            left = p;
            right = split(left, spare.take(next++));
        }
    }

    // Remove one value equal to x; false (nothing changed) when there is none.
    bool erase(const K& x) {
        if (!root_) return false;
        Path path;
        Node* leaf = descend(x, path);
        int j = lower(leaf, x);
        if (j == leaf->n || less_(x, leaf->keys[j])) return false;
        bump(path, -1);
        if (leaf->cnt[j] > 1) {
            --leaf->cnt[j];
            return true;
        }
        remove_slot(leaf, j);
        Node* t = leaf;
        for (int d = path.depth - 1; d >= 0 && t->n < kMin; --d) {  // refill an underfull node
            Node* p = path.node[d];
            int i = path.idx[d];
            int li = i + 1 < p->n ? i : i - 1;  // the pair (li, li + 1): t and a neighbour
            if (kids(p)[li]->n + kids(p)[li + 1]->n > kMerge) {
                even_out(p, li);  // both end with more than kMerge / 2 slots: done
                break;
            }
            merge(p, li);
            t = p;
        }
        if (t == root_ && t->n == 0) {  // the root leaf emptied
            destroy(t);
            root_ = nullptr;
        }
        while (root_ && !root_->leaf && root_->n == 1) {  // collapse a single-child root
            Node* c = kids(root_)[0];
            root_->n = 0;
            destroy(root_);
            root_ = c;
        }
        return true;
    }

    // precondition: 0 <= k < size()
    const K& kth(int64_t k) const {
        const Node* t = root_;
        int64_t w = total_;  // values under t
        while (!t->leaf) {
            int i = 0;
            // four children at a time first: their sum does not wait on k, halving the
            // dependent subtractions of a scan to the middle (a median)
            for (; i + 4 <= t->n; i += 4) {
                int64_t s4 = t->cnt[i] + t->cnt[i + 1] + t->cnt[i + 2] + t->cnt[i + 3];
                if (k < s4) break;
                k -= s4;
            }
            while (k >= t->cnt[i]) k -= t->cnt[i++];
            w = t->cnt[i];
            t = kids(t)[i];
        }
        if (w == t->n) return t->keys[k];  // every key of the leaf once: no counts to walk
        int i = 0;
        while (k >= t->cnt[i]) k -= t->cnt[i++];
        return t->keys[i];
    }

    // fn(key, count) for every distinct key, smallest first.
    template <class Fn> void for_each(Fn&& fn) const { walk(root_, fn); }
    // fn(key) for every key slot of every node (separators and unused slots included), once
    // each: the binding's garbage-collector traversal. O(n). Not during an operation.
    template <class Fn> void for_each_owned(Fn&& fn) const { owned(root_, fn); }

    void clear() {
        free_tree(root_);
        root_ = nullptr;
        total_ = 0;
    }

    // O(n): keys strictly increasing, separators bound their children, counts add up,
    // every leaf at the same depth, no empty node.
    std::string check() const {
        if (!root_) return total_ == 0 ? std::string() : "empty tree with a non-zero size";
        std::string err;
        const K* prev = nullptr;
        int leaf_depth = -1;
        int64_t w = check_node(root_, 0, leaf_depth, prev, nullptr, nullptr, err);
        if (err.empty() && w != total_) err = "size " + std::to_string(total_) + " != " + std::to_string(w) + " values";
        return err;
    }

  private:
    // A leaf is a bare Node; an inner node is an Inner (a Node followed by its children), so
    // leaves, most of the tree, carry no child pointers: fewer bytes to bring into the cache.
    struct Node {
        explicit Node(bool is_leaf) : leaf(is_leaf) {}
        bool leaf;
        int n = 0;          // slots in use (leaf: keys; inner: children)
        K keys[B];          // leaf: sorted distinct keys; inner: keys[i] separates kids i, i+1
        int64_t cnt[B];     // leaf: copies of keys[i]; inner: values under kids[i]
    };
    struct Inner : Node {
        Inner() : Node(false) {}
        Node* kids[B];
    };
    static Node** kids(Node* t) { return static_cast<Inner*>(t)->kids; }
    static Node* const* kids(const Node* t) { return static_cast<const Inner*>(t)->kids; }
    static Node* make_node(bool is_leaf) {
        if (is_leaf) return new Node(true);
        return new Inner();
    }
    // Node has no virtual destructor: delete as the dynamic type
    static void destroy(Node* t) {
        if (t->leaf) delete t;
        else delete static_cast<Inner*>(t);
    }
    struct Spare {  // nodes allocated ahead of a split cascade; taken ones are nullptr
        Node* node[66];  // only the first n are set (not zeroed: this is on every insert's path)
        int n = 0;
        ~Spare() {
            for (int i = 0; i < n; ++i)
                if (node[i]) destroy(node[i]);
        }
        void add(bool is_leaf) { node[n] = make_node(is_leaf); ++n; }
        Node* take(int i) { Node* t = node[i]; node[i] = nullptr; return t; }
    };
    struct Path {
        Node* node[64];
        int idx[64];
        int depth = 0;
    };

    Node* root_ = nullptr;
    int64_t total_ = 0;
    Less less_;

    void swap(OrderStatistics& o) noexcept {
        std::swap(root_, o.root_);
        std::swap(total_, o.total_);
    }
    static void free_tree(Node* t) {
        if (!t) return;
        if (!t->leaf)
            for (int i = 0; i < t->n; ++i) free_tree(kids(t)[i]);
        destroy(t);
    }
    // the child of inner node t that x belongs to: the number of separators <= x
    int child_of(const Node* t, const K& x) const {
        // branchless upper bound over the n - 1 separators (Khuong & Morin's form)
        int m = t->n - 1;
        if (m <= 0) return 0;
        const K* base = t->keys;
        while (m > 1) {
            int half = m >> 1;
            base += less_(x, base[half]) ? 0 : half;
            m -= half;
        }
        return static_cast<int>(base - t->keys) + (less_(x, *base) ? 0 : 1);
    }
    // first slot of leaf t whose key is not < x
    int lower(const Node* t, const K& x) const {
        // branchless lower bound (Khuong & Morin's form)
        int m = t->n;
        if (m <= 0) return 0;
        const K* base = t->keys;
        while (m > 1) {
            int half = m >> 1;
            base += less_(base[half], x) ? half : 0;
            m -= half;
        }
        return static_cast<int>(base - t->keys) + (less_(*base, x) ? 1 : 0);
    }
    Node* descend(const K& x, Path& path) const {
        Node* t = root_;
        while (!t->leaf) {
            int i = child_of(t, x);
            path.node[path.depth] = t;
            path.idx[path.depth++] = i;
            t = kids(t)[i];
        }
        return t;
    }
    void bump(const Path& path, int64_t d) {
        for (int i = 0; i < path.depth; ++i) path.node[i]->cnt[path.idx[i]] += d;
        total_ += d;
    }
    static int64_t weight(const Node* t) {
        int64_t w = 0;
        for (int i = 0; i < t->n; ++i) w += t->cnt[i];
        return w;
    }
    static const K& first_key(const Node* t) {
        while (!t->leaf) t = kids(t)[0];
        return t->keys[0];
    }
    static void insert_slot(Node* t, int j, K x, int64_t c) {
        if constexpr (std::is_trivially_copyable_v<K>) {  // plain numbers: two block moves
            std::memmove(t->keys + j + 1, t->keys + j, sizeof(K) * static_cast<std::size_t>(t->n - j));
            std::memmove(t->cnt + j + 1, t->cnt + j, sizeof(int64_t) * static_cast<std::size_t>(t->n - j));
        } else {
            for (int u = t->n; u > j; --u) {
                t->keys[u] = std::move(t->keys[u - 1]);
                t->cnt[u] = t->cnt[u - 1];
            }
        }
        t->keys[j] = std::move(x);
        t->cnt[j] = c;
        ++t->n;
    }
    static void remove_slot(Node* t, int j) {
        if constexpr (std::is_trivially_copyable_v<K>) {
            std::memmove(t->keys + j, t->keys + j + 1, sizeof(K) * static_cast<std::size_t>(t->n - j - 1));
            std::memmove(t->cnt + j, t->cnt + j + 1, sizeof(int64_t) * static_cast<std::size_t>(t->n - j - 1));
            --t->n;
            return;
        }
        for (int u = j; u + 1 < t->n; ++u) {
            t->keys[u] = std::move(t->keys[u + 1]);
            t->cnt[u] = t->cnt[u + 1];
        }
        --t->n;
        t->keys[t->n] = K{};
    }
    // child i of inner node p split: `right` (weight wr) goes after it; child i now weighs wl
    static void insert_child(Node* p, int i, K sep, Node* right, int64_t wl, int64_t wr) {
        for (int u = p->n; u > i + 1; --u) {
            kids(p)[u] = kids(p)[u - 1];
            p->cnt[u] = p->cnt[u - 1];
        }
        for (int u = p->n - 1; u > i; --u) p->keys[u] = std::move(p->keys[u - 1]);
        kids(p)[i + 1] = right;
        p->cnt[i] = wl;
        p->cnt[i + 1] = wr;
        p->keys[i] = std::move(sep);
        ++p->n;
    }
    static void remove_child(Node* p, int i) {
        for (int u = i; u + 1 < p->n; ++u) {
            kids(p)[u] = kids(p)[u + 1];
            p->cnt[u] = p->cnt[u + 1];
        }
        int s = i > 0 ? i - 1 : 0;  // the separator that bounded the removed child
        for (int u = s; u + 2 < p->n; ++u) p->keys[u] = std::move(p->keys[u + 1]);
        if (p->n >= 2) p->keys[p->n - 2] = K{};
        --p->n;
    }
    // Children li and li + 1 of p (same kind, at most kMerge slots together) become child
    // li: the right one's slots (and, between inner nodes, the separator from p) are
    // appended to the left one, which is freed.
    void merge(Node* p, int li) {
        Node* l = kids(p)[li];
        Node* r = kids(p)[li + 1];
        append_front(p, li, l, r, r->n);
        r->n = 0;
        p->cnt[li] += p->cnt[li + 1];
        remove_child(p, li + 1);  // also drops separator li (moved from above when inner)
        destroy(r);
    }
    // Children li and li + 1 of p (more than kMerge slots together) share their slots
    // evenly: slots move from the fuller one across p's separator li.
    void even_out(Node* p, int li) {
        Node* l = kids(p)[li];
        Node* r = kids(p)[li + 1];
        const int goal = (l->n + r->n) / 2;
        const bool leaf = l->leaf;
        int64_t w = 0;  // values moved
        if (l->n < goal) {  // the first s slots of r go to the end of l
            const int s = goal - l->n;
            w = append_front(p, li, l, r, s);
            if (!leaf) p->keys[li] = std::move(r->keys[s - 1]);  // r's (s - 1)th separator goes up
            shift_down(r, s);
            p->cnt[li] += w;
            p->cnt[li + 1] -= w;
        } else {  // the last s slots of l go to the front of r
            const int s = l->n - goal;
            shift_up(r, s);
            const int from = l->n - s;
            for (int u = 0; u < s; ++u) {
                w += l->cnt[from + u];
                r->cnt[u] = l->cnt[from + u];
                if (leaf) r->keys[u] = std::move(l->keys[from + u]);
                else kids(r)[u] = kids(l)[from + u];
            }
            if (!leaf) {  // separators: p's comes down to r, l's (from - 1)th goes up
                r->keys[s - 1] = std::move(p->keys[li]);
                for (int u = 0; u + 1 < s; ++u) r->keys[u] = std::move(l->keys[from + u]);
                p->keys[li] = std::move(l->keys[from - 1]);
                for (int u = from - 1; u < l->n - 1; ++u) l->keys[u] = K{};
            } else {
                for (int u = from; u < l->n; ++u) l->keys[u] = K{};
            }
            l->n = from;
            p->cnt[li] -= w;
            p->cnt[li + 1] += w;
        }
        if (leaf) p->keys[li] = r->keys[0];  // any key in (max l, min r] separates them
    }
    // Append the first s slots of r (child li + 1 of p) to l (child li); between inner nodes
    // p's separator li comes down first, then r's first s - 1 separators follow. r keeps
    // its slots (moved-from); the caller drops or frees them. Returns the values moved.
    static int64_t append_front(Node* p, int li, Node* l, Node* r, int s) {
        int64_t w = 0;
        for (int u = 0; u < s; ++u) {
            w += r->cnt[u];
            l->cnt[l->n + u] = r->cnt[u];
            if (l->leaf) l->keys[l->n + u] = std::move(r->keys[u]);
            else kids(l)[l->n + u] = kids(r)[u];
        }
        if (!l->leaf) {
            l->keys[l->n - 1] = std::move(p->keys[li]);
            for (int u = 0; u + 1 < s; ++u) l->keys[l->n + u] = std::move(r->keys[u]);
        }
        l->n += s;
        return w;
    }
    // Drop the first s slots of t (and its first s separators when inner), moving the rest
    // to the front; the freed slots at the end are reset.
    static void shift_down(Node* t, int s) {
        const int seps = t->leaf ? t->n : t->n - 1;  // key slots in use
        for (int u = 0; u + s < t->n; ++u) {
            t->cnt[u] = t->cnt[u + s];
            if (!t->leaf) kids(t)[u] = kids(t)[u + s];
        }
        for (int u = 0; u + s < seps; ++u) t->keys[u] = std::move(t->keys[u + s]);
        for (int u = seps - s; u < seps; ++u) t->keys[u] = K{};
        t->n -= s;
    }
    // Open s slots at the front of t (and s separators when inner) for the caller to fill.
    static void shift_up(Node* t, int s) {
        const int seps = t->leaf ? t->n : t->n - 1;
        for (int u = t->n - 1; u >= 0; --u) {
            t->cnt[u + s] = t->cnt[u];
            if (!t->leaf) kids(t)[u + s] = kids(t)[u];
        }
        for (int u = seps - 1; u >= 0; --u) t->keys[u + s] = std::move(t->keys[u]);
        t->n += s;
    }
    // Move the upper half of full node t into r (a fresh node of the same kind); return r.
    static Node* split(Node* t, Node* r) {
        int h = t->n / 2;
        int m = t->n - h;
        for (int u = 0; u < m; ++u) {
            r->cnt[u] = t->cnt[h + u];
            if (t->leaf) r->keys[u] = std::move(t->keys[h + u]);
            else kids(r)[u] = kids(t)[h + u];
        }
        if (!t->leaf) {  // separators: t keeps h-1, r gets m-1, keys[h-1] goes up (recomputed)
            for (int u = 0; u + 1 < m; ++u) r->keys[u] = std::move(t->keys[h + u]);
            for (int u = h - 1; u < t->n - 1; ++u) t->keys[u] = K{};
        }
        r->n = m;
        t->n = h;
        return r;
    }
    template <class Fn> static void owned(const Node* t, Fn& fn) {
        if (!t) return;
        for (int i = 0; i < B; ++i) fn(t->keys[i]);
        if (!t->leaf)
            for (int i = 0; i < t->n; ++i) owned(kids(t)[i], fn);
    }
    template <class Fn> static void walk(const Node* t, Fn& fn) {
        if (!t) return;
        if (t->leaf) {
            for (int i = 0; i < t->n; ++i) fn(t->keys[i], t->cnt[i]);
            return;
        }
        for (int i = 0; i < t->n; ++i) walk(kids(t)[i], fn);
    }
    int64_t check_node(const Node* t, int depth, int& leaf_depth, const K*& prev, const K* lo, const K* hi,
                       std::string& err) const {
        if (!err.empty()) return 0;
        if (t->n < 1) { err = "an empty node"; return 0; }
        if (depth > 0 && t->n < kMin) { err = "a node with " + std::to_string(t->n) + " slots (fewer than B/4)"; return 0; }
        if (depth == 0 && !t->leaf && t->n < 2) { err = "an inner root with one child"; return 0; }
        if (t->leaf) {
            if (leaf_depth < 0) leaf_depth = depth;
            if (depth != leaf_depth) { err = "leaves at different depths"; return 0; }
            int64_t w = 0;
            for (int i = 0; i < t->n; ++i) {
                if (t->cnt[i] < 1) err = "a key with count " + std::to_string(t->cnt[i]);
                if (prev && !less_(*prev, t->keys[i])) err = "keys not strictly increasing";
                if (lo && less_(t->keys[i], *lo)) err = "a key below its separator";
                if (hi && !less_(t->keys[i], *hi)) err = "a key not below the next separator";
                prev = &t->keys[i];
                w += t->cnt[i];
            }
            return w;
        }
        int64_t w = 0;
        for (int i = 0; i < t->n; ++i) {
            const K* l = i > 0 ? &t->keys[i - 1] : lo;
            const K* h = i + 1 < t->n ? &t->keys[i] : hi;
            int64_t c = check_node(kids(t)[i], depth + 1, leaf_depth, prev, l, h, err);
            if (err.empty() && c != t->cnt[i]) err = "child count " + std::to_string(t->cnt[i]) + " != " + std::to_string(c);
            w += c;
        }
        return w;
    }
};

}  // namespace windowagg
