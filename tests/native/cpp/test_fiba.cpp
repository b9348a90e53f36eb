// Standalone test of include/windowagg/fiba.hpp (no Python): random operations against a
// std::map oracle, for an int sum, a non-commutative monoid (string concatenation) and a
// throwing one (atomicity), at min arities 2..6, with check() after every operation.
// Build: g++ -std=c++20 -O1 -g -fsanitize=address,undefined -I src/windowagg/_native/include
//        tests/native/cpp/test_fiba.cpp -o /tmp/test_fiba && /tmp/test_fiba
#include <windowagg/fiba.hpp>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <random>
#include <string>

struct SumI {
    using partial_type = long long;
    static constexpr bool nothrow_combine = true;
    long long identity() const { return 0; }
    long long combine(long long a, long long b) const { return a + b; }
};
struct Cat {
    using partial_type = std::string;
    std::string identity() const { return {}; }
    std::string combine(const std::string& a, const std::string& b) const { return a + b; }
};
// Concatenation that throws once, after `budget` combines ran.
struct Boom {
    using partial_type = std::string;
    long* budget;
    std::string identity() const { return {}; }
    std::string combine(const std::string& a, const std::string& b) const {
        if (*budget == 0) {
            *budget = -1;  // once: the recovery's combines (of old partials) succeed
            throw std::runtime_error("boom");
        }
        if (*budget > 0) --*budget;
        return a + b;
    }
};

static int failures = 0;
static char ctx[200];
#define EXPECT(c)                                                              \
    do {                                                                       \
        if (!(c)) {                                                            \
            std::fprintf(stderr, "%s:%d: %s [%s]\n", __FILE__, __LINE__, #c, ctx);       \
            if (++failures > 5) std::exit(1);                                  \
        }                                                                      \
    } while (0)

template <class M, class Lift>
void run(M m, int mu, unsigned seed, int steps, Lift lift, long* budget = nullptr) {
    using P = typename M::partial_type;
    windowagg::FiBA<M, long long> w(m, mu);
    std::map<long long, P> oracle;
    std::mt19937 rng(seed);
    auto rnd = [&](int n) { return static_cast<long long>(rng() % static_cast<unsigned>(n)); };
    auto eq = [](const P& a, const P& b) { return a == b; };
    auto fold = [&](long long lo, long long hi) {
        P acc = m.identity();
        for (auto& [k, v] : oracle)
            if (lo <= k && k <= hi) acc = m.combine(acc, v);
        return acc;
    };
    long long youngest = 0;
    for (int s = 0; s < steps; ++s) {
        auto before = oracle;
        bool threw = false;
        if (budget) *budget = rnd(4) == 0 ? rnd(40) : -1;
        int op = static_cast<int>(rnd(9));
        try {
            if (op <= 2) {
                long long t = op == 0 ? ++youngest : rnd(400);
                P v = lift(rnd(1000));
                w.insert(t, v);
                auto it = oracle.find(t);
                if (budget) *budget = -1;
                if (it == oracle.end()) oracle[t] = v; else it->second = m.combine(it->second, v);
                youngest = std::max(youngest, t);
            } else if (op <= 4) {
                long long t = op == 3 && !oracle.empty() ? oracle.begin()->first : rnd(400);
                w.evict(t);
                oracle.erase(t);
            } else if (op == 5) {
                long long t = rnd(420) - 10;
                w.bulk_evict(t);
                oracle.erase(oracle.begin(), oracle.upper_bound(t));
            } else if (op == 6 || op == 7) {
                int n = static_cast<int>(rnd(op == 6 ? 60 : 8));
                std::vector<std::pair<long long, P>> b;
                for (int i = 0; i < n; ++i) b.emplace_back(op == 6 ? rnd(400) : youngest + 1 + rnd(20), lift(rnd(1000)));
                std::stable_sort(b.begin(), b.end(), [](auto& x, auto& y) { return x.first < y.first; });
                std::vector<long long> ts;
                std::vector<P> ps;
                for (auto& [t, v] : b) { ts.push_back(t); ps.push_back(v); }
                w.bulk_insert_sorted(ts, ps);
                if (budget) *budget = -1;
                for (auto& [t, v] : b) {
                    auto it = oracle.find(t);
                    if (it == oracle.end()) oracle[t] = v; else it->second = m.combine(it->second, v);
                    youngest = std::max(youngest, t);
                }
            } else {
                long long a = rnd(420) - 10, c = rnd(420) - 10;
                EXPECT(eq(w.range_query(a, c), fold(a, c)));
            }
        } catch (const std::runtime_error&) {
            threw = true;
            if (budget) *budget = -1;
            oracle = before;
        }
        if (budget) *budget = -1;
        std::snprintf(ctx, sizeof ctx, "mu=%d seed=%u step=%d op=%d threw=%d", mu, seed, s, op, threw);
        try {
            w.check(eq);
        } catch (const windowagg::invariant_error& e) {
            std::fprintf(stderr, "mu=%d seed=%u step=%d op=%d threw=%d: %s\n", mu, seed, s, op, threw, e.what());
            std::exit(1);
        }
        EXPECT(w.size() == oracle.size());
        EXPECT(eq(w.query(), fold(-1000, 1LL << 40)));
        auto ps = w.to_partials();
        EXPECT(ps.size() == oracle.size());
        std::size_t i = 0;
        for (auto& [k, v] : oracle) {
            if (i < ps.size()) EXPECT(ps[i].first == k && eq(ps[i].second, v));
            ++i;
        }
        if (!oracle.empty()) {
            EXPECT(w.oldest() == oracle.begin()->first);
            EXPECT(w.youngest() == oracle.rbegin()->first);
        }
    }
}

int main(int argc, char** argv) {
    const unsigned seeds = argc > 1 ? static_cast<unsigned>(std::atoi(argv[1])) : 6;
    for (int mu = 2; mu <= 6; ++mu)
        for (unsigned seed = 1; seed <= seeds; ++seed) {
            run(SumI{}, mu, seed, 3000, [](long long x) { return x; });
            run(Cat{}, mu, seed * 7, 1500, [](long long x) { return std::to_string(x % 10); });
            long budget = -1;
            run(Boom{&budget}, mu, seed * 13, 1500, [](long long x) { return std::to_string(x % 10); }, &budget);
        }
    // sliding window at d = 0 and a big bulk
    windowagg::FiBA<SumI, long long> w(SumI{}, 4);
    long long total = 0;
    for (long long t = 0; t < 200000; ++t) {
        w.insert(t, t);
        total += t;
        if (t >= 1000) { w.evict(t - 1000); total -= t - 1000; }
    }
    EXPECT(w.query() == total);
    w.check([](long long a, long long b) { return a == b; });
    std::printf(failures ? "FAILED\n" : "ok\n");
    return failures ? 1 : 0;
}
