// The sliding-window summaries of Cormode, Korn and Tirthapura (2007, section 3, Theorems 1
// and 2, Corollary 1, section 5.1's defer-merge levels; Alg. 3.1-3.3 with the guide's
// errata): the compiled twin of the Python reference windowagg.sketches._sliding_core /
// _sliding_state (SlidingWindowCount, SlidingWindowQDigest), operation for operation, so
// both hold the same buffer, levels, node sets and float counts bit for bit (the Python
// module docstring holds the fact card and the error analysis).
//
// State: the buffer B of the latest items (kappa .. 2 kappa of them; an unordered vector:
// only its multiset matters, it is evicted in (t, key, weight) order), and levels j = 1..J of
// fill-then-descend q-digests over time, one hash map heap id -> count each (the root is 1,
// the leaf of time T is 2^LT + T; LT <= 62); with values (SlidingWindowQDigest) every time
// node also holds a value q-digest, a map value heap id -> count (the leaf of key x is
// 2^LU + x; LU <= 62 here). Every order-sensitive float sum runs in the
// reference's canonical order (ascending heap ids, sorted buffer) or is correctly rounded
// (ExactSum, math.fsum's), so no hash order reaches a float.
//
// Every mutator is called with checked arguments (the binding checks them, and the total
// weight, before anything changes); a failed allocation is the only way out mid-change.
#pragma once

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "windowagg/qdigest.hpp"  // QDigestLevel (uint64 -> double map), ExactSum

namespace windowagg {

struct SWItem {
    int64_t t;
    uint64_t x;
    uint64_t w;
    friend bool operator<(const SWItem& a, const SWItem& b) {
        return std::tie(a.t, a.x, a.w) < std::tie(b.t, b.x, b.w);
    }
    friend bool operator==(const SWItem& a, const SWItem& b) { return a.t == b.t && a.x == b.x && a.w == b.w; }
};

// The reference's compress_dict: fold sibling pairs into their parent bottom-up while the
// three counts sum to <= th ((c + sibling) + parent: the same float whichever of the pair
// comes first, so the result does not depend on the map's order). O(s + L).
inline void compress_values(QDigestLevel& nodes, double th, int L) {
    std::vector<std::vector<uint64_t>> by_depth(static_cast<std::size_t>(L) + 1);
    nodes.for_each([&](uint64_t k, double) { by_depth[static_cast<std::size_t>(63 - std::countl_zero(k))].push_back(k); });
    for (int depth = L; depth > 0; --depth) {
        std::vector<uint64_t>& up = by_depth[static_cast<std::size_t>(depth - 1)];
        std::vector<uint64_t> here = std::move(by_depth[static_cast<std::size_t>(depth)]);
        for (uint64_t node : here) {
            const double* cp = nodes.find(node);
            if (!cp) continue;  // folded away together with its sibling
            double c = *cp;
            const double* sp = nodes.find(node ^ 1);
            const double* pp = nodes.find(node >> 1);
            bool fresh = !pp;
            double tot = c + (sp ? *sp : 0.0) + (pp ? *pp : 0.0);
            if (tot <= th) {
                nodes.set(node >> 1, tot);
                nodes.erase(node);
                nodes.erase(node ^ 1);
                if (fresh) up.push_back(node >> 1);
            }
        }
    }
}

// vd[k] = vd.get(k, 0.0) + v for every (k, v) of src (per key one addition: any order).
inline void add_values(QDigestLevel& vd, const QDigestLevel& src) {
    src.for_each([&](uint64_t k, double v) { vd.add(k, v); });
}

struct SWLevel {
    double theta = 0.0;
    QDigestLevel cnt;
    std::unordered_map<uint64_t, QDigestLevel> val;  // time node -> value digest (values only)
    int64_t tau = -1;
    bool exact = true;  // built by fill-then-descend alone (not cloned, not merged)
    uint64_t last = 0;  // node of the previous placement (a hint; 0 = none)

    bool has(uint64_t node) const { return cnt.find(node) != nullptr; }
    std::vector<uint64_t> sorted_ids() const {
        std::vector<uint64_t> ids;
        ids.reserve(cnt.size());
        cnt.for_each([&](uint64_t k, double) { ids.push_back(k); });
        std::sort(ids.begin(), ids.end());
        return ids;
    }
};

class SlidingCore {
public:
    static constexpr uint64_t MAX_WEIGHT = uint64_t{1} << 53;

    // 0 < eps < 1, 1 <= LT <= 62, W >= 0 (0: no max_window), cf > 0, kappa >= 2: checked by
    // the caller (kappa = max(2, ceil(cf * LT / eps)), the reference's). Values (U > 0): keys
    // in [0, U), LU = ceil(log2 U) in [1, 62], vcap = ceil(6 LU / eps) + 1 (the reference's).
    SlidingCore(double eps, int LT, uint64_t W, double cf, uint64_t kappa, double theta0, uint64_t U = 0, int LU = 0,
                uint64_t vcap = 0)
        : eps_(eps), cf_(cf), LT_(LT), W_(W), kappa_(kappa), theta0_(theta0), U_(U), LU_(LU), vcap_(vcap) {
        tbase_ = uint64_t{1} << LT;
        values_ = U > 0;
        vbase_ = values_ ? uint64_t{1} << LU : 0;
    }
    bool values() const { return values_; }
    uint64_t universe() const { return U_; }
    int universe_bits() const { return LU_; }
    uint64_t vbase() const { return vbase_; }

    // ------------------------------------------------------------------ facts
    double eps() const { return eps_; }
    double cf() const { return cf_; }
    int time_bits() const { return LT_; }
    uint64_t max_window() const { return W_; }
    uint64_t kappa() const { return kappa_; }
    uint64_t n() const { return n_; }
    uint64_t top_n() const { return top_n_; }
    uint64_t buffered_weight() const { return Bw_; }
    int64_t tau0() const { return tau0_; }
    int64_t tmax() const { return tmax_; }
    bool merged() const { return merged_; }
    std::size_t num_levels() const { return levels_.size(); }
    const std::vector<SWLevel>& levels() const { return levels_; }
    const std::vector<SWItem>& buffer() const { return B_; }
    std::size_t size() const {
        std::size_t s = B_.size();
        for (const SWLevel& lv : levels_) {
            s += lv.cnt.size();
            for (const auto& kv : lv.val) s += kv.second.size();
        }
        return s;
    }

    // ---------------------------------------------------------------- updates
    // t < 2^LT, 1 <= w <= 2^53, n + w < 2^64: checked by the caller.
    void add(int64_t t, uint64_t x, uint64_t w) {
        if (t > tmax_) tmax_ = t;
        n_ += w;
        if (t < tau0_) {  // older than an evicted item: it belongs to the levels directly
            std::vector<SWItem> one{SWItem{t, x, w}};
            evict_run(one);
            return;
        }
        B_.push_back(SWItem{t, x, w});
        Bw_ += w;
        if (B_.size() > 2 * kappa_) flush();
    }

    // A checked batch (the reference's _update_many_items): items older than tau0 go to the
    // levels in (t, key, weight) order, the rest join B at once; B is then trimmed once.
    void add_many(const std::vector<SWItem>& items, uint64_t total) {
        if (items.empty()) return;
        std::vector<SWItem> late;
        int64_t tmax = items[0].t;
        std::size_t fresh = 0;
        for (const SWItem& it : items) {
            tmax = std::max(tmax, it.t);
            if (it.t < tau0_) late.push_back(it);
            else ++fresh;
        }
        if (tmax > tmax_) tmax_ = tmax;
        n_ += total;
        if (!late.empty()) {
            std::sort(late.begin(), late.end());
            evict_run(late);
        }
        if (fresh) {
            B_.reserve(B_.size() + fresh);
            for (const SWItem& it : items)
                if (it.t >= tau0_) {
                    B_.push_back(it);
                    Bw_ += it.w;
                }
            if (B_.size() > 2 * kappa_) flush();
        }
    }

    // Same parameters, other != this, n + other.n < 2^64: checked by the caller.
    void merge(const SlidingCore& o) {
        if (o.n_ == 0) return;
        merged_ = true;
        std::size_t J = std::max(levels_.size(), o.levels_.size());
        std::vector<SWLevel> out;
        out.reserve(J);
        for (std::size_t j = 0; j < J; ++j) {
            SWLevel a = level_or_implicit(j), b = o.level_or_implicit(j);
            SWLevel lv;
            lv.theta = a.theta;
            lv.exact = false;
            lv.tau = std::max(a.tau, b.tau);
            for (const SWLevel* src : {&a, &b}) {
                // node-wise sums of two terms from 0.0: no order can change them
                for (uint64_t node : src->sorted_ids()) {
                    if (static_cast<int64_t>(hi_of(node)) <= lv.tau) continue;
                    lv.cnt.add(node, *src->cnt.find(node));
                    if (values_) add_values(lv.val[node], src->val.at(node));
                }
            }
            // presence must stay upward-closed: add missing ancestors with count 0
            for (uint64_t node : lv.sorted_ids())
                for (uint64_t p = node >> 1; p && !lv.has(p); p >>= 1) {
                    lv.cnt.set(p, 0.0);
                    if (values_) lv.val[p];
                }
            if (values_)
                for (auto& kv : lv.val)
                    if (kv.second.size() > vcap_) compress_values(kv.second, veps_() * *lv.cnt.find(kv.first) / LU_, LU_);
            out.push_back(std::move(lv));
        }
        levels_ = std::move(out);
        top_n_ += o.top_n_;
        n_ += o.n_;
        tmax_ = std::max(tmax_, o.tmax_);
        // buffers: union, keep the kappa latest and nothing before tau0
        B_.insert(B_.end(), o.B_.begin(), o.B_.end());
        Bw_ += o.Bw_;
        tau0_ = std::max(tau0_, o.tau0_);
        std::sort(B_.begin(), B_.end());
        std::size_t k = 0;
        while (k < B_.size() && (B_.size() - k > kappa_ || B_[k].t < tau0_)) {
            Bw_ -= B_[k].w;
            if (tau0_ < B_[k].t) tau0_ = B_[k].t;
            ++k;
        }
        if (k) {
            std::vector<SWItem> run(B_.begin(), B_.begin() + static_cast<std::ptrdiff_t>(k));
            B_.erase(B_.begin(), B_.begin() + static_cast<std::ptrdiff_t>(k));
            evict_run(run);
        }
        for (std::size_t i = 0; i < levels_.size(); ++i)
            if (levels_[i].cnt.size() > 2 * kappa_) truncate_level(i);
    }

    // ---------------------------------------------------------------- queries
    // (lo, hi) around the weight with timestamps in (tau, t] (the reference's count_bounds
    // after _query_tau): exact when tau >= tau0.
    std::pair<double, double> count_bounds(int64_t tau) const {
        if (tau >= tau0_) {
            uint64_t s = 0;
            for (const SWItem& it : B_)
                if (tau < it.t) s += it.w;
            return {static_cast<double>(s), static_cast<double>(s)};
        }
        const SWLevel* lv = pick_level(tau);
        double low = static_cast<double>(Bw_);
        if (!lv) return {low, low + static_cast<double>(top_n_)};
        ExactSum inside, straddling;
        lv->cnt.for_each([&](uint64_t node, double c) {
            if (static_cast<int64_t>(lo_of(node)) > tau) inside.add(c);
            else if (static_cast<int64_t>(hi_of(node)) > tau) straddling.add(c);
        });
        low = low + inside.result();
        return {low, low + straddling.result()};
    }

    // ---------------------------------------------------------------- loading
    // The decoder's state (its fields checked by the binding); levels rebuilt with theta_j.
    void load(bool merged, int64_t tau0, int64_t tmax, uint64_t n, uint64_t top_n, std::vector<SWItem> B,
              std::vector<SWLevel> levels) {
        merged_ = merged;
        tau0_ = tau0;
        tmax_ = tmax;
        n_ = n;
        top_n_ = top_n;
        B_ = std::move(B);
        Bw_ = 0;
        for (const SWItem& it : B_) Bw_ += it.w;
        levels_ = std::move(levels);
        for (std::size_t j = 0; j < levels_.size(); ++j) levels_[j].theta = theta_of(j);
    }

    double theta_of(std::size_t j) const { return theta0_ * std::ldexp(1.0, static_cast<int>(j) + 1); }
    uint64_t hi_of(uint64_t node) const {
        int d = 63 - std::countl_zero(node);
        int shift = LT_ - d;
        return ((node - (uint64_t{1} << d) + 1) << shift) - 1;
    }
    uint64_t lo_of(uint64_t node) const {
        int d = 63 - std::countl_zero(node);
        return (node - (uint64_t{1} << d)) << (LT_ - d);
    }

    // The reference's _check (the invariants a decoder relies on); "" when they hold.
    std::string check() const {
        for (std::size_t j = 0; j < levels_.size(); ++j) {
            const SWLevel& lv = levels_[j];
            std::string bad;
            lv.cnt.for_each([&](uint64_t node, double c) {
                if (!bad.empty()) return;
                if (node < 1 || node >= 2 * tbase_) bad = "node outside the tree";
                else if (node > 1 && !lv.has(node >> 1)) bad = "node present, parent not";
                else if (static_cast<int64_t>(hi_of(node)) <= lv.tau) bad = "node ends at or before tau";
                else if (!(c >= 0)) bad = "negative count";
            });
            if (!bad.empty()) return "level " + std::to_string(j + 1) + ": " + bad;
            if (values_) {
                if (lv.val.size() != lv.cnt.size()) return "level " + std::to_string(j + 1) + ": value digests and nodes differ";
                for (const auto& kv : lv.val)
                    if (!lv.has(kv.first)) return "level " + std::to_string(j + 1) + ": value digests and nodes differ";
            } else if (!lv.val.empty()) {
                return "level " + std::to_string(j + 1) + ": a count level holds value digests";
            }
            if (lv.cnt.size() > 2 * kappa_) return "level " + std::to_string(j + 1) + " holds > 2 kappa nodes";
        }
        if (B_.size() > 2 * kappa_) return "buffer holds > 2 kappa items";
        for (const SWItem& it : B_)
            if (tau0_ >= 0 && it.t < tau0_) return "buffered item before tau0";
        return "";
    }

private:
    void flush() {
        // evict the oldest items until B holds kappa, and hand them to the levels at once
        std::size_t m = B_.size() - kappa_;
        std::nth_element(B_.begin(), B_.begin() + static_cast<std::ptrdiff_t>(m), B_.end());
        std::sort(B_.begin(), B_.begin() + static_cast<std::ptrdiff_t>(m));
        std::vector<SWItem> out(B_.begin(), B_.begin() + static_cast<std::ptrdiff_t>(m));
        B_.erase(B_.begin(), B_.begin() + static_cast<std::ptrdiff_t>(m));
        for (const SWItem& it : out) Bw_ -= it.w;
        if (tau0_ < out.back().t) tau0_ = out.back().t;
        evict_run(out);
    }

    // A run of evicted items (ascending) to every level, level by level (the reference's
    // _evict_run: the top level is cloned into the next on its first discard).
    void evict_run(std::vector<SWItem>& items) {
        if (W_) {
            int64_t cut = tmax_ - static_cast<int64_t>(W_);
            items.erase(std::remove_if(items.begin(), items.end(), [&](const SWItem& it) { return it.t <= cut; }),
                        items.end());
            if (items.empty()) return;
        }
        if (levels_.empty()) {
            levels_.emplace_back();
            levels_.back().theta = theta0_ * 2;
        }
        const uint64_t two_kappa = 2 * kappa_;
        const int LT = LT_;
        std::vector<std::size_t> starts{0};  // starts[i]: first item level i takes
        for (std::size_t i = 0; i < levels_.size(); ++i) {
            std::size_t start = i < starts.size() ? starts[i] : 0;
            uint64_t last = levels_[i].last;
            for (std::size_t k = start; k < items.size(); ++k) {
                SWLevel& lv = levels_[i];  // levels_ may grow (and move) below: re-read
                QDigestLevel& cnt = lv.cnt;
                const double th = lv.theta;
                const SWItem& it = items[k];
                if (lv.tau >= it.t) continue;  // the level no longer represents time T
                const uint64_t leaf = tbase_ + static_cast<uint64_t>(it.t);
                double w = static_cast<double>(it.w);
                int d = last ? 63 - std::countl_zero(last) : -1;
                uint64_t node;
                if (last && (leaf >> (LT - d)) == last && lv.has(last) && !lv.has(2 * last) && !lv.has(2 * last + 1)) {
                    node = last;  // the previous placement's node is still the deepest
                } else if (!lv.has(1)) {
                    cnt.set(1, 0.0);
                    if (values_) lv.val[1];
                    d = 0;
                    node = 1;
                } else {  // deepest present ancestor: presence is upward-closed along the path
                    int lo = 0, hi = LT;
                    while (lo < hi) {
                        int mid = (lo + hi + 1) >> 1;
                        if (lv.has(leaf >> (LT - mid))) lo = mid;
                        else hi = mid - 1;
                    }
                    d = lo;
                    node = leaf >> (LT - d);
                }
                for (;;) {
                    double* cp = const_cast<double*>(cnt.find(node));
                    double c = *cp;
                    double room = th - c;
                    if (d == LT || room >= w) {
                        *cp = c + w;
                        last = node;
                        if (values_) add_value(lv.val[node], c + w, it.x, w);
                        break;
                    }
                    if (room > 0) {
                        *cp = th;
                        if (values_) add_value(lv.val[node], th, it.x, room);
                        w -= room;
                    }
                    ++d;
                    node = leaf >> (LT - d);
                    if (!lv.has(node)) {
                        cnt.set(node, 0.0);
                        if (values_) lv.val[node];
                    }
                }
                if (cnt.size() > two_kappa) {
                    lv.last = last;
                    std::size_t before = levels_.size();
                    truncate_level(i);
                    if (starts.size() < levels_.size()) starts.resize(levels_.size(), 0);
                    for (std::size_t j = before; j < levels_.size(); ++j) starts[j] = k + 1;  // clones hold items[: k + 1]
                }
            }
            levels_[i].last = last;
        }
        for (const SWItem& it : items) top_n_ += it.w;
    }

    // Truncate level i; if it is the top level, first clone it into level i + 1 (and that
    // clone in turn while it holds more than 2 kappa nodes).
    void truncate_level(std::size_t i) {
        if (i == levels_.size() - 1) {
            if (W_) {  // pruning alone may be enough for the top level
                drop_upto(levels_[i], tmax_ - static_cast<int64_t>(W_));
                if (levels_[i].cnt.size() <= 2 * kappa_) return;
            }
            SWLevel nxt;
            nxt.theta = levels_[i].theta * 2;
            nxt.cnt = levels_[i].cnt;
            nxt.val = levels_[i].val;
            nxt.tau = levels_[i].tau;
            nxt.exact = false;
            compress_level(nxt);
            levels_.push_back(std::move(nxt));
            // still over (a small kappa, heavy items): truncated in turn, cloned first
            if (levels_[i + 1].cnt.size() > 2 * kappa_) truncate_level(i + 1);
        }
        truncate(levels_[i]);
    }

    // Fold childless sibling pairs into their parent while the sum <= theta, ascending ids
    // within each depth (the reference's order, so the same floats). O(k log k + LT).
    void compress_level(SWLevel& lv) const {
        std::vector<std::vector<uint64_t>> by_depth(static_cast<std::size_t>(LT_) + 1);
        for (uint64_t node : lv.sorted_ids()) by_depth[static_cast<std::size_t>(63 - std::countl_zero(node))].push_back(node);
        QDigestLevel& cnt = lv.cnt;
        for (int depth = LT_; depth > 0; --depth) {
            for (uint64_t node : by_depth[static_cast<std::size_t>(depth)]) {
                const double* cp = cnt.find(node);
                if (!cp || lv.has(2 * node) || lv.has(2 * node + 1)) continue;
                double c = *cp;
                uint64_t sib = node ^ 1;
                const double* sp = cnt.find(sib);
                if (sp && (lv.has(2 * sib) || lv.has(2 * sib + 1))) continue;
                uint64_t par = node >> 1;
                double tot = *cnt.find(par) + c + (sp ? *sp : 0.0);
                if (tot <= lv.theta) {
                    bool had_sib = sp != nullptr;
                    cnt.set(par, tot);
                    cnt.erase(node);
                    if (had_sib) cnt.erase(sib);
                    if (values_) {  // the reference's order: node's digest, then its sibling's
                        QDigestLevel& pv = lv.val[par];
                        add_values(pv, lv.val.at(node));
                        lv.val.erase(node);
                        if (had_sib) {
                            add_values(pv, lv.val.at(sib));
                            lv.val.erase(sib);
                        }
                        if (pv.size() > vcap_) compress_values(pv, veps_() * tot / LU_, LU_);
                    }
                }
            }
        }
    }

    // Keep the kappa most recent ranges (post-order); raise tau to the cut. O(k log k).
    void truncate(SWLevel& lv) const {
        struct Key {
            uint64_t hi;
            int shift;
            uint64_t node;
            bool operator<(const Key& o) const { return std::tie(hi, shift, node) < std::tie(o.hi, o.shift, o.node); }
        };
        std::vector<Key> keyed;
        keyed.reserve(lv.cnt.size());
        lv.cnt.for_each([&](uint64_t node, double) {
            int d = 63 - std::countl_zero(node);
            int shift = LT_ - d;
            keyed.push_back(Key{((node - (uint64_t{1} << d) + 1) << shift) - 1, shift, node});
        });
        std::sort(keyed.begin(), keyed.end());
        int64_t tau = lv.tau;
        if (keyed.size() > kappa_) tau = std::max(tau, static_cast<int64_t>(keyed[keyed.size() - kappa_ - 1].hi));
        if (W_) tau = std::max(tau, tmax_ - static_cast<int64_t>(W_));
        if (tau <= lv.tau) return;
        lv.tau = tau;
        for (const Key& k : keyed) {  // post-order: every node ending at or before tau comes first
            if (static_cast<int64_t>(k.hi) > tau) break;
            lv.cnt.erase(k.node);
            lv.val.erase(k.node);
        }
    }

    // Raise lv.tau to tau and delete every node ending at or before it. O(k).
    void drop_upto(SWLevel& lv, int64_t tau) const {
        if (tau <= lv.tau) return;
        lv.tau = tau;
        std::vector<uint64_t> dead;
        lv.cnt.for_each([&](uint64_t node, double) {
            if (static_cast<int64_t>(hi_of(node)) <= tau) dead.push_back(node);
        });
        for (uint64_t node : dead) {
            lv.cnt.erase(node);
            lv.val.erase(node);
        }
    }

    // Level j, or (above the top level) the top level's contents under theta_j.
    SWLevel level_or_implicit(std::size_t j) const {
        if (j < levels_.size()) return levels_[j];
        SWLevel lv;
        lv.theta = theta_of(j);
        if (levels_.empty()) return lv;
        lv.cnt = levels_.back().cnt;
        lv.val = levels_.back().val;
        lv.tau = levels_.back().tau;
        lv.exact = false;
        return lv;
    }

    // vd[leaf of x] += w; compress with threshold eps * total / LU when over capacity.
    void add_value(QDigestLevel& vd, double total, uint64_t x, double w) const {
        vd.add(vbase_ + x, w);
        if (vd.size() > vcap_) compress_values(vd, veps_() * total / LU_, LU_);
    }
    double veps_() const { return eps_; }

    const SWLevel* pick_level(int64_t tau) const {
        for (const SWLevel& lv : levels_)
            if (lv.tau <= tau) return &lv;
        return nullptr;  // only when nothing reached the levels
    }

    double eps_, cf_;
    int LT_;
    uint64_t W_, kappa_;
    double theta0_;
    uint64_t U_;
    int LU_;
    uint64_t vcap_;
    bool values_ = false;
    uint64_t vbase_ = 0;
    uint64_t tbase_;
    std::vector<SWItem> B_;
    uint64_t Bw_ = 0;
    int64_t tau0_ = -1;
    std::vector<SWLevel> levels_;
    uint64_t top_n_ = 0;
    int64_t tmax_ = -1;
    uint64_t n_ = 0;
    bool merged_ = false;
};

}  // namespace windowagg
