// Helpers for the O(n) invariant checks (`_check()`) of the FIFO templates.
#pragma once

#include <cstddef>
#include <string>

#include "windowagg/monoid.hpp"

namespace windowagg {

// v[lo] (x) ... (x) v[hi-1] over an indexable sequence (identity when lo >= hi).
template <class M, class Seq>
typename M::partial_type fold_range(const M& m, const Seq& v, std::size_t lo, std::size_t hi) {
    auto acc = m.identity();
    for (std::size_t i = lo; i < hi; ++i) acc = m.combine(acc, v[i]);
    return acc;
}

// stored[p - lo] == v[p] (x) ... (x) v[end-1] for p in [lo, hi); "" or what broke.
template <class M, class Seq, class Stored, class Eq>
std::string check_suffixes(const M& m, const Seq& v, const Stored& stored, std::size_t lo,
                           std::size_t hi, std::size_t end, const char* region, Eq&& eq) {
    auto acc = fold_range(m, v, hi, end);
    for (std::size_t p = hi; p-- > lo;) {
        acc = m.combine(v[p], acc);
        if (!eq(stored[p - lo], acc)) return std::string(region) + " entry " + std::to_string(p - lo);
    }
    return {};
}

// stored[p - lo] == v[lo] (x) ... (x) v[p] for p in [lo, hi).
template <class M, class Seq, class Stored, class Eq>
std::string check_prefixes(const M& m, const Seq& v, const Stored& stored, std::size_t lo,
                           std::size_t hi, const char* region, Eq&& eq) {
    auto acc = m.identity();
    for (std::size_t p = lo; p < hi; ++p) {
        acc = m.combine(acc, v[p]);
        if (!eq(stored[p - lo], acc)) return std::string(region) + " entry " + std::to_string(p - lo);
    }
    return {};
}

// DABA's Lemma 4.1 for a non-empty window.
inline std::string check_lemma_4_1(std::size_t nl, std::size_t nr, std::size_t na, std::size_t nf,
                                   std::size_t nb) {
    if (nl + nr + na + 1 != nf - nb) return "Lemma 4.1: |lL|+|lR|+|lA|+1 != |lF|-|lB|";
    if (nl != nr) return "Lemma 4.1: |lL| != |lR|";
    return {};
}

// True when M declares itself commutative (a member `commutative`, read at run time).
template <class M>
bool is_commutative(const M& m) {
    if constexpr (requires { m.commutative; }) return static_cast<bool>(m.commutative);
    return false;
}

}  // namespace windowagg
