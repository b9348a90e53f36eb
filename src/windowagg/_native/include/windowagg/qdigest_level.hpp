// The q-digest's building blocks (qdigest.hpp): QDigestLevel, one depth's hash map
// offset -> count, and ExactSum, a correctly rounded sum of doubles (math.fsum's number).
#pragma once

#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace windowagg {

// uint64 -> double, linear probing (load <= 3/4), backward-shift deletion (no tombstones). A slot is empty
// when its value is negative: stored counts are never negative.
class QDigestLevel {
public:
    struct Slot {
        uint64_t key;
        double val;
    };

    std::size_t size() const { return size_; }
    bool empty() const { return size_ == 0; }

    const double* find(uint64_t k) const {
        if (!size_) return nullptr;
        for (std::size_t i = home(k);; i = (i + 1) & mask_) {
            const Slot& s = slots_[i];
            if (s.val < 0) return nullptr;
            if (s.key == k) return &s.val;
        }
    }
    double get(uint64_t k) const {
        const double* p = find(k);
        return p ? *p : 0.0;
    }
    // slot[k] = slot.get(k, 0.0) + v; true if k was new.
    bool add(uint64_t k, double v) {
        reserve_one();
        for (std::size_t i = home(k);; i = (i + 1) & mask_) {
            Slot& s = slots_[i];
            if (s.val < 0) {
                s.key = k;
                s.val = 0.0 + v;
                ++size_;
                return true;
            }
            if (s.key == k) {
                s.val = s.val + v;
                return false;
            }
        }
    }
    // slot[k] = v; true if k was new.
    bool set(uint64_t k, double v) {
        reserve_one();
        for (std::size_t i = home(k);; i = (i + 1) & mask_) {
            Slot& s = slots_[i];
            if (s.val < 0 || s.key == k) {
                bool fresh = s.val < 0;
                s.key = k;
                s.val = v;
                size_ += fresh;
                return fresh;
            }
        }
    }
    bool erase(uint64_t k) {
        if (!size_) return false;
        std::size_t i = home(k);
        for (;; i = (i + 1) & mask_) {
            if (slots_[i].val < 0) return false;
            if (slots_[i].key == k) break;
        }
        // backward shift: pull later members of the probe run into the hole
        std::size_t j = i;
        for (;;) {
            j = (j + 1) & mask_;
            if (slots_[j].val < 0) break;
            std::size_t h = home(slots_[j].key);
            // slot j may move to i unless its home lies cyclically in (i, j]
            bool stays = (i <= j) ? (i < h && h <= j) : (i < h || h <= j);
            if (!stays) {
                slots_[i] = slots_[j];
                i = j;
            }
        }
        slots_[i].val = -1.0;
        --size_;
        return true;
    }
    // f(key, value) for every member, emptying the level in the same pass (keeps the slots)
    template <class F>
    void drain(F&& f) {
        for (Slot& s : slots_)
            if (s.val >= 0) {
                f(s.key, s.val);
                s.val = -1.0;
            }
        size_ = 0;
    }
    // empty, keeping the slots (a level refills to about the size it had)
    void reset() {
        for (Slot& s : slots_) s.val = -1.0;
        size_ = 0;
    }
    void clear() {
        slots_.clear();
        mask_ = 0;
        size_ = 0;
    }
    template <class F>
    void for_each(F&& f) const {
        for (const Slot& s : slots_)
            if (s.val >= 0) f(s.key, s.val);
    }
    void reserve(std::size_t n) {
        std::size_t want = 16;
        while (want / 4 * 3 < n + 1) want *= 2;  // load <= 3/4
        if (want > slots_.size()) rehash(want);
    }

private:
    std::size_t home(uint64_t k) const {
        return static_cast<std::size_t>((k * 0x9E3779B97F4A7C15ull) >> shift_) & mask_;
    }
    void reserve_one() {
        if ((size_ + 1) * 4 > slots_.size() * 3) rehash(slots_.empty() ? 16 : slots_.size() * 2);
    }
    void rehash(std::size_t cap) {
        std::vector<Slot> old(cap, Slot{0, -1.0});
        old.swap(slots_);
        mask_ = cap - 1;
        shift_ = 64 - std::countr_zero(static_cast<uint64_t>(cap));
        for (const Slot& s : old)
            if (s.val >= 0) {
                std::size_t i = home(s.key);
                while (slots_[i].val >= 0) i = (i + 1) & mask_;
                slots_[i] = s;
            }
    }
    std::vector<Slot> slots_;
    std::size_t mask_ = 0;
    int shift_ = 60;
    std::size_t size_ = 0;
};

// A correctly rounded sum of doubles, whatever their order (Shewchuk's exact partials; the
// same number as Python's math.fsum for finite inputs whose sum is finite).
class ExactSum {
public:
    void add(double x) {
        std::size_t i = 0;
        for (double y : parts_) {
            if (std::fabs(x) < std::fabs(y)) std::swap(x, y);
            double hi = x + y;
            double lo = y - (hi - x);
            if (lo != 0.0) parts_[i++] = lo;
            x = hi;
        }
        parts_.resize(i);
        parts_.push_back(x);
    }
    double result() const {
        if (parts_.empty()) return 0.0;
        std::size_t n = parts_.size();
        double hi = parts_[--n];
        double lo = 0.0;
        while (n > 0) {
            double x = hi;
            double y = parts_[--n];
            hi = x + y;
            double yr = hi - x;
            lo = y - yr;
            if (lo != 0.0) break;
        }
        // round half-even across the partials left: the next one decides a tie
        if (n > 0 && ((lo < 0.0 && parts_[n - 1] < 0.0) || (lo > 0.0 && parts_[n - 1] > 0.0))) {
            double y = lo * 2.0;
            double x = hi + y;
            double yr = x - hi;
            if (y == yr) hi = x;
        }
        return hi;
    }

private:
    std::vector<double> parts_;
};

}  // namespace windowagg
