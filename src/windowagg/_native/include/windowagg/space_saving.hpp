// Space-Saving under exponential decay (Cormode, Korn, Tirthapura 2007, Theorem 4): the
// compiled twin of windowagg.sketches.space_saving.ExpDecaySpaceSaving's Python reference,
// operation for operation, so both hold the same counters, in the same order, with the same
// floats bit for bit, and evict the same key on ties (the Python docstring holds the fact
// card and the error analysis).
//
// What "the same" takes, and how it is kept:
// * The reference's dicts keep insertion order (a deleted key re-inserted goes last); the
//   order decides the codec bytes, the heap's sequence numbers after a rebuild, the merge's
//   output and heavy_hitters' ties. Here: slots in a vector, threaded in insertion order by
//   a doubly linked list (an evicted key's slot goes to a free list and is reused: no
//   compaction, no renumbering), and an open-addressing index key -> slot (linear probing,
//   backward-shift deletion).
// * The reference's heap is a heapq list of (count, seq, key) tuples. Here: the same
//   entries (the same counts and sequence numbers), ordered by the same comparison. Sequence
//   numbers are unique, so the minimum is unique and every choice the reference makes (which
//   entry it refreshes, which key it evicts, when it rebuilds) depends on the entries, never
//   on the array's layout: the layout is free, and an eviction's pop-then-push is one
//   replace of the top here. heap() gives the entries sorted, a valid heapq list.
// * The same float operations in the same order (exp from the same libm; the build sets
//   -ffp-contract=off).
//
// Keys are int64 (tag 0), str as UTF-8 (tag 1) or bytes (tag 2): the codec's tags. Other
// Python keys (float, bool, big ints, tuples) are the Python class's business.
// Every mutator checks what it can before it changes anything; std::bad_alloc is the only
// way out mid-change. Plain code, no template: compiled once.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

namespace windowagg {

struct SSKey {
    uint8_t tag = 0;  // 0 int64, 1 str (UTF-8), 2 bytes
    int64_t i = 0;
    std::string s;

    bool operator==(const SSKey& o) const { return tag == o.tag && (tag == 0 ? i == o.i : s == o.s); }

    static SSKey of_int(int64_t v) {
        SSKey k;
        k.i = v;
        return k;
    }
    static SSKey of_text(uint8_t tag, const char* p, std::size_t n) {
        SSKey k;
        k.tag = tag;
        k.s.assign(p, n);
        return k;
    }
    uint64_t hash() const {
        if (tag == 0) {  // splitmix64 finaliser
            uint64_t z = static_cast<uint64_t>(i) + 0x9E3779B97F4A7C15ull;
            z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
            z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
            return z ^ (z >> 31);
        }
        uint64_t h = 1469598103934665603ull ^ tag;  // FNV-1a
        for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
        return h ^ (h >> 29);
    }
};

class SpaceSavingCore {
public:
    struct Slot {
        SSKey key;
        double c = 0.0;     // count, landmark units
        double over = 0.0;  // overestimate
        uint64_t hash = 0;
        uint32_t prev = 0xFFFFFFFFu, next = 0xFFFFFFFFu;  // insertion order (free list: next)
        bool alive = false;
    };
    struct Entry {  // the reference's heap tuple (count, seq, key); key as its slot
        double v;
        uint64_t seq;
        uint32_t slot;
    };

    SpaceSavingCore(uint64_t k, double lam) : k_(k), lam_(lam), horizon_(300.0 / lam) {}

    uint64_t k() const { return k_; }
    double lam() const { return lam_; }
    bool has_landmark() const { return has_lm_; }
    double landmark() const { return lm_; }
    double tmax() const { return tmax_; }
    double floor() const { return floor_; }
    double n() const { return n_; }
    uint64_t seq() const { return seq_; }
    std::size_t size() const { return live_; }
    const Slot& slot(uint32_t i) const { return slots_[i]; }
    // f(slot index, slot) of every monitored key, in insertion order
    template <class F>
    void for_each(F f) const {
        for (uint32_t i = head_; i != NONE; i = slots_[i].next) f(i, slots_[i]);
    }
    const std::vector<Entry>& heap() const { return heap_; }

    // ------------------------------------------------------------ update
    // The reference's update(x, t, weight) after its checks (t finite, weight > 0 finite).
    void update(const SSKey& x, uint64_t h, double t, double weight) {
        if (!has_lm_) {
            lm_ = t;
            has_lm_ = true;
        }
        double a = t - lm_;
        if (a > horizon_) {
            relandmark(t);
            a = 0.0;
        }
        if (t > tmax_) tmax_ = t;
        double w = weight * std::exp(lam_ * a);
        if (w <= 0.0) return;
        n_ += w;
        uint32_t s = find(x, h);
        if (s != NONE) {
            slots_[s].c = slots_[s].c + w;
            return;
        }
        if (live_ < k_) {
            double fl = floor_;
            uint32_t ns = append(x, h, fl + w, fl);
            ++seq_;
            heappush(Entry{fl + w, seq_, ns});
            return;
        }
        // replace the minimum counter; heap entries are refreshed lazily (counts only grow)
        double c0;
        uint32_t y;
        for (;;) {
            const Entry& top = heap_[0];
            c0 = top.v;
            y = top.slot;
            if (!slots_[y].alive) {
                heappop();
            } else if (slots_[y].c != c0) {
                ++seq_;
                heapreplace(Entry{slots_[y].c, seq_, y});
            } else {
                break;
            }
        }
        // the reference pops the minimum, then pushes the new counter: the same entries
        // after one replace of the top (the heap's layout is free: see the header)
        erase_slot(y);
        if (c0 > floor_) floor_ = c0;
        uint32_t ns = append(x, h, c0 + w, c0);
        ++seq_;
        heapreplace(Entry{c0 + w, seq_, ns});
        if (heap_.size() > 4 * k_ + 16) rebuild_heap();
    }

    // ------------------------------------------------------------ merge
    // The reference's merge (Agarwal et al. 2012) after its checks (same k and lam; o is not
    // this object: the binding copies it first).
    void merge(const SpaceSavingCore& o) {
        if (!o.has_lm_) return;
        double olm = o.lm_;
        if (!has_lm_) {
            lm_ = olm;
            has_lm_ = true;
        }
        if (olm > lm_) relandmark(olm);
        double g = std::exp(-lam_ * (lm_ - olm));
        double f1 = floor_, f2 = o.floor_ * g;
        // lb in the reference's dict order: this summary's keys, then the other's new ones
        std::vector<Slot> lb;
        lb.reserve(live_ + o.live_);
        for_each([&](uint32_t, const Slot& s) {
            lb.push_back(s);
            lb.back().c = s.c - f1;
        });
        Index idx;
        idx.rebuild(lb);
        o.for_each([&](uint32_t, const Slot& s) {
            double add = s.c * g - f2;
            uint32_t at = idx.find(lb, s.key, s.hash);
            if (at != NONE) {
                lb[at].c = lb[at].c + add;
            } else {
                lb.push_back(s);
                lb.back().c = 0.0 + add;
                idx.insert(lb, static_cast<uint32_t>(lb.size() - 1));
            }
        });
        double delta = 0.0;
        if (lb.size() > k_) {
            std::vector<double> vals;
            vals.reserve(lb.size());
            for (const Slot& s : lb) vals.push_back(s.c);
            // sorted(reverse=True)[k]: the (k+1)-th largest
            std::nth_element(vals.begin(), vals.begin() + static_cast<std::ptrdiff_t>(k_), vals.end(),
                             [](double a, double b) { return a > b; });
            delta = vals[k_];
        }
        double F = f1 + f2 + delta;
        std::vector<Slot> out;
        out.reserve(std::min<std::size_t>(lb.size(), k_ + 1));
        for (Slot& s : lb) {
            if (s.c - delta > 0) {
                s.c = s.c - delta + F;
                s.over = F;
                s.alive = true;
                out.push_back(std::move(s));
            }
        }
        adopt(std::move(out));
        floor_ = F;
        n_ += o.n_ * g;
        tmax_ = o.tmax_ > tmax_ ? o.tmax_ : tmax_;
        rebuild_heap();
    }

    // ------------------------------------------------------------ queries
    double scale(bool given, double t) const {
        if (!has_lm_) return 0.0;
        if (!given) t = tmax_;
        return std::exp(-lam_ * (t - lm_));
    }
    const Slot* lookup(const SSKey& x) const {
        uint32_t s = find(x, x.hash());
        return s == NONE ? nullptr : &slots_[s];
    }
    // (slot index, estimate at scale s) of every key with c >= phi*n and c > 0, heaviest
    // first, ties in insertion order (the reference's stable sort on -estimate)
    std::vector<std::pair<uint32_t, double>> heavy_hitters(double phi, double s) const {
        double thr = phi * n_;
        std::vector<std::pair<uint32_t, double>> out;
        for_each([&](uint32_t i, const Slot& sl) {
            if (sl.c >= thr && sl.c > 0) out.emplace_back(i, sl.c * s);
        });
        std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return -a.second < -b.second; });
        return out;
    }

    // ------------------------------------------------------------ state in, state out
    // A summary from codec fields, the keys in order; "" or why it is refused. The caller
    // built the object with (k, lam) already checked.
    std::string load(bool has, double lm, double tmax, double floor, double n, std::vector<Slot> items) {
        if (items.size() > k_) return "more monitored keys than k";
        if (!(std::isfinite(floor) && std::isfinite(n) && floor >= 0 && n >= 0))
            return "floor and total must be finite and >= 0";
        if (has && !(std::isfinite(lm) && std::isfinite(tmax)))
            return "landmark and largest timestamp must be finite";
        for (Slot& s : items) {
            s.hash = s.key.hash();
            s.alive = true;
        }
        Index idx;
        std::vector<Slot> seen;
        seen.reserve(items.size());
        for (Slot& s : items) {
            if (idx.find(seen, s.key, s.hash) != NONE) return "duplicate key";
            seen.push_back(s);
            idx.insert(seen, static_cast<uint32_t>(seen.size() - 1));
        }
        adopt(std::move(seen));
        has_lm_ = has;
        if (has) {
            lm_ = lm;
            tmax_ = tmax;
        }
        floor_ = floor;
        n_ = n;
        rebuild_heap();
        return check();
    }

    // The reference's _check (O(k)): "" when every invariant holds, else which one broke.
    std::string check() const {
        if (live_ > k_) return std::to_string(live_) + " counters > k = " + std::to_string(k_);
        double slack = 1e-9 * (n_ > 1.0 ? n_ : 1.0);
        FSum sum;
        uint32_t alive = 0, linked = 0, prev = NONE;
        for (const Slot& s : slots_) alive += s.alive;
        for (uint32_t i = head_; i != NONE && linked <= alive; i = slots_[i].next) {
            const Slot& s = slots_[i];
            ++linked;
            if (!s.alive || s.prev != prev) return "the insertion-order list is broken";
            prev = i;
            if (!(s.c >= floor_ - slack)) return "a count below the floor";
            if (!(0 <= s.over && s.over <= s.c + slack)) return "an overestimate out of range";
            sum.add(s.c);
        }
        if (alive != live_ || linked != live_ || tail_ != prev) return "live slot count differs from the order list";
        double lhs = sum.total() + static_cast<double>(k_ - live_) * floor_;
        if (!(lhs <= n_ + slack)) return "sum of counts exceeds the total";
        if (heap_.size() != live_) return "heap entries differ from the monitored keys";
        for (std::size_t i = 1; i < heap_.size(); ++i)
            if (less(heap_[i], heap_[(i - 1) >> 1])) return "heap order broken";
        for (const Entry& e : heap_)
            if (e.slot >= slots_.size() || !slots_[e.slot].alive) return "heap entry names no key";
        for (uint32_t i = 0; i < slots_.size(); ++i)
            if (slots_[i].alive && index_.find(slots_, slots_[i].key, slots_[i].hash) != i) return "index misses a key";
        return "";
    }

    static constexpr uint32_t NONE = 0xFFFFFFFFu;

private:
    // key -> slot index: linear probing, backward-shift deletion, load <= 1/2
    struct Index {
        std::vector<uint32_t> t;
        std::size_t mask = 0, used = 0;

        uint32_t find(const std::vector<Slot>& slots, const SSKey& x, uint64_t h) const {
            if (t.empty()) return NONE;
            for (std::size_t i = h & mask;; i = (i + 1) & mask) {
                uint32_t s = t[i];
                if (s == NONE) return NONE;
                if (slots[s].hash == h && slots[s].key == x) return s;
            }
        }
        void place(const std::vector<Slot>& slots, uint32_t s) {
            for (std::size_t i = slots[s].hash & mask;; i = (i + 1) & mask)
                if (t[i] == NONE) {
                    t[i] = s;
                    return;
                }
        }
        void insert(const std::vector<Slot>& slots, uint32_t s) {
            if (2 * (used + 1) > t.size()) {
                grow(slots, 2 * (used + 1));
            }
            place(slots, s);
            ++used;
        }
        void grow(const std::vector<Slot>& slots, std::size_t need) {
            std::size_t cap = 16;
            while (cap < 2 * need) cap *= 2;
            std::vector<uint32_t> old = std::move(t);
            t.assign(cap, NONE);
            mask = cap - 1;
            for (uint32_t s : old)
                if (s != NONE) place(slots, s);
        }
        void rebuild(const std::vector<Slot>& slots) {
            t.clear();
            used = 0;
            std::size_t live = 0;
            for (const Slot& s : slots) live += s.alive;
            grow(slots, live + 1);
            for (uint32_t i = 0; i < slots.size(); ++i)
                if (slots[i].alive) {
                    place(slots, i);
                    ++used;
                }
        }
        void erase(const std::vector<Slot>& slots, uint32_t s) {
            std::size_t i = slots[s].hash & mask;
            while (t[i] != s) i = (i + 1) & mask;
            std::size_t j = i;
            for (;;) {  // backward shift
                j = (j + 1) & mask;
                if (t[j] == NONE) break;
                std::size_t home = slots[t[j]].hash & mask;
                // move t[j] into the hole at i unless its home lies cyclically in (i, j]
                bool stays = i <= j ? (i < home && home <= j) : (i < home || home <= j);
                if (!stays) {
                    t[i] = t[j];
                    i = j;
                }
            }
            t[i] = NONE;
            --used;
        }
    };

    uint32_t find(const SSKey& x, uint64_t h) const { return index_.find(slots_, x, h); }

    // a new key, last in insertion order, in a free slot (reused: its string's capacity too)
    uint32_t append(const SSKey& x, uint64_t h, double c, double over) {
        uint32_t at;
        if (free_ != NONE) {
            at = free_;
            free_ = slots_[at].next;
        } else {
            slots_.emplace_back();
            at = static_cast<uint32_t>(slots_.size() - 1);
        }
        Slot& s = slots_[at];
        s.key.tag = x.tag;
        s.key.i = x.i;
        s.key.s.assign(x.s);
        s.hash = h;
        s.c = c;
        s.over = over;
        s.alive = true;
        s.prev = tail_;
        s.next = NONE;
        (tail_ == NONE ? head_ : slots_[tail_].next) = at;
        tail_ = at;
        index_.insert(slots_, at);
        ++live_;
        return at;
    }
    void erase_slot(uint32_t i) {
        index_.erase(slots_, i);
        Slot& s = slots_[i];
        (s.prev == NONE ? head_ : slots_[s.prev].next) = s.next;
        (s.next == NONE ? tail_ : slots_[s.next].prev) = s.prev;
        s.alive = false;
        s.prev = NONE;
        s.next = free_;
        free_ = i;
        --live_;
    }
    // hold exactly *order*'s slots, in that order
    void adopt(std::vector<Slot> order) {
        slots_ = std::move(order);
        uint32_t m = static_cast<uint32_t>(slots_.size());
        for (uint32_t i = 0; i < m; ++i) {
            slots_[i].alive = true;
            slots_[i].prev = i ? i - 1 : NONE;
            slots_[i].next = i + 1 < m ? i + 1 : NONE;
        }
        head_ = m ? 0 : NONE;
        tail_ = m ? m - 1 : NONE;
        free_ = NONE;
        live_ = m;
        index_.rebuild(slots_);
    }

    void relandmark(double new_lm) {
        double f = std::exp(-lam_ * (new_lm - lm_));
        for (uint32_t i = head_; i != NONE; i = slots_[i].next) {
            slots_[i].c = slots_[i].c * f;
            slots_[i].over = slots_[i].over * f;
        }
        floor_ *= f;
        n_ *= f;
        lm_ = new_lm;
        rebuild_heap();
    }

    // (count, seq) in dict order, seq = position; heapify; seq = len
    void rebuild_heap() {
        heap_.clear();
        heap_.reserve(live_);
        uint64_t pos = 0;
        for_each([&](uint32_t i, const Slot& s) { heap_.push_back(Entry{s.c, pos++, i}); });
        for (std::size_t i = heap_.size() / 2; i-- > 0;) siftup(i);
        seq_ = heap_.size();
    }

    // ---- CPython's heapq, step for step; tuples compare as (v, seq): v == v, then seq
    static bool less(const Entry& a, const Entry& b) { return a.v == b.v ? a.seq < b.seq : a.v < b.v; }
    void siftdown(std::size_t start, std::size_t pos) {
        Entry item = heap_[pos];
        while (pos > start) {
            std::size_t parent = (pos - 1) >> 1;
            if (less(item, heap_[parent])) {
                heap_[pos] = heap_[parent];
                pos = parent;
                continue;
            }
            break;
        }
        heap_[pos] = item;
    }
    void siftup(std::size_t pos) {
        std::size_t end = heap_.size(), start = pos;
        Entry item = heap_[pos];
        std::size_t child = 2 * pos + 1;
        while (child < end) {
            std::size_t right = child + 1;
            if (right < end && !less(heap_[child], heap_[right])) child = right;
            heap_[pos] = heap_[child];
            pos = child;
            child = 2 * pos + 1;
        }
        heap_[pos] = item;
        siftdown(start, pos);
    }
    void heappush(const Entry& e) {
        heap_.push_back(e);
        siftdown(0, heap_.size() - 1);
    }
    void heappop() {
        Entry last = heap_.back();
        heap_.pop_back();
        if (!heap_.empty()) {
            heap_[0] = last;
            siftup(0);
        }
    }
    // the top replaced, sifted top-down (stops where the entry belongs: a new counter is
    // small, so it seldom goes far; the reference's heapq goes to a leaf and back up)
    void heapreplace(const Entry& e) {
        std::size_t end = heap_.size(), pos = 0, child = 1;
        while (child < end) {
            if (child + 1 < end && less(heap_[child + 1], heap_[child])) ++child;
            if (!less(heap_[child], e)) break;
            heap_[pos] = heap_[child];
            pos = child;
            child = 2 * pos + 1;
        }
        heap_[pos] = e;
    }

    // an exact sum (Shewchuk's partials), as math.fsum; +inf stays +inf (counts are >= 0)
    struct FSum {
        std::vector<double> parts;
        bool inf = false;
        void add(double x) {
            if (std::isinf(x)) inf = true;
            if (inf) return;
            std::size_t i = 0;
            for (double y : parts) {
                if (std::fabs(x) < std::fabs(y)) std::swap(x, y);
                double hi = x + y;
                double lo = y - (hi - x);
                if (lo != 0.0) parts[i++] = lo;
                x = hi;
            }
            parts.resize(i);
            parts.push_back(x);
        }
        double total() const {
            if (inf) return std::numeric_limits<double>::infinity();
            double s = 0.0;
            for (std::size_t i = parts.size(); i-- > 0;) s += parts[i];
            return s;
        }
    };

    uint64_t k_;
    double lam_;
    double horizon_;
    bool has_lm_ = false;
    double lm_ = 0.0;
    double tmax_ = -std::numeric_limits<double>::infinity();
    double floor_ = 0.0;
    double n_ = 0.0;
    uint64_t seq_ = 0;
    uint32_t live_ = 0;
    uint32_t head_ = NONE, tail_ = NONE, free_ = NONE;
    std::vector<Slot> slots_;
    Index index_;
    std::vector<Entry> heap_;
};

}  // namespace windowagg
