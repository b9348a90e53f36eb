// _core.SlidingWindowCount: the compiled twin that windowagg.sketches.SlidingWindowCount
// holds (include/windowagg/sliding_window.hpp). Timestamps and weights arrive checked by the
// public class; every entry point checks them again (a caller may reach _core directly),
// and the total weight, before anything changes. update_many runs without the GIL; a
// CallGuard (call_guard.hpp) serialises the calls of several threads on one object.
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
using windowagg::SlidingCountCore;
using windowagg::SWItem;
using windowagg::SWLevel;

namespace {

constexpr const char* kWho = "SlidingWindowCount";
constexpr uint64_t kMaxTotal = ~uint64_t{0};

struct SWC {
    SlidingCountCore core;
    CallGuard guard;
    SWC(double eps, int LT, uint64_t W, double cf, uint64_t kappa) : core(eps, LT, W, cf, kappa, 1.0) {}
};

void check_params(double eps, int LT, double cf, uint64_t kappa, const char* cls) {
    if (!(eps > 0.0 && eps < 1.0)) raise(cls, std::string(kWho) + ": eps must be a number in (0, 1), got " + std::to_string(eps));
    if (LT < 1 || LT > 62) raise(cls, std::string(kWho) + ": time_bits must be an int in [1, 62], got " + std::to_string(LT));
    if (!(cf > 0.0 && cf < INFINITY)) raise(cls, std::string(kWho) + ": capacity_factor must be > 0, got " + std::to_string(cf));
    if (kappa < 2 || kappa > (uint64_t{1} << 62)) raise(cls, std::string(kWho) + ": kappa must be in [2, 2**62], got " + std::to_string(kappa));
}

[[noreturn]] void total_overflow() {
    raise("ArgumentError", std::string(kWho) +
                               ": the total weight would pass 2**64 - 1 (the codec's u64); split the stream over several summaries");
}

void check_time(const SlidingCountCore& c, int64_t t) {
    if (t < 0 || static_cast<uint64_t>(t) >> c.time_bits())
        raise("TimestampError", "timestamp " + std::to_string(t) + " outside [0, 2**" + std::to_string(c.time_bits()) +
                                    "); raise time_bits or rebase timestamps");
}

void check_weight(int64_t w) {
    if (w < 1 || static_cast<uint64_t>(w) > SlidingCountCore::MAX_WEIGHT)
        raise("ArgumentError", "sliding-window weights must be ints in [1, 2**53], got " + std::to_string(w) +
                                   "; split a larger multiplicity into several updates");
}

// A 1-D C-contiguous int64 buffer (numpy's 'q' / 'l').
struct I64Buf {
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

// (tau, exact, depths, big-endian offsets, big-endian counts) of a level, ascending heap id.
nb::tuple level_fields(const SWLevel& lv) {
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
    return nb::make_tuple(lv.tau, lv.exact, nb::bytes(ds.data(), ds.size()), be_u64s(offs), be_u64s(cnts));
}

// The state from its codec fields (layout 3: the buffer in (t, key, weight) order, nodes by
// ascending heap id); CodecError for anything but a whole, valid summary. Every count is
// checked against the bytes given before anything is allocated.
SWC* load(double eps, int LT, uint64_t W, double cf, uint64_t kappa, bool merged, int64_t tau0, int64_t tmax, uint64_t n,
          uint64_t top_n, nb::bytes Ts, nb::bytes xs, nb::bytes ws, nb::list levels) {
    auto fail = [](const std::string& why) { raise("CodecError", std::string("corrupt ") + kWho + ": " + why); };
    if (!(eps > 0.0 && eps < 1.0) || LT < 1 || LT > 62 || !(cf > 0.0 && cf < INFINITY) || kappa < 2 || kappa > (uint64_t{1} << 62))
        fail("bad parameters");
    if (tau0 < -1 || tmax < -1 || (tmax >= 0 && static_cast<uint64_t>(tmax) >> LT)) fail("bad tau0 or max_timestamp");
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
        if (t >> LT || w < 1 || w > SlidingCountCore::MAX_WEIGHT) fail("buffered item out of range");
        if (x != 0) fail("buffered key outside the universe");
        SWItem it{static_cast<int64_t>(t), x, w};
        if (!B.empty() && it < B.back()) fail("buffer not in (t, key, weight) order");
        if (tau0 >= 0 && it.t < tau0) fail("buffered item at or before tau0");
        if (w > n - Bw) fail("buffer + levels hold more than was added");  // Bw <= n: no wrap
        B.push_back(it);
        Bw += w;
    }
    if (top_n > n - Bw) fail("buffer + levels hold more than was added");
    if (W == 0 && Bw + top_n != n) fail("an item was lost between buffer and levels");
    auto tmp = std::make_unique<SWC>(eps, LT, W, cf, kappa);
    std::vector<SWLevel> lvls;
    lvls.reserve(levels.size());
    for (std::size_t j = 0; j < levels.size(); ++j) {
        nb::handle h = levels[j];
        if (!nb::isinstance<nb::tuple>(h) || nb::len(h) != 5) fail("bad level");
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
        lvls.push_back(std::move(lv));
    }
    tmp->core.load(merged, tau0, tmax, n, top_n, std::move(B), std::move(lvls));
    std::string broken = tmp->core.check();
    if (!broken.empty()) fail(broken);
    return tmp.release();
}

}  // namespace

void bind_sliding_window(nb::module_& m) {
    nb::class_<SWC>(m, "SlidingWindowCount",
                    "The sliding-window count (windowagg.sketches.SlidingWindowCount holds it).")
        .def("__init__", [](SWC* self, double eps, int LT, uint64_t W, double cf, uint64_t kappa) {
            check_params(eps, LT, cf, kappa, "ArgumentError");
            new (self) SWC(eps, LT, W, cf, kappa);
        }, nb::arg("eps"), nb::arg("time_bits"), nb::arg("max_window"), nb::arg("capacity_factor"), nb::arg("kappa"))
        .def_prop_ro("n", [](SWC& s) { wait_other_threads(s.guard); return s.core.n(); })
        .def_prop_ro("top_n", [](SWC& s) { wait_other_threads(s.guard); return s.core.top_n(); })
        .def_prop_ro("tau0", [](SWC& s) { wait_other_threads(s.guard); return s.core.tau0(); })
        .def_prop_ro("tmax", [](SWC& s) { wait_other_threads(s.guard); return s.core.tmax(); })
        .def_prop_ro("num_levels", [](SWC& s) { wait_other_threads(s.guard); return s.core.num_levels(); })
        .def_prop_ro("size", [](SWC& s) { wait_other_threads(s.guard); return s.core.size(); })
        .def("update", [](SWC& s, int64_t t, int64_t w) {
            Enter e(s.guard, Access::Write, kWho, "update()");
            check_time(s.core, t);
            check_weight(w);
            if (static_cast<uint64_t>(w) > kMaxTotal - s.core.n()) total_overflow();
            s.core.add(t, 0, static_cast<uint64_t>(w));
        }, nb::arg("t"), nb::arg("weight") = 1, "Count weight items at time t. O(J log LT) amortized.")
        .def("update_many", [](SWC& s, nb::handle ts, nb::handle weights) {
            Enter e(s.guard, Access::Write, kWho, "update_many()");
            I64Buf tb(ts, "timestamps");
            std::unique_ptr<I64Buf> wb;
            if (!weights.is_none()) {
                wb = std::make_unique<I64Buf>(weights, "weights");
                if (wb->n != tb.n)
                    raise("ArgumentError", std::to_string(tb.n) + " timestamps but " + std::to_string(wb->n) + " weights");
            }
            if (!tb.n) return;
            const int64_t* tp = tb.ptr();
            const int64_t* wp = wb ? wb->ptr() : nullptr;
            int bad = 0;  // 1: a time, 2: a weight, 3: the total
            std::size_t at = 0;
            {
                nb::gil_scoped_release release;
                const uint64_t tbase = uint64_t{1} << s.core.time_bits();
                uint64_t total = 0;
                for (std::size_t i = 0; i < tb.n && !bad; ++i) {
                    if (tp[i] < 0 || static_cast<uint64_t>(tp[i]) >= tbase) bad = 1, at = i;
                    else if (wp && (wp[i] < 1 || static_cast<uint64_t>(wp[i]) > SlidingCountCore::MAX_WEIGHT)) bad = 2, at = i;
                    else {
                        uint64_t w = wp ? static_cast<uint64_t>(wp[i]) : 1;
                        if (w > kMaxTotal - s.core.n() - total) bad = 3;
                        total += w;
                    }
                }
                if (!bad) {
                    std::vector<SWItem> items(tb.n);
                    for (std::size_t i = 0; i < tb.n; ++i) items[i] = SWItem{tp[i], 0, wp ? static_cast<uint64_t>(wp[i]) : 1};
                    s.core.add_many(items, total);
                }
            }
            if (bad == 1) check_time(s.core, tp[at]);
            if (bad == 2) check_weight(wp[at]);
            if (bad == 3) total_overflow();
        }, nb::arg("ts"), nb::arg("weights").none() = nb::none(),
           "update() for each timestamp (an int64 buffer) with int64 weights or 1 each; all checked "
           "first (nothing changes on error); runs without the GIL. O(b log b + J b).")
        .def("merge", [](SWC& s, SWC& o) {
            if (&o == &s) raise("ArgumentError", "cannot merge a sliding-window summary into itself");
            Enter e(s.guard, Access::Write, kWho, "merge()");
            Enter eo(o.guard, Access::Read, kWho, "merge()");
            const SlidingCountCore &a = s.core, &b = o.core;
            if (a.eps() != b.eps() || a.time_bits() != b.time_bits() || a.kappa() != b.kappa() || a.max_window() != b.max_window())
                raise("ArgumentError", "cannot merge SlidingWindowCounts with different eps, time_bits, capacity, max_window or universe");
            if (b.n() && b.n() > kMaxTotal - a.n()) total_overflow();
            s.core.merge(b);
        }, nb::arg("other"), "Add other (same parameters). O(space).")
        .def("count_bounds", [](SWC& s, int64_t tau) {
            Enter e(s.guard, Access::Read, kWho, "count_bounds()");
            return s.core.count_bounds(tau);
        }, nb::arg("tau"), "(lo, hi) around the weight with timestamps after tau (tau = t - w, checked by the caller). O(space).")
        .def("fields", [](SWC& s) {
            Enter e(s.guard, Access::Read, kWho, "to_bytes()");
            const SlidingCountCore& c = s.core;
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
            for (const SWLevel& l : c.levels()) lv.append(level_fields(l));
            return nb::make_tuple(c.merged(), c.tau0(), c.tmax(), c.n(), c.top_n(), be_u64s(Ts), be_u64s(xs), be_u64s(ws), lv);
        }, "(merged, tau0, tmax, n, top_n, B times, B keys, B weights, [(tau, exact, depths, offsets, counts)]): the codec's "
           "fields in layout 3's canonical order. O(space log space).")
        .def_static("load", &load, nb::arg("eps"), nb::arg("time_bits"), nb::arg("max_window"), nb::arg("capacity_factor"),
                    nb::arg("kappa"), nb::arg("merged"), nb::arg("tau0"), nb::arg("tmax"), nb::arg("n"), nb::arg("top_n"),
                    nb::arg("ts"), nb::arg("xs"), nb::arg("ws"), nb::arg("levels"),
                    "A summary from the fields fields() gives; CodecError for anything invalid.")
        .def("_check", [](SWC& s) {
            Enter e(s.guard, Access::Read, kWho, "_check()");
            std::string broken = s.core.check();
            if (!broken.empty()) raise("InvariantError", std::string(kWho) + ": " + broken);
        });
}
