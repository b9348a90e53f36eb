// The floor under top_k's JSON texts: writing N doubles as their shortest round-trip digits
// with std::to_chars alone (libstdc++: Ryu), the digits only, no JSON, no strings; and the
// copy of R texts of L bytes each into fresh allocations (what making R strings costs
// beyond the digits). Built and run by `python -m benchmarks decayed_summary --floor`:
//   g++ -O2 -std=c++20 benchmarks/cpp/float_text_floor.cpp -o floor && ./floor 10000000 1000000 272
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <vector>

#include <time.h>

// CPU seconds of this process (the machine is shared: wall clock would count the others).
static double cpu_seconds() {
    timespec ts{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
}

int main(int argc, char** argv) {
    const std::size_t n = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 10000000;
    const std::size_t r = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 1000000;
    const std::size_t len = argc > 3 ? std::strtoull(argv[3], nullptr, 10) : 272;
    std::mt19937_64 g(1);
    std::uniform_real_distribution<double> u(0.0, 10.0);  // top_k's weights: a few units
    std::vector<double> w(n);
    for (double& x : w) x = u(g);
    char buf[64];
    std::size_t sink = 0;
    for (const auto fmt : {std::chars_format::scientific, std::chars_format::fixed}) {
        const double t0 = cpu_seconds();
        for (double x : w) sink += static_cast<std::size_t>(std::to_chars(buf, buf + sizeof buf, x, fmt).ptr - buf);
        const double s = cpu_seconds() - t0;
        std::printf("std::to_chars %s, %zu doubles: %.3f s CPU (%.1f ns each)\n",
                    fmt == std::chars_format::fixed ? "fixed" : "scientific", n, s, 1e9 * s / double(n));
    }
    std::vector<char> text(len, 'x');
    std::vector<std::unique_ptr<char[]>> copies(r);
    const double t1 = cpu_seconds();
    for (auto& c : copies) {
        c = std::make_unique_for_overwrite<char[]>(len);
        std::memcpy(c.get(), text.data(), len);
    }
    copies.clear();
    const double s = cpu_seconds() - t1;
    std::printf("%zu copies of %zu bytes into fresh allocations (and freed): %.3f s CPU (%zu)\n", r, len, s, sink);
    return 0;
}
