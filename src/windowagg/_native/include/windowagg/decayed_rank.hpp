// Exact decayed quantiles of windows sharing a start, under exponential decay: a Fenwick tree
// of weights over the events' (value, time) ranks, the weights m_i 2^(e_i - N) relative to a
// landmark exponent N rebased by exact powers of two (forward decay). The compiled twin of
// windowagg.sketches.exact_decay._prefix_quantiles_python: the same operations in the same
// order, so the same answers bit for bit.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace windowagg {

namespace detail {
inline int clamp_shift(int64_t s) { return static_cast<int>(std::clamp<int64_t>(s, -3000, 3000)); }
}  // namespace detail

// For every window j ([lo[j], hi[j]), non-empty, bounds non-decreasing, hi[j] <= n) the rank
// (position in the (value, time) order) of the smallest value q with
// W(<= q) >= (phi W) snap. A window with the previous one's start extends the tree; a new
// start clears the nodes the last run touched. O((n + r) log n) for r windows.
inline void decayed_prefix_quantiles(const int64_t* rank, const double* m, const int64_t* e,
                                     std::size_t n, const int64_t* lo, const int64_t* hi,
                                     std::size_t r, double phi, double snap, int64_t rescale,
                                     int64_t* out) {
    if (n == 0) return;
    std::vector<double> tree(n + 1, 0.0);
    std::vector<uint8_t> mark(n + 1, 0);
    std::vector<std::size_t> touched;
    std::size_t top = 1;
    while (top * 2 <= n) top *= 2;
    int64_t cur = -1, held = 0, base = 0;
    double total = 0.0;
    for (std::size_t j = 0; j < r; ++j) {
        const int64_t a = lo[j], b = hi[j];
        if (a != cur) {  // a new run: clear what the last one touched
            for (std::size_t k : touched) {
                tree[k] = 0.0;
                mark[k] = 0;
            }
            touched.clear();
            cur = a;
            held = a;
            total = 0.0;
            base = e[a];
        }
        for (int64_t i = held; i < b; ++i) {
            if (e[i] - base > rescale) {  // rebase: an exact power of two, ratios kept
                const int shift = detail::clamp_shift(base - e[i]);
                for (std::size_t k : touched) tree[k] = std::ldexp(tree[k], shift);
                total = std::ldexp(total, shift);
                base = e[i];
            }
            const double w = std::ldexp(m[i], detail::clamp_shift(e[i] - base));
            total += w;
            for (std::size_t k = static_cast<std::size_t>(rank[i]) + 1; k <= n; k += k & (~k + 1)) {
                if (!mark[k]) {
                    mark[k] = 1;
                    touched.push_back(k);
                }
                tree[k] += w;
            }
        }
        held = std::max(held, b);
        const double goal = (phi * total) * snap;
        std::size_t at = 0;
        double acc = 0.0;
        for (std::size_t step = top; step; step >>= 1) {  // the longest prefix below goal
            const std::size_t nxt = at + step;
            if (nxt <= n && acc + tree[nxt] < goal) {
                at = nxt;
                acc += tree[nxt];
            }
        }
        out[j] = static_cast<int64_t>(std::min(at, n - 1));
    }
}

// For every window j ([lo[j], hi[j]), bounds within the events) the event (index) whose value
// is the smallest q with W(<= q) >= (phi W) snap, -1 for an empty window: the window's events
// sorted by (value, index), its weights m_i 2^(e_i - N) (N the exponent of its last event, the
// newest) summed in that order. The compiled twin of the numpy matrices of
// exact_decay.quantile_slices (a row's cumsum over the events in stable value order: the same
// sums in the same order). O(w log w) per window of w events.
inline void decayed_window_quantiles(const double* v, const double* m, const int64_t* e,
                                     const int64_t* lo, const int64_t* hi, std::size_t r,
                                     double phi, double snap, int64_t* out) {
    std::vector<std::pair<double, int64_t>> rs;
    std::vector<double> w;
    for (std::size_t j = 0; j < r; ++j) {
        const int64_t a = lo[j], b = hi[j];
        if (a >= b) {
            out[j] = -1;
            continue;
        }
        rs.clear();
        for (int64_t i = a; i < b; ++i) rs.emplace_back(v[i], i);
        std::sort(rs.begin(), rs.end());
        const int64_t top = e[b - 1];
        w.resize(rs.size());
        double d = 0.0;
        for (std::size_t q = 0; q < rs.size(); ++q) {
            const int64_t i = rs[q].second;
            w[q] = std::ldexp(m[i], detail::clamp_shift(e[i] - top));
            d += w[q];
        }
        const double goal = (phi * d) * snap;
        double c = 0.0;
        std::size_t q = 0;
        for (; q + 1 < rs.size(); ++q) {
            c += w[q];
            if (c >= goal) break;
        }
        out[j] = rs[q].second;
    }
}

}  // namespace windowagg
