// _core.SlidingWindowCount and _core.SlidingWindowQDigest: the compiled twins that
// windowagg.sketches.SlidingWindowCount / SlidingWindowQDigest hold (one structure,
// include/windowagg/sliding_window.hpp; the q-digest adds a value digest per time node).
// Keys, timestamps and weights arrive checked by the public class; every entry point checks
// them again (a caller may reach _core directly), and the total weight, before anything
// changes. update_many runs without the GIL; a CallGuard (call_guard.hpp) serialises the
// calls of several threads on one object.
#include <nanobind/nanobind.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "py_errors.hpp"
#include "call_guard.hpp"
#include "windowagg/sliding_window.hpp"

namespace nb = nanobind;
using namespace windowagg::py;
using windowagg::SlidingCore;
using windowagg::SWItem;
using windowagg::SWLevel;

namespace {

constexpr uint64_t kMaxTotal = ~uint64_t{0};

int universe_bits(uint64_t U) { return std::max(1, 64 - std::countl_zero(U - 1)); }
uint64_t value_cap(int LU, double eps) {
    double c = std::ceil(static_cast<double>(6 * LU) / eps) + 1;  // the reference's vcap
    return c < 4.0e18 ? static_cast<uint64_t>(c) : uint64_t{4000000000000000000};
}

// V: the q-digest (keys in [0, U), a value digest per time node), else the count.
template <bool V>
struct SW {
    static constexpr const char* kWho = V ? "SlidingWindowQDigest" : "SlidingWindowCount";
    SlidingCore core;
    CallGuard guard;
    SW(double eps, int LT, uint64_t W, double cf, uint64_t kappa, uint64_t U)
        : core(eps, LT, W, cf, kappa, V ? 0.5 : 1.0, U, V ? universe_bits(U) : 0, V ? value_cap(universe_bits(U), eps) : 0) {}
};

template <bool V>
void check_params(double eps, int LT, double cf, uint64_t kappa, uint64_t U, const char* cls) {
    const char* kWho = SW<V>::kWho;
    if (V ? (U < 2 || U > (uint64_t{1} << 62)) : U != 0)
        raise(cls, std::string(kWho) + (V ? ": the compiled twin takes a universe in [2, 2**62], got " : ": a count has no universe, got ") +
                       std::to_string(U) + (V ? "; use backend='python' for a larger one" : ""));
    if (!(eps > 0.0 && eps < 1.0)) raise(cls, std::string(kWho) + ": eps must be a number in (0, 1), got " + std::to_string(eps));
    if (LT < 1 || LT > 62) raise(cls, std::string(kWho) + ": time_bits must be an int in [1, 62], got " + std::to_string(LT));
    if (!(cf > 0.0 && cf < INFINITY)) raise(cls, std::string(kWho) + ": capacity_factor must be > 0, got " + std::to_string(cf));
    if (kappa < 2 || kappa > (uint64_t{1} << 62)) raise(cls, std::string(kWho) + ": kappa must be in [2, 2**62], got " + std::to_string(kappa));
}

template <bool V>
[[noreturn]] void total_overflow() {
    const char* kWho = SW<V>::kWho;
    raise("ArgumentError", std::string(kWho) +
                               ": the total weight would pass 2**64 - 1 (the codec's u64); split the stream over several summaries");
}

void check_time(const SlidingCore& c, int64_t t) {
    if (t < 0 || static_cast<uint64_t>(t) >> c.time_bits())
        raise("TimestampError", "timestamp " + std::to_string(t) + " outside [0, 2**" + std::to_string(c.time_bits()) +
                                    "); raise time_bits or rebase timestamps");
}

void check_weight(int64_t w) {
    if (w < 1 || static_cast<uint64_t>(w) > SlidingCore::MAX_WEIGHT)
        raise("ArgumentError", "sliding-window weights must be ints in [1, 2**53], got " + std::to_string(w) +
                                   "; split a larger multiplicity into several updates");
}

void check_key(const SlidingCore& c, int64_t x) {
    if (x < 0 || static_cast<uint64_t>(x) >= c.universe())
        raise("ArgumentError", "key " + std::to_string(x) + " is outside the universe [0, " + std::to_string(c.universe()) + ")");
}

// A 1-D C-contiguous int64 buffer (numpy's 'q' / 'l').
struct I64Buf {
    const char* kWho = "sliding-window summary";
    Py_buffer view{};
    bool ok = false;
    std::size_t n = 0;
    I64Buf(nb::handle o, const char* what) {
        if (!PyObject_CheckBuffer(o.ptr()) || PyObject_GetBuffer(o.ptr(), &view, PyBUF_FORMAT | PyBUF_C_CONTIGUOUS) != 0) {
            PyErr_Clear();
            raise("ArgumentTypeError", std::string(kWho) + ".update_many needs " + what +
                                           " as a 1-D C-contiguous int64 buffer, got " + Py_TYPE(o.ptr())->tp_name);
        }
        ok = true;
        const char* f = view.format ? view.format : "B";
        if (*f == '@' || *f == '=' || *f == '<') ++f;
        bool i64 = f[0] && !f[1] && (f[0] == 'q' || f[0] == 'l');
        if (view.ndim != 1 || view.itemsize != 8 || !i64) {
            PyBuffer_Release(&view);
            ok = false;
            raise("ArgumentTypeError", std::string(kWho) + ".update_many needs " + what + " as a 1-D int64 buffer");
        }
        n = static_cast<std::size_t>(view.shape[0]);
    }
    ~I64Buf() {
        if (ok) PyBuffer_Release(&view);
    }
    I64Buf(const I64Buf&) = delete;
    I64Buf& operator=(const I64Buf&) = delete;
    const int64_t* ptr() const { return static_cast<const int64_t*>(view.buf); }
};

nb::bytes be_u64s(const std::vector<uint64_t>& v) {
    std::string s(v.size() * 8, '\0');
    for (std::size_t i = 0; i < v.size(); ++i)
        for (int b = 0; b < 8; ++b) s[i * 8 + static_cast<std::size_t>(b)] = static_cast<char>(v[i] >> (56 - 8 * b));
    return nb::bytes(s.data(), s.size());
}

uint64_t read_be(const unsigned char* p) {
    uint64_t v = 0;
    for (int b = 0; b < 8; ++b) v = (v << 8) | p[b];
    return v;
}

// (depths, big-endian offsets, big-endian counts) of a node map, ascending heap id.
nb::tuple node_fields(const windowagg::QDigestLevel& m) {
    std::vector<uint64_t> ids;
    ids.reserve(m.size());
    m.for_each([&](uint64_t k, double) { ids.push_back(k); });
    std::sort(ids.begin(), ids.end());
    std::string ds(ids.size(), '\0');
    std::vector<uint64_t> offs, cnts;
    offs.reserve(ids.size());
    cnts.reserve(ids.size());
    for (std::size_t i = 0; i < ids.size(); ++i) {
        int d = 63 - std::countl_zero(ids[i]);
        ds[i] = static_cast<char>(d);
        offs.push_back(ids[i] - (uint64_t{1} << d));
        double c = *m.find(ids[i]);
        uint64_t b;
        std::memcpy(&b, &c, 8);
        cnts.push_back(b);
    }
    return nb::make_tuple(nb::bytes(ds.data(), ds.size()), be_u64s(offs), be_u64s(cnts));
}

// (tau, exact, depths, big-endian offsets, big-endian counts[, [value digest fields per
// node]]) of a level, ascending heap id.
nb::tuple level_fields(const SWLevel& lv, bool values) {
    std::vector<uint64_t> ids = lv.sorted_ids();
    std::string ds(ids.size(), '\0');
    std::vector<uint64_t> offs, cnts;
    offs.reserve(ids.size());
    cnts.reserve(ids.size());
    for (std::size_t i = 0; i < ids.size(); ++i) {
        int d = 63 - std::countl_zero(ids[i]);
        ds[i] = static_cast<char>(d);
        offs.push_back(ids[i] - (uint64_t{1} << d));
        double c = *lv.cnt.find(ids[i]);
        uint64_t b;
        std::memcpy(&b, &c, 8);
        cnts.push_back(b);
    }
    if (!values) return nb::make_tuple(lv.tau, lv.exact, nb::bytes(ds.data(), ds.size()), be_u64s(offs), be_u64s(cnts));
    nb::list vals;
    for (uint64_t id : ids) vals.append(node_fields(lv.val.at(id)));
    return nb::make_tuple(lv.tau, lv.exact, nb::bytes(ds.data(), ds.size()), be_u64s(offs), be_u64s(cnts), vals);
}

// A node map from (depths, offsets, counts) bytes: ascending heap ids of depth <= L, finite
// counts >= 0; leaves (depth L) below `leaves` when given. fail() on anything else.
template <class Fail>
void read_nodes(windowagg::QDigestLevel& out, nb::handle h, int L, uint64_t leaves, Fail&& fail) {
    if (!nb::isinstance<nb::tuple>(h) || nb::len(h) != 3) fail("bad value digest");
    nb::tuple f = nb::borrow<nb::tuple>(h);
    nb::bytes depths, offsets, counts;
    if (!nb::try_cast(f[0], depths) || !nb::try_cast(f[1], offsets) || !nb::try_cast(f[2], counts)) fail("bad value digest");
    std::size_t k = depths.size();
    if (offsets.size() != 8 * k) fail(std::to_string(k) + " node depths but " + std::to_string(offsets.size()) + " bytes of offsets");
    if (counts.size() != 8 * k) fail("bad value digest");
    out.reserve(k);
    const auto* d = reinterpret_cast<const unsigned char*>(depths.c_str());
    const auto* o = reinterpret_cast<const unsigned char*>(offsets.c_str());
    const auto* c = reinterpret_cast<const unsigned char*>(counts.c_str());
    uint64_t prev = 0;
    for (std::size_t i = 0; i < k; ++i) {
        int depth = d[i];
        uint64_t off = read_be(o + 8 * i);
        uint64_t bits = read_be(c + 8 * i);
        double cnt;
        std::memcpy(&cnt, &bits, 8);
        if (depth > L || (off >> depth)) fail("node (depth " + std::to_string(depth) + ", offset " + std::to_string(off) + ") out of range");
        uint64_t id = (uint64_t{1} << depth) + off;
        if (id <= prev) fail("nodes not in ascending heap-id order");
        prev = id;
        if (!std::isfinite(cnt) || cnt < 0) fail("bad value digest");
        if (leaves && depth == L && off >= leaves) fail("value key outside the universe");
        out.set(id, cnt);
    }
}

// The state from its codec fields (layout 3: the buffer in (t, key, weight) order, nodes by
// ascending heap id); CodecError for anything but a whole, valid summary. Every count is
// checked against the bytes given before anything is allocated.
template <bool V>
SW<V>* load(double eps, int LT, uint64_t W, double cf, uint64_t kappa, uint64_t U, bool merged, int64_t tau0, int64_t tmax,
            uint64_t n, uint64_t top_n, nb::bytes Ts, nb::bytes xs, nb::bytes ws, nb::list levels) {
    const char* kWho = SW<V>::kWho;
    auto fail = [kWho](const std::string& why) { raise("CodecError", std::string("corrupt ") + kWho + ": " + why); };
    if (!(eps > 0.0 && eps < 1.0) || LT < 1 || LT > 62 || !(cf > 0.0 && cf < INFINITY) || kappa < 2 || kappa > (uint64_t{1} << 62) ||
        (V ? (U < 2 || U > (uint64_t{1} << 62)) : U != 0))
        fail("bad parameters");
    if (tau0 < -1 || tmax < -1 || (tmax >= 0 && static_cast<uint64_t>(tmax) >> LT) || (tau0 >= 0 && static_cast<uint64_t>(tau0) >> LT))
        fail("bad tau0 or max_timestamp");
    std::size_t nb_ = Ts.size() / 8;
    if (Ts.size() % 8 || xs.size() != Ts.size() || ws.size() != Ts.size()) fail("buffer arrays differ in length");
    if (nb_ > 2 * kappa) fail("buffer holds more than 2 kappa items");
    if (levels.size() > 64) fail(std::to_string(levels.size()) + " levels");
    const auto* tp = reinterpret_cast<const unsigned char*>(Ts.c_str());
    const auto* xp = reinterpret_cast<const unsigned char*>(xs.c_str());
    const auto* wp = reinterpret_cast<const unsigned char*>(ws.c_str());
    std::vector<SWItem> B;
    B.reserve(nb_);
    uint64_t Bw = 0;
    for (std::size_t i = 0; i < nb_; ++i) {
        uint64_t t = read_be(tp + 8 * i), x = read_be(xp + 8 * i), w = read_be(wp + 8 * i);
        if (t >> LT || w < 1 || w > SlidingCore::MAX_WEIGHT) fail("buffered item out of range");
        if (V ? x >= U : x != 0) fail("buffered key outside the universe");
        SWItem it{static_cast<int64_t>(t), x, w};
        if (!B.empty() && it < B.back()) fail("buffer not in (t, key, weight) order");
        if (tau0 >= 0 && it.t < tau0) fail("buffered item at or before tau0");
        if (w > n - Bw) fail("buffer + levels hold more than was added");  // Bw <= n: no wrap
        B.push_back(it);
        Bw += w;
    }
    if (top_n > n - Bw) fail("buffer + levels hold more than was added");
    if (W == 0 && Bw + top_n != n) fail("an item was lost between buffer and levels");
    auto tmp = std::make_unique<SW<V>>(eps, LT, W, cf, kappa, U);
    const int LU = tmp->core.universe_bits();
    std::vector<SWLevel> lvls;
    lvls.reserve(levels.size());
    for (std::size_t j = 0; j < levels.size(); ++j) {
        nb::handle h = levels[j];
        if (!nb::isinstance<nb::tuple>(h) || nb::len(h) != (V ? 6u : 5u)) fail("bad level");
        nb::tuple f = nb::borrow<nb::tuple>(h);
        int64_t tau = 0;
        bool exact;
        nb::bytes depths, offsets, counts;
        if (!nb::try_cast(f[0], tau) || !nb::try_cast(f[1], exact) || !nb::try_cast(f[2], depths) || !nb::try_cast(f[3], offsets) ||
            !nb::try_cast(f[4], counts))
            fail("bad level fields");
        std::size_t k = depths.size();
        if (offsets.size() != 8 * k) fail(std::to_string(k) + " node depths but " + std::to_string(offsets.size()) + " bytes of offsets");
        if (counts.size() != 8 * k) fail("bad level node counts");
        if (k > 2 * kappa) fail("level " + std::to_string(j + 1) + " holds more than 2 kappa nodes");
        if (tau < -1) fail("level tau below -1");
        SWLevel lv;
        lv.tau = tau;
        lv.exact = exact;
        lv.cnt.reserve(k);
        const auto* d = reinterpret_cast<const unsigned char*>(depths.c_str());
        const auto* o = reinterpret_cast<const unsigned char*>(offsets.c_str());
        const auto* c = reinterpret_cast<const unsigned char*>(counts.c_str());
        uint64_t prev = 0;
        for (std::size_t i = 0; i < k; ++i) {
            int depth = d[i];
            uint64_t off = read_be(o + 8 * i);
            uint64_t bits = read_be(c + 8 * i);
            double cnt;
            std::memcpy(&cnt, &bits, 8);
            if (depth > LT || (off >> depth)) fail("node (depth " + std::to_string(depth) + ", offset " + std::to_string(off) + ") out of range");
            uint64_t id = (uint64_t{1} << depth) + off;
            if (id <= prev) fail("nodes not in ascending heap-id order");
            prev = id;
            if (!std::isfinite(cnt) || cnt < 0) fail("bad level node counts");
            lv.cnt.set(id, cnt);
        }
        if (V) {
            nb::list vals;
            if (!nb::try_cast(f[5], vals) || vals.size() != k) fail("value digests and nodes differ");
            std::vector<uint64_t> ids = lv.sorted_ids();
            for (std::size_t i = 0; i < k; ++i) read_nodes(lv.val[ids[i]], vals[i], LU, U, fail);
        }
        lvls.push_back(std::move(lv));
    }
    tmp->core.load(merged, tau0, tmax, n, top_n, std::move(B), std::move(lvls));
    std::string broken = tmp->core.check();
    if (!broken.empty()) fail(broken);
    return tmp.release();
}

template <bool V>
nb::class_<SW<V>> define(nb::module_& m, const char* doc) {
    using S = SW<V>;
    const char* kWho = S::kWho;
    nb::class_<S> cls(m, kWho, doc);
    cls.def("__init__", [](S* self, double eps, int LT, uint64_t W, double cf, uint64_t kappa, uint64_t U) {
           check_params<V>(eps, LT, cf, kappa, U, "ArgumentError");
           new (self) S(eps, LT, W, cf, kappa, U);
       }, nb::arg("eps"), nb::arg("time_bits"), nb::arg("max_window"), nb::arg("capacity_factor"), nb::arg("kappa"),
       nb::arg("universe") = 0)
        .def_prop_ro("n", [](S& s) { wait_other_threads(s.guard); return s.core.n(); })
        .def_prop_ro("top_n", [](S& s) { wait_other_threads(s.guard); return s.core.top_n(); })
        .def_prop_ro("tau0", [](S& s) { wait_other_threads(s.guard); return s.core.tau0(); })
        .def_prop_ro("tmax", [](S& s) { wait_other_threads(s.guard); return s.core.tmax(); })
        .def_prop_ro("num_levels", [](S& s) { wait_other_threads(s.guard); return s.core.num_levels(); })
        .def_prop_ro("size", [](S& s) { wait_other_threads(s.guard); return s.core.size(); })
        .def("merge", [](S& s, S& o) {
            if (&o == &s) raise("ArgumentError", "cannot merge a sliding-window summary into itself");
            Enter e(s.guard, Access::Write, S::kWho, "merge()");
            Enter eo(o.guard, Access::Read, S::kWho, "merge()");
            const SlidingCore &a = s.core, &b = o.core;
            if (a.eps() != b.eps() || a.time_bits() != b.time_bits() || a.kappa() != b.kappa() || a.max_window() != b.max_window() ||
                a.universe() != b.universe())
                raise("ArgumentError", std::string("cannot merge ") + S::kWho +
                                           "s with different eps, time_bits, capacity, max_window or universe");
            if (b.n() && b.n() > kMaxTotal - a.n()) total_overflow<V>();
            s.core.merge(b);
        }, nb::arg("other"), "Add other (same parameters). O(space).")
        .def("count_bounds", [](S& s, int64_t tau) {
            Enter e(s.guard, Access::Read, S::kWho, "count_bounds()");
            return s.core.count_bounds(tau);
        }, nb::arg("tau"), "(lo, hi) around the weight with timestamps after tau (tau = t - w, checked by the caller). O(space).")
        .def("fields", [](S& s) {
            Enter e(s.guard, Access::Read, S::kWho, "to_bytes()");
            const SlidingCore& c = s.core;
            std::vector<SWItem> B = c.buffer();
            std::sort(B.begin(), B.end());
            std::vector<uint64_t> Ts, xs, ws;
            Ts.reserve(B.size());
            xs.reserve(B.size());
            ws.reserve(B.size());
            for (const SWItem& it : B) {
                Ts.push_back(static_cast<uint64_t>(it.t));
                xs.push_back(it.x);
                ws.push_back(it.w);
            }
            nb::list lv;
            for (const SWLevel& l : c.levels()) lv.append(level_fields(l, V));
            return nb::make_tuple(c.merged(), c.tau0(), c.tmax(), c.n(), c.top_n(), be_u64s(Ts), be_u64s(xs), be_u64s(ws), lv);
        }, "(merged, tau0, tmax, n, top_n, B times, B keys, B weights, [(tau, exact, depths, offsets, counts[, [(depths, "
           "offsets, counts) per node]])]): the codec's fields in layout 3's canonical order. O(space log space).")
        .def_static("load", &load<V>, nb::arg("eps"), nb::arg("time_bits"), nb::arg("max_window"), nb::arg("capacity_factor"),
                    nb::arg("kappa"), nb::arg("universe"), nb::arg("merged"), nb::arg("tau0"), nb::arg("tmax"), nb::arg("n"),
                    nb::arg("top_n"), nb::arg("ts"), nb::arg("xs"), nb::arg("ws"), nb::arg("levels"),
                    "A summary from the fields fields() gives; CodecError for anything invalid.")
        .def("_check", [](S& s) {
            Enter e(s.guard, Access::Read, S::kWho, "_check()");
            std::string broken = s.core.check();
            if (!broken.empty()) raise("InvariantError", std::string(S::kWho) + ": " + broken);
        });
    return cls;
}

// update_many's body: all checked first (keys, then times, then weights, then the total, as
// the reference), then the batch, both without the GIL; the error raised with it held.
template <bool V>
void add_batch(SW<V>& s, const int64_t* xp, const int64_t* tp, const int64_t* wp, std::size_t n) {
    int bad = 0;  // 1: a key, 2: a time, 3: a weight, 4: the total
    std::size_t at = 0;
    {
        nb::gil_scoped_release release;
        const uint64_t tbase = uint64_t{1} << s.core.time_bits();
        const uint64_t U = s.core.universe();
        for (std::size_t i = 0; i < n && !bad && xp; ++i)
            if (xp[i] < 0 || static_cast<uint64_t>(xp[i]) >= U) bad = 1, at = i;
        for (std::size_t i = 0; i < n && !bad; ++i)
            if (tp[i] < 0 || static_cast<uint64_t>(tp[i]) >= tbase) bad = 2, at = i;
        for (std::size_t i = 0; i < n && !bad && wp; ++i)
            if (wp[i] < 1 || static_cast<uint64_t>(wp[i]) > SlidingCore::MAX_WEIGHT) bad = 3, at = i;
        uint64_t total = 0;
        for (std::size_t i = 0; i < n && !bad; ++i) {
            uint64_t w = wp ? static_cast<uint64_t>(wp[i]) : 1;
            if (w > kMaxTotal - s.core.n() - total) bad = 4;
            total += w;
        }
        if (!bad) {
            std::vector<SWItem> items(n);
            for (std::size_t i = 0; i < n; ++i)
                items[i] = SWItem{tp[i], xp ? static_cast<uint64_t>(xp[i]) : 0, wp ? static_cast<uint64_t>(wp[i]) : 1};
            s.core.add_many(items, total);
        }
    }
    if (bad == 1) check_key(s.core, xp[at]);
    if (bad == 2) check_time(s.core, tp[at]);
    if (bad == 3) check_weight(wp[at]);
    if (bad == 4) total_overflow<V>();
}

}  // namespace

void bind_sliding_window(nb::module_& m) {
    using C = SW<false>;
    using Q = SW<true>;
    nb::class_<C> cc = define<false>(m, "The sliding-window count (windowagg.sketches.SlidingWindowCount holds it).");
    nb::class_<Q> qc = define<true>(m, "The sliding-window q-digest (windowagg.sketches.SlidingWindowQDigest holds it).");
    cc.def("update", [](C& s, int64_t t, int64_t w) {
            Enter e(s.guard, Access::Write, C::kWho, "update()");
            check_time(s.core, t);
            check_weight(w);
            if (static_cast<uint64_t>(w) > kMaxTotal - s.core.n()) total_overflow<false>();
            s.core.add(t, 0, static_cast<uint64_t>(w));
        }, nb::arg("t"), nb::arg("weight") = 1, "Count weight items at time t. O(J log LT) amortized.")
        .def("update_many", [](C& s, nb::handle ts, nb::handle weights) {
            Enter e(s.guard, Access::Write, C::kWho, "update_many()");
            I64Buf tb(ts, "timestamps");
            std::unique_ptr<I64Buf> wb;
            if (!weights.is_none()) {
                wb = std::make_unique<I64Buf>(weights, "weights");
                if (wb->n != tb.n) raise("ArgumentError", std::to_string(tb.n) + " timestamps but " + std::to_string(wb->n) + " weights");
            }
            if (tb.n) add_batch(s, nullptr, tb.ptr(), wb ? wb->ptr() : nullptr, tb.n);
        }, nb::arg("ts"), nb::arg("weights").none() = nb::none(),
           "update() for each timestamp (an int64 buffer) with int64 weights or 1 each; all checked "
           "first (nothing changes on error); runs without the GIL. O(b log b + J b).");
    qc.def("update", [](Q& s, int64_t x, int64_t t, int64_t w) {
            Enter e(s.guard, Access::Write, Q::kWho, "update()");
            check_key(s.core, x);
            check_time(s.core, t);
            check_weight(w);
            if (static_cast<uint64_t>(w) > kMaxTotal - s.core.n()) total_overflow<true>();
            s.core.add(t, static_cast<uint64_t>(x), static_cast<uint64_t>(w));
        }, nb::arg("x"), nb::arg("t"), nb::arg("weight") = 1, "Add key x at time t with weight w. O(J (log LT + 1)) amortized.")
        .def("update_many", [](Q& s, nb::handle xs, nb::handle ts, nb::handle weights) {
            Enter e(s.guard, Access::Write, Q::kWho, "update_many()");
            I64Buf xb(xs, "keys");
            I64Buf tb(ts, "timestamps");
            std::unique_ptr<I64Buf> wb;
            if (!weights.is_none()) wb = std::make_unique<I64Buf>(weights, "weights");
            if (xb.n != tb.n || (wb && wb->n != tb.n)) raise("ArgumentError", "keys, timestamps and weights differ in length");
            if (tb.n) add_batch(s, xb.ptr(), tb.ptr(), wb ? wb->ptr() : nullptr, tb.n);
        }, nb::arg("xs"), nb::arg("ts"), nb::arg("weights").none() = nb::none(),
           "update() for each (key, timestamp) (int64 buffers) with int64 weights or 1 each; all "
           "checked first (nothing changes on error); runs without the GIL. O(b log b + J b).");
}
