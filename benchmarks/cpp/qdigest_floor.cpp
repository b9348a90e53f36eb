// The compiled QDigest's update rate against the floor of its compress schedule, on the
// header alone (no Python): the 10M log-normal float64 values of bench_qdigest_native.py
// (mt19937_64 here, not numpy's generator: other values, the same distribution), keys in
// exact float order (FloatOrderMapper's), eps = 0.02, L = 64, batches of 16,384 keys.
//
// * digest: QDigestCore::add_ones per batch (what update_many of weight-1 keys runs).
// * floor: what any implementation that keeps the reference's compress schedule (and so
//   its bytes) must do at least: one probe of the leaf hash level per key, and whenever the
//   digest passes 12L/eps + 1 = 38,401 nodes one read of every node and a rebuild with the
//   ~5,000 survivors a compress leaves; no sort, no tree pass.
//
// Build and run (interleaved, 3 repeats, medians of CPU time):
//   g++ -O2 -std=c++20 -I src/windowagg/_native/include benchmarks/cpp/qdigest_floor.cpp \
//       -o build/qdigest_floor && build/qdigest_floor
#include <windowagg/qdigest.hpp>

#include <algorithm>
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
    windowagg::QDigestLevel leaves;
    std::vector<std::pair<uint64_t, double>> all;
    double c0 = cpu_now();
    for (std::size_t i = 0; i < keys.size(); i += kChunk) {
        std::size_t e = std::min(keys.size(), i + kChunk);
        for (std::size_t j = i; j < e; ++j) leaves.add(keys[j], 1.0);
        if (leaves.size() > kCap) {
            all.clear();
            leaves.for_each([&](uint64_t k, double c) { all.emplace_back(k, c); });
            leaves.reset();
            std::size_t step = all.size() / kKeep;
            for (std::size_t j = 0; j < all.size(); j += step) {
                leaves.set(all[j].first, all[j].second);
                *sink += all[j].second;
            }
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
    std::printf("floor (probe + read and rebuild at each compress): %.3f s CPU, %.2f M items/s (%g)\n", f,
                kItems / f / 1e6, sink);
    return 0;
}
