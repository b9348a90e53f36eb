// Where the compiled SlidingWindowQDigest's update time goes, on the header alone (no
// Python): 300,000 items up to 10,000 ticks late as in bench_sliding_native.py --kind
// qdigest (mt19937_64 here, not numpy's generator: other values, the same shape; keys
// heavy-tailed in [0, 65536) by a Pareto draw instead of numpy's zipf(1.2)), eps = 0.01,
// time_bits = 32, U = 2^16, update_many batches of 16,384; 3 runs.
//
// Build and profile:
//   g++ -std=c++20 -O2 -g -Isrc/windowagg/_native/include
//       benchmarks/cpp/sliding_qdigest_profile.cpp -o /tmp/swqd_profile   (one line)
//   perf record -g -o /tmp/swqd.data /tmp/swqd_profile && perf report -i /tmp/swqd.data --no-children
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include "windowagg/sliding_window.hpp"

using windowagg::SlidingCore;
using windowagg::SWItem;

int main() {
    const int n = 300000;
    std::mt19937_64 rng(39);
    std::vector<SWItem> items(n);
    for (int i = 0; i < n; ++i) {
        int64_t t = std::max<int64_t>(0, i - static_cast<int64_t>(rng() % 10001));
        double u = static_cast<double>(rng() >> 11) * 0x1.0p-53;
        double x = std::min(65535.0, std::pow(1.0 - u, -5.0) - 1.0);
        items[static_cast<std::size_t>(i)] = SWItem{t, static_cast<uint64_t>(x), 1};
    }
    for (int rep = 0; rep < 3; ++rep) {
        // kappa = ceil(3 * 32 / 0.01), theta0 = 0.5, LU = 16, vcap = ceil(6 * 16 / 0.01) + 1
        SlidingCore c(0.01, 32, 0, 3.0, 9600, 0.5, 65536, 16, 9601);
        for (int i = 0; i < n; i += 16384) {
            std::vector<SWItem> b(items.begin() + i, items.begin() + std::min(n, i + 16384));
            c.add_many(b, b.size());
        }
        std::printf("levels %zu, stored %zu\n", c.num_levels(), c.size());
    }
}
