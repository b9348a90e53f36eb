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

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace windowagg {

// (x, y) * 2^e, each rounded once where the product is subnormal: while 2^e is a normal
// double, one exp2 and two products; below (e < -1022, where exp2 would round 2^e itself
// onto the subnormal grid and the products would inherit that error, or underflow to 0
// though x 2^e is a normal number) exp2 of e's fraction in [1, 2), then ldexp by its
// integer part, whose one rounding is the product's (absolute error <= 2^-1075). A product
// below 2^-1075 is 0. One exp2 for both (S and W share the factor).
inline void scale2(double& x, double& y, double e) {
    if (e >= -1022.0) {
        double f = std::exp2(e);
        x *= f;
        y *= f;
        return;
    }
    double n = std::floor(e);
    double f = std::exp2(e - n);
    int k = static_cast<int>(std::max(n, -4000.0));
    x = std::ldexp(x * f, k);
    y = std::ldexp(y * f, k);
}

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
    double s = old.s, w = old.w;
    scale2(s, w, static_cast<double>(old.r - young.r) / h);
    return DecayPartial{young.r, young.s + s, young.w + w, false};
}

// For every window j (lo, hi non-decreasing, 0 <= lo[j] <= hi[j] <= n): the decayed sum
// and weight of events [lo[j], hi[j]) as of end[j], written to out_s[j] and out_w[j]; with
// as_of false, as of the window's newest event instead (the landmark partial: S and W
// unscaled, W >= 1, so S / W is the decayed mean, which does not depend on the as-of time
// and cannot underflow to 0 / 0 however long after its newest event a window ends).
//
// Two stacks, with two savings that keep the operations those of the monoid:
// - a window that starts where the previous one started (per-event windows over a key's
//   whole history, a hopping window that has not moved its start) extends the previous
//   answer by its new events: one combine (one exp2) per event, and the back stack is filled
//   from those events only when a window's start moves (`back_hi` marks how far it is filled);
// - the as-of scaling is skipped when the window ends at its newest event (exp2(0) = 1).
// A key's history of n events costs n exp2 (it cost 3n before, benchmarks/results/decay-*).
// The slide's state between blocks of windows: decay_slices in pieces (a caller that copies
// and checks the bounds a block at a time, bind_decay.cpp, runs it block by block, with the
// same operations in the same order as one call over every window).
struct DecaySlide {
    std::vector<DecayPartial> front;  // front[i - base]: the aggregate of [i, flip)
    int64_t base = 0, flip = 0;       // front covers [held_lo, flip), back covers [flip, back_hi)
    int64_t held_lo = 0, held_hi = 0, back_hi = 0;
    DecayPartial back;
    DecayPartial q;                   // the last window's aggregate, of [q_lo, q_hi)
    int64_t q_lo = -1, q_hi = 0;

    // The next `windows` windows (lo, hi, end and the outputs point at the first of them;
    // the bounds continue the previous blocks': non-decreasing, within the events).
    void run(const int64_t* t, const double* v, const int64_t* lo, const int64_t* hi,
             const int64_t* end, std::size_t windows, double h, double* out_s, double* out_w,
             bool as_of) {
        auto event = [&](int64_t i) { return DecayPartial{t[i], v[i], 1.0, false}; };
        for (std::size_t j = 0; j < windows; ++j) {
            int64_t a = lo[j], b = hi[j];
            if (a >= held_hi) {  // nothing held survives: a fresh scratch
                front.clear();
                base = flip = held_lo = held_hi = back_hi = a;
                back = DecayPartial{};
                q_lo = -1;
            }
            held_lo = a;
            if (b > held_hi) held_hi = b;
            if (a == q_lo) {  // the same start: the last answer and the new events
                for (int64_t i = q_hi; i < b; ++i) q = decay_combine(q, event(i), h);
            } else if (held_lo >= flip) {  // the front ran out: the held events become the front
                front.assign(static_cast<std::size_t>(held_hi - held_lo), DecayPartial{});
                base = held_lo;
                DecayPartial acc;
                for (int64_t i = held_hi - 1; i >= held_lo; --i) {
                    acc = decay_combine(event(i), acc, h);
                    front[static_cast<std::size_t>(i - base)] = acc;
                }
                flip = back_hi = held_hi;
                back = DecayPartial{};
                q = held_hi > held_lo ? front[0] : DecayPartial{};
            } else {  // fill the back stack up to the window's end, then front (x) back
                for (int64_t i = back_hi; i < held_hi; ++i) back = decay_combine(back, event(i), h);
                back_hi = held_hi;
                q = decay_combine(front[static_cast<std::size_t>(held_lo - base)], back, h);
            }
            q_lo = a;
            q_hi = b;
            if (q.empty) {
                out_s[j] = 0.0;
                out_w[j] = 0.0;
            } else if (!as_of || q.r == end[j]) {  // as of its own newest event: no scaling
                out_s[j] = q.s;
                out_w[j] = q.w;
            } else {
                double s = q.s, w = q.w;
                scale2(s, w, static_cast<double>(q.r - end[j]) / h);
                out_s[j] = s;
                out_w[j] = w;
            }
        }
    }
};

inline void decay_slices(const int64_t* t, const double* v, std::size_t /*n*/,
                         const int64_t* lo, const int64_t* hi, const int64_t* end,
                         std::size_t windows, double h, double* out_s, double* out_w,
                         bool as_of = true) {
    DecaySlide slide;
    slide.run(t, v, lo, hi, end, windows, h, out_s, out_w, as_of);
}

}  // namespace windowagg
