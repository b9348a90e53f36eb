// Exponentially decayed sums over slices of time-sorted events: the forward-decay monoid
// (landmark r, S = sum v_i 2^((t_i - r)/h), W = sum 2^((t_i - r)/h)) slid by two stacks.
//
// The twin of windowagg.sketches.forward_decay.ExpDecayed driven by fifo.TwoStacksLite's
// query_slices: a partial keeps its newest time as landmark, so every weight is <= 1 and
// nothing overflows; combine rescales the partial with the older landmark to the newer one.
// No subtraction anywhere (evicting is dropping a suffix aggregate), so the answers carry no
// cancellation error. O(1) amortized per event and per window, one exp2 per event and per
// combine.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace windowagg {

struct DecayPartial {
    int64_t r = 0;     // landmark: the newest event time in the partial
    double s = 0.0;    // sum of v_i * 2^((t_i - r) / h)
    double w = 0.0;    // sum of 2^((t_i - r) / h)
    bool empty = true;
};

// a (x) b: the partial with the older landmark rescaled to the newer. Commutative.
inline DecayPartial decay_combine(const DecayPartial& a, const DecayPartial& b, double h) {
    if (a.empty) return b;
    if (b.empty) return a;
    const DecayPartial& young = a.r >= b.r ? a : b;
    const DecayPartial& old = a.r >= b.r ? b : a;
    double f = std::exp2(static_cast<double>(old.r - young.r) / h);
    return DecayPartial{young.r, young.s + old.s * f, young.w + old.w * f, false};
}

// For every window j (lo, hi non-decreasing, 0 <= lo[j] <= hi[j] <= n): the decayed sum
// and weight of events [lo[j], hi[j]) as of end[j], written to out_s[j] and out_w[j].
inline void decay_slices(const int64_t* t, const double* v, std::size_t /*n*/,
                         const int64_t* lo, const int64_t* hi, const int64_t* end,
                         std::size_t windows, double h, double* out_s, double* out_w) {
    std::vector<DecayPartial> front;  // front[i - base]: the aggregate of [i, flip)
    int64_t base = 0, flip = 0;       // front covers [held_lo, flip), back covers [flip, held_hi)
    int64_t held_lo = 0, held_hi = 0;
    DecayPartial back;
    for (std::size_t j = 0; j < windows; ++j) {
        int64_t a = lo[j], b = hi[j];
        if (a >= held_hi) {  // nothing held survives: a fresh scratch
            front.clear();
            base = flip = held_lo = held_hi = a;
            back = DecayPartial{};
        }
        held_lo = a;
        for (int64_t i = held_hi; i < b; ++i) {  // insert into the back stack
            back = decay_combine(back, DecayPartial{t[i], v[i], 1.0, false}, h);
        }
        if (b > held_hi) held_hi = b;
        if (held_lo >= flip && held_hi > held_lo) {  // the front ran out: flip the back
            front.assign(static_cast<std::size_t>(held_hi - held_lo), DecayPartial{});
            base = held_lo;
            DecayPartial acc;
            for (int64_t i = held_hi - 1; i >= held_lo; --i) {
                acc = decay_combine(DecayPartial{t[i], v[i], 1.0, false}, acc, h);
                front[static_cast<std::size_t>(i - base)] = acc;
            }
            flip = held_hi;
            back = DecayPartial{};
        }
        DecayPartial q = held_lo < flip ? decay_combine(front[static_cast<std::size_t>(held_lo - base)], back, h)
                                        : back;
        if (q.empty) {
            out_s[j] = 0.0;
            out_w[j] = 0.0;
        } else {
            double f = std::exp2(static_cast<double>(q.r - end[j]) / h);
            out_s[j] = q.s * f;
            out_w[j] = q.w * f;
        }
    }
}

}  // namespace windowagg
