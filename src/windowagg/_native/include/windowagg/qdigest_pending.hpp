// The weighted batches a q-digest holds back (qdigest.hpp's QDigestCore::add_weighted): the
// (key, weight) pairs of batches that cannot take the digest past its cap, kept as they came,
// and turned into the leaves the reference would hold by one stable sort.
//
// Why the leaves are the reference's, float for float. The reference adds a batch as: per
// distinct key, its weights summed in input order from 0.0 (s = 0.0 + w1 + w2 ...), then
// leaf = leaf + s (0.0 + s for a new leaf). A stable sort by key keeps each key's entries in
// arrival order: the stored leaf's count first (an entry of batch EXISTING placed before the
// pending ones), then its batches in order and each batch's weights in input order. One pass
// over a key's run redoes exactly those additions: s summed per run of one batch, then added
// to the count. Nothing but the order of independent keys differs, and it changes no float.
//
// Time: O(p + l) for p pending pairs and l stored leaves (LSD radix sort, a byte per pass,
// passes whose byte is the same for every entry skipped; a stable comparison sort below 512
// entries). Space: 24 bytes per pending pair, twice during the sort.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "radix_sort.hpp"

namespace windowagg {

class QDigestPending {
public:
    struct Entry {
        uint64_t key;
        double w;
        uint32_t batch;  // EXISTING: a stored leaf's count
    };
    static constexpr uint32_t EXISTING = ~uint32_t{0};

    std::size_t size() const { return entries_.size(); }
    bool empty() const { return entries_.empty(); }
    const std::vector<Entry>& entries() const { return entries_; }
    void clear() {
        entries_.clear();
        batches_ = 0;
    }

    // One checked batch (keys in the universe, weights finite > 0), as one batch of the
    // reference. At most MAX_PENDING pairs are held (the caller's bound), so batch ids stay
    // below 2^32 - 1.
    template <class K>
    void append(const K* keys, const double* w, std::size_t b) {
        const std::size_t at = entries_.size();
        entries_.resize(at + b);
        Entry* e = entries_.data() + at;
        for (std::size_t i = 0; i < b; ++i) e[i] = Entry{static_cast<uint64_t>(keys[i]), w[i], batches_};
        ++batches_;
    }

    // The leaves after the pending batches: `stored` (off, count) pairs given by visit(f),
    // which calls f(off, count) for each stored leaf, then every pending batch in order;
    // written to out as (off, count) sorted by offset. The pending pairs are cleared.
    // Leaf: a struct {uint64_t off; double cnt;}.
    template <class Leaf, class Visit>
    void combine(Visit&& visit, std::vector<Leaf>& out) {
        std::vector<Entry>& a = all_;
        a.clear();
        visit([&](uint64_t off, double c) { a.push_back(Entry{off, c, EXISTING}); });
        a.insert(a.end(), entries_.begin(), entries_.end());
        clear();
        stable_sort_by_key(a, tmp_);
        out.clear();
        out.reserve(a.size());
        const std::size_t n = a.size();
        std::size_t i = 0;
        while (i < n) {
            const uint64_t k = a[i].key;
            double v = 0.0;
            if (a[i].batch == EXISTING) v = a[i++].w;
            while (i < n && a[i].key == k) {
                const uint32_t b = a[i].batch;
                double s = 0.0;
                for (; i < n && a[i].key == k && a[i].batch == b; ++i) s = s + a[i].w;
                v = v + s;
            }
            out.push_back(Leaf{k, v});
        }
        a.clear();  // capacity kept; a copied digest copies no scratch
        tmp_.clear();
    }

private:
    // Sorted by key, stable (equal keys keep their order): radix_sort.hpp. O(n).
    static void stable_sort_by_key(std::vector<Entry>& a, std::vector<Entry>& tmp) {
        radix_sort_by(a, tmp, [](const Entry& x) { return x.key; }, [](std::vector<Entry>& v) {
            std::stable_sort(v.begin(), v.end(), [](const Entry& x, const Entry& y) { return x.key < y.key; });
        });
    }

    std::vector<Entry> entries_;
    uint32_t batches_ = 0;
    std::vector<Entry> all_;  // scratch of combine, kept between calls
    std::vector<Entry> tmp_;
};

}  // namespace windowagg
