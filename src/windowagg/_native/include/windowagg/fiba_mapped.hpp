// FiBA::assign_mapped: a copy of another FiBA (another monoid representation or key type)
// node for node, so that a change of representation (the bindings' deoptimisation from a
// specialised partial to a wider one) keeps the tree's shape, hence the order of every
// later combine: float answers stay those of a tree that never changed representation.
#pragma once

#include "fiba.hpp"

namespace windowagg {

template <Monoid M, class K, class Less>
template <Monoid M2, class K2, class L2, class CK, class CP>
void FiBA<M, K, Less>::assign_mapped(const FiBA<M2, K2, L2>& o, CK&& ck, CP&& cp) {
    using ONode = typename FiBA<M2, K2, L2>::Node;
    if (o.mu_ != mu_) throw std::invalid_argument("assign_mapped: min_arity differs");
    clear();
    Node* lf = nullptr;
    Node* rf = nullptr;
    auto clone = [&](auto& self, const ONode* y, Node* parent) -> Node* {
        Node* z = new_node(y->leaf, parent);
        try {
            z->agg = cp(y->agg);
            z->loc = cp(y->loc);
            z->ls = y->ls;
            z->rs = y->rs;
            for (std::uint32_t i = 0; i < y->n; ++i) {
                keys(z)[i] = ck(o.keys(const_cast<ONode*>(y))[i]);
                vals(z)[i] = cp(o.vals(const_cast<ONode*>(y))[i]);
                z->n = i + 1;
            }
            if (!y->leaf)
                for (std::uint32_t i = 0; i <= y->n; ++i)
                    kids(z)[i] = self(self, o.kids(const_cast<ONode*>(y))[i], z);
        } catch (...) {
            free_subtree(z);
            throw;
        }
        if (y == o.lf_) lf = z;
        if (y == o.rf_) rf = z;
        return z;
    };
    Node* root = clone(clone, o.root_, nullptr);
    std::vector<P> lsuf;
    lsuf.reserve(cap_ + 1);
    try {
        for (const auto& p : o.lsuf_) lsuf.push_back(cp(p));
    } catch (...) {
        free_subtree(root);
        throw;
    }
    graveyard_.push_back(root_);
    flush();
    root_ = root;
    lf_ = lf;
    rf_ = rf;
    lsuf_ = std::move(lsuf);
    size_ = o.size_;
    stale_ = o.stale_;
}

}  // namespace windowagg
