// FiBA's node storage (see the fact card in fiba.hpp): making and freeing nodes (blocks
// reused through spare_blocks.hpp), walks over a subtree, and the array helpers that move
// a node's entries and children. Nothing here combines or throws, except new_node's
// allocation (std::bad_alloc, before anything changes).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>

namespace windowagg {

template <Monoid M, class K, class Less>
inline typename FiBA<M, K, Less>::Node* FiBA<M, K, Less>::new_node(bool leaf, Node* parent) {
    // a freed node's block when one waits (spare_blocks.hpp)
    void* mem = (leaf ? spare_leaves_ : spare_inner_).take();
    Node* y = ::new (mem) Node{parent, m_.identity(), m_.identity(), 0, leaf, false, false};
    if constexpr (kPlainSlots) {
        std::uninitialized_default_construct_n(keys(y), cap_);
        std::uninitialized_default_construct_n(vals(y), cap_);
    } else {
        std::uninitialized_value_construct_n(keys(y), cap_);
        std::uninitialized_value_construct_n(vals(y), cap_);
    }
    if (!leaf) std::uninitialized_fill_n(kids(y), cap_ + 1, nullptr);
    ++nodes_;
    return y;
}

template <Monoid M, class K, class Less>
inline void FiBA<M, K, Less>::delete_node(Node* y) {
    std::destroy_n(keys(y), cap_);
    std::destroy_n(vals(y), cap_);
    bool leaf = y->leaf;
    y->~Node();
    (leaf ? spare_leaves_ : spare_inner_).give(y);
    --nodes_;
}

template <Monoid M, class K, class Less>
void FiBA<M, K, Less>::free_subtree(Node* y) {
    if (!y) return;
    if (!y->leaf) {
        Node** ks = kids(y);
        for (std::uint32_t i = 0; i <= y->n; ++i) free_subtree(ks[i]);
    }
    delete_node(y);
}

template <Monoid M, class K, class Less>
std::size_t FiBA<M, K, Less>::count_subtree(Node* y) const {
    if (!y) return 0;
    std::size_t c = y->n;
    if (!y->leaf)
        for (std::uint32_t i = 0; i <= y->n; ++i) c += count_subtree(kids(y)[i]);
    return c;
}

template <Monoid M, class K, class Less>
std::size_t FiBA<M, K, Less>::bytes_of(Node* y) const {
    std::size_t c = y->leaf ? leaf_bytes_ : inner_bytes_;
    if (!y->leaf)
        for (std::uint32_t i = 0; i <= y->n; ++i) c += bytes_of(kids(y)[i]);
    return c;
}

template <Monoid M, class K, class Less>
void FiBA<M, K, Less>::discard(Node* y) {
    size_ -= count_subtree(y);
    graveyard_.push_back(y);
}

template <Monoid M, class K, class Less>
void FiBA<M, K, Less>::flush() {
    while (!graveyard_.empty()) {
        Node* y = graveyard_.back();
        graveyard_.pop_back();
        free_subtree(y);
    }
}

template <Monoid M, class K, class Less>
template <class F>
void FiBA<M, K, Less>::walk(Node* y, F& f) const {
    if (!y) return;  // an empty kid slot of a tree mid-restructuring (the error paths)
    if (y->leaf) {
        for (std::uint32_t i = 0; i < y->n; ++i) f(keys(y)[i], vals(y)[i]);
        return;
    }
    for (std::uint32_t i = 0; i < y->n; ++i) {
        walk(kids(y)[i], f);
        f(keys(y)[i], vals(y)[i]);
    }
    walk(kids(y)[y->n], f);
}

template <Monoid M, class K, class Less>
template <class F>
void FiBA<M, K, Less>::owned(Node* y, F& f) const {
    f(y->agg);
    f(y->loc);
    for (std::uint32_t i = 0; i < cap_; ++i) f(keys(y)[i]), f(vals(y)[i]);
    if (!y->leaf)
        for (std::uint32_t i = 0; i <= y->n; ++i) owned(kids(y)[i], f);
}

// ------------------------------------------------------- array helpers (no combine, no throw)
template <Monoid M, class K, class Less>
inline void FiBA<M, K, Less>::insert_entry(Node* y, std::uint32_t i, K t, P v) {
    K* ks = keys(y);
    P* vs = vals(y);
    std::move_backward(ks + i, ks + y->n, ks + y->n + 1);
    std::move_backward(vs + i, vs + y->n, vs + y->n + 1);
    ks[i] = std::move(t);
    vs[i] = std::move(v);
    ++y->n;
}

template <Monoid M, class K, class Less>
inline void FiBA<M, K, Less>::erase_entries(Node* y, std::uint32_t i, std::uint32_t c) {
    K* ks = keys(y);
    P* vs = vals(y);
    std::move(ks + i + c, ks + y->n, ks + i);
    std::move(vs + i + c, vs + y->n, vs + i);
    clear_slots(y, y->n - c, y->n);
    y->n -= c;
}

// Slots [b, e) of y (past its entries) back to default values, so they keep no Python
// object alive (nothing to do for kPlainSlots).
template <Monoid M, class K, class Less>
inline void FiBA<M, K, Less>::clear_slots(Node* y, std::uint32_t b, std::uint32_t e) {
    if constexpr (!kPlainSlots) {
        K* ks = keys(y);
        P* vs = vals(y);
        for (std::uint32_t j = b; j < e; ++j) { ks[j] = K(); vs[j] = P(); }
    }
}

// kids of y: an array of n+1 pointers (call after changing n accordingly)
template <Monoid M, class K, class Less>
inline void FiBA<M, K, Less>::insert_kid(Node* y, std::uint32_t i, Node* c,
                                          std::uint32_t count_before) {
    Node** ks = kids(y);
    std::move_backward(ks + i, ks + count_before, ks + count_before + 1);
    ks[i] = c;
    c->parent = y;
}

template <Monoid M, class K, class Less>
inline void FiBA<M, K, Less>::erase_kids(Node* y, std::uint32_t i, std::uint32_t c,
                                          std::uint32_t count_before) {
    Node** ks = kids(y);
    std::move(ks + i + c, ks + count_before, ks + i);
    std::fill(ks + count_before - c, ks + count_before, nullptr);
}

}  // namespace windowagg
