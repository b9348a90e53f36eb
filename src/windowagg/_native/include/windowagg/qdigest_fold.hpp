// The q-digest's compress for integral digests, top down (qdigest.hpp's QDigestCore uses it
// when every count is an integer and n <= 2^53): the same nodes as the bottom-up kernel of
// windowagg.sketches._qdigest_kernels (compress_dict), visiting only the nodes that hold
// more than the threshold.
//
// Why it is the kernel's result. The kernel folds a sibling pair and its parent into the
// parent, level by level from the leaves up, while the three hold <= th = eps*n/L. A node
// whose subtree holds W <= th in all ("light") ends as one node holding W at its root: each
// node below it holds at most W, so every fold below it happens, and with integer counts
// below 2^53 every order of those additions gives W exactly. So only the "heavy" nodes
// (W > th) need the kernel's step; a light child of a heavy node is the one node it folds to,
// climbed to the level below its parent (a node alone on its level moves up unchanged while
// it holds <= th). Between two heavy nodes of the recursion a node with one non-empty child
// is the kernel's single-child step (fold if child + own <= th), so the recursion may skip
// any stretch of nodes that store nothing and have one child: it visits the lowest common
// ancestor of a subtree's contents (as the bottom-up pass's virtual tree does).
//
// How the leaves are ordered. The leaves of count 1 arrive as bare keys, one entry per unit
// of count (a key may repeat), in any order (a hash level's, or as update_many gave them);
// every other node, a leaf of another count included, arrives in pre-order. Only the
// ranges of heavy nodes are ever split: a heavy range is partitioned by the next 6 to 11 key
// bits below those all its leaves share (a counting scatter between two buffers) when the
// recursion first needs a bit below what it is ordered by, and ranges of at most 32 leaves
// are sorted whole. A light subtree is never ordered inside. The weight of a range of keys
// is its length. The survivors leave in pre-order: each visited node takes its output slot
// when first reached.
//
// Time: O(s) for the weights and the scatters (each leaf is scattered at most L/6 times,
// once per refinement of a heavy range holding it) plus O(h log s) for h heavy nodes'
// binary searches; about 2 scatters per leaf on float keys at eps = 0.02. Space: O(s)
// scratch, kept between calls.
#pragma once

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <utility>
#include <vector>

namespace windowagg {

class QDigestFold {
public:
    // a node (depth, offset, count); depth -1 marks an output slot left empty
    struct Node {
        uint64_t off;
        double cnt;
        int depth;
    };

    // keys: leaves as offsets at depth L in any order (reordered here), one entry per unit
    // of count (a key may repeat); nodes: the other nodes (any depth <= L, each once; a leaf
    // here and in keys counts both) in pre-order (by range start, an ancestor before its
    // descendants);
    // every count an integer and their total <= 2^53; th = eps*n/L. out: the survivors in
    // pre-order.
    void run(int L, double th, std::vector<uint64_t>& keys, const std::vector<Node>& nodes, std::vector<Node>& out) {
        L_ = L;
        th_ = th;
        in_ = nodes.data();
        const std::size_t m = keys.size(), k = nodes.size();
        tmp_.resize(m);
        cnt_.resize((std::size_t{1} << 11) + 1);
        buf_[0] = keys.data();
        buf_[1] = tmp_.data();
        pi_.resize(k + 1);
        lo_.resize(k);
        pi_[0] = 0.0;
        for (std::size_t i = 0; i < k; ++i) {
            pi_[i + 1] = pi_[i] + in_[i].cnt;
            lo_[i] = low(in_[i].off, L_ - in_[i].depth);
        }
        out_ = &out;
        out.clear();
        if (m + k == 0) return;
        out.push_back(Node{0, 0.0, -1});  // the root's slot
        const double w = static_cast<double>(m) + pi_[k];
        State root = w <= th_ ? State{true, w} : solve(0, 0, 0, m, 0, k, 0, 0);
        if (root.present) out[0] = Node{0, root.cnt, 0};
        std::size_t j = 0;
        for (const Node& n : out)
            if (n.depth >= 0) out[j++] = n;
        out.resize(j);
    }

private:
    struct State {
        bool present;
        double cnt;
    };
    static constexpr std::size_t kSmall = 32;  // ranges this short are sorted whole

    static uint64_t low(uint64_t off, int shift) { return shift >= 64 ? 0 : off << shift; }
    // the ancestor at depth d of the node (depth nd, offset off), d <= nd
    static uint64_t up(uint64_t off, int nd, int d) { return nd - d >= 64 ? 0 : off >> (nd - d); }
    // lowest common ancestor of two nodes: (depth, offset)
    static std::pair<int, uint64_t> lca(int da, uint64_t oa, int db, uint64_t ob) {
        int m = std::min(da, db);
        uint64_t pa = up(oa, da, m), pb = up(ob, db, m);
        int diff = pa == pb ? 0 : 64 - std::countl_zero(pa ^ pb);
        return {m - diff, diff >= 64 ? 0 : pa >> diff};
    }

    // The keys in [i, j) of buffer `in` share their first D bits; order them by their first
    // bits down to a deeper depth, which is returned (all L bits when the range is short),
    // and say in `in` which buffer holds them now. A scatter skips the bits all of them share
    // and takes 6 to 11 more (more for longer ranges: fewer scatters per key; past 11 bits
    // the scatter's 2^bits write streams cost more than a pass saves), ping-ponging between
    // the two buffers.
    int refine(std::size_t i, std::size_t j, int D, int& in) {
        uint64_t* a = buf_[in] + i;
        const std::size_t n = j - i;
        if (n <= kSmall) {
            for (std::size_t x = 1; x < n; ++x) {  // insertion sort: short ranges
                uint64_t v = a[x];
                std::size_t y = x;
                for (; y > 0 && a[y - 1] > v; --y) a[y] = a[y - 1];
                a[y] = v;
            }
            return L_;
        }
        uint64_t diff = 0;
        const uint64_t first = a[0];
        for (std::size_t x = 1; x < n; ++x) diff |= a[x] ^ first;
        if (!diff) return L_;  // entries of one key: in order
        const int from = std::max(D, std::countl_zero(diff) - (64 - L_));  // bits they all share
        const int w = std::min(std::clamp(static_cast<int>(std::bit_width(n)) - 4, 6, 11), L_ - from);
        const int shift = L_ - from - w;
        const uint64_t mask = (uint64_t{1} << w) - 1;
        const std::size_t nb = std::size_t{1} << w;
        uint32_t* cnt = cnt_.data();
        std::fill(cnt, cnt + nb, 0u);
        for (std::size_t x = 0; x < n; ++x) ++cnt[(a[x] >> shift) & mask];
        uint32_t at = 0;
        for (std::size_t b = 0; b < nb; ++b) {
            uint32_t c = cnt[b];
            cnt[b] = at;
            at += c;
        }
        uint64_t* t = buf_[in ^ 1] + i;
        for (std::size_t x = 0; x < n; ++x) t[cnt[(a[x] >> shift) & mask]++] = a[x];
        in ^= 1;
        return from + w;
    }

    // The lowest node holding all of keys [a, b) and nodes [p, q) (not both empty),
    // knowing the leaves are ordered down to depth D and all lie under depth `floor`.
    std::pair<int, uint64_t> top(const uint64_t* lv, std::size_t a, std::size_t b, std::size_t p, std::size_t q, int D) const {
        std::pair<int, uint64_t> t{-1, 0};
        if (a < b) {
            uint64_t x = lv[a], y = lv[b - 1];
            int same = x == y ? L_ : std::countl_zero(x ^ y) - (64 - L_);  // common leading bits
            int d = std::min(same, D);
            t = {d, up(x, L_, d)};
        }
        if (p < q) {
            auto f = lca(in_[p].depth, in_[p].off, in_[q - 1].depth, in_[q - 1].off);
            t = t.first < 0 ? f : lca(t.first, t.second, f.first, f.second);
        }
        return t;
    }

    // The kernel's result in the subtree of node (vd, voff), whose contents (leaves [i, j),
    // nodes [p, q), not both empty) weigh more than th and have it as their lowest
    // common ancestor or below it; the leaves are ordered down to depth D >= vd. Writes the
    // survivors below the node into their slots; returns the node's own state.
    State solve(int vd, uint64_t voff, std::size_t i, std::size_t j, std::size_t p, std::size_t q, int D, int in) {
        const bool stored = p < q && in_[p].depth == vd;
        const double sc = stored ? in_[p].cnt : 0.0;
        if (vd == L_) return State{true, static_cast<double>(j - i) + sc};  // one leaf: its entries
        if (stored) ++p;
        if (D < vd + 1 && i < j) D = refine(i, j, D, in);
        const uint64_t* lv = buf_[in];
        const int sh = L_ - vd - 1;  // the bit that picks the side at depth vd + 1
        std::size_t am = static_cast<std::size_t>(
            std::partition_point(lv + i, lv + j, [sh](uint64_t x) { return ((x >> sh) & 1) == 0; }) - lv);
        std::size_t im = static_cast<std::size_t>(
            std::partition_point(lo_.begin() + static_cast<std::ptrdiff_t>(p), lo_.begin() + static_cast<std::ptrdiff_t>(q),
                                 [sh](uint64_t lo) { return ((lo >> sh) & 1) == 0; }) -
            lo_.begin());
        bool has[2] = {false, false};
        double cs[2] = {0.0, 0.0};
        std::size_t slot[2] = {0, 0};
        std::vector<Node>& out = *out_;
        for (int s = 0; s < 2; ++s) {
            std::size_t a = s ? am : i, b = s ? j : am, pa = s ? im : p, pb = s ? q : im;
            if (a == b && pa == pb) continue;
            slot[s] = out.size();
            out.push_back(Node{0, 0.0, -1});
            const double w = static_cast<double>(b - a) + (pi_[pb] - pi_[pa]);
            if (w <= th_) {  // light: folds to one node, climbed to depth vd + 1
                has[s] = true;
                cs[s] = w;
                continue;
            }
            auto [cd, co] = top(lv, a, b, pa, pb, D);
            State st = solve(cd, co, a, b, pa, pb, D, in);
            if (cd == vd + 1 || (st.present && st.cnt <= th_)) {  // at depth vd + 1, or climbs to it
                has[s] = st.present;
                cs[s] = st.cnt;
            } else if (st.present) {
                out[slot[s]] = Node{co, st.cnt, cd};  // stays where it is
            }
        }
        if (!has[0] && !has[1]) return State{stored, sc};
        const double tot = (cs[0] + cs[1]) + sc;
        if (tot <= th_) return State{true, tot};
        for (int s = 0; s < 2; ++s)
            if (has[s]) out[slot[s]] = Node{(voff << 1) | static_cast<uint64_t>(s), cs[s], vd + 1};
        return State{stored, sc};
    }

    int L_ = 0;
    double th_ = 0.0;
    uint64_t* buf_[2] = {nullptr, nullptr};  // the keys and the scatter's other buffer
    std::vector<uint32_t> cnt_;  // a scatter's bucket sizes, then starts
    const Node* in_ = nullptr;
    std::vector<Node>* out_ = nullptr;
    std::vector<double> pi_;  // prefix sums of the nodes' counts
    std::vector<uint64_t> lo_;  // the nodes' range starts
    std::vector<uint64_t> tmp_;
};

}  // namespace windowagg
