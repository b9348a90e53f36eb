// FiBA's bulk operations and O(n) build (see the fact card in fiba.hpp).
//
// bulk_evict(t): boundary search, then a pass up that cuts whole subtrees left of the
// boundary and rebalances each boundary node with its (possibly non-sibling) right
// neighbour: move a batch, merge with the sibling, or merge with a non-sibling [P2 §4].
// bulk_insert_sorted: insertion-site search with a finger, stored keys combined in place
// (old ⊗ new, so no duplicate keys ever enter the tree: guide §4.8), then one level-by-level
// pass that interleaves new entries and bulk-splits, then one pass down the touched spines.
// Both are line-by-line twins of src/windowagg/ooo/fiba.py.
#pragma once

namespace windowagg {

// ------------------------------------------------------------------ build
template <Monoid M, class K, class Less>
void FiBA<M, K, Less>::build(std::vector<K>&& ts, std::vector<P>&& ps) {
    const std::size_t total = ts.size();
    const std::size_t maxk = static_cast<std::size_t>(maxk_);
    graveyard_.push_back(root_);  // the empty leaf root
    std::vector<Node*> below;
    std::vector<std::vector<Node*>> levels;
    bool inner = false;
    auto fill_node = [&](Node* y, std::size_t pos, std::size_t e, std::size_t kpos) {
        std::move(ts.begin() + pos, ts.begin() + pos + e, keys(y));
        std::move(ps.begin() + pos, ps.begin() + pos + e, vals(y));
        y->n = static_cast<std::uint32_t>(e);
        if (inner)
            for (std::size_t i = 0; i <= e; ++i) {
                kids(y)[i] = below[kpos + i];
                below[kpos + i]->parent = y;
            }
    };
    while (true) {
        const std::size_t n = ts.size();
        if (n <= maxk) {
            root_ = new_node(!inner, nullptr);
            fill_node(root_, 0, n, 0);
            break;
        }
        std::size_t g = (n + 1 + maxk) / (maxk + 1);
        std::size_t base = (n - g + 1) / g, extra = (n - g + 1) % g;
        std::vector<Node*> nodes;
        nodes.reserve(g);
        std::vector<K> up_t;
        std::vector<P> up_v;
        up_t.reserve(g);
        up_v.reserve(g);
        std::size_t pos = 0, kpos = 0;
        for (std::size_t j = 0; j < g; ++j) {
            std::size_t e = base + (j < extra ? 1 : 0);
            Node* y = new_node(!inner, nullptr);
            fill_node(y, pos, e, kpos);
            kpos += e + 1;
            nodes.push_back(y);
            pos += e;
            if (j + 1 < g) {
                up_t.push_back(std::move(ts[pos]));
                up_v.push_back(std::move(ps[pos]));
                ++pos;
            }
        }
        levels.push_back(nodes);
        below = std::move(nodes);
        ts = std::move(up_t);
        ps = std::move(up_v);
        inner = true;
    }
    Node* lf = root_;
    while (!lf->leaf) {
        lf = kids(lf)[0];
        lf->ls = true;
    }
    Node* rf = root_;
    while (!rf->leaf) {
        rf = kids(rf)[rf->n];
        rf->rs = true;
    }
    lf_ = lf;
    rf_ = rf;
    lsuf_.clear();
    size_ = total;
    // every entry is in place: a combine that raises from here on leaves the tree whole,
    // with aggregates to recompute (stale_; refresh())
    stale_ = true;
    for (auto& lvl : levels)  // bottom-up: up-aggregates first
        for (Node* y : lvl)
            if (!y->ls && !y->rs) fix(y);
    fix(root_);
    for (Node* y = root_; !y->leaf;) {
        y = kids(y)[0];
        fix(y);
    }
    for (Node* y = root_; !y->leaf;) {
        y = kids(y)[y->n];
        fix(y);
    }
    stale_ = false;
}

template <Monoid M, class K, class Less>
void FiBA<M, K, Less>::refresh() {
    lsuf_.clear();
    auto up = [&](auto& self, Node* y) -> void {  // post-order: children before parents
        if (!y->leaf)
            for (std::uint32_t i = 0; i <= y->n; ++i) self(self, kids(y)[i]);
        if (y != root_ && !y->ls && !y->rs) fix(y);
    };
    up(up, root_);
    fix(root_);
    for (Node* y = root_; !y->leaf;) {
        y = kids(y)[0];
        fix(y);
    }
    for (Node* y = root_; !y->leaf;) {
        y = kids(y)[y->n];
        fix(y);
    }
    stale_ = false;
}

// ------------------------------------------------------------------ bulk evict
template <Monoid M, class K, class Less>
std::size_t FiBA<M, K, Less>::bulk_evict(const K& t) {
    if (!lf_->n || less_(t, keys(lf_)[0])) return 0;
    if (lf_->n >= 2 && less_(t, keys(lf_)[1])) {
        // only the oldest entry goes (a sliding window's usual step): the d = 0 evict path,
        // no boundary search and no allocation
        K oldest = keys(lf_)[0];
        evict(oldest);
        return 1;
    }
    const std::size_t before = size_;
    if constexpr (kNothrow) {
        bulk_evict_impl(t);
        flush();
    } else {
        saved_.clear();
        try {
            bulk_evict_impl(t);
        } catch (...) {
            // every entry is in the tree, in saved_ (prefixes cut from nodes) or in a
            // discarded subtree that is not freed yet: put them all back
            auto es = to_partials_any();
            for (auto& e : saved_) es.push_back(std::move(e));
            saved_.clear();
            auto f = [&](const K& k, const P& p) { es.emplace_back(k, p); };
            for (Node* y : graveyard_) walk(y, f);
            sort_entries(es);
            rebuild(es);
            throw;
        }
        saved_.clear();
        flush();
    }
    return before - size_;
}

template <Monoid M, class K, class Less>
std::size_t FiBA<M, K, Less>::bulk_evict_impl(const K& t) {
    std::vector<Level> levels = boundary(t);
    const std::uint32_t mink = static_cast<std::uint32_t>(mink_);
    Node* skip_until = nullptr;
    Node* top = nullptr;
    bool first = true;
    for (auto it = levels.rbegin(); it != levels.rend(); ++it) {
        Node* node = it->node;
        Node* nb = it->nb;
        Node* anc = it->anc;
        if (nb && !first) fix_if_up(nb);
        if (!skip_until || skip_until == node) {
            skip_until = nullptr;
            evict_prefix(node, t);
            if (!nb) {  // node is the root or on the right spine
                make_root(node, first);
                top = root_;
                break;
            }
            if (!node->parent || node->n >= mink) {
                top = node;
            } else {
                std::uint32_t deficit = mink - node->n;
                std::uint32_t surplus = nb->n - mink;
                if (deficit <= surplus) {
                    move_batch(node, nb, anc, deficit);
                } else if (node->parent == anc) {
                    merge(anc, child_index(anc, node));
                } else {
                    merge_not_sibling(node, nb, anc);
                    skip_until = anc;
                }
                top = anc;
            }
        }
        Node* survivor = skip_until ? nb : node;
        mark_left(survivor, first);
        first = false;
    }
    if (!top->parent) {
        bool hl = true, hr = true;
        if (!top->leaf && top->n == 0) {
            height_decrease();
            top = root_;
        }
        repair(top, hl, hr);
    } else if (top->n >= mink) {
        repair(top, top->ls, top->rs);
    } else {
        auto [t2, hl, hr] = rebalance_evict(top, nullptr);
        repair(t2, hl, hr);
    }
    return 0;
}

template <Monoid M, class K, class Less>
auto FiBA<M, K, Less>::boundary(const K& t) -> std::vector<Level> {
    Node* node = root_;
    if (!node->leaf) {
        const K* rt = keys(node);
        if (less_(t, rt[0])) {
            node = lf_;
            while (node->parent && less_(keys(node)[node->n - 1], t)) node = node->parent;
        } else if (less_(rt[node->n - 1], t)) {
            node = rf_;
            while (node->parent && less_(t, keys(node)[0])) node = node->parent;
        }
    }
    Node* anc = node->parent;
    Node* nb = nullptr;
    if (anc) {
        std::uint32_t j = child_index(anc, node);
        nb = j < anc->n ? kids(anc)[j + 1] : nullptr;
    }
    std::vector<Level> levels;
    levels.push_back({node, nb, anc});
    while (!node->leaf) {
        std::uint32_t i = lower(node, t);
        if (i < node->n && !less_(t, keys(node)[i])) break;
        if (i == node->n) {
            if (nb) nb = kids(nb)[0];
        } else {
            anc = node;
            nb = kids(node)[i + 1];
        }
        node = kids(node)[i];
        levels.push_back({node, nb, anc});
    }
    return levels;
}

// Drop y's entries <= t and the children left of them.
template <Monoid M, class K, class Less>
void FiBA<M, K, Less>::evict_prefix(Node* y, const K& t) {
    std::uint32_t k = lower(y, t);
    if (k < y->n && !less_(t, keys(y)[k])) ++k;
    if (k) {
        if constexpr (!kNothrow)
            for (std::uint32_t i = 0; i < k; ++i) saved_.emplace_back(keys(y)[i], vals(y)[i]);
        if (!y->leaf) {
            for (std::uint32_t i = 0; i < k; ++i) discard(kids(y)[i]);
            erase_kids(y, 0, k, y->n + 1);
        }
        erase_entries(y, 0, k);
        size_ -= k;
    }
    fix_if_up(y);
}

template <Monoid M, class K, class Less>
void FiBA<M, K, Less>::mark_left(Node* y, bool down_to_leaf) {
    if (y->parent) y->ls = true;
    if (down_to_leaf) {
        while (!y->leaf) {
            y = kids(y)[0];
            y->ls = true;
        }
        lf_ = y;
    }
}

template <Monoid M, class K, class Less>
void FiBA<M, K, Less>::make_root(Node* node, bool first) {
    Node* nw = node;
    if (!node->leaf && node->n == 0) nw = kids(node)[0];
    if (nw != root_) {
        Node* p = nw->parent;
        kids(p)[p->n] = nullptr;  // pop nw (the last child) off its parent
        if (p == node) p->n = 0;  // node had no entries: nothing of it stays
        discard(root_);
    }
    nw->parent = nullptr;
    nw->ls = nw->rs = false;
    root_ = nw;
    mark_left(nw, first);
    if (nw->leaf) rf_ = nw;
    fix(nw);
}

// node takes k entries (and k children) from its right neighbour nb via anc.
template <Monoid M, class K, class Less>
void FiBA<M, K, Less>::move_batch(Node* node, Node* nb, Node* anc, std::uint32_t k) {
    std::uint32_t a = lower(anc, keys(nb)[0]) - 1;
    std::uint32_t nn = node->n;
    keys(node)[nn] = std::move(keys(anc)[a]);
    vals(node)[nn] = std::move(vals(anc)[a]);
    std::move(keys(nb), keys(nb) + k - 1, keys(node) + nn + 1);
    std::move(vals(nb), vals(nb) + k - 1, vals(node) + nn + 1);
    if (!node->leaf) {
        for (std::uint32_t i = 0; i < k; ++i) {
            kids(node)[nn + 1 + i] = kids(nb)[i];
            kids(nb)[i]->parent = node;
        }
        erase_kids(nb, 0, k, nb->n + 1);
    }
    node->n = nn + k;
    keys(anc)[a] = std::move(keys(nb)[k - 1]);
    vals(anc)[a] = std::move(vals(nb)[k - 1]);
    erase_entries(nb, 0, k);
    fix_if_up(node);
    fix_if_up(nb);
}

// Prepend node (the last child of its parent) and the separator to nb.
template <Monoid M, class K, class Less>
void FiBA<M, K, Less>::merge_not_sibling(Node* node, Node* nb, Node* anc) {
    std::uint32_t a = lower(anc, keys(nb)[0]) - 1;
    std::uint32_t nn = node->n, bn = nb->n, sh = nn + 1;
    K* bk = keys(nb);
    P* bv = vals(nb);
    std::move_backward(bk, bk + bn, bk + bn + sh);
    std::move_backward(bv, bv + bn, bv + bn + sh);
    std::move(keys(node), keys(node) + nn, bk);
    std::move(vals(node), vals(node) + nn, bv);
    bk[nn] = std::move(keys(anc)[a]);
    bv[nn] = std::move(vals(anc)[a]);
    if (!nb->leaf) {
        Node** bc = kids(nb);
        std::move_backward(bc, bc + bn + 1, bc + bn + 1 + sh);
        for (std::uint32_t i = 0; i <= nn; ++i) {
            bc[i] = kids(node)[i];
            bc[i]->parent = nb;
            kids(node)[i] = nullptr;
        }
    }
    nb->n = bn + sh;
    clear_slots(node, 0, nn);
    node->n = 0;
    Node* p = node->parent;
    kids(p)[p->n] = nullptr;  // pop node off its parent
    node->parent = nullptr;
    graveyard_.push_back(node);  // empty now
    if constexpr (!kNothrow)
        for (std::uint32_t i = 0; i < a; ++i) saved_.emplace_back(keys(anc)[i], vals(anc)[i]);
    for (std::uint32_t i = 0; i <= a; ++i) discard(kids(anc)[i]);
    size_ -= a;  // anc's entries before the separator; the separator moved to nb
    erase_kids(anc, 0, a + 1, anc->n + 1);
    erase_entries(anc, 0, a + 1);
    fix_if_up(nb);
}

// ------------------------------------------------------------------ bulk insert
template <Monoid M, class K, class Less>
void FiBA<M, K, Less>::coalesce(std::vector<K>& ts, std::vector<P>& ps) {
    std::size_t w = 0;
    for (std::size_t r = 0; r < ts.size(); ++r) {
        if (w && !less_(ts[w - 1], ts[r])) {
            ps[w - 1] = m_.combine(ps[w - 1], ps[r]);
        } else {
            if (w != r) {
                ts[w] = std::move(ts[r]);
                ps[w] = std::move(ps[r]);
            }
            ++w;
        }
    }
    ts.resize(w);
    ps.resize(w);
}

// Insert time-sorted entries (equal times allowed, combined in order: stored value on the
// left, then the bulk's values in input order). Atomic under a raising combine.
template <Monoid M, class K, class Less>
void FiBA<M, K, Less>::bulk_insert_sorted(std::vector<K>& ts, std::vector<P>& ps) {
    if (ts.empty()) return;
    if (!lf_->n) {
        coalesce(ts, ps);  // combines only the bulk's own values
        try {
            std::vector<K> t2(std::move(ts));
            std::vector<P> p2(std::move(ps));
            build(std::move(t2), std::move(p2));
            flush();
        } catch (...) {
            clear();
            throw;
        }
        return;
    }
    Node* rf = rf_;
    if (rf->n && less_(keys(rf)[rf->n - 1], ts[0])) {
        // streaming case: the whole bulk is younger than the window; the right finger
        // takes every entry, then splits into pieces as needed. O(m).
        coalesce(ts, ps);
        K youngest = keys(rf)[rf->n - 1];
        size_ += ts.size();
        try {
            std::vector<K> nt(keys(rf), keys(rf) + rf->n);
            std::vector<P> nv(vals(rf), vals(rf) + rf->n);
            for (auto& t : ts) nt.push_back(std::move(t));
            for (auto& p : ps) nv.push_back(std::move(p));
            std::vector<Group> pre_nxt;
            std::vector<Node*> pieces;
            place(rf, nt, nv, nullptr, pre_nxt, pieces);
            std::vector<Group> none;
            std::vector<std::vector<Node*>> recomp(1);
            pass_up(none, recomp, std::move(pieces), std::move(pre_nxt));
        } catch (...) {
            if constexpr (!kNothrow) {
                auto es = to_partials_any();
                es.erase(std::remove_if(es.begin(), es.end(),
                                        [&](const std::pair<K, P>& e) { return less_(youngest, e.first); }),
                         es.end());
                rebuild(es);
            }
            throw;
        }
        flush();
        return;
    }
    std::vector<Group> groups;
    std::vector<std::vector<Node*>> recomp(1);
    std::vector<std::pair<K, P>> undo;
    try {
        bulk_step1(ts, ps, groups, recomp, undo);
    } catch (...) {
        for (auto it = undo.rbegin(); it != undo.rend(); ++it) {
            Found f = search(it->first);
            vals(f.node)[f.i] = std::move(it->second);
        }
        throw;
    }
    std::size_t added = 0;
    for (auto& g : groups) added += g.members.size();
    size_ += added;
    std::vector<K> new_ts;
    if constexpr (!kNothrow)
        for (auto& g : groups)
            for (auto& mb : g.members) new_ts.push_back(mb.t);
    try {
        pass_up(groups, recomp, {}, {});
    } catch (...) {
        if constexpr (!kNothrow) {
            // rebuild without the new keys, with the old values of the combined ones
            auto es = to_partials_any();
            std::vector<std::pair<K, P>> kept;
            kept.reserve(es.size());
            std::size_t a = 0, b = 0;
            for (auto& e : es) {
                while (a < new_ts.size() && less_(new_ts[a], e.first)) ++a;
                if (a < new_ts.size() && !less_(e.first, new_ts[a])) continue;
                while (b < undo.size() && less_(undo[b].first, e.first)) ++b;
                if (b < undo.size() && !less_(e.first, undo[b].first))
                    kept.emplace_back(std::move(e.first), undo[b].second);
                else
                    kept.push_back(std::move(e));
            }
            rebuild(kept);
        }
        throw;
    }
    flush();
}

template <Monoid M, class K, class Less>
void FiBA<M, K, Less>::bulk_step1(std::vector<K>& ts, std::vector<P>& ps,
                                  std::vector<Group>& groups,
                                  std::vector<std::vector<Node*>>& recomp,
                                  std::vector<std::pair<K, P>>& undo) {
    struct Frame {
        Node* node;
        const K* hi;  // exclusive upper bound of the subtree, or null
        std::size_t level;
    };
    std::vector<Frame> stack;
    Node* node = rf_;
    std::size_t level = 0;
    while (node->parent && less_(ts[0], keys(node)[0])) {
        node = node->parent;
        ++level;
    }
    stack.push_back({node, nullptr, level});
    const K* last_t = nullptr;
    bool last_new = false;
    Node* found_node = node;
    std::uint32_t found_i = 0;
    for (std::size_t idx = 0; idx < ts.size(); ++idx) {
        const K& t = ts[idx];
        P& v = ps[idx];
        if (last_t && !less_(*last_t, t)) {
            // duplicate inside the bulk: combine with what the previous one produced
            if (last_new) {
                P& prev = groups.back().members.back().v;
                prev = m_.combine(prev, v);
            } else {
                vals(found_node)[found_i] = m_.combine(vals(found_node)[found_i], v);
            }
            continue;
        }
        last_t = &t;
        while (stack.back().hi && !less_(t, *stack.back().hi)) stack.pop_back();
        node = stack.back().node;
        const K* hi = stack.back().hi;
        level = stack.back().level;
        while (true) {
            std::uint32_t i = lower(node, t);
            if (i < node->n && !less_(t, keys(node)[i])) {
                P nv = m_.combine(vals(node)[i], v);
                undo.emplace_back(keys(node)[i], std::move(vals(node)[i]));
                vals(node)[i] = std::move(nv);
                found_node = node;
                found_i = i;
                last_new = false;
                if (recomp.size() <= level) recomp.resize(level + 1);
                recomp[level].push_back(node);
                break;
            }
            if (node->leaf) {
                last_new = true;
                if (groups.empty() || groups.back().node != node) groups.push_back({node, {}});
                groups.back().members.push_back({t, v, nullptr});
                break;
            }
            Node* c = kids(node)[i];
            if (i < node->n) hi = &keys(node)[i];
            node = c;
            --level;
            stack.push_back({node, hi, level});
        }
    }
}

template <Monoid M, class K, class Less>
void FiBA<M, K, Less>::pass_up(std::vector<Group>& groups, std::vector<std::vector<Node*>>& recomp,
                               std::vector<Node*> pre_changed, std::vector<Group> pre_nxt) {
    // Step 2a, structure only (no combine, so a raising combine in 2b finds every entry
    // linked into the tree): level by level, interleave and bulk-split.
    std::vector<std::vector<Node*>> changed_at;
    changed_at.push_back(std::move(pre_changed));
    std::vector<Group> cur = std::move(groups);
    for (std::size_t level = 0; !cur.empty() || level == 0; ++level) {
        std::vector<Group> nxt;
        if (level == 0) nxt = std::move(pre_nxt);
        if (changed_at.size() <= level) changed_at.resize(level + 1);
        for (auto& g : cur) absorb(g.node, g.members, nxt, changed_at[level]);
        cur = std::move(nxt);
    }
    // Step 2b: up-aggregates level by level (a changed node's parent changes too).
    Node* top_l = nullptr;
    Node* top_r = nullptr;
    bool root_touched = false;
    for (std::size_t level = 0; level < changed_at.size() || level < recomp.size(); ++level) {
        std::vector<Node*> changed;
        if (level < changed_at.size()) changed = std::move(changed_at[level]);
        if (level < recomp.size())
            for (Node* y : recomp[level]) changed.push_back(y);
        std::sort(changed.begin(), changed.end());
        changed.erase(std::unique(changed.begin(), changed.end()), changed.end());
        for (Node* y : changed) {
            Node* p = y->parent;
            if (!p) {
                root_touched = true;
            } else if (y->ls || y->rs) {
                if (y->ls) top_l = y;
                if (y->rs) top_r = y;
            } else {
                fix(y);
                if (recomp.size() <= level + 1) recomp.resize(level + 2);
                recomp[level + 1].push_back(p);
            }
        }
    }
    // Step 3: pass down the spines that were touched.
    if (root_touched) fix(root_);
    if (top_l && top_l->parent) {
        Node* n = top_l;
        fix(n);
        while (!n->leaf) {
            n = kids(n)[0];
            fix(n);
        }
    }
    if (top_r && top_r->parent) {
        Node* n = top_r;
        fix(n);
        while (!n->leaf) {
            n = kids(n)[n->n];
            fix(n);
        }
    }
}

// Interleave members (t, v[, child]) into y; split into pieces if it overflows.
template <Monoid M, class K, class Less>
void FiBA<M, K, Less>::absorb(Node* y, std::vector<Member>& members, std::vector<Group>& nxt,
                              std::vector<Node*>& changed) {
    const std::uint32_t n = y->n;
    std::vector<K> nt;
    std::vector<P> nv;
    std::vector<Node*> nk;
    nt.reserve(n + members.size());
    nv.reserve(n + members.size());
    K* ks = keys(y);
    P* vs = vals(y);
    if (!y->leaf) nk.push_back(kids(y)[0]);
    std::uint32_t i = 0;
    for (auto& mb : members) {
        while (i < n && less_(ks[i], mb.t)) {
            nt.push_back(std::move(ks[i]));
            nv.push_back(std::move(vs[i]));
            if (!y->leaf) nk.push_back(kids(y)[i + 1]);
            ++i;
        }
        nt.push_back(std::move(mb.t));
        nv.push_back(std::move(mb.v));
        if (!y->leaf) nk.push_back(mb.child);
    }
    for (; i < n; ++i) {
        nt.push_back(std::move(ks[i]));
        nv.push_back(std::move(vs[i]));
        if (!y->leaf) nk.push_back(kids(y)[i + 1]);
    }
    place(y, nt, nv, y->leaf ? nullptr : &nk, nxt, changed);
}

template <Monoid M, class K, class Less>
void FiBA<M, K, Less>::fill(Node* y, std::vector<K>& nt, std::vector<P>& nv, std::size_t from,
                            std::size_t cnt, std::vector<Node*>* nk) {
    std::move(nt.begin() + from, nt.begin() + from + cnt, keys(y));
    std::move(nv.begin() + from, nv.begin() + from + cnt, vals(y));
    clear_slots(y, static_cast<std::uint32_t>(cnt), y->n);
    if (nk) {
        Node** ks = kids(y);
        for (std::size_t i = 0; i <= cnt; ++i) {
            ks[i] = (*nk)[from + i];
            ks[i]->parent = y;
        }
        for (std::uint32_t i = static_cast<std::uint32_t>(cnt) + 1; i <= cap_; ++i) ks[i] = nullptr;
    }
    y->n = static_cast<std::uint32_t>(cnt);
}

// Give y the merged entries; bulk-split it into pieces when they overflow it: pieces of μ
// entries while the rest exceeds 2μ-1, the rest keeps μ-1..2μ-1.
template <Monoid M, class K, class Less>
void FiBA<M, K, Less>::place(Node* y, std::vector<K>& nt, std::vector<P>& nv,
                             std::vector<Node*>* nk, std::vector<Group>& nxt,
                             std::vector<Node*>& changed) {
    const std::size_t maxk = static_cast<std::size_t>(maxk_), mu = static_cast<std::size_t>(mu_);
    const std::size_t total = nt.size();
    if (total <= maxk) {
        fill(y, nt, nv, 0, total, nk);
        changed.push_back(y);
        return;
    }
    if (!y->parent) height_increase();
    Node* p = y->parent;
    bool was_rs = y->rs;
    y->rs = false;
    std::size_t pos = 0;
    Node* cur = y;
    while (total - pos > maxk) {
        Node* nw = new_node(y->leaf, p);
        fill(cur, nt, nv, pos, mu, nk);
        changed.push_back(cur);
        if (nxt.empty() || nxt.back().node != p) nxt.push_back({p, {}});
        nxt.back().members.push_back({std::move(nt[pos + mu]), std::move(nv[pos + mu]), nw});
        cur = nw;
        pos += mu + 1;
    }
    fill(cur, nt, nv, pos, total - pos, nk);
    changed.push_back(cur);
    if (was_rs) cur->rs = true;
    if (rf_ == y) rf_ = cur;
}

}  // namespace windowagg
