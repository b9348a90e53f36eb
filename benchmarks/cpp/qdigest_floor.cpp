// The compiled QDigest's update rate against the floor of its compress schedule, on the
// header alone (no Python): the 10M log-normal float64 values of bench_qdigest_native.py
// (mt19937_64 here, not numpy's generator: other values, the same distribution), keys in
// exact float order (FloatOrderMapper's), eps = 0.02, L = 64, batches of 16,384 keys.
//
// * digest: QDigestCore::add_ones per batch (what update_many of weight-1 keys runs).
// * floor: what any implementation that keeps the reference's compress schedule (and so
//   its bytes) must do at least: know the number of distinct leaves whenever the digest may
//   pass 12L/eps + 1 = 38,401 nodes (the keys appended, then one probe per key into a
//   key-only set at load <= 3/8), and at each compress one read of every leaf and a rebuild
//   with the ~5,000 survivors it leaves; no ordering, no tree pass. (Until 2026-12-07 the
//   floor was one probe per key into the 16-byte-slot leaf level, 35-41M keys/s: the digest
//   now runs past it.)
//
// Build and run (interleaved, 3 repeats, medians of CPU time):
//   g++ -O2 -std=c++20 -I src/windowagg/_native/include benchmarks/cpp/qdigest_floor.cpp \
//       -o build/qdigest_floor && build/qdigest_floor
#include <windowagg/qdigest.hpp>

#include <algorithm>
#include <bit>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <random>
#include <vector>

namespace {

constexpr std::size_t kItems = 10000000, kChunk = 1 << 14, kCap = 38401, kKeep = 5000;

double cpu_now() { return static_cast<double>(std::clock()) / CLOCKS_PER_SEC; }

double run_digest(const std::vector<uint64_t>& keys, std::size_t* size) {
    windowagg::QDigestCore q(~0ull, 0.02);
    double c0 = cpu_now();
    for (std::size_t i = 0; i < keys.size(); i += kChunk)
        q.add_ones(keys.data() + i, std::min(kChunk, keys.size() - i));
    double c = cpu_now() - c0;
    *size = q.size();
    return c;
}

double run_floor(const std::vector<uint64_t>& keys, double* sink) {
    std::vector<uint64_t> pend, seen;
    std::size_t kept = 0;
    double c0 = cpu_now();
    for (std::size_t i = 0; i < keys.size(); i += kChunk) {
        std::size_t e = std::min(keys.size(), i + kChunk);
        pend.insert(pend.end(), keys.begin() + static_cast<std::ptrdiff_t>(i), keys.begin() + static_cast<std::ptrdiff_t>(e));
        if (kept + pend.size() <= kCap) continue;
        std::size_t cap = 16;
        while (cap / 8 * 3 < pend.size()) cap *= 2;
        seen.assign(cap, 0);
        const int shift = 64 - std::countr_zero(static_cast<uint64_t>(cap));
        std::size_t distinct = 0;
        for (uint64_t k : pend)
            for (std::size_t h = static_cast<std::size_t>((k * 0x9E3779B97F4A7C15ull) >> shift);; h = (h + 1) & (cap - 1)) {
                if (seen[h] == k) break;
                if (!seen[h]) {
                    seen[h] = k;
                    ++distinct;
                    break;
                }
            }
        if (kept + distinct > kCap) {  // read every leaf, keep ~kKeep
            uint64_t acc = 0;
            for (uint64_t k : pend) acc += k >> 60;
            *sink += static_cast<double>(acc);
            kept = kKeep;
            pend.clear();
        }
    }
    return cpu_now() - c0;
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

}  // namespace

int main() {
    std::mt19937_64 rng(39);
    std::lognormal_distribution<double> dist(0.0, 2.0);
    std::vector<uint64_t> keys(kItems);
    for (uint64_t& k : keys) {
        double v = dist(rng);
        uint64_t b;
        std::memcpy(&b, &v, 8);
        k = (b >> 63) ? ~b : (b | (1ull << 63));
    }
    std::vector<double> digest, floor;
    std::size_t size = 0;
    double sink = 0;
    for (int rep = 0; rep < 3; ++rep) {
        digest.push_back(run_digest(keys, &size));
        floor.push_back(run_floor(keys, &sink));
    }
    double d = median(digest), f = median(floor);
    std::printf("digest (add_ones + compress): %.3f s CPU, %.2f M items/s (%zu nodes at the end)\n", d,
                kItems / d / 1e6, size);
    std::printf("floor (append, distinct count + read and rebuild at each compress): %.3f s CPU, %.2f M items/s (%g)\n", f,
                kItems / f / 1e6, sink);
    return 0;
}
