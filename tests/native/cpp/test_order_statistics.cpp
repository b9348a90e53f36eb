// Standalone test of include/windowagg/order_statistics.hpp (no Python): random inserts (with
// copies) and erases against a std::multiset oracle, at fanouts 8, 16 and 64, with check()
// after every operation (keys ordered, separators, counts, every node but the root at least
// B/4 full), rank and k-th checked at every step; keys as doubles and as std::string (a key
// that owns memory: AddressSanitizer sees a slot moved or reset wrongly); a `less` that
// throws leaves the multiset unchanged. Phases grow, churn as a sliding window does, and
// shrink to empty, so nodes split, even out, merge and the root collapses.
// Build: g++ -std=c++20 -O1 -g -fsanitize=address,undefined -I src/windowagg/_native/include
//        tests/native/cpp/test_order_statistics.cpp -o /tmp/t && /tmp/t
#include <windowagg/order_statistics.hpp>

#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <random>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "expect.hpp"

struct DLess {
    bool operator()(double a, double b) const { return a < b; }
};
struct SLess {
    bool operator()(const std::string& a, const std::string& b) const { return a < b; }
};
// Throws on the comparison that brings `*budget` to zero.
struct ThrowingLess {
    long* budget;
    bool operator()(const std::string& a, const std::string& b) const {
        if (*budget > 0 && --*budget == 0) throw std::runtime_error("less");
        return a < b;
    }
};

static double key_d(long v) { return static_cast<double>(v) * 0.5; }
static std::string key_s(long v) {
    char buf[48];
    std::snprintf(buf, sizeof buf, "key-%08ld-long-enough-to-own-heap-memory", v + 50000);
    return buf;
}

template <class K, class Less, int B, class MakeKey>
void run(unsigned seed, long range, int steps, MakeKey key) {
    windowagg::OrderStatistics<K, Less, B> s;
    std::multiset<K, Less> oracle;
    std::vector<K> window;  // insertion order, for the churn phase's erases
    std::mt19937_64 g(seed);
    auto rnd = [&](long n) { return static_cast<long>(g() % static_cast<unsigned long>(n)); };
    auto verify = [&](const char* where) {
        std::string err = s.check();
        if (!err.empty()) std::fprintf(stderr, "%s (B=%d): %s\n", where, B, err.c_str());
        EXPECT(err.empty());
        EXPECT(s.size() == static_cast<int64_t>(oracle.size()));
        if (oracle.empty()) return;
        auto n = static_cast<int64_t>(oracle.size());
        for (int64_t k : {int64_t{0}, n / 2, n - 1, static_cast<int64_t>(rnd(n))}) {
            auto it = oracle.begin();
            std::advance(it, k);
            EXPECT(!Less{}(s.kth(k), *it) && !Less{}(*it, s.kth(k)));
        }
        K probe = key(rnd(range));
        EXPECT(s.rank(probe) == static_cast<int64_t>(std::distance(oracle.begin(), oracle.lower_bound(probe))));
    };
    for (int step = 0; step < steps; ++step) {
        int phase = step * 3 / steps;  // 0 grow, 1 churn, 2 shrink
        double p_insert = phase == 0 ? 0.8 : phase == 1 ? 0.5 : 0.1;
        if (oracle.empty() || static_cast<double>(g() % 1000) < p_insert * 1000) {
            K x = key(rnd(range));
            int64_t copies = rnd(10) == 0 ? 1 + rnd(3) : 1;
            s.insert(x, copies);
            for (int64_t c = 0; c < copies; ++c) {
                oracle.insert(x);
                window.push_back(x);
            }
        } else {
            K x;
            if (phase == 1 && !window.empty()) {  // the oldest still held, as a window evicts
                x = window.front();
                window.erase(window.begin());
                if (oracle.find(x) == oracle.end()) continue;
            } else {
                auto it = oracle.begin();
                std::advance(it, rnd(static_cast<long>(oracle.size())));
                x = *it;
            }
            EXPECT(s.erase(x));
            oracle.erase(oracle.find(x));
        }
        if (rnd(50) == 0) EXPECT(!s.erase(key(range + 1 + rnd(5))));  // absent: nothing changes
        verify("step");
    }
    while (!oracle.empty()) {  // down to nothing
        K x = *oracle.begin();
        EXPECT(s.erase(x));
        oracle.erase(oracle.begin());
        verify("drain");
    }
    EXPECT(s.size() == 0);
}

// A `less` that throws mid-search, on insert and on erase, changes nothing.
template <int B>
void throwing(unsigned seed) {
    long budget = 0;
    windowagg::OrderStatistics<std::string, ThrowingLess, B> s(ThrowingLess{&budget});
    std::multiset<std::string> oracle;
    std::mt19937_64 g(seed);
    for (int step = 0; step < 3000; ++step) {
        bool ins = oracle.empty() || g() % 3 != 0;
        std::string x = key_s(static_cast<long>(g() % 700));
        if (!ins) {
            auto it = oracle.begin();
            std::advance(it, static_cast<long>(g() % oracle.size()));
            x = *it;
        }
        budget = g() % 4 == 0 ? 1 + static_cast<long>(g() % 12) : 0;
        try {
            if (ins) s.insert(x);
            else EXPECT(s.erase(x));
            if (ins) oracle.insert(x);
            else oracle.erase(oracle.find(x));
        } catch (const std::runtime_error&) {
        }
        budget = 0;
        std::string err = s.check();
        if (!err.empty()) std::fprintf(stderr, "throwing (B=%d): %s\n", B, err.c_str());
        EXPECT(err.empty());
        EXPECT(s.size() == static_cast<int64_t>(oracle.size()));
        std::vector<std::string> got;
        s.for_each([&](const std::string& k, int64_t c) { got.insert(got.end(), static_cast<std::size_t>(c), k); });
        EXPECT(got == std::vector<std::string>(oracle.begin(), oracle.end()));
    }
}

int main(int argc, char** argv) {
    int scale = argc > 1 ? std::atoi(argv[1]) : 1;
    for (unsigned seed = 1; seed <= 3; ++seed) {
        run<double, DLess, 8>(seed, 400, 3000 * scale, key_d);
        run<double, DLess, 16>(seed, 5000, 4000 * scale, key_d);
        run<std::string, SLess, 8>(seed, 300, 2500 * scale, key_s);
        run<std::string, SLess, 64>(seed, 100000, 6000 * scale, key_s);
        throwing<8>(seed);
    }
    if (failures) return 1;
    std::puts("ok");
    return 0;
}
