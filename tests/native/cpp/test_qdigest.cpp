// Standalone test of include/windowagg/qdigest.hpp (no Python): the per-level hash map
// (linear probing, backward-shift deletion) against std::unordered_map under random adds,
// sets and erases over clustered and spread keys; and the digest's node count, total and
// check() through random updates, merges and compresses, with every level's node count
// bounded after compress (<= 4L/eps + 1 in all). Built with AddressSanitizer and
// UndefinedBehaviorSanitizer by tests/native/test_headers_cpp.py.
// Build: g++ -std=c++20 -O1 -g -fsanitize=address,undefined -I src/windowagg/_native/include
//        tests/native/cpp/test_qdigest.cpp -o /tmp/t && /tmp/t
#include <windowagg/qdigest.hpp>

#include <cmath>
#include <cstdio>
#include <cstdlib>
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

int main(int argc, char** argv) {
    int scale = argc > 1 ? std::atoi(argv[1]) : 1;
    std::mt19937_64 rng(39);
    for (uint64_t spread : {0ull, 8ull, 64ull, 1000ull, 1ull << 20}) level_vs_map(rng, spread, 20000 * scale);
    for (uint64_t umax : {1ull, 2ull, 999ull, (1ull << 32) - 1, (1ull << 63) + 4, ~0ull})
        for (double eps : {0.01, 0.2, 0.9}) digest(rng, umax, eps, 5000 * scale);
    if (failures) return 1;
    std::puts("ok");
    return 0;
}
