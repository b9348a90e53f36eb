// FiBA::check(): every invariant in O(n), throwing invariant_error naming the first broken
// one (see the fact card in fiba.hpp). The Python reference's _check() twin.
#pragma once

namespace windowagg {

template <Monoid M, class K, class Less>
template <class Eq>
void FiBA<M, K, Less>::check(Eq&& eq) const {
    if (root_->parent) throw invariant_error("FiBA: root has a parent");
    if (root_->ls || root_->rs) throw invariant_error("FiBA: root carries a spine flag");
    std::vector<int> depths;
    std::size_t seen = 0;
    check_node(eq, root_, 0, nullptr, nullptr, false, false, depths, seen);
    for (int d : depths)
        if (d != depths[0])
            throw invariant_error("FiBA: leaves at different depths (" + std::to_string(depths[0]) +
                                  " and " + std::to_string(d) + ")");
    Node* lf = root_;
    while (!lf->leaf) lf = kids(lf)[0];
    Node* rf = root_;
    while (!rf->leaf) rf = kids(rf)[rf->n];
    if (lf_ != lf) throw invariant_error("FiBA: left finger is not the leftmost leaf");
    if (rf_ != rf) throw invariant_error("FiBA: right finger is not the rightmost leaf");
    if (seen != size_)
        throw invariant_error("FiBA: size " + std::to_string(size_) + " but the tree holds " +
                              std::to_string(seen) + " entries");
    if (!graveyard_.empty()) throw invariant_error("FiBA: discarded nodes not released");
}

template <Monoid M, class K, class Less>
template <class Eq>
void FiBA<M, K, Less>::check_node(Eq& eq, Node* y, int depth, const K* lo, const K* hi, bool ls,
                                  bool rs, std::vector<int>& depths, std::size_t& seen) const {
    const std::string where = "node at depth " + std::to_string(depth) + " with " +
                              std::to_string(y->n) + " entries";
    const std::uint32_t k = y->n, mink = static_cast<std::uint32_t>(mink_),
                        maxk = static_cast<std::uint32_t>(maxk_);
    if (y->parent && (k < mink || k > maxk))
        throw invariant_error("FiBA: " + where + ": allowed " + std::to_string(mink) + ".." +
                              std::to_string(maxk));
    if (!y->parent && k > maxk) throw invariant_error("FiBA: root " + where + " > " + std::to_string(maxk));
    if (!y->parent && !y->leaf && k < 1) throw invariant_error("FiBA: inner root without entries");
    const K* ts = keys(y);
    for (std::uint32_t i = 1; i < k; ++i)
        if (!less_(ts[i - 1], ts[i]))
            throw invariant_error("FiBA: " + where + ": keys not increasing at " + std::to_string(i));
    if (k && lo && !less_(*lo, ts[0]))
        throw invariant_error("FiBA: " + where + ": first key not above the separator on its left");
    if (k && hi && !less_(ts[k - 1], *hi))
        throw invariant_error("FiBA: " + where + ": last key not below the separator on its right");
    if (y->ls != ls || y->rs != rs)
        throw invariant_error("FiBA: " + where + ": spine flags ls=" + std::to_string(y->ls) +
                              " rs=" + std::to_string(y->rs) + ", expected ls=" + std::to_string(ls) +
                              " rs=" + std::to_string(rs));
    seen += k;
    if (y->leaf) {
        depths.push_back(depth);
    } else {
        const bool top = !y->parent;
        for (std::uint32_t i = 0; i <= k; ++i) {
            Node* c = kids(y)[i];
            if (!c) throw invariant_error("FiBA: " + where + ": child " + std::to_string(i) + " missing");
            if (c->parent != y)
                throw invariant_error("FiBA: child " + std::to_string(i) + " of " + where +
                                      " has a wrong parent");
            check_node(eq, c, depth + 1, i > 0 ? &ts[i - 1] : lo, i < k ? &ts[i] : hi,
                       i == 0 && (top || ls), i == k && (top || rs), depths, seen);
        }
    }
    P agg, loc = y->loc;
    std::vector<P> suf;
    compute(y, agg, loc, y == lf_ ? &suf : nullptr);
    const bool spine_part = y->parent && y->ls != y->rs && (!y->leaf || y->rs);
    if (spine_part && !eq(y->loc, loc))
        throw invariant_error("FiBA: " + where + ": stored spine part differs from its recomputation");
    if (!eq(y->agg, agg))
        throw invariant_error("FiBA: " + where + ": stored aggregate differs from its recomputation");
    if (y == lf_) {
        bool same = suf.size() == lsuf_.size();
        for (std::size_t i = 0; same && i < suf.size(); ++i) same = eq(suf[i], lsuf_[i]);
        if (!same) throw invariant_error("FiBA: left finger suffix aggregates differ from their recomputation");
    }
}

}  // namespace windowagg
