// Exact decayed heavy hitters of windows sharing a start, under exponential decay: each
// value's weight m_i 2^(e_i - N) summed in time order against a landmark exponent N (rebased
// by exact powers of two), and the set of the k heaviest kept as weights grow. The compiled
// twin of windowagg.sketches.exact_decay._prefix_top_k_python: the same operations in the
// same order, the same JSON text (floats as Python's repr writes them).
#pragma once

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace windowagg {

// Python's repr of a finite double into out (at least 32 chars), its length returned: the
// shortest round-trip digits, fixed notation when the decimal point falls in (-4, 16] digits
// from the first, else d[.ddd]e+XX.
inline std::size_t py_float_repr_to(double x, char* out) {
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
    if (decpt > -4 && decpt <= 16) {
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

namespace detail {
inline int top_k_shift(int64_t s) { return static_cast<int>(std::clamp<int64_t>(s, -3000, 3000)); }

struct Entry {
    double key;     // the value as first seen (Python's dict keeps the first key: -0.0 or 0.0)
    double weight;  // relative to the landmark
    std::string text;
    bool best = false;
};

// (-w, text) ordering: true if a comes before b (heavier, or as heavy with a smaller text).
inline bool before(double wa, const std::string& ta, double wb, const std::string& tb) {
    if (wa != wb) return wa > wb;
    return ta < tb;
}
}  // namespace detail

// For every window j ([lo[j], hi[j]), non-empty, bounds non-decreasing) the JSON text of the
// k heaviest values by decayed weight as of the window's end (2^(end/h) = mend 2^eend).
// O((n + r) k) plus the text.
inline std::vector<std::string> decayed_prefix_top_k(const double* v, const double* m,
                                                     const int64_t* e, const int64_t* lo,
                                                     const int64_t* hi, const double* mend,
                                                     const int64_t* eend, std::size_t r,
                                                     std::size_t k, int64_t rescale) {
    std::vector<std::string> out;
    out.reserve(r);
    std::unordered_map<double, std::size_t> index;  // value (0.0 == -0.0) -> entry
    std::vector<detail::Entry> entries;
    std::vector<std::size_t> best;
    int64_t cur = -1, held = 0, base = 0;
    std::vector<std::pair<double, std::size_t>> listed;
    for (std::size_t j = 0; j < r; ++j) {
        const int64_t a = lo[j], b = hi[j];
        if (a != cur) {
            cur = a;
            held = a;
            base = e[a];
            index.clear();
            entries.clear();
            best.clear();
        }
        for (int64_t i = held; i < b; ++i) {
            if (e[i] - base > rescale) {
                const int shift = detail::top_k_shift(base - e[i]);
                for (auto& en : entries) en.weight = std::ldexp(en.weight, shift);
                base = e[i];
            }
            const double x = v[i];
            auto [it, fresh] = index.try_emplace(x, entries.size());
            if (fresh) entries.push_back({x, 0.0, py_float_repr(x), false});
            detail::Entry& en = entries[it->second];
            en.weight = en.weight + std::ldexp(m[i], detail::top_k_shift(e[i] - base));
            if (en.best) continue;
            if (best.size() < k) {
                en.best = true;
                best.push_back(it->second);
                continue;
            }
            std::size_t worst = 0;  // the lightest member (the last in (-w, text) order)
            for (std::size_t q = 1; q < best.size(); ++q) {
                const auto& c = entries[best[q]];
                const auto& w = entries[best[worst]];
                if (detail::before(w.weight, w.text, c.weight, c.text)) worst = q;
            }
            const auto& w = entries[best[worst]];
            if (detail::before(en.weight, en.text, w.weight, w.text)) {
                entries[best[worst]].best = false;
                en.best = true;
                best[worst] = it->second;
            }
        }
        held = std::max(held, b);
        const int shift = detail::top_k_shift(base - eend[j]);
        listed.clear();
        for (std::size_t q : best) listed.emplace_back(std::ldexp(entries[q].weight / mend[j], shift), q);
        std::sort(listed.begin(), listed.end(), [&](const auto& p, const auto& q) {
            return detail::before(p.first, entries[p.second].text, q.first, entries[q.second].text);
        });
        std::string s;
        s.reserve(2 + listed.size() * 48);
        s += '[';
        char num[48];
        for (std::size_t q = 0; q < listed.size() && q < k; ++q) {
            if (q) s += ", ";
            s += '[';
            s += entries[listed[q].second].text;
            s += ", ";
            s.append(num, py_float_repr_to(listed[q].first, num));
            s += ']';
        }
        s += ']';
        out.push_back(std::move(s));
    }
    return out;
}

// For every window j ([lo[j], hi[j]), non-empty) the JSON text of the k heaviest values by
// decayed weight as of its end (2^(end/h) = mend 2^eend): the window's events in (value,
// index) order, each value's weights m_i 2^(e_i - N) summed in that order (N the
// exponent of the window's last event), as of the end w / mend 2^(N - eend), sorted by
// (-weight, text). The compiled twin of exact_decay._window_top_k_python.
// O(w log w) per window of w events.
inline std::vector<std::string> decayed_window_top_k(const double* v, const double* m,
                                                     const int64_t* e, const int64_t* lo,
                                                     const int64_t* hi, const double* mend,
                                                     const int64_t* eend, std::size_t r,
                                                     std::size_t k) {
    std::vector<std::string> out;
    out.reserve(r);
    std::vector<std::pair<double, int64_t>> rs;
    struct Item {
        double w;
        double x;
        std::string text;
    };
    std::vector<Item> items;
    char num[48];
    for (std::size_t j = 0; j < r; ++j) {
        const int64_t a = lo[j], b = hi[j];
        rs.clear();
        for (int64_t i = a; i < b; ++i) rs.emplace_back(v[i], i);
        std::sort(rs.begin(), rs.end());
        const int64_t top = e[b - 1];
        items.clear();
        double s = 0.0;
        for (std::size_t q = 0; q < rs.size(); ++q) {
            const int64_t i = rs[q].second;
            if (q && rs[q].first != rs[q - 1].first) {
                items.push_back({s, rs[q - 1].first, {}});
                s = 0.0;
            }
            s += std::ldexp(m[i], detail::top_k_shift(e[i] - top));
        }
        items.push_back({s, rs.back().first, {}});
        const int shift = detail::top_k_shift(top - eend[j]);
        for (auto& it : items) it.w = std::ldexp(it.w / mend[j], shift);
        // heaviest first; the texts only for the k heaviest and those as heavy as the k-th
        std::size_t c = std::min(k, items.size());
        if (c < items.size()) {  // the k-th heaviest in place, then every value as heavy
            const auto kth = items.begin() + static_cast<std::ptrdiff_t>(c - 1);
            std::nth_element(items.begin(), kth, items.end(),
                             [](const Item& p, const Item& q) { return p.w > q.w; });
            const double w = kth->w;
            const auto mid = std::partition(kth + 1, items.end(), [w](const Item& it) { return it.w == w; });
            c = static_cast<std::size_t>(mid - items.begin());
        }
        for (std::size_t q = 0; q < c; ++q) items[q].text.assign(num, py_float_repr_to(items[q].x, num));
        std::sort(items.begin(), items.begin() + static_cast<std::ptrdiff_t>(c),
                  [](const Item& p, const Item& q) { return detail::before(p.w, p.text, q.w, q.text); });
        std::string t;
        t.reserve(2 + std::min(k, items.size()) * 48);
        t += '[';
        for (std::size_t q = 0; q < items.size() && q < k; ++q) {
            if (q) t += ", ";
            t += '[';
            t += items[q].text;
            t += ", ";
            t.append(num, py_float_repr_to(items[q].w, num));
            t += ']';
        }
        t += ']';
        out.push_back(std::move(t));
    }
    return out;
}

}  // namespace windowagg
