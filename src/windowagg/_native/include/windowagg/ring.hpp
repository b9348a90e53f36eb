// Ring<T>: a double-ended queue in one power-of-two circular buffer.
//
// push/pop at both ends and indexing are O(1) worst case, except that a push into a full
// buffer doubles it (amortized O(1); `reserve_one()` does that growth up front so an
// operation can allocate before it mutates anything). Popped slots are reset to T{}, so a
// ring of Python objects drops its references at once. Swapping two rings is O(1).
#pragma once

#include <cstddef>
#include <type_traits>
#include <utility>
#include <vector>

#if defined(__GNUC__) || defined(__clang__)
#define WINDOWAGG_INLINE __attribute__((always_inline)) inline
#define WINDOWAGG_NOINLINE __attribute__((noinline))
#define WINDOWAGG_FLATTEN __attribute__((flatten))
#elif defined(_MSC_VER)
#define WINDOWAGG_INLINE __forceinline
#define WINDOWAGG_NOINLINE __declspec(noinline)
#define WINDOWAGG_FLATTEN
#else
#define WINDOWAGG_INLINE inline
#define WINDOWAGG_NOINLINE
#define WINDOWAGG_FLATTEN
#endif

namespace windowagg {

template <class T>
class Ring {
  public:
    std::size_t size() const { return n_; }
    bool empty() const { return n_ == 0; }
    T& operator[](std::size_t i) { return buf_[(head_ + i) & mask_]; }
    const T& operator[](std::size_t i) const { return buf_[(head_ + i) & mask_]; }
    T& front() { return buf_[head_]; }
    const T& front() const { return buf_[head_]; }
    T& back() { return buf_[(head_ + n_ - 1) & mask_]; }
    const T& back() const { return buf_[(head_ + n_ - 1) & mask_]; }

    // Make room for one more element (may allocate; changes no element).
    WINDOWAGG_INLINE void reserve_one() {
        if (n_ == cap_) [[unlikely]]
            grow(n_ + 1);
    }
    void reserve(std::size_t n) {
        if (n > cap_) grow(n);
    }
    WINDOWAGG_INLINE void push_back(T v) {
        reserve_one();
        buf_[(head_ + n_) & mask_] = std::move(v);
        ++n_;
    }
    WINDOWAGG_INLINE void push_front(T v) {
        reserve_one();
        head_ = (head_ - 1) & mask_;
        buf_[head_] = std::move(v);
        ++n_;
    }
    WINDOWAGG_INLINE T pop_front() {
        T v = std::move(buf_[head_]);
        if constexpr (!std::is_trivially_destructible_v<T>) buf_[head_] = T{};
        head_ = (head_ + 1) & mask_;
        --n_;
        return v;
    }
    // Remove the oldest element without returning it.
    WINDOWAGG_INLINE void discard_front() {
        if constexpr (!std::is_trivially_destructible_v<T>) buf_[head_] = T{};
        head_ = (head_ + 1) & mask_;
        --n_;
    }
    WINDOWAGG_INLINE T pop_back() {
        std::size_t i = (head_ + n_ - 1) & mask_;
        T v = std::move(buf_[i]);
        if constexpr (!std::is_trivially_destructible_v<T>) buf_[i] = T{};
        --n_;
        return v;
    }
    WINDOWAGG_INLINE void discard_back() {
        if constexpr (!std::is_trivially_destructible_v<T>) buf_[(head_ + n_ - 1) & mask_] = T{};
        --n_;
    }
    // Remove the k oldest elements: O(1) for trivially destructible T, else O(k).
    void drop_front(std::size_t k) {
        if constexpr (std::is_trivially_destructible_v<T>) {
            head_ = (head_ + k) & mask_;
            n_ -= k;
            if (!n_) head_ = 0;
        } else {
            for (std::size_t i = 0; i < k; ++i) pop_front();
        }
    }
    void clear() {
        while (n_) pop_back();
        head_ = 0;
    }
    void swap(Ring& o) noexcept {
        buf_.swap(o.buf_);
        std::swap(head_, o.head_);
        std::swap(n_, o.n_);
        std::swap(mask_, o.mask_);
        std::swap(cap_, o.cap_);
    }
    // f(x) for every element, oldest first (popped slots hold T{}: nothing to visit there).
    template <class F>
    void for_each(F&& f) const {
        for (std::size_t i = 0; i < n_; ++i) f((*this)[i]);
    }
    // A copy with every element mapped through f (for deoptimisation: same layout).
    template <class U, class F>
    static Ring<U> map(const Ring& r, F&& f) {
        Ring<U> out;
        out.reserve(r.size());
        for (std::size_t i = 0; i < r.size(); ++i) out.push_back(f(r[i]));
        return out;
    }

  private:
    WINDOWAGG_NOINLINE void grow(std::size_t need) {
        std::size_t cap = buf_.empty() ? 8 : buf_.size();
        while (cap < need) cap *= 2;
        std::vector<T> nb(cap);
        for (std::size_t i = 0; i < n_; ++i) nb[i] = std::move(buf_[(head_ + i) & mask_]);
        buf_.swap(nb);
        head_ = 0;
        mask_ = cap - 1;
        cap_ = cap;
    }
    std::vector<T> buf_;
    std::size_t head_ = 0, n_ = 0, mask_ = 0, cap_ = 0;
};

}  // namespace windowagg
