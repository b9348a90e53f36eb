// LSD radix sort of a vector by a uint64 key, shared by the q-digest's sorts of its leaves
// (qdigest_bottom_up.hpp) and of its pending weighted pairs (qdigest_pending.hpp).
//
// A byte per pass (eight passes at most, counted in one read of the input); a pass whose byte
// is the same for every entry is skipped (the top bytes of float keys hardly vary). Stable:
// entries with equal keys keep their order. Below 512 entries, and from 2^32 on (where the
// uint32 counts would wrap), the caller's comparison sort runs instead.
// Time O(n) (8 counting reads and at most 8 scatters), space: tmp, n entries.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace windowagg {

// key(x): the entry's uint64 key; small(a): the comparison sort for few (or too many) entries
template <class T, class Key, class Small>
void radix_sort_by(std::vector<T>& a, std::vector<T>& tmp, Key key, Small small) {
    const std::size_t n = a.size();
    if (n < 512 || n >= (std::size_t{1} << 32)) {
        small(a);
        return;
    }
    std::vector<uint32_t> cnt(8 * 256, 0);
    for (const T& x : a)
        for (int b = 0; b < 8; ++b) ++cnt[static_cast<std::size_t>(b) * 256 + ((key(x) >> (8 * b)) & 255)];
    tmp.resize(n);
    T* src = a.data();
    T* dst = tmp.data();
    for (int b = 0; b < 8; ++b) {
        uint32_t* c = cnt.data() + static_cast<std::size_t>(b) * 256;
        if (c[(key(src[0]) >> (8 * b)) & 255] == n) continue;
        uint32_t sum = 0;
        for (int i = 0; i < 256; ++i) {
            const uint32_t k = c[i];
            c[i] = sum;
            sum += k;
        }
        for (std::size_t i = 0; i < n; ++i) dst[c[(key(src[i]) >> (8 * b)) & 255]++] = src[i];
        std::swap(src, dst);
    }
    if (src != a.data()) std::copy(src, src + n, a.data());
}

}  // namespace windowagg
