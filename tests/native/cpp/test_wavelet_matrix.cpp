// Standalone test of include/windowagg/wavelet_matrix.hpp (no Python): random codes over
// alphabets of 1 to 2^40 symbols (0 to 40 levels; the 32- and the 64-bit scratch of the
// build) and lengths around the 64-bit blocks (0, 1, 63, 64, 65, 1000, ...), check() after
// every build, and kth of random ranges (every range and rank for the short ones) against a
// sorted copy of the range. Built with AddressSanitizer and UndefinedBehaviorSanitizer by
// tests/native/test_headers_cpp.py.
// Build: g++ -std=c++20 -O1 -g -fsanitize=address,undefined -I src/windowagg/_native/include
//        tests/native/cpp/test_wavelet_matrix.cpp -o /tmp/t && /tmp/t
#include <windowagg/wavelet_matrix.hpp>

#include <algorithm>
#include <bit>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "expect.hpp"

static void run(std::mt19937_64& rng, std::size_t n, uint64_t sigma, int queries) {
    std::vector<int64_t> codes(n);
    for (auto& c : codes) c = static_cast<int64_t>(rng() % sigma);
    windowagg::WaveletMatrix w(codes.data(), n, sigma);
    EXPECT(w.check().empty());
    EXPECT(w.size() == n);
    EXPECT(w.levels() == (sigma <= 1 ? 0 : static_cast<int>(std::bit_width(sigma - 1))));
    if (!n) return;
    auto expect_kth = [&](std::size_t lo, std::size_t hi) {
        std::vector<int64_t> s(codes.begin() + static_cast<std::ptrdiff_t>(lo),
                               codes.begin() + static_cast<std::ptrdiff_t>(hi));
        std::sort(s.begin(), s.end());
        for (std::size_t k = 0; k < s.size(); k += 1 + s.size() / 16)
            EXPECT(w.kth(lo, hi, k) == static_cast<uint64_t>(s[k]));
        EXPECT(w.kth(lo, hi, s.size() - 1) == static_cast<uint64_t>(s.back()));
    };
    if (n <= 70) {
        for (std::size_t lo = 0; lo < n; ++lo)
            for (std::size_t hi = lo + 1; hi <= n; ++hi) expect_kth(lo, hi);
        return;
    }
    for (int q = 0; q < queries; ++q) {
        std::size_t lo = rng() % n, hi = lo + 1 + rng() % (n - lo);
        expect_kth(lo, hi);
    }
}

int main(int argc, char** argv) {
    int scale = argc > 1 ? std::atoi(argv[1]) : 1;
    std::mt19937_64 rng(7);
    const std::size_t lengths[] = {0, 1, 2, 63, 64, 65, 128, 1000, 4099};
    const uint64_t sigmas[] = {1, 2, 3, 64, 1000, (uint64_t{1} << 32), (uint64_t{1} << 32) + 1, uint64_t{1} << 40};
    for (std::size_t n : lengths)
        for (uint64_t sigma : sigmas) run(rng, n, sigma, 200 * scale);
    if (failures) return 1;
    std::puts("ok");
    return 0;
}
