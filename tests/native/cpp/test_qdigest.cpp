// Standalone test of include/windowagg/qdigest.hpp (no Python): the per-level hash map
// (linear probing, backward-shift deletion) against std::unordered_map under random adds,
// sets and erases over clustered and spread keys; and the digest's node count, total and
// check() through random updates, merges and compresses, with every level's node count
// bounded after compress (<= 4L/eps + 1 in all); an integral digest's top-down compress
// against the bottom-up pass on the same nodes; batches of weight-1 keys (add_ones) against
// the summed batches; weighted batches (add_weighted) against the summed batches. Built with
// AddressSanitizer and
// UndefinedBehaviorSanitizer by tests/native/test_headers_cpp.py.
// Build: g++ -std=c++20 -O1 -g -fsanitize=address,undefined -I src/windowagg/_native/include
//        tests/native/cpp/test_qdigest.cpp -o /tmp/t && /tmp/t
#include <windowagg/qdigest.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <unordered_map>

#include "expect.hpp"

static void level_vs_map(std::mt19937_64& rng, uint64_t spread, int ops) {
    windowagg::QDigestLevel lv;
    std::unordered_map<uint64_t, double> ref;
    for (int i = 0; i < ops; ++i) {
        uint64_t k = spread ? rng() % spread : rng();
        int op = static_cast<int>(rng() % 4);
        if (op == 0) {
            bool fresh = lv.add(k, 1.5);
            EXPECT(fresh == !ref.count(k));
            ref[k] += 1.5;
        } else if (op == 1) {
            bool fresh = lv.set(k, 2.0);
            EXPECT(fresh == !ref.count(k));
            ref[k] = 2.0;
        } else {
            EXPECT(lv.erase(k) == (ref.erase(k) == 1));
        }
        EXPECT(lv.size() == ref.size());
    }
    std::size_t seen = 0;
    lv.for_each([&](uint64_t k, double v) {
        ++seen;
        auto it = ref.find(k);
        EXPECT(it != ref.end() && it->second == v);
    });
    EXPECT(seen == ref.size());
    for (auto& [k, v] : ref) EXPECT(lv.find(k) && *lv.find(k) == v);
}

static void digest(std::mt19937_64& rng, uint64_t umax, double eps, int n) {
    windowagg::QDigestCore q(umax, eps), other(umax, eps);
    double total = 0;
    for (int i = 0; i < n; ++i) {
        uint64_t x = umax == ~0ull ? rng() : rng() % (umax + 1);
        double w = 1.0 + static_cast<double>(rng() % 4);
        (i % 3 ? q : other).update(x, w);
        total += w;
        if (i % 997 == 0) {
            q.merge(other);
            other = windowagg::QDigestCore(umax, eps);
            EXPECT(q.check().empty());
        }
    }
    q.merge(other);
    q.compress();
    EXPECT(q.check().empty());
    EXPECT(std::fabs(q.n() - total) <= 1e-9 * total);
    EXPECT(q.size() <= static_cast<std::size_t>(std::ceil(4 * q.bits() / eps)) + 1);
    double sum = 0;
    for (int d = 0; d <= q.bits(); ++d) q.level(d).for_each([&](uint64_t, double c) { sum += c; });
    EXPECT(std::fabs(sum - total) <= 1e-9 * total);
    auto [lo, hi] = q.rank_bounds(umax);  // nodes reaching past umax straddle it
    EXPECT(lo <= total * (1 + 1e-9) && hi >= total * (1 - 1e-9) && hi - lo <= eps * total * (1 + 1e-9));
    auto [lo2, hi2] = q.rank_bounds(~0ull);
    EXPECT(std::fabs(lo2 - total) <= 1e-9 * total && lo2 == hi2);
    EXPECT(q.bits() == 64 || q.quantile(1.0) < (1ull << q.bits()));
}

// An integral digest's top-down compress (qdigest_fold.hpp) against the bottom-up pass on
// copies of the same digest: the same nodes and counts, on float-order keys, spread keys,
// keys with their low byte cleared (sibling-rich), clusters around one hot key (heavy leaves
// and heavy sibling pairs), integer weights, merged digests (inner nodes of every size),
// over universes of 2 to 2^64 keys.
static void top_down_vs_bottom_up(std::mt19937_64& rng, int trials) {
    std::lognormal_distribution<double> ln(0.0, 2.0);
    const double epss[] = {0.02, 0.05, 0.1, 0.3, 0.7, 0.99};
    for (int trial = 0; trial < trials; ++trial) {
        int kind = static_cast<int>(rng() % 5);
        uint64_t umax = kind == 0   ? ~0ull
                        : kind == 1 ? 1ull
                        : kind == 2 ? rng() % 5000 + 1
                        : kind == 3 ? (1ull << (rng() % 63 + 1)) - 1
                                    : (rng() >> (rng() % 64)) | 1;
        double eps = epss[rng() % 6];
        windowagg::QDigestCore q(umax, eps);
        auto any = [&]() { return umax == ~0ull ? rng() : rng() % (umax + 1); };
        uint64_t hot = any();
        for (int step = 0; step < 4; ++step) {
            windowagg::QDigestCore other(umax, eps);
            windowagg::QDigestCore& t = rng() % 4 == 0 ? other : q;
            int b = rng() % 3 == 0 ? static_cast<int>(rng() % 50) : static_cast<int>(rng() % 6000);
            int mode = static_cast<int>(rng() % 5);
            for (int i = 0; i < b; ++i) {
                uint64_t x;
                if (mode == 0) {
                    double v = ln(rng);
                    uint64_t bits;
                    std::memcpy(&bits, &v, 8);
                    x = (bits >> 63) ? ~bits : (bits | (1ull << 63));
                    if (umax != ~0ull) x %= umax + 1;
                } else if (mode == 1) {
                    x = rng() % 8 == 0 ? hot : any();
                } else if (mode == 2) {
                    x = any() & ~0xFFull;
                } else if (mode == 3) {
                    x = rng() % 2 ? hot : hot ^ (rng() % 16);
                } else {
                    x = any();
                }
                x = std::min(x, umax);
                t.update(x, rng() % 3 == 0 ? static_cast<double>(1 + rng() % 1000) : 1.0);
            }
            if (&t == &other) q.merge(other);
            EXPECT(q.integral());
            windowagg::QDigestCore a = q, b2 = q;
            a.compress_top_down();
            b2.compress_bottom_up();
            EXPECT(a.check().empty());
            auto x = a.nodes_by_id(), y = b2.nodes_by_id();
            EXPECT(x.size() == y.size());
            for (std::size_t i = 0; i < std::min(x.size(), y.size()); ++i)
                EXPECT(x[i].depth == y[i].depth && x[i].off == y[i].off && x[i].count == y[i].count);
            if (rng() % 2) q = a;
        }
    }
}

// add_ones (weight-1 batches: kept pending while they cannot pass the cap, counted and
// folded when they may) against add_leaf_sums of the same batches (every leaf summed into the
// leaf level, compressed when past the cap): the same nodes, on float-order keys, spread keys,
// a few hot keys (leaves of counts > 1 that survive compresses), repeats of a small set (the
// batches that stay under the cap), with integer-weight updates and merges between batches;
// the nodes compared after some batches only (reading them settles the pending keys), check()
// after every one (pending keys left as they are).
static void pending_vs_summed(std::mt19937_64& rng, int trials) {
    std::lognormal_distribution<double> ln(0.0, 2.0);
    const double epss[] = {0.02, 0.05, 0.1, 0.3, 0.7};
    for (int trial = 0; trial < trials; ++trial) {
        int kind = static_cast<int>(rng() % 4);
        uint64_t umax = kind == 0 ? ~0ull : kind == 1 ? 3ull : kind == 2 ? rng() % 100000 + 1 : (rng() >> (rng() % 64)) | 1;
        double eps = epss[rng() % 5];
        windowagg::QDigestCore q(umax, eps), ref(umax, eps);
        auto any = [&]() { return umax == ~0ull ? rng() : rng() % (umax + 1); };
        uint64_t hot = any();
        int steps = 5 + static_cast<int>(rng() % 30);
        for (int step = 0; step < steps; ++step) {
            std::size_t b = rng() % 3 == 0 ? rng() % 40 + 1 : rng() % 9000 + 1;
            int mode = static_cast<int>(rng() % 4);
            std::vector<uint64_t> keys(b);
            for (uint64_t& x : keys) {
                if (mode == 0) {
                    double v = ln(rng);
                    uint64_t bits;
                    std::memcpy(&bits, &v, 8);
                    x = (bits >> 63) ? ~bits : (bits | (1ull << 63));
                } else if (mode == 1) {
                    x = rng() % 4 == 0 ? hot : any();
                } else if (mode == 2) {
                    x = any() % 300;
                } else {
                    x = any();
                }
                x = std::min(x, umax);
            }
            int op = static_cast<int>(rng() % 8);
            if (op == 0) {  // an integer-weight update on both
                uint64_t x = rng() % 2 ? hot : keys[0];
                double w = static_cast<double>(1 + rng() % 50);
                q.update(x, w);
                ref.update(x, w);
            } else if (op == 1) {  // a merge of a digest fed the batch
                windowagg::QDigestCore o(umax, eps), o2(umax, eps);
                o.add_ones(keys.data(), b);
                windowagg::QDigestLevel sums;
                for (uint64_t x : keys) sums.add(x, 1.0);
                o2.add_leaf_sums(sums, static_cast<double>(b), true);
                q.merge(o);
                ref.merge(o2);
            } else {
                q.add_ones(keys.data(), b);
                windowagg::QDigestLevel sums;
                for (uint64_t x : keys) sums.add(x, 1.0);
                ref.add_leaf_sums(sums, static_cast<double>(b), true);
            }
            EXPECT(q.check().empty());
            EXPECT(q.n() == ref.n());
            if (rng() % 4 == 0 || step == steps - 1) {
                auto x = q.nodes_by_id(), y = ref.nodes_by_id();
                EXPECT(x.size() == y.size());
                for (std::size_t i = 0; i < std::min(x.size(), y.size()); ++i)
                    EXPECT(x[i].depth == y[i].depth && x[i].off == y[i].off && x[i].count == y[i].count);
                EXPECT(q.check().empty());
            }
        }
    }
}

// A large cap (eps = 1e-4: 7.68M nodes) and batches of 1000 repeated keys: the pending keys
// reach MAX_PENDING long before the cap, are counted (under the cap) and moved into the leaf
// level; the same nodes as the summed batches, and check() bounds the pending list.
static void pending_bound() {
    windowagg::QDigestCore q(~0ull, 1e-4), ref(~0ull, 1e-4);
    const std::size_t b = 100000;
    std::vector<uint64_t> keys(b);
    for (int step = 0; step < 13; ++step) {
        for (std::size_t i = 0; i < b; ++i) keys[i] = (i * 7919 + static_cast<std::size_t>(step)) % 1000 * 0x9E3779B97F4Aull;
        q.add_ones(keys.data(), b);
        windowagg::QDigestLevel sums;
        for (uint64_t x : keys) sums.add(x, 1.0);
        ref.add_leaf_sums(sums, static_cast<double>(b), true);
        EXPECT(q.check().empty());
    }
    auto x = q.nodes_by_id(), y = ref.nodes_by_id();
    EXPECT(x.size() == y.size() && x.size() == 1000);
    for (std::size_t i = 0; i < std::min(x.size(), y.size()); ++i)
        EXPECT(x[i].depth == y[i].depth && x[i].off == y[i].off && x[i].count == y[i].count);
}

// add_weighted (weighted batches held back as (key, weight) pairs while they cannot pass
// the cap, sorted and summed per key when they may) against add_leaf_sums of the same
// batches' per-key sums: the same nodes and floats (weights 0.1, 1/3, lognormal: sums whose
// order shows), with keys repeated within and across batches, stored leaves the pairs add
// to, integer-weight updates and merges between batches, and a weight-1 batch (add_ones)
// before the first weighted one; the nodes compared after some batches only (reading them
// settles the pairs), check() after every one.
static void weighted_vs_summed(std::mt19937_64& rng, int trials) {
    std::lognormal_distribution<double> ln(0.0, 3.0);
    const double epss[] = {0.01, 0.05, 0.1, 0.3, 0.7};
    for (int trial = 0; trial < trials; ++trial) {
        int kind = static_cast<int>(rng() % 4);
        uint64_t umax = kind == 0 ? ~0ull : kind == 1 ? 3ull : kind == 2 ? rng() % 100000 + 1 : (rng() >> (rng() % 64)) | 1;
        double eps = epss[rng() % 5];
        windowagg::QDigestCore q(umax, eps), ref(umax, eps);
        auto any = [&]() { return umax == ~0ull ? rng() : rng() % (umax + 1); };
        uint64_t hot = any();
        if (rng() % 3 == 0) {
            std::vector<uint64_t> ones(rng() % 500 + 1);
            for (uint64_t& x : ones) x = any();
            q.add_ones(ones.data(), ones.size());
            windowagg::QDigestLevel sums;
            for (uint64_t x : ones) sums.add(x, 1.0);
            ref.add_leaf_sums(sums, static_cast<double>(ones.size()), true);
        }
        int steps = 5 + static_cast<int>(rng() % 40);
        for (int step = 0; step < steps; ++step) {
            std::size_t b = rng() % 3 == 0 ? rng() % 40 + 1 : rng() % 6000 + 1;
            int mode = static_cast<int>(rng() % 4);
            std::vector<uint64_t> keys(b);
            std::vector<double> w(b);
            for (std::size_t i = 0; i < b; ++i) {
                uint64_t& x = keys[i];
                if (mode == 0) {
                    double v = ln(rng);
                    uint64_t bits;
                    std::memcpy(&bits, &v, 8);
                    x = (bits >> 63) ? ~bits : (bits | (1ull << 63));
                } else if (mode == 1) {
                    x = rng() % 4 == 0 ? hot : any();
                } else if (mode == 2) {
                    x = any() % 300;
                } else {
                    x = any();
                }
                x = std::min(x, umax);
                int wk = static_cast<int>(rng() % 4);
                w[i] = wk == 0 ? 0.1 : wk == 1 ? 1.0 / 3.0 : wk == 2 ? ln(rng) + 1e-300 : 1.0;
            }
            double total = 0.0;
            for (double x : w) total = total + x;
            int op = static_cast<int>(rng() % 10);
            if (op == 0) {  // an integer-weight update on both
                uint64_t x = rng() % 2 ? hot : keys[0];
                double wt = static_cast<double>(1 + rng() % 50);
                q.update(x, wt);
                ref.update(x, wt);
            } else if (op == 1) {  // a merge of a digest fed the batch
                windowagg::QDigestCore o(umax, eps), o2(umax, eps);
                o.add_weighted(keys.data(), w.data(), b, total);
                windowagg::QDigestLevel sums;
                for (std::size_t i = 0; i < b; ++i) sums.add(keys[i], w[i]);
                o2.add_leaf_sums(sums, total, false);
                q.merge(o);
                ref.merge(o2);
            } else {
                q.add_weighted(keys.data(), w.data(), b, total);
                windowagg::QDigestLevel sums;
                for (std::size_t i = 0; i < b; ++i) sums.add(keys[i], w[i]);
                ref.add_leaf_sums(sums, total, false);
            }
            EXPECT(q.check().empty());
            EXPECT(q.n() == ref.n());
            if (rng() % 4 == 0 || step == steps - 1) {
                auto x = q.nodes_by_id(), y = ref.nodes_by_id();
                EXPECT(x.size() == y.size());
                for (std::size_t i = 0; i < std::min(x.size(), y.size()); ++i)
                    EXPECT(x[i].depth == y[i].depth && x[i].off == y[i].off && x[i].count == y[i].count);
                EXPECT(q.check().empty());
            }
        }
    }
}

// The weighted twin of pending_bound: a large cap (eps = 1e-4: 7.68M nodes) and batches of
// 100k pairs over 1000 keys: the pairs reach MAX_PENDING long before the cap, are summed
// (under the cap) and moved into the leaf level; the same nodes and floats as the summed
// batches, and check() bounds the pending pairs (fails if add_weighted loses its bound).
static void weighted_pending_bound() {
    windowagg::QDigestCore q(~0ull, 1e-4), ref(~0ull, 1e-4);
    const std::size_t b = 100000;
    std::vector<uint64_t> keys(b);
    std::vector<double> w(b);
    for (int step = 0; step < 13; ++step) {
        double total = 0.0;
        for (std::size_t i = 0; i < b; ++i) {
            keys[i] = (i * 7919 + static_cast<std::size_t>(step)) % 1000 * 0x9E3779B97F4Aull;
            w[i] = 0.1 * static_cast<double>(i % 7 + 1);
            total = total + w[i];
        }
        q.add_weighted(keys.data(), w.data(), b, total);
        windowagg::QDigestLevel sums;
        for (std::size_t i = 0; i < b; ++i) sums.add(keys[i], w[i]);
        ref.add_leaf_sums(sums, total, false);
        EXPECT(q.check().empty());
    }
    auto x = q.nodes_by_id(), y = ref.nodes_by_id();
    EXPECT(x.size() == y.size() && x.size() == 1000);
    for (std::size_t i = 0; i < std::min(x.size(), y.size()); ++i)
        EXPECT(x[i].depth == y[i].depth && x[i].off == y[i].off && x[i].count == y[i].count);
}

int main(int argc, char** argv) {
    int scale = argc > 1 ? std::atoi(argv[1]) : 1;
    std::mt19937_64 rng(39);
    for (uint64_t spread : {0ull, 8ull, 64ull, 1000ull, 1ull << 20}) level_vs_map(rng, spread, 20000 * scale);
    for (uint64_t umax : {1ull, 2ull, 999ull, (1ull << 32) - 1, (1ull << 63) + 4, ~0ull})
        for (double eps : {0.01, 0.2, 0.9}) digest(rng, umax, eps, 5000 * scale);
    top_down_vs_bottom_up(rng, 300 * scale);
    pending_vs_summed(rng, 60 * scale);
    pending_bound();
    weighted_vs_summed(rng, 60 * scale);
    weighted_pending_bound();
    if (failures) return 1;
    std::puts("ok");
    return 0;
}
