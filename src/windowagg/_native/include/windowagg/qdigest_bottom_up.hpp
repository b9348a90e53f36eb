// The q-digest's compress for any digest, bottom-up (qdigest.hpp's QDigestCore uses it when
// a count is not an integer or n > 2^53): fold a sibling pair and its parent into the
// parent while the three hold <= th = eps*n/L: the Python dict kernel's result
// (windowagg.sketches._qdigest_kernels.compress_dict), node for node and float for float.
//
// The kernel walks every level; here only the nodes where something can happen are
// visited: the stored nodes and the branching points of the trie they span (the lowest
// common ancestors of neighbours in pre-order), a "virtual tree" of <= 2s nodes. Between
// two of them a node is alone on its level (no sibling, no parent stored), so the kernel
// moves it up one level per step with its count unchanged (c + 0.0 + 0.0 = c) while
// c <= eps*n/L: the whole chain is one step here. Each subtree is finished before its
// parent is visited (post-order), as the kernel finishes a level before the one above.
//
// Time: O(s + i log i) for s nodes, i of them inner (the leaves arrive sorted: radix_sort;
// the inner nodes, at most ~4L/eps survivors of the last compress, sorted by comparison),
// O(s) after the sorts. Space: O(s) scratch, kept between calls (a fresh one each time
// costs the kernel's page zeroing).
#pragma once

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "radix_sort.hpp"

namespace windowagg {

class QDigestBottomUp {
public:
    // a leaf (offset at depth L, count): the leaves arrive sorted by offset
    struct Leaf {
        uint64_t off;
        double cnt;
    };
    // a survivor of the compress (depth, offset, count)
    struct Out {
        int depth;
        uint64_t off;
        double cnt;
    };
    // The leaves sorted by offset (radix_sort.hpp), as the compress takes them. O(b) for b
    // leaves (a comparison sort below 512). Measured on 10M float keys at eps = 0.02
    // (benchmarks/cpp/qdigest_floor.cpp): the digest's update rate 7.5 -> 14 M keys/s of CPU
    // against std::sort of every node; 11-bit digits (6 passes) measured no different.
    static void radix_sort(std::vector<Leaf>& a, std::vector<Leaf>& tmp) {
        radix_sort_by(a, tmp, [](const Leaf& x) { return x.off; }, [](std::vector<Leaf>& v) {
            std::sort(v.begin(), v.end(), [](const Leaf& x, const Leaf& y) { return x.off < y.off; });
        });
    }

    // The compress of the leaves (sorted by offset; every stored node of depth L) and the
    // inner nodes inner(f) gives, calling f(depth, offset, count) for each stored node of
    // depth < L (each once, any order); th = eps*n/L. Returns the survivors (scratch of
    // this object, valid until the next call), in the order the walk finishes them.
    // O(s + i log i).
    template <class Inner>
    const std::vector<Out>& run(int L, double th, const std::vector<Leaf>& leaves, Inner&& inner) {
        std::vector<Key>& keys = keys_;
        std::vector<std::pair<uint64_t, double>>& raw = raw_;
        keys.clear();
        raw.clear();
        inner([&](int d, uint64_t off, double c) {
            keys.push_back(Key{low(off, L - d), static_cast<uint32_t>(d), static_cast<uint32_t>(raw.size())});
            raw.emplace_back(off, c);
        });
        std::sort(keys.begin(), keys.end(), [](const Key& a, const Key& b) {
            return a.lo != b.lo ? a.lo < b.lo : a.depth < b.depth;
        });
        std::vector<VNode>& v = v_;
        v.clear();
        v.reserve(2 * (keys.size() + leaves.size()) + 2);
        if (keys.empty() || keys[0].depth != 0) v.push_back(VNode{0, 0.0, 0, false});  // the root, unstored
        // pre-order: by range start, an ancestor before its descendants (a leaf's start is
        // its offset, and it is the deepest node starting there)
        {
            std::size_t i = 0, j = 0, at = v.size();
            v.resize(at + keys.size() + leaves.size());  // written in place: no push per node
            VNode* w = v.data() + at;
            while (i < keys.size() || j < leaves.size()) {
                VNode& n = *w++;
                if (j == leaves.size() || (i < keys.size() && keys[i].lo <= leaves[j].off)) {
                    const Key& k = keys[i++];
                    n.off = raw[k.slot].first;
                    n.cnt = raw[k.slot].second;
                    n.depth = static_cast<int>(k.depth);
                } else {
                    n.off = leaves[j].off;
                    n.cnt = leaves[j].cnt;
                    n.depth = L;
                    ++j;
                }
                n.stored = true;
            }
        }
        std::vector<Out>& out = out_;
        out.clear();
        out.reserve(v.size());
        // the path from the root to the last node visited, as indices into `v`
        std::vector<std::size_t>& stack = stack_;
        stack.clear();
        const std::size_t first = 1;  // v[0] is the root, stored or not
        stack.push_back(0);
        const std::size_t stored_end = v.size();
        for (std::size_t i = first; i < stored_end; ++i) {
            std::size_t top = stack.back();
            if (!is_ancestor(v[top], v[i])) {
                auto [ld, loff] = lca(v[top], v[i]);
                while (stack.size() >= 2 && v[stack[stack.size() - 2]].depth >= ld) {
                    attach(v, stack[stack.size() - 2], stack.back(), th, out);
                    stack.pop_back();
                }
                if (v[stack.back()].depth > ld) {  // a branching point nobody stores
                    v.push_back(VNode{loff, 0.0, ld, false});
                    std::size_t b = v.size() - 1;
                    attach(v, b, stack.back(), th, out);
                    stack.back() = b;
                }
            }
            stack.push_back(i);
        }
        while (stack.size() >= 2) {
            attach(v, stack[stack.size() - 2], stack.back(), th, out);
            stack.pop_back();
        }
        finish(v, 0, th, out);
        if (v[0].present) out.push_back(Out{0, 0, v[0].cnt});
        return out;
    }

private:
    static uint64_t low(uint64_t off, int shift) { return shift >= 64 ? 0 : off << shift; }

    // a node of the virtual tree: stored (cnt its count) or a branching point; `present`
    // and `cnt` become its state when its level is reached (finish), side[0/1] its
    // children's indices (or npos)
    struct VNode {
        uint64_t off;
        double cnt;
        int depth;
        bool stored;
        bool present = false;
        bool done = false;
        std::size_t side[2] = {npos, npos};
    };
    static constexpr std::size_t npos = ~std::size_t{0};
    struct Key {
        uint64_t lo;
        uint32_t depth;
        uint32_t slot;
    };

    static bool is_ancestor(const VNode& a, const VNode& b) {
        if (a.depth > b.depth) return false;
        int up = b.depth - a.depth;
        return (up >= 64 ? 0 : b.off >> up) == a.off;
    }
    // (depth, offset) of the lowest common ancestor
    static std::pair<int, uint64_t> lca(const VNode& a, const VNode& b) {
        int m = std::min(a.depth, b.depth);
        uint64_t pa = a.depth - m >= 64 ? 0 : a.off >> (a.depth - m);
        uint64_t pb = b.depth - m >= 64 ? 0 : b.off >> (b.depth - m);
        int diff = pa == pb ? 0 : 64 - std::countl_zero(pa ^ pb);
        int d = m - diff;
        return {d, diff >= 64 ? 0 : pa >> diff};
    }
    // child c (finished below) hangs under parent p: record it on its side
    void attach(std::vector<VNode>& v, std::size_t p, std::size_t c, double th, std::vector<Out>& out) {
        finish(v, c, th, out);
        int up = v[c].depth - v[p].depth - 1;  // levels between them
        uint64_t at = up >= 64 ? 0 : v[c].off >> up;  // c's ancestor one level below p
        v[p].side[at & 1] = c;
    }
    // v[i]'s children are finished: run the kernel's step at the level below i (the pair
    // of i's children, with i as the parent), after each child's chain climbed to it
    void finish(std::vector<VNode>& v, std::size_t i, double th, std::vector<Out>& out) {
        VNode& n = v[i];
        if (n.done) return;
        n.done = true;
        bool any = false;
        bool has[2] = {false, false};
        double cs[2] = {0.0, 0.0};
        uint64_t offs[2] = {0, 0};
        for (int s = 0; s < 2; ++s) {
            std::size_t c = n.side[s];
            if (c == npos) continue;
            VNode& ch = v[c];
            offs[s] = (n.off << 1) | static_cast<uint64_t>(s);  // n.depth < L <= 64: no shift past 63
            if (ch.depth == n.depth + 1) {
                has[s] = ch.present;
                cs[s] = ch.cnt;
            } else if (ch.present && ch.cnt <= th) {  // climbs its chain: one node at depth + 1
                has[s] = true;
                cs[s] = ch.cnt;
            } else if (ch.present) {
                out.push_back(Out{ch.depth, ch.off, ch.cnt});  // stays where it is
            }
            any = any || has[s];
        }
        n.present = n.stored;
        if (!any) return;
        double tot = (cs[0] + cs[1]) + (n.stored ? n.cnt : 0.0);
        if (tot <= th) {
            n.present = true;
            n.cnt = tot;
            return;
        }
        for (int s = 0; s < 2; ++s)
            if (has[s]) out.push_back(Out{n.depth + 1, offs[s], cs[s]});
    }

    std::vector<Key> keys_;
    std::vector<std::pair<uint64_t, double>> raw_;
    std::vector<VNode> v_;
    std::vector<Out> out_;
    std::vector<std::size_t> stack_;
};

}  // namespace windowagg
