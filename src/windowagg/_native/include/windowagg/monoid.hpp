// The monoid contract of windowagg's compiled core (the C++ twin of windowagg.monoids.base).
//
// Every algorithm under include/windowagg/ is a header-only template over a monoid M:
//
//   struct M {
//     using partial_type = ...;                                   // what the trees store
//     partial_type identity() const;                              // combine(identity, a) == a
//     partial_type combine(const partial_type&, const partial_type&) const;  // associative
//     static constexpr bool nothrow_combine = true;               // optional, see below
//   };
//
// combine need not be commutative. It may throw (a checked int64 overflow, a Python
// monoid's combine raising): every algorithm then leaves its structure exactly as it was
// before the call (strong exception guarantee), so the Python layer can re-raise a
// windowagg error over an unchanged window. Monoids that declare `nothrow_combine`
// let the algorithms skip that bookkeeping.
//
// Lifting input values and lowering partials to answers happen at the binding layer
// (src/windowagg/_native/src/), never in these headers: the algorithms know nothing of
// Python.
#pragma once

#include <concepts>

namespace windowagg {

template <class M>
concept Monoid = requires(const M& m, const typename M::partial_type& a,
                          const typename M::partial_type& b) {
    typename M::partial_type;
    { m.identity() } -> std::convertible_to<typename M::partial_type>;
    { m.combine(a, b) } -> std::convertible_to<typename M::partial_type>;
};

// Thrown by a native monoid's combine when it cannot represent the result (an int64 sum
// that overflows): the binding layer then deoptimises to Python objects. The algorithms
// treat it as any exception (strong guarantee), except where they say otherwise (AMTA).
struct Deopt {};

// Cold code: invariant checks, changes of representation, error recovery. GCC and clang
// compile it for size and out of the hot paths' way (as they would code under an
// `unlikely` branch), never inlined into them. Measured (g++ 12, -O3): 11% less text in
// bind_fiba.cpp, 6% in bind_fifo.cpp; compile CPU 8% and 2% less, within the noise of the
// loaded machine it was measured on (benchmarks/results/setup-2026-11-28.md).
#if defined(__GNUC__) || defined(__clang__)
#define WINDOWAGG_COLD [[gnu::cold, gnu::noinline]]
#else
#define WINDOWAGG_COLD
#endif

// True when M declares `static constexpr bool nothrow_combine = true`.
template <class M>
inline constexpr bool nothrow_combine_v = requires { requires M::nothrow_combine; };

}  // namespace windowagg
