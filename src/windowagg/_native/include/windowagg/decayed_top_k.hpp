// Exact decayed heavy hitters under exponential decay, written as top_k's JSON text. Two
// kernels, the compiled twins of windowagg.sketches.exact_decay's loops (the same operations
// in the same order, the same text byte for byte, floats as Python's repr writes them):
// - PrefixTopK: windows sharing a start (each key's whole history): each value's weight
//   m_i 2^(e_i - N) summed in time order against a landmark exponent N (rebased by exact
//   powers of two), and the set of the k heaviest kept as weights grow. O(k) per event and
//   window.
// - WindowTopK: windows answered one by one: each value's weights summed in time order (the
//   Python twin's (value, index) order within a value), the k-th heaviest by nth_element.
//   O(w) per window of w events, plus the k heaviest's order.
// Both write a run of windows' texts end to end into one TextChunk (no allocation per
// window), so a caller can turn a chunk into Python strings while the next is computed.
#pragma once

#include <algorithm>
#include <bit>
#include <charconv>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <stdexcept>
#include <utility>
#include <vector>

namespace windowagg {

// Python's repr of a finite double into out (at least 32 chars), its length returned: the
// shortest round-trip digits, fixed notation when the decimal point falls in (-4, 16] digits
// from the first (for a double: 1e-4 <= |x| < 1e16, the shortest digits of a smaller or larger
// double never reaching either bound), else d[.ddd]e+XX.
inline std::size_t py_float_repr_to(double x, char* out) {
    if (!std::isfinite(x))  // an overflowed weight: refused (as the Python twin's 2**x), not text
        throw std::overflow_error(
            "top_k: a decayed weight is not a finite float64 (the window ends too far from its "
            "events for float64); use a larger half_life or windows nearer their events");
    const double a = std::fabs(x);
    if (a >= 1e-4 && a < 1e16) {
        // fixed notation with the fewest decimals that round-trip: the shortest digits (below
        // 2^53 every integer digit is significant; above, the doubles are even integers whose
        // shortest digits are all of them), then ".0" for a whole number, as repr writes it
        const auto res = std::to_chars(out, out + 32, x, std::chars_format::fixed);
        auto len = static_cast<std::size_t>(res.ptr - out);
        if (x == std::trunc(x)) {  // no decimals written
            out[len++] = '.';
            out[len++] = '0';
        }
        return len;
    }
    char buf[40];
    const auto res = std::to_chars(buf, buf + sizeof buf, x, std::chars_format::scientific);
    const char* p = buf;
    char* o = out;
    if (*p == '-') {
        *o++ = '-';
        ++p;
    }
    char digits[24];
    int nd = 0;
    while (p < res.ptr && *p != 'e') {
        if (*p != '.') digits[nd++] = *p;
        ++p;
    }
    ++p;  // 'e'
    int sign = 1;
    if (*p == '-') {
        sign = -1;
        ++p;
    } else if (*p == '+') {
        ++p;
    }
    int ex = 0;
    for (; p < res.ptr; ++p) ex = ex * 10 + (*p - '0');
    const int decpt = sign * ex + 1;
    if (decpt > -4 && decpt <= 16) {  // zero (its digits "0"): 0.0 or -0.0
        if (decpt <= 0) {
            *o++ = '0';
            *o++ = '.';
            for (int i = 0; i < -decpt; ++i) *o++ = '0';
            std::memcpy(o, digits, static_cast<std::size_t>(nd));
            o += nd;
        } else if (decpt >= nd) {
            std::memcpy(o, digits, static_cast<std::size_t>(nd));
            o += nd;
            for (int i = nd; i < decpt; ++i) *o++ = '0';
            *o++ = '.';
            *o++ = '0';
        } else {
            std::memcpy(o, digits, static_cast<std::size_t>(decpt));
            o += decpt;
            *o++ = '.';
            std::memcpy(o, digits + decpt, static_cast<std::size_t>(nd - decpt));
            o += nd - decpt;
        }
        return static_cast<std::size_t>(o - out);
    }
    *o++ = digits[0];
    if (nd > 1) {
        *o++ = '.';
        std::memcpy(o, digits + 1, static_cast<std::size_t>(nd - 1));
        o += nd - 1;
    }
    int e = decpt - 1;
    *o++ = 'e';
    *o++ = e < 0 ? '-' : '+';
    if (e < 0) e = -e;
    if (e >= 100) {
        *o++ = static_cast<char>('0' + e / 100);
        e %= 100;
    }
    *o++ = static_cast<char>('0' + e / 10);
    *o++ = static_cast<char>('0' + e % 10);
    return static_cast<std::size_t>(o - out);
}

inline std::string py_float_repr(double x) {
    char buf[48];
    return std::string(buf, py_float_repr_to(x, buf));
}

// Windows' texts end to end: text q of the chunk is bytes[ends[q - 1], ends[q]) (ends[-1] = 0).
struct TextChunk {
    std::string bytes;
    std::vector<std::size_t> ends;
    std::size_t used = 0;

    void clear() {
        used = 0;
        ends.clear();
    }
    // Room for `need` more bytes at the end (the bytes' buffer grows by doubling).
    char* room(std::size_t need) {
        if (bytes.size() < used + need) bytes.resize(std::max(2 * bytes.size(), used + need));
        return bytes.data() + used;
    }
    void close(const char* end) {
        used = static_cast<std::size_t>(end - bytes.data());
        ends.push_back(used);
    }
};

namespace detail {
inline int top_k_shift(int64_t s) { return static_cast<int>(std::clamp<int64_t>(s, -3000, 3000)); }

// ldexp(x, s): one multiplication by 2^s where 2^s is a normal double (|s| <= 1022), else
// ldexp. The same double: both are x 2^s rounded once to nearest (ldexp is exact but for a
// subnormal result, which it rounds as the product does), inf past the largest double.
inline double scale2(double x, int s) {
    if (s >= -1022 && s <= 1022) return x * std::bit_cast<double>(static_cast<uint64_t>(s + 1023) << 52);
    return std::ldexp(x, s);
}

// Dense ids of the values, equal doubles one id (0.0 and -0.0 too), by an open-addressing
// table over their bits that doubles at half load; and each id's repr, written once when
// first asked (zero's by the sign asked with: Python keeps the key it saw). O(n) expected.
class ValueIds {
public:
    ValueIds(const double* v, std::size_t n) : ids_(n) {
        std::vector<std::size_t> table(1024, kFree);
        for (std::size_t i = 0; i < n; ++i) {
            const uint64_t bits = v[i] == 0.0 ? 0 : std::bit_cast<uint64_t>(v[i]);
            std::size_t mask = table.size() - 1;
            std::size_t h = hash(bits) & mask;
            while (table[h] != kFree && keys_[table[h]] != bits) h = (h + 1) & mask;
            if (table[h] == kFree) {
                table[h] = keys_.size();
                keys_.push_back(bits);
                if (2 * keys_.size() > table.size()) {  // grow: re-insert every key
                    table.assign(2 * table.size(), kFree);
                    mask = table.size() - 1;
                    for (std::size_t q = 0; q < keys_.size(); ++q) {
                        std::size_t g = hash(keys_[q]) & mask;
                        while (table[g] != kFree) g = (g + 1) & mask;
                        table[g] = q;
                    }
                    h = kFree;
                }
            }
            ids_[i] = h == kFree ? keys_.size() - 1 : table[h];
        }
        text_.assign(keys_.size(), nullptr);
        len_.assign(keys_.size(), 0);
    }
    std::size_t distinct() const { return keys_.size(); }
    std::size_t operator[](std::size_t i) const { return ids_[i]; }
    // repr(x), x a value of id `id`; the view stays valid as long as the table.
    // Each text is followed by readable bytes up to kReadable from its start (write_pairs
    // copies that many whatever the length: one fixed-size copy, no call).
    static constexpr std::size_t kReadable = 24;
    std::string_view text(double x, std::size_t id) {
        if (x == 0.0) return std::signbit(x) ? std::string_view(kNegZero, 4) : std::string_view(kZero, 3);
        if (!text_[id]) {
            if (left_ < 32) {  // a repr is at most 24 chars (kReadable); blocks never move
                blocks_.push_back(std::make_unique<char[]>(kBlock));
                left_ = kBlock;
            }
            char* at = blocks_.back().get() + (kBlock - left_);
            const std::size_t len = py_float_repr_to(x, at);
            left_ -= len;
            text_[id] = at;
            len_[id] = static_cast<uint8_t>(len);
        }
        return {text_[id], len_[id]};
    }

private:
    static constexpr std::size_t kFree = ~std::size_t{0};
    static std::size_t hash(uint64_t bits) {
        bits ^= bits >> 33;
        bits *= 0xff51afd7ed558ccdULL;
        bits ^= bits >> 33;
        return static_cast<std::size_t>(bits);
    }
    std::vector<std::size_t> ids_;
    std::vector<uint64_t> keys_;
    std::vector<const char*> text_;  // each id's repr, null until asked
    std::vector<uint8_t> len_;
    static constexpr std::size_t kBlock = 1 << 14;
    static constexpr char kZero[kReadable] = "0.0";
    static constexpr char kNegZero[kReadable] = "-0.0";
    std::vector<std::unique_ptr<char[]>> blocks_;
    std::size_t left_ = 0;
};

// (-w, text) ordering: true if a comes before b (heavier, or as heavy with a smaller text).
inline bool before(double wa, std::string_view ta, double wb, std::string_view tb) {
    if (wa != wb) return wa > wb;
    return ta < tb;
}

// One window's text, "[[value, weight], ...]", the pairs given heaviest first.
template <class Pairs>
void write_pairs(TextChunk& out, const Pairs& pairs, std::size_t count) {
    char* o = out.room(2 + count * 72);  // a pair: "[" + 2 reprs of <= 32 + ", " + "], "
    *o++ = '[';
    for (std::size_t q = 0; q < count; ++q) {
        if (q) {
            *o++ = ',';
            *o++ = ' ';
        }
        *o++ = '[';
        const std::string_view t = pairs.text(q);  // at most 24 chars, 24 readable
        std::memcpy(o, t.data(), ValueIds::kReadable);
        o += t.size();
        *o++ = ',';
        *o++ = ' ';
        o += py_float_repr_to(pairs.weight(q), o);
        *o++ = ']';
    }
    *o++ = ']';
    out.close(o);
}
}  // namespace detail

// For every window j ([lo[j], hi[j]), non-empty, bounds non-decreasing) the JSON text of the
// k heaviest values by decayed weight as of the window's end (2^(end/h) = mend 2^eend), in
// order: run(j0, j1, out) writes windows [j0, j1), the next call continues at j1.
// O((n + r) k) plus the text. The buffers are read, not copied: they must outlive the kernel.
class PrefixTopK {
public:
    PrefixTopK(const double* v, const double* m, const int64_t* e, std::size_t n, const int64_t* lo,
               const int64_t* hi, const double* mend, const int64_t* eend, std::size_t k,
               int64_t rescale)
        : v_(v), m_(m), e_(e), lo_(lo), hi_(hi), mend_(mend), eend_(eend), k_(k), rescale_(rescale),
          ids_(v, n), slot_(ids_.distinct(), kNone) {}

    void run(std::size_t j0, std::size_t j1, TextChunk& out) {
        for (std::size_t j = j0; j < j1; ++j) {
            const int64_t a = lo_[j], b = hi_[j];
            if (a != cur_) {  // a new run: forget the last one's values
                cur_ = a;
                held_ = a;
                base_ = e_[a];
                for (const Entry& en : entries_) slot_[en.id] = kNone;
                entries_.clear();
                best_.clear();
            }
            for (int64_t i = held_; i < b; ++i) add(static_cast<std::size_t>(i));
            held_ = std::max(held_, b);
            const int shift = detail::top_k_shift(base_ - eend_[j]);
            const double mend = mend_[j];
            listed_.clear();
            for (std::size_t q : best_) listed_.emplace_back(detail::scale2(entries_[q].weight / mend, shift), q);
            std::sort(listed_.begin(), listed_.end(), [&](const auto& p, const auto& q) {
                return detail::before(p.first, entries_[p.second].text, q.first, entries_[q.second].text);
            });
            // the members in this order: the next window's sort (weights grow little between
            // windows) starts nearly sorted
            for (std::size_t q = 0; q < listed_.size(); ++q) best_[q] = listed_[q].second;
            detail::write_pairs(out, Listed{this}, std::min(k_, listed_.size()));
        }
    }

private:
    static constexpr std::size_t kNone = ~std::size_t{0};
    struct Entry {
        double weight;          // relative to the landmark
        std::size_t id;         // the value's
        std::string_view text;  // repr of the value as first seen in the run
        bool best;
    };
    struct Listed {
        const PrefixTopK* self;
        std::string_view text(std::size_t q) const { return self->entries_[self->listed_[q].second].text; }
        double weight(std::size_t q) const { return self->listed_[q].first; }
    };

    void add(std::size_t i) {
        if (e_[i] - base_ > rescale_) {  // rebase: an exact power of two, ratios kept
            const int shift = detail::top_k_shift(base_ - e_[i]);
            for (auto& en : entries_) en.weight = std::ldexp(en.weight, shift);
            base_ = e_[i];
        }
        const std::size_t id = ids_[i];
        std::size_t at = slot_[id];
        if (at == kNone) {
            at = slot_[id] = entries_.size();
            entries_.push_back({0.0, id, ids_.text(v_[i], id), false});
        }
        Entry& en = entries_[at];
        en.weight = en.weight + detail::scale2(m_[i], detail::top_k_shift(e_[i] - base_));
        if (en.best) return;
        if (best_.size() < k_) {
            en.best = true;
            best_.push_back(at);
            return;
        }
        std::size_t worst = 0;  // the lightest member (the last in (-w, text) order)
        for (std::size_t q = 1; q < best_.size(); ++q) {
            const Entry& c = entries_[best_[q]];
            const Entry& w = entries_[best_[worst]];
            if (detail::before(w.weight, w.text, c.weight, c.text)) worst = q;
        }
        Entry& w = entries_[best_[worst]];
        if (detail::before(en.weight, en.text, w.weight, w.text)) {
            w.best = false;
            en.best = true;
            best_[worst] = at;
        }
    }

    const double* v_;
    const double* m_;
    const int64_t* e_;
    const int64_t* lo_;
    const int64_t* hi_;
    const double* mend_;
    const int64_t* eend_;
    std::size_t k_;
    int64_t rescale_;
    detail::ValueIds ids_;
    std::vector<std::size_t> slot_;  // value id -> its entry in the run, kNone if none
    std::vector<Entry> entries_;
    std::vector<std::size_t> best_;
    std::vector<std::pair<double, std::size_t>> listed_;
    int64_t cur_ = -1, held_ = 0, base_ = 0;
};

// For every window j ([lo[j], hi[j]), non-empty) the JSON text of the k heaviest values by
// decayed weight as of its end (2^(end/h) = mend 2^eend): each value's weights m_i 2^(e_i - N)
// summed in time order (N the exponent of the window's last event), as of the end
// w / mend 2^(N - eend), the k heaviest sorted by (-weight, text); a value's text is that of
// its window's last event (as the Python twin's (value, index) sort leaves it). run(j0, j1, out)
// writes windows [j0, j1). O(w) per window of w events plus O(c log c) for the c values as
// heavy as the k-th or heavier.
class WindowTopK {
public:
    WindowTopK(const double* v, const double* m, const int64_t* e, std::size_t n, const int64_t* lo,
               const int64_t* hi, const double* mend, const int64_t* eend, std::size_t k)
        : v_(v), m_(m), e_(e), lo_(lo), hi_(hi), mend_(mend), eend_(eend), k_(k), ids_(v, n),
          slot_(ids_.distinct(), kNone) {}

    void run(std::size_t j0, std::size_t j1, TextChunk& out) {
        for (std::size_t j = j0; j < j1; ++j) {
            const int64_t a = lo_[j], b = hi_[j];
            const int64_t top = e_[b - 1];
            items_.clear();
            for (int64_t i = a; i < b; ++i) {
                const std::size_t id = ids_[static_cast<std::size_t>(i)];
                std::size_t at = slot_[id];
                if (at == kNone) {
                    at = slot_[id] = items_.size();
                    items_.push_back({0.0, id, i, {}});
                }
                Item& it = items_[at];
                it.w += detail::scale2(m_[i], detail::top_k_shift(e_[i] - top));
                it.last = i;
            }
            const int shift = detail::top_k_shift(top - eend_[j]);
            for (Item& it : items_) {
                slot_[it.id] = kNone;
                it.w = detail::scale2(it.w / mend_[j], shift);
            }
            // heaviest first; the texts only for the k heaviest and those as heavy as the k-th
            std::size_t c = std::min(k_, items_.size());
            if (c < items_.size()) {  // the k-th heaviest in place, then every value as heavy
                const auto kth = items_.begin() + static_cast<std::ptrdiff_t>(c - 1);
                std::nth_element(items_.begin(), kth, items_.end(),
                                 [](const Item& p, const Item& q) { return p.w > q.w; });
                const double w = kth->w;
                const auto mid =
                    std::partition(kth + 1, items_.end(), [w](const Item& it) { return it.w == w; });
                c = static_cast<std::size_t>(mid - items_.begin());
            }
            for (std::size_t q = 0; q < c; ++q) items_[q].text = ids_.text(v_[items_[q].last], items_[q].id);
            std::sort(items_.begin(), items_.begin() + static_cast<std::ptrdiff_t>(c),
                      [](const Item& p, const Item& q) { return detail::before(p.w, p.text, q.w, q.text); });
            detail::write_pairs(out, Items{items_}, std::min(k_, items_.size()));
        }
    }

private:
    static constexpr std::size_t kNone = ~std::size_t{0};
    struct Item {
        double w;
        std::size_t id;
        int64_t last;  // the value's last event in the window
        std::string_view text;
    };
    struct Items {
        const std::vector<Item>& items;
        std::string_view text(std::size_t q) const { return items[q].text; }
        double weight(std::size_t q) const { return items[q].w; }
    };

    const double* v_;
    const double* m_;
    const int64_t* e_;
    const int64_t* lo_;
    const int64_t* hi_;
    const double* mend_;
    const int64_t* eend_;
    std::size_t k_;
    detail::ValueIds ids_;
    std::vector<std::size_t> slot_;  // value id -> its item in the window, kNone if none
    std::vector<Item> items_;
};

// Every window's text at once (tests and callers without Python strings to make).
template <class Kernel>
std::vector<std::string> all_texts(Kernel& kernel, std::size_t r) {
    TextChunk chunk;
    kernel.run(0, r, chunk);
    std::vector<std::string> out;
    out.reserve(r);
    std::size_t from = 0;
    for (std::size_t to : chunk.ends) {
        out.emplace_back(chunk.bytes.data() + from, to - from);
        from = to;
    }
    return out;
}

}  // namespace windowagg
