// The window bounds of the slice verbs (FIFO query_slices, OrderStatistics kth_slices):
// two index arrays lo, hi (int64 buffers or sequences of ints), window i being
// values[lo[i]:hi[i]]. Checked in full before anything runs, with the rules of the Python
// reference (windowagg/fifo/_verbs.py, read_slices): same length, 0 <= lo[i] <= hi[i] <=
// len(values), lo and hi non-decreasing. Python-only glue, no algorithm here.
#pragma once

#include <nanobind/nanobind.h>

#include <cstdint>
#include <string>
#include <vector>

#include "adapters.hpp"
#include "inputs.hpp"

namespace windowagg::py {

// One index array as int64 (a float64 buffer or a non-integer item is refused).
inline std::vector<int64_t> read_indices(nb::handle obj, const std::string& who, const char* name) {
    Values v(obj, who);
    if (v.kind == Values::F64) raise("ArgumentTypeError", who + " needs integer window bounds " + name + ", got float64");
    if (v.kind == Values::I64) return std::vector<int64_t>(v.i64, v.i64 + v.n);  // one copy
    std::vector<int64_t> out(v.n);
    for (std::size_t i = 0; i < v.n; ++i) out[i] = index_arg(v.item(i), who, "window bound");
    return out;
}

struct Slices {
    std::vector<int64_t> lo, hi;
    std::size_t r = 0;

    Slices(nb::handle lo_, nb::handle hi_, std::size_t n, const std::string& who)
        : lo(read_indices(lo_, who, "lo")), hi(read_indices(hi_, who, "hi")) {
        if (lo.size() != hi.size())
            raise("ArgumentError", who + ": " + std::to_string(lo.size()) + " lower bounds for " +
                                       std::to_string(hi.size()) + " upper bounds; give one lo and one hi per window");
        r = lo.size();
        auto n64 = static_cast<int64_t>(n);
        // the first window that breaks a rule, found without the GIL when there are many
        // (the bounds are this object's copies: no other thread sees them; a few windows
        // are not worth handing the GIL to another thread); the message is made with it
        std::size_t first = r;
        auto find = [&] {
            for (std::size_t i = 0; i < r; ++i) {
                bool bad = lo[i] < 0 || lo[i] > hi[i] || hi[i] > n64;
                bool unsorted = i && (lo[i] < lo[i - 1] || hi[i] < hi[i - 1]);
                if (bad || unsorted) {
                    first = i;
                    return;
                }
            }
        };
        if (r >= (std::size_t(1) << 14)) {
            nb::gil_scoped_release release;
            find();
        } else {
            find();
        }
        for (std::size_t i = first; i < r; ++i) {
            bool bad = lo[i] < 0 || lo[i] > hi[i] || hi[i] > n64;
            bool unsorted = i && (lo[i] < lo[i - 1] || hi[i] < hi[i - 1]);
            if (!bad && !unsorted) continue;
            std::string at = who + ": window " + std::to_string(i) + " is [" + std::to_string(lo[i]) + ", " +
                             std::to_string(hi[i]) + ") ";
            if (bad)
                raise("ArgumentError", at + "over " + std::to_string(n) +
                                           " values; each window needs 0 <= lo <= hi <= len(values)");
            raise("ArgumentError", at + "after [" + std::to_string(lo[i - 1]) + ", " + std::to_string(hi[i - 1]) +
                                       "); lo and hi must be non-decreasing (sort the windows by their ends)");
        }
    }
};

}  // namespace windowagg::py
