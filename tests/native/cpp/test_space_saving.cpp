// Standalone test of include/windowagg/space_saving.hpp (no Python): Space-Saving under
// exponential decay against brute-force decayed frequencies (every key's exact
// sum_i w_i exp(-lam (T - t_i))) through random, out-of-order, bursty streams of int and
// string keys, with landmark moves, many evictions (slots freed and reused, the order list
// relinked, the index's backward-shift deletions) and merge trees: check() after every operation, the Theorem 4
// bounds lo <= f <= hi and hi - lo <= D/k at the end, and a load() of the slots giving the
// same state back. Built with AddressSanitizer and UndefinedBehaviorSanitizer by
// tests/native/test_headers_cpp.py.
// Build: g++ -std=c++20 -O1 -g -fsanitize=address,undefined -I src/windowagg/_native/include
//        tests/native/cpp/test_space_saving.cpp -o /tmp/t && /tmp/t
#include <windowagg/space_saving.hpp>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "expect.hpp"

using windowagg::SpaceSavingCore;
using windowagg::SSKey;

struct Event {
    SSKey key;
    double t, w;
};

static SSKey draw_key(std::mt19937_64& rng, int universe, bool strings) {
    uint64_t r = rng() % 100;
    int64_t v = r < 30 ? static_cast<int64_t>(rng() % 3) : static_cast<int64_t>(rng() % static_cast<uint64_t>(universe));
    if (!strings) return SSKey::of_int(v - 2);
    std::string s = "key-" + std::to_string(v) + (v % 7 == 0 ? std::string(40, 'x') : "");  // some past SSO
    return SSKey::of_text(v % 2 ? 1 : 2, s.data(), s.size());
}

static std::string name(const SSKey& k) { return std::to_string(k.tag) + ":" + (k.tag ? k.s : std::to_string(k.i)); }

// f(x) at time T for every key, and D(T)
static std::map<std::string, double> exact(const std::vector<Event>& evs, double lam, double T, double& D) {
    std::map<std::string, double> f;
    D = 0.0;
    for (const Event& e : evs) {
        double v = e.w * std::exp(-lam * (T - e.t));
        f[name(e.key)] += v;
        D += v;
    }
    return f;
}

static void bounds(const SpaceSavingCore& s, const std::vector<Event>& evs, double lam) {
    double T = s.tmax(), D = 0.0;
    auto f = exact(evs, lam, T, D);
    double sc = s.scale(false, 0.0);
    double tol = 1e-7 * D + 1e-12;
    EXPECT(std::fabs(s.n() * sc - D) <= tol);
    for (auto& [key, fx] : f) {
        // find the slot by name
        const SpaceSavingCore::Slot* sl = nullptr;
        s.for_each([&](uint32_t, const SpaceSavingCore::Slot& x) {
            if (name(x.key) == key) sl = &x;
        });
        double lo = sl ? (sl->c - sl->over) * sc : 0.0;
        double hi = (sl ? sl->c : s.floor()) * sc;
        EXPECT(lo - tol <= fx && fx <= hi + tol);
        EXPECT(hi - lo <= D / static_cast<double>(s.k()) + tol);
    }
}

static void stream(std::mt19937_64& rng, uint64_t k, double lam, int n, bool strings, int parts) {
    std::vector<SpaceSavingCore> sk(static_cast<std::size_t>(parts), SpaceSavingCore(k, lam));
    std::vector<Event> evs;
    double clock = 0.0;
    int universe = static_cast<int>(4 * k) + 5;
    for (int i = 0; i < n; ++i) {
        uint64_t r = rng() % 10;
        double t;
        if (r < 6) {
            clock += static_cast<double>(rng() % 4);  // ties (0) and bursts
            t = clock;
        } else if (r < 9) {
            t = clock - static_cast<double>(rng() % 50);  // late
        } else {
            t = clock - 1e4;  // very late: its weight underflows when lam is large
        }
        double w = (rng() % 4 == 0) ? 0.5 + static_cast<double>(rng() % 5) : 1.0;
        SSKey key = draw_key(rng, universe, strings);
        auto& s = sk[rng() % sk.size()];
        s.update(key, key.hash(), t, w);
        evs.push_back(Event{key, t, w});
        if (i % 97 == 0) EXPECT(s.check().empty());
    }
    for (auto& s : sk) EXPECT(s.check().empty());
    // a random merge tree
    bool merged = sk.size() > 1;
    while (sk.size() > 1) {
        std::size_t i = rng() % sk.size(), j = rng() % sk.size();
        if (i == j) j = (j + 1) % sk.size();
        sk[i].merge(sk[j]);
        EXPECT(sk[i].check().empty());
        sk.erase(sk.begin() + static_cast<std::ptrdiff_t>(j));
    }
    SpaceSavingCore& s = sk[0];
    EXPECT(s.size() <= k);
    if (s.has_landmark()) bounds(s, evs, lam);
    // load() of the slots: the same state, heap included
    SpaceSavingCore t(k, lam);
    std::vector<SpaceSavingCore::Slot> items;
    s.for_each([&](uint32_t, const SpaceSavingCore::Slot& x) { items.push_back(x); });
    EXPECT(t.load(s.has_landmark(), s.landmark(), s.tmax(), s.floor(), s.n(), items).empty());
    EXPECT(t.size() == s.size() && t.n() == s.n() && t.floor() == s.floor());
    EXPECT(t.heap().size() == s.heap().size());
    // after a merge the heap was just rebuilt from the slots, as load() rebuilds it
    for (std::size_t i = 0; merged && i < t.heap().size(); ++i) EXPECT(t.heap()[i].v == s.heap()[i].v && t.heap()[i].seq == s.heap()[i].seq);
    // a duplicate key is refused
    if (items.size() >= 2 && items.size() < k) {
        items.push_back(items[0]);
        SpaceSavingCore u(k, lam);
        EXPECT(!u.load(true, 0.0, 1.0, s.floor(), s.n(), items).empty());
    }
}

int main(int argc, char** argv) {
    int scale = argc > 1 ? std::atoi(argv[1]) : 1;
    std::mt19937_64 rng(39);
    for (uint64_t k : {1ull, 2ull, 5ull, 33ull})
        for (double lam : {1e-3, 0.05, 5.0})
            for (bool strings : {false, true})
                for (int parts : {1, 3}) stream(rng, k, lam, 3000 * scale, strings, parts);
    if (failures) return 1;
    std::puts("ok");
    return 0;
}
