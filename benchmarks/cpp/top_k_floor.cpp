// What per-event top_k(c, k) must do at least beyond the engine: PrefixTopK (the compiled
// kernel of windowagg.sketches.exact_decay's prefix pass) on the arrays the engine hands it,
// against the same texts written without any top-k work (each window's (value, weight)
// pairs known in advance, read back from the kernel's own texts: what is left is the texts'
// floor, the weights' shortest digits and the copies), and the copies of the texts into
// fresh allocations (what making Python strings costs at least). CPU seconds, the minimum
// of the repeats. Built and run by `python -m benchmarks decayed_summary --floor`:
//   g++ -O2 -std=c++20 -Isrc/windowagg/_native/include benchmarks/cpp/top_k_floor.cpp -o f
//   ./f DIR K REPEATS   (DIR: v m e lo hi me ee as raw float64 / int64 files, DIR/NAME.bin)
#include <windowagg/decayed_top_k.hpp>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include <time.h>

static double cpu_seconds() {
    timespec ts{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
}

template <class T>
static std::vector<T> read(const std::string& dir, const char* name) {
    std::ifstream f(dir + "/" + name + ".bin", std::ios::binary | std::ios::ate);
    if (!f) {
        std::fprintf(stderr, "cannot read %s/%s.bin\n", dir.c_str(), name);
        std::exit(2);
    }
    const auto size = static_cast<std::size_t>(f.tellg());
    std::vector<T> out(size / sizeof(T));
    f.seekg(0);
    f.read(reinterpret_cast<char*>(out.data()), static_cast<std::streamsize>(size));
    return out;
}

// The windows' pairs, parsed once from the kernel's texts: the value's text and the weight
// (its shortest digits read back give the same double).
struct Pairs {
    std::vector<std::string_view> texts;
    std::vector<double> weights;
    std::size_t from = 0;
    std::string_view text(std::size_t q) const { return texts[from + q]; }
    double weight(std::size_t q) const { return weights[from + q]; }
};

int main(int argc, char** argv) {
    if (argc < 2) {
        std::fprintf(stderr, "usage: %s DIR [K] [REPEATS]\n", argv[0]);
        return 2;
    }
    const std::string dir = argv[1];
    const std::size_t k = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 10;
    const int repeats = argc > 3 ? std::atoi(argv[3]) : 3;
    const auto v = read<double>(dir, "v"), m = read<double>(dir, "m"), me = read<double>(dir, "me");
    const auto e = read<int64_t>(dir, "e"), lo = read<int64_t>(dir, "lo"), hi = read<int64_t>(dir, "hi"),
               ee = read<int64_t>(dir, "ee");
    const std::size_t n = v.size(), r = lo.size();
    constexpr std::size_t kChunk = 4096;  // as the binding's chunks

    // the kernel's texts, kept; then each window's pairs read back from them
    windowagg::PrefixTopK once(v.data(), m.data(), e.data(), n, lo.data(), hi.data(), me.data(), ee.data(), k, 960);
    const std::vector<std::string> want = windowagg::all_texts(once, r);
    Pairs pairs;
    std::vector<std::size_t> count(r);
    std::size_t bytes = 0;
    for (std::size_t j = 0; j < r; ++j) {
        const std::string& s = want[j];
        bytes += s.size();
        std::size_t at = 1;  // past '['
        while (at < s.size() && s[at] == '[') {
            const std::size_t comma = s.find(", ", at);
            pairs.texts.emplace_back(s.data() + at + 1, comma - at - 1);
            const std::size_t close = s.find(']', comma);
            pairs.weights.push_back(std::strtod(std::string(s, comma + 2, close - comma - 2).c_str(), nullptr));
            ++count[j];
            at = close + 3;  // past "], "
        }
    }
    double kernel = 1e30, texts = 1e30, copies = 1e30;
    bool same = true;
    for (int rep = 0; rep < repeats; ++rep) {
        windowagg::TextChunk chunk;
        double t0 = cpu_seconds();
        windowagg::PrefixTopK kern(v.data(), m.data(), e.data(), n, lo.data(), hi.data(), me.data(), ee.data(), k, 960);
        for (std::size_t j0 = 0; j0 < r; j0 += kChunk) {
            chunk.clear();
            kern.run(j0, std::min(r, j0 + kChunk), chunk);
        }
        kernel = std::min(kernel, cpu_seconds() - t0);
        // the same texts, no top-k work: each window's pairs written from the lists
        std::vector<std::unique_ptr<char[]>> made(r);
        double t1 = cpu_seconds(), in_copies = 0;
        pairs.from = 0;
        for (std::size_t j0 = 0; j0 < r; j0 += kChunk) {
            const std::size_t j1 = std::min(r, j0 + kChunk);
            chunk.clear();
            for (std::size_t j = j0; j < j1; ++j) {
                windowagg::detail::write_pairs(chunk, pairs, count[j]);
                pairs.from += count[j];
            }
            const double c0 = cpu_seconds();
            std::size_t from = 0;
            for (std::size_t q = 0; q < j1 - j0; ++q) {  // each text into a fresh allocation
                const std::size_t to = chunk.ends[q];
                made[j0 + q] = std::make_unique_for_overwrite<char[]>(to - from);
                std::memcpy(made[j0 + q].get(), chunk.bytes.data() + from, to - from);
                if (rep == 0) same = same && std::string_view(made[j0 + q].get(), to - from) == want[j0 + q];
                from = to;
            }
            in_copies += cpu_seconds() - c0;
        }
        const double t2 = cpu_seconds();
        made.clear();
        const double freed = cpu_seconds() - t2;
        texts = std::min(texts, t2 - t1 - in_copies);
        copies = std::min(copies, in_copies + freed);
    }
    std::printf("PrefixTopK, %zu events, %zu windows, k = %zu, %zu bytes of text; CPU s, min of %d\n", n, r, k,
                bytes, repeats);
    std::printf("- the kernel (top-k work and texts): %.3f s\n", kernel);
    std::printf("- the same texts without top-k work: %.3f s (%s)\n", texts, same ? "byte for byte" : "DIFFERENT");
    std::printf("- top-k work (the difference): %.3f s\n", kernel - texts);
    std::printf("- the texts copied into fresh allocations (and freed): %.3f s\n", copies);
    return same ? 0 : 1;
}
