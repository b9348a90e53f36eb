// FiBA's restructuring after single operations (see the fact card in fiba.hpp): split,
// merge, move (the sibling's whole surplus), the insert/evict rebalancing loops with the
// hit-left/hit-right flags (erratum: [P1] Fig. 7 misses one, the authors' issue #77),
// eviction from an inner node, and the d = 0 split of the right finger. Twins of
// src/windowagg/ooo/fiba.py.
#pragma once

namespace windowagg {

template <Monoid M, class K, class Less>
void FiBA<M, K, Less>::split(Node* y) {
    const std::uint32_t mu = static_cast<std::uint32_t>(mu_);
    Node* p = y->parent;
    Node* z = new_node(y->leaf, p);
    std::uint32_t j = child_index(p, y);
    std::uint32_t zn = y->n - mu - 1;
    std::move(keys(y) + mu + 1, keys(y) + y->n, keys(z));
    std::move(vals(y) + mu + 1, vals(y) + y->n, vals(z));
    if (!y->leaf) {
        Node** yk = kids(y);
        for (std::uint32_t i = 0; i <= zn; ++i) {
            kids(z)[i] = yk[mu + 1 + i];
            yk[mu + 1 + i]->parent = z;
            yk[mu + 1 + i] = nullptr;
        }
    }
    z->n = zn;
    K st = std::move(keys(y)[mu]);
    P sv = std::move(vals(y)[mu]);
    clear_slots(y, mu, y->n);
    y->n = mu;
    std::uint32_t pkids = p->n + 1;
    insert_entry(p, j, std::move(st), std::move(sv));
    insert_kid(p, j + 1, z, pkids);
    if (y->rs) {
        y->rs = false;
        z->rs = true;
    }
    if (rf_ == y) rf_ = z;
    fix_if_up(y);
    fix_if_up(z);
    fix_if_up(p);
}

template <Monoid M, class K, class Less>
auto FiBA<M, K, Less>::merge(Node* p, std::uint32_t k) -> Node* {
    Node* a = kids(p)[k];
    Node* b = kids(p)[k + 1];
    std::uint32_t an = a->n;
    keys(a)[an] = std::move(keys(p)[k]);
    vals(a)[an] = std::move(vals(p)[k]);
    std::move(keys(b), keys(b) + b->n, keys(a) + an + 1);
    std::move(vals(b), vals(b) + b->n, vals(a) + an + 1);
    if (!a->leaf) {
        for (std::uint32_t i = 0; i <= b->n; ++i) {
            kids(a)[an + 1 + i] = kids(b)[i];
            kids(b)[i]->parent = a;
            kids(b)[i] = nullptr;
        }
    }
    a->n = an + 1 + b->n;
    b->n = 0;
    std::uint32_t pk = p->n + 1;
    erase_entries(p, k, 1);
    erase_kids(p, k + 1, 1, pk);
    if (b->rs) a->rs = true;
    if (rf_ == b) rf_ = a;
    graveyard_.push_back(b);  // empty; freed at the end of the operation
    fix_if_up(a);
    fix_if_up(p);
    return a;
}

// Rotate `count` entries (and children) from sibling giv_i to sibling rec_i via p.
template <Monoid M, class K, class Less>
void FiBA<M, K, Less>::move(Node* p, std::uint32_t rec_i, std::uint32_t giv_i, std::uint32_t count) {
    Node* rec = kids(p)[rec_i];
    Node* giv = kids(p)[giv_i];
    if (rec_i < giv_i) {  // giver on the right: rotate left
        std::uint32_t k = rec_i, rn = rec->n;
        keys(rec)[rn] = std::move(keys(p)[k]);
        vals(rec)[rn] = std::move(vals(p)[k]);
        std::move(keys(giv), keys(giv) + count - 1, keys(rec) + rn + 1);
        std::move(vals(giv), vals(giv) + count - 1, vals(rec) + rn + 1);
        keys(p)[k] = std::move(keys(giv)[count - 1]);
        vals(p)[k] = std::move(vals(giv)[count - 1]);
        if (!rec->leaf) {
            for (std::uint32_t i = 0; i < count; ++i) {
                kids(rec)[rn + 1 + i] = kids(giv)[i];
                kids(giv)[i]->parent = rec;
            }
            erase_kids(giv, 0, count, giv->n + 1);
        }
        rec->n = rn + count;
        erase_entries(giv, 0, count);
    } else {  // giver on the left: rotate right
        std::uint32_t k = giv_i, gn = giv->n, rn = rec->n;
        K* rk = keys(rec);
        P* rv = vals(rec);
        std::move_backward(rk, rk + rn, rk + rn + count);
        std::move_backward(rv, rv + rn, rv + rn + count);
        std::move(keys(giv) + gn - count + 1, keys(giv) + gn, rk);
        std::move(vals(giv) + gn - count + 1, vals(giv) + gn, rv);
        rk[count - 1] = std::move(keys(p)[k]);
        rv[count - 1] = std::move(vals(p)[k]);
        keys(p)[k] = std::move(keys(giv)[gn - count]);
        vals(p)[k] = std::move(vals(giv)[gn - count]);
        if (!rec->leaf) {
            Node** rc = kids(rec);
            std::move_backward(rc, rc + rn + 1, rc + rn + 1 + count);
            for (std::uint32_t i = 0; i < count; ++i) {
                rc[i] = kids(giv)[gn + 1 - count + i];
                rc[i]->parent = rec;
                kids(giv)[gn + 1 - count + i] = nullptr;
            }
        }
        rec->n = rn + count;
        clear_slots(giv, gn - count, gn);
        giv->n = gn - count;
    }
    fix_if_up(rec);
    fix_if_up(giv);
    fix_if_up(p);
}

template <Monoid M, class K, class Less>
auto FiBA<M, K, Less>::rebalance_insert(Node* node) -> Top {
    bool hl = node->ls, hr = node->rs;
    while (node->n > static_cast<std::uint32_t>(maxk_)) {
        if (!node->parent) {
            height_increase();
            hl = hr = true;
        }
        split(node);
        node = node->parent;
        hl = hl || node->ls;
        hr = hr || node->rs;
    }
    return {node, hl, hr};
}

template <Monoid M, class K, class Less>
auto FiBA<M, K, Less>::rebalance_evict(Node* node, Node* to_repair) -> Top {
    bool hl = node->ls, hr = node->rs;
    if (node == to_repair) fix_if_up(node);
    const std::uint32_t mink = static_cast<std::uint32_t>(mink_);
    while (node->parent && node->n < mink) {
        Node* p = node->parent;
        std::uint32_t j = kids(p)[0] == node ? 0 : child_index(p, node);
        std::uint32_t s = j < p->n ? j + 1 : j - 1;
        Node* sib = kids(p)[s];
        hr = hr || sib->rs;
        hl = hl || sib->ls;  // erratum: missing in [P1] Fig. 7 (authors' issue #77)
        if (node->n + sib->n < static_cast<std::uint32_t>(maxk_)) {
            node = merge(p, std::min(j, s));
            if (!p->parent && p->n == 0) {
                height_decrease();  // node is now the root; the loop ends
            } else {
                node = p;
            }
        } else {
            // move the sibling's whole surplus (guide §3.9)
            move(p, j, s, sib->n - mink);
            node = p;
        }
        if (node == to_repair) fix_if_up(node);
        hl = hl || node->ls;
        hr = hr || node->rs;
    }
    return {node, hl, hr};
}

template <Monoid M, class K, class Less>
auto FiBA<M, K, Less>::evict_inner(Node* node, std::uint32_t i) -> Top {
    Node* left = kids(node)[i];
    Node* right = kids(node)[i + 1];
    Node* leaf;
    K t2;
    P v2;
    if (right->n > static_cast<std::uint32_t>(mink_)) {
        leaf = right;
        while (!leaf->leaf) leaf = kids(leaf)[0];
        t2 = std::move(keys(leaf)[0]);
        v2 = std::move(vals(leaf)[0]);
        erase_entries(leaf, 0, 1);
    } else {
        leaf = left;
        while (!leaf->leaf) leaf = kids(leaf)[leaf->n];
        t2 = std::move(keys(leaf)[leaf->n - 1]);
        v2 = std::move(vals(leaf)[leaf->n - 1]);
        erase_entries(leaf, leaf->n - 1, 1);
    }
    keys(node)[i] = std::move(t2);
    vals(node)[i] = std::move(v2);
    fix_if_up(leaf);
    Top r = rebalance_evict(leaf, node);
    Node* x = r.top;
    while (x && x != node) x = x->parent;
    if (x == node) {
        while (r.top != node) {
            r.top = r.top->parent;
            r.hl = r.hl || r.top->ls;
            r.hr = r.hr || r.top->rs;
            fix_if_up(r.top);
        }
    }
    return r;
}

// Split the overflowing right finger after an append (the d = 0 insert path): the
// parent's inner/right aggregate ends with its last entry, so adding the old finger as a
// middle child and the separator extends it with two combines.
template <Monoid M, class K, class Less>
void FiBA<M, K, Less>::split_rf(Node* rf) {
    const std::uint32_t mu = static_cast<std::uint32_t>(mu_);
    Node* p = rf->parent;
    Node* z = new_node(true, p);
    std::uint32_t zn = rf->n - mu - 1;
    std::move(keys(rf) + mu + 1, keys(rf) + rf->n, keys(z));
    std::move(vals(rf) + mu + 1, vals(rf) + rf->n, vals(z));
    z->n = zn;
    K st = std::move(keys(rf)[mu]);
    P sv = std::move(vals(rf)[mu]);
    clear_slots(rf, mu, rf->n);
    rf->n = mu;
    rf->rs = false;
    z->rs = true;
    std::uint32_t pk = p->n + 1;
    keys(p)[p->n] = std::move(st);
    vals(p)[p->n] = sv;
    ++p->n;
    kids(p)[pk] = z;
    rf_ = z;
    P acc = fold(vals(rf), vals(rf) + rf->n);
    rf->agg = acc;
    if (!p->parent) {
        p->agg = m_.combine(m_.combine(p->agg, acc), sv);
    } else {
        p->loc = m_.combine(m_.combine(p->loc, acc), sv);
        Node* gp = p->parent;
        p->agg = gp->parent ? m_.combine(gp->agg, p->loc) : p->loc;
    }
    if (p->n > static_cast<std::uint32_t>(maxk_)) {
        auto [top, hl, hr] = rebalance_insert(p);
        repair(top, hl, hr);
        return;
    }
    z->loc = fold(vals(z), vals(z) + z->n);
    z->agg = p->parent ? m_.combine(p->agg, z->loc) : z->loc;
}

}  // namespace windowagg
