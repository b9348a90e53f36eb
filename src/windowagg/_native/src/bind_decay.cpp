// _core.decay_slices: the compiled twin of windowagg.sketches.forward_decay's slide of the
// exponential forward-decay monoid over the engine's windows (include/windowagg/forward_decay.hpp).
#include <nanobind/nanobind.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "inputs.hpp"
#include "py_errors.hpp"
#include "windowagg/forward_decay.hpp"

namespace nb = nanobind;
using namespace windowagg::py;

namespace {

// A 1-D C-contiguous buffer of 8-byte items of kind `want` ('d' or 'q').
struct Buf {
    Py_buffer view{};
    bool ok = false;
    Buf(nb::handle o, char want, bool writable, const char* what) {
        int flags = PyBUF_FORMAT | PyBUF_C_CONTIGUOUS | (writable ? PyBUF_WRITABLE : 0);
        if (PyObject_GetBuffer(o.ptr(), &view, flags) != 0) {
            PyErr_Clear();
            raise("ArgumentTypeError", std::string("decay_slices: ") + what +
                                           " must be a 1-D C-contiguous " +
                                           (want == 'd' ? "float64" : "int64") +
                                           (writable ? " writable" : "") + " buffer");
        }
        if (buffer_kind(view) != want) {
            PyBuffer_Release(&view);  // a throwing constructor runs no destructor
            raise("ArgumentTypeError", std::string("decay_slices: ") + what + " must be 1-D " +
                                           (want == 'd' ? "float64" : "int64"));
        }
        ok = true;
    }
    ~Buf() {
        if (ok) PyBuffer_Release(&view);
    }
    Buf(const Buf&) = delete;
    Buf& operator=(const Buf&) = delete;
    std::size_t size() const { return static_cast<std::size_t>(view.len / 8); }
    template <class T>
    T* ptr() const { return static_cast<T*>(view.buf); }
};

void decay_slices(nb::handle t, nb::handle v, nb::handle lo, nb::handle hi, nb::handle end,
                  double half_life, nb::handle out_s, nb::handle out_w, bool as_of) {
    if (!(std::isfinite(half_life) && half_life > 0)) {
        raise("ArgumentError", "decay_slices: half_life must be a positive finite number");
    }
    Buf bt(t, 'q', false, "t"), bv(v, 'd', false, "v"), blo(lo, 'q', false, "lo"),
        bhi(hi, 'q', false, "hi"), be(end, 'q', false, "end"), bs(out_s, 'd', true, "out_s"),
        bw(out_w, 'd', true, "out_w");
    std::size_t n = bt.size(), r = blo.size();
    if (bv.size() != n || bhi.size() != r || be.size() != r || bs.size() != r || bw.size() != r) {
        raise("ArgumentError", "decay_slices: t and v, and lo, hi, end, out_s and out_w, must have equal lengths");
    }
    // Everything below runs without the GIL (another thread may run meanwhile, and may write
    // to the caller's lo and hi): one pass checks every bound, reading the caller's arrays,
    // before any work (a bad bound is an error and nothing is computed); then the kernel
    // slides block by block over copies of the bounds (kBlock windows at a time, a scratch
    // of 64 KiB, not two copies of the whole arrays: 16 MB and their page faults per million
    // windows), each copy checked again before the kernel reads it, so a bound another
    // thread changed after the first pass is refused (an error, its block never computed),
    // never read past the events. A call whose checks passed answers from the bounds it
    // checked.
    constexpr std::size_t kBlock = 4096;
    const int64_t* lo_in = blo.ptr<const int64_t>();
    const int64_t* hi_in = bhi.ptr<const int64_t>();
    const auto events = static_cast<int64_t>(n);
    std::size_t bad = r;  // the first window whose bounds failed a check (r: none)
    int64_t bad_lo = 0, bad_hi = 0;
    {
        nb::gil_scoped_release release;
        // the check of window j's bounds (a, b) after the previous window's (pa, pb)
        auto fails = [&](int64_t a, int64_t b, int64_t pa, int64_t pb) {
            return a < pa || b < pb || a > b || b > events;
        };
        int64_t prev_lo = 0, prev_hi = 0;
        for (std::size_t j = 0; j < r; ++j) {  // checked before any work
            int64_t a = lo_in[j], b = hi_in[j];
            if (fails(a, b, prev_lo, prev_hi)) {
                bad = j, bad_lo = a, bad_hi = b;
                break;
            }
            prev_lo = a;
            prev_hi = b;
        }
        if (bad == r) {
            std::vector<int64_t> scratch(2 * std::min(kBlock, r));
            int64_t* l = scratch.data();
            int64_t* h = l + std::min(kBlock, r);
            windowagg::DecaySlide slide;
            prev_lo = prev_hi = 0;
            for (std::size_t j0 = 0; j0 < r && bad == r; j0 += kBlock) {
                std::size_t m = std::min(kBlock, r - j0);
                std::copy(lo_in + j0, lo_in + j0 + m, l);
                std::copy(hi_in + j0, hi_in + j0 + m, h);
                for (std::size_t i = 0; i < m; ++i) {  // the copies, checked again
                    if (fails(l[i], h[i], prev_lo, prev_hi)) {
                        bad = j0 + i, bad_lo = l[i], bad_hi = h[i];
                        break;
                    }
                    prev_lo = l[i];
                    prev_hi = h[i];
                }
                if (bad != r) break;
                slide.run(bt.ptr<const int64_t>(), bv.ptr<const double>(), l, h,
                          be.ptr<const int64_t>() + j0, m, half_life, bs.ptr<double>() + j0,
                          bw.ptr<double>() + j0, as_of);
            }
        }
    }
    if (bad != r) {
        raise("ArgumentError", "decay_slices: window " + std::to_string(bad) +
                                   " has bounds [" + std::to_string(bad_lo) + ", " +
                                   std::to_string(bad_hi) +
                                   "); they must be non-decreasing and within the events");
    }
}

}  // namespace

void bind_decay(nb::module_& m) {
    m.def("decay_slices", &decay_slices, nb::arg("t"), nb::arg("v"), nb::arg("lo"), nb::arg("hi"),
          nb::arg("end"), nb::arg("half_life"), nb::arg("out_s"), nb::arg("out_w"),
          nb::arg("as_of") = true,
          "Exponentially decayed sum and weight of v[lo[j]:hi[j]] as of end[j] (half-life in "
          "the unit of t), for every window j, into out_s and out_w; as_of=False: as of each "
          "window's newest event (S / W is the mean, whatever end[j]).");
}
