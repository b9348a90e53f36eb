// A wavelet matrix over a sequence of integer codes in [0, sigma): built once, then the k-th
// smallest code of any range [lo, hi) in O(log sigma). Claude, Navarro and Ordonez, "The
// wavelet matrix: An efficient wavelet tree for large alphabets", Information Systems 47
// (2015), section 3 (the levels, the stable partition by each bit) and the quantile query of
// Gagie, Navarro and Puglisi, "New algorithms on wavelet trees and applications to
// information retrieval", TCS 426 (2012), done on the matrix.
//
// Level l holds bit (L - 1 - l) of every code, the codes ordered by a stable partition on the
// bits above it (zeros first); a range [lo, hi) of level l maps to level l + 1 through the
// number of zeros before lo and hi. Each level is a bitvector of 64-bit blocks, each with the
// count of zero bits before it, so a rank is one load and one popcount.
//
// The twin of windowagg.wavelet_matrix.PyWaveletMatrix. Plain code over uint64 codes, no
// template: it is compiled once (issue 29's build time).
#pragma once

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace windowagg {

class WaveletMatrix {
public:
    // codes[0..n) each in [0, sigma): the caller checks them. O(n log sigma) time, n / 4
    // bytes per level of space (2 bits per bit: the bits and the zero counts), 12 n bytes of
    // scratch while building (24 n beyond 2^32 codes).
    WaveletMatrix(const int64_t* codes, std::size_t n, uint64_t sigma)
        : n_(n), blocks_(n / 64 + 1), levels_(sigma <= 1 ? 0 : std::bit_width(sigma - 1)), sigma_(sigma) {
        b_.assign(static_cast<std::size_t>(levels_) * blocks_, Block{0, 0});
        nz_.assign(static_cast<std::size_t>(levels_), 0);
        if (!levels_) return;
        if (sigma <= (uint64_t{1} << 32)) build<uint32_t>(codes);  // half the memory traffic
        else build<uint64_t>(codes);
    }

    std::size_t size() const { return n_; }
    int levels() const { return levels_; }
    uint64_t sigma() const { return sigma_; }

    // The k-th smallest (0-based) code of codes[lo:hi]. Needs lo <= hi <= n and k < hi - lo
    // (the caller checks). O(log sigma).
    uint64_t kth(std::size_t lo, std::size_t hi, std::size_t k) const {
        uint64_t code = 0;
        for (int l = 0; l < levels_; ++l) {
            std::size_t zl = zeros_before(l, lo), zh = zeros_before(l, hi), zc = zh - zl;
            if (k < zc) {
                lo = zl;
                hi = zh;
            } else {
                k -= zc;
                code |= uint64_t{1} << (levels_ - 1 - l);
                std::size_t nz = static_cast<std::size_t>(nz_[static_cast<std::size_t>(l)]);
                lo = nz + (lo - zl);
                hi = nz + (hi - zh);
            }
        }
        return code;
    }

    // The invariants, O(n log sigma / 64): every block's zero count is the sum of the
    // blocks before it, no bit is set past n, each level's zeros are its total. "" if they
    // hold, else the first broken one.
    std::string check() const {
        for (int l = 0; l < levels_; ++l) {
            const Block* lv = &b_[static_cast<std::size_t>(l) * blocks_];
            uint64_t zeros = 0;
            for (std::size_t j = 0; j < blocks_; ++j) {
                std::string at = "level " + std::to_string(l) + ", block " + std::to_string(j);
                if (lv[j].zeros != zeros) return at + ": zero count " + std::to_string(lv[j].zeros) + " != " + std::to_string(zeros);
                std::size_t held = j * 64 < n_ ? std::min<std::size_t>(64, n_ - j * 64) : 0;
                if (held < 64 && (lv[j].bits >> held) != 0) return at + ": a bit is set past the end";
                zeros += held - static_cast<uint64_t>(std::popcount(lv[j].bits));
            }
            if (nz_[static_cast<std::size_t>(l)] != zeros) return "level " + std::to_string(l) + ": zeros total differs";
        }
        return "";
    }

private:
    struct Block {
        uint64_t bits;   // bit i of the block: position 64 j + i of the level
        uint64_t zeros;  // zero bits of the level before this block
    };
    std::size_t n_, blocks_;
    int levels_;
    uint64_t sigma_;
    std::vector<Block> b_;      // levels_ * blocks_, level by level
    std::vector<uint64_t> nz_;  // zero bits per level

    // The levels, one pass over the codes per level: its bits (one 64-bit word at a time)
    // and the stable partition for the next. nxt and ones get one spare slot: every code is
    // written to both (branch-free: the bits are random) and advances only the one it
    // belongs to.
    template <class T>
    void build(const int64_t* codes) {
        const std::size_t n = n_;
        std::vector<T> cur(n), nxt(n + 1), ones(n + 1);
        for (std::size_t i = 0; i < n; ++i) cur[i] = static_cast<T>(codes[i]);
        for (int l = 0; l < levels_; ++l) {
            const int bit = levels_ - 1 - l;
            Block* lv = &b_[static_cast<std::size_t>(l) * blocks_];
            std::size_t z = 0, o = 0;
            uint64_t zeros = 0;
            for (std::size_t j = 0; j < blocks_; ++j) {
                std::size_t i0 = j * 64, i1 = i0 < n ? std::min(n, i0 + 64) : i0;
                uint64_t word = 0;
                for (std::size_t i = i0; i < i1; ++i) {
                    T c = cur[i];
                    uint64_t one = (static_cast<uint64_t>(c) >> bit) & 1;
                    word |= one << (i - i0);
                    nxt[z] = c;
                    ones[o] = c;
                    z += 1 - one;
                    o += one;
                }
                lv[j].bits = word;
                lv[j].zeros = zeros;
                zeros += (i1 - i0) - static_cast<uint64_t>(std::popcount(word));
            }
            nz_[static_cast<std::size_t>(l)] = zeros;
            std::copy(ones.begin(), ones.begin() + static_cast<std::ptrdiff_t>(o), nxt.begin() + static_cast<std::ptrdiff_t>(z));
            std::swap(cur, nxt);
            nxt.resize(n + 1);
        }
    }

    std::size_t zeros_before(int l, std::size_t i) const {
        const Block& x = b_[static_cast<std::size_t>(l) * blocks_ + (i >> 6)];
        uint64_t below = (uint64_t{1} << (i & 63)) - 1;
        return static_cast<std::size_t>(x.zeros) + static_cast<std::size_t>(std::popcount(~x.bits & below));
    }
};

}  // namespace windowagg
