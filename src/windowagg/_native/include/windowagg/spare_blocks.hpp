// SpareBlocks: freed memory blocks of one size, kept for the next allocation of that size.
//
// A tree that frees a node at one end and allocates one at the other every few operations
// (FiBA on a d = 0 slide: a merge at the left finger, a split at the right finger) reuses
// the block instead of going through the allocator each time. At most kMax blocks wait;
// they hold no object. AddressSanitizer builds poison a waiting block, so a stale pointer
// into it is still reported.
#pragma once

#include <cstddef>
#include <new>
#include <vector>

#if defined(__SANITIZE_ADDRESS__)
#define WINDOWAGG_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define WINDOWAGG_ASAN 1
#endif
#endif
#ifndef WINDOWAGG_ASAN
#define WINDOWAGG_ASAN 0
#endif
#if WINDOWAGG_ASAN
#include <sanitizer/asan_interface.h>
#endif

namespace windowagg {

class SpareBlocks {
  public:
    static constexpr std::size_t kMax = 16;

    explicit SpareBlocks(std::size_t bytes = 0) : bytes_(bytes) { blocks_.reserve(kMax); }
    SpareBlocks(const SpareBlocks&) = delete;
    SpareBlocks& operator=(const SpareBlocks&) = delete;
    ~SpareBlocks() { release(); }

    // the block size; only while no block waits
    void set_bytes(std::size_t bytes) {
        release();
        bytes_ = bytes;
    }

    // A block of the set size: a waiting one, or a new one (may throw std::bad_alloc).
    void* take() {
        if (blocks_.empty()) return ::operator new(bytes_);
        void* mem = blocks_.back();
        blocks_.pop_back();
#if WINDOWAGG_ASAN
        ASAN_UNPOISON_MEMORY_REGION(mem, bytes_);
#endif
        return mem;
    }
    // Give back a block from take(), its objects destroyed.
    void give(void* mem) noexcept {
        if (blocks_.size() == kMax) {  // capacity reserved up front: push_back never allocates
            ::operator delete(mem);
            return;
        }
#if WINDOWAGG_ASAN
        ASAN_POISON_MEMORY_REGION(mem, bytes_);
#endif
        blocks_.push_back(mem);
    }
    void release() noexcept {
        for (void* mem : blocks_) {
#if WINDOWAGG_ASAN
            ASAN_UNPOISON_MEMORY_REGION(mem, bytes_);
#endif
            ::operator delete(mem);
        }
        blocks_.clear();
    }

  private:
    std::size_t bytes_;
    std::vector<void*> blocks_;
};

}  // namespace windowagg
