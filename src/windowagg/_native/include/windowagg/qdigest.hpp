// The q-digest of Shrivastava et al., "Medians and beyond" (SenSys 2004): the compiled twin
// of windowagg.sketches.qdigest.QDigest's Python reference, operation for operation, so both
// produce the same node sets and the same float sums bit for bit (the Python docstring holds
// the fact card and the error analysis).
//
// A node is a dyadic range of [0, 2^L), named by (depth, offset): the root is (0, 0), the
// leaf of key x is (L, x); the Python heap id is 2^depth + offset. Each depth has its own
// open-addressing hash map offset -> count (qdigest_level.hpp), so a leaf update is one
// probe; compress() folds top down when every count is an integer (qdigest_fold.hpp) and
// bottom-up otherwise (qdigest_bottom_up.hpp). L <= 64: offsets are uint64 at every depth.
//
// Every mutator checks its arguments before it changes anything (the binding layer checks
// types first); a failed allocation (std::bad_alloc) is the only way out mid-change.
// Plain code, no template: compiled once.
#pragma once

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

#include "qdigest_bottom_up.hpp"
#include "qdigest_fold.hpp"
#include "qdigest_level.hpp"
#include "qdigest_pending.hpp"

namespace windowagg {

class QDigestCore {
public:
    static constexpr int CAP_FACTOR = 12;

    // universe = umax + 1 in [2, 2^64]; 0 < eps < 1 (the binding checks both).
    QDigestCore(uint64_t umax, double eps) : umax_(umax), eps_(eps) {
        L_ = std::max(1, 64 - std::countl_zero(umax));
        levels_.resize(static_cast<std::size_t>(L_) + 1);
        double cap = std::ceil(static_cast<double>(CAP_FACTOR * L_) / eps_) + 1;
        cap_ = cap < 4.0e18 ? static_cast<std::size_t>(cap) : static_cast<std::size_t>(4e18);
    }

    uint64_t umax() const { return umax_; }
    double eps() const { return eps_; }
    int bits() const { return L_; }
    double n() const { return n_; }
    std::size_t size() const {
        settle();
        return size_;
    }
    std::size_t cap() const { return cap_; }
    double threshold() const { return eps_ * n_ / L_; }
    const QDigestLevel& level(int d) const {
        settle();
        return levels_[static_cast<std::size_t>(d)];
    }

    // Move the pending weight-1 keys (add_ones) or weighted batches (add_weighted) into the
    // leaf level: every method but those two sees the nodes as the reference stores them.
    // Nothing compresses (the pending keys never take the digest past its cap). O(p) for p
    // pending keys, O(p + l) for p pending pairs and l stored leaves.
    void settle() const {
        if (!wpend_.empty()) settle_weighted();
        if (pend_.empty()) return;
        QDigestLevel& lv = levels_[static_cast<std::size_t>(L_)];
        lv.reserve(lv.size() + pend_.size());
        for (uint64_t k : pend_) size_ += lv.add(k, 1.0);
        pend_.clear();
    }

    // key <= umax, weight finite > 0: checked by the caller
    void update(uint64_t x, double w) {
        settle();
        size_ += levels_[static_cast<std::size_t>(L_)].add(x, w);
        n_ += w;
        integral_ = integral_ && w == std::floor(w) && n_ <= EXACT;
        sorted_ = false;
        if (size_ > cap_) compress();
    }

    // The leaves of a checked batch: per distinct key the sum of its weights in input order
    // (from 0.0), added to the leaf; n += total (the caller's sum). Compresses once.
    // True when every count is an integer and n <= 2^53, so every sum of counts is exact
    // and the order of additions cannot change a float: then a batch of weight-1 keys may
    // go straight into the leaves (leaf + 1 + 1 == leaf + 2).
    bool integral() const { return integral_; }
    static constexpr double EXACT = 9007199254740992.0;  // 2^53

    // A checked batch of weight-1 keys on an integral digest with n + b <= 2^53. Compresses
    // exactly when the reference does: once, if the distinct nodes pass the cap.
    //
    // While the digest cannot pass its cap (stored nodes + pending keys + b <= cap) the keys
    // are only appended to a pending list (no probe: 8 bytes a key). The batch that may pass
    // it counts the distinct leaves (a key-only set at load <= 3/8, one probe per key) and,
    // past the cap, folds the pending keys top down as they are, repeats and all (the fold
    // orders only the ranges it splits); under the cap (many repeated keys) it moves them into
    // the leaf level, and later batches probe the level directly until the next compress.
    // On 10M float-order keys at eps = 0.02 (benchmarks/cpp/qdigest_floor.cpp) this took the
    // update rate from ~22M to ~34-39M keys/s of CPU: the probes into a 2 MB leaf level (past
    // L2, at up to 3/4 load) and the scatters of 16-byte leaves were most of the time.
    // O(b) amortized: each key is appended once, probed once and scattered O(L/6) times.
    // At most MAX_PENDING keys wait (8 MB; a large cap and repeated keys would otherwise hold
    // every key until the cap): a batch past it counts as if it may pass the cap.
    static constexpr std::size_t MAX_PENDING = std::size_t{1} << 20;
    template <class K>
    void add_ones(const K* keys, std::size_t b) {
        n_ += static_cast<double>(b);
        sorted_ = false;
        if (!repeats_ && size_ + pend_.size() + b <= cap_ && pend_.size() + b <= MAX_PENDING) {
            const std::size_t at = pend_.size();
            pend_.resize(at + b);
            uint64_t* p = pend_.data() + at;
            for (std::size_t i = 0; i < b; ++i) p[i] = static_cast<uint64_t>(keys[i]);
            return;
        }
        if (repeats_) {
            QDigestLevel& leaves = levels_[static_cast<std::size_t>(L_)];
            for (std::size_t i = 0; i < b; ++i) size_ += leaves.add(static_cast<uint64_t>(keys[i]), 1.0);
            if (size_ > cap_) compress();
            return;
        }
        const std::size_t at = pend_.size();
        pend_.resize(at + b);
        for (std::size_t i = 0; i < b; ++i) pend_[at + i] = static_cast<uint64_t>(keys[i]);
        const std::size_t stored_leaves = levels_[static_cast<std::size_t>(L_)].size();
        if (size_ - stored_leaves + count_distinct() > cap_) {
            fold_pending();  // the fold takes repeated keys as they are
            return;
        }
        settle();  // under the cap: many repeated keys
        repeats_ = true;
    }

    // A checked batch of weighted keys that leaves the digest non-integral (the caller's
    // test: !(integral() && every weight whole && n + total <= 2^53)); total: the weights
    // summed in input order. The same nodes and floats as add_leaf_sums of the batch's sums.
    //
    // While the digest cannot pass its cap (stored nodes + pending pairs + b <= cap, and at
    // most MAX_PENDING pairs) the (key, weight) pairs are only appended (qdigest_pending.hpp:
    // no probe, 24 bytes a pair). The batch that may pass it sorts the stored leaves and the
    // pending pairs by key once and sums each key's run as the reference's batches would;
    // past the cap, those sorted leaves go straight into the bottom-up compress (which sorts
    // its leaves anyway); under it (many repeated keys) they return to the leaf level, and
    // later batches probe it until the next compress. Measured on the Spark quantiles'
    // batches (10k float-order keys with decayed weights, eps = 0.01;
    // benchmarks/probe_decayed_summary.py): a per-batch hash of the sums, its probes into
    // the leaf level and the leaf level's read-out at each compress were half the time.
    // O(b) amortized: each pair is appended once and sorted once.
    template <class K>
    void add_weighted(const K* keys, const double* w, std::size_t b, double total) {
        if (!pend_.empty()) settle();  // the weight-1 keys of an integral digest go first
        integral_ = false;
        sorted_ = false;
        if (!repeats_ && size_ + wpend_.size() + b <= cap_ && wpend_.size() + b <= MAX_PENDING) {
            wpend_.append(keys, w, b);
            n_ += total;
            return;
        }
        if (repeats_) {
            QDigestLevel sums;  // per key: its weights summed in input order, from 0.0
            for (std::size_t i = 0; i < b; ++i) sums.add(static_cast<uint64_t>(keys[i]), w[i]);
            add_leaf_sums(sums, total, false);
            return;
        }
        wpend_.append(keys, w, b);
        n_ += total;
        QDigestLevel& lv = levels_[static_cast<std::size_t>(L_)];
        const std::size_t stored_leaves = lv.size();
        std::vector<Leaf>& leaves = scratch_.leaves;
        wpend_.combine([&](auto&& f) { lv.drain(f); }, leaves);
        size_ = size_ - stored_leaves + leaves.size();
        if (size_ > cap_) {
            compress_leaves();
            return;
        }
        lv.reserve(leaves.size());  // under the cap: many repeated keys
        for (const Leaf& x : leaves) lv.set(x.off, x.cnt);
        repeats_ = true;
    }

    void add_leaf_sums(const QDigestLevel& sums, double total, bool integral) {
        settle();
        integral_ = integral_ && integral && n_ + total <= EXACT;
        QDigestLevel& leaves = levels_[static_cast<std::size_t>(L_)];
        leaves.reserve(leaves.size() + sums.size());
        sums.for_each([&](uint64_t k, double v) { size_ += leaves.add(k, v); });
        n_ += total;
        sorted_ = false;
        if (size_ > cap_) compress();
    }

    // Node-wise sums; other has the same parameters and is not *this (the caller copies).
    void merge(const QDigestCore& o) {
        settle();
        o.settle();
        integral_ = integral_ && o.integral_ && n_ + o.n_ <= EXACT;
        inner_ok_ = false;
        for (int d = 0; d <= L_; ++d) {
            QDigestLevel& mine = levels_[static_cast<std::size_t>(d)];
            mine.reserve(mine.size() + o.level(d).size());
            o.level(d).for_each([&](uint64_t k, double v) { size_ += mine.add(k, v); });
        }
        n_ += o.n_;
        sorted_ = false;
        if (size_ > cap_) compress();
    }

    // ------------------------------------------------- scaling (the decayed digests)
    // Every count times f >= 0 (finite). rebase: the nodes whose count becomes 0 are dropped
    // and n is the correctly rounded sum of the counts left (the Python reference's
    // math.fsum), as a landmark move of ExpDecayQDigest does; else n times f (a scaled
    // copy of the digest). Does not compress. O(s).
    void scale(double f, bool rebase) {
        settle();
        integral_ = false;
        inner_ok_ = false;
        sorted_ = false;
        std::size_t total = 0;
        for (QDigestLevel& lv : levels_) {
            if (lv.empty()) continue;
            std::vector<std::pair<uint64_t, double>> kept;
            kept.reserve(lv.size());
            lv.for_each([&](uint64_t k, double v) {
                double w = v * f;
                if (!rebase || w > 0.0) kept.emplace_back(k, w);
            });
            lv.reset();
            for (const auto& kv : kept) lv.set(kv.first, kv.second);
            total += kept.size();
        }
        size_ = total;
        n_ = rebase ? exact_sum() : n_ * f;
    }

    // The correctly rounded sum of every count times f (kept if > 0), as scale(f, true)
    // would set n: the caller checks it before anything changes. O(s).
    double rescaled_total(double f) const {
        settle();
        ExactSum acc;
        for (const QDigestLevel& lv : levels_)
            lv.for_each([&](uint64_t, double v) {
                double w = v * f;
                if (w > 0.0) acc.add(w);
            });
        // every term is positive: a NaN can only be an overflow of the partials (inf - inf),
        // and the true sum is then past float64: +inf, as a plain sum would say
        const double r = acc.result();
        return std::isnan(r) ? INFINITY : r;
    }

    // Node-wise count += gamma * other's count (one addition per node, so the order of
    // the nodes cannot change a float), n += gamma * other's n; no compress, nothing
    // dropped. o may be *this. O(s2).
    void add_scaled(const QDigestCore& o, double gamma) {
        if (&o == this) {
            QDigestCore copy(o);
            add_scaled(copy, gamma);
            return;
        }
        settle();
        o.settle();
        integral_ = false;
        inner_ok_ = false;
        for (int d = 0; d <= L_; ++d) {
            QDigestLevel& mine = levels_[static_cast<std::size_t>(d)];
            mine.reserve(mine.size() + o.level(d).size());
            o.level(d).for_each([&](uint64_t k, double v) { size_ += mine.add(k, v * gamma); });
        }
        n_ = n_ + o.n_ * gamma;
        sorted_ = false;
    }

    // Drop the nodes whose count is 0 (the Python reference keeps counts > 0). O(s).
    void drop_zeros() {
        settle();
        inner_ok_ = false;
        std::vector<uint64_t> dead;
        for (QDigestLevel& lv : levels_) {
            dead.clear();
            lv.for_each([&](uint64_t k, double v) {
                if (!(v > 0.0)) dead.push_back(k);
            });
            for (uint64_t k : dead) size_ -= lv.erase(k);
        }
        sorted_ = false;
    }

    // compress() when the digest holds more than its cap (the reference's rule after a
    // merge of scaled digests). O(s) or nothing.
    void compress_if_full() {
        settle();
        if (size_ > cap_) compress();
    }

    // Fold a sibling pair and its parent into the parent, bottom-up, while the three hold
    // <= eps*n/L: the Python dict kernel's result, node for node and float for float. An
    // integral digest (every count an integer, n <= 2^53: no sum can round) folds top down
    // (qdigest_fold.hpp: only the nodes holding more than eps*n/L are visited, and the
    // leaves are ordered only where such a node splits them); any other, bottom-up.
    void compress() {
        settle();
        repeats_ = false;
        if (integral_) compress_top_down();
        else compress_bottom_up();
    }

    // compress() of an integral digest (the caller checks integral()). O(s) + O(h log s) for
    // h nodes holding more than eps*n/L.
    void compress_top_down() {
        settle();
        repeats_ = false;
        sorted_ = false;
        if (!size_) return;
        fold_pending();
    }

private:
    // The top-down compress of every node and the pending keys (the digest is integral). The
    // leaves of count 1 join the pending keys (bare keys, the fold's cheap entries); the
    // other leaves, sorted by offset, join the inner nodes' pre-order. O(s + p) + O(l log l)
    // for the l leaves of another count (few: those a compress left, or repeated keys).
    void fold_pending() {
        repeats_ = false;
        sorted_ = false;
        const double th = eps_ * n_ / L_;
        std::vector<uint64_t>& keys = pend_;
        std::vector<QDigestFold::Node>& other = scratch_.other;
        other.clear();
        // read out and emptied in one pass (the leaf level is the largest)
        levels_[static_cast<std::size_t>(L_)].drain([&](uint64_t off, double c) {
            if (c == 1.0) keys.push_back(off);
            else other.push_back({off, c, L_});
        });
        std::sort(other.begin(), other.end(), [](const QDigestFold::Node& a, const QDigestFold::Node& b) { return a.off < b.off; });
        if (!inner_ok_) {  // the inner nodes in pre-order: kept from the last compress, else sorted
            inner_.clear();
            for (int d = 0; d < L_; ++d)
                levels_[static_cast<std::size_t>(d)].for_each([&](uint64_t off, double c) { inner_.push_back({off, c, d}); });
            std::sort(inner_.begin(), inner_.end(), [this](const QDigestFold::Node& a, const QDigestFold::Node& b) {
                uint64_t la = low_of(a.off, L_ - a.depth), lb = low_of(b.off, L_ - b.depth);
                return la != lb ? la < lb : a.depth < b.depth;
            });
        }
        // pre-order: by range start, a leaf after the inner nodes starting where it does
        std::vector<QDigestFold::Node>& nodes = scratch_.nodes;
        nodes.clear();
        nodes.reserve(inner_.size() + other.size());
        std::size_t j = 0;
        for (const QDigestFold::Node& a : inner_) {
            const uint64_t lo = low_of(a.off, L_ - a.depth);
            for (; j < other.size() && other[j].off < lo; ++j) nodes.push_back(other[j]);
            nodes.push_back(a);
        }
        nodes.insert(nodes.end(), other.begin() + static_cast<std::ptrdiff_t>(j), other.end());
        std::vector<QDigestFold::Node>& out = scratch_.fout;
        scratch_.fold.run(L_, th, keys, nodes, out);
        keys.clear();
        std::size_t per[65] = {};
        for (const QDigestFold::Node& o : out) ++per[o.depth];
        for (int d = 0; d <= L_; ++d) {
            QDigestLevel& dst = levels_[static_cast<std::size_t>(d)];
            if (d < L_) dst.reset();  // the leaf level was emptied as it was read
            dst.reserve(per[d]);
        }
        inner_.clear();
        for (const QDigestFold::Node& o : out) {
            levels_[static_cast<std::size_t>(o.depth)].set(o.off, o.cnt);
            if (o.depth < L_) inner_.push_back(o);  // still in pre-order
        }
        size_ = out.size();
        inner_ok_ = true;
    }

    // settle() of the pending weighted batches: the stored leaves and the pending pairs
    // summed per key (qdigest_pending.hpp) and put back into the leaf level. O(p + l).
    void settle_weighted() const {
        QDigestLevel& lv = levels_[static_cast<std::size_t>(L_)];
        const std::size_t stored_leaves = lv.size();
        std::vector<Leaf>& leaves = wleaves_;
        wpend_.combine([&](auto&& f) { lv.drain(f); }, leaves);
        lv.reserve(leaves.size());
        for (const Leaf& x : leaves) lv.set(x.off, x.cnt);
        size_ = size_ - stored_leaves + leaves.size();
        leaves.clear();
    }

    // The number of distinct keys among the leaf level's and the pending ones: a key-only
    // open-addressing set at load <= 3/8 (few probes per key; 8-byte slots, so the 50k keys
    // of a compress at eps = 0.02 fit 1 MB). O(p + l).
    std::size_t count_distinct() {
        const QDigestLevel& lv = levels_[static_cast<std::size_t>(L_)];
        const std::size_t want = pend_.size() + lv.size();
        std::size_t cap = 16;
        while (cap / 8 * 3 < want) cap *= 2;
        std::vector<uint64_t>& t = scratch_.seen;
        t.assign(cap, 0);  // 0 marks an empty slot; key 0 is counted apart
        const std::size_t mask = cap - 1;
        const int shift = 64 - std::countr_zero(static_cast<uint64_t>(cap));
        std::size_t distinct = 0;
        bool zero = false;
        auto put = [&](uint64_t k) {
            if (!k) {
                distinct += !zero;
                zero = true;
                return;
            }
            for (std::size_t i = static_cast<std::size_t>((k * 0x9E3779B97F4A7C15ull) >> shift);; i = (i + 1) & mask) {
                if (t[i] == k) return;
                if (!t[i]) {
                    t[i] = k;
                    ++distinct;
                    return;
                }
            }
        };
        lv.for_each([&](uint64_t k, double) { put(k); });
        for (uint64_t k : pend_) put(k);
        return distinct;
    }

public:

    // Bottom-up: fold a sibling pair and its parent into the parent while the three hold
    // <= eps*n/L: the Python dict kernel's result, node for node and float for float, over
    // the virtual tree of the stored nodes and their branching points (qdigest_bottom_up.hpp).
    // O(s + i log i) for the sorts (the leaves radix-sorted, the i inner nodes compared),
    // O(s) after them.
    void compress_bottom_up() {
        settle();
        repeats_ = false;
        sorted_ = false;
        inner_ok_ = false;
        if (!size_) return;
        // pre-order: by range start, an ancestor before its descendants (16-byte keys sorted,
        // then the nodes laid out in that order)
        // scratch kept between calls: a fresh one each time costs the kernel's page zeroing.
        // The leaves (most of the nodes) are radix-sorted by offset; the inner nodes (at most
        // ~4L/eps survivors of the last compress) sorted by comparison; then one merge.
        std::vector<Leaf>& leaves = scratch_.leaves;
        leaves.clear();
        leaves.reserve(levels_[static_cast<std::size_t>(L_)].size());
        levels_[static_cast<std::size_t>(L_)].for_each([&](uint64_t off, double c) { leaves.push_back(Leaf{off, c}); });
        QDigestBottomUp::radix_sort(leaves, scratch_.tmp);
        compress_leaves();
    }

private:
    // compress_bottom_up() of the leaves in scratch_.leaves, sorted by offset (the leaf
    // level is not read: its nodes are those) and the inner nodes of the levels; size_
    // counts both. Rebuilds every level.
    void compress_leaves() {
        repeats_ = false;
        sorted_ = false;
        inner_ok_ = false;
        const double th = eps_ * n_ / L_;
        const std::vector<Out>& out = scratch_.bottom_up.run(L_, th, scratch_.leaves, [&](auto&& f) {
            for (int d = 0; d < L_; ++d)
                levels_[static_cast<std::size_t>(d)].for_each([&](uint64_t off, double c) { f(d, off, c); });
        });
        // rebuild the levels
        std::size_t total = 0;
        std::vector<std::size_t> per(static_cast<std::size_t>(L_) + 1, 0);
        for (const Out& o : out) ++per[static_cast<std::size_t>(o.depth)];
        for (int d = 0; d <= L_; ++d) {
            QDigestLevel& dst = levels_[static_cast<std::size_t>(d)];
            dst.reset();
            dst.reserve(per[static_cast<std::size_t>(d)]);
        }
        for (const Out& o : out) total += levels_[static_cast<std::size_t>(o.depth)].set(o.off, o.cnt);
        size_ = total;
    }

public:

    // ------------------------------------------------------------------ queries
    struct Post {
        uint64_t hi;
        int shift;
        int depth;
        uint64_t off;
        double count;
    };

    static uint64_t low_of(uint64_t off, int shift) { return shift >= 64 ? 0 : off << shift; }
    static uint64_t span_of(int shift) { return shift >= 64 ? ~0ull : (1ull << shift) - 1; }

    // nodes sorted by (hi, range size) with prefix sums of their counts (cached)
    const std::vector<Post>& post() const {
        settle();
        if (!sorted_) {
            post_.clear();
            post_.reserve(size_);
            for (int d = 0; d <= L_; ++d) {
                int shift = L_ - d;
                levels_[static_cast<std::size_t>(d)].for_each([&](uint64_t off, double c) {
                    post_.push_back(Post{low_of(off, shift) | span_of(shift), shift, d, off, c});
                });
            }
            std::sort(post_.begin(), post_.end(), [](const Post& a, const Post& b) {
                return a.hi != b.hi ? a.hi < b.hi : a.shift < b.shift;
            });
            pref_.resize(post_.size());
            double acc = 0.0;
            for (std::size_t i = 0; i < post_.size(); ++i) pref_[i] = acc = acc + post_[i].count;
            sorted_ = true;
        }
        return post_;
    }

    // (lo, hi) bounds on the weight of keys <= x
    std::pair<double, double> rank_bounds(uint64_t x) const {
        const std::vector<Post>& p = post();
        auto it = std::upper_bound(p.begin(), p.end(), x, [](uint64_t v, const Post& q) { return v < q.hi; });
        std::size_t i = static_cast<std::size_t>(it - p.begin());
        double lo = i ? pref_[i - 1] : 0.0;
        return {lo, lo + straddle_le(x)};
    }

    // counts of the proper ancestors of leaf x whose range ends after x, deepest first
    double straddle_le(uint64_t x) const {
        settle();
        uint64_t last = L_ >= 64 ? ~0ull : (1ull << L_) - 1;
        if (x >= last) return 0.0;
        double s = 0.0;
        for (int d = L_ - 1; d >= 0; --d) {
            int shift = L_ - d;
            bool ends_after = shift >= 64 || ((x + 1) >> shift) == (x >> shift);
            if (ends_after) s = s + levels_[static_cast<std::size_t>(d)].get(shift >= 64 ? 0 : x >> shift);
        }
        return s;
    }

    // the smallest node end whose prefix reaches (1 - 2^-40) phi n (the digest is not
    // empty): the slack absorbs the rounding of the sums, so that a rank tying phi n
    // exactly resolves the same way whatever the order of summation (as the exact
    // decayed quantile's SNAP)
    uint64_t quantile(double phi) const {
        const std::vector<Post>& p = post();
        double target = phi * n_ * (1.0 - 0x1p-40);
        if (target <= 0) {
            for (std::size_t i = 0; i < p.size(); ++i)
                if (pref_[i] > 0) return p[i].hi;
            return p.back().hi;
        }
        std::size_t lo = 0, hi = pref_.size();
        while (lo < hi) {
            std::size_t mid = (lo + hi) / 2;
            if (pref_[mid] >= target) hi = mid;
            else lo = mid + 1;
        }
        return p[std::min(lo, p.size() - 1)].hi;
    }

    // (count of leaf x, + counts of all its ancestors, deepest first); x <= umax
    std::pair<double, double> frequency_bounds(uint64_t x) const {
        settle();
        double lo = levels_[static_cast<std::size_t>(L_)].get(x);
        double s = 0.0;
        for (int d = L_ - 1; d >= 0; --d) {
            int shift = L_ - d;
            s = s + levels_[static_cast<std::size_t>(d)].get(shift >= 64 ? 0 : x >> shift);
        }
        return {lo, lo + s};
    }

    // leaves with count + ancestors >= phi*n as (key, count + ancestors/2), heaviest first
    std::vector<std::pair<uint64_t, double>> heavy_hitters(double phi) const {
        settle();
        std::vector<std::pair<uint64_t, double>> out;
        double thr = phi * n_;
        levels_[static_cast<std::size_t>(L_)].for_each([&](uint64_t x, double c) {
            double acc = 0.0;  // root first, as the Python reference memoizes it
            for (int d = 0; d < L_; ++d) {
                int shift = L_ - d;
                acc = acc + levels_[static_cast<std::size_t>(d)].get(shift >= 64 ? 0 : x >> shift);
            }
            if (c + acc >= thr) out.emplace_back(x, c + acc / 2);
        });
        std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) {
            return a.second != b.second ? a.second > b.second : a.first < b.first;
        });
        return out;
    }

    // ------------------------------------------------------------------ state
    // every node as (depth, offset, count), sorted by (depth, offset): the heap-id order
    std::vector<Post> nodes_by_id() const {
        settle();
        std::vector<Post> out;
        out.reserve(size_);
        for (int d = 0; d <= L_; ++d) {
            std::size_t from = out.size();
            levels_[static_cast<std::size_t>(d)].for_each(
                [&](uint64_t off, double c) { out.push_back(Post{0, 0, d, off, c}); });
            std::sort(out.begin() + static_cast<std::ptrdiff_t>(from), out.end(),
                      [](const Post& a, const Post& b) { return a.off < b.off; });
        }
        return out;
    }

    // Replace the state by checked nodes (the binding checks them) and total n.
    void load(const std::vector<Post>& nodes, double n) {
        bool integral = n <= EXACT;
        for (const Post& p : nodes) integral = integral && p.count == std::floor(p.count);
        integral_ = integral;
        std::vector<QDigestLevel> fresh(static_cast<std::size_t>(L_) + 1);
        for (const Post& p : nodes) fresh[static_cast<std::size_t>(p.depth)].set(p.off, p.count);
        levels_.swap(fresh);
        pend_.clear();
        wpend_.clear();
        repeats_ = false;
        inner_ok_ = false;
        size_ = nodes.size();
        n_ = n;
        sorted_ = false;
    }

    // "" when whole, else which invariant broke where. O(s).
    std::string check() const {
        if (!wpend_.empty()) {  // pending pairs: a non-integral digest, unable to pass the cap
            if (integral_ || repeats_ || !pend_.empty()) return "pending weighted pairs on a digest that cannot hold them";
            if (size_ + wpend_.size() > cap_ || wpend_.size() > MAX_PENDING)
                return std::to_string(wpend_.size()) + " pending pairs could take " + std::to_string(size_) + " nodes past the cap";
            for (const QDigestPending::Entry& e : wpend_.entries()) {
                if (e.key > umax_) return "pending key " + std::to_string(e.key) + " outside the universe";
                if (!(e.w > 0.0 && std::isfinite(e.w))) return "pending key " + std::to_string(e.key) + " has a bad weight";
            }
            QDigestCore settled(*this);
            settled.settle();
            return settled.check();
        }
        if (!pend_.empty()) {  // pending keys: weight 1, in the universe, unable to pass the cap
            if (!integral_ || repeats_) return "pending keys on a digest that probes its leaves directly";
            if (size_ + pend_.size() > cap_ || pend_.size() > MAX_PENDING)
                return std::to_string(pend_.size()) + " pending keys could take " + std::to_string(size_) + " nodes past the cap";
            for (uint64_t k : pend_)
                if (k > umax_) return "pending key " + std::to_string(k) + " outside the universe";
            QDigestCore settled(*this);
            settled.settle();
            return settled.check();
        }
        std::size_t count = 0;
        for (int d = 0; d <= L_; ++d) {
            std::string bad;
            levels_[static_cast<std::size_t>(d)].for_each([&](uint64_t off, double c) {
                ++count;
                if (bad.empty() && d < 64 && off >> d)
                    bad = "node (depth " + std::to_string(d) + ", offset " + std::to_string(off) + ") outside its level";
                if (bad.empty() && d == L_ && off > umax_)
                    bad = "leaf " + std::to_string(off) + " outside the universe";
                if (bad.empty() && !(c >= 0 && std::isfinite(c)))
                    bad = "node (depth " + std::to_string(d) + ", offset " + std::to_string(off) + ") has a bad count";
                if (bad.empty() && levels_[static_cast<std::size_t>(d)].find(off) != nullptr &&
                    *levels_[static_cast<std::size_t>(d)].find(off) != c)
                    bad = "level " + std::to_string(d) + " loses offset " + std::to_string(off) + " on lookup";
            });
            if (!bad.empty()) return bad;
        }
        if (count != size_) return "node count " + std::to_string(size_) + " != stored nodes " + std::to_string(count);
        if (inner_ok_) {  // the kept pre-order of the inner nodes is theirs
            std::size_t inner = size_ - levels_[static_cast<std::size_t>(L_)].size();
            if (inner_.size() != inner)
                return "kept pre-order holds " + std::to_string(inner_.size()) + " inner nodes, the levels " + std::to_string(inner);
            for (std::size_t i = 0; i < inner_.size(); ++i) {
                const QDigestFold::Node& a = inner_[i];
                const double* c = a.depth >= 0 && a.depth < L_ ? levels_[static_cast<std::size_t>(a.depth)].find(a.off) : nullptr;
                if (!c || *c != a.cnt)
                    return "kept pre-order: node (depth " + std::to_string(a.depth) + ", offset " + std::to_string(a.off) + ") is not the levels'";
                if (i > 0) {
                    const QDigestFold::Node& b = inner_[i - 1];
                    uint64_t la = low_of(b.off, L_ - b.depth), lb = low_of(a.off, L_ - a.depth);
                    if (la > lb || (la == lb && b.depth >= a.depth)) return "kept pre-order out of order at " + std::to_string(i);
                }
            }
        }
        return "";
    }

private:
    double exact_sum() const {
        ExactSum acc;
        for (const QDigestLevel& lv : levels_) lv.for_each([&](uint64_t, double v) { acc.add(v); });
        return acc.result();
    }
    using Leaf = QDigestBottomUp::Leaf;
    using Out = QDigestBottomUp::Out;
    struct Scratch {
        std::vector<Leaf> leaves;
        std::vector<Leaf> tmp;
        QDigestBottomUp bottom_up;
        std::vector<QDigestFold::Node> other;
        std::vector<QDigestFold::Node> nodes;
        std::vector<QDigestFold::Node> fout;
        std::vector<uint64_t> seen;
        QDigestFold fold;
        Scratch() = default;
        Scratch(const Scratch&) {}  // a copy starts with none
        Scratch& operator=(const Scratch&) { return *this; }
    };

    uint64_t umax_;
    double eps_;
    int L_;
    std::size_t cap_;
    // mutable: settle() moves the pending keys into the leaf level (the same nodes)
    mutable std::vector<QDigestLevel> levels_;
    mutable std::size_t size_ = 0;
    // weight-1 keys of add_ones not yet in the leaf level (repeats allowed); never enough to
    // take the digest past its cap: size_ + pend_.size() <= cap_
    mutable std::vector<uint64_t> pend_;
    // the (key, weight) pairs of add_weighted's batches not yet in the leaf level (a
    // non-integral digest; never enough to take it past its cap: size_ + pairs <= cap_)
    mutable QDigestPending wpend_;
    mutable std::vector<Leaf> wleaves_;  // settle_weighted's scratch (empty between calls)
    // the last sort of the pending keys left the digest under its cap (many repeated keys):
    // add_ones probes the leaf level until the next compress
    bool repeats_ = false;
    double n_ = 0.0;
    bool integral_ = true;
    // the nodes of depth < L in pre-order, as the last top-down compress left them (valid
    // while inner_ok_: only the leaf level changes between compresses of updates)
    std::vector<QDigestFold::Node> inner_;
    bool inner_ok_ = false;
    Scratch scratch_;
    mutable bool sorted_ = false;
    mutable std::vector<Post> post_;
    mutable std::vector<double> pref_;
};

}  // namespace windowagg
